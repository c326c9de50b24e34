"""Bisecting Bregman k-means (Steinbach et al., 2000): scikit-learn's ``BisectingKMeans`` with
any Bregman divergence.

:class:`BisectingBregmanKMeans` splits, ``n_clusters - 1`` times, the cluster with the largest
divergence inertia (or the most rows) in two with Bregman 2-means (the Lloyd loop of
:mod:`bregclust._centroid`).
"""

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
from sklearn.utils import check_random_state

from . import _conditioning as C
from . import _execution as E
from ._callbacks import fit_callbacks
from ._centroid import NearestCentreMixin, in_dtype, lloyd, out_dtype, reported_objective
from ._seeding import seed_centres
from ._smoothing import push_inside, resolve_smoothing
from ._sources import InMemorySource, as_source, is_dask_array
from ._validation import (
    check_n_clusters,
    check_scalar,
)
from .divergences import get_divergence

__all__ = ["BisectingBregmanKMeans"]

class _Node:
    """A cluster of the bisecting tree: its centre (conditioned units), its rows while it is
    a leaf being split, its score, its children."""

    __slots__ = ("centre", "indices", "score", "left", "right", "label")

    def __init__(self, centre, indices, score):
        self.centre = centre
        self.indices = indices
        self.score = score
        self.left = self.right = None
        self.label = None

    # Protocols 0 and 1 pickle a class with __slots__ and no __dict__ only through these
    # (2 and above copy the slots themselves): a fitted model pickles with every protocol.
    def __getstate__(self):
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setstate__(self, state):
        for name, value in zip(self.__slots__, state):
            setattr(self, name, value)

    def leaves(self):
        """The leaves, left before right (scikit-learn's order)."""
        if self.left is None:
            yield self
        else:
            yield from self.left.leaves()
            yield from self.right.leaves()

    def to_split(self):
        """The leaf with the largest score (the first one on ties)."""
        best = None
        for leaf in self.leaves():
            if best is None or leaf.score > best.score:
                best = leaf
        return best


