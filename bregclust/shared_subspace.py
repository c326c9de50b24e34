"""Shared-subspace multi-task clustering (LSSMTC) and transductive transfer (LSSTTC).

Gu & Zhou, "Learning the shared subspace for multi-task clustering and transductive transfer
classification", ICDM 2009. The updates are restated in :doc:`/guide/shared_subspace`; this module
keeps the paper's symbols but the row convention of the rest of the library: task ``k`` is an
``(n_k, d)`` matrix ``X_k`` (one point per row), ``P_k`` is ``(n_k, c)``, ``M_k`` is ``(d, c)``,
``W`` is ``(d, l)`` and the shared centres ``M`` are ``(l, c)``.

    J = lam * sum_k ||X_k - P_k M_k^T||_F^2 + (1 - lam) * sum_k ||X_k W - P_k M^T||_F^2,
    W^T W = I,  P_k >= 0.

The eigen-step for ``W`` is solved inside the row space of the stacked data (thin SVD, or an
eigen-decomposition of the smaller Gram matrix for sparse input), so a 40,000-term vocabulary
never needs a ``d x d`` eigenproblem. Outside that span ``X W = 0`` and the shared term would be
trivially zero; inside it the problem is an ``r x r`` eigenproblem (``r`` = numerical rank) of a
diagonal matrix minus a rank-``c`` term, solved densely for small ``r`` and by shift-invert
Lanczos (Woodbury inverse) otherwise.
"""

import numbers
import warnings
from typing import NamedTuple

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment
from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, LinearOperator, eigsh
from sklearn.base import BaseEstimator, ClassifierMixin, ClusterMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, check_memory

from ._callbacks import fit_callbacks
from ._conditioning import Conditioning, exponent
from ._multitask import (
    Interval,
    MultiTaskMixin,
    as_history,
    check_n_clusters_per_task,
    check_params,
    check_task_magnitudes,
    nearest_center_labels,
    parse_init,
    within_cluster_per_point,
)
from ._progress import progress
from ._validation import check_array, check_class_labels, check_scalar, check_tasks, user_stacklevel

__all__ = ["SharedSubspaceClustering", "SharedSubspaceTransfer", "LSSMTC", "LSSTTC"]

_TINY = np.finfo(np.float64).tiny
_DENSE_EIG_MAX_RANK = 1000  # below this an r x r dense eigh costs less than an iterative solver
_ARPACK_MAX_L = 32  # beyond this many eigenvectors ARPACK's Ritz-vector cost exceeds eigh's


# --------------------------------------------------------------------------------------------
# Linear algebra helpers (plain arrays; inputs already validated)
# --------------------------------------------------------------------------------------------

def _sq_frobenius(X):
    if sp.issparse(X):
        return float(X.data @ X.data)
    return float(np.einsum("ij,ij->", X, X))


def _stack(Xs):
    if any(sp.issparse(X) for X in Xs):
        return sp.vstack([sp.csr_matrix(X) for X in Xs], format="csr")
    return np.vstack(Xs)


def _unique_rows(X):
    """``(first, inverse)``: rows ``first`` of CSR ``X`` are its distinct rows, in order of first
    occurrence, and row ``i`` of ``X`` equals row ``first[inverse[i]]``.

    Tasks often share documents (the same corpus under two label sets); the row space, and so
    the Gram eigenproblem, only needs each distinct row once. Rows are compared by their stored
    pattern and values (canonical CSR), so numerically equal rows stored differently are kept
    apart, which only costs time.
    """
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    seen, first, inverse = {}, [], np.empty(X.shape[0], dtype=np.intp)
    ind, dat, ptr = X.indices, X.data, X.indptr
    for i in range(X.shape[0]):
        a, b = ptr[i], ptr[i + 1]
        key = (ind[a:b].tobytes(), dat[a:b].tobytes())
        j = seen.setdefault(key, len(first))
        if j == len(first):
            first.append(i)
        inverse[i] = j
    return np.asarray(first, dtype=np.intp), inverse


def _distinct_rows(X, first, inverse):
    """``(Xu, w)``: the distinct rows ``Xu = X[first]`` and ``w``, the square root of how often
    each occurs, so ``Xw = diag(w) Xu`` has the row space of ``X`` and ``Xw^T Xw = X^T X``.
    ``(X, None)`` when no row repeats."""
    if first.size == X.shape[0]:
        return X, None
    return X[first], np.sqrt(np.bincount(inverse).astype(np.float64))


def _span_factors(X):
    """The factorisation behind :class:`_SpanBasis` (its one cubic-cost step).

    Returns ``(V, A, s, first, inverse)``. Either ``V`` (d x r, orthonormal) and ``A = X V``,
    or ``V = None``, ``A = U``: the eigenvectors of the Gram matrix ``Xw Xw^T`` of the distinct
    rows ``first`` of sparse ``X`` weighted by the square root of their multiplicity (see
    :func:`_distinct_rows`; ``inverse`` maps rows of ``X`` to them). A plain function
    of ``X`` so that ``memory`` (joblib) can cache it across fits.
    """
    n, d = X.shape
    eps = np.finfo(np.float64).eps
    if not sp.issparse(X):
        U, s, Vt = np.linalg.svd(X, full_matrices=False)
        keep = s > (s[0] if s.size else 0.0) * max(n, d) * eps
        if not keep.any():
            keep = np.zeros_like(s, dtype=bool)
        s = s[keep]
        return Vt[keep].T.copy(), U[:, keep] * s, s, None, None
    if d <= n:
        G = (X.T @ X).toarray()
        e, V = np.linalg.eigh(G)
        e, V = e[::-1], V[:, ::-1]
        keep = e > (e[0] if e.size else 0.0) * max(n, d) * eps * 10
        e, V = e[keep], np.ascontiguousarray(V[:, keep])
        return V, np.asarray(X @ V), np.sqrt(e), None, None
    # Repeated rows (tasks sharing documents) are factorised once: the Gram matrix of the
    # weighted distinct rows has the same non-zero spectrum and row-space basis.
    first, inverse = _unique_rows(X)
    Xu, w = _distinct_rows(X, first, inverse)
    G = (Xu @ Xu.T).toarray()
    if w is not None:  # Gram matrix of diag(w) Xu, scaled in place (no n x n temporary)
        G *= w[:, np.newaxis]
        G *= w[np.newaxis, :]
    e, U = np.linalg.eigh(G)
    del G
    e, U = e[::-1], U[:, ::-1]
    # Gram eigenvectors of tiny eigenvalues give V = X^T U / s with a loss of
    # orthogonality ~ eps * e_max / e: keep e above sqrt(eps) * e_max.
    keep = e > (e[0] if e.size else 0.0) * np.sqrt(eps)
    e, U = e[keep], U[:, keep]
    return None, U, np.sqrt(e), first, inverse


