"""Spherical k-means (BregmanKMeans(divergence="cosine")) against scikit-learn's KMeans and
faiss' Kmeans(spherical=True), same data, same start, same run.

What it measures, per problem and k in {20, 256}:
* bregclust: ``BregmanKMeans(k, divergence="cosine", init=C0, max_iter=iters, tol=0)``;
* scikit-learn: ``KMeans(k, init=C0, n_init=1, algorithm="lloyd", max_iter=iters, tol=0)`` on
  the same unit rows (Euclidean k-means on the sphere: the closest thing users run today; its
  centres are means, not directions, so its labels differ after the first iteration);
* faiss-cpu: ``Kmeans(d, k, niter=iters, spherical=True)`` trained from the same ``C0``
  (dense rows only: faiss takes no sparse input).
Times are milliseconds per pass over the data (a fit's wall time, best of ``--repeat``, over
its passes: assignment passes, which carry the centre updates), and the ratio ours / peer;
the closing ``RATIO`` lines repeat the ratios one per line (for re-running after a merge). C0: k-means++ of scikit-learn on the unit rows.

Problems: 20 Newsgroups tf-idf (all 18,846 documents, L2-normalised rows, sparse CSR) and
``n x 128`` dense unit rows (directions scattered around 64 random centres; ``--n``, default
200,000).

Threads: ``--threads N`` for every library (OpenMP through threadpoolctl, numba's
``set_num_threads``, ``BREGCLUST_NUM_THREADS``, ``faiss.omp_set_num_threads``); set
``OPENBLAS_NUM_THREADS=1`` in the environment.

Run: python benchmarks/cosine_speed.py [--n 200000] [--ks 20 256] [--iters 10] [--threads 1]
[--skip-20ng] [--skip-faiss] [--float32] [--clock wall|cpu]
[--algorithms auto lloyd yinyang hamerly cached]
"""

import argparse
import os
import time
import warnings

import numpy as np
from _common import machine, table
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import normalize

from bregclust import BregmanKMeans

#: the clock of every timing (``--clock``): wall time, or the CPU time of this process (every
#: library runs on the same ``--threads``, so CPU time is fair, and it is far less disturbed
#: by other processes on a loaded machine than wall time)
CLOCK = {"wall": time.perf_counter, "cpu": time.process_time}
_clock = CLOCK["wall"]


def _best(fn, repeat):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = _clock()
        out = fn()
        best = min(best, _clock() - t0)
    return best, out


