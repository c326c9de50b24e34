"""SpectralMTC with its k-means bases coupled (``kmeans_coupling="mbc"``), measured in one fit.

For every data set of ``mtc_compare.py`` and every seed, one
``SpectralMTC(kmeans_coupling="mbc", random_state=seed)`` fit on the tf-idf rows gives the
NMI of four label-free methods on every task (the same graphs, bases and seeds):

* ``SpecMTC-kmc``  - the fit's ``labels_``: modularity base rule, spectral bases coupled by the
  joint graph, k-means bases coupled in the manner of MBC under the guard;
* ``SpecMTC``      - its ``labels_without_kmeans_coupling_``: exactly ``SpectralMTC()`` (the
  default, ``kmeans_coupling="none"``);
* ``SpecMTC-gain`` - ``SpectralMTC(base_rule="gain")``, derived from the same fit: per task the
  base of smallest ``base_regret_``; a spectral task takes the coupled partition the fit's own
  per-task choice would keep (smallest normalised cut among the eligible candidates: the
  stored ``ncut_``, ``within_``, ``agreement_``); a k-means task its base partition. When the
  fit has no coupled candidates (no task kept the spectral base under modularity) and the
  gain rule keeps spectral for some task, ``SpectralMTC(base_rule="gain")`` is fitted instead;
* ``SpecMTC-kmc-nomod`` - a diagnostic: every task on a k-means base takes MBC's partition
  (``kmeans_coupled_labels_``) whatever its modularity;
* ``SpecMTC-gain-kmc`` - ``SpectralMTC(base_rule="gain", kmeans_coupling="mbc")``, fitted only
  with ``--gain-kmc`` (one more fit per seed).

``--check`` fits ``SpectralMTC()`` and ``SpectralMTC(base_rule="gain")`` as well and asserts
that the derived labels are theirs (run on a small data set).

Cells are saved in ``mtc_compare.py``'s ``--save`` format (multi-task scores only), to be merged
with a file that has the baselines, e.g. the export of ``spectral_mtc_basechoice.py``::

    python benchmarks/spectral_mtc_kmeans_coupling.py --datasets webkb4,tr45,hitech --runs 5 --save kmc_dev.json
    python benchmarks/mtc_compare.py --merge bc_export.json kmc_dev.json --methods SpecMTC,SpecMTC-kmc,SpecMTC-gain
"""

import argparse
import json
import time
import warnings

import numpy as np
from _common import machine
from mtc_compare import DATASETS, load, representations, subsample

from bregclust.metrics import nmi
from bregclust.spectral_mtc import BASES, SpectralMTC

METHODS = ("SpecMTC-kmc", "SpecMTC", "SpecMTC-gain", "SpecMTC-kmc-nomod")


def gain_labels(est, X):
    """``SpectralMTC(base_rule="gain")``'s labels from a fit of the same seeds (see above)."""
    T = len(est.labels_)
    bases = est.bases_
    mus = est.couplings_
    out = []
    for t in range(T):
        r = est.base_regret_[t]
        b = bases[int(np.flatnonzero(r <= r.min() + 1e-9)[0])] if len(bases) > 1 else bases[0]
        if b != "spectral":
            if est.base_[t] == b:
                out.append(est.labels_without_kmeans_coupling_[t])
                continue
            return None  # the k-means partition of another base is not stored: fit instead
        if mus.size == 1 and est.coupling != 0:
            return None
        eligible = est.agreement_[:, t] >= est.min_agreement
        if est.guard == "pareto":
            eligible &= est.within_[:, t] <= est.within_[0, t] * (1.0 + 1e-12)
        eligible[0] = True
        i = int(np.argmin(np.where(eligible, est.ncut_[:, t], np.inf)))
        out.append(est.labels_per_coupling_[i][t])
    return out


