"""Slow, dense reference implementations of LSSMTC / LSSTTC in the paper's own convention.

Columns are points here (``X^(k)`` is ``d x n_k``), every matrix is formed explicitly, the
W-step is the full ``d x d`` eigenproblem of ``X (I - P (P^T P)^-1 P^T) X^T`` (paper Eq. 16) and
the objective is evaluated from its definition. Only for small ``d`` and ``n``.
"""

import numpy as np


def objective(Xs, Ps, W, M, Mks, lam, within=None):
    """Paper Eq. (4) / (20); ``Xs[k]`` is ``d x n_k``, ``Ps[k]`` ``n_k x c``."""
    within = within or [True] * len(Xs)
    J = 0.0
    for X, P, Mk, wk in zip(Xs, Ps, Mks, within):
        if wk:
            J += lam * np.linalg.norm(X - Mk @ P.T) ** 2
        J += (1 - lam) * np.linalg.norm(W.T @ X - M @ P.T) ** 2
    return J


def w_step(Xs, Ps, l):
    """Eigenvectors of ``X (I - P (P^T P)^-1 P^T) X^T`` (``d x d``) for the ``l`` smallest."""
    X = np.hstack(Xs)
    P = np.vstack(Ps)
    n = X.shape[1]
    Q = np.eye(n) - P @ np.linalg.inv(P.T @ P) @ P.T
    C = X @ Q @ X.T
    w, V = np.linalg.eigh((C + C.T) / 2)
    return V[:, :l], w


def lssmtc(Xs, P0s, lam, l, n_iter, update=None, within=None):
    """Algorithm 1 (and Algorithm 2 with ``update``/``within`` masks), dense, fixed sweeps.

    Returns the final ``Ps``, ``W`` and the objective after the initial W-step and after every
    sweep (each evaluated with the optimal ``M``, ``M_k`` for the current ``P``, ``W``).
    """
    m = len(Xs)
    update = update or [True] * m
    within = within or [True] * m
    Ps = [P.copy() for P in P0s]
    W, _ = w_step(Xs, Ps, l)

    def centres(W):
        X = np.hstack(Xs)
        P = np.vstack(Ps)
        M = W.T @ X @ P @ np.linalg.inv(P.T @ P)
        Mks = [X_ @ P_ @ np.linalg.inv(P_.T @ P_) for X_, P_ in zip(Xs, Ps)]
        return M, Mks

    M, Mks = centres(W)
    hist = [objective(Xs, Ps, W, M, Mks, lam, within)]
    for _ in range(n_iter):
        X = np.hstack(Xs)
        P = np.vstack(Ps)
        M = W.T @ X @ P @ np.linalg.inv(P.T @ P)
        for k in range(m):
            if not update[k]:
                continue
            Xk, Pk = Xs[k], Ps[k]
            Mk = Xk @ Pk @ np.linalg.inv(Pk.T @ Pk)
            lk = lam if within[k] else 0.0
            A = lk * Xk.T @ Mk + (1 - lam) * Xk.T @ W @ M
            B = lk * Mk.T @ Mk + (1 - lam) * M.T @ M
            Ap, An = (np.abs(A) + A) / 2, (np.abs(A) - A) / 2
            Bp, Bn = (np.abs(B) + B) / 2, (np.abs(B) - B) / 2
            Ps[k] = Pk * np.sqrt((Ap + Pk @ Bn) / (An + Pk @ Bp))
        W, _ = w_step(Xs, Ps, l)
        M, Mks = centres(W)
        hist.append(objective(Xs, Ps, W, M, Mks, lam, within))
    return Ps, W, hist


def relaxed_kmeans(X, P0, n_iter):
    """Single-task relaxed k-means ``min ||X - M P^T||^2, P >= 0`` (LSSMTC at lambda = 1)."""
    P = P0.copy()
    for _ in range(n_iter):
        M = X @ P @ np.linalg.inv(P.T @ P)
        A = X.T @ M
        B = M.T @ M
        Ap, An = (np.abs(A) + A) / 2, (np.abs(A) - A) / 2
        Bp, Bn = (np.abs(B) + B) / 2, (np.abs(B) - B) / 2
        P = P * np.sqrt((Ap + P @ Bn) / (An + P @ Bp))
    return P


def asi(X, P0, l, n_iter):
    """Adaptive-subspace-iteration-style clustering ``min ||W^T X - M P^T||^2`` over
    ``W^T W = I`` and ``P >= 0`` on one data set (LSSMTC at lambda = 0 on the stacked tasks)."""
    P = P0.copy()
    n = X.shape[1]

    def w_of(P):
        Q = np.eye(n) - P @ np.linalg.inv(P.T @ P) @ P.T
        C = X @ Q @ X.T
        return np.linalg.eigh((C + C.T) / 2)[1][:, :l]

    W = w_of(P)
    for _ in range(n_iter):
        M = W.T @ X @ P @ np.linalg.inv(P.T @ P)
        A = X.T @ W @ M
        B = M.T @ M
        Ap, An = (np.abs(A) + A) / 2, (np.abs(A) - A) / 2
        Bp, Bn = (np.abs(B) + B) / 2, (np.abs(B) - B) / 2
        P = P * np.sqrt((Ap + P @ Bn) / (An + P @ Bp))
        W = w_of(P)
    return P, W
