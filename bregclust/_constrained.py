"""Size-constrained Bregman k-means: cluster sizes held between ``size_min`` and ``size_max``.

The assignment step of Lloyd's alternation becomes a transport problem over the divergence
matrix ``D[i, j] = d(x_i, u_j)``: every point sends its weight ``w_i`` to the clusters, and
cluster ``j`` receives between ``lo_j`` and ``hi_j``. Lower bounds are written as a second
column per cluster (Bradley, Bennett & Demiriz, 2000; the min-cost-flow graph of
``k-means-constrained``, recast as a transport tableau):

* a *mandatory* column ``j`` of demand ``lo_j``,
* an *optional* column ``j`` of demand ``hi_j - lo_j``,
* a *slack* row of supply ``sum_j hi_j - sum_i w_i`` (the capacity left unused), at cost 0 to
  the optional columns and at a cost ``big`` to the mandatory ones.

A point pays ``D[i, j]`` in either column of cluster ``j``. ``big`` exceeds the range of every
row of ``D``, which is enough: a plan that sends slack into a mandatory column ``j`` while a
point ``i`` fills an optional column ``l`` is improved by the exchange
``i -> mandatory j, slack -> optional l``, of cost ``D[i, j] - D[i, l] - big < 0``; so no
optimal plan uses a forbidden cell, and every optimal plan is a feasible assignment. Columns
of zero demand are left out (balanced bounds give a plain ``n x k`` problem without slack,
``size_min = 0`` one without mandatory columns).

With unit weights every marginal is an integer, so POT's network simplex (an exact method
that returns a vertex of the transport polytope) gives an integral, hard assignment: the
optimal constrained labels, and Lloyd's monotonicity holds.

With other weights a vertex may split a point between clusters (at most ``columns - 1`` of
them: the support of a vertex is a forest). Points are never split: the split points are
re-assigned by a small mixed-integer program (scipy's HiGHS ``milp``) with every other point
fixed, which keeps the bounds whenever some placement of those points does; otherwise the
greedy repair below, and a warning when the bounds still cannot be met (the weighted problem
is NP-hard in general: it contains bin packing).

The approximate modes skip the network simplex: ``"sinkhorn"`` rounds an entropic plan (POT's
Sinkhorn iterations), ``"greedy"`` starts from the nearest centres; both then repair the sizes
greedily (each move is the one of least divergence increase that takes a cluster toward its
bounds without breaking another's), which always succeeds with unit weights. In every mode
the new labels are kept only when they do not cost more than the previous ones under the new
centres, so the objective never increases.
"""

import warnings
from dataclasses import dataclass, replace

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ._centroid import lloyd
from ._transport import assignment_plan, entropic_plan
from ._validation import user_stacklevel

__all__ = ["SizeBounds", "SIZE_METHODS", "check_size_bounds", "constrained_labels",
           "constrained_lloyd", "ConstrainedPasses"]

SIZE_METHODS = ("exact", "sinkhorn", "greedy")

#: Sinkhorn's regularisation, as a fraction of the mean gap between a point's divergences and
#: its smallest one (the scale of the costs that move points between clusters).
SINKHORN_REG = 0.05
SINKHORN_ITER = 200


@dataclass(frozen=True)
class SizeBounds:
    """Per-cluster bounds on the (weighted) cluster sizes.

    Attributes
    ----------
    lo, hi : ndarray of shape (k,)
        Lower and upper bounds (``hi`` capped at the total weight less the other lower bounds,
        which leaves the feasible assignments unchanged).
    unit : bool
        Whether every sample weight is one (sizes are counts; the exact mode is integral).
    method : {"exact", "sinkhorn", "greedy"}
    total : float
        The total sample weight.
    """

    lo: np.ndarray
    hi: np.ndarray
    unit: bool
    method: str
    total: float

    def scaled(self, weight_scale):
        """The bounds in the units of weights scaled by ``2**-weight_scale`` (exact)."""
        if not weight_scale:
            return self
        return replace(self, lo=np.ldexp(self.lo, -weight_scale),
                       hi=np.ldexp(self.hi, -weight_scale),
                       total=float(np.ldexp(self.total, -weight_scale)))


