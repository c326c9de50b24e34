"""Assignment, Lloyd and pairwise kernels (the registry's GEMM form and its oracle).

* **Fast kernels.** For every differentiable generator the ``n x k x d`` part of the pairwise
  divergence is a matrix product::

      D[i, j] = phi(x_i) + c_j - <x_i, g_j>,   g_j = grad phi(u_j),  c_j = <u_j, g_j> - phi(u_j)

  so BLAS (dense) or a sparse-dense product (CSR) does the heavy work and numba only fuses the
  elementwise add with the argmin (:func:`fused_argmin`), chunk by chunk so memory stays
  ``O(chunk x k)``.

* **Generic kernels** evaluate a separable generator's scalar ``f`` and ``f'`` by the definition
  ``sum_l f(x_l) - f(u_l) - (x_l - u_l) f'(u_l)``. They are slow and obvious, and stay as the
  oracle for the fast ones (tests compare the two for every registered divergence). They take a
  generator code and function pointers (see :mod:`bregclust._kernels.generators`).

Kernels never validate, warn or allocate in their inner loops; they write into OUT buffers the
caller allocates (named in each docstring). Data may be float32 or float64: products with the
data run in the data's type (the GEMM form's BLAS call), while every sum that decides a label
or forms an objective or a centre (``phi(x)``, the minima, the per-cluster sums) accumulates
in float64.
"""

import numpy as np
from numba import njit, prange

from .generators import IS, JIT, PJIT, SQ, dphi_of, phi_of, scalar_of


# --------------------------------------------------------------------------- generator-free kernels
@njit(**JIT)
def _nearest(p, c, phi_xi, i, labels, mins):
    """Row ``i`` of the argmin: ``labels[i] = argmin_j c[j] - p[j]``, ``mins[i]`` the divergence
    ``phi_xi + c[j] - p[j]`` clamped at 0. Returns the label.

    A non-finite candidate or minimum (an overflow, ``inf - inf``) never becomes 0: ``mins[i]``
    is then NaN, which the caller reads as "evaluate this row by the definition".

    A NaN candidate is detected through the running sum ``tot`` of the candidates (NaN stays
    NaN; ``inf - inf`` also gives NaN, and such a row is an overflow too): one add per
    candidate in the hottest loop of k-means, where a per-candidate ``v != v`` branch would
    keep the loop from being compiled branch-free."""
    best = np.inf
    bj = 0
    tot = 0.0
    for j in range(c.shape[0]):
        v = c[j] - p[j]
        tot += v
        if v < best:
            best = v
            bj = j
    labels[i] = bj
    v = phi_xi + best
    if tot != tot or not (abs(v) < np.inf):
        mins[i] = np.nan
    else:
        mins[i] = v if v > 0.0 else 0.0
    return bj


@njit(**JIT)
def fused_argmin(P, phi_x, c, labels, mins):
    """``labels[i] = argmin_j phi_x[i] + c[j] - P[i, j]`` and the minimum (clamped at 0).

    ``P`` is the GEMM block ``X G^T`` of one chunk. The clamp removes the tiny negative values
    that cancellation in the GEMM form can produce; a Bregman divergence is never negative.
    Serial: one call handles one cache-sized chunk of rows, and the caller
    (``_execution.assign``) spreads the chunks, each with its own GEMM, over its thread pool.
    """
    _nearest_rows(P, c, phi_x, 0, labels, mins)


@njit(**JIT)
def fused_pairwise(P, phi_x, c, thr, few):
    """In place: ``P[i, j] <- max(phi_x[i] + c[j] - P[i, j], 0)``; NaN and ``-inf`` (an
    overflow) become NaN, never 0, so the caller can evaluate those entries by the definition.
    ``few[i]``: some entry of row ``i`` lies below ``thr[i]`` (digits possibly lost)."""
    n, k = P.shape
    for i in range(n):
        for j in range(k):
            v = phi_x[i] + c[j] - P[i, j]
            if v > 0.0:
                P[i, j] = v
            elif v > -np.inf:
                P[i, j] = 0.0
            else:
                P[i, j] = np.nan
        low = 0
        if thr[i] > -np.inf:  # -inf: no guard asked for
            for j in range(k):
                low += P[i, j] < thr[i]
        few[i] = low > 0


@njit(**JIT)
def labels_differ(a, b):
    """Whether two label arrays of one length differ, stopping at the first difference (the
    convergence test of every Lloyd iteration; labels usually differ early in the array)."""
    for i in range(a.shape[0]):
        if a[i] != b[i]:
            return True
    return False


