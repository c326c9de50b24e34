"""Learning a kernel for multi-task clustering: LNKMTC and LSKMTC (Gu, Li & Han, AAAI 2011).

All ``n = sum_k n_k`` points of the ``m`` tasks are stacked in task order. The learned kernel
``K`` (``n x n``) minimises

    tr(L K) + C tr(S K)      subject to  0 <= K <= I,  tr K = b                 (paper Eq. 10)

where ``L`` is the normalised Laplacian of a k-nearest-neighbour graph built within each task
(Eq. 9) and ``tr(S K)`` is the sum over task pairs of the squared maximum mean discrepancy
(Eq. 5-6). Nothing here forms an ``n x n`` dense matrix:

* ``S = E (m I - 1 1^T) E^T`` with ``E[:, k] = 1{x in task k} / n_k`` is applied as a rank
  ``m - 1`` operator in ``O(n m)`` (:func:`mmd_operator`);
* the graph (:func:`task_knn_graph`) and ``L`` (:func:`normalized_laplacian`) are sparse,
  block-diagonal by task;
* the few eigenpairs needed come from ARPACK (or LOBPCG) on a ``LinearOperator``, after the
  repeated zero eigenvalue that a within-task graph always has (one per connected component)
  is deflated exactly from the graph's components (Lanczos alone returns too few copies);
* the learned kernel is kept as its factor ``F = V diag(sqrt(w))`` (``n x r``), and kernel
  k-means on ``K = F F^T`` is Euclidean k-means on the rows of ``F`` (:class:`BregmanKMeans`).

See :doc:`/guide/kernel_mtc` for the restated mathematics.
"""

import functools
import numbers
import warnings

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import LinearOperator, eigsh, lobpcg
from sklearn import config_context
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from . import _conditioning, _pruned
from . import _execution as E
from ._callbacks import fit_callbacks
from ._centroid import lloyd, reported_objective
from ._conditioning import exponent, for_assignment, unit_rows
from ._multitask import (
    BOOLEAN,
    Interval,
    MultiTaskMixin,
    Options,
    check_n_clusters_per_task,
    nearest_center_labels,
    parse_init,
    within_cluster_per_point,
)
from ._progress import progress
from ._smoothing import resolve_smoothing
from ._sources import as_source
from ._validation import (
    DomainError,
    EmptyClusterWarning,
    check_array,
    check_finite,
    check_n_clusters,
    check_scalar,
    check_tasks,
    user_stacklevel,
)
from .divergences import Divergence, get_divergence
from .kmeans import BregmanKMeans

__all__ = [
    "NonparametricKernelMTC",
    "SpectralKernelMTC",
    "LNKMTC",
    "LSKMTC",
    "task_knn_graph",
    "normalized_laplacian",
    "mmd_operator",
    "mmd_trace",
    "smallest_eigenpairs",
    "nonparametric_kernel_weights",
    "spectral_kernel_weights",
    "kernel_kmeans",
    "single_task_objective",
    "factor_kernel_kmeans",
    "normalize_factor_rows",
]

_EIGEN_SOLVERS = ("auto", "arpack", "lobpcg", "dense")
_WORKING_MEMORY_MB = 16  # row-chunk budget of the kNN searches


# ----------------------------------------------------------------------------- task bookkeeping
def _task_sizes(task_sizes):
    sizes = np.asarray(task_sizes)
    if sizes.ndim != 1 or sizes.size == 0:
        raise ValueError(f"task_sizes must be a non-empty 1-D sequence, got shape {sizes.shape}.")
    if not np.issubdtype(sizes.dtype, np.integer) or (sizes < 1).any():
        raise ValueError(f"task_sizes must be positive integers, got {task_sizes!r}.")
    return sizes.astype(np.int64)


def _split(a, sizes):
    """Split the stacked rows ``a`` into one block per task."""
    return np.split(a, np.cumsum(sizes)[:-1])


# ----------------------------------------------------------------------------- the MMD operator
def _apply_S(V, sizes, starts):
    """``S @ V`` for ``S = E (m I - 1 1^T) E^T`` in ``O(n m p)``; ``V`` is (n,) or (n, p)."""
    one_d = V.ndim == 1
    V2 = V[:, None] if one_d else V
    means = np.add.reduceat(V2, starts, axis=0) / sizes[:, None]       # E^T V      (m, p)
    Z = sizes.size * means - means.sum(axis=0, keepdims=True)          # (mI - 11^T) E^T V
    out = np.repeat(Z / sizes[:, None], sizes, axis=0)                 # E (...)    (n, p)
    return out[:, 0] if one_d else out


def mmd_operator(task_sizes):
    """The matrix ``S`` of the paper's Eq. 6 as a symmetric rank ``m - 1`` ``LinearOperator``.

    ``S[i, j] = (m - 1) / n_k^2`` when ``x_i, x_j`` are both in task ``k`` and
    ``-1 / (n_k n_l)`` when they are in tasks ``k != l``, so that for any kernel ``K``,
    ``tr(S K)`` is the sum over unordered task pairs of the squared MMD between their kernel
    mean embeddings. Products cost ``O(n m)`` per column; ``S`` itself is never formed.

    Parameters
    ----------
    task_sizes : sequence of int
        ``n_k`` for each task, in the order the points are stacked.

    Returns
    -------
    S : scipy.sparse.linalg.LinearOperator of shape (n, n)

    Examples
    --------
    >>> import numpy as np
    >>> S = mmd_operator([2, 3])
    >>> S @ np.ones(5)      # constant functions have no discrepancy
    array([0., 0., 0., 0., 0.])
    """
    sizes = _task_sizes(task_sizes)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    n = int(sizes.sum())

    def mv(v):
        return _apply_S(np.asarray(v, dtype=np.float64), sizes, starts)

    return LinearOperator((n, n), matvec=mv, matmat=mv, rmatvec=mv, rmatmat=mv, dtype=np.float64)


def _S_max_eigenvalue(sizes):
    """Largest eigenvalue of ``S``: that of the ``m x m`` matrix ``M^1/2 diag(1/n_k) M^1/2``."""
    m = sizes.size
    M = m * np.eye(m) - np.ones((m, m))
    # M = (1/m) M^2, so M^1/2 = M / sqrt(m)
    half = M / np.sqrt(m)
    return float(np.linalg.eigvalsh(half @ np.diag(1.0 / sizes) @ half)[-1])


def mmd_trace(factor, task_sizes):
    """``tr(S K)`` for ``K = F F^T``: the sum of squared MMDs over unordered task pairs.

    Parameters
    ----------
    factor : ndarray of shape (n, r)
        A factor ``F`` of the kernel, rows stacked in task order.
    task_sizes : sequence of int

    Returns
    -------
    float
    """
    F = np.asarray(factor, dtype=np.float64)
    if F.ndim == 1:
        F = F[:, None]
    sizes = _task_sizes(task_sizes)
    if F.shape[0] != sizes.sum():
        raise ValueError(
            f"factor has {F.shape[0]} rows but task_sizes sum to {int(sizes.sum())}."
        )
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return float(np.sum(F * _apply_S(F, sizes, starts)))


# ----------------------------------------------------------------------------- the graph
def _cosine_knn(X, k):
    """Directed kNN adjacency of one task with cosine similarities (self excluded)."""
    n = X.shape[0]
    X = _cosine_rows(X)
    nn = NearestNeighbors(n_neighbors=k, metric="cosine", algorithm="brute").fit(X)
    # scikit-learn computes brute-force distances in row chunks of `working_memory` MiB
    # (default 1 GiB, i.e. the whole n_t x n_t block); cap it so memory stays O(n k)
    with config_context(working_memory=_WORKING_MEMORY_MB):
        dist, ind = nn.kneighbors()
    sim = 1.0 - dist
    return sp.csr_matrix((sim.ravel(), ind.ravel(), np.arange(0, n * k + 1, k)), shape=(n, n))


def _cosine_rows(X):
    """Rows for a cosine metric: as given, or scaled to unit norm (:func:`unit_rows`) when some
    row's magnitude lies beyond the conditioning limit, where squared norms inside the metric
    would over- or underflow (cosine is scale invariant per row)."""
    data = X.data if sp.issparse(X) else X
    if not data.size:
        return X
    big = np.abs(X).max(axis=1)
    big = np.asarray(big.toarray() if sp.issparse(big) else big).ravel()
    big = big[big > 0]
    if big.size and (exponent(float(big.max())) or exponent(float(big.min()))):
        return unit_rows(X)
    return X


