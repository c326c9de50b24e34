"""Pruned Lloyd passes (Hamerly-type bounds in the GEMM form), exact to the labels of
:mod:`bregclust._kernels.lloyd`.

The assignment is ``argmin_j D_j(x)``, ``D_j(x) = c_j - <x, t_j>`` (the GEMM form without the
common ``phi(x)``). The centres are split into ``G`` groups (``G = 1``: Hamerly, 2010; about
``k / 10``: the global filter of Yinyang k-means, Ding et al., 2015); every row keeps its label
``a`` and, per group ``g``, a lower bound ``lb[g]`` on ``min_{j in g, j != a} D_j(x)``.
When the centres move, ``D_j`` changes by ``dc_j - <x, dt_j>``, which
the driver (:mod:`bregclust._pruned`) bounds per cluster, so a pass only updates ``lb``, evaluates
the row's own score ``D_a`` (one dot product) and skips the ``k`` scores of every row with
``D_a + 2 E < min_g lb[g]``, where ``E`` bounds the rounding error of the score Lloyd's kernel would
compute: the computed argmin of those scores is then ``a`` with no tie possible.

Rows that fail the test get all their scores by the arithmetic of the Lloyd kernels: dense rows
in one BLAS product per batch of failing rows (OpenBLAS gives each row of a product the same
values whichever rows share the call, except a one-row call, which takes ``gemv``: a batch of
one row is padded to two, and the one row Lloyd itself multiplies alone is multiplied alone),
CSR rows by the same row product. The argmin gives Lloyd's label: the lowest index attaining the
smallest score (dense rows with several groups read the scores group by group, four rows at a
time, :func:`_finish_rows`; one group or a CSR row, Lloyd's comparisons in index order). The
per-cluster sums add every row in row order within each thread's block, as Lloyd's kernel does,
so labels, sums and centres are those of Lloyd bit for bit.

Written by hand because no library prunes a Bregman k-means (scikit-learn's Elkan and
every peer prune squared Euclidean distances with the triangle inequality only).
"""

import numpy as np
from numba import njit

from .generators import JIT
from .lloyd import _nearest, _product_csr


# The own score and the distance to the reference point are this module's values, not Lloyd's:
# their rounding is bounded by the same gamma_d for any order of the sum, so LLVM may split
# them over SIMD lanes (in strict order each is a chain of dependent adds).
@njit(**dict(JIT, fastmath={"reassoc", "contract"}))
def _dot_row(X, r, G, a):
    """``<x_r, g_a>`` in float64, added in any order."""
    s = 0.0
    for l in range(X.shape[1]):
        s += np.float64(X[r, l]) * G[a, l]
    return s


@njit(**dict(JIT, fastmath={"reassoc", "contract"}))
def _dot_sqdist_row(X, r, G, U, a):
    """``(<x_r, g_a>, ||x_r - u_a||^2)`` in float64, added in any order, in one read of the
    row (the row comes from memory: two loops read it twice)."""
    x = X[r]
    g = G[a]
    v = U[a]
    s = 0.0
    q = 0.0
    for l in range(x.shape[0]):
        xl = np.float64(x[l])
        s += xl * g[l]
        t = xl - v[l]
        q += t * t
    return s, q


@njit(**JIT)
def _move_bound(lb, shift_m, shift_2, shift_inf, r2, r1, use_l1, u):
    """``lb + shift_m - min(r2 shift_2, r1 shift_inf)`` rounded down (by ``u`` relative);
    ``-inf`` for NaN."""
    s = r2 * shift_2
    if use_l1:
        s1 = r1 * shift_inf
        if s1 < s:
            s = s1
    b = lb + shift_m - s
    b = b - 4.0 * u * (abs(lb) + abs(shift_m) + s)
    return b if b == b else -np.inf  # NaN (inf - inf, k = 1): no bound


@njit(**JIT)
def _safe_low(v, E, u):
    """``v - E`` rounded down; ``-inf`` for NaN."""
    b = v - E - 2.0 * u * abs(v)
    return b if b == b else -np.inf


