"""SpectralMTC's fast graph routines against scikit-learn's neighbour search.

``task_graph`` and ``cross_task_graph`` compute their cosine kNN by one hand-written pass
(``bregclust._knn``); they must give exactly scikit-learn's neighbours: ``kneighbors_graph``
on the unit rows for a task's own graph, ``NearestNeighbors`` once per direction for a task
pair. Ties at the ``k``-th distance (duplicate rows, rows whose distances are exact in any
order of summation) are where a selection rule could differ from scikit-learn's
``np.argpartition``, so most inputs here have many of them.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.neighbors import NearestNeighbors, kneighbors_graph
from sklearn.preprocessing import normalize

from bregclust.spectral_mtc import SpectralMTC, cross_task_graph, task_graph


def _sk_task_graph(X, k):
    U = normalize(X)
    A = kneighbors_graph(U, n_neighbors=min(k, U.shape[0]), include_self=True)
    return sp.csr_matrix(0.5 * (A + A.T))


def _sk_cross(Xa, Xb, k):
    A, B = normalize(Xa), normalize(Xb)
    ab = NearestNeighbors(n_neighbors=min(k, B.shape[0])).fit(B).kneighbors_graph(A)
    ba = NearestNeighbors(n_neighbors=min(k, A.shape[0])).fit(A).kneighbors_graph(B)
    return sp.csr_matrix(0.5 * (ab + ba.T))


def _halves(n, d, seed):
    """Unit rows with four entries of +-1/2 (exact arithmetic: every distance is the same
    float whatever the order of summation), so ties across the k-th distance abound."""
    rng = np.random.default_rng(seed)
    X = np.zeros((n, d))
    for i in range(n):
        X[i, rng.choice(d, 4, replace=False)] = rng.choice([-0.5, 0.5], 4)
    return X


def _duplicated(n, d, seed):
    """Sparse non-negative rows (tf-idf-like) with blocks of duplicate rows."""
    rng = np.random.default_rng(seed)
    R = rng.random((n, d)) * (rng.random((n, d)) < 0.4)
    R[R.sum(axis=1) == 0, 0] = 1.0
    return np.vstack([R, R[:6], R[:6], R[3:5], R[3:5], R[3:5]])


def _assert_same(G, H):
    assert G.shape == H.shape
    assert (G != H).nnz == 0


@pytest.mark.parametrize("make", [_halves, _duplicated])
@pytest.mark.parametrize("k", [1, 3, 10, 200])
@pytest.mark.parametrize("seed", [0, 1])
def test_task_graph_is_scikit_learns_kneighbors_graph_ties_included(make, k, seed):
    X = make(60, 7, seed)
    # scikit-learn itself breaks such ties one way on dense rows (ArgKmin's heaps) and another
    # on sparse rows (np.argpartition): the reference sees the same format
    for conv in (np.asarray, sp.csr_matrix):
        W = task_graph(conv(X), k)
        _assert_same(W, _sk_task_graph(conv(X), k))
        assert W.has_sorted_indices
    if make is _halves:
        # the ties are real: some query's k-th distance is shared with a row left out
        D = ((normalize(X)[:, None, :] - normalize(X)[None, :, :]) ** 2).sum(axis=2)
        kk = min(k, X.shape[0])
        if kk < X.shape[0]:
            Ds = np.sort(D, axis=1)
            assert np.any(Ds[:, kk - 1] == Ds[:, kk])


def test_task_graph_general_position_and_float32_and_unsorted_indices():
    rng = np.random.default_rng(5)
    X = rng.random((80, 12)) * (rng.random((80, 12)) < 0.5) + 1e-3 * (rng.random((80, 12)) < 0.1)
    ref = _sk_task_graph(X, 10)
    _assert_same(task_graph(X, 10), ref)
    _assert_same(task_graph(sp.csr_matrix(X), 10), ref)  # no ties: dense and sparse agree
    _assert_same(task_graph(X.astype(np.float32), 10), _sk_task_graph(X.astype(np.float32)
                                                                       .astype(float), 10))
    # CSR with unsorted indices within rows: same graph, the input left unsorted
    S = sp.csr_matrix(X)
    perm = [np.arange(a, b)[::-1] for a, b in zip(S.indptr[:-1], S.indptr[1:])]
    perm = np.concatenate(perm)
    U = sp.csr_matrix((S.data[perm], S.indices[perm], S.indptr), shape=S.shape)
    U.has_sorted_indices = False
    before = U.indices.copy()
    _assert_same(task_graph(U, 10), ref)
    np.testing.assert_array_equal(U.indices, before)


def test_task_graph_every_row_has_k_neighbours_zero_rows_and_one_row():
    X = _duplicated(30, 5, 3)
    X[4] = 0.0  # a zero row: unit-normalised to zero, at distance 1 from every unit row
    for conv in (np.asarray, sp.csr_matrix):
        W = task_graph(conv(X), 4)
        _assert_same(W, _sk_task_graph(conv(X), 4))
    W = task_graph(np.ones((1, 3)), 10)
    assert W.shape == (1, 1) and W[0, 0] == 1.0


@pytest.mark.parametrize("make", [_halves, _duplicated])
@pytest.mark.parametrize("sizes, k", [((50, 40), 5), ((7, 30), 10), ((30, 4), 10),
                                      ((45, 45), 1)])
def test_cross_task_graph_is_two_scikit_learn_searches_ties_included(make, sizes, k):
    X = make(sizes[0] + sizes[1], 6, 2)
    Xs = [X[:sizes[0]], X[sizes[0]:]]
    for conv in (np.asarray, sp.csr_matrix):
        ref = _sk_cross(conv(Xs[0]), conv(Xs[1]), k)
        _assert_same(cross_task_graph([conv(x) for x in Xs], 0, 1, k), ref)
        # and the other way round it is the transpose
        _assert_same(cross_task_graph([conv(x) for x in Xs], 1, 0, k), ref.T.tocsr())


def test_three_tasks_graphs_and_labels_on_duplicated_rows():
    """The estimator on tasks full of duplicate rows: the own graphs are scikit-learn's, and
    ``base="spectral", coupling=0`` keeps scikit-learn's per-task spectral labels."""
    from sklearn.cluster import SpectralClustering

    X = _duplicated(40, 6, 4)
    Xs = [sp.csr_matrix(X[:20]), sp.csr_matrix(X[20:40]), sp.csr_matrix(X[40:])]
    est = SpectralMTC(2, base="spectral", coupling=0.0, n_neighbors=4, random_state=0).fit(Xs)
    for x, W, lab in zip(Xs, est.affinity_matrices_, est.labels_):
        _assert_same(W, _sk_task_graph(x, 4))
        ref = SpectralClustering(2, affinity="nearest_neighbors", n_neighbors=4,
                                 random_state=0).fit(normalize(x)).labels_
        np.testing.assert_array_equal(lab, ref)


