"""Clustering quality measures and the distance between two partitions' mixtures.

- :func:`clustering_accuracy`: fraction of points on the best one-to-one cluster/class matching
  (Hungarian algorithm on the contingency table).
- :func:`nmi`, :func:`ari`: scikit-learn's normalised mutual information with the square-root
  normalisation the multi-task clustering papers use, and the adjusted Rand index.
- :func:`partition_emd`: the MBC paper's ``d_M``, the earth mover's distance between two mixtures
  of cluster centres with a Bregman divergence as ground cost (POT's exact ``emd``).
- :func:`dendrogram_purity`: purity of a hierarchical clustering (a scipy linkage matrix).

POT is called through :func:`bregclust._transport.transport_plan`, the one place that handles its
dtype/order requirements and result codes (MBC's relation step uses it too).
"""

import numpy as np
from numba import njit
from scipy.cluster.hierarchy import is_valid_linkage
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

from ._kernels.generators import JIT
from ._transport import transport_plan
from ._validation import check_class_labels
from .divergences import get_divergence

__all__ = [
    "clustering_accuracy",
    "nmi",
    "ari",
    "clustering_scores",
    "mixture_proportions",
    "partition_emd",
    "dendrogram_purity",
]


# --------------------------------------------------------------------------------------------
# Label-based scores
# --------------------------------------------------------------------------------------------


def _check_labelings(y_true, y_pred):
    """Two 1-D label arrays of the same non-zero length without NaN."""
    out = []
    for name, y in (("y_true", y_true), ("y_pred", y_pred)):
        if y is None:
            raise TypeError(f"{name} is None; pass a 1-D array of labels.")
        a = np.asarray(y)
        if a.ndim != 1:
            raise ValueError(f"{name} must be a 1-D array of labels; got shape {a.shape}. "
                             "Use .ravel() for a column vector.")
        if a.size == 0:
            raise ValueError(f"{name} is empty; need at least one labelled sample.")
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            i = int(np.argmax(~np.isfinite(a)))
            raise ValueError(f"{name} contains NaN or infinity (at position {i}); every sample "
                             "needs a label.")
        if a.dtype.kind == "O" and any(v is None or (isinstance(v, float) and v != v) for v in a):
            raise ValueError(f"{name} contains None or NaN labels; every sample needs a label.")
        out.append(a)
    if out[0].shape[0] != out[1].shape[0]:
        raise ValueError(f"y_true and y_pred must have the same length; got {out[0].shape[0]} "
                         f"and {out[1].shape[0]}.")
    return out


def _contingency(y_true, y_pred):
    """Dense contingency table: rows = classes, columns = clusters (sorted unique values)."""
    _, ti = np.unique(y_true, return_inverse=True)
    _, pi = np.unique(y_pred, return_inverse=True)
    ti, pi = ti.ravel(), pi.ravel()
    n_t, n_p = int(ti.max()) + 1, int(pi.max()) + 1
    return np.bincount(ti * n_p + pi, minlength=n_t * n_p).reshape(n_t, n_p)


def clustering_accuracy(y_true, y_pred):
    """Accuracy of the best one-to-one matching between clusters and classes.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Class labels (any hashable values of one type).
    y_pred : array-like of shape (n_samples,)
        Cluster labels; their number may differ from the number of classes.

    Returns
    -------
    accuracy : float in [0, 1]

    Notes
    -----
    ``acc = max_m sum_i [y_true_i = m(y_pred_i)] / n`` over injective maps ``m`` from clusters to
    classes, found with the Hungarian algorithm (:func:`scipy.optimize.linear_sum_assignment`)
    on the contingency table. With more clusters than classes the unmatched clusters' points
    count as errors (and likewise the unmatched classes' points with fewer clusters).

    Examples
    --------
    >>> clustering_accuracy([0, 0, 1, 1], [1, 1, 0, 0])
    1.0
    >>> clustering_accuracy([0, 0, 0, 1], [0, 1, 2, 3])   # 4 clusters, 2 classes: 2 matched
    0.5
    """
    y_true, y_pred = _check_labelings(y_true, y_pred)
    C = _contingency(y_true, y_pred)
    rows, cols = linear_sum_assignment(C, maximize=True)
    return float(C[rows, cols].sum()) / y_true.shape[0]