@njit(**JIT)
def weighted_sums_dense(X, labels, w, S, W):
    """``S[j] += w_i x_i`` and ``W[j] += w_i`` over the rows with ``labels[i] == j``.

    Serial: one pass over X, O(n d); faster here than a sparse indicator product.
    """
    n, d = X.shape
    for i in range(n):
        j = labels[i]
        wi = w[i]
        W[j] += wi
        for l in range(d):
            S[j, l] += wi * X[i, l]


@njit(**JIT)
def column_sums_dense(X, w, out):
    """``out[l] += sum_i w_i X[i, l]``, added row after row in float64 (float32 rows are
    converted one value at a time, never as a float64 copy of the array)."""
    n, d = X.shape
    for i in range(n):
        wi = w[i]
        for l in range(d):
            out[l] += wi * np.float64(X[i, l])


@njit(**JIT)
def weighted_sums_csr(data, indices, indptr, labels, w, S, W):
    """As :func:`weighted_sums_dense` for a CSR matrix (stored entries only)."""
    n = indptr.shape[0] - 1
    for i in range(n):
        j = labels[i]
        wi = w[i]
        W[j] += wi
        for p in range(indptr[i], indptr[i + 1]):
            S[j, indices[p]] += wi * data[p]


@njit(**JIT)
def _finish(phi_xi, best, tot, r, mins):
    """``mins[r]`` from a row's smallest candidate ``best`` and the sum ``tot`` of its
    candidates, as :func:`_nearest` writes it."""
    v = phi_xi + best
    if tot != tot or not (abs(v) < np.inf):
        mins[r] = np.nan
    else:
        mins[r] = v if v > 0.0 else 0.0


@njit(**JIT)
def _nearest_rows(P, c, phi_x, s, labels, mins):
    """:func:`_nearest` for the rows ``s .. s + m - 1`` of one GEMM block ``P`` (m x k): the same
    comparisons and sums in the same order, hence the same labels and minima, four rows at a
    time. One row's loop is a chain of dependent compares and adds; four rows read from four
    contiguous rows of ``P`` are four independent chains that the core overlaps (about 0.6 ns
    per score at k = 256..1024, where a copy of ``P`` into a transposed k x 256 buffer, the
    former layout, cost 2-4 ns: its power-of-two stride)."""
    m, k = P.shape
    m4 = m // 4 * 4
    for i in range(0, m4, 4):
        p0 = P[i]
        p1 = P[i + 1]
        p2 = P[i + 2]
        p3 = P[i + 3]
        b0 = np.inf
        b1 = np.inf
        b2 = np.inf
        b3 = np.inf
        t0 = 0.0
        t1 = 0.0
        t2 = 0.0
        t3 = 0.0
        j0 = 0
        j1 = 0
        j2 = 0
        j3 = 0
        for j in range(k):
            cj = c[j]
            v0 = cj - p0[j]
            v1 = cj - p1[j]
            v2 = cj - p2[j]
            v3 = cj - p3[j]
            t0 += v0
            t1 += v1
            t2 += v2
            t3 += v3
            l0 = v0 < b0
            l1 = v1 < b1
            l2 = v2 < b2
            l3 = v3 < b3
            b0 = v0 if l0 else b0
            j0 = j if l0 else j0
            b1 = v1 if l1 else b1
            j1 = j if l1 else j1
            b2 = v2 if l2 else b2
            j2 = j if l2 else j2
            b3 = v3 if l3 else b3
            j3 = j if l3 else j3
        r = s + i
        labels[r] = j0
        labels[r + 1] = j1
        labels[r + 2] = j2
        labels[r + 3] = j3
        _finish(phi_x[r], b0, t0, r, mins)
        _finish(phi_x[r + 1], b1, t1, r + 1, mins)
        _finish(phi_x[r + 2], b2, t2, r + 2, mins)
        _finish(phi_x[r + 3], b3, t3, r + 3, mins)
    for i in range(m4, m):
        _nearest(P[i], c, phi_x[s + i], s + i, labels, mins)


