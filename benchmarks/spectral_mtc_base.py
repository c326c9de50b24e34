"""Issue 38, session 20: a label-free per-task base chosen (or built) from the single-task bases.

Per data set of ``mtc_compare.py`` (its loaders and representations), per task and seed ``s``,
every candidate single-task method runs at three sub-seeds ``s, s + 100, s + 200`` (sub-seed
``s`` is the baseline's own run at seed ``s``):

* ``sq``     - k-means sq on tf-idf (``BregmanKMeans``; = ``SpectralMTC``'s spherical base);
* ``kl``     - kl k-means on tf (the issue's baseline, counts scaled to sum one);
* ``kl-tfidf`` - kl k-means on the tf-idf rows scaled to sum one (``SpectralMTC``'s kl base: the
  estimator sees tf-idf only);
* ``ncut``   - spectral clustering on the cosine 10-NN graph (NCut baseline, scaled rows);
* ``njw``    - the same embedding, k-means on its unit rows (NJW baseline).

NCut and NJW come from one embedding (``spectral_mtc._spectral_variants``, the estimator's own
code; its labels equal ``SpectralClustering``'s for the same seed). Two candidate sets:
``E`` = {sq, kl-tfidf, ncut, njw} (what ``SpectralMTC`` can run on tf-idf) and ``I`` = {sq, kl,
ncut, njw} (the issue's four baselines). Every rule uses no labels:

* ``stab``  - the method whose three sub-seed partitions agree most (mean pairwise NMI), its
  seed-``s`` partition;
* ``cons``  - the method whose seed-``s`` partition has the largest mean NMI with the other
  methods' partitions (all sub-seeds; each other method weighted equally);
* ``ens``   - spectral clustering (NJW rows) of the co-association matrix of all 12 partitions,
  each method weighted 1/4 (``bregclust._consensus.coassociation_labels``);
* ``ensavg`` - average linkage (scipy) on ``1 - S`` of the same matrix, cut at ``K`` clusters;
* ``supra`` - among the four seed-``s`` method partitions, ``ens`` and ``ensavg``, the one of
  largest ANMI with the 12 partitions (Strehl & Ghosh's supra-consensus).

DECISION RULE (written and committed before any scoring; issue 38, session 20):
decision cells webkb4, tr45, hitech (8 task cells), seeds 0-4; the gap of a rule on a cell is
its mean NMI minus the best of the four baselines' mean NMI (sq, kl, NCut, NJW, recomputed in
the same run at the same seeds), on the candidate set ``E`` (what the estimator can run).

* A (admission as an opt-in of ``SpectralMTC``): mean gap over the 8 decision cells >= -.010
  and no decision cell's gap below -.040. If several rules pass, the one of the largest mean
  gap (ties within .002 to the cheaper, in the order cons, stab, supra, ens, ensavg) is the one
  implemented; if none passes, nothing is added to the estimator.
* B (the default): ``SpectralMTC``'s default base rule changes only if a rule passes A and the
  estimator with it (coupling "auto") beats ``SpectralMTC()``'s mean gap to the best of the
  issue's three baselines on the decision cells by more than .005 with no decision cell's
  W / T / L mark going down (session 17's rule), measured by ``mtc_compare.py`` at 5 seeds.
* Held-out cells (digits, tr23, tr11, Rec.vs.Talk, Comp.vs.Sci, reviews, OHSCAL) are reported,
  never used to choose. NG20 is not run.

EXTERNAL CHECK (written and committed before its scoring, after the decision cells and the
held-out cells above were scored; session 20): the co-association ensemble ``ens`` failed A on
the decision cells but led on the held-out cells, so it is checked on task cells outside
``mtc_compare``'s 28 - the MTCMRL paper's Reuters (Cai) tasks (``mtcmrl-reuters``, 3 tasks)
and its 20 Newsgroups tasks (``mtcmrl-20ng``, the bydate test split, 4 tasks), counts given to
``mtc_compare.representations`` - 5 seeds, set ``E``. ``ens`` is called **confirmed** there if
its mean gap4 over these 7 cells is at least ``cons``'s + .005 and at least -.010, with no cell
below -.040; otherwise not confirmed. This changes nothing in the estimator this session; it is
evidence for a rule a next session may fix.

Usage::

    python spectral_mtc_base.py --datasets webkb4,tr45,hitech --runs 5 --save base_dec.json
    python spectral_mtc_base.py --score base_dec.json base_held.json
    python spectral_mtc_base.py --datasets digits --runs 1 --quick --save base_q.json
"""

