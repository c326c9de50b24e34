"""Slow, obvious dense references for bregclust.kernel_mtc (LNKMTC / LSKMTC).

Everything here forms the n x n matrices the library avoids, straight from the paper's
equations, so tests can compare the operator/sparse/iterative code against it on small n.
"""

import numpy as np
import scipy.linalg as sla
from scipy.optimize import linprog


def dense_S(task_sizes):
    """Eq. 6 entry by entry: (m-1)/n_k^2 within task k, -1/(n_k n_l) across tasks k != l."""
    sizes = list(task_sizes)
    m = len(sizes)
    task = np.repeat(np.arange(m), sizes)
    n = task.size
    S = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            k, l = task[i], task[j]
            if k == l:
                S[i, j] = (m - 1) / sizes[k] ** 2
            else:
                S[i, j] = -1.0 / (sizes[k] * sizes[l])
    return S


def pairwise_mmd_sum(K, task_sizes):
    """Sum over unordered task pairs of ||mean phi(task k) - mean phi(task l)||^2 from K."""
    sizes = list(task_sizes)
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    blocks = [slice(bounds[t], bounds[t + 1]) for t in range(len(sizes))]
    total = 0.0
    for k in range(len(sizes)):
        for l in range(k + 1, len(sizes)):
            a, b = blocks[k], blocks[l]
            total += K[a, a].mean() + K[b, b].mean() - 2.0 * K[a, b].mean()
    return total


def dense_knn_graph(Xs, n_neighbors):
    """Eq. 9 with loops: cosine weight if same task and j in N(i) or i in N(j)."""
    Xs = [np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64) for X in Xs]
    n = sum(X.shape[0] for X in Xs)
    W = np.zeros((n, n))
    off = 0
    for X in Xs:
        nt = X.shape[0]
        k = min(n_neighbors, nt - 1)
        norms = np.linalg.norm(X, axis=1)
        cos = np.zeros((nt, nt))
        for i in range(nt):
            for j in range(nt):
                if norms[i] > 0 and norms[j] > 0:
                    cos[i, j] = X[i] @ X[j] / (norms[i] * norms[j])
        nbrs = []
        for i in range(nt):
            dist = 1.0 - cos[i].copy()
            dist[i] = np.inf
            nbrs.append(set(np.argsort(dist, kind="stable")[:k].tolist()))
        for i in range(nt):
            for j in range(nt):
                if i != j and (j in nbrs[i] or i in nbrs[j]):
                    W[off + i, off + j] = max(cos[i, j], 0.0)
        off += nt
    return W


def dense_laplacian(W):
    """L = I - D^-1/2 W D^-1/2 with isolated nodes giving L_ii = 1."""
    d = W.sum(axis=1)
    dinv = np.array([1.0 / np.sqrt(v) if v > 0 else 0.0 for v in d])
    return np.eye(W.shape[0]) - dinv[:, None] * W * dinv[None, :]


def dense_lnkmtc_kernel(L, S, C, b):
    """Theorem 0.2 with a full eigendecomposition: returns (K*, optimal value)."""
    sig, P = sla.eigh(L + C * S)
    gamma = np.clip(b - np.arange(sig.size), 0.0, 1.0)
    K = (P * gamma) @ P.T
    return K, float(gamma @ sig)


def linprog_spectral(costs, b):
    """LP (15) with scipy's HiGHS: min c.mu, sum mu = b, 1 >= mu_1 >= ... >= mu_r >= 0."""
    r = len(costs)
    A_ub = np.zeros((max(r - 1, 0), r))
    for t in range(r - 1):
        A_ub[t, t + 1] = 1.0
        A_ub[t, t] = -1.0
    res = linprog(costs, A_ub=A_ub if r > 1 else None, b_ub=np.zeros(r - 1) if r > 1 else None,
                  A_eq=np.ones((1, r)), b_eq=[b], bounds=[(0.0, 1.0)] * r, method="highs")
    assert res.status == 0, res.message
    return res.x, float(res.fun)


def naive_kernel_kmeans(K, labels, max_iter=100):
    """Lloyd's iterations in feature space using only K, from given initial labels."""
    K = np.asarray(K, dtype=np.float64)
    labels = np.asarray(labels).copy()
    n = K.shape[0]
    k = labels.max() + 1
    for _ in range(max_iter):
        D = np.empty((n, k))
        for c in range(k):
            idx = np.flatnonzero(labels == c)
            for i in range(n):
                D[i, c] = (K[i, i] - 2.0 * K[i, idx].mean() + K[np.ix_(idx, idx)].mean()
                           if idx.size else np.inf)
        new = np.argmin(D, axis=1)
        if np.array_equal(new, labels):
            break
        labels = new
    obj = sum(D[i, labels[i]] for i in range(n))
    return labels, float(obj)
