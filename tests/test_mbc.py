"""Tests of Multitask Bregman Clustering (bregclust.mbc)."""

import math
import pickle
import warnings
import zlib

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import offset_blobs, require_data
from naive_mbc import (
    lp_transport,
    naive_objective,
    naive_own_objective,
    naive_smbc_sq,
    scipy_centroid,
)
from scipy.optimize import brentq
from scipy.special import lambertw
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

import bregclust.mbc as mbc
from bregclust.divergences import (
    get_divergence,
    list_divergences,
    register_divergence,
    unregister_divergence,
)
from bregclust.kmeans import BregmanKMeans, bregman_kmeans_plusplus, smoothing_point
from bregclust.mbc import MultitaskBregmanClustering, mbc_objective, solve_centroids
from bregclust.metrics import ari

CUSTOM = "mbc_test_pow15"


@pytest.fixture(scope="module", autouse=True)
def custom_divergence():
    """An asymmetric separable generator f(x) = x^1.5 on x >= 0 (no closed-form centroid)."""
    div = register_divergence(CUSTOM, phi=lambda x: x ** 1.5, dphi=lambda x: 1.5 * math.sqrt(x),
                              domain="nonnegative", overwrite=True)
    yield div
    unregister_divergence(CUSTOM)


def _tasks(rng, sizes=(60, 50), d=4, positive=False, k=3):
    """Related tasks: Gaussian blobs around shared centres (shifted per task)."""
    base = rng.normal(0, 3, size=(k, d))
    Xs, ys = [], []
    for t, n in enumerate(sizes):
        y = np.arange(n) % k
        X = base[y] + 0.3 * t + rng.normal(0, 1.0, size=(n, d))
        if positive:
            X = np.exp(X / 3.0)
        Xs.append(X)
        ys.append(y)
    return Xs, ys


def _params_for(name, d=4):
    if name == "mahalanobis":
        A = np.diag(np.linspace(0.5, 2.0, d)) + 0.1
        return {"A": A}
    return None


def _needs_positive(name):
    return get_divergence(name, **(_params_for(name) or {})).domain != "real"


# ------------------------------------------------------------------------- centroid solver
@pytest.mark.parametrize("name", ["kl", "itakura_saito", CUSTOM])
def test_centroid_solver_matches_scipy_minimize(name):
    rng = np.random.default_rng(1)
    for _ in range(4):
        d = 3
        A, B = rng.uniform(0.05, 2.0, size=2)
        mL = rng.uniform(0.05, 4.0, size=d)
        mR = rng.uniform(0.05, 4.0, size=d)
        u = solve_centroids(name, [A], [B], mL[None], mR[None])[0]
        u_ref, f_ref, f = scipy_centroid(name, A, B, mL, mR, lower=1e-9)
        # ours is at least as good as scipy's optimum, and the same point
        assert f(u) <= f_ref * (1 + 1e-10) + 1e-14
        np.testing.assert_allclose(u, u_ref, rtol=1e-4)
        # the root lies between mu_L and mu_R coordinate-wise
        assert np.all(u >= np.minimum(mL, mR) * (1 - 1e-12))
        assert np.all(u <= np.maximum(mL, mR) * (1 + 1e-12))


@pytest.mark.parametrize("name", ["kl", "itakura_saito", CUSTOM])
def test_centroid_solver_solves_stationarity_to_machine_precision(name):
    div = get_divergence(name)
    rng = np.random.default_rng(2)
    A = rng.uniform(0.01, 3.0, size=6)
    B = rng.uniform(0.01, 3.0, size=6)
    mL = rng.uniform(1e-3, 5.0, size=(6, 5))
    mR = rng.uniform(1e-3, 5.0, size=(6, 5))
    U = solve_centroids(div, A, B, mL, mR)
    for z in range(6):
        for j in range(5):
            def g(u, z=z, j=j):  # d/du [A d(mL, u) + B d(u, mR)] / f''(u)
                h = 1e-6 * u
                f2 = (div.dphi(u + h) - div.dphi(u - h)) / (2 * h)
                return A[z] * (u - mL[z, j]) + B[z] * (div.dphi(u) - div.dphi(mR[z, j])) / f2
            lo, hi = sorted((mL[z, j], mR[z, j]))
            root = brentq(g, lo, hi, xtol=1e-15, rtol=1e-15)
            assert U[z, j] == pytest.approx(root, rel=1e-8)


def test_kl_closed_form_equals_lambertw():
    rng = np.random.default_rng(3)
    A, B = 0.7, 0.4
    mL = rng.uniform(0.1, 3, size=(1, 8))
    mR = rng.uniform(0.1, 3, size=(1, 8))
    u = solve_centroids("kl", [A], [B], mL, mR)[0]
    c = A * mL[0] / (B * mR[0]) * np.exp(A / B)
    ref = A * mL[0] / (B * lambertw(c).real)
    np.testing.assert_allclose(u, ref, rtol=1e-13)
    # stationarity A (1 - mL/u) + B log(u/mR) = 0
    np.testing.assert_allclose(A * (1 - mL[0] / u) + B * np.log(u / mR[0]), 0, atol=1e-13)


def test_kl_solver_extreme_weights_and_zero_left_mean():
    # tiny B: exp(A/B) overflows, the Wright-omega form does not; mL = 0 has u = mR exp(-A/B)
    u = solve_centroids("kl", [1.0, 1.0], [1e-6, 0.5], np.array([[2.0, 0.0], [0.0, 1.0]]),
                        np.array([[3.0, 1.0], [2.0, 1.0]]))
    assert np.isfinite(u).all()
    assert u[0, 0] == pytest.approx(2.0, rel=1e-5)
    assert u[1, 0] == pytest.approx(2.0 * math.exp(-2.0), rel=1e-12)
    assert u[1, 1] == pytest.approx(1.0, rel=1e-12)


def test_symmetric_closed_form_and_degenerate_weights():
    mL = np.array([[0.0, 2.0], [1.0, 1.0], [5.0, 5.0], [7.0, 7.0]])
    mR = np.array([[4.0, 2.0], [3.0, 3.0], [9.0, 9.0], [8.0, 8.0]])
    cur = np.full((4, 2), -1.0)
    U = solve_centroids("sqeuclidean", [1.0, 0.0, 2.0, 0.0], [3.0, 1.0, 0.0, 0.0], mL, mR,
                        current=cur)
    np.testing.assert_allclose(U, [[3.0, 2.0], [3.0, 3.0], [5.0, 5.0], [-1.0, -1.0]])


