"""Blocks of rows and the passes a data source runs on each of them.

A data source (:mod:`bregclust._sources`, :mod:`bregclust._dask`) holds its rows as
:class:`Block` objects and runs the block passes below on each (:func:`lloyd_block`,
:func:`top_block`, :func:`cost_block`, ...); :func:`combine` adds their results. The passes
call the engine (:mod:`bregclust._execution`) on the block's arrays.
"""

import hashlib
from dataclasses import dataclass, fields

import numpy as np
import scipy.sparse as sp

from ._execution import (
    _fix_non_finite,
    _objective,
    assign,
    assign_and_sum,
    exact_objective,
    min_max,
    nearest_csr,
    prepare,
    weighted_sums,
)
from ._kernels import lloyd as KL

__all__ = ["Block", "labels_differ", "label_digest", "LloydPart", "lloyd_block", "label_block",
           "assign_block", "Rows", "top_block", "Cost", "cost_block", "sample_block", "take_block",
           "combine", "farthest_by_passes"]


# ----------------------------------------------------------------------------- blocks of rows
class Block:
    """Rows ``start .. start + len(X) - 1`` of a data set, as a fit sees them (conditioned).

    A data source (:mod:`bregclust._sources`) hands its blocks to the block passes below: an
    in-memory source has one block (the whole data set), a dask source one per chunk.
    ``prepared(div)`` computes the GEMM preparation ``(Xg, phi_x)`` once and keeps it.

    Parameters
    ----------
    X : ndarray or CSR matrix
        Validated rows (float64, C order / canonical CSR).
    w : ndarray of shape (n,), optional
        Sample weights; None for unit weights.
    start : int, default=0
        Global index of the first row.
    index : int, default=0
        Position of the block in its data source.
    prep : tuple, optional
        Its GEMM preparation, when already known.
    """

    __slots__ = ("X", "w", "start", "index", "prep", "range")

    def __init__(self, X, w=None, start=0, index=0, prep=None):
        self.X = X
        self.w = w
        self.start = int(start)
        self.index = int(index)
        self.prep = prep
        self.range = None

    def value_range(self):
        """``(min, max)`` of the stored values (NaN when one is NaN), computed once: the
        finiteness and domain checks and the conditioning's magnitude all read it."""
        if self.range is None:
            data = self.X.data if sp.issparse(self.X) else self.X
            self.range = min_max(data) if data.size else (0.0, 0.0)
        return self.range

    @property
    def n(self):
        return self.X.shape[0]

    def weights(self):
        """The weights as an array (ones for unit weights)."""
        return np.ones(self.X.shape[0]) if self.w is None else self.w

    def prepared(self, div, closed_form=False):
        """``(Xg, phi_x)`` of the block, computed on first use (``closed_form`` as in
        :func:`phi_rows`, for that first computation)."""
        if self.prep is None:
            self.prep = prepare(div, self.X, closed_form)
        return self.prep


def labels_differ(a, b):
    """Whether two label arrays differ (the kernel stops at the first difference, where
    ``np.array_equal`` compares every entry into a temporary first)."""
    if a.shape != b.shape or a.dtype != b.dtype or a.ndim != 1:
        return not np.array_equal(a, b)
    return bool(KL.labels_differ(a, b))


def label_digest(labels):
    """A 16-byte digest of a label array (chunked sources compare labels by digest)."""
    return hashlib.blake2b(np.ascontiguousarray(labels).tobytes(), digest_size=16).digest()


@dataclass
class LloydPart:
    """What a Lloyd pass returns for one block, or for a data set once blocks are combined.

    Attributes
    ----------
    S : ndarray of shape (k, d)
        Per-cluster weighted sums of the rows.
    W : ndarray of shape (k,)
        Per-cluster total weights.
    objective : float
        ``sum_i w_i d(x_i, u_label)`` (the GEMM minima).
    labels, mins : ndarray or None
        The labels and minima (kept by in-memory sources only).
    digest : dict or None
        ``{block index: label digest}`` (chunked sources compare labels by digest).
    Phi : ndarray of shape (k,) or None
        Per-cluster weighted sums of ``phi(x)`` (asked with ``extra="phi"``).
    PN : ndarray of shape (k, 2 d) or None
        Per-cluster positive and negative masses (asked with ``extra="pn"``;
        l1_subgradient).
    """

    S: np.ndarray
    W: np.ndarray
    objective: float
    labels: object = None
    mins: object = None
    digest: object = None
    Phi: object = None
    PN: object = None


