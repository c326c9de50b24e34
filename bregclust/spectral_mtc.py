"""Multi-task spectral clustering: per-task normalised cuts coupled through the other tasks.

Single-task spectral clustering on a cosine k-nearest-neighbour graph (scikit-learn's
``SpectralClustering(affinity="nearest_neighbors")`` on unit-norm rows) is the strongest
single-task baseline of ``benchmarks/mtc_compare.py``. :class:`SpectralMTC` keeps that base and
lets the tasks help each other in one of two ways, with one coupling strength ``mu >= 0``
(``mu = 0`` is exactly the single-task method, labels included):

* ``transfer="instance"`` (in the manner of SAMTC, Zhang, Zhang & Liu, IJCAI 2016): the rows of
  the other tasks are used as probes. A row ``u`` of task ``s`` votes for every pair of task
  ``t``'s rows among its ``k`` nearest neighbours in task ``t``; the votes form a graph ``H_t``
  on task ``t``'s rows, scaled to the mass of task ``t``'s own graph ``W_t``, and task ``t`` is
  clustered on ``W_t + mu H_t`` (two-step paths ``t -> s -> t`` through reusable instances);
* ``transfer="joint"`` (in the manner of MTSC's shared embedding and of LNKMTC's joint graph):
  one graph over all tasks, the task graphs on the diagonal and ``mu`` times the symmetrised
  cross-task kNN graphs (scaled to the same mass) off the diagonal; its spectral embedding of
  dimension ``sum_t K_t``, restricted to a task's rows, is clustered by k-means with ``K_t``.

``coupling="auto"`` (the default) fits every value of ``coupling_grid`` (``0`` included) and
keeps, **per task**, the partition with the smallest normalised cut on that task's own graph
``W_t``, the criterion single-task spectral clustering relaxes, among the candidates that
agree with the single-task partition and do not raise the task's k-means sum of squares on
its unit rows (``guard="pareto"``): no labels are used, and a task whose own graph prefers
its single-task partition keeps it.

``base="auto"`` (the default) comes first: per task, spectral clustering competes with k-means
on the unit rows and kl k-means on the rows scaled to sum one, and the task keeps the
partition of largest modularity on its own cosine kNN graph (:func:`modularity`,
``base_rule="modularity"``; ``base_rule="gain"``: the smallest regret over the three bases'
objectives as gains over chance, :func:`base_regret`; ``base_rule="consensus"``: the partition
that agrees most with the other bases' partitions, :func:`consensus_scores`); only tasks that keep the spectral base
are coupled, unless ``kmeans_coupling="mbc"``: then the tasks on a k-means base are coupled in
the manner of MBC (transport between the tasks' clusters, ``lam="auto"``) and each keeps the
coupled partition only when its modularity is not lower. ``spectral_rows="unit"`` clusters the
unit-norm rows of every spectral embedding (Ng, Jordan & Weiss 2002) instead of the rows
scikit-learn's ``SpectralClustering`` clusters; ``"both"`` keeps per task the one of larger
modularity. The maths is restated in the guide page ``docs/guide/spectral_mtc.rst``.
"""

import numbers

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import laplacian as csgraph_laplacian
from scipy.sparse.linalg import eigsh
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import KMeans
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.manifold import spectral_embedding
from sklearn.metrics import adjusted_rand_score
from sklearn.neighbors import NearestNeighbors, kneighbors_graph
from sklearn.preprocessing import normalize
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted
from threadpoolctl import ThreadpoolController

from . import _knn
from ._callbacks import fit_callbacks
from ._consensus import anmi, coassociation, coassociation_labels
from ._multitask import (
    BOOLEAN,
    Interval,
    MultiTaskMixin,
    Options,
    check_n_clusters_per_task,
    cluster_sums,
    label_indicator,
    within_cluster_per_point,
)
from ._validation import check_tasks
from .kmeans import BregmanKMeans

__all__ = ["SpectralMTC", "task_graph", "transfer_graph", "cross_task_graph", "joint_graph", "normalized_cut",
           "spectral_labels", "ARPACK_MAX_N", "BASES", "base_regret", "within_cluster_unit",
           "kl_objective", "modularity", "consensus_scores", "coassociation",
           "coassociation_labels", "anmi", "CONSENSUS_SEEDS"]

#: ``eigen_solver="auto"`` uses ARPACK up to this many nodes and LOBPCG above (ARPACK in
#: scikit-learn's shift-invert mode factorises the Laplacian, too slow on large kNN graphs);
#: the rule of the NCut baseline of ``benchmarks/mtc_compare.py``.
ARPACK_MAX_N = 3000


def _tame_rows(X):
    """``X`` with every row whose largest magnitude is beyond ``2**±400`` scaled by a power of
    two to near 1, so that squared norms and row sums cannot overflow or underflow.

    Every base and graph here depends on a row only through its direction (cosine graph, unit
    rows, l1-normalised rows), so the partition is unchanged; a power of two keeps the bits of
    the mantissas. Rows in range (all of them on ordinary data) are untouched, and ``X`` itself
    is returned when no row needs it (never modified in place).
    """
    Y = X.tocsr() if sp.issparse(X) else np.asarray(X)
    if sp.issparse(Y):
        m = np.asarray(abs(Y).max(axis=1).todense()).ravel()
    else:
        m = np.abs(Y).max(axis=1, initial=0.0)
    m = m.astype(np.float64)
    bad = (m > 2.0 ** 400) | ((m > 0) & (m < 2.0 ** -400))
    if not bad.any():
        return X
    scale = np.ones(Y.shape[0])
    scale[bad] = np.ldexp(1.0, -np.frexp(m[bad])[1])
    if sp.issparse(Y):
        return sp.diags(scale.astype(Y.dtype)) @ Y
    return Y * scale.astype(Y.dtype)[:, None]


def _check_counts(X, name):
    """``X`` unchanged when every entry is non-negative (finiteness is checked before);
    ``input="counts"`` takes raw term counts."""
    v = X.data if sp.issparse(X) else np.asarray(X)
    if v.size and v.min() < 0:
        raise ValueError(f"input='counts' needs non-negative term counts, but {name} has a "
                         f"negative entry ({v.min():g}); pass raw counts, or use "
                         "input='features' for other rows.")
    return X


def _unit(X):
    return normalize(X) if sp.issparse(X) else normalize(np.asarray(X, dtype=np.float64))


def task_graph(X, n_neighbors=10):
    """The single-task graph: symmetrised cosine kNN connectivity, as scikit-learn builds it.

    ``W = (A + A^T) / 2`` with ``A[i, j] = 1`` when ``x_j`` is among the ``n_neighbors``
    nearest rows of ``x_i`` by cosine (Euclidean distance of unit-norm rows), the row itself
    included: exactly the affinity of ``SpectralClustering(affinity="nearest_neighbors")`` on
    ``normalize(X)``.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n, d)
    n_neighbors : int, default=10
        Clipped to ``n``.

    Returns
    -------
    W : scipy.sparse.csr_matrix of shape (n, n)
    """
    Xn = _unit(X)
    k = min(int(n_neighbors), Xn.shape[0])
    if sp.issparse(Xn):
        # scikit-learn's neighbours (ties included) by _knn's one pass over the upper triangle
        # of the similarities (kneighbors_graph: 4-6 s per NG20-1 task, this ~1 s)
        A = _knn.connectivity(_knn.kneighbors_self(Xn, k), Xn.shape[0])
    else:
        A = kneighbors_graph(Xn, n_neighbors=k, include_self=True)
    W = sp.csr_matrix(0.5 * (A + A.T))
    W.sort_indices()
    return W


