"""Issue 38, session 20: ``SpectralMTC(spectral_rows="unit")`` against the default on task cells
outside ``mtc_compare.py``'s 28.

Session 19 decided on three data sets inside the 28 cells (webkb4, tr45, hitech: "unit" -.0054,
default kept) while the 20 held-out cells favoured "unit" by +.040. Deciding again on those 28
cells would be choosing by the table, so this script builds task cells none of the 28 contain and
decides there, by the rule below (written and committed before any of these cells was scored with
either ``spectral_rows``).

External cells (:data:`EXTERNAL`; 11 task cells over 4 data sets, seeds 0..4):

* ``reuters`` - the MTCMRL paper's Reuters tasks (Deng Cai's ``Reuters21578.mat``, 3 tasks of 3
  topics, label = root category; ``mtcmrl_paper.load``), 3 cells.
* ``20ng-mtcmrl`` - the MTCMRL paper's 20 Newsgroups tasks (bydate test split, 3,000 most
  frequent terms, 4 tasks of 3-4 groups, label = root: comp / rec / sci / talk;
  ``mtcmrl_paper.load``), 4 cells. None of mtc_compare's ng20-1/2/3 cells is one of them (those
  label the whole corpus or random halves by 20 groups or 6 subjects); the documents are a subset
  of theirs (same corpus).
* ``reuters-mbc`` - Cai's Reuters cut in the MBC paper's manner: the topics ranked 3-6 by size
  (task 1) and 5-8 (task 2), the documents of the shared topics in both tasks; the two largest
  topics (3,713 and 2,055 documents) are left out (they would make each task one topic), ranks
  9-10 are topics of the MTCMRL tasks. 2 cells.
* ``mnist`` - the MNIST test set cut like ``make_digits_tasks`` (mtc_compare's ``digits``, the
  8x8 scikit-learn digits): task 1 digits 0-5, task 2 digits 3-9, the images of the shared digits
  3, 4, 5 split at random between the tasks, then a fixed random 1,500 images per task
  (seed 0); 784 raw pixel intensities. 2 cells.

Excluded (they are mtc_compare cells): the MTCMRL paper's WebKB4 (``load_mtcmrl_tasks("webkb4")``
is ``load_webkb4()``, mtc_compare's ``webkb4``), every ``load_mbc_tasks`` name (all nine - six
CLUTO splits, ng20-1/2/3 - are mtc_compare data sets), the MALSAR Rec.vs.Talk / Comp.vs.Sci.

Representations, baselines and methods are mtc_compare's (imported, not copied): single-task
``k-means sq (tf-idf)``, ``k-means kl (tf)``, ``NCut (cosine 10-NN)``, ``NJW (cosine 10-NN)``;
``SpecMTC`` = ``SpectralMTC()`` (today's default, ``spectral_rows="scaled"``), ``SpecMTC-njw`` =
``SpectralMTC(spectral_rows="unit")``, and both with ``coupling=0.0`` (``SpecMTC-mu0``,
``SpecMTC-njw-mu0``: the method's own single-task base). Run ``r`` gives ``random_state=r`` to
every row. A W / T / L mark compares a row's mean NMI over the seeds with the best baseline's
(W: more than .01 above, L: more than .01 below).

Decision rule (fixed before scoring; the only thing that decides)
-----------------------------------------------------------------
Per external cell c, d_c = mean NMI over seeds 0..4 of ``SpectralMTC(spectral_rows="unit")``
minus that of ``SpectralMTC()``. D = mean of d_c over the 11 cells; SE = the standard deviation
of the d_c (ddof 1) / sqrt(11); D_s = mean of d_c over the cells of data set s.
``spectral_rows="unit"`` should become the default if and only if

1. D > max(.01, 2 SE) - more than the project's tie margin (.01, one cell's W/T/L threshold,
   larger than session 19's .005 because the decision now stands on cells never seen) and more
   than two standard errors of the cell-to-cell spread, so a mean carried by one or two cells
   does not switch the default; and
2. min over the four data sets of D_s >= -.02 - no external data set's mean below the default's
   by more than the issue's per-data-set margin.

Otherwise the default stays ``"scaled"``. Reported but not deciding: W / T / L and mean gaps of
every row against the best of the four baselines (and of the issue's three); each method against
its own coupling-0 control (is a difference the coupling's or the rows'?); the MTCMRL paper's
printed rows (Tables 2-4, accuracy and NMI in %) beside ours as run, accuracy computed too.

Usage::

    python spectral_mtc_external.py --runs 5 --save ext.json          # every external cell
    python spectral_mtc_external.py --merge ext_a.json ext_b.json      # decide from saved runs
    python spectral_mtc_external.py --datasets reuters --runs 1 --quick  # smoke test
    python spectral_mtc_external.py --diagnose 20ng-mtcmrl --runs 5    # base / coupling per task
"""

