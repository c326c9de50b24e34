"""Slow, obvious reference implementations (test oracles) for divergences and k-means.

Written from the formulas in MATH.md section 1 with plain numpy, independent of the registry's
kernels.
"""

import numpy as np


def divergence(name, x, y, A=None):
    """d(x, y) straight from the table of MATH.md 1."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if name == "sqeuclidean":
        return float(((x - y) ** 2).sum())
    if name == "mahalanobis":
        r = x - y
        return float(r @ A @ r)
    if name == "kl":
        s = 0.0
        for a, b in zip(x, y):
            if a > 0:
                s += a * np.log(a / b) - a + b
            else:
                s += b
        return float(s)
    if name == "itakura_saito":
        return float((x / y - np.log(x / y) - 1).sum())
    if name == "l1_subgradient":
        return float(sum(0.0 if a * b > 0 else 2 * abs(a) for a, b in zip(x, y)))
    if name == "cosine":
        return float(1.0 - x @ y / (np.sqrt(x @ x) * np.sqrt(y @ y)))
    raise KeyError(name)


def pairwise(name, X, U, A=None):
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    return np.array([[divergence(name, x, u, A) for u in U] for x in X])


def separable_divergence(phi, dphi, x, y):
    """d(x, y) = sum phi(x_l) - phi(y_l) - (x_l - y_l) dphi(y_l) for a scalar generator."""
    return float(sum(phi(a) - phi(b) - (a - b) * dphi(b) for a, b in zip(x, y)))


def lloyd(X, centers, div, max_iter=100):
    """Plain Lloyd iterations with a Bregman divergence, recomputed from the definition."""
    X = np.asarray(X, dtype=float)
    C = np.array(centers, dtype=float)
    labels = None
    for _ in range(max_iter):
        D = np.array([[div.divergence(x, c) for c in C] for x in X])
        new = D.argmin(axis=1)
        if labels is not None and (new == labels).all():
            break
        labels = new
        C = np.array([X[labels == j].mean(axis=0) if (labels == j).any() else C[j]
                      for j in range(C.shape[0])])
    return labels, C
