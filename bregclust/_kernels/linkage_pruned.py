"""Muellner's generic algorithm with rigorous lower bounds of the merge costs, for sparse
separable models (kl and multinomial on document-term counts above all): a cost is bounded
first and evaluated exactly only when the bound cannot show that it changes no candidate list
and no candidate, so the merges and heights are those of :func:`.linkage_generic.generic_linkage`,
bit for bit. Used only when the statistics have sparse supports and the fit is large (see
``bregclust.agglomerative.PRUNED_MIN_N``), so other fits never compile it.
"""

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import config, njit, prange, types

from .agglomerative import (
    NRT_FREE_INLINE,
    NRT_FREE_INNER,
    NRT_FREE_INNER_PARALLEL,
    NRT_FREE_JIT,
    keep,
    merge_separable,
    sep_cost,
)
from .generators import KL as _GEN_KL
from .generators import compiled_pointer, kl_phi, phi_of
from .linkage_generic import (
    _ONE,
    _ZERO,
    CAND_TYPE,
    K_CAND,
    N_STATS,
    NAN_COST,
    OK,
    PAR_REFINE,
    ST_B_INIT,
    ST_B_MERGE,
    ST_B_RESCAN,
    ST_EXACT,
    ST_FULL,
    ST_LISTHIT,
    ST_REFINE,
    ST_RESCAN,
    _cand_compact,
    _cand_insert,
    _certified,
    _heap_update,
    _matrix,
    _position,
    _retire,
    _set_candidate,
    _sift_down,
    _slot,
    _vector,
    state_types,
)

# ---------------------------------------------------------------------------- pruning bounds
# Most merge costs evaluated by the generic algorithm cannot change its decisions: a cost to a new
# cluster matters to a slot below it only if it is below that slot's candidate threshold
# (``ctau``) or its candidate bound (``mind``), and a candidate list needs only its K cheapest
# costs. For sparse separable models each such cost is first bounded from below by a cheap,
# rigorous bound (:func:`_pivot_lower`) and evaluated exactly (by :func:`cost`, unchanged) only
# when the bound cannot rule it out, so every number the algorithm compares is the same float as
# before and the merges and heights are bit-identical.
#
# The bound. For slots ``x`` and ``b`` with weights ``wx, wb`` (``W = wx + wb``) and statistics
# ``a, v`` (``c_k``, the statistic of a raw zero, off a sparse support), :func:`cost` evaluates
#     Q = C[x, 0] + C[b, 0] - W * sum_{k in U} psi_k(m_k),  m_k = (wx a_k + wb v_k) / W,
# with ``psi_k(t) = phi(t) - phi(c_k)`` and ``U`` the union of the supports (``m_k = c_k``
# outside it, where ``psi_k`` vanishes). Splitting ``U`` into supp(b) and supp(x) \ supp(b):
#     sum_U psi(m) = F_b(wx) + sum_{k in supp x} [psi_k(m_k) - [k in supp b] psi_k(m0_k)],
#     F_b(wx) = sum_{k in supp b} psi_k(m0_k),  m0_k = (wx c_k + wb v_k) / W,
# where ``F_b`` depends on the other slot only through its weight (memoised per pivot ``b``), so
# the sum costs O(|supp x|) lookups in a dense copy of ``b`` instead of a walk over both
# supports. This is the same real number as the exact evaluation summed in another order: the
# ``m_k`` are computed by the same floating-point expression (``+`` commutes), so the two results
# differ only by summation rounding, at most ``N u sum |terms|`` each (``N`` terms, ``u = 2^-53``)
# plus the few-ulp error of ``phi``; :func:`_pivot_lower` subtracts ``EPS_REL`` (1e-8, far above
# ``N u`` for any ``N`` below 1e6) times the magnitude of every term involved. The exact path's
# unit-weight shortcut adds and subtracts the cached ``C[., 1]`` sums, whose magnitude is added
# too. For a dense pivot ``b`` the exact kernel reads ``A[x, k]`` off ``x``'s support, which
# differs from ``c_k`` by rounding of the repeated weighted means (relative ``3 u`` per merge,
# below 1e-9 for 1e6 merges); for kl (``m |phi'(m)| = m |log m| <= |phi(m)| + m``) the ``|m|``
# terms in the magnitude cover it, and other generators are evaluated exactly against dense
# pivots. Pairs with a dense ``x`` are evaluated exactly (no cheaper form).
EPS_REL = 1e-8
#: Helpers called at one place: numba inlines them into their caller (its IR), so they are not
#: compiled, optimised and emitted to machine code as functions of their own before being linked
#: into the caller and optimised again there (about 1.4 s of CPU of a cold first pruned fit,
#: 21.7 -> 20.3 s; warm fits unchanged). The floating-point operations are the same.
INLINE_JIT = NRT_FREE_INLINE
N_MEMO = 32
NO_BOUND = -np.inf


@njit(**NRT_FREE_INNER)
def _pivot(b, st, fc, pv, on):
    """Set (``on = 1``) or clear (``on = 0``) the pivot ``b`` in the scratch ``pv`` of
    :func:`_make_pv`, ``vb = fc[1]`` and ``mark = 0`` outside a pivot (the state between two
    scans). Set: ``vb`` a dense copy of slot ``b``'s statistic (``c_k`` off its support) and
    ``mark[k] = 1`` on its support (every ``k`` for a dense slot). When ``P`` has rows, also the
    level-1 gathers ``PV = (log v, 1 / v, log c, mark max(0, sqrt v - sqrt c), sqrt c)`` (row 3
    zero and rows 0-1 ``log c``, ``1 / c`` off the pivot's support; rows 2 and 4 constant) and
    the level-1b sums ``Qs = (sum D(c, v), sum (c - v)^2 / v, magnitude, [every c > 0])`` over
    its support (zero when cleared). One function for both directions, called by the scans'
    callers: compiled once, and the scan (:func:`_scan`) keeps no wrapper around its body."""
    vb, mark, PV, P, LG, Qs = pv
    A, B, C, w, sup, slen, aux = st
    lb = slen[b]
    nk = A.shape[1] if lb < 0 else lb
    for p in range(nk):
        k = p if lb < 0 else sup[b, p]
        if on == 1:
            vb[k] = A[b, k] if lb < 0 else B[b, p]
            mark[k] = 1
        else:
            vb[k] = fc[1, k]
            mark[k] = 0
    if P.shape[0] == 0:
        return
    q1 = 0.0
    q2 = 0.0
    qm = 0.0
    for p in range(nk):
        k = p if lb < 0 else sup[b, p]
        c = fc[1, k]
        if on == 1:
            v = vb[k]
            u = math.sqrt(v) - PV[4, k]
            PV[3, k] = u if u > 0.0 else 0.0
            if Qs[3] > 0.0:
                lv = math.log(v)
                iv = 1.0 / v
                PV[0, k] = lv
                PV[1, k] = iv
                lc = PV[2, k]
                q1 += c * (lc - lv) - c + v
                q2 += (c - v) * (c - v) * iv
                qm += abs(c * lc) + abs(c * lv) + c + abs(v) + (c - v) * (c - v) * iv
        else:
            PV[3, k] = 0.0
            if Qs[3] > 0.0:
                PV[0, k] = PV[2, k]
                PV[1, k] = 1.0 / c
    Qs[0] = q1
    Qs[1] = q2
    Qs[2] = qm


