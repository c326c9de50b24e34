"""A row-chunked ``dask.array`` as a data source (optional dependency: ``pip install .[dask]``).

:class:`DaskSource` offers the passes of :mod:`bregclust._sources` on a dask array chunked by
rows: every pass is a dask graph with one task per chunk, which runs the block pass of
:mod:`bregclust._execution` (the in-memory kernels) on that chunk, seen through the fit's
conditioning, and a tree of small tasks that combines the results. Only centres (``k x d``)
are sent with a pass; the fit loops themselves (the centre update, the empty-cluster rule, the
convergence test) are the estimators' own and run on the client. Graphs are computed with
:func:`dask.compute`, so an active ``dask.distributed.Client`` is used when there is one and
the default local scheduler otherwise. This module imports no estimator.
"""

import functools
import threading
import uuid
import weakref

import numpy as np
import scipy.sparse as sp

from . import _blocks as B
from . import _conditioning as C
from . import _execution as E
from ._dask_local import SPLIT_EVERY, active_client, local_groups, run_local
from ._portable import Portable, portable, unwrap
from ._validation import as_block, check_block, check_dask_array, check_float_dtype, float_dtype

__all__ = ["DaskSource"]


def _dask():
    try:
        import dask
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - only reachable without dask
        raise ImportError("dask input needs the dask extra: pip install 'bregclust[dask]'.") from exc
    return dask, da


# ----------------------------------------------------------------------------- chunk tasks
_KERNEL_LOCK = threading.RLock()


def _one_at_a_time(fn):
    """Run chunk tasks of one process one after another, each on its own thread alone.

    The dask workers (and their threads) are the parallelism: inside a task the kernels run
    serially (:func:`bregclust._execution.serial`; the same labels as with threads), since
    nested kernel threads would oversubscribe the cores and a parallel launch per chunk costs
    more than the chunk. numba's default threading layer must not be entered from several
    threads at once, which a dask worker with several threads, or the local threaded
    scheduler, would do: hence the lock.
    """

    @functools.wraps(fn)
    def run(*args, **kwargs):
        with _KERNEL_LOCK, E.serial():
            return fn(*args, **kwargs)

    return run


# phi(x) of the chunks a worker keeps in memory (a persisted dask array), keyed by the chunk
# object: a pass over such a chunk then reads it once (the fused kernel) instead of also
# recomputing phi(x). An entry lives as long as its chunk (a weak reference removes it) and
# holds only phi(x) (n floats), never the chunk. Chunks made afresh by each pass (read from
# disk, converted to float64) simply miss.
_PHI_CACHE = {}


def _block(Xb, wb, meta, div, cond):
    """The chunk as the fit sees it: a :class:`bregclust._blocks.Block`, conditioned, with
    phi(x) reused when the same chunk object comes back (see ``_PHI_CACHE``)."""
    w = None if wb is None else np.ascontiguousarray(wb, dtype=np.float64)
    if not cond.data_identity:
        return B.Block(cond.apply(Xb), cond.apply_weights(w), meta[1], meta[0])
    block = B.Block(Xb, cond.apply_weights(w), meta[1], meta[0])
    if sp.issparse(Xb):
        return block
    key = id(Xb)
    hit = _PHI_CACHE.get(key)
    if hit is not None and hit[0]() is Xb and hit[1] is div:
        block.prep = (Xb, hit[2])
        return block
    Xg, phi_x = block.prepared(div)
    if Xg is Xb:  # nothing but phi(x) to keep
        try:
            ref = weakref.ref(Xb, lambda _, key=key: _PHI_CACHE.pop(key, None))
        except TypeError:  # pragma: no cover - ndarrays take weak references
            return block
        _PHI_CACHE[key] = (ref, div, phi_x)
    return block


