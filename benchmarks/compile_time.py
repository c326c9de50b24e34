"""First-call (compile) time of every estimator and agglomerative model, each in a fresh process.

Every case runs in its own interpreter: ``import bregclust``, one fit (the first call: numba
compiles the kernels it needs, or loads them from its on-disk cache; for a custom generator the
registration, which compiles its scalar functions, is included), then the same fit again. The
*compile* column is the first fit minus the second. Custom generators are registered in the
subprocess, so they are new to it, as in a user's session.

Two cache states:

* ``--cold``: an empty ``NUMBA_CACHE_DIR`` per case (the first fit after installing). Targets:
  every estimator <= 10 s, every agglomerative model and a newly registered generator's first
  agglomerative fit <= 15 s; then ``bregclust demo`` in a fresh process with an empty cache
  (target <= 25 s) and again with the cache it left (target <= 10 s; the difference is its
  compile part), and ``bregclust compile`` (all kernels of the built-in models) with an empty
  cache.
* warm (always): numba's cache populated (every session after the first), one process per
  case; here a first fit loads kernels and compiles only a new generator's scalar functions
  (target: its first agglomerative fit <= 5 s).

Every case compiles in its own process, on one thread (numba compiles one function at a time),
so the CPU column is close to the wall time the same first fit takes on a quiet machine; on a
machine shared with other work the wall time is longer.

The agglomerative cases use small dense data (the exact generic driver) unless named sparse:
``multinomial, sparse`` is a small document-term matrix (the exact driver: sparse fits of at
most ``PRUNED_MIN_N`` points), ``multinomial, sparse, n > 2,000`` compiles the pruned driver. The k-means cases fit 40 x 4
points, which every pass handles on the calling thread; the two named ``threaded`` (a dense
20,000 x 20 and a 3,000 x 5,000 CSR matrix, above the engine's ``PARALLEL_MIN``) compile what a
larger first fit runs on the engine's thread pool.

    python benchmarks/compile_time.py            # warm cache (populates it first)
    python benchmarks/compile_time.py --cold     # also the cold-cache columns and the demo
    python benchmarks/compile_time.py --cold --only agglomerative:kl --skip-demo --skip-warm
    python benchmarks/compile_time.py --cold --only agglomerative:kl --skip-demo --skip-warm \
        --profile 15     # also the 15 kernels whose compilation took most CPU, per case

``--profile N`` lists what numba compiled during the first fit, from its public event API
(``numba:compile`` events): per compiled function, the CPU seconds of its own compilation
(typing, lowering, LLVM optimisation and machine code of its library, callees compiled
separately left out) and with its callees. C callbacks (``cfunc``) report no events: the
difference between the first fit's CPU and the listed total is theirs (plus the run itself).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

TARGET_S = 10.0
TARGET_AGG_S = 15.0
TARGET_CUSTOM_S = 15.0
TARGET_DEMO_S = 25.0
TARGET_DEMO_WARM_S = 10.0
TARGET_WARM_CUSTOM_S = 5.0  # a new generator's first agglomerative fit, package kernels cached

_SNIPPET = r"""
import json, math, os, time, warnings
t0 = time.perf_counter()
import numpy as np
import scipy.sparse as sp
import bregclust as B
t_import = time.perf_counter() - t0
PROFILE = {profile!r}
compiled = []
if PROFILE:
    from numba.core import event as numba_event

    class _Compiles(numba_event.Listener):
        stack = []

        def on_start(self, event):
            self.stack.append([event.data.get("dispatcher"), time.process_time(), 0.0])

        def on_end(self, event):
            disp, c0, inner = self.stack.pop()
            dt = time.process_time() - c0
            if self.stack:
                self.stack[-1][2] += dt
            name = getattr(getattr(disp, "py_func", disp), "__qualname__", str(disp))
            compiled.append((dt - inner, dt, name))

    numba_event.register("numba:compile", _Compiles())
