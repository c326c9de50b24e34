"""Tests for LSSMTC / LSSTTC (bregclust.shared_subspace) against tests/naive_shared_subspace.py."""

import pickle
import warnings

import naive_shared_subspace as naive
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import require_data
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from bregclust.shared_subspace import SharedSubspaceClustering, SharedSubspaceTransfer

NEVER_STOP = -np.inf  # tol for _lss_fit: run exactly max_iter sweeps


def _blobs(rng, n_per, centres, noise=1.0, shift=0.0):
    c, d = centres.shape
    X = np.repeat(centres, n_per, axis=0) + shift + noise * rng.normal(size=(c * n_per, d))
    return X, np.repeat(np.arange(c), n_per)


def _tasks(seed=0, d=6, c=3, n_per=10, m=2, sep=3.0):
    rng = np.random.default_rng(seed)
    centres = sep * rng.normal(size=(c, d))
    Xs, ys = [], []
    for k in range(m):
        X, y = _blobs(rng, n_per, centres, shift=0.3 * k)
        Xs.append(X)
        ys.append(y)
    return Xs, ys


def _soft_init(ys, c, seed=0):
    rng = np.random.default_rng(seed)
    return [np.eye(c)[y] + 0.2 + 0.3 * rng.uniform(size=(y.size, c)) for y in ys]


def _semi(X_source, y_source, X_target):
    """Source and target rows stacked with ``y == -1`` on the target (semi-supervised form)."""
    stack = sp.vstack if sp.issparse(X_source) else np.vstack
    y_source = np.asarray(y_source)
    fill = "-1" if y_source.dtype.kind in "US" else -1
    return stack([X_source, X_target]), np.concatenate(
        [y_source, np.full(X_target.shape[0], fill)])


def _run(Xs, P0, lam, l, n_iter, *, update=None, within=None, trace=False, solver="auto"):
    from bregclust.shared_subspace import _lss_fit, _SpanBasis, _stack

    m = len(Xs)
    basis = _SpanBasis(_stack(Xs))
    out = _lss_fit(Xs, basis, P0, lam=lam, n_components=l, update=update or [True] * m,
                   within=within or [True] * m, max_iter=n_iter, tol=NEVER_STOP,
                   eig_solver=solver, trace=trace)
    return basis, out


# ------------------------------------------------------------------ against the dense reference

@pytest.mark.parametrize("lam", [0.0, 0.4, 1.0])
def test_matches_naive_full_eigenproblem(lam):
    # d < n: the span-restricted W-step must equal the full d x d eigen-solution.
    Xs, ys = _tasks(seed=1)
    P0 = _soft_init(ys, 3)
    basis, (P, Z, M, Mk, hist, n_iter, _, _) = _run(Xs, P0, lam, 2, 8)
    Pn, Wn, hn = naive.lssmtc([X.T for X in Xs], P0, lam, 2, 8)
    W = basis.components(Z)
    assert n_iter == 8
    for a, b in zip(P, Pn):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(W @ W.T, Wn @ Wn.T, atol=1e-9)
    np.testing.assert_allclose(hist, hn, rtol=1e-9)


@pytest.mark.parametrize("solver", ["dense", "arpack"])
def test_w_step_equals_d_by_d_eigenproblem(solver):
    from bregclust.shared_subspace import _SpanBasis, _w_step

    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 12)) * np.linspace(0.2, 3.0, 12)
    P = rng.uniform(size=(60, 3))
    basis = _SpanBasis(X)
    assert basis.rank == 12
    for l in (1, 3, 5):
        W = basis.components(_w_step(basis, P, l, solver=solver))
        Wn, w = naive.w_step([X.T], [P], l)
        assert w[l] - w[l - 1] > 1e-6  # a gap, so the projector is unique
        np.testing.assert_allclose(W @ W.T, Wn @ Wn.T, atol=1e-8)


def test_w_step_sparse_gram_paths_match_dense():
    from bregclust.shared_subspace import _SpanBasis, _w_step

    rng = np.random.default_rng(4)
    P = rng.uniform(size=(40, 2))
    for d in (10, 90):  # d <= n: X^T X route; d > n: X X^T route with implicit V
        X = rng.poisson(0.7, size=(40, d)).astype(float)
        Wd = _SpanBasis(X).components(_w_step(_SpanBasis(X), P, 3))
        bs = _SpanBasis(sp.csr_matrix(X))
        Ws = bs.components(_w_step(bs, P, 3))
        np.testing.assert_allclose(Ws @ Ws.T, Wd @ Wd.T, atol=1e-7)



