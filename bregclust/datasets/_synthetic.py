"""Data sets that need no download: tasks from scikit-learn's digits and multi-task blobs."""

import numpy as np
from sklearn.utils import Bunch, check_random_state

from ._base import check_choice

# --------------------------------------------------------------------------------------------
# Data sets that need no download
# --------------------------------------------------------------------------------------------


def make_digits_tasks(tasks=((0, 1, 2, 3, 4, 5), (3, 4, 5, 6, 7, 8, 9)), *, shared="split",
                      random_state=0):
    """Related clustering tasks built from scikit-learn's bundled 8x8 digits (no download).

    Parameters
    ----------
    tasks : sequence of sequences of int, default=((0..5), (3..9))
        The digits of each task; digits in several tasks are the shared classes (3, 4, 5 by
        default).
    shared : {'split', 'duplicate'}, default='split'
        'split': the images of a shared digit are divided at random between the tasks that use
        it, so no image occurs twice; 'duplicate': every task gets all of them (the MBC papers'
        convention for shared categories).
    random_state : int, RandomState or None, default=0
        Used by ``shared='split'`` (and to shuffle nothing else).

    Returns
    -------
    data : sklearn.utils.Bunch
        ``Xs`` dense float64 (n_t, 64) pixel counts 0..16 (non-negative, many zeros, so ``kl``
        applies with smoothing), ``ys`` int64 digits (``target_names[t]`` = ``'0'..'9'``),
        ``task_names``, ``indices`` (rows of ``load_digits()``), ``description``.

    Examples
    --------
    >>> d = make_digits_tasks()
    >>> [X.shape for X in d.Xs]
    [(811, 64), (986, 64)]
    """
    from sklearn.datasets import load_digits

    check_choice(shared, "shared", {"split", "duplicate"})
    tasks = [tuple(int(v) for v in t) for t in tasks]
    if len(tasks) < 1 or any(len(t) == 0 for t in tasks):
        raise ValueError(f"tasks must be a non-empty sequence of non-empty digit lists; got {tasks!r}.")
    bad = sorted({v for t in tasks for v in t if not 0 <= v <= 9})
    if bad:
        raise ValueError(f"digits must be in 0..9; got {bad}.")
    digits = load_digits()
    X, y = digits.data.astype(np.float64), digits.target.astype(np.int64)
    rng = check_random_state(random_state)
    owner = {}  # sample index -> task, for shared='split'
    for d in range(10):
        users = [t for t, ds in enumerate(tasks) if d in ds]
        if len(users) > 1 and shared == "split":
            idx = rng.permutation(np.flatnonzero(y == d))
            for part, t in zip(np.array_split(idx, len(users)), users):
                owner.update(dict.fromkeys(part.tolist(), t))
    Xs, ys, inds = [], [], []
    for t, ds in enumerate(tasks):
        idx = np.flatnonzero(np.isin(y, ds))
        idx = np.array([i for i in idx if owner.get(i, t) == t], dtype=np.int64)
        Xs.append(np.ascontiguousarray(X[idx]))
        ys.append(y[idx].copy())
        inds.append(idx)
    shared_digits = sorted({v for t in tasks for v in t if sum(v in s for s in tasks) > 1})
    return Bunch(
        Xs=Xs,
        ys=ys,
        target_names=[[str(d) for d in range(10)] for _ in tasks],
        task_names=[f"digits {''.join(map(str, t))}" for t in tasks],
        indices=inds,
        description="scikit-learn digits (UCI optdigits, 8x8 pixel counts 0..16); tasks "
        + "; ".join(f"{i + 1} = digits {list(t)} ({X.shape[0]} images)" for i, (t, X) in
                    enumerate(zip(tasks, Xs)))
        + f"; shared digits {shared_digits} "
        + ("split at random between the tasks" if shared == "split" else "duplicated in each task")
        + ".",
    )


_FAMILIES = ("gaussian", "poisson", "gamma")


def _per_task(value, n_tasks, name):
    if np.ndim(value) == 0:
        vals = [value] * n_tasks
    else:
        vals = list(value)
        if len(vals) != n_tasks:
            raise ValueError(f"{name} must be an int or a list of {n_tasks} ints (one per task); "
                             f"got {len(vals)} values.")
    out = []
    for v in vals:
        if not (isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 1):
            raise ValueError(f"{name} must contain positive integers; got {v!r}.")
        out.append(int(v))
    return out


