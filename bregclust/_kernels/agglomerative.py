"""Cluster statistics and merge costs of the agglomerative Bregman models (Telgarsky & Dasgupta
2012); the drivers that order the merges are :mod:`.linkage_ward` (nearest-neighbour chain),
:mod:`.linkage_generic` (Muellner's generic algorithm) and :mod:`.linkage_pruned` (the same
algorithm with lower bounds for sparse separable models).

A forest of clusters is a **state** tuple ``st = (A, B, C, w, sup, slen, aux)`` with one row
("slot") per cluster:

``A`` (n, d) float64
    The mean statistic (identity models, Gaussians) or the positive mass (l1).
``B`` (n, p) float64
    Second statistic: negative mass (l1), scatter (Gaussians, plus a cached Cholesky factor for
    ``gaussian_full``), or the values on the sparse support (sparse separable models).
``C`` (n, 2) float64
    Cached per-cluster terms (see :func:`_slot_cache`).
``w`` (n,) float64
    Cluster weights.
``sup`` (n, s) int32, ``slen`` (n,) int64
    Sorted sparse supports of separable models (``slen < 0``: dense).
``aux`` (n,) int64
    1 where a ``gaussian_full`` cluster has zero scatter.

``kind`` is one of the model constants below; separable models evaluate their generator through
``(gcode, fn)`` (see :mod:`bregclust._kernels.generators`) and ``fc = [f(c); c]`` (``c`` = the
statistic of a raw zero, for sparse supports). The kernels are generic in the model and the
generator (both are run-time arguments), so each is compiled once for every model and cached on
disk; a newly registered generator reaches them through its function pointer and compiles only
its own scalar functions.
"""

import math

import numpy as np
from numba import njit

from .generators import INNER_JIT, JIT, PJIT, phi_of

# Presets of the kernels that allocate no array and return none (every array they touch is
# passed in by a caller that keeps it alive during the call): compiled without numba's
# reference counting (``_nrt=False``). With it, numba increments and decrements the count of
# every array at each assignment, tuple unpacking and call, which was 40 % of the LLVM IR of
# the pruned driver (each operation extracts every field of the array's structure) and costs
# typing, lowering and LLVM time on a first fit; the arithmetic is the same. A kernel that
# allocates (``np.empty`` ...) or returns an array must keep :data:`.generators.JIT`.
NRT_FREE_JIT = dict(JIT, _nrt=False)
NRT_FREE_INNER = dict(INNER_JIT, _nrt=False)
NRT_FREE_INNER_PARALLEL = dict(PJIT, no_cpython_wrapper=True, _nrt=False)
# Helpers that a first fit of a driver calls from one place (numba inlines them into their
# caller's IR): they are typed and lowered there once, instead of being compiled, optimised and
# emitted to machine code as a library of their own and then linked into the caller and
# optimised and emitted again. The floating-point operations are the same. (A Python entry
# point, for the tests' oracle checks, is compiled only when Python calls one.)
NRT_FREE_INLINE = dict(NRT_FREE_JIT, inline="always")

# model kinds
WARD, SEPARABLE, L1, GAUSS_DIAG, GAUSS_FULL = 0, 1, 2, 3, 4


@njit(**NRT_FREE_INNER)
def _l1_cost_coord(P, N):
    """Cost of one coordinate of an l1_subgradient cluster with positive mass ``P`` and negative
    mass ``N``: the mean's sign is the side with more mass, and every point on the other side (or
    every point, when the mean is 0) pays ``2 |x|`` (paper Example 2.2)."""
    if P > N:
        return 2.0 * N
    if N > P:
        return 2.0 * P
    return 2.0 * (P + N)


@njit(**NRT_FREE_INNER)
def _chol_logdet(S, d):
    """In-place lower Cholesky of the leading ``d x d`` block of ``S``; returns ``log det S``
    (``+inf`` if ``S`` is not positive definite)."""
    ld = 0.0
    for j in range(d):
        s = S[j, j]
        for k in range(j):
            s -= S[j, k] * S[j, k]
        if not (s > 0.0):
            return np.inf
        r = math.sqrt(s)
        S[j, j] = r
        ld += math.log(s)
        inv = 1.0 / r
        for i in range(j + 1, d):
            t = S[i, j]
            for k in range(j):
                t -= S[i, k] * S[j, k]
            S[i, j] = t * inv
    return ld