import argparse
import json
import time
import warnings

import numpy as np
import scipy.sparse as sp
from _common import machine
from mtc_compare import load as load_compare
from mtc_compare import representations, subsample
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import normalize

from bregclust import datasets as ds
from bregclust._consensus import anmi, coassociation, coassociation_labels
from bregclust.kmeans import BregmanKMeans
from bregclust.metrics import nmi
from bregclust.spectral_mtc import _spectral_variants, task_graph

METHODS = ("sq", "kl", "kl-tfidf", "ncut", "njw")
SETS = {"E": ("sq", "kl-tfidf", "ncut", "njw"), "I": ("sq", "kl", "ncut", "njw")}
BASE4 = ("sq", "kl", "ncut", "njw")  # the four baselines (gap4)
BASE3 = ("sq", "kl", "ncut")  # the three (gap3)
RULES = ("stab", "cons", "ens", "ensavg", "supra")
SUB = (0, 100, 200)
DECISION = ("webkb4", "tr45", "hitech")
EXTERNAL = ("mtcmrl-reuters", "mtcmrl-20ng")


def load(name):
    """``mtc_compare``'s data sets, and the MTCMRL paper's task sets (raw counts) outside them."""
    if name == "mtcmrl-reuters":
        b = ds.load_mtcmrl_tasks("reuters", representation="counts")
    elif name == "mtcmrl-20ng":
        b = ds.load_mtcmrl_tasks("20ng", representation="counts", subset="test")
    else:
        return load_compare(name)
    return [sp.csr_matrix(X) for X in b.Xs], list(b.ys), list(b.task_names), True
TIE = 0.01


def candidates(reps, t, k, seed):
    """``{method: labels}`` of every candidate method on task ``t`` at one seed."""
    tfidf, tf = reps["tfidf"][t], reps["tf"][t]
    out = {"sq": BregmanKMeans(k, random_state=seed).fit(tfidf).labels_,
           "kl": BregmanKMeans(k, divergence="kl", random_state=seed).fit(tf).labels_,
           "kl-tfidf": BregmanKMeans(k, divergence="kl", random_state=seed).fit(
               normalize(tfidf, norm="l1")).labels_}
    lab = _spectral_variants(task_graph(tfidf, 10), k, ("scaled", "unit"), random_state=seed)
    out["ncut"], out["njw"] = lab["scaled"], lab["unit"]
    return {m: np.asarray(v, dtype=np.int64) for m, v in out.items()}


def average_linkage(parts, weights, k):
    """Average linkage on ``1 - S`` (co-association), cut at ``k`` clusters."""
    S = coassociation(parts, weights)
    D = np.clip(1.0 - S, 0.0, None)
    np.fill_diagonal(D, 0.0)
    Z = linkage(squareform(D, checks=False), method="average")
    return fcluster(Z, t=k, criterion="maxclust").astype(np.int64) - 1


