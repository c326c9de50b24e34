"""Multitask Bregman Clustering (MBC; Zhang & Zhang, AAAI 2010).

``T`` clustering tasks on data sets that share one feature space are solved together. Each task
keeps its own centres and labels; a relation matrix (an optimal transport plan) between every
ordered pair of tasks couples their centres (:doc:`/guide/mbc`)::

    L = sum_t (1/n_t) sum_i d(x^t_i, u^t_{h(i)})
        + lam/(T-1) sum_{t != s} <W^ts, D(U^t, U^s)>          D[z, l] = d(u^t_z, u^s_l)

with ``W^ts`` a transport plan between the cluster marginals of the two tasks (uniform ``1/K``
in the paper; the empirical cluster proportions with ``marginals="empirical"``). One sweep is
three block minimisations, so ``L`` never increases:

1. ``W^ts = ot.emd(pi^t, pi^s, D(U^t, U^s))`` for every ordered pair (:func:`_emd`, through
   the package's one POT call site);
2. ``h^t(x) = argmin_z d(x, u^t_z)`` (the registry's GEMM kernels);
3. task by task, every centre solves ``min_u A d(mu_L, u) + B d(u, mu_R)`` (paper Eq. 14),
   exactly (:func:`solve_centroids`).

The module-level pieces (:func:`solve_centroids`, :func:`mbc_objective`) are public so that the
tests and the benchmarks can check each step against an independent oracle.
"""

import dataclasses
import math
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from . import _conditioning as C
from . import _execution as E
from ._callbacks import fit_callbacks
from ._centroid import lloyd
from ._conditioning import DataStats
from ._multitask import (
    Interval,
    MultiTaskMixin,
    Options,
    as_history,
    check_n_clusters_per_task,
    check_task_magnitudes,
    parse_init,
    resolve_n_init,
)
from ._progress import progress
from ._seeding import seed_centres
from ._smoothing import push_inside, resolve_smoothing
from ._sources import as_source
from ._spherical import unit_centres
from ._transport import transport_plan
from ._validation import check_task_list, user_stacklevel
from .divergences import get_divergence

__all__ = [
    "MultitaskBregmanClustering",
    "select_lam",
    "multitask_bregman_clustering",
    "solve_centroids",
    "mbc_objective",
]

_SOLVERS = ("exact", "geodesic")
_MARGINALS = ("uniform", "empirical")
_GUARDS = ("none", "task", "sweep")


# =========================================================================== transport (POT)
def _emd(a, b, M, *, where=""):
    """Optimal transport plan ``argmin_W <W, M>`` with marginals ``a`` (rows) and ``b`` (columns).

    :func:`bregclust._transport.transport_plan` (``b`` rescaled to the mass of ``a``, a result
    code other than optimal gives a ``ConvergenceWarning`` naming ``where``).
    """
    return transport_plan(a, b, M, where=where, what="the relation matrix may be suboptimal",
                          advice="rescale the data, or use smoothing > 0 so "
                          "centres stay inside the domain")


# =========================================================================== centroid solvers
def _rowwise_divergence(div, X, Y):
    """``d(x_i, y_i)`` for paired rows of two dense arrays (the GEMM form, row by row)."""
    G = div.grad(Y)
    diff = X - Y
    with np.errstate(invalid="ignore"):
        prod = diff * G
    prod[diff == 0] = 0.0  # 0 * inf at a boundary coordinate contributes nothing
    return div.phi_rows(X) - div.phi_rows(Y) - prod.sum(axis=1)


def _geodesic_centroids(div, A, B, mL, mR, n_steps=80):
    """Nielsen & Nock's geodesic walk: the best point on the dual geodesic from ``mL`` to ``mR``.

    ``u(s) = grad_inv((1 - s) grad(mL) + s grad(mR))``, ``s`` in ``[0, 1]``; a dichotomic
    (golden-section) search on ``s`` minimises ``A d(mL, u(s)) + B d(u(s), mR)`` per cluster.
    The exact optimum is generally *not* on this curve (:doc:`/guide/mbc`), so this is an
    approximation; it is exact for symmetric (quadratic) generators.
    """
    k = mL.shape[0]
    GL = div.grad(mL)
    GR = div.grad(mR)
    a = A.ravel()
    b = B.ravel()

    def point(s):
        s = s[:, None]
        with np.errstate(invalid="ignore"):
            T = (1.0 - s) * GL + s * GR
        return div.grad_inv(T)

    def value(U):
        with np.errstate(invalid="ignore", over="ignore"):
            v = a * _rowwise_divergence(div, mL, U) + b * _rowwise_divergence(div, U, mR)
        return np.where(np.isnan(v), np.inf, v)

    lo = np.zeros(k)
    hi = np.ones(k)
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    s1 = hi - ratio * (hi - lo)
    s2 = lo + ratio * (hi - lo)
    f1 = value(point(s1))
    f2 = value(point(s2))
    for _ in range(n_steps):
        left = f1 <= f2  # minimum in [lo, s2]
        hi = np.where(left, s2, hi)
        lo = np.where(left, lo, s1)
        s2n = np.where(left, s1, lo + ratio * (hi - lo))
        s1n = np.where(left, hi - ratio * (hi - lo), s2)
        f2n = np.where(left, f1, np.nan)
        f1n = np.where(left, np.nan, f2)
        s1, s2 = s1n, s2n
        need1 = np.isnan(f1n)
        need2 = np.isnan(f2n)
        if need1.any():
            f1n[need1] = value(point(s1))[need1]
        if need2.any():
            f2n[need2] = value(point(s2))[need2]
        f1, f2 = f1n, f2n
    s = np.where(f1 <= f2, s1, s2)
    U = point(s)
    best = value(U)
    # the end points (u = mL, u = mR) are on the geodesic too; keep whichever is best
    for cand in (mL, mR):
        v = value(cand)
        better = v < best
        if better.any():
            U[better] = cand[better]
            best = np.where(better, v, best)
    return U


def _l1_cost(A_pos, A_neg, A_tot, wR_pos, wR_neg, lm_pos, lm_neg, lm_tot, U):
    """Per-coordinate block objective of one task's centres under l1_subgradient (see
    :func:`_l1_candidates`)."""
    pos = U > 0
    neg = U < 0
    data = np.where(pos, A_neg, np.where(neg, A_pos, A_tot))
    right = 2.0 * np.abs(U) * np.where(pos, wR_pos, np.where(neg, wR_neg, 0.0))
    left = np.where(pos, lm_pos, np.where(neg, lm_neg, lm_tot))
    return data + right + left


def solve_centroids(divergence, A, B, mu_L, mu_R, *, solver="exact", current=None):
    """Minimise ``A_z d(mu_L[z], u) + B_z d(u, mu_R[z])`` for every row ``z`` (paper Eq. 14).

    Parameters
    ----------
    divergence : str or Divergence
        A differentiable divergence.
    A, B : array-like of shape (k,)
        Non-negative weights of the two terms.
    mu_L, mu_R : ndarray of shape (k, d)
        The left and right arguments (centres inside the divergence's domain). Rows with
        ``B = 0`` ignore ``mu_R`` and rows with ``A = 0`` ignore ``mu_L``.
    solver : {"exact", "geodesic"}, default="exact"
        ``"exact"``: the closed form ``(A mu_L + B mu_R) / (A + B)`` for symmetric divergences;
        per coordinate for asymmetric separable ones (kl: Lambert W, Itakura-Saito: a quadratic
        root, any other registered generator: bisection on the stationarity equation in numba,
        to machine precision). ``"geodesic"``: Nielsen & Nock's geodesic-walk approximation
        (the paper's method; also the fallback for non-separable asymmetric generators).
    current : ndarray of shape (k, d), optional
        Returned for rows where ``A = B = 0`` (the objective does not depend on them).

    Returns
    -------
    U : ndarray of shape (k, d)

    Notes
    -----
    For a separable ``phi(x) = sum_j f(x_j)`` the problem splits by coordinate; the stationarity
    equation ``A f''(u)(u - mL) + B (f'(u) - f'(mR)) = 0`` has its root between ``mL`` and
    ``mR``. For kl it is ``A (1 - mL/u) + B log(u/mR) = 0`` and for Itakura-Saito
    ``B u^2 + (A - B) mR u - A mL mR = 0``.

    Examples
    --------
    >>> import numpy as np
    >>> U = solve_centroids("sqeuclidean", [1.0], [3.0], np.array([[0.0]]), np.array([[4.0]]))
    >>> float(U[0, 0])
    3.0
    """
    div = get_divergence(divergence)
    if solver not in _SOLVERS:
        raise ValueError(f"solver must be one of {_SOLVERS}, got {solver!r}.")
    if not div.differentiable:
        raise ValueError(
            f"solve_centroids needs a differentiable divergence (it uses grad phi and its "
            f"inverse); {div.name} is not differentiable."
        )
    A = np.asarray(A, dtype=np.float64).ravel()
    B = np.asarray(B, dtype=np.float64).ravel()
    mu_L = np.asarray(mu_L, dtype=np.float64)
    mu_R = np.asarray(mu_R, dtype=np.float64)
    k, d = mu_L.shape
    if A.shape != (k,) or B.shape != (k,) or mu_R.shape != (k, d):
        raise ValueError(
            f"shapes do not match: A {A.shape}, B {B.shape}, mu_L {mu_L.shape}, mu_R {mu_R.shape}."
        )
    if (A < 0).any() or (B < 0).any():
        raise ValueError("A and B must be non-negative.")
    U = np.empty((k, d))
    only_L = (B == 0) & (A > 0)
    only_R = (A == 0) & (B > 0)
    both = (A > 0) & (B > 0)
    none = (A == 0) & (B == 0)
    U[only_L] = mu_L[only_L]
    U[only_R] = mu_R[only_R]
    if none.any():
        if current is None:
            raise ValueError("rows with A = B = 0 need `current` centres.")
        U[none] = np.asarray(current, dtype=np.float64)[none]
    if not both.any():
        return U
    a = A[both][:, None]
    b = B[both][:, None]
    mL = np.ascontiguousarray(mu_L[both])
    mR = np.ascontiguousarray(mu_R[both])
    if div.has_sided_centroid and (div.symmetric or solver == "exact"):
        U[both] = div.sided_centroid(a, b, mL, mR)
    else:
        U[both] = _geodesic_centroids(div, a, b, mL, mR)
    return U