def _cross_knn(Xq, Xr, k):
    """Directed cosine kNN connectivity of the rows of ``Xq`` among the rows of ``Xr``."""
    k = min(int(k), Xr.shape[0])
    nn = NearestNeighbors(n_neighbors=k).fit(_unit(Xr))
    return nn.kneighbors_graph(_unit(Xq), mode="connectivity")


def _cross_knn_both(Xa, Xb, k):
    """Both directed cosine kNN connectivities between two tasks.

    Returns ``(C_ab, C_ba)``: ``C_ab[i, j] = 1`` when row ``j`` of ``Xb`` is among the ``k``
    nearest rows of ``Xb`` to row ``i`` of ``Xa`` (the kNN of scikit-learn's
    ``NearestNeighbors`` on unit rows, ties included), ``C_ba`` the same the other way. On
    sparse rows each similarity is computed once and offered to both directions
    (:mod:`bregclust._knn`; hand-written: scikit-learn's neighbour search returns one direction
    per pass and partitions full rows of distances); on dense rows scikit-learn's search,
    once per direction.
    """
    if not (sp.issparse(Xa) and sp.issparse(Xb)):
        return _cross_knn(Xa, Xb, k), _cross_knn(Xb, Xa, k)
    A, B = _unit(Xa), _unit(Xb)
    ind_ab, ind_ba = _knn.kneighbors_cross(A, B, min(int(k), B.shape[0]),
                                           min(int(k), A.shape[0]))
    return _knn.connectivity(ind_ab, B.shape[0]), _knn.connectivity(ind_ba, A.shape[0])


def _scaled_to(H, W):
    """``H`` scaled to the total weight of ``W`` (zero stays zero)."""
    s = float(H.sum())
    return H * (float(W.sum()) / s) if s > 0 else H


def transfer_graph(Xs, t, n_neighbors=10, W_t=None):
    """The instance-transfer graph ``H_t`` of task ``t`` (votes of the other tasks' rows).

    ``H_t = sum_{s != t} C_st^T C_st`` with ``C_st[u, i] = 1`` when row ``i`` of task ``t`` is
    among the ``n_neighbors`` nearest rows of task ``t`` to row ``u`` of task ``s``; the
    diagonal is removed and ``H_t`` is scaled to the total weight of ``W_t``.

    Parameters
    ----------
    Xs : list of {ndarray, sparse matrix}
        The tasks.
    t : int
        The task whose graph is built.
    n_neighbors : int, default=10
    W_t : sparse matrix, optional
        Task ``t``'s own graph (:func:`task_graph`), built when not given.

    Returns
    -------
    H : scipy.sparse.csr_matrix of shape (n_t, n_t)
    """
    if W_t is None:
        W_t = task_graph(Xs[t], n_neighbors)
    n = Xs[t].shape[0]
    H = sp.csr_matrix((n, n))
    for s, X in enumerate(Xs):
        if s == t:
            continue
        C = _cross_knn(X, Xs[t], n_neighbors)
        H = H + (C.T @ C)
    H = sp.csr_matrix(H)
    H.setdiag(0.0)
    H.eliminate_zeros()
    H = sp.csr_matrix(_scaled_to(H, W_t))
    H.sort_indices()
    return H


def cross_task_graph(Xs, s, t, n_neighbors=10):
    """Symmetrised cosine kNN connectivity between tasks ``s`` and ``t`` (``n_s x n_t``).

    ``B = (C_st + C_ts^T) / 2`` with ``C_st`` the directed kNN of task ``s``'s rows among task
    ``t``'s rows; both directions come from one pass over the similarities ``S = U_s U_t^T``
    of the unit rows.

    Parameters
    ----------
    Xs : list of {ndarray, sparse matrix}
    s, t : int
    n_neighbors : int, default=10

    Returns
    -------
    B : scipy.sparse.csr_matrix of shape (n_s, n_t)
    """
    C_st, C_ts = _cross_knn_both(Xs[s], Xs[t], n_neighbors)
    return sp.csr_matrix(0.5 * (C_st + C_ts.T))


def _cross_blocks(Xs, Ws, n_neighbors):
    """Cross-task graphs ``B_st`` (``s < t``), each scaled to the mean total weight of
    ``W_s`` and ``W_t``."""
    cross = {}
    for s in range(len(Xs)):
        for t in range(s + 1, len(Xs)):
            B = cross_task_graph(Xs, s, t, n_neighbors)
            total = float(B.sum())
            scale = 0.5 * (float(Ws[s].sum()) + float(Ws[t].sum())) / total if total > 0 else 0.0
            cross[s, t] = sp.csr_matrix(B * scale)
    return cross


def joint_graph(Xs, coupling, n_neighbors=10, *, Ws=None, cross=None):
    """One graph over all tasks: ``W_t`` on the diagonal, ``coupling * B_st`` off it.

    ``B_st`` is :func:`cross_task_graph` scaled to the mean total weight of ``W_s`` and
    ``W_t``, so ``coupling`` is the weight of the cross-task edges relative to a task's own.

    Parameters
    ----------
    Xs : list of {ndarray, sparse matrix}
    coupling : float
    n_neighbors : int, default=10
    Ws : list of sparse matrices, optional
        The task graphs (:func:`task_graph`), built when not given.
    cross : dict, optional
        The scaled cross-task blocks ``{(s, t): B_st}`` (``s < t``), built when not given.

    Returns
    -------
    J : scipy.sparse.csr_matrix of shape (sum n_t, sum n_t)
    """
    T = len(Xs)
    if Ws is None:
        Ws = [task_graph(X, n_neighbors) for X in Xs]
    if cross is None:
        cross = _cross_blocks(Xs, Ws, n_neighbors)
    blocks = [[None] * T for _ in range(T)]
    for t in range(T):
        blocks[t][t] = Ws[t]
    for (s, t), B in cross.items():
        blocks[s][t] = coupling * B
        blocks[t][s] = coupling * B.T
    J = sp.csr_matrix(sp.bmat(blocks, format="csr"))
    J.sort_indices()
    return J


def normalized_cut(W, labels):
    """Normalised cut ``sum_k cut(A_k, rest) / vol(A_k)`` of a partition of a graph.

    Parameters
    ----------
    W : sparse matrix of shape (n, n)
        Symmetric non-negative weights; the diagonal (self-loops) is ignored, as in the graph
        Laplacian of ``scipy.sparse.csgraph.laplacian`` that spectral clustering embeds.
    labels : ndarray of shape (n,)
        Non-negative integer labels.

    Returns
    -------
    float
        ``sum_k (1 - W(A_k, A_k) / vol(A_k))`` over the non-empty clusters with positive
        volume; 0 for a perfect partition of disconnected components.
    """
    W = sp.csr_matrix(W, dtype=np.float64, copy=True)
    W.setdiag(0.0)  # self-loops do not count, as in the Laplacian scikit-learn embeds
    W.eliminate_zeros()
    Z = label_indicator(labels)
    within = np.asarray((Z.T @ W @ Z).diagonal()).ravel()
    vol = np.asarray(Z.T @ np.asarray(W.sum(axis=1)).ravel()).ravel()
    nz = vol > 0
    return float(np.sum(1.0 - within[nz] / vol[nz]))


def _solver(eigen_solver, n, joint=False):
    if eigen_solver == "auto":
        # a joint graph goes to Lanczos on the normalised adjacency (:func:`_joint_embedding`):
        # ARPACK's shift-invert factorises its Laplacian (the sparse LU took 1.0 s against
        # LOBPCG's 0.4 s on the digits tasks' joint graph)
        return "arpack" if n <= ARPACK_MAX_N and not joint else ("lanczos" if joint
                                                                 else "lobpcg")
    return eigen_solver