@njit(**NRT_FREE_INLINE)
def _sep_one_sided(i, j, A, B, C, w, sup, slen, lj, fc, gcode, fn):
    """Separable cost when slot ``j`` has unit weight and sparse support: outside that support
    ``j`` holds the statistic ``c`` of a raw zero, so ``C[i, 1]`` (the sum for a merge with an
    all-zero unit-weight point) is corrected on ``j``'s support only - ``O(|supp j|)``."""
    wi = w[i]
    w12 = wi + 1.0
    s = C[i, 1]
    li = slen[i]
    if li < 0:
        for p in range(lj):
            k = sup[j, p]
            a = wi * A[i, k]
            s += (phi_of(gcode, fn, (a + B[j, p]) / w12)
                  - phi_of(gcode, fn, (a + fc[1, k]) / w12))
    else:  # i sparse too: walk both supports (values of i are fc[1, k] off its support)
        p = 0
        q = 0
        while q < lj:
            k = sup[j, q]
            while p < li and sup[i, p] < k:
                p += 1
            a = wi * (B[i, p] if (p < li and sup[i, p] == k) else fc[1, k])
            s += (phi_of(gcode, fn, (a + B[j, q]) / w12)
                  - phi_of(gcode, fn, (a + fc[1, k]) / w12))
            q += 1
    return C[i, 0] + C[j, 0] - w12 * s


@njit(**NRT_FREE_INNER)
def _gfull_rank_one(i, j, A, B, C, w, work):
    """Full-Gaussian cost of cluster ``i`` and a unit-weight point ``j`` with zero scatter:
    ``Sigma12 = A_i + (c / w12) delta delta^T`` with ``A_i = M2_i / (w_i + 1) + I``, whose
    Cholesky factor (``B[i, d^2:]``) and log-determinant (``C[i, 1]``) are cached, so
    ``log det Sigma12 = log det A_i + log(1 + (c / w12) |L_i^-1 delta|^2)`` costs ``O(d^2)``."""
    d = A.shape[1]
    dd = d * d
    wi = w[i]
    w12 = wi + 1.0
    q = 0.0
    for k in range(d):
        t = A[i, k] - A[j, k]
        for l in range(k):
            t -= B[i, dd + k * d + l] * work[d, l]
        y = t / B[i, dd + k * d + k]
        work[d, k] = y
        q += y * y
    ld = C[i, 1] + math.log1p(wi / w12 / w12 * q)
    return 0.5 * (w12 * ld - C[i, 0] - C[j, 0])


@njit(**NRT_FREE_INLINE)
def sep_cost(i, j, st, fc, gcode, fn):
    """Merge cost of slots ``i`` and ``j`` for a separable generator (the Jensen gap of ``phi``
    shifted by ``f(c)``, which cancels in the gap): the :data:`SEPARABLE` case of :func:`cost`."""
    A, B, C, w, sup, slen, aux = st
    wi = w[i]
    wj = w[j]
    w12 = wi + wj
    d = A.shape[1]
    li = slen[i]
    lj = slen[j]
    # a unit-weight sparse slot against a heavier or wider one: the one-sided form (one call
    # site, so that it is inlined once)
    u = -1
    v = -1
    lv = lj
    if lj >= 0 and wj == 1.0 and (li < 0 or li > lj):
        u = i
        v = j
    elif li >= 0 and wi == 1.0 and (lj < 0 or lj > li):
        u = j
        v = i
        lv = li
    if u >= 0:
        return _sep_one_sided(u, v, A, B, C, w, sup, slen, lv, fc, gcode, fn)
    s = 0.0
    if li >= 0 and lj >= 0:
        p = 0
        q = 0
        while p < li or q < lj:
            if q >= lj or (p < li and sup[i, p] < sup[j, q]):
                k = sup[i, p]
                m = (wi * B[i, p] + wj * fc[1, k]) / w12
                p += 1
            elif p >= li or sup[j, q] < sup[i, p]:
                k = sup[j, q]
                m = (wi * fc[1, k] + wj * B[j, q]) / w12
                q += 1
            else:
                k = sup[i, p]
                m = (wi * B[i, p] + wj * B[j, q]) / w12
                p += 1
                q += 1
            s += phi_of(gcode, fn, m) - fc[0, k]
    else:
        for k in range(d):
            m = (wi * A[i, k] + wj * A[j, k]) / w12
            s += phi_of(gcode, fn, m) - fc[0, k]
    return C[i, 0] + C[j, 0] - w12 * s


