"""Label-free choice of a task's base clusterer: spectral clustering or k-means, measured.

For every task of the ``mtc_compare.py`` data sets and every seed, three single-task partitions
of the representation SpectralMTC is given (tf-idf rows for text, pixels for digits):

* ``sc``  - spectral clustering on the cosine 10-NN graph (= the NCut baseline, same seeds);
* ``skm`` - squared-Euclidean k-means on the unit-norm rows (spherical-like k-means);
* ``kl``  - kl k-means on the rows scaled to sum to one;

and, for reference only, the table's ``kl k-means on tf`` baseline. Each label-free criterion
picks one of ``sc`` / ``skm`` / ``kl`` per task and seed; the script prints, per cell, every
criterion's mean NMI and its picks against the oracle (the base of largest mean NMI), then per
criterion: how often it picks the oracle, W / T / L against the table's best single-task
baseline (the best of k-means sq, kl on tf, NCut, as ``mtc_compare.py``), the mean gap and
the data sets whose mean is more than 0.02 below.

Criteria (none is the normalised cut or the k-means objective alone, which favour one side):

* ``regret``  - each base's partition is scored by the three bases' own objectives (normalised
  cut on the task's graph, k-means sum of squares on unit rows, kl k-means objective on the
  sum-one rows); a partition's regret is the mean over the three of ``obj / min_over_bases - 1``;
  the smallest regret wins (the partition that is good for every base's criterion). Set
  before the first run; it picked spectral clustering on every cell of the first 18;
* ``gain``    - the same with every objective measured as a gain over chance (normalised cut
  ``K - 1``, the one-cluster k-means objectives): regret ``mean_c 1 - gain / best gain``
  (:func:`bregclust.spectral_mtc.base_regret`, what ``SpectralMTC(base="auto")`` uses).
  Devised after ``regret`` failed on the first 18 cells (the relative differences of k-means
  sums of squares on sparse text are tiny beside those of cuts); reviews, ohscal and NG20
  were not looked at before it was fixed;
* ``consensus`` - the base whose partition has the largest mean ARI with the other two;
* ``silhouette`` - cosine silhouette of the partition (at most 2,000 sampled rows);
* ``stability`` - mean ARI between the base's partitions over the seeds (task level, not per
  seed: a fit would have to run each base several times);
* ``modularity`` - the base whose partition has the largest modularity on the task's cosine
  kNN graph (:func:`bregclust.spectral_mtc.modularity`: within-cluster edge weight beyond what
  chance gives for the same cluster volumes; what ``SpectralMTC(base="auto")`` uses since
  session 16). Rule fixed before any cell was scored by it: both bases' partitions on the same
  graph, against chance for their own cluster sizes, ties to the earlier base;
* ``eigengap`` - spectral clustering when the normalised graph's relative eigengap at K,
  ``(mu_K - mu_{K+1}) / (1 - mu_{K+1})``, is at least ``--gap`` (default 0.05, fixed before
  the run), else the better of the two k-means by ``regret``.

Usage::

    python benchmarks/spectral_mtc_basechoice.py --datasets digits,tr11 --runs 5 --save bc.json
    python benchmarks/spectral_mtc_basechoice.py --merge bc_*.json
"""

import argparse
import json
import time
import warnings

import numpy as np
import scipy.sparse as sp
from _common import machine
from mtc_compare import DATASETS, fit_baseline, load, representations, subsample
from scipy.sparse.linalg import eigsh
from sklearn.metrics import adjusted_rand_score, silhouette_score
from sklearn.preprocessing import normalize

from bregclust.kmeans import BregmanKMeans
from bregclust.metrics import nmi
from bregclust.spectral_mtc import (
    base_regret,
    kl_objective,
    modularity,
    normalized_cut,
    spectral_labels,
    task_graph,
)
from bregclust.spectral_mtc import within_cluster_unit as wcss_unit

