"""Dense reference of bregclust.spectral_mtc: graphs by loops over all pairs, eigenvectors by
``numpy.linalg.eigh`` of the dense normalised Laplacian (no scikit-learn, no sparse code)."""

import numpy as np


def unit(X):
    X = np.asarray(X, dtype=np.float64)
    n = np.linalg.norm(X, axis=1, keepdims=True)
    return X / np.where(n > 0, n, 1.0)


def knn_rows(Q, R, k, same=False):
    """Directed kNN 0/1 matrix of the rows of Q among the rows of R (cosine; self included
    when ``same``, as scikit-learn's ``include_self=True``)."""
    Q, R = unit(Q), unit(R)
    A = np.zeros((Q.shape[0], R.shape[0]))
    for i in range(Q.shape[0]):
        d = np.array([np.sum((Q[i] - R[j]) ** 2) for j in range(R.shape[0])])
        if same:
            d[i] = -1.0  # the row itself first
        for j in np.argsort(d, kind="stable")[:k]:
            A[i, j] = 1.0
    return A


def task_graph(X, k):
    A = knn_rows(X, X, min(k, len(X)), same=True)
    return 0.5 * (A + A.T)


def transfer_graph(Xs, t, k):
    n = Xs[t].shape[0]
    H = np.zeros((n, n))
    for s, X in enumerate(Xs):
        if s == t:
            continue
        C = knn_rows(X, Xs[t], min(k, n))
        for u in range(C.shape[0]):  # every row u of task s votes for its pairs
            nb = np.flatnonzero(C[u])
            for i in nb:
                for j in nb:
                    if i != j:
                        H[i, j] += 1.0
    W = task_graph(Xs[t], k)
    return H * (W.sum() / H.sum()) if H.sum() > 0 else H


def joint_graph(Xs, k, mu):
    Ws = [task_graph(X, k) for X in Xs]
    sizes = [X.shape[0] for X in Xs]
    starts = np.concatenate([[0], np.cumsum(sizes)])
    J = np.zeros((starts[-1], starts[-1]))
    for t, W in enumerate(Ws):
        J[starts[t]:starts[t + 1], starts[t]:starts[t + 1]] = W
    for s in range(len(Xs)):
        for t in range(s + 1, len(Xs)):
            B = 0.5 * (knn_rows(Xs[s], Xs[t], min(k, sizes[t]))
                       + knn_rows(Xs[t], Xs[s], min(k, sizes[s])).T)
            B *= 0.5 * (Ws[s].sum() + Ws[t].sum()) / B.sum()
            J[starts[s]:starts[s + 1], starts[t]:starts[t + 1]] = mu * B
            J[starts[t]:starts[t + 1], starts[s]:starts[s + 1]] = mu * B.T
    return J


def embedding(W, m):
    """The ``m`` eigenvectors of the smallest eigenvalues of ``I - D^-1/2 W D^-1/2``, scaled
    by ``D^-1/2`` (scikit-learn's ``spectral_embedding(norm_laplacian=True)``), as columns;
    self-loops are ignored, as scipy's ``csgraph.laplacian`` ignores the diagonal."""
    W = W - np.diag(np.diag(W))
    d = W.sum(axis=1)
    Dm = np.diag(1.0 / np.sqrt(d))
    L = np.eye(len(W)) - Dm @ W @ Dm
    vals, vecs = np.linalg.eigh(L)
    return vals[:m], Dm @ vecs[:, :m]


def normalized_cut(W, labels):
    W = W - np.diag(np.diag(W))  # self-loops ignored
    total = 0.0
    for c in np.unique(labels):
        m = labels == c
        vol = W[m].sum()
        if vol > 0:
            total += W[m][:, ~m].sum() / vol
    return total


def modularity(W, labels):
    """Newman-Girvan modularity by the definition, pair by pair: ``(1 / 2m) sum_ij [W_ij -
    d_i d_j / 2m] [c_i = c_j]`` with self-loops removed (``2m`` the total weight)."""
    W = W - np.diag(np.diag(W))
    d = W.sum(axis=1)
    two_m = W.sum()
    q = 0.0
    for i in range(len(W)):
        for j in range(len(W)):
            if labels[i] == labels[j]:
                q += W[i, j] - d[i] * d[j] / two_m
    return q / two_m


def njw_embedding(W, m):
    """Ng, Jordan & Weiss (2002), steps 2-4 as printed: the ``m`` eigenvectors of the largest
    eigenvalues of ``D^-1/2 W D^-1/2`` (self-loops removed, as :func:`embedding`) as columns,
    each row scaled to unit norm (no ``D^-1/2`` scaling of the vectors)."""
    W = W - np.diag(np.diag(W))
    d = W.sum(axis=1)
    Dm = np.diag(1.0 / np.sqrt(d))
    vals, vecs = np.linalg.eigh(Dm @ W @ Dm)
    return vals[::-1][:m], unit(vecs[:, ::-1][:, :m])