def test_repeated_rows_factorised_once_same_basis_and_w_step():
    # Tasks sharing documents: the d > n Gram route factorises each distinct row once
    # (weighted by sqrt(multiplicity)); Y^T Y = diag(s^2), the row-space projector, Y = X V
    # and the W-step are those of the dense SVD of the stacked rows.
    from bregclust.shared_subspace import _SpanBasis, _unique_rows, _w_step

    rng = np.random.default_rng(5)
    X = rng.poisson(0.4, size=(30, 120)).astype(float)
    X[7] = X[3]  # a repeat inside one task too
    Xd = np.vstack([X, X[:20], X])
    Xs = sp.csr_matrix(Xd)
    first, inverse = _unique_rows(Xs)
    assert first.size == 29 and np.array_equal(Xd[first][inverse], Xd)
    bs, bd = _SpanBasis(Xs), _SpanBasis(Xd)
    assert bs.rank == bd.rank == 29
    np.testing.assert_allclose(np.sort(bs.s2), np.sort(bd.s2), rtol=1e-10)
    np.testing.assert_allclose(bs.Y.T @ bs.Y, np.diag(bs.s2), atol=1e-9 * bs.s2.max())
    V = np.asarray(bs._X.T @ bs._coef)  # the implicit V
    np.testing.assert_allclose(V @ V.T, bd.V @ bd.V.T, atol=1e-10)
    np.testing.assert_allclose(Xs @ V, bs.Y, atol=1e-10)
    P = rng.uniform(size=(Xd.shape[0], 3))
    for l in (1, 4):
        Ws = bs.components(_w_step(bs, P, l))
        Wd = bd.components(_w_step(bd, P, l))
        np.testing.assert_allclose(Ws @ Ws.T, Wd @ Wd.T, atol=1e-7)
    # no repeats: the factors are those of the rows themselves (nothing re-weighted)
    first, _ = _unique_rows(sp.csr_matrix(X[:7]))
    assert np.array_equal(first, np.arange(7))
    assert _SpanBasis(sp.csr_matrix(X[:7]))._X.shape == (7, 120)


def test_memory_caches_the_factorisation_and_changes_nothing(tmp_path):
    rng = np.random.default_rng(6)
    Xs = [sp.csr_matrix(rng.poisson(0.5, size=(25, 80)).astype(float)) for _ in range(2)]
    kw = dict(n_components=2, lam=0.75, init="random")
    ref = [SharedSubspaceClustering(3, random_state=s, **kw).fit(Xs) for s in (0, 1)]
    cached = [SharedSubspaceClustering(3, random_state=s, memory=str(tmp_path), **kw).fit(Xs)
              for s in (0, 1, 0)]
    for a, b in zip(ref + ref[:1], cached):
        np.testing.assert_array_equal(a.objective_history_, b.objective_history_)
        for la, lb in zip(a.labels_, b.labels_):
            np.testing.assert_array_equal(la, lb)
    # one factorisation stored for three fits on the same data; new data adds one
    assert len(list(tmp_path.rglob("output.pkl"))) == 1
    SharedSubspaceClustering(3, random_state=0, memory=str(tmp_path), **kw).fit(
        [X * 2.0 for X in Xs])
    assert len(list(tmp_path.rglob("output.pkl"))) == 2
    est = pickle.loads(pickle.dumps(cached[0]))
    np.testing.assert_array_equal(est.transform(Xs[0]), cached[0].transform(Xs[0]))
    Xsrc, Xtgt = Xs[0].toarray(), Xs[1].toarray()
    y = np.r_[np.arange(25) % 3, -np.ones(25, dtype=int)]
    t0 = SharedSubspaceTransfer(n_components=2).fit(np.vstack([Xsrc, Xtgt]), y)
    t1 = SharedSubspaceTransfer(n_components=2, memory=str(tmp_path)).fit(
        np.vstack([Xsrc, Xtgt]), y)
    np.testing.assert_array_equal(t0.transduction_, t1.transduction_)
    assert len(list(tmp_path.rglob("output.pkl"))) == 3
    with pytest.raises(ValueError, match="memory"):
        SharedSubspaceClustering(3, memory=5).fit(Xs)