class _SpanBasis:
    """An orthonormal basis ``V`` (d x r) of the row space of the stacked data ``X``.

    Stores ``Y = X V`` (n x r, with ``Y^T Y = diag(s^2)``) and maps subspace coordinates ``Z``
    (r x l) to ``W = V Z`` (d x l) without forming ``V`` when ``d`` is the large side of sparse
    data (there ``V = Xw^T U diag(1/s)``, ``Xw = diag(w) Xu`` the distinct rows ``Xu`` of ``X``
    weighted by :func:`_distinct_rows`).
    ``factors``: :func:`_span_factors`'s output for this ``X`` (e.g. from a cache).
    """

    def __init__(self, X, factors=None):
        V, A, s, first, inverse = _span_factors(X) if factors is None else factors
        self.V = V
        self._X = None
        self._coef = None
        if V is None:
            U = A
            self._X, w = _distinct_rows(X, first, inverse)
            self._coef = U / s
            A = U * s  # = Xw V
            if w is not None:
                self._coef *= w[:, np.newaxis]  # V = Xw^T U / s = Xu^T (diag(w) U / s)
                A = (A / w[:, np.newaxis])[inverse]  # row i of X is row inverse[i] of Xw / w
        self.Y = A
        self.s2 = s * s
        self.rank = int(s.size)

    def components(self, Z):
        """``W = V Z`` with orthonormal columns (d x l)."""
        if self.V is not None:
            return self.V @ Z
        W = np.asarray(self._X.T @ (self._coef @ Z))
        Q, R = np.linalg.qr(W)
        return Q * np.sign(np.diag(R))[np.newaxis, :]


def _span_basis(X, memory):
    """:class:`_SpanBasis` of ``X``; ``memory`` (a checked joblib.Memory) caches its
    factorisation (a no-op when its location is None)."""
    return _SpanBasis(X, memory.cache(_span_factors)(X))


def _smallest_eigvecs(s2, H, l, solver="auto"):
    """Eigenvectors of ``C = diag(s2) - H H^T`` (PSD) for the ``l`` smallest eigenvalues."""
    r = s2.shape[0]
    if solver == "auto":
        solver = "dense" if (r <= _DENSE_EIG_MAX_RANK or l > _ARPACK_MAX_L) else "arpack"
    if solver == "arpack":
        try:
            return _smallest_eigvecs_arpack(s2, H, l)
        except (ArpackNoConvergence, ArpackError, np.linalg.LinAlgError):
            pass  # fall through to the exact dense solve
    C = np.diag(s2) - H @ H.T
    C = 0.5 * (C + C.T)
    _, Z = sla.eigh(C, subset_by_index=[0, l - 1])
    return Z


def _smallest_eigvecs_arpack(s2, H, l):
    """Shift-invert Lanczos with the Woodbury inverse of ``diag(s2) - sigma - H H^T``."""
    r, c = H.shape
    sigma = -(1e-8 * s2.max() + 1e-3 * s2.min())
    dd = s2 - sigma
    Hd = H / dd[:, None]
    K = np.eye(c) - H.T @ Hd
    Kc = sla.cho_factor(0.5 * (K + K.T))

    def matvec(x):
        x = np.ravel(x)
        return s2 * x - H @ (H.T @ x)

    def inv(x):
        x = np.ravel(x)
        return x / dd + Hd @ sla.cho_solve(Kc, Hd.T @ x)

    A = LinearOperator((r, r), matvec=matvec, dtype=np.float64)
    Op = LinearOperator((r, r), matvec=inv, dtype=np.float64)
    # ARPACK's start vector is fixed so results are reproducible.
    v0 = np.ones(r) / np.sqrt(r)
    w, Z = eigsh(A, k=l, sigma=sigma, which="LM", OPinv=Op, v0=v0, tol=0)
    order = np.argsort(w)
    return Z[:, order]


def _w_step(basis, P, n_components, solver="auto"):
    """Coordinates ``Z`` (r x l) of the optimal ``W = V Z`` for the stacked partition ``P``.

    ``min tr(W^T X^T (I - P (P^T P)^+ P^T) X W)`` over ``W = V Z``, ``Z^T Z = I``
    (paper Eq. 16, restricted to the row space of ``X``).
    """
    Qp = _col_basis(P)
    H = basis.Y.T @ Qp
    return _smallest_eigvecs(basis.s2, H, n_components, solver=solver)


def _col_basis(P):
    """Orthonormal basis of the column space of ``P`` (rank-revealing)."""
    U, s, _ = np.linalg.svd(P, full_matrices=False)
    keep = s > (s[0] if s.size else 0.0) * max(P.shape) * np.finfo(np.float64).eps
    return U[:, keep]


def _centers(F, P):
    """``F^T P (P^T P)^+`` for ``F`` (n x q) dense or sparse: least-squares centres (q x c)."""
    FtP = np.asarray(F.T @ P)
    return FtP @ _pinv_hermitian(P.T @ P)


def _pinv_hermitian(A):
    """``np.linalg.pinv(A, hermitian=True)`` for a real symmetric ``A``, bit for bit.

    The same steps as numpy's (``eigh``, singular values by decreasing magnitude with the signs
    moved into ``V``, cut-off ``1e-15 * max``, ``V diag(1/s) U^T``) without its wrappers for
    stacked and complex input, which cost half of the time on the small ``c x c`` matrices the
    alternating minimisation inverts thousands of times per fit.

    >>> P = np.array([[1.0, 0.0, 1.0], [2.0, 0.0, 2.0], [0.0, 3.0, 0.0]])  # rank 2
    >>> A = P.T @ P
    >>> bool(np.array_equal(_pinv_hermitian(A), np.linalg.pinv(A, hermitian=True)))
    True
    """
    s, u = np.linalg.eigh(A)
    sgn = np.copysign(1.0, s)
    s = np.abs(s)
    order = np.argsort(s)[::-1]
    s, sgn, u = s[order], sgn[order], u[:, order]
    large = s > 1e-15 * s.max()
    s = np.divide(1.0, s, where=large, out=s)
    s[~large] = 0.0
    return (u * sgn) @ (s[:, None] * u.T)


def _mult_update(P, A, B):
    """One square-root multiplicative step, paper Eq. (18) (Theorem III.4).

    ``P <- P * sqrt((A+ + P B-) / (A- + P B+))``; it cannot increase
    ``tr(P B P^T) - 2 tr(A P^T)`` and keeps ``P >= 0``.
    """
    Ap, An = np.maximum(A, 0.0), np.maximum(-A, 0.0)
    Bp, Bn = np.maximum(B, 0.0), np.maximum(-B, 0.0)
    num = Ap + P @ Bn
    den = An + P @ Bp
    ratio = np.divide(num, den, out=np.ones_like(num), where=den > _TINY)
    return P * np.sqrt(ratio)


def _objective(Xs, sqn, XWs, P_list, M, Mk_list, lam, within):
    """``J`` of paper Eq. (4) / (20) at the given blocks (``XWs[k] = X_k W``; ``Mk_list[k]``
    None when unused)."""
    J = 0.0
    for k, X in enumerate(Xs):
        Pk = P_list[k]
        if within[k] and lam > 0:
            Mk = Mk_list[k]
            XtP = np.asarray(X.T @ Pk)
            jk = sqn[k] - 2.0 * np.sum(Mk * XtP) + np.sum((Mk.T @ Mk) * (Pk.T @ Pk))
            J += lam * max(jk, 0.0)
        if lam < 1:
            R = XWs[k] - Pk @ M.T
            J += (1.0 - lam) * float(np.einsum("ij,ij->", R, R))
    return J


