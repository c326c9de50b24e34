"""Multi-task clustering with model relation learning (MTCMRL) and symmetric NMF.

Zhang, Zhang, Liu & Luo (IJCAI 2018) cluster each task by symmetric non-negative matrix
factorisation (SNMF) of a similarity matrix, tie the cluster indicator to a linear regression
on the features, and let the regression parameters of different tasks attract each other
through learned cluster-to-cluster relation matrices ``G^(t,s)``. See :doc:`/guide/model_relation`.

Notation (row convention: one sample per row). Task ``t`` has data ``X^t`` (``n_t x d``), dense
similarity ``M^t`` (``n_t x n_t``), indicator ``Y^t >= 0`` (``n_t x h_t``), regression
parameters ``W^t`` (``d x h_t``) and relations ``G^(t,s)`` (``h_t x h_s``, on the probability
simplex). The objective is::

    J = sum_t [ 1/2 ||M^t - Y^t Y^tT||^2 + lam ||Y^t - X^t W^t||^2 + mu ||W^t||^2 ]
        + alpha sum_{t != s} [ sum_ij ||W^t_i - W^s_j||^2 G^(t,s)_ij + beta ||G^(t,s)||^2 ]

and it is minimised block by block (paper's Algorithm 1): for each task ``t``, the relations
``G^(t,s)`` (exact Euclidean projection onto the simplex), then ``W^t`` (exact Sylvester solve),
then ``Y^t``: by default jointly with ``W^t`` (``W^t`` eliminated in closed form, ``Y^t`` by
scipy's L-BFGS-B under ``Y^t >= 0``), or by the paper's multiplicative update (damped when it
would increase ``J``).

cvxpy is not used here: the relation step has a closed form. The slow oracles (cvxpy QP,
Frank-Wolfe, ``scipy.linalg.solve_sylvester``) live in ``tests/naive_model_relation.py``.
"""

import numbers
import warnings

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.optimize import Bounds, minimize
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import normalize
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._callbacks import fit_callbacks
from ._multitask import (
    Interval,
    MultiTaskMixin,
    check_n_clusters_per_task,
    nearest_center_labels,
    parse_init,
    within_cluster_per_point,
)
from ._progress import progress
from ._validation import check_array, check_n_clusters, check_scalar, check_tasks, user_stacklevel
from .kmeans import BregmanKMeans

__all__ = [
    "ModelRelationClustering",
    "SymmetricNMF",
    "project_simplex",
    "similarity_matrix",
    "MAX_TASK_SAMPLES",
]

#: Largest task (number of samples) accepted: ``M^t`` is a dense ``n_t x n_t`` float64 matrix,
#: so 20,000 samples already need 3.2 GB. Raise it deliberately if you have the memory.
MAX_TASK_SAMPLES = 20_000

#: Most halvings of the Y-step length before the step is abandoned (Y kept unchanged).
_MAX_HALVINGS = 40


# --------------------------------------------------------------------------------------------
# Relation step: Euclidean projection onto the probability simplex
# --------------------------------------------------------------------------------------------
def project_simplex(v, radius=1.0):
    """Euclidean projection of a vector onto the simplex ``{g >= 0, sum g = radius}``.

    Parameters
    ----------
    v : array-like of shape (m,)
        Point to project (any real values).
    radius : float, default=1.0
        Total mass of the simplex; must be positive.

    Returns
    -------
    g : ndarray of shape (m,)
        ``argmin_g ||g - v||^2`` subject to ``g >= 0``, ``sum(g) = radius``.

    Notes
    -----
    The sort-based algorithm (Held, Wolfe & Crowder 1974; Duchi et al. 2008): with ``u`` the
    entries of ``v`` in decreasing order, ``rho = max{j : u_j - (sum_{i<=j} u_i - radius)/j > 0}``
    and ``theta = (sum_{i<=rho} u_i - radius)/rho``, the projection is ``max(v - theta, 0)``.
    Exact up to rounding, ``O(m log m)``.

    Examples
    --------
    >>> from bregclust.model_relation import project_simplex
    >>> project_simplex([0.5, 0.5, -1.0]).tolist()
    [0.5, 0.5, 0.0]
    >>> project_simplex([2.0, 0.0]).tolist()
    [1.0, 0.0]
    """
    v = np.asarray(v, dtype=np.float64)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"project_simplex needs a non-empty 1-D vector, got shape {v.shape}.")
    if not np.isfinite(v).all():
        raise ValueError("project_simplex needs finite values; v contains NaN or infinity.")
    radius = float(check_scalar(radius, "radius", lo=0.0, lo_closed=False, finite=True))
    return _project_simplex(v, radius)


def _project_simplex(v, radius=1.0):
    """:func:`project_simplex` without validation (v: float64 1-D with a finite maximum).

    The projection is unchanged by adding a constant to every entry, and an entry at or below
    max(v) - radius projects to 0 (theta >= max(v) - radius). Shifting by max(v) and dropping
    those entries keeps every sum within [-m radius, 0]: no overflow and no absorption of the
    radius at any magnitude of v (entries of -inf are dropped).
    """
    with np.errstate(over="ignore", invalid="ignore"):
        w = v - v.max()
    keep = w > -radius
    out = np.zeros_like(v)
    wk = w[keep]
    u = np.sort(wk)[::-1]
    css = np.cumsum(u) - radius
    j = np.arange(1, u.size + 1)
    # u_j - css_j / j is positive for j = 1 (u_1 = 0, css_1 = -radius) and changes sign once;
    # take the last positive one.
    rho = int(np.flatnonzero(u * j > css)[-1]) + 1
    theta = css[rho - 1] / rho
    out[keep] = np.maximum(wk - theta, 0.0)
    return out


def _relation_cost(Wt, Ws):
    """``A_ij = ||Wt[:, i] - Ws[:, j]||^2`` (GEMM form, clipped at 0)."""
    A = (np.einsum("ij,ij->j", Wt, Wt)[:, None] + np.einsum("ij,ij->j", Ws, Ws)[None, :]
         - 2.0 * (Wt.T @ Ws))
    np.maximum(A, 0.0, out=A)
    return A


def _relation_step(A, beta):
    """Minimise ``<A, G> + beta ||G||_F^2`` over ``G >= 0, sum(G) = 1`` exactly.

    For ``beta > 0`` the minimiser is the projection of ``-A / (2 beta)`` onto the simplex.
    For ``beta = 0`` (a linear programme) the mass is split evenly over the entries where
    ``A`` attains its minimum (one optimal vertex or face).
    """
    if not np.isfinite(A.min()):
        raise ValueError("the cost between the tasks' cluster models is not finite (their "
                         "squared distances overflowed float64); rescale the data.")
    if beta > 0:
        with np.errstate(over="ignore"):
            v = (-A / (2.0 * beta)).ravel()
        return _project_simplex(v).reshape(A.shape)
    G = (A <= A.min()).astype(np.float64)
    G /= G.sum()
    return G


