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
import sys
import threading
import uuid
import weakref

import numpy as np
import scipy.sparse as sp

from . import _conditioning as C
from . import _execution as E
from ._validation import as_block, check_block, check_dask_array, check_float_dtype, float_dtype

__all__ = ["DaskSource"]

_SPLIT_EVERY = 16  # fan-in of the tree reduction


def _dask():
    try:
        import dask
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - only reachable without dask
        raise ImportError("dask input needs the dask extra: pip install 'bregclust[dask]'.") from exc
    return dask, da


# ----------------------------------------------------------------------------- divergences
class _Portable:
    """A divergence that unpickles in any worker process, or fails there with a clear error.

    Built-in divergences travel by name. A user-registered generator does not exist in a
    worker started before (or without) the ``register_divergence`` call, so its Python
    functions travel with it (pickled by value with cloudpickle) and the worker registers
    them on first use. Unpickling never raises: a record that cannot be restored (say, a
    generator whose functions need a module the worker lacks) becomes a placeholder whose
    first use raises, so the task fails and the error reaches the client instead of killing
    the worker (which the scheduler would restart and resubmit to forever).
    """

    def __init__(self, div, name=None, error=None):
        self.div = div
        self.name = div.name if div is not None else name
        self.error = error

    def __dask_tokenize__(self):
        return ("bregclust-divergence", self.name, id(self.div))

    def __reduce__(self):
        div = self.div
        if div is None:
            return (_restore, (self.name, {}, None, self.error))
        if div.builtin:
            return (_restore, (div.name, dict(div.params), None, None))
        return (_restore, (div.name, {}, _generator_spec(div), None))

    def get(self):
        if self.div is None:
            raise RuntimeError(self.error)
        return self.div


def _generator_spec(div):
    """The registration of a custom generator, pickled with its functions by value."""
    import cloudpickle

    spec = {key: getattr(getattr(div, key), "py_func", getattr(div, key))
            for key in ("phi", "dphi", "dphi_inv")}
    inv = spec["dphi_inv"]
    if getattr(inv, "__module__", "").startswith("bregclust."):
        del spec["dphi_inv"]  # the registry's own bisection inverse: rebuilt by registering
    spec.update(domain=div.domain, symmetric=div.symmetric, aliases=tuple(div.aliases),
                formula=div.formula)
    mods = {sys.modules.get(getattr(f, "__module__", None)) for f in
            (spec["phi"], spec["dphi"], spec.get("dphi_inv"))}
    mods = [m for m in mods if m is not None and m.__name__ not in ("__main__", "builtins")
            and not m.__name__.startswith(("math", "numpy", "numba"))]
    registered = []
    try:
        for m in mods:  # user functions travel by value (workers need not import their module)
            try:
                cloudpickle.register_pickle_by_value(m)
                registered.append(m)
            except ValueError:
                pass
        return cloudpickle.dumps(spec)
    finally:
        for m in registered:
            cloudpickle.unregister_pickle_by_value(m)


def _restore(name, params, spec, error):
    """Unpickle a :class:`_Portable` (never raises; see there)."""
    if error is not None:
        return _Portable(None, name, error)
    try:
        from .divergences import get_divergence, register_divergence

        try:
            return _Portable(get_divergence(name, **params))
        except ValueError:
            if spec is None:
                raise
            import pickle

            return _Portable(register_divergence(name, **pickle.loads(spec)))
    except Exception as exc:  # noqa: BLE001 - reported when the task runs, see _Portable
        return _Portable(None, name, (
            f"divergence {name!r} could not be restored on a dask worker "
            f"({type(exc).__name__}: {exc}). Make its generator functions importable there "
            f"or call client.run(register_divergence, {name!r}, phi=..., dphi=...) first."))


def _div(div):
    return div.get() if isinstance(div, _Portable) else div


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
    """The chunk as the fit sees it: a :class:`bregclust._execution.Block`, conditioned, with
    phi(x) reused when the same chunk object comes back (see ``_PHI_CACHE``)."""
    w = None if wb is None else np.ascontiguousarray(wb, dtype=np.float64)
    if not cond.data_identity:
        return E.Block(cond.apply(Xb), cond.apply_weights(w), meta[1], meta[0])
    block = E.Block(Xb, cond.apply_weights(w), meta[1], meta[0])
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