@njit(**JIT)
def _test_row(r, a, Da, r2, x1r, lb, shift_m, shift_2, shift_inf, use_ref, use_l1, u):
    """Move the ``G`` bounds of row ``r`` (label ``a``) to the new centres by
    :func:`_move_bound`; returns their minimum. The moves in one branch-free loop, the minimum
    in a second one with four chains (the two together vectorise; 40 -> 30 ns per row at
    G = 25 in a micro-benchmark, the rest is reading and writing ``lb``)."""
    am = a if use_ref else 0
    row = lb[r]
    sm = shift_m[am]
    ng = row.shape[0]
    for g in range(ng):
        row[g] = _move_bound(row[g], sm[g], shift_2[g], shift_inf[g], r2, x1r, use_l1, u)
    l0 = np.inf
    l1 = np.inf
    l2 = np.inf
    l3 = np.inf
    g4 = ng // 4 * 4
    for g in range(0, g4, 4):
        b = row[g]
        l0 = b if b < l0 else l0
        b = row[g + 1]
        l1 = b if b < l1 else l1
        b = row[g + 2]
        l2 = b if b < l2 else l2
        b = row[g + 3]
        l3 = b if b < l3 else l3
    for g in range(g4, ng):
        b = row[g]
        l0 = b if b < l0 else l0
    l0 = l1 if l1 < l0 else l0
    l2 = l3 if l3 < l2 else l2
    return l2 if l2 < l0 else l0


@njit(**JIT)
def _second_in_group(c, p, perm, gstart, g, a):
    """The smallest score ``c_j - p_j`` of group ``g`` (centres ``perm[gstart[g]:gstart[g + 1]]``)
    leaving out centre ``a``; ``inf`` when there is none. NaN scores are passed over, as in the
    argmin."""
    sec = np.inf
    for q in range(gstart[g], gstart[g + 1]):
        j = perm[q]
        if j != a:
            v = c[j] - p[j]
            sec = v if v < sec else sec
    return sec


@njit(**JIT)
def _finish_row(p, c, grp, perm, gstart, phi_xi, r, labels, mins, lb, Ei, u, m1):
    """The argmin of Lloyd's kernel on the scores ``c_j - p_j`` of row ``r`` (the same
    comparisons, so the same label and minimum), and the new bounds: per group the smallest
    score, in the group of the label the smallest of the others (scratch ``m1``). One group
    (Hamerly): the second-smallest score, tracked in the same loop."""
    best = np.inf
    bj = 0
    tot = 0.0
    ng = lb.shape[1]
    if ng == 1:
        sec = np.inf
        for j in range(c.shape[0]):
            v = c[j] - p[j]
            tot += v
            if v < best:
                sec = best
                best = v
                bj = j
            elif v < sec:
                sec = v
        m1[0] = sec
    else:
        m1[:] = np.inf
        for j in range(c.shape[0]):
            v = c[j] - p[j]
            tot += v
            if v < best:
                best = v
                bj = j
            g = grp[j]
            a1 = m1[g]
            m1[g] = v if v < a1 else a1
        gb = grp[bj]
        m1[gb] = _second_in_group(c, p, perm, gstart, gb, bj)
    labels[r] = bj
    v = phi_xi + best
    if tot != tot or not (abs(v) < np.inf):
        mins[r] = np.nan
    else:
        mins[r] = v if v > 0.0 else 0.0
    for g in range(ng):
        lb[r, g] = _safe_low(m1[g], Ei, u)


@njit(**JIT)
def _close_row(p, m, tot, r, c, grp, perm, gstart, phi_xi, Ei, u, labels, mins, lb):
    """Row ``r`` of :func:`_finish_rows` from its group minima ``m`` (overwritten) and the sum
    ``tot`` of its scores ``c_j - p_j``: Lloyd's label (the lowest index attaining the smallest
    score, which is what Lloyd's strict ``<`` in index order keeps), its minimum, and the
    bounds of :func:`_finish_row`. A non-finite ``tot`` (NaN, or an infinite score, which
    Lloyd's sum in its own order might have turned into NaN) gives a NaN minimum: the pass then
    falls back to Lloyd's, so it never keeps a row Lloyd's kernel would have flagged."""
    ng = m.shape[0]
    best = np.inf
    for g in range(ng):
        b = m[g]
        best = b if b < best else best
    bj = 0
    if best < np.inf:
        bj = c.shape[0]
        for g in range(ng):
            if m[g] == best:
                for q in range(gstart[g], gstart[g + 1]):
                    j = perm[q]
                    if j < bj and c[j] - p[j] == best:
                        bj = j
    labels[r] = bj
    ga = grp[bj]
    m[ga] = _second_in_group(c, p, perm, gstart, ga, bj)
    v = phi_xi + best
    if not (abs(tot) < np.inf) or not (abs(v) < np.inf):
        mins[r] = np.nan
    else:
        mins[r] = v if v > 0.0 else 0.0
    for g in range(ng):
        lb[r, g] = _safe_low(m[g], Ei, u)


