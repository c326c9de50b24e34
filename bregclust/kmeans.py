"""Bregman hard clustering (Banerjee et al., 2005): the papers' "IND" baseline.

:func:`lloyd` is the Lloyd loop of every centroid estimator (k-means, the independent tasks of
MBC), written once against a data source (:mod:`bregclust._sources`): in memory, a dask array
or chunks, the same loop runs the same passes.
"""

import numbers
import warnings

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    ClusterMixin,
    TransformerMixin,
)
from sklearn.utils import check_random_state

from . import _conditioning as C
from . import _execution as E
from . import _pruned
from ._callbacks import fit_callbacks
from ._centroid import centres_state
from ._constrained import (
    check_batch_bounds,
    check_size_bounds,
    constrained_labels,
    constrained_lloyd,
)
from ._seeding import bregman_kmeans_plusplus, seed_centres, seeding_method
from ._smoothing import (
    AUTO_SPARSE_CLUSTER_MASSES,
    AUTO_SPARSE_ZERO_FRACTION,
    auto_smoothing,
    push_inside,
    resolve_smoothing,
    smoothing_point,
)
from ._sources import as_source
from ._validation import (
    check_finite,
    check_n_clusters,
    check_scalar,
)

__all__ = ["BregmanKMeans", "auto_smoothing", "bregman_kmeans_plusplus", "smoothing_point",
           "AUTO_SPARSE_CLUSTER_MASSES", "AUTO_SPARSE_ZERO_FRACTION"]


from ._centroid import (  # noqa: F401  (re-exported for the estimators' users)
    DivergenceEstimatorMixin,
    LloydResult,
    NearestCentreMixin,
    lloyd,
    reported_objective,
    smoothed_objective,
    update_centres,
)
from ._validation import user_stacklevel