def rules(runs, methods, k, seed):
    """``{rule: (labels, pick)}`` from ``runs[j][method]`` (sub-seed ``j``) at one seed."""
    parts = [runs[j][me] for me in methods for j in range(len(SUB))]
    w = np.full(len(parts), 1.0 / len(parts))
    own = {me: runs[0][me] for me in methods}
    stab = {me: np.mean([nmi(runs[a][me], runs[b][me]) for a in range(len(SUB))
                         for b in range(a + 1, len(SUB))]) for me in methods}
    cons = {me: np.mean([np.mean([nmi(own[me], runs[j][o]) for j in range(len(SUB))])
                         for o in methods if o != me]) for me in methods}
    out = {}
    order = ("ncut", "njw", "sq", "kl-tfidf", "kl")  # ties to the earlier
    ranked = sorted(methods, key=order.index)
    pick = max(ranked, key=lambda me: stab[me])
    out["stab"] = (own[pick], pick)
    pick = max(ranked, key=lambda me: cons[me])
    out["cons"] = (own[pick], pick)
    ens = coassociation_labels(parts, k, w, random_state=seed)
    out["ens"] = (ens, "ens")
    avg = average_linkage(parts, w, k)
    out["ensavg"] = (avg, "ensavg")
    supra = dict(own, ens=ens, ensavg=avg)
    score = {c: anmi(lab, parts, w) for c, lab in supra.items()}
    pick = max(list(ranked) + ["ens", "ensavg"], key=lambda c: score[c])
    out["supra"] = (supra[pick], pick)
    return out, stab, cons, score


def run_dataset(name, args):
    """Per task: NMI per seed of every method and rule, and each rule's pick."""
    Xs, ys, names, is_text = load(name)
    if args.quick:
        Xs, ys = subsample(Xs, ys, args.quick_n)
    ys = [np.asarray(y) for y in ys]
    ks = [int(np.unique(y).size) for y in ys]
    reps = representations(Xs, is_text)
    cells = []
    for t in range(len(Xs)):
        t0 = time.perf_counter()
        rec = dict(data=name, task=names[t], n=int(Xs[t].shape[0]), k=ks[t], seeds=[])
        for s in range(args.runs):
            runs = [candidates(reps, t, ks[t], s + j) for j in SUB]
            row = dict(seed=s, nmi={me: nmi(ys[t], runs[0][me]) for me in METHODS})
            for key, methods in SETS.items():
                res, stab, cons, score = rules(runs, methods, ks[t], s)
                for r, (lab, pick) in res.items():
                    row["nmi"][f"{key}:{r}"] = nmi(ys[t], lab)
                    row[f"pick {key}:{r}"] = pick
                row[f"stab {key}"] = {a: float(v) for a, v in stab.items()}
                row[f"cons {key}"] = {a: float(v) for a, v in cons.items()}
                row[f"anmi {key}"] = {a: float(v) for a, v in score.items()}
            rec["seeds"].append(row)
        cells.append(rec)
        print(f"  {name}/{names[t]}: n={rec['n']} K={ks[t]} {time.perf_counter() - t0:.1f} s",
              flush=True)
    return cells


