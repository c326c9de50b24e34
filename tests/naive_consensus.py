"""Dense reference of the cluster-ensemble helpers (``bregclust._consensus``): the
co-association matrix by explicit loops over all pairs and partitions, its spectral clustering
by ``numpy.linalg.eigh`` of the dense normalised matrix, and ANMI by mutual information counted
from the contingency table (no scikit-learn metric, no sparse code)."""

import numpy as np


def coassociation(partitions, weights=None):
    m = len(partitions)
    w = np.full(m, 1.0 / m) if weights is None else np.asarray(weights, float) / np.sum(weights)
    n = len(partitions[0])
    S = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            for p, lab in enumerate(partitions):
                if lab[i] == lab[j]:
                    S[i, j] += w[p]
    return S


def embedding(partitions, k, weights=None):
    """The ``k`` leading eigenvectors of ``D^-1/2 S D^-1/2`` (``D`` the row sums of ``S``),
    rows scaled to unit norm, and all eigenvalues (descending)."""
    S = coassociation(partitions, weights)
    d = S.sum(axis=1)
    M = S / np.sqrt(np.outer(d, d))
    vals, vecs = np.linalg.eigh(M)
    order = np.argsort(vals)[::-1]
    U = vecs[:, order[:k]]
    return U / np.linalg.norm(U, axis=1, keepdims=True), vals[order]


def nmi(a, b):
    """``I(A; B) / sqrt(H(A) H(B))`` from the contingency table (1 when both have one cluster)."""
    a, b = np.asarray(a), np.asarray(b)
    n = len(a)
    ua, ub = list(np.unique(a)), list(np.unique(b))
    C = np.zeros((len(ua), len(ub)))
    for x, y in zip(a, b):
        C[ua.index(x), ub.index(y)] += 1
    pa, pb = C.sum(axis=1) / n, C.sum(axis=0) / n
    mi = 0.0
    for i in range(len(ua)):
        for j in range(len(ub)):
            if C[i, j] > 0:
                pij = C[i, j] / n
                mi += pij * np.log(pij / (pa[i] * pb[j]))
    ha = -np.sum(pa * np.log(pa))
    hb = -np.sum(pb * np.log(pb))
    if ha == 0 and hb == 0:
        return 1.0
    if ha == 0 or hb == 0:
        return 0.0
    return mi / np.sqrt(ha * hb)


def anmi(labels, partitions, weights=None):
    m = len(partitions)
    w = np.full(m, 1.0 / m) if weights is None else np.asarray(weights, float) / np.sum(weights)
    return float(sum(w[p] * nmi(labels, partitions[p]) for p in range(m)))