@njit(**INLINE_JIT)
def _memo_F(b, wx, st, fc, gcode, fn, memo, stamp):
    """``(F_b(wx), magnitude)`` of the pivot ``b``: ``sum psi_k((wx c_k + wb v_k) / W)`` over
    its support (every coordinate when dense) and the sum of ``|phi| + |phi(c)| + |m|``, through
    the memo ``memo`` (IN/OUT; see :func:`_pivot_lower`)."""
    F = 0.0
    mag = 0.0
    found = False
    ri = -1
    if stamp > 0 and wx == math.floor(wx) and wx < memo.shape[0] and wx >= 1.0:
        ri = np.int64(wx)
        if memo[ri, 0] == stamp:
            F = memo[ri, 1]
            mag = memo[ri, 2]
            found = True
    nm = 0
    if ri < 0:
        nm = np.int64(memo[0, 0])
        for r in range(1, nm + 1):
            if memo[r, 0] == wx:
                F = memo[r, 1]
                mag = memo[r, 2]
                found = True
                break
    if not found:
        A, B, C, w, sup, slen, aux = st
        wb = w[b]
        W = wx + wb
        lb = slen[b]
        nk = A.shape[1] if lb < 0 else lb
        for p in range(nk):
            if lb < 0:
                k = p
                v = A[b, k]
            else:
                k = sup[b, p]
                v = B[b, p]
            m = (wx * fc[1, k] + wb * v) / W
            f = phi_of(gcode, fn, m)
            F += f - fc[0, k]
            mag += abs(f) + abs(fc[0, k]) + abs(m)
        if ri >= 0:
            memo[ri, 0] = stamp
            memo[ri, 1] = F
            memo[ri, 2] = mag
        elif nm < N_MEMO:
            memo[nm + 1, 0] = wx
            memo[nm + 1, 1] = F
            memo[nm + 1, 2] = mag
            memo[0, 0] = nm + 1
    return F, mag


# not inlined into _block: numba's inliner deep-copies a function's IR block by block (each copy
# taking the whole scope), which for this one cost more than compiling it as a library of its own
# (cold first fit 14.0 / 14.0 s CPU against 14.8 / 15.4 s inlined, alternated)
@njit(**NRT_FREE_INNER)
def _pivot_lower(b, x, st, fc, gcode, fn, pv, memo, stamp, first):
    """Rigorous lower bound of ``cost(min(x, b), max(x, b))`` as computed by :func:`cost` for a
    sparse separable model, with the pivot ``b`` set by :func:`_pivot` (see the comment
    above); :data:`NO_BOUND` where no cheaper form exists. ``memo`` (IN/OUT) caches ``F_b`` per
    weight: with ``stamp > 0`` row ``int(w)`` holds ``(stamp, F, magnitude)`` for integral
    weights below its length; otherwise (``stamp == 0``, or another weight) up to ``N_MEMO``
    entries ``(w, F, magnitude)`` from row 1, with row 0 column 0 their number (zeroed by the
    caller for each pivot). ``pv`` from :func:`_make_pv`; with ``first`` a level-1 bound
    (:func:`_level1b`: a dense pivot) is returned where it applies; the level-1 bound of a sparse
    pivot (kl) is :func:`_level1s_rows`'. Returns ``(bound, level)``."""
    vb, mark, PV, P, LG, Qs = pv
    A, B, C, w, sup, slen, aux = st
    lx = slen[x]
    if lx < 0:
        return NO_BOUND, 2
    if slen[b] < 0 and gcode != _GEN_KL:
        return NO_BOUND, 2
    wx = w[x]
    wb = w[b]
    W = wx + wb
    # kl with a sparse pivot: level-1 bounds come from _level1s_rows (the caller's), level 2
    # from the tables here
    tables = gcode == _GEN_KL and slen[b] >= 0 and P.shape[0] > 0 and P.shape[1] >= N_SUMS
    F, mag = _memo_F(b, wx, st, fc, gcode, fn, memo, stamp)
    if first and not tables and gcode == _GEN_KL and wx < 0.25 * W and Qs[3] > 0.0:
        # light x, heavy dense pivot (a dense pivot otherwise gets level 2: a level-1 bound for
        # it paid for neither its compilation nor its evaluations on 20 Newsgroups)
        lo1 = _level1b(b, x, st, fc, vb, mark, PV, P, LG, Qs)
        if lo1 != NO_BOUND:
            return lo1, 1
    if tables:
        return _level2i(b, x, st, fc, vb, mark, P, F, mag), 2
    s = F
    for p in range(lx):
        k = sup[x, p]
        v = vb[k]
        m = (wx * B[x, p] + wb * v) / W
        f = phi_of(gcode, fn, m)
        s += f - fc[0, k]
        mag += abs(f) + abs(fc[0, k]) + abs(m)
        if mark[k] != 0:
            m0 = (wx * fc[1, k] + wb * v) / W
            f0 = phi_of(gcode, fn, m0)
            s -= f0 - fc[0, k]
            mag += abs(f0) + abs(fc[0, k]) + abs(m0)
    est = C[x, 0] + C[b, 0] - W * s
    err = EPS_REL * (abs(C[x, 0]) + abs(C[b, 0]) + W * (mag + abs(C[x, 1]) + abs(C[b, 1])))
    lo = est - err
    if lo != lo:  # NaN statistics: evaluate exactly (the exact cost reports them)
        return NO_BOUND, 2
    return lo, 2


# Level-2 bound in intersection form (kl, sparse x and sparse pivot b): with ``r = wb / W`` and
# ``h_x(r) = sum_{k in supp x} psi_k((1 - r) a_k + r c_k)`` (x's one-sided part), the same sum is
#     sum_U psi(m) = F_b(wx) + h_x(r) + sum_{k in I} [psi(m_k) - psi(m0x_k) - psi(m0b_k)],
# m0x = (wx a + wb c) / W, m0b = (wx c + wb v) / W, I = supp x & supp b. ``h_x`` is convex in
# ``r`` (each ``psi_k`` is convex and its argument affine in ``r``), so the chord between two
# tabulated values (a per-slot table at the grid ``_RHO``, ``r = 0`` and ``r = 1``) bounds it
# from above: the bound needs logarithms on the shared coordinates only (three each), against one
# per coordinate of x plus one per shared coordinate for the direct form. Exact (up to rounding)
# when ``r`` is a grid point, e.g. ``wx = wb``. Rounding is covered as for level 2, with every
# ``|psi|`` of x's coordinates at any ``r`` bounded by a per-slot magnitude (see
# :func:`_slot_sums`).
GRID_LO = -16.0  # grid of log2(wb / wx)
GRID_STEP = 0.5
N_GRID = 65
_RHO = np.array([2.0 ** (GRID_LO + GRID_STEP * i) / (1.0 + 2.0 ** (GRID_LO + GRID_STEP * i))
                 for i in range(N_GRID)])
# Level-1 bound in intersection form (kl, sparse x and sparse pivot b), log-free. With
# ``phi'' = 1 / m`` the shared-coordinate term is a mixed second difference,
#     psi(m) - psi(m0x) - psi(m0b) = r (1 - r) int_c^a int_c^v ds dt / ((1 - r) s + r t),
# and ``(1 - r) s + r t >= 2 sqrt(r (1 - r) s t)`` (AM-GM) bounds it by
#     2 sqrt(r (1 - r)) (sqrt a - sqrt c) (sqrt v - sqrt c)
# (``a, v >= c``: statistics are ``scale x + c`` with ``x >= 0``, and their weighted means; the
# factors are clipped at 0, which keeps the bound above a term that rounding made negative), so
# the sum over I is one sparse dot product with a dense copy of the pivot's ``sqrt v - sqrt c``.
# The pivot's part is the same function of the other ratio, ``F_b(wx) = h_b(wx / W)``, so it is
# bounded by the chord of b's own table too (rounding covered by b's table magnitude): with the
# two chords the bound takes no logarithm per pair and no pass over the pivot per weight. The
# rounding margin adds, for the exact evaluation's terms on I, ``|phi(m)| <= g(a) + g(v) +
# 2 (a + v)`` (``g(t) = t |log t|``, ``m`` between ``a`` and ``v``), summed per slot over its
# support.
N_SUMS = 7 + N_GRID + 3  # level-1 sums, the h_x table, h_x(0), magnitudes of h_x and of I


