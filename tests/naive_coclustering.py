"""Slow, obvious references for bregclust.coclustering (tests only).

- :func:`table_zhat`: ``Zhat`` of every basis from the table of MATH.md section 9, one entry
  at a time from weighted means over boolean masks (uniform or product weights).
- :func:`cvxpy_zhat`: the minimum-Bregman-information matrix solved as a convex program
  (any weights, missing entries included).
- :func:`moved_cost`: the cost of one row (column) at every cluster with the parameters held
  fixed, the row (column) keeping its own means: the quantity the row (column) step minimises.
- :func:`brute_force`: the best co-clustering by enumerating every row and column labelling.
- :func:`objective`: ``sum w d(z, zhat)`` with ``scipy.special.kl_div`` or squares.
- :func:`itcc`: information-theoretic co-clustering as written by Dhillon, Mallela & Modha
  (KDD 2003), on the joint distribution ``p = Z / sum Z``.
"""

import itertools

import numpy as np
from scipy.special import kl_div

from bregclust.divergences import get_divergence


def _mean(Z, W, mask):
    m = (W * mask).sum()
    return (W * mask * Z).sum() / m if m > 0 else np.nan


def _means(Z, W, r, h, u, v, g, c):
    """The conditional means the table uses, for entry ``(u, v)`` with row cluster ``g`` and
    column cluster ``c`` (the labels of the others from ``r``, ``h``)."""
    rows = np.arange(Z.shape[0])[:, None]
    cols = np.arange(Z.shape[1])[None, :]
    Rg = (r[:, None] == g) & np.ones_like(cols, bool)
    Ch = (h[None, :] == c) & np.ones_like(rows, bool)
    Ru = (rows == u) & np.ones_like(cols, bool)
    Cv = (cols == v) & np.ones_like(rows, bool)
    return {
        "E": _mean(Z, W, np.ones(Z.shape, bool)),
        "U": _mean(Z, W, Ru), "V": _mean(Z, W, Cv),
        "Uh": _mean(Z, W, Rg), "Vh": _mean(Z, W, Ch),
        "UhVh": _mean(Z, W, Rg & Ch), "UVh": _mean(Z, W, Ru & Ch), "UhV": _mean(Z, W, Rg & Cv),
    }


def _entry(M, basis, add):
    """One ``zhat`` from its means, the table's formula."""
    def comb(num, plus=(), minus=()):
        if add:
            return num + sum(plus) - sum(minus)
        den = np.prod(minus) if minus else 1.0
        return num * np.prod(plus) / den if num > 0 else 0.0
    if basis == "C1":
        return comb(M["Uh"], (M["Vh"],), (M["E"],))
    if basis == "C2":
        return M["UhVh"]
    if basis == "C3":
        return comb(M["UhVh"], (M["U"],), (M["Uh"],))
    if basis == "C4":
        return comb(M["UhVh"], (M["V"],), (M["Vh"],))
    if basis == "C5":
        return comb(M["UhVh"], (M["U"], M["V"]), (M["Uh"], M["Vh"]))
    if basis == "C6":
        return comb(M["UVh"], (M["UhV"],), (M["UhVh"],))
    raise ValueError(basis)


def table_zhat(Z, r, h, basis, divergence, W=None):
    """``Zhat`` of the table (valid for uniform or product weights)."""
    Z = np.asarray(Z, dtype=float)
    W = np.ones(Z.shape) if W is None else np.asarray(W, dtype=float)
    add = get_divergence(divergence).name == "sqeuclidean"
    out = np.zeros(Z.shape)
    for u in range(Z.shape[0]):
        for v in range(Z.shape[1]):
            out[u, v] = _entry(_means(Z, W, r, h, u, v, r[u], h[v]), basis, add)
    return out


def moved_cost(Z, r, h, basis, divergence, u, g, axis=0):
    """Cost ``sum_v d(z_uv, zhat_uv)`` of row ``u`` (``axis=0``) put in row cluster ``g``, the
    means of the current co-clustering held fixed (uniform weights); ``axis=1``: column ``u``
    in column cluster ``g``."""
    Z = np.asarray(Z, dtype=float)
    if axis == 1:
        basis_t = {"C3": "C4", "C4": "C3"}.get(basis, basis)
        return moved_cost(Z.T, h, r, basis_t, divergence, u, g, axis=0)
    W = np.ones(Z.shape)
    add = get_divergence(divergence).name == "sqeuclidean"
    cost = 0.0
    for v in range(Z.shape[1]):
        M = _means(Z, W, r, h, u, v, g, h[v])
        zh = _entry(M, basis, add)
        cost += objective(Z[u:u + 1, v:v + 1], np.array([[zh]]), divergence)
    return cost


def objective(Z, Zhat, divergence, W=None):
    """``sum w d(z, zhat)``: squares, or ``scipy.special.kl_div`` for the I-divergence, or the
    registry's scalar divergence otherwise."""
    Z = np.asarray(Z, dtype=float)
    W = np.ones(Z.shape) if W is None else np.asarray(W, dtype=float)
    name = get_divergence(divergence).name
    obs = W > 0
    if name == "sqeuclidean":
        d = (Z - Zhat) ** 2
    elif name == "kl":
        with np.errstate(divide="ignore", invalid="ignore"):
            d = kl_div(Z, Zhat)
    else:
        div = get_divergence(divergence)
        d = np.zeros(Z.shape)
        for u, v in zip(*np.nonzero(obs)):
            d[u, v] = div.divergence(Z[u, v:v + 1], Zhat[u, v:v + 1])
    return float((W[obs] * d[obs]).sum())