def score(cells, key="E"):
    """Prints the per-cell table, W/T/L and the decision rule's verdict for candidate set
    ``key``; returns ``{rule: (mean gap4 on decision cells, worst decision gap4)}``."""
    cols = list(SETS[key]) + [f"{key}:{r}" for r in RULES]
    print(f"\n## Candidate set {key} = {{{', '.join(SETS[key])}}}; NMI means over seeds; "
          "gap3 / gap4: rule - best of the issue's three / of the four baselines\n")
    print("| data | task | best3 | best4 | " + " | ".join(cols) + " | picks (cons / stab / supra) |")
    print("|" + "---|" * (len(cols) + 5))
    gaps = {c: {} for c in cols}
    for c in cells:
        mean = {a: float(np.mean([r["nmi"][a] for r in c["seeds"]])) for a in c["seeds"][0]["nmi"]}
        b3 = max(mean[b] for b in BASE3)
        b4 = max(mean[b] for b in BASE4)
        picks = " / ".join(",".join(r[f"pick {key}:{x}"] for r in c["seeds"])
                           for x in ("cons", "stab", "supra"))
        print(f"| {c['data']} | {c['task']} | {b3:.3f} | {b4:.3f} | "
              + " | ".join(f"{mean[a]:.3f}" for a in cols) + f" | {picks} |")
        for a in cols:
            gaps[a][(c["data"], c["task"])] = (mean[a] - b3, mean[a] - b4)
    print("\n| method / rule | W/T/L vs 3 | mean gap3 | W/T/L vs 4 | mean gap4 | data sets "
          "below -.02 (vs 3) | decision: mean gap4 | worst gap4 | held-out mean gap4 |")
    print("|---|---|---|---|---|---|---|---|---|")
    verdict, external = {}, {}
    for a in cols:
        g = gaps[a]
        wtl = []
        for i in (0, 1):
            v = [x[i] for x in g.values()]
            wtl.append(f"{sum(x > TIE for x in v)}/{sum(-TIE <= x <= TIE for x in v)}/"
                       f"{sum(x < -TIE for x in v)}")
        data = list(dict.fromkeys(d for d, _ in g))
        below = [d for d in data if np.mean([x[0] for (dd, _), x in g.items() if dd == d]) < -.02]
        dec = [x[1] for (d, _), x in g.items() if d in DECISION]
        held = [x[1] for (d, _), x in g.items() if d not in DECISION and d not in EXTERNAL]
        ext = [x[1] for (d, _), x in g.items() if d in EXTERNAL]
        external[a] = (float(np.mean(ext)) if ext else float("nan"),
                       float(np.min(ext)) if ext else float("nan"))
        dm = float(np.mean(dec)) if dec else float("nan")
        dw = float(np.min(dec)) if dec else float("nan")
        verdict[a] = (dm, dw)
        print(f"| {a} | {wtl[0]} | {np.mean([x[0] for x in g.values()]):+.3f} | {wtl[1]} | "
              f"{np.mean([x[1] for x in g.values()]):+.3f} | {len(below)} "
              f"({', '.join(below)}) | {dm:+.4f} | {dw:+.4f} | "
              f"{(np.mean(held) if held else float('nan')):+.4f} |")
    print(f"\nDecision rule A (set {key}; decision cells {', '.join(DECISION)}): mean gap4 >= -.010 "
          "and worst cell >= -.040")
    for r in RULES:
        dm, dw = verdict[f"{key}:{r}"]
        ok = dm >= -0.010 and dw >= -0.040
        print(f"  {r}: mean {dm:+.4f}, worst {dw:+.4f} -> {'PASS' if ok else 'fail'}")
    em, ew = external[f"{key}:ens"]
    if not np.isnan(em):
        cm = external[f"{key}:cons"][0]
        ok = em >= cm + 0.005 and em >= -0.010 and ew >= -0.040
        print(f"External check (set {key}; cells of {', '.join(EXTERNAL)}): ens mean gap4 "
              f"{em:+.4f} (worst {ew:+.4f}), cons {cm:+.4f}; fixed candidates "
              + ", ".join(f"{m} {external[m][0]:+.4f}" for m in SETS[key])
              + f" -> ens {'CONFIRMED' if ok else 'not confirmed'}")
    return verdict


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", default="webkb4,tr45,hitech")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--quick-n", type=int, default=150)
    p.add_argument("--save", metavar="FILE")
    p.add_argument("--score", nargs="+", metavar="FILE", help="score saved files, run nothing")
    args = p.parse_args(argv)
    if args.score:
        cells = []
        for f in args.score:
            with open(f) as fh:
                cells += json.load(fh)["cells"]
        for key in SETS:
            score(cells, key)
        return
    print(f"spectral_mtc_base: {machine()}")
    cells = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for name in [d.strip() for d in args.datasets.split(",") if d.strip()]:
            cells += run_dataset(name, args)
            if args.save:
                with open(args.save, "w") as fh:
                    json.dump({"cells": cells}, fh, indent=0)
    for key in SETS:
        score(cells, key)


if __name__ == "__main__":
    main()