@njit(**JIT)
def _lloyd_block(X, phi_x, GT, c, w, chunk, labels, mins, St, Wt, s0, e0, P):
    """Rows ``s0..e0-1`` of :func:`lloyd_step_dense`, ``chunk`` rows per BLAS call into ``P``,
    summing into ``St``/``Wt``. Returns ``sum_r w_r mins_r`` over the rows, in row order."""
    d = X.shape[1]
    obj = 0.0
    for s in range(s0, e0, chunk):
        e = min(e0, s + chunk)
        Pc = P[:e - s]
        np.dot(X[s:e], GT, Pc)
        _nearest_rows(Pc, c, phi_x, s, labels, mins)
        for r in range(s, e):
            bj = labels[r]
            wi = w[r]
            Wt[bj] += wi
            obj += wi * mins[r]
            for l in range(d):
                St[bj, l] += wi * X[r, l]
    return obj


@njit(**JIT)
def _block_rows(n, T, t):
    """``(r0, r1)``: the rows of block ``t`` of ``T`` over ``n`` rows, ``t * per`` to
    ``min(n, (t + 1) * per)`` with ``per = ceil(n / T)`` (the blocks of the ``prange`` Lloyd
    kernels, which the block kernels on the engine's pool reproduce; empty when ``t * per >= n``)."""
    per = (n + T - 1) // T
    return t * per, min(n, (t + 1) * per)


@njit(**PJIT)
def lloyd_step_dense(X, phi_x, GT, c, w, chunk, labels, mins, S, W, O):
    """One Lloyd pass in one read of ``X``: nearest centre of every row and the per-cluster
    weighted sums for those labels.

    ``D[i, j] = phi_x[i] + c[j] - (X G^T)[i, j]`` (the GEMM form), ``GT = G^T`` (d x k,
    C-contiguous). The rows are split into ``T = S.shape[0]`` contiguous blocks, one per thread;
    each block goes through ``chunk`` rows at a time: one BLAS product into a cache-sized buffer,
    the argmin, then ``S[t, label] += w x`` while the rows are still in cache. Thread ``t``
    accumulates into ``S[t]``/``W[t]`` and its part of the objective ``sum_i w_i mins_i`` into
    ``O[t]`` (NaN when a minimum is flagged NaN); the caller adds the ``T`` slices. The split is by block,
    not by scheduler, so the sums (and hence the results) do not depend on thread timing.

    Written by hand because no library fuses the product, the argmin and the centre sums
    (scikit-learn does the same fusion in Cython for the squared Euclidean case only); BLAS is
    called through numba's ``np.dot(a, b, out)``, so the caller must limit BLAS to one thread.

    The library runs these blocks as :func:`lloyd_block_dense` on its thread pool (a serial
    kernel compiles in less time); this ``prange`` kernel stays as their oracle in the tests.
    """
    n = X.shape[0]
    k = GT.shape[1]
    T = S.shape[0]
    per = (n + T - 1) // T
    for t in prange(T):
        O[t] = _lloyd_block(X, phi_x, GT, c, w, chunk, labels, mins, S[t], W[t], t * per,
                            min(n, (t + 1) * per), np.empty((chunk, k), X.dtype))


@njit(**JIT)
def lloyd_step_dense_serial(X, phi_x, GT, c, w, chunk, labels, mins, S, W, O):
    """:func:`lloyd_step_dense` with ``T = 1`` on the calling thread (no parallel launch);
    the same arithmetic, so the same results."""
    O[0] = _lloyd_block(X, phi_x, GT, c, w, chunk, labels, mins, S[0], W[0], 0, X.shape[0],
                        np.empty((chunk, GT.shape[1]), X.dtype))


@njit(**JIT)
def lloyd_block_dense(X, phi_x, GT, c, w, chunk, labels, mins, S, W, O, t):
    """Block ``t`` of :func:`lloyd_step_dense` on the calling thread: rows ``t * per`` to
    ``(t + 1) * per``, ``per = ceil(n / T)``, ``T = S.shape[0]``, into ``S[t]``/``W[t]``/``O[t]``
    with the same arithmetic, so the ``T`` blocks run in any order on any threads give that
    kernel's results bit for bit. :func:`bregclust._execution.fused_pass` runs the blocks on
    its thread pool: a serial kernel compiles in a fraction of a ``prange`` kernel's time
    (a new user's first fit pays it)."""
    r0, r1 = _block_rows(X.shape[0], S.shape[0], t)
    O[t] = _lloyd_block(X, phi_x, GT, c, w, chunk, labels, mins, S[t], W[t], r0, r1,
                        np.empty((chunk, GT.shape[1]), X.dtype))


