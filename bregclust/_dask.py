"""Bregman k-means on row-chunked ``dask.array`` input (optional dependency: ``pip install .[dask]``).

Every pass over the data is a dask graph: one task per row chunk runs the public fused kernel
:meth:`~bregclust.divergences.Divergence.assign_and_sum` (the in-memory Lloyd step), and the
per-chunk partial sums ``(S, W, objective)`` are combined by a tree of small tasks. Only the
centres (``k x d``) are sent with a pass; the centre update, the empty-cluster rule and the
convergence test are the in-memory ones of :mod:`bregclust.kmeans`, run on the client. Graphs
are computed with :func:`dask.compute`, so an active ``dask.distributed.Client`` is used when
there is one and the default local scheduler otherwise.
"""

import functools
import hashlib
import sys
import threading
import uuid
import weakref
from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp

from . import _execution as E
from ._execution import register_array_backend
from ._validation import DomainError, check_finite

__all__ = ["is_dask_array", "check_dask_array"]

_SPLIT_EVERY = 16  # fan-in of the tree reduction


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


def _dask():
    try:
        import dask
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - only reachable without dask
        raise ImportError("dask input needs the dask extra: pip install 'bregclust[dask]'.") from exc
    return dask, da


def check_dask_array(X, *, name="X", n_features=None):
    """Check the chunk layout of a 2-D dask array: rows chunked, features in one chunk.

    Parameters
    ----------
    X : dask.array.Array
    name : str, default="X"
    n_features : int, optional
        Expected number of columns (for ``predict`` after ``fit``).

    Returns
    -------
    X : dask.array.Array
        The same array.
    """
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D dask array (n_samples, n_features), got {X.ndim}-D.")
    if any(np.isnan(c) for c in X.chunks[0]) or np.isnan(X.shape[1]):
        raise ValueError(
            f"{name} has unknown chunk sizes; call {name}.compute_chunk_sizes() first."
        )
    if X.numblocks[1] != 1:
        raise ValueError(
            f"{name} is chunked along features ({X.numblocks[1]} column blocks); chunk it by "
            f"rows only, e.g. {name}.rechunk({{1: -1}})."
        )
    if X.shape[0] < 1:
        raise ValueError(f"{name} has no rows.")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(
            f"{name} has {X.shape[1]} features, but the model was fitted with {n_features}."
        )
    return X


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
# object: a Lloyd pass over such a chunk then reads it once (the fused kernel) instead of
# also recomputing phi(x). An entry lives as long as its chunk (a weak reference removes it)
# and holds only phi(x) (n floats), never the chunk. Chunks made afresh by each pass (read
# from disk, converted to float64) simply miss.
_PHI_CACHE = {}


def _prepared(Xb, div):
    """:func:`bregclust._execution.prepare_data` of a chunk, with phi(x) reused when the
    same chunk object comes back (see ``_PHI_CACHE``)."""
    if sp.issparse(Xb):
        return E.prepare_data(div, Xb)
    key = id(Xb)
    hit = _PHI_CACHE.get(key)
    if hit is not None and hit[0]() is Xb and hit[1] is div:
        return Xb, (Xb, hit[2]), None
    data = E.prepare_data(div, Xb)
    Xc, (Xg, phi_x), m = data
    if m is None and Xc is Xb and Xg is Xb:  # nothing but phi(x) to keep
        try:
            ref = weakref.ref(Xb, lambda _, key=key: _PHI_CACHE.pop(key, None))
        except TypeError:  # pragma: no cover - ndarrays take weak references
            return data
        _PHI_CACHE[key] = (ref, div, phi_x)
    return data


def _pass(Xb, wb, U, div):
    """The in-memory Lloyd pass on one validated chunk: ``(labels, mins, S, W)``.

    ``U``: centres, or their :class:`~bregclust._execution.PreparedCentres` made once on the
    client (:func:`_with_parts`), used when the chunk needs no centring (the same parts the
    chunk would compute, without ``k x d`` work per chunk)."""
    w = np.ones(Xb.shape[0]) if wb is None else np.ascontiguousarray(wb, dtype=np.float64)
    data = _prepared(Xb, div)
    if isinstance(U, E.PreparedCentres):
        if data[2] is None:
            return E.assign_and_sum(div, Xb, U.U, w, prepared=data[1], centres=U)
        U = U.U
    U = np.ascontiguousarray(U, dtype=np.float64)
    return E.assign_and_sum(div, Xb, U, w, data=data)


def _assign(Xb, C, div):
    """:meth:`Divergence.assign` of a validated chunk (``C`` as in :func:`_pass`)."""
    data = _prepared(Xb, div)
    if isinstance(C, E.PreparedCentres):
        if data[2] is None:
            return E.assign(div, Xb, C.U, prepared=data[1], centres=C)
        C = C.U
    return E.assign(div, Xb, np.ascontiguousarray(C, dtype=np.float64))


def _with_parts(div, U):
    """Centres with their GEMM parts, computed once for a whole pass (see :func:`_pass`)."""
    return div.prepare_centres(U)


def _as_chunk(Xb):
    """A chunk as float64 C-contiguous ndarray or canonical CSR."""
    if sp.issparse(Xb):
        Xb = sp.csr_matrix(Xb, dtype=np.float64)
        if not Xb.has_canonical_format:
            Xb = Xb.copy()
            Xb.sum_duplicates()
        return Xb
    if type(Xb) is np.ndarray and Xb.dtype == np.float64 and Xb.flags.c_contiguous:
        # the chunk object itself (np.ascontiguousarray returns a new view when the dtype is
        # an equal but distinct descriptor, e.g. unpickled): keeps _PHI_CACHE hits
        return Xb
    return np.ascontiguousarray(Xb, dtype=np.float64)


def _where(meta):
    i, a, b = meta
    return f"chunk {i} (global rows {a}..{b - 1})"


