"""Agglomerative Bregman clustering: speed and memory claims (issue 4).

1. sqeuclidean (Ward), dense Gaussian data n = 20,000, d = 50: time of ``bregman_linkage``
   divided by the time of ``fastcluster.linkage_vector(X, 'ward')`` on the same data in the same
   run (both O(n d) memory nearest-neighbour-chain implementations). Target <= 1.5. The merge
   sequences are compared too.
2. kl ("multinomial": kl on row-normalised counts, multinomial smoothing) on 20 Newsgroups
   documents over the 2,000 most frequent terms, n = 10,000: wall time and peak memory, next to
   the memory an n x n cost matrix would need.
3. Cost curve of the generic algorithm (issue 15): n = 1,000 ... 20,000 documents, models
   multinomial and kl; wall time, CPU time and peak traced memory per size, the log-log slope
   of time against n (printed, and plotted to ``--plot`` when matplotlib is installed). The
   corpus has 18,846 documents: larger sizes take the whole corpus plus documents drawn again
   (said in the table).
4. Itakura-Saito and gaussian_diag on dense data (n = 10,000, d = 50, gamma-distributed).
5. (``--drivers``) The exact and the pruned generic drivers on the same documents (both
   compiled): identical trees, and the size from which the pruned one is faster.

Kernels are compiled (or loaded from numba's cache) on a small problem first; that time is
reported separately.

    python benchmarks/agglomerative_speed.py                 # parts 1-2 (several minutes)
    python benchmarks/agglomerative_speed.py --full --plot curve.png     # parts 1-4 (hours)
    python benchmarks/agglomerative_speed.py --n-ward 5000 --n-kl 2000   # quick
    python benchmarks/agglomerative_speed.py --skip-ward --skip-kl --curve 1000,2000,5000 \
        --curve-models multinomial --n-dense 2000 --plot curve.png
    python benchmarks/agglomerative_speed.py --skip-ward --skip-kl --drivers 300,1000,2000,3000
"""

import argparse
import os
import resource
import time
import tracemalloc

# With numba threads on cores shared with other processes, OpenMP's default spin-wait at the end
# of each parallel region takes the core from the sibling thread that still has work (measured:
# a 2-thread region 10x slower than serial); passive waiting avoids it and costs only a wake-up
# per region on an idle machine. Must be set before numba loads OpenMP; an explicit value wins.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import numpy as np  # noqa: E402

from bregclust.agglomerative import bregman_linkage, compile_kernels  # noqa: E402


def _rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def bench_ward(n, d, runs, seed):
    import fastcluster

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    t = time.perf_counter()
    bregman_linkage(X[:64])
    compile_s = time.perf_counter() - t
    ours, theirs = [], []
    for _ in range(runs):
        t = time.perf_counter()
        Z = bregman_linkage(X, "sqeuclidean")
        ours.append(time.perf_counter() - t)
        print(f"  bregclust run: {ours[-1]:.2f} s", flush=True)
        t = time.perf_counter()
        Zf = fastcluster.linkage_vector(X, method="ward")
        theirs.append(time.perf_counter() - t)
    same = bool(np.array_equal(Z[:, [0, 1, 3]], Zf[:, [0, 1, 3]]))
    herr = float(np.max(np.abs(np.sqrt(2 * Z[:, 2]) - Zf[:, 2]) / np.maximum(Zf[:, 2], 1e-300)))
    print(f"\n## Ward: n={n}, d={d}, standard normal data (seed {seed}), best of {runs} run(s)")
    print(f"first call (compile or cache load) on 64 points: {compile_s:.2f} s")
    print("| implementation | time (s) |")
    print("|---|---|")
    print(f"| bregclust bregman_linkage(X, 'sqeuclidean') | {min(ours):.2f} |")
    print(f"| fastcluster.linkage_vector(X, 'ward') | {min(theirs):.2f} |")
    print(f"ratio bregclust / fastcluster = {min(ours) / min(theirs):.2f} (target <= 1.5); "
          f"identical merges: {same}; max relative height difference (sqrt(2 cost) vs h): {herr:.1e}")


