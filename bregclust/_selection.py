"""Choosing the number of mixture components by cross-validated log-likelihood.

BIC charges every multinomial component ``d - 1`` parameters times ``log n``: on text with
thousands of terms that penalty dwarfs what a component adds to the (overconfident) likelihood,
and BIC picks two components whatever the corpus. The held-out log-likelihood needs no
parameter count: each candidate ``K`` is fitted on ``v - 1`` folds and scored on the left-out
fold (Smyth, 2000). The fold-to-fold spread of a corpus is dominated by which documents fall in
a fold (their lengths), the same for every ``K``, so candidates are compared through their
*paired* per-fold differences: the chosen ``K`` is the smallest whose held-out log-likelihood
is within one standard error of the paired difference from the best (the one-standard-error
rule of Breiman et al., 1984, on paired differences).
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.model_selection import KFold

__all__ = ["CVSelection", "cross_validated_loglik", "one_se_choice"]


@dataclass(frozen=True)
class CVSelection:
    """Held-out log-likelihoods of the candidates.

    Attributes
    ----------
    ks : ndarray of int
        The candidates.
    fold_loglik : ndarray of shape (n_candidates, n_folds)
        Weighted mean held-out log-likelihood per row, per candidate and fold.
    choice : int
        Index (into ``ks``) of the chosen candidate.
    """

    ks: np.ndarray
    fold_loglik: np.ndarray
    choice: int

    @property
    def mean(self):
        """Mean over folds of the held-out log-likelihood per row."""
        return self.fold_loglik.mean(axis=1)


def one_se_choice(fold_loglik):
    """Index of the smallest candidate within one paired standard error of the best.

    Parameters
    ----------
    fold_loglik : ndarray of shape (n_candidates, n_folds)
        Held-out log-likelihood per row; candidates in increasing complexity.

    Returns
    -------
    int

    Examples
    --------
    >>> import numpy as np
    >>> one_se_choice(np.array([[-5.0, -6.0], [-4.0, -5.0], [-3.9, -5.08]]))  # 1: within noise
    1
    >>> one_se_choice(np.array([[-5.0, -6.0], [-4.0, -5.0], [-3.99, -4.98]]))  # 2: better per fold
    2
    """
    F = np.asarray(fold_loglik, dtype=np.float64)
    mean = F.mean(axis=1)
    best = int(np.argmax(mean))
    nf = F.shape[1]
    diff = F[best][None, :] - F  # paired per fold, >= 0 on average for every candidate
    se = diff.std(axis=1, ddof=1) / np.sqrt(nf) if nf > 1 else np.zeros(F.shape[0])
    ok = mean[best] - mean <= se
    return int(np.flatnonzero(ok)[0])


def _rows(X, idx):
    return X[idx] if sp.issparse(X) or isinstance(X, np.ndarray) else np.asarray(X)[idx]


def cross_validated_loglik(estimator, X, ks, *, n_folds=3, sample_weight=None,
                           random_state=None):
    """Held-out log-likelihood of ``estimator`` with each number of components in ``ks``.

    Parameters
    ----------
    estimator : BregmanMixture
        Cloned per fit with ``n_components=k``, ``criterion="bic"``, ``warm_start=False``.
    X : ndarray or sparse matrix of shape (n_samples, n_features)
    ks : sequence of int
    n_folds : int, default=3
    sample_weight : ndarray of shape (n_samples,), optional
    random_state : RandomState
        Draws the folds and the seeds of the fits (the same seed for every candidate of a
        fold).

    Returns
    -------
    CVSelection
    """
    n = X.shape[0]
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    folds = list(KFold(n_folds, shuffle=True,
                       random_state=random_state.randint(2 ** 31 - 1)).split(np.arange(n)))
    seeds = random_state.randint(2 ** 31 - 1, size=n_folds)
    out = np.empty((len(ks), n_folds))
    for f, (tr, te) in enumerate(folds):
        for i, k in enumerate(ks):
            est = clone(estimator).set_params(n_components=int(k), criterion="bic",
                                              warm_start=False, verbose=0,
                                              random_state=int(seeds[f]))
            est.fit(_rows(X, tr), sample_weight=w[tr])
            out[i, f] = est.score(_rows(X, te), sample_weight=w[te])
    return CVSelection(np.asarray(ks, dtype=np.int64), out, one_se_choice(out))