import argparse
import json
import time
import warnings

import mtcmrl_paper as P
import numpy as np
from _common import machine
from mbc_mtcmrl import PAPER_MTC
from mtc_compare import (
    BASELINES,
    MT_SETTINGS,
    TIE,
    _mark,
    fit_baseline,
    fit_mt,
    representations,
    subsample,
)
from sklearn.exceptions import ConvergenceWarning

from bregclust import datasets as ds
from bregclust.metrics import clustering_accuracy, nmi

#: Today's default and the candidate, and their coupling-0 controls (mtc_compare's entries).
DEFAULT, CANDIDATE = "SpecMTC", "SpecMTC-njw"
METHODS = (DEFAULT, CANDIDATE, "SpecMTC-mu0", "SpecMTC-njw-mu0")
CONTROL = {DEFAULT: "SpecMTC-mu0", CANDIDATE: "SpecMTC-njw-mu0"}
THREE = ("k-means sq (tf-idf)", "k-means kl (tf)", "NCut (cosine 10-NN)")
FOUR = tuple(BASELINES)
EXTERNAL = ("reuters", "20ng-mtcmrl", "reuters-mbc", "mnist")
#: The rule's thresholds (see the module docstring).
MARGIN, SE_FACTOR, DATASET_FLOOR = 0.01, 2.0, -0.02
#: reuters-mbc: topic ranks (1-based, by size in Cai's file) of each task.
REUTERS_MBC_RANKS = ((3, 6), (5, 8))
MNIST_TASKS, MNIST_PER_TASK = ((0, 1, 2, 3, 4, 5), (3, 4, 5, 6, 7, 8, 9)), 1500
#: The MTCMRL paper's key of each data set that has printed rows.
PAPER_KEY = {"reuters": "reuters", "20ng-mtcmrl": "20ng"}


def _reuters_mbc():
    d = ds.load_reuters_cai()
    sizes = np.bincount(d.y)
    ranked = np.argsort(-sizes, kind="stable")  # class index by size, largest first
    task_idx, names = [], []
    for lo, hi in REUTERS_MBC_RANKS:
        cls = ranked[lo - 1:hi]
        task_idx.append(np.flatnonzero(np.isin(d.y, cls)))
        names.append("topics " + "+".join(d.target_names[c] for c in cls))
    union = np.unique(np.concatenate(task_idx))
    terms = np.flatnonzero(np.asarray((d.X[union] != 0).sum(axis=0)).ravel())
    Xs = [d.X[idx][:, terms] for idx in task_idx]
    keep = [np.asarray(X.sum(axis=1)).ravel() > 0 for X in Xs]
    return ([X[k] for X, k in zip(Xs, keep)], [d.y[i][k] for i, k in zip(task_idx, keep)],
            names, True)


def _mnist():
    d = ds.load_mnist_test()
    rng = np.random.RandomState(0)
    owner = {}
    for digit in range(10):
        users = [t for t, task in enumerate(MNIST_TASKS) if digit in task]
        if len(users) > 1:
            idx = rng.permutation(np.flatnonzero(d.y == digit))
            for part, t in zip(np.array_split(idx, len(users)), users):
                owner.update(dict.fromkeys(part.tolist(), t))
    Xs, ys, names = [], [], []
    for t, task in enumerate(MNIST_TASKS):
        idx = np.array([i for i in np.flatnonzero(np.isin(d.y, task)) if owner.get(i, t) == t])
        idx = np.sort(rng.permutation(idx)[:MNIST_PER_TASK])
        Xs.append(d.X[idx])
        ys.append(d.y[idx])
        names.append("digits " + "".join(map(str, task)))
    return Xs, ys, names, False


