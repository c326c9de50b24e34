"""Bregman hard clustering (Banerjee et al., 2005): the papers' "IND" baseline."""

import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from ._execution import _reference, array_backend, blas_one_thread
from ._validation import (
    EmptyClusterWarning,
    check_array,
    check_finite,
    check_n_clusters,
    check_sample_weight,
    check_scalar,
    check_smoothing,
)
from .divergences import get_divergence

__all__ = ["BregmanKMeans", "auto_smoothing", "bregman_kmeans_plusplus", "smoothing_point"]

#: ``smoothing="auto"`` treats data with at least this fraction of zero entries as sparse counts
#: (text) ...
AUTO_SPARSE_ZERO_FRACTION = 0.9
#: ... and gives them a pseudo-count of this many average cluster masses.
AUTO_SPARSE_CLUSTER_MASSES = 3.0


def _rows(X, idx):
    """Dense copy of the rows ``idx`` of a dense or CSR matrix."""
    R = X[idx]
    return R.toarray() if sp.issparse(R) else np.array(R, dtype=np.float64)


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
    """
    div = get_divergence(divergence)
    w = np.ones(X.shape[0]) if sample_weight is None else sample_weight
    return _push_inside(np.asarray(w @ X).ravel() / w.sum(), div)


def _push_inside(z, div):
    """The weighted mean ``z`` with zero coordinates lifted for divergences on positive centres."""
    if div.right_domain == "positive":
        floor = 1e-12 * max(float(z.max()), 1e-300)
        z = np.where(z > floor, z, floor)
    return z


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
    Measured on kl k-means of L1-normalised term counts (200 seeds, NMI; benchmark
    ``benchmarks/kl_smoothing.py``, table in ``benchmarks/RESULTS.md``): the rule is at most
    0.001 NMI below the best fixed pseudo-count in {1, 10, 100, 1000} on the six CLUTO sets and
    20 Newsgroups (above it on three), where one pseudo-sample loses up to 0.13 NMI; on
    scikit-learn's dense 8x8 digits the same strength would cost 0.1 NMI, hence the dense
    branch.

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
        nnz = 0  # unused there: skip the count (a full pass over dense data)
    else:
        nnz = np.count_nonzero(X.data) if sp.issparse(X) else np.count_nonzero(X)
    return _auto_smoothing_from_counts(div, n, d, nnz, w_total, n_clusters)


def _auto_smoothing_from_counts(div, n, d, nnz, w_total, n_clusters):
    """:func:`auto_smoothing` from the data's shape, non-zero count and total weight."""
    if div.domain == "real":
        return 0.0
    if n * d and 1.0 - nnz / (n * d) >= AUTO_SPARSE_ZERO_FRACTION:
        return AUTO_SPARSE_CLUSTER_MASSES * w_total / n_clusters
    return w_total / n if n else 1.0


def _smoothed(points, w, beta, z):
    """Centres of clusters holding ``points`` (rows) with weights ``w`` plus ``beta`` at ``z``."""
    if beta == 0.0:
        return points
    w = np.asarray(w, dtype=np.float64).reshape(-1, 1)
    return (w * points + beta * z) / (w + beta)


