"""Exact brute-force cosine kNN of unit-norm rows, one task or two tasks in one pass.

The neighbours of scikit-learn's ``NearestNeighbors`` / ``kneighbors_graph`` (brute force,
Euclidean) on the same rows, computed by :mod:`bregclust._kernels.knn` without a full row of
distances per query and without partitioning it (see there why). Queries whose ``k``-th
distance is tied with a row left out are redone as scikit-learn does them (the row of
distances by the same float operations, ``np.argpartition``), so on sparse rows with sorted
indices the neighbour sets are scikit-learn's, ties included; on dense rows the BLAS blocks may
round differently from scikit-learn's. Used by :func:`bregclust.spectral_mtc.task_graph` and
:func:`bregclust.spectral_mtc.cross_task_graph`.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.utils.extmath import row_norms
from sklearn.utils.sparsefuncs import sparse_matmul_to_dense

from ._kernels.knn import knn_block_dense, knn_cross_csr, knn_self_csr

#: Bytes of one block of dense similarities (dense rows only).
BLOCK_BYTES = 64 * 2 ** 20


def _rows(U):
    """float64 CSR with sorted indices (a copy when anything changes), or a float64 array."""
    if sp.issparse(U):
        U = sp.csr_matrix(U, dtype=np.float64)
        if not U.has_sorted_indices:
            U = U.copy()
            U.sort_indices()
        return U
    return np.ascontiguousarray(U, dtype=np.float64)


def _csr_args(U):
    """``indptr, indices`` of a CSR matrix as unsigned ints (numba then indexes without the
    wraparound test of signed indices: the product ran 35 % faster on NG20-1) and ``data``."""
    idx = np.uint32 if U.shape[1] < 2 ** 32 and U.nnz < 2 ** 32 else np.uint64
    return U.indptr.astype(idx), U.indices.astype(idx), U.data


def _buffers(n, k):
    return (np.full((n, k), np.inf), np.full((n, k), -1, dtype=np.int64), np.full(n, np.inf),
            np.full(n, -1.0))


def _redo_ties(ind, worst, tie, Q, R, RT, sq_q, sq_r, self_graph):
    """Queries with a tie across the ``k``-th distance, redone as scikit-learn's brute-force
    ``kneighbors`` does them: ``max(-2 Q R^T + |q|^2 + |r|^2, 0)`` (0 on the diagonal of a
    task's own graph), ``np.argpartition``, then sorted by distance."""
    k = ind.shape[1]
    for i in np.flatnonzero(tie == worst):
        if sp.issparse(Q):
            s = sparse_matmul_to_dense(Q[i:i + 1], RT)[0]
        else:
            s = (Q[i:i + 1] @ R.T)[0]
        d = -2 * s
        d += sq_q[i]
        d += sq_r
        np.maximum(d, 0, out=d)
        if self_graph:
            d[i] = 0.0
        sel = np.argpartition(d, k - 1)[:k]
        ind[i] = sel[np.argsort(d[sel])]


def kneighbors_self(U, k, block_bytes=BLOCK_BYTES):
    """Indices ``(n, k)`` of every row's ``k`` nearest rows of ``U``, itself included,
    nearest first (``1 <= k <= n``); dense rows in blocks of at most ``block_bytes`` of
    similarities."""
    U = _rows(U)
    n = U.shape[0]
    vals, ind, worst, tie = _buffers(n, k)
    sq = np.asarray(row_norms(U, squared=True), dtype=np.float64)
    T = None
    if sp.issparse(U):
        T = sp.csr_matrix(U.T)  # U's columns; row indices sorted within each
        knn_self_csr(*_csr_args(U), *_csr_args(T), sq, vals, ind, worst, tie)
    else:
        step = max(1, min(n, block_bytes // (8 * max(n, 1))))
        for a0 in range(0, n, step):
            S = U[a0:a0 + step] @ U.T
            knn_block_dense(S, a0, sq, sq, True, False, vals, ind, worst, tie, vals, ind,
                            worst, tie)
    _redo_ties(ind, worst, tie, U, U, T, sq, sq, True)
    return ind


def kneighbors_cross(A, B, k_a, k_b, block_bytes=BLOCK_BYTES):
    """Both directions between two row sets: ``(ind_a, ind_b)``, ``ind_a[i]`` the ``k_a``
    nearest rows of ``B`` to row ``i`` of ``A`` (nearest first), ``ind_b`` the ``k_b``
    nearest rows of ``A`` to each row of ``B`` (``1 <= k_a <= n_b``, ``1 <= k_b <= n_a``);
    dense rows in blocks of at most ``block_bytes`` of similarities."""
    A, B = _rows(A), _rows(B)
    na, nb = A.shape[0], B.shape[0]
    va, ia, wa, ta = _buffers(na, k_a)
    vb, ib, wb, tb = _buffers(nb, k_b)
    sa = np.asarray(row_norms(A, squared=True), dtype=np.float64)
    sb = np.asarray(row_norms(B, squared=True), dtype=np.float64)
    if sp.issparse(A) and sp.issparse(B):
        TA, TB = sp.csr_matrix(A.T), sp.csr_matrix(B.T)
        knn_cross_csr(*_csr_args(A), sa, *_csr_args(TB), sb, va, ia, wa, ta, vb, ib, wb, tb)
    else:
        A = A.toarray() if sp.issparse(A) else A
        B = B.toarray() if sp.issparse(B) else B
        TA = TB = None
        step = max(1, min(na, block_bytes // (8 * max(nb, 1))))
        for a0 in range(0, na, step):
            S = A[a0:a0 + step] @ B.T
            knn_block_dense(S, a0, sa, sb, False, True, va, ia, wa, ta, vb, ib, wb, tb)
    _redo_ties(ia, wa, ta, A, B, TB, sa, sb, False)
    _redo_ties(ib, wb, tb, B, A, TA, sb, sa, False)
    return ia, ib


def connectivity(ind, n_cols):
    """The 0/1 CSR matrix with ones at ``(i, ind[i, :])``, indices sorted."""
    n, k = ind.shape
    C = sp.csr_matrix((np.ones(n * k), ind.ravel(), np.arange(0, n * k + 1, k)),
                      shape=(n, n_cols))
    C.sort_indices()
    return C
