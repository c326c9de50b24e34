"""Cosine geometry: the ``cosine`` registry entry and spherical k-means in every centroid
estimator, against scipy's cosine distance and the slow reference in tests/naive_cosine.py."""

import pickle
import warnings

import naive_cosine as naive
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.spatial.distance import cdist

from bregclust import (
    BisectingBregmanKMeans,
    BregmanKMeans,
    MiniBatchBregmanKMeans,
    get_divergence,
)


def _directions(n=240, d=8, k=3, kappa=30.0, seed=0, scale=True):
    """Rows scattered around ``k`` directions, with random lengths (cosine ignores them)."""
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=(k, d))
    mu /= np.linalg.norm(mu, axis=1, keepdims=True)
    y = rng.integers(0, k, size=n)
    X = mu[y] + rng.normal(scale=1.0 / np.sqrt(kappa), size=(n, d))
    if scale:
        X *= rng.uniform(0.1, 10.0, size=(n, 1))
    return X, y


# ----------------------------------------------------------------------------- the record
def test_record_declares_the_spherical_capability():
    div = get_divergence("cosine")
    assert div.spherical and div.symmetric and div.differentiable and div.has_gemm
    assert get_divergence("spherical") is div
    assert not get_divergence("sqeuclidean").spherical


def test_pairwise_matches_scipy_cosine_dense_sparse_float32():
    X, _ = _directions(60, 7)
    U = np.random.default_rng(1).normal(size=(5, 7))
    div = get_divergence("cosine")
    ref = cdist(X, U, "cosine")
    np.testing.assert_allclose(div.pairwise(X, U), ref, atol=1e-12)
    np.testing.assert_allclose(div.pairwise(sp.csr_matrix(X), U), ref, atol=1e-12)
    np.testing.assert_allclose(div.generic_pairwise(X, U), ref, atol=1e-12)
    np.testing.assert_allclose(div.pairwise(X.astype(np.float32), U), ref, atol=1e-5)
    assert div.divergence(X[0], X[0] * 3.0) == pytest.approx(0.0, abs=1e-15)


def test_three_point_identity_on_the_sphere():
    # 1 - <x, y> is the Bregman divergence of phi(x) = ||x|| between unit vectors
    rng = np.random.default_rng(3)
    x, y, z = naive.unit(rng.normal(size=(3, 6)))
    div = get_divergence("cosine")
    lhs = div.divergence(x, y) + div.divergence(y, z) - div.divergence(x, z)
    rhs = float((x - y) @ (div.grad(z[None])[0] - div.grad(y[None])[0]))
    assert lhs == pytest.approx(rhs, rel=1e-10, abs=1e-12)


def test_normalised_mean_maximises_the_summed_cosine():
    rng = np.random.default_rng(4)
    X = naive.unit(rng.normal(size=(30, 5)) + 1.0)
    w = rng.random(30) + 0.1
    div = get_divergence("cosine")
    S, W = div.weighted_sums(X, np.zeros(30, dtype=np.int64), 1, w)
    u = S[0] / np.linalg.norm(S[0])
    best = float(w @ div.pairwise(X, u[None])[:, 0])
    for v in rng.normal(size=(300, 5)):
        assert best <= float(w @ div.pairwise(X, v[None])[:, 0]) + 1e-12


def test_grad_inv_is_refused_with_a_reason():
    with pytest.raises(ValueError, match="no inverse"):
        get_divergence("cosine").grad_inv(np.ones((2, 3)))


# ----------------------------------------------------------------------------- k-means
@pytest.mark.parametrize("weighted", [False, True])
def test_kmeans_equals_naive_spherical_kmeans(weighted):
    X, _ = _directions()
    rng = np.random.default_rng(5)
    w = rng.uniform(0.2, 3.0, size=X.shape[0]) if weighted else None
    C0 = X[[0, 1, 2]]
    km = BregmanKMeans(3, divergence="cosine", init=C0, tol=0.0).fit(X, sample_weight=w)
    labels, U, history = naive.spherical_kmeans(X, C0, w)
    np.testing.assert_array_equal(km.labels_, labels)
    np.testing.assert_allclose(km.cluster_centers_, U, atol=1e-12)
    np.testing.assert_allclose(km.objective_history_, history[:len(km.objective_history_)],
                               rtol=1e-10)
    assert km.inertia_ == pytest.approx(history[-1], rel=1e-10)
    np.testing.assert_allclose(np.linalg.norm(km.cluster_centers_, axis=1), 1.0, atol=1e-14)