# =========================================================================== the objective
def mbc_objective(Xs, labels, centers, relations, divergence="sqeuclidean", lam=0.5, *,
                  smoothing=0.0, smoothing_points=None):
    """The MBC objective by its definition (slow and obvious; the oracle for the fitted loop).

    ``L = sum_t (1/n_t) [sum_i d(x^t_i, u^t_{h(i)}) + beta sum_z d(z^t, u^t_z)]
    + lam/(T-1) sum_{t != s} <W^ts, D(U^t, U^s)>``; the ``beta`` term is the smoothing
    pseudo-point of :class:`~bregclust.BregmanKMeans` (absent when ``smoothing=0``).

    Parameters
    ----------
    Xs : list of {ndarray, sparse matrix}
    labels : list of ndarray of int
    centers : list of ndarray of shape (K_t, n_features)
    relations : dict {(t, s): ndarray of shape (K_t, K_s)}
        Transport plans for every ordered pair ``t != s`` (ignored when ``T = 1``).
    divergence : str or Divergence, default="sqeuclidean"
    lam : float, default=0.5
    smoothing : float or sequence of float, default=0.0
        The pseudo-count ``beta``, one for all tasks or one per task (as ``smoothing_``).
    smoothing_points : list of ndarray, optional
        One point ``z^t`` per task (required when ``smoothing > 0``).

    Returns
    -------
    float
    """
    div = get_divergence(divergence)
    T = len(Xs)
    betas = (list(np.broadcast_to(np.asarray(smoothing, dtype=np.float64), (T,)))
             if np.ndim(smoothing) <= 1 else None)
    if betas is None or len(betas) != T:
        raise ValueError(f"smoothing must be one float or one per task ({T}), got {smoothing!r}.")
    total = 0.0
    for t in range(T):
        D = div.generic_pairwise(Xs[t], centers[t])
        lab = np.asarray(labels[t])
        v = float(D[np.arange(lab.shape[0]), lab].sum())
        beta = betas[t]
        if beta > 0:
            v += beta * float(div.generic_pairwise(
                np.asarray(smoothing_points[t])[None, :], centers[t]).sum())
        total += v / Xs[t].shape[0]
    if T > 1 and lam > 0:
        c = lam / (T - 1)
        for t in range(T):
            for s in range(T):
                if s != t:
                    C = div.generic_pairwise(centers[t], centers[s])
                    total += c * float((relations[(t, s)] * C).sum())
    return total


# =========================================================================== the fitting loop
class _SmoothModel:
    """Task statistics of a differentiable generator: the GEMM parts of the centres and the
    per-cluster sums ``S`` and ``Phi`` (sums of rows and of ``phi(x)``)."""

    extra = "phi"

    @staticmethod
    def smoothing_stats(task, div, z):
        task.phi_z = float(E.phi_rows(div, np.ascontiguousarray(z[None, :]))[0])

    @staticmethod
    def set_stats(task, part):
        S, Phi = part.S, part.Phi
        if task.beta > 0:
            S = S + task.beta * task.z
            Phi = Phi + task.beta * task.phi_z
        task.S = S
        task.Phi = np.asarray(Phi, dtype=np.float64)

    @staticmethod
    def set_centers(task, pc):
        task.G = pc.G
        task.GT = pc.GT  # (d, k), C order for sparse @ dense
        task.phiU = pc.phi
        task.c = pc.c

    @staticmethod
    def data_term(task, div):
        total = float(task.Phi.sum() + task.weights @ task.c - np.vdot(task.S, task.G))
        return max(total, 0.0) / task.n

    @staticmethod
    def pair_cost(div, a, b):
        D = a.phiU[:, None] + b.c[None, :] - a.U @ b.GT
        return np.maximum(D, 0.0, out=D)


class _SignMassModel:
    """Task statistics of l1_subgradient (the registry's one non-differentiable generator,
    ``sum |x|`` with the sign subgradient): per-cluster positive and negative masses ``PN``.
    Its block problem has no exact sided centroid (see :func:`_l1_step`)."""

    extra = "pn"

    @staticmethod
    def smoothing_stats(task, div, z):
        task.z_pn = np.concatenate([np.maximum(z, 0), np.maximum(-z, 0)])

    @staticmethod
    def set_stats(task, part):
        PN = part.PN
        if task.beta > 0:
            PN = PN + task.beta * task.z_pn
        task.PN = PN
        d = task.source.d
        task.S = PN[:, :d] - PN[:, d:]

    @staticmethod
    def set_centers(task, pc):
        pass

    @staticmethod
    def data_term(task, div):
        d = task.U.shape[1]
        P, N = task.PN[:, :d], task.PN[:, d:]
        cost = np.where(task.U > 0, N, np.where(task.U < 0, P, P + N))
        return 2.0 * float(cost.sum()) / task.n

    @staticmethod
    def pair_cost(div, a, b):
        return E.pairwise(div, a.U, b.U)


def _model(div):
    """The task-statistics strategy of a divergence."""
    return _SmoothModel if div.differentiable else _SignMassModel


class _LabelToken(str):
    """The labels of a chunked task, stood in for by a digest of every block's labels.

    :func:`_mbc_run` only compares labels (``np.array_equal``) and hands them back to
    :meth:`_Task.set_labels`; the labels themselves stay where the data are.
    """