BASES = ("sc", "skm", "kl")
CRITERIA = ("regret", "gain", "consensus", "silhouette", "stability", "eigengap", "modularity")
TIE = 0.01


def eigengap(W, k):
    """Relative eigengap at ``k`` of the normalised adjacency ``D^-1/2 W D^-1/2`` (no loops)."""
    W = sp.csr_matrix(W, dtype=float, copy=True)
    W.setdiag(0.0)
    W.eliminate_zeros()
    d = np.asarray(W.sum(axis=1)).ravel()
    d = np.where(d > 0, 1.0 / np.sqrt(np.where(d > 0, d, 1.0)), 0.0)
    A = sp.diags(d) @ W @ sp.diags(d)
    mu = np.sort(eigsh(A, k=k + 1, which="LA", return_eigenvectors=False, tol=1e-6,
                       v0=np.ones(A.shape[0]))) [::-1]
    return float((mu[k - 1] - mu[k]) / max(1.0 - mu[k], 1e-12))


def run_task(X, tf, y, k, runs):
    """Per seed: partitions and NMI of the bases and the criteria's inputs."""
    Xn = normalize(X)
    P = normalize(X, norm="l1")
    W = task_graph(X)
    out = dict(nmi={b: [] for b in BASES + ("kl_tf",)}, obj=[], sil=[], mod=[],
               labels={b: [] for b in BASES})
    for seed in range(runs):
        lab = {"sc": spectral_labels(W, k, random_state=seed),
               "skm": BregmanKMeans(k, random_state=seed).fit(Xn).labels_,
               "kl": BregmanKMeans(k, divergence="kl", random_state=seed).fit(P).labels_}
        for b in BASES:
            out["labels"][b].append(np.asarray(lab[b], dtype=np.int64))
            out["nmi"][b].append(float(nmi(y, lab[b])))
        out["nmi"]["kl_tf"].append(float(nmi(y, fit_baseline("k-means kl", tf, k, seed))))
        out["obj"].append({b: [normalized_cut(W, lab[b]), wcss_unit(Xn, lab[b]),
                               kl_objective(P, lab[b])] for b in BASES})
        out["mod"].append({b: modularity(W, lab[b]) for b in BASES})
        ns = min(2000, X.shape[0])
        out["sil"].append({b: float(silhouette_score(Xn, lab[b], metric="cosine",
                                                     sample_size=ns, random_state=0))
                           if np.unique(lab[b]).size > 1 else -1.0 for b in BASES})
    out["gap"] = eigengap(W, k)
    one = np.zeros(X.shape[0], dtype=np.int64)
    out["chance"] = [k - 1.0, wcss_unit(Xn, one), kl_objective(P, one)]
    out["stab"] = {b: float(np.mean([adjusted_rand_score(a, c)
                                     for i, a in enumerate(out["labels"][b])
                                     for c in out["labels"][b][i + 1:]])) if runs > 1 else 1.0
                   for b in BASES}
    out["cons"] = [{b: float(np.mean([adjusted_rand_score(out["labels"][b][s],
                                                          out["labels"][c][s])
                                      for c in BASES if c != b])) for b in BASES}
                   for s in range(runs)]
    del out["labels"]
    return out


