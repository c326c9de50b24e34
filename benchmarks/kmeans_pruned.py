"""Pruned Bregman k-means (algorithm="yinyang", "hamerly") against Lloyd, scikit-learn and faiss.

What it measures (same run, ratios, best of ``--repeat``):
1. Dense squared Euclidean, n x 50 (default n = 200,000; k overlapping blobs: centres
   N(0, 2^2), noise N(0, 3^2), so that the fit runs its iterations), k = 256 and
   1024, ``--iters`` iterations (default 50, tol = 0) from the same initial centres (k rows
   drawn at random): BregmanKMeans "auto", "yinyang", "hamerly" (``--dense-algs``) and "lloyd", scikit-learn's KMeans
   "lloyd" and "elkan", faiss-cpu's Kmeans (float32, every row used:
   ``max_points_per_centroid`` = n). Target: pruned <= 0.5 x the faster of scikit-learn's two.
2. kl k-means on 20 Newsgroups term frequencies (counts / document length, CSR, terms in >= 5
   documents), k = 256, smoothing="auto", from the same centres: "cached" (the product
   columns of unmoved centres kept), "yinyang" and "hamerly" vs our own Lloyd, identical
   labels. Target <= 0.35. A row "lloyd, changed clusters' steps only" gives Lloyd's
   passes the centre step and preparation of the changed clusters only (the cached fit's
   saving that is not pruning), and the ratios to it are printed too. The fits of this part
   run in rounds (each once per round, best of ``--repeat`` rounds). ``--breakdown``: instead,
   the time of each phase of the fastest of ``--repeat`` fits of lloyd and each text algorithm.
3. k = 20 (the dense problem of benchmarks/kmeans_speed.py) with algorithm="auto" vs "lloyd":
   auto must not be slower (it runs Lloyd's passes below AUTO_MIN_CLUSTERS clusters).

4. ``--auto-rule``: the thresholds of ``algorithm="auto"``. Decision rule, written before
   measuring (2026-11-28): each fit best of ``--repeat`` (3), all in one process.
   Dense (``AUTO_MIN_CLUSTERS``, today 64): squared Euclidean, float64, blobs (64 centres
   N(0, 4^2), noise N(0, 3^2)), shapes 200,000 x 50, 100,000 x 20 and 50,000 x 128, 20
   iterations (tol = 0) from k rows drawn at random; for k in {16, 24, 32, 48, 64}, forced
   "yinyang" against "lloyd". The threshold is the smallest k of that list at which yinyang
   takes < 0.95 of Lloyd's time on all three shapes, at that k and at every larger k of the
   list (none: it stays 64). If that k is 16 (below 20), it applies only if "auto" at part 3's
   k = 20 problem is also <= 1.00x Lloyd in the same run; else the next k (24) is taken.
   Sparse (``AUTO_CACHED_MIN_CLUSTERS``, today 128): kl on part 2's 20 Newsgroups term
   frequencies and squared Euclidean on the same documents' tf-idf (l2 rows), from the
   centres of one Lloyd iteration (``random_state=0``), ``max_iter=300``; for k in
   {32, 48, 64, 96, 128}, "cached" against "lloyd"; the same rule (< 0.95 on both data, at k
   and every larger k of the list; none: it stays 128).

Threads: ``--threads`` (default 1) limits every library to that many threads (numba,
BREGCLUST_NUM_THREADS, OpenMP through threadpoolctl, faiss.omp_set_num_threads); set
OPENBLAS_NUM_THREADS=1 in the environment. With ``--threads 1`` the clock is the CPU time of
the calling thread (``--wall`` for wall time): every library then runs on that thread, and CPU
time is what a shared, loaded machine disturbs least.

Run: python benchmarks/kmeans_pruned.py [--n 200000] [--iters 50] [--ks 256 1024] [--repeat 3]
[--threads 1] [--skip-20ng] [--skip-dense] [--skip-faiss] [--wall] [--text-algs cached ...]
[--dense-algs auto yinyang hamerly] [--auto-rule [dense|sparse]] [--breakdown]
"""

import argparse
import functools
import os
import time
import warnings

import numpy as np
from _common import machine, table
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning

from bregclust import BregmanKMeans


def timed(fn, repeat, clock):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = clock()
        out = fn()
        best = min(best, clock() - t0)
    return best, out


