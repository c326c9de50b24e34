"""Slow, obvious references for bregclust.mbc (tests only).

- :func:`naive_objective`: the MBC objective with one ``Divergence.divergence`` call per term.
- :func:`lp_transport`: the relation-matrix LP (paper Eq. 10) solved by cvxpy.
- :func:`scipy_centroid`: ``argmin_u A d(mu_L, u) + B d(u, mu_R)`` by ``scipy.optimize.minimize``.
- :func:`naive_own_objective`: one task's single-task (k-means) objective of a partition at its
  own smoothed cluster means, one divergence call per term (the criterion of MBC's guard).
"""

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize

from bregclust.divergences import get_divergence


def naive_objective(Xs, labels, centers, relations, divergence, lam, *, smoothing=0.0,
                    smoothing_points=None):
    div = get_divergence(divergence)
    T = len(Xs)
    total = 0.0
    for t in range(T):
        X = Xs[t].toarray() if sp.issparse(Xs[t]) else np.asarray(Xs[t])
        part = sum(div.divergence(X[i], centers[t][labels[t][i]]) for i in range(X.shape[0]))
        beta = smoothing[t] if np.ndim(smoothing) else smoothing
        if beta > 0:
            part += beta * sum(div.divergence(smoothing_points[t], u) for u in centers[t])
        total += part / X.shape[0]
    if T > 1:
        for t in range(T):
            for s in range(T):
                if s == t:
                    continue
                W = relations[(t, s)]
                for z in range(W.shape[0]):
                    for l in range(W.shape[1]):
                        total += lam / (T - 1) * W[z, l] * div.divergence(centers[t][z],
                                                                          centers[s][l])
    return total


def lp_transport(a, b, C):
    """``min <W, C>`` s.t. ``W 1 = a``, ``W^T 1 = b``, ``W >= 0`` (cvxpy). Returns (W, value)."""
    import cvxpy as cp

    W = cp.Variable(C.shape, nonneg=True)
    prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(C, W))),
                      [cp.sum(W, axis=1) == a, cp.sum(W, axis=0) == b])
    prob.solve()
    assert prob.status == cp.OPTIMAL, prob.status
    return np.asarray(W.value), float(prob.value)


def scipy_centroid(divergence, A, B, mL, mR, lower=None):
    """Minimise ``A d(mL, u) + B d(u, mR)`` over ``u`` (one centre) with L-BFGS-B."""
    div = get_divergence(divergence)

    def f(u):
        return A * div.divergence(mL, u) + B * div.divergence(u, mR)

    x0 = (A * mL + B * mR) / (A + B)
    bounds = None if lower is None else [(lower, None)] * mL.shape[0]
    res = minimize(f, x0, method="L-BFGS-B", bounds=bounds,
                   options=dict(ftol=1e-15, gtol=1e-12, maxiter=10000))
    return res.x, f(res.x), f


def naive_own_objective(X, labels, divergence, *, smoothing=0.0, smoothing_point=None):
    """``(1/n) [sum_i d(x_i, m_h(i)) + beta sum_z d(z, m_z)]`` over the non-empty clusters,
    ``m_z = (sum_{h(i)=z} x_i + beta z) / (n_z + beta)`` (the smoothed cluster mean)."""
    div = get_divergence(divergence)
    X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float)
    labels = np.asarray(labels)
    total = 0.0
    for z in np.unique(labels):
        rows = X[labels == z]
        m = rows.sum(axis=0)
        if smoothing > 0:
            m = (m + smoothing * smoothing_point) / (rows.shape[0] + smoothing)
            total += smoothing * div.divergence(smoothing_point, m)
        else:
            m = m / rows.shape[0]
        total += sum(div.divergence(x, m) for x in rows)
    return total / X.shape[0]


def naive_smbc_sq(Xs, U0, lam, n_sweeps, tol=0.0):
    """S-MBC (``guard="sweep"``) for squared Euclidean distance, uniform marginals, dense, from
    the definitions: per sweep the coupled centres of every task (Gauss-Seidel, each the
    stationary point of its block), then per task the candidate (coupled centres or its
    cluster means, each with its nearest-centre labels) with the lower own loss, then the
    plans for the kept centres; stops after ``n_sweeps`` or once a sweep lowers the summed own
    loss by at most ``tol`` times its value. Returns (labels, centres, history of the summed
    own loss, number of choices the coupled candidate won)."""
    import ot

    T = len(Xs)
    c = lam / (T - 1)
    U = [np.array(u, dtype=float) for u in U0]

    def sqd(A, B):
        return ((A[:, None, :] - B[None, :, :]) ** 2).sum(axis=2)

    def assign(X, V):
        D = sqd(X, V)
        lab = D.argmin(axis=1)
        return lab, D[np.arange(X.shape[0]), lab].sum() / X.shape[0]

    def plans():
        return {(t, s): ot.emd(np.full(len(U[t]), 1 / len(U[t])),
                               np.full(len(U[s]), 1 / len(U[s])), sqd(U[t], U[s]))
                for t in range(T) for s in range(T) if s != t}

    h = [assign(X, V)[0] for X, V in zip(Xs, U)]
    W = plans()
    history = [sum(assign(X, V)[1] for X, V in zip(Xs, U))]
    wins = 0
    for _ in range(n_sweeps):
        means = []
        for X, V, lab in zip(Xs, U, h):
            M = V.copy()
            for z in range(len(V)):
                if (lab == z).any():
                    M[z] = X[lab == z].mean(axis=0)
            means.append(M)
        for t, X in enumerate(Xs):
            n = X.shape[0]
            for z in range(len(U[t])):
                num = X[h[t] == z].sum(axis=0) / n
                den = (h[t] == z).sum() / n
                for s in range(T):
                    if s != t:
                        wts, wst = W[(t, s)][z], W[(s, t)][:, z]
                        num = num + c * (wts + wst) @ U[s]
                        den = den + c * (wts.sum() + wst.sum())
                if den > 0:
                    U[t][z] = num / den
        total = 0.0
        for t, X in enumerate(Xs):
            lab_c, loss_c = assign(X, U[t])
            lab_s, loss_s = assign(X, means[t])
            if loss_c <= loss_s:
                h[t], loss = lab_c, loss_c
                wins += 1
            else:
                U[t], h[t], loss = means[t], lab_s, loss_s
            total += loss
        W = plans()
        history.append(total)
        if history[-2] - history[-1] <= tol * abs(history[-2]):
            break
    return h, U, history, wins
