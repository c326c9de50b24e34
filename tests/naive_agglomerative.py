"""Slow, obvious reference for agglomerative Bregman clustering (tests only).

Everything here recomputes the paper's Definition 3.7 from the points at every step:
``Delta(C1, C2) = phi(C1 u C2) - phi(C1) - phi(C2)`` with the cluster cost of Definition 3.2,
``phi(C) = sum_{x in C} w_x B_f(tau(x), tau(C))``, and ``B_f`` evaluated from its definition
(the divergence's own generic kernel for identity statistics; the Gaussian KL divergence,
which equals ``B_{psi*}`` by Theorem 4.6, for the Gaussian models). No cluster statistics are
cached, nothing is shared with ``bregclust.agglomerative``.
"""

import itertools
import math

import numpy as np

from bregclust.divergences import get_divergence


# ---------------------------------------------------------------------------- statistics
def identity_points(X, *, scale=1.0, shift=0.0, normalize=False):
    """Smoothed identity statistics ``tau(x) = scale * x + shift`` (rows normalised first)."""
    X = np.asarray(X, dtype=float)
    if normalize:
        X = X / X.sum(axis=1, keepdims=True)
    return X * scale + shift


def normal_reference_cov(X, per_coordinate=True, w=None):
    """Bandwidth^2 added to covariances: per coordinate ('-nd') or one for all ('-n')."""
    X = np.asarray(X, dtype=float)
    n, d = X.shape
    w = np.ones(n) if w is None else np.asarray(w, float)
    mu = w @ X / w.sum()
    sd = np.sqrt(w @ (X - mu) ** 2 / w.sum())
    h = sd * (4.0 / ((d + 2.0) * n)) ** (1.0 / (d + 4.0))
    if per_coordinate:
        return np.diag(h ** 2)
    return np.eye(d) * np.mean(h ** 2)


def multinomial_eps(X):
    X = np.asarray(X, float)
    m = X.sum()
    p = 1.0 / X.shape[1]
    return 1.0 / m + math.sqrt(p * (1 - p) / m)


# ---------------------------------------------------------------------------- cluster costs
def identity_cluster_cost(T, w, divergence):
    """Definition 3.2 with the identity statistic: sum_x w_x B(tau(x), weighted mean)."""
    div = get_divergence(divergence)
    mu = (w @ T) / w.sum()
    if div.name == "l1_subgradient":
        # Example 2.2 coordinate by coordinate: 0 if x_l mu_l > 0 else 2 |x_l|
        return float(sum(w[i] * np.sum(np.where(T[i] * mu > 0, 0.0, 2.0 * np.abs(T[i])))
                         for i in range(T.shape[0])))
    return float(sum(w[i] * div.divergence(T[i], mu) for i in range(T.shape[0])))


def gaussian_kl(m0, S0, m1, S1):
    d = m0.shape[0]
    S1inv = np.linalg.inv(S1)
    dm = m1 - m0
    _, ld0 = np.linalg.slogdet(S0)
    _, ld1 = np.linalg.slogdet(S1)
    return 0.5 * (np.trace(S1inv @ S0) + dm @ S1inv @ dm - d + ld1 - ld0)


def gaussian_cluster_cost(X, w, H, diagonal):
    """sum_x w_x KL(N(x, H) || N(mu_C, Sigma_C + H)) (= B_{psi*}, Theorem 4.6); the diagonal
    model keeps only the diagonals of the covariances."""
    W = w.sum()
    mu = w @ X / W
    D = X - mu
    S = (D * w[:, None]).T @ D / W + H
    Hx = H
    if diagonal:
        S = np.diag(np.diag(S))
        Hx = np.diag(np.diag(H))
    return float(sum(w[i] * gaussian_kl(X[i], Hx, mu, S) for i in range(X.shape[0])))


class Reference:
    """Cluster cost of any index set, from the points."""

    def __init__(self, X, model, *, w=None, smoothing=None):
        X = np.asarray(X, dtype=float)
        self.n = X.shape[0]
        self.w = np.ones(self.n) if w is None else np.asarray(w, float)
        self.model = model
        if model in ("gaussian_diag", "gaussian_full"):
            self.X = X
            if smoothing is None:
                smoothing = "nd" if model == "gaussian_diag" else "n"
            self.H = (normal_reference_cov(X, smoothing == "nd", self.w)
                      if isinstance(smoothing, str) else np.asarray(smoothing, float))
        else:
            normalize = model == "multinomial"
            scale, shift = 1.0, 0.0
            if smoothing == "multinomial":
                shift = multinomial_eps(X)
            elif isinstance(smoothing, tuple):
                alpha, z = smoothing
                scale, shift = 1.0 - alpha, alpha * np.asarray(z, float)
            self.T = identity_points(X, scale=scale, shift=shift, normalize=normalize)
            self.div = "kl" if model == "multinomial" else model

    def cost(self, idx):
        idx = np.asarray(sorted(idx))
        if idx.size == 1 and self.model not in ("gaussian_diag", "gaussian_full"):
            return 0.0
        w = self.w[idx]
        if self.model in ("gaussian_diag", "gaussian_full"):
            return gaussian_cluster_cost(self.X[idx], w, self.H, self.model == "gaussian_diag")
        return identity_cluster_cost(self.T[idx], w, self.div)

    def merge_cost(self, c1, c2):
        """Definition 3.7."""
        return self.cost(list(c1) + list(c2)) - self.cost(c1) - self.cost(c2)