def nmi(y_true, y_pred):
    """Normalised mutual information with the square-root normalisation.

    ``NMI = I(Y; C) / sqrt(H(Y) H(C))`` (Strehl & Ghosh 2002), the definition used by the
    multi-task clustering papers; :func:`sklearn.metrics.normalized_mutual_info_score` with
    ``average_method="geometric"``. Both labellings with a single cluster give 1.0.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_samples,)
        Two labellings (any hashable labels).

    Returns
    -------
    float in [0, 1]

    Examples
    --------
    >>> round(nmi([0, 0, 1, 1], [1, 1, 0, 0]), 12)
    1.0
    """
    y_true, y_pred = _check_labelings(y_true, y_pred)
    return float(normalized_mutual_info_score(y_true, y_pred, average_method="geometric"))


def ari(y_true, y_pred):
    """Adjusted Rand index (Hubert & Arabie 1985), :func:`sklearn.metrics.adjusted_rand_score`.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_samples,)
        Two labellings (any hashable labels).

    Returns
    -------
    float in [-1, 1]

    Examples
    --------
    >>> ari([0, 0, 1, 1], [1, 1, 0, 0])
    1.0
    """
    y_true, y_pred = _check_labelings(y_true, y_pred)
    return float(adjusted_rand_score(y_true, y_pred))


def clustering_scores(y_true, y_pred):
    """``{'nmi': ..., 'ari': ..., 'accuracy': ...}`` for one labelling (the papers' table).

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_samples,)
        True classes and cluster labels.

    Returns
    -------
    scores : dict
        :func:`nmi`, :func:`ari` and :func:`clustering_accuracy`.
    """
    return {"nmi": nmi(y_true, y_pred), "ari": ari(y_true, y_pred),
            "accuracy": clustering_accuracy(y_true, y_pred)}


# --------------------------------------------------------------------------------------------
# Partition distance (MBC's d_M)
# --------------------------------------------------------------------------------------------


def mixture_proportions(labels, n_clusters):
    """Empirical cluster proportions ``pi_z = |{i : labels_i = z}| / n``.

    Parameters
    ----------
    labels : array-like of int, shape (n_samples,)
        Values in ``0..n_clusters-1``.
    n_clusters : int

    Returns
    -------
    proportions : ndarray of shape (n_clusters,), sums to 1 (empty clusters get 0).

    Examples
    --------
    >>> mixture_proportions([0, 0, 2, 2], 3).tolist()
    [0.5, 0.0, 0.5]
    """
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, (int, np.integer)) \
            or n_clusters < 1:
        raise ValueError(f"n_clusters must be a positive integer; got {n_clusters!r}.")
    lab = np.asarray(labels)
    if lab.ndim != 1 or lab.size == 0:
        raise ValueError(f"labels must be a non-empty 1-D array; got shape {lab.shape}.")
    if lab.dtype.kind == "f":
        if not np.isfinite(lab).all():
            raise ValueError("labels contain NaN or infinity; every sample needs a cluster.")
        if not np.all(lab == np.round(lab)):
            raise ValueError("labels must be integers 0..n_clusters-1; got non-integer values.")
    elif lab.dtype.kind not in "iub":
        raise ValueError(f"labels must be integers 0..n_clusters-1; got dtype {lab.dtype}.")
    lab = lab.astype(np.int64)
    if lab.min() < 0 or lab.max() >= n_clusters:
        raise ValueError(f"labels must lie in 0..{n_clusters - 1} (n_clusters={n_clusters}); "
                         f"found values from {lab.min()} to {lab.max()}.")
    return np.bincount(lab, minlength=n_clusters).astype(np.float64) / lab.size