def load(name):
    """Raw non-negative matrices, labels, task names and the ``is_text`` flag of one data set."""
    if name in ("reuters", "20ng-mtcmrl"):
        Xs, ys, _, _ = P.load(PAPER_KEY[name], representation="counts")
        return list(Xs), list(ys), [f"task {t + 1}" for t in range(len(Xs))], True
    if name == "reuters-mbc":
        return _reuters_mbc()
    if name == "mnist":
        return _mnist()
    raise ValueError(f"unknown data set {name!r}; choose from {', '.join(EXTERNAL)}")


def run_dataset(name, runs, quick_n=None):
    """Per task, per row (baselines and methods): NMI and accuracy of every seed."""
    Xs, ys, task_names, is_text = load(name)
    if quick_n:
        Xs, ys = subsample(Xs, ys, quick_n)
    ys = [np.asarray(y) for y in ys]
    ks = [int(np.unique(y).size) for y in ys]
    reps = representations(Xs, is_text)
    print(f"\n### {name}: {len(Xs)} tasks ({' + '.join(str(X.shape[0]) for X in Xs)} rows, "
          f"{Xs[0].shape[1]} features, classes {ks})", flush=True)
    scores = {}  # row -> [task][seed] -> (nmi, acc)
    seconds = {}
    for b, rep in BASELINES.items():
        t0 = time.process_time()
        per = [[None] * runs for _ in Xs]
        for seed in range(runs):
            for t, (X, y, k) in enumerate(zip(reps[rep], ys, ks)):
                lab = fit_baseline(b, X, k, seed)
                per[t][seed] = (nmi(y, lab), clustering_accuracy(y, lab))
        scores[b], seconds[b] = per, time.process_time() - t0
    for m in METHODS:
        t0 = time.process_time()
        per = [[None] * runs for _ in Xs]
        for seed in range(runs):
            labels = fit_mt(m, MT_SETTINGS[m]["kw"], reps[MT_SETTINGS[m]["rep"]], ks, seed)
            for t, (y, lab) in enumerate(zip(ys, labels)):
                per[t][seed] = (nmi(y, lab), clustering_accuracy(y, lab))
        scores[m], seconds[m] = per, time.process_time() - t0
    print("CPU seconds (all seeds): " + ", ".join(f"{k} {v:.1f}" for k, v in seconds.items()))
    return [dict(data=name, task=task_names[t], k=ks[t], n=int(Xs[t].shape[0]),
                 rows={r: [list(v) for v in s[t]] for r, s in scores.items()})
            for t in range(len(Xs))]


def _mean(cell, row, what=0):
    return float(np.mean([v[what] for v in cell["rows"][row]]))


def cell_table(cells, names):
    """Per cell: baselines, methods (mean NMI), marks against the best of ``names``."""
    print(f"\n## Per cell: mean NMI over seeds; marks against the best of {len(names)} baselines "
          f"({', '.join(names)}); W / L: more than {TIE} above / below\n")
    header = ["data", "task", "n", "K"] + [b.split(" (")[0] + " " + b.split(" (")[1][:-1]
                                           for b in names] + ["best"] + list(METHODS)
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for c in cells:
        base = {b: _mean(c, b) for b in names}
        best_b = max(base, key=base.get)
        row = [c["data"], c["task"], str(c["n"]), str(c["k"])]
        row += [f"{base[b]:.3f}" for b in names] + [f"{base[best_b]:.3f}"]
        row += [f"{_mean(c, m):.3f} {_mark(_mean(c, m), base[best_b])}" for m in METHODS]
        print("| " + " | ".join(row) + " |")