@njit(**NRT_FREE_INNER)
def _slot_sums(x, st, fc, P, LG):
    """OUT ``P[x] = (P1, P2, P3, P0, sum c, magnitude, count)`` over the support of slot ``x``
    (every coordinate when dense) for the level-1 bounds, ``LG[x, p] = log B[x, p]`` on a
    sparse support and, when ``LG`` has ``2 s`` columns (``s`` the support width),
    ``LG[x, s + p] = max(0, sqrt B[x, p] - sqrt c_k)`` (the log-free bound's factors)."""
    A, B, C, w, sup, slen, aux = st
    if slen[x] >= 0 and LG.shape[0] > 0:
        sw = sup.shape[1]
        for p in range(slen[x]):
            LG[x, p] = math.log(B[x, p])
        if LG.shape[1] >= 2 * sw:
            for p in range(slen[x]):
                u = math.sqrt(B[x, p]) - math.sqrt(fc[1, sup[x, p]])
                LG[x, sw + p] = u if u > 0.0 else 0.0
    lx = slen[x]
    nk = A.shape[1] if lx < 0 else lx
    p1 = 0.0
    p2 = 0.0
    p3 = 0.0
    p0 = 0.0
    p4 = 0.0
    mag = 0.0
    for p in range(nk):
        if lx < 0:
            k = p
            a = A[x, k]
        else:
            k = sup[x, p]
            a = B[x, p]
        c = fc[1, k]
        f = kl_phi(a)
        t = c * math.log(c if c > a else a) if c > 0.0 else 0.0
        p1 += f
        p2 += a
        p3 += t
        p0 += fc[0, k]
        p4 += c
        mag += abs(f) + abs(a) + abs(t) + abs(fc[0, k])
    P[x, 0] = p1
    P[x, 1] = p2
    P[x, 2] = p3
    P[x, 3] = p0
    P[x, 4] = p4
    P[x, 5] = mag
    P[x, 6] = nk
    if lx >= 0 and P.shape[1] >= N_SUMS:
        # P[x, 7:7 + N_GRID] = h_x(_RHO), P[x, 7 + N_GRID] = h_x(0), P[x, 8 + N_GRID] a bound
        # of sum_{k in supp x} |psi_k(m)| + |m| over every m between a_k and c_k, and
        # P[x, 9 + N_GRID] = sum g(a) + 2 |a| (the intersection-form bounds; sparse x, kl)
        h0 = 0.0
        mag = 0.0
        magi = 0.0
        for p in range(lx):
            k = sup[x, p]
            a = B[x, p]
            c = fc[1, k]
            h0 += kl_phi(a) - fc[0, k]
            magi += (a * abs(math.log(a)) if a > 0.0 else 0.0) + 2.0 * abs(a)
            hi = c if c > a else a
            lo = c if c < a else a
            t = hi * abs(math.log(hi)) if hi > 0.0 else 0.0
            if lo > 0.0:
                u = lo * abs(math.log(lo))
                if u > t:
                    t = u
            if lo < 1.0 / math.e < hi:
                if 1.0 / math.e > t:
                    t = 1.0 / math.e
            mag += t + 2.0 * hi + abs(fc[0, k])
        for i in range(N_GRID):
            r = _RHO[i]
            s = 0.0
            for p in range(lx):
                k = sup[x, p]
                s += kl_phi((1.0 - r) * B[x, p] + r * fc[1, k]) - fc[0, k]
            P[x, 7 + i] = s
        P[x, 7 + N_GRID] = h0
        P[x, 8 + N_GRID] = mag
        P[x, 9 + N_GRID] = magi


@njit(**NRT_FREE_INNER)
def _chord_at(wx, wb):
    """Where the chord of :func:`_chord_h` reads the table for the ratio ``r = wb / (wx + wb)``:
    ``(j0, j1, mode, lam)``, columns of ``P`` of the two grid values (``j1 < 0``: ``h_x(1) = 0``),
    ``mode`` 0 / 1 when ``r`` is the first / second grid point, else 2 with the interpolation
    weight ``lam``. Depends on the weights only, so it is shared by slots of one weight."""
    r = wb / (wx + wb)
    if r <= _RHO[0]:
        r0 = 0.0
        j0 = 7 + N_GRID
        r1 = _RHO[0]
        j1 = 7
    elif r >= _RHO[N_GRID - 1]:
        r0 = _RHO[N_GRID - 1]
        j0 = 7 + N_GRID - 1
        r1 = 1.0
        j1 = -1
    else:
        i = np.int64((math.log2(wb / wx) - GRID_LO) / GRID_STEP)
        if i < 0:
            i = 0
        if i > N_GRID - 2:
            i = N_GRID - 2
        while i > 0 and _RHO[i] > r:
            i -= 1
        while i < N_GRID - 2 and _RHO[i + 1] < r:
            i += 1
        r0 = _RHO[i]
        j0 = 7 + i
        r1 = _RHO[i + 1]
        j1 = 8 + i
    if r == r0:
        return j0, j1, 0, 0.0
    if r == r1:
        return j0, j1, 1, 0.0
    return j0, j1, 2, (r - r0) / (r1 - r0)


@njit(**NRT_FREE_INNER)
def _chord_eval(x, P, j0, j1, mode, lam):
    """The chord of :func:`_chord_h` for slot ``x`` from :func:`_chord_at`."""
    h0 = P[x, j0]
    h1 = P[x, j1] if j1 >= 0 else 0.0
    if mode == 0:
        return h0
    if mode == 1:
        return h1
    return h0 + (h1 - h0) * lam


@njit(**NRT_FREE_INNER)
def _chord_h(x, wx, wb, P):
    """Upper bound of ``h_x(wb / (wx + wb))`` (convex in the ratio) from the table of slot ``x``:
    the chord through the neighbouring grid points (``h_x(0)`` and ``h_x(1) = 0`` at the ends)."""
    j0, j1, mode, lam = _chord_at(wx, wb)
    return _chord_eval(x, P, j0, j1, mode, lam)


@njit(**INLINE_JIT)
def _level2i(b, x, st, fc, vb, mark, P, F, Fmag):
    """Intersection-form level-2 bound (see the comment above :data:`GRID_LO`) of the cost of a
    sparse ``x`` and the sparse pivot ``b`` (kl), given ``F = F_b(wx)`` and its magnitude."""
    A, B, C, w, sup, slen, aux = st
    wx = w[x]
    wb = w[b]
    W = wx + wb
    s = F + _chord_h(x, wx, wb, P)
    mag = Fmag + P[x, 8 + N_GRID]
    for p in range(slen[x]):
        k = sup[x, p]
        if mark[k] != 0:
            a = B[x, p]
            v = vb[k]
            c = fc[1, k]
            m = (wx * a + wb * v) / W
            mx = (wx * a + wb * c) / W
            mb = (wx * c + wb * v) / W
            f = kl_phi(m)
            fx = kl_phi(mx)
            fb = kl_phi(mb)
            s += f - fx - fb + fc[0, k]
            mag += abs(f) + abs(fx) + abs(fb) + abs(fc[0, k]) + m + mx + mb
    est = C[x, 0] + C[b, 0] - W * s
    err = EPS_REL * (abs(C[x, 0]) + abs(C[b, 0]) + W * (mag + abs(C[x, 1]) + abs(C[b, 1])))
    lo = est - err
    if lo != lo:
        return NO_BOUND
    return lo