def test_objective_non_increasing_and_kmeanspp_n_init():
    X, y = _directions(600, 20, k=6, kappa=5.0, seed=2)
    km = BregmanKMeans(6, divergence="cosine", n_init=4, random_state=0).fit(X)
    h = np.array(km.objective_history_)
    assert np.all(np.diff(h) <= 1e-12 * h[0])
    single = [BregmanKMeans(6, divergence="cosine", random_state=s).fit(X).inertia_
              for s in range(3)]
    assert km.inertia_ <= min(single) + 1e-9
    from sklearn.metrics import adjusted_rand_score
    assert adjusted_rand_score(y, km.labels_) > 0.5


def test_scale_of_rows_is_ignored():
    X, _ = _directions(scale=False)
    s = np.random.default_rng(7).uniform(1e-200, 1e200, size=(X.shape[0], 1))
    a = BregmanKMeans(3, divergence="cosine", random_state=0).fit(X)
    b = BregmanKMeans(3, divergence="cosine", random_state=0).fit(X * s)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_allclose(a.cluster_centers_, b.cluster_centers_, atol=1e-12)
    assert a.inertia_ == pytest.approx(b.inertia_, rel=1e-10)


def test_sparse_equals_dense_and_stays_sparse():
    X, _ = _directions(300, 30, seed=3, scale=False)
    X[np.abs(X) < 0.15] = 0.0
    Xs = sp.csr_matrix(X)
    before = Xs.copy()
    a = BregmanKMeans(4, divergence="cosine", random_state=1).fit(X)
    b = BregmanKMeans(4, divergence="cosine", random_state=1).fit(Xs)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_allclose(a.cluster_centers_, b.cluster_centers_, atol=1e-12)
    assert a.inertia_ == pytest.approx(b.inertia_, rel=1e-10)
    np.testing.assert_array_equal(b.predict(Xs), a.predict(X))
    np.testing.assert_allclose(b.transform(Xs), a.transform(X), atol=1e-12)
    assert (Xs != before).nnz == 0  # input not modified


def test_float32_kept():
    X, _ = _directions(seed=4)
    X32 = X.astype(np.float32)
    km = BregmanKMeans(3, divergence="cosine", random_state=0).fit(X32)
    assert km.cluster_centers_.dtype == np.float32
    assert km.transform(X32).dtype == np.float32
    ref = BregmanKMeans(3, divergence="cosine", random_state=0).fit(X)
    from sklearn.metrics import adjusted_rand_score
    assert adjusted_rand_score(ref.labels_, km.labels_) > 0.99
    kms = BregmanKMeans(3, divergence="cosine", random_state=0).fit(sp.csr_matrix(X32))
    assert kms.cluster_centers_.dtype == np.float32


def test_predict_transform_score_against_scipy():
    X, _ = _directions(seed=5)
    km = BregmanKMeans(3, divergence="cosine", random_state=0).fit(X)
    D = cdist(X, km.cluster_centers_, "cosine")
    np.testing.assert_allclose(km.transform(X), D, atol=1e-12)
    np.testing.assert_array_equal(km.predict(X), D.argmin(axis=1))
    assert km.score(X) == pytest.approx(-D.min(axis=1).sum(), rel=1e-10)
    assert km.inertia_ == pytest.approx(D.min(axis=1).sum(), rel=1e-10)
    km2 = pickle.loads(pickle.dumps(km))
    np.testing.assert_array_equal(km2.predict(X), km.predict(X))


def test_init_array_is_projected_onto_the_sphere():
    X, _ = _directions(seed=6)
    C0 = X[[0, 1, 2]] * 1e5
    a = BregmanKMeans(3, divergence="cosine", init=C0).fit(X)
    b = BregmanKMeans(3, divergence="cosine", init=C0 / 1e5).fit(X)
    np.testing.assert_array_equal(a.labels_, b.labels_)


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("sparse", [False, True])
def test_zero_row_is_refused_naming_the_row(sparse):
    X, _ = _directions(50, 5)
    X[17] = 0.0
    X = sp.csr_matrix(X) if sparse else X
    with pytest.raises(ValueError, match="all-zero row at row 17"):
        BregmanKMeans(2, divergence="cosine").fit(X)
    km = BregmanKMeans(2, divergence="cosine", random_state=0).fit(_directions(50, 5)[0])
    with pytest.raises(ValueError, match="all-zero row at row 17"):
        km.predict(X)