def wtl_summary(cells, names):
    """W / T / L and mean gap of every method against the best of ``names``."""
    print(f"\n## Summary over {len(cells)} external cells against the best of {len(names)} "
          "baselines\n")
    data_sets = list(dict.fromkeys(c["data"] for c in cells))
    print("| method | W | T | L | mean gap | " + " | ".join(data_sets)
          + " | data sets below -0.02 |")
    print("|---|---|---|---|---|" + "---|" * (len(data_sets) + 1))
    for m in METHODS:
        gaps, marks = [], []
        for c in cells:
            best = max(_mean(c, b) for b in names)
            gaps.append(_mean(c, m) - best)
            marks.append(_mark(_mean(c, m), best))
        per = [float(np.mean([g for g, c in zip(gaps, cells) if c["data"] == d]))
               for d in data_sets]
        print(f"| {m} | {marks.count('W')} | {marks.count('T')} | {marks.count('L')} | "
              f"{np.mean(gaps):+.4f} | " + " | ".join(f"{v:+.3f}" for v in per)
              + f" | {sum(v < -0.02 for v in per)} |")


def decide(cells):
    """The rule of the module docstring; prints every term and returns True to switch."""
    d = np.array([_mean(c, CANDIDATE) - _mean(c, DEFAULT) for c in cells])
    n = d.size
    D = float(d.mean())
    se = float(d.std(ddof=1) / np.sqrt(n)) if n > 1 else float("inf")
    margin = max(MARGIN, SE_FACTOR * se)
    data_sets = list(dict.fromkeys(c["data"] for c in cells))
    Ds = {s: float(np.mean([v for v, c in zip(d, cells) if c["data"] == s])) for s in data_sets}
    ok1 = D > margin
    ok2 = min(Ds.values()) >= DATASET_FLOOR
    print(f"\n## Decision: {CANDIDATE} (spectral_rows='unit') vs {DEFAULT} (today's default) on "
          f"{n} external cells\n")
    print("| cell | d_c = unit - default | unit - its coupling-0 control | default - its "
          "coupling-0 control |")
    print("|---|---|---|---|")
    for v, c in zip(d, cells):
        print(f"| {c['data']}/{c['task']} | {v:+.4f} | "
              f"{_mean(c, CANDIDATE) - _mean(c, CONTROL[CANDIDATE]):+.4f} | "
              f"{_mean(c, DEFAULT) - _mean(c, CONTROL[DEFAULT]):+.4f} |")
    print("\nper data set D_s: " + ", ".join(f"{s} {v:+.4f}" for s, v in Ds.items()))
    coup = {m: float(np.mean([_mean(c, m) - _mean(c, CONTROL[m]) for c in cells]))
            for m in CONTROL}
    rows0 = float(np.mean([_mean(c, CONTROL[CANDIDATE]) - _mean(c, CONTROL[DEFAULT])
                           for c in cells]))
    print(f"coupling (method - its coupling-0 control), mean over cells: unit {coup[CANDIDATE]:+.4f}"
          f", default {coup[DEFAULT]:+.4f}; the rows alone (unit-mu0 - default-mu0) "
          f"{rows0:+.4f}")
    print(f"(1) D = {D:+.4f} > max({MARGIN}, {SE_FACTOR:g} SE = {SE_FACTOR * se:.4f}) = "
          f"{margin:.4f}: {'yes' if ok1 else 'no'}")
    print(f"(2) min D_s = {min(Ds.values()):+.4f} >= {DATASET_FLOOR}: {'yes' if ok2 else 'no'}")
    switch = ok1 and ok2
    print("Verdict: " + ("SWITCH - spectral_rows='unit' should become the default" if switch
                         else "KEEP - the default stays spectral_rows='scaled'"))
    return switch


def paper_table(cells):
    """The MTCMRL paper's printed rows beside ours as run (accuracy / NMI in %, mean +- std)."""
    for name, key in PAPER_KEY.items():
        cs = [c for c in cells if c["data"] == name]
        if not cs:
            continue
        print(f"\n## {P.TABLE[key]} of the MTCMRL paper: as printed and as run (acc / NMI in %, "
              "mean ± std over runs)\n")
        print("| row | " + " | ".join(c["task"] for c in cs) + " | mean acc / NMI |")
        print("|---|" + "---|" * (len(cs) + 1))
        printed = dict(P.PAPER[key], **PAPER_MTC[key])
        for method in ("k-means", "SNMF", "MTCMRL", "S-MBC", "MTSC", "SAMTC"):
            rows = printed[method][:len(cs)]
            print(f"| as printed {method} | " + " | ".join(
                f"{a:.2f}±{sa:.2f} / {b:.2f}±{sb:.2f}" for a, sa, b, sb in rows)
                + f" | {np.mean([r[0] for r in rows]):.2f} / {np.mean([r[2] for r in rows]):.2f} |")
        for r in FOUR + METHODS:
            vals = [np.array(c["rows"][r]) * 100 for c in cs]
            print(f"| as run {r} | " + " | ".join(
                f"{v[:, 1].mean():.2f}±{v[:, 1].std():.2f} / {v[:, 0].mean():.2f}±"
                f"{v[:, 0].std():.2f}" for v in vals)
                + f" | {np.mean([v[:, 1].mean() for v in vals]):.2f} / "
                f"{np.mean([v[:, 0].mean() for v in vals]):.2f} |")