# --------------------------------------------------------------------------------------------
# W step: lam X^T X W + W diag(b) = C, one Gram eigendecomposition (= thin SVD) per task
# --------------------------------------------------------------------------------------------
class _TaskFactor:
    """Thin SVD ``X = U S V^T`` of one task (``scipy.linalg.svd`` for dense ``X``; for sparse
    ``X`` the eigendecomposition of the smaller Gram matrix, which gives the same ``U`` or ``V``
    and ``s^2`` without densifying ``X``).

    ``dual`` (``n <= d``): keeps ``U`` (``n x n``) and ``s^2``; ``X`` is used through products
    only, so a sparse ``X`` stays sparse and no ``d x n`` factor is formed.
    ``primal`` (``n > d``): keeps ``V`` (``d x d``, a full basis, so no null-space term).
    """

    def __init__(self, X):
        n, d = X.shape
        self.dual = n <= d
        if not sp.issparse(X):
            U, s, Vt = sla.svd(X, full_matrices=False)
            self.s2 = s * s
            self.vecs = U if self.dual else Vt.T
            return
        K = X @ X.T if self.dual else X.T @ X
        s2, vecs = sla.eigh(K.toarray())
        self.s2 = np.maximum(s2, 0.0)
        self.vecs = vecs

    def solve(self, X, C, b, lam):
        """Solve ``lam X^T X W + W diag(b) = C`` column by column (``b > 0``)."""
        s2, vecs = self.s2, self.vecs
        scale = lam * s2[:, None] + b[None, :]
        if self.dual:
            # (lam X^T X + b I)^-1 c = (c - lam X^T U diag(1/(lam s^2 + b)) U^T X c) / b
            P = vecs.T @ np.asarray(X @ C)
            P /= scale
            return (C - lam * np.asarray(X.T @ (vecs @ P))) / b[None, :]
        P = vecs.T @ C
        P /= scale
        return vecs @ P


def _w_step(t, X, Y, Ws, Gs, factor, lam, mu, alpha):
    """Exact minimiser of J over ``W^t`` with everything else fixed.

    ``lam X^T X W + W (mu I + alpha H) = lam X^T Y + alpha sum_s W^s Ghat_s^T`` with
    ``Ghat_s = G^(t,s) + G^(s,t)^T`` and ``H = diag(sum_s Ghat_s 1)``.
    """
    b, C = _relation_terms(t, Ws, Gs, mu, alpha, Y.shape[1], X.shape[1])
    if lam > 0:
        C += lam * np.asarray(X.T @ Y)
    if lam == 0:
        return C / b[None, :]
    return factor.solve(X, C, b, lam)


# --------------------------------------------------------------------------------------------
# Y step: the multiplicative update (paper Eq. 19), damped when it would increase J
# --------------------------------------------------------------------------------------------
def _split(M):
    """``(M+, M-)`` with ``M = M+ - M-``; ``M-`` is None when ``M >= 0``."""
    if (M >= 0).all():
        return M, None
    return np.maximum(M, 0.0), np.maximum(-M, 0.0)


def _y_step(Y, M, Mparts, Q, lam, damped=True):
    """One (possibly damped) multiplicative update of ``Y``.

    Minimises ``f(Y) = 1/2 ||M - Y Y^T||^2 + lam ||Y - Q||^2`` over ``Y >= 0``. The paper's
    update is ``Y * R`` with ``R = (M Y + lam Q+) / (Y Y^T Y + lam Y + lam Q-)`` (a negative part
    of ``M``, if any, moves to the denominator). The step ``D = Y * (R - 1)`` is the negative
    gradient scaled by the positive ``Y / (2 den)``, so ``Y + eta D`` (non-negative for
    ``0 <= eta <= 1``) decreases ``f`` for small ``eta``. ``eta = 1`` is tried first and halved
    while ``f`` does not decrease (the change is evaluated exactly, as a polynomial in
    ``eta`` from ``M Y`` and ``M D``).

    With ``damped=False`` the paper's Eq. 19 is applied as printed, ``Y * R``, whether or not
    it decreases ``f``.

    Returns
    -------
    Y_new, eta : ndarray, float
        ``eta = 1`` is the undamped update; ``eta = 0`` means no decrease was found.
    """
    Mp, Mm = Mparts
    YtY = Y.T @ Y
    den = Y @ YtY
    if Mm is None:
        MY = M @ Y
        num = MY.copy()
    else:
        num = Mp @ Y
        MmY = Mm @ Y
        MY = num - MmY
        den += MmY
    if lam > 0:
        num += lam * np.maximum(Q, 0.0)
        den += lam * (Y + np.maximum(-Q, 0.0))
    R = np.divide(num, den, out=np.ones_like(num), where=den > 0)
    if not damped:
        return Y * R, 1.0
    D = Y * (R - 1.0)
    if not np.any(D):
        return Y, 1.0
    MD = M @ D
    a1 = np.vdot(D, MY)
    a2 = np.vdot(D, MD)
    YtD = Y.T @ D
    B = YtD + YtD.T
    DtD = D.T @ D
    R0 = Y - Q if lam > 0 else None
    eta = 1.0
    for _ in range(_MAX_HALVINGS):
        # f(Y + eta D) - f(Y), each term written as a difference (no cancellation)
        dS = eta * B + eta * eta * DtD                      # (Y+eta D)^T(Y+eta D) - Y^T Y
        delta = -(2.0 * eta * a1 + eta * eta * a2) + 0.5 * np.vdot(dS, 2.0 * YtY + dS)
        if lam > 0:
            delta += lam * np.vdot(eta * D, eta * D + 2.0 * R0)
        if delta < 0:
            Ynew = Y + eta * D
            np.maximum(Ynew, 0.0, out=Ynew)                 # rounding only
            return Ynew, eta
        eta *= 0.5
    return Y, 0.0


# --------------------------------------------------------------------------------------------
# Y step of algorithm="lbfgs": W^t eliminated exactly, L-BFGS-B on Y^t >= 0
# --------------------------------------------------------------------------------------------
#: Most L-BFGS-B iterations of one Y block in one sweep (the next sweep continues from there).
_LBFGS_MAX_ITER = 10_000
#: Correction pairs kept by L-BFGS-B.
_LBFGS_MEMORY = 20


class _RowSpace:
    """``U`` (``n x r``, orthonormal) and ``s`` (``r``, positive) with ``X = U diag(s) V^T``, from
    a :class:`_TaskFactor`: its ``U`` directly (``n <= d``) or ``X V / s`` (``n > d``).
    Directions with ``s^2`` below ``n eps max(s^2)`` are dropped (they do not move ``X W``)."""

    def __init__(self, X, factor):
        s2 = factor.s2
        top = float(s2.max()) if s2.size else 0.0
        keep = s2 > top * max(X.shape) * np.finfo(np.float64).eps
        self.s = np.sqrt(s2[keep])
        if factor.dual:
            U = factor.vecs[:, keep]
        else:
            U = np.asarray(X @ factor.vecs[:, keep]) / self.s[None, :]
        self.U = np.ascontiguousarray(U)


