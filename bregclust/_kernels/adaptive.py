"""The Lloyd pass that also starts the bounds of the pruned passes (``algorithm="auto"``).

:func:`start_block` is a block of :func:`bregclust._kernels.lloyd.lloyd_step_dense` (the same blocks
of rows, the same BLAS product per chunk, the same argmin :func:`~bregclust._kernels.lloyd.
_nearest_rows` and the same sums in the same order, so the same labels, minima, sums and
objective bit for bit) that, while a chunk's scores are in cache, also writes the bounds
:mod:`bregclust._kernels.pruned` keeps per row and group of centres: the smallest score of
each group other than the row's own, rounded down by the rounding error of a score. The
pruned passes then start from exact bounds after one Lloyd-priced pass, instead of a pass
that recomputes every row with the pruned kernel's row-by-row argmin.

Written by hand for the reason of :mod:`bregclust._kernels.pruned` (no library prunes a
Bregman k-means).
"""

import numpy as np
from numba import njit

from .generators import JIT
from .lloyd import _nearest_rows
from .pruned import _safe_low as _low  # the rounding of the pruned kernels
from .pruned import _second_in_group


@njit(**JIT)
def _group_bounds(P, c, perm, gstart, grp, labels, s, xn, rho, TN, CN, lb):
    """Rows ``s .. s + m - 1`` of the block ``P`` (m x k): ``lb[r, g]``, the smallest score
    ``c_j - P[i, j]`` of group ``g`` leaving out the label's own, less the rounding margin
    ``rho (xn_r TN + CN)``. Four rows at a time (four independent chains of minima)."""
    m = P.shape[0]
    ng = gstart.shape[0] - 1
    u = 1.1102230246251565e-16
    m4 = m // 4 * 4
    for i in range(0, m4, 4):
        p0 = P[i]
        p1 = P[i + 1]
        p2 = P[i + 2]
        p3 = P[i + 3]
        r = s + i
        for g in range(ng):
            b0 = np.inf
            b1 = np.inf
            b2 = np.inf
            b3 = np.inf
            for q in range(gstart[g], gstart[g + 1]):
                j = perm[q]
                cj = c[j]
                v0 = cj - p0[j]
                v1 = cj - p1[j]
                v2 = cj - p2[j]
                v3 = cj - p3[j]
                b0 = v0 if v0 < b0 else b0
                b1 = v1 if v1 < b1 else b1
                b2 = v2 if v2 < b2 else b2
                b3 = v3 if v3 < b3 else b3
            lb[r, g] = b0
            lb[r + 1, g] = b1
            lb[r + 2, g] = b2
            lb[r + 3, g] = b3
    for i in range(m4, m):
        p0 = P[i]
        for g in range(ng):
            b0 = np.inf
            for q in range(gstart[g], gstart[g + 1]):
                j = perm[q]
                v0 = c[j] - p0[j]
                b0 = v0 if v0 < b0 else b0
            lb[s + i, g] = b0
    for i in range(m):  # the label's group without the label, then the margin
        r = s + i
        a = labels[r]
        ga = grp[a]
        lb[r, ga] = _second_in_group(c, P[i], perm, gstart, ga, a)
        Ei = rho * (xn[r] * TN + CN)
        for g in range(ng):
            lb[r, g] = _low(lb[r, g], Ei, u)


@njit(**JIT)
def start_block(X, phi_x, GT, c, perm, gstart, grp, xn, rho, TN, CN, w, chunk, labels, mins,
                lb, St, Wt, s0, e0, P):
    """One Lloyd pass over the dense rows ``s0..e0-1`` (OUT ``labels``, ``mins``, the block's
    sums ``St``/``Wt``, exactly as :func:`bregclust._kernels.lloyd.lloyd_step_dense`; ``P``
    (chunk x k) scratch) that also writes OUT ``lb`` (n x G): per row and group of centres
    (``perm`` lists the centres group by group, group ``g`` from ``gstart[g]`` to
    ``gstart[g + 1]``; ``grp[j]`` is the group of centre ``j``) the smallest score
    ``c_j - <x, g_j>`` other than the label's, less ``rho (xn_i TN + CN)``: the bounds with
    which :mod:`bregclust._kernels.pruned` starts. Returns ``sum_r w_r mins_r`` in row order
    (``lloyd._lloyd_block`` with the bounds)."""
    d = X.shape[1]
    obj = 0.0
    for s in range(s0, e0, chunk):
        e = min(e0, s + chunk)
        Pc = P[:e - s]
        np.dot(X[s:e], GT, Pc)
        _nearest_rows(Pc, c, phi_x, s, labels, mins)
        _group_bounds(Pc, c, perm, gstart, grp, labels, s, xn, rho, TN, CN, lb)
        for r in range(s, e):
            bj = labels[r]
            wi = w[r]
            Wt[bj] += wi
            obj += wi * mins[r]
            for l in range(d):
                St[bj, l] += wi * X[r, l]
    return obj


@njit(**JIT)
def row_norms_dense(X, sq, ab):
    """OUT ``sq[i] = sum_l X[i, l]^2`` and ``ab[i] = sum_l |X[i, l]|`` in float64 (one read of
    the rows, no ``n x d`` temporary; the sums in any order, whose rounding the pruned passes
    bound with ``gamma_d`` whatever the order)."""
    n, d = X.shape
    for i in range(n):
        s2 = 0.0
        s1 = 0.0
        for l in range(d):
            x = np.float64(X[i, l])
            s2 += x * x
            s1 += abs(x)
        sq[i] = s2
        ab[i] = s1