@njit(**JIT)
def _product_csr(data, indices, indptr, GT, r, acc):
    """OUT ``acc[j] = <x_r, GT[:, j]>`` for CSR row ``r``, over its stored entries in order
    (the one product of every CSR pass, so labels and minima agree bit for bit)."""
    k = GT.shape[1]
    acc[:] = 0.0
    for p in range(indptr[r], indptr[r + 1]):
        v = data[p]
        g = GT[indices[p]]
        for j in range(k):
            acc[j] += v * g[j]


@njit(**JIT)
def _lloyd_rows_csr(data, indices, indptr, phi_x, GT, c, w, labels, mins, St, Wt, r0, r1, acc):
    """Rows ``r0..r1-1`` of :func:`lloyd_step_csr`; returns their ``sum_r w_r mins_r``."""
    obj = 0.0
    for r in range(r0, r1):
        _product_csr(data, indices, indptr, GT, r, acc)
        bj = _nearest(acc, c, phi_x[r], r, labels, mins)
        wi = w[r]
        Wt[bj] += wi
        obj += wi * mins[r]
        for p in range(indptr[r], indptr[r + 1]):
            St[bj, indices[p]] += wi * data[p]
    return obj


@njit(**PJIT)
def lloyd_step_csr(data, indices, indptr, phi_x, GT, c, w, labels, mins, S, W, O):
    """:func:`lloyd_step_dense` for a CSR matrix: the product row by row over stored entries
    (``GT`` rows are contiguous in ``k``), then the argmin and the sums over stored entries.
    The library runs its blocks as :func:`lloyd_block_csr` (the oracle of which this is)."""
    n = indptr.shape[0] - 1
    k = GT.shape[1]
    T = S.shape[0]
    per = (n + T - 1) // T
    for t in prange(T):
        O[t] = _lloyd_rows_csr(data, indices, indptr, phi_x, GT, c, w, labels, mins, S[t],
                               W[t], t * per, min(n, (t + 1) * per), np.empty(k))


@njit(**JIT)
def lloyd_step_csr_serial(data, indices, indptr, phi_x, GT, c, w, labels, mins, S, W, O):
    """:func:`lloyd_step_csr` with ``T = 1`` on the calling thread (no parallel launch)."""
    O[0] = _lloyd_rows_csr(data, indices, indptr, phi_x, GT, c, w, labels, mins, S[0], W[0],
                           0, indptr.shape[0] - 1, np.empty(GT.shape[1]))


@njit(**JIT)
def lloyd_block_csr(data, indices, indptr, phi_x, GT, c, w, labels, mins, S, W, O, t):
    """Block ``t`` of :func:`lloyd_step_csr` on the calling thread (as
    :func:`lloyd_block_dense` for :func:`lloyd_step_dense`)."""
    r0, r1 = _block_rows(indptr.shape[0] - 1, S.shape[0], t)
    O[t] = _lloyd_rows_csr(data, indices, indptr, phi_x, GT, c, w, labels, mins, S[t], W[t],
                           r0, r1, np.empty(GT.shape[1]))


@njit(**JIT)
def _nearest_rows_csr(data, indices, indptr, phi_x, GT, c, labels, mins, r0, r1, acc):
    """Rows ``r0..r1-1`` of :func:`nearest_csr`."""
    for r in range(r0, r1):
        _product_csr(data, indices, indptr, GT, r, acc)
        _nearest(acc, c, phi_x[r], r, labels, mins)


@njit(**PJIT)
def nearest_csr(data, indices, indptr, phi_x, GT, c, T, labels, mins):
    """OUT the labels and minima of :func:`lloyd_step_csr` without the sums: the nearest
    centre of every CSR row (the same product and argmin, so the same values bit for bit),
    ``T`` blocks of rows in parallel. A labels pass reads each stored entry once and writes
    no ``k x d`` buffer. The library runs the blocks as :func:`nearest_block_csr` on its
    thread pool; this ``prange`` kernel stays as their oracle in the tests."""
    n = indptr.shape[0] - 1
    k = GT.shape[1]
    per = (n + T - 1) // T
    for t in prange(T):
        _nearest_rows_csr(data, indices, indptr, phi_x, GT, c, labels, mins, t * per,
                          min(n, (t + 1) * per), np.empty(k))