@pytest.mark.parametrize("name", ["kl", "itakura_saito"])
def test_geodesic_walk_gap_is_measured(name):
    """The paper's geodesic-walk approximation is never better than the exact solve, and for
    unequal weights it is strictly worse (the optimum is off the dual geodesic)."""
    div = get_divergence(name)
    rng = np.random.default_rng(4)
    k, d = 20, 4
    A = rng.uniform(0.05, 2.0, size=k)
    B = rng.uniform(0.05, 2.0, size=k)
    mL = rng.uniform(0.05, 3.0, size=(k, d))
    mR = rng.uniform(0.05, 3.0, size=(k, d))
    Ue = solve_centroids(div, A, B, mL, mR)
    Ug = solve_centroids(div, A, B, mL, mR, solver="geodesic")

    def obj(U):
        return np.array([A[z] * div.divergence(mL[z], U[z]) + B[z] * div.divergence(U[z], mR[z])
                         for z in range(k)])

    fe, fg = obj(Ue), obj(Ug)
    gap = (fg - fe) / fe
    assert np.all(gap >= -1e-9)
    assert gap.max() > 1e-4  # measured: up to a few percent on these instances


def test_geodesic_is_exact_for_symmetric():
    rng = np.random.default_rng(5)
    mL, mR = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    A, B = rng.uniform(0.1, 1, 3), rng.uniform(0.1, 1, 3)
    # force the geodesic code path on a symmetric generator
    Ug = mbc._geodesic_centroids(get_divergence("sqeuclidean"), A[:, None], B[:, None], mL, mR)
    np.testing.assert_allclose(Ug, (A[:, None] * mL + B[:, None] * mR) / (A + B)[:, None],
                               rtol=1e-6, atol=1e-7)


# ------------------------------------------------------------------------- transport
def test_transport_plan_matches_cvxpy_lp():
    rng = np.random.default_rng(6)
    for k1, k2 in [(3, 3), (4, 2), (5, 6)]:
        C = rng.uniform(0, 5, size=(k1, k2))
        a = np.full(k1, 1 / k1)
        b = rng.dirichlet(np.ones(k2))
        W = mbc._emd(a, b, C)
        np.testing.assert_allclose(W.sum(axis=1), a, atol=1e-12)
        np.testing.assert_allclose(W.sum(axis=0), b, atol=1e-12)
        assert (W >= 0).all()
        _, value = lp_transport(a, b, C)
        assert float((W * C).sum()) == pytest.approx(value, rel=1e-6, abs=1e-9)


def test_fitted_relations_are_optimal_plans():
    rng = np.random.default_rng(7)
    Xs, _ = _tasks(rng, sizes=(40, 30, 35))
    est = MultitaskBregmanClustering([3, 4, 2], lam=0.5, random_state=0).fit(Xs)
    div = est.divergence_
    for (t, s), W in est.relations_.items():
        kt, ks = est.n_clusters_[t], est.n_clusters_[s]
        assert W.shape == (kt, ks)
        np.testing.assert_allclose(W.sum(axis=1), 1 / kt, atol=1e-12)
        np.testing.assert_allclose(W.sum(axis=0), 1 / ks, atol=1e-12)
        C = div.pairwise(est.cluster_centers_[t], est.cluster_centers_[s])
        _, value = lp_transport(np.full(kt, 1 / kt), np.full(ks, 1 / ks), C)
        assert float((W * C).sum()) == pytest.approx(value, rel=1e-6, abs=1e-10)


def test_transport_result_code_gives_convergence_warning(monkeypatch):
    import ot

    def fake_emd(a, b, M, **kw):
        return np.outer(a, b), {"result_code": 2, "warning": "numItermax reached", "cost": 0.0}

    monkeypatch.setattr(ot, "emd", fake_emd)
    with pytest.warns(ConvergenceWarning, match="tasks 0 and 1.*result code 2"):
        mbc._emd(np.full(2, .5), np.full(2, .5), np.eye(2), where=" between tasks 0 and 1")


def test_task_divergences_equal_partition_emd():
    from bregclust.metrics import mixture_proportions, partition_emd

    rng = np.random.default_rng(8)
    Xs, _ = _tasks(rng, positive=True)
    est = MultitaskBregmanClustering([3, 2], divergence="kl", lam=0.3, random_state=1).fit(Xs)
    for t, s in [(0, 1), (1, 0)]:
        ref = partition_emd(est.cluster_centers_[t],
                            mixture_proportions(est.labels_[t], est.n_clusters_[t]),
                            est.cluster_centers_[s],
                            mixture_proportions(est.labels_[s], est.n_clusters_[s]), "kl")
        assert est.task_divergences_[t, s] == pytest.approx(ref, rel=1e-9, abs=1e-12)
    assert est.task_divergences_[0, 0] == 0.0


# ------------------------------------------------------------------------- the objective
# every built-in plus the custom generator registered above (divergences registered by other
# test modules are left to them)
BUILTINS = ("sqeuclidean", "mahalanobis", "kl", "itakura_saito", "l1_subgradient")
ALL_DIVERGENCES = [n for n in list_divergences() if n in BUILTINS] + [CUSTOM]


@pytest.mark.parametrize("marginals", ["uniform", "empirical"])
@pytest.mark.parametrize("n_tasks", [2, 3])
@pytest.mark.parametrize("name", ALL_DIVERGENCES)
def test_objective_never_increases(name, n_tasks, marginals):
    rng = np.random.default_rng(zlib.crc32(f"{name}{n_tasks}{marginals}".encode()))
    Xs, _ = _tasks(rng, sizes=(50, 40, 30)[:n_tasks], positive=_needs_positive(name))
    for lam in (0.1, 3.0):
        est = MultitaskBregmanClustering([3, 2, 4][:n_tasks], divergence=name,
                                         divergence_params=_params_for(name), lam=lam,
                                         marginals=marginals, tol=0.0, max_iter=15,
                                         random_state=int(lam * 10))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(Xs, trace=True)
        blocks = np.array([v for _, v in est.block_history_])
        assert len(blocks) >= 4
        assert np.all(np.diff(blocks) <= 1e-10 * np.abs(blocks[:-1]) + 1e-13), (lam, blocks)
        hist = np.asarray(est.objective_history_)
        assert np.all(np.diff(hist) <= 1e-10 * np.abs(hist[:-1]) + 1e-13)
        # the loop's O(k d) bookkeeping equals the definition
        zs = [smoothing_point(X, est.divergence_) for X in Xs] if max(est.smoothing_) > 0 else None
        ref = mbc_objective(Xs, est.labels_, est.cluster_centers_, est.relations_,
                            est.divergence_, lam, smoothing=est.smoothing_, smoothing_points=zs)
        assert est.objective_ == pytest.approx(ref, rel=1e-9, abs=1e-12)