def bregman_kmeans_plusplus(X, n_clusters, divergence="sqeuclidean", *, random_state=None,
                            sample_weight=None, smoothing=0.0, n_local_trials=None,
                            _prepared=None, _z=None):
    """k-means++ seeding with D-sampling by a Bregman divergence.

    The first centre is a data point drawn with probability proportional to its weight; each
    next one is the best of ``n_local_trials`` candidates drawn with probability proportional
    to ``w_i min_j d(x_i, c_j)`` (greedy k-means++, as scikit-learn). With ``smoothing > 0`` a
    seed ``x`` becomes ``(x + smoothing z) / (1 + smoothing)`` so centres stay inside the
    domain (kl/Itakura-Saito on data with zeros).

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
    n_clusters : int
    divergence : str or Divergence, default="sqeuclidean"
    random_state : int, RandomState or None
    sample_weight : array-like of shape (n_samples,), optional
    smoothing : float or "auto", default=0.0
        Finite and non-negative. ``"auto"``: as :class:`BregmanKMeans` (see
        :func:`auto_smoothing`).
    n_local_trials : int, optional
        Candidates per centre, ``>= 1``. Default ``2 + int(log(n_clusters))``.

    Returns
    -------
    centers : ndarray of shape (n_clusters, n_features)
    indices : ndarray of shape (n_clusters,)
        Rows of ``X`` that seeded each centre.
    """
    div = get_divergence(divergence)
    if _prepared is None:
        X = check_array(X, divergence=div)
    n = X.shape[0]
    k = check_n_clusters(n_clusters, n)
    rng = check_random_state(random_state)
    w = check_sample_weight(sample_weight, n)
    beta = check_smoothing(smoothing)
    if beta == "auto":
        beta = auto_smoothing(X, div, k, w)
    if n_local_trials is not None:
        check_scalar(n_local_trials, "n_local_trials", kind=numbers.Integral, lo=1)
    z = _z if _z is not None else (smoothing_point(X, div, w) if beta > 0 else None)
    prepared = _prepared if _prepared is not None else div.prepare(X)
    trials = int(n_local_trials) if n_local_trials is not None else 2 + int(np.log(k))

    centers = np.empty((k, X.shape[1]))
    idx = np.empty(k, dtype=np.int64)
    first = int(rng.choice(n, p=w / w.sum()))
    idx[0] = first
    centers[0] = _smoothed(_rows(X, [first]), w[[first]], beta, z)[0]
    _, closest = div.assign(X, centers[:1], prepared=prepared)
    for c in range(1, k):
        pot = w * closest
        if not np.isfinite(pot).all():
            # Infinite divergences (centres on the domain boundary, smoothing=0): sample among them.
            p = (~np.isfinite(pot)).astype(float) * (w > 0)
        else:
            p = pot
        total = p.sum()
        if total <= 0:  # every point already coincides with a centre: pick uniformly
            p = (w > 0).astype(float)
            total = p.sum()
        cand = np.searchsorted(np.cumsum(p), rng.uniform(size=trials) * total)
        cand = np.minimum(cand, n - 1)
        C = _smoothed(_rows(X, cand), w[cand], beta, z)
        Dc = div.pairwise(X, C, prepared=prepared)
        new = np.minimum(closest[:, None], Dc)
        if np.isfinite(new).all():
            scores = w @ new
        else:  # fewer points at infinite divergence first
            scores = (np.isinf(new) * w[:, None]).sum(axis=0)
        best = int(np.argmin(scores))
        idx[c] = cand[best]
        centers[c] = C[best]
        closest = new[:, best]
    return centers, idx


