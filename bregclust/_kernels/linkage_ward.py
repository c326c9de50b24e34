"""The nearest-neighbour chain for Ward costs (sqeuclidean, and mahalanobis after whitening) on
cluster centroids, in ``O(n d)`` memory like ``fastcluster.linkage_vector`` (Muellner 2011).
Ward costs are reducible, so the chain finds exact reciprocal nearest neighbours.
"""

import numpy as np
from numba import njit

from .generators import JIT


# fastmath: the Ward kernel is a plain sum of squared differences (no logs, no subtraction of
# nearly equal sums), so letting LLVM reassociate it into SIMD lanes only changes rounding.
@njit(**dict(JIT, fastmath=True))
def _ward_row(A, a, act, na, w, out):
    d = A.shape[1]
    wa = w[a]
    for t in range(na):
        x = act[t]
        s = 0.0
        for k in range(d):
            u = A[a, k] - A[x, k]
            s += u * u
        out[t] = wa * w[x] / (wa + w[x]) * s


@njit(**JIT)
def nn_chain_ward(A, w, out_i, out_j, out_h):
    """Nearest-neighbour chain for Ward costs on centroids (``A`` holds the running cluster
    means and is overwritten). Merges are written in chain order (not sorted)."""
    n, d = A.shape
    act = np.arange(n)
    pos = np.arange(n)
    na = n
    chain = np.empty(n, dtype=np.int64)
    cl = 0
    row = np.empty(n)
    formed = np.zeros(n)
    for t in range(n - 1):
        if cl == 0:
            chain[0] = act[0]
            cl = 1
        while True:
            a = chain[cl - 1]
            prev = chain[cl - 2] if cl >= 2 else -1
            _ward_row(A, a, act, na, w, row)
            best = np.inf
            bx = -1
            if prev >= 0:
                best = row[pos[prev]]
                bx = prev
            for s in range(na):
                x = act[s]
                if x != a and row[s] < best:
                    best = row[s]
                    bx = x
            if bx == prev:
                break
            chain[cl] = bx
            cl += 1
        cl -= 2
        lo = min(a, prev)
        hi = max(a, prev)
        out_i[t] = lo
        out_j[t] = hi
        # reducibility makes a merge at least as costly as the merges that formed its parts;
        # the clamp only removes rounding-level inversions so that sorting keeps children first
        best = max(best, formed[lo], formed[hi])
        formed[hi] = best
        out_h[t] = best
        wl = w[lo]
        wh = w[hi]
        for k in range(d):
            A[hi, k] = (wl * A[lo, k] + wh * A[hi, k]) / (wl + wh)
        w[hi] = wl + wh
        # swap-remove lo from the active list
        p = pos[lo]
        last = act[na - 1]
        act[p] = last
        pos[last] = p
        na -= 1