def test_lambda_one_is_per_task_relaxed_kmeans():
    Xs, ys = _tasks(seed=2)
    P0 = _soft_init(ys, 3, seed=1)
    _, (P, *_rest) = _run(Xs, P0, 1.0, 2, 6)
    for X, P0k, Pk in zip(Xs, P0, P):
        np.testing.assert_allclose(Pk, naive.relaxed_kmeans(X.T, P0k, 6), rtol=1e-9)


def test_lambda_zero_is_asi_on_all_tasks_together():
    Xs, ys = _tasks(seed=5)
    P0 = _soft_init(ys, 3, seed=2)
    basis, (P, Z, *_rest) = _run(Xs, P0, 0.0, 2, 6)
    Pa, Wa = naive.asi(np.vstack(Xs).T, np.vstack(P0), 2, 6)
    np.testing.assert_allclose(np.vstack(P), Pa, rtol=1e-8, atol=1e-12)
    W = basis.components(Z)
    np.testing.assert_allclose(W @ W.T, Wa @ Wa.T, atol=1e-8)


# ------------------------------------------------------------------ guarantees of the method

@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("lam", [0.0, 0.25, 0.75])
@pytest.mark.parametrize("d", [8, 150])
def test_objective_non_increasing_every_step(sparse, lam, d):
    rng = np.random.default_rng(7)
    Xs = [rng.poisson(0.5, size=(n, d)).astype(float) for n in (40, 35, 30)]
    Xs = [sp.csr_matrix(X) for X in Xs] if sparse else Xs
    P0 = [rng.uniform(0.05, 1.0, size=(X.shape[0], 3)) for X in Xs]
    _, (P, Z, M, Mk, hist, _, _, steps) = _run(Xs, P0, lam, 3, 15, trace=True)
    values = np.array([v for _, v in steps])
    # Tolerance relative to ||X||^2 (with lam = 0 and d > n the optimum is J = 0 up to rounding).
    scale = sum(float((X.multiply(X) if sparse else X * X).sum()) for X in Xs)
    assert np.all(np.diff(values) <= 1e-10 * scale), steps
    assert np.all(np.diff(hist) <= 1e-10 * scale)
    assert values[-1] < values[0] or values[0] < 1e-12 * scale
    assert all(np.all(Pk >= 0) for Pk in P)


def test_high_dimensional_w_stays_in_span():
    # d > n: the unrestricted eigen-solution lies in the null space of X (cross term 0);
    # the restricted one lies in the row space and sees the data.
    rng = np.random.default_rng(8)
    Xs = [rng.normal(size=(15, 80)) for _ in range(2)]
    P0 = [rng.uniform(0.1, 1, size=(15, 2)) for _ in range(2)]
    _, w = naive.w_step([X.T for X in Xs], P0, 3)
    X = np.vstack(Xs)
    # The full-space problem is degenerate: eigenvalue 0 has multiplicity >= d - n = 50
    # (the null space of X), so any W in it is optimal and gives X W = 0.
    assert np.abs(w[:50]).max() < 1e-9 * w.max()
    est = SharedSubspaceClustering(2, n_components=3, lam=0.5, init=P0, tol=0.0,
                                   max_iter=5)
    with pytest.warns(ConvergenceWarning, match="max_iter=5"):
        est.fit(Xs)
    W = est.components_.T
    np.testing.assert_allclose(W.T @ W, np.eye(3), atol=1e-10)
    # W lies in the row space of X: projecting onto it changes nothing.
    Q, _ = np.linalg.qr(X.T)
    np.testing.assert_allclose(Q @ (Q.T @ W), W, atol=1e-10)
    assert np.linalg.norm(X @ W) > 1e-3


@pytest.mark.parametrize("sparse", [False, True])
def test_estimator_orthonormal_nonnegative_and_dense_equals_sparse(sparse):
    Xs, ys = _tasks(seed=9, d=10)
    Xs = [np.abs(X) for X in Xs]
    P0 = _soft_init(ys, 3)
    dense = SharedSubspaceClustering(3, n_components=4, lam=0.5, init=P0, max_iter=10,
                                     tol=1e-12)
    other = clone(dense)
    with pytest.warns(ConvergenceWarning, match="LSSMTC stopped"):
        dense.fit(Xs)
        other.fit([sp.csr_matrix(X) for X in Xs] if sparse else [X.copy() for X in Xs])
    W = dense.components_.T
    np.testing.assert_allclose(W.T @ W, np.eye(4), atol=1e-10)
    assert all(np.all(P >= 0) for P in dense.membership_)
    for a, b in zip(dense.membership_, other.membership_):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(dense.objective_history_, other.objective_history_, rtol=1e-9)
    assert dense.shared_centers_.shape == (3, 4)
    assert [C.shape for C in dense.centers_] == [(3, 10), (3, 10)]
    assert [lab.shape for lab in dense.labels_] == [(30,), (30,)]
    Z = dense.transform(Xs)
    np.testing.assert_allclose(Z[0], Xs[0] @ W)