class BregmanKMeans(NearestCentreMixin, ClassNamePrefixFeaturesOutMixin, ClusterMixin,
                    TransformerMixin, BaseEstimator):
    """Hard clustering with a Bregman divergence (Banerjee et al., 2005).

    Lloyd-type alternation: assign each point to the centre with the smallest ``d(x, u)``
    (GEMM form, :doc:`/guide/divergences`), then move each centre to the (weighted) mean of its points,
    which minimises ``sum_i w_i d(x_i, u)`` for *every* Bregman divergence. This is the
    papers' "IND" baseline (one task clustered on its own).

    Parameters
    ----------
    n_clusters : int, default=8
    divergence : str or Divergence, default="sqeuclidean"
        Any registered divergence (see :func:`bregclust.list_divergences`), custom ones too.
    divergence_params : dict, optional
        Parameters of the divergence, e.g. ``{"A": A}`` for ``"mahalanobis"``.
    init : {"auto", "k-means++", "k-means||", "random"} or ndarray of shape (n_clusters, n_features), \
default="auto"
        ``"k-means++"``: D-sampling by the divergence (:func:`bregman_kmeans_plusplus`).
        ``"k-means||"``: scalable k-means++ (Bahmani et al., 2012), the default for dask
        input: ``init_rounds`` passes each drawing about ``oversampling_factor * n_clusters``
        rows by D-sampling with the divergence, then weighted k-means++ on those candidates.
        ``"random"``: distinct data points. An array gives the initial centres.
        ``"auto"``: ``"k-means||"`` for a ``dask.array.Array``, ``"k-means++"`` otherwise.
    n_init : int or "auto", default="auto"
        Restarts; the lowest objective wins. ``"auto"``: 1 for k-means++, k-means|| or an
        array, 10 for random.
    max_iter : int, default=300
    tol : float, default=1e-4
        Stop when the objective decreases by less than ``tol`` times its value (and always
        when no label changes).
    smoothing : float or "auto", default="auto"
        Weight ``beta`` of a pseudo-point ``z`` (the data mean pushed inside the domain) added
        to every cluster: centres are ``(sum_i w_i x_i + beta z) / (sum_i w_i + beta)``
        (Telgarsky & Dasgupta, Thm 5.2, with ``alpha = beta / (W_j + beta)``). It keeps kl and
        Itakura-Saito centres off the domain boundary, so zero counts never give infinite
        divergences. ``"auto"``: :func:`auto_smoothing`, 0 for divergences on R; on
        non-negative/positive data three average cluster masses when the data are sparse
        (at least 90% zeros, e.g. term counts), one pseudo-sample when they are dense.
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0
        1 shows a progress bar per restart (on stderr) with the objective and prints one line
        per restart; 2 also prints one line per iteration.
    oversampling_factor : float, default=2.0
        k-means|| only: expected number of candidates drawn per round, in units of
        ``n_clusters``.
    init_rounds : int, default=5
        k-means|| only: number of sampling rounds (passes over the data).
    size_min, size_max : int, float or array-like of shape (n_clusters,), default=None
        Bounds on every cluster's size (one value for all, or one per cluster); with
        ``sample_weight``, on its weighted size ``sum_{i in j} w_i``. Without weights they
        count samples and must be whole numbers. ``None`` for no bound. Bounds that no
        assignment meets (``n_clusters * size_min > n``, ``n_clusters * size_max < n``,
        ``size_min > size_max``) are refused. The assignment step then solves a transport
        problem over the divergences (:doc:`/guide/kmeans`, "Cluster sizes"); data must be in
        memory (not a dask array).
    size_method : {"exact", "sinkhorn", "greedy"}, default="exact"
        The constrained assignment step: ``"exact"`` the optimal labels (POT's network
        simplex; ``O(n k)`` memory); ``"sinkhorn"`` (an entropic plan, rounded) and
        ``"greedy"`` (nearest centres) then moves of least cost until the sizes fit:
        approximate, for large ``n``. Ignored without bounds.
    algorithm : {"auto", "lloyd", "hamerly", "yinyang", "cached"}, default="auto"
        ``"lloyd"``: every pass evaluates all ``n k`` scores. ``"hamerly"`` and ``"yinyang"``:
        exact pruned passes (one lower bound per point, or one per group of about 10 centres;
        valid for every Bregman divergence, see :doc:`/guide/kmeans`): the same labels and
        centres as ``"lloyd"``, fewer scores when ``k`` is large. ``"cached"`` (sparse rows
        only): keeps the ``n x k`` products of the centres that did not move and recomputes
        the others (``8 n k`` bytes), also Lloyd's results bit for bit. ``"auto"``:
        ``"yinyang"`` from 64 clusters on for dense in-memory data and divergences with the
        fused GEMM form (adaptively: Lloyd's passes while a measured sample says pruning
        would not pay, see :doc:`/guide/kmeans`), ``"cached"`` from 128 clusters on for sparse rows (when the cache
        takes at most 1 GiB), ``"lloyd"`` otherwise (and for dask arrays).

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
    labels_ : ndarray of shape (n_samples,)
        A lazy ``dask.array.Array`` when ``X`` was a dask array.
    inertia_ : float
        ``sum_i w_i d(x_i, u_{label(i)})`` for the training data.
    algorithm_ : str
        The passes the fit ran (``"lloyd"``, ``"hamerly"``, ``"yinyang"`` or ``"cached"``).
    n_skipped_ : ndarray of shape (n_iter_ + 1,)
        Per Lloyd pass of the best restart, the score evaluations ``d(x_i, u_j)`` skipped by
        the pruning bounds or read from the cache (zeros for ``"lloyd"``);
        ``n_skipped_ / (n_samples n_clusters)``
        is the fraction skipped, shown in the progress bar at ``verbose=1``.
    n_iter_ : int
        Centroid updates of the best restart.
    objective_history_ : list of float
        The objective after every assignment step of the best restart: the inertia plus the
        smoothing term ``beta sum_j d(z, u_j)``. Each step is an exact block minimisation of
        this objective, so the history never increases.
    divergence_ : Divergence
    smoothing_ : float
    size_min_, size_max_ : ndarray of shape (n_clusters,) or None
        The bounds the fit kept (``size_max_`` capped at what the other clusters' minima
        leave), in the units of ``sample_weight``; None when fitted without bounds.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Column names of ``X`` when it was a pandas DataFrame with string column names;
        ``get_feature_names_out()`` names the columns of :meth:`transform`
        (``bregmankmeans0``, ...), and ``set_output(transform="pandas")`` makes
        :meth:`transform` return a DataFrame.

    Notes
    -----
    ``X`` may be a ``dask.array.Array`` chunked by rows (dense or scipy CSR chunks, installed
    with ``pip install bregclust[dask]``): each Lloyd iteration is then one pass over the
    chunks with the same fused kernel, the ``k x d`` partial sums are tree-reduced and the
    centres updated on the client, with an active ``dask.distributed.Client`` or the local
    scheduler. ``predict``/``transform`` of a dask array are lazy dask arrays.

    Empty clusters are re-seeded with the points farthest from their centres (those whose move
    lowers the objective), with an :class:`~bregclust.EmptyClusterWarning`.

    Data of extreme magnitude or far from the origin are conditioned once per fit
    (power-of-two scaling for homogeneous divergences, per column for Itakura-Saito, centring
    for the quadratic ones): a fit of ``X * 2**s`` gives the labels of the fit of ``X`` and
    its centres times ``2**s``, for ``s`` in ``[-1000, 1000]``.

    References
    ----------
    A. Banerjee, S. Merugu, I. Dhillon, J. Ghosh. Clustering with Bregman divergences. JMLR 2005.

    Examples
    --------
    >>> import numpy as np
    >>> from bregclust import BregmanKMeans
    >>> X = np.array([[1., 1.], [1.2, 0.9], [8., 9.], [8.5, 9.5]])
    >>> km = BregmanKMeans(2, divergence="kl", random_state=0).fit(X)
    >>> sorted(np.bincount(km.labels_).tolist())
    [2, 2]
    """

    _check_finite = False  # the data source checks the values

    def __init__(self, n_clusters=8, *, divergence="sqeuclidean", divergence_params=None,
                 init="auto", n_init="auto", max_iter=300, tol=1e-4, smoothing="auto",
                 random_state=None, verbose=0, oversampling_factor=2.0, init_rounds=5,
                 size_min=None, size_max=None, size_method="exact", algorithm="auto"):
        self.n_clusters = n_clusters
        self.divergence = divergence
        self.divergence_params = divergence_params
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.smoothing = smoothing
        self.random_state = random_state
        self.verbose = verbose
        self.oversampling_factor = oversampling_factor
        self.init_rounds = init_rounds
        self.size_min = size_min
        self.size_max = size_max
        self.size_method = size_method
        self.algorithm = algorithm

    def _check_n_init(self, init_is_array):
        n_init = self.n_init
        if isinstance(n_init, str):
            if n_init != "auto":
                raise ValueError(f"n_init must be a positive int or 'auto', got {n_init!r}.")
            return 10 if (isinstance(self.init, str) and self.init == "random") else 1
        check_scalar(n_init, "n_init", kind=numbers.Integral, lo=1)
        if init_is_array and n_init != 1:
            warnings.warn("init is an array of centres, so n_init is ignored (1 run).",
                          RuntimeWarning, stacklevel=user_stacklevel())
            return 1
        return int(n_init)

    def _check_init(self, div, k, d, src):
        """``(init, init_is_array)``: a validated init name or a copy of the centres array."""
        init = self.init
        if init is None:
            raise TypeError("init must be 'k-means++', 'random' or an array of initial centres "
                            "of shape (n_clusters, n_features), got None.")
        if not isinstance(init, str):
            init = np.array(init, dtype=np.float64, copy=True)
            if init.ndim != 2 or init.shape != (k, d):
                raise ValueError(
                    f"init array must have shape (n_clusters, n_features) = {(k, d)}, "
                    f"got {init.shape}."
                )
            check_finite(init, name="init")
            div.check_domain(init, name="init", side="right",
                             advice="Move the initial centres inside the domain.")
            return init, True
        if init not in ("auto", "k-means++", "k-means||", "random"):
            raise ValueError(
                f"init must be 'auto', 'k-means++', 'k-means||', 'random' or an array, got {init!r}."
            )
        init = seeding_method(src, init)
        if init == "k-means||":
            check_scalar(self.oversampling_factor, "oversampling_factor", lo=0.0, lo_closed=False)
            check_scalar(self.init_rounds, "init_rounds", kind=numbers.Integral, lo=1)
        return init, False

    def _seed(self, src, div, k, rng, beta, z, init):
        if not isinstance(init, str):
            return init
        return seed_centres(src, div, k, rng, init, beta, z, factor=self.oversampling_factor,
                            rounds=self.init_rounds)

    @fit_callbacks
    def fit(self, X, y=None, sample_weight=None):
        """Cluster ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask.array.Array} of shape (n_samples, n_features)
            Must lie in the divergence's domain (e.g. ``X >= 0`` for ``kl``). A dask array must
            be chunked by rows only.
        y : ignored
        sample_weight : array-like or dask array of shape (n_samples,), optional

        Returns
        -------
        self
        """
        # Our kernels run their own threads with BLAS limited to one thread; a multi-threaded
        # BLAS call in the set-up (a weighted mean, a dot product) leaves OpenBLAS threads
        # spinning, which slows the first Lloyd passes. scikit-learn's KMeans sets the same
        # limit around its Lloyd loop.
        with E.blas_one_thread():
            div = self._get_divergence()
            check_scalar(self.max_iter, "max_iter", kind=numbers.Integral, lo=1)
            check_scalar(self.tol, "tol", lo=0.0)
            check_scalar(self.verbose, "verbose", kind=numbers.Integral, lo=0)
            src = as_source(X, sample_weight, div, validate=self._validator(reset=True))
            k = check_n_clusters(self.n_clusters, src.n)
            bounds = self._check_sizes(src, k)
            algorithm = _pruned.resolve_algorithm(self.algorithm, div, src, k)
            if bounds is not None and algorithm != "lloyd":
                if self.algorithm != "auto":
                    raise ValueError(
                        f"algorithm={self.algorithm!r} prunes the nearest-centre assignment, "
                        "which size_min / size_max replace by a transport problem; use "
                        "algorithm='lloyd' or 'auto' with size bounds.")
                algorithm = "lloyd"
            init, init_is_array = self._check_init(div, k, src.d, src)
            n_init = self._check_n_init(init_is_array)
            rng = check_random_state(self.random_state)
            # One statistics pass decides the conditioning and the smoothing; started from
            # given centres it also runs the first Lloyd pass (fused with it on chunks), except
            # where that pass would be thrown away: the pruned and cached passes start their own
            # state, and cosine rows are always rescaled (the conditioning is never the identity).
            first = None
            if init_is_array and algorithm == "lloyd" and not div.spherical:
                stats, first = src.stats(div, centres=E.prepare_centres(div, init))
            else:
                stats = src.stats(div)
            cond = C.decide(div, stats, centres=init if init_is_array else None)
            if not cond.identity:
                first = None
            smoothing = resolve_smoothing(self.smoothing, div, stats.counts(), k)
            beta = cond.apply_mass(smoothing)
            src = src.conditioned(cond)
            if init_is_array:
                init = cond.apply_centres(init)
            z = push_inside(cond.mean(stats), div) if beta > 0 else None
            best = None
            for run in range(n_init):
                C0 = self._seed(src, div, k, rng, beta, z, init)
                passes = _pruned.make_passes(src, div, algorithm, debug=_pruned.DEBUG,
                                             adaptive=self.algorithm == "auto")
                if bounds is not None:
                    res = constrained_lloyd(src, div, C0, beta, z, self.max_iter, self.tol,
                                            run, bounds.scaled(cond.weight_scale),
                                            verbose=self.verbose)
                else:
                    res = lloyd(src, div, C0, beta, z, self.max_iter, self.tol, run,
                                verbose=self.verbose, first=first, passes=passes,
                                fitted=centres_state(div, cond, src.dtype))
                res.skipped = (np.zeros(res.n_iter + 1, dtype=np.int64) if passes is None
                               else np.asarray(passes.skipped, dtype=np.int64))
                if self.verbose:
                    print(f"BregmanKMeans restart {run}: objective {res.objective:.6g}, "
                          f"{res.n_iter} iterations")
                if best is None or res.objective < best.objective:
                    best = res
            inertia = src.final_objective(div, best.part, best.centres)
            kept = best.part.labels is not None and not src.chunked  # the last pass' labels
            labels = src.labels(div, None if kept else E.prepare_centres(div, best.centres),
                                best.part)
            self._set_fitted(div, cond, smoothing, best, inertia, labels, src)
            self.size_min_, self.size_max_ = (None, None) if bounds is None else (
                bounds.lo, bounds.hi)
            self._size_total = None if bounds is None else bounds.total
            self.algorithm_ = algorithm
            self.n_skipped_ = best.skipped
            return self

    def _check_sizes(self, src, k):
        """The validated size bounds (:mod:`bregclust._constrained`), or None."""
        if self.size_min is None and self.size_max is None:
            return None
        if src.chunked:
            raise ValueError("size_min / size_max need the data in memory (the constrained "
                             "assignment solves one transport problem over all samples); "
                             "pass X.compute() instead of a dask array, or drop the bounds.")
        return check_size_bounds(self.size_min, self.size_max, k, src.block.weights(),
                                 self.size_method)

    def predict_constrained(self, X, sample_weight=None, *, size_min="fit", size_max="fit"):
        """Labels of a batch under size bounds: the optimal constrained assignment to the
        fitted centres (:meth:`predict` is the unconstrained nearest centre).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            In memory.
        sample_weight : array-like of shape (n_samples,), optional
        size_min, size_max : "fit", None, number or array-like of shape (n_clusters,), \
default="fit"
            ``"fit"``: the fitted bounds (``size_min_``, ``size_max_``) scaled by the batch's
            total weight over the training data's, rounded outward (down for ``size_min``,
            up for ``size_max``) when the sizes are counts, so a balanced fit stays balanced
            (no bound when the model was fitted without bounds). ``None``: no bound.

        Returns
        -------
        labels : ndarray of shape (n_samples,)

        Raises
        ------
        ValueError
            Bounds that no assignment of the batch meets, or a dask array.
        """
        src = self._source(X, sample_weight)
        if src.chunked:
            raise ValueError("predict_constrained needs the data in memory; pass X.compute().")
        w = src.block.weights()
        k = self.cluster_centers_.shape[0]
        fitted = None
        if self.size_min_ is not None:
            fitted = (self.size_min_, self.size_max_, self._size_total)
        bounds = check_batch_bounds(size_min, size_max, fitted, w, k)
        D = src.transform(self.divergence_, self.cluster_centers_)
        return constrained_labels(D, w, bounds).labels

    def _set_fitted(self, div, cond, smoothing, best, inertia, labels, src):
        inertia = reported_objective(type(self).__name__, div, cond, inertia)
        self.divergence_ = div
        self.smoothing_ = float(smoothing)
        # centres in the data's type, as scikit-learn's KMeans (the fit computes them in float64)
        self.cluster_centers_ = cond.undo_centres(best.centres).astype(src.dtype, copy=False)
        self.labels_ = labels
        self.inertia_ = float(inertia)
        self.n_iter_ = int(best.n_iter)
        self.objective_history_ = [float(h) for h in cond.undo_objective(best.history)]
        self.n_features_in_ = int(src.d)

    def transform(self, X):
        """Divergences ``d(x_i, u_j)`` to every centre, shape ``(n_samples, n_clusters)``.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask.array.Array} of shape (n_samples, n_features)

        Returns
        -------
        D : ndarray of shape (n_samples, n_clusters)
            A lazy dask array when ``X`` is one.
        """
        return self._source(X).transform(self.divergence_, self._pass_centres())

    @property
    def _n_features_out(self):
        """Columns of :meth:`transform` (one per centre), for ``get_feature_names_out``."""
        return self.cluster_centers_.shape[0]
