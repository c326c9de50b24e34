"""The skeleton shared by the centroid estimators (k-means, mini-batch, bisecting, the mixture's
hard start, the independent tasks of MBC): the Lloyd loop written once against a data source
(:mod:`bregclust._sources`), the centre update with its smoothing term, the reported objective
and the mixins for ``divergence`` and nearest-centre ``predict`` / ``score``.

It sits below every estimator module: estimators import from here, never from each other.
"""

import functools
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _execution as E
from ._callbacks import CallbackSupportMixin
from ._progress import progress
from ._smoothing import smoothed_points
from ._sources import as_source
from ._spherical import unit_centres
from ._validation import EmptyClusterWarning, check_array, user_stacklevel
from .divergences import get_divergence

__all__ = ["out_dtype", "in_dtype", "LloydResult", "smoothed_objective", "update_centres", "lloyd", "centres_state", "reported_objective",
           "DivergenceEstimatorMixin", "NearestCentreMixin"]


# ----------------------------------------------------------------------------- the Lloyd loop
@dataclass
class LloydResult:
    """One restart of :func:`lloyd`.

    Attributes
    ----------
    centres : ndarray of shape (k, d)
        Final centres (conditioned units).
    part : LloydPart
        The last pass: the labels (or their digest) of ``centres`` and their statistics.
    n_iter : int
        Centre updates.
    history : list of float
        The objective after every assignment step.
    converged : bool
    """

    centres: np.ndarray
    part: object
    n_iter: int
    history: list
    converged: bool

    @property
    def objective(self):
        return self.history[-1]


def smoothed_objective(obj, centres, div, beta, z, pc=None):
    """The k-means objective from ``sum_i w_i mins_i``: plus the smoothing term
    ``beta sum_j d(z, u_j)`` when ``beta > 0``.

    ``pc``, the prepared ``centres`` when the caller has them, saves the gradients and ``phi``
    of the centres (``k x d`` generator evaluations per iteration, as many as the pass itself
    on text): the terms are then :func:`bregclust._execution.pairwise`'s arithmetic on the
    same ``G`` and ``c`` (the same product, sum and clamp), so the same value."""
    obj = float(obj)
    if beta > 0:
        terms = _smoothing_terms(div, z, centres, pc)
        if terms is None:
            terms = E.pairwise(div, z[None, :], centres)
        obj += beta * float(terms.sum())
    return obj


def _smoothing_terms(div, z, centres, pc):
    """``[[d(z, u_j)]]`` (1 x k) from prepared centres as ``E.pairwise`` computes it, or None
    where it would take another path (non-finite parts or values, float32, a generator whose
    GEMM parts are not those of ``prepare_centres``)."""
    if (pc is None or pc.phi is None or pc.U is not centres or not pc.finite
            or not (div.separable and div.differentiable) or div.spherical
            or not (centres.flags.c_contiguous and pc.G.flags.c_contiguous)):
        return None
    Xg, phi_x = E.prepare(div, z[None, :])
    if Xg.dtype != np.float64 or sp.issparse(Xg):
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        D = np.asarray(Xg @ pc.G.T)
        v = (phi_x[0] + pc.c) - D[0]
    if not np.isfinite(v).all():
        return None
    return np.where(v > 0.0, v, 0.0)[None, :]


def update_centres(S, W, candidates, div, beta, z, run, previous):
    """Exact centroid step from the sums ``(S, W)`` (updated in place), re-seeding empty clusters.

    ``candidates`` iterates ``(x_i as a 1 x d row, label_i, w_i, min_i)`` over the points in
    decreasing ``w_i min_i`` order (ties: lower index first); it is consumed lazily, so a
    chunked data set fetches the farthest points on demand. A cluster that stays empty (no
    point could be moved into it with a lower objective, e.g. every other point has zero
    weight or sits on its centre) keeps its previous centre when ``beta == 0``: the objective
    does not depend on an empty cluster's centre, so keeping it is still an exact block
    minimisation, whereas an arbitrary point (such as the origin) could lie outside the domain
    or far from the data. With ``beta > 0`` the smoothed objective's minimiser for an empty
    cluster is ``z`` itself.
    """
    empty = np.flatnonzero(W <= 0)
    if empty.size:
        moved = []
        stream = iter(candidates)
        for j in empty:
            for xi, src, wi, mi in stream:
                if W[src] - wi <= 0 or wi <= 0 or mi <= 0:
                    continue
                cj = smoothed_points(xi, np.array([wi]), beta, z)
                new_cost = wi * E.pairwise(div, xi, cj)[0, 0]
                if beta > 0:
                    new_cost += beta * E.pairwise(div, z[None, :], cj)[0, 0]
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
            EmptyClusterWarning, stacklevel=user_stacklevel(),
        )
    with np.errstate(invalid="ignore", divide="ignore"):
        if beta > 0:
            U = (S + beta * z) / (W + beta)[:, None]
        else:  # in place: the sums are not used again (k x d can be large on text)
            U = np.divide(S, W[:, None], out=S)
    still = W <= 0
    if still.any():  # no point could be moved (see above): z, or the previous centres
        U[still] = z if beta > 0 else previous[still]
    if div.spherical:  # the centre is the normalised mean (spherical k-means)
        U = unit_centres(U, previous)
    return U


