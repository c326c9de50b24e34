"""The plain multinomial mixture of documents, written from the textbook (benchmark reference).

Independent of bregclust: scikit-learn's ``TfidfTransformer`` and ``KMeans`` give the start
(k-means on L2-normalised tf-idf rows, the usual recipe), then classic EM for a mixture of
multinomials (Nigam et al., 2000) with Laplace-smoothed word probabilities
``p_hw = (sum_i r_ih x_iw + alpha) / (sum_i r_ih N_i + alpha d)``. The log-likelihood is the
full multinomial log-likelihood (coefficient included), so it can be compared with
``BregmanMixture.score``.
"""

import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln, logsumexp


def coefficient(X):
    """``sum_i [lgamma(N_i + 1) - sum_l lgamma(x_il + 1)]``: the multinomial coefficients."""
    X = sp.csr_matrix(X, dtype=np.float64)
    N = np.asarray(X.sum(axis=1)).ravel()
    return float(gammaln(N + 1.0).sum() - gammaln(X.data + 1.0).sum())


def log_joint(X, weights, means):
    """``log pi_h + sum_l x_il log p_hl`` per row and component (without the coefficient)."""
    X = sp.csr_matrix(X, dtype=np.float64)
    with np.errstate(divide="ignore"):
        logp = np.log(np.asarray(means, dtype=np.float64))
        logw = np.log(np.asarray(weights, dtype=np.float64))
    # sparse @ dense touches only the non-zero counts, so a zero probability of a word a row
    # does not use contributes nothing (0 log 0 = 0)
    return np.asarray(X @ logp.T) + logw


def loglik(X, weights, means):
    """Total log-likelihood of the rows of counts ``X`` under the mixture of multinomials."""
    return float(logsumexp(log_joint(X, weights, means), axis=1).sum()) + coefficient(X)


def tfidf_kmeans_labels(X, k, random_state):
    """Labels of scikit-learn k-means (one k-means++ start) on L2-normalised tf-idf rows."""
    from sklearn.cluster import KMeans
    from sklearn.feature_extraction.text import TfidfTransformer

    T = TfidfTransformer().fit_transform(sp.csr_matrix(X))
    return KMeans(k, n_init=1, random_state=random_state).fit_predict(T)


def multinomial_em(X, k, *, alpha=0.01, max_iter=300, labels=None, random_state=0,
                   rtol=1e-12):
    """EM for a mixture of multinomials from a hard start.

    Parameters
    ----------
    X : sparse or dense counts (n, d)
    k : int
    alpha : float
        Laplace pseudo-count added to every word of every component in the M-step.
    max_iter : int
        EM iterations (stops earlier when the log-likelihood changes by less than ``rtol``
        relatively).
    labels : ndarray, optional
        The start; default :func:`tfidf_kmeans_labels`.

    Returns
    -------
    dict with ``weights``, ``means``, ``labels`` (most probable component), ``loglik`` (the
    total log-likelihood under the returned weights and means), ``history`` (after every
    M-step) and ``n_iter``.
    """
    X = sp.csr_matrix(X, dtype=np.float64)
    n, d = X.shape
    if labels is None:
        labels = tfidf_kmeans_labels(X, k, random_state)
    R = np.zeros((n, k))
    R[np.arange(n), labels] = 1.0
    coef = coefficient(X)
    history = []
    it = 0
    for it in range(1, max_iter + 1):
        W = R.sum(axis=0)
        weights = np.maximum(W, 1e-300) / n
        weights /= weights.sum()
        S = np.asarray((X.T @ R).T)
        means = (S + alpha) / (S.sum(axis=1, keepdims=True) + alpha * d)
        L = log_joint(X, weights, means)
        lse = logsumexp(L, axis=1)
        R = np.exp(L - lse[:, None])
        history.append(float(lse.sum()) + coef)
        if it > 1 and abs(history[-1] - history[-2]) <= rtol * abs(history[-1]):
            break
    return dict(weights=weights, means=means, labels=np.argmax(R, axis=1),
                loglik=history[-1], history=history, n_iter=it)
