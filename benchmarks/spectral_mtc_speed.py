"""SpectralMTC against per-task spectral clustering on the same graphs, one process, one run.

Data: the tf-idf rows of a multi-task data set (default NG20-1, the representation of
``mtc_compare.py``). Timed, each the best of ``--repeats``:

* ``per-task SpectralClustering``: scikit-learn's ``SpectralClustering(affinity=
  "nearest_neighbors", n_neighbors=10)`` on every task's unit-norm rows (graph, embedding,
  k-means), the NCut baseline of ``mtc_compare.py`` (ARPACK up to 3,000 rows, LOBPCG above);
* ``SpectralMTC(base="spectral", coupling=0)``: the same computation through our code (it
  must give the same labels; printed);
* ``SpectralMTC()``: the recommended default (per-task base choice; the tasks on the
  spectral base coupled by the joint transfer, ``coupling="auto"`` over 0, 0.02, 0.05, 0.1,
  which builds the cross-task kNN graphs and embeds the joint graph three times);
* ``SpectralMTC(base="spectral")``: the coupling forced on every task (what the default
  costs when every task keeps the spectral base).

The ratio default / per-task SpectralClustering is the issue's speed figure (target: within
2x); the ratio default / ``SpectralMTC(base="spectral", coupling=0)`` (per-task spectral
clustering through our own, faster, graph code) is printed beside it. The graph construction (brute-force cosine kNN on sparse rows; the cross-task graphs
from one similarity pass per task pair, and, for comparison, from scikit-learn's neighbour
search once per direction) and one joint embedding (Lanczos, the default, and scikit-learn's
LOBPCG) are timed apart as well. Set the thread counts in the environment (e.g. ``OMP_NUM_THREADS=1
OPENBLAS_NUM_THREADS=1``); they apply to both sides.

Usage::

    python benchmarks/spectral_mtc_speed.py                       # NG20-1
    python benchmarks/spectral_mtc_speed.py --dataset digits --repeats 3
"""

import argparse
import time
import warnings

import numpy as np
from _common import machine
from mtc_compare import load, ncut_eigen_solver, representations, subsample
from sklearn.cluster import SpectralClustering
from sklearn.preprocessing import normalize

from bregclust.metrics import nmi
from bregclust.spectral_mtc import (
    SpectralMTC,
    _cross_blocks,
    _cross_knn,
    _joint_embedding,
    joint_graph,
    task_graph,
)

#: CPU seconds (``time.process_time``) of the last ``best_of``, its best repeat: on a shared
#: machine the wall time is the load's as much as the code's.
CPU = {}


def best_of(fn, repeats, name=None):
    out, best, cpu = None, np.inf, np.inf
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        best = min(best, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    CPU[name] = cpu
    return out, best


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dataset", default="ng20-1")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--max-rows", type=int, default=None,
                   help="subsample every task to this many rows (smoke test)")
    p.add_argument("--skip-forced", action="store_true",
                   help='leave out SpectralMTC(base="spectral") (the coupling on every task)')
    args = p.parse_args(argv)
    print(f"spectral_mtc_speed: {machine()}")
    Xs, ys, names, is_text = load(args.dataset)
    if args.max_rows:
        Xs, ys = subsample(Xs, ys, args.max_rows)
    X = representations(Xs, is_text)["tfidf"]
    ks = [int(np.unique(y).size) for y in ys]
    print(f"{args.dataset}: tasks of {[x.shape[0] for x in X]} rows, {X[0].shape[1]} features, "
          f"K {ks}; best of {args.repeats}")

    def per_task():
        return [SpectralClustering(k, affinity="nearest_neighbors",
                                   n_neighbors=min(10, x.shape[0] - 1), random_state=0,
                                   eigen_solver=ncut_eigen_solver(x.shape[0]))
                .fit(normalize(x)).labels_ for x, k in zip(X, ks)]

    def row(name, t, labels):
        print(f"| {name} | {t:.1f} | {t / t_base:.2f}x | {CPU[name]:.1f} | "
              f"{CPU[name] / CPU['per-task SpectralClustering']:.2f}x | "
              + " / ".join(f"{nmi(y, lab):.3f}" for y, lab in zip(ys, labels)) + " |", flush=True)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        print("| what | seconds (wall) | / per-task SpectralClustering | CPU seconds | CPU / "
              "per-task | NMI per task |")
        print("|---|---|---|---|---|---|")
        base, t_base = best_of(per_task, args.repeats, "per-task SpectralClustering")
        row("per-task SpectralClustering", t_base, base)
        auto, t_auto = best_of(lambda: SpectralMTC(ks, random_state=0).fit(X), args.repeats,
                               "SpectralMTC() (the default)")
        row("SpectralMTC() (the default)", t_auto, auto.labels_)
        print(f"default: base per task {auto.base_}, coupling kept per task {auto.coupling_}",
              flush=True)
        zero_name = 'SpectralMTC(base="spectral", coupling=0)'
        zero, t_zero = best_of(lambda: SpectralMTC(ks, base="spectral", coupling=0.0,
                                                   random_state=0).fit(X), args.repeats,
                               zero_name)
        row('SpectralMTC(base="spectral", coupling=0)', t_zero, zero.labels_)
        same = all(np.array_equal(a, b) for a, b in zip(base, zero.labels_))
        print(f'SpectralMTC(base="spectral", coupling=0) gives the per-task SpectralClustering '
              f"labels: {same}", flush=True)
        print(f"default / per-task spectral through our graph code: CPU "
              f"{CPU['SpectralMTC() (the default)'] / CPU[zero_name]:.2f}x, wall "
              f"{t_auto / t_zero:.2f}x", flush=True)
        Ws, t_graph = best_of(lambda: [task_graph(x) for x in X], args.repeats, "graph")
        _, t_cross = best_of(lambda: _cross_blocks(X, Ws, 10), args.repeats, "cross")
        _, t_cross2 = best_of(lambda: [(_cross_knn(X[s], X[t], 10), _cross_knn(X[t], X[s], 10))
                                       for s in range(len(X)) for t in range(s + 1, len(X))],
                              args.repeats, "cross2")
        print(f"parts (wall / CPU s): own kNN graphs {t_graph:.1f} / {CPU['graph']:.1f}, "
              f"cross-task kNN graphs {t_cross:.1f} / {CPU['cross']:.1f} (one pass per task "
              f"pair; scikit-learn's search once per direction: {t_cross2:.1f} / "
              f"{CPU['cross2']:.1f})", flush=True)
        J = joint_graph(X, 0.05, Ws=Ws, cross=_cross_blocks(X, Ws, 10))
        m = min(sum(ks), J.shape[0])
        _, t_lz = best_of(lambda: _joint_embedding(J, m, "auto", 0), args.repeats, "lanczos")
        _, t_lo = best_of(lambda: _joint_embedding(J, m, "lobpcg", 0), args.repeats, "lobpcg")
        print(f"joint graph at coupling 0.05 ({J.shape[0]} nodes, {m} vectors), wall / CPU s: "
              f"Lanczos (the default) {t_lz:.1f} / {CPU['lanczos']:.1f}, scikit-learn's LOBPCG "
              f"{t_lo:.1f} / {CPU['lobpcg']:.1f}", flush=True)
        if not args.skip_forced:
            spec, t_spec = best_of(lambda: SpectralMTC(ks, base="spectral",
                                                       random_state=0).fit(X), args.repeats,
                                   'SpectralMTC(base="spectral")')
            row('SpectralMTC(base="spectral")', t_spec, spec.labels_)
            print(f'base="spectral": coupling kept per task {spec.coupling_}')


if __name__ == "__main__":
    main()
