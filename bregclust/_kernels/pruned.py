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
so labels, sums and centres are those of Lloyd bit for bit. Dense float64 rows that fail the
test are first scored in float32 (:func:`_filter_rows32`): only those whose label the float32
scores cannot prove, with their rounding error bounded, take Lloyd's float64 product.

Written by hand because no library prunes a Bregman k-means (scikit-learn's Elkan and
every peer prune squared Euclidean distances with the triangle inequality only).
"""

import numpy as np
from numba import njit

from .generators import JIT
from .lloyd import _nearest, _product_csr

#: Rows per span of :func:`pruned_block_dense` (tested, scored, summed while in cache).
SPAN = 1024


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
    if v == np.inf:  # no score in the group (a group of one centre, the label): no bound
        return v
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
    if not (abs(tot) < np.inf) or not (abs(v) < np.inf):  # as _close_row: an infinite score
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
                       St, Wt, s0, e0, X32, GT32, kap, eta):
    """One pruned Lloyd pass over the dense rows ``s0..e0-1`` (one block of
    :func:`bregclust._execution.fused_pass`; the caller runs the blocks on its threads): in/out
    ``labels`` and ``lb`` (n x G); OUT ``mins`` and the block's sums ``St``/``Wt``, as
    :func:`bregclust._kernels.lloyd.lloyd_step_dense` adds them. Returns ``(objective, rows
    whose scores were all evaluated, those of them multiplied in float64)``.

    ``G`` (k x d, float64) gives the own score ``c_a - <x, g_a>``; ``GT`` (d x k, in the data's
    type) the full product; ``grp[j]`` is the group of centre ``j``. The bound of row ``i`` for
    group ``g`` moves by ``shift_m[a or 0, g] - min(r2_i shift_2[g], x1_i shift_inf[g])``
    where ``r2_i = ||x_i - U0[a]||`` (``use_ref``) or ``xn_i = ||x_i||``;
    ``rho (xn_i TN + CN)`` is twice the bound of the rounding of a score (it bounds the
    rounding of a difference of two scores); rows with ``xn_i TN >= lim`` are
    never skipped (a float32 product could overflow). With ``X32`` holding the rows (n x
    (d + 1), see :func:`_filter_rows32`; 0 rows: not used) the failing rows are scored in
    float32 first, and only those whose label the float32 scores cannot prove take Lloyd's
    float64 product.
    """
    n, d = X.shape
    k = GT.shape[1]
    ng = lb.shape[1]
    u = 1.1102230246251565e-16
    # rows in spans of SPAN: a span's rows are still in cache when its failing rows are
    # scored and when its sums are added
    idx = np.empty(min(e0 - s0, SPAN), np.int64)
    single = e0 - 1 if (e0 - s0) % chunk == 1 else -1
    buf = np.empty((chunk, d), X.dtype)
    P = np.empty((chunk, k), X.dtype)
    rows = np.empty(chunk, np.int64)
    m1 = np.empty(ng)
    M = np.empty((4, ng))
    obj = 0.0
    nall = 0
    n64 = 0
    for sb in range(s0, e0, SPAN):
        se = min(e0, sb + SPAN)
        nrec = 0
        for r in range(sb, se):
            a = labels[r]
            if use_ref:
                dot, sq = _dot_sqdist_row(X, r, G, U0, a)
                r2 = np.sqrt(sq) * (1.0 + gam)
            else:
                dot = _dot_row(X, r, G, a)
                r2 = xn[r]
            Da = c[a] - dot
            low = _test_row(r, a, Da, r2, x1[r], lb, shift_m, shift_2, shift_inf, use_ref,
                            use_l1, u)
            scale = xn[r] * TN
            Ei = rho * (scale + CN)
            m = phi_x[r] + Da
            if Da + 2.0 * Ei < low and scale < lim and abs(m) < np.inf:
                mins[r] = m if m > 0.0 else 0.0
            else:
                idx[nrec] = r
                nrec += 1
        nall += nrec
        if X32.shape[0] > 0 and nrec > 0:  # the float32 filter: near ties go on in float64
            nrec = _filter_rows32(X32, idx, nrec, GT32, perm, gstart, X, G, c, phi_x, xn, TN,
                                  CN, kap, eta, rho, chunk, labels, mins, lb, idx)
        n64 += nrec
        # every failing row left by Lloyd's arithmetic
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
                else:  # one group (Hamerly): the two smallest scores in one read, row by row
                    # (a four-row version: at most 5% of the fit, 1.3 s more compilation)
                    for i in range(q):
                        r = rows[i]
                        _finish_row(P[i], c, grp, perm, gstart, phi_x[r], r, labels, mins, lb,
                                    rho * (xn[r] * TN + CN), u, m1)
                q = 0
        # the sums in row order, as lloyd._lloyd_block adds them
        for r in range(sb, se):
            bj = labels[r]
            wi = w[r]
            Wt[bj] += wi
            obj += wi * mins[r]
            for l in range(d):
                St[bj, l] += wi * X[r, l]
    return obj, nall, n64


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
                    r1, acc, prev, stay, sums):
    """One Lloyd pass over the CSR rows ``r0..r1-1`` that recomputes only the product columns
    of the centres that moved: in/out ``P`` (n x k, the products ``<x_i, g_j>`` of the previous
    pass), ``GTm`` (p x m) the columns ``moved`` (increasing) of ``G^T``, ``acc`` (m,) scratch;
    OUT ``labels``, ``mins``, ``Wt`` and (``sums``) the block's sums ``St``, as
    :func:`bregclust._kernels.lloyd.lloyd_step_csr` with the same blocks of rows, the same
    argmin and the same sums: its results bit for bit. Returns ``sum_r w_r mins_r``.

    ``prev`` (n,): the labels of the previous pass, every one of whose minima was finite (an
    empty array: none). A row whose previous centre ``a`` did not move (``stay[a]``) compares
    ``D_a`` with the moved centres' scores only: the unmoved scores are those of the previous
    pass, where ``a`` was the first index of the smallest, and none of them was NaN or
    ``-inf``, so the first index of the smallest score is the smaller of ``a`` and the moved
    winner at equal scores, and the minimum is NaN exactly when Lloyd's full scan makes it
    NaN (a NaN or ``-inf`` among the moved scores, or a non-finite minimum). Every other row
    scans its ``k`` scores as Lloyd's kernel does. With ``m = k`` (every centre), the
    products go straight into ``P``'s row."""
    m = moved.shape[0]
    k = c.shape[0]
    use_prev = prev.shape[0] > 0
    obj = 0.0
    for r in range(r0, r1):
        Pr = P[r]
        # the product of lloyd._product_csr for the moved columns only: each column is the
        # same sum over the same stored entries in the same order, so the same value. Written
        # out rather than called: calling _product_csr here measured slower on 20 Newsgroups
        # (kl, k = 256, best cached fit 2.11-2.42 s against 1.80-1.85 s inline, one thread)
        if m == k:
            for q in range(k):
                Pr[q] = 0.0
            for p in range(indptr[r], indptr[r + 1]):
                v = data[p]
                g = GTm[indices[p]]
                for q in range(k):
                    Pr[q] += v * g[q]
        else:
            for q in range(m):
                acc[q] = 0.0
            for p in range(indptr[r], indptr[r + 1]):
                v = data[p]
                g = GTm[indices[p]]
                for q in range(m):
                    acc[q] += v * g[q]
            for q in range(m):
                Pr[moved[q]] = acc[q]
        if use_prev and stay[prev[r]]:
            bj = prev[r]
            best = c[bj] - Pr[bj]
            tot = 0.0
            for q in range(m):
                j = moved[q]
                v = c[j] - acc[q]
                tot += v
                if v < best or (v == best and j < bj):
                    best = v
                    bj = j
            labels[r] = bj
            v = phi_x[r] + best
            if tot != tot or not (abs(v) < np.inf):
                mins[r] = np.nan
            else:
                mins[r] = v if v > 0.0 else 0.0
        else:
            bj = _nearest(Pr, c, phi_x[r], r, labels, mins)
        wi = w[r]
        Wt[bj] += wi
        obj += wi * mins[r]
        if sums:
            for p in range(indptr[r], indptr[r + 1]):
                St[bj, indices[p]] += wi * data[p]
    return obj