def test_non_finite_and_one_feature_refused():
    X, _ = _directions(50, 5)
    X[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        BregmanKMeans(2, divergence="cosine").fit(X)
    X[3, 2] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        BregmanKMeans(2, divergence="cosine").fit(X)
    with pytest.raises(ValueError, match="at least 2 features"):
        BregmanKMeans(2, divergence="cosine").fit(np.arange(1.0, 11.0)[:, None])


# ----------------------------------------------------------------------------- other estimators
def test_minibatch_fit_and_partial_fit():
    X, y = _directions(900, 10, k=3, seed=8)
    mb = MiniBatchBregmanKMeans(3, divergence="cosine", random_state=0, batch_size=128).fit(X)
    np.testing.assert_allclose(np.linalg.norm(mb.cluster_centers_, axis=1), 1.0, atol=1e-12)
    from sklearn.metrics import adjusted_rand_score
    assert adjusted_rand_score(y, mb.labels_) > 0.9
    pf = MiniBatchBregmanKMeans(3, divergence="cosine", random_state=0)
    for s in range(0, 900, 150):
        pf.partial_fit(X[s:s + 150])
    np.testing.assert_allclose(np.linalg.norm(pf.cluster_centers_, axis=1), 1.0, atol=1e-12)
    assert adjusted_rand_score(y, pf.predict(X)) > 0.9
    full = BregmanKMeans(3, divergence="cosine", random_state=0).fit(X)
    assert -pf.score(X) <= 1.05 * full.inertia_


def test_bisecting():
    X, y = _directions(600, 10, k=4, seed=9)
    bk = BisectingBregmanKMeans(4, divergence="cosine", random_state=0).fit(X)
    np.testing.assert_allclose(np.linalg.norm(bk.cluster_centers_, axis=1), 1.0, atol=1e-12)
    D = cdist(X, bk.cluster_centers_, "cosine")
    assert bk.inertia_ == pytest.approx(D[np.arange(600), bk.labels_].sum(), rel=1e-9)
    from sklearn.metrics import adjusted_rand_score
    assert adjusted_rand_score(y, bk.labels_) > 0.8


def test_dask_equals_in_memory():
    da = pytest.importorskip("dask.array")
    X, _ = _directions(400, 6, seed=10)
    C0 = X[[0, 1, 2]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = BregmanKMeans(3, divergence="cosine", init=C0, tol=0.0).fit(X)
        b = BregmanKMeans(3, divergence="cosine", init=C0, tol=0.0).fit(
            da.from_array(X, chunks=(97, 6)))
        c = BregmanKMeans(3, divergence="cosine", init=C0, tol=0.0).fit(
            da.from_array(X, chunks=(97, 6)).map_blocks(sp.csr_matrix))
    np.testing.assert_array_equal(b.labels_.compute(), a.labels_)
    np.testing.assert_array_equal(c.labels_.compute(), a.labels_)
    np.testing.assert_allclose(b.cluster_centers_, a.cluster_centers_, atol=1e-12)
    np.testing.assert_allclose(b.objective_history_, a.objective_history_, rtol=1e-12)
    # k-means|| on dask
    d = BregmanKMeans(3, divergence="cosine", random_state=0).fit(da.from_array(X, chunks=100))
    np.testing.assert_allclose(np.linalg.norm(d.cluster_centers_, axis=1), 1.0, atol=1e-12)


def test_cli_fit_with_cosine(tmp_path):
    from bregclust.cli import main

    X, y = _directions(90, 5, k=2, kappa=200.0, seed=11)
    src = tmp_path / "rows.npy"
    np.save(src, X)
    out = tmp_path / "labels.txt"
    assert main(["fit", str(src), "-k", "2", "--divergence", "cosine", "-o", str(out),
                 "--quiet"]) == 0
    lab = np.loadtxt(out, dtype=int)
    from sklearn.metrics import adjusted_rand_score
    assert adjusted_rand_score(y, lab) == 1.0


def test_multitask_bregman_clustering_with_cosine_costs():
    from bregclust import MultitaskBregmanClustering
    from bregclust.mbc import mbc_objective

    rng = np.random.default_rng(12)
    mu = rng.normal(size=(3, 6))
    Xs = [(mu[rng.integers(0, 3, 100)] + 0.8 * rng.normal(size=(100, 6)))
          * rng.uniform(0.5, 5.0, size=(100, 1)) for _ in range(3)]
    m = MultitaskBregmanClustering(3, divergence="cosine", lam=0.9, random_state=0).fit(Xs)
    h = np.array(m.objective_history_)
    assert np.all(np.diff(h) <= 1e-12 * abs(h[0]))
    for U in m.cluster_centers_:
        np.testing.assert_allclose(np.linalg.norm(U, axis=1), 1.0, atol=1e-12)
    ref = mbc_objective(Xs, m.labels_, m.cluster_centers_, m.relations_, "cosine", lam=0.9)
    assert h[-1] == pytest.approx(ref, rel=1e-9)
