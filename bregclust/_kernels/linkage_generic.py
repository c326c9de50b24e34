"""Muellner's generic agglomeration algorithm on cluster statistics (arXiv:1109.2378, Fig. 3),
with exact merge costs: every model of :mod:`.agglomerative` that is not reducible (kl,
Itakura-Saito, the Gaussians, l1, custom generators), and the shared pieces of the pruned driver
(:mod:`.linkage_pruned`): the indexed heap and the candidate lists.

The kernels take the model ``kind`` and the generator ``(gcode, fn)`` as run-time arguments
(see :mod:`.agglomerative`), so one compilation serves every model. ``parallel=True`` is used
by one loop, :func:`_par_blocks`, which runs the two tasks whose iterations are independent and
costly - the merge costs of one cluster to a range of slots, and the initial candidate lists;
everything else is serial.

The block of those tasks, :func:`_block`, is called through a function pointer (see
:func:`pointers`): numba links the code of every callee into each caller's library and
optimises and emits it again there, and a parallel loop adds three libraries of its own, so the
merge-cost code called by the driver and by its parallel loop would be compiled once in each.
Compiled once as a C callback of an explicit signature (numba's ``cfunc``, cached on disk like
every kernel) and passed to the driver as a first-class function, it is compiled once.
"""

import numpy as np
from numba import config, njit, prange, typeof, types

from .agglomerative import (
    GAUSS_FULL,
    NRT_FREE_INLINE,
    NRT_FREE_INNER,
    NRT_FREE_INNER_PARALLEL,
    NRT_FREE_JIT,
    cost,
    keep,
    merge,
)
from .generators import compiled_pointer


# ---------------------------------------------------------------------------- indexed binary heap
# Helpers here are few and written out where they are used: every compiled function costs a
# library of its own, recompiled in every kernel that calls it.
@njit(**NRT_FREE_INNER)
def _sift_down(heap, where, key, p, size):
    """Move ``heap[p]`` down to its place (order: ``key``, then slot)."""
    x = heap[p]
    while True:
        c = 2 * p + 1
        if c >= size:
            break
        h1 = heap[c + 1] if c + 1 < size else -1
        if h1 >= 0 and (key[h1] < key[heap[c]] or (key[h1] == key[heap[c]] and h1 < heap[c])):
            c += 1
        y = heap[c]
        if key[y] < key[x] or (key[y] == key[x] and y < x):
            heap[p] = y
            where[y] = p
            p = c
        else:
            break
    heap[p] = x
    where[x] = p


@njit(**NRT_FREE_INNER)
def _heap_update(heap, where, key, slot, size):
    """Restore the heap order after ``key[slot]`` changed (sift up, then down)."""
    p = where[slot]
    x = heap[p]
    while p > 0:
        q = (p - 1) >> 1
        y = heap[q]
        if key[x] < key[y] or (key[x] == key[y] and x < y):
            heap[p] = y
            where[y] = p
            p = q
        else:
            break
    heap[p] = x
    where[x] = p
    _sift_down(heap, where, key, where[slot], size)