def _relation_terms(t, Ws, Gs, mu, alpha, h, d):
    """``b`` and ``C0`` of the W step: ``lam X^T X W + W diag(b) = lam X^T Y + C0``."""
    b = np.full(h, float(mu))
    C0 = np.zeros((d, h))
    if alpha > 0:
        for s in range(len(Ws)):
            if s == t:
                continue
            Ghat = Gs[(t, s)] + Gs[(s, t)].T
            b += alpha * Ghat.sum(axis=1)
            C0 += alpha * (Ws[s] @ Ghat.T)
    return b, C0


def _reduced_y_objective(X, M, rows, b, C0, lam):
    """``F(Y) = min_W J`` over task ``t``'s ``W^t`` (everything else fixed), up to a constant,
    and its gradient, as a function of the flattened ``Y``.

    Column ``j`` of ``W`` solves ``(lam X^T X + b_j I) w_j = lam X^T y_j + c_j``, so
    ``min_w lam ||y_j - X w||^2 + b_j ||w||^2 - 2 c_j^T w = lam ||y_j||^2 - u_j^T K_j^-1 u_j``
    with ``u_j = lam X^T y_j + c_j``, ``K_j = lam X^T X + b_j I``. In the SVD ``X = U S V^T``,
    ``u_j^T K_j^-1 u_j = sum_k (lam s_k z_kj + v_kj)^2 / (lam s_k^2 + b_j)`` plus a term free of
    ``Y``, with ``z = U^T Y`` and ``v = V^T C0 = S^-1 U^T X C0``. With
    ``SNMF(Y) = 1/2 ||M - Y Y^T||^2`` this is a smooth function of ``Y`` alone; its gradient is
    ``2 (Y Y^T Y - M Y) + 2 lam Y - 2 U [lam s_k (lam s_k z_kj + v_kj) / (lam s_k^2 + b_j)]``.
    """
    n = M.shape[0]
    h = b.size
    half_mm = 0.5 * np.vdot(M, M)
    if lam > 0:
        U, s = rows.U, rows.s
        ls = lam * s
        den = lam * (s * s)[:, None] + b[None, :]
        v = (U.T @ np.asarray(X @ C0)) / s[:, None] if s.size else np.zeros((0, h))

    def fun(y):
        Y = y.reshape(n, h)
        MY = M @ Y
        S = Y.T @ Y
        f = half_mm - np.vdot(Y, MY) + 0.5 * np.vdot(S, S)
        g = Y @ S - MY
        if lam > 0:
            T = ls[:, None] * (U.T @ Y) + v
            D = T / den
            f += lam * np.vdot(Y, Y) - np.vdot(T, D)
            g += lam * Y - U @ (ls[:, None] * D)
        return float(f), 2.0 * g.ravel()

    return fun


def _y_block_lbfgs(Y, J0, fun, tol):
    """Minimise the reduced objective over ``Y >= 0`` by L-BFGS-B from ``Y``.

    ``fun`` is shifted so that its value is the part of ``J`` that depends on the task
    (``J0`` at ``Y``, :func:`_task_objective`): L-BFGS-B's stopping test (an iteration lowering
    the value by at most ``ftol`` times its magnitude) is then a relative test on ``J`` that
    does not depend on the other tasks' terms. L-BFGS-B only accepts a step whose line search decreases
    the value, so the result never has a larger ``J``; should a run end above its start anyway
    (a failed line search), ``Y`` is kept.

    Returns
    -------
    Y_new, J_new, n_iter
    """
    y0 = Y.ravel()
    f0, _ = fun(y0)
    shift = J0 - f0

    def shifted(y):
        f, g = fun(y)
        return f + shift, g

    res = minimize(shifted, y0, jac=True, method="L-BFGS-B",
                   bounds=Bounds(np.zeros(y0.size), np.full(y0.size, np.inf)),
                   options={"maxcor": _LBFGS_MEMORY, "ftol": tol, "gtol": 0.0,
                            "maxiter": _LBFGS_MAX_ITER, "maxfun": 2 * _LBFGS_MAX_ITER})
    if not res.fun <= J0:
        return Y, J0, int(res.nit)
    return res.x.reshape(Y.shape), float(res.fun), int(res.nit)


# --------------------------------------------------------------------------------------------
# Similarity
# --------------------------------------------------------------------------------------------
def similarity_matrix(X, similarity="cosine", similarity_params=None):
    """Dense similarity matrix of one task, as used by SNMF / MTCMRL.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
    similarity : {"cosine"}, str, Divergence or callable, default="cosine"
        ``"cosine"``: ``M_ij = <x_i, x_j> / (||x_i|| ||x_j||)`` (an all-zero row has
        similarity 0 to everything, itself included). A registered divergence name (or a
        :class:`~bregclust.divergences.Divergence`): the divergence is turned into a Gaussian-type
        similarity ``M_ij = exp(-S_ij / sigma)`` with ``S = (D + D^T) / 2`` the symmetrised
        divergence matrix ``D_ij = d_phi(x_i, x_j)`` over all pairs and ``sigma`` the median of
        the off-diagonal entries of ``S`` (1 if that median is 0). A callable ``f(X) -> M``
        must return a symmetric finite ``(n_samples, n_samples)`` matrix.
    similarity_params : dict or None
        Parameters of the divergence (e.g. ``{"A": A}`` for ``"mahalanobis"``); a non-empty
        dict with ``"cosine"`` or a callable is a ``ValueError`` (it would be ignored).

    Returns
    -------
    M : ndarray of shape (n_samples, n_samples)
        Dense and symmetric: memory is ``8 n^2`` bytes.

    Raises
    ------
    DomainError
        If ``X`` is outside the divergence's domain; both arguments of ``d_phi`` are data
        points, so the right-argument (strict interior) condition applies too, e.g. ``kl``
        needs strictly positive data - smooth counts first.
    """
    X = check_array(X, name="X")
    return _similarity(X, similarity, similarity_params, name="X")


def _row_scaled(X):
    """Every row of ``X`` times a power of two bringing its largest magnitude into
    ``[0.5, 1)`` (exact), so row norms neither overflow (1e300) nor underflow (1e-300)."""
    if sp.issparse(X):
        X = sp.csr_matrix(X, copy=True)
        mx = np.asarray(abs(X).max(axis=1).toarray()).ravel()
        e = np.where(mx > 0, np.frexp(mx)[1], 0)
        X.data = np.ldexp(X.data, -np.repeat(e, np.diff(X.indptr)))
        return X
    mx = np.abs(X).max(axis=1) if X.shape[1] else np.zeros(X.shape[0])
    e = np.where(mx > 0, np.frexp(mx)[1], 0)
    return np.ldexp(X, -e[:, None])