def test_objective_matches_naive_reference():
    rng = np.random.default_rng(9)
    Xs, _ = _tasks(rng, sizes=(12, 9), positive=True)
    est = MultitaskBregmanClustering([3, 2], divergence="itakura_saito", lam=0.8,
                                     random_state=0).fit(Xs)
    zs = [smoothing_point(X, est.divergence_) for X in Xs]
    ref = naive_objective(Xs, est.labels_, est.cluster_centers_, est.relations_,
                          "itakura_saito", 0.8, smoothing=est.smoothing_, smoothing_points=zs)
    assert est.objective_ == pytest.approx(ref, rel=1e-10)


# ------------------------------------------------------------------------- lam = 0 / one task
@pytest.mark.parametrize("name", ["sqeuclidean", "kl"])
def test_one_task_equals_bregman_kmeans_same_random_state(name):
    rng = np.random.default_rng(10)
    Xs, _ = _tasks(rng, sizes=(80,), positive=name == "kl")
    for seed in (0, 1, 2):
        est = MultitaskBregmanClustering(4, divergence=name, lam=0.5, random_state=seed,
                                         n_init=2).fit(Xs)
        km = BregmanKMeans(4, divergence=name, random_state=seed, n_init=2).fit(Xs[0])
        np.testing.assert_array_equal(est.labels_[0], km.labels_)
        np.testing.assert_array_equal(est.cluster_centers_[0], km.cluster_centers_)
        assert est.n_iter_ == km.n_iter_
        assert est.predict(Xs[0]).tolist() == km.predict(Xs[0]).tolist()


def test_lam_zero_equals_bregman_kmeans_per_task():
    rng = np.random.default_rng(11)
    Xs, _ = _tasks(rng, sizes=(70, 50, 40), positive=True)
    K = [3, 4, 2]
    r = np.random.RandomState(5)
    init = [bregman_kmeans_plusplus(X, k, "kl", random_state=r, smoothing=1.0)[0]
            for X, k in zip(Xs, K)]
    est = MultitaskBregmanClustering(K, divergence="kl", lam=0.0, init=init).fit(Xs)
    for t in range(3):
        km = BregmanKMeans(K[t], divergence="kl", init=init[t]).fit(Xs[t])
        np.testing.assert_array_equal(est.labels_[t], km.labels_)
        np.testing.assert_array_equal(est.cluster_centers_[t], km.cluster_centers_)
    # relations are still reported (computed once for the final centres)
    assert set(est.relations_) == {(t, s) for t in range(3) for s in range(3) if s != t}


def test_kmeanspp_seeding_shared_between_ind_and_mbc():
    """k-means++ draws the tasks in order from one stream, so IND run the same way starts
    from the same centres as MBC."""
    rng = np.random.default_rng(12)
    Xs, _ = _tasks(rng)
    est = MultitaskBregmanClustering([3, 3], lam=0.0, random_state=7).fit(Xs)
    r = np.random.RandomState(7)
    init = [bregman_kmeans_plusplus(X, 3, "sqeuclidean", random_state=r)[0] for X in Xs]
    for t in range(2):
        km = BregmanKMeans(3, init=init[t]).fit(Xs[t])
        np.testing.assert_array_equal(est.cluster_centers_[t], km.cluster_centers_)


# ------------------------------------------------------------------------- edge cases
def test_different_k_and_single_cluster_task():
    rng = np.random.default_rng(13)
    Xs, _ = _tasks(rng, sizes=(40, 30, 20))
    est = MultitaskBregmanClustering([4, 1, 2], lam=0.7, random_state=0).fit(Xs)
    assert [c.shape[0] for c in est.cluster_centers_] == [4, 1, 2]
    assert est.relations_[(0, 1)].shape == (4, 1)
    np.testing.assert_allclose(est.relations_[(0, 1)].ravel(), 0.25)
    assert set(est.labels_[1].tolist()) == {0}


