"""Data sources: where a fit's rows live, and the passes over them that a fit needs.

A fit loop (k-means, MBC, the mixture, mini-batch k-means) is written once against
:class:`DataSource`, the protocol every source implements with the same signatures; the data
may be

* in memory, dense or sparse (:class:`InMemorySource`: one block, the kernels' threads);
* a row-chunked ``dask.array`` (:class:`bregclust._dask.DaskSource`: one task per chunk on
  the dask cluster, results tree-reduced). A stream of chunks is a dask array too (its chunks
  are read where and when a pass needs them; :meth:`DaskSource.fold` visits them one after
  the other), and ``partial_fit`` takes one in-memory batch per call.

Every source offers the same passes, each a block pass of :mod:`bregclust._execution` run on
every block and combined:

=====================  ====================================================================
``stats``              validation (chunked sources) and :class:`~bregclust._conditioning.DataStats`
                       (with ``centres``, also the first Lloyd pass from them)
``conditioned(cond)``  the source seen through one :class:`~bregclust._conditioning.Conditioning`
``reweighted``         the source of transformed rows and reweighted samples
``run``                any block pass, combined (``check``: validate chunks on the way)
``lloyd``              the fused assign-and-sum pass (:class:`~bregclust._blocks.LloydPart`)
``farthest``           rows in decreasing ``w d(x, u_label)`` order (empty clusters)
``cost``, ``sample``   k-means|| seeding; ``take``, ``positive_rows``, ``draw_first``: rows
``labels``             the labels of given centres (lazy on dask)
``final_objective``    the objective of the returned labels and centres
``fold``               a state threaded through the blocks one after the other (mini-batch)
``map_rows``           a per-row evaluation of a fitted model (lazy on dask)
``predict``,           fitted models: labels, divergences and the score of new rows
``transform``,
``score``
=====================  ====================================================================

In-memory sources keep the labels of a pass (``LloydPart.labels``); chunked sources keep a
digest of them (``LloydPart.digest``), and what needs the labels themselves (initial labels,
the empirical-marginals assignment of MBC: :meth:`InMemorySource.label_stats`,
:meth:`InMemorySource.assign`, :meth:`InMemorySource.pairwise`) is refused there with a clear
error by the estimator.
"""

import sys
from typing import Protocol, runtime_checkable

import numpy as np
import scipy.sparse as sp

from . import _blocks as B
from . import _execution as E
from ._conditioning import (
    IDENTITY,
    assign_rows,
    block_stats,
    pairwise_rows,
    score_block,
)
from ._validation import check_array, check_finite, check_sample_weight

__all__ = ["DataSource", "InMemorySource", "as_source", "is_dask_array"]


def is_dask_array(X):
    """True when ``X`` is a ``dask.array.Array`` (without importing dask otherwise).

    Parameters
    ----------
    X : object

    Returns
    -------
    bool
    """
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(X, da.Array)


def _stats_needs(div, nnz):
    return dict(phi=div.translation_invariant, colmax=div.coordinate_scale_invariant,
                nnz=bool(nnz) and div.domain != "real")


@runtime_checkable
class DataSource(Protocol):
    """What a fit loop may ask of its data, with the exact signatures every source implements
    (:class:`InMemorySource`, :class:`bregclust._dask.DaskSource`; tests/test_sources.py runs
    every pass on every source).

    Attributes: ``chunked`` (a digest of the labels is kept instead of the labels), ``cond``
    (the :class:`~bregclust._conditioning.Conditioning` the rows are seen through), ``X`` and
    ``w`` (the rows and weights as given; ``w`` may be None for unit weights), ``n``, ``d``,
    ``shape``, ``nblocks``, ``dtype`` (float32 or float64, the type of fitted centres),
    ``sparse``. ``centres`` below are prepared centres
    (:func:`bregclust._execution.prepare_centres`), ``U`` centres in the data's units.
    """

    chunked: bool

    def stats(self, div, *, nnz=True, centres=None):
        """:class:`~bregclust._conditioning.DataStats` of the rows (chunks validated); with
        ``centres``, ``(stats, part)``: also the first Lloyd pass under the identity
        conditioning."""

    def conditioned(self, cond):
        """The source seen through the conditioning ``cond``."""

    def reweighted(self, rows, factor):
        """The source of rows ``rows(X)`` with weights ``w * factor(X)`` (``rows`` and
        ``factor`` are module-level functions of a block of rows)."""

    def run(self, fn, *args, reduce=B.combine, check=False, extra=None):
        """``fn(block, *args[, *extra(i)])`` on every block ``i``, combined by ``reduce``;
        ``check`` validates the blocks on the way (chunked sources)."""

    def fold(self, fn, div, state, order, extra=None, callback=None):
        """``state = fn(block_i, div, state, *extra(i))`` for ``i`` in ``order``, stopped when
        ``callback(state)`` returns True; the last state."""

    def lloyd(self, div, centres, extra=None, sums=True):
        """The fused Lloyd pass (:class:`~bregclust._blocks.LloydPart`)."""

    def labels_changed(self, a, b):
        """Whether the labels of two Lloyd parts differ."""

    def farthest(self, div, part, centres):
        """Rows ``(x as 1 x d, label, w, min)`` in decreasing ``w min`` order."""

    def cost(self, div, centres):
        """The k-means|| cost pass (:class:`~bregclust._blocks.Cost`)."""

    def sample(self, div, centres, ell, cost, seeds):
        """The k-means|| sampling pass (one seed per block):
        :class:`~bregclust._blocks.Rows`."""

    def take(self, ids):
        """:class:`~bregclust._blocks.Rows` at global indices ``ids``."""

    def positive_rows(self):
        """Indices of the rows of positive weight."""

    def draw_first(self, rng):
        """One row index drawn with probability proportional to its weight."""

    def labels(self, div, centres, part=None):
        """Labels of prepared centres (lazy on dask)."""

    def final_objective(self, div, part, U):
        """The objective of the labels ``part`` stands for and the centres ``U``."""

    def map_rows(self, fn, div, *args, ncols=None, dtype=np.float64):
        """``fn(rows, div, *args)`` of the rows in the data's units: shape ``(n,)`` or
        ``(n, ncols)`` (lazy on dask)."""

    def predict(self, div, U):
        """Labels of the centres ``U`` (data units)."""

    def transform(self, div, U):
        """Divergences to the centres ``U`` (data units)."""

    def score(self, div, U):
        """``sum_i w_i min_j d(x_i, u_j)`` in the data's units."""