@njit(**NRT_FREE_JIT)
def cost(kind, i, j, st, fc, gcode, fn, work):
    """Merge cost of the clusters in slots ``i`` and ``j`` of the state ``st`` (see the module
    docstring); ``work`` is scratch (IN/OUT)."""
    A, B, C, w, sup, slen, aux = st
    wi = w[i]
    wj = w[j]
    w12 = wi + wj
    d = A.shape[1]
    if kind == WARD:  # Ward: closed form of the Jensen gap of ||.||^2
        s = 0.0
        for k in range(d):
            t = A[i, k] - A[j, k]
            s += t * t
        return wi * wj / w12 * s
    if kind == SEPARABLE:  # separable generator
        return sep_cost(i, j, st, fc, gcode, fn)
    if kind == L1:  # l1_subgradient: Definition 3.7 from positive / negative masses
        s = 0.0
        for k in range(d):
            s += _l1_cost_coord(A[i, k] + A[j, k], B[i, k] + B[j, k])
        return s - C[i, 0] - C[j, 0]
    c = wi * wj / w12
    if kind == GAUSS_DIAG:  # diagonal Gaussian (whitened: the smoothing bandwidth is 1)
        s = 0.0
        for k in range(d):
            t = A[i, k] - A[j, k]
            s += math.log((B[i, k] + B[j, k] + c * t * t) / w12 + 1.0)
        return 0.5 * (w12 * s - C[i, 0] - C[j, 0])
    # full Gaussian (whitened: the smoothing covariance is the identity)
    if aux[i] == 1 and aux[j] == 1:  # both scatter matrices are zero: rank-one update of I
        s = 0.0
        for k in range(d):
            t = A[i, k] - A[j, k]
            s += t * t
        return 0.5 * w12 * math.log1p(c * s / w12)
    if B.shape[1] >= 2 * d * d:
        if aux[j] == 1 and wj == 1.0:
            return _gfull_rank_one(i, j, A, B, C, w, work)
        if aux[i] == 1 and wi == 1.0:
            return _gfull_rank_one(j, i, A, B, C, w, work)
    for k in range(d):
        work[d, k] = A[i, k] - A[j, k]
    for k in range(d):
        tk = work[d, k]
        for l in range(k + 1):
            work[k, l] = (B[i, k * d + l] + B[j, k * d + l] + c * tk * work[d, l]) / w12
        work[k, k] += 1.0
    ld = _chol_logdet(work, d)
    return 0.5 * (w12 * ld - C[i, 0] - C[j, 0])


@njit(**NRT_FREE_INNER)
def _sep_slot_cache(j, A, B, C, w, sup, slen, fc, gcode, fn):
    """The :data:`SEPARABLE` case of :func:`_slot_cache`."""
    d = A.shape[1]
    wj = w[j]
    s = 0.0
    s1 = 0.0
    if slen[j] >= 0:  # off the support the statistic is fc[1, k]: both terms vanish there
        for p in range(slen[j]):
            k = sup[j, p]
            s += phi_of(gcode, fn, B[j, p]) - fc[0, k]
            s1 += phi_of(gcode, fn, (wj * B[j, p] + fc[1, k]) / (wj + 1.0)) - fc[0, k]
    else:
        for k in range(d):
            s += phi_of(gcode, fn, A[j, k]) - fc[0, k]
            if sup.shape[1] > 0:
                s1 += phi_of(gcode, fn, (wj * A[j, k] + fc[1, k]) / (wj + 1.0)) - fc[0, k]
    C[j, 0] = wj * s
    C[j, 1] = s1


