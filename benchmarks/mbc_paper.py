"""Reproduce Tables 3 and 4 of Zhang & Zhang, "Multitask Bregman Clustering" (AAAI 2010).

For every data set of the paper that is available (sports is not), two tasks are built with the
paper's splits (``bregclust.datasets.load_mbc_tasks``, see ../shared/data/DATA.md). Each run
draws k-means++ centres for both tasks from one random stream; IND (``BregmanKMeans`` on each
task, the paper's k-means baseline) and MBC (``MultitaskBregmanClustering``, lam = 0.5,
uniform marginals as in the paper) start from those same centres. Printed: mean +- std over
the runs of NMI and ARI per task (Table 3), ``d_M`` between the two tasks' fitted mixtures
(empirical proportions, cost ``d(u^1_z, u^2_l)``; "true" = class means and class proportions)
and ``s_nmi`` on NG20-3 (Table 4), with the paper's numbers beside ours.

Representations (``--representation``):

* ``tfidf`` (default): raw counts x smoothed idf (idf fitted on both tasks), rows L2-normalised.
* ``tf-l1``: raw counts, rows L1-normalised (term-frequency distributions).
* ``counts``: raw term counts (use with ``--divergence kl``; the "kl on raw counts" extension).

Usage::

    python benchmarks/mbc_paper.py [--runs 5] [--datasets tr11,tr45] [--representation tfidf]
        [--divergence sqeuclidean] [--lam 0.5] [--marginals uniform] [--plot-dir DIR]
    python benchmarks/mbc_paper.py --lams auto 0.05 0.1 0.5 [--runs 20] ...

``--lam`` takes a float or ``auto`` (the label-free rule, ``lam_`` printed per data set).
``--lams`` compares several couplings instead: every run draws one set of k-means++ centres,
IND and every ``lam`` start from them, and one NMI table per task is printed with IND beside
each value, the chosen ``lam_`` of ``auto`` and, for ``auto``, the count of task cells at or
above IND and the data-set means (task-averaged NMI) minus IND's.

``--plot-dir`` (needs the ``plot`` extra, matplotlib) writes the paper's Fig. 1 (pairs of
per-task NMI, IND vs MBC) per data set and a heat map of one fitted relation matrix as PNGs.
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import normalize

from bregclust.datasets import MBC_NAMES, load_mbc_tasks
from bregclust.divergences import get_divergence
from bregclust.kmeans import BregmanKMeans, auto_smoothing, bregman_kmeans_plusplus, smoothing_point
from bregclust.mbc import MultitaskBregmanClustering
from bregclust.metrics import ari, mixture_proportions, nmi, partition_emd

# Table 3 of the paper: (mean, std) of NMI IND, NMI MBC, ARI IND, ARI MBC per task.
PAPER_T3 = {
    "ng20-1": [((.40, .02), (.49, .02), (.13, .03), (.32, .02)),
               ((.40, .02), (.49, .02), (.13, .03), (.33, .02))],
    "ng20-2": [((.46, .02), (.50, .02), (.19, .04), (.33, .03)),
               ((.48, .03), (.50, .02), (.19, .05), (.30, .04))],
    "ng20-3": [((.44, .02), (.52, .02), (.15, .04), (.35, .03)),
               ((.40, .03), (.41, .02), (.12, .03), (.14, .02))],
    "reviews": [((.32, .11), (.42, .14), (.19, .15), (.35, .17)),
                ((.32, .17), (.36, .15), (.25, .22), (.31, .21))],
    "hitech": [((.28, .04), (.29, .04), (.20, .04), (.26, .05)),
               ((.14, .04), (.18, .04), (.07, .04), (.12, .04))],
    "ohscal": [((.42, .01), (.43, .01), (.31, .02), (.32, .02)),
               ((.45, .02), (.45, .02), (.32, .03), (.34, .03))],
    "tr11": [((.51, .07), (.55, .05), (.41, .12), (.45, .07)),
             ((.46, .06), (.56, .05), (.36, .10), (.47, .08))],
    "tr23": [((.24, .06), (.26, .07), (.11, .07), (.13, .08)),
             ((.24, .10), (.26, .12), (.14, .11), (.16, .15))],
    "tr45": [((.55, .06), (.56, .08), (.46, .10), (.49, .10)),
             ((.49, .06), (.53, .08), (.32, .09), (.41, .12))],
}
# Table 4: d_M (mean, std) IND, MBC, and the "true" value; s_nmi on NG20-3.
PAPER_T4 = {
    "ng20-1": ((27.39, 5.53), (4.44, 0.64), 3.67),
    "ng20-2": ((28.61, 3.21), (7.92, 2.87), 6.18),
    "reviews": ((7.33, 2.97), (3.18, 4.18), 1.64),
    "hitech": ((15.97, 0.45), (7.42, 0.23), 2.54),
    "ohscal": ((8.57, 1.06), (7.67, 1.01), 4.90),
    "tr11": ((6.33, 0.70), (2.84, 0.40), 4.16),
    "tr23": ((8.49, 0.67), (8.07, 0.80), 3.55),
    "tr45": ((11.56, 1.65), (9.34, 0.68), 7.52),
}
PAPER_SNMI = ((0.47, 0.03), (0.67, 0.01))
ORDER = ("ng20-1", "ng20-2", "ng20-3", "reviews", "hitech", "ohscal", "tr11", "tr23", "tr45")


def _load(name, representation):
    if representation == "tfidf":
        return load_mbc_tasks(name)
    data = load_mbc_tasks(name, representation="counts")
    if representation == "tf-l1":
        data.Xs = [normalize(X, norm="l1") for X in data.Xs]
        data.description += " Rows then L1-normalised by this script (term frequencies)."
    return data


def _true_mixture(X, y, div, beta):
    """Class means (smoothed like the fitted centres when ``beta > 0``) and class proportions."""
    classes, inv = np.unique(y, return_inverse=True)
    S, w = div.weighted_sums(X, inv, classes.size)
    if beta > 0:
        U = (S + beta * smoothing_point(X, div)) / (w + beta)[:, None]
    else:
        U = S / w[:, None]
    return U, w / w.sum()


def _fmt(a):
    return f"{np.mean(a):.2f}+-{np.std(a):.2f}"


def run_dataset(name, args):
    t0 = time.perf_counter()
    data = _load(name, args.representation)
    Xs, ys = data.Xs, data.ys
    K = [int(np.unique(y).size) for y in ys]
    div = get_divergence(args.divergence)
    # smoothing="auto" of IND and MBC, per task (three average cluster masses on sparse counts)
    betas = [auto_smoothing(X, div, k) for X, k in zip(Xs, K)]
    rs = np.random.RandomState(args.seed)
    res = {"IND": [], "MBC": []}
    last_relation = None
    for _run in range(args.runs):
        init = [bregman_kmeans_plusplus(X, k, div, random_state=rs, smoothing=b)[0]
                for X, k, b in zip(Xs, K, betas)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            ind = [BregmanKMeans(k, divergence=div, init=c).fit(X)
                   for X, k, c in zip(Xs, K, init)]
            mbc = MultitaskBregmanClustering(K, divergence=div, lam=_lam(args.lam),
                                             marginals=args.marginals, init=init).fit(Xs)
        for method, labels, centers in (
                ("IND", [m.labels_ for m in ind], [m.cluster_centers_ for m in ind]),
                ("MBC", mbc.labels_, mbc.cluster_centers_)):
            row = {
                "nmi": [nmi(y, lab) for y, lab in zip(ys, labels)],
                "ari": [ari(y, lab) for y, lab in zip(ys, labels)],
                "dM": partition_emd(centers[0], mixture_proportions(labels[0], K[0]),
                                    centers[1], mixture_proportions(labels[1], K[1]), div),
            }
            if name == "ng20-3":
                row["snmi"] = nmi(labels[0], labels[1])
            res[method].append(row)
        last_relation = mbc.relations_[(0, 1)]
        res["MBC"][-1]["lam_"] = mbc.lam_
        if args.progress:
            print(f"{name}: run {_run + 1}/{args.runs}, {time.perf_counter() - t0:.0f} s",
                  file=sys.stderr, flush=True)
    U1, w1 = _true_mixture(Xs[0], ys[0], div, betas[0])
    U2, w2 = _true_mixture(Xs[1], ys[1], div, betas[1])
    true_dm = partition_emd(U1, w1, U2, w2, div)
    return dict(name=name, res=res, true_dm=true_dm, K=K, shapes=[X.shape for X in Xs],
                description=data.description, seconds=time.perf_counter() - t0,
                relation=last_relation, ys=ys)


def print_tables(results, args):
    print()
    print(f"Table 3: NMI and ARI (mean+-std over {args.runs} runs; paper: 100 runs). "
          f"divergence={args.divergence}, representation={args.representation}, "
          f"lam={args.lam}, marginals={args.marginals}")
    hdr = (f"{'data':<8} {'task':<4} | {'NMI IND':>10} {'NMI MBC':>10} {'paper':>10} | "
           f"{'ARI IND':>10} {'ARI MBC':>10} {'paper':>10} | better?")
    print(hdr)
    print("-" * len(hdr))
    wins = 0
    total = 0
    for r in results:
        for t in range(2):
            ni = [row["nmi"][t] for row in r["res"]["IND"]]
            nm = [row["nmi"][t] for row in r["res"]["MBC"]]
            ai = [row["ari"][t] for row in r["res"]["IND"]]
            am = [row["ari"][t] for row in r["res"]["MBC"]]
            p = PAPER_T3.get(r["name"])
            pn = f"{p[t][0][0]:.2f}/{p[t][1][0]:.2f}" if p else "-"
            pa = f"{p[t][2][0]:.2f}/{p[t][3][0]:.2f}" if p else "-"
            better = int(np.mean(nm) > np.mean(ni)) + int(np.mean(am) > np.mean(ai))
            wins += better
            total += 2
            print(f"{r['name']:<8} X{t + 1:<3} | {_fmt(ni):>10} {_fmt(nm):>10} {pn:>10} | "
                  f"{_fmt(ai):>10} {_fmt(am):>10} {pa:>10} | {better}/2")
    print(f"MBC above IND in {wins} of {total} (task, metric) cells "
          "(paper: all cells, ties on ohscal X2 NMI).")
    print()
    print("Table 4: d_M between the two tasks' mixtures (mean+-std) and the true partitions' "
          "d_M; s_nmi on NG20-3")
    hdr = (f"{'data':<8} | {'IND':>12} {'MBC':>12} {'true':>8} | {'paper IND':>12} "
           f"{'paper MBC':>12} {'true':>6}")
    print(hdr)
    print("-" * len(hdr))
    for r in results:
        di = [row["dM"] for row in r["res"]["IND"]]
        dm = [row["dM"] for row in r["res"]["MBC"]]
        p = PAPER_T4.get(r["name"])
        ptxt = (f"{p[0][0]:>6.2f}+-{p[0][1]:<4.2f} {p[1][0]:>6.2f}+-{p[1][1]:<4.2f} {p[2]:>6.2f}"
                if p else f"{'-':>12} {'-':>12} {'-':>6}")
        print(f"{r['name']:<8} | {np.mean(di):>6.3f}+-{np.std(di):<4.3f} "
              f"{np.mean(dm):>6.3f}+-{np.std(dm):<4.3f} {r['true_dm']:>8.3f} | {ptxt}")
        if args.lam == "auto":
            chosen = [row["lam_"] for row in r["res"]["MBC"]]
            print(f"{'  lam_':<8} | chosen by lam='auto': {_lam_counts(chosen)}")
        if r["name"] == "ng20-3":
            si = [row["snmi"] for row in r["res"]["IND"]]
            sm = [row["snmi"] for row in r["res"]["MBC"]]
            print(f"{'  s_nmi':<8} | {_fmt(si):>12} {_fmt(sm):>12} {'':>8} | "
                  f"{PAPER_SNMI[0][0]:>6.2f}+-{PAPER_SNMI[0][1]:<4.2f} "
                  f"{PAPER_SNMI[1][0]:>6.2f}+-{PAPER_SNMI[1][1]:<4.2f}")
    print()
    print("Data (shapes, K, seconds for all runs of both methods):")
    for r in results:
        print(f"  {r['name']:<8} tasks {r['shapes']}, K={r['K']}, {r['seconds']:.0f} s")
    if results:
        print(f"  preprocessing ({args.representation}): {results[0]['description']}")


def _lam(text):
    return text if text == "auto" else float(text)


def _lam_counts(values):
    vals, counts = np.unique(np.round(values, 6), return_counts=True)
    return ", ".join(f"{v:g} x{c}" for v, c in zip(vals, counts))


def run_lams(name, args):
    """IND and MBC at every ``args.lams`` from the same k-means++ centres, ``args.runs`` times."""
    t0 = time.perf_counter()
    data = _load(name, args.representation)
    Xs, ys = data.Xs, data.ys
    K = [int(np.unique(y).size) for y in ys]
    div = get_divergence(args.divergence)
    betas = [auto_smoothing(X, div, k) for X, k in zip(Xs, K)]
    rs = np.random.RandomState(args.seed)
    keys = ["IND"] + list(args.lams)
    nmis = {key: [] for key in keys}
    chosen = []
    for _run in range(args.runs):
        init = [bregman_kmeans_plusplus(X, k, div, random_state=rs, smoothing=b)[0]
                for X, k, b in zip(Xs, K, betas)]
        for key in keys:
            lam = 0.0 if key == "IND" else _lam(key)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                m = MultitaskBregmanClustering(K, divergence=div, lam=lam,
                                               marginals=args.marginals, init=init).fit(Xs)
            nmis[key].append([nmi(y, lab) for y, lab in zip(ys, m.labels_)])
            if key == "auto":
                chosen.append(m.lam_)
        if args.progress:
            print(f"{name}: run {_run + 1}/{args.runs}, {time.perf_counter() - t0:.0f} s",
                  file=sys.stderr, flush=True)
    return dict(name=name, nmi={k: np.array(v) for k, v in nmis.items()}, chosen=chosen, K=K,
                shapes=[X.shape for X in Xs], seconds=time.perf_counter() - t0,
                description=data.description)


def print_lams(results, args):
    keys = list(args.lams) + ["IND"]
    print()
    print(f"NMI per task, mean over {args.runs} runs (same k-means++ centres for IND and every "
          f"lam). divergence={args.divergence}, representation={args.representation}, "
          f"marginals={args.marginals}")
    print()
    print("| data | task | " + " | ".join(f"lam={k}" for k in keys[:-1]) + " | IND | lam_ (auto) |")
    print("|---|---|" + "---|" * len(keys) + "---|")
    at_or_above = cells = 0
    worst = []
    for r in results:
        for t in range(2):
            vals = [f"{r['nmi'][k][:, t].mean():.3f}" for k in keys]
            lam_txt = _lam_counts(r["chosen"]) if r["chosen"] else "-"
            print(f"| {r['name']} | {t + 1} | " + " | ".join(vals) + f" | {lam_txt if t == 0 else ''} |")
            if "auto" in r["nmi"]:
                cells += 1
                at_or_above += int(r["nmi"]["auto"][:, t].mean() >= r["nmi"]["IND"][:, t].mean())
        if "auto" in r["nmi"]:
            worst.append((r["name"], r["nmi"]["auto"].mean() - r["nmi"]["IND"].mean()))
    print()
    if cells:
        print(f"auto at or above IND in {at_or_above} of {cells} task cells "
              f"({100.0 * at_or_above / cells:.0f}%; target >= 75%)")
        print("data-set mean NMI, auto minus IND (target >= -0.02): "
              + ", ".join(f"{n} {d:+.3f}" for n, d in worst))
    for k in keys[:-1]:
        if k == "auto":
            continue
        c = sum(int(r["nmi"][k][:, t].mean() >= r["nmi"]["IND"][:, t].mean())
                for r in results for t in range(2))
        print(f"lam={k} at or above IND in {c} of {2 * len(results)} task cells")
    print()
    for r in results:
        print(f"  {r['name']:<8} tasks {r['shapes']}, K={r['K']}, {r['seconds']:.0f} s")


def plot(results, plot_dir):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(plot_dir, exist_ok=True)
    for r in results:
        fig, ax = plt.subplots(figsize=(4, 4))
        for method, marker in (("IND", "o"), ("MBC", "x")):
            pts = np.array([row["nmi"] for row in r["res"][method]])
            ax.scatter(pts[:, 0], pts[:, 1], marker=marker, label=method)
        ax.set_xlabel("NMI task 1")
        ax.set_ylabel("NMI task 2")
        ax.set_title(f"{r['name']}: (NMI1, NMI2) per run")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(plot_dir, f"mbc_nmi_pairs_{r['name']}.png"), dpi=100)
        plt.close(fig)
        if r["relation"] is not None:
            fig, ax = plt.subplots(figsize=(4.5, 4))
            im = ax.imshow(r["relation"], cmap="viridis")
            ax.set_xlabel("cluster of task 2")
            ax.set_ylabel("cluster of task 1")
            ax.set_title(f"{r['name']}: relation matrix W^12")
            fig.colorbar(im, ax=ax)
            fig.tight_layout()
            fig.savefig(os.path.join(plot_dir, f"mbc_relation_{r['name']}.png"), dpi=100)
            plt.close(fig)
    print(f"plots written to {plot_dir}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="restarts per data set (paper: 100)")
    ap.add_argument("--datasets", default=",".join(ORDER),
                    help=f"comma-separated subset of {','.join(MBC_NAMES)}")
    ap.add_argument("--representation", choices=("tfidf", "tf-l1", "counts"), default="tfidf")
    ap.add_argument("--divergence", default="sqeuclidean")
    ap.add_argument("--lam", default="0.5", help="a float or 'auto'")
    ap.add_argument("--lams", nargs="+", default=None,
                    help="compare several couplings (floats or 'auto') with IND, e.g. auto 0.05 0.1 0.5")
    ap.add_argument("--marginals", choices=("uniform", "empirical"), default="uniform")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--progress", action="store_true", help="print one line per run to stderr")
    ap.add_argument("--plot-dir", default=None,
                    help="write PNG figures here (e.g. /tmp/bregclust_mbc_plots); needs matplotlib")
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.datasets.split(",") if n.strip()]
    args.lam = args.lam if args.lam == "auto" else float(args.lam)
    if args.lams:
        for v in args.lams:
            _lam(v)  # refuse a bad value before any work
    results = []
    for name in names:
        try:
            r = run_lams(name, args) if args.lams else run_dataset(name, args)
        except FileNotFoundError as exc:
            print(f"skipping {name}: {exc}", file=sys.stderr)
            continue
        print(f"{name}: done in {r['seconds']:.0f} s", file=sys.stderr, flush=True)
        results.append(r)
    print(f"MBC paper reproduction ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}), "
          f"command: python benchmarks/mbc_paper.py {' '.join(argv if argv is not None else sys.argv[1:])}")
    if args.lams:
        print_lams(results, args)
        return
    print_tables(results, args)
    if args.plot_dir:
        plot(results, args.plot_dir)


if __name__ == "__main__":
    main()