def make_multitask_blobs(n_tasks=2, n_samples=200, n_clusters=3, *, n_shared=None, n_features=2,
                         family="gaussian", cluster_std=1.0, center_box=None, gamma_shape=20.0,
                         random_state=None):
    """Isotropic clusters in several tasks, some cluster centres shared by all tasks.

    Parameters
    ----------
    n_tasks : int, default=2
    n_samples : int or list of int, default=200
        Points per task (split as evenly as possible among the task's clusters).
    n_clusters : int or list of int, default=3
        Clusters per task; tasks may differ.
    n_shared : int, default=None
        Number of centres common to all tasks (labels ``0..n_shared-1`` in every task); the
        other clusters are private to their task and get labels no other task uses. None means
        ``min(n_clusters) - 1`` (at least 1): related but not identical tasks.
    n_features : int, default=2
    family : {'gaussian', 'poisson', 'gamma'}, default='gaussian'
        'gaussian': centre + ``cluster_std`` x N(0, I) (real data, for sqeuclidean and
        mahalanobis); 'poisson': counts ~ Poisson(centre) (non-negative integers, for kl);
        'gamma': ``Gamma(shape=gamma_shape, scale=centre / gamma_shape)``, positive with
        mean ``centre`` (for itakura_saito).
    cluster_std : float, default=1.0
        Gaussian family only.
    center_box : (float, float), default=None
        Centre coordinates are uniform in this box; None means (-10, 10) for 'gaussian' and
        (1, 20) for 'poisson'/'gamma' (rates and means must be positive).
    gamma_shape : float, default=20.0
        Gamma family only; larger = tighter clusters (coefficient of variation 1/sqrt(shape)).
    random_state : int, RandomState or None, default=None

    Returns
    -------
    data : sklearn.utils.Bunch
        ``Xs`` (dense float64 (n_t, n_features)), ``ys`` (int64 global cluster ids),
        ``centers`` (per task, (K_t, n_features), row j = centre of ``labels[t][j]``),
        ``center_labels`` (per task, the ids of its clusters), ``shared_labels``,
        ``target_names`` (per task, ``'c<id>'`` for ids ``0..max``), ``task_names``,
        ``description``.

    Examples
    --------
    >>> d = make_multitask_blobs(n_clusters=[3, 4], n_shared=2, random_state=0)
    >>> [X.shape for X in d.Xs], d.shared_labels
    ([(200, 2), (200, 2)], [0, 1])
    """
    if not (isinstance(n_tasks, (int, np.integer)) and n_tasks >= 1):
        raise ValueError(f"n_tasks must be a positive integer; got {n_tasks!r}.")
    if family not in _FAMILIES:
        raise ValueError(f"family must be one of {list(_FAMILIES)}; got {family!r}.")
    if not (isinstance(n_features, (int, np.integer)) and n_features >= 1):
        raise ValueError(f"n_features must be a positive integer; got {n_features!r}.")
    ns = _per_task(n_samples, n_tasks, "n_samples")
    ks = _per_task(n_clusters, n_tasks, "n_clusters")
    for t, (n, k) in enumerate(zip(ns, ks)):
        if n < k:
            raise ValueError(f"task {t} has n_samples={n} < n_clusters={k}; every cluster needs "
                             "a point.")
    if n_shared is None:
        n_shared = max(1, min(ks) - 1)
    if not (isinstance(n_shared, (int, np.integer)) and 0 <= n_shared <= min(ks)):
        raise ValueError(f"n_shared must be an integer in [0, min(n_clusters)={min(ks)}]; "
                         f"got {n_shared!r}.")
    if center_box is None:
        center_box = (-10.0, 10.0) if family == "gaussian" else (1.0, 20.0)
    lo, hi = map(float, center_box)
    if not lo < hi:
        raise ValueError(f"center_box must be (low, high) with low < high; got {center_box!r}.")
    if family != "gaussian" and lo <= 0:
        raise ValueError(f"family={family!r} needs positive centres: center_box low must be > 0; "
                         f"got {center_box!r}.")
    if family == "gaussian" and not cluster_std > 0:
        raise ValueError(f"cluster_std must be > 0; got {cluster_std!r}.")
    if family == "gamma" and not gamma_shape > 0:
        raise ValueError(f"gamma_shape must be > 0; got {gamma_shape!r}.")
    rng = check_random_state(random_state)
    n_private = [k - n_shared for k in ks]
    n_total = n_shared + sum(n_private)
    all_centers = rng.uniform(lo, hi, size=(n_total, n_features))
    Xs, ys, centers, center_labels = [], [], [], []
    nxt = n_shared
    for t in range(n_tasks):
        labs = list(range(n_shared)) + list(range(nxt, nxt + n_private[t]))
        nxt += n_private[t]
        sizes = np.full(ks[t], ns[t] // ks[t])
        sizes[: ns[t] % ks[t]] += 1
        y = np.repeat(np.array(labs, dtype=np.int64), sizes)
        mu = all_centers[y]
        if family == "gaussian":
            X = mu + cluster_std * rng.standard_normal(mu.shape)
        elif family == "poisson":
            X = rng.poisson(mu).astype(np.float64)
        else:
            X = rng.gamma(gamma_shape, mu / gamma_shape)
        perm = rng.permutation(ns[t])
        Xs.append(np.ascontiguousarray(X[perm], dtype=np.float64))
        ys.append(y[perm])
        centers.append(all_centers[labs].copy())
        center_labels.append(np.array(labs, dtype=np.int64))
    names = [f"c{i}" for i in range(n_total)]
    return Bunch(
        Xs=Xs,
        ys=ys,
        centers=centers,
        center_labels=center_labels,
        shared_labels=list(range(n_shared)),
        target_names=[list(names) for _ in range(n_tasks)],
        task_names=[f"task {t + 1}" for t in range(n_tasks)],
        description=f"make_multitask_blobs: {n_tasks} tasks, n_samples={ns}, n_clusters={ks}, "
        f"{n_shared} shared centres, {n_features} features, family={family!r}, centres uniform "
        f"in {(lo, hi)}, random_state={random_state!r}.",
    )