def _joint_embedding(J, n_components, eigen_solver, random_state):
    """The spectral embedding of a joint graph, as ``spectral_embedding(J, n_components,
    drop_first=False)`` returns it (the normalised Laplacian's eigenvectors of the smallest
    eigenvalues, scaled by ``D^-1/2``, signs fixed).

    ``eigen_solver="auto"``: ARPACK's Lanczos (``scipy.sparse.linalg.eigsh``, regular mode,
    full precision ``tol=0``) for the largest eigenvalues of the normalised adjacency
    ``M = D^-1/2 W D^-1/2`` (diagonal zeroed, as scikit-learn's Laplacian ignores self-loops):
    ``L = I - M`` has the same eigenvectors. On the NG20-1 joint graph (18,846 nodes, 40
    vectors) 2.1 s of CPU against LOBPCG's 3.8 s (scikit-learn's, ``tol`` 6e-4, whose
    subspace is 0.02 rad from the converged one). Small graphs (fewer than ``5 n_components +
    1`` nodes) and the other solvers: scikit-learn's ``spectral_embedding``.
    """
    rng = check_random_state(random_state)
    n = J.shape[0]
    solver = _solver(eigen_solver, n, joint=True)
    if solver != "lanczos" or n < 5 * n_components + 1:
        return spectral_embedding(J, n_components=n_components,
                                  eigen_solver="lobpcg" if solver == "lanczos" else solver,
                                  random_state=rng, drop_first=False)
    lap, dd = csgraph_laplacian(sp.csr_matrix(J, dtype=np.float64), normed=True,
                                return_diag=True)
    M = sp.csr_matrix(-lap)
    M.setdiag(0.0)
    M.eliminate_zeros()
    _, vecs = eigsh(M, k=n_components, which="LA", tol=0.0, v0=rng.uniform(-1, 1, n))
    emb = vecs[:, ::-1] / dd[:, None]  # smallest Laplacian eigenvalue first
    # the sign of every vector: its entry of largest magnitude positive (scikit-learn's rule)
    big = np.argmax(np.abs(emb), axis=0)
    emb *= np.sign(emb[big, np.arange(emb.shape[1])])
    return emb


def spectral_labels(W, n_clusters, *, n_components=None, rows=None, eigen_solver="auto",
                    n_init=10, random_state=None, unit_rows=False):
    """Spectral clustering of a graph: scikit-learn's embedding, then k-means on its rows.

    The steps of ``SpectralClustering(affinity="precomputed", assign_labels="kmeans")``:
    ``sklearn.manifold.spectral_embedding(W, n_components, drop_first=False)`` (the normalised
    Laplacian's eigenvectors scaled by ``D^-1/2``) and ``KMeans(n_clusters, n_init)`` on the
    embedding's rows (only the rows ``rows`` when given). ``unit_rows=True``: every row scaled
    to unit norm first, the algorithm of Ng, Jordan & Weiss (2002) (NJW): their rows are the
    normalised adjacency's eigenvectors ``U`` scaled to unit norm, and the rows of
    ``D^-1/2 U`` have the same directions, since ``D^-1/2`` scales each row by a positive
    number (a row of zeros stays zero).

    Parameters
    ----------
    W : sparse matrix of shape (n, n)
    n_clusters : int
    n_components : int, optional
        Dimension of the embedding (``n_clusters`` when None).
    rows : slice or ndarray, optional
        The nodes to cluster (default: all).
    eigen_solver : {"auto", "arpack", "lobpcg"}, default="auto"
        ``"auto"``: ARPACK up to :data:`ARPACK_MAX_N` nodes, LOBPCG above.
    n_init : int, default=10
    random_state : int, RandomState or None
    unit_rows : bool, default=False
        Scale every row of the embedding to unit norm before k-means (NJW).

    Returns
    -------
    labels : ndarray of shape (n_rows,), int64
    """
    variants = ("unit",) if unit_rows else ("scaled",)
    return _spectral_variants(W, n_clusters, variants, n_components=n_components, rows=rows,
                              eigen_solver=eigen_solver, n_init=n_init,
                              random_state=random_state)[variants[0]]


def _rows_of(maps, variant):
    """The embedding's rows as k-means sees them: as they are (``"scaled"``) or at unit norm
    (``"unit"``, NJW)."""
    return normalize(maps) if variant == "unit" else maps


def _spectral_variants(W, n_clusters, variants, *, n_components=None, rows=None,
                       eigen_solver="auto", n_init=10, random_state=None):
    """``{variant: labels}`` of :func:`spectral_labels` for each of ``variants`` (``"scaled"``,
    ``"unit"``) from one embedding: each k-means starts from the generator's state after the
    embedding, so every variant's labels equal those of its own :func:`spectral_labels` call."""
    rng = check_random_state(random_state)
    n_components = n_clusters if n_components is None else n_components
    # the same seeds, in the same order, as SpectralClustering draws from its random_state
    maps = spectral_embedding(W, n_components=n_components,
                              eigen_solver=_solver(eigen_solver, W.shape[0]),
                              random_state=rng, drop_first=False)
    if rows is not None:
        maps = maps[rows]
    if len(variants) == 1:
        return {variants[0]: _kmeans_labels(_rows_of(maps, variants[0]), n_clusters, n_init,
                                            rng)}
    state = rng.get_state()
    out = {}
    for v in variants:
        km_rng = np.random.RandomState()
        km_rng.set_state(state)
        out[v] = _kmeans_labels(_rows_of(maps, v), n_clusters, n_init, km_rng)
    return out


_OPENMP = None


def _kmeans_labels(maps, n_clusters, n_init, random_state):
    """k-means on the embedding's rows, scikit-learn's OpenMP pool held to one thread: the
    embedding has few columns, and on a loaded machine the pool's threads spent 4.8 s waiting
    on 80 fits of 260 rows that take 0.2 s of CPU."""
    global _OPENMP
    if _OPENMP is None:  # one controller: building one inspects every loaded library (3.5 ms)
        _OPENMP = ThreadpoolController()
    with _OPENMP.limit(limits=1, user_api="openmp"):
        km = KMeans(n_clusters, n_init=n_init, random_state=random_state).fit(maps)
    return km.labels_.astype(np.int64)


def modularity(W, labels):
    """Modularity of a partition of a graph: within-cluster weight beyond chance.

    ``Q = sum_k [W(A_k, A_k) / vol(V) - (vol(A_k) / vol(V))^2]`` (Newman & Girvan): the
    fraction of the edge weight inside the clusters minus the fraction a random graph with
    the same degrees would put there given the same cluster volumes. Unlike the normalised
    cut, whose chance value ``K - 1`` is the same for any cluster sizes, it does not reward a
    partition for cutting off a few loosely attached rows as tiny clusters and lumping the
    rest into one.

    Parameters
    ----------
    W : sparse matrix of shape (n, n)
        Symmetric non-negative weights; the diagonal (self-loops) is ignored, as in
        :func:`normalized_cut`.
    labels : ndarray of shape (n,)
        Non-negative integer labels.

    Returns
    -------
    float
        In ``[-1/2, 1)``; 0 for a single cluster, 0 for a graph without edges.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> W = sp.csr_matrix(np.kron(np.eye(2), np.ones((3, 3))))  # two triangles (and loops)
    >>> round(modularity(W, np.array([0, 0, 0, 1, 1, 1])), 6)
    0.5
    """
    W = sp.csr_matrix(W, dtype=np.float64, copy=True)
    W.setdiag(0.0)
    W.eliminate_zeros()
    total = float(W.sum())
    if total <= 0:
        return 0.0
    Z = label_indicator(labels)
    within = np.asarray((Z.T @ W @ Z).diagonal()).ravel()
    vol = np.asarray(Z.T @ np.asarray(W.sum(axis=1)).ravel()).ravel()
    return float(np.sum(within / total - (vol / total) ** 2))