def bench_kl(n, n_terms, seed):
    from bregclust.datasets import load_20newsgroups

    data = load_20newsgroups(max_features=n_terms)
    X = data.X
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.choice(X.shape[0], size=min(n, X.shape[0]), replace=False))
    X = X[idx]
    t = time.perf_counter()
    compile_kernels()  # both generic drivers (a 64-document fit would run the exact one only)
    compile_s = time.perf_counter() - t
    rss0 = _rss_mb()
    tracemalloc.start()
    t = time.perf_counter()
    c = time.process_time()
    Z = bregman_linkage(X, "multinomial")
    wall = time.perf_counter() - t
    cpu = time.process_time() - c
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss1 = _rss_mb()
    n = X.shape[0]
    dense_stats = n * n_terms * 8 / 2**20
    full = n * n * 8 / 2**20
    condensed = n * (n - 1) / 2 * 8 / 2**20
    print(f"\n## kl (multinomial model): 20 Newsgroups, {n} documents (random, seed {seed}) x "
          f"{n_terms} most frequent terms, nnz/doc = {X.nnz / n:.1f}")
    print(f"{data.description}")
    print(f"first call (compile or cache load of every agglomerative kernel): {compile_s:.2f} s")
    print("| quantity | value |")
    print("|---|---|")
    print(f"| wall time (CPU time of this process) | {wall:.1f} s ({cpu:.1f} s) |")
    print(f"| peak traced allocations during the call (tracemalloc) | {peak / 2**20:.0f} MiB |")
    print(f"| process peak RSS before / after the call | {rss0:.0f} / {rss1:.0f} MiB |")
    print(f"| dense n x d statistics alone | {dense_stats:.0f} MiB |")
    print(f"| an n x n float64 cost matrix | {full:.0f} MiB ({condensed:.0f} MiB condensed) |")
    print(f"root cost {Z[-1, 2]:.4g}; heights monotone: {bool(np.all(np.diff(Z[:, 2]) >= 0))}")


def _sample_docs(X, n, rng):
    """``n`` random documents (sorted); beyond the corpus size, the whole corpus plus
    documents drawn again."""
    N = X.shape[0]
    if n <= N:
        return np.sort(rng.choice(N, size=n, replace=False)), 0
    extra = rng.choice(N, size=n - N, replace=True)
    return np.concatenate([np.arange(N), extra]), n - N


def _timed(fn):
    tracemalloc.start()
    t = time.perf_counter()
    c = time.process_time()
    out = fn()
    wall = time.perf_counter() - t
    cpu = time.process_time() - c
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return out, wall, cpu, peak / 2**20


def engine_counters(X, model):
    """Counters of one run of the generic engine (:data:`bregclust._kernels.linkage_generic.N_STATS`
    of them): where the bound evaluations and exact costs go. Runs the whole linkage again."""
    import numba

    from bregclust import agglomerative as AG
    from bregclust._kernels import linkage_generic as KA
    from bregclust._kernels import linkage_pruned as KP

    Xv, w = AG._validate(X, model, None, None)
    plan = AG._build_plan(Xv, w, model, None, "auto")
    n = Xv.shape[0]
    si = np.zeros(n - 1, dtype=np.int64)
    sj = np.zeros(n - 1, dtype=np.int64)
    h = np.zeros(n - 1)
    stats = np.zeros(KA.N_STATS, dtype=np.int64)
    driver = KP.pruned_linkage if plan.smax > 0 else KA.generic_linkage
    st = plan.state(Xv, w)
    driver(plan.kind, st, plan.fc, plan.gcode, plan.fn, si, sj, h, numba.get_num_threads(), 0,
           stats, n - 1, AG._top_buffers(st, 0), *AG._driver_pointers(driver, st, plan))
    return dict(rescans=stats[KA.ST_RESCAN], list_hits=stats[KA.ST_LISTHIT],
                exact_builds=stats[KA.ST_FULL], bounds_initial=stats[KA.ST_B_INIT],
                bounds_rescans=stats[KA.ST_B_RESCAN], bounds_new_clusters=stats[KA.ST_B_MERGE],
                exact_costs=stats[KA.ST_EXACT], refinements=stats[KA.ST_REFINE])