class _LSSRun(NamedTuple):
    """What :func:`_lss_fit` returns (a named tuple: callers may still unpack it in order)."""

    P_list: list  # the partitions P_k, (n_k, c) each
    Z: np.ndarray  # the shared subspace, as coefficients of the span basis
    M: np.ndarray  # the shared centres in the subspace, (c, l)
    Mk_list: list  # the within-task centres M_k, (c, d) (None where a task has no such term)
    history: list  # the objective after every sweep, the initial one first
    n_iter: int
    converged: bool
    steps: list  # (step name, objective) after every block step with trace=True, else None


def _lss_fit(Xs, basis, P_list, *, lam, n_components, update, within, max_iter, tol,
             eig_solver="auto", trace=False, verbose=0, desc="LSSMTC"):
    """The alternating minimisation of Algorithms 1 and 2 on plain arrays.

    Parameters
    ----------
    Xs : list of (n_k, d) ndarray or CSR
    basis : _SpanBasis of the stacked ``Xs``
    P_list : list of (n_k, c) non-negative ndarray, the initial partitions (copied)
    update, within : list of bool
        Which tasks' ``P_k`` are updated, and which tasks carry the within-task term
        (LSSMTC: all; LSSTTC: the target only).
    trace : bool
        Also return the objective after every block step (for tests).
    verbose, desc
        Progress bar (:func:`bregclust._progress.progress`): one step per sweep.

    Returns
    -------
    _LSSRun
    """
    sizes = [X.shape[0] for X in Xs]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    sqn = [_sq_frobenius(X) for X in Xs]
    P_list = [np.array(P, dtype=np.float64, copy=True) for P in P_list]
    use_within = lam > 0
    use_shared = lam < 1

    def split(XW):
        return [XW[offsets[k]:offsets[k + 1]] for k in range(len(Xs))]

    def profiled(XW):
        P = np.vstack(P_list)
        M = _centers(XW, P)
        Mk_list = [_centers(X, P_list[k]) if (within[k] and use_within) else None
                   for k, X in enumerate(Xs)]
        return M, Mk_list

    Z = _w_step(basis, np.vstack(P_list), n_components, eig_solver)
    XW = basis.Y @ Z
    XWs = split(XW)
    M, Mk_list = profiled(XW)
    J = _objective(Xs, sqn, XWs, P_list, M, Mk_list, lam, within)
    history = [J]
    steps = [("init", J)] if trace else None
    converged = False
    n_iter = 0
    with progress(verbose, total=max_iter, desc=desc) as bar:
        for it in range(max_iter):
            n_iter = it + 1
            # M = W^T X^T P (P^T P)^-1 for the current W and stacked P (Algorithm 1, line 1)
            # and the within-task M_k are those of the last W step: W and P have not changed.
            for k, X in enumerate(Xs):
                if not update[k]:
                    continue
                Pk = P_list[k]
                A = np.zeros_like(Pk)
                B = np.zeros((Pk.shape[1], Pk.shape[1]))
                if within[k] and use_within:
                    Mk = Mk_list[k]
                    A += lam * np.asarray(X @ Mk)
                    B += lam * (Mk.T @ Mk)
                if use_shared:
                    A += (1.0 - lam) * (XWs[k] @ M)
                    B += (1.0 - lam) * (M.T @ M)
                P_list[k] = _mult_update(Pk, A, B)
                if trace:
                    steps.append((f"P[{k}]", _objective(Xs, sqn, XWs, P_list, M, Mk_list,
                                                        lam, within)))
            # W (jointly with M): eigenvectors of X^T (I - P (P^T P)^-1 P^T) X, smallest l.
            Z = _w_step(basis, np.vstack(P_list), n_components, eig_solver)
            XW = basis.Y @ Z
            XWs = split(XW)
            M, Mk_list = profiled(XW)
            J_new = _objective(Xs, sqn, XWs, P_list, M, Mk_list, lam, within)
            if trace:
                steps.append(("W,M,M_k", J_new))
            history.append(J_new)
            bar.step(J_new)
            if J - J_new <= tol * max(abs(J), _TINY):
                converged = True
                J = J_new
                break
            J = J_new
    return _LSSRun(P_list, Z, M, Mk_list, history, n_iter, converged, steps)


#: ``SharedSubspaceTransfer(n_components="auto")``: the paper's smallest grid value, capped by
#: the rank of the stacked data.
AUTO_TRANSFER_COMPONENTS = 100


def _check_n_components(n_components, rank):
    if isinstance(n_components, str):
        if n_components != "auto":
            raise ValueError(f"n_components must be a positive int or 'auto', got "
                             f"{n_components!r}.")
        if rank < 1:
            raise ValueError("the stacked data have rank 0 (every row is zero): there is no "
                             "subspace to learn.")
        return min(AUTO_TRANSFER_COMPONENTS, int(rank))
    check_scalar(n_components, "n_components", kind=numbers.Integral, lo=1)
    if n_components > rank:
        raise ValueError(
            f"n_components={n_components} exceeds the rank {rank} of the stacked data: the "
            "shared subspace is searched inside the span of the data points. Use "
            f"n_components <= {rank}."
        )
    return int(n_components)


def _check_squares(X, what, method, cond):
    """The objective is quadratic in the data: refuse data whose squared norm overflows, or
    that the common power-of-two scale ``cond`` of all tasks flushes to zero (tasks further
    apart than float64's range)."""
    data = X.data if sp.issparse(X) else X
    if cond.scale and data.size and not np.any(data):
        raise ValueError(
            f"{what} underflows to zero under the scale of the largest task (2^{cond.scale}): "
            f"the tasks lie further apart than float64's range; rescale each task.")
    with np.errstate(over="ignore", invalid="ignore"):
        sq = np.square(data).sum()
    if not np.isfinite(sq):
        big = float(np.abs(data).max())
        raise ValueError(
            f"{what} overflows float64 in {method}'s squared-error objective (largest "
            f"absolute value {big:.3g}, squared norm above 1.8e308); rescale the data, e.g. "
            "divide by its largest absolute value.")


def _maxabs(X):
    """Largest ``|x|`` of a task (0 when empty)."""
    data = X.data if sp.issparse(X) else np.asarray(X)
    return float(np.abs(data).max()) if data.size else 0.0


def _scale(Xs):
    """The power-of-two conditioning of LSSMTC/LSSTTC: both terms of the objective are squared
    errors (homogeneous of degree 2 in the data, the subspace ``W`` unit-free), so data of
    extreme magnitude are fitted as ``X 2^-e`` and the centres scaled back by ``2^e``."""
    big = 0.0
    for X in Xs:
        data = X.data if sp.issparse(X) else np.asarray(X)
        if data.size:
            big = max(big, float(np.abs(data).max()))
    return Conditioning(scale=exponent(big), degree=2)


def _onehot(labels, c, offset=0.0):
    P = np.full((labels.shape[0], c), float(offset))
    P[np.arange(labels.shape[0]), labels] += 1.0
    return P


