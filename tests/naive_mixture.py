"""Slow, dense EM for mixtures of exponential families, written from the maths (test oracle).

Independent of bregclust: component log-densities come from ``scipy.stats``; the M-step is
written out per family (weighted means, the variance, the Gamma shape solved with
``scipy.optimize.brentq``); the smoothing pseudo-point ``z`` of weight ``s`` is the conjugate
prior ``exp(-s beta d(z, mu))``, with ``d`` written out per family.
"""

import numpy as np
from scipy import stats
from scipy.optimize import brentq
from scipy.special import digamma, logsumexp


def component_logpdf(X, family, mean, disp, cov=None):
    """``log p(x_i | mean, disp)`` of every row under one component.

    ``disp``: the variance (gaussian; the covariance is ``disp * cov`` when ``cov`` is
    given), ``1 / shape`` (gamma); unused for poisson and multinomial.
    """
    X = np.asarray(X, dtype=np.float64)
    if family == "gaussian":
        if cov is not None:
            return stats.multivariate_normal.logpdf(X, mean=mean, cov=disp * cov)
        return stats.norm.logpdf(X, loc=mean, scale=np.sqrt(disp)).sum(axis=1)
    if family == "poisson":
        return stats.poisson.logpmf(X, mean).sum(axis=1)
    if family == "multinomial":
        N = X.sum(axis=1)
        return np.array([stats.multinomial.logpmf(x, n=int(round(n)), p=mean)
                         for x, n in zip(X, N)])
    if family == "gamma":
        a = 1.0 / disp
        return stats.gamma.logpdf(X, a, scale=mean / a).sum(axis=1)
    raise ValueError(family)


def divergence(family, x, mean, cov=None):
    """``d(x, mean)`` of the family's Bregman divergence, written out (``x`` one point)."""
    if family == "gaussian":
        r = x - mean
        return float(r @ np.linalg.inv(cov) @ r) if cov is not None else float(r @ r)
    if family in ("poisson", "multinomial"):
        pos = x > 0
        return float(np.sum(x[pos] * np.log(x[pos] / mean[pos])) - x.sum() + mean.sum())
    if family == "gamma":
        q = x / mean
        return float(np.sum(q - np.log(q) - 1.0))
    raise ValueError(family)


def precision(family, disp):
    """``beta`` with ``log p = -beta d(x, mean) + log b``."""
    if family == "gaussian":
        return 0.5 / disp
    if family == "gamma":
        return 1.0 / disp
    return 1.0


def log_likelihood(X, family, weights, means, disps, cov=None):
    """Per-row log-density of the mixture, and the responsibilities."""
    L = np.column_stack([np.log(weights[h]) + component_logpdf(X, family, means[h], disps[h], cov)
                         for h in range(len(weights))])
    ll = logsumexp(L, axis=1)
    return ll, np.exp(L - ll[:, None])


def _shape(m):
    """The Gamma shape with ``log a - digamma(a) = m``."""
    f = lambda a: np.log(a) - digamma(a) - m  # noqa: E731
    lo, hi = 1e-8, 1.0
    while f(hi) > 0:
        hi *= 2.0
    return brentq(f, lo, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps, maxiter=500)


def em(X, family, weights, means, disps, n_iter, *, w=None, s=0.0, z=None,
       dispersion="component", reg=0.0, cov=None):
    """``n_iter`` EM steps from the given parameters.

    Returns ``(history, weights, means, disps)``: ``history[t]`` is the per-unit-weight
    objective (log-likelihood minus ``s sum_h beta_h d(z, mean_h)``) at the parameters before
    step ``t``.
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    w = np.ones(n) if w is None else np.asarray(w, dtype=np.float64)
    weights, means, disps = (np.array(weights, float), np.array(means, float),
                             np.array(disps, float))
    k = len(weights)
    history = []
    for _ in range(n_iter):
        ll, R = log_likelihood(X, family, weights, means, disps, cov)
        pen = 0.0
        if s > 0:
            pen = s * sum(precision(family, disps[h]) * divergence(family, z, means[h], cov)
                          for h in range(k))
        history.append((w @ ll - pen) / w.sum())
        WR = R * w[:, None]
        Wh = WR.sum(axis=0)
        weights = Wh / Wh.sum()
        S = WR.T @ X
        prior = s * z if s > 0 else 0.0
        if family == "multinomial":
            means = (S + prior) / (S.sum(axis=1) + s)[:, None]
        else:
            means = (S + prior) / (Wh + s)[:, None]
        if family in ("gaussian", "gamma") and dispersion != "fixed":
            J = np.array([sum(WR[i, h] * divergence(family, X[i], means[h], cov)
                              for i in range(n)) for h in range(k)])
            if s > 0:
                J = J + s * np.array([divergence(family, z, means[h], cov) for h in range(k)])
            if dispersion == "tied":
                m = np.full(k, J.sum() / (Wh.sum() * d))
            else:
                m = J / (Wh * d)
            if family == "gaussian":
                disps = m + reg
            else:
                disps = np.array([1.0 / _shape(v) for v in m]) + reg
    return history, weights, means, disps