def _label_extras(div, block, labels, k, w, extra):
    if extra == "phi":
        return {"Phi": np.bincount(labels, weights=w * block.prepared(div)[1], minlength=k)}
    if extra == "pn":
        Xg = block.prepared(div)[0]
        return {"PN": weighted_sums(Xg, labels, k, w)[0]}
    return {}


def _block_objective(block, div, centres, labels, w, mins, obj=None, exact=False):
    """``sum_i w_i d(x_i, u_{labels_i})`` of one pass over a block. With ``exact`` (a chunked
    source: dask, an iterator's chunks, whose reported objective is this sum with no final
    in-memory pass to mend it) dense float32 rows take the definition in float64 (``O(n d)``
    against the pass's ``O(n k d)``): their float32 GEMM minima keep only about
    ``eps32 (|phi(x)| + |c_j|)`` of each divergence, so a sum of small divergences of points
    far from the origin lost digits (2e-5 relative on three blobs). An in-memory source
    keeps the GEMM sum per pass and re-evaluates the final one (``final_objective``)."""
    X = block.X
    if exact and not sp.issparse(X) and X.dtype == np.float32 and X.shape[0]:
        return exact_objective(div, X, centres.U, labels, w)
    return _objective(w, mins) if obj is None else obj


def lloyd_block(block, div, centres, keep=False, extra=None, sums=True):
    """One Lloyd pass over a block: nearest centres and the statistics of those labels.

    Parameters
    ----------
    block : Block
    div : Divergence
    centres : PreparedCentres
    keep : bool, default=False
        Keep the labels and minima (an in-memory source); otherwise their digest.
    extra : {None, "phi", "pn"}
        Also the per-cluster sums of ``phi(x)`` or the sign masses (multi-task statistics).
    sums : bool, default=True
        Whether to form the per-cluster sums ``S`` and ``W``; without them (a final labels
        pass) ``S`` and ``W`` are None and the pass is :func:`assign_block`'s.

    Returns
    -------
    LloydPart
    """
    w = block.weights()
    if not sums:
        labels, mins = assign_block(block, div, centres)
        part = LloydPart(S=None, W=None, objective=_block_objective(block, div, centres, labels,
                                                                    w, mins, exact=not keep),
                         **_label_extras(div, block, labels, centres.U.shape[0], w, extra))
        if keep:
            part.labels, part.mins = labels, mins
        else:
            part.digest = {block.index: label_digest(labels)}
        return part
    res = assign_and_sum(div, block.X, w, centres, block.prepared(div))
    labels, mins, S, W, obj = res.labels, res.mins, res.S, res.W, res.objective
    part = LloydPart(S=S, W=W, objective=_block_objective(block, div, centres, labels, w, mins,
                                                          obj, exact=not keep),
                     **_label_extras(div, block, labels, centres.U.shape[0], w, extra))
    if keep:
        part.labels, part.mins = labels, mins
    else:
        part.digest = {block.index: label_digest(labels)}
    return part


def label_block(block, div, labels, k, extra=None):
    """The statistics of given labels of a block (:class:`LloydPart` without an objective)."""
    w = block.weights()
    S, W = weighted_sums(block.X, labels, k, w)
    return LloydPart(S=S, W=W, objective=float("nan"), labels=labels,
                     **_label_extras(div, block, labels, k, w, extra))


def assign_block(block, div, centres):
    """``(labels, mins)`` of a block (the labels of :func:`lloyd_block`)."""
    if centres.fused and centres.finite and sp.issparse(block.X):
        # the fused kernel's product and argmin without its sums: the same labels and minima
        prepared = block.prepared(div)
        labels, mins = nearest_csr(prepared, centres.GT, centres.c)
        _fix_non_finite(div, block.X, centres.U, labels, mins)
        return labels, mins
    if centres.fused:
        res = assign_and_sum(div, block.X, block.weights(), centres, block.prepared(div))
        return res.labels, res.mins
    return assign(div, block.X, centres, prepared=block.prepared(div))


def _dense_rows(X, idx):
    R = X[idx]
    return R.toarray() if sp.issparse(R) else np.array(R, dtype=np.float64)


@dataclass
class Rows:
    """Rows of a data set with their global indices and per-row values (combined by
    concatenation)."""

    idx: np.ndarray
    rows: np.ndarray
    w: np.ndarray
    key: object = None
    labels: object = None
    mins: object = None