@njit(**INLINE_JIT)
def _level1b(b, x, st, fc, vb, mark, PV, P, LG, Qs):
    """Level-1b lower bound (kl, every ``c_k > 0``) for a light sparse ``x`` and a heavy pivot
    ``b``: the cost is ``sum_k wx D(a_k, m_k) + wb D(v_k, m_k)`` (``D`` the scalar kl divergence,
    ``m = pi a + rho v``); dropping the second term and bounding the convex ``m -> D(a, m)`` by
    its tangent at ``v``, ``D(a, m) >= D(a, v) - pi (a - v)^2 / v``, gives per coordinate
    ``max(0, D(a, v) - pi (a - v)^2 / v)``, computed from stored logarithms (``LG`` of ``x``,
    ``log v`` of the pivot): no logarithm per pair. Off supp x ``a = c``, summed once per pivot
    (``Qs``) and corrected on the shared coordinates. Tight when ``pi`` is small."""
    A, B, C, w, sup, slen, aux = st
    wx = w[x]
    wb = w[b]
    W = wx + wb
    pi = wx / W
    s = Qs[0] - pi * Qs[1]
    mag = Qs[2]
    for p in range(slen[x]):
        k = sup[x, p]
        a = B[x, p]
        v = vb[k]
        lv = PV[0, k]
        iv = PV[1, k]
        la = LG[x, p]
        t = (a - v) * (a - v) * iv
        f = a * (la - lv) - a + v - pi * t
        if f > 0.0:
            s += f
        mag += abs(a * la) + abs(a * lv) + abs(a) + abs(v) + t
        if mark[k] != 0:
            c = fc[1, k]
            lc = PV[2, k]
            t0 = (c - v) * (c - v) * iv
            s -= c * (lc - lv) - c + v - pi * t0
            mag += abs(c * lc) + abs(c * lv) + c + abs(v) + t0
    lo = wx * s
    err = EPS_REL * (abs(C[x, 0]) + abs(C[b, 0]) + W * (mag + P[x, 5] + P[b, 5] + P[x, 6] + P[b, 6]
                                                       + abs(C[x, 1]) + abs(C[b, 1])))
    lo -= err
    if lo != lo:
        return NO_BOUND
    return lo


# Parallel regions are entered only for enough work (see PAR_REFINE in .linkage_generic).
PAR_BOUNDS = np.int64(2048)  # bounds (level 1) per region
# typed constants (see _ZERO in .linkage_generic)
_TRUE = np.bool_(True)
_FALSE = np.bool_(False)
_MINUS_ONE = np.int64(-1)


@njit(**INLINE_JIT)
def _level1s_rows(b, xs, t0, t1, w, C, P, sup, slen, LG, PV3, out, lvl):
    """Log-free intersection-form bound (see the comment above :data:`N_SUMS`) of the cost of
    the sparse pivot ``b`` (kl) and each sparse slot ``x = xs[t]``, ``t0 <= t < t1``, from the
    factors stored by :func:`_slot_sums` (``LG``) and the pivot's ``max(0, sqrt v - sqrt c)``
    (``PV3``), with the pivot's terms read once and the weight-dependent terms (chord
    positions, ``F_b`` bounded by the chord of b's table) computed once per weight (kept for
    weight 1 and for the last other weight). OUT ``out[t]``, ``lvl[t] = 1``; a NaN
    bound is left as NaN for the caller; ``lvl[t] = 0`` marks a dense ``x`` (no such bound);
    ``x = b`` is skipped."""
    sw = sup.shape[1]
    wb = w[b]
    cb0 = C[b, 0]
    acb = abs(C[b, 0])
    acb1 = abs(C[b, 1])
    pb9 = P[b, 9 + N_GRID]
    Fmag = P[b, 8 + N_GRID]
    # terms of weight 1 (singletons) and of the last other weight
    W1 = 1.0 + wb
    r = wb / W1
    a0, a1, amode, alam = _chord_at(1.0, wb)
    F1 = _chord_h(b, wb, 1.0, P)
    gs1 = 2.0 * math.sqrt(r * (1.0 - r))
    wl = -1.0
    Wl = 0.0
    l0 = 0
    l1 = 0
    lmode = 0
    llam = 0.0
    Fl = 0.0
    gsl = 0.0
    for t in range(t0, t1):
        x = xs[t]
        if x == b:
            continue
        if slen[x] < 0:
            lvl[t] = 0
            continue
        wx = w[x]
        if wx == 1.0:
            W = W1
            j0, j1, mode, lam, F, gs = a0, a1, amode, alam, F1, gs1
        else:
            if wx != wl:
                wl = wx
                Wl = wx + wb
                r = wb / Wl
                l0, l1, lmode, llam = _chord_at(wx, wb)
                Fl = _chord_h(b, wb, wx, P)
                gsl = 2.0 * math.sqrt(r * (1.0 - r))
            W = Wl
            j0, j1, mode, lam, F, gs = l0, l1, lmode, llam, Fl, gsl
        dot = 0.0
        for p in range(slen[x]):
            dot += LG[x, sw + p] * PV3[sup[x, p]]
        g = gs * dot
        est = C[x, 0] + cb0 - W * (F + _chord_eval(x, P, j0, j1, mode, lam) + g)
        mag = Fmag + P[x, 8 + N_GRID] + P[x, 9 + N_GRID] + pb9 + g
        err = EPS_REL * (abs(C[x, 0]) + acb + W * (mag + abs(C[x, 1]) + acb1))
        out[t] = est - err
        lvl[t] = 1


# Parallel passes. Three tasks run in blocks of one parallel loop (:func:`_par_blocks`), or
# serially as one block when the work is small: first-level bounds of a pivot to a range of
# slots (LOWER), level-2 refinements (REFINE) and exact costs (EXACT) at listed entries. Every
# entry is computed independently, so the values do not depend on the blocks or the threads.
LOWER, REFINE, EXACT = np.int64(0), np.int64(1), np.int64(2)


def _block(task, kind, b, act, idx, lo, hi, q, nb, st, fc, gcode, fn, pv, out, lvl, memos, stamp,
           row, costf):
    """Block ``q`` of ``nb`` equal blocks of ``lo <= r < hi`` of a parallel task, with the pivot
    (or new cluster) ``b`` and the memo ``memos[q]`` (see :func:`_pivot_lower`):

    * :data:`LOWER`: OUT ``out[t], lvl[t]`` = the first-level bound of :func:`_pivot_lower` for
      ``x = act[t]``, ``t = r`` (``x != b``);
    * :data:`REFINE`: level-2 bounds for the entries ``t = idx[r]`` holding a level-1 bound
      (``out[t]`` becomes the larger of the two);
    * :data:`EXACT`: OUT ``row[t] = cost(min(x, b), max(x, b))``, ``t = idx[r]``, ``x = act[t]``.

    Compiled only as the C callback of :func:`pointers` (the driver's ``block``).
    """
    vb, mark, PV, P, LG, Qs = pv
    A, B, C, w, sup, slen, aux = st
    per = (hi - lo + nb - 1) // nb
    r0 = lo + q * per
    r1 = lo + (q + 1) * per
    if r1 > hi:
        r1 = hi
    memo = memos[q]
    memo[0, 0] = 0.0
    if task == EXACT:
        for r in range(r0, r1):
            t = idx[r]
            x = act[t]
            if x < b:
                row[t] = costf(x, b, st, fc, gcode, fn)
            else:
                row[t] = costf(b, x, st, fc, gcode, fn)
    else:
        # one call site of _pivot_lower (it is inlined where it is called: every further call
        # site would compile its code again)
        kl = (task == LOWER and gcode == _GEN_KL and slen[b] >= 0 and P.shape[0] > 0
              and P.shape[1] >= N_SUMS and LG.shape[1] >= 2 * sup.shape[1])
        if kl:
            # LOWER, the common case (kl, sparse pivot and slots, stored factors) through
            # _level1s_rows: the bound _pivot_lower returns for it, computed the same way; the
            # other slots (dense x: level 1; no level-1 bound: level 2) through _pivot_lower
            _level1s_rows(b, act, r0, r1, w, C, P, sup, slen, LG, PV[3], out, lvl)
        for r in range(r0, r1):
            if task == REFINE:
                t = idx[r]
                if lvl[t] != 1:
                    continue
                first = _FALSE
            else:  # LOWER
                t = r
                if act[t] == b:
                    continue
                first = _TRUE
                if kl:
                    if lvl[t] != 0:
                        if out[t] == out[t] and out[t] != NO_BOUND:
                            continue
                        first = _FALSE
            v, level = _pivot_lower(b, act[t], st, fc, gcode, fn, pv, memo, stamp, first)
            if task == REFINE:
                if v > out[t]:
                    out[t] = v
                lvl[t] = 2
            else:
                out[t] = v
                lvl[t] = level