@njit(**JIT)
def _finish_rows(P, q, rows, c, grp, perm, gstart, phi_x, xn, rho, TN, CN, u, labels, mins, lb,
                 M):
    """:func:`_finish_row` for the rows ``rows[:q]`` of the product block ``P`` (several
    groups): the scores are read group by group (through ``perm``), four rows at a time (four
    independent chains of minima and sums), giving every group's minimum in one read of the
    scores; :func:`_close_row` then finds the label among the groups that hold the smallest
    score (scratch ``M``, 4 x G)."""
    ng = gstart.shape[0] - 1
    q4 = q // 4 * 4
    for i in range(0, q4, 4):
        p0 = P[i]
        p1 = P[i + 1]
        p2 = P[i + 2]
        p3 = P[i + 3]
        t0 = 0.0
        t1 = 0.0
        t2 = 0.0
        t3 = 0.0
        for g in range(ng):
            b0 = np.inf
            b1 = np.inf
            b2 = np.inf
            b3 = np.inf
            for s in range(gstart[g], gstart[g + 1]):
                j = perm[s]
                cj = c[j]
                v0 = cj - p0[j]
                v1 = cj - p1[j]
                v2 = cj - p2[j]
                v3 = cj - p3[j]
                t0 += v0
                t1 += v1
                t2 += v2
                t3 += v3
                b0 = v0 if v0 < b0 else b0
                b1 = v1 if v1 < b1 else b1
                b2 = v2 if v2 < b2 else b2
                b3 = v3 if v3 < b3 else b3
            M[0, g] = b0
            M[1, g] = b1
            M[2, g] = b2
            M[3, g] = b3
        for h, t in ((0, t0), (1, t1), (2, t2), (3, t3)):
            r = rows[i + h]
            _close_row(P[i + h], M[h], t, r, c, grp, perm, gstart, phi_x[r],
                       rho * (xn[r] * TN + CN), u, labels, mins, lb)
    for i in range(q4, q):
        p0 = P[i]
        t0 = 0.0
        for g in range(ng):
            b0 = np.inf
            for s in range(gstart[g], gstart[g + 1]):
                j = perm[s]
                v0 = c[j] - p0[j]
                t0 += v0
                b0 = v0 if v0 < b0 else b0
            M[0, g] = b0
        r = rows[i]
        _close_row(p0, M[0], t0, r, c, grp, perm, gstart, phi_x[r], rho * (xn[r] * TN + CN), u,
                   labels, mins, lb)


