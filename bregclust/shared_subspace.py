"""Shared-subspace multi-task clustering (LSSMTC) and transductive transfer (LSSTTC).

Gu & Zhou, "Learning the shared subspace for multi-task clustering and transductive transfer
classification", ICDM 2009. The updates are restated in ``docs/MATH.md`` section 4; this module
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

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment
from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, LinearOperator, eigsh
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._validation import (
    check_array,
    check_class_labels,
    check_not_string,
    check_scalar,
    check_tasks,
)

__all__ = ["SharedSubspaceClustering", "SharedSubspaceTransfer", "LSSMTC", "LSSTTC"]

_TINY = np.finfo(np.float64).tiny
_DENSE_EIG_MAX_RANK = 1000  # below this an r x r dense eigh is cheap (< 0.1 s)
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


class _SpanBasis:
    """An orthonormal basis ``V`` (d x r) of the row space of the stacked data ``X``.

    Stores ``Y = X V`` (n x r, with ``Y^T Y = diag(s^2)``) and maps subspace coordinates ``Z``
    (r x l) to ``W = V Z`` (d x l) without forming ``V`` when ``d`` is the large side of sparse
    data (there ``V = X^T U diag(1/s)``).
    """

    def __init__(self, X):
        n, d = X.shape
        eps = np.finfo(np.float64).eps
        self._X = None
        self._coef = None
        self.V = None
        if not sp.issparse(X):
            U, s, Vt = np.linalg.svd(X, full_matrices=False)
            keep = s > (s[0] if s.size else 0.0) * max(n, d) * eps
            if not keep.any():
                keep = np.zeros_like(s, dtype=bool)
            s = s[keep]
            self.V = Vt[keep].T.copy()
            self.Y = U[:, keep] * s
        elif d <= n:
            G = (X.T @ X).toarray()
            e, V = np.linalg.eigh(G)
            e, V = e[::-1], V[:, ::-1]
            keep = e > (e[0] if e.size else 0.0) * max(n, d) * eps * 10
            e, V = e[keep], np.ascontiguousarray(V[:, keep])
            self.V = V
            self.Y = np.asarray(X @ V)
            s = np.sqrt(e)
        else:
            G = (X @ X.T).toarray()
            e, U = np.linalg.eigh(G)
            e, U = e[::-1], U[:, ::-1]
            # Gram eigenvectors of tiny eigenvalues give V = X^T U / s with a loss of
            # orthogonality ~ eps * e_max / e: keep e above sqrt(eps) * e_max.
            keep = e > (e[0] if e.size else 0.0) * np.sqrt(eps)
            e, U = e[keep], U[:, keep]
            s = np.sqrt(e)
            self.Y = U * s
            self._X = X
            self._coef = U / s
        self.s2 = s * s
        self.rank = int(s.size)

    def components(self, Z):
        """``W = V Z`` with orthonormal columns (d x l)."""
        if self.V is not None:
            return self.V @ Z
        W = np.asarray(self._X.T @ (self._coef @ Z))
        Q, R = np.linalg.qr(W)
        return Q * np.sign(np.diag(R))[np.newaxis, :]


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
    return FtP @ np.linalg.pinv(P.T @ P, hermitian=True)


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


def _lss_fit(Xs, basis, P_list, *, lam, n_components, update, within, max_iter, tol,
             eig_solver="auto", trace=False):
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

    Returns
    -------
    P_list, Z, M, Mk_list, history, n_iter, converged, steps
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
    for it in range(max_iter):
        n_iter = it + 1
        # M = W^T X^T P (P^T P)^-1 for the current W and stacked P (Algorithm 1, line 1).
        M = _centers(XW, np.vstack(P_list)) if use_shared else M
        for k, X in enumerate(Xs):
            if not update[k]:
                continue
            Pk = P_list[k]
            A = np.zeros_like(Pk)
            B = np.zeros((Pk.shape[1], Pk.shape[1]))
            if within[k] and use_within:
                Mk = _centers(X, Pk)
                Mk_list[k] = Mk
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
        if J - J_new <= tol * max(abs(J), _TINY):
            converged = True
            J = J_new
            break
        J = J_new
    return P_list, Z, M, Mk_list, history, n_iter, converged, steps


def _check_n_components(n_components, rank):
    check_scalar(n_components, "n_components", kind=numbers.Integral, lo=1)
    if n_components > rank:
        raise ValueError(
            f"n_components={n_components} exceeds the rank {rank} of the stacked data: the "
            "shared subspace is searched inside the span of the data points. Use "
            f"n_components <= {rank}."
        )
    return int(n_components)


def _check_lam(lam):
    check_scalar(lam, "lam", lo=0.0, hi=1.0)
    return float(lam)


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


def _check_init_matrices(init, Xs, c, what="init"):
    if len(init) != len(Xs):
        raise ValueError(f"{what} has {len(init)} matrices but there are {len(Xs)} tasks.")
    out = []
    for k, (P, X) in enumerate(zip(init, Xs)):
        P = np.asarray(P, dtype=np.float64)
        if P.ndim == 1:
            lab = P.astype(np.int64)
            if P.shape[0] != X.shape[0] or np.any(lab != P) or lab.min() < 0 or lab.max() >= c:
                raise ValueError(
                    f"{what}[{k}] must be labels in 0..{c - 1} of length {X.shape[0]} or an "
                    f"({X.shape[0]}, {c}) non-negative matrix."
                )
            P = _onehot(lab, c, 0.2)
        if P.shape != (X.shape[0], c):
            raise ValueError(
                f"{what}[{k}] must have shape ({X.shape[0]}, {c}), got {P.shape}."
            )
        if not np.isfinite(P).all() or (P < 0).any():
            raise ValueError(f"{what}[{k}] must be finite and non-negative.")
        if np.linalg.matrix_rank(P) < c:
            raise ValueError(
                f"{what}[{k}] has rank < n_clusters={c}: every cluster needs its own column "
                "(a cluster with no mass has no centre)."
            )
        out.append(P.copy())
    return out


# --------------------------------------------------------------------------------------------
# Estimators
# --------------------------------------------------------------------------------------------

class SharedSubspaceClustering(ClusterMixin, BaseEstimator):
    """Learning the Shared Subspace for Multi-Task Clustering (LSSMTC).

    Clusters ``m`` related tasks (same features, same number of clusters) by combining
    per-task k-means in the input space with one k-means of all tasks in a learned shared
    ``l``-dimensional subspace ``W`` (Gu & Zhou, 2009). ``fit(Xs)`` takes a list of tasks,
    each an ``(n_k, n_features)`` array or sparse matrix; per-task results are lists
    (``labels_[k]``). Cluster ``j`` is the same cluster in every task (shared centre ``M[:, j]``).

    Parameters
    ----------
    n_clusters : int, default=2
        Number of clusters ``c`` in every task.
    n_components : int, default=2
        Dimension ``l`` of the shared subspace (paper grid: 2, 4, 8, 16). At most the rank of
        the stacked data.
    lam : float, default=0.5
        ``lambda`` in [0, 1]: weight of the within-task term. ``lam=1`` is independent relaxed
        k-means per task, ``lam=0`` is ASI on all tasks together (paper grid 0.25, 0.5, 0.75).
    max_iter : int, default=20
        Maximum number of alternating sweeps (the paper's ``T = 20``).
    tol : float, default=1e-6
        Stop when the relative decrease of the objective in a sweep is at most ``tol``.
    init : {"k-means", "random"} or list of arrays, default="k-means"
        ``"k-means"``: k-means (k-means++, ``n_init`` restarts) in each task, clusters of
        tasks ``1..m-1`` matched to those of task 0 by their centres (Hungarian), then
        ``P_k = onehot + init_offset``. ``"random"``: uniform ``[0, 1)`` entries. A list gives
        per task either integer labels or an ``(n_k, n_clusters)`` non-negative matrix.
    init_offset : float, default=0.2
        Added to the one-hot k-means partition. The multiplicative update keeps zero entries
        at zero, so a pure one-hot start could never move a point to another cluster.
    n_init : int, default=1
        k-means restarts per task for ``init="k-means"``.
    random_state : int, RandomState instance or None, default=None

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
    objective_history_ : list of float
        ``J`` (paper Eq. 4) after initialisation and after every sweep; non-increasing.
    n_iter_ : int
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

    When ``n_features >= n_samples`` the span holds the ``c`` directions with ``X W`` equal to
    an orthonormal basis of the columns of ``P``; they have eigenvalue 0, so for
    ``n_components <= n_clusters`` the shared term only confirms the current partition.

    References
    ----------
    Q. Gu and J. Zhou. Learning the shared subspace for multi-task clustering and transductive
    transfer classification. ICDM 2009, 159-168.

    Examples
    --------
    >>> import numpy as np
    >>> from bregclust.shared_subspace import SharedSubspaceClustering
    >>> rng = np.random.default_rng(0)
    >>> centres = np.array([[5.0, 5.0, 5.0], [11.0, 11.0, 5.0]])
    >>> Xs = [np.repeat(centres, 20, axis=0) + rng.normal(size=(40, 3)) for _ in range(2)]
    >>> est = SharedSubspaceClustering(2, n_components=2, lam=0.5,
    ...                                init=[np.repeat([0, 1], 20)] * 2).fit(Xs)
    >>> [np.bincount(lab).tolist() for lab in est.labels_]
    [[20, 20], [20, 20]]
    """

    def __init__(self, n_clusters=2, *, n_components=2, lam=0.5, max_iter=20, tol=1e-6,
                 init="k-means", init_offset=0.2, n_init=1, random_state=None):
        self.n_clusters = n_clusters
        self.n_components = n_components
        self.lam = lam
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.init_offset = init_offset
        self.n_init = n_init
        self.random_state = random_state

    def _initial_partitions(self, Xs, c, rng):
        init = self.init
        if isinstance(init, str):
            if init == "random":
                return [rng.uniform(size=(X.shape[0], c)) for X in Xs]
            if init == "k-means":
                out, ref = [], None
                for X in Xs:
                    lab, cen = _kmeans_labels(X, c, rng, n_init=self.n_init)
                    if ref is None:
                        ref = cen
                    else:
                        lab = _align_to(ref, cen)[lab]
                    out.append(_onehot(lab, c, self.init_offset))
                return out
            raise ValueError(
                f"init must be 'k-means', 'random' or a list of per-task labels/matrices, "
                f"got {init!r}."
            )
        return _check_init_matrices(list(init), Xs, c)

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
        Xs = check_tasks(Xs, name="Xs")
        c = check_not_string(self.n_clusters, "n_clusters", "a positive int")
        if isinstance(c, bool) or not isinstance(c, numbers.Integral) or c < 1:
            raise ValueError(f"n_clusters must be a positive int, got {c!r}.")
        for k, X in enumerate(Xs):
            if X.shape[0] < c:
                raise ValueError(
                    f"n_clusters={c} is larger than the {X.shape[0]} samples of task {k}."
                )
        lam = _check_lam(self.lam)
        check_scalar(self.max_iter, "max_iter", kind=numbers.Integral, lo=1)
        check_scalar(self.tol, "tol", lo=0.0)
        check_scalar(self.init_offset, "init_offset", lo=0.0)
        rng = check_random_state(self.random_state)
        basis = _SpanBasis(_stack(Xs))
        l = _check_n_components(self.n_components, basis.rank)
        P0 = self._initial_partitions(Xs, c, rng)
        m = len(Xs)
        P_list, Z, M, Mk_list, history, n_iter, converged, _ = _lss_fit(
            Xs, basis, P0, lam=lam, n_components=l, update=[True] * m, within=[True] * m,
            max_iter=self.max_iter, tol=self.tol)
        if not converged:
            warnings.warn(
                f"LSSMTC stopped at max_iter={self.max_iter} before the objective settled "
                f"(last relative decrease {(history[-2] - history[-1]) / history[-2]:.2e} > "
                f"tol={self.tol}).", ConvergenceWarning, stacklevel=2)
        W = basis.components(Z)
        self.membership_ = P_list
        self.labels_ = [np.argmax(P, axis=1).astype(np.int64) for P in P_list]
        self.components_ = np.ascontiguousarray(W.T)
        self.shared_centers_ = np.ascontiguousarray(M.T)
        self.centers_ = [None if Mk is None else np.ascontiguousarray(Mk.T) for Mk in Mk_list]
        self.objective_history_ = history
        self.n_iter_ = n_iter
        self.rank_ = basis.rank
        self.n_features_in_ = Xs[0].shape[1]
        return self

    def fit_predict(self, Xs, y=None):
        """Fit and return ``labels_`` (a list, one array per task)."""
        return self.fit(Xs).labels_

    def transform(self, X):
        """Project a matrix (or a list of task matrices) onto the shared subspace: ``X W``."""
        check_is_fitted(self, "components_")
        if isinstance(X, (list, tuple)):
            return [self.transform(Xk) for Xk in X]
        X = check_array(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features but the model was fitted on {self.n_features_in_}."
            )
        return np.asarray(X @ self.components_.T)


class SharedSubspaceTransfer(BaseEstimator):
    """Learning the Shared Subspace for Transductive Transfer Classification (LSSTTC).

    The labelled source task fixes its partition matrix ``P_1`` (one-hot labels); the target's
    ``P_2``, the shared subspace ``W``, the shared centres ``M`` and the target centres ``M_2``
    are learned by the LSSMTC updates (Gu & Zhou 2009, Eq. 20, Algorithm 2). Target cluster ``j``
    is source class ``classes_[j]``; ``predict()`` returns the target's labels.

    Parameters
    ----------
    n_components : int, default=100
        Dimension ``l`` of the shared subspace (paper grid: 100, 200, ..., 1000).
    lam : float, default=0.5
        Weight of the target's within-task (input space) term (paper grid 0.25, 0.5, 0.75).
    max_iter : int, default=20
    tol : float, default=1e-6
    init : {"source-means"} or array-like, default="source-means"
        ``"source-means"``: k-means on the target started from the source class means (so
        cluster ``j`` starts as class ``j``), then ``P_2 = onehot + init_offset``. Or target
        labels (values in ``classes``) or an ``(n_target, n_classes)`` non-negative matrix.
    init_offset : float, default=0.2
    classes : array-like or None, default=None
        The classes (and their order). Default: ``np.unique(y_source)``. Every class needs at
        least one source sample.
    random_state : int, RandomState instance or None, default=None
        Unused by the default deterministic initialisation; kept for API symmetry.

    Attributes
    ----------
    classes_ : ndarray
    labels_ : ndarray of shape (n_target,)
        Predicted target labels (values of ``classes_``).
    membership_ : ndarray of shape (n_target, n_classes)
    components_ : ndarray of shape (n_components, n_features)
    target_centers_ : ndarray of shape (n_classes, n_features)
    shared_centers_ : ndarray of shape (n_classes, n_components)
    objective_history_ : list of float
        ``J_tc`` (paper Eq. 20), non-increasing.
    n_iter_, rank_ : int

    Notes
    -----
    ``J = lam ||X_2 - P_2 M_2^T||^2 + (1 - lam) sum_{k=1,2} ||X_k W - P_k M^T||^2``; the printed
    Algorithm 2 has a stray ``W^T`` in ``M_2``: it is ``X_2^T P_2 (P_2^T P_2)^-1``. The shared
    subspace lies in the span of both tasks (see :class:`SharedSubspaceClustering`).

    Examples
    --------
    >>> import numpy as np
    >>> from bregclust.shared_subspace import SharedSubspaceTransfer
    >>> rng = np.random.default_rng(0)
    >>> centres = np.array([[5.0, 5.0, 5.0], [10.0, 10.0, 5.0]])
    >>> Xs = np.repeat(centres, 15, axis=0) + rng.normal(size=(30, 3))
    >>> ys = np.repeat(["a", "b"], 15)
    >>> Xt = np.repeat(centres, 10, axis=0) + [0.5, -0.5, 1.0] + rng.normal(size=(20, 3))
    >>> clf = SharedSubspaceTransfer(n_components=2).fit(Xs, ys, Xt)
    >>> clf.predict().tolist() == ["a"] * 10 + ["b"] * 10
    True
    """

    def __init__(self, *, n_components=100, lam=0.5, max_iter=20, tol=1e-6,
                 init="source-means", init_offset=0.2, classes=None, random_state=None):
        self.n_components = n_components
        self.lam = lam
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.init_offset = init_offset
        self.classes = classes
        self.random_state = random_state

    def fit(self, X_source, y_source, X_target):
        """Learn the target labels from the labelled source and the unlabelled target.

        Parameters
        ----------
        X_source : {array-like, sparse matrix} of shape (n_source, n_features)
        y_source : array-like of shape (n_source,)
        X_target : {array-like, sparse matrix} of shape (n_target, n_features)

        Returns
        -------
        self
        """
        Xs_, Xt = check_tasks([X_source, X_target], name="[X_source, X_target]")
        y = check_class_labels(y_source, name="y_source")
        if y.ndim != 1 or y.shape[0] != Xs_.shape[0]:
            raise ValueError(
                f"y_source must be 1-D with one label per source row ({Xs_.shape[0]}), got "
                f"shape {y.shape}."
            )
        if self.classes is None:
            classes = np.unique(y)
        else:
            classes = np.asarray(self.classes)
            if classes.ndim != 1 or np.unique(classes).size != classes.size:
                raise ValueError("classes must be a 1-D array of distinct labels.")
            unknown = ~np.isin(y, classes)
            if unknown.any():
                raise ValueError(
                    f"y_source has labels not in classes, e.g. {y[unknown][0]!r}; add them to "
                    "classes or drop those source rows."
                )
            missing = classes[~np.isin(classes, y)]
            if missing.size:
                raise ValueError(
                    f"the source labels do not cover the classes: no source sample of class "
                    f"{missing[0]!r}. Every target cluster is a source class and needs source "
                    "data; drop the class or add labelled samples."
                )
        c = classes.size
        if c < 2:
            raise ValueError(f"y_source needs at least 2 classes, got {c}.")
        if Xt.shape[0] < c:
            raise ValueError(f"X_target has {Xt.shape[0]} rows, fewer than the {c} classes.")
        lam = _check_lam(self.lam)
        check_scalar(self.max_iter, "max_iter", kind=numbers.Integral, lo=1)
        check_scalar(self.tol, "tol", lo=0.0)
        check_scalar(self.init_offset, "init_offset", lo=0.0)
        check_random_state(self.random_state)
        ysrc = np.searchsorted(classes, y) if self.classes is None else \
            np.array([np.flatnonzero(classes == v)[0] for v in y], dtype=np.int64)
        P1 = _onehot(ysrc, c, 0.0)
        basis = _SpanBasis(_stack([Xs_, Xt]))
        l = _check_n_components(self.n_components, basis.rank)
        P2 = self._initial_target(Xs_, ysrc, Xt, classes)
        P_list, Z, M, Mk_list, history, n_iter, converged, _ = _lss_fit(
            [Xs_, Xt], basis, [P1, P2], lam=lam, n_components=l, update=[False, True],
            within=[False, True], max_iter=self.max_iter, tol=self.tol)
        if not converged:
            warnings.warn(
                f"LSSTTC stopped at max_iter={self.max_iter} before the objective settled.",
                ConvergenceWarning, stacklevel=2)
        W = basis.components(Z)
        self.classes_ = classes
        self.membership_ = P_list[1]
        self.labels_ = classes[np.argmax(P_list[1], axis=1)]
        self.components_ = np.ascontiguousarray(W.T)
        self.shared_centers_ = np.ascontiguousarray(M.T)
        Mt = Mk_list[1] if Mk_list[1] is not None else _centers(Xt, P_list[1])
        self.target_centers_ = np.ascontiguousarray(Mt.T)
        self.objective_history_ = history
        self.n_iter_ = n_iter
        self.rank_ = basis.rank
        self.n_features_in_ = Xs_.shape[1]
        return self

    def _initial_target(self, Xs_, ysrc, Xt, classes):
        c = classes.size
        init = self.init
        if isinstance(init, str):
            if init != "source-means":
                raise ValueError(
                    f"init must be 'source-means', target labels or a matrix, got {init!r}."
                )
            means = _centers(Xs_, _onehot(ysrc, c)).T  # (c, d) class means
            lab, _ = _kmeans_labels(Xt, c, None, init=means)
            return _onehot(lab, c, self.init_offset)
        init = np.asarray(init)
        if init.ndim == 1:
            if init.shape[0] != Xt.shape[0] or not np.isin(init, classes).all():
                raise ValueError(
                    f"init labels must have length {Xt.shape[0]} with values in classes."
                )
            lab = np.searchsorted(classes, init) if self.classes is None else \
                np.array([np.flatnonzero(classes == v)[0] for v in init], dtype=np.int64)
            return _onehot(lab, c, self.init_offset)
        return _check_init_matrices([init], [Xt], c, what="init")[0]

    def predict(self, X=None):
        """Target labels.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n, n_features) or None, default=None
            None returns the transductive labels ``labels_``. New target points get the class
            minimising ``lam ||x - m2_j||^2 + (1 - lam) ||W^T x - m_j||^2`` (the hard form of
            the objective).

        Returns
        -------
        labels : ndarray
        """
        check_is_fitted(self, "labels_")
        if X is None:
            return self.labels_.copy()
        X = check_array(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features but the model was fitted on {self.n_features_in_}."
            )
        lam = float(self.lam)
        C2 = self.target_centers_
        D = lam * (-2.0 * np.asarray(X @ C2.T) + np.sum(C2 ** 2, 1)[None, :])
        Zx = np.asarray(X @ self.components_.T)
        Cs = self.shared_centers_
        D += (1 - lam) * (np.sum(Zx ** 2, 1)[:, None] - 2.0 * Zx @ Cs.T
                          + np.sum(Cs ** 2, 1)[None, :])
        return self.classes_[np.argmin(D, axis=1)]


#: Paper names.
LSSMTC = SharedSubspaceClustering
LSSTTC = SharedSubspaceTransfer


# ----------------------------------------------------------------------------- CLI demo
def _demo(Xs, ys, random_state=0):
    """Rows ``(method, [(nmi, ari, acc) per task])`` for the ``bregclust demo`` table.

    LSSMTC (l=8, lambda=0.5) and its two ends: lambda=1 (per-task relaxed k-means) and
    lambda=0 (ASI on all tasks together). LSSMTC uses one number of clusters for every task:
    the largest number of classes among the tasks.
    """
    from .metrics import ari, clustering_accuracy, nmi

    c = max(len(np.unique(y)) for y in ys)
    l = int(min(8, Xs[0].shape[1]))
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for name, lam in (("LSSMTC", 0.5), ("LSSMTC lam=1 (KM)", 1.0), ("LSSMTC lam=0 (ASI)", 0.0)):
            est = SharedSubspaceClustering(c, n_components=l, lam=lam,
                                           random_state=random_state).fit(Xs)
            rows.append((name, [(nmi(y, lab), ari(y, lab), clustering_accuracy(y, lab))
                                for y, lab in zip(ys, est.labels_)]))
    return rows