def lloyd(src, div, centres, beta, z, max_iter, tol, run, *, verbose=0, first=None,
          desc="BregmanKMeans", passes=None, fitted=None):
    """One restart of Bregman k-means on a (conditioned) data source.

    Each iteration is one fused pass (the labels of the current centres and the centre sums
    for them, one read of the data), then the exact centroid step. Stops when no label changes
    or the objective falls by at most ``tol`` times its value.

    Parameters
    ----------
    src : data source
    div : Divergence
    centres : ndarray of shape (k, d)
    beta : float
        Smoothing pseudo-count (conditioned units); ``z`` its point.
    z : ndarray or None
    max_iter : int
    tol : float
    run : int
        Restart number (messages).
    verbose : int, default=0
    first : LloydPart, optional
        The pass from ``centres`` when the caller has it.
    desc : str, default="BregmanKMeans"
        The estimator named in the progress bar and in the ConvergenceWarning.
    passes : callable, optional
        Runs the Lloyd pass in place of ``src.lloyd`` (same signature and result): the pruned
        passes of :class:`bregclust._pruned.PrunedPasses`, whose ``skipped`` list the bar
        shows, or the size-constrained assignment of
        :class:`bregclust._constrained.ConstrainedPasses`, whose ``candidates = False`` keeps
        the centre step from moving points into empty clusters. Its ``prepare`` method, when
        it has one, prepares the centres in place of
        :func:`bregclust._execution.prepare_centres` (the same values), and its
        ``update_centres`` method, when it has one, makes the centres in place of
        :func:`update_centres` (the same values).
    fitted : callable, optional
        ``fitted(centres) -> attributes`` of the estimator predicting with the centres of an
        iteration (:func:`centres_state`): handed to scikit-learn's callbacks that ask for a
        ``fitted_estimator`` (see :mod:`bregclust._callbacks`). A callback's end hook that
        returns True stops the loop (without a ConvergenceWarning).

    Returns
    -------
    LloydResult
    """
    run_pass = src.lloyd if passes is None else passes
    prepare = getattr(passes, "prepare", E.prepare_centres)  # the cached passes: changed rows
    update = getattr(passes, "update_centres", update_centres)  # the cached passes: same
    if hasattr(passes, "budget"):  # the adaptive passes weigh a switch against the passes left
        passes.budget(max_iter)
    pc = prepare(div, centres)
    part = first if first is not None else run_pass(div, pc)
    history = [smoothed_objective(part.objective, centres, div, beta, z, pc)]
    n_iter = 0
    converged = stop = False
    with progress(verbose, total=max_iter, desc=f"{desc} restart {run}") as bar:
        for it in range(max_iter):
            # a pass that moves no point behind its own back (the size-constrained one) has
            # no candidates for an empty cluster
            candidates = (src.farthest(div, part, pc) if getattr(passes, "candidates", True)
                          else ())
            centres = update(part.S, part.W, candidates, div, beta, z, run, centres)
            pc = prepare(div, centres)
            new = run_pass(div, pc)
            history.append(smoothed_objective(new.objective, centres, div, beta, z, pc))
            n_iter = it + 1
            changed = src.labels_changed(part, new)
            part = new
            state = None if fitted is None else functools.partial(fitted, centres)
            if getattr(passes, "skipped", None) is None:
                stop = bar.step(history[-1], fitted=state)
            else:
                stop = bar.step(history[-1], fitted=state,
                                skipped=f"{passes.skipped[-1] / max(passes.total, 1):.1%}")
            if not changed or history[-2] - history[-1] <= tol * abs(history[-2]):
                converged = True
                break
            if stop:
                break
    if not converged and not stop:
        warnings.warn(
            f"{desc} restart {run} reached max_iter={max_iter} before converging; "
            "increase max_iter or tol.", ConvergenceWarning, stacklevel=user_stacklevel())
    return LloydResult(centres, part, n_iter, history, converged)