class BregmanKMeans(ClusterMixin, TransformerMixin, BaseEstimator):
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
        ``"k-means||"``: scalable k-means++ (Bahmani et al., 2012) for dask input:
        ``init_rounds`` passes each drawing about ``oversampling_factor * n_clusters`` rows by
        D-sampling with the divergence, then weighted k-means++ on those candidates.
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
        1 prints one line per restart, 2 one line per iteration.
    oversampling_factor : float, default=2.0
        k-means|| only: expected number of candidates drawn per round, in units of
        ``n_clusters``.
    init_rounds : int, default=5
        k-means|| only: number of sampling rounds (passes over the data).

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
    labels_ : ndarray of shape (n_samples,)
        A lazy ``dask.array.Array`` when ``X`` was a dask array.
    inertia_ : float
        ``sum_i w_i d(x_i, u_{label(i)})`` for the training data.
    n_iter_ : int
        Centroid updates of the best restart.
    objective_history_ : list of float
        The objective after every assignment step of the best restart: the inertia plus the
        smoothing term ``beta sum_j d(z, u_j)``. Each step is an exact block minimisation of
        this objective, so the history never increases.
    divergence_ : Divergence
    smoothing_ : float
    n_features_in_ : int

    Notes
    -----
    ``X`` may be a ``dask.array.Array`` chunked by rows (dense or scipy CSR chunks, installed
    with ``pip install bregclust[dask]``): each Lloyd iteration is then one pass over the
    chunks with the same fused kernel, the ``k x d`` partial sums are tree-reduced and the
    centres updated on the client, with an active ``dask.distributed.Client`` or the local
    scheduler. ``predict``/``transform`` of a dask array are lazy dask arrays.

    Empty clusters are re-seeded with the points farthest from their centres (those whose move
    lowers the objective), with an :class:`~bregclust.EmptyClusterWarning`.

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

    def __init__(self, n_clusters=8, *, divergence="sqeuclidean", divergence_params=None,
                 init="auto", n_init="auto", max_iter=300, tol=1e-4, smoothing="auto",
                 random_state=None, verbose=0, oversampling_factor=2.0, init_rounds=5):
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

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        try:
            dom = self._get_divergence().domain
            tags.input_tags.positive_only = dom != "real"
            # a sparse matrix's implicit zeros lie outside a strictly positive domain
            tags.input_tags.sparse = dom != "positive"
        except (TypeError, ValueError):
            pass
        return tags

    def _get_divergence(self):
        return get_divergence(self.divergence, **(self.divergence_params or {}))

    def _resolve_smoothing(self, div, X, k, w, *, counts=None):
        """``smoothing_``; ``counts=(n, d, nnz, total weight)`` stands in for ``X, w`` when the
        data are not in memory (dask)."""
        s = check_smoothing(self.smoothing)
        if s != "auto":
            return s
        if counts is not None:
            return _auto_smoothing_from_counts(div, *counts, k)
        return auto_smoothing(X, div, k, w)

    def _resolve_n_init(self, init_is_array):
        n_init = self.n_init
        if isinstance(n_init, str):
            if n_init != "auto":
                raise ValueError(f"n_init must be a positive int or 'auto', got {n_init!r}.")
            return 10 if (isinstance(self.init, str) and self.init == "random") else 1
        check_scalar(n_init, "n_init", kind=numbers.Integral, lo=1)
        if init_is_array and n_init != 1:
            warnings.warn("init is an array of centres, so n_init is ignored (1 run).",
                          RuntimeWarning, stacklevel=3)
            return 1
        return int(n_init)

    def _resolve_init(self, k, d, dask_input=False):
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
            self._get_divergence().check_domain(
                init, name="init", side="right",
                advice="Move the initial centres inside the domain.")
            return init, True
        if init == "auto":
            init = "k-means||" if dask_input else "k-means++"
        if init not in ("k-means++", "k-means||", "random"):
            raise ValueError(
                f"init must be 'auto', 'k-means++', 'k-means||', 'random' or an array, got {init!r}."
            )
        if init == "k-means||":
            if not dask_input:
                raise ValueError(
                    "init='k-means||' needs a dask array X; use init='k-means++' for in-memory data."
                )
            check_scalar(self.oversampling_factor, "oversampling_factor", lo=0.0, lo_closed=False)
            check_scalar(self.init_rounds, "init_rounds", kind=numbers.Integral, lo=1)
        if init == "k-means++" and dask_input:
            raise ValueError(
                "init='k-means++' reads the whole data set k times; for a dask array use "
                "init='k-means||' (the default) or 'random'."
            )
        return init, False

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
        backend = array_backend(X)
        if backend is not None:
            return backend.kmeans_fit(self, X, sample_weight)
        # Our kernels run their own threads with BLAS limited to one thread. A multi-threaded
        # BLAS call in the set-up (a weighted mean, a dot product) leaves OpenBLAS threads
        # spinning for about 0.1 s, and they halved the speed of the first Lloyd passes
        # (23 against 11.5 ms on 200,000 x 50, k = 20). scikit-learn's KMeans sets the same
        # limit around its Lloyd loop.
        with blas_one_thread():
            div = self._get_divergence()
            X = check_array(X, divergence=div)
            X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, order="C",
                              ensure_all_finite=False, reset=True)
            div.check_n_features(X.shape[1])
            n = X.shape[0]
            k = check_n_clusters(self.n_clusters, n)
            check_scalar(self.max_iter, "max_iter", kind=numbers.Integral, lo=1)
            check_scalar(self.tol, "tol", lo=0.0)
            check_scalar(self.verbose, "verbose", kind=numbers.Integral, lo=0)
            w = check_sample_weight(sample_weight, n)
            beta = self._resolve_smoothing(div, X, k, w)
            init, init_is_array = self._resolve_init(k, X.shape[1])
            n_init = self._resolve_n_init(init_is_array)
            rng = check_random_state(self.random_state)
            # Data of extreme magnitude (|x| beyond 2^+-100): for a divergence homogeneous of degree
            # p, d(s x, s u) = s^p d(x, u), so cluster X 2^-e (exact: a power of two) and scale the
            # centres and objective back; otherwise divergences underflow to 0 (every point at
            # distance 0, one cluster) or overflow.
            e = _scale_exponent(X, div)
            if e:
                X = _ldexp(X, -e)
                if init_is_array:
                    init = np.ldexp(init, -e)
            # Translation-invariant divergences: cluster X - m (m the weighted mean) when the
            # GEMM form phi(x) + phi(u) - 2 x.Au would cancel catastrophically (data far from
            # the origin; decided from phi's row values, which the passes need anyway); the
            # offset is added back to the centres at the end.
            prepared = div._prepare(X)  # X is validated above
            shift = _reference(div, X, prepared[1], w)
            if shift is not None:
                X = X - shift
                prepared = div._prepare(X)
                if init_is_array:
                    init = init - shift
            z = smoothing_point(X, div, w) if beta > 0 else None

            best = None
            for run in range(n_init):
                if init_is_array:
                    C0 = init
                elif init == "k-means++":
                    C0, _ = bregman_kmeans_plusplus(X, k, div, random_state=rng, sample_weight=w,
                                                    smoothing=beta, _prepared=prepared, _z=z)
                else:
                    pos = np.flatnonzero(w > 0)
                    if pos.size < k:
                        raise ValueError(
                            f"init='random' needs at least n_clusters={k} samples with positive "
                            f"weight, got {pos.size}."
                        )
                    ids = rng.choice(pos, size=k, replace=False)
                    C0 = _smoothed(_rows(X, ids), w[ids], beta, z)
                res = _lloyd(X, prepared, w, C0, div, beta, z, self.max_iter, self.tol,
                             self.verbose, run)
                if self.verbose:
                    print(f"BregmanKMeans restart {run}: objective {res[3][-1]:.6g}, "
                          f"{res[2]} iterations")
                if best is None or res[3][-1] < best[3][-1]:
                    best = res
            labels, centers, n_iter, history, inertia = best
            # The objective of the returned labels and centres, by the definition of d (the GEMM
            # minima are exact only up to rounding of ||x||^2 + ||u||^2 - 2 x.u).
            inertia = _inertia(X, labels, centers, w, div)
            if not np.isfinite(inertia):
                why = ("a divergence overflowed; rescale the data" if div.domain == "real" else
                       "a divergence overflowed or a centre lies on the boundary of the domain; "
                       "rescale the data or use smoothing > 0")
                warnings.warn(f"BregmanKMeans: the objective is {inertia} ({why}).",
                              RuntimeWarning, stacklevel=2)
            if shift is not None:
                centers = centers + shift
            if e:
                centers = np.ldexp(centers, e)
                p = div.homogeneity * e
                scaled = inertia
                with np.errstate(over="ignore"):
                    inertia = float(np.ldexp(inertia, p))
                    history = [float(np.ldexp(h, p)) for h in history]
                if np.isfinite(scaled) and not np.isfinite(inertia):
                    warnings.warn(
                        f"BregmanKMeans: inertia_ overflowed to inf (the objective is {scaled:.6g} "
                        f"x 2^{p}, beyond float64); labels_ and cluster_centers_ are exact. Rescale "
                        "the data to read the objective.", RuntimeWarning, stacklevel=2)
            self.divergence_ = div
            self.smoothing_ = beta
            self.cluster_centers_ = centers
            self.labels_ = labels
            self.inertia_ = float(inertia)
            self.n_iter_ = int(n_iter)
            self.objective_history_ = [float(h) for h in history]
            return self

    def _predict_X(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, order="C",
                          ensure_all_finite=False, reset=False)
        return check_array(X, divergence=self.divergence_)

    def _scaled(self, X):
        """``(X, centres, p)`` scaled by a common power of two ``2^-e`` when the data or the
        centres have extreme magnitude (homogeneous divergences, see :meth:`fit`);
        divergences of the scaled pair times ``2^p`` are the original ones."""
        div, C = self.divergence_, self.cluster_centers_
        e = max(_scale_exponent(X, div), _scale_exponent(C, div), key=abs)
        if not e:
            return X, C, 0
        return _ldexp(X, -e), np.ldexp(C, -e), div.homogeneity * e

    def predict(self, X):
        """Index of the nearest centre (smallest ``d(x, u)``) for each row of ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask.array.Array} of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            A lazy dask array when ``X`` is one.
        """
        backend = array_backend(X)
        if backend is not None:
            check_is_fitted(self)
            return backend.kmeans_predict(self, X)
        X, C, _ = self._scaled(self._predict_X(X))
        labels, _ = self.divergence_.assign(X, C)
        return labels

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
        backend = array_backend(X)
        if backend is not None:
            check_is_fitted(self)
            return backend.kmeans_transform(self, X)
        X, C, p = self._scaled(self._predict_X(X))
        D = self.divergence_.pairwise(X, C)
        if p:
            with np.errstate(over="ignore"):
                D = np.ldexp(D, p)
        return D

    def score(self, X, y=None, sample_weight=None):
        """Opposite of the (weighted) sum of divergences to the nearest centre.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask.array.Array} of shape (n_samples, n_features)
        y : ignored
        sample_weight : array-like or dask array of shape (n_samples,), optional

        Returns
        -------
        score : float
        """
        backend = array_backend(X)
        if backend is not None:
            check_is_fitted(self)
            return backend.kmeans_score(self, X, sample_weight)
        X, C, p = self._scaled(self._predict_X(X))
        w = check_sample_weight(sample_weight, X.shape[0])
        _, mins = self.divergence_.assign(X, C)
        total = float(w @ mins)
        if p:
            with np.errstate(over="ignore"):
                total = float(np.ldexp(total, p))
        return -total


