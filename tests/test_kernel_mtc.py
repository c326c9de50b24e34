"""Tests for bregclust.kernel_mtc (LNKMTC / LSKMTC), against the dense references in
tests/naive_kernel_mtc.py, cvxpy and scipy's linprog."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import require_data
from naive_kernel_mtc import (
    dense_knn_graph,
    dense_laplacian,
    dense_lnkmtc_kernel,
    dense_S,
    linprog_spectral,
    naive_kernel_kmeans,
    pairwise_mmd_sum,
)
from scipy.sparse.csgraph import connected_components
from sklearn.base import clone
from sklearn.neighbors import NearestNeighbors

from bregclust.kernel_mtc import (
    AUTO_C_GRID,
    LNKMTC,
    LSKMTC,
    NonparametricKernelMTC,
    SpectralKernelMTC,
    kernel_kmeans,
    mmd_operator,
    mmd_trace,
    nonparametric_kernel_weights,
    normalized_laplacian,
    single_task_objective,
    smallest_eigenpairs,
    spectral_kernel_weights,
    task_knn_graph,
)
from bregclust.kmeans import BregmanKMeans
from bregclust.metrics import clustering_accuracy


def _tasks(sizes=(30, 25, 20), d=6, n_classes=2, seed=0, shift=0.0):
    """Non-negative tasks with ``n_classes`` topics each (cosine-separable), plus labels."""
    rng = np.random.RandomState(seed)
    topics = 4.0 * np.eye(d)[:n_classes]
    Xs, ys = [], []
    for t, n in enumerate(sizes):
        y = np.arange(n) % n_classes
        X = np.abs(rng.randn(n, d)) * 0.7 + topics[y] + shift * t * np.eye(d)[-1]
        Xs.append(X)
        ys.append(y)
    return Xs, ys


# ----------------------------------------------------------------------------- S and the MMD
def test_mmd_operator_matches_eq6():
    sizes = [4, 7, 3]
    S = dense_S(sizes)
    op = mmd_operator(sizes)
    rng = np.random.RandomState(0)
    v = rng.randn(14)
    V = rng.randn(14, 5)
    np.testing.assert_allclose(op @ v, S @ v, atol=1e-14)
    np.testing.assert_allclose(op @ V, S @ V, atol=1e-14)
    np.testing.assert_allclose(op.T @ V, S @ V, atol=1e-14)
    # rank m - 1, PSD
    w = np.linalg.eigvalsh(S)
    assert np.sum(w > 1e-12) == 2
    assert w.min() > -1e-12


def test_trace_SK_is_sum_of_pairwise_mmds():
    rng = np.random.RandomState(1)
    sizes = [5, 8, 6]
    X = rng.randn(sum(sizes), 3) + np.repeat(np.arange(3), sizes)[:, None]
    sq = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    K = np.exp(-sq / 2.0)  # Gaussian kernel, explicit n x n (small n)
    direct = pairwise_mmd_sum(K, sizes)
    assert direct > 0.1
    assert np.trace(dense_S(sizes) @ K) == pytest.approx(direct, rel=1e-12)
    w, Q = np.linalg.eigh(K)
    F = Q * np.sqrt(np.clip(w, 0, None))
    assert mmd_trace(F, sizes) == pytest.approx(direct, rel=1e-9)


# ----------------------------------------------------------------------------- graph, Laplacian
def test_knn_graph_matches_dense_eq9():
    Xs, _ = _tasks((15, 12), d=5, seed=2)
    W = task_knn_graph(Xs, n_neighbors=4)
    Wd = dense_knn_graph(Xs, 4)
    assert sp.issparse(W)
    np.testing.assert_allclose(W.toarray(), Wd, atol=1e-12)
    assert abs(W - W.T).max() == 0
    assert W[:15, 15:].nnz == 0 and W[15:, :15].nnz == 0  # no edges across tasks
    assert W.diagonal().max() == 0


def test_knn_graph_sparse_input_and_zero_row():
    Xs, _ = _tasks((10, 9), d=5, seed=3)
    Xs[0][3] = 0.0  # an empty document: no cosine, no edges
    W1 = task_knn_graph(Xs, n_neighbors=3)
    W2 = task_knn_graph([sp.csr_matrix(X) for X in Xs], n_neighbors=3)
    np.testing.assert_allclose(W1.toarray(), W2.toarray(), atol=1e-12)
    assert W1[3].nnz == 0
    L = normalized_laplacian(W1)
    np.testing.assert_allclose(L.toarray(), dense_laplacian(W1.toarray()), atol=1e-14)
    assert L[3, 3] == 1.0


def test_knn_graph_clips_neighbours_to_task_size():
    Xs, _ = _tasks((3, 40), d=5, seed=4)
    W = task_knn_graph(Xs, n_neighbors=10)
    assert (W[:3, :3].toarray() > 0).sum() == 6  # complete graph on 3 points


def test_divergence_affinity_sqeuclidean_neighbours_and_weights():
    rng = np.random.RandomState(5)
    Xs = [rng.randn(25, 3), rng.randn(20, 3) + 2]
    k = 4
    W = task_knn_graph(Xs, n_neighbors=k, affinity="sqeuclidean")
    assert abs(W - W.T).max() < 1e-15
    assert W[:25, 25:].nnz == 0
    X = Xs[0]
    dist, ind = NearestNeighbors(n_neighbors=k).fit(X).kneighbors()
    sigma = np.median(dist ** 2)
    for i in range(25):
        for j, dj in zip(ind[i], dist[i]):
            assert W[i, j] >= np.exp(-dj ** 2 / sigma) - 1e-12
    # every edge of the first task is a kNN pair in some direction
    nbr = {(i, j) for i in range(25) for j in ind[i]}
    rows, cols = W[:25, :25].nonzero()
    assert all((i, j) in nbr or (j, i) in nbr for i, j in zip(rows, cols))


def test_divergence_affinity_kl_on_counts():
    rng = np.random.RandomState(6)
    Xs = [rng.poisson(2.0, (20, 6)).astype(float), rng.poisson(3.0, (18, 6)).astype(float)]
    W = task_knn_graph(Xs, n_neighbors=3, affinity="kl")
    assert np.isfinite(W.data).all() and (W.data > 0).all() and (W.data <= 1).all()
    assert abs(W - W.T).max() < 1e-15
    est = SpectralKernelMTC(2, affinity="kl", n_eigenvectors=8, n_neighbors=3,
                            random_state=0).fit(Xs)
    assert [lab.shape for lab in est.labels_] == [(20,), (18,)]


# ----------------------------------------------------------------------------- eigen-solvers
@pytest.mark.parametrize("C", [0.0, 1.0, 50.0])
def test_eigenpairs_match_dense_eigh(C):
    Xs, _ = _tasks((30, 25, 20), seed=7)
    sizes = [30, 25, 20]
    W = task_knn_graph(Xs, n_neighbors=5)
    L = normalized_laplacian(W)
    assert connected_components(W)[0] > 3  # a repeated zero eigenvalue Lanczos alone misses
    A = L.toarray() + C * dense_S(sizes)
    w_full, P_full = np.linalg.eigh(A)
    k = 8
    for solver in ["arpack", "dense"]:
        w, V = smallest_eigenpairs(W, k, C=C, task_sizes=sizes, eigen_solver=solver,
                                   random_state=0)
        np.testing.assert_allclose(w, w_full[:k], atol=1e-9)
        np.testing.assert_allclose(V.T @ V, np.eye(k), atol=1e-9)
        # residuals, and the spanned subspace when the k-th eigenvalue is separated
        np.testing.assert_allclose(A @ V, V * w, atol=1e-8)
        assert w_full[k] - w_full[k - 1] > 1e-6
        np.testing.assert_allclose(V @ V.T, P_full[:, :k] @ P_full[:, :k].T, atol=1e-7)
    w, V = smallest_eigenpairs(W, k, C=C, task_sizes=sizes, eigen_solver="lobpcg", tol=1e-10,
                               random_state=0)
    np.testing.assert_allclose(w, w_full[:k], atol=1e-6)


# ----------------------------------------------------------------------------- the two LPs
def test_theorem_02_closed_form_equals_cvxpy_lp_and_sdp():
    cp = pytest.importorskip("cvxpy")
    rng = np.random.RandomState(8)
    sig = rng.randn(12)
    for b in [1, 2.5, 7.25, 12]:
        gamma = nonparametric_kernel_weights(sig, b)
        g = cp.Variable(12)
        lp = cp.Problem(cp.Minimize(sig @ g), [g >= 0, g <= 1, cp.sum(g) == b])
        lp.solve()
        assert lp.status == "optimal"
        assert gamma @ sig == pytest.approx(lp.value, abs=1e-6)
        assert gamma.sum() == pytest.approx(b) and gamma.min() >= 0 and gamma.max() <= 1
    # Theorem 0.2 itself: the SDP (11) optimum equals the LP (12) optimum
    M = rng.randn(6, 6)
    A = (M + M.T) / 2
    K = cp.Variable((6, 6), symmetric=True)
    b = 2.5
    sdp = cp.Problem(cp.Minimize(cp.trace(A @ K)),
                     [K >> 0, np.eye(6) - K >> 0, cp.trace(K) == b])
    sdp.solve(solver="CLARABEL")
    sigA, P = np.linalg.eigh(A)
    gamma = nonparametric_kernel_weights(sigA, b)
    assert gamma @ sigA == pytest.approx(sdp.value, abs=1e-5)
    np.testing.assert_allclose((P * gamma) @ P.T, K.value, atol=1e-4)


def test_spectral_lp_constraints_and_linprog_optimum():
    rng = np.random.RandomState(9)
    lam = np.sort(rng.uniform(0, 1, 10))
    s = rng.uniform(0, 1, 10)
    for C in [0.0, 0.1, 3.0, 100.0]:
        for b in [1.0, 2.5, 6.0]:
            mu = spectral_kernel_weights(lam, s, C, b)
            assert mu.sum() == pytest.approx(b, abs=1e-7)
            assert mu.max() <= 1 + 1e-9 and mu.min() >= -1e-9
            assert (np.diff(mu) <= 1e-8).all()
            _, best = linprog_spectral(lam + C * s, b)
            assert (lam + C * s) @ mu == pytest.approx(best, abs=1e-7)


def test_spectral_lp_ties_share_weight_and_grid_reuses_problem():
    from bregclust.kernel_mtc import _spectral_lp

    lam = np.array([0.0, 0.0, 0.2, 0.3, 0.5])
    s = np.array([1.0, 0.0, 0.01, 0.02, 0.0])
    mu = spectral_kernel_weights(lam, s, 0.0, 1.0)
    assert mu[0] == pytest.approx(mu[1], abs=1e-9)   # repeated eigenvalue: equal weights
    mu_plain = spectral_kernel_weights(lam, s, 0.0, 1.0, tie_tol=0.0)
    _, best = linprog_spectral(lam, 1.0)
    assert lam @ mu_plain == pytest.approx(best, abs=1e-9)
    spectral_kernel_weights(lam, s, 1.0, 1.0)
    before = _spectral_lp.cache_info()
    prob = _spectral_lp(5)[0]
    for C in [0.1, 1, 10, 100, 500, 1000]:
        spectral_kernel_weights(lam, s, C, 1.0)
    after = _spectral_lp.cache_info()
    assert after.misses == before.misses  # same compiled problem for the whole C grid
    assert _spectral_lp(5)[0] is prob


# ----------------------------------------------------------------------------- kernel k-means
def test_kmeans_on_factor_equals_explicit_kernel_kmeans():
    rng = np.random.RandomState(10)
    V, _ = np.linalg.qr(rng.randn(60, 5))
    g = np.array([1.0, 0.8, 0.5, 0.5, 0.1])
    F = V * np.sqrt(g) + 0.0
    F[:20] += 0.2 * V[:20, :1].std()
    K = F @ F.T
    labels0 = rng.randint(0, 3, 60)
    centers0 = np.vstack([F[labels0 == c].mean(axis=0) for c in range(3)])
    km = BregmanKMeans(3, init=centers0, tol=0.0, max_iter=100).fit(F)
    # the naive version starts from the same partition's means
    first = np.argmin(((F[:, None, :] - centers0[None]) ** 2).sum(-1), axis=1)
    lab_naive, obj_naive = naive_kernel_kmeans(K, first)
    assert np.array_equal(km.labels_, lab_naive)
    assert km.inertia_ == pytest.approx(obj_naive, rel=1e-9)


def test_kernel_kmeans_explicit_kernel_on_blobs():
    rng = np.random.RandomState(11)
    X = np.vstack([rng.randn(20, 2), rng.randn(20, 2) + 8])
    K = X @ X.T
    labels, inertia = kernel_kmeans(K, 2, n_init=3, random_state=0)
    assert clustering_accuracy(np.repeat([0, 1], 20), labels) == 1.0
    km = BregmanKMeans(2, n_init=3, random_state=0).fit(X)
    assert inertia == pytest.approx(km.inertia_, rel=1e-9)


# ----------------------------------------------------------------------------- estimators
def test_lnkmtc_kernel_matches_dense_theorem_02():
    Xs, _ = _tasks((30, 25), seed=12)
    sizes = [30, 25]
    C, b = 2.0, 6
    est = NonparametricKernelMTC(2, C=C, b=b, n_neighbors=5, random_state=0).fit(Xs)
    L = dense_laplacian(dense_knn_graph(Xs, 5))
    K_ref, val = dense_lnkmtc_kernel(L, dense_S(sizes), C, b)
    np.testing.assert_allclose(est.kernel_matrix(), K_ref, atol=1e-7)
    assert est.objective_ == pytest.approx(val, abs=1e-9)
    assert est.embedding_.shape == (55, 6)
    assert est.gamma_.sum() == pytest.approx(b)


def test_lskmtc_kernel_is_spectral_and_feasible():
    Xs, _ = _tasks((30, 25, 20), seed=13)
    est = SpectralKernelMTC(2, C=10.0, b=2, n_eigenvectors=10, n_neighbors=5,
                            random_state=0).fit(Xs)
    mu = est.mu_
    assert mu.sum() == pytest.approx(2, abs=1e-7)
    assert (np.diff(mu) <= 1e-8).all() and mu.min() >= 0 and mu.max() <= 1
    L = normalized_laplacian(est.affinity_matrix_)
    V = est.eigenvectors_
    np.testing.assert_allclose(L @ V, V * est.eigenvalues_, atol=1e-8)
    K = est.kernel_matrix()
    np.testing.assert_allclose(K, (V * mu) @ V.T, atol=1e-12)
    assert est.mmd_ == pytest.approx(np.trace(dense_S([30, 25, 20]) @ K), rel=1e-8)
    # the graph has one component per task (at least), hence >= 3 zero eigenvalues
    assert connected_components(est.affinity_matrix_)[0] >= 3
    assert (est.eigenvalues_[:3] < 1e-10).all()


def test_mmd_term_shrinks_with_C():
    Xs, _ = _tasks((40, 40), seed=14, shift=3.0)
    mmd = []
    for C in [0.0, 1.0, 100.0]:
        est = NonparametricKernelMTC(2, C=C, b=4, n_neighbors=5, random_state=0).fit(Xs)
        mmd.append(est.mmd_)
    assert mmd[0] >= mmd[1] - 1e-12 >= mmd[2] - 2e-12
    assert mmd[2] < 1e-3 * max(mmd[0], 1e-12) or mmd[0] < 1e-12


@pytest.mark.parametrize("cls", [LNKMTC, LSKMTC])
def test_recovers_topics_per_task(cls):
    Xs, ys = _tasks((40, 36), n_classes=2, seed=15)
    kw = dict(b=4) if cls is LNKMTC else dict(b=2, n_eigenvectors=6)
    est = cls(2, C=1.0, n_neighbors=6, joint=False, random_state=0, **kw).fit(Xs)
    for y, lab in zip(ys, est.labels_):
        assert clustering_accuracy(y, lab) >= 0.95


def test_per_task_clusters_may_differ():
    Xs, ys = _tasks((30, 33), n_classes=3, seed=16)
    est = SpectralKernelMTC([2, 3], b=3, n_eigenvectors=8, n_neighbors=5, joint=False,
                            random_state=0).fit(Xs)
    assert est.n_clusters_ == [2, 3]
    assert len(np.unique(est.labels_[0])) == 2 and len(np.unique(est.labels_[1])) == 3


@pytest.mark.parametrize("cls", [LNKMTC, LSKMTC])
def test_joint_auto_follows_the_number_of_clusters(cls):
    """joint="auto": per-task K (the shared contract: an int or one per task) clusters each
    task on its own; one K and one kind of init cluster all tasks together, as joint=True."""
    Xs, ys = _tasks((30, 33), n_classes=3, seed=16)
    kw = dict(b=3, n_neighbors=5, random_state=0, C=1.0)
    if cls is LSKMTC:
        kw["n_eigenvectors"] = 8
    per_task = cls([2, 3], **kw).fit(Xs)
    assert per_task.joint_ is False and per_task.n_clusters_ == [2, 3]
    assert [len(np.unique(lab)) for lab in per_task.labels_] == [2, 3]
    explicit = cls([2, 3], joint=False, **kw).fit(Xs)
    for a, b in zip(per_task.labels_, explicit.labels_):
        assert np.array_equal(a, b)
    one = cls(3, **kw).fit(Xs)
    together = cls(3, joint=True, **kw).fit(Xs)
    assert one.joint_ is True
    for a, b in zip(one.labels_, together.labels_):
        assert np.array_equal(a, b)
    # labels for one task and a string for the other: one kind of init is needed jointly
    mixed = cls(3, init=[np.arange(30) % 3, "k-means++"], **kw).fit(Xs)
    assert mixed.joint_ is False
    with pytest.raises(ValueError, match="joint=True runs one kernel k-means"):
        cls(3, init=[np.arange(30) % 3, "k-means++"], joint=True, **kw).fit(Xs)


_SILENT_FIT = """
import numpy as np
from bregclust import LNKMTC, LSKMTC
rng = np.random.RandomState(0)
Xs = [np.abs(rng.randn(40, 5)) + 3 * np.eye(5)[rng.randint(0, 2, 40)] for _ in range(2)]
LSKMTC(2, C=1.0, b=2, n_eigenvectors=6, n_neighbors=5, random_state=0).fit(Xs)
LSKMTC(2, C=100.0, b=1, n_eigenvectors=6, n_neighbors=5, random_state=0).fit(Xs)
LNKMTC(2, b=4, n_neighbors=5, random_state=0).fit(Xs)
"""


def test_fits_print_nothing_even_at_the_c_level(capfd):
    """The LP solver writes nothing to the process's file descriptors (HiGHS' banner is
    printed by C code, so redirecting sys.stdout would not catch it): checked in a fresh
    interpreter, where a solver would print its once-per-process banner, and here."""
    import subprocess
    import sys

    from conftest import REPO

    res = subprocess.run([sys.executable, "-c", _SILENT_FIT], capture_output=True, text=True,
                         cwd=REPO, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout == "" and res.stderr == ""
    capfd.readouterr()
    exec(_SILENT_FIT, {})
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_deterministic_picklable_clonable_inputs_untouched():
    Xs, _ = _tasks((25, 20), seed=17)
    copies = [X.copy() for X in Xs]
    a = LSKMTC(2, n_eigenvectors=6, n_neighbors=5, random_state=3).fit(Xs)
    b = pickle.loads(pickle.dumps(a))
    c = clone(a).fit([sp.csr_matrix(X) for X in Xs])
    for la, lb, lc in zip(a.labels_, b.labels_, c.labels_):
        assert np.array_equal(la, lb) and np.array_equal(la, lc)
    for X, Y in zip(Xs, copies):
        assert np.array_equal(X, Y)
    assert a.get_params()["n_eigenvectors"] == 6


# ----------------------------------------------------------------------------- bad input
def test_bad_input():
    Xs, _ = _tasks((20, 15), seed=18)
    with pytest.raises(ValueError, match="at least two tasks"):
        LNKMTC(2, b=3).fit([Xs[0]])
    with pytest.raises(ValueError, match="share one feature space"):
        LSKMTC(2).fit([Xs[0], Xs[1][:, :4]])
    with pytest.raises(ValueError, match=r"b=40 exceeds the number of points n=35"):
        LNKMTC(2, b=40).fit(Xs)
    with pytest.raises(ValueError, match=r"n_eigenvectors=36 exceeds the number of points"):
        LSKMTC(2, n_eigenvectors=36).fit(Xs)
    with pytest.raises(ValueError, match=r"b=5 exceeds n_eigenvectors=4"):
        LSKMTC(2, b=5, n_eigenvectors=4).fit(Xs)
    with pytest.raises(ValueError, match="C must be >= 0"):
        LNKMTC(2, C=-1.0, b=3).fit(Xs)
    with pytest.raises(ValueError, match="joint=True .* one number of clusters"):
        LSKMTC([2, 3], n_eigenvectors=5, joint=True).fit(Xs)
    with pytest.raises(ValueError, match="n_clusters has 3 entries but there are 2 tasks"):
        LSKMTC([2, 2, 2], n_eigenvectors=5, joint=False).fit(Xs)
    with pytest.raises(ValueError, match="unknown divergence|Unknown divergence|not registered"):
        LSKMTC(2, n_eigenvectors=5, affinity="nope").fit(Xs)
    with pytest.raises(ValueError, match="eigen_solver must be one of"):
        LNKMTC(2, b=3, eigen_solver="magic").fit(Xs)
    with pytest.raises(ValueError, match="NaN or infinity"):
        LNKMTC(2, b=3).fit([np.full((5, 6), np.nan), Xs[1]])
    with pytest.raises(ValueError, match="b=13 exceeds the number of eigenvalues"):
        nonparametric_kernel_weights(np.zeros(12), 13)
    with pytest.raises(ValueError, match="ascending order"):
        spectral_kernel_weights([0.3, 0.1], [0, 0], 1.0, 1.0)
    with pytest.raises(ValueError, match="task_sizes sum to"):
        mmd_trace(np.ones((5, 2)), [2, 2])


# ----------------------------------------------------------------------------- real data
def test_malsar_rec_vs_talk_runs_sparse():
    require_data("mtc_newsgroups_malsar/rec.vs.talk/Task1.mat")
    from bregclust.datasets import load_malsar

    data = load_malsar("rec.vs.talk")
    est = LSKMTC(2, C=100.0, n_init=1, random_state=0).fit(data.Xs)
    n = sum(X.shape[0] for X in data.Xs)
    assert est.embedding_.shape == (n, 30)
    assert est.affinity_matrix_.nnz <= 2 * 10 * n
    assert [lab.shape[0] for lab in est.labels_] == [X.shape[0] for X in data.Xs]


def test_cli_demo_rows():
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

    from bregclust.demo import demo_kernel_mtc, scores
    from bregclust.metrics import clustering_accuracy, nmi

    Xs, ys = _tasks((40, 36), n_classes=2, seed=19)
    rows = demo_kernel_mtc(Xs, ys, 0)
    # the documented best settings only (the degenerate C=0 spectral variant is not shown)
    lnk = NonparametricKernelMTC(2, C="auto", b=30, joint=True, random_state=0).fit(Xs)
    assert [name for name, _ in rows] == [f"LNKMTC (C=auto: {lnk.C_:g})", "LSKMTC (C=1000)"]
    # the demo row is exactly the estimator it names, scored by the one scores helper
    ref = SpectralKernelMTC(2, C=1000.0, b=1, n_eigenvectors=30, random_state=0).fit(Xs)
    assert rows[1][1] == scores(ys, ref.labels_)
    assert rows[1][1][1] == (nmi(ys[1], ref.labels_[1]), pytest.approx(adjusted_rand_score(
        ys[1], ref.labels_[1]), abs=1e-12), clustering_accuracy(ys[1], ref.labels_[1]))
    # oracle agreement: a row scores the estimator fitted on its own (sklearn's NMI with the
    # geometric mean and ARI; accuracy under the better of the two matchings of 2 classes)
    direct = [lnk.labels_, SpectralKernelMTC(2, C=1000.0, b=1, n_eigenvectors=30, joint=True,
                                             random_state=0).fit(Xs).labels_]
    for (_name, per_task), labels in zip(rows, direct):
        assert len(per_task) == 2
        for (nmi_, ari_, acc_), y, lab in zip(per_task, ys, labels):
            assert nmi_ == pytest.approx(
                normalized_mutual_info_score(y, lab, average_method="geometric"), abs=1e-12)
            assert ari_ == pytest.approx(adjusted_rand_score(y, lab), abs=1e-12)
            assert acc_ == pytest.approx(max(np.mean(lab == y), np.mean(lab != y)))
    # quality is checked on the paper's data (test_lnkmtc_as_run_on_malsar_rec_vs_talk_quality_floor):
    # on these 2-blob toy tasks the kernel methods' defaults (tuned on text) are not reliable


# ----------------------------------------------------------------------------- kernel k-means start
def test_random_partition_start_reproducible_and_valid():
    from bregclust.kernel_mtc import factor_kernel_kmeans

    rng = np.random.RandomState(20)
    F = np.vstack([rng.randn(30, 4) + 3 * np.eye(4)[c] for c in range(3)])
    a = factor_kernel_kmeans(F, 3, init="random-partition", n_init=4, random_state=7)
    b = factor_kernel_kmeans(F, 3, init="random-partition", n_init=4,
                             random_state=np.random.RandomState(7))
    assert np.array_equal(a[0], b[0]) and a[1] == b[1]
    assert set(np.unique(a[0])) == {0, 1, 2}
    assert np.bincount(a[0], minlength=3).min() > 0
    assert clustering_accuracy(np.repeat([0, 1, 2], 30), a[0]) >= 0.95
    # the objective is the Euclidean k-means inertia of the returned partition
    cent = np.vstack([F[a[0] == c].mean(axis=0) for c in range(3)])
    assert a[1] == pytest.approx(((F - cent[a[0]]) ** 2).sum(), rel=1e-9)
    # k-means++ start: exactly BregmanKMeans on the rows with the same seed
    c = factor_kernel_kmeans(F, 3, init="k-means++", n_init=4, random_state=7)
    km = BregmanKMeans(3, n_init=4, random_state=7).fit(F)
    assert np.array_equal(c[0], km.labels_) and c[1] == pytest.approx(km.inertia_)


@pytest.mark.parametrize("cls", [LNKMTC, LSKMTC])
def test_estimators_random_partition_all_clusters_non_empty_and_seeded(cls):
    Xs, _ = _tasks((30, 25), n_classes=3, seed=21)
    kw = dict(b=6) if cls is LNKMTC else dict(b=2, n_eigenvectors=8)
    est = cls(3, C=1.0, n_neighbors=5, random_state=4, init="random-partition", **kw)
    a = est.fit(Xs)
    labels = np.concatenate(a.labels_)
    assert np.bincount(labels, minlength=3).min() > 0 and labels.max() == 2
    b = clone(est).fit(Xs)
    assert all(np.array_equal(x, y) for x, y in zip(a.labels_, b.labels_))
    other = clone(est).set_params(random_state=5).fit(Xs)
    assert [lab.shape for lab in other.labels_] == [(30,), (25,)]


def test_row_normalised_factor_has_unit_rows():
    from bregclust.kernel_mtc import normalize_factor_rows

    Xs, _ = _tasks((30, 25), seed=22)
    est = LNKMTC(2, C=1.0, b=6, n_neighbors=5, random_state=0, normalize_factor=True).fit(Xs)
    F = est.cluster_embedding_
    np.testing.assert_allclose(np.linalg.norm(F, axis=1), 1.0, atol=1e-12)
    # the learned kernel itself is not normalised: same kernel and objective as without
    raw = LNKMTC(2, C=1.0, b=6, n_neighbors=5, random_state=0, normalize_factor=False).fit(Xs)
    np.testing.assert_allclose(est.embedding_, raw.embedding_)
    assert raw.cluster_embedding_ is raw.embedding_
    assert est.objective_ == pytest.approx(raw.objective_)
    np.testing.assert_allclose(F, est.embedding_ / np.linalg.norm(est.embedding_, axis=1)[:, None])
    # zero rows stay zero; input untouched
    G = np.array([[3.0, 4.0], [0.0, 0.0], [-1.0, 0.0]])
    out = normalize_factor_rows(G)
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0], [-1.0, 0.0]])
    assert G[0, 0] == 3.0


def test_as_printed_setting_keeps_the_previous_labels():
    # init="k-means++", normalize_factor=False is the former procedure: BregmanKMeans on F
    Xs, _ = _tasks((30, 25), seed=23)
    est = LNKMTC(2, C=1.0, b=6, n_neighbors=5, random_state=3, init="k-means++",
                 normalize_factor=False, n_init=3).fit(Xs)
    rng = np.random.RandomState(3)
    # fit draws the eigensolver's start vector first, then the k-means seed
    smallest_eigenpairs(est.affinity_matrix_, 6, C=1.0, task_sizes=[30, 25], random_state=rng)
    km = BregmanKMeans(2, n_init=3, random_state=rng.randint(np.iinfo(np.int32).max))
    lab = km.fit(est.embedding_).labels_
    assert np.array_equal(np.concatenate(est.labels_), lab)


def test_spectral_kernel_C0_warns_degenerate():
    Xs, _ = _tasks((30, 25), seed=24)
    with pytest.warns(UserWarning, match=r"C=0 makes LSKMTC degenerate.*use C > 0"):
        LSKMTC(2, C=0.0, n_eigenvectors=6, n_neighbors=5, random_state=0).fit(Xs)


def test_bad_kernel_kmeans_options():
    Xs, _ = _tasks((20, 15), seed=25)
    with pytest.raises(ValueError, match="init must be 'k-means\\+\\+', 'random', 'random-partition'"):
        LNKMTC(2, b=3, init="farthest").fit(Xs)
    with pytest.raises(TypeError, match="normalize_factor must be True or False"):
        LSKMTC(2, n_eigenvectors=5, normalize_factor="yes").fit(Xs)


@pytest.mark.data
def test_lnkmtc_as_run_on_malsar_rec_vs_talk_quality_floor():
    require_data("mtc_newsgroups_malsar/rec.vs.talk/Task1.mat")
    from sklearn.feature_extraction.text import TfidfTransformer

    from bregclust.datasets import load_malsar

    data = load_malsar("rec.vs.talk")
    Xs = [sp.csr_matrix(X, dtype=np.float64) for X in data.Xs]
    tf = TfidfTransformer().fit(sp.vstack(Xs))
    Xs = [sp.csr_matrix(tf.transform(X)) for X in Xs]
    est = LNKMTC(2, C=500.0, b=30, random_state=0).fit(Xs)   # defaults: the paper "as run"
    acc = [clustering_accuracy(y, lab) for y, lab in zip(data.ys, est.labels_)]
    assert min(acc) >= 0.75


def test_factor_kernel_kmeans_bad_input():
    from bregclust.kernel_mtc import factor_kernel_kmeans

    F = np.random.RandomState(26).randn(10, 3)
    with pytest.raises(TypeError, match="normalize must be True or False"):
        factor_kernel_kmeans(F, 2, normalize=1)
    with pytest.raises(ValueError, match="init must be one of"):
        factor_kernel_kmeans(F, 2, init="random")
    with pytest.raises(ValueError, match="factor must be a 2-D array"):
        factor_kernel_kmeans(F[:, 0], 2)


# ----------------------------------------------------------------------------- C="auto"
def _naive_single_task_objective(Xs, labels, unit_rows):
    total = 0.0
    for X, lab in zip(Xs, labels):
        X = X.toarray() if sp.issparse(X) else np.array(X, dtype=float)
        if unit_rows:
            X = X / np.linalg.norm(X, axis=1, keepdims=True)
        within = 0.0
        for z in np.unique(lab):
            rows = X[lab == z]
            within += ((rows - rows.mean(axis=0)) ** 2).sum()
        total += within / X.shape[0]
    return total


@pytest.mark.parametrize("unit_rows", [True, False])
def test_single_task_objective_matches_naive(unit_rows):
    Xs, ys = _tasks((30, 25), seed=4)
    rng = np.random.RandomState(1)
    labels = [rng.randint(0, 3, X.shape[0]) for X in Xs]
    for tasks in (Xs, [sp.csr_matrix(X) for X in Xs]):
        got = single_task_objective(tasks, labels, unit_rows=unit_rows)
        assert got == pytest.approx(_naive_single_task_objective(Xs, labels, unit_rows), rel=1e-10)
    # the true topics are a better single-task clustering than random labels
    assert single_task_objective(Xs, ys) < single_task_objective(Xs, labels)
    with pytest.raises(ValueError, match="one label array per task"):
        single_task_objective(Xs, labels[:1])
    with pytest.raises(ValueError, match=r"labels\[1\] must be 25 non-negative integers"):
        single_task_objective(Xs, [labels[0], labels[1][:5]])
    with pytest.raises(ValueError, match=r"labels\[0\] must be 30 non-negative integers"):
        single_task_objective(Xs, [labels[0] + 0.5, labels[1]])
    with pytest.raises(ValueError, match="NaN or infinity"):
        single_task_objective([np.full((30, 6), np.nan), Xs[1]], labels)
    with pytest.raises(ValueError, match="overflowed"):
        single_task_objective([X * 1e300 for X in Xs], labels, unit_rows=False)
    # other sparse formats, inputs untouched
    before = [X.copy() for X in Xs]
    got = single_task_objective([sp.coo_matrix(X) for X in Xs], labels)
    assert got == pytest.approx(single_task_objective(Xs, labels), rel=1e-12)
    for a, b in zip(before, Xs):
        np.testing.assert_array_equal(a, b)


def test_C_auto_keeps_the_grid_fit_with_the_best_single_task_objective():
    Xs, ys = _tasks((40, 36), seed=7, shift=1.0)
    est = LNKMTC(2, C="auto", b=6, n_neighbors=6, random_state=3).fit(Xs)
    assert est.C_scores_.shape == (len(AUTO_C_GRID),)
    assert est.C_ == AUTO_C_GRID[int(np.argmin(est.C_scores_))]
    # every candidate is the fit at that C from the same random stream
    seed = np.random.RandomState(3).randint(np.iinfo(np.int32).max)
    for C, score in zip(AUTO_C_GRID, est.C_scores_):
        ref = LNKMTC(2, C=C, b=6, n_neighbors=6, random_state=seed).fit(Xs)
        assert ref.C_ == C
        assert score == pytest.approx(single_task_objective(Xs, ref.labels_), rel=1e-12)
        if C == est.C_:
            for a, b in zip(est.labels_, ref.labels_):
                np.testing.assert_array_equal(a, b)
            assert est.objective_ == pytest.approx(ref.objective_, rel=1e-12)
            np.testing.assert_allclose(est.embedding_, ref.embedding_)
    assert est.get_params()["C"] == "auto"
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(Xs[1], task=1), est.predict(Xs[1], task=1))
    with pytest.raises(ValueError, match="C must be"):
        LNKMTC(2, C="best", b=3).fit(Xs)
    with pytest.raises(TypeError, match="C must be a real number, got 'auto'"):
        LSKMTC(2, C="auto", n_eigenvectors=5).fit(Xs)


# ----------------------------------------------------------------- kernel k-means: bad kernel
def test_kernel_kmeans_refuses_a_nan_kernel():
    with pytest.raises(ValueError, match="K contains NaN or infinity"):
        kernel_kmeans(np.full((4, 4), np.nan), 2)


def test_cosine_geometry_is_scale_invariant_at_extreme_magnitudes():
    """Cosine is scale invariant: tasks times 1e-170, 1e160, 1e-300 or 1e300 give the labels
    and C="auto" criterion of the tasks as given (the criterion's unit rows underflowed, so
    every candidate C scored 0 and LNKMTC returned one cluster per task without a word)."""
    from sklearn.datasets import make_blobs

    from bregclust import NonparametricKernelMTC, SpectralKernelMTC

    Xs = [make_blobs(20, 3, centers=[[5, 0, 0], [0, 5, 0]], random_state=s, cluster_std=0.5)[0]
          for s in (0, 1)]
    ref = NonparametricKernelMTC(2, b=3, n_neighbors=4, random_state=0).fit(Xs)
    sref = SpectralKernelMTC(2, n_neighbors=4, random_state=0).fit(Xs)
    assert all(np.bincount(lab).tolist() == [10, 10] for lab in ref.labels_)
    for scale in (1e-170, 1e160, 1e-300, 1e300):
        Zs = [X * scale for X in Xs]
        got = NonparametricKernelMTC(2, b=3, n_neighbors=4, random_state=0).fit(Zs)
        for a, b in zip(got.labels_, ref.labels_):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(got.C_scores_, ref.C_scores_, rtol=1e-9)
        for a, b in zip(SpectralKernelMTC(2, n_neighbors=4, random_state=0).fit(Zs).labels_,
                        sref.labels_):
            np.testing.assert_array_equal(a, b)
        assert single_task_objective(Zs, ref.labels_) == pytest.approx(
            single_task_objective(Xs, ref.labels_), rel=1e-12)