@pytest.mark.data("cluto_docs/tr11.mat")
def test_real_corpus_graphs_equal_scikit_learn():
    """tr11 (tf-idf rows, duplicate documents): both own graphs and the cross-task graph."""
    from bregclust import datasets as ds

    b = ds.load_mbc_tasks("tr11", representation="tfidf")
    Xs = [sp.csr_matrix(x) for x in b.Xs]
    for x in Xs:
        _assert_same(task_graph(x, 10), _sk_task_graph(x, 10))
    _assert_same(cross_task_graph(Xs, 0, 1, 10), _sk_cross(Xs[0], Xs[1], 10))


# ------------------------------------------------------------ the joint graph's embedding
def _blobs(seed, sizes=(25, 25, 20), d=6):
    """Tasks of well-separated directions (cluster c of every task around axis c)."""
    rng = np.random.default_rng(seed)
    Xs, ys = [], []
    for _ in range(2):
        X = np.vstack([np.eye(d)[c] * 5.0 + 0.3 + rng.random((m, d))
                       for c, m in enumerate(sizes)])
        Xs.append(X)
        ys.append(np.repeat(np.arange(len(sizes)), sizes))
    return Xs, ys


def test_joint_embedding_spans_the_laplacians_bottom_eigenvectors():
    """Lanczos on the normalised adjacency against a dense eigendecomposition of scikit-learn's
    normalised Laplacian (self-loops ignored, diagonal one): the same subspace, every column an
    eigenvector of the smallest eigenvalues in increasing order, signs by scikit-learn's rule."""
    from scipy.linalg import eigh, subspace_angles
    from scipy.sparse.csgraph import laplacian

    from bregclust.spectral_mtc import _joint_embedding, joint_graph

    rng = np.random.default_rng(0)
    Xs = [rng.random((70, 5)), rng.random((60, 5))]  # a connected graph, simple eigenvalues
    J = joint_graph(Xs, 0.05, n_neighbors=6)
    m = 6
    emb = _joint_embedding(J, m, "auto", 0)
    L, dd = laplacian(J.toarray(), normed=True, return_diag=True)
    np.fill_diagonal(L, 1.0)
    lam, V = eigh(L)
    X = emb * dd[:, None]
    assert np.max(subspace_angles(X, V[:, :m])) < 1e-8
    for j in range(m):
        x = X[:, j] / np.linalg.norm(X[:, j])
        np.testing.assert_allclose(L @ x, lam[j] * x, atol=1e-9)
        assert emb[np.argmax(np.abs(emb[:, j])), j] > 0
    # scikit-learn's embedding by a solver of the same precision (ARPACK shift-invert)
    from sklearn.manifold import spectral_embedding
    ref = spectral_embedding(J, n_components=m, eigen_solver="arpack", random_state=0,
                             drop_first=False)
    np.testing.assert_allclose(emb, ref, atol=1e-7)