@njit(**NRT_FREE_INNER)
def _slot_cache(kind, j, A, B, C, w, sup, slen, fc, gcode, fn, work):
    """Recompute the cached per-cluster terms ``C[j, :]`` from the statistics of slot ``j``:
    ``C[j, 0] = w f(tau)`` (up to constants that cancel) and, for sparse separable models,
    ``C[j, 1]``, the shifted generator summed at the merge with a unit-weight all-zero point."""
    d = A.shape[1]
    wj = w[j]
    C[j, 1] = 0.0
    if kind == WARD:
        C[j, 0] = 0.0
    elif kind == SEPARABLE:
        _sep_slot_cache(j, A, B, C, w, sup, slen, fc, gcode, fn)
    elif kind == L1:
        s = 0.0
        for k in range(d):
            s += _l1_cost_coord(A[j, k], B[j, k])
        C[j, 0] = s
    elif kind == GAUSS_DIAG:
        s = 0.0
        for k in range(d):
            s += math.log(B[j, k] / wj + 1.0)
        C[j, 0] = wj * s
    else:
        for k in range(d):
            for l in range(k + 1):
                work[k, l] = B[j, k * d + l] / wj
            work[k, k] += 1.0
        C[j, 0] = wj * _chol_logdet(work, d)
        dd = d * d
        if B.shape[1] >= 2 * dd:  # factor of M2 / (w + 1) + I for merges with a unit point
            for k in range(d):
                for l in range(k + 1):
                    work[k, l] = B[j, k * d + l] / (wj + 1.0)
                work[k, k] += 1.0
            C[j, 1] = _chol_logdet(work, d)
            for k in range(d):
                for l in range(k + 1):
                    B[j, dd + k * d + l] = work[k, l]


@njit(**NRT_FREE_JIT)
def init_cache(kind, st, fc, gcode, fn, work):
    """OUT ``C`` of the state ``st = (A, B, C, w, sup, slen, aux)``: the cached per-cluster terms
    of every slot (see :func:`_slot_cache`)."""
    A, B, C, w, sup, slen, aux = st
    for j in range(A.shape[0]):
        _slot_cache(kind, j, A, B, C, w, sup, slen, fc, gcode, fn, work)


@njit(**NRT_FREE_JIT)
def init_cache_separable(st, fc, gcode, fn):
    """:func:`init_cache` for a separable model (the same arithmetic), without the other models'
    code: a first fit of the pruned driver, which runs only separable models, compiles no
    Cholesky factorisation."""
    A, B, C, w, sup, slen, aux = st
    for j in range(A.shape[0]):
        _sep_slot_cache(j, A, B, C, w, sup, slen, fc, gcode, fn)


@njit(**NRT_FREE_INLINE)
def _sep_union(i, j, A, B, sup, slen, ibuf):
    """Support of the union in slot ``j`` (sparse) after a separable merge of ``i`` into ``j``
    (``A[j]`` already the merged statistic): the union of the supports with ``B`` gathered from
    ``A[j]``, or dense (``slen[j] = -1``) when it is wider than ``sup``."""
    if slen[i] < 0:
        slen[j] = -1
        return
    li = slen[i]
    lj = slen[j]
    p = 0
    q = 0
    r = 0
    while p < li or q < lj:
        if q >= lj or (p < li and sup[i, p] < sup[j, q]):
            ibuf[r] = sup[i, p]
            p += 1
        elif p >= li or sup[j, q] < sup[i, p]:
            ibuf[r] = sup[j, q]
            q += 1
        else:
            ibuf[r] = sup[i, p]
            p += 1
            q += 1
        r += 1
    if r > sup.shape[1]:
        slen[j] = -1
    else:
        for p in range(r):
            sup[j, p] = ibuf[p]
            B[j, p] = A[j, ibuf[p]]
        slen[j] = r


@njit(**NRT_FREE_INLINE)
def merge_separable(i, j, st, fc, gcode, fn, ibuf):
    """:func:`merge` of a separable model (which :func:`merge` calls), without the other models'
    code: the kernel of the pruned driver, which runs only separable models."""
    A, B, C, w, sup, slen, aux = st
    wi = w[i]
    wj = w[j]
    w12 = wi + wj
    for k in range(A.shape[1]):
        A[j, k] = (wi * A[i, k] + wj * A[j, k]) / w12
    if slen[j] >= 0:
        _sep_union(i, j, A, B, sup, slen, ibuf)
    w[j] = w12
    _sep_slot_cache(j, A, B, C, w, sup, slen, fc, gcode, fn)