def _check_chunk(Xb, wb, div, meta, name="X"):
    """Finite values and the divergence's domain, with the chunk and the global row named."""
    i, a, _ = meta
    try:
        check_finite(Xb, name="chunk")
    except ValueError:
        data = Xb.tocoo() if sp.issparse(Xb) else None
        if data is not None:
            j = int(np.argmax(~np.isfinite(data.data)))
            r, c, v = int(data.row[j]), int(data.col[j]), data.data[j]
        else:
            r, c = np.unravel_index(int(np.argmax(~np.isfinite(Xb))), Xb.shape)
            v = Xb[r, c]
        kind = "NaN" if np.isnan(v) else "infinity"
        raise ValueError(
            f"{name} {_where(meta)} contains {kind} at global row {a + int(r)} (row {int(r)} of the "
            f"chunk), column {int(c)}. Remove or impute missing values before clustering."
        ) from None
    try:
        div.check_domain(Xb, name="chunk")
    except DomainError as exc:
        r, c, v = _first_outside(Xb, div)
        raise DomainError(
            f"{name} {_where(meta)} leaves the domain of {div.name}: {v:g} at global row "
            f"{a + r} (row {r} of the chunk), column {c}. ({exc})"
        ) from None
    if wb is not None:
        w = np.asarray(wb, dtype=np.float64)
        bad = ~np.isfinite(w) | (w < 0)
        if bad.any():
            r = int(np.argmax(bad))
            raise ValueError(
                f"sample_weight must be finite and non-negative; {_where(meta)} has {w[r]:g} at "
                f"global row {a + r}."
            )


def _first_outside(Xb, div):
    strict = div.domain == "positive"
    if sp.issparse(Xb):
        coo = Xb.tocoo()
        bad = (coo.data <= 0) if strict else (coo.data < 0)
        if bad.any():
            j = int(np.argmax(bad))
            return int(coo.row[j]), int(coo.col[j]), float(coo.data[j])
        dense = Xb.toarray()  # an implicit zero (positive domain)
    else:
        dense = Xb
    bad = (dense <= 0) if strict else (dense < 0)
    r, c = np.unravel_index(int(np.argmax(bad)), bad.shape)
    return int(r), int(c), float(dense[r, c])


def _chunk_stats(Xb, wb, meta, need):
    """The first pass's statistics of a validated chunk: weight sums, positive weights, and
    ``w @ X`` / the non-zero count when ``need = (wx, nnz)`` asks for them (smoothing only)."""
    n = Xb.shape[0]
    w = np.ones(n) if wb is None else np.asarray(wb, dtype=np.float64)
    wsum = float(np.sum(w))
    need_wx, need_nnz = need
    nnz = None
    if need_nnz:
        nnz = int(np.count_nonzero(Xb.data) if sp.issparse(Xb) else np.count_nonzero(Xb))
    return {"wsum": wsum, "chunk_w": {meta[0]: wsum},
            "wx": np.asarray(w @ Xb).ravel() if need_wx else None,
            "npos": n if wb is None else int(np.count_nonzero(w > 0)), "nnz": nnz}


@_one_at_a_time
def _stats_chunk(Xb, wb, div, meta, need=(True, True)):
    """First pass: validation of the chunk and its :func:`_chunk_stats`."""
    div = _div(div)
    Xb = _as_chunk(Xb)
    _check_chunk(Xb, wb, div, meta)
    return _chunk_stats(Xb, wb, meta, need)


def _digest(labels):
    return hashlib.blake2b(np.ascontiguousarray(labels).tobytes(), digest_size=16).digest()


@_one_at_a_time
def _lloyd_chunk(Xb, wb, U, div, meta, check=False, stats=None):
    """One Lloyd step on one chunk: partial centre sums, weights, objective, label digest.

    ``check``: validate the chunk first (a pass over data that no earlier pass validated).
    ``stats``: also the chunk's :func:`_chunk_stats` with this ``need`` (implies ``check``):
    the first pass of a fit from given centres is then also its validation pass."""
    div = _div(div)
    Xb = _as_chunk(Xb)
    if check or stats is not None:
        _check_chunk(Xb, wb, div, meta)
    labels, mins, S, W = _pass(Xb, wb, U, div)
    obj = float(np.sum(mins)) if wb is None else float(np.sum(np.asarray(wb) * mins))
    out = {"S": S, "W": W, "obj": obj, "digest": {meta[0]: _digest(labels)}}
    if stats is not None:
        out.update(_chunk_stats(Xb, wb, meta, stats))
    return out


@_one_at_a_time
def _top_chunk(Xb, wb, U, div, meta, m):
    """The ``m`` rows with the largest ``w_i d(x_i, u_label)`` (ties: lower row first)."""
    div = _div(div)
    Xb = _as_chunk(Xb)
    labels, mins, _, _ = _pass(Xb, wb, U, div)
    w = np.ones(Xb.shape[0]) if wb is None else np.asarray(wb, dtype=np.float64)
    order = np.argsort(-(w * mins), kind="stable")[:m]
    rows = Xb[order]
    rows = rows.toarray() if sp.issparse(rows) else np.array(rows)
    return {"key": -(w * mins)[order], "idx": meta[1] + order, "rows": rows,
            "labels": labels[order], "w": w[order], "mins": mins[order]}


@_one_at_a_time
def _cost_chunk(Xb, wb, C, div):
    """``sum_i w_i min_c d(x_i, c)`` over the finite minima, and the weight at infinity."""
    div = _div(div)
    Xb = _as_chunk(Xb)
    _, mins = _assign(Xb, C, div)
    w = np.ones(Xb.shape[0]) if wb is None else np.asarray(wb, dtype=np.float64)
    inf = ~np.isfinite(mins)
    return {"cost": float(np.sum(w[~inf] * mins[~inf])), "ninf": int(np.count_nonzero(inf & (w > 0)))}