@pytest.mark.parametrize("seed", [0, 1])
def test_joint_solvers_give_the_same_partitions_on_separated_tasks(seed):
    """The default Lanczos embedding of the joint graph, LOBPCG and ARPACK's shift-invert give
    the same coupled partitions up to relabelling on well-separated tasks."""
    from sklearn.metrics import adjusted_rand_score

    Xs, ys = _blobs(seed)
    fits = {s: SpectralMTC(3, base="spectral", coupling=0.05, n_neighbors=6, random_state=seed,
                           eigen_solver=s).fit(Xs) for s in ("auto", "lobpcg", "arpack")}
    for t in range(2):
        assert adjusted_rand_score(ys[t], fits["auto"].labels_[t]) == 1.0
        for s in ("lobpcg", "arpack"):
            assert adjusted_rand_score(fits["auto"].labels_[t], fits[s].labels_[t]) == 1.0


@pytest.mark.parametrize("make", [_halves, _duplicated])
def test_tie_redo_without_scikit_learns_csr_product_gives_the_same_graphs(make, monkeypatch):
    """scikit-learn < 1.8 has no ``sparse_matmul_to_dense``: the tied queries are then redone
    with scipy's CSR product, whose sums (over the query's stored features in order) are the
    same floats, so the graphs are the same."""
    import bregclust._knn as knn

    X = sp.csr_matrix(make(60, 7, 1))
    U = normalize(X)
    RT = sp.csr_matrix(U.T)
    if knn._sk_matmul_to_dense is not None:
        for i in range(U.shape[0]):
            np.testing.assert_array_equal(knn._sk_matmul_to_dense(U[i:i + 1], RT)[0],
                                          (U[i:i + 1] @ RT).toarray()[0])
    ref_own, ref_cross = task_graph(X, 10), cross_task_graph([X[:35], X[35:]], 0, 1, 5)
    monkeypatch.setattr(knn, "_sk_matmul_to_dense", None)
    _assert_same(task_graph(X, 10), ref_own)
    _assert_same(cross_task_graph([X[:35], X[35:]], 0, 1, 5), ref_cross)
    _assert_same(task_graph(X, 10), _sk_task_graph(X, 10))