def within_cluster_unit(Xn, labels):
    """k-means objective per point of a partition of unit-norm rows.

    ``(1/n) sum_i ||x_i - m(label_i)||^2 = (1/n) [sum_i ||x_i||^2 - sum_c ||S_c||^2 / n_c]``
    (``= 1 - (1/n) sum_c ||S_c||^2 / n_c`` for rows of unit norm) with ``S_c`` the sum of
    cluster ``c``'s rows: ``within_cluster_per_point([Xn], [labels], unit_rows=False)``.

    Parameters
    ----------
    Xn : {ndarray, sparse matrix} of shape (n, d)
        Unit-norm rows.
    labels : ndarray of shape (n,)

    Returns
    -------
    float
    """
    return within_cluster_per_point([Xn], [np.asarray(labels, dtype=np.int64)],
                                    unit_rows=False)


def kl_objective(P, labels):
    """kl k-means objective per point of a partition of rows that sum to one.

    ``(1/n) sum_i KL(p_i || m(label_i))`` with ``m(c)`` the mean of cluster ``c``'s rows:
    ``(1/n) [sum_ij p_ij log p_ij - sum_c sum_j S_cj log(S_cj / n_c)]``, exact (a cluster's
    mean is positive wherever one of its rows is), no smoothing.

    Parameters
    ----------
    P : {ndarray, sparse matrix} of shape (n, d)
        Non-negative rows summing to one.
    labels : ndarray of shape (n,)

    Returns
    -------
    float
    """
    S, nk = cluster_sums(P, labels)
    nk = np.maximum(nk, 1.0)
    pos = S > 0
    cross = np.sum(S[pos] * np.log((S / nk[:, None])[pos]))
    data = P.data if sp.issparse(P) else np.asarray(P).ravel()
    data = data[data > 0]
    return float((np.sum(data * np.log(data)) - cross) / P.shape[0])


def base_regret(objectives, chance):
    """Regret of each base's partition over the bases' own objectives, as gains over chance.

    ``objectives[a, c]``: objective ``c`` (smaller is better) of base ``a``'s partition;
    ``chance[c]``: objective ``c`` of a partition without structure. The gain of a partition
    for an objective is ``g = chance - objective``; its regret is the mean over the objectives
    of ``1 - g[a, c] / max_b g[b, c]``, how much of the best gain over chance it gives up (0
    where it is the best partition of that objective; a term is 0 for every partition when
    none beats chance). Scale-free, and no objective decides alone: measured against chance,
    a relative difference of k-means sums of squares (all near the total on sparse text)
    counts as much as one of normalised cuts.

    Parameters
    ----------
    objectives : ndarray of shape (n_bases, n_objectives)
    chance : ndarray of shape (n_objectives,)

    Returns
    -------
    regret : ndarray of shape (n_bases,)
    """
    o = np.asarray(objectives, dtype=np.float64)
    g = np.asarray(chance, dtype=np.float64)[None, :] - o
    top = g.max(axis=0)
    rel = np.where(top > 0, 1.0 - g / np.where(top > 0, top, 1.0), 0.0)
    return np.mean(rel, axis=1)


#: Seed offsets of ``base_rule="consensus"``: every candidate method runs at the task's seed
#: ``s`` (the partition it offers) and at ``s + 100``, ``s + 200`` (its partitions the others
#: are compared with).
CONSENSUS_SEEDS = (0, 100, 200)


def consensus_scores(runs):
    """Consensus score of each candidate method: the mean NMI of its partition with the
    partitions of the other methods.

    ``runs[j][m]`` is method ``m``'s partition at seed ``j`` (``j = 0``: the partition the
    method offers). The score of method ``m`` is
    ``(1 / (M - 1)) sum_{o != m} (1 / J) sum_j NMI(P_m^0, P_o^j)``: the average normalised
    mutual information (Strehl & Ghosh 2002) of its offered partition with the ensemble of the
    other methods' runs, each method weighted equally (:func:`anmi`; NMI with square-root
    normalisation). A method that agrees with the others scores high; its own runs at other
    seeds do not count, so a method is not rewarded for being stable alone.

    Parameters
    ----------
    runs : list of list of ndarray of shape (n,)
        ``J >= 1`` lists of ``M >= 2`` partitions of the same rows, the methods in the same
        order in every list.

    Returns
    -------
    scores : ndarray of shape (M,)

    Examples
    --------
    >>> a, b = [0, 0, 1, 1], [0, 1, 0, 1]
    >>> consensus_scores([[a, a, b]]).round(3).tolist()
    [0.5, 0.5, 0.0]
    """
    if len(runs) == 0:
        raise ValueError("runs must give the same two or more methods at every seed; got no seed.")
    J, M = len(runs), len(runs[0])
    if M < 2 or any(len(r) != M for r in runs):
        raise ValueError("runs must give the same two or more methods at every seed.")
    out = np.empty(M)
    for m in range(M):
        others = [runs[j][o] for o in range(M) if o != m for j in range(J)]
        out[m] = anmi(runs[0][m], others)
    return out


#: The single-task bases of ``SpectralMTC(base="auto")``, in order of preference on ties.
BASES = ("spectral", "spherical", "kl")