@njit(**JIT)
def pruned_block_dense(X, phi_x, GT, G, c, grp, perm, gstart, w, xn, x1, lb, labels, shift_m,
                       shift_2, shift_inf, U0, use_ref, use_l1, rho, gam, TN, CN, lim, chunk, mins,
                       St, Wt, s0, e0):
    """One pruned Lloyd pass over the dense rows ``s0..e0-1`` (one block of
    :func:`bregclust._execution.fused_pass`; the caller runs the blocks on its threads): in/out
    ``labels`` and ``lb`` (n x G); OUT ``mins`` and the block's sums ``St``/``Wt``, as
    :func:`bregclust._kernels.lloyd.lloyd_step_dense` adds them. Returns ``(objective, rows
    whose scores were all evaluated)``.

    ``G`` (k x d, float64) gives the own score ``c_a - <x, g_a>``; ``GT`` (d x k, in the data's
    type) the full product; ``grp[j]`` is the group of centre ``j``. The bound of row ``i`` for
    group ``g`` moves by ``shift_m[a or 0, g] - min(r2_i shift_2[g], x1_i shift_inf[g])``
    where ``r2_i = ||x_i - U0[a]||`` (``use_ref``) or ``xn_i = ||x_i||``;
    ``rho (xn_i TN + CN)`` bounds the rounding of a score; rows with ``xn_i TN >= lim`` are
    never skipped (a float32 product could overflow).
    """
    n, d = X.shape
    k = GT.shape[1]
    ng = lb.shape[1]
    u = 1.1102230246251565e-16
    idx = np.empty(e0 - s0, np.int64)
    nrec = 0
    for r in range(s0, e0):
        a = labels[r]
        if use_ref:
            dot, sq = _dot_sqdist_row(X, r, G, U0, a)
            r2 = np.sqrt(sq) * (1.0 + gam)
        else:
            dot = _dot_row(X, r, G, a)
            r2 = xn[r]
        Da = c[a] - dot
        low = _test_row(r, a, Da, r2, x1[r], lb, shift_m, shift_2, shift_inf, use_ref, use_l1,
                        u)
        scale = xn[r] * TN
        Ei = rho * (scale + CN)
        m = phi_x[r] + Da
        if Da + 2.0 * Ei < low and scale < lim and abs(m) < np.inf:
            mins[r] = m if m > 0.0 else 0.0
        else:
            idx[nrec] = r
            nrec += 1
    # every failing row by Lloyd's arithmetic
    single = e0 - 1 if (e0 - s0) % chunk == 1 else -1
    buf = np.empty((chunk, d), X.dtype)
    P = np.empty((chunk, k), X.dtype)
    rows = np.empty(chunk, np.int64)
    m1 = np.empty(ng)
    M = np.empty((4, ng))
    q = 0
    for p in range(nrec + 1):
        flush = p == nrec
        if not flush:
            r = idx[p]
            if r == single:  # Lloyd multiplied this row alone (gemv): so do we
                np.dot(X[r:r + 1], GT, P[:1])
                _finish_row(P[0], c, grp, perm, gstart, phi_x[r], r, labels, mins, lb,
                            rho * (xn[r] * TN + CN), u, m1)
                continue
            buf[q] = X[r]
            rows[q] = r
            q += 1
            flush = q == chunk
        if flush and q > 0:
            m = q
            if m == 1:  # a one-row product would take gemv, not Lloyd's gemm
                buf[1] = buf[0]
                m = 2
            np.dot(buf[:m], GT, P[:m])
            if ng > 1:  # four rows at a time, group by group
                _finish_rows(P, q, rows, c, grp, perm, gstart, phi_x, xn, rho, TN, CN, u,
                             labels, mins, lb, M)
            else:  # one group (Hamerly): the two smallest scores in one read, row by row (a
                # four-row version: at most 5% of the fit, 1.3 s more compilation; not kept)
                for i in range(q):
                    r = rows[i]
                    _finish_row(P[i], c, grp, perm, gstart, phi_x[r], r, labels, mins, lb,
                                rho * (xn[r] * TN + CN), u, m1)
            q = 0
    # the sums in row order, as lloyd._lloyd_block adds them
    obj = 0.0
    for r in range(s0, e0):
        bj = labels[r]
        wi = w[r]
        Wt[bj] += wi
        obj += wi * mins[r]
        for l in range(d):
            St[bj, l] += wi * X[r, l]
    return obj, nrec


