"""Slow, obvious references for the cosine geometry (MATH.md section 8), plain numpy loops.

* :func:`spherical_kmeans`: Dhillon & Modha's spherical k-means from given centres.
* :func:`vmf_logpdf`: the von Mises-Fisher log-density from the definition with the unscaled
  Bessel function (moderate orders and arguments; no scaling tricks).
* :func:`vmf_em`: soft/hard moVMF EM (Banerjee et al. 2005, Algorithm 1/2), one row and one
  component at a time.
"""

import math

import numpy as np
from scipy import special


def unit(X):
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=float)
    return np.array([x / math.sqrt(float(x @ x)) for x in X])


def spherical_kmeans(X, centres, w=None, max_iter=100):
    """Labels, unit centres and the objective history ``sum_i w_i (1 - <x_i, u_h(i)>)``."""
    X = unit(X)
    U = unit(centres)
    n = X.shape[0]
    w = np.ones(n) if w is None else np.asarray(w, dtype=float)
    labels = None
    history = []
    for _ in range(max_iter):
        new = np.array([int(np.argmax([x @ u for u in U])) for x in X])
        history.append(float(sum(w[i] * (1.0 - X[i] @ U[new[i]]) for i in range(n))))
        if labels is not None and (new == labels).all():
            break
        labels = new
        for j in range(U.shape[0]):
            s = sum((w[i] * X[i] for i in range(n) if labels[i] == j), np.zeros(X.shape[1]))
            if np.linalg.norm(s) > 0:
                U[j] = s / np.linalg.norm(s)
    return labels, U, history


def vmf_log_normaliser(d, kappa):
    """``log C_d(kappa) = (d/2 - 1) log kappa - (d/2) log(2 pi) - log I_(d/2-1)(kappa)`` from
    the unscaled Bessel function (moderate ``d`` and ``kappa`` only)."""
    v = d / 2.0 - 1.0
    return float(v * math.log(kappa) - (d / 2.0) * math.log(2 * math.pi)
                 - math.log(special.iv(v, kappa)))


def vmf_logpdf(x, mu, kappa):
    d = x.shape[0]
    return vmf_log_normaliser(d, kappa) + kappa * float(mu @ x)


def mean_resultant_inverse(d, r):
    """``kappa`` with ``A_d(kappa) = I_(d/2)(kappa) / I_(d/2-1)(kappa) = r`` by bisection on the
    unscaled Bessel functions (the oracle of the Newton solver; moderate values only)."""
    v = d / 2.0

    def A(k):
        return float(special.iv(v, k) / special.iv(v - 1, k))

    lo, hi = 0.0, 1.0
    while A(hi) < r:
        lo, hi = hi, hi * 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if A(mid) < r:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def vmf_em(X, means, kappas, weights, n_iter, hard=False):
    """EM of a mixture of vMF from given parameters: ``(means, kappas, weights, history)``,
    ``history`` the mean log-likelihood before every M-step; with ``hard`` (hard-moVMF,
    classification EM) the mean classification log-likelihood ``max_h log(pi_h f_h(x))``."""
    X = unit(X)
    n, d = X.shape
    M = unit(means)
    kap = np.array(kappas, dtype=float)
    pi = np.array(weights, dtype=float)
    history = []
    for _ in range(n_iter):
        L = np.array([[math.log(pi[h]) + vmf_logpdf(x, M[h], kap[h]) for h in range(len(pi))]
                      for x in X])
        top = L.max(axis=1, keepdims=True)
        lse = top[:, 0] + np.log(np.exp(L - top).sum(axis=1))
        history.append(float(top.mean() if hard else lse.mean()))
        if hard:
            R = np.zeros_like(L)
            R[np.arange(n), L.argmax(axis=1)] = 1.0
        else:
            R = np.exp(L - lse[:, None])
        for h in range(len(pi)):
            s = R[:, h] @ X
            W = R[:, h].sum()
            pi[h] = W / n
            M[h] = s / np.linalg.norm(s)
            kap[h] = mean_resultant_inverse(d, np.linalg.norm(s) / W)
    return M, kap, pi, history


def log_bessel_series(v, k, terms=40000):
    """``log I_v(k)`` from its power series ``sum_m (k/2)^(2m+v) / (m! Gamma(m+v+1))``, summed
    in log space (any order; arguments up to about ``terms``)."""
    m = np.arange(terms, dtype=float)
    t = (2 * m + v) * math.log(k / 2.0) - special.gammaln(m + 1) - special.gammaln(m + v + 1)
    top = t.max()
    return float(top + math.log(np.exp(t - top).sum()))


def vmf_log_normaliser_series(d, kappa):
    """``log C_d(kappa)`` with the power-series Bessel function (the oracle where scipy's
    unscaled or scaled Bessel functions underflow)."""
    v = d / 2.0 - 1.0
    return v * math.log(kappa) - (d / 2.0) * math.log(2 * math.pi) - log_bessel_series(v, kappa)