warnings.simplefilter("ignore")
rng = np.random.default_rng(0)
X = rng.uniform(0.2, 3.0, size=(40, 4))
X2 = rng.uniform(0.2, 3.0, size=(30, 4))
entry = {entry!r}
kind, _, arg = entry.partition(":")


def counts(n, d, density):
    C = rng.poisson(1.5, size=(n, d)) * (rng.random((n, d)) < density)
    C[:, 0] += 1
    return sp.csr_matrix(C.astype(float))


def cpu():
    return time.process_time()


t1 = time.perf_counter()
c1 = cpu()
if arg == "custom":  # registration (it compiles the scalar functions) counts as first call
    B.register_divergence("bench_exp_gen", phi=lambda x: math.exp(x), dphi=lambda x: math.exp(x))
    arg = "bench_exp_gen"
if kind == "kmeans":
    fit = lambda: B.BregmanKMeans(3, divergence=arg, random_state=0).fit(X)
elif kind == "kmeans32":
    fit = lambda: B.BregmanKMeans(3, divergence=arg, random_state=0).fit(X.astype(np.float32))
elif kind == "kmeansthreaded":  # above the engine's PARALLEL_MIN: passes on its thread pool
    XT = rng.normal(scale=4.0, size=(20, 20))[rng.integers(0, 20, 20_000)]
    XT += rng.normal(scale=3.0, size=XT.shape)
    fit = lambda: B.BregmanKMeans(20, divergence=arg, random_state=0).fit(XT)
elif kind == "kmeanscsr":  # 3,000 x 5,000 CSR, above PARALLEL_MIN: threaded too
    XS = sp.csr_matrix((rng.random(180_000) + 0.1, (np.repeat(np.arange(3000), 60),
                        rng.integers(0, 5000, 180_000))), shape=(3000, 5000))  # ~60 a row
    fit = lambda: B.BregmanKMeans(20, divergence=arg, random_state=0).fit(XS)
elif kind == "kmeansdask":
    import dask.array as da
    fit = lambda: B.BregmanKMeans(3, divergence=arg, random_state=0).fit(
        da.from_array(X, chunks=(20, -1))).labels_.compute()
elif kind == "mixture":
    fit = lambda: B.BregmanMixture(3, divergence=arg, random_state=0).fit(X)
elif kind == "minibatch":
    fit = lambda: B.MiniBatchBregmanKMeans(3, divergence=arg, batch_size=16,
                                           random_state=0).fit(X)
elif kind == "bisecting":
    fit = lambda: B.BisectingBregmanKMeans(3, divergence=arg, random_state=0).fit(X)
elif kind == "mbc":
    fit = lambda: B.MultitaskBregmanClustering(3, divergence=arg, lam=0.5, random_state=0).fit([X, X2])
elif kind == "agglomerative":
    params = {{"A": np.eye(4)}} if arg == "mahalanobis" else None
    data = X - 1.5 if arg == "l1_subgradient" else X
    if arg == "multinomial_sparse":
        arg, data = "multinomial", counts(60, 200, 0.03)
    elif arg == "multinomial_sparse_large":
        arg, data = "multinomial", counts(2100, 400, 0.01)
    fit = lambda: B.AgglomerativeBregman(3, model=arg, model_params=params).fit(data)
elif kind == "lnkmtc":
    fit = lambda: B.LNKMTC(3, n_init=2, random_state=0).fit([X, X2])
elif kind == "lskmtc":
    fit = lambda: B.LSKMTC(3, n_eigenvectors=10, n_init=2, random_state=0).fit([X, X2])
elif kind == "lssmtc":
    fit = lambda: B.LSSMTC(3, random_state=0).fit([X, X2])
elif kind == "lssttc":
    y = np.where(np.arange(X.shape[0]) < 20, np.arange(X.shape[0]) % 3, -1)
    fit = lambda: B.LSSTTC(n_components=2).fit(X, y)
elif kind == "mtcmrl":
    fit = lambda: B.ModelRelationClustering(3, max_iter=200, random_state=0).fit([X, X2])