class _Task:
    """One task of an MBC fit: its data source, per-cluster statistics and cached centre
    quantities (plain attributes).

    Statistics (with the smoothing pseudo-points): ``counts``, ``S`` (sums of rows), and those
    of the task's model (:class:`_SmoothModel`: ``Phi``, sums of ``phi(x)``;
    :class:`_SignMassModel`: ``PN``, positive and negative mass). Centre cache: ``U`` and the
    engine's prepared centres (``G = grad phi(U)``, ``c = <u, g> - phi(u)``, ``phiU``),
    refreshed once per centre update, so the objective, the pair costs and the centre step
    never recompute them. Every assignment pass returns the statistics of its labels too
    (kept in ``pending`` for :meth:`set_labels`), so a chunked task's labels never leave its
    workers.
    """

    __slots__ = ("source", "n", "k", "beta", "z", "phi_z", "z_pn", "labels", "counts",
                 "S", "Phi", "PN", "U", "G", "GT", "c", "phiU", "pending", "centres", "model",
                 "inertia")

    def __init__(self, source, k, beta, z, div):
        self.source = source
        self.n = source.n
        self.k = k
        self.beta = beta
        self.z = z
        self.phi_z = 0.0
        self.z_pn = None
        self.model = _model(div)
        if beta > 0:
            self.model.smoothing_stats(self, div, z)
        self.labels = None
        self.pending = None
        self.U = None
        self.inertia = None

    def set_labels(self, labels, div):
        """The cluster statistics of ``labels``: those of the last :meth:`assign` pass when
        they are its labels, else computed from the labels (in-memory tasks)."""
        part = self.pending
        mine = part is not None and (
            labels is part.labels if not isinstance(labels, _LabelToken)
            else part.digest is not None and labels == self._token(part))
        if not mine:
            if isinstance(labels, _LabelToken):
                raise RuntimeError("a chunked task's labels come from its last assign() pass.")
            part = self.source.label_stats(div, labels, self.k, self.model.extra)
            self.pending = part
        self.labels = labels
        self.counts = part.W
        self.model.set_stats(self, part)

    @staticmethod
    def _token(part):
        return _LabelToken("".join(part.digest[i].hex() for i in sorted(part.digest)))

    def set_centers(self, U, div):
        self.U = np.ascontiguousarray(U, dtype=np.float64)
        self.centres = E.prepare_centres(div, self.U)
        self.model.set_centers(self, self.centres)

    def assign(self, div):
        """Nearest centres of the task's points (one pass, which also sums the statistics of
        the new labels). Returns the labels (an array in memory, a label digest when the
        task is chunked)."""
        part = self.source.lloyd(div, self.centres, self.model.extra)
        self.pending = part
        self.inertia = part.objective
        if part.labels is not None:
            return part.labels
        token = self._token(part)
        return token

    @property
    def weights(self):
        """Cluster masses including the smoothing pseudo-point."""
        return self.counts + self.beta

    def data_term(self, div):
        """``(1/n) [sum_i d(x_i, u_h(i)) + beta sum_z d(z, u_z)]`` from the statistics, O(k d).

        ``sum_z [Phi_z - w_z phi(u_z) - <S_z - w_z u_z, g_z>] = sum Phi + w.c - <S, G>``.
        """
        return self.model.data_term(self, div)


def _pair_cost(div, a, b):
    """``D[z, l] = d(u^a_z, u^b_l)`` from the cached GEMM parts."""
    return a.model.pair_cost(div, a, b)


def _pair_costs(div, tasks):
    T = len(tasks)
    return {(t, s): _pair_cost(div, tasks[t], tasks[s])
            for t in range(T) for s in range(T) if s != t}


def _marginals(task, mode):
    if mode == "uniform":
        return np.full(task.k, 1.0 / task.k)
    return task.counts / task.n


def _w_step(tasks, D, mode, run, pairs=None):
    return {(t, s): _emd(_marginals(tasks[t], mode), _marginals(tasks[s], mode), D[(t, s)],
                         where=f" between tasks {t} and {s} (restart {run})")
            for (t, s) in (pairs if pairs is not None else D)}


def _partition_distance(a, b, M, where):
    """:func:`~bregclust.metrics.partition_emd` of two partitions with the proportions ``a``
    and ``b`` from the matrix ``M`` of costs between their centres (clipped at 0, as there)."""
    M = np.maximum(M, 0.0)
    plan = _emd(a / a.sum(), b / b.sum(), M, where=where)
    return float(np.sum(plan * M))


def _cross_term(W, D, c):
    return c * sum(float((W[key] * D[key]).sum()) for key in W)


def _objective_value(div, tasks, W, D, c):
    return sum(tk.data_term(div) for tk in tasks) + _cross_term(W, D, c)


def _u_step_task(div, tasks, W, c, t, solver):
    """Exact block minimisation over the centres of task ``t`` (others fixed); :doc:`/guide/mbc`.

    ``A = w_z/n_t + c sum_s colsum(W^st)_z``, ``B = c sum_s rowsum(W^ts)_z`` (``w_z/n_t + lam/K_t``
    and ``lam/K_t`` with uniform marginals), ``mu_L = (S_z/n_t + c sum_s W^st[:, z]^T U^s) / A``,
    ``mu_R = grad_inv(c sum_s W^ts[z] G^s / B)``.
    """
    tk = tasks[t]
    k, d = tk.U.shape
    colsum = np.zeros(k)
    rowsum = np.zeros(k)
    for s in range(len(tasks)):
        if s != t:
            colsum += W[(s, t)].sum(axis=0)
            rowsum += W[(t, s)].sum(axis=1)
    A = tk.weights / tk.n + c * colsum
    B = c * rowsum
    if div.symmetric and (A + B > 0).all():
        # closed form (paper Eq. 15): u = (A mu_L + B mu_R) / (A + B) with mu_R the weighted
        # mean of the matched centres (grad phi is linear), i.e.
        # u = (S/n + c sum_s (W^st^T + W^ts) U^s) / (A + B); one pass per task over k x d.
        scale = 1.0 / (A + B)
        out = tk.S * (scale / tk.n)[:, None]
        for s, other in enumerate(tasks):
            if s != t:
                M = (c * scale)[:, None] * (W[(s, t)].T + W[(t, s)])
                out += M @ other.U
        if div.spherical:  # the maximiser of a linear function over unit vectors (cosine)
            return unit_centres(out, tk.U)
        return out
    sign_mass = tk.model is _SignMassModel
    sym = div.symmetric or sign_mass
    Lnum = np.zeros((k, d))
    Rnum = np.zeros((k, d))
    for s, other in enumerate(tasks):
        if s != t:
            Lnum += np.ascontiguousarray(W[(s, t)].T) @ other.U
            Rnum += W[(t, s)] @ (other.U if sym else other.G)
    with np.errstate(invalid="ignore", divide="ignore"):
        mu_L = (tk.S / tk.n + c * Lnum) / A[:, None]
        R = c * Rnum / B[:, None]
    mu_L[A <= 0] = tk.U[A <= 0]
    if sign_mass:
        return _l1_step(tasks, W, c, t, mu_L)
    okR = B > 0
    mu_R = np.array(tk.U, copy=True)
    if okR.any():
        mu_R[okR] = R[okR] if div.symmetric else div.grad_inv(R[okR])
    return solve_centroids(div, A, B, mu_L, mu_R, solver=solver, current=tk.U)


def _l1_step(tasks, W, c, t, mu_L):
    """Centres of task ``t`` under l1_subgradient: the best of three candidates per coordinate.

    The block problem has no minimiser here: ``d(u, v)`` contributes ``2 |u_j|`` where signs
    differ, so the infimum is approached as ``u_j -> 0`` with the right sign. Each coordinate
    keeps the best of {current value, the cluster's (smoothed) mean, ``mu_L``} under the exact
    per-coordinate objective, so the objective still never increases.
    """
    tk = tasks[t]
    k, d = tk.U.shape
    P, N = tk.PN[:, :d], tk.PN[:, d:]
    A_pos, A_neg = 2.0 * P / tk.n, 2.0 * N / tk.n
    A_tot = A_pos + A_neg
    wR_pos = np.zeros((k, d))
    wR_neg = np.zeros((k, d))
    lm_pos = np.zeros((k, d))
    lm_neg = np.zeros((k, d))
    for s, other in enumerate(tasks):
        if s == t:
            continue
        V = other.U
        wR_pos += c * (W[(t, s)] @ (V <= 0).astype(np.float64))
        wR_neg += c * (W[(t, s)] @ (V >= 0).astype(np.float64))
        lm_pos += 2.0 * c * (W[(s, t)].T @ np.where(V < 0, -V, 0.0))
        lm_neg += 2.0 * c * (W[(s, t)].T @ np.where(V > 0, V, 0.0))
    lm_tot = lm_pos + lm_neg
    args = (A_pos, A_neg, A_tot, wR_pos, wR_neg, lm_pos, lm_neg, lm_tot)
    best = np.array(tk.U, copy=True)
    best_cost = _l1_cost(*args, best)
    w = tk.weights
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = tk.S / w[:, None]
    mean[w <= 0] = best[w <= 0]
    for cand in (mean, mu_L):
        cost = _l1_cost(*args, cand)
        better = cost < best_cost
        best = np.where(better, cand, best)
        best_cost = np.where(better, cost, best_cost)
    return best