@njit(**JIT)
def pruned_rows_csr(data, indices, indptr, phi_x, GT, G, c, grp, perm, gstart, w, xn, x1, lb,
                    labels, shift_m, shift_2, shift_inf, use_l1, rho, TN, CN, mins, St, Wt, r0,
                    r1):
    """:func:`pruned_block_dense` for the CSR rows ``r0..r1-1`` (no reference point:
    ``r2_i = ||x_i||``); the failing rows take
    :func:`bregclust._kernels.lloyd.lloyd_step_csr`'s row product. Returns ``(objective, rows
    recomputed)``."""
    u = 1.1102230246251565e-16
    acc = np.empty(GT.shape[1])
    m1 = np.empty(lb.shape[1])
    obj = 0.0
    nrec = 0
    for r in range(r0, r1):
        a = labels[r]
        g = 0.0
        for p in range(indptr[r], indptr[r + 1]):
            g += data[p] * G[a, indices[p]]
        Da = c[a] - g
        low = _test_row(r, a, Da, xn[r], x1[r], lb, shift_m, shift_2, shift_inf, False, use_l1,
                        u)
        Ei = rho * (xn[r] * TN + CN)
        m = phi_x[r] + Da
        if Da + 2.0 * Ei < low and abs(m) < np.inf:
            mins[r] = m if m > 0.0 else 0.0
        else:
            _product_csr(data, indices, indptr, GT, r, acc)
            _finish_row(acc, c, grp, perm, gstart, phi_x[r], r, labels, mins, lb, Ei, u, m1)
            nrec += 1
        bj = labels[r]
        wi = w[r]
        Wt[bj] += wi
        obj += wi * mins[r]
        for p in range(indptr[r], indptr[r + 1]):
            St[bj, indices[p]] += wi * data[p]
    return obj, nrec


# --------------------------------------------------------------------------- cached score columns
@njit(**JIT)
def cached_rows_csr(data, indices, indptr, phi_x, GTm, moved, c, w, P, labels, mins, St, Wt, r0,
                    r1, acc):
    """One Lloyd pass over the CSR rows ``r0..r1-1`` that recomputes only the product columns
    of the centres that moved: in/out ``P`` (n x k, the products ``<x_i, g_j>`` of the previous
    pass), ``GTm`` (p x m) the columns ``moved`` of ``G^T``, ``acc`` (m,) scratch; OUT
    ``labels``, ``mins`` and the block's sums ``St``/``Wt``, as
    :func:`bregclust._kernels.lloyd.lloyd_step_csr` with the same blocks of rows, the same
    argmin and the same sums: its results bit for bit. Returns ``sum_r w_r mins_r``."""
    m = moved.shape[0]
    obj = 0.0
    for r in range(r0, r1):
        # the product of lloyd._product_csr for the moved columns only: each column is the
        # same sum over the same stored entries in the same order, so the same value. Written
        # out rather than called: calling _product_csr here measured slower on 20 Newsgroups
        # (kl, k = 256, best cached fit 2.11-2.42 s against 1.80-1.85 s inline, one thread)
        acc[:] = 0.0
        for p in range(indptr[r], indptr[r + 1]):
            v = data[p]
            g = GTm[indices[p]]
            for q in range(m):
                acc[q] += v * g[q]
        Pr = P[r]
        for q in range(m):
            Pr[moved[q]] = acc[q]
        bj = _nearest(Pr, c, phi_x[r], r, labels, mins)
        wi = w[r]
        Wt[bj] += wi
        obj += wi * mins[r]
        for p in range(indptr[r], indptr[r + 1]):
            St[bj, indices[p]] += wi * data[p]
    return obj


# --------------------------------------------------------------------------------------------
# Sparse gradient changes (``algorithm="cached"``, passes after the first)
#
# For kl with smoothing, a centre whose members changed keeps ``u'_f / u_f = (W + beta) /
# (W' + beta)`` on every term its moved rows do not contain, so its gradient moves by one
# constant ``delta_j`` there: ``t'_j - t_j = delta_j + e_j`` with ``e_j`` nonzero on a few
# terms. The decomposition is found from the numbers (nothing is assumed of the divergence): a
# centre whose ``e_j`` is not sparse is recomputed exactly, as before.