@njit(**JIT)
def nearest_block_csr(data, indices, indptr, phi_x, GT, c, T, labels, mins, t):
    """Block ``t`` of the ``T`` of :func:`nearest_csr` on the calling thread (the engine runs
    the blocks on its thread pool, as :func:`lloyd_block_csr`)."""
    r0, r1 = _block_rows(indptr.shape[0] - 1, T, t)
    _nearest_rows_csr(data, indices, indptr, phi_x, GT, c, labels, mins, r0, r1,
                      np.empty(GT.shape[1]))


@njit(**JIT)
def nearest_csr_serial(data, indices, indptr, phi_x, GT, c, labels, mins):
    """:func:`nearest_csr` on the calling thread (no parallel launch)."""
    _nearest_rows_csr(data, indices, indptr, phi_x, GT, c, labels, mins, 0,
                      indptr.shape[0] - 1, np.empty(GT.shape[1]))


@njit(**JIT)
def segment_sums(values, indptr, out):
    """OUT ``out[i] = sum(values[indptr[i]:indptr[i + 1]])``, added left to right (row sums
    of the stored entries of a CSR matrix; an empty row sums to 0)."""
    for i in range(indptr.shape[0] - 1):
        s = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            s += values[p]
        out[i] = s


# --------------------------------------------------------------------------- generator kernels
@njit(**JIT)
def map_scalar(code, which, fn, X, out):
    """OUT ``out[i, l] = s(X[i, l])`` for ``s`` = phi, phi' or its inverse (``which``)."""
    n, d = X.shape
    for i in range(n):
        for l in range(d):
            out[i, l] = scalar_of(code, which, fn, np.float64(X[i, l]))


@njit(**PJIT)
def map_scalar_par(code, which, fn, X, out):
    """:func:`map_scalar`, parallel over rows (the oracle of :func:`map_scalar` run per block
    of rows on the library's thread pool)."""
    n, d = X.shape
    for i in prange(n):
        for l in range(d):
            out[i, l] = scalar_of(code, which, fn, np.float64(X[i, l]))


@njit(**JIT)
def _phi_row(code, fn, X, i):
    """``sum_l phi(X[i, l])``, added left to right. The squared Euclidean loop is written out:
    the generator dispatch inside the loop keeps it from vectorising, and a data pass over
    dask chunks evaluates it on every pass."""
    d = X.shape[1]
    s = 0.0
    if code == SQ:
        for l in range(d):
            x = np.float64(X[i, l])
            s += x * x
    else:
        for l in range(d):
            s += phi_of(code, fn, np.float64(X[i, l]))
    return s


@njit(**JIT)
def _sq_rows(X, r0, r1, out):
    """OUT ``out[i] = sum_l X[i, l]^2`` in float64 for the rows ``r0..r1-1``, each row added left
    to right as in :func:`_phi_row` (the same values), four rows at a time: one row's sum is a
    chain of dependent adds, four rows are four independent chains that the core overlaps."""
    d = X.shape[1]
    r4 = r0 + (r1 - r0) // 4 * 4
    for r in range(r0, r4, 4):
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
        a3 = 0.0
        for l in range(d):
            x0 = np.float64(X[r, l])
            x1 = np.float64(X[r + 1, l])
            x2 = np.float64(X[r + 2, l])
            x3 = np.float64(X[r + 3, l])
            a0 += x0 * x0
            a1 += x1 * x1
            a2 += x2 * x2
            a3 += x3 * x3
        out[r] = a0
        out[r + 1] = a1
        out[r + 2] = a2
        out[r + 3] = a3
    for r in range(r4, r1):
        a = 0.0
        for l in range(d):
            x = np.float64(X[r, l])
            a += x * x
        out[r] = a


_SQ_BLOCK = 1024  # rows per parallel task of rowsum_par (squared Euclidean)


@njit(**JIT)
def rowsum(code, fn, X, out):
    """OUT ``out[i] = sum_l phi(X[i, l])`` for a dense 2-D array."""
    if code == SQ:
        _sq_rows(X, 0, X.shape[0], out)
        return
    for i in range(X.shape[0]):
        out[i] = _phi_row(code, fn, X, i)