def test_kmeans_init_recovers_and_aligns_clusters():
    rng = np.random.default_rng(10)
    centres = np.array([[0.0, 0, 0, 0], [8, 0, 0, 0], [0, 8, 0, 0]]) + 5.0
    X1, y1 = _blobs(rng, 25, centres, noise=0.5)
    X2, y2 = _blobs(rng, 20, centres, noise=0.5, shift=0.5)
    est = SharedSubspaceClustering(3, n_components=2, lam=0.5, random_state=0, n_init=3)
    labels = est.fit_predict([X1, X2])
    # Perfect recovery, and cluster j is the same blob in both tasks.
    maps = []
    for lab, y in zip(labels, (y1, y2)):
        mapping = [int(np.bincount(lab[y == t], minlength=3).argmax()) for t in range(3)]
        assert sorted(mapping) == [0, 1, 2]
        assert np.mean(lab == np.array(mapping)[y]) == 1.0
        maps.append(mapping)
    assert maps[0] == maps[1]
    assert np.all(np.diff(est.objective_history_) <= 1e-10 * est.objective_history_[0])


def _shared_term(est, Xs):
    """``sum_k ||X_k W - P_k M^T||^2`` of a fitted LSSMTC (the cross-task term without its
    weight ``1 - lam``)."""
    return sum(float(np.sum((X @ est.components_.T - P @ est.shared_centers_) ** 2))
               for X, P in zip(Xs, est.membership_))


def test_lam_is_inert_where_the_subspace_falls_on_near_empty_pixels():
    """Why the demo's LSSMTC rows at ``lam = .75`` and ``lam = 1`` are equal on the digits tasks.

    The ``W`` step takes the directions of least within-cluster scatter in the span of the
    data; on the bundled digits these are pixels drawn in at most 1 image in 200 (the left
    column and the corners), where every row is almost 0. There the cross-task term is ~1e-6 of
    ``J``: ``lam`` only rescales the within-task term, and neither the multiplicative ``P``
    step (a ratio of parts that all scale by ``lam``) nor the relative stop rule sees a scale,
    so every ``lam`` in ``(0, 1]`` gives the same sweeps and labels. Drop the near-empty pixels
    and the subspace carries data again: ``lam`` then moves the partition.
    """
    from bregclust.datasets import make_digits_tasks

    Xs = make_digits_tasks(random_state=0).Xs
    drawn = (np.vstack(Xs) > 0).mean(axis=0)  # share of the images with ink on each pixel

    def fit(Xs, lam):
        return SharedSubspaceClustering(7, n_components=2, lam=lam, init="random", tol=1e-4,
                                        random_state=0).fit(Xs)

    fits = {lam: fit(Xs, lam) for lam in (0.5, 0.75, 1.0)}
    for lam, est in fits.items():
        mass = (est.components_ ** 2)[:, drawn <= 0.005].sum(axis=1)
        assert mass.min() > 0.99, mass  # each direction lies on the near-empty pixels
        J = est.objective_history_
        assert (1 - lam) * _shared_term(est, Xs) < 1e-5 * J[-1]
        assert est.n_iter_ == fits[1.0].n_iter_
        np.testing.assert_allclose(J / lam, fits[1.0].objective_history_, rtol=1e-5)
        for a, b in zip(est.labels_, fits[1.0].labels_):
            np.testing.assert_array_equal(a, b)
    # the memberships do differ (lam enters the P step), below what moves a label
    gap = max(np.abs(a - b).max() for a, b in zip(fits[0.75].membership_, fits[1.0].membership_))
    assert 0 < gap < 1e-3
    # pixels drawn in at least 5 % of the images: the cross-task term weighs, labels move
    kept = [X[:, drawn >= 0.05] for X in Xs]
    a, b = fit(kept, 0.75), fit(kept, 1.0)
    assert 0.25 * _shared_term(a, kept) > 1e-4 * a.objective_history_[-1]
    assert any(not np.array_equal(la, lb) for la, lb in zip(a.labels_, b.labels_))