def bench_curve(sizes, models, n_terms, seed, plot, counters=False):
    """Time and peak traced memory of the generic algorithm against n; log-log slope."""
    import numba

    from bregclust.datasets import load_20newsgroups

    X = load_20newsgroups(max_features=n_terms).X
    print(f"\n## Cost curve: 20 Newsgroups x {n_terms} most frequent terms, "
          f"{numba.get_num_threads()} numba threads")
    print("| model | n | repeated docs | wall (s) | CPU (s) | peak traced (MiB) | n x n float64 (MiB) |")
    print("|---|---|---|---|---|---|---|")
    curves = {}
    for model in models:
        compile_kernels()  # compile or load from cache (both generic drivers)
        for n in sizes:
            idx, rep = _sample_docs(X, n, np.random.default_rng(seed))
            Xs = X[idx]
            _, wall, cpu, peak = _timed(lambda: bregman_linkage(Xs, model))
            curves.setdefault(model, []).append((n, wall, cpu))
            print(f"| {model} | {n} | {rep} | {wall:.1f} | {cpu:.1f} | {peak:.0f} | "
                  f"{n * n * 8 / 2**20:.0f} |", flush=True)
            if counters:
                cnt = engine_counters(Xs, model)
                print("  engine counters: " + ", ".join(f"{k} {v}" for k, v in cnt.items())
                      + f"; rescans per merge {cnt['rescans'] / (n - 1):.2f}", flush=True)
    for model, pts in curves.items():
        if len(pts) >= 2:
            ns, walls, cpus = (np.array(v, dtype=float) for v in zip(*pts))
            sw = np.polyfit(np.log(ns), np.log(walls), 1)[0]
            sc = np.polyfit(np.log(ns), np.log(cpus), 1)[0]
            print(f"log-log slope of time against n, {model}: wall {sw:.2f}, CPU {sc:.2f}")
            # slope of the last two sizes, extrapolated to the sizes not measured
            s2 = np.log(cpus[-1] / cpus[-2]) / np.log(ns[-1] / ns[-2])
            for target in (10000, 20000):
                if target > ns[-1]:
                    proj = cpus[-1] * (target / ns[-1]) ** s2
                    print(f"  {model}: CPU at n = {target} projected from the last two sizes "
                          f"(slope {s2:.2f}): {proj:.0f} s")
    if plot:
        try:
            import matplotlib.pyplot as plt
        except ImportError:
            print("matplotlib not installed: no plot")
            return
        fig, ax = plt.subplots(figsize=(5, 4))
        for model, pts in curves.items():
            ns, walls, _ = zip(*pts)
            ax.loglog(ns, walls, "o-", label=model)
        ax.set_xlabel("documents n")
        ax.set_ylabel("wall time (s)")
        ax.set_title("agglomerative Bregman, generic algorithm")
        ax.legend()
        fig.tight_layout()
        fig.savefig(plot, dpi=120)
        print(f"plot written to {plot}")


def bench_dense(n, d, seed):
    """Itakura-Saito and gaussian_diag on dense positive data."""
    rng = np.random.default_rng(seed)
    X = rng.gamma(2.0, 1.0, size=(n, d))
    print(f"\n## Dense models: n={n}, d={d}, gamma(2, 1) data (seed {seed})")
    print("| model | wall (s) | CPU (s) | peak traced (MiB) |")
    print("|---|---|---|---|")
    for model in ("itakura_saito", "gaussian_diag"):
        bregman_linkage(X[:64], model)
        _, wall, cpu, peak = _timed(lambda: bregman_linkage(X, model))
        print(f"| {model} | {wall:.1f} | {cpu:.1f} | {peak:.0f} |", flush=True)