@njit(**NRT_FREE_JIT)
def merge(kind, i, j, st, fc, gcode, fn, work, ibuf):
    """Merge slot ``i`` into slot ``j`` of the state ``st`` (IN/OUT: slot ``j`` holds the union
    afterwards); ``work``/``ibuf`` are scratch."""
    if kind == SEPARABLE:
        merge_separable(i, j, st, fc, gcode, fn, ibuf)
        return
    A, B, C, w, sup, slen, aux = st
    wi = w[i]
    wj = w[j]
    w12 = wi + wj
    d = A.shape[1]
    if kind == L1:  # additive masses
        for k in range(d):
            A[j, k] += A[i, k]
            B[j, k] += B[i, k]
    else:
        c = wi * wj / w12
        if kind == GAUSS_DIAG:
            for k in range(d):
                t = A[i, k] - A[j, k]
                B[j, k] += B[i, k] + c * t * t
        elif kind == GAUSS_FULL:
            for k in range(d):
                work[d, k] = A[i, k] - A[j, k]
            for k in range(d):
                tk = work[d, k]
                for l in range(k + 1):
                    B[j, k * d + l] += B[i, k * d + l] + c * tk * work[d, l]
            aux[j] = 0
        for k in range(d):
            A[j, k] = (wi * A[i, k] + wj * A[j, k]) / w12
    w[j] = w12
    _slot_cache(kind, j, A, B, C, w, sup, slen, fc, gcode, fn, work)



@njit(**NRT_FREE_JIT)
def slots_to_linkage(n, si, sj, h, node, size, Z):
    """scipy linkage rows from merges of slots (the union lives in slot ``sj``); ``node`` and
    ``size`` (IN/OUT, scratch) the node ids and sizes of the slots (``0 .. n-1``, ones).
    Comparisons instead of ``min`` and ``max``, which compile numba's generic implementation."""
    for t in range(n - 1):
        a = node[si[t]]
        b = node[sj[t]]
        Z[t, 0] = a if a < b else b
        Z[t, 1] = b if a < b else a
        Z[t, 2] = h[t]
        size[sj[t]] += size[si[t]]
        Z[t, 3] = size[sj[t]]
        node[sj[t]] = n + t


@njit(**NRT_FREE_INLINE)
def keep(j, r, st, outs):
    """Copy the statistics of slot ``j`` of the state ``st`` to row ``r`` of
    ``outs = (outA, outB, outC, outw, outsup, outslen, outaux)`` (the drivers keep the clusters
    of the last merges this way, for the estimators' tree features)."""
    A, B, C, w, sup, slen, aux = st
    outA, outB, outC, outw, outsup, outslen, outaux = outs
    # element loops: a slice assignment from an array compiles numba's shape-error message
    # formatting, more code than the rest of this kernel
    for k in range(A.shape[1]):
        outA[r, k] = A[j, k]
    for k in range(B.shape[1]):
        outB[r, k] = B[j, k]
    for k in range(C.shape[1]):
        outC[r, k] = C[j, k]
    for k in range(sup.shape[1]):
        outsup[r, k] = sup[j, k]
    outw[r] = w[j]
    outslen[r] = slen[j]
    outaux[r] = aux[j]


@njit(**JIT)
def cross_costs(kind, nc, st, fc, gcode, fn, out):
    """OUT ``out[p, q] = cost(cluster slot q, point slot nc + p)`` for a stacked state ``st``."""
    A, B, C, w, sup, slen, aux = st
    d = A.shape[1]
    work = np.zeros((d + 1, d)) if kind == GAUSS_FULL else np.zeros((1, 1))  # Cholesky scratch
    m = A.shape[0] - nc
    for p in range(m):
        for q in range(nc):
            out[p, q] = cost(kind, q, nc + p, st, fc, gcode, fn, work)