@njit(**NRT_FREE_INNER_PARALLEL)
def _par_blocks(task, kind, b, act, idx, lo, hi, st, fc, gcode, fn, pv, out, lvl, memos, stamp,
                row, nb, block, costf):
    """``block`` (:func:`_block`) ``q = 0 .. nb - 1``: in parallel for ``nb > 1`` (the driver's
    parallel loop), else as one serial block (no parallel region is entered). The tasks of
    :func:`_scan` all run through here, so the callback ``block`` is called from two places
    only (each call site of a first-class function compiles two calls and a fallback through
    the interpreter, and each passes the ~20 arrays of the task again)."""
    if nb > 1:
        for q in prange(nb):
            # prange's index is unsigned: cast, so that the callee has one integer type
            block(task, kind, b, act, idx, lo, hi, np.int64(q), nb, st, fc, gcode, fn, pv, out,
                  lvl, memos, stamp, row, costf)
    else:
        block(task, kind, b, act, idx, lo, hi, _ZERO, nb, st, fc, gcode, fn, pv, out, lvl, memos,
              stamp, row, costf)


# The callers below run a task in ``nb`` blocks, ``nb`` from :func:`_nblocks` (1: serially).


@njit(**NRT_FREE_INNER)
def _nblocks(m, cap, threshold, nthreads):
    """Blocks of a parallel task of ``m`` items: ``min(m, cap)`` above ``threshold`` items with
    threads, else 1 (serial). Comparisons instead of ``min``, whose numba implementation is
    compiled as a function of its own."""
    if m > threshold and nthreads > 1:
        return m if m < cap else cap
    return 1


@njit(**NRT_FREE_INNER)
def _kth(a, lo, hi, k, buf):
    """The ``k``-th least value (0-based) of ``a[lo:hi]``, as ``np.partition(a[lo:hi], k)[k]``
    (NaN ordered last), by selection on the copy ``buf`` (hand-written: numba's
    ``np.partition`` compiles sorting and ``np.unique`` machinery that this kernel never runs)."""
    m = hi - lo
    for i in range(m):
        v = a[lo + i]
        buf[i] = v if v == v else np.inf
    left = 0
    right = m - 1
    while left < right:
        mid = (left + right) >> 1
        # median of three as the pivot
        x0 = buf[left]
        x1 = buf[mid]
        x2 = buf[right]
        if x0 > x1:
            x0, x1 = x1, x0
        if x1 > x2:
            x1 = x2
            if x0 > x1:
                x1 = x0
        pivot = x1
        i = left
        j = right
        while i <= j:
            while buf[i] < pivot:
                i += 1
            while buf[j] > pivot:
                j -= 1
            if i <= j:
                t = buf[i]
                buf[i] = buf[j]
                buf[j] = t
                i += 1
                j -= 1
        if k <= j:
            right = j
        elif k >= i:
            left = i
        else:
            break
    v = buf[k]
    if v == np.inf:  # inf or NaN: a NaN among the data sorts last in numpy
        for i in range(m):
            if a[lo + i] != a[lo + i]:
                cnt = 0
                for r in range(m):
                    if a[lo + r] == a[lo + r] and a[lo + r] <= v:
                        cnt += 1
                return v if k < cnt else np.nan
    return v


@njit(**NRT_FREE_INNER)
def _argsort(vals, g, order, tmp):
    """OUT ``order[:g]``: the positions ``0 .. g-1`` sorted by ``(vals, position)`` - the order
    of a stable sort by value - by a bottom-up merge sort (hand-written for the reason of
    :func:`_kth`)."""
    for r in range(g):
        order[r] = r
    width = 1
    while width < g:
        for s in range(0, g, 2 * width):
            mid = s + width if s + width < g else g
            e = s + 2 * width if s + 2 * width < g else g
            i = s
            j = mid
            o = s
            while i < mid and j < e:
                if vals[order[j]] < vals[order[i]]:
                    tmp[o] = order[j]
                    j += 1
                else:
                    tmp[o] = order[i]
                    i += 1
                o += 1
            while i < mid:
                tmp[o] = order[i]
                i += 1
                o += 1
            while j < e:
                tmp[o] = order[j]
                j += 1
                o += 1
        for r in range(g):
            order[r] = tmp[r]
        width *= 2


@njit(**NRT_FREE_INNER)
def _cand_resolve(x, st, fc, gcode, fn, cand, stats, costf):
    """Evaluate the pending head of the list of ``x`` exactly (and move it to its place) until
    the head is an exact cost or not below ``ctau[x]``. Returns the status (NaN costs are
    refused). ``costf``: the driver's merge cost (see :func:`pointers`)."""
    cc, ci, cg, cn, ctau, gen = cand
    while True:
        if cn[x] > 0 and gen[_slot(ci[x, 0])] != cg[x, 0]:  # dead head
            _cand_compact(cand, x)
        if not (cn[x] > 0 and ci[x, 0] < 0 and cc[x, 0] < ctau[x]):
            return OK
        y = -ci[x, 0] - 1
        g = cg[x, 0]
        c = costf(x, y, st, fc, gcode, fn)
        stats[ST_EXACT] += 1
        if c != c:
            return NAN_COST
        # the rest of the list is sorted: shift its smaller entries one place to the front
        p = 0
        m = cn[x]
        while p + 1 < m and (cc[x, p + 1] < c or (cc[x, p + 1] == c and _slot(ci[x, p + 1]) < y)):
            cc[x, p] = cc[x, p + 1]
            ci[x, p] = ci[x, p + 1]
            cg[x, p] = cg[x, p + 1]
            p += 1
        cc[x, p] = c
        ci[x, p] = y
        cg[x, p] = g


@njit(**NRT_FREE_INNER)
def _list_reset(x, lo, na, lob, cand, buf):
    """Empty the list of ``x`` before a build among the slots ``act[t]``, ``lo <= t < na``, with
    lower bounds ``lob[t]`` of their costs. Returns ``(ninf, lam)``: the number of slots
    without a bound (:data:`NO_BOUND`, evaluated exactly) and ``lam``, the K-th least bound
    beside them (``inf`` when every bound fits in the list)."""
    cc, ci, cg, cn, ctau, gen = cand
    K = cc.shape[1]
    cn[x] = 0
    ctau[x] = np.inf
    ninf = 0
    for t in range(lo, na):
        if lob[t] == NO_BOUND:
            ninf += 1
    lam = np.inf
    if na - lo > K + ninf:
        lam = _kth(lob, lo, na, K - 1 + ninf, buf)
    return ninf, lam