def bench_drivers(sizes, model, n_terms, seed, runs):
    """Both generic drivers on the same 20 Newsgroups documents: the exact one (every cost
    evaluated) and the pruned one (lower bounds first); identical trees, and the size from
    which the pruned driver is faster (``PRUNED_MIN_N``)."""
    import numba

    from bregclust import agglomerative as AG
    from bregclust._kernels import linkage_generic as KLG
    from bregclust._kernels import linkage_pruned as KLP
    from bregclust.datasets import load_20newsgroups

    data = load_20newsgroups(max_features=n_terms)
    print(f"\n## exact and pruned generic drivers, {model}: 20 Newsgroups x {n_terms} most "
          f"frequent terms (random documents, seed {seed}), best of {runs}; the estimators run "
          f"the pruned driver on sparse data when n > PRUNED_MIN_N = {AG.PRUNED_MIN_N}")
    print("| n | exact driver (s) | pruned driver (s) | ratio | identical merges and heights |")
    print("|---|---|---|---|---|")
    rng = np.random.default_rng(seed)
    for n in sizes:
        idx, _ = _sample_docs(data.X, n, rng)
        Xv, w = AG._validate(data.X[idx], model, None, None)
        plan = AG._build_plan(Xv, w, model, None, "auto")
        times, outs = [], []
        for driver in (KLG.generic_linkage, KLP.pruned_linkage):
            driver_best = np.inf
            for _ in range(runs):
                out = (np.zeros(n - 1, dtype=np.int64), np.zeros(n - 1, dtype=np.int64),
                       np.zeros(n - 1))
                st = plan.state(Xv, w)
                t = time.perf_counter()
                driver(plan.kind, st, plan.fc, plan.gcode, plan.fn, *out,
                       numba.get_num_threads(), 0, np.zeros(KLG.N_STATS, dtype=np.int64), n - 1,
                       AG._top_buffers(st, 0), *AG._driver_pointers(driver, st, plan))
                driver_best = min(driver_best, time.perf_counter() - t)
            times.append(driver_best)
            outs.append(out)
        same = all(np.array_equal(a, b) for a, b in zip(*outs))
        print(f"| {n} | {times[0]:.2f} | {times[1]:.2f} | {times[0] / times[1]:.1f} | {same} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-ward", type=int, default=20000)
    ap.add_argument("--d-ward", type=int, default=50)
    ap.add_argument("--n-kl", type=int, default=10000)
    ap.add_argument("--terms", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=1, help="timing repetitions (best is reported)")
    ap.add_argument("--skip-ward", action="store_true")
    ap.add_argument("--skip-kl", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--curve", default="",
                    help="comma-separated sizes of the cost curve (with --full: "
                    "1000,2000,5000,10000,20000)")
    ap.add_argument("--curve-models", default="multinomial,kl")
    ap.add_argument("--plot", default=None, help="PNG file for the cost curve")
    ap.add_argument("--n-dense", type=int, default=0,
                    help="size of the dense-model runs (0 skips them; 10000 with --full)")
    ap.add_argument("--full", action="store_true",
                    help="also the cost curve and the dense models at the issue's sizes")
    ap.add_argument("--d-dense", type=int, default=50)
    ap.add_argument("--drivers", default="",
                    help="comma-separated sizes: the exact and the pruned generic drivers on "
                    "the same documents (multinomial), e.g. 300,1000,2000,3000")
    ap.add_argument("--counters", action="store_true",
                    help="with --curve: also the engine's counters per size (runs each size "
                    "twice)")
    args = ap.parse_args(argv)
    if args.full:
        args.curve = args.curve or "1000,2000,5000,10000,20000"
        args.n_dense = args.n_dense or 10000
    import numba

    print(f"# agglomerative_speed ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          f"{numba.get_num_threads()} numba threads, OMP_WAIT_POLICY="
          f"{os.environ.get('OMP_WAIT_POLICY')}; load average {os.getloadavg()[0]:.1f})")
    if not args.skip_ward:
        bench_ward(args.n_ward, args.d_ward, args.runs, args.seed)
    if not args.skip_kl:
        bench_kl(args.n_kl, args.terms, args.seed)
    if args.curve:
        sizes = [int(v) for v in args.curve.split(",")]
        bench_curve(sizes, args.curve_models.split(","), args.terms, args.seed, args.plot,
                    args.counters)
    if args.n_dense > 0:
        bench_dense(args.n_dense, args.d_dense, args.seed)
    if args.drivers:
        bench_drivers([int(v) for v in args.drivers.split(",")], "multinomial", args.terms,
                      args.seed, args.runs)


if __name__ == "__main__":
    main()