def run(X, ys, ks, seed, gain_kmc, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SpectralMTC(ks, kmeans_coupling="mbc", random_state=seed).fit(X)
        labs = {"SpecMTC-kmc": est.labels_, "SpecMTC": est.labels_without_kmeans_coupling_,
                # diagnostic: MBC's partition wherever a task is on a k-means base, without
                # the modularity guard (MBC's own task guard still applies)
                "SpecMTC-kmc-nomod": [c if c is not None else lab for c, lab in zip(
                    est.kmeans_coupled_labels_, est.labels_without_kmeans_coupling_)]}
        g = gain_labels(est, X)
        refit = g is None
        if refit:
            g = SpectralMTC(ks, base_rule="gain", random_state=seed).fit(X).labels_
        labs["SpecMTC-gain"] = g
        if gain_kmc:
            labs["SpecMTC-gain-kmc"] = SpectralMTC(ks, base_rule="gain", kmeans_coupling="mbc",
                                                   random_state=seed).fit(X).labels_
        if check:
            for name, kw in (("SpecMTC", {}), ("SpecMTC-gain", dict(base_rule="gain"))):
                ref = SpectralMTC(ks, random_state=seed, **kw).fit(X).labels_
                assert all(np.array_equal(a, b) for a, b in zip(ref, labs[name])), name
    info = dict(base=list(est.base_), coupled=list(est.kmeans_coupled_),
                lam=list(est.kmeans_lam_), gain_refit=refit,
                gain_base=[BASES[int(np.argmin(r))] if len(r) > 1 else est.bases_[0]
                           for r in est.base_regret_])
    return {m: [float(nmi(y, lab)) for y, lab in zip(ys, labs[m])] for m in labs}, info


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--seeds", help="comma-separated seeds (instead of 0..runs-1)")
    p.add_argument("--quick", action="store_true", help="at most 150 rows per task")
    p.add_argument("--gain-kmc", action="store_true")
    p.add_argument("--check", action="store_true",
                   help="also fit the default and the gain rule and assert the derived labels")
    p.add_argument("--save", metavar="FILE")
    args = p.parse_args(argv)
    seeds = ([int(s) for s in args.seeds.split(",")] if args.seeds else list(range(args.runs)))
    methods = list(METHODS) + (["SpecMTC-gain-kmc"] if args.gain_kmc else [])
    print(f"spectral_mtc_kmeans_coupling: {machine()}; seeds {seeds}", flush=True)
    cells = []
    for name in [d.strip() for d in args.datasets.split(",") if d.strip()]:
        if name not in DATASETS:
            p.error(f"unknown data set {name!r}; choose from {', '.join(DATASETS)}")
        t0 = time.perf_counter()
        try:
            Xs, ys, names, is_text = load(name)
        except FileNotFoundError as exc:
            print(f"{name}: skipped ({exc})")
            continue
        if args.quick:
            Xs, ys = subsample(Xs, ys, 150)
        X = representations(Xs, is_text)["tfidf"]
        ys = [np.asarray(y) for y in ys]
        ks = [int(np.unique(y).size) for y in ys]
        per = {m: [] for m in methods}
        infos = []
        for s in seeds:
            res, info = run(X, ys, ks, s, args.gain_kmc, args.check)
            for m in methods:
                per[m].append(res[m])
            infos.append(info)
            print(f"  {name} seed {s}: " + "; ".join(
                f"{m} " + "/".join(f"{v:.3f}" for v in res[m]) for m in methods)
                + f" | base {info['base']} coupled {info['coupled']} lam {info['lam']}"
                + (" (gain refit)" if info["gain_refit"] else ""), flush=True)
        for t, task in enumerate(names):
            cells.append(dict(data=name, task=task, best=None, best_b=None, baselines={},
                              mt={m: float(np.mean([r[t] for r in per[m]])) for m in methods},
                              marks={}, seeds=seeds,
                              per_seed={m: [r[t] for r in per[m]] for m in methods},
                              base=[i["base"][t] for i in infos],
                              coupled=[i["coupled"][t] for i in infos],
                              lam=[i["lam"][t] for i in infos]))
        print(f"{name}: {time.perf_counter() - t0:.0f} s", flush=True)
        for c in cells[-len(names):]:
            print(f"  {c['task']}: " + ", ".join(f"{m} {c['mt'][m]:.3f}" for m in methods)
                  + f"; coupled {sum(c['coupled'])}/{len(seeds)}", flush=True)
        if args.save:
            with open(args.save, "w") as fh:
                json.dump({"methods": methods, "cells": cells}, fh, indent=1)


if __name__ == "__main__":
    main()