def prop38_merge_cost(T1, w1, T2, w2, divergence):
    """Proposition 3.8: sum_j |C_j| B(tau(C_j), tau(C1 u C2)) (identity statistic)."""
    div = get_divergence(divergence)
    m1 = w1 @ T1 / w1.sum()
    m2 = w2 @ T2 / w2.sum()
    m = (w1.sum() * m1 + w2.sum() * m2) / (w1.sum() + w2.sum())
    return w1.sum() * div.divergence(m1, m) + w2.sum() * div.divergence(m2, m)


def naive_agglomerate(ref):
    """Brute force Algorithm 1: every step evaluates Definition 3.7 for every pair, from the
    points. Returns a list of ``(cluster1, cluster2, cost)`` (frozensets of point indices)."""
    clusters = [frozenset([i]) for i in range(ref.n)]
    out = []
    while len(clusters) > 1:
        best = None
        for a, b in itertools.combinations(range(len(clusters)), 2):
            c = ref.merge_cost(clusters[a], clusters[b])
            if best is None or c < best[0]:
                best = (c, a, b)
        c, a, b = best
        out.append((clusters[a], clusters[b], c))
        merged = clusters[a] | clusters[b]
        clusters = [cl for k, cl in enumerate(clusters) if k not in (a, b)] + [merged]
    return out


def merges_from_linkage(Z, n):
    """The linkage matrix as ``(cluster1, cluster2, height)`` with frozensets of points."""
    members = {i: frozenset([i]) for i in range(n)}
    out = []
    for t, row in enumerate(Z):
        a, b = members[int(row[0])], members[int(row[1])]
        members[n + t] = a | b
        out.append((a, b, float(row[2])))
    return out


def naive_dendrogram_purity(Z, y):
    """Pairwise definition: for each same-label pair, purity of the smallest cluster holding both."""
    y = np.asarray(y)
    n = y.shape[0]
    members = {i: {i} for i in range(n)}
    for t, row in enumerate(Z):
        members[n + t] = members[int(row[0])] | members[int(row[1])]
    nodes = sorted(members.items(), key=lambda kv: len(kv[1]))
    total, count = 0.0, 0
    for i, j in itertools.combinations(range(n), 2):
        if y[i] != y[j]:
            continue
        for _, mem in nodes:
            if i in mem and j in mem:
                total += np.mean([y[k] == y[i] for k in mem])
                break
        count += 1
    return total / count


def check_greedy(ref, merges, *, rtol=1e-9, atol=1e-12):
    """Replay ``merges`` (from :func:`merges_from_linkage`) and return the list of steps where
    the merge taken was not a cheapest pair by Definition 3.7, or its height differs from the
    reference cost. Equal-cost alternatives (ties) are accepted."""
    clusters = {frozenset([i]) for i in range(ref.n)}
    bad = []
    for t, (a, b, h) in enumerate(merges):
        cl = sorted(clusters, key=min)
        best = min(ref.merge_cost(p, q) for p, q in itertools.combinations(cl, 2))
        mine = ref.merge_cost(a, b)
        tol = atol + rtol * max(1.0, abs(best))
        if a not in clusters or b not in clusters or mine > best + tol or abs(max(mine, 0.0) - h) > tol:
            bad.append((t, mine, best, h))
        clusters -= {a, b}
        clusters.add(a | b)
    return bad


# ---------------------------------------------------------------------------- plain generic driver
def plain_generic_linkage(plan, X, w):
    """Muellner's generic algorithm with a full rescan at every stale candidate and plain Python
    loops (the engine before the candidate lists and parallel passes), evaluating merge costs
    with the engine's own ``cost``/``merge`` kernels: the engine must reproduce its merges and
    heights bit for bit. Returns slot pairs and costs like ``generic_linkage``."""
    from bregclust._kernels import agglomerative as KA

    kind, fc, gcode, fn = plan.kind, plan.fc, plan.gcode, plan.fn
    st = plan.state(X, w)
    A, B, C, w2, sup, slen, aux = st
    n, d = A.shape
    work = np.zeros((d + 1, d)) if kind == KA.GAUSS_FULL else np.zeros((1, 1))
    ibuf = np.empty(2 * sup.shape[1] + 1, dtype=sup.dtype)

    def cost(i, j):
        return KA.cost(kind, i, j, st, fc, gcode, fn, work)

    active = list(range(n))
    nn = [-1] * n
    mind = [math.inf] * n
    stale = [False] * n

    def scan(x):
        best, bj = math.inf, -1
        for y in active:
            if y > x:
                c = cost(x, y)
                if c < best or bj < 0:
                    best, bj = c, y
        nn[x], mind[x], stale[x] = bj, best, False

    for x in range(n - 1):
        scan(x)
    out = []
    for _ in range(n - 1):
        while True:
            a = min(active, key=lambda s: (mind[s], s))
            if not stale[a]:
                break
            scan(a)
        b = nn[a]
        out.append((a, b, mind[a]))
        KA.merge(kind, a, b, st, fc, gcode, fn, work, ibuf)
        active.remove(a)
        mind[a] = math.inf
        for x in active:
            if x >= b:
                break
            c = cost(x, b)
            if c < mind[x]:
                mind[x], nn[x], stale[x] = c, b, False
            elif nn[x] in (a, b):
                nn[x] = b
                if c != mind[x]:
                    stale[x] = True
        scan(b)
    si, sj, h = (np.array(v) for v in zip(*out))
    return si.astype(np.int64), sj.astype(np.int64), h.astype(float)