def _kmeans_labels(X, n_clusters, random_state, init="k-means++", n_init=1):
    from .kmeans import BregmanKMeans

    km = BregmanKMeans(n_clusters, divergence="sqeuclidean", init=init, n_init=n_init,
                       random_state=random_state)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        km.fit(X)
    return np.asarray(km.labels_, dtype=np.int64), np.asarray(km.cluster_centers_)


def _align_to(ref_centers, centers):
    """Permutation ``perm`` with ``perm[j]`` = reference cluster matched to cluster ``j``."""
    D = (np.sum(centers ** 2, 1)[:, None] + np.sum(ref_centers ** 2, 1)[None, :]
         - 2.0 * centers @ ref_centers.T)
    rows, cols = linear_sum_assignment(D)
    perm = np.empty(centers.shape[0], dtype=np.int64)
    perm[rows] = cols
    return perm


def _check_rank(P, c, what):
    if np.linalg.matrix_rank(P) < c:
        raise ValueError(
            f"{what} has rank < n_clusters={c}: every cluster needs its own column "
            "(a cluster with no mass has no centre)."
        )
    return P


#: Deprecated spellings of the init strings (they still work, with a FutureWarning).
_INIT_ALIASES = {"k-means": "k-means++"}


def _hard_labels(X, lam, centers, components, shared_centers):
    """Index of the smallest :func:`_hard_costs`, under one power of two for the rows and the
    centres (rows and centres of extreme magnitude would over- or underflow in the costs)."""
    cond = _scale([X, centers, shared_centers])
    if cond.scale:
        X, centers, shared_centers = (cond.apply(X), cond.apply_centres(centers),
                                      cond.apply_centres(shared_centers))
    return np.argmin(_hard_costs(X, lam, centers, components, shared_centers), axis=1)


def _hard_costs(X, lam, centers, components, shared_centers):
    """``lam ||x - m2_j||^2 + (1 - lam) ||W^T x - m_j||^2`` up to a per-row constant."""
    D = np.zeros((X.shape[0], shared_centers.shape[0]))
    if lam > 0:
        D += lam * (-2.0 * np.asarray(X @ centers.T) + np.sum(centers ** 2, 1)[None, :])
    Zx = np.asarray(X @ components.T)
    D += (1 - lam) * (np.sum(Zx ** 2, 1)[:, None] - 2.0 * Zx @ shared_centers.T
                      + np.sum(shared_centers ** 2, 1)[None, :])
    return D


# --------------------------------------------------------------------------------------------
# Estimators
# --------------------------------------------------------------------------------------------