def timed_rounds(fns, repeat, clock):
    """``{name: (best time, last result)}``, each of ``fns`` run once per round, ``repeat``
    rounds: on a loaded machine every fit sees the same spread of load."""
    best = {name: (float("inf"), None) for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = clock()
            out = fn()
            best[name] = (min(best[name][0], clock() - t0), out)
    return best


def dense_rows(n, k, iters, repeat, clock, use_faiss, threads, algs=("yinyang", "hamerly")):
    rng = np.random.default_rng(0)
    centres = rng.normal(scale=2.0, size=(k, 50))
    X = centres[rng.integers(0, k, n)] + rng.normal(scale=3.0, size=(n, 50))
    C0 = X[rng.choice(n, k, replace=False)]
    kw = dict(init=C0, max_iter=iters, tol=0.0)
    for alg in algs:  # compile
        BregmanKMeans(k, algorithm=alg, **dict(kw, max_iter=2)).fit(X[:5000])
    t_l, lloyd = timed(lambda: BregmanKMeans(k, algorithm="lloyd", **kw).fit(X), repeat, clock)
    fits = {alg: timed(lambda: BregmanKMeans(k, algorithm=alg, **kw).fit(X), repeat, clock)
            for alg in algs}
    t_skl, skl = timed(lambda: KMeans(k, n_init=1, algorithm="lloyd", **kw).fit(X), repeat,
                       clock)
    t_ske, ske = timed(lambda: KMeans(k, n_init=1, algorithm="elkan", **kw).fit(X), repeat,
                       clock)
    best_sk = min(t_skl, t_ske)
    print(f"\n### dense n={n:,} d=50 k={k}: iterations ours lloyd "
          + "".join(f"/{a} " for a in algs) + f"{lloyd.n_iter_} "
          + "".join(f"/ {m.n_iter_} " for _, m in fits.values())
          + f", sklearn lloyd/elkan {skl.n_iter_} / {ske.n_iter_}")
    for name, (_, m) in fits.items():
        frac = m.n_skipped_ / (n * k)
        print(f"{name}: labels == lloyd: {np.array_equal(lloyd.labels_, m.labels_)}, centres "
              f"identical: {np.array_equal(lloyd.cluster_centers_, m.cluster_centers_)}; skipped "
              f"per pass (every 5th): {np.round(frac[::5], 3).tolist()}, over the fit "
              f"{frac.mean():.3f}")
    print(f"our lloyd labels == sklearn lloyd: {np.array_equal(lloyd.labels_, skl.labels_)}")
    rows = [(f"bregclust {a}", f"{t:.2f}", f"{t / best_sk:.2f}") for a, (t, _) in fits.items()]
    rows += [
        ("bregclust lloyd", f"{t_l:.2f}", f"{t_l / best_sk:.2f}"),
        ("sklearn lloyd", f"{t_skl:.2f}", f"{t_skl / best_sk:.2f}"),
        ("sklearn elkan", f"{t_ske:.2f}", f"{t_ske / best_sk:.2f}"),
    ]
    if use_faiss:
        import faiss
        faiss.omp_set_num_threads(threads)
        X32 = np.ascontiguousarray(X, dtype=np.float32)

        def run_faiss():
            km = faiss.Kmeans(50, k, niter=iters, max_points_per_centroid=n,
                              min_points_per_centroid=1, seed=0)
            km.train(X32, init_centroids=np.ascontiguousarray(C0, dtype=np.float32))
            return km

        t_f, _ = timed(run_faiss, repeat, clock)
        rows.append(("faiss-cpu (float32)", f"{t_f:.2f}", f"{t_f / best_sk:.2f}"))
    table([f"k={k}", "seconds", "ratio to sklearn's faster (target <= 0.5)"], rows)


def _lloyd_steps_fit(est, X):
    """``est.fit(X)`` (algorithm="lloyd") with Lloyd's own passes but the centre step and
    preparation of the clusters whose members changed only (those of the cached passes): the
    saving of the cached fit that is not pruning, given to Lloyd for an honest ratio."""
    import bregclust._pruned as P

    class LloydSteps(P.CachedPasses):
        def __call__(self, div, pc, extra=None, sums=True):
            k = pc.U.shape[0]
            self.total = self.n * k
            part = self.src.lloyd(div, pc, extra, sums)
            self.npass += 1
            self.skipped.append(0)
            if extra is not None or not sums or part.labels is None:
                self.labels = self.S = self.changed = None
                return part
            changed = np.ones(k, dtype=bool)
            if self.labels is not None:
                diff = part.labels != self.labels
                changed[:] = False
                changed[part.labels[diff]] = True
                changed[self.labels[diff]] = True
            self.labels, self.S, self.changed = part.labels, part.S, changed
            return part

    real = P.make_passes

    def make(src, div, algorithm, debug=False, adaptive=False):
        return LloydSteps(src, div) if algorithm == "lloyd" else real(src, div, algorithm,
                                                                       debug, adaptive)

    P.make_passes = make
    try:
        return est.fit(X)
    finally:
        P.make_passes = real


def phase_breakdown(X, k, algs, repeat, clock):
    """Where the time of one fit goes: per phase (first pass, passes, centre preparation, centre
    step, smoothing term, final exact objective, the rest), each fit of ``algs`` ``repeat``
    times, the phases of its fastest fit. The phases are timed by wrapping the library's
    functions for the duration of this call."""
    import bregclust._centroid as C
    import bregclust._execution as E
    import bregclust._pruned as P
    import bregclust._sources as S

    spent, depth = {}, [0]
    wrapped = [(C, "update_centres", "centre step"), (C, "smoothed_objective", "smoothing"),
               (E, "exact_objective", "final objective"), (E, "prepare_centres", "preparation"),
               (P.CachedPasses, "prepare", "preparation"),
               (P.CachedPasses, "update_centres", "centre step"),
               (S.InMemorySource, "lloyd", "passes"), (P.CachedPasses, "__call__", "passes"),
               (S.InMemorySource, "stats", "statistics (Lloyd: with the first pass)")]
    saved = [(owner, name, owner.__dict__[name]) for owner, name, _ in wrapped]

    def wrap(fn, key):
        def timed_fn(*args, **kwargs):
            if depth[0]:
                return fn(*args, **kwargs)
            depth[0] += 1
            t0 = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                depth[0] -= 1
                spent.setdefault(key, []).append(clock() - t0)
        return timed_fn

    for owner, name, key in wrapped:
        setattr(owner, name, wrap(owner.__dict__[name], key))
    try:
        for alg in algs:
            best = None
            for _ in range(repeat):
                spent.clear()
                t0 = clock()
                BregmanKMeans(k, algorithm=alg, divergence="kl", init=X[1], max_iter=300).fit(
                    X[0])
                total = clock() - t0
                if best is None or total < best[0]:
                    best = (total, {key: list(v) for key, v in spent.items()})
            total, phases = best
            print(f"\n{alg}: fit {total:.3f} s (best of {repeat})")
            rows = [(key, f"{sum(v):.3f}", " ".join(f"{x:.3f}" for x in v))
                    for key, v in phases.items()]
            rows.append(("the rest", f"{total - sum(sum(v) for v in phases.values()):.3f}",
                         ""))
            table(["phase", "seconds", "per call"], rows)
    finally:
        for owner, name, fn in saved:
            setattr(owner, name, fn)


def text_rows(k, repeat, clock, algs, breakdown=False):
    from sklearn.preprocessing import normalize

    from bregclust.datasets import load_20newsgroups
    ng = load_20newsgroups(vectorizer="count", min_df=5, stop_words="english",
                           remove=("headers", "footers", "quotes"))
    X = normalize(ng.X, "l1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        start = BregmanKMeans(k, divergence="kl", random_state=0, max_iter=1,
                              algorithm="lloyd").fit(X).cluster_centers_
        kw = dict(divergence="kl", init=start, max_iter=300)
        if breakdown:
            print(f"\n### where the time goes (kl on 20NG term frequencies, k={k})")
            phase_breakdown((X, start), k, ["lloyd"] + list(algs), repeat, clock)
            return
        runs = {"lloyd": lambda: BregmanKMeans(k, algorithm="lloyd", **kw).fit(X),
                "steps": lambda: _lloyd_steps_fit(BregmanKMeans(k, algorithm="lloyd", **kw), X)}
        for alg in algs:
            runs[alg] = functools.partial(
                lambda a: BregmanKMeans(k, algorithm=a, **kw).fit(X), alg)
        out = timed_rounds(runs, repeat, clock)
        (t_l, lloyd), (t_s, steps) = out.pop("lloyd"), out.pop("steps")
        fits = out
    print(f"\n### kl on 20NG term frequencies (CSR {X.shape}, nnz={X.nnz}), k={k}, "
          f"smoothing='auto': lloyd {lloyd.n_iter_} iterations")
    rows = [("bregclust lloyd", f"{t_l:.2f}", "", "", "")]
    for alg, (t, m) in fits.items():
        frac = m.n_skipped_ / (X.shape[0] * k)
        print(f"{alg}: {m.n_iter_} iterations, skipped per pass (every 5th): "
              f"{np.round(frac[::5], 3).tolist()}")
        rows.append((f"bregclust {alg}", f"{t:.2f}", f"{t / t_l:.2f}",
                     str(np.array_equal(lloyd.labels_, m.labels_)),
                     str(np.array_equal(lloyd.cluster_centers_, m.cluster_centers_))))
    rows.append(("lloyd, changed clusters' steps only", f"{t_s:.2f}", f"{t_s / t_l:.2f}",
                 str(np.array_equal(lloyd.labels_, steps.labels_)),
                 str(np.array_equal(lloyd.cluster_centers_, steps.cluster_centers_))))
    table(["fit", "seconds", "ratio to lloyd (target <= 0.35)", "identical labels",
           "identical centres"], rows)
    for alg, (t, _) in fits.items():
        print(f"{alg} / (lloyd with the centre step and preparation of changed clusters only): "
              f"{t / t_s:.2f}")


def small_k_rows(n, iters, repeat, clock):
    rng = np.random.default_rng(0)
    centres = rng.normal(scale=4.0, size=(20, 50))
    X = centres[rng.integers(0, 20, n)] + rng.normal(scale=3.0, size=(n, 50))
    C0 = X[rng.choice(n, 20, replace=False)]
    kw = dict(init=C0, max_iter=iters, tol=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t_l, _ = timed(lambda: BregmanKMeans(20, algorithm="lloyd", **kw).fit(X), repeat, clock)
        t_a, auto = timed(lambda: BregmanKMeans(20, algorithm="auto", **kw).fit(X), repeat,
                          clock)
        t_h, _ = timed(lambda: BregmanKMeans(20, algorithm="yinyang", **kw).fit(X), repeat,
                       clock)
    print(f"\n### k=20, dense n={n:,} d=50, {iters} iterations: auto ran {auto.algorithm_!r}")
    table(["fit", "seconds", "ratio to lloyd (target auto <= 1.0)"],
          [("lloyd", f"{t_l:.2f}", "1.00"), ("auto", f"{t_a:.2f}", f"{t_a / t_l:.2f}"),
           ("yinyang (forced)", f"{t_h:.2f}", f"{t_h / t_l:.2f}")])


AUTO_KS = (16, 24, 32, 48, 64)
AUTO_SHAPES = ((200_000, 50), (100_000, 20), (50_000, 128))
CACHED_KS = (32, 48, 64, 96, 128)


def _rule(ks, ratios, today):
    """The smallest k of ``ks`` at which every ratio is < 0.95, at k and every larger k
    (``ratios[k]``: a list over the shapes); ``today`` when none."""
    ok = [all(r < 0.95 for r in ratios[k]) for k in ks]
    for i, k in enumerate(ks):
        if all(ok[i:]):
            return k
    return today


def auto_rule_dense(repeat, clock):
    ratios = {k: [] for k in AUTO_KS}
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for n, d in AUTO_SHAPES:
            rng = np.random.default_rng(0)
            centres = rng.normal(scale=4.0, size=(64, d))
            X = centres[rng.integers(0, 64, n)] + rng.normal(scale=3.0, size=(n, d))
            for k in AUTO_KS:
                C0 = X[rng.choice(n, k, replace=False)]
                kw = dict(init=C0, max_iter=20, tol=0.0)
                BregmanKMeans(k, algorithm="yinyang", **dict(kw, max_iter=2)).fit(X[:5000])
                t_l, a = timed(lambda: BregmanKMeans(k, algorithm="lloyd", **kw).fit(X), repeat,
                               clock)
                t_y, b = timed(lambda: BregmanKMeans(k, algorithm="yinyang", **kw).fit(X),
                               repeat, clock)
                same = np.array_equal(a.labels_, b.labels_)
                ratios[k].append(t_y / t_l)
                rows.append((f"{n:,} x {d}", str(k), f"{t_l:.3f}", f"{t_y:.3f}",
                             f"{t_y / t_l:.2f}", str(same)))
    print("\n### dense, squared Euclidean, 20 iterations: forced yinyang vs lloyd")
    table(["shape", "k", "lloyd s", "yinyang s", "ratio (rule: < 0.95)", "same labels"], rows)
    k0 = _rule(AUTO_KS, ratios, 64)
    print(f"rule: AUTO_MIN_CLUSTERS = {k0} (before the k = 20 check when 16)")
    return k0


def auto_rule_sparse(repeat, clock):
    from sklearn.feature_extraction.text import TfidfTransformer
    from sklearn.preprocessing import normalize

    from bregclust.datasets import load_20newsgroups
    ng = load_20newsgroups(vectorizer="count", min_df=5, stop_words="english",
                           remove=("headers", "footers", "quotes"))
    data = {"kl, tf": ("kl", normalize(ng.X, "l1")),
            "sqeuclidean, tf-idf": ("sqeuclidean", TfidfTransformer().fit_transform(ng.X))}
    ratios = {k: [] for k in CACHED_KS}
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for name, (div, X) in data.items():
            for k in CACHED_KS:
                start = BregmanKMeans(k, divergence=div, random_state=0, max_iter=1,
                                      algorithm="lloyd").fit(X).cluster_centers_
                kw = dict(divergence=div, init=start, max_iter=300)
                t_l, a = timed(lambda: BregmanKMeans(k, algorithm="lloyd", **kw).fit(X), repeat,
                               clock)
                t_c, b = timed(lambda: BregmanKMeans(k, algorithm="cached", **kw).fit(X),
                               repeat, clock)
                same = np.array_equal(a.labels_, b.labels_)
                ratios[k].append(t_c / t_l)
                rows.append((name, str(k), str(a.n_iter_), f"{t_l:.3f}", f"{t_c:.3f}",
                             f"{t_c / t_l:.2f}", str(same)))
    print("\n### sparse, 20 Newsgroups: cached vs lloyd")
    table(["data", "k", "iterations", "lloyd s", "cached s", "ratio (rule: < 0.95)",
           "same labels"], rows)
    k0 = _rule(CACHED_KS, ratios, 128)
    print(f"rule: AUTO_CACHED_MIN_CLUSTERS = {k0}")
    return k0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--ks", type=int, nargs="+", default=[64, 256, 1024])
    ap.add_argument("--dense-algs", nargs="+", default=["auto", "yinyang", "hamerly"],
                    help="the algorithms of part 1 beside lloyd")
    ap.add_argument("--text-k", type=int, default=256)
    ap.add_argument("--text-algs", nargs="+", default=["cached", "yinyang", "hamerly"],
                    help="the algorithms of part 2 beside lloyd")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--skip-20ng", action="store_true")
    ap.add_argument("--skip-dense", action="store_true", help="leave out parts 1 and 3")
    ap.add_argument("--skip-faiss", action="store_true")
    ap.add_argument("--wall", action="store_true", help="wall time instead of CPU time")
    ap.add_argument("--auto-rule", nargs="?", const="both", choices=["both", "dense", "sparse"],
                    help="only part 4: measure the thresholds of algorithm='auto'")
    ap.add_argument("--breakdown", action="store_true",
                    help="part 2: the time of each phase of the fits instead of the table")
    a = ap.parse_args()
    import numba
    from threadpoolctl import threadpool_limits
    os.environ["BREGCLUST_NUM_THREADS"] = str(a.threads)
    numba.set_num_threads(min(a.threads, numba.config.NUMBA_NUM_THREADS))
    threadpool_limits(limits=a.threads, user_api="openmp")
    cpu = a.threads == 1 and not a.wall
    clock = time.thread_time if cpu else time.perf_counter
    print(f"# {machine()}")
    print(f"# threads: {a.threads} (numba, BREGCLUST_NUM_THREADS, OpenMP, faiss; "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}); clock: "
          f"{'CPU time of the calling thread' if cpu else 'wall'}; best of {a.repeat}")
    use_faiss = not a.skip_faiss
    if use_faiss:
        try:
            import faiss  # noqa: F401
        except ImportError:
            use_faiss = False
            print("# faiss-cpu not installed: its row is left out")
    if a.auto_rule:
        print("\n## 4. the thresholds of algorithm='auto'")
        if a.auto_rule in ("both", "dense"):
            k0 = auto_rule_dense(a.repeat, clock)
            if k0 <= 20:  # the k = 20 check of the rule, with the threshold it gives
                import bregclust._pruned as P
                P.AUTO_MIN_CLUSTERS = k0
                small_k_rows(a.n, 20, a.repeat, clock)
        if a.auto_rule in ("both", "sparse"):
            auto_rule_sparse(a.repeat, clock)
        return
    if not a.skip_dense:
        print(f"\n## 1. dense squared Euclidean, {a.iters} iterations from the same centres")
        for k in a.ks:
            dense_rows(a.n, k, a.iters, a.repeat, clock, use_faiss, a.threads, a.dense_algs)
    if not a.skip_20ng:
        print("\n## 2. kl on 20 Newsgroups term frequencies")
        text_rows(a.text_k, a.repeat, clock, a.text_algs, a.breakdown)
    if not a.skip_dense:
        print("\n## 3. small k: algorithm='auto'")
        small_k_rows(a.n, 20, a.repeat, clock)


if __name__ == "__main__":
    main()