def _unwrap(a):
    return a.get() if isinstance(a, _Portable) else a


@_one_at_a_time
def _chunk_task(Xb, wb, meta, cond, check, name, fn, div, *args):
    """One block pass on one chunk: validated when ``check`` (the first pass over the data),
    conditioned by ``cond``, then ``fn(block, div, *args)``."""
    div = _div(div)
    Xb = as_block(Xb)
    if check:
        check_block(Xb, wb, div, meta, name)
    return fn(_block(Xb, wb, meta, div, cond), div, *[_unwrap(a) for a in args])


def _stats_and_lloyd(block, div, need, centres):
    """The statistics of a block and, from given centres, its first Lloyd pass under the
    identity conditioning (kept when the fit's conditioning is the identity: one pass less)."""
    stats = C.block_stats(block, div, **need)
    return stats, (None if centres is None else E.lloyd_block(block, div, centres))


def _take_chunk(Xb, meta, idx):
    """Dense rows at global indices ``idx`` (all inside this chunk), with their weights."""
    return E.take_block(E.Block(as_block(Xb), None, meta[1], meta[0]), idx)


@_one_at_a_time
def _labels_chunk(Xb, div, U, cond, block_info=None):
    """Labels of a chunk: under the fit's conditioning ``cond`` (``U`` conditioned), or, with
    ``cond=None``, under the conditioning of the chunk and the centres (``predict``)."""
    div, Xb = _checked_block(Xb, div, block_info)
    if cond is None:
        return C.assign_rows(div, Xb, U)[0]
    block = _block(Xb, None, (0, 0, Xb.shape[0]), div, cond)
    return E.assign_block(block, div, E.prepare_centres(div, U))[0]


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
    div = _div(div)
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

    # ------------------------------------------------------------------ passes
    def run(self, fn, *args, reduce=E.combine, check=False, extra=None):
        """``fn(block, *args[, *extra(i)])`` on every chunk, combined by a tree of ``reduce``
        tasks; computed."""
        return self._run(_chunk_task, (self.cond, check, self.name, fn) + args, reduce, extra)

    def stats(self, div, *, nnz=True, centres=None):
        """Validation of every chunk and the :class:`~bregclust._conditioning.DataStats`;
        with ``centres`` (prepared), also the first Lloyd pass under the identity
        conditioning: ``(stats, part)``."""
        need = dict(phi=div.translation_invariant, colmax=div.coordinate_scale_invariant,
                    nnz=bool(nnz) and div.domain != "real")
        stats, part = self.run(_stats_and_lloyd, _Portable(div), need, centres,
                               check=not self._checked)
        self._checked = True
        if stats.weight <= 0:
            raise ValueError("sample_weight sums to zero; at least one sample needs positive "
                             "weight.")
        return (stats, part) if centres is not None else stats

    def lloyd(self, div, centres, extra=None):
        return self.run(E.lloyd_block, _Portable(div), centres, False, extra)

    @staticmethod
    def labels_changed(a, b):
        return a.digest != b.digest

    def farthest(self, div, part, centres):
        return E.farthest_by_passes(self, div, centres)

    def cost(self, div, centres):
        return self.run(E.cost_block, _Portable(div), centres)

    def sample(self, div, centres, ell, cost, seeds):
        seeds = [int(s) for s in seeds]
        return self.run(E.sample_block, _Portable(div), centres, ell, cost,
                        extra=lambda i: (seeds[i],))

    def take(self, ids):
        """:class:`~bregclust._execution.Rows` at global indices ``ids`` (any order)."""
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
        return E.Rows(idx=ids, rows=X, w=self._weights_of(ids))

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
        return self.X.map_blocks(_labels_chunk, _Portable(div), centres.U, self.cond,
                                 drop_axis=1, dtype=np.int64, meta=np.empty((0,), dtype=np.int64))

    def final_objective(self, div, part, U):
        return float(part.objective)

    def score(self, div, U):
        """``sum_i w_i min_j d(x_i, u_j)`` in the data's units (chunks validated)."""
        return float(self.run(C.score_block, _Portable(div), U, check=True))

    def predict(self, div, U):
        """Lazy labels of centres ``U`` (data units), each chunk conditioned with them."""
        return self.X.map_blocks(_labels_chunk, _Portable(div), U, None, drop_axis=1,
                                 dtype=np.int64, meta=np.empty((0,), dtype=np.int64))

    def transform(self, div, U):
        """Lazy divergences to centres ``U`` (data units), shape ``(n, k)``."""
        return self.X.map_blocks(_transform_chunk, _Portable(div), U,
                                 chunks=(self.X.chunks[0], (U.shape[0],)), dtype=np.float64,
                                 meta=np.empty((0, 0), dtype=np.float64))

    def map_rows(self, fn, div, *args, ncols=None, dtype=np.float64):
        """Lazy ``fn(chunk, div, *args)`` on every chunk, each validated (named by its
        position) and the divergence portable to any worker: a dask array of shape ``(n,)``,
        or ``(n, ncols)`` with ``ncols``. ``fn`` is a module-level function of a validated
        chunk (a per-row evaluation of a fitted model, such as a mixture's log-densities)."""
        if ncols is None:
            return self.X.map_blocks(_rows_chunk, fn, _Portable(div), args, drop_axis=1,
                                     dtype=dtype, meta=np.empty((0,), dtype=dtype))
        return self.X.map_blocks(_rows_chunk, fn, _Portable(div), args,
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
        portable = _Portable(div)
        xd = self.X.to_delayed().ravel()
        wd = (self.w.to_delayed().ravel() if self.w is not None else [None] * self.nblocks)
        client = _active_client()
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
        the results with a tree of ``reduce`` tasks (fan-in ``_SPLIT_EVERY``); computed.

        The pass is one graph layer written out directly (one task per chunk, ``args``
        stored once): a pass is repeated every Lloyd iteration, and building it from
        ``dask.delayed`` calls cost more client time than the chunk tasks' arithmetic.
        """
        dask, _ = _dask()
        from dask.delayed import Delayed
        from dask.highlevelgraph import HighLevelGraph

        refs = [_Portable(a) if _is_divergence(a) else a for a in args]
        extras = [(self.meta[i],) + (tuple(extra(i)) if extra else ())
                  for i in range(self.nblocks)]
        local = self._local_groups()
        if local is not None:
            return self._run_local(local, task, refs, extras, reduce)
        name = f"bregclust-{getattr(args[3], '__name__', 'pass').strip('_')}-{uuid.uuid4().hex}"
        layer = {}
        keyed = []
        for j, a in enumerate(refs):
            if isinstance(a, (np.ndarray, _Portable, E.PreparedCentres, C.Conditioning)):
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
            for j in range(0, len(parts), _SPLIT_EVERY):
                key = (f"{name}-r{level}", j)
                layer[key] = (reduce, *parts[j:j + _SPLIT_EVERY])
                nxt.append(key)
            parts = nxt
        deps = [self.X] if self.w is None else [self.X, self.w]
        graph = HighLevelGraph.from_collections(name, layer, dependencies=deps)
        (out,) = dask.compute(Delayed(parts[0], graph, layer=name))
        return out

    def _local_groups(self):
        """``(client, chunk futures, weight futures, owner of every chunk)`` when the active
        scheduler is a ``distributed`` client holding every chunk in worker memory (a
        persisted array), else None."""
        try:
            import dask
            from distributed import futures_of, get_client
        except ImportError:  # pragma: no cover - distributed is part of the dask extra
            return None
        try:
            client = get_client()
        except ValueError:
            return None
        if dask.base.get_scheduler() != client.get:
            return None
        found = {}
        for f in futures_of(self.X) + (futures_of(self.w) if self.w is not None else []):
            found[f.key] = f
        xkeys = [key[0] for key in self.X.__dask_keys__()]
        wkeys = self.w.__dask_keys__() if self.w is not None else []
        if any(k not in found for k in xkeys) or any(k not in found for k in wkeys):
            return None
        futs = [found[k] for k in xkeys]
        who = client.who_has(futs)
        holders = [sorted(who.get(f.key) or ()) for f in futs]
        if any(not h for h in holders):
            return None
        workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
        owner = _balanced_owners(holders, np.diff(self.starts), workers)
        wfuts = [found[k] for k in wkeys] if wkeys else [None] * self.nblocks
        return client, futs, wfuts, owner

    def _run_local(self, local, fn, refs, extras, reduce):
        """:meth:`run` on persisted chunks: one task per worker runs ``fn`` on the chunks
        that worker holds (a pass is then a few tasks, not one per chunk). Each task reduces
        the complete first-level blocks of the tree among its chunks; the client finishes the
        same tree in the same order, so the result does not depend on where chunks live."""
        client, futs, wfuts, owner = local
        groups = {}
        for i, addr in enumerate(owner):
            groups.setdefault(addr, []).append(i)
        tasks = [client.submit(_group_task, fn, reduce, idx, [futs[i] for i in idx],
                               [wfuts[i] for i in idx], refs, [extras[i] for i in idx],
                               self.nblocks, workers=[addr], allow_other_workers=True,
                               pure=False)
                 for addr, idx in groups.items()]
        blocks, singles = {}, {}
        for out in client.gather(tasks):
            for j, i, r in out:
                if i is None:
                    blocks[j] = r
                else:
                    singles[i] = r
        if self.nblocks == 1:
            return blocks[0] if 0 in blocks else singles[0]
        parts = []
        for j in range(0, -(-self.nblocks // _SPLIT_EVERY)):
            if j in blocks:
                parts.append(blocks[j])
            else:
                members = range(j * _SPLIT_EVERY, min(self.nblocks, (j + 1) * _SPLIT_EVERY))
                parts.append(reduce(*[singles[i] for i in members]))
        while len(parts) > 1:
            parts = [reduce(*parts[j:j + _SPLIT_EVERY]) for j in range(0, len(parts),
                                                                        _SPLIT_EVERY)]
        return parts[0]


def _balanced_owners(holders, rows, workers):
    """The worker that runs each chunk's task: balanced rows per worker, data moved least.

    ``holders[i]``: the workers holding a copy of chunk ``i``; ``workers``: every worker of
    the cluster. Each worker's share is ``sum(rows) / len(workers)``. Chunks with fewer copies
    go first, each to its least-loaded holder still under its share; a chunk whose holders
    are all full goes to the least-loaded worker, which fetches it once (the scheduler then
    counts it as a holder, or moves the chunk there). Where the scheduler put the chunks is
    not always balanced: after ``X.compute()`` every chunk can sit on the one worker that ran
    the final concatenation, and running each chunk where it lives would leave the other
    workers idle. Deterministic for given holders and workers."""
    share = float(np.sum(rows)) / max(len(workers), 1)
    load = {a: 0 for a in workers}
    for h in holders:
        for a in h:
            load.setdefault(a, 0)
    owner = [None] * len(holders)
    order = sorted(range(len(holders)), key=lambda i: (len(holders[i]), i))
    for i in order:
        room = [a for a in holders[i] if load[a] + rows[i] <= share + 0.5 * rows[i]]
        best = min(room or load, key=lambda a: (load[a], a))
        owner[i] = best
        load[best] += int(rows[i])
    return owner


def _group_task(fn, reduce, idx, blocks, wblocks, refs, extras, nchunks):
    """The chunks ``idx`` of one worker (see :meth:`DaskSource._run_local`): a list of
    ``(block, None, reduced result)`` for every first-level block of the tree whose chunks
    are all here, and ``(block, chunk, result)`` for the others."""
    out = []
    by_block = {}
    for pos, i in enumerate(idx):
        by_block.setdefault(i // _SPLIT_EVERY, []).append(pos)
    for j, members in by_block.items():
        res = [fn(blocks[p], wblocks[p], extras[p][0], *refs, *extras[p][1:]) for p in members]
        size = min(_SPLIT_EVERY, nchunks - j * _SPLIT_EVERY)
        if len(members) == size and nchunks > 1:
            out.append((j, None, reduce(*res)))
        elif len(members) == size:  # a single chunk: the graph path does not reduce it
            out.append((j, None, res[0]))
        else:
            out.extend((j, idx[p], r) for p, r in zip(members, res))
    return out




def _active_client():
    """The ``distributed`` client that computes dask graphs by default, or None."""
    try:
        import dask
        from distributed import get_client
    except ImportError:  # pragma: no cover - distributed is part of the dask extra
        return None
    try:
        client = get_client()
    except ValueError:
        return None
    return client if dask.base.get_scheduler() == client.get else None


def _is_divergence(a):
    from .divergences import Divergence

    return isinstance(a, Divergence)