def centres_state(div, cond, dtype):
    """``fitted(centres)`` for :func:`lloyd`: the attributes with which an estimator of
    :class:`NearestCentreMixin` predicts from conditioned centres (in the data's units and
    type).

    Parameters
    ----------
    div : Divergence
    cond : Conditioning
    dtype : numpy dtype
        The fitted centres' type.

    Returns
    -------
    callable
    """
    def fitted(centres):
        return {"cluster_centers_": cond.undo_centres(centres).astype(dtype, copy=False),
                "divergence_": div}
    return fitted


def reported_objective(owner, div, cond, objective):
    """A fit's objective in the data's units, with a warning when it is not a finite number.

    Every estimator written on the k-means pass reports ``inertia_`` through this function, so
    that an objective that overflowed (or sits on the boundary of the divergence's domain) is
    never returned in silence: the labels and centres are still exact, only the sum is not.

    Parameters
    ----------
    owner : str
        The estimator's name, first word of the warning.
    div : Divergence
    cond : Conditioning
        The fit's conditioning (its scale is undone here).
    objective : float
        The objective in the conditioned units.

    Returns
    -------
    objective : float
        ``cond.undo_objective(objective)``.
    """
    objective = float(objective)
    if not np.isfinite(objective):
        why = ("a divergence overflowed; rescale the data" if div.domain == "real" else
               "a divergence overflowed or a centre lies on the boundary of the domain; "
               "rescale the data or use smoothing > 0")
        warnings.warn(f"{owner}: the objective is {objective} ({why}).",
                      RuntimeWarning, stacklevel=user_stacklevel())
        return float(cond.undo_objective(objective))
    undone = float(cond.undo_objective(objective))
    if not np.isfinite(undone):
        warnings.warn(
            f"{owner}: inertia_ overflowed to inf (the objective is {objective:.6g} in "
            "units of 2^" f"{cond.degree * cond.scale + cond.weight_scale}, beyond float64); "
            "labels_ and cluster_centers_ are exact. Rescale the data to read the "
            "objective.", RuntimeWarning, stacklevel=user_stacklevel())
    return undone


class DivergenceEstimatorMixin(CallbackSupportMixin):
    """What every single-task estimator with ``divergence`` / ``divergence_params`` shares: the
    divergence record, scikit-learn's input tags for its domain, and the in-memory validator.

    Class attributes: ``_check_finite`` (whether the validator refuses NaN/inf itself; False
    where the data source checks the values) and ``_preserves_dtype`` (the transformer tag, or
    None to leave it).
    """

    _check_finite = True
    _preserves_dtype = None

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        if self._preserves_dtype is not None:
            tags.transformer_tags.preserves_dtype = list(self._preserves_dtype)
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

    def _validator(self, reset):
        """In-memory input checked once (our messages), then scikit-learn's bookkeeping of
        ``n_features_in_`` and ``feature_names_in_`` on the input as given."""
        def validate(X):
            Xc = check_array(X, finite=self._check_finite)
            validate_data(self, X, reset=reset, skip_check_array=True)
            return Xc
        return validate

    def _source(self, X, sample_weight=None):
        check_is_fitted(self)
        return as_source(X, sample_weight, self.divergence_, validate=self._validator(False),
                         n_features=self.n_features_in_)


class NearestCentreMixin(DivergenceEstimatorMixin):
    """``predict`` and ``score`` of a fitted set of centres (the estimator's ``_pass_centres()``,
    in the data's units), on any data source. Each estimator defines its own ``transform`` (on
    ``_pass_centres()`` too): scikit-learn's ``set_output`` wraps only a ``transform`` defined
    by the estimator's class itself."""

    def _pass_centres(self):
        return self.cluster_centers_

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
        return self._source(X).predict(self.divergence_, self._pass_centres())

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
        return -self._source(X, sample_weight).score(self.divergence_, self._pass_centres())


def out_dtype(X):
    """float32 for float32 input (kept for the fitted centres and ``transform``), else float64."""
    dt = getattr(X, "dtype", None)
    return np.float32 if dt == np.float32 else np.float64


def in_dtype(dtype, a):
    """``a`` in the output dtype of :func:`out_dtype`."""
    return np.asarray(a, dtype=dtype) if dtype == np.float32 else a