def _similarity(X, similarity, similarity_params, name):
    is_cosine = isinstance(similarity, str) and similarity == "cosine"
    if similarity_params and (is_cosine or (callable(similarity)
                                            and not hasattr(similarity, "pairwise"))):
        raise ValueError(
            f"similarity_params={similarity_params!r} is only used with a divergence name as "
            f"similarity, not with similarity={similarity!r}; drop similarity_params or name a "
            "divergence."
        )
    if is_cosine:
        # Cosine is invariant to the scale of each row; scaling by powers of two is exact, so
        # results are bit-identical to the plain normalisation wherever that one is finite.
        Xn = normalize(_row_scaled(X), norm="l2", axis=1)
        M = Xn @ Xn.T
        M = M.toarray() if sp.issparse(M) else np.asarray(M)
        return 0.5 * (M + M.T)
    if callable(similarity) and not hasattr(similarity, "pairwise"):
        M = np.asarray(similarity(X), dtype=np.float64)
        n = X.shape[0]
        if M.shape != (n, n):
            raise ValueError(
                f"similarity callable returned shape {M.shape} for {name}; expected ({n}, {n})."
            )
        if not np.isfinite(M).all():
            raise ValueError(f"similarity callable returned NaN or infinity for {name}.")
        if not np.allclose(M, M.T, rtol=1e-10, atol=1e-12):
            raise ValueError(f"similarity callable returned a non-symmetric matrix for {name}.")
        return 0.5 * (M + M.T)
    from .divergences import get_divergence

    if not isinstance(similarity, str) and not hasattr(similarity, "pairwise"):
        raise TypeError(
            "similarity must be 'cosine', a registered divergence name, a Divergence or a "
            f"callable X -> M; got {similarity!r}."
        )
    div = get_divergence(similarity, **(similarity_params or {}))
    div.check_domain(X, name=name, side="left")
    div.check_domain(X, name=name, side="right")
    # exp(-S / median S) is invariant to scaling X when d is homogeneous (all built-ins):
    # S is computed on the conditioned data (a power of two, per column for Itakura-Saito),
    # or it overflows (1e300: inf and NaN) or underflows (1e-300: all zero).
    from ._conditioning import for_assignment

    X = for_assignment(div, X, None).apply(X)
    Xd = X.toarray() if sp.issparse(X) else X
    D = np.asarray(div.pairwise(X, Xd), dtype=np.float64)
    if not np.isfinite(D).all():
        raise ValueError(
            f"the {div.name} divergences between the rows of {name} overflow float64 (or are "
            "infinite); rescale the data."
        )
    S = 0.5 * (D + D.T)
    np.maximum(S, 0.0, out=S)
    np.fill_diagonal(S, 0.0)
    n = S.shape[0]
    off = S[~np.eye(n, dtype=bool)]
    sigma = float(np.median(off)) if off.size else 1.0
    if not sigma > 0:
        sigma = 1.0
    return np.exp(-S / sigma)


# --------------------------------------------------------------------------------------------
# The alternating loop (plain arrays)
# --------------------------------------------------------------------------------------------
def _objective(Xs, Ms, Ys, Ws, Gs, lam, mu, alpha, beta, parts=False):
    """J of the module docstring, evaluated directly (``M - Y Y^T`` formed per task)."""
    T = len(Xs)
    within = np.zeros(T)
    for t in range(T):
        Y, W = Ys[t], Ws[t]
        R = Ms[t] - Y @ Y.T
        within[t] = 0.5 * np.vdot(R, R)
        if lam > 0:
            E = Y - np.asarray(Xs[t] @ W)
            within[t] += lam * np.vdot(E, E)
        within[t] += mu * np.vdot(W, W)
    cross = 0.0
    if alpha > 0:
        for (t, s), G in Gs.items():
            cross += alpha * (np.vdot(_relation_cost(Ws[t], Ws[s]), G) + beta * np.vdot(G, G))
    J = float(within.sum() + cross)
    return (J, within, cross) if parts else J


def _task_objective(t, X, M, Y, Ws, Gs, lam, mu, alpha):
    """The terms of J that depend on task ``t``'s ``(Y^t, W^t)``: its own three terms and the
    relation terms of the pairs ``(t, s)`` and ``(s, t)`` (without ``beta ||G||^2``)."""
    W = Ws[t]
    R = M - Y @ Y.T
    J = 0.5 * np.vdot(R, R) + mu * np.vdot(W, W)
    if lam > 0:
        E = Y - np.asarray(X @ W)
        J += lam * np.vdot(E, E)
    if alpha > 0:
        for s in range(len(Ws)):
            if s != t:
                J += alpha * (np.vdot(_relation_cost(W, Ws[s]), Gs[(t, s)])
                              + np.vdot(_relation_cost(Ws[s], W), Gs[(s, t)]))
    return float(J)


def _all_relations(Ws, beta):
    T = len(Ws)
    return {(t, s): _relation_step(_relation_cost(Ws[t], Ws[s]), beta)
            for t in range(T) for s in range(T) if s != t}


def _prepare(Xs, similarity, similarity_params, need_factors):
    """Per-task similarity matrices and thin-SVD factors (reusable across parameter grids)."""
    Ms = [_similarity(X, similarity, similarity_params, name=f"task {t}")
          for t, X in enumerate(Xs)]
    factors = [_TaskFactor(X) if need_factors else None for X in Xs]
    return Ms, factors


#: The paper's convergence threshold (Sec. 4.7): stop once a sweep lowers J by less than 1.
PAPER_THRESHOLD = 1.0

_ALGORITHMS = ("lbfgs", "damped", "as_printed")

#: ``algorithm="lbfgs"``: the L-BFGS-B run of a Y block stops once an iteration lowers the
#: task's part of J by at most ``tol * _INNER_TOL_FACTOR`` times its value, finer than the
#: sweep's test, so that a sweep that ends the fit has left no decrease of the order of ``tol``
#: inside its Y blocks.
_INNER_TOL_FACTOR = 0.01


def _check_algorithm(algorithm):
    if not isinstance(algorithm, str) or algorithm not in _ALGORITHMS:
        raise ValueError(f"algorithm must be one of {list(_ALGORITHMS)}; got {algorithm!r}.")
    return algorithm


