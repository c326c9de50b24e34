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
CSR rows by the same row product; the argmin runs the same comparisons in the same order. The
per-cluster sums add every row in row order within each thread's block, as Lloyd's kernel does,
so labels, sums and centres are those of Lloyd bit for bit.

Written by hand because no library prunes a Bregman k-means (scikit-learn's Elkan and
every peer prune squared Euclidean distances with the triangle inequality only).
"""

import numpy as np
from numba import njit, prange

from .generators import JIT, PJIT
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
def _sqdist_row(X, r, U, a):
    """``||x_r - u_a||^2`` in float64, added in any order."""
    s = 0.0
    for l in range(X.shape[1]):
        t = np.float64(X[r, l]) - U[a, l]
        s += t * t
    return s


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
    """Move the ``G`` bounds of row ``r`` (label ``a``) to the new centres; returns their
    minimum."""
    am = a if use_ref else 0
    low = np.inf
    for g in range(lb.shape[1]):
        b = _move_bound(lb[r, g], shift_m[am, g], shift_2[g], shift_inf[g], r2, x1r, use_l1, u)
        lb[r, g] = b
        if b < low:
            low = b
    return low


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
        sec = np.inf
        for q in range(gstart[gb], gstart[gb + 1]):
            j = perm[q]
            if j != bj:
                v = c[j] - p[j]
                sec = v if v < sec else sec
        m1[gb] = sec
    labels[r] = bj
    v = phi_xi + best
    if tot != tot or not (abs(v) < np.inf):
        mins[r] = np.nan
    else:
        mins[r] = v if v > 0.0 else 0.0
    for g in range(ng):
        lb[r, g] = _safe_low(m1[g], Ei, u)


@njit(**JIT)
def _pruned_block_dense(X, phi_x, GT, G, c, grp, perm, gstart, w, xn, x1, lb, labels, shift_m,
                        shift_2, shift_inf, U0, use_ref, use_l1, rho, gam, TN, CN, lim, chunk, mins,
                        St, Wt, s0, e0):
    """Rows ``s0..e0-1`` of :func:`pruned_step_dense`; returns ``(objective, rows recomputed)``."""
    n, d = X.shape
    k = GT.shape[1]
    ng = lb.shape[1]
    u = 1.1102230246251565e-16
    idx = np.empty(e0 - s0, np.int64)
    nrec = 0
    for r in range(s0, e0):
        a = labels[r]
        Da = c[a] - _dot_row(X, r, G, a)
        if use_ref:
            r2 = np.sqrt(_sqdist_row(X, r, U0, a)) * (1.0 + gam)
        else:
            r2 = xn[r]
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
            # row by row: a transposed copy of P (Lloyd's SIMD layout) costs more than the
            # argmin itself here (a power-of-two stride), and the comparisons are the same
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


@njit(**PJIT)
def pruned_step_dense(X, phi_x, GT, G, c, grp, perm, gstart, w, xn, x1, lb, labels, shift_m,
                      shift_2, shift_inf, U0, use_ref, use_l1, rho, gam, TN, CN, lim, chunk, mins,
                      S, W, O, R):
    """One pruned Lloyd pass over dense rows: in/out ``labels`` and ``lb`` (n x G); OUT
    ``mins``, ``S``/``W``/``O`` (one slice per thread, as
    :func:`bregclust._kernels.lloyd.lloyd_step_dense`) and ``R[t]``, the rows whose scores were
    all evaluated.

    ``G`` (k x d, float64) gives the own score ``c_a - <x, g_a>``; ``GT`` (d x k, in the data's
    type) the full product; ``grp[j]`` is the group of centre ``j``. The bound of row ``i`` for
    group ``g`` moves by ``shift_m[a or 0, g] - min(r2_i shift_2[g], x1_i shift_inf[g])``
    where ``r2_i = ||x_i - U0[a]||`` (``use_ref``) or ``xn_i = ||x_i||``;
    ``rho (xn_i TN + CN)`` bounds the rounding of a score; rows with ``xn_i TN >= lim`` are
    never skipped (a float32 product could overflow).
    """
    n = X.shape[0]
    T = S.shape[0]
    per = (n + T - 1) // T
    for t in prange(T):
        o, nr = _pruned_block_dense(X, phi_x, GT, G, c, grp, perm, gstart, w, xn, x1, lb, labels,
                                    shift_m, shift_2, shift_inf, U0, use_ref, use_l1, rho, gam, TN,
                                    CN, lim, chunk, mins, S[t], W[t], t * per,
                                    min(n, (t + 1) * per))
        O[t] = o
        R[t] = nr


@njit(**JIT)
def pruned_step_dense_serial(X, phi_x, GT, G, c, grp, perm, gstart, w, xn, x1, lb, labels, shift_m,
                             shift_2, shift_inf, U0, use_ref, use_l1, rho, gam, TN, CN, lim, chunk,
                             mins, S, W, O, R):
    """:func:`pruned_step_dense` with one block on the calling thread."""
    o, nr = _pruned_block_dense(X, phi_x, GT, G, c, grp, perm, gstart, w, xn, x1, lb, labels,
                                shift_m, shift_2, shift_inf, U0, use_ref, use_l1, rho, gam, TN, CN,
                                lim, chunk, mins, S[0], W[0], 0, X.shape[0])
    O[0] = o
    R[0] = nr


@njit(**JIT)
def _pruned_rows_csr(data, indices, indptr, phi_x, GT, G, c, grp, perm, gstart, w, xn, x1, lb,
                     labels, shift_m, shift_2, shift_inf, use_l1, rho, TN, CN, mins, St, Wt, r0,
                     r1):
    """Rows ``r0..r1-1`` of :func:`pruned_step_csr`; returns ``(objective, rows recomputed)``."""
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


@njit(**PJIT)
def pruned_step_csr(data, indices, indptr, phi_x, GT, G, c, grp, perm, gstart, w, xn, x1, lb,
                    labels, shift_m, shift_2, shift_inf, use_l1, rho, TN, CN, mins, S, W, O, R):
    """:func:`pruned_step_dense` for CSR rows (no reference point: ``r2_i = ||x_i||``); the
    failing rows take :func:`bregclust._kernels.lloyd.lloyd_step_csr`'s row product."""
    n = indptr.shape[0] - 1
    T = S.shape[0]
    per = (n + T - 1) // T
    for t in prange(T):
        o, nr = _pruned_rows_csr(data, indices, indptr, phi_x, GT, G, c, grp, perm, gstart, w, xn,
                                 x1, lb, labels, shift_m, shift_2, shift_inf, use_l1, rho, TN, CN,
                                 mins, S[t], W[t], t * per, min(n, (t + 1) * per))
        O[t] = o
        R[t] = nr