# ---------------------------------------------------------------------------- candidate lists
# Each active slot x keeps up to K candidates y > x with their exact costs, sorted by
# (cost, slot), and a threshold ctau[x]: every active y > x missing from the list costs at least
# ctau[x]. A refresh then reads the list instead of rescanning every slot above x (the list is
# certified while its first cost is < ctau[x]); the costs are the same numbers a rescan would
# compute (same function, same arguments, same statistics), so the merges are unchanged.
# With the pruning bounds an entry may be *pending*: a lower bound of the cost to a slot
# (stored as slot ``-y - 1``, so the slot of an entry ``e`` is ``max(e, -e - 1)``), evaluated
# exactly only when it reaches the head of the list
# (:func:`.linkage_pruned._cand_resolve`). A head that is an exact cost is then the least (cost, slot) of the
# list, so the list certifies the same candidate as before.
# Entries are dropped lazily: each entry stores the generation ``gen[y]`` of its slot at
# insertion, a merge gives the surviving slot a new generation and the removed one ``-1``, and
# an entry whose generation differs is ignored (removed when it reaches the head or when a full
# list needs room). A merge therefore costs nothing per list, which makes long lists cheap:
# a list certifies more refreshes before its slot must be rescanned. The lists are the tuple
# ``cand = (cc, ci, cg, cn, ctau, gen)``: values, entries, generations (n, K), lengths,
# thresholds (n,) and the generation of every slot (n,).
K_CAND = 256  # with the pruning bounds (an entry costs a bound; a rescan ~n bounds)
K_CAND_EXACT = 64  # exact costs only (each list build inserts ~n exact costs)
# Integer constants that a kernel passes to another kernel are numpy integers: numba types a
# Python int constant as a literal, and every literal value would compile its own
# specialisation of the callee.
_ZERO, _ONE = np.int64(0), np.int64(1)
# status codes returned by generic_linkage
OK, NAN_COST = 0, 1
# counters of generic_linkage (``stats``): refreshes that rescanned the slots above, refreshes
# served by the list, list builds that fell back to exact costs (pruned driver), pairs
# bounded in the initial scan / in rescans / against new clusters, exact costs evaluated after
# the initial scan, level-2 refinements of level-1 bounds
(ST_RESCAN, ST_LISTHIT, ST_FULL, ST_B_INIT, ST_B_RESCAN, ST_B_MERGE, ST_EXACT,
 ST_REFINE) = range(8)
N_STATS = 8
# Parallel regions are entered only for enough work (a region wakes every thread of the pool,
# which costs far more than a few costs when the cores are shared); smaller batches run serially.
PAR_REFINE = np.int64(128)  # level-2 refinements or exact costs per region


@njit(**NRT_FREE_INNER)
def _slot(e):
    """The slot of a list entry ``e`` (``y`` for an exact cost, ``-y - 1`` for a bound):
    ``max(e, -e - 1)`` by a comparison (numba's builtin ``max`` compiles its generic
    implementation)."""
    return e if e >= 0 else -e - 1


@njit(**NRT_FREE_INNER)
def _cand_compact(cand, x):
    """Drop the entries of the list of ``x`` whose slot changed since they were stored."""
    cc, ci, cg, cn, ctau, gen = cand
    r = 0
    for p in range(cn[x]):
        if gen[_slot(ci[x, p])] == cg[x, p]:
            if r != p:
                cc[x, r] = cc[x, p]
                ci[x, r] = ci[x, p]
                cg[x, r] = cg[x, p]
            r += 1
    cn[x] = r


@njit(**NRT_FREE_INNER)
def _cand_insert(cand, x, c, y):
    """Insert ``(c, y)`` into the candidate list of ``x``, sorted by (value, slot); ``y < 0``
    marks a pending entry (``c`` a lower bound of the cost to slot ``-y - 1``). A full list whose
    last entry is live rejects an entry not below it (whose value then bounds the slots left
    out, ``ctau``); otherwise it drops its dead entries and, if still full, evicts its last
    entry."""
    cc, ci, cg, cn, ctau, gen = cand
    K = cc.shape[1]
    s = _slot(y)
    if cn[x] == K:
        if gen[_slot(ci[x, K - 1])] == cg[x, K - 1] and not (
                c < cc[x, K - 1] or (c == cc[x, K - 1] and s < _slot(ci[x, K - 1]))):
            if c < ctau[x]:
                ctau[x] = c
            return
        _cand_compact(cand, x)
    m = cn[x]
    if m == K:  # no dead entries: evict the last one
        if cc[x, K - 1] < ctau[x]:
            ctau[x] = cc[x, K - 1]
        m = K - 1
    p = m
    while p > 0 and (c < cc[x, p - 1] or (c == cc[x, p - 1] and s < _slot(ci[x, p - 1]))):
        cc[x, p] = cc[x, p - 1]
        ci[x, p] = ci[x, p - 1]
        cg[x, p] = cg[x, p - 1]
        p -= 1
    cc[x, p] = c
    ci[x, p] = y
    cg[x, p] = gen[s]
    cn[x] = m + 1


