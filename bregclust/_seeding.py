"""Initial centres of every centroid estimator, on any data source.

* :func:`kmeans_plusplus`: greedy k-means++ with D-sampling by the divergence, on rows in
  memory (a :class:`~bregclust._blocks.Block`); :func:`bregman_kmeans_plusplus` is its
  public form on raw arrays.
* :func:`kmeans_parallel`: k-means|| (Bahmani et al., 2012) on any data source: a few
  sampling passes, then weighted k-means++ on the candidates; the default on dask arrays.
* :func:`random_centres`: distinct rows of positive weight.
* :func:`seed_centres`: the one entry point of the estimators: picks k-means++ (rows in
  memory) or k-means|| (a chunked source) from the source, or the method asked for.

Seeds are smoothed like centres (``(w x + beta z) / (w + beta)``), so kl and Itakura-Saito
seeds stay inside their domain.
"""

import numbers

import numpy as np
from sklearn.utils import check_random_state

from . import _blocks as B
from . import _conditioning as C
from . import _execution as E
from ._smoothing import auto_smoothing, push_inside, smoothed_points
from ._validation import (
    check_array,
    check_n_clusters,
    check_sample_weight,
    check_scalar,
    check_smoothing,
)
from .divergences import get_divergence

__all__ = ["bregman_kmeans_plusplus", "kmeans_plusplus", "kmeans_parallel", "random_centres",
           "seed_centres", "seeding_method"]

#: The seeding methods of :func:`seed_centres`
METHODS = ("k-means++", "k-means||", "random")


def seeding_method(src, init="auto", *, fallback=False, others=()):
    """The seeding method for a data source: ``"auto"`` is k-means++ when the rows are in
    memory (one block) and k-means|| on a chunked source (k-means++ reads the whole data set
    ``k`` times); a method in :data:`METHODS` is kept.

    Parameters
    ----------
    src : data source
    init : {"auto", "k-means++", "k-means||", "random"}, default="auto"
    fallback : bool, default=False
        What ``"k-means++"`` on a chunked source does: with ``fallback`` k-means|| (its
        counterpart for chunks), without it a ``ValueError`` naming the alternatives.
    others : tuple of str, default=()
        The estimator's other init names that work on chunks, named in that error.

    Returns
    -------
    str
    """
    if init == "auto":
        return "k-means||" if src.chunked else "k-means++"
    if init not in METHODS:
        raise ValueError(f"init must be 'auto', 'k-means++', 'k-means||' or 'random', got "
                         f"{init!r}.")
    if init == "k-means++" and src.chunked:
        if fallback:
            return "k-means||"
        alts = ["'k-means||' (the default)"] + [f"'{o}'" for o in others]
        raise ValueError("init='k-means++' reads the whole data set k times; for a dask array "
                         f"use init={', '.join(alts)} or 'random'.")
    return init


def seed_centres(src, div, k, rng, init="auto", beta=0.0, z=None, *, factor=2.0, rounds=5,
                 fallback=False, weighted=False):
    """Initial centres of every centroid estimator on a data source (conditioned): the method
    of :func:`seeding_method`, seeds smoothed by ``(beta, z)``.

    Parameters
    ----------
    src : data source (conditioned)
    div : Divergence
    k : int
    rng : RandomState
    init : {"auto", "k-means++", "k-means||", "random"}, default="auto"
    beta : float, default=0.0
    z : ndarray, optional
    factor, rounds
        k-means|| oversampling factor and rounds (see :func:`kmeans_parallel`).
    fallback : bool, default=False
        See :func:`seeding_method`.
    weighted : bool, default=False
        See :func:`random_centres`.

    Returns
    -------
    ndarray of shape (k, n_features)
    """
    method = seeding_method(src, init, fallback=fallback)
    if method == "k-means++":
        return kmeans_plusplus(src.block, div, k, rng, beta, z)[0]
    if method == "random":
        return random_centres(src, k, rng, beta, z, weighted)
    return kmeans_parallel(src, div, k, rng, beta, z, factor, rounds)


def kmeans_plusplus(block, div, k, rng, beta=0.0, z=None, n_local_trials=None):
    """Greedy k-means++ on the rows of ``block`` (validated, conditioned).

    Returns ``(centres, indices)``; see :func:`bregman_kmeans_plusplus`.
    """
    X = block.X
    w = block.weights()
    n = X.shape[0]
    prepared = block.prepared(div)
    trials = int(n_local_trials) if n_local_trials is not None else 2 + int(np.log(k))
    centers = np.empty((k, X.shape[1]))
    idx = np.empty(k, dtype=np.int64)
    first = int(rng.choice(n, p=w / w.sum()))
    idx[0] = first
    centers[0] = smoothed_points(B.take_block(block, [first]).rows, w[[first]], beta, z)[0]
    _, closest = E.assign(div, X, E.prepare_centres(div, centers[:1]), prepared=prepared)
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
        Cc = smoothed_points(B.take_block(block, cand).rows, w[cand], beta, z)
        Dc = E.pairwise(div, X, Cc, prepared)
        new = np.minimum(closest[:, None], Dc)
        if np.isfinite(new).all():
            scores = w @ new
        else:  # fewer points at infinite divergence first
            scores = (np.isinf(new) * w[:, None]).sum(axis=0)
        best = int(np.argmin(scores))
        idx[c] = cand[best]
        centers[c] = Cc[best]
        closest = new[:, best]
    return centers, idx


