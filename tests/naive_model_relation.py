"""Slow, obvious reference implementations for ``bregclust.model_relation`` (MTCMRL).

Test oracles and benchmark peers; nothing here is fast. cvxpy is called from this one place
(:func:`relation_qp_cvxpy`), for the tests and for ``benchmarks/mtcmrl_relation_speed.py``.
"""

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp


def relation_cost_loops(Wt, Ws):
    """``A_ij = ||Wt[:, i] - Ws[:, j]||^2`` by explicit loops."""
    A = np.empty((Wt.shape[1], Ws.shape[1]))
    for i in range(Wt.shape[1]):
        for j in range(Ws.shape[1]):
            diff = Wt[:, i] - Ws[:, j]
            A[i, j] = diff @ diff
    return A


def relation_objective(A, G, beta):
    """``<A, G> + beta ||G||^2`` (the relation sub-problem, Eq. 4 of the paper)."""
    return float(np.sum(A * G) + beta * np.sum(G * G))


def relation_qp_cvxpy(A, beta, *, solver="CLARABEL", eps=1e-12):
    """The paper's QP (Eq. 5) ``min 1/2 g^T (2 beta I) g + f^T g``, ``sum g = 1``, ``0 <= g <= 1``.

    Solved by cvxpy (the paper used MATLAB's quadprog). Returns ``(G, status, solve_time)``
    with the solver-reported time in seconds (no canonicalisation).
    """
    import cvxpy as cp

    h_t, h_s = A.shape
    f = np.ascontiguousarray(A, dtype=np.float64).ravel()
    g = cp.Variable(h_t * h_s)
    objective = cp.Minimize(beta * cp.sum_squares(g) + f @ g)
    constraints = [cp.sum(g) == 1, g >= 0, g <= 1]
    prob = cp.Problem(objective, constraints)
    kwargs = {}
    if solver == "CLARABEL":
        kwargs = dict(tol_gap_abs=eps, tol_gap_rel=eps, tol_feas=eps, tol_ktratio=1e-10)
    prob.solve(solver=solver, **kwargs)
    G = np.asarray(g.value, dtype=np.float64).reshape(h_t, h_s)
    return G, prob.status, float(prob.solver_stats.solve_time or np.nan)


def relation_frank_wolfe(A, beta, *, max_iter=100_000, gap_tol=1e-10, variant="vanilla"):
    """Frank-Wolfe on the simplex with exact line search (the paper's large-h option).

    ``variant="vanilla"``: classic Frank-Wolfe (sublinear rate, as in the paper's reference);
    ``variant="pairwise"``: pairwise Frank-Wolfe (mass moves from the worst support vertex to
    the best vertex; linear rate on the simplex). Stops when the Frank-Wolfe duality gap
    ``<grad, g> - min(grad)`` drops below ``gap_tol``. Returns ``(G, n_iter, gap)``.
    """
    f = np.ascontiguousarray(A, dtype=np.float64).ravel()
    m = f.size
    g = np.full(m, 1.0 / m)
    gap = np.inf
    n_iter = 0
    while n_iter < max_iter:
        grad = f + 2.0 * beta * g
        k = int(np.argmin(grad))
        gap = float(grad @ g - grad[k])
        if gap <= gap_tol:
            break
        n_iter += 1
        if variant == "pairwise":
            support = np.flatnonzero(g > 0)
            a = int(support[np.argmax(grad[support])])
            slope = grad[a] - grad[k]
            step = g[a] if beta == 0 else min(g[a], slope / (4.0 * beta))
            g[k] += step
            g[a] -= step
            continue
        d = -g
        d[k] += 1.0                                  # e_k - g
        curv = 2.0 * beta * float(d @ d)
        step = 1.0 if curv <= 0 else min(1.0, gap / curv)
        g += step * d
    return g.reshape(A.shape), n_iter, gap


def project_simplex_bisection(v, radius=1.0, n_iter=200):
    """Projection onto the simplex by bisection on the threshold ``theta`` (slow, obvious)."""
    v = np.asarray(v, dtype=np.float64)
    lo, hi = v.min() - radius, v.max()
    for _ in range(n_iter):
        theta = 0.5 * (lo + hi)
        if np.maximum(v - theta, 0.0).sum() > radius:
            lo = theta
        else:
            hi = theta
    return np.maximum(v - 0.5 * (lo + hi), 0.0)


def w_step_sylvester(t, X, Y, Ws, Gs, lam, mu, alpha):
    """Exact ``W^t`` minimiser via ``scipy.linalg.solve_sylvester`` on dense matrices.

    ``lam X^T X W + W (mu I + alpha H) = lam X^T Y + alpha sum_s W^s Ghat_s^T``.
    """
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    h = Y.shape[1]
    Bmat = mu * np.eye(h)
    C = lam * X.T @ Y
    for s in range(len(Ws)):
        if s == t or alpha == 0:
            continue
        Ghat = Gs[(t, s)] + Gs[(s, t)].T
        Bmat += alpha * np.diag(Ghat.sum(axis=1))
        C += alpha * Ws[s] @ Ghat.T
    return sla.solve_sylvester(lam * X.T @ X, Bmat, C)


def objective_loops(Xs, Ms, Ys, Ws, Gs, lam, mu, alpha, beta):
    """MTCMRL objective (MATH.md 5) term by term with explicit loops over cluster pairs."""
    J = 0.0
    T = len(Xs)
    for t in range(T):
        X = Xs[t].toarray() if sp.issparse(Xs[t]) else np.asarray(Xs[t])
        J += 0.5 * np.linalg.norm(Ms[t] - Ys[t] @ Ys[t].T) ** 2
        J += lam * np.linalg.norm(Ys[t] - X @ Ws[t]) ** 2
        J += mu * np.linalg.norm(Ws[t]) ** 2
    if alpha > 0:
        for t in range(T):
            for s in range(T):
                if s == t:
                    continue
                G = Gs[(t, s)]
                for i in range(G.shape[0]):
                    for j in range(G.shape[1]):
                        diff = Ws[t][:, i] - Ws[s][:, j]
                        J += alpha * (diff @ diff) * G[i, j]
                J += alpha * beta * np.sum(G * G)
    return float(J)


def y_update_paper(Y, M, Q, lam):
    """The paper's multiplicative update (Eq. 19) for non-negative ``M``, undamped."""
    Qp, Qm = np.maximum(Q, 0), np.maximum(-Q, 0)
    return Y * (M @ Y + lam * Qp) / (Y @ Y.T @ Y + lam * Y + lam * Qm)


def y_objective(Y, M, Q, lam):
    """``1/2 ||M - Y Y^T||^2 + lam ||Y - Q||^2``."""
    return 0.5 * np.linalg.norm(M - Y @ Y.T) ** 2 + lam * np.linalg.norm(Y - Q) ** 2


def cosine_similarity_loops(X):
    """Cosine similarity by the definition."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    n = X.shape[0]
    M = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            ni, nj = np.linalg.norm(X[i]), np.linalg.norm(X[j])
            if ni > 0 and nj > 0:
                M[i, j] = X[i] @ X[j] / (ni * nj)
    return M