def test_reproducible_inputs_unchanged_and_picklable():
    Xs, _ = _tasks(seed=11)
    Xs_copy = [X.copy() for X in Xs]
    a = SharedSubspaceClustering(3, n_components=2, random_state=3).fit(Xs)
    b = SharedSubspaceClustering(3, n_components=2, random_state=3).fit(Xs)
    for X, Xc in zip(Xs, Xs_copy):
        np.testing.assert_array_equal(X, Xc)
    for la, lb in zip(a.labels_, b.labels_):
        np.testing.assert_array_equal(la, lb)
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(c.transform(Xs[0]), a.transform(Xs[0]))


# ------------------------------------------------------------------ LSSTTC

def test_transfer_source_equals_target_is_perfect():
    rng = np.random.default_rng(12)
    centres = 4.0 * rng.normal(size=(4, 20))
    X, y = _blobs(rng, 30, centres)
    names = np.array(["course", "faculty", "project", "student"])
    clf = SharedSubspaceTransfer(n_components=5, lam=0.5).fit(*_semi(X, names[y], X.copy()))
    np.testing.assert_array_equal(clf.transduction_, np.concatenate([names[y], names[y]]))
    np.testing.assert_array_equal(clf.classes_, names)
    np.testing.assert_array_equal(clf.predict(X), names[y])
    W = clf.components_.T
    np.testing.assert_allclose(W.T @ W, np.eye(5), atol=1e-10)
    assert np.all(clf.membership_ >= 0)
    assert np.all(np.diff(clf.objective_history_) <= 1e-10 * clf.objective_history_[0])


def test_transfer_cluster_j_is_source_class_j_on_a_shifted_target():
    rng = np.random.default_rng(13)
    # Centres away from the origin: the relaxed P reconstructs x as a non-negative
    # combination of centres, so a centre near 0 would be represented by scaling another.
    centres = np.array([[0.0, 0, 0], [6, 0, 0], [0, 6, 0]]) + 5.0
    Xs_, ys_ = _blobs(rng, 20, centres, noise=0.6)
    Xt, yt = _blobs(rng, 15, centres, noise=0.6, shift=[1.0, 1.0, 2.0])
    names = np.array(["zeta", "alpha", "mu"])  # class order is np.unique order, not data order
    # the paper's T = 20 sweeps: run to convergence, the relaxed P_2 on these overlapping
    # blobs represents some target rows by other classes' centres (a lower objective)
    kw = dict(n_components=2, lam=0.25, max_iter=20)
    with pytest.warns(ConvergenceWarning, match="LSSTTC stopped at max_iter=20"):
        clf = SharedSubspaceTransfer(**kw).fit(*_semi(Xs_, names[ys_], Xt))
    np.testing.assert_array_equal(clf.classes_, ["alpha", "mu", "zeta"])
    np.testing.assert_array_equal(clf.transduction_[len(ys_):], names[yt])
    # interleaving source and target rows changes nothing
    X, y = _semi(Xs_, names[ys_], Xt)
    perm = np.random.default_rng(0).permutation(len(y))
    with pytest.warns(ConvergenceWarning, match="LSSTTC stopped at max_iter=20"):
        mixed = SharedSubspaceTransfer(**kw).fit(X[perm], y[perm])
    np.testing.assert_array_equal(mixed.transduction_, clf.transduction_[perm])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_transfer_unlabelled_marker_in_string_bytes_and_object_labels():
    """"-1" marks the target rows in str, bytes and object arrays (a pandas column of
    strings), as -1 does in integer arrays; the labels found are the same."""
    rng = np.random.default_rng(21)
    centres = np.array([[0.0, 0, 0], [6, 0, 0], [0, 6, 0]]) + 5.0
    Xs_, ys_ = _blobs(rng, 15, centres, noise=0.3)
    Xt, _ = _blobs(rng, 10, centres, noise=0.3)
    X = np.vstack([Xs_, Xt])
    ints = np.concatenate([ys_, np.full(Xt.shape[0], -1)])
    ref = SharedSubspaceTransfer(n_components=2, max_iter=50).fit(X, ints).transduction_
    for y in (ints.astype(str), ints.astype(str).astype("S"), ints.astype(str).astype(object),
              np.array([str(v).encode() for v in ints], dtype=object),
              np.array([int(v) if v >= 0 else "-1" for v in ints], dtype=object)):
        clf = SharedSubspaceTransfer(n_components=2, max_iter=50).fit(X, y)
        assert clf.transduction_.shape == ints.shape
        got = np.array([int(v) for v in clf.transduction_])
        np.testing.assert_array_equal(got, ref)