@_one_at_a_time
def _chunk_task(Xb, wb, meta, cond, check, name, fn, div, *args):
    """One block pass on one chunk: validated when ``check`` (the first pass over the data),
    conditioned by ``cond``, then ``fn(block, div, *args)``."""
    div = unwrap(div)
    Xb = as_block(Xb)
    if check:
        check_block(Xb, wb, div, meta, name)
    return fn(_block(Xb, wb, meta, div, cond), div, *[unwrap(a) for a in args])


def _stats_and_lloyd(block, div, need, centres):
    """The statistics of a block and, from given centres, its first Lloyd pass under the
    identity conditioning (kept when the fit's conditioning is the identity: one pass less)."""
    stats = C.block_stats(block, div, **need)
    return stats, (None if centres is None else B.lloyd_block(block, div, centres))


def _take_chunk(Xb, meta, idx):
    """Dense rows at global indices ``idx`` (all inside this chunk), with their weights."""
    return B.take_block(B.Block(as_block(Xb), None, meta[1], meta[0]), idx)


@_one_at_a_time
def _labels_chunk(Xb, div, U, cond, block_info=None):
    """Labels of a chunk: under the fit's conditioning ``cond`` (``U`` conditioned), or, with
    ``cond=None``, under the conditioning of the chunk and the centres (``predict``)."""
    div, Xb = _checked_block(Xb, div, block_info)
    if cond is None:
        return C.assign_rows(div, Xb, U)[0]
    block = _block(Xb, None, (0, 0, Xb.shape[0]), div, cond)
    return B.assign_block(block, div, E.prepare_centres(div, U))[0]


@_one_at_a_time
def _rows_chunk(Xb, fn, div, args, block_info=None):
    """``fn(chunk, div, *args)`` on a validated chunk (:meth:`DaskSource.map_rows`)."""
    div, Xb = _checked_block(Xb, div, block_info)
    return fn(Xb, div, *args)


@_one_at_a_time
def _transform_chunk(Xb, div, U, block_info=None):
    div, Xb = _checked_block(Xb, div, block_info)
    return C.pairwise_rows(div, Xb, U)


def _checked_block(Xb, div, block_info):
    """The divergence and the chunk of a ``map_blocks`` call, the chunk validated (named by its
    position in the array) when dask passes ``block_info``."""
    div = unwrap(div)
    Xb = as_block(Xb)
    if block_info is not None:
        loc = block_info[0]
        a, b = loc["array-location"][0]
        check_block(Xb, None, div, (loc["chunk-location"][0], a, b))
    return div, Xb