def _fit_loop(Xs, Ms, factors, Ys, Ws, lam, mu, alpha, beta, max_iter, tol, verbose=0,
              algorithm="lbfgs", desc="MTCMRL"):
    """Algorithm 1 from initial ``Ys``, ``Ws`` (copied). Returns a dict of results.

    Every sweep visits the tasks in order: the relations ``G^(t,s)``, then ``W^t`` and ``Y^t``.
    ``algorithm="lbfgs"``: ``W^t`` exact, then ``Y^t`` by L-BFGS-B on ``min_W J`` (``W^t``
    eliminated, :func:`_reduced_y_objective`), then ``W^t`` exact again. ``"damped"``: ``W^t``
    exact, then one damped multiplicative ``Y`` step. Both stop when a sweep lowers J by at
    most ``tol * |J|``. ``"as_printed"``: the paper's undamped Eq. 19 and its stopping rule (J
    drops by less than ``PAPER_THRESHOLD``, an increase included); ``tol`` is not used.
    ``factors[t]`` is the :class:`_TaskFactor` of task ``t`` (None when ``lam == 0``).
    """
    damped = algorithm != "as_printed"
    quasi_newton = algorithm == "lbfgs"
    T = len(Xs)
    Ys = [Y.copy() for Y in Ys]
    Ws = [W.copy() for W in Ws]
    Mparts = [None if quasi_newton else _split(M) for M in Ms]
    rows = [_RowSpace(X, f) if quasi_newton and lam > 0 else None
            for X, f in zip(Xs, factors)]
    Gs = _all_relations(Ws, beta) if alpha > 0 else {}
    history = [_objective(Xs, Ms, Ys, Ws, Gs, lam, mu, alpha, beta)]
    etas, inner = [], []
    converged = False
    n_iter = 0
    with progress(verbose, total=max_iter, desc=desc) as bar:
        for _ in range(max_iter):
            n_iter += 1
            for t in range(T):
                if alpha > 0:
                    for s in range(T):
                        if s != t:
                            Gs[(t, s)] = _relation_step(_relation_cost(Ws[t], Ws[s]), beta)
                Ws[t] = _w_step(t, Xs[t], Ys[t], Ws, Gs, factors[t], lam, mu, alpha)
                if quasi_newton:
                    b, C0 = _relation_terms(t, Ws, Gs, mu, alpha, Ys[t].shape[1],
                                            Xs[t].shape[1])
                    J0 = _task_objective(t, Xs[t], Ms[t], Ys[t], Ws, Gs, lam, mu, alpha)
                    fun = _reduced_y_objective(Xs[t], Ms[t], rows[t], b, C0, lam)
                    Ys[t], _, nit = _y_block_lbfgs(Ys[t], J0, fun, tol * _INNER_TOL_FACTOR)
                    Ws[t] = _w_step(t, Xs[t], Ys[t], Ws, Gs, factors[t], lam, mu, alpha)
                    inner.append(nit)
                    continue
                Q = np.asarray(Xs[t] @ Ws[t]) if lam > 0 else None
                Ys[t], eta = _y_step(Ys[t], Ms[t], Mparts[t], Q, lam, damped)
                etas.append(eta)
            history.append(_objective(Xs, Ms, Ys, Ws, Gs, lam, mu, alpha, beta))
            bar.step(history[-1])
            drop = history[-2] - history[-1]
            if drop <= tol * abs(history[-2]) if damped else drop < PAPER_THRESHOLD:
                converged = True
                break
    return dict(Ys=Ys, Ws=Ws, Gs=Gs, history=np.asarray(history), n_iter=n_iter,
                converged=converged, etas=np.asarray(etas), inner=np.asarray(inner, dtype=int))


# --------------------------------------------------------------------------------------------
# Validation and initialisation shared by the estimators
# --------------------------------------------------------------------------------------------
def _check_sizes(Xs):
    for t, X in enumerate(Xs):
        n = X.shape[0]
        if n > MAX_TASK_SAMPLES:
            raise ValueError(
                f"task {t} has {n} samples; the dense similarity matrix M (n x n float64) would "
                f"need {8 * n * n / 1e9:.1f} GB. This method is limited to MAX_TASK_SAMPLES="
                f"{MAX_TASK_SAMPLES} samples per task; subsample the task or raise "
                "bregclust.model_relation.MAX_TASK_SAMPLES if you have the memory."
            )


#: Deprecated spellings of the init strings (they still work, with a FutureWarning).
_INIT_ALIASES = {"k-means": "k-means++"}


def _initial_indicators(Xs, hs, parsed, random_state):
    """Paper: one-hot k-means labels + 0.2 (Ding et al. 2006).

    ``parsed`` is the output of :func:`bregclust._multitask.parse_init`: ``"k-means++"`` runs
    :class:`~bregclust.kmeans.BregmanKMeans` (squared Euclidean, k-means++ seeding) on the
    task, ``"random"`` draws uniform labels, centres give the labels of the nearest centre
    and a membership matrix is used as ``Y^t`` itself.
    """
    rng = check_random_state(random_state)
    Ys = []
    for X, h, (kind, value) in zip(Xs, hs, parsed):
        if kind == "membership":
            Ys.append(value.copy())
            continue
        if kind == "k-means++":
            seed = int(rng.randint(np.iinfo(np.int32).max))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                labels = BregmanKMeans(h, divergence="sqeuclidean", n_init=1,
                                       random_state=seed).fit(X).labels_
        elif kind == "random":
            labels = rng.randint(h, size=X.shape[0])
        elif kind == "centers":
            labels = nearest_center_labels(X, value)
        else:
            labels = value
        Y = np.full((X.shape[0], h), 0.2)
        Y[np.arange(X.shape[0]), labels] += 1.0
        Ys.append(Y)
    return Ys


def _check_common(est):
    check_scalar(est.max_iter, "max_iter", kind=numbers.Integral, lo=1)
    check_scalar(est.tol, "tol", lo=0.0)
    check_scalar(getattr(est, "verbose", 0), "verbose", kind=numbers.Integral, lo=0)
    if est.similarity_params is not None and not isinstance(est.similarity_params, dict):
        raise TypeError(f"similarity_params must be a dict or None, got {est.similarity_params!r}.")