def picks(cell, gap_min):
    """Per criterion, the base picked at every seed."""
    runs = len(cell["obj"])
    res = {}
    regret = []
    for s in range(runs):
        o = np.array([cell["obj"][s][b] for b in BASES])  # bases x objectives
        r = np.mean(o / np.maximum(o.min(axis=0), 1e-12) - 1.0, axis=1)
        regret.append(BASES[int(np.argmin(r))])
    res["regret"] = regret
    res["gain"] = [BASES[int(np.argmin(base_regret([cell["obj"][s][b] for b in BASES],
                                                   cell["chance"])))] for s in range(runs)]
    res["consensus"] = [max(BASES, key=lambda b: cell["cons"][s][b]) for s in range(runs)]
    res["silhouette"] = [max(BASES, key=lambda b: cell["sil"][s][b]) for s in range(runs)]
    res["stability"] = [max(BASES, key=lambda b: cell["stab"][b])] * runs
    eg = []
    for s in range(runs):
        if cell["gap"] >= gap_min:
            eg.append("sc")
        else:
            o = np.array([cell["obj"][s][b] for b in ("skm", "kl")])
            r = np.mean(o / np.maximum(o.min(axis=0), 1e-12) - 1.0, axis=1)
            eg.append(("skm", "kl")[int(np.argmin(r))])
    res["eigengap"] = eg
    if "mod" in cell:  # cells saved before the criterion existed have none
        res["modularity"] = [max(BASES, key=lambda b: cell["mod"][s][b]) for s in range(runs)]
    return res


def report(cells, gap_min):
    print("\n## Per cell: mean NMI of each base (5 seeds), the oracle base, and each criterion's "
          "mean NMI [picks]\n")
    head = ["data", "task", "best baseline", "sc", "skm", "kl", "oracle", "gap"] + list(CRITERIA)
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    summ = {c: dict(hit=0, seeds=0, marks=[], gaps=[]) for c in CRITERIA + ("oracle",)}
    per_data = {c: {} for c in CRITERIA + ("oracle",)}
    for cell in cells:
        m = {b: float(np.mean(cell["nmi"][b])) for b in BASES}
        oracle = max(BASES, key=m.get)
        best = cell["best"]
        row = [cell["data"], cell["task"], f"{best:.3f} ({cell['best_b']})"]
        row += [f"{m[b]:.3f}" for b in BASES] + [oracle, f"{cell['gap']:.3f}"]
        pk = picks(cell, gap_min)
        pk["oracle"] = [oracle] * len(cell["obj"])
        for c in CRITERIA + ("oracle",):
            if c not in pk:  # a cell saved before the criterion existed
                row.append("-")
                continue
            v = float(np.mean([cell["nmi"][b][s] for s, b in enumerate(pk[c])]))
            d = v - best
            summ[c]["hit"] += sum(b == oracle for b in pk[c])
            summ[c]["seeds"] += len(pk[c])
            summ[c]["marks"].append("W" if d > TIE else ("T" if d >= -TIE else "L"))
            summ[c]["gaps"].append(d)
            per_data[c].setdefault(cell["data"], []).append(d)
            if c != "oracle":
                counts = {b: pk[c].count(b) for b in BASES if pk[c].count(b)}
                row.append(f"{v:.3f} [" + ",".join(f"{b}{n}" for b, n in counts.items()) + "]")
        print("| " + " | ".join(row) + " |")
    print(f"\n## Per criterion over {len(cells)} cells (oracle: the base of largest mean NMI; "
          "W/T/L against the table's best single-task baseline)\n")
    print("| criterion | picks = oracle (seeds) | W | T | L | mean gap | data sets below -0.02 |")
    print("|---|---|---|---|---|---|---|")
    for c in CRITERIA + ("oracle",):
        s = summ[c]
        below = [d for d, v in per_data[c].items() if np.mean(v) < -0.02]
        print(f"| {c} | {s['hit']}/{s['seeds']} | {s['marks'].count('W')} | "
              f"{s['marks'].count('T')} | {s['marks'].count('L')} | {np.mean(s['gaps']):+.3f} | "
              f"{len(below)} ({', '.join(f'{d} {np.mean(per_data[c][d]):+.3f}' for d in below)}) |")


def add_chance(cells):
    """The chance objectives of cells saved before they were recorded."""
    for name in dict.fromkeys(c["data"] for c in cells if "chance" not in c):
        Xs, ys, names, is_text = load(name)
        X = representations(Xs, is_text)["tfidf"]
        for cell in cells:
            if cell["data"] == name and "chance" not in cell:
                t = names.index(cell["task"])
                one = np.zeros(X[t].shape[0], dtype=np.int64)
                cell["chance"] = [np.unique(ys[t]).size - 1.0, wcss_unit(normalize(X[t]), one),
                                  kl_objective(normalize(X[t], norm="l1"), one)]