def _h_step_empirical(div, tasks, W, D, c, t, mode, run):
    """Assignment step of task ``t`` with empirical marginals (a majorise-minimise step).

    Moving a point of task ``t`` from cluster ``z`` to ``z'`` while carrying its share of row
    ``z`` of ``W^ts`` (and of column ``z`` of ``W^st``) keeps every plan feasible and changes the
    transport cost by ``(1/n_t) P[z, z']``; minimising ``d(x, u_z') + P[h(x), z']`` over ``z'`` is
    therefore an exact minimisation of an upper bound of the objective that is tight at the
    current labels. The plans of the pairs involving ``t`` are then re-solved exactly.
    """
    tk = tasks[t]
    pi = tk.counts / tk.n
    inv = np.where(pi > 0, 1.0 / np.where(pi > 0, pi, 1.0), 0.0)
    P = np.zeros((tk.k, tk.k))
    for s in range(len(tasks)):
        if s == t:
            continue
        P += (W[(t, s)] * inv[:, None]) @ D[(t, s)].T
        P += (W[(s, t)] * inv[None, :]).T @ D[(s, t)]
    P *= c
    Dx = tk.source.pairwise(div, tk.U)
    old = tk.labels
    rows = np.arange(tk.n)
    scores = Dx + P[old]
    new = np.argmin(scores, axis=1).astype(np.int64)
    # keep the current label unless another one is strictly better
    new = np.where(scores[rows, new] < scores[rows, old], new, old)
    changed = not np.array_equal(new, old)
    if changed:
        tk.set_labels(new, div)
        others = [s for s in range(len(tasks)) if s != t]
        W.update(_w_step(tasks, D, mode, run, pairs=[(t, s) for s in others]
                         + [(s, t) for s in others]))
    return changed


@dataclasses.dataclass
class _Run:
    """The final state of one restart (an MBC run or the independent fits).

    Attributes
    ----------
    labels : list or None
        Per task: the labels (an array), a :class:`_LabelToken` for a chunked task, or None
        for all tasks when the independent fits left them with a chunked source.
    centers : list of ndarray
    relations : dict {(t, s): ndarray}
        The run's transport plans (empty for the independent fits).
    n_iter : int
    history : list of float
        The objective after the initial and every later assignment step.
    blocks : list of (str, float)
        ``(block, objective)`` pairs (``fit(..., trace=True)`` adds the centre and relation
        blocks).
    objective : float
        ``history[-1]``.
    """

    labels: list
    centers: list
    relations: dict
    n_iter: int
    history: list
    blocks: list
    objective: float


def _own_centres(div, tk):
    """The single-task centre step of task ``tk``: its clusters' smoothed means (the exact
    minimiser of its own objective for its current labels; on the sphere the normalised sums).
    A cluster without mass keeps its current centre (it adds nothing to the objective)."""
    w = tk.weights
    M = np.array(tk.U, dtype=np.float64, copy=True)
    full = w > 0
    M[full] = tk.S[full] / w[full, None]
    return unit_centres(M, tk.U) if div.spherical else M


def _guarded_step(div, tk, U_coupled, U_own):
    """S-MBC's choice for one task: the centres and labels of the coupled step or of the
    single-task step, whichever gives the task's own objective the lower value.

    Each candidate is followed by its assignment pass; the task's own objective
    (``data_term``: ``(1/n_t) [sum_i d(x_i, u_h(i)) + beta sum_z d(z, u_z)]``) is evaluated at
    the candidate's centres and new labels. The single-task candidate alone already does not
    increase it (a Lloyd step), so neither does the choice. Returns True when the coupled
    candidate was kept (ties go to it).
    """
    tk.set_centers(U_own, div)
    tk.set_labels(tk.assign(div), div)
    own_part, own_labels, own_value = tk.pending, tk.labels, tk.data_term(div)
    tk.set_centers(U_coupled, div)
    tk.set_labels(tk.assign(div), div)
    if tk.data_term(div) <= own_value:
        return True
    tk.set_centers(U_own, div)
    tk.pending = own_part
    tk.set_labels(own_labels, div)
    return False


def _own_objective(div, tasks):
    """The sum over tasks of each task's own objective at its current centres and labels."""
    return float(sum(tk.data_term(div) for tk in tasks))


def _mbc_run(div, tasks, U0, lam, mode, solver, max_iter, tol, verbose, run, trace=False,
             guard_sweeps=False):
    """One restart of the MBC alternation (``T >= 2``, ``lam > 0``).

    Order as in Lloyd's algorithm: assign, then repeat {centres, relations, assignments}; the
    objective is recorded after every assignment step (and, with ``trace``, after every block
    in ``blocks``). Returns the final state (:class:`_Run`).

    ``guard_sweeps`` (``guard="sweep"``, S-MBC): every sweep computes the coupled centres of
    all tasks, then each task keeps the coupled centres and their labels or the single-task
    centres (its own cluster means) and theirs, whichever gives its own objective the lower
    value (:func:`_guarded_step`), then the relations are solved for the kept centres. The
    recorded objective is then the sum of the tasks' own objectives (each non-increasing);
    ``blocks`` holds the label blocks only.
    """
    T = len(tasks)
    c = lam / (T - 1)
    for t, tk in enumerate(tasks):
        tk.set_centers(U0[t], div)
        tk.set_labels(tk.assign(div), div)
    D = _pair_costs(div, tasks)
    W = _w_step(tasks, D, mode, run)
    history = [_own_objective(div, tasks) if guard_sweeps
               else _objective_value(div, tasks, W, D, c)]
    blocks = [("init", history[0])]
    n_iter = 0
    converged = False
    with progress(verbose, total=max_iter, desc=f"MultitaskBregmanClustering restart {run}",
                  ) as bar:
        for it in range(max_iter):
            if guard_sweeps:
                own = [_own_centres(div, tk) for tk in tasks]
            for t, tk in enumerate(tasks):  # Gauss-Seidel over tasks: each an exact block step
                tk.set_centers(_u_step_task(div, tasks, W, c, t, solver), div)
            if guard_sweeps:
                coupled = [tk.U for tk in tasks]
                for tk, Uc, Uo in zip(tasks, coupled, own):
                    _guarded_step(div, tk, Uc, Uo)
                D = _pair_costs(div, tasks)
                W = _w_step(tasks, D, mode, run)
                history.append(_own_objective(div, tasks))
            else:
                D = _pair_costs(div, tasks)
                if trace:
                    blocks.append(("centres", _objective_value(div, tasks, W, D, c)))
                W = _w_step(tasks, D, mode, run)
                if trace:
                    blocks.append(("relations", _objective_value(div, tasks, W, D, c)))
                for t, tk in enumerate(tasks):
                    if mode == "uniform":
                        labels = tk.assign(div)
                        if not np.array_equal(labels, tk.labels):
                            tk.set_labels(labels, div)
                    else:
                        _h_step_empirical(div, tasks, W, D, c, t, mode, run)
                history.append(_objective_value(div, tasks, W, D, c))
            blocks.append(("labels", history[-1]))
            n_iter = it + 1
            bar.step(history[-1])
            if history[-2] - history[-1] <= tol * abs(history[-2]):
                converged = True
                break
    if not converged:
        warnings.warn(
            f"MultitaskBregmanClustering restart {run} reached max_iter={max_iter} before the "
            "objective stopped decreasing; increase max_iter or tol.",
            ConvergenceWarning, stacklevel=user_stacklevel(),
        )
    return _Run(labels=[tk.labels for tk in tasks], centers=[tk.U for tk in tasks], relations=W,
                n_iter=n_iter, history=history, blocks=blocks, objective=history[-1])


def _independent_run(div, tasks, U0, max_iter, tol, verbose, run):
    """``lam = 0`` or one task: the tasks decouple into independent Bregman k-means problems.

    Each task runs the very loop of :class:`~bregclust.BregmanKMeans` (:func:`lloyd`), so the
    same initial centres give identical labels and centres. The objective history is the sum
    over tasks of ``objective_t / n_t`` (a task that stopped early keeps its last value).
    """
    res = [lloyd(tk.source, div, np.array(U0[t], dtype=np.float64, copy=True), tk.beta, tk.z,
                 max_iter, tol, run, verbose=verbose, desc=f"MultitaskBregmanClustering task {t}")
           for t, tk in enumerate(tasks)]
    length = max(len(r.history) for r in res)
    history = [sum(r.history[min(i, len(r.history) - 1)] / tk.n for r, tk in zip(res, tasks))
               for i in range(length)]
    labels = None if any(r.part.labels is None for r in res) else [r.part.labels for r in res]
    return _Run(labels=labels, centers=[r.centres for r in res], relations={},
                n_iter=max(r.n_iter for r in res), history=history, blocks=[],
                objective=history[-1])


def _restore_state(div, tasks, res):
    """Set every task's statistics to those of a run's final labels (a pass from its final
    centres when the labels stayed with a chunked source)."""
    for t, (tk, U) in enumerate(zip(tasks, res.centers)):
        tk.set_centers(U, div)
        if res.labels is not None and not isinstance(res.labels[t], _LabelToken):
            tk.set_labels(res.labels[t], div)
        else:
            tk.set_labels(tk.assign(div), div)