elif kind == "snmf":
    fit = lambda: B.SymmetricNMF(3, max_iter=200, random_state=0).fit(X)
fit()
t2 = time.perf_counter()
c2 = cpu()
fit()
t3 = time.perf_counter()
compiled.sort(reverse=True)
print(json.dumps(dict(entry=entry, import_s=t_import, first_s=t2 - t1, again_s=t3 - t2,
                      first_cpu_s=c2 - c1, compiled=compiled[:PROFILE] if PROFILE else [],
                      compiled_total=sum(c[0] for c in compiled), n_compiled=len(compiled))))
"""

ENTRIES = [
    ("kmeans:kl", "BregmanKMeans, kl", TARGET_S),
    ("kmeans:sqeuclidean", "BregmanKMeans, sqeuclidean", TARGET_S),
    ("kmeans:custom", "BregmanKMeans, new custom generator", TARGET_CUSTOM_S),
    ("kmeans32:sqeuclidean", "BregmanKMeans, sqeuclidean, float32 data", TARGET_S),
    ("kmeansdask:sqeuclidean", "BregmanKMeans, sqeuclidean, dask array", TARGET_S),
    ("kmeansthreaded:sqeuclidean", "BregmanKMeans, sqeuclidean, 20,000 x 20 (threaded)",
     TARGET_S),
    ("kmeanscsr:sqeuclidean", "BregmanKMeans, sqeuclidean, CSR 3,000 x 5,000 (threaded)",
     TARGET_S),
    ("mixture:sqeuclidean", "BregmanMixture, sqeuclidean (Gaussian)", TARGET_S),
    ("mixture:kl", "BregmanMixture, kl (multinomial)", TARGET_S),
    ("minibatch:kl", "MiniBatchBregmanKMeans, kl", TARGET_S),
    ("bisecting:sqeuclidean", "BisectingBregmanKMeans, sqeuclidean", TARGET_S),
    ("mbc:kl", "MultitaskBregmanClustering, kl", TARGET_S),
    ("agglomerative:sqeuclidean", "AgglomerativeBregman, sqeuclidean (Ward)", TARGET_AGG_S),
    ("agglomerative:mahalanobis", "AgglomerativeBregman, mahalanobis", TARGET_AGG_S),
    ("agglomerative:kl", "AgglomerativeBregman, kl", TARGET_AGG_S),
    ("agglomerative:itakura_saito", "AgglomerativeBregman, itakura_saito", TARGET_AGG_S),
    ("agglomerative:l1_subgradient", "AgglomerativeBregman, l1_subgradient", TARGET_AGG_S),
    ("agglomerative:multinomial", "AgglomerativeBregman, multinomial", TARGET_AGG_S),
    ("agglomerative:multinomial_sparse", "AgglomerativeBregman, multinomial, sparse", TARGET_AGG_S),
    ("agglomerative:multinomial_sparse_large",
     "AgglomerativeBregman, multinomial, sparse, n > 2,000", TARGET_AGG_S),
    ("agglomerative:gaussian_diag", "AgglomerativeBregman, gaussian_diag", TARGET_AGG_S),
    ("agglomerative:gaussian_full", "AgglomerativeBregman, gaussian_full", TARGET_AGG_S),
    ("agglomerative:custom", "AgglomerativeBregman, new custom generator", TARGET_CUSTOM_S),
    ("lnkmtc", "LNKMTC", TARGET_S),
    ("lskmtc", "LSKMTC", TARGET_S),
    ("lssmtc", "LSSMTC", TARGET_S),
    ("lssttc", "LSSTTC", TARGET_S),
    ("mtcmrl", "ModelRelationClustering (MTCMRL)", TARGET_S),
    ("snmf", "SymmetricNMF", TARGET_S),
]


def run(entry, env, profile=0):
    out = subprocess.run([sys.executable, "-c", _SNIPPET.format(entry=entry, profile=profile)],
                         env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(rows, label, cold):
    print(f"\n{label}")
    print(f"{'entry point':55s} {'import s':>9s} {'first fit s':>12s} {'CPU s':>6s} "
          f"{'again s':>8s} {'compile s':>10s}  target")
    for (entry, desc, target), r in rows:
        comp = r["first_s"] - r["again_s"]
        if not cold:
            target = TARGET_WARM_CUSTOM_S if entry == "agglomerative:custom" else None
        mark = ""
        if target is not None:
            mark = f"first fit <= {target:g} s: {'OK' if r['first_s'] <= target else 'MISSED'}"
        print(f"{desc:55s} {r['import_s']:9.2f} {r['first_s']:12.2f} {r['first_cpu_s']:6.2f} "
              f"{r['again_s']:8.3f} {comp:10.2f}  {mark}")
        if r.get("compiled"):
            print(f"    numba compiled {r['n_compiled']} functions, {r['compiled_total']:.2f} s "
                  "CPU in their own compilations; the most expensive (own / with callees):")
            for own, total, name in r["compiled"]:
                print(f"    {own:6.2f} {total:6.2f}  {name}")


def timed_command(argv, env):
    """Wall and CPU seconds (user + system) of ``bregclust <argv>`` in a fresh process."""
    before = os.times()
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "bregclust.cli", *argv], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system
                                                          - before.children_system)
    return wall, cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cold", action="store_true",
                    help="also measure with an empty numba cache (and the demo)")
    ap.add_argument("--only", default=None,
                    help="comma-separated entries to run (e.g. agglomerative:kl,kmeans:kl)")
    ap.add_argument("--skip-demo", action="store_true",
                    help="with --cold: skip the `bregclust demo` and `bregclust compile` rows")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="list the N functions whose compilation took most CPU (numba events)")
    ap.add_argument("--skip-warm", action="store_true",
                    help="skip the warm-cache table (and populating the cache for it)")
    args = ap.parse_args()
    env = dict(os.environ)
    entries = ENTRIES
    if args.only:
        keep = set(args.only.split(","))
        entries = [e for e in ENTRIES if e[0] in keep]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f} at start")
    if args.cold:
        rows = []
        for e in entries:
            with tempfile.TemporaryDirectory() as tmp:
                rows.append((e, run(e[0], dict(env, NUMBA_CACHE_DIR=tmp), args.profile)))
        table(rows, "cold numba cache (first run after installing), one fresh process per case",
              True)
    if args.cold and not args.skip_demo:
        with tempfile.TemporaryDirectory() as tmp:
            cold_env = dict(env, NUMBA_CACHE_DIR=tmp)
            (demo_cold, demo_cold_cpu) = timed_command(["demo", "--quiet"], cold_env)
            (demo_warm, demo_warm_cpu) = timed_command(["demo", "--quiet"], cold_env)
        with tempfile.TemporaryDirectory() as tmp:
            comp, comp_cpu = timed_command(["compile"], dict(env, NUMBA_CACHE_DIR=tmp))
        ok = "OK" if demo_cold <= TARGET_DEMO_S else "MISSED"
        ok_warm = "OK" if demo_warm <= TARGET_DEMO_WARM_S else "MISSED"
        print(f"\n`bregclust demo`, fresh process, empty cache: {demo_cold:.1f} s, CPU "
              f"{demo_cold_cpu:.1f} s (target <= {TARGET_DEMO_S:g} s: {ok}); again with its cache: "
              f"{demo_warm:.1f} s, CPU {demo_warm_cpu:.1f} s (target <= {TARGET_DEMO_WARM_S:g} s: "
              f"{ok_warm}); compile part "
              f"{demo_cold - demo_warm:.1f} s (CPU {demo_cold_cpu - demo_warm_cpu:.1f} s)")
        print(f"`bregclust compile`, empty cache: {comp:.1f} s, CPU {comp_cpu:.1f} s")
    if args.skip_warm:
        return
    for entry, _, _ in entries:  # populate the on-disk cache
        run(entry, env)
    table([(e, run(e[0], env, args.profile)) for e in entries],
          "warm numba cache (every later session)", False)


if __name__ == "__main__":
    main()
