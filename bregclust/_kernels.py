"""Numba kernels built from a Bregman generator.

Two families live here:

* **Fast kernels.** For every differentiable generator the ``n x k x d`` part of the pairwise
  divergence is a matrix product (docs: guide/divergences)::

      D[i, j] = phi(x_i) + c_j - <x_i, g_j>,   g_j = grad phi(u_j),  c_j = <u_j, g_j> - phi(u_j)

  so BLAS (dense) or a sparse-dense product (CSR) does the heavy work and numba only fuses the
  elementwise add with the argmin (:func:`fused_argmin`), chunk by chunk so memory stays
  ``O(chunk x k)``.

* **Generic kernels** built from the scalar ``f`` and ``f'`` of a separable generator by the
  definition ``sum_l f(x_l) - f(u_l) - (x_l - u_l) f'(u_l)``. They are slow and obvious, and
  stay as the oracle for the fast ones (tests compare the two for every registered divergence).

Kernels never validate, warn or allocate in their inner loops; the callers in
``divergences.py`` validate and allocate.
"""

import math

import numpy as np
from numba import njit, prange

# One preset for built-in kernels. fastmath is deliberately off everywhere: the kernels evaluate
# logs near the domain edge (kl, Itakura-Saito) and reassociation there changes results.
_JIT = dict(cache=True, nogil=True)
_PJIT = dict(cache=True, nogil=True, parallel=True)

DOMAIN_CODES = {"real": 0, "nonnegative": 1, "positive": 2}


# --------------------------------------------------------------------------- generator-free kernels
@njit(**_JIT)
def _nearest(p, c, phi_xi, i, labels, mins):
    """Row ``i`` of the argmin: ``labels[i] = argmin_j c[j] - p[j]``, ``mins[i]`` the divergence
    ``phi_xi + c[j] - p[j]`` clamped at 0. Returns the label."""
    best = np.inf
    bj = 0
    for j in range(c.shape[0]):
        v = c[j] - p[j]
        if v < best:
            best = v
            bj = j
    labels[i] = bj
    v = phi_xi + best
    mins[i] = v if v > 0.0 else 0.0
    return bj


@njit(**_JIT)
def fused_argmin(P, phi_x, c, labels, mins):
    """``labels[i] = argmin_j phi_x[i] + c[j] - P[i, j]`` and the minimum (clamped at 0).

    ``P`` is the GEMM block ``X G^T`` of one chunk. The clamp removes the tiny negative values
    that cancellation in the GEMM form can produce; a Bregman divergence is never negative.
    Serial on purpose: the block is cache-sized and BLAS already uses every core for the GEMM;
    a parallel launch per chunk cost more than the pass itself (measured in
    benchmarks/assign_speed.py on the 2-core machine).
    """
    for i in range(P.shape[0]):
        _nearest(P[i], c, phi_x[i], i, labels, mins)


@njit(**_JIT)
def fused_pairwise(P, phi_x, c):
    """In place: ``P[i, j] <- max(phi_x[i] + c[j] - P[i, j], 0)``."""
    n, k = P.shape
    for i in range(n):
        for j in range(k):
            v = phi_x[i] + c[j] - P[i, j]
            P[i, j] = v if v > 0.0 else 0.0


@njit(**_JIT)
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


@njit(**_JIT)
def weighted_sums_csr(data, indices, indptr, labels, w, S, W):
    """As :func:`weighted_sums_dense` for a CSR matrix (stored entries only)."""
    n = indptr.shape[0] - 1
    for i in range(n):
        j = labels[i]
        wi = w[i]
        W[j] += wi
        for p in range(indptr[i], indptr[i + 1]):
            S[j, indices[p]] += wi * data[p]