def _kept(res):
    """A copy of a run's labels and centres (the tasks' state is overwritten by the next
    run)."""
    labels = res.labels
    if labels is not None and not any(isinstance(v, _LabelToken) for v in labels):
        labels = [np.array(v) for v in labels]
    return dataclasses.replace(res, centers=[np.array(v) for v in res.centers], labels=labels)


# =========================================================================== lam="auto"
#: Candidate couplings of ``lam="auto"``, ascending. ``lam`` weighs one divergence (the
#: transport cost between the tasks' centres) against another (the within-cluster
#: dispersion), so it has no unit and one grid serves every scale of the data.
AUTO_LAM_GRID = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
#: ``lam="auto"`` only considers couplings whose fitted ``d_M`` stays at or above this
#: fraction of the independent fits'.
AUTO_LAM_FRACTION = 0.5


def _task_divergences(tasks, D):
    """``d_M`` between the tasks' current mixtures, ``(T, T)`` with a zero diagonal: per ordered
    pair the EMD with the empirical cluster proportions and cost ``D[(t, s)]``, the pair costs
    ``d(u^t_z, u^s_l)`` of :func:`_pair_costs` (as :func:`~bregclust.metrics.partition_emd`,
    without computing the costs again)."""
    T = len(tasks)
    out = np.zeros((T, T))
    for (t, s), M in D.items():
        out[t, s] = _partition_distance(tasks[t].counts / tasks[t].n,
                                        tasks[s].counts / tasks[s].n, M,
                                        f" between tasks {t} and {s}")
    return out


def _mean_task_divergence(tasks, D):
    """Mean over ordered pairs ``t != s`` of :func:`_task_divergences`."""
    T = len(tasks)
    return float(_task_divergences(tasks, D).sum() / (T * (T - 1)))


def _partition_objectives(div, tasks, centers):
    """The single-task objective of each task's current partition (a list, one per task).

    Every task's statistics must be those of its labels (``set_labels``). Per task: the
    :class:`~bregclust.BregmanKMeans` objective ``(1/n_t) [sum_i d(x_i, m_h(i)) + beta
    sum_z d(z, m_z)]`` at the partition's own smoothed cluster means ``m`` (the exact
    right-sided Bregman centroids), so the value depends on the labels only. An empty cluster
    (``beta = 0``) keeps its fitted centre (it adds nothing). For a non-differentiable
    generator (no mean-type centroid) the fitted centres are used instead.
    """
    out = []
    for tk, U in zip(tasks, centers):
        if div.differentiable:
            w = tk.weights
            M = np.array(U, dtype=np.float64, copy=True)
            full = w > 0
            M[full] = tk.S[full] / w[full, None]
            tk.set_centers(M, div)
        else:
            tk.set_centers(U, div)
        out.append(float(tk.data_term(div)))
    return out


def select_lam(fit, d_m, objective, grid=AUTO_LAM_GRID, fraction=AUTO_LAM_FRACTION):
    """The label-free coupling of ``lam="auto"``: among the independent fits and the couplings
    that keep ``d_M`` at or above ``fraction`` of theirs, the one whose partitions are the
    best single-task clusterings.

    Parameters
    ----------
    fit : callable
        ``fit(lam) -> (result, d_M, objective)``: one MBC run from fixed initial centres with
        coupling ``lam``, the fitted mean ``d_M`` between the tasks' mixtures and the
        single-task objective of the fitted partitions (summed over tasks, each at its own
        cluster means; the independent fits' objective for ``lam = 0``).
    d_m : float
        ``d_M`` of the independent fits (IND, ``lam = 0``) from the same initial centres.
    objective : float
        The single-task objective of the independent fits' partitions.
    grid : sequence of float, default=AUTO_LAM_GRID
        Positive candidates in increasing order.
    fraction : float, default=AUTO_LAM_FRACTION
        In ``(0, 1]``.

    Returns
    -------
    lam : float
        The chosen value; ``0.0`` (IND) when no admissible candidate has a lower objective
        than IND (or ``d_m`` is not finite).
    result : object or None
        ``fit``'s result for the chosen value (None for ``0.0``).
    ratios : dict {float: float}
        ``d_M(lam) / d_m`` for every candidate that was fitted.
    objectives : dict {float: float}
        The single-task objective of every fitted candidate, ``0.0`` (IND) included.

    Notes
    -----
    The grid is scanned upwards and the scan stops at the first value whose ``d_M`` falls
    below ``fraction * d_m`` (that value is fitted but not admissible): the admissible
    values are a prefix of the grid, so a non-monotone ``d_M`` curve cannot make the rule
    jump to a strong coupling. Among IND and the admissible values the lowest objective
    wins (ties go to the smaller ``lam``). Hence ``objective(lam) <= objective(IND)`` and
    ``d_M(lam) >= fraction * d_m`` for the returned value. At most ``len(grid)`` fits.
    """
    ratios = {}
    objectives = {0.0: float(objective)}
    best_lam, best_res, best_obj = 0.0, None, float(objective)
    if not math.isfinite(d_m):
        return best_lam, best_res, ratios, objectives
    for v in grid:
        v = float(v)
        res, dm, obj = fit(v)
        # independent fits that already coincide (d_M = 0) have nothing to lose: ratio 1
        ratios[v] = dm / d_m if d_m > 0 else 1.0
        if not dm >= fraction * d_m:
            break
        objectives[v] = float(obj)
        if obj < best_obj:
            best_lam, best_res, best_obj = v, res, float(obj)
    return best_lam, best_res, ratios, objectives