def brute_force(Z, k, l, basis, divergence):
    """``(objective, r, h)`` of the best of every row and column labelling (uniform weights;
    labellings that leave a cluster empty included)."""
    Z = np.asarray(Z, dtype=float)
    m, n = Z.shape
    best = (np.inf, None, None)
    for r in itertools.product(range(k), repeat=m):
        r = np.array(r)
        for h in itertools.product(range(l), repeat=n):
            h = np.array(h)
            f = objective(Z, table_zhat(Z, r, h, basis, divergence), divergence)
            if f < best[0] - 1e-12:
                best = (f, r, h)
    return best


def cvxpy_zhat(Z, W, r, h, basis, divergence):
    """The minimum-Bregman-information matrix for the weights ``W`` by cvxpy: minimise
    ``sum w phi(Y)`` over the observed entries subject to the basis's weighted means."""
    import cvxpy as cp

    Z = np.asarray(Z, dtype=float)
    W = np.asarray(W, dtype=float)
    m, n = Z.shape
    name = get_divergence(divergence).name
    Y = cp.Variable((m, n))
    groups = {
        "R": lambda u, v: u, "C": lambda u, v: v, "RC": lambda u, v: r[u],
        "CC": lambda u, v: h[v], "B": lambda u, v: (r[u], h[v]),
        "RxCC": lambda u, v: (u, h[v]), "RCxC": lambda u, v: (r[u], v),
    }
    parts = {"C1": ("RC", "CC"), "C2": ("B",), "C3": ("B", "R"), "C4": ("B", "C"),
             "C5": ("B", "R", "C"), "C6": ("RxCC", "RCxC")}[basis]
    cons = []
    for G in parts:
        keys = {}
        for u in range(m):
            for v in range(n):
                if W[u, v] > 0:
                    keys.setdefault(groups[G](u, v), []).append((u, v))
        for cells in keys.values():
            mask = np.zeros((m, n))
            for u, v in cells:
                mask[u, v] = W[u, v]
            cons.append(cp.sum(cp.multiply(mask, Y)) == float((mask * Z).sum()))
    if name == "sqeuclidean":
        obj = cp.sum(cp.multiply(W, cp.square(Y)))
    else:
        obj = cp.sum(cp.multiply(W, -cp.entr(Y) - Y))
    cp.Problem(cp.Minimize(obj), cons).solve(solver="CLARABEL")
    return np.asarray(Y.value)


def itcc(Z, r, h, n_iter=100):
    """Information-theoretic co-clustering (Dhillon, Mallela & Modha, KDD 2003, Algorithm 1)
    from the labels ``(r, h)``: ``(r, h, loss)`` with ``loss = I(X;Y) - I(Xh;Yh)``."""
    Z = np.asarray(Z, dtype=float)
    p = Z / Z.sum()
    px, py = p.sum(1), p.sum(0)
    k, l = r.max() + 1, h.max() + 1
    r, h = r.copy(), h.copy()

    def q_parts(r, h):
        pxy_hat = np.zeros((k, l))
        for u in range(p.shape[0]):
            for v in range(p.shape[1]):
                pxy_hat[r[u], h[v]] += p[u, v]
        pxh, pyh = pxy_hat.sum(1), pxy_hat.sum(0)
        return pxy_hat, pxh, pyh

    def kl(a, b):
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(a > 0, a * np.log(a / b), 0.0)
        return t.sum()

    for _ in range(n_iter):
        old = (r.copy(), h.copy())
        pxy_hat, pxh, pyh = q_parts(r, h)
        # q(y | xh) = q(y | yh) q(yh | xh)
        qy_xh = np.array([[py[v] / pyh[h[v]] * pxy_hat[g, h[v]] / pxh[g] if pxh[g] > 0 else 0.0
                           for v in range(p.shape[1])] for g in range(k)])
        for u in range(p.shape[0]):
            cond = p[u] / px[u]
            r[u] = int(np.argmin([kl(cond, qy_xh[g]) for g in range(k)]))
        pxy_hat, pxh, pyh = q_parts(r, h)
        qx_yh = np.array([[px[u] / pxh[r[u]] * pxy_hat[r[u], c] / pyh[c] if pyh[c] > 0 else 0.0
                           for u in range(p.shape[0])] for c in range(l)])
        for v in range(p.shape[1]):
            cond = p[:, v] / py[v]
            h[v] = int(np.argmin([kl(cond, qx_yh[c]) for c in range(l)]))
        if (old[0] == r).all() and (old[1] == h).all():
            break
    pxy_hat, pxh, pyh = q_parts(r, h)
    mi = kl(p.ravel(), np.outer(px, py).ravel())
    mi_hat = kl(pxy_hat.ravel(), np.outer(pxh, pyh).ravel())
    return r, h, mi - mi_hat