_SCALE_LIMIT = 100  # rescale data whose largest magnitude lies beyond 2^+-100


def _scale_exponent(X, div):
    """``e`` with ``max |X| = f 2^e``, ``f`` in ``[0.5, 1)``, when the divergence is homogeneous
    (``d(s x, s u) = s^p d(x, u)``) and ``max |X|`` lies beyond ``2^+-100``; else 0."""
    if div.homogeneity is None:
        return 0
    data = X.data if sp.issparse(X) else np.asarray(X)
    if not data.size:
        return 0
    # max(max, -min): no |X| temporary, which cost as much as a Lloyd pass on dense data
    m = max(float(data.max()), -float(data.min()))
    if not (np.isfinite(m) and m > 0):
        return 0
    e = int(np.frexp(m)[1])
    return e if abs(e) > _SCALE_LIMIT else 0


def _ldexp(X, e):
    """``X 2^e`` (exact) for a dense array or a CSR matrix."""
    if sp.issparse(X):
        X = X.copy()
        X.data = np.ldexp(X.data, e)
        return X
    return np.ldexp(X, e)


def _inertia(X, labels, centers, w, div, chunk=4096):
    """``sum_i w_i d(x_i, u_{labels_i})`` by the definition of ``d`` (rows of zero weight count 0).

    Sparse ``X`` uses the GEMM form on its non-zeros (:meth:`Divergence.pairwise`, the form of
    the Lloyd passes; sparse data are never centred): the definition would densify every row,
    ``O(n d)`` time and memory instead of ``O(nnz)``.
    """
    if sp.issparse(X):
        keep = np.flatnonzero(w > 0)
        total = 0.0
        for j in range(centers.shape[0]):
            idx = keep[labels[keep] == j]
            for s in range(0, idx.size, chunk):
                rows = idx[s:s + chunk]
                d = div.pairwise(X[rows], centers[j:j + 1])[:, 0]
                total += float(np.sum(w[rows] * d))
        return total
    # One pass in row order without per-cluster copies (they cost more than a Lloyd pass).
    d = np.empty(X.shape[0])
    div._ready().generic_assigned(div, X, np.ascontiguousarray(centers), labels, w, d)
    with np.errstate(over="ignore"):  # an overflow is reported by the caller
        return float(np.sum(w * d))


