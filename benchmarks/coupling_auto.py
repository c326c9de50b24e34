"""Label-free choice of the other multi-task methods' coupling parameters (issue 16, item 2).

For kernel MTC (``NonparametricKernelMTC`` ``C``), MTCMRL (``ModelRelationClustering``
``alpha``) and LSSMTC (``SharedSubspaceClustering`` ``lam``) this sweeps the coupling over a
grid at small scale (``--n-max`` rows per task) and records, per seed and value, the NMI per
task (scoring only) and two label-free quantities of the fitted partitions:

* ``own``: the single-task k-means objective of each task's partition on the unit-norm tf-idf
  rows (squared Euclidean to the partition's own cluster means, divided by ``n_t``), summed
  over tasks. This is the criterion that works for MBC (``lam="auto"``): pick the coupling
  whose partitions are the best single-task clusterings, the decoupled value included.
* ``dm``: the mean over task pairs of the EMD between the tasks' partitions (cluster means and
  proportions, squared Euclidean), the analogue of MBC's ``d_M``; ``dm ratio`` is relative to
  the decoupled value.

Printed per method and data set: mean NMI, ``own`` and ``dm`` ratio per value, and the mean NMI
of the rule "argmin own over the grid (decoupled included)" against the decoupled value and
the documented default.

Usage::

    python benchmarks/coupling_auto.py --datasets digits,webkb4,rec.vs.talk --runs 3 --n-max 300
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mtc_compare import load, representations, subsample  # noqa: E402

from bregclust.kernel_mtc import NonparametricKernelMTC  # noqa: E402
from bregclust.metrics import nmi, partition_emd  # noqa: E402
from bregclust.model_relation import ModelRelationClustering  # noqa: E402
from bregclust.shared_subspace import SharedSubspaceClustering  # noqa: E402

#: method -> (representation, parameter, grid with the decoupled value first, default value,
#: constructor(ks, value, seed, n_total)).
METHODS = {
    "LNKMTC C": ("tfidf", "C", (0.0, 1.0, 10.0, 100.0, 500.0, 1000.0), 1.0,
                 lambda ks, v, seed, n: NonparametricKernelMTC(
                     ks[0] if len(set(ks)) == 1 else list(ks), joint=len(set(ks)) == 1,
                     C=v, b=min(30, n - 2), n_neighbors=10, random_state=seed)),
    "MTCMRL alpha": ("tfidf", "alpha", (0.0, 0.25, 0.5, 1.0, 2.0, 4.0), 4.0,
                     lambda ks, v, seed, n: ModelRelationClustering(
                         list(ks), lam=4.0, alpha=v, mu=0.5, beta=0.5, random_state=seed)),
    "LSSMTC lam": ("counts", "lam", (1.0, 0.75, 0.5, 0.25), 0.5,
                   lambda ks, v, seed, n: SharedSubspaceClustering(
                       max(ks), n_components=2, lam=v, init="random", random_state=seed)),
}


def _means(X, lab, k):
    X = np.asarray(X.todense()) if hasattr(X, "todense") else np.asarray(X)
    U = np.zeros((k, X.shape[1]))
    w = np.bincount(lab, minlength=k).astype(float)
    np.add.at(U, lab, X)
    U[w > 0] /= w[w > 0, None]
    return X, U, w / w.sum()


def own_and_dm(Xs, labels, ks):
    own = 0.0
    mix = []
    for X, lab, k in zip(Xs, labels, ks):
        lab = np.asarray(lab)
        Xd, U, p = _means(X, lab, max(k, int(lab.max()) + 1))
        own += float(((Xd - U[lab]) ** 2).sum()) / Xd.shape[0]
        mix.append((U, p))
    T = len(Xs)
    dm = np.mean([partition_emd(mix[t][0], mix[t][1], mix[s][0], mix[s][1], "sqeuclidean")
                  for t in range(T) for s in range(T) if s != t])
    return own, float(dm)


def run(name, args):
    Xs, ys, _, is_text = load(name)
    if args.n_max > 0:
        Xs, ys = subsample(Xs, ys, args.n_max)
    ys = [np.asarray(y) for y in ys]
    ks = [int(np.unique(y).size) for y in ys]
    reps = representations(Xs, is_text)
    evalX = reps["tfidf"]
    n = sum(X.shape[0] for X in Xs)
    for method in args.methods:
        rep, pname, grid, default, make = METHODS[method]
        t0 = time.perf_counter()
        N = np.zeros((args.runs, len(grid), len(Xs)))
        O = np.zeros((args.runs, len(grid)))
        D = np.zeros((args.runs, len(grid)))
        for seed in range(args.runs):
            for g, v in enumerate(grid):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    labels = make(ks, v, seed, n).fit(reps[rep]).labels_
                labels = [np.asarray(lab) for lab in labels]
                N[seed, g] = [nmi(y, lab) for y, lab in zip(ys, labels)]
                O[seed, g], D[seed, g] = own_and_dm(evalX, labels, ks)
        print(f"\n{name} ({' + '.join(str(X.shape[0]) for X in Xs)} rows), {method} on {rep}, "
              f"{args.runs} seeds, {time.perf_counter() - t0:.0f} s")
        print(f"| {pname} | mean NMI per task | own / own(decoupled) | dm / dm(decoupled) |")
        print("|---|---|---|---|")
        for g, v in enumerate(grid):
            print(f"| {v:g} | " + " / ".join(f"{x:.3f}" for x in N[:, g].mean(0))
                  + f" | {np.mean(O[:, g] / O[:, 0]):.4f} | {np.mean(D[:, g] / D[:, 0]):.3f} |")
        pick = O.argmin(axis=1)
        sel = N[np.arange(args.runs), pick]
        dflt = grid.index(default)
        print(f"argmin own: picks {[grid[p] for p in pick]}; mean NMI {sel.mean():.3f} vs "
              f"decoupled {N[:, 0].mean():.3f}, default {pname}={default:g} "
              f"{N[:, dflt].mean():.3f}, best fixed "
              f"{max(N[:, g].mean() for g in range(len(grid))):.3f}")
        # rank correlation of own (low is good) with NMI over the grid, per seed
        rc = [np.corrcoef(np.argsort(np.argsort(-O[s])), np.argsort(np.argsort(N[s].mean(1))))[0, 1]
              for s in range(args.runs)]
        print(f"Spearman(-own, NMI) over the grid, mean over seeds: {np.nanmean(rc):+.2f}")
        if pname == "C" and args.estimator_auto:
            # the estimator's own rule (same criterion, its own random starts per seed)
            t0 = time.perf_counter()
            picks, scores = [], []
            for seed in range(args.runs):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est = make(ks, "auto", seed, n).fit(reps[rep])
                picks.append(est.C_)
                scores.append([nmi(y, np.asarray(lab)) for y, lab in zip(ys, est.labels_)])
            print(f"estimator C='auto': picks {picks}; mean NMI per task "
                  + " / ".join(f"{x:.3f}" for x in np.mean(scores, axis=0))
                  + f" (mean {np.mean(scores):.3f}), {time.perf_counter() - t0:.0f} s")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="digits,webkb4,rec.vs.talk")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--n-max", type=int, default=300, help="rows per task (0: all)")
    ap.add_argument("--estimator-auto", action="store_true",
                    help="also fit NonparametricKernelMTC(C='auto') per seed")
    args = ap.parse_args(argv)
    args.methods = [m.strip() for m in args.methods.split(",")]
    print(f"coupling sweep ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}), "
          f"{args.runs} seeds, " + (f"at most {args.n_max} rows per task" if args.n_max > 0
                                     else "all rows"))
    for name in args.datasets.split(","):
        run(name.strip(), args)


if __name__ == "__main__":
    main()