@njit(**PJIT)
def rowsum_par(code, fn, X, out):
    """:func:`rowsum`, parallel over rows (blocks of rows for the squared Euclidean sum).

    The library runs the serial :func:`rowsum` (or
    :func:`~bregclust._kernels.builtin_rows.rowsum_builtin`) per block of rows on its thread
    pool instead (each row's sum is its own: the same values); this ``prange`` kernel stays as
    their oracle in the tests."""
    n = X.shape[0]
    if code == SQ:
        for b in prange((n + _SQ_BLOCK - 1) // _SQ_BLOCK):
            _sq_rows(X, b * _SQ_BLOCK, min(n, (b + 1) * _SQ_BLOCK), out)
        return
    for i in prange(n):
        out[i] = _phi_row(code, fn, X, i)


@njit(**JIT)
def _phi0(code, fn):
    """``f(0)``, or 0 when 0 is outside the domain (only stored entries exist then)."""
    f0 = phi_of(code, fn, 0.0)
    return f0 if abs(f0) < np.inf else 0.0


@njit(**JIT)
def _phi_row_csr(code, fn, data, indptr, n_features, f0, i):
    s = 0.0
    for p in range(indptr[i], indptr[i + 1]):
        s += phi_of(code, fn, np.float64(data[p])) - f0
    return s + n_features * f0


@njit(**PJIT)
def rowsum_csr(code, fn, data, indptr, n_features, out):
    """OUT row sums of phi for a CSR matrix: ``sum_stored (f(v) - f(0)) + d f(0)``.

    When ``f(0) = 0`` (sqeuclidean, kl) this touches stored entries only. The library runs
    :func:`rowsum_csr_serial` per block of rows on its thread pool instead (the same values);
    this ``prange`` kernel stays as its oracle in the tests.
    """
    f0 = _phi0(code, fn)
    for i in prange(indptr.shape[0] - 1):
        out[i] = _phi_row_csr(code, fn, data, indptr, n_features, f0, i)


@njit(**JIT)
def rowsum_csr_serial(code, fn, data, indptr, n_features, out):
    """:func:`rowsum_csr` on the calling thread (no parallel launch)."""
    f0 = _phi0(code, fn)
    for i in range(indptr.shape[0] - 1):
        out[i] = _phi_row_csr(code, fn, data, indptr, n_features, f0, i)


# Reassociation only (no finite-math or no-NaN assumptions, so an overflow still reads as inf
# and a NaN stays NaN): a sum of squares of differences has no cancellation, and letting LLVM
# split it over SIMD lanes changes its rounding only. In strict order the sum is one chain of
# dependent adds, slower than a whole Lloyd pass for the exact objective of a fit.
@njit(**dict(JIT, fastmath={"reassoc", "contract"}))
def _sq_distance(X, i, U, j):
    """``sum_l (X[i, l] - U[j, l])^2`` in float64, added in any order."""
    s = 0.0
    for l in range(X.shape[1]):
        t = np.float64(X[i, l]) - np.float64(U[j, l])
        s += t * t
    return s


@njit(**JIT)
def _is_term(x, u):
    """``x/u - log(x/u) - 1`` for ``x, u > 0`` without cancellation: with ``r = (x - u) / u``
    (``x - u`` exact near ``u``) it is ``r - log1p(r)``, summed as its series
    ``r^2/2 - r^3/3 + ...`` for ``|r| < 1e-3`` (the generic form ``-log x + log u + (x - u)/u``
    keeps only ``eps`` of a term near ``r^2 / 2``: a gamma component of relative spread 1e-9
    had its dispersion and log-densities wrong); ``log x - log u`` otherwise, which neither
    overflows nor underflows where ``x / u`` does."""
    r = (x - u) / u
    if abs(r) < 1e-3:
        return r * r * (0.5 - r * (1.0 / 3.0 - r * (0.25 - r * (0.2 - r / 6.0))))
    return x / u - 1.0 - (np.log(x) - np.log(u))


@njit(**JIT)
def _generic_divergence(code, fphi, fdphi, X, i, U, j):
    """``d(X[i], U[j])`` by the definition, with the conventions of :func:`generic_pairwise`."""
    if code == SQ:  # branch-free first (vectorises); the careful loop only when not finite
        s = _sq_distance(X, i, U, j)
        if s < np.inf:
            return s
    s = 0.0
    for l in range(X.shape[1]):
        x = np.float64(X[i, l])
        u = np.float64(U[j, l])
        if x == u:
            continue
        if code == SQ:
            t = (x - u) * (x - u)
        elif code == IS and x > 0.0 and u > 0.0:
            t = _is_term(x, u)
        else:
            t = (phi_of(code, fphi, x) - phi_of(code, fphi, u)
                 - (x - u) * dphi_of(code, fdphi, u))
        if not (t < np.inf):  # NaN or +inf
            return np.inf
        s += t
    return s if s > 0.0 else 0.0


@njit(**JIT)
def generic_pairwise(code, fphi, fdphi, X, U, out):
    """The oracle, OUT ``out[i, j] = sum_l f(x_il) - f(u_jl) - (x_il - u_jl) f'(u_jl)``.

    Conventions at the domain boundary: a coordinate with ``x_l == u_l`` contributes 0, and a
    term that evaluates to NaN (``0 * inf``) or ``+inf`` makes the divergence ``+inf``. The
    squared Euclidean term is evaluated as ``(x - u)^2``, which is the same quantity without the
    cancellation (and overflow) of ``x^2 - u^2 - 2 (x - u) u``.
    """
    for i in range(X.shape[0]):
        for j in range(U.shape[0]):
            out[i, j] = _generic_divergence(code, fphi, fdphi, X, i, U, j)


@njit(**PJIT)
def generic_assigned(code, fphi, fdphi, X, U, labels, w, out):
    """OUT ``out[i] = d(x_i, u_{labels[i]})`` by the definition (:func:`generic_pairwise`) for
    the rows with ``w[i] > 0``, 0 for the others (``0 * inf`` counts as 0 in an objective).

    One pass over ``X``, no copies: the exact objective of a fit. Rows in parallel; each value
    is computed on its own, so ``out`` does not depend on the thread count (the caller sums).
    The library runs :func:`generic_assigned_rows` instead (per block of rows on its pool);
    this ``prange`` kernel stays as its oracle in the tests."""
    # The squared Euclidean distance is called from the row loop itself, where it is inlined
    # (reached through _generic_divergence it stays one call per row, dearer than the row);
    # the careful definition runs only for a non-finite value.
    for i in prange(X.shape[0]):
        out[i] = 0.0
        if w[i] > 0:
            s = _sq_distance(X, i, U, labels[i]) if code == SQ else np.inf
            out[i] = s if s < np.inf else _generic_divergence(code, fphi, fdphi, X, i, U, labels[i])


@njit(**JIT)
def generic_assigned_rows(code, fphi, fdphi, X, U, labels, w, out, r0, r1):
    """:func:`generic_assigned` for the rows ``r0..r1-1`` on the calling thread, the same code
    per row (so the same values). The library's kernel: the form runs it on the whole array,
    or one block of rows per worker of the engine's pool
    (:func:`bregclust._execution.row_blocks`), where a serial kernel compiles in a fraction of
    the ``prange`` kernel's time; :func:`generic_assigned` stays as its oracle in the tests."""
    for i in range(r0, r1):
        out[i] = 0.0
        if w[i] > 0:
            s = _sq_distance(X, i, U, labels[i]) if code == SQ else np.inf
            out[i] = s if s < np.inf else _generic_divergence(code, fphi, fdphi, X, i, U, labels[i])


@njit(**PJIT)
def l1_pairwise_exact(X, U, out):
    """OUT ``out``: :func:`l1_pairwise_rows` of every row, the rows in parallel (``prange``)
    (:meth:`Divergence.generic_pairwise` of l1_subgradient)."""
    for i in prange(X.shape[0]):
        l1_pairwise_rows(X, U, out, i, i + 1)


@njit(**JIT)
def l1_pairwise_rows(X, U, out, r0, r1):
    """OUT ``out[r0:r1]``: the l1_subgradient definition ``sum_l (0 if x_l u_l > 0 else 2 |x_l|)``
    of the rows ``r0..r1-1``, on the calling thread.

    ``x_l u_l > 0`` is decided by comparing signs, not by the product, which underflows to 0
    for tiny values (``1e-200 * 1e-200``). The exact objective of an l1_subgradient fit runs it
    per block of rows on the engine's thread pool, where a serial kernel compiles in a fraction
    of the ``prange`` kernel's time."""
    d = X.shape[1]
    k = U.shape[0]
    for i in range(r0, r1):
        for j in range(k):
            s = 0.0
            for l in range(d):
                x = X[i, l]
                u = U[j, l]
                if not ((x > 0.0 and u > 0.0) or (x < 0.0 and u < 0.0)):
                    # float(): float64 terms for float32 rows also when interpreted
                    # (NUMBA_DISABLE_JIT: numpy keeps 2.0 * float32 in float32)
                    s += 2.0 * abs(float(x))
            out[i, j] = s