def _check_mixture(U, w, name):
    U = np.asarray(U, dtype=np.float64)
    if U.ndim != 2 or U.shape[0] == 0 or U.shape[1] == 0:
        raise ValueError(f"{name} centres must be a non-empty 2-D array (n_clusters, "
                         f"n_features); got shape {U.shape}.")
    if not np.isfinite(U).all():
        r, c = np.unravel_index(int(np.argmax(~np.isfinite(U))), U.shape)
        raise ValueError(f"{name} centres contain NaN or infinity (row {r}, column {c}).")
    w = np.asarray(w, dtype=np.float64)
    if w.ndim != 1 or w.shape[0] != U.shape[0]:
        raise ValueError(f"{name} weights must be 1-D with one entry per centre "
                         f"({U.shape[0]}); got shape {w.shape}.")
    if not np.isfinite(w).all():
        raise ValueError(f"{name} weights contain NaN or infinity.")
    if (w < 0).any():
        i = int(np.argmax(w < 0))
        raise ValueError(f"{name} weights must be non-negative; weight {i} is {w[i]:g}.")
    total = w.sum()
    if not total > 0:
        raise ValueError(f"{name} weights sum to 0; at least one cluster needs positive mass.")
    return np.ascontiguousarray(U), np.ascontiguousarray(w / total)


def _emd(a, b, M, *, return_plan=False):
    """``d_M`` and optionally the plan, by :func:`~bregclust._transport.transport_plan`."""
    # re-normalise in float64 so both marginals are probability vectors
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    a = a / a.sum()
    b = b / b.sum()
    plan = transport_plan(a, b, M, what="the partition distance may be too large")
    cost = float(np.sum(plan * M))
    return (cost, plan) if return_plan else cost


def partition_emd(U1, w1, U2, w2, divergence="sqeuclidean", *, return_plan=False,
                  **divergence_params):
    """Earth mover's distance between two mixtures of cluster centres (MBC's ``d_M``).

    Parameters
    ----------
    U1 : array-like of shape (k1, n_features)
        Centres of the first partition.
    w1 : array-like of shape (k1,)
        Their weights, e.g. :func:`mixture_proportions` of the labels; normalised to sum 1.
    U2 : array-like of shape (k2, n_features)
    w2 : array-like of shape (k2,)
    divergence : str or Divergence, default='sqeuclidean'
        Ground cost ``D[z, l] = d_phi(u1_z, u2_l)`` (first mixture on the data side, second on
        the centre side of the divergence).
    return_plan : bool, default=False
        Also return the optimal transport plan ``(k1, k2)``.
    **divergence_params
        Passed to :func:`bregclust.divergences.get_divergence` (e.g. ``A=`` for mahalanobis).

    Returns
    -------
    d_M : float
    plan : ndarray of shape (k1, k2), only if ``return_plan``.

    Raises
    ------
    ValueError
        Shapes or weights invalid, NaN/inf centres, or different numbers of features.
    DomainError
        Centres outside the divergence's domain (e.g. ``U2`` with a zero coordinate for kl).

    Notes
    -----
    ``d_M = min_{gamma >= 0} sum_{z,l} gamma_{zl} D[z, l]`` subject to ``sum_l gamma_{zl} =
    w1_z`` and ``sum_z gamma_{zl} = w2_l`` (Zhang & Zhang, "Multitask Bregman clustering",
    AAAI 2010, the distance between the tasks' partitions): the optimal plan by POT's exact
    ``ot.emd`` (:func:`bregclust._transport.transport_plan`), ``d_M`` its cost.
    Rounding in the GEMM form of ``D`` can give entries of order -1e-15 for identical centres;
    they are clipped at 0 since a Bregman divergence is non-negative.

    Examples
    --------
    >>> U = [[0.0, 0.0], [1.0, 1.0]]
    >>> partition_emd(U, [1, 1], U, [1, 1])
    0.0
    >>> partition_emd([[0.0]], [1], [[1.0], [3.0]], [1, 1])   # 0.5 * 1 + 0.5 * 9
    5.0
    """
    U1, a = _check_mixture(U1, w1, "first mixture (U1, w1)")
    U2, b = _check_mixture(U2, w2, "second mixture (U2, w2)")
    if U1.shape[1] != U2.shape[1]:
        raise ValueError(f"U1 and U2 must have the same number of features; got {U1.shape[1]} "
                         f"and {U2.shape[1]}.")
    div = get_divergence(divergence, **divergence_params)
    div.check_domain(U1, name="U1", side="left")
    div.check_domain(U2, name="U2", side="right")
    M = np.asarray(div.pairwise(U1, U2), dtype=np.float64)
    if not np.isfinite(M).all():
        # Finite centres inside the domain (checked above): only an overflow gets here.
        r, c = np.unravel_index(int(np.argmax(~np.isfinite(M))), M.shape)
        raise ValueError(f"the {div.name} divergence between U1[{r}] and U2[{c}] overflows "
                         "float64; rescale the centres (e.g. divide both by their largest "
                         "absolute value).")
    np.maximum(M, 0.0, out=M)
    return _emd(a, b, M, return_plan=return_plan)