@njit(**NRT_FREE_INNER)
def _certified(x, cand):
    """True when the head of the list of ``x`` is an exact cost below ``ctau[x]``."""
    cc, ci, cg, cn, ctau, gen = cand
    if cn[x] > 0 and gen[_slot(ci[x, 0])] != cg[x, 0]:  # dead head
        _cand_compact(cand, x)
    return cn[x] > 0 and ci[x, 0] >= 0 and cc[x, 0] < ctau[x]


@njit(**NRT_FREE_INNER)
def _cand_build(x, act, lo, na, row, cand):
    """Candidate list of ``x`` from the costs ``row[t]`` to the slots ``act[t]``, ``lo <= t < na``
    (ascending slots). Returns the status (NaN costs are refused)."""
    cc, ci, cg, cn, ctau, gen = cand
    cn[x] = 0
    ctau[x] = np.inf
    for t in range(lo, na):
        c = row[t]
        if c != c:
            return NAN_COST
        _cand_insert(cand, x, c, act[t])
    return OK


# tasks of the parallel pass (:func:`_par_blocks`)
COSTS, SCAN = np.int64(0), np.int64(1)


def _block(task, kind, b, act, lo, na, q, nb, st, fc, gcode, fn, row, cand, status, costf):
    """Block ``q`` of ``nb`` of one of the engine's parallel tasks; each block writes its own
    entries, so the values do not depend on the blocks or the threads. Compiled only as the C
    callback of :func:`pointers` (the driver's ``block``).

    * :data:`COSTS`: OUT ``row[t] = cost(min(x, b), max(x, b))`` for ``x = act[t]``
      (``x != b``), ``t`` in block ``q`` of equal blocks of ``lo <= t < na`` (the slot order of
      the arguments is the one the sequential algorithm uses);
    * :data:`SCAN`: the candidate lists of slots ``q`` and ``n - 2 - q`` from their costs to
      every slot above them (the initial state; together ``n - 1`` costs, which balances the
      blocks), OUT their ``status``.
    """
    n, d = st[0].shape
    work = np.zeros((d + 1, d)) if kind == GAUSS_FULL else np.zeros((1, 1))  # Cholesky scratch
    if task == COSTS:
        per = (na - lo + nb - 1) // nb
        t1 = lo + (q + 1) * per
        for t in range(lo + q * per, na if na < t1 else t1):
            x = act[t]
            if x < b:
                row[t] = costf(kind, x, b, st, fc, gcode, fn, work)
            elif x > b:
                row[t] = costf(kind, b, x, st, fc, gcode, fn, work)
        return
    cc, ci, cg, cn, ctau, gen = cand
    for r in range(2):
        x = q if r == 0 else n - 2 - q
        if r == 1 and x <= q:
            break
        cn[x] = 0
        ctau[x] = np.inf
        status[x] = OK
        for y in range(x + 1, n):
            c = costf(kind, x, y, st, fc, gcode, fn, work)
            if c != c:
                status[x] = NAN_COST
                break
            _cand_insert(cand, x, c, y)


def _vector(dtype):
    return types.Array(dtype, 1, "C")


def _matrix(dtype, ndim=2):
    return types.Array(dtype, ndim, "C")


#: numba type of the candidate lists ``(cc, ci, cg, cn, ctau, gen)``
CAND_TYPE = types.Tuple((_matrix(types.float64), _matrix(types.int64), _matrix(types.int64),
                         _vector(types.int64), _vector(types.float64), _vector(types.int64)))