@njit(**JIT)
def cluster_sums_csr(data, indices, indptr, w, labels, changed, St, r0, r1):
    """IN/OUT ``St[j] += sum_r w_r x_r`` over the CSR rows ``r0..r1-1`` with ``changed[labels_r]``,
    in row order and with the arithmetic of :func:`bregclust._kernels.lloyd.lloyd_step_csr`'s
    sums: on rows ``St[j]`` that start at zero, Lloyd's sums of those clusters bit for bit."""
    for r in range(r0, r1):
        bj = labels[r]
        if changed[bj]:
            wi = w[r]
            for p in range(indptr[r], indptr[r + 1]):
                St[bj, indices[p]] += wi * data[p]


# --------------------------------------------------------------------------- float32 filter
@njit(**JIT)
def _filter_rows32(X32, idx, nrec, GT32, perm, gstart, X, G, c, phi_x, xn, TN, CN, kap, eta,
                   rho, chunk, labels, mins, lb, rest):
    """The failing rows ``idx[:nrec]`` of :func:`pruned_block_dense` scored in float32 first.

    ``X32`` (n x (d + 1), float32) holds the rows and a last column of ones, ``GT32``
    (k x (d + 1), float32) the centres ``g_j`` with ``-c_j`` last, in group order (row ``q`` is
    centre ``perm[q]``), so that one float32 product per batch of rows gives ``-v``, ``v`` the
    float32 scores, with ``|v_q - D_j(x)| <= E32 = kap (xn TN + CN) + eta (2 + TN + xn)``
    (``kap = gamma_{d+3}`` of float32: the conversions and the ``d + 1`` products and sums in
    any order; ``eta`` the absolute error of an underflow, or of subnormals flushed to zero). The product is laid out centre by
    centre (k x rows), so every group maximum is a run of elementwise maxima over the rows of
    the batch (SIMD), and so are the two largest group maxima. A row whose smallest float32
    score beats every other one by more than ``2 E32 + rho (xn TN + CN)`` (twice the float32
    error, twice the error of the float64 score Lloyd's kernel computes) has Lloyd's label
    beyond doubt: it is kept, with its own score in float64 (its minimum, as for a skipped
    row) and its bounds from the float32 group minima less ``E32``. Every other row (a near
    tie, a score beyond float32's range) is written to ``rest`` (which may be ``idx``: it is
    read ahead of every write) for Lloyd's float64 product; returns their count."""
    k, d1 = GT32.shape
    ng = gstart.shape[0] - 1
    u = 1.1102230246251565e-16
    bflat = np.empty(d1 * chunk, np.float32)
    pflat = np.empty(k * chunk, np.float32)
    HI = np.empty((ng, chunk), np.float32)
    t1 = np.empty(chunk, np.float32)
    t2 = np.empty(chunk, np.float32)
    gb = np.empty(chunk, np.int64)
    rows = np.empty(chunk, np.int64)
    nrest = 0
    for s in range(0, nrec, chunk):
        q = min(nrec, s + chunk) - s
        buf = bflat[:d1 * q].reshape((q, d1))  # contiguous blocks for the BLAS call
        PT = pflat[:k * q].reshape((k, q))
        for i in range(q):
            r = idx[s + i]
            rows[i] = r
            x = X32[r]
            b = buf[i]
            for l in range(d1):
                b[l] = x[l]
        np.dot(GT32, buf.T, PT)
        for g in range(ng):  # group maxima of -v: elementwise over the rows
            h = HI[g]
            q0 = gstart[g]
            p = PT[q0]
            for i in range(q):
                h[i] = p[i]
            for t in range(q0 + 1, gstart[g + 1]):
                p = PT[t]
                for i in range(q):
                    v = p[i]
                    h[i] = v if v > h[i] else h[i]
        for i in range(q):
            t1[i] = -np.inf
            t2[i] = -np.inf
            gb[i] = -1
        for g in range(ng):  # the two largest group maxima and the first group of the largest
            h = HI[g]
            for i in range(q):
                v = h[i]
                a1 = t1[i]
                lo = v if v < a1 else a1
                t2[i] = lo if lo > t2[i] else t2[i]
                gb[i] = g if v > a1 else gb[i]
                t1[i] = v if v > a1 else a1
        for i in range(q):
            r = rows[i]
            scale = xn[r] * TN + CN
            top = np.float64(t1[i])
            g0 = gb[i]
            ok = g0 >= 0 and scale * (d1 + 1) < 1e37 and abs(top) < np.inf
            bq = -1
            sec = -np.inf
            if ok:  # the label's group: its first maximum and the largest other score
                for t in range(gstart[g0], gstart[g0 + 1]):
                    v = np.float64(PT[t, i])
                    if bq < 0 and v == top:
                        bq = t
                    elif v > sec:
                        sec = v
                second = np.float64(t2[i])
                second = sec if sec > second else second
                E32 = kap * scale + eta * (2.0 + TN + xn[r])
                margin = 2.0 * E32 + rho * scale
                ok = bq >= 0 and top - second > margin * (1.0 + 4.0 * u) + 4.0 * u * abs(top)
            if ok:
                a = perm[bq]
                Da = c[a] - _dot_row(X, r, G, a)
                m = phi_x[r] + Da
                ok = abs(m) < np.inf
            if not ok:
                rest[nrest] = r
                nrest += 1
                continue
            labels[r] = a
            mins[r] = m if m > 0.0 else 0.0
            for g in range(ng):
                lb[r, g] = _safe_low(-np.float64(HI[g, i]), E32, u)
            lb[r, g0] = _safe_low(-sec, E32, u)
    return nrest