@_one_at_a_time
def _sample_chunk(Xb, wb, C, div, ell, cost, ninf, meta, seed):
    """k-means|| sampling: row ``i`` kept with probability ``min(1, ell w_i d_i / cost)``."""
    div = _div(div)
    Xb = _as_chunk(Xb)
    _, mins = _assign(Xb, C, div)
    w = np.ones(Xb.shape[0]) if wb is None else np.asarray(wb, dtype=np.float64)
    rng = np.random.default_rng(seed)
    if ninf > 0:  # points at infinite divergence first (centres on the domain boundary)
        p = np.where(~np.isfinite(mins) & (w > 0), min(1.0, ell / ninf), 0.0)
    elif cost > 0:
        p = np.minimum(1.0, ell * w * mins / cost)
    else:
        p = np.zeros(Xb.shape[0])
    keep = np.flatnonzero(rng.uniform(size=Xb.shape[0]) < p)
    rows = Xb[keep]
    rows = rows.toarray() if sp.issparse(rows) else np.array(rows)
    return {"rows": rows, "idx": meta[1] + keep, "w": w[keep]}


def _take_chunk(Xb, meta, idx):
    """Dense rows at global indices ``idx`` (all inside this chunk)."""
    rows = _as_chunk(Xb)[idx - meta[1]]
    return rows.toarray() if sp.issparse(rows) else np.array(rows)


def _checked_block(Xb, div, block_info):
    """The divergence and the chunk of a ``map_blocks`` call, the chunk validated (named by its
    position in the array) when dask passes ``block_info``."""
    div = _div(div)
    Xb = _as_chunk(Xb)
    if block_info is not None:
        loc = block_info[0]
        a, b = loc["array-location"][0]
        _check_chunk(Xb, None, div, (loc["chunk-location"][0], a, b))
    return div, Xb


@_one_at_a_time
def _predict_chunk(Xb, U, div, block_info=None):
    div, Xb = _checked_block(Xb, div, block_info)
    # The fused Lloyd kernel, so labels_ equals the labels of the in-memory fit bit for bit.
    return _pass(Xb, None, U, div)[0]


@_one_at_a_time
def _transform_chunk(Xb, U, div, block_info=None):
    div, Xb = _checked_block(Xb, div, block_info)
    return div.pairwise(Xb, U)


# ----------------------------------------------------------------------------- reductions
def _combine(*parts):
    out = {}
    for key in parts[0]:
        vals = [p[key] for p in parts]
        if isinstance(vals[0], dict):
            merged = {}
            for v in vals:
                merged.update(v)
            out[key] = merged
        elif vals[0] is None:
            out[key] = None
        elif isinstance(vals[0], np.ndarray):
            acc = vals[0].copy()
            for v in vals[1:]:
                acc += v
            out[key] = acc
        else:
            out[key] = sum(vals[1:], vals[0])
    return out


def _concat(*parts):
    keys = parts[0].keys()
    return {k: np.concatenate([p[k] for p in parts]) for k in keys}


def _tree(parts, fn):
    """Tree aggregation of delayed partial results (fan-in ``_SPLIT_EVERY``)."""
    dask, _ = _dask()
    while len(parts) > 1:
        parts = [dask.delayed(fn, pure=True)(*parts[i:i + _SPLIT_EVERY])
                 for i in range(0, len(parts), _SPLIT_EVERY)]
    return parts[0]