def compare(X, k, iters, label, rows, ratios, repeat, use_faiss, algorithms=("auto",)):
    C0, _ = kmeans_plusplus(X, k, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        BregmanKMeans(k, divergence="cosine", init=C0, max_iter=1, tol=0.0).fit(X)  # compile
        t_sk, sk = _best(lambda: KMeans(k, init=C0, n_init=1, algorithm="lloyd",
                                        max_iter=iters, tol=0.0).fit(X), repeat)
        t_us, us = _best(lambda: BregmanKMeans(k, divergence="cosine", init=C0,
                                               max_iter=iters, tol=0.0).fit(X), repeat)
        others = []  # --algorithms: the other passes, same start, same run
        for alg in algorithms:
            if alg == "auto" or (alg == "cached") != hasattr(X, "tocsr"):
                continue
            t_alg, fit = _best(lambda: BregmanKMeans(k, divergence="cosine", init=C0, max_iter=iters,
                                                     tol=0.0, algorithm=alg).fit(X), repeat)
            others.append((alg, t_alg / (fit.n_iter_ + 1), fit))
    # passes over the data: scikit-learn's Lloyd loop makes one per iteration and, unless the
    # labels stopped changing (n_iter_ < max_iter with tol=0), one more for the final labels;
    # ours makes n_iter_ centre updates and n_iter_ + 1 assignment passes
    per_sk = t_sk / (sk.n_iter_ + (1 if sk.n_iter_ >= iters else 0))
    per_us = t_us / (us.n_iter_ + 1)
    row = [label, k, f"{sk.n_iter_} / {us.n_iter_}", f"{per_sk * 1e3:.1f}", f"{per_us * 1e3:.1f}",
           f"{per_us / per_sk:.2f}"]
    if use_faiss and not hasattr(X, "tocsr"):
        import faiss

        Xf = np.ascontiguousarray(X, dtype=np.float32)

        def run():
            km = faiss.Kmeans(X.shape[1], k, niter=iters, spherical=True, seed=0,
                              max_points_per_centroid=X.shape[0], verbose=False)
            km.train(Xf, init_centroids=np.ascontiguousarray(C0, dtype=np.float32))
            return km

        t_fa, _ = _best(run, repeat)
        per_fa = t_fa / iters
        row += [f"{per_fa * 1e3:.1f}", f"{per_us / per_fa:.2f}"]
    else:
        per_fa = None
        row += ["-", "-"]
    # cosine objective of both from the same start, on the same rows
    cos_us = us.inertia_
    D = np.asarray(1.0 - X @ normalize(sk.cluster_centers_).T)
    cos_sk = float(D.min(axis=1).sum())
    row += [f"{cos_us:.1f}", f"{cos_sk:.1f}"]
    rows.append(tuple(row))
    ratios.append((label, k, per_us / per_sk, per_us / per_fa if len(row) > 6 and row[6] != "-"
                   else None))
    print("| " + " | ".join(str(v) for v in row) + " |", flush=True)  # partial results
    for alg, per, fit in others:
        same = "same labels as auto" if (fit.labels_ == us.labels_).all() else "LABELS DIFFER"
        skipped = fit.n_skipped_.sum() / (fit.n_iter_ + 1) / (X.shape[0] * k)
        print(f"ALG {label}, k={k}, {alg}: {per * 1e3:.1f} ms per pass, / sklearn "
              f"{per / per_sk:.2f}, / auto {per / per_us:.2f}, {skipped:.0%} of the scores "
              f"skipped; {same}", flush=True)
    print(f"ALG {label}, k={k}, auto ({us.algorithm_}): skipped per pass "
          f"{np.round(us.n_skipped_ / (X.shape[0] * k), 2).tolist()}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000, help="rows of the dense problem")
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--ks", type=int, nargs="+", default=[20, 256])
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--skip-20ng", action="store_true")
    ap.add_argument("--skip-faiss", action="store_true")
    ap.add_argument("--float32", action="store_true", help="dense rows in float32 for everyone")
    ap.add_argument("--algorithms", nargs="+", default=["auto"],
                    choices=["auto", "lloyd", "yinyang", "hamerly", "cached"],
                    help="our passes to time beside 'auto' (ALG lines; 'cached' on CSR only)")
    ap.add_argument("--clock", choices=sorted(CLOCK), default="wall",
                    help="wall time, or this process' CPU time (for a loaded machine)")
    a = ap.parse_args()
    global _clock
    _clock = CLOCK[a.clock]
    print(f"# {machine()}")
    if a.threads is not None:
        import numba
        from threadpoolctl import threadpool_limits
        os.environ["BREGCLUST_NUM_THREADS"] = str(a.threads)
        numba.set_num_threads(min(a.threads, numba.config.NUMBA_NUM_THREADS))
        threadpool_limits(limits=a.threads, user_api="openmp")
        if not a.skip_faiss:
            import faiss
            faiss.omp_set_num_threads(a.threads)
    print(f"# threads: {a.threads or 'every core'} for every library; {a.clock} clock, best of "
          f"{a.repeat}; {a.iters} iterations from the same k-means++ start (tol=0)")
    rows, ratios = [], []
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(64, a.d))
    X = centres[rng.integers(0, 64, a.n)] + rng.normal(scale=0.6, size=(a.n, a.d))
    X = normalize(X)
    if a.float32:
        X = X.astype(np.float32)
    for k in a.ks:
        compare(X, k, a.iters, f"dense unit rows {a.n:,} x {a.d} {X.dtype}", rows, ratios, a.repeat,
                not a.skip_faiss, a.algorithms)
    if not a.skip_20ng:
        from bregclust.datasets import load_20newsgroups
        ng = load_20newsgroups(vectorizer="tfidf")
        for k in a.ks:
            compare(ng.X, k, a.iters, f"20NG tf-idf {ng.X.shape[0]}x{ng.X.shape[1]} CSR", rows,
                    ratios, a.repeat, False, a.algorithms)
    print("\n## spherical k-means: ms per Lloyd iteration")
    table(["data", "k", "iterations sk / ours", "sklearn KMeans", "bregclust cosine",
           "ratio ours / sklearn (target <= 1.0)", "faiss spherical", "ratio ours / faiss",
           "sum(1 - cos) ours", "sum(1 - cos) sklearn centres"], rows)
    print("\n## ratio rows (time per pass, ours / peer; target <= 1.0 against scikit-learn)")
    for label, k, r_sk, r_fa in ratios:
        fa = "" if r_fa is None else f"; ours / faiss {r_fa:.2f}"
        print(f"RATIO {label}, k={k}: ours / sklearn {r_sk:.2f} "
              f"({'met' if r_sk <= 1.0 else 'missed'}){fa}")


if __name__ == "__main__":
    main()