def _right_points(X, div):
    """``X`` as right arguments of ``div``, smoothed towards a constant when needed."""
    R = X.toarray() if sp.issparse(X) else X
    try:
        div.check_domain(R, name="the right-hand points", side="right")
    except DomainError:
        a = 1e-3
        c = float(R.mean())
        if not c > 0:
            c = 1.0
        R = (1.0 - a) * R + a * c
        div.check_domain(R, name="the smoothed right-hand points", side="right")
    return np.ascontiguousarray(R, dtype=np.float64)


def _divergence_knn(X, k, div):
    """Directed kNN adjacency of one task with ``exp(-d(x_i, x_j) / sigma)`` weights.

    Neighbours of ``x_i`` are the ``k`` points ``x_j`` (``j != i``) with the smallest
    ``d(x_i, x_j)``; ``sigma`` is the median of those divergences over the task. When a point is
    not a valid right argument (e.g. zero counts with ``kl``, whose right argument must be
    positive) the right arguments are smoothed towards a constant, ``(1 - a) x_j + a c`` with
    ``a = 1e-3`` and ``c`` the mean entry of the task.
    """
    n = X.shape[0]
    # exp(-d / median d) is scale free for a homogeneous divergence: the divergences are
    # taken on the task's conditioned rows, where they neither over- nor underflow
    X = for_assignment(div, X, None).apply(X)
    R = _right_points(X, div)
    chunk_size = max(1, (_WORKING_MEMORY_MB << 20) // (16 * n))
    ind = np.empty((n, k), dtype=np.int64)
    dist = np.empty((n, k))
    for lo in range(0, n, chunk_size):
        hi = min(n, lo + chunk_size)
        D = np.asarray(div.pairwise(X[lo:hi], R), dtype=np.float64)
        D[np.arange(hi - lo), np.arange(lo, hi)] = np.inf
        part = np.argpartition(D, k - 1, axis=1)[:, :k]
        ind[lo:hi] = part
        dist[lo:hi] = np.take_along_axis(D, part, axis=1)
    dist = np.maximum(dist, 0.0)
    sigma = float(np.median(dist))
    if not sigma > 0:
        sigma = float(dist.mean()) if dist.mean() > 0 else 1.0
    sim = np.exp(-dist / sigma)
    return sp.csr_matrix((sim.ravel(), ind.ravel(), np.arange(0, n * k + 1, k)), shape=(n, n))


def _resolve_affinity(affinity, affinity_params):
    if isinstance(affinity, str) and affinity == "cosine":
        if affinity_params:
            raise ValueError("affinity='cosine' takes no affinity_params.")
        return None
    if not isinstance(affinity, (str, Divergence)):
        raise TypeError(
            f"affinity must be 'cosine', a registered divergence name or a Divergence, "
            f"got {type(affinity).__name__}."
        )
    return get_divergence(affinity, **(affinity_params or {}))


def task_knn_graph(Xs, n_neighbors=10, *, affinity="cosine", affinity_params=None):
    """Sparse symmetric k-nearest-neighbour graph with edges only within each task (Eq. 9).

    ``W[i, j] > 0`` when ``x_i`` and ``x_j`` belong to the same task and ``x_j`` is among the
    ``n_neighbors`` nearest neighbours of ``x_i`` or vice versa (self excluded).

    Parameters
    ----------
    Xs : list of {array-like, sparse matrix} of shape (n_k, n_features)
        One matrix per task.
    n_neighbors : int, default=10
        Clipped to ``n_k - 1`` for tasks with fewer points.
    affinity : str or Divergence, default="cosine"
        ``"cosine"``: ``W[i, j] = cos(x_i, x_j)`` as in the paper (negative cosines are set to
        0; an all-zero row has no edges). Any registered divergence name (or a
        :class:`Divergence`): neighbours by ``d(x_i, x_j)`` and weights
        ``exp(-d(x_i, x_j) / sigma)`` with ``sigma`` the task's median kNN divergence; for an
        asymmetric divergence the two directions are merged by the larger weight.
    affinity_params : dict, optional
        Parameters of the divergence (e.g. ``{"A": A}`` for mahalanobis).

    Returns
    -------
    W : scipy.sparse.csr_matrix of shape (n, n)
        Block-diagonal, symmetric, non-negative, zero diagonal.
    """
    div = _resolve_affinity(affinity, affinity_params)
    Xs = check_tasks(Xs, divergence=div)
    n_neighbors = check_scalar(n_neighbors, "n_neighbors", kind=numbers.Integral, lo=1)
    blocks = []
    for X in Xs:
        k = min(int(n_neighbors), X.shape[0] - 1)
        if k < 1:
            blocks.append(sp.csr_matrix((X.shape[0], X.shape[0])))
            continue
        A = _cosine_knn(X, k) if div is None else _divergence_knn(X, k, div)
        A.data = np.maximum(A.data, 0.0)
        A = A.maximum(A.T)
        blocks.append(A)
    W = sp.block_diag(blocks, format="csr")
    W.eliminate_zeros()
    W.sort_indices()
    return W


def normalized_laplacian(W):
    """Sparse normalised Laplacian ``L = I - D^-1/2 W D^-1/2`` (isolated nodes get ``L_ii = 1``).

    Parameters
    ----------
    W : sparse matrix of shape (n, n)
        Symmetric non-negative adjacency.

    Returns
    -------
    L : scipy.sparse.csr_matrix of shape (n, n)
    """
    W = sp.csr_matrix(W, dtype=np.float64)
    if W.shape[0] != W.shape[1]:
        raise ValueError(f"W must be square, got shape {W.shape}.")
    deg = np.asarray(W.sum(axis=1)).ravel()
    with np.errstate(divide="ignore"):
        dinv = np.where(deg > 0, 1.0 / np.sqrt(deg), 0.0)
    Dm = sp.diags(dinv)
    L = sp.identity(W.shape[0], format="csr") - Dm @ W @ Dm
    L = sp.csr_matrix(L)
    L.sort_indices()
    return L


# ----------------------------------------------------------------------------- eigen-solvers
def _null_space(W, C, sizes, starts):
    """Exact null vectors of ``A = L + C S`` known from the graph, as a cheap projector.

    ``L`` has one null vector per connected component ``c`` with edges, ``D^1/2 1_c``
    (normalised); with ``N`` their sparse orthonormal basis, ``A (N z) = 0`` iff ``C = 0`` or
    ``N z`` has equal means in every task (``S`` vanishes exactly there). Lanczos cannot resolve
    this repeated eigenvalue reliably (it returns too few copies), so it is deflated exactly.

    Returns ``(N, U, n_null)``: the null space is ``{N z : U^T z = 0}``, ``U`` an orthonormal
    basis (``c x rank``, rank <= m - 1) of the constrained directions.
    """
    n = W.shape[0]
    deg = np.asarray(W.sum(axis=1)).ravel()
    _, comp = connected_components(W, directed=False)
    keep = np.flatnonzero(deg > 0)
    comps, col = np.unique(comp[keep], return_inverse=True)
    vals = np.sqrt(deg[keep])
    norms = np.sqrt(np.bincount(col, weights=vals ** 2))
    N = sp.csc_matrix((vals / norms[col], (keep, col)), shape=(n, comps.size))
    c = comps.size
    if C == 0.0 or c == 0:
        return N, np.zeros((c, 0)), c
    m = sizes.size
    # B = (m I - 1 1^T) E^T N : task means of the null vectors, differenced
    means = _task_means_sparse(N, sizes)
    B = m * means - means.sum(axis=0, keepdims=True)
    _, sv, Vt = np.linalg.svd(B, full_matrices=False)
    rank = int(np.sum(sv > 1e-12 * max(1.0, sv.max() if sv.size else 0.0)))
    U = Vt[:rank].T
    return N, U, c - rank


def _task_means_sparse(N, sizes):
    """``E^T N`` (m x c) for sparse ``N``: per-task column means."""
    task = np.repeat(np.arange(sizes.size), sizes)
    E = sp.csr_matrix((1.0 / sizes[task], (task, np.arange(task.size))),
                      shape=(sizes.size, task.size))
    return np.asarray((E @ N).todense())


def _null_vectors(N, U, k):
    """``k`` orthonormal vectors of ``{N z : U^T z = 0}`` (``k <= c - rank``)."""
    c = N.shape[1]
    Z = np.eye(c, min(c, k + U.shape[1]))
    if U.shape[1]:
        # project out the constrained directions; the first k + rank unit vectors span at
        # least k dimensions of the complement, which the SVD extracts orthonormally
        Z = Z - U @ (U.T @ Z)
        Z = np.linalg.svd(Z, full_matrices=False)[0]
    return np.asarray(N @ Z[:, :k])


def smallest_eigenpairs(W, k, *, C=0.0, task_sizes=None, eigen_solver="auto", tol=0.0,
                        random_state=None):
    """The ``k`` smallest eigenpairs of ``A = L + C S`` without forming ``A``.

    ``L`` is the normalised Laplacian of the graph ``W`` (:func:`normalized_laplacian`) and
    ``S`` the MMD operator of :func:`mmd_operator`.

    Parameters
    ----------
    W : sparse matrix of shape (n, n)
        Symmetric non-negative adjacency (e.g. from :func:`task_knn_graph`).
    k : int
        Number of eigenpairs, ``1 <= k <= n``.
    C : float, default=0.0
        Weight of ``S``; needs ``task_sizes`` when non-zero.
    task_sizes : sequence of int, optional
    eigen_solver : {"auto", "arpack", "lobpcg", "dense"}, default="auto"
        ``"arpack"``: ``eigsh`` for the largest eigenvalues of ``c I - A`` with
        ``c = 2 + C lambda_max(S)`` >= ``lambda_max(A)`` (largest-algebraic Lanczos converges much
        faster than smallest-algebraic on the same operator). ``"lobpcg"``: ``lobpcg`` on ``A``.
        Both first deflate the null space known exactly from the graph (one vector
        ``D^1/2 1_c`` per connected component, restricted to equal task means when ``C > 0``):
        a within-task graph always has a repeated zero eigenvalue, which Lanczos does not
        resolve reliably. ``"dense"``: ``scipy.linalg.eigh`` of ``A`` materialised column by
        column, for tiny problems and tests only. ``"auto"`` is ``"arpack"`` unless the
        iterative part is too small for ARPACK, where it falls back to ``"dense"``.
    tol : float, default=0.0
        Iterative solver tolerance (0 = machine precision for ARPACK).
    random_state : int, RandomState or None
        Seeds the starting vector(s).

    Returns
    -------
    eigenvalues : ndarray of shape (k,), ascending
    eigenvectors : ndarray of shape (n, k), orthonormal columns
    """
    W = sp.csr_matrix(W, dtype=np.float64)
    L = normalized_laplacian(W)
    n = L.shape[0]
    k = check_scalar(k, "k", kind=numbers.Integral, lo=1)
    if k > n:
        raise ValueError(f"k={k} eigenpairs requested but the problem has n={n} points.")
    if eigen_solver not in _EIGEN_SOLVERS:
        raise ValueError(f"eigen_solver must be one of {_EIGEN_SOLVERS}, got {eigen_solver!r}.")
    C = float(check_scalar(C, "C", lo=0))
    if C != 0.0:
        if task_sizes is None:
            raise ValueError("task_sizes is required when C != 0.")
        sizes = _task_sizes(task_sizes)
        if sizes.sum() != n:
            raise ValueError(f"task_sizes sum to {int(sizes.sum())} but W has n={n} rows.")
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        smax = _S_max_eigenvalue(sizes)
    else:
        sizes = starts = None
        smax = 0.0

    def apply_A(V):
        out = L @ V
        if C != 0.0:
            out = out + C * _apply_S(V, sizes, starts)
        return out

    rng = check_random_state(random_state)
    if eigen_solver == "dense":
        A = apply_A(np.eye(n))
        w, V = sla.eigh((A + A.T) / 2.0, subset_by_index=[0, k - 1])
        return w, V

    N, U, n_null = _null_space(W, C, sizes, starts)
    k0 = min(k, n_null)
    V0 = _null_vectors(N, U, k0) if k0 else np.zeros((n, 0))
    k1 = k - k0
    if k1 == 0:
        return np.zeros(k), V0
    rest = n - n_null   # dimension of the iterative part
    Nt = N.T  # transposed once: ARPACK applies the projector thousands of times

    def project_null(V):
        T = Nt @ V
        if U.shape[1]:
            T = T - U @ (U.T @ T)
        return N @ T

    solver = eigen_solver
    if solver == "auto":
        solver = "arpack" if k1 < rest - 1 else "dense"
    if solver == "dense":
        A = apply_A(np.eye(n))
        w, V = sla.eigh((A + A.T) / 2.0)
        return w[:k], V[:, :k]
    shift = 2.0 + C * smax + 1e-9
    if solver == "arpack":
        if k1 >= rest - 1:
            raise ValueError(
                f"eigen_solver='arpack' needs fewer eigenpairs than the problem size "
                f"(k={k}, n={n}); use 'dense'."
            )

        def op_mv(V):
            return shift * V - apply_A(V) - shift * project_null(V)

        op = LinearOperator((n, n), dtype=np.float64, matvec=op_mv, matmat=op_mv)
        ncv = min(n, max(2 * k1 + 1, k1 + 32))
        v0 = rng.uniform(-1.0, 1.0, n)
        v0 -= project_null(v0)
        theta, V = eigsh(op, k=k1, which="LA", v0=v0, ncv=ncv, tol=tol, maxiter=100 * n)
        w = shift - theta
    else:  # lobpcg

        def op_mv(V):
            return apply_A(V) + shift * project_null(V)

        op = LinearOperator((n, n), dtype=np.float64, matvec=op_mv, matmat=op_mv)
        X0 = rng.standard_normal((n, k1))
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            try:
                w, V = lobpcg(op, X0, largest=False, tol=tol if tol > 0 else None,
                              maxiter=2000)
            except UserWarning as exc:  # lobpcg reports non-convergence as a UserWarning
                warnings.warn(f"lobpcg did not converge: {exc}", ConvergenceWarning,
                              stacklevel=user_stacklevel())
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    w, V = lobpcg(op, X0, largest=False, tol=tol if tol > 0 else None,
                                  maxiter=2000)
    order = np.argsort(w, kind="stable")
    w = np.concatenate([np.zeros(k0), np.asarray(w)[order]])
    V = np.hstack([V0, np.asarray(V)[:, order]])
    return w, np.ascontiguousarray(V)


# ----------------------------------------------------------------------------- the two LPs
def nonparametric_kernel_weights(eigenvalues, b):
    """Closed-form solution of the LP of Theorem 0.2 (paper Eq. 12).

    ``min sum gamma_i sigma_i`` s.t. ``0 <= gamma_i <= 1``, ``sum gamma_i = b`` puts weight 1 on
    the ``floor(b)`` smallest eigenvalues and ``b - floor(b)`` on the next one, so only the
    ``ceil(b)`` smallest eigenpairs of ``A = L + C S`` are ever needed.

    Parameters
    ----------
    eigenvalues : array-like of shape (k,)
        The ``k >= ceil(b)`` smallest eigenvalues of ``A``, in any order.
    b : float
        Trace of the kernel, ``0 < b <= k``.

    Returns
    -------
    gamma : ndarray of shape (k,)
        Weights aligned with ``eigenvalues``.

    Examples
    --------
    >>> nonparametric_kernel_weights([0.3, 0.1, 0.2], 1.5)
    array([0. , 1. , 0.5])
    """
    sig = np.asarray(eigenvalues, dtype=np.float64)
    if sig.ndim != 1 or sig.size == 0:
        raise ValueError("eigenvalues must be a non-empty 1-D array.")
    b = check_scalar(b, "b", lo=0, lo_closed=False)
    if b > sig.size:
        raise ValueError(f"b={b} exceeds the number of eigenvalues {sig.size}; need b <= n.")
    order = np.argsort(sig, kind="stable")
    g_sorted = np.clip(b - np.arange(sig.size), 0.0, 1.0)
    gamma = np.empty_like(sig)
    gamma[order] = g_sorted
    return gamma


def _lp_solve(prob):
    """Solve the cached LP (15) with HiGHS through scipy (cvxpy's ``"SCIPY"`` solver).

    HiGHS reached through its own Python binding (cvxpy's ``"HIGHS"``) prints a two-line
    banner to the C-level standard output when its first solver object is created, before
    any option (``verbose=False``, ``output_flag``) can apply; the copy of HiGHS inside scipy
    prints nothing with its default ``disp=False``. Same simplex, same solutions.
    """
    prob.solve(solver="SCIPY", verbose=False,
               scipy_options={"method": "highs", "disp": False})


@functools.lru_cache(maxsize=32)
def _spectral_lp(r):
    """The parametrised LP (15) for ``r`` eigenvectors, compiled once and reused.

    This is the only place in the library that builds a cvxpy problem. ``costs``, ``b`` and
    the tie indicators are cvxpy ``Parameter`` objects, so a grid over ``C`` (which only changes
    the costs) re-solves the cached canonical form without recompiling.
    """
    import cvxpy as cp

    mu = cp.Variable(r)
    costs = cp.Parameter(r)
    b = cp.Parameter(nonneg=True)
    tie = cp.Parameter(max(r - 1, 1), nonneg=True)
    cons = [cp.sum(mu) == b, mu[0] <= 1, mu[r - 1] >= 0]
    if r > 1:
        cons += [mu[1:] <= mu[:-1], cp.multiply(tie, mu[:-1] - mu[1:]) == 0]
    return cp.Problem(cp.Minimize(costs @ mu), cons), mu, costs, b, tie


def _ties(eigenvalues, tie_tol):
    lam = np.asarray(eigenvalues, dtype=np.float64)
    scale = max(1.0, float(np.abs(lam).max()))
    return (np.diff(lam) <= tie_tol * scale).astype(np.float64)


def spectral_kernel_weights(eigenvalues, mmd_costs, C, b, *, tie_tol=1e-8):
    """Solve LSKMTC's LP (paper Eq. 15) with cvxpy (HiGHS through scipy; prints nothing).

    ``min sum_t (lambda_t + C s_t) mu_t`` s.t. ``sum_t mu_t = b``,
    ``1 >= mu_1 >= mu_2 >= ... >= mu_r >= 0``, where ``lambda_t`` are the ``r`` smallest
    eigenvalues of ``L`` in ascending order and ``s_t = v_t^T S v_t``. Eigenvectors of a repeated
    eigenvalue (``|lambda_{t+1} - lambda_t| <= tie_tol max(1, max |lambda|)``) get equal weights,
    as a spectral transform ``mu = f(lambda)`` must (Zhu et al. 2004): this makes ``K*`` and the
    optimum independent of the arbitrary basis an eigensolver returns for such an eigenspace
    (``L`` has at least one zero eigenvalue per task, the graph having no edges across tasks).
    ``tie_tol=0`` gives the plain LP (15).

    The problem is compiled once per ``r`` with cvxpy ``Parameter`` data and reused across
    calls (a ``C`` grid costs one canonicalisation).

    Parameters
    ----------
    eigenvalues : array-like of shape (r,)
        Ascending eigenvalues ``lambda_t`` of ``L``.
    mmd_costs : array-like of shape (r,)
        ``s_t = v_t^T S v_t``.
    C : float
        Non-negative weight of the MMD term.
    b : float
        ``0 < b <= r``.
    tie_tol : float, default=1e-8
        Relative tolerance under which consecutive eigenvalues count as equal.

    Returns
    -------
    mu : ndarray of shape (r,)
        Non-increasing weights in ``[0, 1]`` summing to ``b``.

    Warns
    -----
    ConvergenceWarning
        When the solver's status is not ``optimal``.
    """
    lam = np.asarray(eigenvalues, dtype=np.float64)
    s = np.asarray(mmd_costs, dtype=np.float64)
    if lam.ndim != 1 or lam.shape != s.shape or lam.size == 0:
        raise ValueError(
            f"eigenvalues and mmd_costs must be 1-D of equal length, got {lam.shape} and {s.shape}."
        )
    if not (np.isfinite(lam).all() and np.isfinite(s).all()):
        raise ValueError("eigenvalues and mmd_costs must be finite.")
    if lam.size > 1 and (np.diff(lam) < -1e-12 * max(1.0, float(np.abs(lam).max()))).any():
        raise ValueError("eigenvalues must be in ascending order (LP 15 orders mu by them).")
    C = check_scalar(C, "C", lo=0)
    b = check_scalar(b, "b", lo=0, lo_closed=False)
    tie_tol = check_scalar(tie_tol, "tie_tol", lo=0)
    r = lam.size
    if b > r:
        raise ValueError(f"b={b} exceeds n_eigenvectors={r}; the LP needs b <= r.")
    prob, mu, costs, bpar, tie = _spectral_lp(r)
    with np.errstate(over="ignore", invalid="ignore"):
        cost = lam + C * s
    if not (np.abs(cost) < 1e15).all():  # the LP solver treats costs near 1e20 as infinite
        raise ValueError(f"C={C!r} makes the LP costs lambda + C s reach {np.abs(cost).max():.3g} (limit 1e15); use a smaller C.")
    costs.value = cost
    bpar.value = float(b)
    tie.value = _ties(lam, tie_tol) if r > 1 else np.zeros(1)
    _lp_solve(prob)
    if prob.status != "optimal":
        warnings.warn(f"LSKMTC LP (15) solver status is {prob.status!r}, not 'optimal'.",
                      ConvergenceWarning, stacklevel=user_stacklevel())
    if mu.value is None:
        raise RuntimeError(f"LSKMTC LP (15) failed with status {prob.status!r}.")
    out = np.clip(np.asarray(mu.value, dtype=np.float64), 0.0, 1.0)
    return np.minimum.accumulate(out)


# ----------------------------------------------------------------------------- kernel k-means
def _kmeans_plusplus_kernel(diag, K, n_clusters, rng):
    n = K.shape[0]
    centers = [int(rng.randint(n))]
    d2 = np.maximum(diag - 2 * K[:, centers[0]] + diag[centers[0]], 0.0)
    for _ in range(1, n_clusters):
        tot = d2.sum()
        j = int(rng.choice(n, p=d2 / tot)) if tot > 0 else int(rng.randint(n))
        centers.append(j)
        d2 = np.minimum(d2, np.maximum(diag - 2 * K[:, j] + diag[j], 0.0))
    D = diag[:, None] - 2 * K[:, centers] + diag[centers][None, :]
    return np.argmin(D, axis=1)


def kernel_kmeans(K, n_clusters, *, n_init=10, max_iter=300, random_state=None):
    """Kernel k-means on an explicit (dense) kernel matrix; used for the paper's KKM baseline.

    The learned kernels of this module are never formed: their kernel k-means is Euclidean
    k-means on the factor (see :class:`NonparametricKernelMTC`). This function is for ordinary
    kernels such as a Gaussian kernel on a few thousand points.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        Symmetric positive semi-definite kernel.
    n_clusters : int
    n_init : int, default=10
        Restarts (kernel k-means++ seeding); the lowest objective wins.
    max_iter : int, default=300
    random_state : int, RandomState or None

    Returns
    -------
    labels : ndarray of shape (n,)
    inertia : float
        ``sum_i ||phi(x_i) - m_{c(i)}||^2``.
    """
    K = np.asarray(K, dtype=np.float64)
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise ValueError(f"K must be a square 2-D array, got shape {K.shape}.")
    check_finite(K, name="K")
    n = K.shape[0]
    n_clusters = check_n_clusters(n_clusters, n)
    n_init = check_scalar(n_init, "n_init", kind=numbers.Integral, lo=1)
    rng = check_random_state(random_state)
    diag = np.diag(K).copy()
    best = (None, np.inf)
    for _ in range(n_init):
        labels = _kmeans_plusplus_kernel(diag, K, n_clusters, rng)
        for _it in range(max_iter):
            H = np.zeros((n, n_clusters))
            H[np.arange(n), labels] = 1.0
            cnt = H.sum(axis=0)
            empty = cnt == 0
            cnt[empty] = 1.0
            KH = K @ H
            within = np.einsum("ij,ij->j", H, KH) / cnt ** 2
            D = diag[:, None] - 2 * KH / cnt + within
            D[:, empty] = np.inf
            new = np.argmin(D, axis=1)
            if np.array_equal(new, labels):
                break
            labels = new
        inertia = float(np.maximum(D[np.arange(n), labels], 0.0).sum())
        if inertia < best[1]:
            best = (labels.copy(), inertia)
    return best[0], best[1]


_FACTOR_INITS = ("k-means++", "random-partition")
#: init strings of the kernel estimators: the factor starts plus the shared "random"
_KERNEL_INITS = ("k-means++", "random", "random-partition")


def _check_factor_kmeans_options(init, normalize, name="normalize_factor"):
    if not (isinstance(init, str) and init in _FACTOR_INITS):
        raise ValueError(
            f"init must be one of {_FACTOR_INITS} for the kernel k-means on the learned factor, "
            f"got {init!r}."
        )
    if not isinstance(normalize, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {normalize!r}.")


def normalize_factor_rows(factor):
    """Rows of a kernel factor scaled to unit Euclidean norm (zero rows stay zero).

    For ``K = F F^T`` this is the normalised kernel ``K_ij / sqrt(K_ii K_jj)``, the row
    normalisation of Ng, Jordan & Weiss (2002) applied to the learned factor.

    Parameters
    ----------
    factor : array-like of shape (n, r)

    Returns
    -------
    ndarray of shape (n, r)
        A new array; ``factor`` is not modified.
    """
    F = np.array(factor, dtype=np.float64, copy=True)
    if F.ndim != 2:
        raise ValueError(f"factor must be a 2-D array, got shape {F.shape}.")
    norms = np.linalg.norm(F, axis=1)
    nz = norms > 0
    F[nz] /= norms[nz, None]
    return F


def _random_partition_centres(F, n_clusters, rng):
    """Means of a uniformly random partition of the rows of ``F`` with no empty part."""
    n = F.shape[0]
    labels = rng.randint(n_clusters, size=n)
    labels[rng.permutation(n)[:n_clusters]] = np.arange(n_clusters)
    cnt = np.bincount(labels, minlength=n_clusters).astype(np.float64)
    sums = np.zeros((n_clusters, F.shape[1]))
    np.add.at(sums, labels, F)
    return sums / cnt[:, None]


def factor_kernel_kmeans(factor, n_clusters, *, init="random-partition", normalize=False,
                         n_init=10, max_iter=300, tol=1e-4, random_state=None):
    """Kernel k-means on ``K = F F^T`` given its factor: Euclidean k-means on the rows of ``F``.

    Parameters
    ----------
    factor : array-like of shape (n, r)
        The factor ``F`` of the kernel.
    n_clusters : int
    init : {"random-partition", "k-means++"}, default="random-partition"
        ``"random-partition"``: every run starts from a uniformly random labelling (each cluster
        non-empty), the usual start of kernel k-means; the first step assigns each point to the
        nearest mean of that partition (a cluster this empties is re-seeded as in
        :class:`BregmanKMeans`, without a warning). ``"k-means++"``: k-means++ seeding on the
        rows.
    normalize : bool, default=False
        Scale the rows of ``F`` to unit norm first (:func:`normalize_factor_rows`).
    n_init : int, default=10
        Runs; the one with the lowest kernel k-means objective wins.
    max_iter : int, default=300
    tol : float, default=1e-4
    random_state : int, RandomState or None

    Returns
    -------
    labels : ndarray of shape (n,)
    inertia : float
        Kernel k-means objective of the clustered (possibly normalised) factor.
    """
    _check_factor_kmeans_options(init, normalize, name="normalize")
    F = np.asarray(factor, dtype=np.float64)
    if F.ndim != 2:
        raise ValueError(f"factor must be a 2-D array, got shape {F.shape}.")
    k = check_n_clusters(n_clusters, F.shape[0])
    n_init = check_scalar(n_init, "n_init", kind=numbers.Integral, lo=1)
    Y = normalize_factor_rows(F) if normalize else F
    if init == "k-means++":
        est = BregmanKMeans(k, divergence="sqeuclidean", n_init=n_init, max_iter=max_iter,
                            tol=tol, random_state=random_state)
        est.fit(Y)
        return est.labels_.astype(np.int64), float(est.inertia_)
    rng = check_random_state(random_state)
    best = (None, np.inf)
    with warnings.catch_warnings(), E.blas_one_thread():
        # the means of a random partition all lie near the grand mean, so the first
        # assignment often empties a cluster; re-seeding it is part of this start
        warnings.simplefilter("ignore", EmptyClusterWarning)
        runs = _PartitionRuns(Y, k, max_iter, tol)
        for _ in range(n_init):
            labels, inertia = runs.fit(_random_partition_centres(Y, k, rng))
            if best[0] is None or inertia < best[1]:  # (an overflowed inf still has labels)
                best = (labels, inertia)
    return best


class _PartitionRuns:
    """``BregmanKMeans(k, divergence="sqeuclidean", init=centres, n_init=1, max_iter=max_iter,
    tol=tol).fit(Y)`` for many ``centres`` on the same ``Y``: the same steps, with the input
    checked and its statistics computed once instead of once per start.

    :func:`factor_kernel_kmeans` runs ``n_init`` small fits per call (hundreds in a
    :class:`NonparametricKernelMTC` fit with ``C="auto"``), where checking the input,
    collecting its statistics and deciding the conditioning cost as much as the Lloyd
    iterations. A start whose conditioning is not the identity (or data for which
    ``algorithm="auto"`` or ``smoothing="auto"`` choose anything but plain Lloyd passes without
    smoothing) is fitted by the estimator itself. ``fit(centres)`` returns the estimator's
    ``(labels_, inertia_)``, bit for bit (``tests/test_kernel_mtc.py`` compares them).
    """

    def __init__(self, Y, k, max_iter, tol):
        self.Y, self.k, self.max_iter, self.tol = Y, k, max_iter, tol
        self.div = get_divergence("sqeuclidean")
        self.src = as_source(Y, None, self.div, validate=check_array)  # the estimator's check
        self.stats = self.src.stats(self.div)
        smoothing = resolve_smoothing("auto", self.div, self.stats.counts(), k)
        algorithm = _pruned.resolve_algorithm("auto", self.div, self.src, k)
        self.direct = smoothing == 0 and algorithm == "lloyd" and not self.src.chunked

    def fit(self, centres):
        cond = _conditioning.decide(self.div, self.stats, centres=centres) if self.direct else None
        if cond is None or not cond.identity:
            est = BregmanKMeans(self.k, divergence="sqeuclidean", init=centres, n_init=1,
                                max_iter=self.max_iter, tol=self.tol).fit(self.Y)
            return est.labels_.astype(np.int64), float(est.inertia_)
        src, div = self.src, self.div
        res = lloyd(src, div, cond.apply_centres(centres), 0.0, None, self.max_iter, self.tol, 0)
        inertia = reported_objective("BregmanKMeans", div, cond,
                                     src.final_objective(div, res.part, res.centres))
        labels = src.labels(div, E.prepare_centres(div, res.centres), res.part)
        return np.asarray(labels).astype(np.int64), float(inertia)


# ----------------------------------------------------------------------------- estimators
#: ``NonparametricKernelMTC(C="auto")`` fits every value of this grid (0: the tasks decoupled)
#: and keeps the one with the lowest :func:`single_task_objective`.
AUTO_C_GRID = (0.0, 1.0, 10.0, 100.0, 500.0, 1000.0)


def single_task_objective(Xs, labels, *, unit_rows=True):
    """Sum over tasks of the k-means objective of each task's partition, per point.

    ``sum_t (1 / n_t) sum_i ||x_i - m_t(label_i)||^2`` with ``m_t(z)`` the mean of task
    ``t``'s rows in cluster ``z``: how good each partition is as a single-task clustering, with
    no labels. This is the label-free criterion of ``NonparametricKernelMTC(C="auto")`` (and
    the one of ``MultitaskBregmanClustering(lam="auto")``, there with the divergence).

    Parameters
    ----------
    Xs : list of {array-like, sparse matrix} of shape (n_t, n_features)
    labels : list of ndarray of shape (n_t,)
        Non-negative integer labels per task.
    unit_rows : bool, default=True
        Scale every row to unit Euclidean norm first (the geometry of a cosine affinity).

    Returns
    -------
    float
    """
    Xs = check_tasks(Xs)
    return within_cluster_per_point(Xs, labels, unit_rows=unit_rows)


class _BaseKernelMTC(MultiTaskMixin, ClusterMixin, BaseEstimator):
    """Shared fit machinery: graph, Laplacian, learned weights, kernel k-means on the factor."""

    _parameter_constraints = {
        "C": [Interval(numbers.Real, 0.0)],
        "b": [Interval(numbers.Real, 0.0, lo_closed=False)],
        "n_neighbors": [Interval(numbers.Integral, 1)],
        "joint": [BOOLEAN, Options("auto")],
        "n_init": [Interval(numbers.Integral, 1)],
        "max_iter": [Interval(numbers.Integral, 1)],
        "tol": [Interval(numbers.Real, 0.0)],
        "eigen_solver": [Options(*_EIGEN_SOLVERS)],
        "eigen_tol": [Interval(numbers.Real, 0.0)],
        "normalize_factor": [BOOLEAN],
        "verbose": [Interval(numbers.Integral, 0)],
    }

    def _validate_common(self, Xs):
        self._validate_params()
        div = _resolve_affinity(self.affinity, self.affinity_params)
        Xs = check_tasks(Xs, divergence=div)
        m = len(Xs)
        if m < 2:
            raise ValueError(
                f"{type(self).__name__} needs at least two tasks, got {m}; for a single task "
                "use a single-task method (e.g. BregmanKMeans or spectral clustering)."
            )
        sizes = np.array([X.shape[0] for X in Xs], dtype=np.int64)
        total = [int(sizes.sum())] * m
        joint = self.joint
        if isinstance(joint, str):
            # "auto": one kernel k-means over all tasks when they share one K and one kind of
            # init, one per task otherwise
            ks = check_n_clusters_per_task(self.n_clusters, total)
            kinds = {kind if value is None else "given"
                     for kind, value in parse_init(self.init, Xs, ks, strings=_KERNEL_INITS)}
            joint = len(set(ks)) == 1 and len(kinds) == 1
        if joint:
            # one kernel k-means over all points: K is bounded by the total number of points
            ks = check_n_clusters_per_task(
                self.n_clusters, total,
                equal="joint=True (one kernel k-means over all tasks; use joint=False or "
                      "joint='auto' for a different K per task)")
        else:
            ks = check_n_clusters_per_task(self.n_clusters, sizes)
        parsed = parse_init(self.init, Xs, ks, strings=_KERNEL_INITS)
        if joint and len({kind if value is None else "given" for kind, value in parsed}) > 1:
            raise ValueError(
                "joint=True runs one kernel k-means over all tasks and needs one kind of init "
                "for every task (one string, or labels/centres for every task); use "
                "joint=False or joint='auto' to mix them."
            )
        return Xs, sizes, ks, parsed, bool(joint)

    def _score_criterion(self, Xs, labels):
        """``score``'s criterion: each task's within-cluster sum of squares per point, on
        unit-norm rows for the cosine affinity (the criterion of ``C="auto"``)."""
        return within_cluster_per_point(Xs, labels, unit_rows=self.affinity == "cosine")

    def _graph(self, Xs):
        W = task_knn_graph(Xs, self.n_neighbors, affinity=self.affinity,
                           affinity_params=self.affinity_params)
        return W, normalized_laplacian(W)

    def _cluster(self, F, Xs, sizes, ks, parsed, rng):
        """Kernel k-means on ``K = F F^T``: Euclidean k-means on the rows of ``F``."""
        def km(n_clusters, Y, entries, Xparts):
            seed = rng.randint(np.iinfo(np.int32).max)
            kind = entries[0][0]
            if kind in ("random-partition", "k-means++"):
                return factor_kernel_kmeans(Y, n_clusters, init=kind,
                                            normalize=self.normalize_factor, n_init=self.n_init,
                                            max_iter=self.max_iter, tol=self.tol,
                                            random_state=seed)
            Y = normalize_factor_rows(Y) if self.normalize_factor else Y
            if kind == "random":
                init, n_init = kind, self.n_init
            else:  # labels or input-space centres -> centres of the factor rows
                labels = np.concatenate([
                    v if k == "labels" else nearest_center_labels(X, v)
                    for (k, v), X in zip(entries, Xparts)])
                counts = np.bincount(labels, minlength=n_clusters)
                if (counts == 0).any():
                    raise ValueError(
                        f"init leaves cluster {int(np.argmin(counts))} empty; give every "
                        "cluster at least one point."
                    )
                init = np.zeros((n_clusters, Y.shape[1]))
                np.add.at(init, labels, Y)
                init /= counts[:, None]
                n_init = 1
            est = BregmanKMeans(n_clusters, divergence="sqeuclidean", init=init, n_init=n_init,
                                max_iter=self.max_iter, tol=self.tol, random_state=seed)
            est.fit(Y)
            return est.labels_.astype(np.int64), float(est.inertia_)

        if self.joint_:
            labels, inertia = km(ks[0], F, parsed, Xs)
            return _split(labels, sizes), inertia
        labels, inertia = [], 0.0
        for t, (k, Ft) in enumerate(zip(ks, _split(F, sizes))):
            lab, ine = km(k, Ft, [parsed[t]], [Xs[t]])
            labels.append(lab)
            inertia += ine
        return labels, inertia

    def _finish(self, Xs, sizes, ks, parsed, W, L, lam, V, w, rng, C):
        F = V * np.sqrt(w)[None, :]
        labels, self.inertia_ = self._cluster(F, Xs, sizes, ks, parsed, rng)
        self.embedding_ = F
        self.cluster_embedding_ = normalize_factor_rows(F) if self.normalize_factor else F
        self.eigenvectors_ = V
        self.kernel_spectrum_ = w
        self.affinity_matrix_ = W
        self.task_sizes_ = sizes
        self.n_clusters_ = ks
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        self.mmd_ = float(np.sum(F * _apply_S(F, sizes, starts)))
        self.smoothness_ = float(np.sum(F * (L @ F)))
        self.objective_ = self.smoothness_ + C * self.mmd_
        # the kernel has a closed form: its objective is reached in one step
        self._set_fitted_tasks(Xs, labels, [self.objective_])
        self._fit_tasks = Xs
        return self

    def predict(self, X, task=None):
        """Cluster of new rows of task ``task``: the label of the most similar training row.

        The learned kernel lives on the training points only; a new row takes the label of
        its nearest neighbour among task ``task``'s training rows under the graph's affinity
        (largest cosine similarity, or smallest divergence ``d(x, x_j)``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        task : int, optional
            Which task's training rows to use; required when there are several tasks.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        t = self._check_task(task)
        div = _resolve_affinity(self.affinity, self.affinity_params)
        X = self._check_X(X, div)
        Xt = self._fit_tasks[t]
        if div is None:
            nn = NearestNeighbors(n_neighbors=1, metric="cosine", algorithm="brute").fit(
                _cosine_rows(Xt))
            idx = nn.kneighbors(_cosine_rows(X), return_distance=False)[:, 0]
        else:
            # the nearest training row under the conditioning of X and the training rows
            idx = div.assign(X, _right_points(Xt, div))[0]
        return self.labels_[t][idx]

    def kernel_matrix(self, task=None):
        """The learned kernel ``F F^T`` (dense), for small problems and inspection only.

        Parameters
        ----------
        task : int or None
            Return only the block of one task.
        """
        check_is_fitted(self, "embedding_")
        if task is not None:
            check_scalar(task, "task", kind=numbers.Integral, lo=0, hi=len(self.task_sizes_) - 1)
        F = self.embedding_ if task is None else _split(self.embedding_, self.task_sizes_)[task]
        return F @ F.T


class NonparametricKernelMTC(_BaseKernelMTC):
    """LNKMTC: learn a nonparametric kernel for multi-task clustering (Gu, Li & Han 2011).

    ``fit(Xs)`` takes a list of tasks (2-D arrays or sparse matrices sharing one feature space);
    per-task results are lists (``labels_[t]``).

    Parameters
    ----------
    n_clusters : int or list of int, default=8
        Clusters: one int for every task or one per task (then ``joint="auto"`` clusters each
        task on its own). The default is scikit-learn's ``KMeans`` default, the rule of every
        flat clustering estimator of this library.
    C : float or "auto", default="auto"
        Weight of the MMD term. ``C=0`` is the paper's LNKMTC0. ``"auto"``: fit every value of
        :data:`AUTO_C_GRID` (0, 1, 10, 100, 500, 1000) with the same random starts and keep the
        fit whose partitions have the lowest :func:`single_task_objective` (each task's
        k-means objective on unit-norm rows for the cosine affinity, on the rows as given
        otherwise), i.e. the coupling whose clusters are the best single-task clusterings;
        no labels are used. ``C_`` holds the value kept, ``C_scores_`` the criterion per grid
        value. Six fits; the kNN graph is built once. A fixed small weight such as ``C=1.0``
        leaves the tasks practically decoupled on the paper's data sets, hence the search.
    b : float, default=30
        Trace of the kernel; only the ``ceil(b)`` smallest eigenpairs of ``L + C S`` are computed.
    n_neighbors : int, default=10
        Size of the within-task kNN graph.
    affinity : str or Divergence, default="cosine"
        Edge weights of the graph: ``"cosine"`` (the paper) or a registered divergence turned
        into a similarity ``exp(-d(x_i, x_j) / sigma)``, ``sigma`` the task's median kNN
        divergence (see :func:`task_knn_graph`).
    affinity_params : dict, optional
        Parameters of that divergence.
    joint : bool or "auto", default="auto"
        True: one kernel k-means over all tasks (the paper). False: kernel k-means per task,
        allowing a different number of clusters per task. ``"auto"``: True when every task
        has the same number of clusters and the same kind of ``init``, False otherwise; the
        mode used is ``joint_``. The kernel is learned jointly in every mode.
    init : {"random-partition", "k-means++", "random"} or list, default="random-partition"
        Start of each kernel k-means run (Euclidean k-means on the rows of the kernel factor).
        ``"random-partition"``: a uniformly random labelling (each cluster non-empty), the
        usual kernel k-means start. ``"k-means++"`` / ``"random"``: k-means++ or random
        seeding on the rows of the factor. The paper does not say which it uses; the learned
        kernel has a few eigenvectors supported on small groups of points, and k-means++ tends
        to split those off (with a lower kernel k-means objective than the class split), while
        random partitions start from balanced clusters. See :func:`factor_kernel_kmeans`. A
        list gives one entry per task: an ``(n_t,)`` integer label array or a
        ``(K_t, n_features)`` array of input-space centres (each row takes the label of its
        nearest centre); the factor's cluster means of those labels start one run. With
        ``joint=True`` every task needs the same kind (``joint="auto"`` then clusters per task).
    n_init : int, default=10
        Restarts of the kernel k-means.
    max_iter : int, default=300
    tol : float, default=1e-4
    eigen_solver : {"auto", "arpack", "lobpcg", "dense"}, default="auto"
        See :func:`smallest_eigenpairs`.
    eigen_tol : float, default=0.0
    random_state : int, RandomState or None
    normalize_factor : bool, default=True
        Cluster the rows of the factor scaled to unit norm, i.e. kernel k-means on the
        normalised kernel ``K_ij / sqrt(K_ii K_jj)`` (as Ng, Jordan & Weiss do with spectral
        embeddings). The learned kernel, ``embedding_`` and the objectives are unaffected.
        ``init="k-means++", normalize_factor=False`` is the procedure as printed in the paper.
    verbose : int, default=0
        0: silent; 1: a progress bar (standard error) over the values of ``C`` fitted (one,
        or the six of ``C="auto"``) with the objective of each; 2: also one line per value.

    Attributes
    ----------
    labels_ : list of ndarray
        Cluster labels per task.
    embedding_ : ndarray of shape (n, ceil(b))
        Factor ``F = P diag(sqrt(gamma))`` of the learned kernel ``K* = F F^T``, rows stacked in
        task order.
    cluster_embedding_ : ndarray of shape (n, ceil(b))
        The rows kernel k-means clustered: ``embedding_`` with unit-norm rows when
        ``normalize_factor=True``, else ``embedding_`` itself.
    eigenvalues_ : ndarray of shape (ceil(b),)
        Smallest eigenvalues ``sigma_i`` of ``A = L + C S``.
    eigenvectors_ : ndarray of shape (n, ceil(b))
    gamma_, kernel_spectrum_ : ndarray of shape (ceil(b),)
        Learned weights (the eigenvalues of ``K*``), Theorem 0.2.
    affinity_matrix_ : scipy.sparse.csr_matrix
        The within-task kNN graph ``W``.
    objective_, smoothness_, mmd_ : float
        ``tr((L + C S) K*)``, ``tr(L K*)`` and ``tr(S K*)``.
    objective_history_ : ndarray of shape (1,)
        ``[objective_]``: the kernel is learned in closed form, in one step.
    n_tasks_, n_features_in_ : int
    inertia_ : float
        Kernel k-means objective (summed over tasks when not ``joint_``).
    joint_ : bool
        Whether one kernel k-means ran over all tasks (``joint``, with ``"auto"`` resolved).
    task_sizes_ : ndarray of shape (m,)
    n_clusters_ : list of int
    C_ : float
        The MMD weight of the fit (``C``, or the value ``C="auto"`` kept).
    C_scores_ : ndarray of shape (len(AUTO_C_GRID),)
        With ``C="auto"`` only: :func:`single_task_objective` of the fit at every grid value.

    Notes
    -----
    Paper Eq. 10 with the closed form of Theorem 0.2: ``K* = P diag(gamma) P^T`` where ``P`` are
    eigenvectors of ``A = L + C S`` and ``gamma`` is 1 on the ``floor(b)`` smallest eigenvalues
    and ``b - floor(b)`` on the next. ``S`` is applied as a rank ``m - 1`` operator and the
    eigenpairs come from ARPACK on ``c I - A``: memory is ``O(nnz(W) + n b)``.

    References
    ----------
    Q. Gu, Z. Li and J. Han. Learning a kernel for multi-task clustering. AAAI 2011.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.RandomState(0)
    >>> Xs = [np.abs(rng.randn(40, 5)) + 3 * np.eye(5)[rng.randint(0, 2, 40)] for _ in range(2)]
    >>> est = NonparametricKernelMTC(2, C=1.0, b=5, n_neighbors=5, random_state=0).fit(Xs)
    >>> [lab.shape for lab in est.labels_]
    [(40,), (40,)]
    """

    _parameter_constraints = {**_BaseKernelMTC._parameter_constraints,
                              "C": [Interval(numbers.Real, 0.0), Options("auto")]}

    def __init__(self, n_clusters=8, *, C="auto", b=30, n_neighbors=10, affinity="cosine",
                 affinity_params=None, joint="auto", init="random-partition", normalize_factor=True,
                 n_init=10, max_iter=300, tol=1e-4, eigen_solver="auto", eigen_tol=0.0,
                 random_state=None, verbose=0):
        self.n_clusters = n_clusters
        self.C = C
        self.b = b
        self.n_neighbors = n_neighbors
        self.affinity = affinity
        self.affinity_params = affinity_params
        self.joint = joint
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.eigen_solver = eigen_solver
        self.eigen_tol = eigen_tol
        self.random_state = random_state
        self.normalize_factor = normalize_factor
        self.verbose = verbose

    @fit_callbacks
    def fit(self, Xs, y=None):
        """Learn the kernel and cluster.

        Parameters
        ----------
        Xs : list of {array-like, sparse matrix} of shape (n_t, n_features)
        y : ignored

        Returns
        -------
        self
        """
        Xs, sizes, ks, parsed, self.joint_ = self._validate_common(Xs)
        n = int(sizes.sum())
        if self.b > n:
            raise ValueError(f"b={self.b} exceeds the number of points n={n}; need 0 < b <= n.")
        rng = check_random_state(self.random_state)
        W, L = self._graph(Xs)
        if not isinstance(self.C, str):
            self.C_ = float(self.C)
            with progress(self.verbose, total=1, desc=type(self).__name__) as bar:
                self._fit_C(Xs, sizes, ks, parsed, W, L, self.C_, rng)
                bar.step(self.objective_, C=f"{self.C_:g}")
            return self
        # C="auto": one fit per grid value from the same random stream; keep the fit whose
        # partitions are the best single-task k-means clusterings (see the class docstring).
        seed = rng.randint(np.iinfo(np.int32).max)
        scores, best = [], None
        with progress(self.verbose, total=len(AUTO_C_GRID),
                      desc=f"{type(self).__name__} C='auto'") as bar:
            for C in AUTO_C_GRID:
                self._fit_C(Xs, sizes, ks, parsed, W, L, C, np.random.RandomState(seed))
                score = self._score_criterion(Xs, self.labels_)
                scores.append(score)
                bar.step(self.objective_, C=f"{C:g}", criterion=f"{score:.6g}")
                if best is None or score < best[0]:
                    best = (score, C, dict(vars(self)))
        vars(self).update(best[2])
        self.C_ = best[1]
        self.C_scores_ = np.array(scores)
        return self

    def _fit_C(self, Xs, sizes, ks, parsed, W, L, C, rng):
        k = int(np.ceil(self.b))
        sig, P = smallest_eigenpairs(W, k, C=C, task_sizes=sizes,
                                     eigen_solver=self.eigen_solver, tol=self.eigen_tol,
                                     random_state=rng)
        gamma = nonparametric_kernel_weights(sig, self.b)
        self.eigenvalues_ = sig
        self.gamma_ = gamma
        return self._finish(Xs, sizes, ks, parsed, W, L, sig, P, gamma, rng, C)


class SpectralKernelMTC(_BaseKernelMTC):
    """LSKMTC: learn a spectral kernel for multi-task clustering (Gu, Li & Han 2011).

    ``fit(Xs)`` takes a list of tasks (2-D arrays or sparse matrices sharing one feature space);
    per-task results are lists (``labels_[t]``).

    Parameters
    ----------
    n_clusters : int or list of int, default=8
        Clusters: one int for every task or one per task (then ``joint="auto"`` clusters each
        task on its own). The default is scikit-learn's ``KMeans`` default, the rule of every
        flat clustering estimator of this library.
    C : float, default=1.0
        Weight of the MMD term. ``C=0`` is the paper's LSKMTC0, degenerate by construction
        (see Notes; warns).
    b : float, default=1
        Trace of the kernel, ``0 < b <= n_eigenvectors``.
    n_eigenvectors : int, default=30
        ``r``: smallest eigenvectors of ``L`` spanning the kernel.
    tie_tol : float, default=1e-8
        Eigenvalues of ``L`` closer than this (relative) are treated as one repeated eigenvalue
        whose eigenvectors share one weight (0: the plain LP 15). See
        :func:`spectral_kernel_weights`.
    n_neighbors, affinity, affinity_params, joint, init, normalize_factor, n_init, max_iter, \
tol, eigen_solver, eigen_tol, random_state
        As in :class:`NonparametricKernelMTC`.
    verbose : int, default=0
        0: silent; 1: a progress bar (standard error) over the fit's three stages
        (eigenpairs of ``L``, LP 15, kernel k-means) ending on the objective; 2: also one line
        per stage.

    Attributes
    ----------
    labels_ : list of ndarray
    embedding_ : ndarray of shape (n, r)
        ``F = V diag(sqrt(mu))``; ``K* = F F^T``.
    cluster_embedding_ : ndarray of shape (n, r)
        As in :class:`NonparametricKernelMTC`.
    eigenvalues_ : ndarray of shape (r,)
        Smallest eigenvalues ``lambda_t`` of ``L``.
    eigenvectors_ : ndarray of shape (n, r)
    mmd_costs_ : ndarray of shape (r,)
        ``s_t = v_t^T S v_t``.
    mu_, kernel_spectrum_ : ndarray of shape (r,)
        Learned weights (LP 15).
    affinity_matrix_, objective_, objective_history_, smoothness_, mmd_, inertia_, \
task_sizes_, n_clusters_, n_tasks_, n_features_in_, joint_
        As in :class:`NonparametricKernelMTC`.

    Warns
    -----
    UserWarning
        At fit time when ``C=0`` (degenerate by construction, see Notes).

    Notes
    -----
    Paper Eq. 13-15: ``K* = sum_t mu_t v_t v_t^T`` over the ``r`` smoothest eigenvectors of
    ``L`` with ``mu`` solving ``min sum_t (lambda_t + C v_t^T S v_t) mu_t`` s.t.
    ``sum mu_t = b``, ``1 >= mu_1 >= ... >= mu_r >= 0`` (cvxpy, :func:`spectral_kernel_weights`).
    Eigenvectors of a repeated eigenvalue of ``L`` get equal weights (``tie_tol``); the paper
    leaves this unspecified, but without it ``K*`` depends on the arbitrary basis the eigensolver
    returns for the (at least ``m``-fold) zero eigenvalue of the within-task graph.

    ``C=0`` (the paper's LSKMTC0) is degenerate by construction and warns at fit time: the
    costs are then the eigenvalues of ``L`` alone, so (for ``b`` up to the number of connected
    components) the weights sit only on the graph's null space, the component indicators times
    ``sqrt(degree)``. That kernel separates the tasks and the graph's components, not clusters.

    References
    ----------
    Q. Gu, Z. Li and J. Han. Learning a kernel for multi-task clustering. AAAI 2011.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.RandomState(0)
    >>> Xs = [np.abs(rng.randn(40, 5)) + 3 * np.eye(5)[rng.randint(0, 2, 40)] for _ in range(2)]
    >>> est = SpectralKernelMTC(2, C=1.0, b=1, n_eigenvectors=6, n_neighbors=5,
    ...                         random_state=0).fit(Xs)
    >>> bool(abs(est.mu_.sum() - 1) < 1e-6)
    True
    """

    def __init__(self, n_clusters=8, *, C=1.0, b=1, n_eigenvectors=30, tie_tol=1e-8,
                 n_neighbors=10, affinity="cosine", affinity_params=None, joint="auto",
                 init="random-partition", normalize_factor=True, n_init=10, max_iter=300,
                 tol=1e-4, eigen_solver="auto", eigen_tol=0.0, random_state=None, verbose=0):
        self.n_clusters = n_clusters
        self.C = C
        self.b = b
        self.n_eigenvectors = n_eigenvectors
        self.tie_tol = tie_tol
        self.n_neighbors = n_neighbors
        self.affinity = affinity
        self.affinity_params = affinity_params
        self.joint = joint
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.eigen_solver = eigen_solver
        self.eigen_tol = eigen_tol
        self.random_state = random_state
        self.normalize_factor = normalize_factor
        self.verbose = verbose

    @fit_callbacks
    def fit(self, Xs, y=None):
        """Learn the spectral kernel and cluster.

        Parameters
        ----------
        Xs : list of {array-like, sparse matrix} of shape (n_t, n_features)
        y : ignored

        Returns
        -------
        self
        """
        Xs, sizes, ks, parsed, self.joint_ = self._validate_common(Xs)
        if float(self.C) == 0.0:
            warnings.warn(
                "C=0 makes LSKMTC degenerate by construction: without the MMD term LP (15) "
                "puts the kernel weight on the graph's null space (one indicator per connected "
                "component times sqrt(degree)), which separates tasks and graph components, "
                "not clusters; use C > 0 (e.g. C=100).", UserWarning, stacklevel=user_stacklevel())
        n = int(sizes.sum())
        r = check_scalar(self.n_eigenvectors, "n_eigenvectors", kind=numbers.Integral, lo=1)
        if r > n:
            raise ValueError(
                f"n_eigenvectors={r} exceeds the number of points n={n}; need r <= n."
            )
        if self.b > r:
            raise ValueError(
                f"b={self.b} exceeds n_eigenvectors={r}; the spectral kernel has trace at most r."
            )
        rng = check_random_state(self.random_state)
        W, L = self._graph(Xs)
        with progress(self.verbose, total=3, desc=type(self).__name__) as bar:
            lam, V = smallest_eigenpairs(W, r, eigen_solver=self.eigen_solver,
                                         tol=self.eigen_tol, random_state=rng)
            bar.step(stage="eigenpairs")
            starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            s = np.einsum("ij,ij->j", V, _apply_S(V, sizes, starts))
            mu = spectral_kernel_weights(lam, s, float(self.C), float(self.b),
                                         tie_tol=self.tie_tol)
            bar.step(stage="LP (15)")
            self.eigenvalues_ = lam
            self.mmd_costs_ = s
            self.mu_ = mu
            self._finish(Xs, sizes, ks, parsed, W, L, lam, V, mu, rng, float(self.C))
            bar.step(self.objective_, stage="kernel k-means")
        return self


#: Paper names.
LNKMTC = NonparametricKernelMTC
LSKMTC = SpectralKernelMTC