# ----------------------------------------------------------------------------- the source
class DaskSource:
    """A row-chunked dask array (and its weights) as a data source (see
    :mod:`bregclust._sources` for the passes).

    Build it with :meth:`from_array`. Chunks are validated by the first pass over them
    (:meth:`stats`), with the chunk and the global row named in every message.
    """

    chunked = True

    def __init__(self, X, w, cond=C.IDENTITY, name="X"):
        self.X = X
        self.w = w
        self.cond = cond
        self.name = name
        self.n, self.d = int(X.shape[0]), int(X.shape[1])
        sizes = np.asarray(X.chunks[0], dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(sizes)])
        self.nblocks = len(sizes)
        self.meta = [(i, int(self.starts[i]), int(self.starts[i + 1]))
                     for i in range(self.nblocks)]
        self._checked = False
        self._chunk_w = None

    @classmethod
    def from_array(cls, X, sample_weight, div, *, name="X", n_features=None):
        """The source of a dask array and its weights (array-like, dask array or None)."""
        _, da = _dask()
        check_dask_array(X, name=name, n_features=n_features)
        check_float_dtype(X, name)  # complex and float16 refused as in memory
        div.check_n_features(int(X.shape[1]), name=name)
        n = int(X.shape[0])
        w = None
        if sample_weight is not None:
            w = sample_weight
            if not isinstance(w, da.Array):
                w = np.asarray(w)
                if w.dtype.kind not in "biuf":
                    raise TypeError(f"sample_weight must hold real numbers, got dtype {w.dtype}.")
                w = w.astype(np.float64)
                if w.ndim == 0:
                    w = np.full(n, float(w))
            if w.ndim != 1 or w.shape[0] != n:
                raise ValueError(
                    f"sample_weight must be 1-D of length n_samples={n}, got shape {w.shape}.")
            if isinstance(w, da.Array):
                w = w.astype(np.float64).rechunk((X.chunks[0],))
            else:
                w = da.from_array(w, chunks=(X.chunks[0],))
            # Weights are small (n floats): keep them where the data live, sent once per fit.
            w = w.persist()
        return cls(X, w, name=name)

    @property
    def sparse(self):
        return sp.issparse(getattr(self.X, "_meta", None))

    @property
    def shape(self):
        return (self.n, self.d)

    @property
    def dtype(self):
        """The floating type the chunks are computed in (float32 stays, others float64)."""
        return np.dtype(float_dtype(self.X.dtype)) if self.X.dtype.kind in "biuf" else \
            np.dtype(np.float64)

    def conditioned(self, cond):
        """The source seen through ``cond`` (chunks are conditioned inside each task)."""
        if cond.identity:
            return self
        out = DaskSource(self.X, self.w, cond, self.name)
        out._checked = self._checked
        out._chunk_w = self._chunk_w
        return out

    def reweighted(self, rows, factor):
        """The source of rows ``rows(chunk)`` with weights ``w * factor(chunk)`` (lazy; both
        are module-level functions of a chunk, run where it lives)."""
        X = self.X
        Y = X.map_blocks(rows, dtype=np.float64, meta=getattr(X, "_meta", None))
        N = X.map_blocks(factor, drop_axis=1, dtype=np.float64,
                         meta=np.empty((0,), dtype=np.float64))
        return DaskSource(Y, N if self.w is None else N * self.w, self.cond, self.name)

    # ------------------------------------------------------------------ passes
    def run(self, fn, *args, reduce=B.combine, check=False, extra=None):
        """``fn(block, *args[, *extra(i)])`` on every chunk, combined by a tree of ``reduce``
        tasks; computed."""
        return self._run(_chunk_task, (self.cond, check, self.name, fn) + args, reduce, extra)

    def stats(self, div, *, nnz=True, centres=None):
        """Validation of every chunk and the :class:`~bregclust._conditioning.DataStats`;
        with ``centres`` (prepared), also the first Lloyd pass under the identity
        conditioning: ``(stats, part)``."""
        need = dict(phi=div.translation_invariant, colmax=div.coordinate_scale_invariant,
                    nnz=bool(nnz) and div.domain != "real")
        stats, part = self.run(_stats_and_lloyd, Portable(div), need, centres,
                               check=not self._checked)
        self._checked = True
        if stats.weight <= 0:
            raise ValueError("sample_weight sums to zero; at least one sample needs positive "
                             "weight.")
        return (stats, part) if centres is not None else stats

    def lloyd(self, div, centres, extra=None, sums=True):
        return self.run(B.lloyd_block, Portable(div), centres, False, extra, sums)

    @staticmethod
    def labels_changed(a, b):
        return a.digest != b.digest

    def farthest(self, div, part, centres):
        return B.farthest_by_passes(self, div, centres)

    def cost(self, div, centres):
        return self.run(B.cost_block, Portable(div), centres)

    def sample(self, div, centres, ell, cost, seeds):
        seeds = [int(s) for s in seeds]
        return self.run(B.sample_block, Portable(div), centres, ell, cost,
                        extra=lambda i: (seeds[i],))

    def take(self, ids):
        """:class:`~bregclust._blocks.Rows` at global indices ``ids`` (any order)."""
        dask, _ = _dask()
        ids = np.asarray(ids, dtype=np.int64)
        chunk = np.searchsorted(self.starts, ids, side="right") - 1
        blocks = self.X.to_delayed().ravel()
        parts, where = [], []
        for c in np.unique(chunk):
            sel = np.flatnonzero(chunk == c)
            parts.append(dask.delayed(_take_chunk, pure=True)(blocks[c], self.meta[c], ids[sel]))
            where.append(sel)
        rows = dask.compute(*parts)
        out = np.empty((ids.size, self.d))
        for sel, r in zip(where, rows):
            out[sel] = r.rows
        X = self.cond.apply(out) if not self.cond.data_identity else out
        return B.Rows(idx=ids, rows=X, w=self._weights_of(ids))

    def _weights_of(self, ids):
        if self.w is None:
            return np.ones(len(ids))
        return self.cond.apply_weights(np.asarray(self.w.compute())[ids])

    def positive_rows(self):
        if self.w is None:
            return np.arange(self.n)
        return np.flatnonzero(np.asarray(self.w.compute()) > 0)

    def draw_first(self, rng):
        """One row drawn with probability proportional to its weight: a chunk by its total
        weight, then a row of that chunk (only that chunk's weights are fetched)."""
        if self.w is None:
            return int(rng.randint(self.n))
        if self._chunk_w is None:
            self._chunk_w = np.array([float(b.sum().compute()) for b in
                                      self.w.to_delayed().ravel()])
        sums = self._chunk_w
        c = int(rng.choice(self.nblocks, p=sums / sums.sum()))
        wc = np.asarray(self.w.to_delayed().ravel()[c].compute())
        return self.meta[c][1] + int(rng.choice(wc.size, p=wc / wc.sum()))

    def labels(self, div, centres, part=None):
        """Lazy labels of prepared (conditioned) centres: the labels of the fit's last pass."""
        return self.X.map_blocks(_labels_chunk, Portable(div), centres.U, self.cond,
                                 drop_axis=1, dtype=np.int64, meta=np.empty((0,), dtype=np.int64))

    def final_objective(self, div, part, U):
        return float(part.objective)

    def score(self, div, U):
        """``sum_i w_i min_j d(x_i, u_j)`` in the data's units (chunks validated)."""
        return float(self.run(C.score_block, Portable(div), U, check=True))

    def predict(self, div, U):
        """Lazy labels of centres ``U`` (data units), each chunk conditioned with them."""
        return self.X.map_blocks(_labels_chunk, Portable(div), U, None, drop_axis=1,
                                 dtype=np.int64, meta=np.empty((0,), dtype=np.int64))

    def transform(self, div, U):
        """Lazy divergences to centres ``U`` (data units), shape ``(n, k)``."""
        return self.X.map_blocks(_transform_chunk, Portable(div), U,
                                 chunks=(self.X.chunks[0], (U.shape[0],)), dtype=np.float64,
                                 meta=np.empty((0, 0), dtype=np.float64))

    def map_rows(self, fn, div, *args, ncols=None, dtype=np.float64):
        """Lazy ``fn(chunk, div, *args)`` on every chunk, each validated (named by its
        position) and the divergence portable to any worker: a dask array of shape ``(n,)``,
        or ``(n, ncols)`` with ``ncols``. ``fn`` is a module-level function of a validated
        chunk (a per-row evaluation of a fitted model, such as a mixture's log-densities)."""
        if ncols is None:
            return self.X.map_blocks(_rows_chunk, fn, Portable(div), args, drop_axis=1,
                                     dtype=dtype, meta=np.empty((0,), dtype=dtype))
        return self.X.map_blocks(_rows_chunk, fn, Portable(div), args,
                                 chunks=(self.X.chunks[0], (int(ncols),)), dtype=dtype,
                                 meta=np.empty((0, 0), dtype=dtype))

    # ------------------------------------------------------------------ sequential fold
    def fold(self, fn, div, state, order, extra=None, callback=None, window=2):
        """Thread ``state`` through the chunks one after the other, each where it lives.

        ``state = fn(block_i, div, state, *extra(i))`` for ``i`` in ``order``, every call a
        task on the chunk (validated by an earlier pass, conditioned in the task): the state
        (mini-batch k-means' centres and counts, a few kilobytes) travels from task to task,
        the chunks never travel. ``callback(state)`` runs on the client after each chunk, in
        order, and stops the fold when it returns True.

        With a ``distributed`` client, at most ``window`` tasks are queued behind the running
        one: the next chunks are read (from disk, say) while one is worked on, and a worker
        never holds more than a few chunks. Without one, each chunk is computed in turn by the
        local scheduler.

        Returns
        -------
        The last state.
        """
        dask, _ = _dask()
        portable = Portable(div)
        xd = self.X.to_delayed().ravel()
        wd = (self.w.to_delayed().ravel() if self.w is not None else [None] * self.nblocks)
        client = active_client()
        task = dask.delayed(_chunk_task, pure=False)
        prev = state
        pending = []
        for i in order:
            rest = tuple(extra(i)) if extra else ()
            node = task(xd[i], wd[i], self.meta[i], self.cond, False, self.name, fn, portable,
                        prev, *rest)
            if client is None:
                (prev,) = dask.compute(node)
                if callback is not None and callback(prev):
                    return prev
                continue
            prev = client.compute(node)
            pending.append(prev)
            while len(pending) > window:
                done = pending.pop(0).result()
                if callback is not None and callback(done):
                    client.cancel(pending)
                    return done
        done = prev
        while pending:
            done = pending.pop(0).result()
            if callback is not None and callback(done):
                client.cancel(pending)
                break
        return done

    # ------------------------------------------------------------------ graphs
    def _run(self, task, args, reduce, extra):
        """Map ``task(chunk, weights, meta, *args[, *extra(i)])`` over the chunks and reduce
        the results with a tree of ``reduce`` tasks (fan-in ``SPLIT_EVERY``); computed.

        The pass is one graph layer written out directly (one task per chunk, ``args``
        stored once): a pass is repeated every Lloyd iteration, and building it from
        ``dask.delayed`` calls cost more client time than the chunk tasks' arithmetic.
        """
        dask, _ = _dask()
        from dask.delayed import Delayed
        from dask.highlevelgraph import HighLevelGraph

        refs = [portable(a) for a in args]
        extras = [(self.meta[i],) + (tuple(extra(i)) if extra else ())
                  for i in range(self.nblocks)]
        local = local_groups(self)
        if local is not None:
            return run_local(self, local, task, refs, extras, reduce)
        name = f"bregclust-{getattr(args[3], '__name__', 'pass').strip('_')}-{uuid.uuid4().hex}"
        layer = {}
        keyed = []
        for j, a in enumerate(refs):
            if isinstance(a, (np.ndarray, Portable, E.PreparedCentres, C.Conditioning)):
                layer[(name + "-arg", j)] = a  # sent once
                a = (name + "-arg", j)
            keyed.append(a)
        xkeys = [key[0] for key in self.X.__dask_keys__()]
        wkeys = (self.w.__dask_keys__() if self.w is not None else [None] * self.nblocks)
        parts = []
        for i in range(self.nblocks):
            meta, rest = extras[i][0], extras[i][1:]
            layer[(name, i)] = (task, xkeys[i], wkeys[i], meta, *keyed, *rest)
            parts.append((name, i))
        level = 0
        while len(parts) > 1:
            level += 1
            nxt = []
            for j in range(0, len(parts), SPLIT_EVERY):
                key = (f"{name}-r{level}", j)
                layer[key] = (reduce, *parts[j:j + SPLIT_EVERY])
                nxt.append(key)
            parts = nxt
        deps = [self.X] if self.w is None else [self.X, self.w]
        graph = HighLevelGraph.from_collections(name, layer, dependencies=deps)
        (out,) = dask.compute(Delayed(parts[0], graph, layer=name))
        return out