# =========================================================================== the estimator
class MultitaskBregmanClustering(MultiTaskMixin, ClusterMixin, BaseEstimator):
    """Multitask Bregman Clustering (MBC; Zhang & Zhang, AAAI 2010).

    Clusters ``T`` related data sets together: every task ``t`` gets its own ``K_t`` centres
    and labels, and an optimal transport plan ``W^ts`` between the clusters of every ordered
    pair of tasks pulls matched centres towards each other (:doc:`/guide/mbc`).
    ``fit(Xs)`` takes a list of tasks (dense arrays or sparse matrices sharing the same
    features); per-task results are lists (``labels_[t]``, ``cluster_centers_[t]``).

    Parameters
    ----------
    n_clusters : int or list of int, default=8
        Clusters per task; tasks may have different numbers.
    divergence : str or Divergence, default="sqeuclidean"
        Any registered divergence, custom ones included (see
        :func:`bregclust.register_divergence`).
    divergence_params : dict, optional
        Parameters of the divergence, e.g. ``{"A": A}`` for ``"mahalanobis"``.
    lam : float or "auto", default="auto"
        The paper's ``lambda >= 0``, weight of the task regulariser. ``lam=0`` (or a single
        task) is exactly :class:`~bregclust.BregmanKMeans` on each task; the paper uses 0.5.
        ``"auto"``: chosen from the data without labels (see Notes), stored in ``lam_``.
    marginals : {"uniform", "empirical"}, default="uniform"
        Row/column sums of the relation matrices. ``"uniform"``: ``1/K_t``, the paper's
        relaxation (its Eq. 10). ``"empirical"``: the current cluster proportions ``n_z/n_t``
        (the paper's unrelaxed Eq. 6; an extension). The assignment step then minimises an
        upper bound of the objective that is tight at the current labels (moving a point
        carries its share of the plans), so the objective still never increases; clusters
        that become empty keep their centre.
    init : {"k-means++", "random"} or list, default="k-means++"
        The vocabulary shared by every multi-task estimator. A string applies to every task.
        A list gives one entry per task: a string, an ``(n_t,)`` array of initial labels
        (centres are then the smoothed cluster means, "not considering the task
        regularisation" as in the paper's Algorithm 1), or a
        ``(K_t, n_features)`` array of initial centres. k-means++ seeds the tasks in order
        from one random stream exactly as :func:`~bregclust.bregman_kmeans_plusplus` does for
        :class:`~bregclust.BregmanKMeans`, so a one-task model and ``BregmanKMeans`` with the
        same ``random_state`` start from the same centres.
    n_init : int or "auto", default="auto"
        Restarts; the lowest final objective wins. ``"auto"``: 10 for ``init="random"``, else 1.
    max_iter : int, default=300
    tol : float, default=1e-4
        Stop when the objective decreases by less than ``tol`` times its value over a sweep.
    centroid_solver : {"exact", "geodesic"}, default="exact"
        How the centre step solves ``min_u A d(mu_L, u) + B d(u, mu_R)`` (paper Eq. 14) for an
        asymmetric divergence: ``"exact"`` (closed forms for kl and Itakura-Saito, a
        vectorised bisection for other separable generators) or ``"geodesic"`` (Nielsen &
        Nock's geodesic walk, the paper's approximation). Symmetric divergences always use
        the closed form ``(A mu_L + B mu_R) / (A + B)``.
    smoothing : float or "auto", default="auto"
        Weight of a smoothing pseudo-point per cluster, as in :class:`~bregclust.BregmanKMeans`
        (per task, ``z^t`` = the task's mean pushed inside the domain); it is part of the
        objective. ``"auto"``: per task, :func:`bregclust.kmeans.auto_smoothing` (0 on R;
        for kl / Itakura-Saito three average cluster masses on sparse data such as term
        counts, one pseudo-sample on dense data).
    guard : {"none", "task", "sweep"}, default="none"
        Against negative transfer (a task whose own clustering the coupling makes worse),
        in the manner of S-MBC (Zhang & Zhang, AAAI 2013); see Notes. ``"task"``: after the
        fit, every task whose own k-means objective is lower for the independent fit from the
        same starts (IND) takes IND's partition (one extra IND fit per restart, none with
        ``lam="auto"``, which has it). ``"sweep"``: S-MBC's rule inside the loop, every
        sweep each task keeps the coupled centre step or the single-task one (its clusters'
        means), each followed by its assignments, whichever gives its own objective the
        lower value; then the same check as ``"task"``. Needs a differentiable divergence.
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0

    Attributes
    ----------
    labels_ : list of ndarray of shape (n_t,)
    cluster_centers_ : list of ndarray of shape (K_t, n_features)
    lam_ : float
        The coupling used: ``lam`` itself, or the value ``lam="auto"`` chose (0.0 for one
        task).
    lam_ratios_ : dict {float: float}
        With ``lam="auto"``: ``d_M(lam) / d_M(IND)`` for every candidate the rule fitted
        (empty otherwise); 1 when the independent fits' ``d_M`` is already 0 (identical
        tasks), where no coupling can lower it.
    lam_objectives_ : dict {float: float}
        With ``lam="auto"``: the single-task objective of the partitions of IND (key 0.0)
        and of every admissible candidate (see Notes; empty otherwise).
    relations_ : dict {(t, s): ndarray of shape (K_t, K_s)}
        Relation matrices (transport plans) for every ordered pair of tasks, optimal for the
        final centres. For ``lam=0`` they are computed once at the end (they do not act).
    task_divergences_ : ndarray of shape (T, T)
        ``d_M`` between tasks: EMD between the fitted mixtures with the *empirical* cluster
        proportions and cost ``d(u^t_z, u^s_l)`` (the paper's evaluation, Eq. 8).
    objective_ : float
        The objective (below) of the returned centres, labels and relations.
    objective_history_ : ndarray of shape (n_sweeps + 1,)
        The objective after the initial and every later assignment step of the best restart
        (``n_iter_ + 1`` values); never increasing. With ``guard="sweep"`` the objective is
        the sum over tasks of each task's own objective ``(1/n_t) [sum_i d(x_i, u_h(i)) +
        beta sum_z d(z, u_z)]`` at its centres (the relation term is left out: S-MBC's
        choice can raise it).
    guarded_ : ndarray of bool of shape (n_tasks,)
        With a guard: True for the tasks that took the independent fit's partition (always
        False with ``guard="none"`` or ``lam_ = 0``).
    block_history_ : list of (str, float)
        ``(block, objective)`` after the initial assignment and every assignment step; with
        ``fit(..., trace=True)`` also after every centre and relation block.
    inertia_ : list of float
        ``sum_i d(x^t_i, u^t_{label(i)})`` per task.
    n_iter_ : int
    n_clusters_ : list of int
    n_tasks_ : int
    divergence_ : Divergence
    smoothing_ : list of float
        The pseudo-count of each task.
    n_features_in_ : int

    Notes
    -----
    Objective (paper Eq. 9 with the uniform relaxation)::

        L = sum_t (1/n_t) sum_i d(x^t_i, u^t_{h(i)})
            + lam/(T-1) sum_{t != s} <W^ts, D(U^t, U^s)>

    Each sweep updates the centres task by task (exact), the relation matrices (``ot.emd``
    for every ordered pair) and the assignments (nearest centre), so ``L`` never increases.

    ``lam="auto"`` (:func:`select_lam`). With uniform marginals the centre step moves a
    centre towards its matched centres of the other tasks by a share of about
    ``2 lam / (K pi_z + 2 lam)``, so a strong coupling pulls the tasks' mixtures together
    until they nearly coincide (``d_M`` of the fit far below that of the true partitions),
    while a weak one lets a task's clusters escape a poor local optimum by borrowing the
    related task's structure. The rule uses the coupling as a search for better single-task
    partitions: from the first restart's initial centres it fits the tasks independently
    (IND, ``lam=0``) and measures ``d_M(IND)`` (the mean over ordered task pairs of the EMD
    between the fitted mixtures, as ``task_divergences_``); it then fits MBC from the same
    centres at ``AUTO_LAM_GRID = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)`` in increasing
    order and stops at the first value with ``d_M(lam) < AUTO_LAM_FRACTION * d_M(IND)``
    (``AUTO_LAM_FRACTION = 0.5``). Among IND and the values before the stop it returns the
    one whose partitions have the lowest single-task objective, the sum over tasks of
    ``(1/n_t) [sum_i d(x_i, m_h(i)) + beta sum_z d(z, m_z)]`` at the partition's own
    smoothed cluster means ``m`` (:class:`~bregclust.BregmanKMeans`' objective of those
    labels; ties go to the smaller ``lam``). The chosen fit is that restart's result; later
    restarts use ``lam_``.

    * Guarantee: from the same starts, the first restart's partitions have a single-task
      objective at most IND's and ``d_M(lam_) >= 0.5 d_M(IND)``; when no candidate lowers
      the objective, ``lam_ = 0`` and the result is IND's exactly.
    * Scale-free: both terms of ``L``, ``d_M`` and the single-task objective are
      divergences. For a generator homogeneous of degree ``p`` (``d(cx, cy) = c^p d(x, y)``:
      squared Euclidean ``p = 2``, kl ``p = 1``, Itakura-Saito ``p = 0``) scaling the data by
      ``c`` scales them all by ``c^p`` for every ``lam``, so the fits, the ratios and the
      choice do not change (with a fixed ``smoothing`` for kl, whose automatic value depends
      on the counts' scale).
    * Cost: one IND fit and at most ``len(AUTO_LAM_GRID) = 7`` MBC fits, on the first
      restart only.
    * Deterministic given ``random_state`` (the starts are the estimator's).
    * For a non-differentiable generator (``l1_subgradient``) the single-task objective is
      taken at the fitted centres (no mean-type centroid).

    The guard (``guard="task"`` or ``"sweep"``). A task's *own objective* is its single-task
    k-means objective at its own smoothed cluster means (as for ``lam="auto"``). With
    ``"task"``, after the fit each task keeps the coupled partition only if its own objective
    is at most that of IND's partition from the same starts, else it takes IND's labels and
    centres (``guarded_``); the relations are then solved again for the final centres. So,
    from the same starts, no task ends with a higher own objective than it has alone. With
    ``"sweep"`` (S-MBC) every sweep first computes the coupled centres of all tasks; then, per
    task, candidate A is those centres and the labels they assign, candidate B the task's
    cluster means and the labels they assign (one Lloyd step), and the task keeps the
    candidate with the lower own objective (A on a tie); the relations are solved for the
    kept centres. B alone never raises the own objective, so each task's own objective never
    increases over the sweeps; the check of ``"task"`` follows. With ``lam="auto"`` and a
    guard, a candidate ``lam`` is scored by the guarded objective (per task the lower of its
    own objective and IND's), and ``lam_objectives_`` holds those values. A restart's
    objective is the one of its returned state.

    References
    ----------
    J. Zhang, C. Zhang. Multitask Bregman Clustering. AAAI 2010.
    F. Nielsen, R. Nock. Sided and symmetrized Bregman centroids. IEEE Trans. IT 55(6), 2009.

    Examples
    --------
    >>> import numpy as np
    >>> from bregclust import MultitaskBregmanClustering
    >>> rng = np.random.default_rng(0)
    >>> X1 = np.vstack([rng.normal(0, .3, (20, 2)), rng.normal(4, .3, (20, 2))])
    >>> X2 = np.vstack([rng.normal(.5, .3, (15, 2)), rng.normal(4.5, .3, (15, 2))])
    >>> mbc = MultitaskBregmanClustering(2, lam=0.5, random_state=0).fit([X1, X2])
    >>> [np.bincount(l).tolist() for l in mbc.labels_]
    [[20, 20], [15, 15]]
    """

    def __init__(self, n_clusters=8, *, divergence="sqeuclidean", divergence_params=None,
                 lam="auto", marginals="uniform", init="k-means++", n_init="auto", max_iter=300,
                 tol=1e-4, centroid_solver="exact", smoothing="auto", guard="none",
                 random_state=None, verbose=0):
        self.n_clusters = n_clusters
        self.divergence = divergence
        self.divergence_params = divergence_params
        self.lam = lam
        self.marginals = marginals
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.centroid_solver = centroid_solver
        self.smoothing = smoothing
        self.guard = guard
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    _parameter_constraints = {
        "lam": [Options("auto"), Interval(numbers.Real, 0.0)],
        "marginals": [Options(*_MARGINALS)],
        "n_init": [Options("auto"), Interval(numbers.Integral, 1)],
        "max_iter": [Interval(numbers.Integral, 1)],
        "tol": [Interval(numbers.Real, 0.0)],
        "centroid_solver": [Options(*_SOLVERS)],
        "smoothing": [Options("auto"), Interval(numbers.Real, 0.0)],
        "guard": [Options(*_GUARDS)],
        "verbose": [Interval(numbers.Integral, 0)],
    }

    def _initial_centers(self, div, tasks, parsed, rng):
        U0 = []
        for t, (tk, (kind, val)) in enumerate(zip(tasks, parsed)):
            if kind == "centers":
                C0 = val
            elif kind == "labels":
                tk.set_labels(val, div)
                w = tk.weights
                if (w <= 0).any():
                    z = int(np.argmax(w <= 0))
                    raise ValueError(
                        f"init labels for task {t} leave cluster {z} empty; give every cluster "
                        "at least one point or use smoothing > 0."
                    )
                C0 = tk.S / w[:, None]
            else:  # "k-means++" (k-means|| on a chunked task) or "random"
                C0 = seed_centres(tk.source, div, tk.k, rng, kind, tk.beta, tk.z, fallback=True)
            div.check_domain(C0, name=f"initial centres of task {t}", side="right",
                             advice="Use smoothing > 0 (e.g. smoothing='auto') so centres stay "
                             "inside the domain.")
            U0.append(np.array(C0, dtype=np.float64))
        return U0

    def _auto_lam(self, div, tasks, U0, run, trace):
        """``lam="auto"`` from the starts ``U0``: :func:`select_lam` on IND and MBC fits.

        Returns ``(lam, result, ratios, objectives, ind)``; ``result`` is the run of the
        chosen value (the IND run for ``lam = 0``), reused as this restart, and ``ind`` the
        IND run with its per-task single-task objectives (for the guard). Warnings of the
        candidate runs are held back and only those of the chosen run are emitted. With a
        guard, a candidate's objective is the guarded one: per task the lower of its own and
        IND's.
        """
        runs = {}
        ind_objs = []

        def record(lam, call):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                res = _kept(call())
            _restore_state(div, tasks, res)
            dm = _mean_task_divergence(tasks, _pair_costs(div, tasks))
            objs = _partition_objectives(div, tasks, res.centers)
            if lam == 0.0:
                ind_objs.extend(objs)
            elif self.guard != "none":
                objs = [min(o, i) for o, i in zip(objs, ind_objs)]
            runs[lam] = (res, caught)
            return res, dm, sum(objs)

        _, d_ind, obj_ind = record(0.0, lambda: _independent_run(
            div, tasks, U0, self.max_iter, self.tol, self.verbose, run))
        lam, _, ratios, objectives = select_lam(lambda v: record(v, lambda: _mbc_run(
            div, tasks, U0, v, self.marginals, self.centroid_solver, self.max_iter, self.tol,
            self.verbose, run, trace=trace, guard_sweeps=self.guard == "sweep")), d_ind,
            obj_ind, AUTO_LAM_GRID, AUTO_LAM_FRACTION)
        res, caught = runs[lam]
        for w in caught:
            warnings.warn(w.message, w.category, stacklevel=user_stacklevel())
        if self.verbose:
            print(f"MultitaskBregmanClustering lam='auto': d_M ratios {ratios}, single-task "
                  f"objectives {objectives}, lam_={lam:g}")
        return lam, res, ratios, objectives, (runs[0.0][0], ind_objs)

    def _guard_tasks(self, div, tasks, U0, res, ind, lam, run):
        """The task guard: every task whose own objective is lower for the independent fit
        from the same starts (IND) than for the coupled run ``res`` takes IND's partition.

        ``ind`` is ``(IND run, its per-task objectives)`` or None (then IND is fitted here).
        Returns ``(result, single)``: the run with the kept partitions (relations solved for
        the final centres and the objective evaluated at them when a task changed) and one
        bool per task, True where it took IND's partition.
        """
        caught = []
        if ind is None:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                ind_run = _kept(_independent_run(div, tasks, U0, self.max_iter, self.tol,
                                                 self.verbose, run))
            _restore_state(div, tasks, ind_run)
            ind = (ind_run, _partition_objectives(div, tasks, ind_run.centers))
        ind_run, ind_objs = ind
        _restore_state(div, tasks, res)
        objs = _partition_objectives(div, tasks, res.centers)
        single = [i < o for o, i in zip(objs, ind_objs)]
        if not any(single):
            _restore_state(div, tasks, res)
            return res, single
        for w in caught:  # IND's warnings only when a task takes its partition
            warnings.warn(w.message, w.category, stacklevel=user_stacklevel())

        def labels_of(r, t):
            return (r.labels[t] if r.labels is not None and r.labels[t] is not None
                    else _LabelToken(""))  # a chunked task: labels from the centres again

        pick = [ind_run if one else res for one in single]
        merged = _Run(labels=[labels_of(r, t) for t, r in enumerate(pick)],
                      centers=[r.centers[t] for t, r in enumerate(pick)], relations={},
                      n_iter=res.n_iter, history=res.history, blocks=res.blocks,
                      objective=res.objective)
        _restore_state(div, tasks, merged)
        merged.labels = [tk.labels for tk in tasks]
        D = _pair_costs(div, tasks)
        merged.relations = _w_step(tasks, D, self.marginals, run)
        merged.objective = (_own_objective(div, tasks) if self.guard == "sweep" else
                            _objective_value(div, tasks, merged.relations, D,
                                             lam / (len(tasks) - 1)))
        return merged, single

    def _sources(self, Xs, div):
        """One validated data source per task (any mix of in-memory and dask tasks)."""
        Xs = check_task_list(Xs)
        sources = [as_source(X, None, div, name=f"task {t}") for t, X in enumerate(Xs)]
        d0 = sources[0].d
        for t, src in enumerate(sources):
            if src.d != d0:
                raise ValueError(
                    f"all tasks must share one feature space: task 0 has {d0} features but task "
                    f"{t} has {src.d}. Vectorise the tasks with a common vocabulary/feature map."
                )
        return sources

    # ------------------------------------------------------------------ fit / predict
    @fit_callbacks
    def fit(self, Xs, y=None, *, trace=False):
        """Cluster every task of ``Xs`` jointly.

        Parameters
        ----------
        Xs : list of {array-like, sparse matrix, dask.array.Array}, each of shape (n_t, n_features)
            The tasks; all share one feature space and lie in the divergence's domain.
            Tasks may be row-chunked ``dask.array.Array`` (``pip install bregclust[dask]``):
            each assignment pass then runs on the dask cluster, the transport plans and the
            centre step on the client; their ``labels_`` are lazy dask arrays and
            ``"k-means++"`` seeds a dask task by k-means||.
        y : ignored
        trace : bool, default=False
            Also record the objective after the centre and relation blocks of every sweep in
            ``block_history_`` (one extra objective evaluation per block), to check that
            every block step is non-increasing.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Empty task list, tasks with different feature counts, ``K_t > n_t``, bad
            parameters; :class:`~bregclust.DomainError` for data outside the domain.
        """
        self._validate_params()
        div = get_divergence(self.divergence, **(self.divergence_params or {}))
        sources = self._sources(Xs, div)
        T = len(sources)
        K = check_n_clusters_per_task(self.n_clusters, [src.n for src in sources])
        auto = isinstance(self.lam, str)
        lam_positive = auto or self.lam > 0
        if (T > 1 and lam_positive and not div.differentiable
                and self.centroid_solver != "exact"):
            raise ValueError(
                f"centroid_solver='geodesic' needs a differentiable divergence; {div.name} is "
                "not differentiable."
            )
        if self.guard == "sweep" and not div.differentiable:
            raise ValueError(f"guard='sweep' needs a differentiable divergence (its single-task "
                             f"step is the clusters' means); {div.name} is not differentiable. "
                             "Use guard='task'.")
        chunked = any(src.chunked for src in sources)
        if chunked and self.marginals != "uniform":
            raise ValueError("marginals='empirical' needs in-memory tasks (its assignment step "
                             "reads every label); use marginals='uniform' with dask tasks.")
        init = self.init
        if isinstance(init, str) and init == "k-means||":
            init = "k-means++"  # the k-means++ of a chunked task is k-means||
        parsed = parse_init(init, sources, K)
        for t, (kind, _) in enumerate(parsed):
            if kind == "labels" and sources[t].chunked:
                raise ValueError(f"init labels for task {t} need in-memory tasks; give dask "
                                 "tasks initial centres, 'k-means++' (k-means|| on dask) or "
                                 "'random'.")
        n_init = resolve_n_init(self.n_init, parsed)
        rng = check_random_state(self.random_state)
        # One conditioning for all tasks (the relation costs compare centres across tasks).
        stats = [src.stats(div) for src in sources]
        check_task_magnitudes([st.maxabs for st in stats], div.homogeneity, type(self).__name__)
        given = [val for kind, val in parsed if kind == "centers"]
        cond = C.decide(div, DataStats.merge(*stats),
                        centres=np.vstack(given) if given else None)
        smoothing = [resolve_smoothing(self.smoothing, div, st.counts(), k)
                     for st, k in zip(stats, K)]
        if (div.right_domain == "positive" and min(smoothing) == 0.0 and lam_positive
                and T > 1):
            raise ValueError(
                f"{div.name} with lam > 0 needs smoothing > 0: the relation step compares "
                "centres with each other, and a centre with a zero coordinate has an infinite "
                "divergence. Use smoothing='auto' or a positive value."
            )
        parsed = [(kind, cond.apply_centres(val)) if kind == "centers" else (kind, val)
                  for kind, val in parsed]
        tasks = []
        for src, st, k, beta in zip(sources, stats, K, smoothing):
            beta = cond.apply_mass(beta)
            z = push_inside(cond.mean(st), div) if beta > 0 else None
            tasks.append(_Task(src.conditioned(cond), k, beta, z, div))
        lam = (0.0 if T == 1 else None) if auto else float(self.lam)
        ratios, objectives = {}, {}
        best, best_single = None, [False] * T
        for run in range(int(n_init)):
            U0 = self._initial_centers(div, tasks, parsed, rng)
            res = ind = None
            if lam is None:  # lam="auto": chosen on the first restart's starts
                lam, res, ratios, objectives, ind = self._auto_lam(div, tasks, U0, run, trace)
            coupled = T > 1 and lam > 0
            if res is not None:
                pass
            elif coupled:
                res = _mbc_run(div, tasks, U0, lam, self.marginals, self.centroid_solver,
                               self.max_iter, self.tol, self.verbose, run, trace=trace,
                               guard_sweeps=self.guard == "sweep")
            else:
                res = _independent_run(div, tasks, U0, self.max_iter, self.tol, self.verbose,
                                       run)
            single = [False] * T
            if coupled and self.guard != "none":
                res, single = self._guard_tasks(div, tasks, U0, _kept(res), ind, lam, run)
            if self.verbose:
                print(f"MultitaskBregmanClustering restart {run}: objective "
                      f"{res.objective:.6g}, {res.n_iter} iterations")
            if best is None or res.objective < best.objective:
                best, best_single = res, single
        _restore_state(div, tasks, best)
        D = _pair_costs(div, tasks)
        relations = (best.relations if coupled else
                     _w_step(tasks, D, self.marginals, "final"))
        task_div = _task_divergences(tasks, D)
        labels = [tk.source.labels(div, tk.centres, tk.pending) for tk in tasks]
        inertia = [tk.source.final_objective(div, tk.pending, tk.U) for tk in tasks]
        # back to the data's units
        self.divergence_ = div
        self.lam_ = float(lam)
        self.lam_ratios_ = dict(ratios)
        self.lam_objectives_ = {v: cond.undo_divergences(o) for v, o in objectives.items()}
        self.smoothing_ = [float(b) for b in smoothing]
        self.n_clusters_ = list(K)
        self.n_tasks_ = T
        self.n_features_in_ = int(sources[0].d)
        self.labels_ = [lab if src.chunked else np.asarray(lab, dtype=np.int64)
                        for lab, src in zip(labels, sources)]
        self.objective_history_ = as_history(cond.undo_divergences(np.asarray(best.history)))
        self.cluster_centers_ = [cond.undo_centres(tk.U).astype(src.dtype, copy=False)
                                 for tk, src in zip(tasks, sources)]
        self.n_iter_ = int(best.n_iter)
        self.objective_ = float(cond.undo_divergences(best.objective))
        if not np.isfinite(self.objective_) and np.isfinite(best.objective):
            warnings.warn(
                f"{type(self).__name__}: objective_ overflowed to inf in the data's units (it is "
                f"{best.objective:.6g} under the fit's scale); labels_ and cluster_centers_ "
                "are exact. Rescale the tasks to read the objective.", RuntimeWarning,
                stacklevel=user_stacklevel())
        self.block_history_ = [(name, float(cond.undo_divergences(v)))
                               for name, v in best.blocks]
        self.relations_ = relations
        self.guarded_ = np.array(best_single, dtype=bool)
        self.task_divergences_ = cond.undo_divergences(task_div)
        self.inertia_ = [float(cond.undo_divergences(v)) for v in inertia]
        if not any(src.chunked for src in sources):  # the tasks as validated once, above
            self._remember_training_tasks([src.X for src in sources])
        return self

    def _score_criterion(self, Xs, labels):
        """``score``'s criterion: the sum over tasks of each task's single-task objective per
        point, ``(1 / n_t) sum_i d(x_i, m_t(label_i))`` with ``m_t(z)`` the mean of task
        ``t``'s rows in cluster ``z`` (the right-sided Bregman centroid of the partition, so the
        value depends on the labels only; the divergence is the model's). It is the criterion
        of ``lam="auto"`` without the smoothing pseudo-point; a cluster's own mean lies in the
        domain wherever its rows do, so no smoothing is needed."""
        div = self.divergence_
        total = 0.0
        for X, lab in zip(Xs, labels):
            lab = np.asarray(lab, dtype=np.int64)
            if X.shape[0] == 0:
                continue
            k = int(lab.max()) + 1
            M, _ = div.right_centroid(X, lab, k)
            used = np.unique(lab)
            D = div.pairwise(X, M[used])
            col = np.searchsorted(used, lab)
            total += float(D[np.arange(lab.shape[0]), col].sum()) / X.shape[0]
        return total

    def _task_source(self, X, task):
        check_is_fitted(self)
        t = self._check_task(task)
        return as_source(X, None, self.divergence_, n_features=self.n_features_in_), t

    def predict(self, X, task=None):
        """Nearest centre of task ``task`` (smallest ``d(x, u)``) for each row of ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask.array.Array} of shape (n_samples, n_features)
        task : int, optional
            Which task's centres to use; required when the model has more than one task.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            A lazy dask array when ``X`` is one.
        """
        src, t = self._task_source(X, task)
        return src.predict(self.divergence_, self.cluster_centers_[t])

    def transform(self, X, task=None):
        """Divergences ``d(x_i, u^t_z)`` to every centre of task ``task``.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask.array.Array} of shape (n_samples, n_features)
        task : int, optional
            Which task's centres; may be omitted when the model has one task.

        Returns
        -------
        D : ndarray of shape (n_samples, K_task)
            A lazy dask array when ``X`` is one.
        """
        src, t = self._task_source(X, task)
        return src.transform(self.divergence_, self.cluster_centers_[t])


def multitask_bregman_clustering(Xs, n_clusters=8, **params):
    """Functional twin of :class:`MultitaskBregmanClustering`.

    Parameters
    ----------
    Xs : list of {array-like, sparse matrix}
        One data matrix per task, sharing the feature space.
    n_clusters : int or list of int, default=8
        Clusters per task.
    **params
        Any other parameter of :class:`MultitaskBregmanClustering`.

    Returns
    -------
    labels : list of ndarray
    centers : list of ndarray
    relations : dict {(t, s): ndarray}
    """
    est = MultitaskBregmanClustering(n_clusters, **params).fit(Xs)
    return est.labels_, est.cluster_centers_, est.relations_
