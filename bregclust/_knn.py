"""Exact brute-force cosine kNN of sparse unit-norm rows, one task or two tasks in one pass.

The neighbours of scikit-learn's ``NearestNeighbors`` / ``kneighbors_graph`` (brute force,
Euclidean) on the same rows, computed by :mod:`bregclust._kernels.knn` without a full row of
distances per query and without partitioning it (see there why).

scikit-learn ``np.argpartition``-s full rows of distances of sparse rows; the kernel's sums are
scikit-learn's float for float, and a query whose ``k``-th distance is tied with a row left
out is redone as scikit-learn does it (its row of distances by the same float operations,
``np.argpartition``): the neighbour sets are scikit-learn's, ties included. Sparse rows only:
on dense rows scikit-learn's ``ArgKmin`` (BLAS blocks and a heap per query) is fast already.
Used by :func:`bregclust.spectral_mtc.task_graph` and
:func:`bregclust.spectral_mtc.cross_task_graph`.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.utils.extmath import row_norms

from ._kernels.knn import knn_cross_csr, knn_self_csr

try:  # scikit-learn >= 1.8: its Gustavson product of two CSR matrices into a dense array
    from sklearn.utils.sparsefuncs import sparse_matmul_to_dense as _sk_matmul_to_dense
except ImportError:  # older releases compute sparse distances through scipy's product
    _sk_matmul_to_dense = None


def _row_products(q, RT):
    """The products of the one-row CSR matrix ``q`` with the columns of ``RT``, dense, as the
    installed scikit-learn computes them for sparse Euclidean distances (its own CSR product
    since 1.8, scipy's before; both add ``q_f r_jf`` over ``q``'s stored features in order)."""
    if _sk_matmul_to_dense is not None:
        return _sk_matmul_to_dense(q, RT)[0]
    return (q @ RT).toarray()[0]


def _rows(U):
    """float64 CSR with sorted indices (a copy when anything changes)."""
    U = sp.csr_matrix(U, dtype=np.float64)
    if not U.has_sorted_indices:
        U = U.copy()
        U.sort_indices()
    return U


def _csr_args(U):
    """``indptr, indices`` of a CSR matrix as unsigned ints (numba then indexes without the
    wraparound test of signed indices: the product ran 35 % faster on NG20-1) and ``data``."""
    idx = np.uint32 if U.shape[1] < 2 ** 32 and U.nnz < 2 ** 32 else np.uint64
    return U.indptr.astype(idx), U.indices.astype(idx), U.data


def _buffers(n, k):
    return (np.full((n, k), np.inf), np.full((n, k), -1, dtype=np.int64), np.full(n, np.inf),
            np.full(n, -1.0))


def _redo_ties(ind, worst, tie, Q, RT, sq_q, sq_r, self_graph):
    """Queries with a tie across the ``k``-th distance, redone as scikit-learn's brute-force
    ``kneighbors`` does them on sparse rows: ``max(-2 Q R^T + |q|^2 + |r|^2, 0)`` (``RT`` is
    ``R^T`` as CSR) (0 on the diagonal of a
    task's own graph), ``np.argpartition``, then sorted by distance."""
    k = ind.shape[1]
    for i in np.flatnonzero(tie == worst):
        s = _row_products(Q[i:i + 1], RT)
        d = -2 * s
        d += sq_q[i]
        d += sq_r
        np.maximum(d, 0, out=d)
        if self_graph:
            d[i] = 0.0
        sel = np.argpartition(d, k - 1)[:k]
        ind[i] = sel[np.argsort(d[sel])]


def kneighbors_self(U, k):
    """Indices ``(n, k)`` of every row's ``k`` nearest rows of the sparse rows ``U``, itself
    included, nearest first (``1 <= k <= n``)."""
    U = _rows(U)
    n = U.shape[0]
    vals, ind, worst, tie = _buffers(n, k)
    sq = np.asarray(row_norms(U, squared=True), dtype=np.float64)
    T = sp.csr_matrix(U.T)  # U's columns; row indices sorted within each
    knn_self_csr(*_csr_args(U), *_csr_args(T), sq, vals, ind, worst, tie)
    _redo_ties(ind, worst, tie, U, T, sq, sq, True)
    return ind


def kneighbors_cross(A, B, k_a, k_b):
    """Both directions between two sets of sparse rows: ``(ind_a, ind_b)``, ``ind_a[i]`` the
    ``k_a`` nearest rows of ``B`` to row ``i`` of ``A`` (nearest first), ``ind_b`` the ``k_b``
    nearest rows of ``A`` to each row of ``B`` (``1 <= k_a <= n_b``, ``1 <= k_b <= n_a``)."""
    A, B = _rows(A), _rows(B)
    va, ia, wa, ta = _buffers(A.shape[0], k_a)
    vb, ib, wb, tb = _buffers(B.shape[0], k_b)
    sa = np.asarray(row_norms(A, squared=True), dtype=np.float64)
    sb = np.asarray(row_norms(B, squared=True), dtype=np.float64)
    TA, TB = sp.csr_matrix(A.T), sp.csr_matrix(B.T)
    knn_cross_csr(*_csr_args(A), sa, *_csr_args(TB), sb, va, ia, wa, ta, vb, ib, wb, tb)
    _redo_ties(ia, wa, ta, A, TB, sa, sb, False)
    _redo_ties(ib, wb, tb, B, TA, sb, sa, False)
    return ia, ib


def connectivity(ind, n_cols):
    """The 0/1 CSR matrix with ones at ``(i, ind[i, :])``, indices sorted."""
    n, k = ind.shape
    C = sp.csr_matrix((np.ones(n * k), ind.ravel(), np.arange(0, n * k + 1, k)),
                      shape=(n, n_cols))
    C.sort_indices()
    return C