def test_transfer_default_subspace_adapts_to_the_rank():
    """n_components="auto": 100 (the paper's smallest l) capped by the rank of the data."""
    rng = np.random.default_rng(22)
    X = rng.normal(size=(60, 8)) + 3.0
    y = np.concatenate([np.arange(30) % 2, np.full(30, -1)])
    clf = SharedSubspaceTransfer().fit(X, y)
    assert clf.rank_ == 8 and clf.n_components_ == 8 and clf.components_.shape == (8, 8)
    assert SharedSubspaceTransfer(n_components=5).fit(X, y).n_components_ == 5
    with pytest.raises(ValueError, match=r"n_components must be a positive int or 'auto'"):
        SharedSubspaceTransfer(n_components="all").fit(X, y)


def test_data_beyond_float64_range_is_a_clear_error():
    """Tasks far apart in magnitude share one power-of-two scale: 1e200 next to 1 is refused
    (the objective, of degree 2, would put the small task's divergences below float64's range:
    a degenerate fit with an infinite objective before; issue 45 item 7), and so is 1e300 next
    to 1e-300."""
    rng = np.random.default_rng(23)
    Xs = [rng.uniform(size=(20, 4)) * 1e200, rng.uniform(size=(20, 4))]
    with pytest.raises(ValueError, match="too far apart for one common scale"):
        SharedSubspaceClustering(2, random_state=0, max_iter=20).fit(Xs)
    far = [rng.uniform(size=(20, 4)) * 1e300, rng.uniform(size=(20, 4)) * 1e-300]
    for Z in (far, [sp.csr_matrix(X) for X in far]):
        with pytest.raises(ValueError, match="too far apart|underflows to zero"):
            SharedSubspaceClustering(2).fit(Z)
        X = (sp.vstack if sp.issparse(Z[0]) else np.vstack)(Z)
        y = np.concatenate([np.arange(20) % 2, np.full(20, -1)])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            SharedSubspaceTransfer(n_components=2, max_iter=20).fit(X, y)  # one matrix: fits
    # large but representable data fit
    SharedSubspaceClustering(2, random_state=0).fit([Xs[1] * 1e150, Xs[1] * 1e150])


