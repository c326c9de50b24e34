"""Consensus of several partitions of one data set (cluster ensembles, Strehl & Ghosh 2002).

Used by :class:`~bregclust.SpectralMTC` (``base_rule="consensus"``, through :func:`anmi`) to
choose, per task and without labels, among the partitions of its single-task bases; the
co-association ensemble (:func:`coassociation`, :func:`coassociation_labels`) is offered for
users and measured by ``benchmarks/spectral_mtc_base.py`` (not used by the estimator: it
failed the rule fixed before scoring). The partitions ``P_1 .. P_m`` of the same
``n`` rows carry weights ``w_p >= 0`` summing to one.

* :func:`coassociation` - the co-association matrix ``S = sum_p w_p Z_p Z_p^T`` (``Z_p`` the
  ``n x K_p`` indicator of ``P_p``): ``S[i, j]`` is the weighted fraction of the partitions
  that put rows ``i`` and ``j`` together (the similarity of Strehl & Ghosh's CSPA).
* :func:`coassociation_labels` - spectral clustering of ``S`` in the manner of Ng, Jordan &
  Weiss: the ``K`` leading eigenvectors of ``D^-1/2 S D^-1/2`` (``D = diag(S 1)``, diagonal of
  ``S`` kept), rows scaled to unit norm, k-means. ``S = B0 B0^T`` with
  ``B0 = [sqrt(w_p) Z_p]_p``, so the eigenvectors are the leading left singular vectors of the
  ``n x sum_p K_p`` matrix ``D^-1/2 B0`` and ``S`` is never formed (Fern & Brodley 2004 cluster
  the same bipartite graph). Hand-written: scikit-learn's ``SpectralClustering`` would need the
  dense ``n x n`` matrix.
* :func:`anmi` - the weighted mean NMI of a partition with the ensemble (Strehl & Ghosh's
  average normalised mutual information, the objective a consensus partition maximises).
"""

import numpy as np
import scipy.sparse as sp
from sklearn.cluster import KMeans
from sklearn.preprocessing import normalize
from sklearn.utils import check_random_state

from .metrics import nmi

__all__ = ["coassociation", "coassociation_labels", "anmi"]


def _weights(partitions, weights):
    m = len(partitions)
    if m == 0:
        raise ValueError("partitions must hold at least one partition.")
    w = np.full(m, 1.0 / m) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (m,) or np.any(~np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError("weights must be one finite non-negative number per partition with a "
                         "positive sum.")
    return w / w.sum()


def _indicator_blocks(partitions, w):
    """``B0 = [sqrt(w_p) Z_p]_p`` as a CSR matrix (one column per cluster of every partition)."""
    n = len(partitions[0])
    blocks = []
    for lab, wp in zip(partitions, w):
        lab = np.asarray(lab)
        if lab.shape != (n,):
            raise ValueError("every partition must label the same n rows.")
        _, inv = np.unique(lab, return_inverse=True)
        blocks.append(sp.csr_matrix((np.full(n, np.sqrt(wp)), (np.arange(n), inv.ravel())),
                                    shape=(n, int(inv.max()) + 1)))
    return sp.hstack(blocks, format="csr")


def coassociation(partitions, weights=None):
    """The co-association matrix of an ensemble of partitions.

    ``S[i, j] = sum_p w_p [P_p(i) == P_p(j)]``.

    Parameters
    ----------
    partitions : list of ndarray of shape (n,)
        Labels of the same rows (any hashable labels per partition).
    weights : array-like of shape (m,), optional
        Non-negative weights (normalised to sum one); equal when None.

    Returns
    -------
    S : ndarray of shape (n, n)

    Examples
    --------
    >>> coassociation([[0, 0, 1], [0, 1, 1]])
    array([[1. , 0.5, 0. ],
           [0.5, 1. , 0.5],
           [0. , 0.5, 1. ]])
    """
    B0 = _indicator_blocks(partitions, _weights(partitions, weights))
    return np.asarray((B0 @ B0.T).todense())


def coassociation_labels(partitions, n_clusters, weights=None, *, n_init=10, random_state=None):
    """Spectral clustering (NJW rows) of the co-association matrix of an ensemble.

    The ``n_clusters`` leading eigenvectors ``U`` of ``D^-1/2 S D^-1/2`` (:func:`coassociation`,
    its diagonal included; ``D`` its row sums), each row of ``U`` scaled to unit norm, then
    ``KMeans(n_clusters, n_init)``. Computed from the SVD of ``D^-1/2 B0`` (module docstring).

    Parameters
    ----------
    partitions : list of ndarray of shape (n,)
    n_clusters : int
    weights : array-like of shape (m,), optional
    n_init : int, default=10
    random_state : int, RandomState or None

    Returns
    -------
    labels : ndarray of shape (n,), int64

    Examples
    --------
    >>> lab = coassociation_labels([[0, 0, 1, 1], [0, 0, 0, 1], [1, 1, 0, 0]], 2, random_state=0)
    >>> bool(lab[0] == lab[1] and lab[2] == lab[3] and lab[0] != lab[2])
    True
    """
    w = _weights(partitions, weights)
    B0 = _indicator_blocks(partitions, w)
    n = B0.shape[0]
    k = int(n_clusters)
    if not 1 <= k <= n:
        raise ValueError(f"n_clusters must be in [1, {n}], got {n_clusters}.")
    deg = np.asarray(B0 @ (B0.T @ np.ones(n))).ravel()  # S 1 > 0: S[i, i] = 1
    B = sp.diags(1.0 / np.sqrt(deg)) @ B0
    U, _, _ = np.linalg.svd(B.toarray(), full_matrices=False)
    rows = normalize(U[:, :k])
    km = KMeans(k, n_init=n_init, random_state=check_random_state(random_state)).fit(rows)
    return km.labels_.astype(np.int64)


def anmi(labels, partitions, weights=None):
    """Weighted mean NMI of a partition with every partition of an ensemble.

    ``sum_p w_p NMI(labels, P_p)`` with :func:`bregclust.metrics.nmi` (square-root
    normalisation, Strehl & Ghosh 2002).

    Parameters
    ----------
    labels : ndarray of shape (n,)
    partitions : list of ndarray of shape (n,)
    weights : array-like of shape (m,), optional

    Returns
    -------
    float

    Examples
    --------
    >>> round(anmi([0, 0, 1, 1], [[0, 0, 1, 1], [1, 1, 0, 0]]), 6)
    1.0
    """
    w = _weights(partitions, weights)
    return float(sum(wp * nmi(labels, p) for wp, p in zip(w, partitions)))
