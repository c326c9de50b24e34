"""Slow reference of mini-batch Bregman k-means (test oracle).

scikit-learn's published mini-batch algorithm (``MiniBatchKMeans``: per-centre counts, the
low-count reassignment every ``10 k`` rows) written with plain numpy loops and the divergence
evaluated by its definition (:func:`naive.pairwise`), with any Bregman divergence in place of
the squared Euclidean distance, and the smoothing pseudo-point of bregclust (a batch of weight
``W_B`` adds ``rho W_B`` at ``z`` to every centre). Two drivers: batches drawn as
scikit-learn draws them, and the chunk plan of a dask fit. ``dist(x, u)`` is the divergence
of two points (e.g. ``lambda x, u: naive.divergence("kl", x, u)``).
"""

import numpy as np


class Run:
    """Centres, counts and the reassignment clock of one run."""

    def __init__(self, U0, batch_size, rho=0.0, z=None, beta_seed=0.0, reassignment_ratio=0.01):
        self.U = np.array(U0, dtype=float)
        self.counts = np.zeros(self.U.shape[0])
        self.batch_size = batch_size
        self.rho, self.z, self.beta_seed = rho, z, beta_seed
        self.ratio = reassignment_ratio
        self.since = 0
        self.objectives = []


def step(run, dist, B, w, rng):
    """One step on the dense batch ``B`` with weights ``w``."""
    k = run.U.shape[0]
    run.since += run.batch_size
    reassign = (run.counts == 0).any() or run.since >= 10 * k
    if reassign:
        run.since = 0
    D = np.array([[dist(x, u) for u in run.U] for x in B])
    lab = D.argmin(axis=1)
    b = run.rho * w.sum()
    obj = float(w @ D[np.arange(len(B)), lab])
    if b > 0:
        obj += b * sum(dist(run.z, u) for u in run.U)
    run.objectives.append(obj / w.sum())
    for j in range(k):
        sel = lab == j
        Wj = w[sel].sum()
        if Wj > 0 or b > 0:
            Sj = (w[sel, None] * B[sel]).sum(axis=0)
            zb = b * run.z if b > 0 else 0.0
            run.U[j] = (run.counts[j] * run.U[j] + Sj + zb) / (run.counts[j] + Wj + b)
            run.counts[j] += Wj + b
    if reassign and run.ratio > 0:
        to = run.counts < run.ratio * run.counts.max()
        if to.sum() > 0.5 * len(B):
            to[np.argsort(run.counts)[int(0.5 * len(B)):]] = False
        m = int(to.sum())
        if m:
            new = rng.choice(len(B), replace=False, size=m)
            rows = B[new]
            if run.beta_seed > 0:
                rows = (w[new, None] * rows + run.beta_seed * run.z) / (w[new, None]
                                                                         + run.beta_seed)
            run.U[to] = rows
            run.counts[to] = run.counts[~to].min()
    return run


def fit_sampled(dist, X, U0, *, batch_size, n_steps, random_state, init_size, w=None,
                **run_kw):
    """Batches drawn as scikit-learn's ``MiniBatchKMeans.fit`` draws them (after its
    validation and seeding samples, which an array init leaves unused), unit weights."""
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float)
    n = X.shape[0]
    w = np.ones(n) if w is None else np.asarray(w, dtype=float)
    rng = np.random.RandomState(random_state)
    rng.randint(0, n, init_size)
    if init_size < n:
        rng.randint(0, n, init_size)
    run = Run(U0, batch_size, **run_kw)
    for _ in range(n_steps):
        idx = rng.choice(n, batch_size, p=w / w.sum(), replace=True)
        step(run, dist, X[idx], np.ones(batch_size), rng)
    return run


def fit_chunks(dist, X, U0, chunks, *, batch_size, epochs, random_state, init_size, w=None,
               **run_kw):
    """The plan of a chunked fit: each epoch visits the chunks in a random order; a chunk's
    rows, permuted by ``RandomState(seed)``, are split into batches of at most
    ``batch_size`` rows, stepped with their weights."""
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float)
    n = X.shape[0]
    w = np.ones(n) if w is None else np.asarray(w, dtype=float)
    starts = np.concatenate([[0], np.cumsum(chunks)])
    rng = np.random.RandomState(random_state)
    rng.randint(0, n, init_size)  # the validation sample of the first pass
    run = Run(U0, batch_size, **run_kw)
    for _ in range(epochs):
        order = rng.permutation(len(chunks))
        seeds = rng.randint(0, 2**31 - 1, size=len(chunks))
        for i in order:
            rs = np.random.RandomState(int(seeds[i]))
            a, size = starts[i], chunks[i]
            perm = rs.permutation(size)
            for idx in np.array_split(perm, -(-size // batch_size)):
                step(run, dist, X[a + idx], w[a + idx], rs)
    return run