@njit(**JIT)
def sparse_change(Gn, Go, moved, dense_max, u):
    """Split the gradient change of each centre in ``moved`` into a constant and a sparse part.

    ``Gn``/``Go`` (k x d) the new and previous gradients, ``moved`` (m,) the centres whose row
    changed, ``dense_max`` the most nonzeros a sparse part may have, ``u`` the unit roundoff.
    For each moved centre ``j``: ``delta_j`` the median of ``Gn[j] - Go[j]`` over 63 evenly
    spread terms; ``e_jf`` the computed ``(Gn[jf] - Go[jf]) - delta_j``, kept where it exceeds
    ``16 u (|Gn[jf]| + |Go[jf]|)`` (a term whose two values differ by the constant up to the
    rounding of the generator stays below it) and dropped elsewhere. A centre with more than
    ``dense_max`` kept terms, or a non-finite value, is "dense" (its column is recomputed
    exactly for every row). One pass over the moved rows of ``Gn`` and ``Go``.

    Returns ``(sq, delta, eptr, eq, ev, eps, dq, tabs)``: ``sq`` the sparse centres, ``delta``
    their constants, ``eptr`` (d + 1), ``eq``, ``ev`` the kept ``e`` by term (term ``f``'s
    entries ``eptr[f]:eptr[f + 1]``: index into ``sq`` and value, ascending in the index),
    ``dq`` the dense centres, ``eps`` an upper bound, over the sparse centres and terms, of
    ``|(Gn_jf - Go_jf) - delta_j - e_jf|`` in exact arithmetic (the dropped values plus every
    rounding of the split), and ``tabs`` (m,) ``max_f |Gn[jf]|`` of every moved centre.
    """
    m = moved.shape[0]
    d = Gn.shape[1]
    ns = min(63, d)
    sample = np.empty(ns)
    tabs = np.zeros(m)
    dense = np.zeros(m, dtype=np.bool_)
    dl_all = np.zeros(m)
    cap = 1024
    ef = np.empty(cap, dtype=np.int64)
    eqq = np.empty(cap, dtype=np.int64)
    evv = np.empty(cap)
    ne = 0
    eps = 0.0
    ns_ = 0
    for q in range(m):
        gn = Gn[moved[q]]
        go = Go[moved[q]]
        for s in range(ns):
            f = (s * d) // ns
            sample[s] = gn[f] - go[f]
        dl = _median(sample)
        if ne + d > cap:
            cap = 2 * cap + d
            ef = _grow_to(ef, ne, cap)
            eqq = _grow_to(eqq, ne, cap)
            evv = _grow_to(evv, ne, cap)
        mx = 0.0
        ep = 0.0
        start = ne
        ok = abs(dl) < np.inf
        for f in range(d):
            a = abs(gn[f])
            b = abs(go[f])
            mx = max(mx, a)
            df = gn[f] - go[f]
            e = df - dl
            r = u * (abs(df) + abs(e))
            if not (a < np.inf and b < np.inf and abs(e) < np.inf):
                ok = False
            if abs(e) > 16.0 * u * (a + b):
                ef[ne] = f
                evv[ne] = e
                ne += 1
            else:
                r += abs(e)
            ep = max(ep, r)
        tabs[q] = mx if ok else np.inf
        if not ok or ne - start > dense_max:
            dense[q] = True
            ne = start
            continue
        for t in range(start, ne):
            eqq[t] = ns_
        dl_all[ns_] = dl
        ns_ += 1
        eps = max(eps, ep)
    sq = np.empty(ns_, dtype=np.int64)
    dq = np.empty(m - ns_, dtype=np.int64)
    a = 0
    for q in range(m):
        if dense[q]:
            dq[q - a] = moved[q]
        else:
            sq[a] = moved[q]
            a += 1
    eptr = np.zeros(d + 1, dtype=np.int64)
    for t in range(ne):
        eptr[ef[t] + 1] += 1
    for f in range(d):
        eptr[f + 1] += eptr[f]
    fill = np.empty(d, dtype=np.int64)
    for f in range(d):
        fill[f] = eptr[f]
    eq = np.empty(ne, dtype=np.int64)
    ev = np.empty(ne)
    for t in range(ne):
        f = ef[t]
        eq[fill[f]] = eqq[t]
        ev[fill[f]] = evv[t]
        fill[f] += 1
    return sq, _grow_to(dl_all, ns_, ns_), eptr, eq, ev, eps * (1.0 + 8.0 * u), dq, tabs