@njit(**JIT)
def pruned_step_csr_serial(data, indices, indptr, phi_x, GT, G, c, grp, perm, gstart, w, xn, x1, lb,
                           labels, shift_m, shift_2, shift_inf, use_l1, rho, TN, CN, mins, S, W, O,
                           R):
    """:func:`pruned_step_csr` with one block on the calling thread."""
    o, nr = _pruned_rows_csr(data, indices, indptr, phi_x, GT, G, c, grp, perm, gstart, w, xn, x1,
                             lb, labels, shift_m, shift_2, shift_inf, use_l1, rho, TN, CN, mins,
                             S[0], W[0], 0, indptr.shape[0] - 1)
    O[0] = o
    R[0] = nr


# --------------------------------------------------------------------------- cached score columns
@njit(**JIT)
def _cached_rows_csr(data, indices, indptr, phi_x, GTm, moved, c, w, P, labels, mins, St, Wt, r0,
                     r1, acc):
    """Rows ``r0..r1-1`` of :func:`cached_step_csr`; returns their ``sum_r w_r mins_r``."""
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


@njit(**PJIT)
def cached_step_csr(data, indices, indptr, phi_x, GTm, moved, c, w, P, labels, mins, S, W, O):
    """One Lloyd pass over CSR rows that recomputes only the product columns of the centres
    that moved: in/out ``P`` (n x k, the products ``<x_i, g_j>`` of the previous pass), ``GTm``
    (p x m) the columns ``moved`` of ``G^T``; OUT ``labels``, ``mins``, ``S``/``W``/``O`` one
    slice per thread, as :func:`bregclust._kernels.lloyd.lloyd_step_csr`, with the same blocks
    of rows, the same argmin and the same sums: its results bit for bit."""
    n = indptr.shape[0] - 1
    T = S.shape[0]
    per = (n + T - 1) // T
    for t in prange(T):
        O[t] = _cached_rows_csr(data, indices, indptr, phi_x, GTm, moved, c, w, P, labels, mins,
                                S[t], W[t], t * per, min(n, (t + 1) * per),
                                np.empty(moved.shape[0]))


@njit(**JIT)
def cached_step_csr_serial(data, indices, indptr, phi_x, GTm, moved, c, w, P, labels, mins, S, W,
                           O):
    """:func:`cached_step_csr` with one block on the calling thread."""
    O[0] = _cached_rows_csr(data, indices, indptr, phi_x, GTm, moved, c, w, P, labels, mins, S[0],
                            W[0], 0, indptr.shape[0] - 1, np.empty(moved.shape[0]))
