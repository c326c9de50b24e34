"""The smoothing rule every centroid estimator shares (Telgarsky & Dasgupta, Thm 5.2).

A pseudo-point ``z`` (the data mean pushed inside the centres' domain) with weight ``beta`` is
added to every cluster: centres are ``(S_j + beta z) / (W_j + beta)``. It keeps kl and
Itakura-Saito centres off the boundary of their domain, where a zero coordinate costs an
infinite divergence. :func:`auto_smoothing` is the rule of ``smoothing="auto"``;
:func:`auto_smoothing_from_counts` is the same rule from the counts a data pass collects, so
data that are not in memory (dask chunks, a stream) get the same value.
"""

import numpy as np
import scipy.sparse as sp

from ._validation import check_sample_weight, check_smoothing
from .divergences import get_divergence

__all__ = ["AUTO_SPARSE_ZERO_FRACTION", "AUTO_SPARSE_CLUSTER_MASSES", "auto_smoothing",
           "auto_smoothing_from_counts", "resolve_smoothing", "smoothing_point", "push_inside",
           "smoothed_points"]

#: ``smoothing="auto"`` treats data with at least this fraction of zero entries as sparse counts
#: (text) ...
AUTO_SPARSE_ZERO_FRACTION = 0.9
#: ... and gives them a pseudo-count of this many average cluster masses.
AUTO_SPARSE_CLUSTER_MASSES = 3.0


def push_inside(z, div):
    """The mean ``z`` with zero coordinates lifted for divergences on positive centres.

    For kl and Itakura-Saito a coordinate that is zero in every sample becomes ``1e-12`` times
    the largest coordinate of ``z``, so ``grad phi(z)`` is finite.

    Parameters
    ----------
    z : ndarray of shape (n_features,)
    div : Divergence

    Returns
    -------
    ndarray of shape (n_features,)
    """
    if div.right_domain == "positive":
        floor = 1e-12 * max(float(z.max()), 1e-300) if z.size else 1e-300
        z = np.where(z > floor, z, floor)
    return z


def smoothing_point(X, divergence, sample_weight=None):
    """The point ``z`` that smoothing mixes into centroids (Telgarsky & Dasgupta, Thm 5.2).

    The weighted mean of the data, pushed into the interior of the centres' domain: for
    divergences on non-negative/positive data, coordinates that are zero in every sample get
    a tiny positive value (``1e-12`` times the largest mean coordinate), so ``grad phi(z)`` is
    finite.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
    divergence : str or Divergence
    sample_weight : ndarray of shape (n_samples,), optional

    Returns
    -------
    z : ndarray of shape (n_features,)

    Examples
    --------
    >>> import numpy as np
    >>> smoothing_point(np.array([[0.0, 2.0], [0.0, 4.0]]), "kl").tolist()
    [3e-12, 3.0]
    """
    div = get_divergence(divergence)
    w = check_sample_weight(sample_weight, X.shape[0])
    return push_inside(np.asarray(w @ X).ravel() / w.sum(), div)


def smoothed_points(points, w, beta, z):
    """Centres of clusters holding the rows ``points`` with weights ``w``, plus ``beta`` at ``z``.

    Parameters
    ----------
    points : ndarray of shape (m, n_features)
    w : array-like of shape (m,)
    beta : float
    z : ndarray of shape (n_features,) or None (when ``beta == 0``)

    Returns
    -------
    ndarray of shape (m, n_features)
    """
    if beta == 0.0:
        return points
    w = np.asarray(w, dtype=np.float64).reshape(-1, 1)
    return (w * points + beta * z) / (w + beta)


def auto_smoothing_from_counts(div, n, d, nnz, w_total, n_clusters):
    """:func:`auto_smoothing` from the data's shape, non-zero count and total weight.

    Parameters
    ----------
    div : Divergence
    n, d : int
        Rows and columns of the data.
    nnz : int or None
        Non-zero entries (unused, and may be None, for divergences on R).
    w_total : float
        Total sample weight.
    n_clusters : int

    Returns
    -------
    beta : float
    """
    if div.domain == "real":
        return 0.0
    if n * d and 1.0 - nnz / (n * d) >= AUTO_SPARSE_ZERO_FRACTION:
        return AUTO_SPARSE_CLUSTER_MASSES * w_total / n_clusters
    return w_total / n if n else 1.0


def auto_smoothing(X, divergence, n_clusters, sample_weight=None):
    """The pseudo-count ``beta`` that ``smoothing="auto"`` gives one clustering task.

    * Divergences on R (``sqeuclidean``, ``mahalanobis``, ...): 0, no smoothing.
    * Divergences on non-negative or positive data, **sparse data** (at least 90% of the entries
      are zero, as in document-term counts): ``3 W / K``, three average cluster masses
      (``W`` the total sample weight, ``K`` the number of clusters). Every centre is then
      ``(S_j + beta z) / (W_j + beta)``: a cluster of average size keeps a quarter of its own
      mean and three quarters of the data mean ``z``. The shrinkage does not vanish as
      clusters grow, which is what kl on sparse text needs: a zero count in a centre costs an
      infinite divergence, and a small pseudo-count leaves centres dominated by the few
      documents that use each rare term.
    * Same divergences on **dense data**: the mean sample weight, one pseudo-sample, enough to
      keep centres off the boundary of the domain without moving them.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        The validated data of the task.
    divergence : str or Divergence
    n_clusters : int
        Number of clusters ``K`` of the task.
    sample_weight : ndarray of shape (n_samples,), optional
        Sample weights (all ones when None).

    Returns
    -------
    beta : float

    Notes
    -----
    On kl k-means of L1-normalised term counts the rule matches the best fixed pseudo-count in
    {1, 10, 100, 1000} on the six CLUTO sets and 20 Newsgroups (the measurements, over 200
    seeds, are in ``benchmarks/RESULTS.md``; ``benchmarks/kl_smoothing.py`` reproduces them),
    where one pseudo-sample loses up to 0.13 NMI; on scikit-learn's dense 8x8 digits the same
    strength would cost 0.1 NMI, hence the dense branch.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> auto_smoothing(np.ones((10, 3)), "kl", 2)
    1.0
    >>> auto_smoothing(sp.eye(100, 50, format="csr"), "kl", 5)
    60.0
    >>> auto_smoothing(np.ones((10, 3)), "sqeuclidean", 2)
    0.0
    """
    div = get_divergence(divergence)
    n, d = X.shape
    w_total = float(n) if sample_weight is None else float(np.sum(sample_weight))
    if div.domain == "real":
        nnz = None  # unused there: skip the count (a full pass over dense data)
    else:
        nnz = np.count_nonzero(X.data) if sp.issparse(X) else np.count_nonzero(X)
    return auto_smoothing_from_counts(div, n, d, nnz, w_total, n_clusters)


def resolve_smoothing(smoothing, div, counts, n_clusters):
    """``smoothing_``: the estimator's ``smoothing`` parameter checked, ``"auto"`` resolved.

    Parameters
    ----------
    smoothing : float or "auto"
    div : Divergence
    counts : tuple
        ``(n, d, nnz, total weight)`` of the data (from a statistics pass).
    n_clusters : int

    Returns
    -------
    beta : float
    """
    s = check_smoothing(smoothing)
    if s != "auto":
        return s
    return auto_smoothing_from_counts(div, *counts, n_clusters)