def _scan(kind, x, a, lo_bounds, lo_list, act, na, st, fc, gcode, fn, pv, lob, lvl, row, idx,
          done, cand, nn, mind, stale, heap, where, memos, stamp, nthreads, stats, buf, order,
          tmp, block, costf):
    """The pruned passes of the pivot ``x`` (set in ``pv`` by the caller with :func:`_pivot`,
    and cleared by it afterwards): first-level bounds of its costs to the slots ``act[t]``,
    ``lo_bounds <= t < na``; when ``a >= 0`` (``a`` was just
    merged into ``x``, and ``act[:lo_list - 1]`` are the slots below ``x``) the update of the
    slots below ``x``; then the candidate list of ``x`` among ``act[t]``, ``lo_list <= t < na``
    (all above ``x``). Returns the status (NaN costs are refused). ``buf``, ``order``, ``tmp``
    (n,) are scratch; ``block`` is the driver's. Compiled only as the C callback of
    :func:`pointers` (the driver's ``scan``).

    The update makes the same decisions as the exact update of
    :func:`.linkage_generic.generic_linkage`, evaluating a cost to ``x`` only where its bound
    does not show it is above the slot's ``mind`` (then it is no new minimum, and a candidate
    ``a`` or ``x`` becomes ``x``, stale); such a cost enters the slot's list as a pending entry
    when its bound is below the slot's ``ctau``.

    The list: first the K least bounds as pending entries (slots without a bound evaluated
    exactly), the least bound left out as ``ctau``, then the pending head resolved
    (:func:`_cand_resolve`). When that does not certify the head, the list is built again with
    exact costs: the same list as :func:`.linkage_generic._cand_build` on every exact cost (its
    ``ctau`` possibly lower, still a valid bound), computing exact costs for the K slots of least
    bound first, then only where the (refined) bound does not exceed the K-th cost. The head is
    the least (cost, slot) above ``x`` either way.
    """
    cc, ci, cg, cn, ctau, gen = cand
    K = cc.shape[1]
    cap = memos.shape[0]
    n = heap.shape[0]
    nb = _nblocks(na - lo_bounds, cap, PAR_BOUNDS, nthreads)
    _par_blocks(LOWER, _ZERO, x, act, act, lo_bounds, na, st, fc, gcode, fn, pv, lob, lvl,
                memos, stamp, row, nb, block, costf)
    if a >= 0:  # the slots below x, at positions p < pb
        b = x
        pb = lo_list - 1
        cnt = np.int64(0)
        for p in range(pb):
            y = act[p]
            if not (lob[p] > mind[y]):
                idx[cnt] = p
                cnt += 1
        nb = _nblocks(cnt, cap, PAR_REFINE, nthreads)
        _par_blocks(REFINE, kind, b, act, idx, _ZERO, cnt, st, fc, gcode, fn, pv, lob, lvl,
                    memos, stamp, row, nb, block, costf)
        stats[ST_REFINE] += cnt
        for p in range(pb):
            done[p] = False
        c2 = np.int64(0)
        for q in range(cnt):
            p = idx[q]
            y = act[p]
            if not (lob[p] > mind[y]):
                done[p] = True
                idx[c2] = p
                c2 += 1
        nb = _nblocks(c2, cap // 2, PAR_REFINE // 4, nthreads)
        _par_blocks(EXACT, kind, b, act, idx, _ZERO, c2, st, fc, gcode, fn, pv, lob, lvl,
                    memos, stamp, row, nb, block, costf)
        stats[ST_EXACT] += c2
        for p in range(pb):
            y = act[p]
            if not done[p]:
                if lob[p] < ctau[y]:
                    _cand_insert(cand, y, lob[p], -b - 1)
                if nn[y] == a or nn[y] == b:
                    nn[y] = b
                    stale[y] = True
                continue
            c = row[p]
            if c != c:
                return NAN_COST
            if c < ctau[y]:
                _cand_insert(cand, y, c, b)
            if c < mind[y]:
                mind[y] = c
                nn[y] = b
                stale[y] = False
                _heap_update(heap, where, mind, y, n)
            elif nn[y] == a or nn[y] == b:
                nn[y] = b
                if c != mind[y]:
                    stale[y] = True
    # the candidate list of x among the slots act[t], lo <= t < na (all above x)
    lo = lo_list
    ninf, lam = _list_reset(x, lo, na, lob, cand, buf)
    if na <= lo:
        return OK
    cnt = np.int64(0)
    for t in range(lo, na):
        if lob[t] == NO_BOUND:
            idx[cnt] = t
            cnt += 1
    nb = _nblocks(cnt, cap // 2, PAR_REFINE // 4, nthreads)
    _par_blocks(EXACT, kind, x, act, idx, _ZERO, cnt, st, fc, gcode, fn, pv, lob, lvl,
                memos, stamp, row, nb, block, costf)
    stats[ST_EXACT] += cnt
    # the entries in slot order, then a stable sort by value: the (value, slot) order of the list
    g = np.int64(0)
    low = np.inf
    for t in range(lo, na):
        lt = lob[t]
        if lt == NO_BOUND:
            if row[t] != row[t]:
                return NAN_COST
        elif lt > lam:
            if lt < low:
                low = lt
            continue
        idx[g] = t
        g += 1
    for r in range(g):
        t = idx[r]
        buf[r] = row[t] if lob[t] == NO_BOUND else lob[t]
    _argsort(buf, g, order, tmp)
    m = g if g < K else K
    for r in range(m):
        t = idx[order[r]]
        y = act[t]
        cc[x, r] = buf[order[r]]
        ci[x, r] = y if lob[t] == NO_BOUND else -y - 1
        cg[x, r] = gen[y]
    cn[x] = m
    if g > K and buf[order[K]] < low:
        low = buf[order[K]]
    ctau[x] = low
    if _cand_resolve(x, st, fc, gcode, fn, cand, stats, costf) != OK:
        return NAN_COST
    if _certified(x, cand):
        return OK
    # the list with exact costs
    stats[ST_FULL] += 1
    ninf, lam = _list_reset(x, lo, na, lob, cand, buf)
    while True:  # the K least bounds, refined to level 2 until they are all tight
        if na - lo > K + ninf:
            lam = _kth(lob, lo, na, K - 1 + ninf, buf)
        cnt = np.int64(0)
        for t in range(lo, na):
            if not (lob[t] > lam) and lvl[t] == 1:
                idx[cnt] = t
                cnt += 1
        if cnt == 0:
            break
        nb = _nblocks(cnt, cap, PAR_REFINE, nthreads)
        _par_blocks(REFINE, kind, x, act, idx, _ZERO, cnt, st, fc, gcode, fn, pv, lob, lvl,
                    memos, stamp, row, nb, block, costf)
        stats[ST_REFINE] += cnt
    cnt = np.int64(0)
    for t in range(lo, na):
        if not (lob[t] > lam):
            idx[cnt] = t
            cnt += 1
    nb = _nblocks(cnt, cap // 2, PAR_REFINE // 4, nthreads)
    _par_blocks(EXACT, kind, x, act, idx, _ZERO, cnt, st, fc, gcode, fn, pv, lob, lvl,
                memos, stamp, row, nb, block, costf)
    stats[ST_EXACT] += cnt
    for q in range(cnt):
        c = row[idx[q]]
        if c != c:
            return NAN_COST
        _cand_insert(cand, x, c, act[idx[q]])
    theta = cc[x, K - 1] if cn[x] == K else np.inf
    cnt = np.int64(0)
    low = np.inf
    for t in range(lo, na):
        lt = lob[t]
        if lt > lam:
            if lt > theta:
                if lt < low:
                    low = lt
            else:
                idx[cnt] = t
                cnt += 1
    nb = _nblocks(cnt, cap, PAR_REFINE, nthreads)
    _par_blocks(REFINE, kind, x, act, idx, _ZERO, cnt, st, fc, gcode, fn, pv, lob, lvl,
                memos, stamp, row, nb, block, costf)
    stats[ST_REFINE] += cnt
    c2 = np.int64(0)
    for q in range(cnt):
        t = idx[q]
        if lob[t] > theta:
            if lob[t] < low:
                low = lob[t]
        else:
            idx[c2] = t
            c2 += 1
    nb = _nblocks(c2, cap // 2, PAR_REFINE // 4, nthreads)
    _par_blocks(EXACT, kind, x, act, idx, _ZERO, c2, st, fc, gcode, fn, pv, lob, lvl,
                memos, stamp, row, nb, block, costf)
    stats[ST_EXACT] += c2
    for q in range(c2):
        c = row[idx[q]]
        if c != c:
            return NAN_COST
        _cand_insert(cand, x, c, act[idx[q]])
    if low < ctau[x]:
        ctau[x] = low
    return OK


# The driver runs in three compiled parts called from Python (:func:`pruned_linkage`): the
# per-slot sums, the initial candidate lists in blocks run by a thread pool, and the merges.
# The initial lists are not a ``prange`` loop: numba builds a parallel loop as a gufunc with
# wrappers of its own, compiled into the driver's library. The blocks release the GIL
# (``nogil``), so a standard-library thread pool runs them in parallel with no compiled
# parallel machinery; their scratch is allocated here by numpy (numba compiles every shape and
# dtype of ``np.empty`` / ``np.zeros`` it sees as a function of its own).


@njit(**NRT_FREE_JIT)
def _slot_sums_all(st, fc, P, LG):
    """:func:`_slot_sums` of every slot (the rows of ``P``; none for other generators than
    kl)."""
    for x in range(P.shape[0]):
        _slot_sums(x, st, fc, P, LG)


@njit(**NRT_FREE_JIT)
def _rows_block(kind, q, nb, act, st, fc, gcode, fn, pv, cand, nn, mind, stale, heap, where,
                status, stats, scratch, scan, block, costf):
    """Block ``q`` of ``nb`` of the initial candidate lists: for ``i = q, q + nb, ...`` below
    ``n // 2``, the lists of the slots ``i`` and ``n - 2 - i`` (together ``n - 1`` pairs, which
    balances the blocks), each by ``scan`` (:func:`_scan`) among every slot above it, serially,
    with the block's own pivot scratch ``pv`` and ``scratch`` (see :func:`_block_scratch`); OUT
    their ``status`` and the block's counters ``stats``. The lists of different slots do not
    interact, so the blocks may run at once (the GIL is released) and do not change them."""
    lob, row, buf, idx, order, tmp, lvl, done, memo = scratch
    n = act.shape[0]
    for i in range(q, n // 2, nb):
        for r in range(2):
            x = i if r == 0 else n - 2 - i
            if r == 1 and x <= i:
                break
            _pivot(x, st, fc, pv, _ONE)
            status[x] = scan(kind, x, _MINUS_ONE, x + 1, x + 1, act, n, st, fc, gcode, fn, pv,
                             lob, lvl, row, idx, done, cand, nn, mind, stale, heap, where, memo,
                             0.0, _ONE, stats, buf, order, tmp, block, costf)
            _pivot(x, st, fc, pv, _ZERO)


@njit(**NRT_FREE_JIT)
def _merges(kind, st, fc, gcode, fn, out_i, out_j, out_h, nthreads, stats, first, outs, cand, ws,
            pv, dstamp, scan, block, costf):
    """The merges of :func:`pruned_linkage` after the initial candidate lists (``cand``, the
    workspace ``ws`` of :func:`_workspace`); returns the status."""
    A, B, C, w, sup, slen, aux = st
    cc, ci, cg, cn, ctau, gen = cand
    act, heap, where, nn, mind, stale, P, LG, row, lob, buf, idx, order, tmp, done, lvl, memos, \
        ibuf = ws
    n = A.shape[0]
    na = n
    stamp = 0.0
    for x in range(n - 1):
        nn[x] = ci[x, 0]
        mind[x] = cc[x, 0]
    for p in range(n // 2 - 1, -1, -1):
        _sift_down(heap, where, mind, p, n)
    for t in range(n - 1):
        while True:
            a = heap[0]
            if not stale[a]:
                break
            if _cand_resolve(a, st, fc, gcode, fn, cand, stats, costf) != OK:
                return NAN_COST
            if _certified(a, cand):
                stats[ST_LISTHIT] += 1
            else:  # list not certified: rescan
                stats[ST_RESCAN] += 1
                lo = _position(act, na, a) + 1
                stamp += dstamp
                stats[ST_B_RESCAN] += na - lo
                _pivot(a, st, fc, pv, _ONE)
                status = scan(kind, a, _MINUS_ONE, lo, lo, act, na, st, fc, gcode, fn, pv, lob,
                              lvl, row, idx, done, cand, nn, mind, stale, heap, where, memos,
                              stamp, nthreads, stats, buf, order, tmp, block, costf)
                _pivot(a, st, fc, pv, _ZERO)
                if status != OK:
                    return NAN_COST
            _set_candidate(a, cand, nn, mind, stale, heap, where)
        a = heap[0]
        b = nn[a]
        if b < 0:  # only possible with NaN statistics; refuse rather than write out of bounds
            return NAN_COST
        out_i[t] = a
        out_j[t] = b
        out_h[t] = mind[a]
        merge_separable(a, b, st, fc, gcode, fn, ibuf)
        if t >= first:  # a cluster of the last merges: kept for the tree features
            keep(b, n - 2 - t, st, outs)
        na = _retire(a, b, t, act, na, cand, mind, stale, heap, where)
        pb = _position(act, na, b)
        stamp += dstamp
        if P.shape[0] > 0:
            _slot_sums(b, st, fc, P, LG)
        # the update of the slots below b and the candidate list of b (see _scan)
        stats[ST_B_MERGE] += na - 1
        _pivot(b, st, fc, pv, _ONE)
        status = scan(kind, b, a, _ZERO, pb + 1, act, na, st, fc, gcode, fn, pv, lob, lvl, row,
                      idx, done, cand, nn, mind, stale, heap, where, memos, stamp, nthreads,
                      stats, buf, order, tmp, block, costf)
        _pivot(b, st, fc, pv, _ZERO)
        if status != OK:
            return NAN_COST
        _set_candidate(b, cand, nn, mind, stale, heap, where)
    return OK


def _make_pv(fc, P, LG):
    """Pivot scratch ``pv = (vb, mark, PV, P, LG, Qs)`` for the pruning bounds (see
    :func:`_pivot`); ``P`` and ``LG`` hold the per-slot level-1 data
    (no rows: level 2 only)."""
    c = np.ascontiguousarray(fc[1], dtype=np.float64)
    d = c.shape[0]
    on = P.shape[0] > 0
    PV = np.zeros((5, d if on else 0))
    Qs = np.zeros(4)
    if on:
        PV[4] = np.sqrt(c)  # correctly rounded, as math.sqrt in the kernels
    if on and d > 0 and bool(np.all(c > 0.0)):
        Qs[3] = 1.0
        # math.log: the C library's logarithm, which the kernels call (numpy's own may differ
        # in the last bit)
        PV[0] = [math.log(v) for v in c]
        PV[1] = 1.0 / c
        PV[2] = PV[0]
    return (c.copy(), np.zeros(d, dtype=np.int8), PV, P, LG, Qs)


def _block_scratch(n):
    """Scratch of one block of initial lists (see :func:`_rows_block`)."""
    return (np.empty(n), np.empty(n), np.empty(n), np.empty(n, dtype=np.int64),
            np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int8),
            np.zeros(n, dtype=np.bool_), np.zeros((1, N_MEMO + 1, 3)))


def _workspace(st, gcode, nthreads, kcand):
    """The driver's arrays: the candidate lists ``cand`` (see the comment above
    :data:`.linkage_generic.K_CAND`), the workspace ``ws`` of :func:`_merges` and the memo
    stamp increment."""
    A, B, C, w, sup, slen, aux = st
    n = A.shape[0]
    K = min(kcand if kcand > 0 else K_CAND, max(n - 1, 1))
    cand = (np.empty((n, K)), np.empty((n, K), dtype=np.int64), np.empty((n, K), dtype=np.int64),
            np.zeros(n, dtype=np.int64), np.full(n, np.inf), np.zeros(n, dtype=np.int64))
    act = np.arange(n, dtype=np.int64)  # active slots, ascending
    # per-slot sums of the level-1 bound (kl only)
    m = n if gcode == _GEN_KL else 0
    P = np.zeros((m, N_SUMS))
    LG = np.zeros((m, 2 * sup.shape[1] if m > 0 else 0))
    # F_b memos of the parallel blocks, indexed by integral weights up to the total weight (the
    # total is exact for integral weights, whatever the order of summation)
    wtot = float(w.sum())
    integral = wtot <= 4.0 * n and bool(np.all(w == np.floor(w)))
    mlen = int(wtot) + 1 if integral else N_MEMO + 1
    memos = np.zeros((8 * nthreads, max(mlen, N_MEMO + 1), 3))
    ws = (act, act.copy(), act.copy(), np.full(n, -1, dtype=np.int64), np.full(n, np.inf),
          np.zeros(n, dtype=np.bool_), P, LG, np.empty(n), np.empty(n), np.empty(n),
          np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64),
          np.zeros(n, dtype=np.bool_), np.empty(n, dtype=np.int8), memos,
          np.empty(2 * sup.shape[1] + 1, dtype=sup.dtype))
    return cand, ws, 1.0 if integral else 0.0


def _parts(kind, st, fc, gcode, fn, out_i, out_j, out_h, nthreads, kcand, stats, first, outs):
    """The driver's compiled parts and their arguments (the callbacks left out): ``(nb, sums,
    rows, merges, rstatus, rstats)`` with ``rows(q)`` the arguments of block ``q`` of ``nb``;
    :func:`pruned_linkage` runs them."""
    n = st[0].shape[0]
    nthreads = max(int(nthreads), 1)
    cand, ws, dstamp = _workspace(st, gcode, nthreads, kcand)
    act, heap, where, nn, mind, stale, P, LG = ws[:8]
    nb = max(min(n // 2, 8 * nthreads), 1) if nthreads > 1 else 1
    rstatus = np.zeros(n, dtype=np.int64)
    rstats = np.zeros((nb, N_STATS), dtype=np.int64)

    pv = _make_pv(fc, P, LG)  # the merges' own; each block of initial lists gets a copy

    def rows(q):
        vb, mark, PV, _, _, Qs = pv
        return (kind, q, nb, act, st, fc, gcode, fn, (vb.copy(), mark.copy(), PV.copy(), P, LG,
                Qs.copy()), cand, nn, mind, stale, heap, where, rstatus, rstats[q],
                _block_scratch(n))

    merges = (kind, st, fc, gcode, fn, out_i, out_j, out_h, nthreads, stats, first, outs, cand, ws,
              pv, dstamp)
    return nb, (st, fc, P, LG), rows, merges, rstatus, rstats


def pruned_linkage(kind, st, fc, gcode, fn, out_i, out_j, out_h, nthreads, kcand, stats, first,
                   outs, scan, block, costf):
    """:func:`.linkage_generic.generic_linkage` for a sparse separable model (statistics with
    sparse supports, ``sup.shape[1] > 0``), with the pruning bounds: a cost is first bounded
    from below (:func:`_pivot_lower`, :func:`_level1s_rows`, :func:`_level1b`) and evaluated only when
    the bound cannot show that it changes no candidate list and no candidate, so the merges and
    heights are those of the exhaustive evaluation, bit for bit. Runs its compiled parts
    the per-slot sums, the initial candidate lists in ``nthreads``
    threads (blocks of :func:`_rows_block`), the merges (:func:`_merges`).

    Parameters
    ----------
    kind, st, fc, gcode, fn, out_i, out_j, out_h, nthreads, stats, first, outs
        As for :func:`.linkage_generic.generic_linkage`.
    kcand : int
        Length of the candidate lists; 0 for :data:`~.linkage_generic.K_CAND` (the results do
        not depend on it, only the number of rescans does).
    scan, block, costf : function
        :func:`pointers` ``(st, fc, fn)``.

    Returns
    -------
    int
        :data:`~.linkage_generic.OK`, or :data:`~.linkage_generic.NAN_COST` when a merge cost
        is NaN (the outputs are then incomplete).
    """
    stats[:] = 0
    nb, sums, rows, merges, rstatus, rstats = _parts(kind, st, fc, gcode, fn, out_i, out_j, out_h,
                                                    nthreads, kcand, stats, first, outs)
    _slot_sums_all(*sums)

    def run(q):
        _rows_block(*rows(q), scan, block, costf)

    if nb == 1:
        run(0)
    else:
        with ThreadPoolExecutor(min(int(nthreads), nb)) as pool:
            list(pool.map(run, range(nb)))
    if np.any(rstatus != OK):
        return NAN_COST
    stats += rstats.sum(axis=0)
    n = st[0].shape[0]
    stats[ST_B_INIT] = n * (n - 1) // 2
    return _merges(*merges, scan, block, costf)


def pointer_specs(st_t, fc_t, fn_t):
    """The driver's C callbacks ``(scan, block, costf)`` as ``(function, signature)`` pairs for
    the types of a state, the generator constants and the generator function (see
    :func:`pointers`); a driver is compiled from their types alone
    (``types.FunctionType(signature)``)."""
    i8, f8 = types.int64, types.float64
    i1, b1 = types.int8, types.boolean
    pv_t = types.Tuple((_vector(f8), _vector(i1), _matrix(f8), _matrix(f8), _matrix(f8),
                        _vector(f8)))
    memos_t = _matrix(f8, 3)
    cost_sig = f8(i8, i8, st_t, fc_t, i8, fn_t)  # sep_cost's arguments
    cost_t = types.FunctionType(cost_sig)
    block_sig = types.void(
        i8, i8, i8, _vector(i8), _vector(i8), i8, i8, i8, i8, st_t, fc_t, i8, fn_t, pv_t,
        _vector(f8), _vector(i1), memos_t, f8, _vector(f8), cost_t)
    scan_sig = i8(
        i8, i8, i8, i8, i8, _vector(i8), i8, st_t, fc_t, i8, fn_t, pv_t, _vector(f8), _vector(i1),
        _vector(f8), _vector(i8), _vector(b1), CAND_TYPE, _vector(i8), _vector(f8), _vector(b1),
        _vector(i8), _vector(i8), memos_t, f8, i8, _vector(i8), _vector(f8), _vector(i8),
        _vector(i8), types.FunctionType(block_sig), cost_t)
    return [(_scan, scan_sig), (_block, block_sig), (sep_cost, cost_sig)]


def pointers(st, fc, fn):
    """The C callbacks ``(scan, block, costf)`` of :func:`_scan`, :func:`_block` and
    :func:`.agglomerative.sep_cost` (the merge cost of a separable model, the only kind this
    driver runs) for the types of ``st``, ``fc`` and ``fn`` (compiled or loaded
    from numba's cache on first use, see :func:`.generators.compiled_pointer`): the driver's
    last three arguments. The bounds, the scan and the merge cost are most of the driver's
    code; called through pointers, each is compiled once instead of once in every library that
    calls it (the driver, its two parallel loops, the scan, the list kernels)."""
    if config.DISABLE_JIT:
        return _scan, _block, sep_cost
    return tuple(compiled_pointer(f, sig, _nrt=False)  # no allocation (see NRT_FREE_JIT)
                 for f, sig in pointer_specs(*state_types(st, fc, fn)))