class InMemorySource:
    """A dense array or CSR matrix in memory, as one block.

    Parameters
    ----------
    X : ndarray or CSR matrix
        Validated rows (float32 or float64, C order / canonical CSR), already checked against the
        divergence's domain.
    w : ndarray of shape (n,)
        Validated sample weights.
    cond : Conditioning, default=IDENTITY
        How the fit sees the rows (``X`` is given as the fit sees it).
    """

    chunked = False

    def __init__(self, X, w, cond=IDENTITY, block=None):
        self.block = block if block is not None else B.Block(X, w)
        self.cond = cond

    @classmethod
    def from_block(cls, block, cond=IDENTITY):
        """The source of one :class:`~bregclust._blocks.Block` (rows as the fit sees
        them)."""
        return cls(None, None, cond, block)

    @property
    def X(self):
        return self.block.X

    @property
    def w(self):
        return self.block.w

    @property
    def n(self):
        return self.block.X.shape[0]

    @property
    def d(self):
        return self.block.X.shape[1]

    @property
    def nblocks(self):
        return 1

    @property
    def shape(self):
        return self.block.X.shape

    @property
    def dtype(self):
        """The floating type of the rows (float32 or float64): the type of fitted centres."""
        return self.block.X.dtype

    @property
    def sparse(self):
        return sp.issparse(self.block.X)

    def stats(self, div, *, nnz=True, centres=None):
        """:class:`DataStats` of the rows (before any conditioning); with ``centres``
        (prepared), ``(stats, part)``: also the first Lloyd pass from them."""
        stats = block_stats(self.block, div, **_stats_needs(div, nnz))
        if centres is None:
            return stats
        return stats, self.lloyd(div, centres)

    def conditioned(self, cond):
        """The source seen through ``cond`` (the same source when nothing changes; the GEMM
        preparation computed by :meth:`stats` is then kept)."""
        if cond.identity:
            return self
        X = self.block.X if cond.data_identity else cond.apply(self.block.X)
        prep = self.block.prep if cond.data_identity else None
        return InMemorySource.from_block(
            B.Block(X, cond.apply_weights(self.block.w), prep=prep), cond)

    def reweighted(self, rows, factor):
        """The source of rows ``rows(X)`` with weights ``w * factor(X)``."""
        X = self.block.X
        return InMemorySource(rows(X), self.block.weights() * factor(X), self.cond)

    def run(self, fn, *args, reduce=B.combine, check=False, extra=None):
        """``fn(block, *args[, *extra(0)])`` on the one block (the rows were validated when
        the source was built, so ``check`` changes nothing; one result, nothing to
        ``reduce``)."""
        return fn(self.block, *args, *(extra(0) if extra else ()))

    def fold(self, fn, div, state, order=(0,), extra=None, callback=None):
        """``fn(block, div, state, *extra(0))`` on the one block (see
        :meth:`bregclust._dask.DaskSource.fold`)."""
        for i in order:
            state = fn(self.block, div, state, *(extra(i) if extra else ()))
            if callback is not None and callback(state):
                break
        return state

    # ------------------------------------------------------------------ passes
    def lloyd(self, div, centres, extra=None, sums=True):
        """The fused Lloyd pass (labels kept); ``sums=False`` leaves out the per-cluster sums
        (a final labels pass)."""
        return B.lloyd_block(self.block, div, centres, True, extra, sums)

    @staticmethod
    def labels_changed(a, b):
        return B.labels_differ(a.labels, b.labels)

    def label_stats(self, div, labels, k, extra=None):
        """Statistics of given labels (:func:`bregclust._blocks.label_block`)."""
        return B.label_block(self.block, div, labels, k, extra)

    def assign(self, div, centres):
        """``(labels, mins)`` of prepared centres."""
        return B.assign_block(self.block, div, centres)

    def pairwise(self, div, U):
        """Every divergence ``d(x_i, u_j)`` (GEMM form)."""
        return E.pairwise(div, self.block.X, U, self.block.prepared(div))

    def farthest(self, div, part, centres):
        """Rows as ``(x as a 1 x d array, label, w, min)`` in decreasing ``w min`` order (ties:
        lower row first), from the labels and minima that ``part`` kept."""
        w = self.block.w
        X = self.block.X
        for i in np.argsort(-(w * part.mins), kind="stable"):
            row = X[[i]]
            row = row.toarray() if sp.issparse(row) else np.array(row, dtype=np.float64)
            yield row, int(part.labels[i]), float(w[i]), float(part.mins[i])

    def cost(self, div, centres):
        return B.cost_block(self.block, div, centres)

    def sample(self, div, centres, ell, cost, seeds):
        return B.sample_block(self.block, div, centres, ell, cost, int(seeds[0]))

    def take(self, ids):
        """:class:`~bregclust._blocks.Rows` at global indices ``ids`` (any order)."""
        return B.take_block(self.block, np.asarray(ids, dtype=np.int64))

    def positive_rows(self):
        """Indices of the rows of positive weight."""
        return np.flatnonzero(self.block.w > 0)

    def draw_first(self, rng):
        """One row index drawn with probability proportional to its weight."""
        w = self.block.w
        return int(rng.choice(self.n, p=w / w.sum()))

    def labels(self, div, centres, part=None):
        """Labels of prepared centres (those ``part`` kept, when given)."""
        if part is not None and part.labels is not None:
            return part.labels
        return self.assign(div, centres)[0]

    def final_objective(self, div, part, U):
        """The objective of the labels ``part`` kept and the centres ``U``, by the definition
        of ``d`` (the GEMM minima are exact only up to the rounding of the GEMM form)."""
        return E.exact_objective(div, self.block.X, U, part.labels, self.block.w)

    # ------------------------------------------------------------------ fitted models
    def map_rows(self, fn, div, *args, ncols=None, dtype=np.float64):
        """``fn(X, div, *args)`` of the rows (the data's units: an unconditioned source), as
        ``fn`` returns it (``ncols`` and ``dtype`` describe the lazy result of a dask
        source)."""
        if not self.cond.data_identity:
            raise RuntimeError("internal: map_rows evaluates rows in the data's units; call it "
                               "on the unconditioned source.")
        return fn(self.block.X, div, *args)

    def predict(self, div, U):
        """Labels of the centres ``U`` (data units), under the conditioning of the rows and
        the centres (:func:`bregclust._conditioning.assign_rows`)."""
        return assign_rows(div, self.block.X, U)[0]

    def transform(self, div, U):
        """Divergences to the centres ``U``, in the data's units."""
        return pairwise_rows(div, self.block.X, U)

    def score(self, div, U):
        """``sum_i w_i min_j d(x_i, u_j)`` in the data's units."""
        return score_block(self.block, div, U)