class _Chunked:
    """A row-chunked dask array (and its weights) seen as a list of delayed blocks."""

    def __init__(self, X, sample_weight=None):
        dask, da = _dask()
        self.X = X
        self.n, self.d = int(X.shape[0]), int(X.shape[1])
        sizes = np.asarray(X.chunks[0], dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(sizes)])
        self.nchunks = len(sizes)
        self.blocks = list(X.to_delayed().ravel())
        self.meta = [(i, int(self.starts[i]), int(self.starts[i + 1])) for i in range(self.nchunks)]
        if sample_weight is None:
            self.w = None
            self.wblocks = [None] * self.nchunks
        else:
            w = sample_weight
            if not is_dask_array(w):
                w = np.asarray(w, dtype=np.float64)
                if w.ndim == 0:
                    w = np.full(self.n, float(w))
            if w.ndim != 1 or w.shape[0] != self.n:
                raise ValueError(
                    f"sample_weight must be 1-D of length n_samples={self.n}, got shape {w.shape}."
                )
            if is_dask_array(w):
                w = w.astype(np.float64).rechunk((X.chunks[0],))
            else:
                w = da.from_array(w, chunks=(X.chunks[0],))
            # Weights are small (n floats): keep them where the data live, sent once per fit.
            self.w = w.persist()
            self.wblocks = list(self.w.to_delayed().ravel())

    def run(self, fn, *args, reduce=_combine, with_meta=True, extra=None):
        """Map ``fn(block, weights, *args[, meta][, *extra(i)])`` over the chunks and reduce
        the results with a tree of ``reduce`` tasks (fan-in ``_SPLIT_EVERY``); computed.

        The pass is one graph layer written out directly (one task per chunk, ``args``
        stored once): a pass is repeated every Lloyd iteration, and building it from
        ``dask.delayed`` calls cost more client time than the chunk tasks' arithmetic.
        """
        dask, _ = _dask()
        from dask.delayed import Delayed
        from dask.highlevelgraph import HighLevelGraph

        from .divergences import Divergence

        refs = [_Portable(a) if isinstance(a, Divergence) else a for a in args]
        extras = [((self.meta[i],) if with_meta else ()) + (tuple(extra(i)) if extra else ())
                  for i in range(self.nchunks)]
        local = self._local_groups()
        if local is not None:
            return self._run_local(local, fn, refs, extras, reduce)
        args = refs
        name = f"bregclust-{fn.__name__.strip('_')}-{uuid.uuid4().hex}"
        layer = {}
        refs = []
        for j, a in enumerate(args):
            if isinstance(a, Divergence):
                a = _Portable(a)
            if isinstance(a, (np.ndarray, _Portable, E.PreparedCentres)):  # sent once
                layer[(name + "-arg", j)] = a
                a = (name + "-arg", j)
            refs.append(a)
        xkeys = [key[0] for key in self.X.__dask_keys__()]
        wkeys = (self.w.__dask_keys__() if self.w is not None else [None] * self.nchunks)
        parts = []
        for i in range(self.nchunks):
            layer[(name, i)] = (fn, xkeys[i], wkeys[i], *refs, *extras[i])
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
        wfuts = [found[k] for k in wkeys] if wkeys else [None] * self.nchunks
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
                               self.nchunks, workers=[addr], allow_other_workers=True,
                               pure=False)
                 for addr, idx in groups.items()]
        blocks, singles = {}, {}
        for out in client.gather(tasks):
            for j, i, r in out:
                if i is None:
                    blocks[j] = r
                else:
                    singles[i] = r
        if self.nchunks == 1:
            return blocks[0] if 0 in blocks else singles[0]
        parts = []
        for j in range(0, -(-self.nchunks // _SPLIT_EVERY)):
            if j in blocks:
                parts.append(blocks[j])
            else:
                members = range(j * _SPLIT_EVERY, min(self.nchunks, (j + 1) * _SPLIT_EVERY))
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
    """The chunks ``idx`` of one worker (see :meth:`_Chunked._run_local`): a list of
    ``(block, None, reduced result)`` for every first-level block of the tree whose chunks
    are all here, and ``(block, chunk, result)`` for the others."""
    out = []
    by_block = {}
    for pos, i in enumerate(idx):
        by_block.setdefault(i // _SPLIT_EVERY, []).append(pos)
    for j, members in by_block.items():
        res = [fn(blocks[p], wblocks[p], *refs, *extras[p]) for p in members]
        size = min(_SPLIT_EVERY, nchunks - j * _SPLIT_EVERY)
        if len(members) == size and nchunks > 1:
            out.append((j, None, reduce(*res)))
        elif len(members) == size:  # a single chunk: the graph path does not reduce it
            out.append((j, None, res[0]))
        else:
            out.extend((j, idx[p], r) for p, r in zip(members, res))
    return out


# ----------------------------------------------------------------------------- the fit
def dask_fit(est, X, sample_weight=None):
    """:meth:`BregmanKMeans.fit` for a dask array (see :class:`~bregclust.BregmanKMeans`).

    Parameters
    ----------
    est : BregmanKMeans
    X : dask.array.Array of shape (n_samples, n_features)
    sample_weight : array-like or dask array of shape (n_samples,), optional

    Returns
    -------
    est : BregmanKMeans
    """
    import numbers

    from sklearn.utils import check_random_state

    from ._validation import check_n_clusters, check_scalar, check_smoothing
    from .kmeans import _push_inside

    div = est._get_divergence()
    X = check_dask_array(X)
    div.check_n_features(int(X.shape[1]))
    data = _Chunked(X, sample_weight)
    k = check_n_clusters(est.n_clusters, data.n)
    check_scalar(est.max_iter, "max_iter", kind=numbers.Integral, lo=1)
    check_scalar(est.tol, "tol", lo=0.0)
    check_scalar(est.verbose, "verbose", kind=numbers.Integral, lo=0)
    init, init_is_array = est._resolve_init(k, data.d, dask_input=True)
    n_init = est._resolve_n_init(init_is_array)
    rng = check_random_state(est.random_state)

    # First pass: validation of every chunk, the weights and (for smoothing) w @ X. From
    # given centres it is also the first Lloyd pass (the assignment does not depend on the
    # smoothing): one pass over the data fewer.
    s = check_smoothing(est.smoothing)
    need = ((s == "auto" and div.domain != "real") or (s != "auto" and s > 0),
            s == "auto" and div.domain != "real")
    if init_is_array:
        st = first = data.run(_lloyd_chunk, _with_parts(div, init), div, extra=lambda i: (True, need))
    else:
        st, first = data.run(_stats_chunk, div, extra=lambda i: (need,)), None
    data.chunk_w = np.array([st["chunk_w"][i] for i in range(data.nchunks)])
    if st["wsum"] <= 0:
        raise ValueError("sample_weight sums to zero; at least one sample needs positive weight.")
    beta = est._resolve_smoothing(div, None, k, None,
                                  counts=(data.n, data.d, st["nnz"], st["wsum"]))
    z = _push_inside(st["wx"] / st["wsum"], div) if beta > 0 else None

    best = None
    for run in range(n_init):
        if init_is_array:
            C0 = init
        elif init == "random":
            C0 = _random_init(data, k, rng, beta, z, st["npos"])
        else:
            C0 = _kmeans_parallel(data, k, div, rng, beta, z, est.oversampling_factor,
                                  est.init_rounds)
        res = _dask_lloyd(data, C0, div, beta, z, est.max_iter, est.tol, est.verbose, run,
                          first=first)
        if est.verbose:
            print(f"BregmanKMeans restart {run}: objective {res[2][-1]:.6g}, {res[1]} iterations")
        if best is None or res[2][-1] < best[2][-1]:
            best = res
    centers, n_iter, history, inertia = best
    est.divergence_ = div
    est.smoothing_ = beta
    est.cluster_centers_ = centers
    est.n_features_in_ = data.d
    est.labels_ = dask_predict(est, X)
    est.inertia_ = float(inertia)
    est.n_iter_ = int(n_iter)
    est.objective_history_ = [float(h) for h in history]
    return est


def _dask_lloyd(data, centers, div, beta, z, max_iter, tol, verbose, run, first=None):
    """:func:`bregclust.kmeans._lloyd` with one dask pass per iteration.

    ``first``: the result of the first pass from ``centers`` when the caller has it.
    Returns ``(centers, n_iter, history, inertia)``.
    """
    from .kmeans import _lloyd_converged, _objective_from, _update_from_sums, _warn_max_iter

    r = first if first is not None else data.run(_lloyd_chunk, _with_parts(div, centers), div)
    history = [_objective_from(r["obj"], centers, div, beta, z)]
    n_iter = 0
    converged = False
    for it in range(max_iter):
        prev = centers
        provider = _CandidateProvider(data, prev, div)
        centers = _update_from_sums(r["S"].copy(), r["W"].copy(), provider, div, beta, z, run,
                                    previous=prev)
        new = data.run(_lloyd_chunk, _with_parts(div, centers), div)
        history.append(_objective_from(new["obj"], centers, div, beta, z))
        n_iter = it + 1
        changed = new["digest"] != r["digest"]
        r = new
        if _lloyd_converged(history, changed, tol, verbose, n_iter):
            converged = True
            break
    if not converged:
        _warn_max_iter(run, max_iter, stacklevel=4)
    return centers, n_iter, history, float(r["obj"])


class _CandidateProvider:
    """Rows in decreasing ``w_i d(x_i, u_label)`` order (ties by row), fetched lazily.

    The in-memory empty-cluster rule walks the whole data set in this order; here each chunk
    sends its top ``m`` rows, which contain the global top ``m``; ``m`` doubles when the walk
    goes past them.
    """

    def __init__(self, data, centers, div):
        self.data, self.centers, self.div = data, centers, div

    def __iter__(self):
        m = 16
        done = 0
        while done < self.data.n:
            top = self.data.run(_top_chunk, self.centers, self.div, reduce=_concat,
                                extra=lambda i, m=m: (m,))
            order = np.lexsort((top["idx"], top["key"]))[:m]
            for j in order[done:]:
                yield (top["rows"][j:j + 1], int(top["labels"][j]), float(top["w"][j]),
                       float(top["mins"][j]))
            done = min(m, self.data.n)
            m *= 4


def _random_init(data, k, rng, beta, z, npos):
    """``init="random"``: ``k`` distinct rows of positive weight (same draw as in memory)."""
    from .kmeans import _smoothed

    if npos < k:
        raise ValueError(
            f"init='random' needs at least n_clusters={k} samples with positive weight, got {npos}."
        )
    if data.w is None:
        ids = rng.choice(data.n, size=k, replace=False)
        w = np.ones(k)
    else:
        wall = np.asarray(data.w.compute())
        ids = rng.choice(np.flatnonzero(wall > 0), size=k, replace=False)
        w = wall[ids]
    return _smoothed(_take(data, ids), w, beta, z)


def _take(data, ids):
    """Dense rows ``ids`` (global indices, any order) of the chunked data."""
    dask, _ = _dask()
    ids = np.asarray(ids, dtype=np.int64)
    chunk = np.searchsorted(data.starts, ids, side="right") - 1
    parts, where = [], []
    for c in np.unique(chunk):
        sel = np.flatnonzero(chunk == c)
        parts.append(dask.delayed(_take_chunk, pure=True)(data.blocks[c], data.meta[c], ids[sel]))
        where.append(sel)
    rows = dask.compute(*parts)
    out = np.empty((ids.size, data.d))
    for sel, R in zip(where, rows):
        out[sel] = R
    return out


def _kmeans_parallel(data, k, div, rng, beta, z, factor, rounds):
    """k-means|| (Bahmani et al., 2012) with D-sampling by ``div``, then weighted k-means++.

    Candidates are smoothed like k-means++ seeds (so kl/Itakura-Saito centres stay in the
    domain interior), weighted by the sample weight of the points closest to them, and reduced
    to ``k`` centres by :func:`~bregclust.bregman_kmeans_plusplus` with those weights.
    """
    from .kmeans import _smoothed, bregman_kmeans_plusplus

    ell = float(factor) * k
    # First candidate: one row drawn with probability proportional to its weight.
    if data.w is None:
        first = int(rng.randint(data.n))
        wfirst = np.ones(1)
    else:
        sums = data.chunk_w
        c = int(rng.choice(data.nchunks, p=sums / sums.sum()))
        wc = np.asarray(data.wblocks[c].compute())
        first = data.meta[c][1] + int(rng.choice(wc.size, p=wc / wc.sum()))
        wfirst = wc[[first - data.meta[c][1]]]
    C = _smoothed(_take(data, [first]), wfirst, beta, z)
    seen = {first}
    for _ in range(int(rounds)):
        parts = _with_parts(div, C)
        cost = data.run(_cost_chunk, parts, div, with_meta=False)
        if cost["cost"] <= 0 and cost["ninf"] == 0:
            break
        seeds = rng.randint(0, 2**31 - 1, size=data.nchunks)
        new = data.run(_sample_chunk, parts, div, ell, cost["cost"], cost["ninf"], reduce=_concat,
                       extra=lambda i: (int(seeds[i]),))
        keep = np.array([i not in seen for i in new["idx"].tolist()], dtype=bool)
        if keep.any():
            seen.update(new["idx"][keep].tolist())
            C = np.vstack([C, _smoothed(new["rows"][keep], new["w"][keep], beta, z)])
    if C.shape[0] < k:  # too few candidates (tiny or degenerate data): add random rows
        extra = _random_init(data, k, rng, beta, z, data.n)
        C = np.vstack([C, extra[: k - C.shape[0]]])
    cand_w = data.run(_lloyd_chunk, _with_parts(div, C), div)["W"]
    if cand_w.sum() <= 0:
        cand_w = np.ones(C.shape[0])
    centers, _ = bregman_kmeans_plusplus(C, k, div, random_state=rng, sample_weight=cand_w)
    return centers


def dask_predict(est, X):
    """Lazy labels (a 1-D dask array of int64) for a row-chunked dask array."""
    X = check_dask_array(X, n_features=est.n_features_in_)
    return X.map_blocks(_predict_chunk, est.cluster_centers_, _Portable(est.divergence_), drop_axis=1,
                        dtype=np.int64, meta=np.empty((0,), dtype=np.int64))


def dask_transform(est, X):
    """Lazy divergences to every centre (a dask array of shape (n_samples, n_clusters))."""
    X = check_dask_array(X, n_features=est.n_features_in_)
    k = est.cluster_centers_.shape[0]
    return X.map_blocks(_transform_chunk, est.cluster_centers_, _Portable(est.divergence_),
                        chunks=(X.chunks[0], (k,)), dtype=np.float64,
                        meta=np.empty((0, 0), dtype=np.float64))


def dask_score(est, X, sample_weight=None):
    """Opposite of the weighted sum of divergences to the nearest centre (computed)."""
    X = check_dask_array(X, n_features=est.n_features_in_)
    data = _Chunked(X, sample_weight)
    r = data.run(_lloyd_chunk, est.cluster_centers_, est.divergence_, extra=lambda i: (True,))
    return -float(r["obj"])


# ----------------------------------------------------------------------------- multi-task (MBC)
@_one_at_a_time
def _mbc_chunk(Xb, wb, U, div, meta, k):
    """One MBC assignment pass on one chunk: the statistics of :class:`bregclust.mbc._Task`.

    The labels are those of the in-memory task (the same kernel as its ``assign``); the sums
    are ``counts``, ``S`` and ``Phi`` (sums of ``phi(x)``), or ``PN`` (positive and negative
    masses) for l1_subgradient, and ``obj`` is ``sum_i d(x_i, u_label)``.
    """
    div = _div(div)
    Xb = _as_chunk(Xb)
    prep = div.prepare(Xb)
    labels, mins = _mbc_labels(Xb, U, div, prep)
    out = {"counts": np.bincount(labels, minlength=k).astype(np.float64),
           "obj": float(np.sum(mins)), "digest": {meta[0]: _digest(labels)}}
    M = sp.csr_matrix((np.ones(labels.size), (labels, np.arange(labels.size))),
                      shape=(k, labels.size))
    if div.differentiable:
        S = M @ Xb
        out["S"] = S.toarray() if sp.issparse(S) else np.asarray(S)
        out["Phi"] = np.asarray(M @ prep[1], dtype=np.float64)
    else:
        PN = M @ prep[0]
        out["PN"] = PN.toarray() if sp.issparse(PN) else np.asarray(PN)
    return out


def _mbc_labels(Xb, U, div, prep=None):
    """Labels and minima of the in-memory MBC task's ``assign`` (one kernel per model)."""
    if prep is None:
        prep = div.prepare(Xb)
    if div.differentiable:
        labels, mins, _, _ = div.assign_and_sum(Xb, U, prepared=prep)
        return labels, mins
    return div.assign(Xb, U, prepared=prep)


@_one_at_a_time
def _mbc_predict_chunk(Xb, U, div, block_info=None):
    div, Xb = _checked_block(Xb, div, block_info)
    return _mbc_labels(Xb, U, div)[0]


class _LabelToken(str):
    """The labels of a dask task, stood in for by a digest of every chunk's labels.

    :func:`bregclust.mbc._mbc_run` only compares labels (``np.array_equal``) and hands them
    back to ``set_labels``; the labels themselves stay on the workers.
    """


class DaskTask:
    """A dask-backed :class:`bregclust.mbc._Task`: the same statistics and centre cache.

    Every :meth:`assign` is one pass over the row chunks (:func:`_mbc_chunk`, tree-reduced);
    the statistics it returns are kept for :meth:`set_labels`, so the MBC loop (transport
    plans, centre step, objective) runs on the client unchanged.

    Parameters
    ----------
    data : _Chunked
    k : int
    beta : float
    z : ndarray or None
    div : Divergence
    """

    def __init__(self, data, k, beta, z, div):
        from .mbc import _init_task_state

        self.data = data
        self.X = data.X
        _init_task_state(self, data.n, k, beta, z, div)
        self.centres = None
        self.inertia = None

    def set_centers(self, U, div):
        """Centres and their cached GEMM parts (as the in-memory task)."""
        self.U = np.ascontiguousarray(U, dtype=np.float64)
        self.model.set_centers(self, div)

    def assign(self, div):
        """One pass over the chunks; returns a label token (digest of the chunks' labels)."""
        r = self.data.run(_mbc_chunk, self.U, div, extra=lambda i: (self.k,))
        token = _LabelToken("".join(r["digest"][i].hex() for i in range(self.data.nchunks)))
        self.pending = (token, r)
        self.inertia = r["obj"]  # of the current centres, whether or not the labels changed
        return token

    def set_labels(self, labels, div):
        """Statistics of the labels returned by the last :meth:`assign`."""
        if self.pending is None or self.pending[0] != labels:
            raise RuntimeError("a dask task's labels come from its last assign() pass.")
        r = self.pending[1]
        self.labels = labels
        self.counts = r["counts"]
        if div.differentiable:
            S, Phi = r["S"], r["Phi"]
            if self.beta > 0:
                S = S + self.beta * self.z
                Phi = Phi + self.beta * self.phi_z
            self.S, self.Phi = S, np.asarray(Phi, dtype=np.float64)
        else:
            PN = r["PN"]
            if self.beta > 0:
                PN = PN + self.beta * self.z_pn
            self.PN = PN
            d = self.U.shape[1]
            self.S = PN[:, :d] - PN[:, d:]

    @property
    def weights(self):
        """Cluster masses including the smoothing pseudo-point."""
        return self.counts + self.beta

    def data_term(self, div):
        """``(1/n) [sum_i d(x_i, u_h(i)) + beta sum_z d(z, u_z)]`` from the statistics."""
        return self.model.data_term(self, div)


def _mbc_tasks(Xs):
    """Row-chunked dask tasks (in-memory tasks are wrapped as one-chunk dask arrays)."""
    _, da = _dask()
    if Xs is None or isinstance(Xs, (str, dict)) or not hasattr(Xs, "__len__"):
        raise TypeError("Xs must be a list of 2-D arrays (one per task), e.g. [X1, X2].")
    Xs = list(Xs)
    if not Xs:
        raise ValueError("Xs is empty; pass at least one task (a list of 2-D arrays).")
    out = []
    for t, X in enumerate(Xs):
        if not is_dask_array(X):
            X = X if sp.issparse(X) else np.asarray(X)
            X = da.from_array(X, chunks=(max(1, X.shape[0]), -1) if X.ndim == 2 else -1,
                              asarray=not sp.issparse(X))
        out.append(check_dask_array(X, name=f"Xs[{t}]"))
    d = out[0].shape[1]
    for t, X in enumerate(out):
        if X.shape[1] != d:
            raise ValueError(f"every task must have the same number of features; task 0 has "
                             f"{d}, task {t} has {X.shape[1]}.")
    return out


def dask_mbc_fit(est, Xs, trace=False):
    """:meth:`MultitaskBregmanClustering.fit` when a task is a dask array.

    Per-task assignment passes run on the dask cluster (one graph per task and sweep); the
    transport plans and the coupled centre step (``K x K`` and ``K x d``) run on the client.
    ``init="k-means++"`` (the default) and ``"k-means||"`` seed each task by k-means||;
    ``"random"`` and explicit centres work as in memory; label arrays are refused.

    Parameters
    ----------
    est : MultitaskBregmanClustering
    Xs : list of dask.array.Array
    trace : bool, default=False

    Returns
    -------
    est : MultitaskBregmanClustering
    """
    from sklearn.utils import check_random_state

    from ._multitask import check_n_clusters_per_task, parse_init, resolve_n_init
    from .kmeans import _auto_smoothing_from_counts, _push_inside
    from .mbc import _mbc_run, _pair_costs, _w_step
    from .metrics import partition_emd

    est._validate_params()
    from .divergences import get_divergence

    div = get_divergence(est.divergence, **(est.divergence_params or {}))
    Xs = _mbc_tasks(Xs)
    T = len(Xs)
    K = check_n_clusters_per_task(est.n_clusters, [int(X.shape[0]) for X in Xs])
    if est.marginals != "uniform":
        raise ValueError("marginals='empirical' needs in-memory tasks (its assignment step "
                         "reads every label); use marginals='uniform' with dask tasks.")
    init = est.init
    if isinstance(init, str) and init == "k-means||":
        init = "k-means++"
    elif not isinstance(init, str) and hasattr(init, "__len__") and not hasattr(init, "ndim"):
        init = ["k-means++" if isinstance(e, str) and e == "k-means||" else e for e in init]
    parsed = parse_init(init, Xs, K)
    for t, (kind, _) in enumerate(parsed):
        if kind == "labels":
            raise ValueError(f"init labels for task {t} need in-memory tasks; give dask tasks "
                             "initial centres, 'k-means++' (k-means|| on dask) or 'random'.")
    n_init = resolve_n_init(est.n_init, parsed)
    rng = check_random_state(est.random_state)

    tasks, betas = [], []
    for X, k in zip(Xs, K):
        data = _Chunked(X)
        st = data.run(_stats_chunk, div)  # validation of every chunk, w @ X
        data.chunk_w = np.array([st["chunk_w"][i] for i in range(data.nchunks)])
        beta = (_auto_smoothing_from_counts(div, data.n, data.d, st["nnz"], st["wsum"], k)
                if isinstance(est.smoothing, str) else float(est.smoothing))
        z = _push_inside(st["wx"] / st["wsum"], div) if beta > 0 else None
        betas.append(beta)
        tasks.append(DaskTask(data, k, beta, z, div))
    auto = isinstance(est.lam, str)  # lam="auto": chosen on the first restart, as in memory
    lam = (0.0 if T == 1 else None) if auto else float(est.lam)
    coupled = T > 1 and (auto or lam > 0)
    if div.right_domain == "positive" and min(betas) == 0.0 and coupled:
        raise ValueError(
            f"{div.name} with lam > 0 needs smoothing > 0: the relation step compares "
            "centres with each other, and a centre with a zero coordinate has an infinite "
            "divergence. Use smoothing='auto' or a positive value."
        )
    if coupled and not div.differentiable and est.centroid_solver != "exact":
        raise ValueError(f"centroid_solver='geodesic' needs a differentiable divergence; "
                         f"{div.name} is not differentiable.")

    best, best_run = None, None
    ratios, objectives = {}, {}
    for run in range(int(n_init)):
        U0 = []
        for t, (tk, (kind, val)) in enumerate(zip(tasks, parsed)):
            if kind == "centers":
                C = val
            elif kind == "random":
                C = _random_init(tk.data, tk.k, rng, tk.beta, tk.z, tk.n)
            else:
                C = _kmeans_parallel(tk.data, tk.k, div, rng, tk.beta, tk.z, 2.0, 5)
            div.check_domain(C, name=f"initial centres of task {t}", side="right")
            U0.append(np.array(C, dtype=np.float64))
        res = None
        if lam is None:
            lam, res, ratios, objectives = _dask_auto_lam(est, div, tasks, U0, run, trace)
        coupled = T > 1 and lam > 0
        if res is not None:
            pass
        elif coupled:
            res = _mbc_run(div, tasks, U0, lam, est.marginals, est.centroid_solver,
                           est.max_iter, est.tol, est.verbose, run, trace=trace)
        else:
            res = _independent_dask_run(div, tasks, U0, est.max_iter, est.tol, est.verbose, run)
        if est.verbose:
            print(f"MultitaskBregmanClustering restart {run}: objective "
                  f"{res['objective']:.6g}, {res['n_iter']} iterations")
        if best is None or res["objective"] < best["objective"]:
            best, best_run = res, run
    # task statistics of the best final centres (the last run's state is not theirs when
    # another restart won, without coupling, or after the candidate runs of lam="auto")
    if not coupled or best_run != n_init - 1 or auto:
        for tk, U in zip(tasks, best["centers"]):
            tk.set_centers(U, div)
            tk.set_labels(tk.assign(div), div)
    est.divergence_ = div
    est.lam_ = float(lam)
    est.lam_ratios_ = dict(ratios)
    est.lam_objectives_ = dict(objectives)
    est.smoothing_ = list(betas)
    est.n_clusters_ = list(K)
    est.n_tasks_ = T
    est.n_features_in_ = int(Xs[0].shape[1])
    est.cluster_centers_ = [np.array(u, dtype=np.float64) for u in best["centers"]]
    est.labels_ = [_mbc_lazy_labels(X, U, div) for X, U in zip(Xs, est.cluster_centers_)]
    est.objective_history_ = np.array(best["history"], dtype=np.float64).reshape(-1)
    est.n_iter_ = int(best["n_iter"])
    est.objective_ = float(best["objective"])
    est.block_history_ = list(best["blocks"])
    D = _pair_costs(div, tasks)
    est.relations_ = best["relations"] if coupled else _w_step(tasks, D, est.marginals, "final")
    est.task_divergences_ = np.zeros((T, T))
    for (t, s) in D:
        est.task_divergences_[t, s] = partition_emd(
            tasks[t].U, tasks[t].counts / tasks[t].n, tasks[s].U, tasks[s].counts / tasks[s].n,
            div)
    est.inertia_ = [float(tk.inertia) for tk in tasks]
    return est


def _dask_auto_lam(est, div, tasks, U0, run, trace):
    """``lam="auto"`` for dask tasks: :func:`bregclust.mbc.select_lam` on the IND and MBC runs
    from the starts ``U0`` (see ``MultitaskBregmanClustering._auto_lam``).

    Returns ``(lam, result, ratios, objectives)``; ``result`` is the chosen value's run.
    """
    from .mbc import AUTO_LAM_FRACTION, AUTO_LAM_GRID, _mbc_run, _partition_objective, select_lam
    from .metrics import partition_emd

    runs = {}

    def record(lam, call):
        res = call()
        # d_M between the fitted mixtures: cluster proportions from one assignment pass of
        # every task to the run's final centres (the labels stay on the workers)
        for tk, U in zip(tasks, res["centers"]):
            tk.set_centers(U, div)
            tk.set_labels(tk.assign(div), div)
        props = [tk.counts / tk.n for tk in tasks]
        T = len(tasks)
        dm = float(np.mean([partition_emd(res["centers"][t], props[t], res["centers"][s],
                                          props[s], div)
                            for t in range(T) for s in range(T) if s != t]))
        runs[lam] = dict(res, centers=[np.array(v) for v in res["centers"]])
        return runs[lam], dm, _partition_objective(div, tasks, runs[lam]["centers"])

    _, d_ind, obj_ind = record(0.0, lambda: _independent_dask_run(
        div, tasks, U0, est.max_iter, est.tol, est.verbose, run))
    lam, _, ratios, objectives = select_lam(lambda v: record(v, lambda: _mbc_run(
        div, tasks, U0, v, est.marginals, est.centroid_solver, est.max_iter, est.tol,
        est.verbose, run, trace=trace)), d_ind, obj_ind, AUTO_LAM_GRID, AUTO_LAM_FRACTION)
    return lam, runs[lam], ratios, objectives


def _independent_dask_run(div, tasks, U0, max_iter, tol, verbose, run):
    """``lam = 0`` or one task: :class:`~bregclust.BregmanKMeans`'s dask loop on every task."""
    res = [_dask_lloyd(tk.data, np.array(U0[t], dtype=np.float64, copy=True), div, tk.beta,
                       tk.z, max_iter, tol, verbose, run) for t, tk in enumerate(tasks)]
    length = max(len(r[2]) for r in res)
    history = [sum(r[2][min(i, len(r[2]) - 1)] / tk.n for r, tk in zip(res, tasks))
               for i in range(length)]
    return dict(labels=None, centers=[r[0] for r in res], relations={},
                n_iter=max(r[1] for r in res), history=history, blocks=[],
                objective=history[-1])


def _mbc_lazy_labels(X, U, div):
    return X.map_blocks(_mbc_predict_chunk, U, _Portable(div), drop_axis=1, dtype=np.int64,
                        meta=np.empty((0,), dtype=np.int64))


def dask_mbc_predict(est, X, task):
    """Lazy labels of task ``task``'s centres for a row-chunked dask array."""
    X = check_dask_array(X, n_features=est.n_features_in_)
    return _mbc_lazy_labels(X, est.cluster_centers_[task], est.divergence_)


def dask_mbc_transform(est, X, task):
    """Lazy divergences to task ``task``'s centres (shape (n_samples, K_t))."""
    X = check_dask_array(X, n_features=est.n_features_in_)
    U = est.cluster_centers_[task]
    return X.map_blocks(_transform_chunk, U, _Portable(est.divergence_),
                        chunks=(X.chunks[0], (U.shape[0],)), dtype=np.float64,
                        meta=np.empty((0, 0), dtype=np.float64))


# The estimators reach this module through the array-backend registry (no import of it from
# kmeans.py / mbc.py, which this module builds on).
register_array_backend(is_dask_array, SimpleNamespace(
    kmeans_fit=dask_fit, kmeans_predict=dask_predict, kmeans_transform=dask_transform,
    kmeans_score=dask_score, mbc_fit=dask_mbc_fit, mbc_predict=dask_mbc_predict,
    mbc_transform=dask_mbc_transform))