class SpectralMTC(MultiTaskMixin, ClusterMixin, BaseEstimator):
    """Multi-task spectral clustering on cosine kNN graphs, base and coupling chosen without labels.

    Each task is clustered by spectral clustering (normalised cut relaxation) on its own
    cosine k-nearest-neighbour graph, with the other tasks' rows entering through
    ``transfer`` at strength ``coupling``. ``base="auto"`` (the default) first chooses, per
    task and without labels, between that spectral clustering and two k-means
    (squared-Euclidean on the unit rows, kl on the rows scaled to sum one): the partition of
    largest modularity on the task's own kNN graph (:func:`modularity`); only tasks that keep
    the spectral base are coupled. ``base="spectral", coupling=0`` is scikit-learn's
    ``SpectralClustering(affinity="nearest_neighbors")`` on every task's unit-norm rows, with
    the same labels for the same ``random_state``.

    Parameters
    ----------
    n_clusters : int or list of int, default=8
        Clusters per task (one int for every task, or one per task).
    base : {"auto", "spectral", "spherical", "kl"}, default="auto"
        The single-task clusterer of every task: ``"spectral"`` (normalised cut on the cosine
        kNN graph), ``"spherical"`` (:class:`~bregclust.BregmanKMeans` on the unit-norm
        rows), ``"kl"`` (kl :class:`~bregclust.BregmanKMeans` on the rows scaled to sum one).
        ``"auto"``: all three (``"kl"`` only when every row is non-negative with a positive
        sum), and per task the partition ``base_rule`` prefers. Only tasks on the spectral
        base are coupled.
    base_rule : {"modularity", "gain", "consensus"}, default="modularity"
        How ``base="auto"`` chooses. ``"modularity"``: the partition of largest modularity on
        the task's own cosine kNN graph (:func:`modularity`: within-cluster edge weight beyond
        what chance gives for the same cluster volumes; every base judged on the same graph).
        ``"gain"``: the partition whose regret over the three objectives - normalised cut on
        the task's graph, k-means sum of squares on unit rows, kl k-means objective, each as a
        gain over chance - is smallest (:func:`base_regret`). ``"consensus"``: the candidate
        partition that agrees most with the other candidates (:func:`consensus_scores`: its
        mean NMI with their runs at the task's seed and two more, :data:`CONSENSUS_SEEDS`);
        the candidates are the spectral partitions of the rows ``spectral_rows`` names
        (``"both"``: scaled and unit rows, the setting measured for issue 38) and the two
        k-means, so the rule also chooses each task's spectral rows. It fits every candidate
        three times. None of the three matches the better base on every task of
        ``benchmarks/mtc_compare.py`` (see the guide).
    coupling : float or "auto", default="auto"
        ``mu >= 0``, the weight of the transferred edges relative to a task's own graph (both
        scaled to the same total weight). ``"auto"``: fit every value of ``coupling_grid`` and
        keep for each task the partition with the smallest normalised cut on the task's own
        graph (ties to the smaller value) among those that agree with the single-task
        partition (``min_agreement``).
    coupling_grid : tuple of float, default=(0.02, 0.05, 0.1)
        Candidates of ``coupling="auto"``; ``0`` (no coupling) is always added. Small values:
        the transferred edges perturb a task's own graph, they do not replace it (at 0.25 and
        above both transfers lost to the single-task partition on the digits, tr11 and WebKB4
        tasks, see ``docs/guide/spectral_mtc.rst``).
    transfer : {"joint", "instance"}, default="joint"
        ``"instance"``: task ``t``'s graph gains the two-step links through the other tasks'
        rows (:func:`transfer_graph`); ``"joint"``: one graph over all tasks with ``coupling``
        times the cross-task kNN graphs, embedded in ``sum_t K_t`` dimensions
        (:func:`cross_task_graph`).
    guard : {"pareto", "agreement"}, default="pareto"
        ``coupling="auto"``: which coupled partitions may replace a task's single-task
        spectral partition. ``"agreement"``: those that agree with it (``min_agreement``);
        ``"pareto"``: those that also have no larger k-means sum of squares on the task's
        unit rows (:func:`within_cluster_unit`), so that a smaller cut bought by drifting away
        from the rows' geometry does not replace it (the Comp.vs.Sci and OHSCAL task-2
        losses of the coupling against its own base, see the guide).
    min_agreement : float, default=0.5
        ``coupling="auto"`` only considers, for task ``t``, the candidates whose partition has
        an adjusted Rand index of at least this with the single-task partition (coupling 0):
        the transfer may refine a task's partition, not replace it. Added after the normalised
        cut alone kept a coupled partition of Rec.vs.Talk task 2 unrelated to its single-task
        one (NMI .12 against .70); 0.5 was set once, not tuned. ``-1`` disables the guard.
    n_neighbors : int, default=10
        Neighbours of every row in its own task and in every other task.
    eigen_solver : {"auto", "arpack", "lobpcg"}, default="auto"
        ``"auto"``: a task's own graph by ARPACK up to 3,000 nodes and LOBPCG above (the rule
        of the NCut baseline), the joint graph by ARPACK's Lanczos iteration (regular mode, no
        factorisation) on its normalised adjacency.
    n_init : int, default=10
        k-means restarts on the embedding.
    kmeans_coupling : {"none", "mbc"}, default="none"
        What happens to the tasks that keep a k-means base. ``"none"``: they keep their
        single-task partition. ``"mbc"``: per k-means base kept by some task, one
        :class:`~bregclust.MultitaskBregmanClustering` (``lam="auto"``, ``guard="task"``) over
        all tasks in that base's geometry, started from every task's partition of that base;
        a task on that base takes the coupled partition when MBC's guard kept it and its
        modularity on the task's own graph is not below that of its base partition (see the
        guide).
    spectral_rows : {"scaled", "unit", "both"}, default="scaled"
        The rows of a spectral embedding (a task's own, and a task's rows of every joint one)
        that k-means clusters. ``"scaled"``: as scikit-learn's ``spectral_embedding`` returns
        them (the normalised Laplacian's eigenvectors scaled by ``D^-1/2``, the rows of
        ``SpectralClustering``). ``"unit"``: every row scaled to unit norm first, the algorithm
        of Ng, Jordan & Weiss (2002) (:func:`spectral_labels` with ``unit_rows=True``).
        ``"both"``: per task, the single-task spectral partition of larger :func:`modularity`
        on the task's own graph (ties to ``"scaled"``) is its spectral base, and that task's
        rows of the joint embeddings are clustered the same way.
    input : {"features", "counts"}, default="features"
        What the rows of ``Xs`` are. ``"features"``: every graph and base works on the rows
        as given (the cosine graph and ``"spherical"`` on their unit-norm rows, ``"kl"`` on
        them scaled to sum one; tf-idf rows for text). ``"counts"``: raw, non-negative term
        counts; the estimator computes tf-idf itself (scikit-learn's ``TfidfTransformer``
        with its defaults, idf fitted on all tasks stacked, rows of unit l2 norm: the
        ``tfidf`` representation of ``benchmarks/mtc_compare.py``) for the graphs and the
        ``"spectral"`` and ``"spherical"`` bases, and runs the ``"kl"`` base (and
        ``kmeans_coupling="mbc"`` in kl geometry) on the term frequencies, the counts scaled
        to sum one, where kl k-means is at its strongest. ``predict`` and ``score`` then take
        counts too and apply the fitted idf. Opt-in: tf-idf rows given as counts would be
        weighted twice (see the guide).
    random_state : int, RandomState or None, default=None
    verbose : bool, default=False
        Print the normalised cut of every task at every candidate coupling.

    Attributes
    ----------
    labels_ : list of ndarray of shape (n_t,)
    n_clusters_ : list of int
    coupling_ : list of float
        The coupling each task kept (0 for a task not on the spectral base).
    ncut_ : ndarray of shape (n_candidates, n_tasks)
        Normalised cut of every task's partition on its own graph, per candidate coupling.
    within_ : ndarray of shape (n_candidates, n_tasks)
        k-means sum of squares per point on the unit rows of every candidate partition.
    base_ : list of str
        The base each task kept.
    bases_ : tuple of str
        The bases compared (one with a fixed ``base``).
    base_objectives_ : list of ndarray of shape (n_bases, n_bases)
        Per task, ``[a, c]``: objective of base ``c`` (in the order of ``bases_``) of base
        ``a``'s partition.
    base_chance_ : list of ndarray of shape (n_bases,)
        Per task, each objective without structure (:func:`base_regret`): ``K - 1`` for the
        normalised cut, the one-cluster value for the two k-means objectives.
    base_regret_ : ndarray of shape (n_tasks, n_bases)
        :func:`base_regret` of each base's partition per task.
    base_modularity_ : ndarray of shape (n_tasks, n_bases)
        :func:`modularity` of each base's partition on the task's own graph (NaN with a fixed
        ``base``).
    consensus_candidates_ : tuple of str
        With ``base_rule="consensus"`` (and ``base="auto"``), the candidates in the order of
        ``base_consensus_``'s columns (``"spectral-scaled"``, ``"spectral-unit"``,
        ``"spherical"``, ``"kl"``, as fitted); empty otherwise.
    base_consensus_ : ndarray of shape (n_tasks, n_candidates)
        :func:`consensus_scores` of every candidate per task (no columns without the rule).
    kmeans_coupled_ : list of bool
        Per task, whether it took the coupled k-means partition (``kmeans_coupling="mbc"``).
    kmeans_lam_ : list of float
        The MBC coupling ``lam_`` of the tasks that took it (0 for the others).
    kmeans_refusal_ : list of {str, None}
        Per task on a k-means base, why it did not take the coupled partition: ``"empty"``
        (its partition leaves a cluster empty, so it took no part), ``"alone"`` (fewer than two
        tasks could take part), ``"lam0"`` (MBC chose no coupling), ``"mbc-guard"`` (MBC's task
        guard gave it the independent fit), ``"modularity"`` (the coupled partition lowers its
        modularity); None for a task that took it, a task on the spectral base, and with
        ``kmeans_coupling="none"``.
    kmeans_modularity_ : ndarray of shape (n_tasks,)
        :func:`modularity` of the coupled k-means partition of each task on a k-means base
        (NaN for the others and with ``kmeans_coupling="none"``).
    kmeans_coupled_labels_ : list of {ndarray of shape (n_t,), None}
        MBC's partition of each task on a k-means base, kept or not (None for the others).
    labels_without_kmeans_coupling_ : list of ndarray of shape (n_t,)
        The labels ``kmeans_coupling="none"`` gives (same seeds).
    spectral_rows_ : list of str
        Per task, ``"scaled"`` or ``"unit"``: the rows of the spectral embeddings its spectral
        partitions come from (``spectral_rows``; with ``"both"`` the one it kept: by
        modularity, or with ``base_rule="consensus"`` the rule's pick for a task it keeps on
        the spectral base).
    spectral_modularity_ : ndarray of shape (n_tasks, 2)
        :func:`modularity` of the single-task spectral partition from scaled and from unit
        rows (NaN for the variant not fitted: only ``"both"`` fits the two).
    agreement_ : ndarray of shape (n_candidates, n_tasks)
        Adjusted Rand index of every candidate partition with the task's single-task one
        (with ``coupling="auto"``; for a fixed coupling the one candidate, so all ones).
    couplings_ : ndarray of shape (n_candidates,)
        The candidates (``[coupling]`` when a number was given).
    labels_per_coupling_ : list of list of ndarray
        ``labels_per_coupling_[i][t]``: task ``t``'s spectral partition at ``couplings_[i]``
        (at 0: the single-task spectral clustering). Only coupling 0 is fitted when no task
        keeps the spectral base.
    objective_history_ : ndarray of shape (1,)
        The sum over tasks of the kept partitions' normalised cuts on their own graphs (the
        method has no iterations).
    affinity_matrices_ : list of sparse matrices
        The tasks' own graphs ``W_t``.
    n_tasks_, n_features_in_ : int
    tfidf_ : sklearn.feature_extraction.text.TfidfTransformer or None
        With ``input="counts"``, the transformer fitted on all tasks' counts stacked (its
        ``idf_``); None otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> from bregclust.spectral_mtc import SpectralMTC
    >>> rng = np.random.default_rng(0)
    >>> Xs = [np.vstack([rng.normal([5, 0, 0], 1, (30, 3)), rng.normal([0, 5, 0], 1, (30, 3))])
    ...       for _ in range(2)]
    >>> est = SpectralMTC(2, n_neighbors=5, random_state=0).fit(Xs)
    >>> [np.bincount(lab).tolist() for lab in est.labels_]
    [[30, 30], [30, 30]]
    """

    _parameter_constraints = {
        "coupling": [Interval(numbers.Real, 0.0), Options("auto")],
        "transfer": [Options("joint", "instance")],
        "n_neighbors": [Interval(numbers.Integral, 1)],
        "eigen_solver": [Options("auto", "arpack", "lobpcg")],
        "n_init": [Interval(numbers.Integral, 1)],
        "min_agreement": [Interval(numbers.Real, -1.0, 1.0)],
        "base": [Options("auto", *BASES)],
        "base_rule": [Options("modularity", "gain", "consensus")],
        "guard": [Options("pareto", "agreement")],
        "kmeans_coupling": [Options("none", "mbc")],
        "spectral_rows": [Options("scaled", "unit", "both")],
        "input": [Options("features", "counts")],
        "verbose": [BOOLEAN, Interval(numbers.Integral, 0)],
    }

    def __init__(self, n_clusters=8, *, base="auto", base_rule="modularity", coupling="auto",
                 coupling_grid=(0.02, 0.05, 0.1), transfer="joint", guard="pareto",
                 min_agreement=0.5, n_neighbors=10, eigen_solver="auto", n_init=10,
                 kmeans_coupling="none", spectral_rows="scaled", input="features",
                 random_state=None, verbose=False):
        self.n_clusters = n_clusters
        self.input = input
        self.spectral_rows = spectral_rows
        self.kmeans_coupling = kmeans_coupling
        self.base = base
        self.base_rule = base_rule
        self.guard = guard
        self.coupling = coupling
        self.coupling_grid = coupling_grid
        self.transfer = transfer
        self.min_agreement = min_agreement
        self.n_neighbors = n_neighbors
        self.eigen_solver = eigen_solver
        self.n_init = n_init
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------------ validation
    def _candidates(self):
        if not isinstance(self.coupling, str):
            return np.array([float(self.coupling)])
        grid = self.coupling_grid
        if isinstance(grid, (str, bytes)) or not hasattr(grid, "__len__") or len(grid) == 0:
            raise TypeError(f"coupling_grid must be a non-empty sequence of numbers >= 0, got "
                            f"{grid!r}.")
        vals = []
        for v in grid:
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not np.isfinite(v) \
                    or v < 0:
                raise ValueError(f"coupling_grid must hold finite numbers >= 0, got {v!r}.")
            vals.append(float(v))
        return np.unique([0.0] + vals)

    def _score_criterion(self, Xs, labels):
        """``score``'s criterion: each task's within-cluster sum of squares per point on
        unit-norm rows (the geometry of the cosine graph; of the tf-idf rows with
        ``input="counts"``)."""
        if self.input == "counts":
            Xs = [self.tfidf_.transform(_tame_rows(_check_counts(X, f"task {t}")))
                  for t, X in enumerate(Xs)]
        return within_cluster_per_point(Xs, labels, unit_rows=True)

    # ------------------------------------------------------------------------------- fit
    @fit_callbacks
    def fit(self, Xs, y=None):
        """Cluster every task.

        Parameters
        ----------
        Xs : list of {array-like, sparse matrix} of shape (n_t, n_features)
            Two or more tasks over one feature space.
        y : None
            Ignored.

        Returns
        -------
        self : SpectralMTC
        """
        self._validate_params()
        Xs = check_tasks(Xs, min_samples=2)
        given = Xs
        Xs = [_tame_rows(X) for X in Xs]
        T = len(Xs)
        if T < 2:
            raise ValueError(f"SpectralMTC needs at least two tasks, got {T}; for one task use "
                             "sklearn.cluster.SpectralClustering.")
        # Xkl: the rows the "kl" base scales to sum one (term frequencies with input="counts")
        self.tfidf_ = None
        Xkl = Xs
        if self.input == "counts":
            Xkl = [_check_counts(X, f"task {t}") for t, X in enumerate(Xs)]
            # tf-idf exactly as mtc_compare's "tfidf": idf fitted on all tasks stacked, rows
            # of unit l2 norm; per-task transform = the stacked transform's rows (row-wise)
            self.tfidf_ = TfidfTransformer().fit(
                sp.vstack([sp.csr_matrix(X) for X in Xkl]).tocsr())
            Xs = [self.tfidf_.transform(X) for X in Xkl]
        sizes = [X.shape[0] for X in Xs]
        ks = check_n_clusters_per_task(self.n_clusters, sizes)
        mus = self._candidates()
        if isinstance(self.random_state, numbers.Integral) and not isinstance(
                self.random_state, bool):
            # an int seeds every task alike, as SpectralClustering(random_state=int) per task
            seeds = np.full(T, int(self.random_state))
        else:
            seeds = check_random_state(self.random_state).randint(np.iinfo(np.int32).max,
                                                                  size=T)
        Ws = [task_graph(X, self.n_neighbors) for X in Xs]
        variants = ("scaled", "unit") if self.spectral_rows == "both" else (self.spectral_rows,)
        rows_t, single, spec = [], [], []
        self.spectral_modularity_ = np.full((T, 2), np.nan)
        for t in range(T):
            lab = _spectral_variants(Ws[t], ks[t], variants, eigen_solver=self.eigen_solver,
                                     n_init=self.n_init, random_state=int(seeds[t]))
            spec.append(lab)
            for j, v in enumerate(("scaled", "unit")):
                if v in lab and len(variants) > 1:
                    self.spectral_modularity_[t, j] = modularity(Ws[t], lab[v])
            # "both": the larger modularity on the task's own graph, ties to "scaled"
            v = ("unit" if self.spectral_modularity_[t, 1] > self.spectral_modularity_[t, 0]
                 + 1e-12 else "scaled") if len(variants) > 1 else variants[0]
            rows_t.append(v)
            single.append(lab[v])
        bases, base_obj, base_chance, chosen, base_labels, base_mod, base_cands, cons_rows = \
            self._choose_bases(Xs, Ws, ks, seeds, single, spec, variants, Xkl)
        if cons_rows is not None:  # base_rule="consensus" also chose the rows
            for t, v in enumerate(cons_rows):
                if v is not None:
                    rows_t[t], single[t] = v, spec[t][v]
        spectral_tasks = [t for t in range(T) if chosen[t] == "spectral"]
        if not spectral_tasks:
            mus = mus[:1] if mus[0] == 0 else mus  # nothing to couple: no joint graph
        cand_labels = np.empty((mus.size, T), dtype=object)
        for i, mu in enumerate(mus):
            if mu == 0:
                for t in range(T):
                    cand_labels[i, t] = single[t]
        if self.transfer == "instance":
            for i, mu in enumerate(mus):
                if mu == 0:
                    continue
                for t in range(T):
                    if t not in spectral_tasks:  # only tasks on the spectral base couple
                        cand_labels[i, t] = single[t]
                        continue
                    H = transfer_graph(Xs, t, self.n_neighbors, Ws[t])
                    cand_labels[i, t] = spectral_labels(
                        sp.csr_matrix(Ws[t] + mu * H), ks[t], eigen_solver=self.eigen_solver,
                        n_init=self.n_init, random_state=int(seeds[t]),
                        unit_rows=rows_t[t] == "unit")
        elif np.any(mus > 0):
            cross = _cross_blocks(Xs, Ws, self.n_neighbors)
            starts = np.concatenate([[0], np.cumsum(sizes)])
            for i, mu in enumerate(mus):
                if mu == 0:
                    continue
                J = joint_graph(Xs, mu, self.n_neighbors, Ws=Ws, cross=cross)
                # one embedding of the joint graph, k-means on each task's rows of it
                maps = _joint_embedding(J, min(sum(ks), J.shape[0]), self.eigen_solver,
                                        int(seeds[0]))
                for t in range(T):
                    cand_labels[i, t] = _kmeans_labels(
                        _rows_of(maps[starts[t]:starts[t + 1]], rows_t[t]), ks[t],
                        self.n_init, int(seeds[t]))
        units = [_unit(X) for X in Xs]
        ncut = np.array([[normalized_cut(Ws[t], cand_labels[i, t]) for t in range(T)]
                         for i in range(mus.size)])
        within = np.array([[within_cluster_unit(units[t], cand_labels[i, t]) for t in range(T)]
                           for i in range(mus.size)])
        # a candidate is eligible for task t when its partition agrees with the single-task
        # one (ARI >= min_agreement): the transfer may refine a task's partition, not replace it
        agreement = np.array([[adjusted_rand_score(cand_labels[0, t], cand_labels[i, t])
                               for t in range(T)] for i in range(mus.size)])
        eligible = agreement >= self.min_agreement
        if self.guard == "pareto":
            # ... and when it is no worse than the single-task partition for the k-means
            # criterion on the unit rows either: a smaller cut alone does not replace it
            eligible &= within <= within[0] * (1.0 + 1e-12)
        eligible[0] = True
        best = [int(np.argmin(np.where(eligible[:, t], ncut[:, t], np.inf)))
                if t in spectral_tasks else 0 for t in range(T)]
        if self.verbose:
            for i, mu in enumerate(mus):
                print(f"SpectralMTC coupling {mu:g}: normalised cut per task "
                      + " / ".join(f"{v:.4f}" for v in ncut[i]))
            print("SpectralMTC base per task: " + ", ".join(chosen))
            print("SpectralMTC spectral rows per task: " + ", ".join(rows_t))
        labels = [cand_labels[best[t], t] if chosen[t] == "spectral" else base_labels[t]
                  for t in range(T)]
        self.kmeans_coupled_ = [False] * T
        self.kmeans_lam_ = [0.0] * T
        self.kmeans_refusal_ = [None] * T
        self.kmeans_modularity_ = np.full(T, np.nan)
        self.kmeans_coupled_labels_ = [None] * T
        if self.kmeans_coupling == "mbc":
            labels = self._couple_kmeans(Xs, Ws, ks, seeds, chosen, base_cands, labels, Xkl)
            if self.verbose:
                print("SpectralMTC k-means bases coupled: "
                      + ", ".join(f"task {t} lam {self.kmeans_lam_[t]:g}"
                                  for t in range(T) if self.kmeans_coupled_[t]))
        self.couplings_ = mus
        self.spectral_rows_ = rows_t
        self.labels_per_coupling_ = [list(cand_labels[i]) for i in range(mus.size)]
        self.ncut_ = ncut
        self.within_ = within
        self.agreement_ = agreement
        self.coupling_ = [float(mus[b]) if chosen[t] == "spectral" else 0.0
                          for t, b in enumerate(best)]
        self.bases_ = bases
        self.base_ = chosen
        self.labels_without_kmeans_coupling_ = [
            cand_labels[best[t], t] if chosen[t] == "spectral" else base_labels[t]
            for t in range(T)]
        self.base_objectives_ = base_obj
        self.base_chance_ = base_chance
        self.base_modularity_ = base_mod
        self.base_regret_ = np.array([base_regret(o, c) for o, c in zip(base_obj, base_chance)])
        self.n_clusters_ = ks
        self.affinity_matrices_ = Ws
        self._fit_tasks = units
        self._set_fitted_tasks(given, labels, [float(sum(normalized_cut(Ws[t], labels[t])
                                                      for t in range(T)))])
        return self

    def _couple_kmeans(self, Xs, Ws, ks, seeds, chosen, cands, labels, Xkl):
        """``kmeans_coupling="mbc"``: the tasks that keep a k-means base, coupled in the manner
        of MBC and kept under a guard (see the class docstring); returns the labels.

        For each k-means base ``b`` kept by at least one task, one
        :class:`~bregclust.MultitaskBregmanClustering` (``lam="auto"``, ``guard="task"``) runs
        over **all** tasks in ``b``'s geometry (squared Euclidean on the unit rows for
        ``"spherical"``, kl on the rows ``Xkl`` scaled to sum one for ``"kl"``), started from every
        task's ``b`` partition (the other tasks are the partners of the transport coupling);
        a task whose ``b`` partition leaves a cluster empty takes no part (MBC cannot start
        from it), and nothing is coupled when fewer than two tasks take part.
        A task on base ``b`` takes the coupled partition only when its modularity on the task's
        own graph is not below that of its ``b`` partition (the rule's criterion); MBC's task
        guard has already kept its own k-means objective at most that of the independent fit
        from the same start.
        """
        from .mbc import MultitaskBregmanClustering  # an optional step: imported when used

        T = len(Xs)
        labels = list(labels)
        for b in ("spherical", "kl"):
            # MBC starts from labels only when they fill every cluster (no smoothing on the
            # unit rows): a task whose partition leaves a cluster empty takes no part
            if b not in chosen:
                continue
            part = [t for t in range(T) if np.unique(cands[t][b]).size == ks[t]]
            tasks = [t for t in part if chosen[t] == b]
            for t in range(T):
                if chosen[t] == b:
                    self.kmeans_refusal_[t] = "alone" if t in part else "empty"
            if not tasks or len(part) < 2:
                continue
            if b == "spherical":
                data, div = [_unit(Xs[t]) for t in part], "sqeuclidean"
            else:
                data, div = [normalize(Xkl[t], norm="l1") for t in part], "kl"
            mbc = MultitaskBregmanClustering(
                [ks[t] for t in part], divergence=div, lam="auto", guard="task",
                init=[cands[t][b] for t in part], random_state=int(seeds[0])).fit(data)
            for t in tasks:
                i = part.index(t)
                coupled = np.asarray(mbc.labels_[i], dtype=np.int64)
                self.kmeans_coupled_labels_[t] = coupled
                q = modularity(Ws[t], coupled)
                self.kmeans_modularity_[t] = q
                # MBC's task guard already gave a task whose own objective rose the independent
                # fit (guarded_): that is not a coupled partition
                if not mbc.lam_ > 0:
                    self.kmeans_refusal_[t] = "lam0"
                elif mbc.guarded_[i]:
                    self.kmeans_refusal_[t] = "mbc-guard"
                elif q < modularity(Ws[t], labels[t]) - 1e-12:
                    self.kmeans_refusal_[t] = "modularity"
                else:
                    labels[t] = coupled
                    self.kmeans_coupled_[t] = True
                    self.kmeans_lam_[t] = float(mbc.lam_)
                    self.kmeans_refusal_[t] = None
        return labels

    def _choose_bases(self, Xs, Ws, ks, seeds, single, spec, variants, Xkl):
        """Per task, the single-task base ``base_rule`` prefers (largest :func:`modularity`,
        smallest :func:`base_regret`, or the consensus choice of :func:`consensus_scores`,
        which also chooses the spectral rows among ``variants``: the last value returned, per
        task the chosen variant or None, or None for the other rules).
        ``Xkl``: the rows of the ``"kl"`` base (``Xs`` itself, or the counts)."""
        # kl k-means needs non-negative rows with a positive sum (counts, tf-idf, pixels)
        simplex = all((X.data if sp.issparse(X) else np.asarray(X)).min(initial=0.0) >= 0
                      and np.all(np.asarray(abs(X).sum(axis=1)).ravel() > 0) for X in Xkl)
        if self.base == "kl" and not simplex:
            raise ValueError("base='kl' needs non-negative rows with a positive sum in every "
                             "task; use base='spherical' or 'spectral' for other data.")
        if self.base != "auto":
            bases = (self.base,)
        else:
            bases = BASES if simplex else BASES[:2]
        chosen, labels, objs, chance, cands = [], [], [], [], []
        mods = [[np.nan] * len(bases) for _ in Xs]
        consensus = self.base_rule == "consensus" and len(bases) > 1
        rows = [None] * len(Xs) if consensus else None
        names = [f"spectral-{v}" for v in variants] + list(bases[1:])
        self.consensus_candidates_ = tuple(names) if consensus else ()
        self.base_consensus_ = np.full((len(Xs), len(names)), np.nan) if consensus else \
            np.full((len(Xs), 0), np.nan)
        for t, X in enumerate(Xs):
            cand = {b: single[t] if b == "spectral" else
                    self._kmeans_base(b, Xkl[t] if b == "kl" else X, ks[t], int(seeds[t]))
                    for b in bases}
            cands.append(cand)
            if len(bases) == 1:
                objs.append(np.zeros((1, 1)))
                chance.append(np.zeros(1))
                chosen.append(bases[0])
                labels.append(cand[bases[0]])
                continue
            if consensus:
                own = [spec[t][v] for v in variants] + [cand[b] for b in bases[1:]]
                runs = [own]
                for j in CONSENSUS_SEEDS[1:]:  # the same methods at other seeds
                    sub = (int(seeds[t]) + j) % (2 ** 31 - 1)
                    lab = _spectral_variants(Ws[t], ks[t], variants,
                                             eigen_solver=self.eigen_solver, n_init=self.n_init,
                                             random_state=sub)
                    runs.append([lab[v] for v in variants]
                                + [self._kmeans_base(b, Xkl[t] if b == "kl" else X, ks[t], sub)
                                   for b in bases[1:]])
                score = consensus_scores(runs)
                self.base_consensus_[t] = score
                i = int(np.flatnonzero(score >= score.max() - 1e-12)[0])  # ties: earlier
                if i < len(variants):
                    rows[t] = variants[i]
                    cand["spectral"] = spec[t][variants[i]]
                    b = "spectral"
                else:
                    b = bases[1 + i - len(variants)]
            Xn = _unit(X)
            P = normalize(Xkl[t], norm="l1") if "kl" in bases else None
            crit = {"spectral": lambda lab: normalized_cut(Ws[t], lab),
                    "spherical": lambda lab: within_cluster_unit(Xn, lab),
                    "kl": lambda lab: kl_objective(P, lab)}
            # chance: a normalised cut of K - 1 (a random partition into K equal parts keeps
            # 1/K of every cluster's volume inside), the k-means objectives of one cluster
            one = np.zeros(X.shape[0], dtype=np.int64)
            ref = {"spectral": ks[t] - 1.0, "spherical": within_cluster_unit(Xn, one),
                   "kl": kl_objective(P, one) if P is not None else 0.0}
            o = np.array([[crit[c](cand[b]) for c in bases] for b in bases])
            objs.append(o)
            chance.append(np.array([ref[c] for c in bases]))
            mods[t] = [modularity(Ws[t], cand[b]) for b in bases]
            if consensus:
                chosen.append(b)
                labels.append(cand[b])
                continue
            if self.base_rule == "gain":
                r = base_regret(o, chance[-1])
            else:  # the largest modularity on the task's own graph
                r = -np.asarray(mods[t])
            # ties (two bases giving one partition) to the earlier base of BASES
            b = bases[int(np.flatnonzero(r <= r.min() + 1e-9)[0])]
            chosen.append(b)
            labels.append(cand[b])
        return bases, objs, chance, chosen, labels, np.array(mods), cands, rows

    @staticmethod
    def _kmeans_base(b, X, k, seed):
        """The partition of one k-means base (``"spherical"``: squared Euclidean on the unit
        rows; ``"kl"``: kl on the rows scaled to sum one)."""
        if b == "spherical":
            return BregmanKMeans(k, random_state=seed).fit(_unit(X)).labels_.astype(np.int64)
        return BregmanKMeans(k, divergence="kl", random_state=seed).fit(
            normalize(X, norm="l1")).labels_.astype(np.int64)

    def predict(self, X, task=None):
        """Cluster of new rows of task ``task``: the label of the most similar training row.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows of the kind fitted (raw counts with ``input="counts"``).
        task : int, optional
            Which task's training rows to use; required when there are several tasks.

        Returns
        -------
        labels : ndarray of shape (n_samples,), int64
        """
        t = self._check_task(task)
        check_is_fitted(self, "labels_")
        X = _tame_rows(self._check_X(X))
        if self.input == "counts":  # the fitted idf, as for the training tasks
            X = self.tfidf_.transform(_check_counts(X, "X"))
        nn = NearestNeighbors(n_neighbors=1).fit(self._fit_tasks[t])
        idx = nn.kneighbors(_unit(X), return_distance=False)[:, 0]
        return self.labels_[t][idx]
