"""Size-constrained Bregman k-means (``size_min`` / ``size_max``) against k-means-constrained.

Two parts, each measured in one run:

1. Speed, squared Euclidean, balanced (``size_min = size_max = n / k``): ``BregmanKMeans``
   (exact assignment by POT's network simplex, warm-started) and
   ``k_means_constrained.KMeansConstrained`` (min-cost flow by OR-tools) from the same
   k-means++ centres, one restart each, default ``max_iter`` and ``tol`` on both sides (their
   stopping rules differ: ours a relative objective change, theirs a centre shift), best of
   ``--repeat``. Data: ``sklearn.datasets.make_blobs`` (``n`` x ``d``, ``k`` blobs of standard
   deviation 4 around centres drawn in ``[-10, 10]^d``, seed 0). Both objectives are computed by
   one formula from the returned labels and their means. The peer minimises *unsquared*
   Euclidean distances in its assignment step (rounded to 1e-3), so its objective can be
   higher from the same start.
2. Quality, kl on 20 Newsgroups term frequencies (count rows scaled to sum 1, the most
   frequent ``--terms`` terms), balanced (``floor(n / k) <= size <= ceil(n / k)``): objective
   and NMI against the newsgroups, constrained and unconstrained kl k-means from the same
   seeds (``smoothing="auto"``).

Run with the same thread count on both sides, e.g.
``OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/constrained.py``.
"""

import argparse
import os
import time
import warnings

import numpy as np
import scipy.sparse as sp
from _common import machine, table
from sklearn.datasets import make_blobs
from sklearn.exceptions import ConvergenceWarning

from bregclust import BregmanKMeans, bregman_kmeans_plusplus
from bregclust.metrics import nmi


def sq_objective(X, labels, k):
    """Squared-Euclidean objective of labels with their own means."""
    C = np.array([X[labels == j].mean(axis=0) for j in range(k)])
    return float(((X - C[labels]) ** 2).sum())


def speed(n, d, k, repeat, method):
    from k_means_constrained import KMeansConstrained

    X, _ = make_blobs(n_samples=n, n_features=d, centers=k, cluster_std=4.0,
                      center_box=(-10.0, 10.0), random_state=0)
    size = n // k
    assert size * k == n, "n must be a multiple of k for balanced clusters"
    C0, _ = bregman_kmeans_plusplus(X, k, random_state=0)
    print(f"## Speed: make_blobs {n} x {d}, k = {k}, balanced size {size}, same k-means++ start")
    rows = []
    res = {}
    for name, make in [
        (f"BregmanKMeans size_method={method!r}",
         lambda: BregmanKMeans(k, init=C0, size_min=size, size_max=size, size_method=method)),
        ("KMeansConstrained (OR-tools)",
         lambda: KMeansConstrained(k, init=C0, n_init=1, size_min=size, size_max=size)),
    ]:
        best = np.inf
        for _ in range(repeat):
            est = make()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                t0 = time.perf_counter()
                est.fit(X)
                best = min(best, time.perf_counter() - t0)
        labels = np.asarray(est.labels_)
        sizes = np.bincount(labels, minlength=k)
        it = int(est.n_iter_)
        res[name] = (best, it, sq_objective(X, labels, k))
        rows.append([name, f"{best:.2f}", it, f"{best / it:.3f}",
                     f"{res[name][2]:.6g}", f"{sizes.min()}..{sizes.max()}"])
    table(["method", "time (s)", "iterations", "s / iteration", "objective", "sizes"], rows)
    (ours, peer) = res.values()
    print(f"time ours / k-means-constrained: {ours[0] / peer[0]:.2f} (target <= 2.0); "
          f"per iteration {ours[0] / ours[1] / (peer[0] / peer[1]):.2f}; "
          f"objective ours / theirs {ours[2] / peer[2]:.6f}")
    print()


def newsgroups(terms, seeds, n_docs):
    from bregclust.datasets import load_20newsgroups

    data = load_20newsgroups(max_features=terms)
    X, y = data.X, data.y
    if n_docs and n_docs < X.shape[0]:
        keep = np.sort(np.random.default_rng(0).choice(X.shape[0], n_docs, replace=False))
        X, y = X[keep], y[keep]
    keep = np.asarray(X.sum(axis=1)).ravel() > 0
    X, y = X[keep], y[keep]
    X = sp.csr_matrix(sp.diags(1.0 / np.asarray(X.sum(axis=1)).ravel()) @ X)
    n, k = X.shape[0], int(y.max()) + 1
    lo, hi = n // k, -(-n // k)
    print(f"## kl on 20 Newsgroups term frequencies: {n} documents x {X.shape[1]} terms, "
          f"k = {k}, balanced sizes {lo}..{hi} (true sizes "
          f"{np.bincount(y).min()}..{np.bincount(y).max()})")
    rows = []
    summary = {"free": [], "balanced": []}
    for seed in range(seeds):
        for name, kw in [("free", {}), ("balanced", dict(size_min=lo, size_max=hi))]:
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                km = BregmanKMeans(k, divergence="kl", random_state=seed, **kw).fit(X)
            t = time.perf_counter() - t0
            sizes = np.bincount(km.labels_, minlength=k)
            score = nmi(y, km.labels_)
            summary[name].append((km.inertia_, score))
            rows.append([seed, name, f"{km.inertia_:.6g}", f"{score:.4f}",
                         f"{sizes.min()}..{sizes.max()}", km.n_iter_, f"{t:.1f}"])
    table(["seed", "kl k-means", "objective", "NMI", "sizes", "iterations", "time (s)"], rows)
    f, b = (np.array(summary[s]) for s in ("free", "balanced"))
    print(f"mean objective balanced / free: {b[:, 0].mean() / f[:, 0].mean():.4f}; "
          f"mean NMI free {f[:, 1].mean():.4f}, balanced {b[:, 1].mean():.4f}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--d", type=int, default=50)
    p.add_argument("--k", type=int, default=50)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--method", default="exact", choices=["exact", "sinkhorn", "greedy"])
    p.add_argument("--terms", type=int, default=2000)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--docs", type=int, default=0, help="subsample 20 Newsgroups (0: all)")
    p.add_argument("--skip-speed", action="store_true")
    p.add_argument("--skip-20ng", action="store_true")
    a = p.parse_args()
    threads = {v: os.environ.get(v, "unset") for v in
               ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    print(f"# Size-constrained k-means. {machine()}; threads {threads}")
    print()
    if not a.skip_speed:
        speed(a.n, a.d, a.k, a.repeat, a.method)
    if not a.skip_20ng:
        newsgroups(a.terms, a.seeds, a.docs)


if __name__ == "__main__":
    main()