def export(cells, path, gap_min):
    """The cells in ``mtc_compare.py``'s ``--save`` format."""
    names = {"k-means sq": "k-means sq (tf-idf)", "k-means kl": "k-means kl (tf)",
             "NCut": "NCut (cosine 10-NN)"}
    out = []
    for cell in cells:
        base = {names[b]: v for b, v in cell["baselines"].items()}
        best_b = max(base, key=base.get)
        pk = picks(cell, gap_min)
        mt = {name: float(np.mean([cell["nmi"][b][s] for s, b in enumerate(pk[c])]))
              for name, c in (("SpecMTC-mu0", "modularity"), ("SpecMTC-gain-mu0", "gain"))
              if c in pk}
        out.append(dict(data=cell["data"], task=cell["task"], best=base[best_b], best_b=best_b,
                        baselines=base, mt=mt, marks={}))
    with open(path, "w") as fh:
        json.dump({"methods": ["SpecMTC-mu0", "SpecMTC-gain-mu0"], "cells": out}, fh, indent=1)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--gap", type=float, default=0.05)
    p.add_argument("--quick", action="store_true", help="at most 150 rows per task")
    p.add_argument("--save", metavar="FILE")
    p.add_argument("--merge", nargs="+", metavar="FILE")
    p.add_argument("--add-chance", action="store_true",
                   help="with --merge: compute the chance objectives of cells saved without "
                        "them (loads the data sets)")
    p.add_argument("--export", metavar="FILE",
                   help="with --merge: write the cells in mtc_compare.py's --save format (its "
                        "three baselines, the modularity pick as SpecMTC-mu0 and the gain pick "
                        "as SpecMTC-gain-mu0: the base choice with the coupling off, the same "
                        "seeds and partitions as SpectralMTC(coupling=0) with that base_rule), "
                        "to --merge with mtc_compare runs")
    args = p.parse_args(argv)
    if args.merge:
        cells = []
        for f in args.merge:
            with open(f) as fh:
                cells += json.load(fh)
        if args.add_chance:
            add_chance(cells)
        report(cells, args.gap)
        if args.export:
            export(cells, args.export, args.gap)
        return
    print(f"spectral_mtc_basechoice: {machine()}; seeds 0..{args.runs - 1}")
    cells = []
    for name in [d.strip() for d in args.datasets.split(",") if d.strip()]:
        t0 = time.perf_counter()
        try:
            Xs, ys, names, is_text = load(name)
        except FileNotFoundError as exc:
            print(f"{name}: skipped ({exc})")
            continue
        if args.quick:
            Xs, ys = subsample(Xs, ys, 150)
        reps = representations(Xs, is_text)
        for t, (X, tf, y) in enumerate(zip(reps["tfidf"], reps["tf"], ys)):
            y = np.asarray(y)
            k = int(np.unique(y).size)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cell = run_task(X, tf, y, k, args.runs)
                base = {b: float(np.mean([nmi(y, fit_baseline(b, x, k, s))
                                          for s in range(args.runs)]))
                        for b, x in (("k-means sq", X),)}
            base["k-means kl"] = float(np.mean(cell["nmi"]["kl_tf"]))
            base["NCut"] = float(np.mean(cell["nmi"]["sc"]))
            best_b = max(base, key=base.get)
            cell.update(data=name, task=names[t], best=base[best_b], best_b=best_b,
                        baselines=base)
            cells.append(cell)
        print(f"{name}: {time.perf_counter() - t0:.0f} s", flush=True)
        if args.save:
            with open(args.save, "w") as fh:
                json.dump(cells, fh)
    report(cells, args.gap)


if __name__ == "__main__":
    main()