def _per_cluster(value, name, k, unit):
    """``value`` (None, a number or one per cluster) as a float array of length ``k``."""
    if isinstance(value, (str, bytes)) or isinstance(value, bool) or \
            (np.ndim(value) == 0 and isinstance(value, np.bool_)):
        raise TypeError(f"{name} must be None, a number or one number per cluster, "
                        f"got {value!r}.")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be None, a number or one number per cluster, "
                        f"got {type(value).__name__}.") from None
    if arr.ndim == 0:
        arr = np.full(k, float(arr))
    elif arr.shape != (k,):
        raise ValueError(f"{name} must be a number or have one value per cluster "
                         f"(n_clusters={k}), got shape {arr.shape}.")
    if not np.isfinite(arr).all() or (arr < 0).any():
        bad = arr[~(np.isfinite(arr) & (arr >= 0))][0]
        raise ValueError(f"{name} must be finite and non-negative, got {bad}.")
    if unit and (arr != np.round(arr)).any():
        bad = arr[arr != np.round(arr)][0]
        raise ValueError(f"{name} must be whole numbers of samples without sample_weight "
                         f"(cluster sizes are counts), got {bad}; round it, or pass "
                         "sample_weight to bound weighted sizes.")
    return arr


def _fmt(v):
    return str(int(v)) if float(v).is_integer() else f"{float(v):.6g}"


def check_size_bounds(size_min, size_max, k, w, method="exact"):
    """Validate ``size_min`` / ``size_max`` against ``k`` clusters and the weights ``w``.

    Parameters
    ----------
    size_min, size_max : None, number or array-like of shape (k,)
    k : int
    w : ndarray of shape (n,)
        The validated sample weights (ones without ``sample_weight``).
    method : {"exact", "sinkhorn", "greedy"}

    Returns
    -------
    SizeBounds or None
        None when both bounds are None (no constraint).

    Raises
    ------
    ValueError
        Bounds that no assignment meets, with the arithmetic.
    """
    if size_min is None and size_max is None:
        return None
    if not isinstance(method, str) or method not in SIZE_METHODS:
        raise ValueError(f"size_method must be one of {', '.join(map(repr, SIZE_METHODS))}, "
                         f"got {method!r}.")
    unit = bool((w == 1).all())
    total = float(w.sum())
    n = w.shape[0]
    what = f"{n} samples" if unit else f"a total sample weight of {total:.6g}"
    lo = (np.zeros(k) if size_min is None else _per_cluster(size_min, "size_min", k, unit))
    hi = (np.full(k, total) if size_max is None else _per_cluster(size_max, "size_max", k, unit))
    bad = np.flatnonzero(lo > hi)
    if bad.size:
        j = bad[0]
        raise ValueError(f"size_min exceeds size_max for cluster {j} ({_fmt(lo[j])} > "
                         f"{_fmt(hi[j])}); lower size_min or raise size_max.")
    if lo.sum() > total * (1 + 1e-12):
        arith = (f"{k} * {_fmt(lo[0])} = {_fmt(lo.sum())}" if np.all(lo == lo[0]) and
                 np.ndim(size_min) == 0 else f"sum(size_min) = {_fmt(lo.sum())}")
        raise ValueError(f"size_min asks for {arith} over n_clusters={k} clusters, more than "
                         f"{what}; lower size_min or n_clusters.")
    if hi.sum() < total * (1 - 1e-12):
        arith = (f"{k} * {_fmt(hi[0])} = {_fmt(hi.sum())}" if np.all(hi == hi[0]) and
                 np.ndim(size_max) == 0 else f"sum(size_max) = {_fmt(hi.sum())}")
        raise ValueError(f"size_max allows only {arith} over n_clusters={k} clusters, fewer "
                         f"than {what}; raise size_max or n_clusters.")
    # a cluster never holds more than the total less the other clusters' minima
    hi = np.minimum(hi, total - (lo.sum() - lo))
    hi = np.maximum(hi, lo)
    return SizeBounds(lo, hi, unit, method, total)


@dataclass
class Assignment:
    """A constrained assignment.

    Attributes
    ----------
    labels : ndarray of shape (n,)
    feasible : bool
        Whether every size is within its bounds.
    """

    labels: np.ndarray
    feasible: bool


def _sizes(labels, w, k):
    return np.bincount(labels, weights=w, minlength=k)