@njit(**_PJIT)
def lloyd_step_dense(X, phi_x, GT, c, w, chunk, labels, mins, S, W):
    """One Lloyd pass in one read of ``X``: nearest centre of every row and the per-cluster
    weighted sums for those labels.

    ``D[i, j] = phi_x[i] + c[j] - (X G^T)[i, j]`` (the GEMM form), ``GT = G^T`` (d x k,
    C-contiguous). The rows are split into ``T = S.shape[0]`` contiguous blocks, one per thread;
    each block goes through ``chunk`` rows at a time: one BLAS product into a cache-sized buffer,
    the argmin, then ``S[t, label] += w x`` while the rows are still in cache. Thread ``t``
    accumulates into ``S[t]``/``W[t]``; the caller adds the ``T`` slices. The split is by block,
    not by scheduler, so the sums (and hence the results) do not depend on thread timing.

    Written by hand because no library fuses the product, the argmin and the centre sums
    (scikit-learn does the same fusion in Cython for the squared Euclidean case only); BLAS is
    called through numba's ``np.dot(a, b, out)``, so the caller must limit BLAS to one thread.
    """
    n, d = X.shape
    k = GT.shape[1]
    T = S.shape[0]
    per = (n + T - 1) // T
    for t in prange(T):
        P = np.empty((chunk, k))
        St = S[t]
        Wt = W[t]
        s0 = t * per
        e0 = min(n, s0 + per)
        for s in range(s0, e0, chunk):
            e = min(e0, s + chunk)
            Pc = P[:e - s]
            np.dot(X[s:e], GT, Pc)
            for i in range(e - s):
                r = s + i
                bj = _nearest(Pc[i], c, phi_x[r], r, labels, mins)
                wi = w[r]
                Wt[bj] += wi
                for l in range(d):
                    St[bj, l] += wi * X[r, l]


@njit(**_PJIT)
def lloyd_step_csr(data, indices, indptr, phi_x, GT, c, w, labels, mins, S, W):
    """:func:`lloyd_step_dense` for a CSR matrix: the product row by row over stored entries
    (``GT`` rows are contiguous in ``k``), then the argmin and the sums over stored entries."""
    n = indptr.shape[0] - 1
    k = GT.shape[1]
    T = S.shape[0]
    per = (n + T - 1) // T
    for t in prange(T):
        acc = np.empty(k)
        St = S[t]
        Wt = W[t]
        for r in range(t * per, min(n, (t + 1) * per)):
            acc[:] = 0.0
            for p in range(indptr[r], indptr[r + 1]):
                v = data[p]
                g = GT[indices[p]]
                for j in range(k):
                    acc[j] += v * g[j]
            bj = _nearest(acc, c, phi_x[r], r, labels, mins)
            wi = w[r]
            Wt[bj] += wi
            for p in range(indptr[r], indptr[r + 1]):
                St[bj, indices[p]] += wi * data[p]


# --------------------------------------------------------------------------- generator factories
def make_map(f, parallel=False):
    """Elementwise ``out = f(X)`` over a 2-D array (``parallel``: over rows)."""

    @njit(nogil=True, parallel=parallel)
    def _map(X, out):
        n, d = X.shape
        for i in prange(n):
            for l in range(d):
                out[i, l] = f(X[i, l])

    return _map


def make_map1(f):
    """Elementwise ``out = f(x)`` over a 1-D array."""

    @njit(nogil=True)
    def _map1(x, out):
        for i in range(x.shape[0]):
            out[i] = f(x[i])

    return _map1


def make_rowsum(f, parallel=False):
    """``out[i] = sum_l f(X[i, l])`` for a dense 2-D array (``parallel``: over rows)."""

    @njit(nogil=True, parallel=parallel)
    def _rowsum(X, out):
        n, d = X.shape
        for i in prange(n):
            s = 0.0
            for l in range(d):
                s += f(X[i, l])
            out[i] = s

    return _rowsum


def make_rowsum_csr(f, parallel=False):
    """Row sums of ``f`` for a CSR matrix: ``sum_stored (f(v) - f(0)) + d f(0)``.

    When ``f(0) = 0`` (sqeuclidean, kl) this touches stored entries only.
    """

    @njit(nogil=True, parallel=parallel)
    def _rowsum_csr(data, indptr, n_features, out):
        f0 = f(0.0)
        if not (abs(f0) < np.inf):
            f0 = 0.0  # 0 is outside the domain (validated before); only stored entries exist
        n = indptr.shape[0] - 1
        for i in prange(n):
            s = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                s += f(data[p]) - f0
            out[i] = s + n_features * f0

    return _rowsum_csr