class SharedSubspaceClustering(MultiTaskMixin, ClusterMixin, BaseEstimator):
    """Learning the Shared Subspace for Multi-Task Clustering (LSSMTC).

    Clusters ``m`` related tasks (same features, same number of clusters) by combining
    per-task k-means in the input space with one k-means of all tasks in a learned shared
    ``l``-dimensional subspace ``W`` (Gu & Zhou, 2009). ``fit(Xs)`` takes a list of tasks,
    each an ``(n_k, n_features)`` array or sparse matrix; per-task results are lists
    (``labels_[k]``). Cluster ``j`` is the same cluster in every task (shared centre ``M[:, j]``).

    Parameters
    ----------
    n_clusters : int or list of int, default=8
        Number of clusters ``c``, the same in every task (a list must repeat one value: cluster
        ``j`` has one shared centre in every task). The default is scikit-learn's ``KMeans``
        default, the rule of every flat clustering estimator of this library.
    n_components : int, default=2
        Dimension ``l`` of the shared subspace (paper grid: 2, 4, 8, 16). At most the rank of
        the stacked data.
    lam : float, default=0.5
        ``lambda`` in [0, 1]: weight of the within-task term. ``lam=1`` is independent relaxed
        k-means per task, ``lam=0`` is ASI on all tasks together (paper grid 0.25, 0.5, 0.75).
    max_iter : int, default=3000
        Maximum number of alternating sweeps. The paper runs ``T = 20``; the square-root
        multiplicative update of ``P_k`` moves slowly, and after 20 sweeps from a k-means start
        the objective still drops markedly per sweep on the bundled digits tasks (``tol`` is
        met after hundreds of sweeps there, after tens on Rec.vs.Talk). Pass ``max_iter=20`` for the paper's procedure.
    tol : float, default=1e-6
        Stop when the relative decrease of the objective in a sweep is at most ``tol``.
    init : {"k-means++", "random"} or list, default="k-means++"
        ``"k-means++"``: k-means (k-means++ seeding, ``n_init`` restarts) in each task,
        clusters of later tasks matched to those of the first such task by their centres
        (Hungarian), then ``P_k = onehot + init_offset``. ``"random"``: uniform ``[0, 1)``
        entries. A list gives one entry per task: one of those strings, integer labels
        (``P_k = onehot + 0.2``), an ``(n_clusters, n_features)`` array of centres (each row
        takes the label of its nearest centre) or an ``(n_k, n_clusters)`` non-negative
        matrix. ``"k-means"`` is a deprecated alias of ``"k-means++"``.
    init_offset : float, default=0.2
        Added to the one-hot k-means partition. The multiplicative update keeps zero entries
        at zero, so a pure one-hot start could never move a point to another cluster.
    n_init : int, default=1
        k-means restarts per task for ``init="k-means++"``.
    random_state : int, RandomState instance or None, default=None
    memory : str, joblib.Memory or None, default=None
        Caches the factorisation of the stacked data's row space in this directory (the
        fit's one cubic-cost step: an SVD, or an eigendecomposition of the smaller Gram
        matrix, ``O(min(n, d)^3)`` for ``n`` distinct rows), as scikit-learn's
        ``AgglomerativeClustering`` caches its tree: refits on the same data (other seeds,
        ``lam``, ``n_components``, starts) then skip it. None caches nothing.
    verbose : int, default=0
        0: silent; 1: a progress bar (standard error) with the sweep count and the objective;
        2: also one line per sweep.

    Attributes
    ----------
    labels_ : list of ndarray of shape (n_k,)
        ``argmax_j P_k[i, j]`` for every task.
    membership_ : list of ndarray of shape (n_k, n_clusters)
        The relaxed partition matrices ``P_k >= 0``.
    components_ : ndarray of shape (n_components, n_features)
        ``W^T``: orthonormal rows spanning the shared subspace (inside the span of the data).
    centers_ : list of ndarray of shape (n_clusters, n_features)
        Per-task input-space centres ``M_k^T`` (None when ``lam == 0``).
    shared_centers_ : ndarray of shape (n_clusters, n_components)
        Centres ``M^T`` of all tasks in the shared subspace.
    objective_history_ : ndarray
        ``J`` (paper Eq. 4) after initialisation and after every sweep; non-increasing.
    n_iter_ : int
    n_tasks_ : int
    rank_ : int
        Numerical rank of the stacked data (the dimension of the eigenproblem).

    Notes
    -----
    ``J = lam sum_k ||X_k - P_k M_k^T||^2 + (1 - lam) sum_k ||X_k W - P_k M^T||^2`` with
    ``W^T W = I``, ``P_k >= 0``. Each sweep: ``M = W^T X^T P (P^T P)^-1``; per task
    ``M_k = X_k^T P_k (P_k^T P_k)^-1`` and the square-root multiplicative update
    ``P_k <- P_k sqrt((A+ + P_k B-) / (A- + P_k B+))`` with
    ``A = lam X_k M_k + (1 - lam) X_k W M``, ``B = lam M_k^T M_k + (1 - lam) M^T M``; then
    ``W`` = eigenvectors of ``X^T (I - P (P^T P)^-1 P^T) X`` for the ``l`` smallest eigenvalues,
    restricted to the row space of ``X`` (otherwise, whenever ``d`` exceeds the number of points,
    ``W`` falls in the null space of ``X`` and the cross-task term vanishes). Every step is a
    block minimisation or an auxiliary-function step, so ``J`` never increases.

    ``labels_`` is the argmax of the relaxed memberships ``P_k >= 0``: a row is read as a
    nonnegative combination of the centres (the model's intended data are nonnegative, like word
    counts). Clusters that differ by an offset along a shared direction are read less well: two
    unit-noise blobs at ``(5, 5, 5)`` and ``(11, 11, 5)`` converge with 2 of 40 rows on the wrong
    side, though nearest-centre k-means separates them (stopping after the paper's 20 sweeps, from
    the true partition, kept them apart; ``max_iter`` sets that budget).

    When ``n_features >= n_samples`` the span holds the ``c`` directions with ``X W`` equal to
    an orthonormal basis of the columns of ``P``; they have eigenvalue 0, so for
    ``n_components <= n_clusters`` the shared term only confirms the current partition.

    The ``W`` step takes the directions of least within-cluster scatter, so on data with
    near-constant features the subspace settles where every row is almost 0 and the shared
    term stops coupling the tasks. On the bundled digits tasks (``make_digits_tasks``, random
    start, ``n_components=2``) both directions lie (99.9 % of their mass) on pixels drawn in at
    most 1 image in 200; ``||X W||^2`` is 4.1 against ``||X||^2 = 6.9e6`` and the shared term
    1.9 against a within-task term of 7.3e5. ``lam`` then only rescales the within-task term,
    which neither the multiplicative step (a ratio of parts that all scale by ``lam``) nor the
    relative ``tol`` sees: ``lam`` from 0.1 to 1 gives the same sweeps and labels (memberships
    within 1e-4). Remove such features for the tasks to interact.

    References
    ----------
    Q. Gu and J. Zhou. Learning the shared subspace for multi-task clustering and transductive
    transfer classification. ICDM 2009, 159-168.

    Examples
    --------
    >>> import numpy as np
    >>> from bregclust.shared_subspace import SharedSubspaceClustering
    >>> rng = np.random.default_rng(0)
    >>> centres = np.array([[8.0, 1.0, 1.0], [1.0, 8.0, 1.0]])
    >>> Xs = [np.repeat(centres, 20, axis=0) + rng.normal(size=(40, 3)) for _ in range(2)]
    >>> est = SharedSubspaceClustering(2, n_components=2, lam=0.5,
    ...                                init=[np.repeat([0, 1], 20)] * 2).fit(Xs)
    >>> [np.bincount(lab).tolist() for lab in est.labels_]
    [[20, 20], [20, 20]]
    """

    def __init__(self, n_clusters=8, *, n_components=2, lam=0.5, max_iter=3000, tol=1e-6,
                 init="k-means++", init_offset=0.2, n_init=1, random_state=None,
                 memory=None, verbose=0):
        self.n_clusters = n_clusters
        self.n_components = n_components
        self.lam = lam
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.init_offset = init_offset
        self.n_init = n_init
        self.random_state = random_state
        self.memory = memory
        self.verbose = verbose

    _parameter_constraints = {
        "lam": [Interval(numbers.Real, 0.0, 1.0)],
        "max_iter": [Interval(numbers.Integral, 1)],
        "tol": [Interval(numbers.Real, 0.0)],
        "init_offset": [Interval(numbers.Real, 0.0)],
        "n_init": [Interval(numbers.Integral, 1)],
        "verbose": [Interval(numbers.Integral, 0)],
    }
    _init_aliases = _INIT_ALIASES

    def _initial_partitions(self, Xs, c, parsed, rng):
        out, ref = [], None
        for k, (X, (kind, value)) in enumerate(zip(Xs, parsed)):
            if kind == "random":
                out.append(rng.uniform(size=(X.shape[0], c)))
            elif kind == "k-means++":
                lab, cen = _kmeans_labels(X, c, rng, n_init=self.n_init)
                if ref is None:
                    ref = cen
                else:
                    lab = _align_to(ref, cen)[lab]
                out.append(_onehot(lab, c, self.init_offset))
            else:
                if kind == "membership":
                    P = value
                else:
                    lab = value if kind == "labels" else nearest_center_labels(X, value)
                    P = _onehot(lab, c, 0.2)
                out.append(_check_rank(P, c, f"init[{k}]"))
        return out

    @fit_callbacks
    def fit(self, Xs, y=None):
        """Cluster every task.

        Parameters
        ----------
        Xs : list of {array-like, sparse matrix} of shape (n_k, n_features)
            One matrix per task, same features.
        y : ignored

        Returns
        -------
        self
        """
        self._validate_params()
        Xs = check_tasks(Xs, name="Xs")
        check_task_magnitudes([_maxabs(X) for X in Xs], 2, "LSSMTC")
        cond = _scale(Xs)
        Xs = [cond.apply(X) for X in Xs]
        for k, X in enumerate(Xs):
            _check_squares(X, f"task {k}", "LSSMTC", cond)
        ks = check_n_clusters_per_task(
            self.n_clusters, [X.shape[0] for X in Xs],
            equal="LSSMTC (cluster j has one shared centre in every task)")
        c = ks[0]
        parsed = parse_init(self.init, Xs, ks, aliases=self._init_aliases, membership=True)
        parsed = [(kind, cond.apply_centres(v)) if kind == "centers" else (kind, v)
                  for kind, v in parsed]
        lam = float(self.lam)
        rng = check_random_state(self.random_state)
        memory = check_memory(self.memory)
        basis = _span_basis(_stack(Xs), memory)
        l = _check_n_components(self.n_components, basis.rank)
        P0 = self._initial_partitions(Xs, c, parsed, rng)
        m = len(Xs)
        fit = _lss_fit(
            Xs, basis, P0, lam=lam, n_components=l, update=[True] * m, within=[True] * m,
            max_iter=self.max_iter, tol=self.tol, verbose=self.verbose,
            desc="SharedSubspaceClustering")
        P_list, Z, M, Mk_list = fit.P_list, fit.Z, fit.M, fit.Mk_list
        history, n_iter, converged = fit.history, fit.n_iter, fit.converged
        if not converged:
            warnings.warn(
                f"LSSMTC stopped at max_iter={self.max_iter} before the objective settled "
                f"(last relative decrease {(history[-2] - history[-1]) / history[-2]:.2e} > "
                f"tol={self.tol}).", ConvergenceWarning, stacklevel=user_stacklevel())
        W = basis.components(Z)
        self.membership_ = P_list
        self._set_fitted_tasks(Xs, [np.argmax(P, axis=1) for P in P_list],
                               cond.undo_objective(np.asarray(history)))
        self.components_ = np.ascontiguousarray(W.T)
        self.shared_centers_ = np.ascontiguousarray(cond.undo_centres(M.T))
        self.centers_ = [None if Mk is None else np.ascontiguousarray(cond.undo_centres(Mk.T))
                         for Mk in Mk_list]
        self.n_iter_ = n_iter
        self.rank_ = basis.rank
        return self

    def _score_criterion(self, Xs, labels):
        """``score``'s criterion: each task's within-cluster sum of squares per point, in the
        input space (the geometry of the within-task term)."""
        return within_cluster_per_point(Xs, labels, unit_rows=False)

    def predict(self, X, task=None):
        """Cluster of new rows of task ``task`` under the hard form of the objective.

        Row ``x`` gets the cluster ``j`` minimising ``lam ||x - m^k_j||^2 + (1 - lam)
        ||W^T x - m_j||^2`` with task ``k``'s input-space centres ``m^k_j`` and the shared
        centres ``m_j``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        task : int, optional
            Which task's centres to use; required when there are several tasks.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        t = self._check_task(task)
        X = self._check_X(X)
        return _hard_labels(X, float(self.lam), self.centers_[t], self.components_,
                            self.shared_centers_)

    def transform(self, X):
        """Project a matrix (or a list of task matrices) onto the shared subspace: ``X W``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features), or a list of them

        Returns
        -------
        Z : ndarray of shape (n_samples, n_components), or a list of them
        """
        check_is_fitted(self, "components_")
        if isinstance(X, (list, tuple)):
            return [self.transform(Xk) for Xk in X]
        X = check_array(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features but the model was fitted on {self.n_features_in_}."
            )
        return np.asarray(X @ self.components_.T)


def _unlabelled(y):
    """Rows marked unlabelled: ``-1``, or ``"-1"`` / ``b"-1"`` in string, bytes and object
    arrays (a pandas column of strings is an object array)."""
    if y.dtype.kind == "U":
        return y == "-1"
    if y.dtype.kind == "S":
        return y == b"-1"
    if y.dtype == object:
        return np.array([(isinstance(v, numbers.Number) and not isinstance(v, bool) and v == -1)
                         or (isinstance(v, (str, np.str_)) and v == "-1")
                         or (isinstance(v, (bytes, np.bytes_)) and v == b"-1") for v in y],
                        dtype=bool)
    return y == -1


class SharedSubspaceTransfer(ClassifierMixin, BaseEstimator):
    """Learning the Shared Subspace for Transductive Transfer Classification (LSSTTC).

    scikit-learn's semi-supervised convention (as ``sklearn.semi_supervised``): ``fit(X, y)``
    takes the labelled source rows and the unlabelled target rows together, ``y == -1``
    marking the target rows (``"-1"`` or ``b"-1"`` in a string, bytes or object array, e.g. a
    pandas column of strings). The labelled rows fix their
    partition matrix ``P_1`` (one-hot labels); the target's ``P_2``, the shared subspace
    ``W``, the shared centres ``M`` and the target centres ``M_2`` are learned by the LSSMTC
    updates (Gu & Zhou 2009, Eq. 20, Algorithm 2). Target cluster ``j`` is class
    ``classes_[j]``; ``transduction_`` holds the labels of every training row and
    ``predict(X)`` labels new rows.

    Parameters
    ----------
    n_components : int or "auto", default="auto"
        Dimension ``l`` of the shared subspace (paper grid: 100, 200, ..., 1000), at most the
        rank of the stacked rows of ``X`` (the subspace lies in their span). ``"auto"``: 100,
        the paper's smallest value, or that rank when it is smaller (e.g. 61 for the
        bundled digits, whose 64 pixels leave some always blank); ``n_components_`` holds the
        value used. An int above the rank is an error.
    lam : float, default=0.5
        ``lambda`` in [0, 1]: weight of the target's within-task (input space) term (paper
        grid 0.25, 0.5, 0.75); the shared term has weight ``1 - lam``.
    max_iter : int, default=3000
        Maximum number of sweeps (the paper: 20; see :class:`SharedSubspaceClustering` for
        why the default runs to ``tol``).
    tol : float, default=1e-6
        Stop when the relative decrease of the objective in a sweep is at most ``tol``.
    init : {"source-means", "source-svm"} or array-like, default="source-means"
        ``"source-means"``: k-means on the target started from the source class means (so
        cluster ``j`` starts as class ``j``), then ``P_2 = onehot + init_offset``; it is
        deterministic. ``"source-svm"``: the target labels predicted by scikit-learn's
        ``LinearSVC(C=1)`` trained on the source rows (the classifier of
        :func:`source_agreement`), then ``P_2 = onehot + init_offset``; on the transfer
        benchmarks it ends at or above that SVM on 12 of 32 cells against 9 of 32 for
        ``"source-means"`` (``benchmarks/RESULTS.md``, issue 43), but neither start wins
        everywhere and ``J`` does not tell which fit is more accurate. Or target labels (values in ``classes``, one per target row in the
        order of ``X``) or an ``(n_target, n_classes)`` non-negative matrix.
    init_offset : float, default=0.2
    classes : array-like or None, default=None
        The classes (and their order). Default: the sorted labels of the source rows. Every
        class needs at least one source row.
    memory : str, joblib.Memory or None, default=None
        Caches the factorisation of the row space of ``X`` in this directory (the fit's one
        cubic-cost step: an SVD, or an eigendecomposition of the smaller Gram matrix,
        ``O(min(n, d)^3)`` for ``n`` distinct rows), as scikit-learn's
        ``AgglomerativeClustering`` caches its tree: refits on the same data (other ``lam``,
        ``n_components``, ``init``) then skip it. None caches nothing.
    verbose : int, default=0
        0: silent; 1: a progress bar (standard error); 2: also one line per sweep.

    Attributes
    ----------
    classes_ : ndarray
    transduction_ : ndarray of shape (n_samples,)
        Labels of every row of the training ``X``: the given label for source rows, the
        learned one (a value of ``classes_``) for target rows.
    membership_ : ndarray of shape (n_target, n_classes)
        ``P_2`` for the target rows, in their order in ``X``, one column per class.
    cluster_class_ : ndarray of int of shape (n_classes,)
        The class (index into ``classes_``) of each fitted target cluster: the source class
        whose mean is nearest to the cluster's centre in the shared subspace (an optimal
        assignment). The identity unless the fit drifted; a warning says when it is not.
    source_agreement_ : float
        Cohen's kappa between the target labels and a linear SVM trained on the source rows
        (:func:`source_agreement`); below ``SOURCE_AGREEMENT_MIN`` = 0.2 ("slight" agreement,
        Landis & Koch, 1977) the fit warns that the data do not support the transfer.
    components_ : ndarray of shape (n_components_, n_features)
    n_components_ : int
        The dimension of the shared subspace (``n_components`` with ``"auto"`` resolved).
    target_centers_ : ndarray of shape (n_classes, n_features)
        Centre of the target cluster of each class.
    shared_centers_ : ndarray of shape (n_classes, n_components_)
    objective_history_ : ndarray
        ``J_tc`` (paper Eq. 20), non-increasing.
    n_iter_, rank_ : int
    n_features_in_ : int

    Notes
    -----
    ``J = lam ||X_2 - P_2 M_2^T||^2 + (1 - lam) sum_{k=1,2} ||X_k W - P_k M^T||^2``; the printed
    Algorithm 2 has a stray ``W^T`` in ``M_2``: it is ``X_2^T P_2 (P_2^T P_2)^-1``. The shared
    subspace lies in the span of both tasks (see :class:`SharedSubspaceClustering`).

    LSSTTC is not guaranteed to match a classifier trained on the source alone: ``J`` scores
    how well the target rows cluster around centres shared with the source, not how well the
    source labels predict them. On WebKB4's word-presence rows (``benchmarks/RESULTS.md``,
    issue 43) ``J`` ranks the fitted partition above the source-trained linear SVM's labels on
    11 of 12 pairs while the SVM is more accurate on 10, and a fit started from the SVM's
    labels ends less accurate than the SVM on 8; on such data ``source_agreement_`` stays above its threshold and no warning is
    given. Compare ``transduction_`` with a source-trained classifier when target labels
    for a check are available.

    Examples
    --------
    >>> import numpy as np
    >>> from bregclust.shared_subspace import SharedSubspaceTransfer
    >>> rng = np.random.default_rng(0)
    >>> centres = np.array([[8.0, 1.0, 1.0], [1.0, 8.0, 1.0]])
    >>> Xs = np.repeat(centres, 15, axis=0) + rng.normal(size=(30, 3))
    >>> Xt = np.repeat(centres, 10, axis=0) + [0.5, -0.5, 1.0] + rng.normal(size=(20, 3))
    >>> X = np.vstack([Xs, Xt])
    >>> y = np.repeat(["a", "b", "-1"], [15, 15, 20])
    >>> clf = SharedSubspaceTransfer(n_components=2).fit(X, y)
    >>> clf.transduction_[30:].tolist() == ["a"] * 10 + ["b"] * 10
    True
    """

    _parameter_constraints = {
        "lam": [Interval(numbers.Real, 0.0, 1.0)],
        "max_iter": [Interval(numbers.Integral, 1)],
        "tol": [Interval(numbers.Real, 0.0)],
        "init_offset": [Interval(numbers.Real, 0.0)],
        "verbose": [Interval(numbers.Integral, 0)],
    }

    def __init__(self, *, n_components="auto", lam=0.5, max_iter=3000, tol=1e-6,
                 init="source-means", init_offset=0.2, classes=None, memory=None, verbose=0):
        self.n_components = n_components
        self.lam = lam
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.init_offset = init_offset
        self.classes = classes
        self.memory = memory
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def fit(self, X, y):
        """Learn the labels of the unlabelled (target) rows from the labelled (source) rows.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Source and target rows, in any order.
        y : array-like of shape (n_samples,)
            Class labels of the source rows; ``-1`` (``"-1"`` or ``b"-1"`` in a string, bytes
            or object array) marks the unlabelled target rows.

        Returns
        -------
        self
        """
        check_params(self, self._parameter_constraints)
        memory = check_memory(self.memory)
        X = check_array(X, name="X")
        cond = _scale([X])
        X = cond.apply(X)
        _check_squares(X, "X", "LSSTTC", cond)
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(
                f"y must be 1-D with one label per row of X ({X.shape[0]}), got shape "
                f"{y.shape}; mark the unlabelled target rows with -1."
            )
        target = _unlabelled(y)
        if not target.any():
            raise ValueError("y has no unlabelled rows; mark the target rows with -1 ('-1' in a "
                             "string column).")
        if target.all():
            raise ValueError("y has no labelled rows; LSSTTC needs labelled source rows.")
        ys = y[~target]
        if ys.dtype == object:
            ys = np.array(ys.tolist())
        ys = check_class_labels(ys, name="y")
        X_source, X_target = X[np.flatnonzero(~target)], X[np.flatnonzero(target)]
        if self.classes is None:
            classes = np.unique(ys)
        else:
            classes = np.asarray(self.classes)
            if classes.ndim != 1 or np.unique(classes).size != classes.size:
                raise ValueError("classes must be a 1-D array of distinct labels.")
            unknown = ~np.isin(ys, classes)
            if unknown.any():
                raise ValueError(
                    f"y has labels not in classes, e.g. {ys[unknown][0]!r}; add them to "
                    "classes or mark those rows -1."
                )
            missing = classes[~np.isin(classes, ys)]
            if missing.size:
                raise ValueError(
                    f"the source labels do not cover the classes: no source sample of class "
                    f"{missing[0]!r}. Every target cluster is a source class and needs source "
                    "data; drop the class or add labelled samples."
                )
        c = classes.size
        if c < 2:
            raise ValueError(f"the labelled rows need at least 2 classes, got {c}.")
        if X_target.shape[0] < c:
            raise ValueError(
                f"there are {X_target.shape[0]} unlabelled rows, fewer than the {c} classes."
            )
        lam = float(self.lam)
        ysrc = self._class_index(ys, classes)
        P1 = _onehot(ysrc, c, 0.0)
        basis = _span_basis(_stack([X_source, X_target]), memory)
        l = _check_n_components(self.n_components, basis.rank)
        P2 = self._initial_target(X_source, ysrc, X_target, classes)
        fit = _lss_fit(
            [X_source, X_target], basis, [P1, P2], lam=lam, n_components=l,
            update=[False, True], within=[False, True], max_iter=self.max_iter, tol=self.tol,
            verbose=self.verbose, desc="SharedSubspaceTransfer")
        P_list, Z, M, Mk_list = fit.P_list, fit.Z, fit.M, fit.Mk_list
        history, n_iter, converged = fit.history, fit.n_iter, fit.converged
        if not converged:
            warnings.warn(
                f"LSSTTC stopped at max_iter={self.max_iter} before the objective settled.",
                ConvergenceWarning, stacklevel=user_stacklevel())
        W = basis.components(Z)
        Mt = Mk_list[1] if Mk_list[1] is not None else _centers(X_target, P_list[1])
        # Which class each target cluster is: the source class whose rows lie nearest to the
        # cluster in the shared subspace (an assignment of clusters to classes). The fit ties
        # cluster j to class j through the shared centre M_j, but the within-target term can
        # move the target clusters so far that M_j ends up between the source rows of class
        # j and a target cluster of the other class; naming by j then inverts the labels.
        hard = np.argmax(P_list[1], axis=1)
        live = np.bincount(hard, minlength=c) > 0
        src_means = _centers(X_source, P1)  # (d, c) source class means
        perm = match_clusters_to_classes(np.asarray(Mt.T @ W), np.asarray(src_means.T @ W),
                                         live)
        if not np.array_equal(perm, np.arange(c)):
            warnings.warn(
                "LSSTTC: after the fit, target cluster(s) "
                f"{np.flatnonzero(perm != np.arange(c)).tolist()} lie nearer, in the shared "
                "subspace, to the source rows of another class than to their own; the target "
                "labels follow that nearest class (cluster_class_). The shared subspace does "
                "not tie the target's clusters to the source classes on these data: check "
                "transduction_ against a source-trained classifier.",
                UserWarning, stacklevel=user_stacklevel())
        # Does the source support the transfer? A label-free check: the target labels against
        # a linear classifier trained on the source rows alone (Cohen's kappa of the two
        # labellings of the target). At or below "slight" agreement the shared subspace has
        # carried the source classes to target clusters the source itself does not predict.
        self.source_agreement_ = source_agreement(X_source, ysrc, X_target, perm[hard])
        if self.source_agreement_ < SOURCE_AGREEMENT_MIN:
            warnings.warn(
                "LSSTTC: the target labels agree with a linear classifier trained on the "
                f"source rows no better than slightly (Cohen's kappa "
                f"{self.source_agreement_:.2f} < {SOURCE_AGREEMENT_MIN}, source_agreement_): "
                "the target's clusters are not the source classes in this representation, so "
                "the transfer is not supported by the data. Try L2-normalised (tf-idf) rows "
                "for word counts, another lam, or a source-trained classifier.",
                UserWarning, stacklevel=user_stacklevel())
        inv = np.argsort(perm)
        self.cluster_class_ = perm
        self.classes_ = classes
        self.membership_ = P_list[1][:, inv]
        transduction = np.empty(y.shape[0], dtype=classes.dtype)
        transduction[~target] = ys
        transduction[target] = classes[perm[hard]]
        self.transduction_ = transduction
        self.components_ = np.ascontiguousarray(W.T)
        self.shared_centers_ = np.ascontiguousarray(cond.undo_centres(M.T))
        self.target_centers_ = np.ascontiguousarray(cond.undo_centres(Mt.T))[inv]
        self.objective_history_ = as_history(cond.undo_objective(np.asarray(history)))
        self.n_iter_ = n_iter
        self.rank_ = basis.rank
        self.n_components_ = l
        self.n_features_in_ = X.shape[1]
        return self

    def _class_index(self, labels, classes):
        if self.classes is None:
            return np.searchsorted(classes, labels)
        return np.array([np.flatnonzero(classes == v)[0] for v in labels], dtype=np.int64)

    def _initial_target(self, Xs_, ysrc, Xt, classes):
        c = classes.size
        init = self.init
        if isinstance(init, str):
            if init not in ("source-means", "source-svm"):
                raise ValueError(
                    f"init must be 'source-means', 'source-svm', target labels or a matrix, "
                    f"got {init!r}."
                )
            if init == "source-svm":
                return _onehot(_source_svm(Xs_, ysrc).predict(Xt), c, self.init_offset)
            means = _centers(Xs_, _onehot(ysrc, c)).T  # (c, d) class means
            lab, _ = _kmeans_labels(Xt, c, None, init=means)
            return _onehot(lab, c, self.init_offset)
        init = np.asarray(init)
        if init.ndim == 1:
            if init.shape[0] != Xt.shape[0] or not np.isin(init, classes).all():
                raise ValueError(
                    f"init labels must have length {Xt.shape[0]} with values in classes."
                )
            return _onehot(self._class_index(init, classes), c, self.init_offset)
        P = np.asarray(init, dtype=np.float64)
        if P.shape != (Xt.shape[0], c):
            raise ValueError(f"init must have shape ({Xt.shape[0]}, {c}), got {P.shape}.")
        if not np.isfinite(P).all() or (P < 0).any():
            raise ValueError("init must be finite and non-negative.")
        return _check_rank(P.copy(), c, "init")

    def predict(self, X):
        """Class of new rows under the hard form of the objective.

        Row ``x`` gets the class ``j`` minimising ``lam ||x - m2_j||^2 + (1 - lam)
        ||W^T x - m_j||^2`` (target centres ``m2_j``, shared centres ``m_j``). The labels of
        the training rows are in ``transduction_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            Values of ``classes_``.
        """
        check_is_fitted(self, "transduction_")
        X = check_array(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features but the model was fitted on {self.n_features_in_}."
            )
        perm = self.cluster_class_
        j = _hard_labels(X, float(self.lam), self.target_centers_[perm], self.components_,
                         self.shared_centers_)
        return self.classes_[perm[j]]


#: ``SharedSubspaceTransfer`` warns when its target labels agree with a source-trained linear
#: classifier below this Cohen's kappa (the upper end of "slight" agreement, Landis & Koch 1977).
SOURCE_AGREEMENT_MIN = 0.2


def source_agreement(X_source, y_source, X_target, labels):
    """Cohen's kappa between target labels and a linear SVM trained on the source rows.

    A label-free check of a transfer (it uses no target label): scikit-learn's ``LinearSVC``
    (``C=1``) fitted on the labelled source rows predicts the target rows, and
    ``sklearn.metrics.cohen_kappa_score`` compares those predictions with ``labels``. 1 is
    the same partition under the same names, 0 agreement at chance level, negative less
    than chance (e.g. inverted class names).

    Parameters
    ----------
    X_source : ndarray or sparse matrix of shape (n_source, n_features)
    y_source : ndarray of shape (n_source,)
    X_target : ndarray or sparse matrix of shape (n_target, n_features)
    labels : ndarray of shape (n_target,)
        The transferred labels of the target rows (values of ``y_source``).

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> Xs = np.array([[0.0], [1.0], [9.0], [10.0]]); ys = np.array([0, 0, 1, 1])
    >>> Xt = np.array([[0.5], [9.5]])
    >>> source_agreement(Xs, ys, Xt, np.array([0, 1])), source_agreement(Xs, ys, Xt, np.array([1, 0]))
    (1.0, -1.0)
    """
    from sklearn.metrics import cohen_kappa_score

    svm = _source_svm(X_source, y_source)
    return float(cohen_kappa_score(svm.predict(X_target), labels))


def _source_svm(X_source, y_source):
    """scikit-learn's ``LinearSVC(C=1)`` fitted on the source rows (its convergence warning
    silenced: the check and the start only need its labels)."""
    from sklearn.svm import LinearSVC

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return LinearSVC(C=1.0).fit(X_source, y_source)


def match_clusters_to_classes(cluster_centres, class_centres, live=None):
    """The class of each cluster: the assignment minimising the total squared distance.

    Parameters
    ----------
    cluster_centres : ndarray of shape (c, q)
    class_centres : ndarray of shape (c, q)
    live : ndarray of bool of shape (c,), optional
        Clusters holding at least one row; an empty cluster keeps its own class unless a live
        cluster needs it.

    Returns
    -------
    ndarray of int of shape (c,)
        ``perm[j]`` is the class of cluster ``j`` (a permutation).

    Examples
    --------
    >>> import numpy as np
    >>> match_clusters_to_classes(np.array([[0.0], [5.0]]), np.array([[4.0], [1.0]])).tolist()
    [1, 0]
    """
    A = np.asarray(cluster_centres, dtype=np.float64)
    B = np.asarray(class_centres, dtype=np.float64)
    D = ((A[:, None, :] - B[None, :, :]) ** 2).sum(axis=2)
    if live is not None:
        D[~np.asarray(live)] = 0.0
        D[~np.asarray(live), np.flatnonzero(~np.asarray(live))] = -1.0
    _, cols = linear_sum_assignment(D)
    return cols.astype(np.int64)


#: Paper names.
LSSMTC = SharedSubspaceClustering
LSSTTC = SharedSubspaceTransfer