def _within(W, bounds, rtol=1e-9):
    slack = rtol * max(1.0, float(bounds.hi.max()))
    return bool(((W >= bounds.lo - slack) & (W <= bounds.hi + slack)).all())


def _tableau(D, w, bounds, pos):
    """The transport problem ``(a, b, M, column clusters)`` of the rows ``pos`` (positive
    weight) described in the module docstring."""
    lo, hi = bounds.lo, bounds.hi
    k = lo.shape[0]
    a = w[pos]
    total = float(a.sum())
    mand = np.flatnonzero(lo > 0)
    opt = np.flatnonzero(hi - lo > 0)
    cols = np.concatenate([mand, opt])
    b = np.concatenate([lo[mand], (hi - lo)[opt]])
    extra = float(b.sum()) - total
    Dp = D[pos]
    M = np.empty((pos.size + (extra > 0), cols.size))
    M[:pos.size] = Dp[:, cols]
    if extra > 0:
        span = float(np.ptp(Dp, axis=1).max()) if k > 1 else 0.0
        big = 3.0 * span if span > 0 else 1.0
        M[-1, :mand.size] = big
        M[-1, mand.size:] = 0.0
        a = np.append(a, extra)
    else:  # equal sums up to rounding: the columns carry exactly the weight of the points
        b = b * (total / float(b.sum()))
    return a, b, M, cols


def _round_plan(G, pos, cols, w):
    """Labels from a plan: each point's largest column; and the rows split between clusters."""
    P = G[:pos.size]
    best = np.argmax(P, axis=1)
    labels = cols[best]
    top = P[np.arange(pos.size), best]
    split = pos[top < w[pos] * (1 - 1e-9)]
    return labels, split