def _objective(mins, w, centers, div, beta, z):
    # ``w @ mins``: the fit runs with BLAS limited to one thread (a multi-threaded BLAS dot
    # cost ~10 ms per call on busy cores), where the dot takes ~0.05 ms and ``np.sum(w * mins)``,
    # with its temporary, ~0.4 ms per Lloyd pass.
    return _objective_from(float(w @ mins), centers, div, beta, z)


def _objective_from(obj, centers, div, beta, z):
    """The objective from ``sum_i w_i mins_i``: plus the smoothing term when ``beta > 0``."""
    obj = float(obj)
    if beta > 0:
        obj += beta * float(div.pairwise(z[None, :], centers).sum())
    return obj


def _update_centers(X, labels, mins, w, k, div, beta, z, run, sums=None, previous=None):
    """Exact centroid step (smoothed weighted means) with re-seeding of empty clusters.

    ``sums``: the ``(S, W)`` of :meth:`Divergence.weighted_sums` for ``labels`` when already
    computed (by :meth:`Divergence.assign_and_sum`); they are updated in place on re-seeding.
    ``previous``: the centres before this step. A cluster that stays empty (no point could be
    moved into it with a lower objective, e.g. every other point has zero weight or sits on its
    centre) keeps its previous centre when ``beta == 0``: the objective does not depend on an
    empty cluster's centre, so keeping it is still an exact block minimisation, whereas an
    arbitrary point (such as the origin) could lie outside the domain or far from the data.
    With ``beta > 0`` the smoothed objective's minimiser for an empty cluster is ``z`` itself.
    """
    S, W = div.weighted_sums(X, labels, k, w) if sums is None else sums

    def candidates():
        for i in np.argsort(-(w * mins), kind="stable"):
            yield _rows(X, [i]), labels[i], w[i], mins[i]

    return _update_from_sums(S, W, candidates(), div, beta, z, run, previous)