@njit(**JIT)
def _median(a):
    """The middle value of ``a`` (sorted in place by insertion: at most 63 values; numba's
    ``sort`` would add seconds to a cold first fit's compilation)."""
    for i in range(1, a.shape[0]):
        v = a[i]
        j = i - 1
        while j >= 0 and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v
    return a[a.shape[0] // 2]


@njit(**JIT)
def _grow_to(a, m, cap):
    """``a`` (its first ``m`` values) in an array of ``cap`` values."""
    b = np.empty(cap, dtype=a.dtype)
    for i in range(m):  # a loop: numba compiles a slice assignment for seconds
        b[i] = a[i]
    return b


@njit(**JIT)
def _grow(a, m):
    """``a`` (its first ``m`` values) in an array twice as long."""
    return _grow_to(a, m, 2 * a.shape[0] + 16)


@njit(**JIT)
def _candidates(c, Pr, thr, exr, cj, need, nc, nn):
    """Append to ``cj`` the centres whose cached score ``c_j - Pr_j`` is at most ``thr`` (and
    to ``need`` the positions of those whose product is not Lloyd's value yet); room for ``k``
    more in each. Returns the new counts."""
    for j in range(c.shape[0]):
        if c[j] - Pr[j] <= thr:
            cj[nc] = j
            if not exr[j]:
                need[nn] = nc
                nn += 1
            nc += 1
    return nc, nn


@njit(**JIT)
def sparse_rows_csr(data, indices, indptr, phi_x, x1, xs, G, c, w, P, ex, err, labels, mins,
                    St, Wt, r0, r1, sq, delta, eptr, eq, ev, eps, dq, GTd, tmax, u, stats):
    """One Lloyd pass over the CSR rows ``r0..r1-1`` from a score cache that holds bounds.

    IN/OUT ``P`` (n x k): ``P[i, j]`` within ``err[i]`` of the exact product ``<x_i, g_j>``
    (real arithmetic on the stored ``G``); IN/OUT ``ex`` (n x k, uint8) marks the entries of
    ``P`` that are the value of Lloyd's row product for the present ``G``. Each row first updates its cache: the centres
    ``dq`` (dense change) by Lloyd's row product with their columns ``GTd`` (d x len(dq)),
    the centres ``sq`` (sparse change) by ``P + delta s_i + <x_i, e>`` with ``s_i`` the row
    sum, ``e`` the kept sparse parts by term (``eptr``, ``eq``, ``ev``, see
    :func:`sparse_change`), and ``err[i]`` grows by ``eps ||x_i||_1`` plus the rounding of the
    update. Then every centre whose cached score ``c_j - P[i, j]`` lies within twice the
    margin ``M`` of the smallest one is recomputed by Lloyd's row product (the same sum over
    the same stored entries in the same order, so Lloyd's value), and the label is the
    lowest index attaining the smallest recomputed score (an entry marked in ``ex`` is Lloyd's
    value already and is read, not recomputed), the minimum ``phi_x + score`` clamped
    at 0, as :func:`bregclust._kernels.lloyd._nearest`. ``M`` bounds the distance of a cached
    score from the score Lloyd's kernel computes (``err[i]``, the rounding ``gamma_nnz
    ||x_i||_1 tmax`` of Lloyd's product, ``tmax >= max |G|``, and of the subtraction), so a
    centre left out scores above the recomputed minimum in Lloyd's arithmetic, strictly: the
    label and minimum are Lloyd's, ties included. A non-finite cached score makes the row's
    minimum NaN (the caller then runs Lloyd's pass). ``x1`` bounds ``||x_i||_1`` from above.
    The sums as :func:`cached_rows_csr`. ``stats[0]`` counts the recomputed products.
    Returns ``sum_r w_r mins_r``."""
    k = c.shape[0]
    ms = sq.shape[0]
    md = dq.shape[0]
    acc = np.zeros(ms)
    accd = np.zeros(md)
    dmax = 0.0
    for q in range(ms):
        if abs(delta[q]) > dmax:
            dmax = abs(delta[q])
    emax = 0.0
    for e in range(ev.shape[0]):
        if abs(ev[e]) > emax:
            emax = abs(ev[e])
    obj = 0.0
    nr = r1 - r0
    cstart = np.zeros(nr + 1, dtype=np.int64)
    cj = np.empty(2 * nr + k, dtype=np.int64)  # candidates, row by row (centres ascending)
    need = np.empty(nr + k, dtype=np.int64)  # the candidates whose product is recomputed
    bad = np.zeros(nr, dtype=np.bool_)
    nc = 0
    nn = 0
    for r in range(r0, r1):
        p0 = indptr[r]
        p1 = indptr[r + 1]
        nz = p1 - p0
        gm = (nz + 4) * u / (1.0 - (nz + 4) * u)
        Pr = P[r]
        if md > 0:
            accd[:] = 0.0
            for p in range(p0, p1):
                v = data[p]
                g = GTd[indices[p]]
                for q in range(md):
                    accd[q] += v * g[q]
            for q in range(md):
                Pr[dq[q]] = accd[q]
                ex[r, dq[q]] = 1
        er = err[r]
        if ms > 0:
            acc[:] = 0.0
            for p in range(p0, p1):
                v = data[p]
                for e in range(eptr[indices[p]], eptr[indices[p] + 1]):
                    acc[eq[e]] += v * ev[e]
            s = xs[r]
            pm = 0.0
            for q in range(ms):
                j = sq[q]
                old = Pr[j]
                new = (old + delta[q] * s) + acc[q]
                Pr[j] = new
                ex[r, j] = 0
                pm = max(pm, abs(old), abs(new))
            er = er + x1[r] * (eps + gm * (dmax + emax)) + 4.0 * u * pm
        lerr = gm * x1[r] * tmax
        vmin = np.inf
        vabs = 0.0
        tot = 0.0
        for j in range(k):
            v = c[j] - Pr[j]
            tot += v
            if v < vmin:
                vmin = v
            if abs(v) > vabs:
                vabs = abs(v)
        marg = 2.0 * (er + lerr) + 4.0 * u * (vabs + er + lerr)
        thr = vmin + 2.0 * marg
        thr += 4.0 * u * abs(thr)
        bad[r - r0] = (tot != tot or not (abs(tot) < np.inf) or vabs > 1e290)
        err[r] = max(er, lerr)
        if nc + k > cj.shape[0]:
            cj = _grow(cj, nc)
        if nn + k > need.shape[0]:
            need = _grow(need, nn)
        nc, nn = _candidates(c, Pr, thr, ex[r], cj, need, nc, nn)
        cstart[r - r0 + 1] = nc
    # the candidates' exact products, centre by centre (each centre's gradient row stays in
    # cache while its rows are multiplied; the row's product is the same sum in the same order)
    crow = np.empty(nc, dtype=np.int64)
    for i in range(r1 - r0):
        for q in range(cstart[i], cstart[i + 1]):
            crow[q] = r0 + i
    cnt = np.zeros(k + 1, dtype=np.int64)
    for t in range(nn):
        cnt[cj[need[t]] + 1] += 1
    for j in range(k):
        cnt[j + 1] += cnt[j]
    order = np.empty(nn, dtype=np.int64)
    for t in range(nn):
        j = cj[need[t]]
        order[cnt[j]] = need[t]
        cnt[j] += 1
    for t in range(nn):
        q = order[t]
        j = cj[q]
        r = crow[q]
        a = 0.0
        gj = G[j]
        for p in range(indptr[r], indptr[r + 1]):
            a += data[p] * gj[indices[p]]
        P[r, j] = a
        ex[r, j] = 1
    for i in range(r1 - r0):
        r = r0 + i
        Pr = P[r]
        best = np.inf
        bj = 0
        tb = 0.0
        for q in range(cstart[i], cstart[i + 1]):
            j = cj[q]
            v = c[j] - Pr[j]
            tb += v
            if v < best:
                best = v
                bj = j
        labels[r] = bj
        v = phi_x[r] + best
        if bad[i] or tb != tb or not (abs(v) < np.inf):
            mins[r] = np.nan
        else:
            mins[r] = v if v > 0.0 else 0.0
        wi = w[r]
        Wt[bj] += wi
        obj += wi * mins[r]
        for p in range(indptr[r], indptr[r + 1]):
            St[bj, indices[p]] += wi * data[p]
    stats[0] += nn
    return obj