def _milp_split(D, w, labels, split, bounds):
    """Re-assign the ``split`` rows exactly (HiGHS ``milp``), every other row fixed; None when
    no placement of them meets the bounds."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import csr_matrix, identity, kron

    k = bounds.lo.shape[0]
    m = split.size
    others = np.ones(labels.shape[0], dtype=bool)
    others[split] = False
    Wfix = np.bincount(labels[others], weights=w[others], minlength=k)
    c = (w[split, None] * D[split]).ravel()
    one = LinearConstraint(kron(identity(m), np.ones((1, k))), 1, 1)
    rows = np.tile(np.arange(k), m)
    mass = LinearConstraint(csr_matrix((np.repeat(w[split], k), (rows, np.arange(m * k))),
                                       shape=(k, m * k)),
                            bounds.lo - Wfix, bounds.hi - Wfix)
    res = milp(c, constraints=[one, mass], integrality=np.ones(m * k), bounds=Bounds(0, 1),
               options={"time_limit": 30.0})
    if res.x is None or res.status not in (0, 1):
        return None
    out = labels.copy()
    out[split] = np.argmax(res.x.reshape(m, k), axis=1)
    return out


def _repair(D, w, labels, bounds):
    """Move points, one at a time, until every size is within its bounds: each move is the
    one of least divergence increase that takes an over-full cluster below its maximum (or an
    under-full one toward its minimum) without breaking another cluster's bound. With unit
    weights a move always exists while a bound is broken (``sum lo <= n <= sum hi``)."""
    lo, hi = bounds.lo, bounds.hi
    k = lo.shape[0]
    labels = labels.copy()
    W = _sizes(labels, w, k)
    tol = 1e-9 * max(1.0, float(hi.max()))
    for _ in range(2 * labels.shape[0] + k):
        over = np.flatnonzero(W > hi + tol)
        under = np.flatnonzero(W < lo - tol)
        if not over.size and not under.size:
            return labels, True
        if over.size:  # out of cluster j, into a cluster with room
            j = over[np.argmax(W[over] - hi[over])]
            idx = np.flatnonzero((labels == j) & (w > 0))
            room = (W[None, :] + w[idx, None] <= hi[None, :] + tol)
            room[:, j] = False
            gain = np.where(room, D[idx] - D[idx, j][:, None], np.inf)
        else:  # into cluster j, out of a cluster above its minimum
            j = under[np.argmax(lo[under] - W[under])]
            idx = np.flatnonzero((labels != j) & (w > 0))
            src = labels[idx]
            ok = (W[src] - w[idx] >= lo[src] - tol) & (W[j] + w[idx] <= hi[j] + tol)
            gain = np.full((idx.size, k), np.inf)
            gain[ok, j] = D[idx[ok], j] - D[idx[ok], src[ok]]
        if not idx.size or not np.isfinite(gain).any():
            return labels, False
        r, t = np.unravel_index(np.argmin(gain), gain.shape)
        i = idx[r]
        W[labels[i]] -= w[i]
        W[t] += w[i]
        labels[i] = t
    return labels, _within(W, bounds)


def constrained_labels(D, w, bounds, *, where=""):
    """Labels minimising ``sum_i w_i D[i, label_i]`` with every size within ``bounds``.

    Parameters
    ----------
    D : ndarray of shape (n, k)
        Finite divergences of the points to the centres.
    w : ndarray of shape (n,)
        Sample weights (the units of ``bounds``).
    bounds : SizeBounds
    where : str, default=""
        Appended to messages.

    Returns
    -------
    Assignment
    """
    k = D.shape[1]
    D = np.asarray(D, dtype=np.float64)
    pos = np.flatnonzero(w > 0)
    labels = np.argmin(D, axis=1)  # zero-weight rows: the nearest centre (they weigh nothing)
    if not np.isfinite(D[pos]).all():
        advice = ("use smoothing > 0 so that centres stay inside the domain, or rescale the "
                  "data")
        raise ValueError(f"the divergences between points and centres{where} are not finite "
                         f"(a divergence overflowed, or a centre lies on the boundary of the "
                         f"domain); the size-constrained assignment needs finite costs: "
                         f"{advice}.")
    if bounds.method == "greedy" or pos.size == 0:
        split = np.empty(0, dtype=np.int64)
    else:
        a, b, M, cols = _tableau(D, w, bounds, pos)
        if bounds.method == "exact":
            G = assignment_plan(a, b, M, where=where).plan
        else:
            Mn = M - M.min(axis=1, keepdims=True)  # row shifts leave the plan unchanged
            gap = float(Mn[:pos.size].mean())
            reg = SINKHORN_REG * gap if gap > 0 else 1.0
            # the forbidden cells need only be far above the rest: 50 reg is exp(-50) ~ 2e-22
            Mn = np.minimum(Mn, float(Mn[:pos.size].max()) + 50 * reg)
            G = entropic_plan(a, b, Mn, reg, where=where, max_iter=SINKHORN_ITER)
        labels[pos], split = _round_plan(G, pos, cols, w)
    W = _sizes(labels, w, k)
    if split.size or not _within(W, bounds):
        fixed = None
        if bounds.method == "exact" and split.size and not bounds.unit:
            fixed = _milp_split(D, w, labels, split, bounds)
        if fixed is not None:
            labels = fixed
        else:
            labels, ok = _repair(D, w, labels, bounds)
            if not ok:
                return Assignment(labels, False)
    return Assignment(labels, _within(_sizes(labels, w, k), bounds))


def _cost(D, w, labels):
    with np.errstate(over="ignore", invalid="ignore"):
        return float(w @ D[np.arange(D.shape[0]), labels])


class ConstrainedPasses:
    """The size-constrained assignment step as the pass of the Lloyd loop
    (``passes=`` of :func:`bregclust._centroid.lloyd`): the constrained labels of the centres
    and their statistics, on an in-memory source.

    The previous labels are a feasible answer at the new centres too: they are kept when the
    new ones cost more (approximate modes, weighted repairs, the rounding of an exact solve),
    so the objective never increases. Rows of no weight follow their nearest centre.
    ``candidates = False`` tells the loop not to move points into an empty cluster (possible
    only where ``size_min`` is 0) behind the solver's back: a move could break another
    cluster's bound.

    Parameters
    ----------
    src : InMemorySource
        Conditioned.
    bounds : SizeBounds
        In the conditioned weight units.
    run : int
        Restart number (messages).
    """

    candidates = False

    def __init__(self, src, bounds, run):
        self.src, self.bounds = src, bounds
        self.w = src.block.weights()
        self.zero = np.flatnonzero(self.w <= 0)
        self.where = f" (restart {run})"
        self.asg = None
        self.infeasible = None

    def __call__(self, div, centres):
        D = self.src.pairwise(div, centres.U)
        w = self.w
        new = constrained_labels(D, w, self.bounds, where=self.where)
        old = self.asg
        if old is not None and old.feasible and (
                not new.feasible or _cost(D, w, old.labels) <= _cost(D, w, new.labels)):
            new = Assignment(old.labels.copy(), True)
        if self.zero.size:  # rows of no weight follow their nearest centre
            new.labels[self.zero] = np.argmin(D[self.zero], axis=1)
        self.infeasible = (not new.feasible if self.infeasible is None else
                           self.infeasible and not new.feasible)
        self.asg = new
        part = self.src.label_stats(div, new.labels, D.shape[1])
        part.mins = np.asarray(D[np.arange(D.shape[0]), new.labels], dtype=np.float64)
        part.objective = _cost(D, w, new.labels)
        return part


def constrained_lloyd(src, div, centres, beta, z, max_iter, tol, run, bounds, *, verbose=0,
                      desc="BregmanKMeans"):
    """One restart of size-constrained Bregman k-means on an in-memory data source: the Lloyd
    loop of :func:`bregclust._centroid.lloyd` with :class:`ConstrainedPasses` as its pass.

    The centre step is :func:`bregclust._centroid.update_centres` (unchanged); the assignment
    step is :func:`constrained_labels` on the ``n x k`` divergence matrix. A cluster left
    empty (possible only where ``size_min`` is 0) keeps its centre.

    Parameters
    ----------
    src : InMemorySource
        Conditioned.
    div : Divergence
    centres : ndarray of shape (k, d)
    beta : float
    z : ndarray or None
    max_iter : int
    tol : float
    run : int
    bounds : SizeBounds
        In the conditioned weight units.
    verbose : int, default=0
    desc : str, default="BregmanKMeans"

    Returns
    -------
    LloydResult
        ``part.labels`` the constrained labels of ``centres``.
    """
    passes = ConstrainedPasses(src, bounds, run)
    res = lloyd(src, div, centres, beta, z, max_iter, tol, run, verbose=verbose, desc=desc,
                passes=passes)
    if passes.infeasible:
        k = centres.shape[0]
        W = _sizes(passes.asg.labels, passes.w, k)
        worst = int(np.argmax(np.maximum(bounds.lo - W, W - bounds.hi)))
        warnings.warn(
            f"{desc} restart {run}: no assignment found that keeps every weighted cluster size "
            f"within its bounds (cluster {worst} weighs {W[worst]:.6g} for bounds "
            f"[{bounds.lo[worst]:.6g}, {bounds.hi[worst]:.6g}], in the fit's weight units); "
            "with sample weights the bounds may be impossible to meet without splitting a "
            "sample: loosen them.", ConvergenceWarning, stacklevel=user_stacklevel())
    return res


def check_batch_bounds(size_min, size_max, fitted, w, k):
    """Bounds for :meth:`~bregclust.BregmanKMeans.predict_constrained`: those given, or the
    fitted ones scaled to the batch's total weight (rounded outward for counts).

    Parameters
    ----------
    size_min, size_max : None, "fit", number or array-like of shape (k,)
        ``"fit"``: the fitted bound scaled to the batch (None when the fit had no bounds).
    fitted : tuple or None
        ``(lo, hi, total)``: the fitted bounds and the total weight of the training data.
    w : ndarray of shape (m,)
        The batch's weights.
    k : int

    Returns
    -------
    SizeBounds
    """
    unit = bool((w == 1).all())
    total = float(w.sum())

    def given(v):
        return not (isinstance(v, str) and v == "fit")

    if not given(size_min) or not given(size_max):
        lo, hi, train_total = fitted if fitted is not None else (None, None, None)
        ratio = total / train_total if fitted is not None else 1.0
        if fitted is None:
            lo_b = hi_b = None
        elif unit:
            lo_b, hi_b = np.floor(lo * ratio + 1e-9), np.ceil(hi * ratio - 1e-9)
        else:
            lo_b, hi_b = lo * ratio, hi * ratio
        if not given(size_min):
            size_min = lo_b
        if not given(size_max):
            size_max = hi_b
    if size_min is None and size_max is None:  # no bound: the nearest centres
        size_max = total
    return check_size_bounds(size_min, size_max, k, w, "exact")