def _update_from_sums(S, W, candidates, div, beta, z, run, previous=None):
    """Centres from the sums ``(S, W)`` (updated in place), re-seeding empty clusters.

    ``candidates`` iterates ``(x_i as a 1 x d row, label_i, w_i, min_i)`` over the points in
    decreasing ``w_i min_i`` order (ties: lower index first); it is consumed lazily, so a
    chunked data set can fetch the farthest points on demand. ``previous``: the centres
    before this step (see :func:`_update_centers`).
    """
    empty = np.flatnonzero(W <= 0)
    if empty.size:
        moved = []
        stream = iter(candidates)
        for j in empty:
            for xi, src, wi, mi in stream:
                if W[src] - wi <= 0 or wi <= 0 or mi <= 0:
                    continue
                cj = _smoothed(xi, np.array([wi]), beta, z)
                new_cost = wi * div.pairwise(xi, cj)[0, 0]
                if beta > 0:
                    new_cost += beta * div.pairwise(z[None, :], cj)[0, 0]
                if new_cost < wi * mi:
                    S[src] -= wi * xi[0]
                    W[src] -= wi
                    S[j] = wi * xi[0]
                    W[j] = wi
                    moved.append(j)
                    break
        stuck = empty.size - len(moved)
        kept = ("" if not stuck else
                f"; {stuck} could not be re-seeded (no other point lowers the objective there) and "
                + ("keep the smoothing point z as centre" if beta > 0 else
                   "keep their previous centres"))
        warnings.warn(
            f"restart {run}: {empty.size} cluster(s) became empty; {len(moved)} re-seeded with "
            f"the points farthest from their centres{kept}.",
            EmptyClusterWarning, stacklevel=5,
        )
    with np.errstate(invalid="ignore", divide="ignore"):
        if beta > 0:
            C = (S + beta * z) / (W + beta)[:, None]
        else:
            C = S / W[:, None]
    still = W <= 0
    if still.any():  # no point could be moved (see above): z, or the previous centres
        if beta > 0:
            C[still] = z
        elif previous is not None:
            C[still] = previous[still]
        else:  # pragma: no cover - every caller passes the previous centres
            raise ValueError("an empty cluster could not be re-seeded and has no previous centre.")
    return C


def _lloyd(X, prepared, w, centers, div, beta, z, max_iter, tol, verbose, run):
    """One restart. Returns ``(labels, centers, n_iter, history, inertia)``."""
    k = centers.shape[0]
    # Each pass returns the labels and the centre sums for them (one read of X per iteration).
    labels, mins, S, W = div.assign_and_sum(X, centers, w, prepared=prepared)
    history = [_objective(mins, w, centers, div, beta, z)]
    n_iter = 0
    converged = False
    for it in range(max_iter):
        centers = _update_centers(X, labels, mins, w, k, div, beta, z, run, sums=(S, W),
                                  previous=centers)
        new_labels, mins, S, W = div.assign_and_sum(X, centers, w, prepared=prepared)
        history.append(_objective(mins, w, centers, div, beta, z))
        n_iter = it + 1
        changed = not np.array_equal(new_labels, labels)
        labels = new_labels
        if _lloyd_converged(history, changed, tol, verbose, n_iter):
            converged = True
            break
    if not converged:
        _warn_max_iter(run, max_iter, stacklevel=3)
    return labels, centers, n_iter, history, float(np.sum(w * mins))


def _lloyd_converged(history, changed, tol, verbose, n_iter):
    """The stopping rule of a Lloyd iteration (in memory and on dask): no label changed, or the
    objective fell by at most ``tol`` times its value."""
    if verbose > 1:
        print(f"  iteration {n_iter}: objective {history[-1]:.10g}")
    return not changed or history[-2] - history[-1] <= tol * abs(history[-2])


def _warn_max_iter(run, max_iter, stacklevel):
    """ConvergenceWarning of a restart that reached ``max_iter`` (``stacklevel`` as seen by the
    caller)."""
    warnings.warn(
        f"BregmanKMeans restart {run} reached max_iter={max_iter} before converging; "
        "increase max_iter or tol.",
        ConvergenceWarning, stacklevel=stacklevel + 1,
    )
