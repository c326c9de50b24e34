"""Exact cosine k-nearest-neighbour kernels for the graphs of :mod:`bregclust.spectral_mtc`.

The graphs are scikit-learn's brute-force kNN of unit-norm rows (``kneighbors_graph``): the
squared Euclidean distance ``d(i, j) = max((-2 s_ij + |x_i|^2) + |y_j|^2, 0)`` with
``s_ij = <x_i, y_j>``, the same float operations in the same order, so the same neighbours
(a row's distance to itself is 0 in a task's own graph). Hand-written because scikit-learn
materialises every query's full row of distances and ``np.argpartition``-s it (70 % of the
time of the two own graphs of NG20-1), computes ``S`` and ``S^T`` separately when both
directions are wanted, and never uses the symmetry of a task's own ``S = U U^T``. Here:

* one pass of Gustavson's row-by-row product (the algorithm of scikit-learn's
  ``csr_matmul_csr_to_dense``: ``s_ij`` accumulates ``x_if y_jf`` over row ``i``'s features in
  stored order; with sorted indices ``s_ij`` and ``s_ji`` are the same float sums) over the
  upper triangle ``j >= i`` of a task's own ``S``, or over the whole cross-task ``S``; each
  ``s_ij`` is offered at once to query ``i`` and to query ``j``;
* every query keeps its ``k`` smallest distances in a sorted list of length ``k``; a candidate
  enters only when strictly smaller than the current ``k``-th, and candidates arrive in
  increasing index, so ties at the ``k``-th distance keep the smallest indices (a stable sort's
  first ``k``). scikit-learn ``np.argpartition``-s full rows of distances of sparse rows,
  which chooses among such ties in its own way, so a query whose ``k``-th distance is shared by a candidate left out is flagged
  (``tie[q] == worst[q]`` at the end) and the caller redoes it the way scikit-learn does
  (duplicate documents make a few such rows in a text corpus).

OUT buffers (``vals``, ``ind``, ``worst``, ``tie``) are allocated and initialised by the
caller: ``vals`` and ``worst`` to ``+inf``, ``ind`` to ``-1``, ``tie`` to ``-1``.
"""

import numpy as np
from numba import njit

from .generators import INNER_JIT, JIT


@njit(**INNER_JIT)
def _offer(q, d, cand, vals, ind, worst, tie):
    """Insert candidate ``cand`` at distance ``d`` into query ``q``'s sorted top list (the
    caller has checked ``d < worst[q]``, the current ``k``-th distance); an evicted candidate
    at the new ``k``-th distance is a tie across the cut, recorded in ``tie[q]``."""
    p = vals.shape[1] - 1
    out = vals[q, p]
    while p > 0 and vals[q, p - 1] > d:
        vals[q, p] = vals[q, p - 1]
        ind[q, p] = ind[q, p - 1]
        p -= 1
    vals[q, p] = d
    ind[q, p] = cand
    worst[q] = vals[q, vals.shape[1] - 1]
    if out == worst[q]:
        tie[q] = out


@njit(**JIT)
def knn_self_csr(indptr, indices, data, t_indptr, t_indices, t_data, sq, vals, ind, worst, tie):
    """Own-task kNN of CSR rows ``U`` (sorted indices): ``U^T`` given as CSR (``t_*``, row
    indices sorted within each feature), ``sq`` the squared row norms. Fills ``vals``/``ind``
    of shape ``(n, k)``: each row's ``k`` nearest rows (itself included, at distance 0)."""
    n = indptr.shape[0] - 1
    nf = t_indptr.shape[0] - 1
    buf = np.zeros(n)
    ptr = t_indptr[:nf].copy()  # per feature: first entry whose row is >= the current row
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            f = indices[p]
            a = data[p]
            q = ptr[f]
            end = t_indptr[f + 1]
            while q < end and t_indices[q] < i:
                q += 1
            ptr[f] = q
            for r in range(q, end):
                buf[t_indices[r]] += a * t_data[r]
        sqi = sq[i]
        buf[i] = 0.0
        if 0.0 < worst[i]:
            _offer(i, 0.0, i, vals, ind, worst, tie)
        elif 0.0 == worst[i]:
            tie[i] = 0.0
        for j in range(i + 1, n):
            # the two offers stay written out here and in knn_cross_csr: one shared @njit
            # helper for "clamp, offer or record the tie" made both graphs 2.5-2.9x slower on
            # NG20-1 (not inlined into this loop; session 17, same neighbour lists)
            m2 = -2.0 * buf[j]
            buf[j] = 0.0
            d = (m2 + sqi) + sq[j]
            if d < 0.0:
                d = 0.0
            if d < worst[i]:
                _offer(i, d, j, vals, ind, worst, tie)
            elif d == worst[i]:
                tie[i] = d
            d = (m2 + sq[j]) + sqi
            if d < 0.0:
                d = 0.0
            if d < worst[j]:
                _offer(j, d, i, vals, ind, worst, tie)
            elif d == worst[j]:
                tie[j] = d


@njit(**JIT)
def knn_cross_csr(indptr, indices, data, sq_a, t_indptr, t_indices, t_data, sq_b, vals_a,
                  ind_a, worst_a, tie_a, vals_b, ind_b, worst_b, tie_b):
    """Both directions of the cross kNN of CSR rows ``A`` and ``B`` (sorted indices): ``B^T``
    as CSR (``t_*``); ``vals_a``/``ind_a`` of shape ``(n_a, k_a)`` get each row of ``A``'s
    nearest rows of ``B``, ``vals_b``/``ind_b`` of shape ``(n_b, k_b)`` the other way."""
    na = indptr.shape[0] - 1
    nb = sq_b.shape[0]
    buf = np.zeros(nb)
    for i in range(na):
        for p in range(indptr[i], indptr[i + 1]):
            f = indices[p]
            a = data[p]
            for r in range(t_indptr[f], t_indptr[f + 1]):
                buf[t_indices[r]] += a * t_data[r]
        sqi = sq_a[i]
        for j in range(nb):
            m2 = -2.0 * buf[j]
            buf[j] = 0.0
            d = (m2 + sqi) + sq_b[j]
            if d < 0.0:
                d = 0.0
            if d < worst_a[i]:
                _offer(i, d, j, vals_a, ind_a, worst_a, tie_a)
            elif d == worst_a[i]:
                tie_a[i] = d
            d = (m2 + sq_b[j]) + sqi
            if d < 0.0:
                d = 0.0
            if d < worst_b[j]:
                _offer(j, d, i, vals_b, ind_b, worst_b, tie_b)
            elif d == worst_b[j]:
                tie_b[j] = d