class BisectingBregmanKMeans(NearestCentreMixin, ClusterMixin, TransformerMixin,
                             BaseEstimator):
    """Bisecting k-means with any Bregman divergence (divisive hierarchical clustering).

    scikit-learn's :class:`~sklearn.cluster.BisectingKMeans` (Steinbach et al., 2000) with
    ``d(x, u)`` in place of the squared Euclidean distance: starting from one cluster, split
    ``n_clusters - 1`` times the cluster with the largest divergence inertia
    ``sum_i w_i d(x_i, u)`` (or the most rows) in two by Bregman 2-means, each split the best
    of ``n_init`` runs of :class:`~bregclust.BregmanKMeans`' Lloyd loop on that cluster's rows.
    With ``divergence="sqeuclidean"``, ``tol=0`` and the same seed, the splits are
    scikit-learn's. At ``tol > 0`` they may differ (an adjusted Rand index of 0.77 on one
    example at the default ``tol=1e-4``): scikit-learn's ``tol`` bounds the centres' shift,
    ours the objective's relative decrease, so the runs may stop after different iterations.

    Parameters
    ----------
    n_clusters : int, default=8
    divergence : str or Divergence, default="sqeuclidean"
    divergence_params : dict, optional
    init : {"random", "k-means++"}, default="random"
        Seeding of each split: two distinct rows drawn in proportion to their weights, or
        Bregman k-means++.
    n_init : int, default=1
        Runs per split; the one with the lowest objective is kept.
    random_state : int, RandomState instance or None, default=None
    max_iter : int, default=300
        Lloyd iterations per run.
    verbose : int, default=0
        1 shows a progress bar per run with its objective.
    tol : float, default=1e-4
        A run stops when the objective falls by at most ``tol`` times its value (and
        whenever no label changes).
    bisecting_strategy : {"biggest_inertia", "largest_cluster"}, default="biggest_inertia"
        Which leaf to split: the largest ``sum_i w_i d(x_i, u)``, or the most rows.
    smoothing : float or "auto", default="auto"
        Each split is a two-cluster k-means on the cluster's rows with this smoothing
        (:class:`~bregclust.BregmanKMeans`; "auto" applies its rule to those rows, the
        smoothing point is their mean pushed inside the domain).

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        The leaves' centres, left to right.
    labels_ : ndarray of shape (n_samples,)
        The leaf of every row (the tree's split, not the nearest centre).
    inertia_ : float
        ``sum_i w_i d(x_i, u_{label(i)})``.
    n_iter_ : int
        Lloyd iterations of the kept run of every split, added.
    divergence_ : Divergence
    n_features_in_ : int

    Notes
    -----
    ``predict`` walks down the tree (at each split, the nearer of the two children by the
    divergence), as scikit-learn does; ``transform`` gives the divergences to every leaf
    centre and ``score`` the opposite of the sum over rows of the smallest one. The data
    must fit in memory (a dask array is refused: use :class:`MiniBatchBregmanKMeans` or
    :class:`~bregclust.BregmanKMeans`). scikit-learn's ``algorithm`` (Elkan's triangle
    inequality is Euclidean only) and ``copy_x`` (the input is never modified) have no
    counterpart.

    References
    ----------
    M. Steinbach, G. Karypis, V. Kumar. A comparison of document clustering techniques.
    KDD Workshop on Text Mining, 2000.

    Examples
    --------
    >>> import numpy as np
    >>> from bregclust import BisectingBregmanKMeans
    >>> X = np.array([[1., 1.], [1.2, 1.1], [8., 9.], [8.5, 9.5], [30., 1.], [31., 1.5]])
    >>> bk = BisectingBregmanKMeans(3, divergence="kl", random_state=0).fit(X)
    >>> sorted(np.bincount(bk.labels_).tolist())
    [2, 2, 2]
    """

    _preserves_dtype = ("float64", "float32")

    def __init__(self, n_clusters=8, *, divergence="sqeuclidean", divergence_params=None,
                 init="random", n_init=1, random_state=None, max_iter=300, verbose=0,
                 tol=1e-4, bisecting_strategy="biggest_inertia", smoothing="auto"):
        self.n_clusters = n_clusters
        self.divergence = divergence
        self.divergence_params = divergence_params
        self.init = init
        self.n_init = n_init
        self.random_state = random_state
        self.max_iter = max_iter
        self.verbose = verbose
        self.tol = tol
        self.bisecting_strategy = bisecting_strategy
        self.smoothing = smoothing

    def _check_params(self):
        if not isinstance(self.init, str) or self.init not in ("random", "k-means++"):
            raise ValueError(f"init must be 'random' or 'k-means++', got {self.init!r}.")
        check_scalar(self.n_init, "n_init", kind=numbers.Integral, lo=1)
        check_scalar(self.max_iter, "max_iter", kind=numbers.Integral, lo=1)
        check_scalar(self.tol, "tol", lo=0.0, finite=True)
        check_scalar(self.verbose, "verbose", kind=numbers.Integral, lo=0)
        if self.bisecting_strategy not in ("biggest_inertia", "largest_cluster"):
            raise ValueError("bisecting_strategy must be 'biggest_inertia' or 'largest_cluster', "
                             f"got {self.bisecting_strategy!r}.")

    @fit_callbacks
    def fit(self, X, y=None, sample_weight=None):
        """Build the bisecting tree of ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : ignored
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        self
        """
        with E.blas_one_thread():
            div = get_divergence(self.divergence, **(self.divergence_params or {}))
            if is_dask_array(X):
                raise TypeError("BisectingBregmanKMeans needs the data in memory; for a dask "
                                "array use MiniBatchBregmanKMeans or BregmanKMeans.")
            self._check_params()
            src = as_source(X, sample_weight, div, validate=self._validator(reset=True))
            k = check_n_clusters(self.n_clusters, src.n)
            stats = src.stats(div)
            cond = C.decide(div, stats)
            src = src.conditioned(cond)
            Xc, w = src.X, src.w
            rng = check_random_state(self.random_state)
            root = _Node(cond.mean(stats), np.arange(src.n), 0.0)
            n_iter = 0
            for split in range(k - 1):
                n_iter += self._bisect(div, Xc, w, root.to_split(), rng, split)
            labels = np.empty(src.n, dtype=np.int64)
            U = np.empty((k, src.d))
            for i, leaf in enumerate(root.leaves()):
                labels[leaf.indices] = i
                U[i] = leaf.centre
                leaf.label = i
                leaf.indices = None
            inertia = E.exact_objective(div, Xc, U, labels, w)
            self.divergence_ = div
            self.cluster_centers_ = in_dtype(out_dtype(X), cond.undo_centres(U))
            self.labels_ = labels
            self.inertia_ = reported_objective(type(self).__name__, div, cond, inertia)
            self.n_iter_ = int(n_iter)
            self.n_features_in_ = int(src.d)
            self._cond = cond
            self._tree = root
            return self

    def _bisect(self, div, X, w, node, rng, split):
        """Split ``node`` in two (the best of ``n_init`` Bregman 2-means runs on its rows);
        returns the Lloyd iterations of the kept run."""
        idx = node.indices
        Xs, ws = X[idx], w[idx]
        src = InMemorySource(Xs, ws)
        stats = src.stats(div)
        smoothing = resolve_smoothing(self.smoothing, div, stats.counts(), 2)
        z = push_inside(C.IDENTITY.mean(stats), div) if smoothing > 0 else None
        best = None
        for run in range(self.n_init):
            if self.init == "random" and np.count_nonzero(ws) < 2:
                raise ValueError(f"split {split}: the cluster has {np.count_nonzero(ws)} "
                                 "row(s) of positive weight; it cannot be split in two (use "
                                 "fewer clusters).")
            U0 = seed_centres(src, div, 2, rng, self.init, smoothing, z, weighted=True)
            res = lloyd(src, div, U0, smoothing, z, self.max_iter, self.tol, run,
                            verbose=self.verbose, desc=f"BisectingBregmanKMeans split {split}")
            if best is None or res.objective < best.objective * (1 - 1e-6):
                best = res
        labels = best.part.labels
        if self.bisecting_strategy == "biggest_inertia":
            d = E.exact_assigned(div, Xs, best.centres, labels)
            with np.errstate(over="ignore", invalid="ignore"):
                scores = np.bincount(labels, weights=ws * np.where(ws > 0, d, 0.0),
                                     minlength=2)
        else:
            scores = np.bincount(labels, minlength=2).astype(np.float64)
        node.left = _Node(best.centres[0], idx[labels == 0], float(scores[0]))
        node.right = _Node(best.centres[1], idx[labels == 1], float(scores[1]))
        node.indices = None
        return best.n_iter

    # ------------------------------------------------------------------ fitted model
    def predict(self, X):
        """The leaf of each row of ``X``, down the tree (the nearer child at every split).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        src = self._source(X)
        if src.chunked:
            raise TypeError("BisectingBregmanKMeans.predict needs the rows in memory.")
        labels = np.empty(src.n, dtype=np.int64)
        self._descend(src.X, np.arange(src.n), self._tree, labels)
        return labels

    def _descend(self, X, rows, node, labels):
        if node.left is None:
            labels[rows] = node.label
            return
        U = self._cond.undo_centres(np.vstack([node.left.centre, node.right.centre]))
        side = C.assign_rows(self.divergence_, X[rows], U)[0]
        self._descend(X, rows[side == 0], node.left, labels)
        self._descend(X, rows[side == 1], node.right, labels)

    def transform(self, X):
        """Divergences ``d(x_i, u_j)`` to every leaf centre.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        D : ndarray of shape (n_samples, n_clusters)
        """
        D = self._source(X).transform(self.divergence_, self._pass_centres())
        return D.astype(np.float32) if out_dtype(X) == np.float32 else D

    def _pass_centres(self):
        return self._cond.undo_centres(np.vstack([leaf.centre for leaf in self._tree.leaves()]))