def top_block(block, div, centres, m):
    """The ``m`` rows of a block with the largest ``w_i d(x_i, u_label)`` (ties: lower row
    first), for the empty-cluster rule."""
    labels, mins = assign_block(block, div, centres)
    w = block.weights()
    order = np.argsort(-(w * mins), kind="stable")[:m]
    return Rows(idx=block.start + order, rows=_dense_rows(block.X, order), w=w[order],
                key=-(w * mins)[order], labels=labels[order], mins=mins[order])


@dataclass
class Cost:
    """``sum_i w_i min_c d(x_i, c)`` over the finite minima and the weight at infinity."""

    cost: float
    ninf: int


def cost_block(block, div, centres):
    """:class:`Cost` of a block (k-means|| sampling)."""
    _, mins = assign(div, block.X, centres, prepared=block.prepared(div))
    w = block.weights()
    inf = ~np.isfinite(mins)
    return Cost(cost=float(np.sum(w[~inf] * mins[~inf])),
                ninf=int(np.count_nonzero(inf & (w > 0))))


def sample_block(block, div, centres, ell, cost, seed):
    """k-means|| sampling: row ``i`` kept with probability ``min(1, ell w_i d_i / cost)``
    (points at infinite divergence first, when ``cost.ninf > 0``)."""
    _, mins = assign(div, block.X, centres, prepared=block.prepared(div))
    w = block.weights()
    rng = np.random.default_rng(seed)
    if cost.ninf > 0:
        p = np.where(~np.isfinite(mins) & (w > 0), min(1.0, ell / cost.ninf), 0.0)
    elif cost.cost > 0:
        p = np.minimum(1.0, ell * w * mins / cost.cost)
    else:
        p = np.zeros(block.n)
    keep = np.flatnonzero(rng.uniform(size=block.n) < p)
    return Rows(idx=block.start + keep, rows=_dense_rows(block.X, keep), w=w[keep])


def take_block(block, idx):
    """Dense rows at global indices ``idx`` (all inside the block), with their weights."""
    local = np.asarray(idx, dtype=np.int64) - block.start
    return Rows(idx=np.asarray(idx, dtype=np.int64), rows=_dense_rows(block.X, local),
                w=block.weights()[local])


def combine(*parts):
    """Combine the results of one pass over several blocks (in block order).

    :class:`LloydPart` and :class:`Cost` fields add (dict fields merge), :class:`Rows`
    concatenate, objects with a ``merge`` method (data statistics) merge, tuples combine
    entry by entry."""
    first = parts[0]
    if len(parts) == 1 or first is None:
        return first
    if isinstance(first, tuple):
        return tuple(combine(*[p[i] for p in parts]) for i in range(len(first)))
    if hasattr(first, "merge"):
        return first.merge(*parts)
    if isinstance(first, (int, float)):
        return sum(parts[1:], first)
    if isinstance(first, Rows):
        out = {}
        for f in fields(Rows):
            vals = [getattr(p, f.name) for p in parts]
            out[f.name] = None if vals[0] is None else np.concatenate(vals)
        return Rows(**out)
    out = {}
    for f in fields(first):
        vals = [getattr(p, f.name) for p in parts]
        if vals[0] is None:
            out[f.name] = None
        elif isinstance(vals[0], dict):
            merged = {}
            for v in vals:
                merged.update(v)
            out[f.name] = merged
        elif isinstance(vals[0], np.ndarray):
            # the widest type of the parts: an empty block's bincount is int64 whatever its
            # weights, so an empty first chunk must not fix the type of the sum
            acc = vals[0].astype(np.result_type(*vals), copy=True)
            for v in vals[1:]:
                acc += v
            out[f.name] = acc
        else:
            out[f.name] = sum(vals[1:], vals[0])
    return type(first)(**out)


def farthest_by_passes(src, div, centres):
    """Rows of a chunked source as ``(x as a 1 x d array, label, w, min)`` in decreasing
    ``w min`` order (ties: lower row first), fetched lazily: each block sends its top ``m``
    rows, which contain the global top ``m``; ``m`` grows when the walk goes past them."""
    m = 16
    done = 0
    while done < src.n:
        top = src.run(top_block, div, centres, m)
        order = np.lexsort((top.idx, top.key))[:m]
        for j in order[done:]:
            yield (top.rows[j:j + 1], int(top.labels[j]), float(top.w[j]), float(top.mins[j]))
        done = min(m, src.n)
        m *= 4