def state_types(st, fc, fn):
    """numba types of a driver's state, generator constants and generator function."""
    return typeof(st), typeof(fc), typeof(fn)


def cost_signature(st_t, fc_t, fn_t):
    """numba signature of the merge cost's C callback (the drivers' ``costf``) for the types of a
    state, the generator constants and the generator function."""
    i8 = types.int64
    return types.float64(i8, i8, i8, st_t, fc_t, i8, fn_t, _matrix(types.float64))


def pointer_specs(st_t, fc_t, fn_t):
    """The driver's C callbacks ``(block, costf)`` as ``(function, signature)`` pairs for the
    types of a state, the generator constants and the generator function (see
    :func:`pointers`); a driver is compiled from their types alone
    (``types.FunctionType(signature)``)."""
    i8 = types.int64
    cost_sig = cost_signature(st_t, fc_t, fn_t)
    block_sig = types.void(i8, i8, i8, _vector(i8), i8, i8, i8, i8, st_t, fc_t, i8, fn_t,
                           _vector(types.float64), CAND_TYPE, _vector(i8),
                           types.FunctionType(cost_sig))
    return [(_block, block_sig), (cost, cost_sig)]


def pointers(st, fc, fn):
    """The C callbacks ``(block, costf)`` of :func:`_block` and :func:`.agglomerative.cost` for
    the types of ``st``, ``fc`` and ``fn`` (compiled or loaded from numba's cache on first use; the
    plain functions under ``NUMBA_DISABLE_JIT``): the driver's last two arguments."""
    if config.DISABLE_JIT:
        return _block, cost
    return tuple(compiled_pointer(f, sig)
                 for f, sig in pointer_specs(*state_types(st, fc, fn)))


# The driver runs a task as ``_par_blocks`` when there is enough work and as
# ``block(..., 0, 1, ...)`` otherwise, written out at each call site.
@njit(**NRT_FREE_INNER_PARALLEL)
def _par_blocks(task, kind, b, act, lo, na, st, fc, gcode, fn, row, cand, status, nb, block,
                costf):
    """``block`` (:func:`_block`) ``q = 0 .. nb - 1`` in parallel (the engine's only parallel
    loop)."""
    for q in prange(nb):
        # prange's index is unsigned: cast, so that the callee has one integer type
        block(task, kind, b, act, lo, na, np.int64(q), nb, st, fc, gcode, fn, row, cand, status,
              costf)


