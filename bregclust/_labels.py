"""The (weighted) membership matrix of integer labels, one builder for every module.

It sits below :mod:`bregclust.divergences` (it imports numpy and scipy only), so the
divergence record's left-type centroid and the multi-task and co-clustering estimators
(through :func:`bregclust._multitask.label_indicator`) build it the same way.
"""

import numpy as np
import scipy.sparse as sp

__all__ = ["label_indicator"]


def label_indicator(labels, n_clusters=None, weights=None, *, by_cluster=False):
    """The membership matrix of integer labels, sparse, optionally weighted.

    Parameters
    ----------
    labels : ndarray of shape (n,)
        Non-negative integer labels.
    n_clusters : int, optional
        Number of clusters (``labels.max() + 1`` when None; 0 for no labels).
    weights : ndarray of shape (n,), optional
        The entry of row ``i``; 1 when None.
    by_cluster : bool, default=False
        Return the ``(n_clusters, n)`` matrix (one row per cluster, its members' weights in
        the order of the rows) instead of ``(n, n_clusters)``.

    Returns
    -------
    Z : scipy.sparse.csr_matrix of shape (n, n_clusters), or (n_clusters, n) with ``by_cluster``
        ``Z[i, labels[i]] = weights[i]``, float64.

    Examples
    --------
    >>> label_indicator(np.array([1, 0, 1])).toarray()
    array([[0., 1.],
           [1., 0.],
           [0., 1.]])
    >>> label_indicator(np.array([1, 0, 1]), 3, np.array([.5, 2., 1.]), by_cluster=True).toarray()
    array([[0. , 2. , 0. ],
           [0.5, 0. , 1. ],
           [0. , 0. , 0. ]])
    """
    labels = np.asarray(labels, dtype=np.int64)
    n = labels.size
    k = (int(labels.max()) + 1 if n else 0) if n_clusters is None else int(n_clusters)
    values = np.ones(n) if weights is None else weights
    if by_cluster:
        return sp.csr_matrix((values, (labels, np.arange(n))), shape=(k, n))
    return sp.csr_matrix((values, (np.arange(n), labels)), shape=(n, k))
