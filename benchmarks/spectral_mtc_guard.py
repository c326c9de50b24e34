"""Which label-free rule keeps a coupled partition of SpectralMTC only when it helps? Measured.

For every task and seed, ``SpectralMTC(base="spectral")`` (the joint transfer, candidates
``coupling`` in {0, 0.02, 0.05, 0.1}) is fitted once and every candidate partition is scored by
label-free quantities: the normalised cut on the task's own graph (``ncut``), the k-means sum of
squares on unit rows (``wcss``) and the adjusted Rand index with the single-task partition
(``ari``). The rules compared, each choosing one candidate per task and seed:

* ``single``   - always coupling 0 (the spectral base, the control);
* ``ncut+ari`` - the smallest ``ncut`` among candidates with ``ari >= 0.5`` (the previous
  default's guard);
* ``pareto``   - as ``ncut+ari``, and a coupled candidate must not raise ``wcss`` above the
  single-task partition's: it must be at least as good for both criteria (a cut that is
  smaller only because the partition drifted away from the rows' geometry is refused);
* ``ncut``     - the smallest ``ncut`` (no guard).

Printed per cell: the mean NMI of every rule (labels are read only to score) and, per rule,
the cells where it is more than 0.01 below the spectral base (``single``).

Usage::

    python benchmarks/spectral_mtc_guard.py --datasets tr11,comp.vs.sci --runs 5 --save g.json
    python benchmarks/spectral_mtc_guard.py --merge g_*.json
"""

import argparse
import json
import time
import warnings

import numpy as np
from _common import machine
from mtc_compare import load, representations, subsample
from sklearn.metrics import adjusted_rand_score
from sklearn.preprocessing import normalize

from bregclust.metrics import nmi
from bregclust.spectral_mtc import SpectralMTC, normalized_cut
from bregclust.spectral_mtc import within_cluster_unit as wcss_unit

RULES = ("single", "ncut+ari", "pareto", "ncut")


def choose(c, rule):
    """Index of the candidate a rule keeps (``c``: per-candidate lists of one task/seed)."""
    ncut, wcss, ari = (np.asarray(c[k]) for k in ("ncut", "wcss", "ari"))
    if rule == "single":
        return 0
    ok = np.ones(ncut.size, bool)
    if rule in ("ncut+ari", "pareto"):
        ok &= ari >= 0.5
    if rule == "pareto":
        ok &= wcss <= wcss[0] * (1 + 1e-9)
    ok[0] = True
    return int(np.argmin(np.where(ok, ncut, np.inf)))


def report(cells):
    head = ["data", "task"] + list(RULES)
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    worse = {r: [] for r in RULES}
    better = {r: [] for r in RULES}
    for cell in cells:
        vals = {r: float(np.mean([s["nmi"][choose(s, r)] for s in cell["seeds"]]))
                for r in RULES}
        print(f"| {cell['data']} | {cell['task']} | "
              + " | ".join(f"{vals[r]:.3f}" for r in RULES) + " |")
        for r in RULES:
            d = vals[r] - vals["single"]
            if d < -0.01:
                worse[r].append(f"{cell['data']}/{cell['task']} {d:+.3f}")
            if d > 0.01:
                better[r].append(f"{cell['data']}/{cell['task']} {d:+.3f}")
    for r in RULES[1:]:
        print(f"{r}: above the spectral base by > .01 on {len(better[r])} cells "
              f"({'; '.join(better[r])}); below by > .01 on {len(worse[r])} "
              f"({'; '.join(worse[r])})")


EXPORT = {"single": "SpecMTC-spectral-mu0", "pareto": "SpecMTC-spectral",
          "ncut+ari": "SpecMTC-spectral-agree", "ncut": "SpecMTC-spectral-noguard"}


def export(cells, path):
    """The rules' mean NMI per cell in ``mtc_compare.py``'s ``--save`` format."""
    out = [dict(data=c["data"], task=c["task"], best=None, best_b=None, baselines={},
                mt={EXPORT[r]: float(np.mean([s["nmi"][choose(s, r)] for s in c["seeds"]]))
                    for r in RULES}, marks={}) for c in cells]
    with open(path, "w") as fh:
        json.dump({"methods": [EXPORT[r] for r in RULES], "cells": out}, fh, indent=1)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", default="digits,tr11,tr23,webkb4,tr45,comp.vs.sci,hitech")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--save", metavar="FILE")
    p.add_argument("--merge", nargs="+", metavar="FILE")
    p.add_argument("--export", metavar="FILE",
                   help="with --merge: write the rules' mean NMI in mtc_compare.py's --save "
                        "format (no baselines: --merge it after a file that has them), as its "
                        "controls on the spectral base: single = SpecMTC-spectral-mu0, pareto = "
                        "SpecMTC-spectral, ncut+ari = SpecMTC-spectral-agree, ncut = "
                        "SpecMTC-spectral-noguard")
    args = p.parse_args(argv)
    if args.merge:
        cells = []
        for f in args.merge:
            with open(f) as fh:
                cells += json.load(fh)
        report(cells)
        if args.export:
            export(cells, args.export)
        return
    print(f"spectral_mtc_guard: {machine()}; seeds 0..{args.runs - 1}")
    cells = []
    for name in [d.strip() for d in args.datasets.split(",") if d.strip()]:
        t0 = time.perf_counter()
        Xs, ys, names, is_text = load(name)
        if args.quick:
            Xs, ys = subsample(Xs, ys, 150)
        X = representations(Xs, is_text)["tfidf"]
        ys = [np.asarray(y) for y in ys]
        ks = [int(np.unique(y).size) for y in ys]
        per = [dict(data=name, task=names[t], seeds=[]) for t in range(len(X))]
        for seed in range(args.runs):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = SpectralMTC(ks, base="spectral", min_agreement=-1.0,
                                  random_state=seed).fit(X)
            for t in range(len(X)):
                labs = [est.labels_per_coupling_[i][t] for i in range(est.couplings_.size)]
                Xn = normalize(X[t])
                per[t]["seeds"].append(dict(
                    nmi=[float(nmi(ys[t], lab)) for lab in labs],
                    ncut=[normalized_cut(est.affinity_matrices_[t], lab) for lab in labs],
                    wcss=[wcss_unit(Xn, lab) for lab in labs],
                    ari=[float(adjusted_rand_score(labs[0], lab)) for lab in labs]))
        cells += per
        print(f"{name}: {time.perf_counter() - t0:.0f} s", flush=True)
        if args.save:
            with open(args.save, "w") as fh:
                json.dump(cells, fh)
    report(cells)


if __name__ == "__main__":
    main()