@njit(**NRT_FREE_INNER)
def _position(act, na, x):
    """``np.searchsorted(act[:na], x)`` (``act[:na]`` ascending) by bisection, hand-written: numba's
    ``searchsorted`` compiles a generic comparison machinery for one lookup per merge."""
    lo = 0
    hi = na
    while lo < hi:
        mid = (lo + hi) >> 1
        if act[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(**NRT_FREE_INLINE)
def _set_candidate(x, cand, nn, mind, stale, heap, where):
    """Candidate of ``x`` from the head of its list (certified by the caller), heap updated."""
    cc, ci, cg, cn, ctau, gen = cand
    if cn[x] > 0:
        nn[x] = ci[x, 0]
        mind[x] = cc[x, 0]
    else:
        nn[x] = -1
        mind[x] = np.inf
    stale[x] = False
    _heap_update(heap, where, mind, x, heap.shape[0])


@njit(**NRT_FREE_INLINE)
def _retire(a, b, t, act, na, cand, mind, stale, heap, where):
    """The bookkeeping of merge ``t`` of the slot ``a`` into ``b`` (both drivers): every list
    entry of ``a`` or of the former ``b`` is dead, and ``a`` leaves the ``na`` active slots
    ``act``, its list and the heap. Returns the new number of active slots."""
    cn, gen = cand[3], cand[5]
    gen[a] = -1
    gen[b] = t + 1
    pa = _position(act, na, a)
    for p in range(pa, na - 1):
        act[p] = act[p + 1]
    cn[a] = 0
    mind[a] = np.inf
    stale[a] = False
    _heap_update(heap, where, mind, a, heap.shape[0])
    return na - 1


def generic_linkage(kind, st, fc, gcode, fn, out_i, out_j, out_h, nthreads, kcand, stats, first,
                    outs, block, costf):
    """Muellner's generic algorithm (arXiv:1109.2378, Fig. 3) on cluster statistics, exact costs.

    Each active slot ``x`` keeps a candidate ``nn[x] > x`` and ``mind[x]``, a lower bound of its
    cost to every active slot above it; ``stale[x]`` marks bounds that may be strict. The heap
    top, once exact, is a globally cheapest pair. Merges store the union in the higher slot.
    A refresh takes the exact candidate from a list of the cheapest slots above ``x`` (see
    :func:`_cand_insert`) and rescans only when that list cannot certify it; the costs to a
    new cluster and the rescans are evaluated in parallel and consumed in slot order, so the
    merges do not depend on the number of threads.

    Parameters
    ----------
    kind, st, fc, gcode, fn
        Model kind, state ``(A, B, C, w, sup, slen, aux)`` (IN/OUT: overwritten by the merges),
        generator constants and generator (see :mod:`.agglomerative`).
    out_i, out_j, out_h : ndarray
        OUT: merge ``t`` as slots ``(out_i[t], out_j[t])`` with cost ``out_h[t]``.
    nthreads : int
        Sizes the parallel blocks (the results do not depend on it).
    kcand : int
        Length of the candidate lists; 0 for :data:`K_CAND_EXACT` (the results do not depend on
        it, only the number of rescans does).
    stats : ndarray of int64, shape (N_STATS,)
        OUT: counters (see :data:`N_STATS`).
    first, outs
        OUT: the cluster formed by merge ``t >= first`` is copied to row ``n - 2 - t`` of
        ``outs`` (the state's seven arrays with ``n - 1 - first`` rows; see
        :func:`.agglomerative.keep`), so row 0 is the root.
    block, costf : function
        :func:`pointers` ``(st, fc, fn)``.

    Returns
    -------
    int
        :data:`OK`, or :data:`NAN_COST` when a merge cost is NaN (the outputs are then
        incomplete).
    """
    A, B, C, w, sup, slen, aux = st
    n, d = A.shape
    stats[:] = 0
    K = min(kcand if kcand > 0 else K_CAND_EXACT, max(n - 1, 1))
    # the candidate lists (see the comment above K_CAND)
    cand = (np.empty((n, K)), np.empty((n, K), dtype=np.int64), np.empty((n, K), dtype=np.int64),
            np.zeros(n, dtype=np.int64), np.full(n, np.inf), np.zeros(n, dtype=np.int64))
    ws = (np.arange(n, dtype=np.int64), np.empty(n), np.full(n, -1, dtype=np.int64),
          np.full(n, np.inf), np.zeros(n, dtype=np.bool_), np.arange(n, dtype=np.int64),
          np.arange(n, dtype=np.int64), np.zeros(n, dtype=np.int64),
          np.zeros((d + 1, d)) if kind == GAUSS_FULL else np.zeros((1, 1)),  # Cholesky scratch
          np.empty(2 * sup.shape[1] + 1, dtype=sup.dtype))
    return _generic_merges(kind, st, fc, gcode, fn, out_i, out_j, out_h, nthreads, stats, first,
                           outs, cand, ws, block, costf)


# The driver's arrays are allocated by numpy in :func:`generic_linkage` (numba compiles every
# shape and dtype of ``np.empty``, ``np.zeros`` ... it sees as a function of its own, and a kernel
# that allocates keeps numba's reference counting), so the compiled part allocates nothing.
@njit(**NRT_FREE_JIT)
def _generic_merges(kind, st, fc, gcode, fn, out_i, out_j, out_h, nthreads, stats, first, outs,
                    cand, ws, block, costf):
    """The compiled part of :func:`generic_linkage`: the initial candidate lists and the merges,
    on the candidate lists ``cand`` and the workspace ``ws = (act, row, nn, mind, stale, heap,
    where, status, work, ibuf)`` it allocates. Returns the status."""
    n = st[0].shape[0]
    cc, ci, cg, cn, ctau, gen = cand
    act, row, nn, mind, stale, heap, where, status, work, ibuf = ws
    # the initial candidate lists (``act`` is every slot, ascending; ``row`` is not read)
    _par_blocks(SCAN, kind, _ZERO, act, _ZERO, n, st, fc, gcode, fn, row, cand, status, n // 2,
                block, costf)
    for x in range(n):
        if status[x] != OK:
            return status[x]
    na = n
    for x in range(n - 1):
        nn[x] = ci[x, 0]
        mind[x] = cc[x, 0]
    for p in range(n // 2 - 1, -1, -1):
        _sift_down(heap, where, mind, p, n)
    for t in range(n - 1):
        while True:
            a = heap[0]
            if not stale[a]:
                break
            if _certified(a, cand):  # the head of the list is the exact candidate
                stats[ST_LISTHIT] += 1
            else:  # rescan the slots above a
                stats[ST_RESCAN] += 1
                lo = _position(act, na, a) + 1
                if na - lo > 2 * PAR_REFINE and nthreads > 1:
                    nb = na - lo if na - lo < 8 * nthreads else 8 * nthreads
                    _par_blocks(COSTS, kind, a, act, lo, na, st, fc, gcode, fn, row, cand, status,
                                nb, block, costf)
                else:
                    block(COSTS, kind, a, act, lo, na, _ZERO, _ONE, st, fc, gcode, fn, row, cand,
                           status, costf)
                stats[ST_EXACT] += na - lo
                if _cand_build(a, act, lo, na, row, cand) != OK:
                    return NAN_COST
            _set_candidate(a, cand, nn, mind, stale, heap, where)
        a = heap[0]
        b = nn[a]
        if b < 0:  # only possible with NaN statistics; refuse rather than write out of bounds
            return NAN_COST
        out_i[t] = a
        out_j[t] = b
        out_h[t] = mind[a]
        merge(kind, a, b, st, fc, gcode, fn, work, ibuf)
        if t >= first:  # a cluster of the last merges: kept for the tree features
            keep(b, n - 2 - t, st, outs)
        na = _retire(a, b, t, act, na, cand, mind, stale, heap, where)
        pb = _position(act, na, b)
        # costs of every active slot to the new cluster b, in parallel
        if na > 2 * PAR_REFINE and nthreads > 1:
            nb = na if na < 8 * nthreads else 8 * nthreads  # min (numba's compiles generically)
            _par_blocks(COSTS, kind, b, act, _ZERO, na, st, fc, gcode, fn, row, cand, status, nb,
                        block, costf)
        else:
            block(COSTS, kind, b, act, _ZERO, na, _ZERO, _ONE, st, fc, gcode, fn, row, cand,
                   status, costf)
        stats[ST_EXACT] += na - 1
        # slots below b: the new cluster may be a better candidate; candidates a and b went stale
        for p in range(pb):
            x = act[p]
            c = row[p]
            if c != c:
                return NAN_COST
            if c < ctau[x]:
                _cand_insert(cand, x, c, b)
            if c < mind[x]:
                mind[x] = c
                nn[x] = b
                stale[x] = False
                _heap_update(heap, where, mind, x, n)
            elif nn[x] == a or nn[x] == b:
                nn[x] = b
                if c != mind[x]:
                    stale[x] = True
        # the new cluster's own candidate among the slots above it
        if _cand_build(b, act, pb + 1, na, row, cand) != OK:
            return NAN_COST
        _set_candidate(b, cand, nn, mind, stale, heap, where)
    return OK
