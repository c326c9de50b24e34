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
    fold_labels : ndarray of shape (n_candidates, n_folds, n_samples) or None
        With ``keep_labels=True``: each fold's model's most probable component of every row.
    """

    ks: np.ndarray
    fold_loglik: np.ndarray
    choice: int
    fold_labels: np.ndarray = None

    def stability(self):
        """Mean adjusted Rand index between the fold models' partitions of all rows.

        The fold models of one candidate are fitted on overlapping subsets (each pair shares
        ``(v - 2) / v`` of the rows); a ``K`` the data support gives them the same partition
        (Ben-Hur, Elisseeff & Guyon, 2002; Lange et al., 2004). Needs ``keep_labels=True``.

        Returns
        -------
        ndarray of shape (n_candidates,)
        """
        from sklearn.metrics import adjusted_rand_score

        if self.fold_labels is None:
            raise ValueError("stability needs the fold labels: call cross_validated_loglik "
                             "with keep_labels=True.")
        L = self.fold_labels
        nf = L.shape[1]
        return np.array([np.mean([adjusted_rand_score(L[i, a], L[i, b])
                                  for a in range(nf) for b in range(a + 1, nf)])
                         for i in range(L.shape[0])])

    @property
    def mean(self):
        """Mean over folds of the held-out log-likelihood per row."""
        return self.fold_loglik.mean(axis=1)


def one_se_choice(fold_loglik, paired=True):
    """Index of the smallest candidate within one standard error of the best.

    Parameters
    ----------
    fold_loglik : ndarray of shape (n_candidates, n_folds)
        Held-out log-likelihood per row; candidates in increasing complexity.
    paired : bool, default=True
        True: the standard error of each candidate's per-fold difference from the best (the
        fold effect removed). False: the textbook rule (Hastie, Tibshirani & Friedman, 2009,
        sec. 7.10): the standard error of the best candidate's cross-validated estimate, its
        per-fold spread over ``sqrt(n_folds)``.

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
    >>> one_se_choice(np.array([[-5.0, -6.0], [-4.0, -5.0], [-3.99, -4.98]]), paired=False)
    1
    """
    F = np.asarray(fold_loglik, dtype=np.float64)
    mean = F.mean(axis=1)
    best = int(np.argmax(mean))
    nf = F.shape[1]
    if nf < 2:
        se = np.zeros(F.shape[0])
    elif paired:
        diff = F[best][None, :] - F  # paired per fold, >= 0 on average for every candidate
        se = diff.std(axis=1, ddof=1) / np.sqrt(nf)
    else:
        se = np.full(F.shape[0], F[best].std(ddof=1) / np.sqrt(nf))
    ok = mean[best] - mean <= se
    return int(np.flatnonzero(ok)[0])


def _rows(X, idx):
    return X[idx] if sp.issparse(X) or isinstance(X, np.ndarray) else np.asarray(X)[idx]


def cross_validated_loglik(estimator, X, ks, *, n_folds=3, sample_weight=None,
                           random_state=None, keep_labels=False):
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
    keep_labels : bool, default=False
        Keep every fold model's labels of all rows (``fold_labels``, for ``stability``).

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
    labels = np.empty((len(ks), n_folds, n), dtype=np.int64) if keep_labels else None
    for f, (tr, te) in enumerate(folds):
        for i, k in enumerate(ks):
            est = clone(estimator).set_params(n_components=int(k), criterion="bic",
                                              warm_start=False, verbose=0,
                                              random_state=int(seeds[f]))
            est.fit(_rows(X, tr), sample_weight=w[tr])
            out[i, f] = est.score(_rows(X, te), sample_weight=w[te])
            if keep_labels:
                labels[i, f] = est.predict(X)
    return CVSelection(np.asarray(ks, dtype=np.int64), out, one_se_choice(out), labels)