def make_generic_pairwise(f, df):
    """The oracle: ``D[i, j] = sum_l f(x_il) - f(u_jl) - (x_il - u_jl) f'(u_jl)``.

    Conventions at the domain boundary: a coordinate with ``x_l == u_l`` contributes 0, and a
    term that evaluates to NaN (``0 * inf``) or ``+inf`` makes the divergence ``+inf``.
    """

    @njit(nogil=True)
    def _pairwise(X, U, out):
        n, d = X.shape
        k = U.shape[0]
        for i in range(n):
            for j in range(k):
                s = 0.0
                for l in range(d):
                    x = X[i, l]
                    u = U[j, l]
                    if x == u:
                        continue
                    t = f(x) - f(u) - (x - u) * df(u)
                    if not (t < np.inf):  # NaN or +inf
                        s = np.inf
                        break
                    s += t
                out[i, j] = s if s > 0.0 else 0.0

    return _pairwise


def make_inverse(df, domain_code):
    """A scalar inverse of an increasing ``f'`` by bracketing and bisection.

    Used when a registered generator gives no ``dphi_inv``. On ``positive``/``nonnegative``
    domains the bracket grows geometrically towards 0 and infinity; on ``real`` it grows
    symmetrically. Bisection runs until the bracket stops shrinking (machine precision).
    """

    @njit(nogil=True)
    def _inv(t):
        if domain_code == 0:
            lo, hi = -1.0, 1.0
            for _ in range(2100):
                if df(lo) <= t:
                    break
                lo *= 2.0
            for _ in range(2100):
                if df(hi) >= t:
                    break
                hi *= 2.0
            for _ in range(2200):
                mid = 0.5 * (lo + hi)
                if mid <= lo or mid >= hi:
                    break
                if df(mid) < t:
                    lo = mid
                else:
                    hi = mid
            return 0.5 * (lo + hi)
        lo, hi = 1.0, 1.0
        for _ in range(2100):
            if lo < 1e-300 or df(lo) <= t:
                break
            lo *= 0.5
        for _ in range(2100):
            if hi > 1e300 or df(hi) >= t:
                break
            hi *= 2.0
        for _ in range(2200):
            mid = math.sqrt(lo) * math.sqrt(hi) if hi > 4.0 * lo else 0.5 * (lo + hi)
            if mid <= lo or mid >= hi:
                break
            if df(mid) < t:
                lo = mid
            else:
                hi = mid
        return 0.5 * (lo + hi)

    return _inv


# --------------------------------------------------------------------------- built-in scalar generators
@njit(**_JIT)
def sq_phi(x):
    return x * x


@njit(**_JIT)
def sq_dphi(x):
    return 2.0 * x


@njit(**_JIT)
def sq_dphi_inv(t):
    return 0.5 * t


@njit(**_JIT)
def kl_phi(x):
    if x > 0.0:
        return x * math.log(x) - x
    if x == 0.0:
        return 0.0
    return np.nan


@njit(**_JIT)
def kl_dphi(x):
    if x > 0.0:
        return math.log(x)
    if x == 0.0:
        return -np.inf
    return np.nan


@njit(**_JIT)
def kl_dphi_inv(t):
    return math.exp(t)


@njit(**_JIT)
def is_phi(x):
    if x > 0.0:
        return -math.log(x)
    return np.inf if x == 0.0 else np.nan


@njit(**_JIT)
def is_dphi(x):
    if x > 0.0:
        return -1.0 / x
    return -np.inf if x == 0.0 else np.nan


@njit(**_JIT)
def is_dphi_inv(t):
    return -1.0 / t


@njit(**_JIT)
def abs_phi(x):
    return abs(x)


@njit(**_JIT)
def sign_dphi(x):
    # A subgradient of |x| (0 at 0). Only used by generic code paths; the l1 divergence has its
    # own kernels (it is not differentiable).
    if x > 0.0:
        return 1.0
    if x < 0.0:
        return -1.0
    return 0.0


@njit(**_PJIT)
def l1_pairwise_exact(X, U, out):
    """The l1_subgradient definition: ``sum_l (0 if x_l u_l > 0 else 2 |x_l|)`` (oracle)."""
    n, d = X.shape
    k = U.shape[0]
    for i in prange(n):
        for j in range(k):
            s = 0.0
            for l in range(d):
                if not (X[i, l] * U[j, l] > 0.0):
                    s += 2.0 * abs(X[i, l])
            out[i, j] = s
