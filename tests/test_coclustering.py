"""BregmanCoclustering against its oracles (tests/naive_coclustering.py): brute force over every
labelling of tiny matrices, the table of MATH.md section 9 entry by entry, the minimum-Bregman-
information matrix by cvxpy, information-theoretic co-clustering as written in KDD 2003."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from naive_coclustering import (
    brute_force,
    cvxpy_zhat,
    itcc,
    moved_cost,
    objective,
    table_zhat,
)
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from bregclust import BregmanCoclustering, DomainError, EmptyClusterWarning, register_divergence
from bregclust.divergences import unregister_divergence

BASES = ("C1", "C2", "C3", "C4", "C5", "C6")
DIVS = ("sqeuclidean", "kl")


def _counts(m=12, n=9, seed=0, lam=3.0):
    rng = np.random.RandomState(seed)
    blocks = np.array([[4.0, 1.0, 0.5], [0.5, 3.0, 1.0], [1.0, 0.5, 5.0]])
    r = np.arange(m) % 3
    h = np.arange(n) % 3
    return rng.poisson(lam * blocks[np.ix_(r, h)]).astype(float) + 0.0


def _fit(X, **kw):
    kw.setdefault("n_init", 3)
    kw.setdefault("random_state", 0)
    sw = kw.pop("sw", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyClusterWarning)
        return BregmanCoclustering(**kw).fit(X, sample_weight=sw)


# ----------------------------------------------------------------------------- the table
@pytest.mark.parametrize("basis", BASES)
@pytest.mark.parametrize("div", DIVS)
def test_reconstruction_is_the_table_and_objective_its_divergence(basis, div):
    X = _counts(seed=1)
    cc = _fit(X, n_row_clusters=3, n_column_clusters=2, divergence=div, basis=basis,
              smoothing=0)
    ref = table_zhat(X, cc.row_labels_, cc.column_labels_, basis, div)
    np.testing.assert_allclose(cc.reconstruct(), ref, rtol=1e-9, atol=1e-12)
    assert cc.objective_ == pytest.approx(objective(X, ref, div), rel=1e-9)


@pytest.mark.parametrize("basis", BASES)
@pytest.mark.parametrize("div", DIVS)
def test_history_never_increases(basis, div):
    X = _counts(20, 15, seed=2)
    W = (np.random.RandomState(3).rand(*X.shape) > 0.3).astype(float)
    for sw in (None, W):
        cc = _fit(X, n_row_clusters=3, n_column_clusters=3, divergence=div, basis=basis,
                  sw=sw, smoothing=0, n_init=2)
        h = np.array(cc.objective_history_)
        assert len(h) >= 5
        assert (np.diff(h) <= 1e-9 * abs(h[0])).all(), np.diff(h).max()


def test_history_never_increases_c2_other_divergences_and_smoothing():
    X = _counts(20, 15, seed=4) + 0.5
    for div, smoothing in (("itakura_saito", "auto"), ("kl", 5.0), ("kl", "auto")):
        cc = _fit(X, n_row_clusters=3, n_column_clusters=3, divergence=div, smoothing=smoothing)
        h = np.array(cc.objective_history_)
        assert (np.diff(h) <= 1e-9 * abs(h[0])).all()
    assert cc.smoothing_ > 0


# ----------------------------------------------------------------------------- brute force
@pytest.mark.parametrize("basis", BASES)
@pytest.mark.parametrize("div", DIVS)
def test_brute_force_tiny(basis, div):
    X = np.array([[5., 4., 0., 1.], [6., 5., 1., 0.], [0., 1., 7., 6.], [1., 0., 5., 8.],
                  [3., 2., 2., 3.]]) + (0.5 if div == "kl" else 0.0)
    best, br, bh = brute_force(X, 2, 2, basis, div)
    cc = _fit(X, n_row_clusters=2, n_column_clusters=2, divergence=div, basis=basis,
              smoothing=0, n_init=30)
    r, h = cc.row_labels_, cc.column_labels_
    ours = objective(X, table_zhat(X, r, h, basis, div), div)
    assert cc.objective_ == pytest.approx(ours, rel=1e-9)
    assert ours >= best - 1e-9 * abs(best)
    # the global optimum is a fixed point: started there, the fit stays at the optimum
    at = BregmanCoclustering(2, 2, divergence=div, basis=basis, smoothing=0,
                             init=(br, bh)).fit(X)
    assert at.objective_ == pytest.approx(best, rel=1e-9, abs=1e-9)
    # a fixed point: with the parameters held, no single row or column move lowers the cost
    for axis, labels, kk in ((0, r, 2), (1, h, 2)):
        for u in range(labels.size):
            here = moved_cost(X, r, h, basis, div, u, labels[u], axis)
            for g in range(kk):
                if np.bincount(labels, minlength=kk)[g]:
                    assert moved_cost(X, r, h, basis, div, u, g, axis) >= here - 1e-9


def test_brute_force_c2_itakura_saito():
    X = np.array([[5., 4., .5, 1.], [6., 5., 1., .5], [.5, 1., 7., 6.], [1., .5, 5., 8.]])
    best, _, _ = brute_force(X, 2, 2, "C2", "itakura_saito")
    cc = _fit(X, n_row_clusters=2, n_column_clusters=2, divergence="itakura_saito",
              smoothing=0, n_init=20)
    ref = table_zhat(X, cc.row_labels_, cc.column_labels_, "C2", "sqeuclidean")
    assert cc.objective_ == pytest.approx(objective(X, ref, "itakura_saito"), rel=1e-9)
    assert cc.objective_ == pytest.approx(best, rel=1e-9)


def test_c2_with_a_registered_generator():
    register_divergence("cc_sq4", phi=lambda x: 4.0 * x * x, dphi=lambda x: 8.0 * x,
                        domain="real", overwrite=True)
    try:
        X = _counts(seed=5)
        a = _fit(X, n_row_clusters=3, n_column_clusters=3, divergence="cc_sq4")
        b = _fit(X, n_row_clusters=3, n_column_clusters=3, divergence="sqeuclidean")
        assert (a.row_labels_ == b.row_labels_).all()
        assert a.objective_ == pytest.approx(4 * b.objective_, rel=1e-9)
    finally:
        unregister_divergence("cc_sq4")


# ----------------------------------------------------------------------------- sq C2
@pytest.mark.parametrize("sparse", [False, True])
def test_sqeuclidean_c2_is_the_frobenius_distance_to_block_means(sparse):
    X = _counts(30, 20, seed=6)
    Xin = sp.csr_matrix(X) if sparse else X
    cc = _fit(Xin, n_row_clusters=3, n_column_clusters=4, divergence="sqeuclidean")
    r, h = cc.row_labels_, cc.column_labels_
    M = np.zeros((3, 4))
    for g in range(3):
        for c in range(4):
            M[g, c] = X[np.ix_(r == g, h == c)].mean()
    np.testing.assert_allclose(cc.block_means_, M)
    assert cc.objective_ == pytest.approx(np.linalg.norm(X - M[np.ix_(r, h)]) ** 2, rel=1e-10)


# ----------------------------------------------------------------------------- ITCC
def test_c5_kl_is_itcc():
    X = _counts(24, 18, seed=7) + 1.0
    rng = np.random.RandomState(0)
    compared = 0
    for _ in range(6):
        r0, h0 = rng.randint(0, 3, 24), rng.randint(0, 3, 18)
        r0[:3], h0[:3] = [0, 1, 2], [0, 1, 2]
        r, h, loss = itcc(X, r0, h0)
        if np.unique(r).size < 3 or np.unique(h).size < 3:
            # KDD 2003 never refills an emptied cluster; ours may (its parameters fall back
            # on coarser means), so the runs part there
            continue
        compared += 1
        cc = BregmanCoclustering(3, 3, divergence="kl", basis="C5", init=(r0, h0), tol=0,
                                 max_iter=200).fit(X)
        assert (cc.row_labels_ == r).all() and (cc.column_labels_ == h).all()
        assert cc.objective_ / X.sum() == pytest.approx(loss, rel=1e-8)
    assert compared >= 3


# ----------------------------------------------------------------------------- weights
@pytest.mark.parametrize("basis", BASES)
@pytest.mark.parametrize("div", DIVS)
def test_unit_weights_equal_no_weights(basis, div):
    X = _counts(15, 12, seed=8)
    rng = np.random.RandomState(1)
    init = (rng.randint(0, 3, 15), rng.randint(0, 2, 12))
    a = BregmanCoclustering(3, 2, divergence=div, basis=basis, init=init, smoothing=0).fit(X)
    b = BregmanCoclustering(3, 2, divergence=div, basis=basis, init=init, smoothing=0).fit(
        X, sample_weight=sp.csr_matrix(np.ones(X.shape)))
    assert (a.row_labels_ == b.row_labels_).all()
    assert (a.column_labels_ == b.column_labels_).all()
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-9)
    np.testing.assert_allclose(a.reconstruct(), b.reconstruct(), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("basis", BASES)
@pytest.mark.parametrize("div", DIVS)
def test_masked_entries_change_nothing(basis, div):
    X = _counts(15, 12, seed=9)
    W = (np.random.RandomState(2).rand(*X.shape) > 0.25).astype(float)
    W[0, 0] = 0.0
    Y = X.copy()
    Y[W == 0] = np.random.RandomState(3).rand(int((W == 0).sum())) * 100
    Y[0, 0] = np.nan
    a = _fit(X, n_row_clusters=3, n_column_clusters=2, divergence=div, basis=basis, sw=W)
    b = _fit(Y, n_row_clusters=3, n_column_clusters=2, divergence=div, basis=basis, sw=W)
    assert (a.row_labels_ == b.row_labels_).all()
    assert (a.column_labels_ == b.column_labels_).all()
    assert a.objective_ == b.objective_
    np.testing.assert_array_equal(a.reconstruct(), b.reconstruct())
    assert np.isfinite(b.reconstruct()).all()


@pytest.mark.parametrize("basis", BASES)
@pytest.mark.parametrize("div", DIVS)
def test_weighted_reconstruction_is_the_cvxpy_minimum_information_matrix(basis, div):
    pytest.importorskip("cvxpy")
    X = _counts(8, 6, seed=10) + 0.5
    rng = np.random.RandomState(4)
    W = rng.choice([0.0, 0.5, 1.0, 2.0], size=X.shape, p=[0.2, 0.2, 0.4, 0.2])
    cc = _fit(X, n_row_clusters=2, n_column_clusters=2, divergence=div, basis=basis, sw=W,
              smoothing=0, n_init=1)
    Y = cvxpy_zhat(X, W, cc.row_labels_, cc.column_labels_, basis, div)
    obs = W > 0
    np.testing.assert_allclose(cc.reconstruct()[obs], Y[obs], rtol=2e-4, atol=2e-4)
    assert cc.objective_ == pytest.approx(objective(X, cc.reconstruct(), div, W), rel=1e-9)
    assert cc.objective_ == pytest.approx(objective(X, Y, div, W), rel=1e-4, abs=1e-6)


def test_completion_recovers_a_block_matrix():
    rng = np.random.RandomState(5)
    r, h = np.repeat([0, 1, 2], 10), np.repeat([0, 1], 8)
    M = np.array([[1.0, 5.0], [4.0, 2.0], [3.0, 6.0]])[np.ix_(r, h)]
    W = (rng.rand(*M.shape) > 0.4).astype(float)
    X = np.where(W > 0, M, np.nan)
    cc = BregmanCoclustering(3, 2, divergence="sqeuclidean", random_state=0).fit(X, sample_weight=W)
    np.testing.assert_allclose(cc.reconstruct(), M, atol=1e-9)


# ----------------------------------------------------------------------------- formats
@pytest.mark.parametrize("basis", ["C2", "C5", "C6"])
def test_sparse_dense_float32_agree(basis):
    X = _counts(20, 16, seed=11)
    a = _fit(X, n_row_clusters=3, n_column_clusters=3, basis=basis, smoothing=0)
    b = _fit(sp.csr_matrix(X), n_row_clusters=3, n_column_clusters=3, basis=basis, smoothing=0)
    c = _fit(X.astype(np.float32), n_row_clusters=3, n_column_clusters=3, basis=basis,
             smoothing=0)
    assert (a.row_labels_ == b.row_labels_).all() and (a.row_labels_ == c.row_labels_).all()
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-10)
    assert c.reconstruct().dtype == np.float32 and a.reconstruct().dtype == np.float64


def test_input_not_modified_and_pickles():
    X = sp.csr_matrix(_counts(15, 10, seed=12))
    W = sp.csr_matrix((np.random.RandomState(0).rand(15, 10) > 0.2).astype(float))
    X0, W0 = X.copy(), W.copy()
    cc = _fit(X, n_row_clusters=2, n_column_clusters=3, basis="C5", sw=W)
    assert (X != X0).nnz == 0 and (W != W0).nnz == 0
    back = pickle.loads(pickle.dumps(cc))
    np.testing.assert_array_equal(back.reconstruct(), cc.reconstruct())
    assert (back.row_labels_ == cc.row_labels_).all()
    assert clone(cc).get_params() == cc.get_params()


def test_bicluster_attributes():
    X = _counts(12, 9, seed=13)
    cc = _fit(X, n_row_clusters=3, n_column_clusters=2, divergence="sqeuclidean")
    assert cc.rows_.shape == (6, 12) and cc.columns_.shape == (6, 9)
    rows, cols = cc.biclusters_
    assert rows.shape == (6, 12)
    for i in range(6):
        g, c = divmod(i, 2)
        ri, ci = cc.get_indices(i)
        assert (ri == np.flatnonzero(cc.row_labels_ == g)).all()
        assert (ci == np.flatnonzero(cc.column_labels_ == c)).all()
        assert cc.get_shape(i) == (ri.size, ci.size)
        np.testing.assert_array_equal(cc.get_submatrix(i, X), X[np.ix_(ri, ci)])
    # every entry lies in exactly one bicluster
    assert (cc.rows_.astype(int).T @ cc.columns_.astype(int) == 1).all()


def test_empty_blocks_take_the_smoothing_point():
    X = _counts(9, 6, seed=14)
    r0, h0 = np.zeros(9, int), np.arange(6) % 2
    r0[:4] = 1  # row cluster 2 empty from the start
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyClusterWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        cc = BregmanCoclustering(3, 2, divergence="kl", init=(r0, h0), smoothing=1.0,
                                 max_iter=1).fit(X)
    assert np.isfinite(cc.objective_history_).all()
    assert np.isfinite(cc.reconstruct()).all()


def test_kl_zero_rows_and_blocks():
    X = _counts(12, 9, seed=15)
    X[3] = 0.0
    X[:, 2] = 0.0
    for basis in BASES:
        cc = _fit(X, n_row_clusters=3, n_column_clusters=3, divergence="kl", basis=basis,
                  smoothing=0)
        assert np.isfinite(cc.objective_)
        assert cc.objective_ == pytest.approx(objective(X, cc.reconstruct(), "kl"), rel=1e-9)


# ----------------------------------------------------------------------------- hostile input
@pytest.mark.parametrize("kwargs, fit_args, err, match", [
    ({}, (np.array([[1.0, np.nan], [2.0, 3.0]]),), ValueError, "NaN"),
    ({}, (np.array([[1.0, -1.0], [2.0, 3.0]]),), DomainError, "non-negative"),
    ({"n_row_clusters": 5}, (np.ones((3, 4)),), ValueError, "n_row_clusters=5"),
    ({"n_column_clusters": 5}, (np.ones((6, 4)),), ValueError, "n_column_clusters=5"),
    ({"n_row_clusters": 2.0}, (np.ones((3, 4)),), TypeError, "n_row_clusters"),
    ({"basis": "C7"}, (np.ones((3, 4)),), ValueError, "basis must be one of"),
    ({"basis": "C5", "divergence": "itakura_saito"}, (np.ones((3, 4)),), ValueError,
     "closed-form approximation only for"),
    ({"divergence": "l1_subgradient"}, (np.ones((3, 4)),), ValueError, "not differentiable"),
    ({"divergence": "mahalanobis", "divergence_params": {"A": np.eye(4)}}, (np.ones((3, 4)),),
     ValueError, "not separable"),
    ({"basis": "C3", "smoothing": 1.0}, (np.ones((3, 4)),), ValueError, "smoothing applies"),
    ({"n_init": 0}, (np.ones((3, 4)),), ValueError, "n_init"),
    ({"init": "k-means++"}, (np.ones((3, 4)),), ValueError, "init must be 'random'"),
    ({"init": (np.zeros(2, int), np.zeros(4, int))}, (np.ones((3, 4)),), ValueError,
     "row labels must be integers of shape"),
    ({"init": (np.zeros(3, int), np.full(4, 7))}, (np.ones((3, 4)),), ValueError,
     r"column labels must lie in \[0, 1\]"),
    ({}, (np.ones(4),), ValueError, "2D array"),
    ({}, (np.ones((3, 4)), None, np.ones((4, 3))), ValueError, "shape of X"),
    ({}, (np.ones((3, 4)), None, -np.ones((3, 4))), ValueError, "non-negative"),
    ({}, (np.ones((3, 4)), None, np.zeros((3, 4))), ValueError, "zero everywhere"),
    ({}, (np.ones((3, 4)), None, np.full((3, 4), "a")), TypeError, "real numbers"),
])
def test_hostile_input(kwargs, fit_args, err, match):
    with pytest.raises(err, match=match):
        BregmanCoclustering(**kwargs).fit(*fit_args)


def test_nan_at_an_observed_entry_is_named():
    X = np.array([[1.0, np.nan], [2.0, 3.0]])
    W = np.ones((2, 2))
    with pytest.raises(ValueError, match="row 0, column 1, an observed entry"):
        BregmanCoclustering(1, 1).fit(X, sample_weight=W)
    W[0, 1] = 0
    assert np.isfinite(BregmanCoclustering(1, 1).fit(X, sample_weight=W).objective_)


def test_reconstruct_before_fit():
    from sklearn.exceptions import NotFittedError
    with pytest.raises(NotFittedError, match="not fitted"):
        BregmanCoclustering().reconstruct()


def test_row_weights_are_the_product_measure():
    X = _counts(15, 12, seed=16)
    a = np.random.RandomState(0).randint(1, 4, 15).astype(float)
    init = (np.arange(15) % 3, np.arange(12) % 2)
    one = BregmanCoclustering(3, 2, basis="C5", init=init).fit(X, sample_weight=a)
    two = BregmanCoclustering(3, 2, basis="C5", init=init).fit(
        X, sample_weight=np.repeat(a[:, None], 12, axis=1))
    rep = BregmanCoclustering(3, 2, basis="C5", init=(np.repeat(init[0], a.astype(int)),
                                                      init[1])).fit(
        np.repeat(X, a.astype(int), axis=0))
    assert (one.row_labels_ == two.row_labels_).all()
    assert one.objective_ == pytest.approx(rep.objective_, rel=1e-9)
    assert (one.column_labels_ == rep.column_labels_).all()


@pytest.mark.parametrize("sparse", [False, True])
def test_dask_rows_give_the_in_memory_fit(sparse):
    da = pytest.importorskip("dask.array")
    X = _counts(50, 30, seed=17)
    Xd = (da.from_array(sp.csr_matrix(X), chunks=(12, -1), asarray=False) if sparse
          else da.from_array(X, chunks=(12, -1)))
    a = _fit(X, n_row_clusters=3, n_column_clusters=4, n_init=2)
    b = _fit(Xd, n_row_clusters=3, n_column_clusters=4, n_init=2)
    assert (a.row_labels_ == b.row_labels_).all()
    assert (a.column_labels_ == b.column_labels_).all()
    assert b.objective_ == pytest.approx(a.objective_, rel=1e-12)
    np.testing.assert_allclose(b.reconstruct(), a.reconstruct())
    assert (np.diff(b.objective_history_) <= 1e-9 * b.objective_history_[0]).all()


def test_dask_hostile_input():
    da = pytest.importorskip("dask.array")
    X = _counts(30, 10, seed=18)
    X[17, 3] = -1.0
    with pytest.raises(DomainError, match="holds -1 at row 17, column 3"):
        BregmanCoclustering().fit(da.from_array(X, chunks=(10, -1)))
    X[17, 3] = np.nan
    with pytest.raises(ValueError, match="holds nan at row 17, column 3"):
        BregmanCoclustering().fit(da.from_array(X, chunks=(10, -1)))
    with pytest.raises(ValueError, match="a dask array is co-clustered with basis='C2'"):
        BregmanCoclustering(basis="C5").fit(da.from_array(np.abs(np.nan_to_num(X)),
                                                          chunks=(10, -1)))
    with pytest.raises(ValueError, match="chunk it by rows only"):
        BregmanCoclustering().fit(da.from_array(np.ones((30, 10)), chunks=(10, 5)))