def diagnose(name, runs):
    """Per task and seed: the base each of the default and "unit" chose and the coupling it took
    (``base_``, ``coupling_``), with the NMI: where do the two differ? (Not used to decide.)"""
    from bregclust.spectral_mtc import SpectralMTC

    Xs, ys, task_names, is_text = load(name)
    Xs = representations(Xs, is_text)["tfidf"]
    ks = [int(np.unique(y).size) for y in ys]
    print(f"\n## Diagnostic ({name}): base chosen / coupling taken / NMI per seed, default "
          "(scaled rows) vs unit rows\n")
    print("| task | seed | default: base, coupling, NMI | unit: base, coupling, NMI |")
    print("|---|---|---|---|")
    fits = {seed: {r: SpectralMTC(ks, spectral_rows=r, random_state=seed).fit(Xs)
                   for r in ("scaled", "unit")} for seed in range(runs)}
    for t, y in enumerate(ys):
        for seed in range(runs):
            cols = [f"{f.base_[t]}, {f.coupling_[t]:g}, {nmi(y, f.labels_[t]):.3f}"
                    for f in fits[seed].values()]
            print(f"| {task_names[t]} | {seed} | " + " | ".join(cols) + " |")


def report(cells):
    cell_table(cells, FOUR)
    wtl_summary(cells, FOUR)
    print("\n(against the issue's three baselines, NJW not counted:)")
    wtl_summary(cells, THREE)
    paper_table(cells)
    return decide(cells)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", default=",".join(EXTERNAL),
                   help="comma-separated, from: " + ", ".join(EXTERNAL))
    p.add_argument("--runs", type=int, default=5, help="seeds 0..runs-1 (default 5)")
    p.add_argument("--quick", action="store_true", help="at most --quick-n rows per task")
    p.add_argument("--quick-n", type=int, default=120)
    p.add_argument("--save", metavar="FILE", help="write the cells as JSON after every data set")
    p.add_argument("--merge", nargs="+", metavar="FILE", help="report saved cells, run nothing")
    p.add_argument("--diagnose", metavar="DATASETS",
                   help="only the per-task base / coupling diagnostic on these data sets")
    args = p.parse_args(argv)
    if args.diagnose:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            for name in args.diagnose.split(","):
                diagnose(name, args.runs)
        return
    if args.merge:
        cells = []
        for f in args.merge:
            with open(f) as fh:
                cells += json.load(fh)["cells"]
        print(f"spectral_mtc_external --merge {' '.join(args.merge)}: {len(cells)} cells")
        report(cells)
        return
    names = [d.strip() for d in args.datasets.split(",") if d.strip()]
    for d in names:
        if d not in EXTERNAL:
            p.error(f"unknown data set {d!r}; choose from {', '.join(EXTERNAL)}")
    if args.runs < 1:
        p.error("--runs must be at least 1")
    print(f"spectral_mtc_external: {machine()}")
    print(f"seeds 0..{args.runs - 1}; data sets {', '.join(names)}"
          + (f"; --quick: at most {args.quick_n} rows per task" if args.quick else ""))
    cells = []
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", UserWarning)
        for name in names:
            cells += run_dataset(name, args.runs, args.quick_n if args.quick else None)
            if args.save:
                with open(args.save, "w") as fh:
                    json.dump({"runs": args.runs, "cells": cells}, fh, indent=1)
    report(cells)
    print(f"total {time.perf_counter() - t0:.0f} s wall")


if __name__ == "__main__":
    main()