# --------------------------------------------------------------------------------------------
# Hierarchical clusterings
# --------------------------------------------------------------------------------------------


@njit(**JIT)
def _purity_counts(n, Z, y, n_labels):
    """Dendrogram purity numerator: sum over internal nodes of same-label pairs split between
    the two children times the node's purity for that label; O(n L)."""
    cnt = np.zeros((2 * n - 1, n_labels), dtype=np.int64)
    for i in range(n):
        cnt[i, y[i]] = 1
    total = 0.0
    for t in range(n - 1):
        a = np.int64(Z[t, 0])
        b = np.int64(Z[t, 1])
        size = 0
        for l in range(n_labels):
            cnt[n + t, l] = cnt[a, l] + cnt[b, l]
            size += cnt[n + t, l]
        for l in range(n_labels):
            pairs = cnt[a, l] * cnt[b, l]
            if pairs > 0:
                total += pairs * (cnt[n + t, l] / size)
    return total


def dendrogram_purity(Z, y):
    """Dendrogram purity (Heller & Ghahramani 2005; Telgarsky & Dasgupta 2012, Sec. 7.1).

    For every pair of points with the same label ``l``, take the smallest cluster of the tree
    containing both; its purity is the fraction of that cluster labelled ``l``. The dendrogram
    purity is the average over all such pairs. Computed in ``O(n L)`` by counting, at every
    internal node, the same-label pairs split between its two children.

    Parameters
    ----------
    Z : ndarray of shape (n_samples - 1, 4)
        scipy linkage matrix (heights are not used).
    y : array-like of shape (n_samples,)
        Class labels.

    Returns
    -------
    float in (0, 1]

    Raises
    ------
    ValueError
        Shapes disagree, ``Z`` is not a valid linkage, or no two points share a label.

    Examples
    --------
    >>> import numpy as np
    >>> Z = np.array([[0, 1, 1.0, 2], [2, 3, 1.0, 2], [4, 5, 2.0, 4]])
    >>> dendrogram_purity(Z, [0, 0, 1, 1])
    1.0
    >>> round(dendrogram_purity(Z, [0, 1, 0, 1]), 6)
    0.5
    """
    Z = np.asarray(Z, dtype=np.float64)
    y = check_class_labels(y, name="y")
    n = y.shape[0]
    if Z.ndim != 2 or Z.shape != (n - 1, 4):
        raise ValueError(
            f"Z must be a linkage matrix of shape (n_samples - 1, 4) = ({n - 1}, 4) for {n} "
            f"labels, got {Z.shape}."
        )
    if n >= 2:
        if not is_valid_linkage(Z):
            raise ValueError("Z is not a valid scipy linkage matrix (see is_valid_linkage).")
    _, yi = np.unique(y, return_inverse=True)
    counts = np.bincount(yi)
    n_pairs = float(np.sum(counts * (counts - 1) / 2.0))
    if n_pairs == 0:
        raise ValueError("dendrogram purity needs at least two points with the same label.")
    total = _purity_counts(n, Z, yi.astype(np.int64), counts.size)
    return float(total / n_pairs)