def as_source(X, sample_weight, div, *, name="X", validate=None, n_features=None):
    """The data source of an estimator's input, validated.

    Parameters
    ----------
    X : {array-like, sparse matrix, dask.array.Array}
    sample_weight : array-like, dask array or None
    div : Divergence
    name : str, default="X"
    validate : callable, optional
        ``validate(X) -> X``: the estimator's own conversion of in-memory input (scikit-learn's
        ``validate_data``, which records ``n_features_in_`` and feature names); by default
        :func:`bregclust._validation.check_array`.
    n_features : int, optional
        Required number of columns (after ``fit``).

    Returns
    -------
    InMemorySource or DaskSource
        In-memory input is checked at once (finite, inside the domain); a dask array's chunks
        are checked by the first pass over them.
    """
    if is_dask_array(X):
        from . import _dask

        return _dask.DaskSource.from_array(X, sample_weight, div, name=name,
                                           n_features=n_features)
    if validate is not None:
        X = validate(X)
    else:
        X = check_array(X, name=name, finite=False)
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"{name} has {X.shape[1]} features, but the model was fitted with "
                         f"{n_features}.")
    div.check_n_features(X.shape[1], name=name)
    w = check_sample_weight(sample_weight, X.shape[0])
    src = InMemorySource(X, w)
    # One read of the data for the smallest and largest value: a NaN or an infinity shows in
    # them, and so does a value outside the domain; the messages are made only on failure.
    lo, hi = src.block.value_range()
    if not (np.isfinite(lo) and np.isfinite(hi)):
        check_finite(X, name=name)
    outside = {"real": False, "nonnegative": lo < 0,
               "positive": lo <= 0 or (sp.issparse(X) and X.nnz < X.shape[0] * X.shape[1])}
    if outside[div.domain]:
        div.check_domain(X, name=name)
    return src