# --------------------------------------------------------------------------------------------
# Estimators
# --------------------------------------------------------------------------------------------
class ModelRelationClustering(MultiTaskMixin, ClusterMixin, BaseEstimator):
    """Multi-task clustering with model relation learning (MTCMRL).

    Clusters several related tasks (data sets sharing one feature space, each with its own
    number of clusters) jointly: symmetric NMF of each task's similarity matrix, a linear
    regression ``X^t W^t`` of each cluster indicator, and learned relations ``G^(t,s)`` between
    the clusters of every pair of tasks that pull related regression parameters together.

    Parameters
    ----------
    n_clusters : int or sequence of int, default=8
        Clusters per task ``h_t``; one int for all tasks or one per task. The default is
        scikit-learn's ``KMeans`` default, the rule of every flat clustering estimator of
        this library.
    lam : float, default=4.0
        Weight ``lambda >= 0`` of the regression term ``||Y^t - X^t W^t||^2`` (paper grid
        ``2^-2 .. 2^2``). It is not the task coupling: that is ``alpha``.
    mu : float, default=0.5
        Ridge penalty ``mu > 0`` on ``W^t`` (paper: ``2^-1``).
    alpha : float, default=4.0
        Weight ``alpha >= 0`` of the cross-task relation term (paper grid ``2^-2 .. 2^2``).
        ``alpha = 0`` decouples the tasks: with ``beta = 0`` too this is the paper's SNMF+LR
        baseline (``relations_`` is then empty).
    beta : float, default=0.5
        Regulariser ``beta >= 0`` of ``||G^(t,s)||^2`` (paper: ``2^-1``). With ``beta = 0`` the
        relation step is a linear programme; its mass goes to the closest cluster pair(s).
    similarity : {"cosine"}, str, Divergence or callable, default="cosine"
        How ``M^t`` is built; see :func:`similarity_matrix` (a divergence ``D`` becomes
        ``exp(-S / median(S))`` with ``S`` the symmetrised ``D``).
    similarity_params : dict or None, default=None
        Parameters of a divergence used as similarity (e.g. ``{"A": A}``); a non-empty
        dict with ``"cosine"`` or a callable is a ``ValueError`` (it would be ignored).
    init : {"k-means++", "random"} or list, default="k-means++"
        Initial labels, turned into ``Y^t = onehot + 0.2`` (paper). ``"k-means++"`` runs
        :class:`~bregclust.kmeans.BregmanKMeans` (squared Euclidean, k-means++ seeding) on the
        rows of each task; ``"random"`` draws uniform labels. A list gives one entry per task:
        one of those strings, an ``(n_t,)`` integer label array, a ``(h_t, n_features)`` array
        of centres (each row takes the label of its nearest centre) or an ``(n_t, h_t)``
        non-negative matrix used as ``Y^t``. ``"k-means"`` is a deprecated alias of
        ``"k-means++"``.
    max_iter : int, default=3000
        Maximum number of sweeps over the tasks.
    tol : float, default=1e-7
        Stop when one sweep lowers ``J`` by at most ``tol * |J|``; with ``"lbfgs"`` each
        L-BFGS-B run inside a sweep stops when one of its iterations lowers the task's part of
        ``J`` by at most ``tol / 100`` of that part (``tol=0`` runs it until no step lowers
        ``J``, at most 10,000 iterations per task and sweep). The default gives converged labels on the paper's data
        (looser tolerances stop on a plateau of ``J``, see Notes). On toy problems whose ``J``
        tends to 0 the relative decrease can stay above it; pass a looser ``tol`` there. Not
        used by ``algorithm="as_printed"``.
    algorithm : {"lbfgs", "damped", "as_printed"}, default="lbfgs"
        How ``Y^t`` is updated (the ``G`` and ``W`` steps are exact in all three).
        ``"lbfgs"``: ``Y^t`` and ``W^t`` together, ``W^t`` eliminated in closed form and
        ``Y^t >= 0`` minimised by L-BFGS-B (see Notes); it reaches the converged ``J`` in a few
        sweeps. ``"damped"``: one multiplicative update (Eq. 19) per sweep, shortened whenever
        it would increase ``J``; it converges to the same kind of point but needs hundreds to
        thousands of sweeps on real data. Both never increase ``J`` and stop on the relative ``tol``.
        ``"as_printed"``: the paper's Algorithm 1 literally, the undamped Eq. 19 and its
        stopping rule (stop once a sweep lowers ``J`` by less than 1, which includes a sweep
        that raises it). It is not monotone and usually stops early, near the k-means start;
        use it to reproduce the paper's procedure, not for results.
    random_state : int, RandomState or None, default=None
        Seeds the k-means (or random) initialisation; the alternating loop is deterministic.
    verbose : int, default=0
        0: silent; 1: a progress bar (on standard error) with the sweep count and ``J``;
        2: also one line per sweep.

    Attributes
    ----------
    labels_ : list of ndarray
        ``labels_[t]`` (shape ``(n_t,)``): row-wise argmax of ``indicators_[t]``.
    indicators_ : list of ndarray
        ``Y^t >= 0``, shape ``(n_t, h_t)``.
    coef_ : list of ndarray
        ``W^t``, shape ``(n_features, h_t)``.
    relations_ : dict
        ``{(t, s): G^(t,s)}`` for ``t != s``, each ``(h_t, h_s)``, non-negative, summing to 1.
    objective_history_ : ndarray
        ``J`` at the initial point and after every sweep; non-increasing unless
        ``algorithm="as_printed"``.
    n_iter_ : int
        Number of sweeps run.
    n_inner_iter_ : int
        L-BFGS-B iterations summed over all ``Y`` blocks and sweeps (``algorithm="lbfgs"``;
        0 otherwise).
    n_tasks_ : int
    n_damped_ : int
        Number of ``Y`` steps in which the paper's multiplicative update would have increased
        ``J`` and was shortened (``algorithm="damped"``; see Notes).
    n_features_in_ : int

    Notes
    -----
    Each sweep visits the tasks in order and, for task ``t``, updates:

    1. ``G^(t,s)`` for every ``s != t``: ``min <A, G> + beta ||G||^2`` over the probability
       simplex (``A_ij = ||W^t_i - W^s_j||^2``) is exactly the Euclidean projection of
       ``-A / (2 beta)`` onto the simplex, computed by sorting (no QP solver, no Frank-Wolfe).
    2. ``W^t``: both relation directions contain ``W^t``, so with ``Ghat_s = G^(t,s) +
       G^(s,t)^T`` and ``H = diag(sum_s Ghat_s 1)`` the exact minimiser solves the Sylvester
       equation ``lam X^T X W + W (mu I + alpha H) = lam X^T Y + alpha sum_s W^s Ghat_s^T``
       (the paper's derivation keeps only ``G^(t,s)``). The right factor is diagonal, so each
       column solves ``(lam X^T X + b_j I) w_j = c_j``; all columns reuse one thin SVD
       ``X = U S V^T`` per task, computed once in ``fit`` (for sparse ``X`` from the
       eigendecomposition of the smaller of ``X X^T`` and ``X^T X``, so ``X`` is only
       multiplied, never densified): ``w_j = (c_j - lam X^T U diag(1 / (lam s^2 + b_j))
       U^T X c_j) / b_j`` when ``n_t <= d``, ``w_j = V diag(1 / (lam s^2 + b_j)) V^T c_j``
       otherwise.
    3. ``Y^t`` (``algorithm="lbfgs"``, the default): with ``G`` and the other tasks fixed, the
       minimum of ``J`` over ``W^t`` is a smooth function of ``Y^t`` alone. Column ``j`` of
       ``W^t`` solves ``(lam X^T X + b_j I) w_j = lam X^T y_j + c_j`` (step 2), and
       substituting it gives ``F(Y) = 1/2 ||M - Y Y^T||^2 + sum_j [lam ||y_j||^2 -
       sum_k (lam s_k z_kj + v_kj)^2 / (lam s_k^2 + b_j)]`` up to a constant, with
       ``X = U S V^T``, ``z = U^T Y`` and ``v = V^T C``. With ``lam = alpha = 0`` this is
       SNMF itself. ``F`` is minimised over ``Y >= 0`` by scipy's L-BFGS-B from the current
       ``Y`` (its line search only accepts decreasing steps), then ``W^t`` is solved for the
       new ``Y``. Eliminating ``W^t`` matters as much as the quasi-Newton steps: ``Y`` and
       ``W`` alternated one block at a time (as the multiplicative update must) advance
       slowly along directions in which the SNMF term is flat. The result is a fixed point of
       the damped update below: the damped update moves it by less than ``tol``.
       (``algorithm="damped"``): the paper's multiplicative update (Eq. 19),
       ``Y <- Y * (M Y + lam Q+) / (Y Y^T Y + lam Y + lam Q-)`` with ``Q = X W``. It is not
       monotone: on the paper's data sets a few percent of its ``Y`` steps increase ``J``
       (``benchmarks/mtcmrl_paper.py`` counts them), almost all in the second sweep, right
       after ``W`` leaves its all-ones start, where ``eta = 1/2`` suffices. So every step is
       checked exactly (the change of ``J`` is a polynomial in the step length) and, when the
       full update does not decrease ``J``, damped to
       ``Y + eta (Y * R - Y)`` with ``eta`` halved until it does (``Y >= 0`` holds for
       ``eta <= 1``; ``n_damped_`` counts these steps). An undamped step is exactly Eq. 19.
       Steps 1-2 are exact block minimisations, so ``J`` never increases.

    Three deliberate deviations from the paper, each kept because it reaches a lower value of
    the paper's own objective: the exact ``W`` step above (both relation directions; the
    printed derivation drops ``G^(s,t)``), the ``Y`` step (L-BFGS-B with ``W^t`` eliminated,
    or the damped Eq. 19; the undamped Eq. 19 can raise ``J``), and the stopping rule. The paper stops once a sweep lowers ``J`` by less
    than 1, an absolute threshold that any sweep raising ``J`` also meets, so with the
    undamped update a run can end a few sweeps after its k-means start. Here the loop stops
    on the relative decrease ``tol``; SNMF's objective has long plateaus, and a loose ``tol``
    stops on one of them with visibly worse labels, hence the small default.
    ``algorithm="as_printed"`` restores Eq. 19 and the paper's stopping rule (the ``W`` step
    stays exact).

    ``M^t`` is a dense ``n_t x n_t`` float64 matrix (and each ``Y`` step multiplies by it):
    fine for the paper's tasks (a few hundred to ~1,600 documents); tasks above
    ``MAX_TASK_SAMPLES`` (20,000) are refused with a ``ValueError``.

    ``fit(Xs)`` takes a sequence of tasks, each a 2-D array or sparse matrix with the same
    number of columns; sparse input stays sparse. Per-task results are lists.

    References
    ----------
    X. Zhang, X. Zhang, H. Liu, J. Luo. Multi-Task Clustering with Model Relation Learning.
    IJCAI 2018.

    Examples
    --------
    >>> import numpy as np
    >>> from bregclust.model_relation import ModelRelationClustering
    >>> rng = np.random.RandomState(0)
    >>> c = np.eye(3) * 5
    >>> Xs = [np.abs(c[[0, 1]].repeat(10, axis=0) + rng.rand(20, 3)),
    ...       np.abs(c[[0, 1, 2]].repeat(10, axis=0) + rng.rand(30, 3))]
    >>> est = ModelRelationClustering(n_clusters=[2, 3], tol=1e-5, random_state=0).fit(Xs)
    >>> [len(set(lab)) for lab in est.labels_]
    [2, 3]
    >>> bool(np.all(np.diff(est.objective_history_) <= 1e-9 * est.objective_history_[:-1]))
    True
    """

    def __init__(self, n_clusters=8, *, lam=4.0, mu=0.5, alpha=4.0, beta=0.5,
                 similarity="cosine", similarity_params=None, init="k-means++", max_iter=3000,
                 tol=1e-7, algorithm="lbfgs", random_state=None, verbose=0):
        self.n_clusters = n_clusters
        self.lam = lam
        self.mu = mu
        self.alpha = alpha
        self.beta = beta
        self.similarity = similarity
        self.similarity_params = similarity_params
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.algorithm = algorithm
        self.random_state = random_state
        self.verbose = verbose

    _parameter_constraints = {
        "lam": [Interval(numbers.Real, 0.0)],
        "mu": [Interval(numbers.Real, 0.0, lo_closed=False)],
        "alpha": [Interval(numbers.Real, 0.0)],
        "beta": [Interval(numbers.Real, 0.0)],
        "similarity_params": [None, dict],
        "max_iter": [Interval(numbers.Integral, 1)],
        "tol": [Interval(numbers.Real, 0.0)],
        "verbose": [Interval(numbers.Integral, 0)],
    }
    _init_aliases = _INIT_ALIASES

    @fit_callbacks
    def fit(self, Xs, y=None):
        """Cluster all tasks jointly.

        Parameters
        ----------
        Xs : sequence of {array-like, sparse matrix}, each of shape (n_t, n_features)
            One matrix per task; all with the same number of features.
        y : None
            Ignored.

        Returns
        -------
        self : ModelRelationClustering
        """
        self._validate_params()
        Xs = check_tasks(Xs)
        _check_sizes(Xs)
        if self.lam > 0:
            for t, X in enumerate(Xs):  # the regression term lam ||Y - X W||^2 needs X^T X
                data = X.data if sp.issparse(X) else X
                with np.errstate(over="ignore"):
                    if not np.isfinite(np.square(data).sum()):
                        raise ValueError(
                            f"task {t} is too large for the regression term: its squared norm "
                            "overflows float64; rescale the data (e.g. divide by its largest "
                            "absolute value).")
                # The regression term is not scale invariant (a scale of X is one of mu ||W||^2),
                # so the data cannot be rescaled for it; squares below float64's normal range
                # would leave X^T X zero or inexact.
                big = float(np.abs(data).max()) if data.size else 0.0
                if 0.0 < big and big * big < np.finfo(np.float64).tiny:
                    raise ValueError(
                        f"task {t} is too small for the regression term: its squared entries "
                        f"underflow float64 (largest absolute value {big:.3g}); rescale the data "
                        "(e.g. divide by its largest absolute value).")
        hs = check_n_clusters_per_task(self.n_clusters, [X.shape[0] for X in Xs])
        parsed = parse_init(self.init, Xs, hs, aliases=self._init_aliases, membership=True)
        Ms, factors = _prepare(Xs, self.similarity, self.similarity_params, self.lam > 0)
        Ys = _initial_indicators(Xs, hs, parsed, self.random_state)
        Ws = [np.ones((X.shape[1], h)) for X, h in zip(Xs, hs)]
        res = _fit_loop(Xs, Ms, factors, Ys, Ws, float(self.lam), float(self.mu),
                        float(self.alpha), float(self.beta), self.max_iter, self.tol,
                        self.verbose, _check_algorithm(self.algorithm),
                        desc="ModelRelationClustering")
        if not res["converged"]:
            warnings.warn(
                f"MTCMRL did not converge in max_iter={self.max_iter} sweeps (last decrease of "
                f"J above the stopping threshold); increase max_iter or tol.",
                ConvergenceWarning, stacklevel=user_stacklevel(),
            )
        self._store(res, Xs)
        return self

    def _store(self, res, Xs):
        self.indicators_ = res["Ys"]
        self._set_fitted_tasks(Xs, [np.argmax(Y, axis=1) for Y in res["Ys"]], res["history"])
        self.coef_ = res["Ws"]
        self.relations_ = res["Gs"]
        self.n_iter_ = res["n_iter"]
        self.n_damped_ = int(np.count_nonzero(res["etas"] < 1.0))
        self.n_inner_iter_ = int(res["inner"].sum())

    def _score_criterion(self, Xs, labels):
        """``score``'s criterion: each task's within-cluster sum of squares per point, on
        unit-norm rows for the cosine similarity, on the rows as given otherwise."""
        is_cosine = isinstance(self.similarity, str) and self.similarity == "cosine"
        return within_cluster_per_point(Xs, labels, unit_rows=is_cosine)

    def predict(self, X, task=None):
        """Cluster of new rows of task ``task``: the largest entry of the regression ``X W^t``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        task : int, optional
            Which task's regression ``W^t`` to use; required when there are several tasks.

        Returns
        -------
        labels : ndarray of shape (n_samples,)

        Raises
        ------
        ValueError
            When the model was fitted with ``lam=0``: ``W^t`` is then not fitted to the
            indicators and cannot predict.
        """
        check_is_fitted(self, "coef_")
        t = self._check_task(task)
        if not self.lam > 0:
            raise ValueError(
                "predict needs lam > 0: with lam=0 the regression X W^t is not fitted to the "
                "cluster indicators. Refit with lam > 0."
            )
        X = self._check_X(X)
        return np.argmax(np.asarray(X @ self.coef_[t]), axis=1).astype(np.int64)

    def objective(self, Xs):
        """Objective ``J`` of the fitted variables on the training tasks ``Xs``.

        The similarity matrices are recomputed, so pass the same tasks given to ``fit``.

        Parameters
        ----------
        Xs : list of {array-like, sparse matrix}
            The training tasks, as given to ``fit``.

        Returns
        -------
        J : float
        """
        check_is_fitted(self, "coef_")
        Xs = check_tasks(Xs)
        if [X.shape[0] for X in Xs] != [Y.shape[0] for Y in self.indicators_]:
            raise ValueError("Xs must be the tasks passed to fit (sample counts differ).")
        Ms = [_similarity(X, self.similarity, self.similarity_params, name=f"task {t}")
              for t, X in enumerate(Xs)]
        return _objective(Xs, Ms, self.indicators_, self.coef_, self.relations_,
                          float(self.lam), float(self.mu), float(self.alpha), float(self.beta))