def test_transfer_matches_naive_with_fixed_source():
    Xs, ys = _tasks(seed=14, d=7)
    P1 = np.eye(3)[ys[0]]
    P2 = _soft_init([ys[1]], 3, seed=5)[0]
    basis, (P, Z, M, Mk, hist, _, _, steps) = _run(
        Xs, [P1, P2], 0.5, 2, 6, update=[False, True], within=[False, True], trace=True)
    Pn, Wn, hn = naive.lssmtc([X.T for X in Xs], [P1, P2], 0.5, 2, 6,
                              update=[False, True], within=[False, True])
    np.testing.assert_array_equal(P[0], P1)
    np.testing.assert_allclose(P[1], Pn[1], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(hist, hn, rtol=1e-9)
    values = [v for _, v in steps]
    assert np.all(np.diff(values) <= 1e-10 * values[0])


def test_transfer_sparse_equals_dense():
    rng = np.random.default_rng(15)
    Xs_ = rng.poisson(0.6, size=(50, 120)).astype(float)
    Xt = rng.poisson(0.6, size=(40, 120)).astype(float)
    ys_ = rng.integers(0, 2, size=50)
    kw = dict(n_components=10, lam=0.5, max_iter=8, tol=0.0)
    with pytest.warns(ConvergenceWarning, match="LSSTTC stopped"):
        a = SharedSubspaceTransfer(**kw).fit(*_semi(Xs_, ys_, Xt))
        b = SharedSubspaceTransfer(**kw).fit(*_semi(sp.csr_matrix(Xs_), ys_, sp.csr_matrix(Xt)))
    np.testing.assert_allclose(a.membership_, b.membership_, rtol=1e-6, atol=1e-10)
    np.testing.assert_array_equal(a.transduction_, b.transduction_)
    np.testing.assert_array_equal(a.predict(Xt), b.predict(sp.csr_matrix(Xt)))


# ------------------------------------------------------------------ bad input

def test_bad_input_messages():
    rng = np.random.default_rng(16)
    X1, X2 = rng.normal(size=(20, 5)), rng.normal(size=(20, 6))
    with pytest.raises(ValueError, match="share one feature space.*task 1 has 6"):
        SharedSubspaceClustering(2).fit([X1, X2])
    with pytest.raises(ValueError, match=r"n_components=6 exceeds the rank 5"):
        SharedSubspaceClustering(2, n_components=6, random_state=0).fit([X1, X1])
    low_rank = np.outer(rng.normal(size=20), rng.normal(size=5))
    with pytest.raises(ValueError, match=r"n_components=2 exceeds the rank 1"):
        SharedSubspaceTransfer(n_components=2).fit(*_semi(low_rank, np.arange(20) % 2, low_rank))
    with pytest.raises(ValueError, match="lam must be <= 1"):
        SharedSubspaceClustering(2, lam=1.5).fit([X1])
    with pytest.raises(ValueError, match="n_clusters=25 for task 0 is larger than n_samples=20"):
        SharedSubspaceClustering(25).fit([X1])
    with pytest.raises(TypeError, match="n_clusters must be an int or a sequence"):
        SharedSubspaceClustering(2.0).fit([X1])
    with pytest.raises(ValueError, match="needs one number of clusters for every task"):
        SharedSubspaceClustering([2, 3]).fit([X1, X1])
    with pytest.raises(ValueError, match=r"init for task 1 must have shape .* \(20, 2\)"):
        SharedSubspaceClustering(2, init=[rng.uniform(size=(20, 2)),
                                          rng.uniform(size=(19, 2))]).fit([X1, X1])
    with pytest.raises(ValueError, match=r"init\[0\] has rank < n_clusters=2"):
        SharedSubspaceClustering(2, init=[np.ones((20, 2))]).fit([X1])
    with pytest.raises(ValueError, match=r"init must be 'k-means\+\+', 'random'"):
        SharedSubspaceClustering(2, init="spectral").fit([X1])
    y = np.array(["a", "b"] * 10)
    with pytest.raises(ValueError, match="do not cover the classes.*'c'"):
        SharedSubspaceTransfer(n_components=2, classes=["a", "b", "c"]).fit(*_semi(X1, y, X1))
    with pytest.raises(ValueError, match="labels not in classes"):
        SharedSubspaceTransfer(n_components=2, classes=["a"]).fit(*_semi(X1, y, X1))
    with pytest.raises(ValueError, match="at least 2 classes"):
        SharedSubspaceTransfer(n_components=2).fit(*_semi(X1, np.zeros(20), X1))
    with pytest.raises(ValueError, match="one label per row of X"):
        SharedSubspaceTransfer(n_components=2).fit(X1, y[:-1])
    with pytest.raises(ValueError, match="no unlabelled rows; mark the target rows with -1"):
        SharedSubspaceTransfer(n_components=2).fit(X1, y)
    with pytest.raises(ValueError, match="no labelled rows"):
        SharedSubspaceTransfer(n_components=2).fit(X1, np.full(20, -1))
    with pytest.raises(TypeError, match="list of 2-D arrays"):
        SharedSubspaceClustering(2).fit(X1)
    clf = SharedSubspaceTransfer(n_components=2).fit(*_semi(X1, y, X1))
    with pytest.raises(ValueError, match="X has 6 features"):
        clf.predict(X2)


# ------------------------------------------------------------------ real data

@pytest.mark.data
@pytest.mark.slow
def test_webkb4_span_path_monotone():
    require_data("webkb4_linqs/cornell.content")
    from bregclust.datasets import load_webkb4

    data = load_webkb4(sparse=True)
    Xs = data.Xs[:2]  # 2 tasks, 320 pages x 1,703 terms: d > n, the Gram route
    est = SharedSubspaceClustering(4, n_components=4, lam=0.5, max_iter=8, tol=0.0,
                                   random_state=0)
    with pytest.warns(ConvergenceWarning, match="LSSMTC stopped"):
        est.fit(Xs)
    assert est.rank_ <= sum(X.shape[0] for X in Xs)
    W = est.components_.T
    np.testing.assert_allclose(W.T @ W, np.eye(4), atol=1e-8)
    h = np.array(est.objective_history_)
    assert np.all(np.diff(h) <= 1e-10 * h[0])
    assert np.linalg.norm(est.transform(Xs[0])) > 0
