"""Passes over a dask array whose chunks are held in the memory of ``distributed`` workers.

A persisted array's chunks already live on workers: a pass then runs as one task per worker
over the chunks that worker holds (a few tasks per pass instead of one per chunk), reduced in
the same tree as the graph path of :meth:`bregclust._dask.DaskSource.run`, so the result does
not depend on where chunks live. The scheduling itself is ``distributed``'s (``submit`` with
worker hints); this module only decides which worker runs which chunk. Imports no estimator.
"""

import numpy as np

__all__ = ["SPLIT_EVERY", "active_client", "balanced_owners", "local_groups", "run_local"]

SPLIT_EVERY = 16  # fan-in of the tree reduction


def local_groups(source):
    """``(client, chunk futures, weight futures, owner of every chunk)`` when the active
    scheduler is a ``distributed`` client holding every chunk in worker memory (a
    persisted array), else None."""
    client = active_client()
    if client is None:
        return None
    from distributed import futures_of

    found = {}
    for f in futures_of(source.X) + (futures_of(source.w) if source.w is not None else []):
        found[f.key] = f
    xkeys = [key[0] for key in source.X.__dask_keys__()]
    wkeys = source.w.__dask_keys__() if source.w is not None else []
    if any(k not in found for k in xkeys) or any(k not in found for k in wkeys):
        return None
    futs = [found[k] for k in xkeys]
    who = client.who_has(futs)
    holders = [sorted(who.get(f.key) or ()) for f in futs]
    if any(not h for h in holders):
        return None
    workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
    owner = balanced_owners(holders, np.diff(source.starts), workers)
    wfuts = [found[k] for k in wkeys] if wkeys else [None] * source.nblocks
    return client, futs, wfuts, owner


def run_local(source, local, fn, refs, extras, reduce):
    """:meth:`bregclust._dask.DaskSource.run` on persisted chunks: one task per worker runs ``fn`` on the chunks
    that worker holds (a pass is then a few tasks, not one per chunk). Each task reduces
    the complete first-level blocks of the tree among its chunks; the client finishes the
    same tree in the same order, so the result does not depend on where chunks live."""
    client, futs, wfuts, owner = local
    groups = {}
    for i, addr in enumerate(owner):
        groups.setdefault(addr, []).append(i)
    tasks = [client.submit(group_task, fn, reduce, idx, [futs[i] for i in idx],
                           [wfuts[i] for i in idx], refs, [extras[i] for i in idx],
                           source.nblocks, workers=[addr], allow_other_workers=True,
                           pure=False)
             for addr, idx in groups.items()]
    blocks, singles = {}, {}
    for out in client.gather(tasks):
        for j, i, r in out:
            if i is None:
                blocks[j] = r
            else:
                singles[i] = r
    if source.nblocks == 1:
        return blocks[0] if 0 in blocks else singles[0]
    parts = []
    for j in range(0, -(-source.nblocks // SPLIT_EVERY)):
        if j in blocks:
            parts.append(blocks[j])
        else:
            members = range(j * SPLIT_EVERY, min(source.nblocks, (j + 1) * SPLIT_EVERY))
            parts.append(reduce(*[singles[i] for i in members]))
    while len(parts) > 1:
        parts = [reduce(*parts[j:j + SPLIT_EVERY]) for j in range(0, len(parts),
                                                                    SPLIT_EVERY)]
    return parts[0]


def balanced_owners(holders, rows, workers):
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


def group_task(fn, reduce, idx, blocks, wblocks, refs, extras, nchunks):
    """The chunks ``idx`` of one worker (see :func:`run_local`): a list of
    ``(block, None, reduced result)`` for every first-level block of the tree whose chunks
    are all here, and ``(block, chunk, result)`` for the others."""
    out = []
    by_block = {}
    for pos, i in enumerate(idx):
        by_block.setdefault(i // SPLIT_EVERY, []).append(pos)
    for j, members in by_block.items():
        res = [fn(blocks[p], wblocks[p], extras[p][0], *refs, *extras[p][1:]) for p in members]
        size = min(SPLIT_EVERY, nchunks - j * SPLIT_EVERY)
        if len(members) == size and nchunks > 1:
            out.append((j, None, reduce(*res)))
        elif len(members) == size:  # a single chunk: the graph path does not reduce it
            out.append((j, None, res[0]))
        else:
            out.extend((j, idx[p], r) for p, r in zip(members, res))
    return out


def active_client():
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