def bregman_kmeans_plusplus(X, n_clusters, divergence="sqeuclidean", *, random_state=None,
                            sample_weight=None, smoothing=0.0, n_local_trials=None):
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
        Finite and non-negative. ``"auto"``: as :class:`~bregclust.BregmanKMeans` (see
        :func:`~bregclust.kmeans.auto_smoothing`).
    n_local_trials : int, optional
        Candidates per centre, ``>= 1``. Default ``2 + int(log(n_clusters))``.

    Returns
    -------
    centers : ndarray of shape (n_clusters, n_features)
    indices : ndarray of shape (n_clusters,)
        Rows of ``X`` that seeded each centre.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.1, 5.0]])
    >>> C, idx = bregman_kmeans_plusplus(X, 2, random_state=0)
    >>> sorted(int(i) // 2 for i in idx)
    [0, 1]
    """
    div = get_divergence(divergence)
    X = check_array(X, divergence=div)
    div.check_n_features(X.shape[1])
    n = X.shape[0]
    k = check_n_clusters(n_clusters, n)
    rng = check_random_state(random_state)
    w = check_sample_weight(sample_weight, n)
    beta = check_smoothing(smoothing)
    if beta == "auto":
        beta = auto_smoothing(X, div, k, w)
    if n_local_trials is not None:
        check_scalar(n_local_trials, "n_local_trials", kind=numbers.Integral, lo=1)
    block = B.Block(X, w)
    stats = C.block_stats(block, div, phi=div.translation_invariant,
                          colmax=div.coordinate_scale_invariant)
    cond = C.decide(div, stats)
    if not cond.identity:
        block = B.Block(cond.apply(X), cond.apply_weights(w))
    z = push_inside(cond.mean(stats), div) if beta > 0 else None
    centers, idx = kmeans_plusplus(block, div, k, rng, cond.apply_mass(beta), z, n_local_trials)
    return cond.undo_centres(centers), idx


def random_centres(src, k, rng, beta=0.0, z=None, weighted=False):
    """``k`` distinct rows of positive weight of a data source, smoothed.

    Parameters
    ----------
    src : data source (conditioned)
    k : int
    rng : RandomState
    beta : float, default=0.0
    z : ndarray, optional
    weighted : bool, default=False
        Draw the rows with probability proportional to their weight (rows in memory: the
        seeding sample of mini-batch k-means, a cluster being bisected) instead of uniformly
        among the rows of positive weight.

    Returns
    -------
    ndarray of shape (k, n_features)
    """
    if weighted:
        w = src.block.weights()
        npos = np.count_nonzero(w)
    else:
        pos = src.positive_rows()
        npos = pos.size
    if npos < k:
        raise ValueError(
            f"init='random' needs at least n_clusters={k} samples with positive weight, got "
            f"{npos}."
        )
    if weighted:
        ids = rng.choice(w.size, size=k, replace=False, p=w / w.sum())
    else:
        ids = rng.choice(pos, size=k, replace=False)
    rows = src.take(ids)
    return smoothed_points(rows.rows, rows.w, beta, z)


def kmeans_parallel(src, div, k, rng, beta=0.0, z=None, factor=2.0, rounds=5):
    """k-means|| (Bahmani et al., 2012) with D-sampling by ``div``, then weighted k-means++.

    Each round is one pass over the data that keeps row ``i`` with probability
    ``min(1, ell w_i d_i / cost)`` (``ell = factor k``, ``d_i`` the divergence to the nearest
    candidate, ``cost = sum_i w_i d_i``). Candidates are smoothed like k-means++ seeds,
    weighted by the sample weight of the points closest to them, and reduced to ``k`` centres
    by :func:`kmeans_plusplus` with those weights.

    Parameters
    ----------
    src : data source (conditioned)
    div : Divergence
    k : int
    rng : RandomState
    beta : float, default=0.0
    z : ndarray, optional
    factor : float, default=2.0
        Expected candidates per round, in units of ``k``.
    rounds : int, default=5
        Sampling rounds (passes over the data).

    Returns
    -------
    ndarray of shape (k, n_features)
    """
    ell = float(factor) * k
    first = src.draw_first(rng)
    row = src.take([first])
    C_ = smoothed_points(row.rows, row.w, beta, z)
    seen = {first}
    for _ in range(int(rounds)):
        parts = E.prepare_centres(div, C_)
        cost = src.cost(div, parts)
        if cost.cost <= 0 and cost.ninf == 0:
            break
        seeds = rng.randint(0, 2**31 - 1, size=src.nblocks)
        new = src.sample(div, parts, ell, cost, seeds)
        keep = np.array([i not in seen for i in new.idx.tolist()], dtype=bool)
        if keep.any():
            seen.update(new.idx[keep].tolist())
            C_ = np.vstack([C_, smoothed_points(new.rows[keep], new.w[keep], beta, z)])
    if C_.shape[0] < k:  # too few candidates (tiny or degenerate data): add random rows
        extra = random_centres(src, k, rng, beta, z)
        C_ = np.vstack([C_, extra[: k - C_.shape[0]]])
    cand_w = src.lloyd(div, E.prepare_centres(div, C_)).W
    if cand_w.sum() <= 0:
        cand_w = np.ones(C_.shape[0])
    centers, _ = kmeans_plusplus(B.Block(np.ascontiguousarray(C_), cand_w), div, k, rng)
    return centers