def test_empty_cluster_keeps_a_finite_centre():
    rng = np.random.default_rng(14)
    Xs, _ = _tasks(rng, sizes=(30, 30), k=2)
    # the third centre of task 0 is far from every point: its cluster starts (and stays) empty
    init = [np.vstack([Xs[0][:2], np.full((1, 4), 1e3)]), Xs[1][:3].copy()]
    est = MultitaskBregmanClustering(3, lam=0.5, init=init, tol=0.0, max_iter=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(Xs)
    assert np.isfinite(est.cluster_centers_[0]).all()
    hist = np.asarray(est.objective_history_)
    assert np.all(np.diff(hist) <= 1e-12 * hist[:-1])
    # with lam > 0 the empty cluster's centre is pulled towards its matched centres (A = lam/K)
    assert np.abs(est.cluster_centers_[0]).max() < 1e3


def test_tasks_of_very_different_sizes():
    rng = np.random.default_rng(15)
    Xs, ys = _tasks(rng, sizes=(600, 9))
    est = MultitaskBregmanClustering(3, lam=0.5, random_state=0).fit(Xs)
    assert est.labels_[0].shape == (600,) and est.labels_[1].shape == (9,)
    assert np.isfinite(est.objective_)


@pytest.mark.parametrize("name", ["sqeuclidean", "kl"])
@pytest.mark.parametrize("marginals", ["uniform", "empirical"])
def test_sparse_and_dense_give_the_same_result(name, marginals):
    rng = np.random.default_rng(16)
    Xs = [sp.random(60, 30, density=0.2, random_state=s, format="csr") * 5 for s in (1, 2)]
    Xs = [X + sp.csr_matrix(np.eye(60, 30)) for X in Xs]  # no empty rows
    dense = [X.toarray() for X in Xs]
    kw = dict(divergence=name, lam=0.6, marginals=marginals, random_state=3)
    a = MultitaskBregmanClustering([3, 4], **kw).fit(Xs)
    b = MultitaskBregmanClustering([3, 4], **kw).fit(dense)
    for t in range(2):
        np.testing.assert_array_equal(a.labels_[t], b.labels_[t])
        np.testing.assert_allclose(a.cluster_centers_[t], b.cluster_centers_[t], rtol=1e-9,
                                   atol=1e-12)
    assert sp.issparse(Xs[0])  # input untouched
    assert rng is not None


def test_init_labels_and_centres():
    rng = np.random.default_rng(17)
    Xs, ys = _tasks(rng)
    est = MultitaskBregmanClustering(3, lam=0.0, init=[ys[0], "k-means++"], max_iter=1,
                                     random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(Xs)
    km = BregmanKMeans(3, init=np.vstack([Xs[0][ys[0] == z].mean(0) for z in range(3)]),
                       max_iter=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        km.fit(Xs[0])
    np.testing.assert_allclose(est.cluster_centers_[0], km.cluster_centers_, rtol=1e-12)


def test_predict_transform_pickle_clone_and_determinism():
    rng = np.random.default_rng(18)
    Xs, _ = _tasks(rng, positive=True)
    Xs_copy = [X.copy() for X in Xs]
    est = MultitaskBregmanClustering([3, 2], divergence="kl", lam=0.5, random_state=4).fit(Xs)
    for X, Xc in zip(Xs, Xs_copy):
        np.testing.assert_array_equal(X, Xc)
    for t in range(2):
        np.testing.assert_array_equal(est.predict(Xs[t], task=t), est.labels_[t])
        assert est.transform(Xs[t], task=t).shape == (Xs[t].shape[0], est.n_clusters_[t])
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(Xs[1], task=1), est.predict(Xs[1], task=1))
    twin = MultitaskBregmanClustering([3, 2], divergence="kl", lam=0.5, random_state=4).fit(Xs)
    for t in range(2):
        np.testing.assert_array_equal(twin.labels_[t], est.labels_[t])
    assert clone(est).get_params()["lam"] == 0.5


def test_n_init_keeps_the_best_restart():
    rng = np.random.default_rng(19)
    Xs, _ = _tasks(rng, k=4)
    one = MultitaskBregmanClustering(4, lam=0.5, random_state=0, n_init=1).fit(Xs)
    many = MultitaskBregmanClustering(4, lam=0.5, random_state=0, n_init=4).fit(Xs)
    assert many.objective_ <= one.objective_ + 1e-12


def test_geodesic_solver_option_runs_and_is_not_better():
    rng = np.random.default_rng(20)
    Xs, _ = _tasks(rng, positive=True)
    r = np.random.RandomState(0)
    init = [bregman_kmeans_plusplus(X, 3, "kl", random_state=r, smoothing=1.0)[0] for X in Xs]
    kw = dict(divergence="kl", lam=1.0, init=init, max_iter=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ex = MultitaskBregmanClustering(3, centroid_solver="exact", **kw).fit(Xs)
        geo = MultitaskBregmanClustering(3, centroid_solver="geodesic", **kw).fit(Xs)
    assert geo.objective_history_[1] >= ex.objective_history_[1] - 1e-12


# ------------------------------------------------------------------------- bad input
def test_bad_input_messages():
    rng = np.random.default_rng(21)
    X1, X2 = rng.random((10, 3)), rng.random((8, 4))
    with pytest.raises(ValueError, match="task 0 has 3 features but task 1 has 4"):
        MultitaskBregmanClustering(2).fit([X1, X2])
    with pytest.raises(ValueError, match="n_clusters=9 for task 1 is larger than n_samples=8"):
        MultitaskBregmanClustering([2, 9]).fit([X1, rng.random((8, 3))])
    with pytest.raises(ValueError, match="Xs is empty"):
        MultitaskBregmanClustering(2).fit([])
    with pytest.raises(ValueError, match="kl needs non-negative data; task 1 has -1"):
        MultitaskBregmanClustering(2, divergence="kl").fit([X1, -np.ones((5, 3))])
    with pytest.raises(ValueError, match="n_clusters has 3 entries but there are 2 tasks"):
        MultitaskBregmanClustering([2, 2, 2]).fit([X1, X1])
    with pytest.raises(ValueError, match="lam must be >= 0"):
        MultitaskBregmanClustering(2, lam=-1.0).fit([X1, X1])
    with pytest.raises(ValueError, match="marginals must be one of"):
        MultitaskBregmanClustering(2, marginals="balanced").fit([X1, X1])
    with pytest.raises(ValueError, match="centroid_solver must be one of"):
        MultitaskBregmanClustering(2, centroid_solver="newton").fit([X1, X1])
    with pytest.raises(ValueError, match="init centres for task 1 must have shape"):
        MultitaskBregmanClustering(2, init=["k-means++", np.zeros((3, 3))]).fit([X1, X1])
    with pytest.raises(ValueError, match="init labels for task 0 must lie in"):
        MultitaskBregmanClustering(2, init=[np.full(10, 5), "k-means++"]).fit([X1, X1])
    with pytest.raises(ValueError, match="needs smoothing > 0"):
        MultitaskBregmanClustering(2, divergence="kl", smoothing=0.0).fit([X1, X1])
    with pytest.raises(TypeError, match="single matrix"):
        MultitaskBregmanClustering(2).fit(X1)
    with pytest.raises(ValueError, match="solver must be one of"):
        solve_centroids("kl", [1.0], [1.0], np.ones((1, 2)), np.ones((1, 2)), solver="x")
    with pytest.raises(ValueError, match="l1_subgradient is not differentiable"):
        solve_centroids("l1", [1.0], [1.0], np.ones((1, 2)), np.ones((1, 2)))
    est = MultitaskBregmanClustering(2, random_state=0).fit([X1, X1])
    with pytest.raises(ValueError, match="pass task=t"):
        est.predict(X1)
    with pytest.raises(ValueError, match="task must be in"):
        est.predict(X1, task=2)
    with pytest.raises(ValueError, match="X has 4 features, but the model was fitted with 3"):
        est.predict(X2, task=0)


# ------------------------------------------------------------------------- real data and demo
def test_demo_rows_on_bundled_digits():
    from bregclust.datasets import make_digits_tasks
    from bregclust.demo import demo_mbc

    b = make_digits_tasks()
    rows = demo_mbc(b.Xs, b.ys, 0, divergences=("sqeuclidean",))
    assert [r[0].split()[0] for r in rows] == ["IND", "MBC"]
    for _, per_task in rows:
        assert len(per_task) == len(b.Xs)
        for nmi_, ari_, acc in per_task:  # digits cluster well (NMI ~0.6-0.75 at this seed)
            assert nmi_ > 0.55 and ari_ > 0.45 and acc > 0.6


@pytest.mark.data
def test_real_data_tr11_runs_monotone():
    require_data("cluto_docs/tr11.mat")
    from bregclust.datasets import load_mbc_tasks
    from bregclust.metrics import nmi

    b = load_mbc_tasks("tr11")
    est = MultitaskBregmanClustering([7, 7], lam=0.5, random_state=0).fit(b.Xs, trace=True)
    blocks = np.array([v for _, v in est.block_history_])
    assert np.all(np.diff(blocks) <= 1e-10 * blocks[:-1])
    assert min(nmi(y, l) for y, l in zip(b.ys, est.labels_)) > 0.3


# ------------------------------------------------------------------------- lam="auto"
def _related(seed, noise=1.5, sizes=(80, 70), k=4, d=5, shift=0.5):
    """Related tasks with overlapping clusters (imperfect labels, so the coupling matters)."""
    rng = np.random.default_rng(seed)
    base = rng.normal(0, 2, size=(k, d))
    Xs = []
    for t, n in enumerate(sizes):
        y = np.arange(n) % k
        Xs.append(base[y] + shift * t + rng.normal(0, noise, size=(n, d)))
    return Xs


def _mean_dm(est):
    D = est.task_divergences_
    return D[~np.eye(D.shape[0], dtype=bool)].mean()


def test_lam_auto_is_the_default_deterministic_and_on_the_grid():
    Xs = _related(30)
    assert MultitaskBregmanClustering().get_params()["lam"] == "auto"
    a = MultitaskBregmanClustering(4, random_state=5).fit(Xs)
    b = MultitaskBregmanClustering(4, random_state=5).fit(Xs)
    assert a.lam_ == b.lam_ and a.lam_ratios_ == b.lam_ratios_
    assert a.lam_objectives_ == b.lam_objectives_
    assert a.lam_ == 0.0 or a.lam_ in mbc.AUTO_LAM_GRID
    assert 1 <= len(a.lam_ratios_) <= len(mbc.AUTO_LAM_GRID)
    assert set(a.lam_ratios_) <= set(mbc.AUTO_LAM_GRID)
    assert 0.0 in a.lam_objectives_ and a.lam_ in a.lam_objectives_
    for t in range(2):
        np.testing.assert_array_equal(a.labels_[t], b.labels_[t])
    # a float lam records itself and no ratios
    c = MultitaskBregmanClustering(4, lam=0.3, random_state=5).fit(Xs)
    assert c.lam_ == 0.3 and c.lam_ratios_ == {} and c.lam_objectives_ == {}
    # one task: nothing to couple
    one = MultitaskBregmanClustering(4, random_state=5).fit(Xs[:1])
    assert one.lam_ == 0.0 and one.lam_ratios_ == {} and one.lam_objectives_ == {}


def _own_objective(Xs, labels):
    """Squared-Euclidean k-means objective of each task's partition at its own cluster means,
    divided by n_t and summed over tasks (naive)."""
    total = 0.0
    for X, lab in zip(Xs, labels):
        for z in np.unique(lab):
            rows = X[lab == z]
            total += ((rows - rows.mean(axis=0)) ** 2).sum() / X.shape[0]
    return total


@pytest.mark.parametrize("seed", [31, 32, 33, 34])
def test_lam_auto_guarantee_and_equals_the_chosen_float(seed):
    """From the same starts: d_M(auto) >= AUTO_LAM_FRACTION * d_M(IND), the auto partitions'
    single-task objective is the lowest of IND and the admissible candidates (naive check),
    and the auto fit is the float fit at lam_."""
    Xs = _related(seed, shift=0.3 * (seed - 30))
    r = np.random.RandomState(seed)
    init = [bregman_kmeans_plusplus(X, 4, "sqeuclidean", random_state=r)[0] for X in Xs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ind = MultitaskBregmanClustering(4, lam=0.0, init=init).fit(Xs)
        auto = MultitaskBregmanClustering(4, init=init).fit(Xs)
        same = MultitaskBregmanClustering(4, lam=auto.lam_, init=init).fit(Xs)
        fits = {v: MultitaskBregmanClustering(4, lam=v, init=init).fit(Xs)
                for v in auto.lam_ratios_}
    assert _mean_dm(auto) >= mbc.AUTO_LAM_FRACTION * _mean_dm(ind) - 1e-12
    np.testing.assert_allclose(auto.lam_objectives_[0.0], _own_objective(Xs, ind.labels_))
    if auto.lam_ > 0:
        assert auto.lam_ratios_[auto.lam_] >= mbc.AUTO_LAM_FRACTION
        np.testing.assert_allclose(auto.lam_ratios_[auto.lam_], _mean_dm(auto) / _mean_dm(ind))
    # the scan: the fitted values are a prefix of the grid; all but possibly the last are
    # admissible, the last is inadmissible or the end of the grid
    fitted = sorted(auto.lam_ratios_)
    assert fitted == list(mbc.AUTO_LAM_GRID[:len(fitted)])
    assert all(auto.lam_ratios_[v] >= mbc.AUTO_LAM_FRACTION for v in fitted[:-1])
    last = fitted[-1]
    assert auto.lam_ratios_[last] < mbc.AUTO_LAM_FRACTION or last == mbc.AUTO_LAM_GRID[-1]
    admissible = [0.0] + [v for v in fitted if auto.lam_ratios_[v] >= mbc.AUTO_LAM_FRACTION]
    assert sorted(auto.lam_objectives_) == admissible
    own = {0.0: _own_objective(Xs, ind.labels_)}
    own.update({v: _own_objective(Xs, fits[v].labels_) for v in admissible[1:]})
    for v in admissible:
        np.testing.assert_allclose(auto.lam_objectives_[v], own[v], rtol=1e-9)
        assert own[auto.lam_] <= own[v] * (1 + 1e-9)
    for t in range(2):
        np.testing.assert_array_equal(auto.labels_[t], same.labels_[t])
    assert auto.objective_ == same.objective_


def test_select_lam_scan_rule():
    calls = []

    def fit(lam):  # d_M(0) = 1, decreasing; objective lowest at lam = 0.05
        calls.append(lam)
        return f"fit{lam}", 1.0 / (1.0 + 10.0 * lam), abs(lam - 0.05)

    lam, res, ratios, objs = mbc.select_lam(fit, 1.0, 1.0)
    # admissible: 1 / (1 + 10 lam) >= 0.5 <=> lam <= 0.1; the scan stops at 0.2
    assert calls == [0.01, 0.02, 0.05, 0.1, 0.2] and set(ratios) == set(calls)
    assert sorted(objs) == [0.0, 0.01, 0.02, 0.05, 0.1]
    assert lam == 0.05 and res == "fit0.05"
    # no candidate beats IND's objective: IND (0.0) and no result
    lam, res, _, _ = mbc.select_lam(lambda v: (v, 1.0, 2.0), 1.0, 1.0)
    assert lam == 0.0 and res is None
    # ties go to the smaller value
    lam, res, _, _ = mbc.select_lam(lambda v: (v, 1.0, 0.5), 1.0, 1.0)
    assert lam == mbc.AUTO_LAM_GRID[0]
    # a non-monotone d_M: the scan stops at the first violation and never reaches the
    # admissible values behind it (a bisection could land there)
    calls.clear()
    dms = {0.01: 0.9, 0.02: 0.4, 0.05: 0.9, 0.1: 0.9, 0.2: 0.9, 0.5: 0.9, 1.0: 0.9}

    def bumpy(v):
        calls.append(v)
        return None, dms[v], -v

    lam, _, ratios, _ = mbc.select_lam(bumpy, 1.0, 0.0)
    assert lam == 0.01 and calls == [0.01, 0.02]
    # a non-finite IND d_M fits nothing
    calls.clear()
    assert mbc.select_lam(fit, float("inf"), 1.0)[0] == 0.0 and calls == []
    # identical tasks (d_M = 0 for IND and every coupling): every value admissible
    lam, _, ratios, _ = mbc.select_lam(lambda v: (v, 0.0, -v), 0.0, 0.0)
    assert lam == max(mbc.AUTO_LAM_GRID) and set(ratios) == set(mbc.AUTO_LAM_GRID)


@pytest.mark.parametrize("scale", [8.0, 3.0, 1e-3])
def test_lam_auto_is_scale_free(scale):
    Xs = _related(35)
    a = MultitaskBregmanClustering(4, random_state=2).fit(Xs)
    b = MultitaskBregmanClustering(4, random_state=2).fit([scale * X for X in Xs])
    assert a.lam_ == b.lam_
    assert a.lam_ratios_.keys() == b.lam_ratios_.keys()
    np.testing.assert_allclose(list(a.lam_ratios_.values()), list(b.lam_ratios_.values()),
                               rtol=1e-8)
    # the single-task objectives scale by scale**2 (squared Euclidean is of degree 2)
    assert a.lam_objectives_.keys() == b.lam_objectives_.keys()
    np.testing.assert_allclose([scale ** 2 * v for v in a.lam_objectives_.values()],
                               list(b.lam_objectives_.values()), rtol=1e-8)
    for t in range(2):
        np.testing.assert_array_equal(a.labels_[t], b.labels_[t])


def test_lam_auto_kl_pickle_and_predict():
    Xs = [np.exp(X / 3.0) for X in _related(36)]
    est = MultitaskBregmanClustering(4, divergence="kl", random_state=1).fit(Xs)
    assert est.lam_ == 0.0 or est.lam_ in mbc.AUTO_LAM_GRID
    again = pickle.loads(pickle.dumps(est))
    assert again.lam_ == est.lam_ and again.lam_ratios_ == est.lam_ratios_
    for t in range(2):
        np.testing.assert_array_equal(again.predict(Xs[t], task=t), est.labels_[t])
    assert clone(est).get_params()["lam"] == "auto"


def test_lam_auto_bad_value_and_smoothing_message():
    Xs = _related(37)
    with pytest.raises(ValueError, match="lam must be 'auto' or a float >= 0.0, got 'automatic'"):
        MultitaskBregmanClustering(2, lam="automatic").fit(Xs)
    with pytest.raises(ValueError, match="needs smoothing > 0"):
        MultitaskBregmanClustering(2, divergence="kl", smoothing=0.0).fit(
            [np.exp(X) for X in Xs])


def test_lam_float_labels_unchanged_by_the_auto_default():
    """lam=0.5 gives the labels it gave before lam="auto" existed (CRC32 of the label arrays
    recorded with the previous release, same data and seed)."""
    expected = {"sqeuclidean": ([21423000, 1879710836], 21.28099104438057),
                "kl": ([2078789024, 2392459972], 2.0070512854581826)}
    rng = np.random.default_rng(160)
    base = rng.normal(0, 2, size=(4, 5))
    Xs = [base[np.arange(n) % 4] + 0.5 * t + rng.normal(0, 1.5, size=(n, 5))
          for t, n in enumerate((80, 70))]
    for div, data in (("sqeuclidean", Xs), ("kl", [np.exp(X / 3) for X in Xs])):
        est = MultitaskBregmanClustering(4, divergence=div, lam=0.5, random_state=7).fit(data)
        crcs, objective = expected[div]
        assert [zlib.crc32(lab.astype(np.int64).tobytes()) for lab in est.labels_] == crcs
        np.testing.assert_allclose(est.objective_, objective, rtol=1e-9)
        assert est.lam_ == 0.5


@pytest.mark.data
@pytest.mark.slow
def test_lam_auto_sweep_rule_is_the_estimators_rule(capsys):
    """benchmarks/lam_auto_sweep.py scores the adopted rule on stored sweeps; from the same
    starts its choice is the estimator's lam_ and its stored single-task objectives are the
    estimator's lam_objectives_ (so the RESULTS tables describe the shipped rule)."""
    require_data("cluto_docs/tr11.mat")
    import sys
    from pathlib import Path

    bench = str(Path(__file__).resolve().parents[1] / "benchmarks")
    sys.path.insert(0, bench)
    try:
        import lam_auto_sweep as sw
        from mbc_paper import _load
    finally:
        sys.path.remove(bench)
    import argparse

    from bregclust.kmeans import auto_smoothing

    args = argparse.Namespace(representation="tfidf", divergence="sqeuclidean", seed=0, runs=1,
                              lloyd=1)
    r = sw.sweep("tr11", args)
    g = sw.RULES["argmin ownP, scan 0.5"](r, 0)
    data = _load("tr11", "tfidf")
    K = [int(np.unique(y).size) for y in data.ys]
    rs = np.random.RandomState(0)
    sq = get_divergence("sqeuclidean")
    init = [bregman_kmeans_plusplus(X, k, sq, random_state=rs,
                                    smoothing=auto_smoothing(X, sq, k))[0]
            for X, k in zip(data.Xs, K)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = MultitaskBregmanClustering(K, init=init).fit(data.Xs)
    assert est.lam_ == sw.GRID[g]
    for v, obj in est.lam_objectives_.items():
        np.testing.assert_allclose(obj, r["ownP"][0, sw.GRID.index(v)].sum(), rtol=1e-8)


def test_float32_tasks_stay_float32_and_give_the_float64_labels():
    rng = np.random.default_rng(7)
    centres = rng.uniform(1.0, 8.0, size=(3, 6))
    tasks = [np.vstack([c * rng.uniform(0.8, 1.2, size=(40 + 10 * t, 6)) for c in centres])
             for t in range(2)]
    ref = MultitaskBregmanClustering(3, divergence="kl", lam=0.5, random_state=0).fit(tasks)
    est = MultitaskBregmanClustering(3, divergence="kl", lam=0.5, random_state=0).fit(
        [X.astype(np.float32) for X in tasks])
    for t in range(2):
        assert np.array_equal(est.labels_[t], ref.labels_[t])
        assert est.cluster_centers_[t].dtype == np.float32
        assert est.transform(tasks[t].astype(np.float32), task=t).dtype == np.float32


def test_lam_ratios_are_finite_when_the_tasks_coincide():
    """Identical tasks from identical starts: IND's d_M is 0, the ratios are 1, not inf."""
    X = np.random.default_rng(3).uniform(1.0, 2.0, size=(60, 3))
    est = MultitaskBregmanClustering(3, init=[X[:3], X[:3]]).fit([X, X.copy()])
    assert est.lam_ratios_ and all(v == 1.0 for v in est.lam_ratios_.values())
    assert est.lam_ == 0.0


def test_tasks_of_extreme_magnitude_fit_with_every_divergence():
    """Both tasks at 1e300 (kl, sqeuclidean): the conditioning scales them, no overflow
    message, the labels of the unscaled fit."""
    rng = np.random.default_rng(4)
    tasks = [rng.uniform(1.0, 2.0, size=(50, 3)) + np.repeat(np.eye(3) * 5, [17, 17, 16], axis=0)
             for _ in range(2)]
    for name in ("kl", "sqeuclidean"):
        ref = MultitaskBregmanClustering(3, divergence=name, random_state=0).fit(tasks)
        for scale in (1e300, 1e-300):
            est = MultitaskBregmanClustering(3, divergence=name, random_state=0).fit(
                [X * scale for X in tasks])
            for a, b in zip(est.labels_, ref.labels_):
                assert np.array_equal(a, b)


def test_verbose_shows_a_progress_bar_per_restart(capsys):
    rng = np.random.default_rng(5)
    tasks = [rng.normal(size=(40, 3)) + np.repeat(np.eye(3) * 6, [14, 13, 13], axis=0)
             for _ in range(2)]
    MultitaskBregmanClustering(3, lam=0.5, random_state=0, verbose=1).fit(tasks)
    err = capsys.readouterr().err
    assert "MultitaskBregmanClustering restart 0" in err and "objective" in err


# ------------------------------------------------------------------------ far from the origin
@pytest.mark.parametrize("offset", [1e8, 1e12])
def test_mbc_far_from_origin(offset):
    # MBC runs the Lloyd loop of k-means: it centres the tasks by one common offset
    X, y = offset_blobs(offset)
    Xs = [X, offset_blobs(offset)[0][::-1].copy()]
    for lam in (0.0, 1.0):
        est = MultitaskBregmanClustering(2, lam=lam, random_state=0).fit(Xs)
        assert ari(y, est.labels_[0]) == 1.0 and ari(y[::-1], est.labels_[1]) == 1.0
        if lam == 0.0:  # independent tasks: the centres are the cluster means
            C = est.cluster_centers_[0][np.argsort(est.cluster_centers_[0][:, 0])]
            assert np.allclose(C, [X[y == 0].mean(0), X[y == 1].mean(0)], rtol=1e-14, atol=0)


# ------------------------------------------------------------------------ the S-MBC guard
def _unrelated_tasks(seed, n_tasks, k=3, d=3):
    """Tasks whose clusters partly differ (the negative-transfer case): task t shares the
    first cluster centre and draws the others afresh."""
    rng = np.random.default_rng(seed)
    shared = rng.normal(0, 3, size=d)
    Xs = []
    for t in range(n_tasks):
        centres = np.vstack([shared, rng.normal(0, 3, size=(k - 1, d))])
        y = np.arange(40 + 10 * t) % k
        Xs.append(centres[y] + rng.normal(0, 1.2, size=(y.size, d)))
    return Xs


def _own(Xs, labels, est):
    zs = ([smoothing_point(X, est.divergence_) for X in Xs] if max(est.smoothing_) > 0
          else [None] * len(Xs))
    return [naive_own_objective(X, lab, est.divergence_, smoothing=b, smoothing_point=z)
            for X, lab, b, z in zip(Xs, labels, est.smoothing_, zs)]


@pytest.mark.parametrize("guard", ["task", "sweep"])
@pytest.mark.parametrize("n_tasks", [2, 3])
@pytest.mark.parametrize("name", ["sqeuclidean", "kl"])
def test_guard_task_objective_never_above_single_task(name, n_tasks, guard):
    """Dense reference: with a guard, every task's own (k-means) objective at its own cluster
    means is at most that of the independent fit (BregmanKMeans) from the same starts; a
    task marked in guarded_ has exactly IND's labels, the others the coupled fit's."""
    seen = set()
    for seed in range(6):
        Xs = _unrelated_tasks(seed, n_tasks)
        if name == "kl":
            Xs = [np.exp(X / 4.0) for X in Xs]
        K = [3, 2, 4][:n_tasks]
        r = np.random.RandomState(seed)
        init = [bregman_kmeans_plusplus(X, k, name, random_state=r,
                                        smoothing=1.0 if name == "kl" else 0.0)[0]
                for X, k in zip(Xs, K)]
        ind = [BregmanKMeans(k, divergence=name, init=c).fit(X).labels_
               for X, k, c in zip(Xs, K, init)]
        for lam in (0.3, 3.0, "auto"):
            est = MultitaskBregmanClustering(K, divergence=name, lam=lam, init=init,
                                             guard=guard).fit(Xs)
            mine, single = _own(Xs, est.labels_, est), _own(Xs, ind, est)
            for t in range(n_tasks):
                assert mine[t] <= single[t] * (1 + 1e-9) + 1e-12, (seed, lam, t)
                if est.guarded_[t]:
                    np.testing.assert_array_equal(est.labels_[t], ind[t])
            seen.update(est.guarded_.tolist())
            if guard == "task" and est.lam_ > 0:  # the other tasks keep the coupled fit's
                raw = MultitaskBregmanClustering(K, divergence=name, lam=est.lam_,
                                                 init=init).fit(Xs)
                for t in np.flatnonzero(~est.guarded_):
                    np.testing.assert_array_equal(est.labels_[t], raw.labels_[t])
    if guard == "task":  # the cases exercise both branches
        assert seen == {True, False}


@pytest.mark.parametrize("n_tasks", [2, 3])
@pytest.mark.parametrize("name", ["sqeuclidean", "kl", "itakura_saito"])
def test_guard_sweep_own_objectives_never_increase(name, n_tasks):
    """guard='sweep' (S-MBC): the recorded objective is the sum of the tasks' own objectives
    at their centres; it never increases, and its last value is the definition's."""
    changed = 0
    for seed in range(3):
        Xs = _unrelated_tasks(10 + seed, n_tasks)
        if name != "sqeuclidean":
            Xs = [np.exp(X / 4.0) for X in Xs]
        for lam in (0.3, 3.0):
            est = MultitaskBregmanClustering([3, 2, 4][:n_tasks], divergence=name, lam=lam,
                                             guard="sweep", tol=0.0, max_iter=20,
                                             random_state=seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                est.fit(Xs)
            hist = np.asarray(est.objective_history_)
            assert hist.size >= 2
            assert np.all(np.diff(hist) <= 1e-10 * np.abs(hist[:-1]) + 1e-13), hist
            zs = ([smoothing_point(X, est.divergence_) for X in Xs]
                  if max(est.smoothing_) > 0 else None)
            ref = naive_objective(Xs, est.labels_, est.cluster_centers_, est.relations_,
                                  est.divergence_, 0.0, smoothing=est.smoothing_, smoothing_points=zs)
            assert est.objective_ == pytest.approx(ref, rel=1e-9, abs=1e-12)
            raw = MultitaskBregmanClustering([3, 2, 4][:n_tasks], divergence=name, lam=lam,
                                             tol=0.0, max_iter=20, random_state=seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                raw.fit(Xs)
            changed += any(not np.array_equal(a, b) for a, b in zip(est.labels_, raw.labels_))
    assert changed  # the guard acted in some case


def test_guard_none_is_the_unguarded_fit_and_guard_checks():
    Xs = _unrelated_tasks(3, 2)
    a = MultitaskBregmanClustering(3, random_state=0).fit(Xs)
    b = MultitaskBregmanClustering(3, guard="none", random_state=0).fit(Xs)
    for la, lb in zip(a.labels_, b.labels_):
        np.testing.assert_array_equal(la, lb)
    assert not a.guarded_.any() and a.guarded_.shape == (2,)
    with pytest.raises(ValueError, match="guard"):
        MultitaskBregmanClustering(3, guard="smart").fit(Xs)
    with pytest.raises(ValueError, match="guard='sweep' needs a differentiable"):
        MultitaskBregmanClustering(3, divergence="l1_subgradient", lam=0.5,
                                   guard="sweep").fit(Xs)
    est = MultitaskBregmanClustering(3, divergence="l1_subgradient", lam=3.0, guard="task",
                                     random_state=0).fit(Xs)
    back = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(back.guarded_, est.guarded_)
    assert clone(est).get_params()["guard"] == "task"


def test_guard_sparse_tasks():
    rng = np.random.default_rng(4)
    Xs = [sp.random(60, 30, density=0.2, random_state=s, format="csr",
                    data_rvs=lambda m: rng.integers(1, 5, m).astype(float)) for s in (0, 1)]
    for guard in ("task", "sweep"):
        est = MultitaskBregmanClustering(3, divergence="kl", lam=1.0, guard=guard,
                                         random_state=0).fit(Xs)
        dense = MultitaskBregmanClustering(3, divergence="kl", lam=1.0, guard=guard,
                                           random_state=0).fit([X.toarray() for X in Xs])
        for ls, ld in zip(est.labels_, dense.labels_):
            np.testing.assert_array_equal(ls, ld)


def test_each_task_is_validated_once_per_fit():
    """fit converts (and checks) every task once: an array-like counting its conversions."""

    class Counted:
        def __init__(self, X):
            self.X, self.calls = X, 0

        def __array__(self, dtype=None, copy=None):
            self.calls += 1
            return np.asarray(self.X, dtype=dtype)

        def __len__(self):
            return len(self.X)

        @property
        def shape(self):
            return self.X.shape

    for lam, guard in ((0.5, "none"), ("auto", "task"), ("auto", "sweep")):
        Xs = [Counted(X) for X in _unrelated_tasks(5, 3)]
        MultitaskBregmanClustering(3, lam=lam, guard=guard, random_state=0).fit(Xs)
        assert [X.calls for X in Xs] == [1, 1, 1]


def _smbc_cases(n_tasks):
    """Random related tasks, and one case where the coupling rescues a task: its start puts
    two centres in one cluster, which Lloyd keeps; the other task pulls one of them out."""
    for seed in range(4):
        Xs = _unrelated_tasks(20 + seed, n_tasks)
        K = [3, 2, 4][:n_tasks]
        r = np.random.RandomState(seed)
        init = [bregman_kmeans_plusplus(X, k, "sqeuclidean", random_state=r)[0]
                for X, k in zip(Xs, K)]
        yield Xs, K, init
    rng = np.random.default_rng(0)
    C = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    Xs = [C[np.arange(n) % 3] + rng.normal(0, 1, (n, 2)) for n in (60, 45, 50)[:n_tasks]]
    init = [C + rng.normal(0, 0.5, (3, 2)), np.array([[-1.0, 0.0], [1.0, 0.0], [6.0, 4.0]]),
            C + 0.3][:n_tasks]
    yield Xs, [3] * n_tasks, init


@pytest.mark.parametrize("n_tasks", [2, 3])
def test_guard_sweep_equals_dense_smbc_reference(n_tasks):
    """guard='sweep' follows the dense S-MBC reference sweep by sweep (labels, centres and
    the summed own loss), including sweeps where the coupled candidate wins."""
    coupled_wins = 0
    for Xs, K, init in _smbc_cases(n_tasks):
        for lam in (0.2, 0.5, 2.0):
            est = MultitaskBregmanClustering(K, lam=lam, init=init, guard="sweep", tol=0.0,
                                             max_iter=6)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                est.fit(Xs)
            labels, centres, hist, wins = naive_smbc_sq(Xs, init, lam, 6)
            coupled_wins += wins
            np.testing.assert_allclose(est.objective_history_, hist, rtol=1e-10)
            if not est.guarded_.any():
                for t in range(n_tasks):
                    np.testing.assert_array_equal(est.labels_[t], labels[t])
                    np.testing.assert_allclose(est.cluster_centers_[t], centres[t],
                                               rtol=1e-9, atol=1e-12)
    assert coupled_wins > 0


def test_guard_on_dask_tasks_equals_in_memory():
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(3)
    C = rng.normal(0, 3, (3, 3))
    Xs = [C[np.arange(n) % 3] + rng.normal(0, 1.5, (n, 3)) + t for t, n in enumerate((120, 100))]
    init = [X[[0, 1, 5]] for X in Xs]
    for guard in ("task", "sweep"):
        for lam in (0.5, 3.0):
            mem = MultitaskBregmanClustering(3, lam=lam, guard=guard, init=init).fit(Xs)
            lazy = MultitaskBregmanClustering(3, lam=lam, guard=guard, init=init).fit(
                [da.from_array(X, chunks=40) for X in Xs])
            np.testing.assert_array_equal(mem.guarded_, lazy.guarded_)
            for a, b in zip(mem.labels_, lazy.labels_):
                np.testing.assert_array_equal(a, np.asarray(b.compute()))