class SymmetricNMF(ClusterMixin, BaseEstimator):
    """Symmetric non-negative matrix factorisation clustering (SNMF) of one data set.

    Minimises ``1/2 ||M - Y Y^T||_F^2`` over ``Y >= 0`` (Kuang, Park & Ding 2012), by default
    with scipy's L-BFGS-B, or with the multiplicative update ``Y <- Y * (M Y) / (Y Y^T Y)``,
    damped when it would increase the objective (as in :class:`ModelRelationClustering`, which
    reduces to this with ``lam = alpha = 0``). This is the single-task SNMF baseline of the
    MTCMRL paper.

    Parameters
    ----------
    n_clusters : int, default=8
        As scikit-learn's ``KMeans``.
    similarity : {"cosine"}, str, Divergence or callable, default="cosine"
        See :func:`similarity_matrix`.
    similarity_params : dict or None, default=None
    init : {"k-means++", "random"}, int array or ndarray, default="k-means++"
        Initial labels; ``Y = onehot + 0.2``. ``"k-means++"``: labels of
        :class:`~bregclust.kmeans.BregmanKMeans` (squared Euclidean); an
        ``(n_clusters, n_features)`` array gives centres. ``"k-means"`` is a deprecated alias
        of ``"k-means++"``.
    max_iter : int, default=3000
        Maximum number of iterations (sweeps): with ``"lbfgs"`` one sweep is a whole L-BFGS-B
        run, so a converged fit takes two (the second confirms the first).
    tol : float, default=1e-7
        Stop when one iteration lowers the objective by at most ``tol`` times its value (an
        L-BFGS-B iteration: ``tol / 100``). The objective has long plateaus; looser values stop
        on them (see :class:`ModelRelationClustering`, Notes). Not used by
        ``algorithm="as_printed"``.
    algorithm : {"lbfgs", "damped", "as_printed"}, default="lbfgs"
        ``"lbfgs"``: scipy's L-BFGS-B under ``Y >= 0``. ``"damped"``: the damped
        multiplicative update. ``"as_printed"``: the undamped multiplicative update and the
        MTCMRL paper's stopping rule (the objective drops by less than 1); not monotone, see
        :class:`ModelRelationClustering`.
    random_state : int, RandomState or None, default=None
    verbose : int, default=0
        0: silent; 1: a progress bar (standard error); 2: also one line per iteration.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
    indicators_ : ndarray of shape (n_samples, n_clusters)
    objective_history_ : ndarray
    n_iter_ : int
    n_inner_iter_ : int
        L-BFGS-B iterations in all (``algorithm="lbfgs"``; 0 otherwise).
    n_damped_ : int
    n_features_in_ : int

    Notes
    -----
    The similarity matrix is dense ``n x n``; samples above ``MAX_TASK_SAMPLES`` are refused.

    Examples
    --------
    >>> import numpy as np
    >>> from bregclust.model_relation import SymmetricNMF
    >>> X = np.array([[1, 0.1], [1, 0.0], [0.1, 1], [0.0, 1]])
    >>> SymmetricNMF(2, init=np.array([0, 0, 1, 1]), tol=1e-5).fit(X).labels_.tolist()
    [0, 0, 1, 1]
    """

    def __init__(self, n_clusters=8, *, similarity="cosine", similarity_params=None,
                 init="k-means++", max_iter=3000, tol=1e-7, algorithm="lbfgs", random_state=None,
                 verbose=0):
        self.n_clusters = n_clusters
        self.similarity = similarity
        self.similarity_params = similarity_params
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.algorithm = algorithm
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y=None):
        """Cluster ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self
        """
        _check_common(self)
        X = check_array(X, name="X")
        _check_sizes([X])
        h = check_n_clusters(self.n_clusters, X.shape[0])
        init = self.init if isinstance(self.init, str) else [self.init]
        parsed = parse_init(init, [X], [h], aliases=_INIT_ALIASES)
        M = _similarity(X, self.similarity, self.similarity_params, name="X")
        Ys = _initial_indicators([X], [h], parsed, self.random_state)
        Ws = [np.zeros((X.shape[1], h))]
        res = _fit_loop([X], [M], [None], Ys, Ws, 0.0, 1.0, 0.0, 0.0, self.max_iter,
                        self.tol, self.verbose, _check_algorithm(self.algorithm),
                        desc="SymmetricNMF")
        if not res["converged"]:
            warnings.warn(
                f"SNMF did not converge in max_iter={self.max_iter} iterations; increase "
                "max_iter or tol.", ConvergenceWarning, stacklevel=user_stacklevel(),
            )
        self.indicators_ = res["Ys"][0]
        self.labels_ = np.argmax(self.indicators_, axis=1).astype(np.int64)
        self.objective_history_ = res["history"]
        self.n_iter_ = res["n_iter"]
        self.n_damped_ = int(np.count_nonzero(res["etas"] < 1.0))
        self.n_inner_iter_ = int(res["inner"].sum())
        self.n_features_in_ = X.shape[1]
        return self
