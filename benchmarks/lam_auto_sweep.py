"""Label-free coupling rules for MBC (issue 16): sweep lam over the whole grid, then score rules.

For every run one set of k-means++ centres is drawn (as ``mbc_paper.py --lams``); IND (lam=0)
and MBC at every value of ``bregclust.mbc.AUTO_LAM_GRID`` start from it. Per fit the script
stores NMI per task (for scoring only; no rule sees labels), the fitted ``d_M`` between the
tasks' mixtures, the per-task inertia with the fit's own centres, and the single-task
objective of the fit's partition (the partition's smoothed cluster means, then ``--lloyd``
Lloyd steps of ``BregmanKMeans``). Every rule in ``RULES`` is a function of those label-free
quantities of one run (or of all runs, for pooled rules) and returns a grid value; the script
prints, per rule, the table of cells at or above IND and the data-set means minus IND.

Usage::

    python benchmarks/lam_auto_sweep.py --datasets tr11,tr45 --runs 20 --cache /tmp/sweep
    python benchmarks/lam_auto_sweep.py --datasets tr11,tr45 --representation tf-l1 \
        --divergence kl --runs 20 --cache /tmp/sweep

``--cache DIR`` keeps one ``.npz`` per (data set, setting, runs, seed) so rules can be rescored
without refitting.
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mbc_paper import PAPER_T3, _load  # noqa: E402

from bregclust.divergences import get_divergence  # noqa: E402
from bregclust.kmeans import BregmanKMeans, auto_smoothing, bregman_kmeans_plusplus, smoothing_point  # noqa: E402
from bregclust.mbc import AUTO_LAM_GRID, MultitaskBregmanClustering  # noqa: E402
from bregclust.metrics import ari, nmi  # noqa: E402

GRID = (0.0,) + tuple(AUTO_LAM_GRID)


def _own_objective(X, labels, k, div, beta, steps):
    """Single-task objective of ``labels``: smoothed cluster means, then ``steps`` Lloyd steps
    (objective_history_[0] is the partition's own value after one assignment)."""
    U = _partition_means(X, labels, k, div, beta)
    own = _partition_objective(X, labels, U, div, beta)
    km = BregmanKMeans(k, divergence=div, init=U, max_iter=max(steps, 1), smoothing=beta,
                       tol=0.0).fit(X)
    h = km.objective_history_
    return own, h[0], h[min(steps, len(h) - 1)]


def _partition_means(X, labels, k, div, beta):
    """The partition's cluster means, smoothed by ``beta`` pseudo-points at the smoothing point."""
    S, w = div.weighted_sums(X, labels, k)
    if beta > 0:
        return (S + beta * smoothing_point(X, div)) / (w + beta)[:, None]
    return S / np.maximum(w, 1e-300)[:, None]


def _partition_objective(X, labels, U, div, beta):
    """``(1/n) [sum_i d(x_i, u_h(i)) + beta sum_z d(z, u_z)]`` at the partition's own smoothed
    means ``U`` (BregmanKMeans' objective for these labels, no assignment step)."""
    n = X.shape[0]
    total = 0.0
    for z in range(U.shape[0]):
        rows = X[labels == z]
        if rows.shape[0]:
            total += float(div.pairwise(rows, U[z:z + 1]).sum())
    if beta > 0:
        zp = smoothing_point(X, div)
        total += beta * float(div.pairwise(zp[None, :], U).sum())
    return total / n


def sweep(name, args):
    data = _load(name, args.representation)
    Xs, ys = data.Xs, data.ys
    K = [int(np.unique(y).size) for y in ys]
    div = get_divergence(args.divergence)
    betas = [auto_smoothing(X, div, k) for X, k in zip(Xs, K)]
    rs = np.random.RandomState(args.seed)
    out = {key: [] for key in ("nmi", "dm", "inertia", "ownP", "own0", "ownL", "objective",
                               "labels", "seconds")}
    t0 = time.perf_counter()
    for run in range(args.runs):
        init = [bregman_kmeans_plusplus(X, k, div, random_state=rs, smoothing=b)[0]
                for X, k, b in zip(Xs, K, betas)]
        rec = {key: [] for key in out}
        for lam in GRID:
            t1 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                m = MultitaskBregmanClustering(K, divergence=div, lam=lam, init=init).fit(Xs)
                own = [_own_objective(X, lab, k, div, b, args.lloyd)
                       for X, lab, k, b in zip(Xs, m.labels_, K, betas)]
            rec["seconds"].append(time.perf_counter() - t1)
            rec["nmi"].append([nmi(y, lab) for y, lab in zip(ys, m.labels_)])
            rec["dm"].append(0.5 * (m.task_divergences_[0, 1] + m.task_divergences_[1, 0]))
            rec["inertia"].append([i / X.shape[0] for i, X in zip(m.inertia_, Xs)])
            rec["ownP"].append([o[0] for o in own])
            rec["own0"].append([o[1] for o in own])
            rec["ownL"].append([o[2] for o in own])
            rec["objective"].append(m.objective_)
            rec["labels"].append(np.concatenate(m.labels_))
        for key in out:
            out[key].append(rec[key])
        print(f"{name}: run {run + 1}/{args.runs}, {time.perf_counter() - t0:.0f} s",
              file=sys.stderr, flush=True)
    res = {key: np.array(v) for key, v in out.items()}
    res["n"] = np.array([X.shape[0] for X in Xs])
    return res


def _own_from_labels(name, args, labels):
    """``ownP`` (see :func:`_partition_objective`) from stored labels ``(runs, grid, n1+n2)``."""
    data = _load(name, args.representation)
    Xs = data.Xs
    K = [int(np.unique(y).size) for y in data.ys]
    div = get_divergence(args.divergence)
    betas = [auto_smoothing(X, div, k) for X, k in zip(Xs, K)]
    n1 = Xs[0].shape[0]
    out = np.zeros(labels.shape[:2] + (2,))
    for i in range(labels.shape[0]):
        for g in range(labels.shape[1]):
            for t, (X, lab) in enumerate(zip(Xs, (labels[i, g, :n1], labels[i, g, n1:]))):
                U = _partition_means(X, lab, K[t], div, betas[t])
                out[i, g, t] = _partition_objective(X, lab, U, div, betas[t])
    return out


# --------------------------------------------------------------------------- rules
# Each rule: f(r, i) -> index into GRID for run i, from label-free arrays only
# (r["dm"][i, g], r["inertia"][i, g, t], r["own0"], r["ownL"], r["labels"]).

def _bisect(ratio_ok):
    lo, hi = -1, len(GRID) - 1  # indices into GRID[1:]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ratio_ok(mid + 1):
            lo = mid
        else:
            hi = mid
    return lo + 1


def rule_bisect(frac):
    def f(r, i):
        d = r["dm"][i]
        return _bisect(lambda g: d[g] >= frac * d[0])
    return f


def rule_scan(frac):
    """Scan upward, stop before the first lam whose d_M ratio falls below ``frac``."""
    def f(r, i):
        d = r["dm"][i]
        g = 0
        for j in range(1, len(GRID)):
            if d[j] < frac * d[0]:
                break
            g = j
        return g
    return f


def rule_scan_mono(frac):
    """Scan upward; stop at the first violation of the fraction or of monotone decrease."""
    def f(r, i):
        d = r["dm"][i]
        g = 0
        for j in range(1, len(GRID)):
            if d[j] < frac * d[0] or d[j] > d[j - 1]:
                break
            g = j
        return g
    return f


def rule_own(eps, key="ownL"):
    """Largest lam (scanning upward) whose partition's own single-task objective, summed over
    tasks, is within ``1 + eps`` of IND's."""
    def f(r, i):
        o = r[key][i].sum(axis=1)
        g = 0
        for j in range(1, len(GRID)):
            if o[j] > (1 + eps) * o[0]:
                break
            g = j
        return g
    return f


def rule_both(frac, eps):
    a, b = rule_scan(frac), rule_own(eps)
    return lambda r, i: min(a(r, i), b(r, i))


def rule_inertia(eps):
    """Largest lam (scan) whose fitted inertia (own centres) is within ``1 + eps`` of IND's."""
    def f(r, i):
        o = r["inertia"][i].sum(axis=1)
        g = 0
        for j in range(1, len(GRID)):
            if o[j] > (1 + eps) * o[0]:
                break
            g = j
        return g
    return f


def rule_pooled(base, m=3):
    """Median of the base rule's choices over this run and the next ``m - 1`` runs' starts
    (as if the rule were applied on ``m`` k-means++ restarts)."""
    def f(r, i):
        R = r["dm"].shape[0]
        gs = [base(r, (i + j) % R) for j in range(m)]
        return int(np.median(gs))
    return f


def rule_argmin_own(key="ownL", frac=None, max_lam=None):
    """The grid value (IND included) whose partition has the lowest single-task objective
    summed over tasks; optionally only among values whose d_M ratio stays >= ``frac`` (scan)
    or that are <= ``max_lam``."""
    def f(r, i):
        o = r[key][i].sum(axis=1)
        d = r["dm"][i]
        ok = [0]
        for j in range(1, len(GRID)):
            if frac is not None and d[j] < frac * d[0]:
                break
            if max_lam is not None and GRID[j] > max_lam:
                break
            ok.append(j)
        return min(ok, key=lambda j: o[j])
    return f


def rule_fixed(lam):
    g = GRID.index(lam)
    return lambda r, i: g


RULES = {
    "bisect 0.5 (current)": rule_bisect(0.5),
    "bisect 0.7": rule_bisect(0.7),
    "scan 0.5": rule_scan(0.5),
    "scan 0.6": rule_scan(0.6),
    "scan 0.7": rule_scan(0.7),
    "scan-mono 0.5": rule_scan_mono(0.5),
    "scan-mono 0.6": rule_scan_mono(0.6),
    "own 0.5%": rule_own(0.005),
    "own 1%": rule_own(0.01),
    "own 2%": rule_own(0.02),
    "own0 1%": rule_own(0.01, "own0"),
    "inertia 1%": rule_inertia(0.01),
    "inertia 2%": rule_inertia(0.02),
    "inertia 5%": rule_inertia(0.05),
    "scan 0.5 + own 1%": rule_both(0.5, 0.01),
    "pooled3 scan 0.5": rule_pooled(rule_scan(0.5)),
    "pooled3 bisect 0.5": rule_pooled(rule_bisect(0.5)),
    "argmin own": rule_argmin_own(),
    "argmin own0": rule_argmin_own("own0"),
    "argmin ownP": rule_argmin_own("ownP"),
    "argmin ownP, scan 0.5": rule_argmin_own("ownP", frac=0.5),
    "argmin own, scan 0.5": rule_argmin_own(frac=0.5),
    "argmin own, lam <= 0.2": rule_argmin_own(max_lam=0.2),
    "argmin own, lam <= 0.1": rule_argmin_own(max_lam=0.1),
    "pooled3 argmin own": rule_pooled(rule_argmin_own()),
    "fixed 0.02": rule_fixed(0.02),
    "fixed 0.05": rule_fixed(0.05),
    "fixed 0.1": rule_fixed(0.1),
    "fixed 0.5": rule_fixed(0.5),
}


def score(results, rules):
    rows = []
    for rname, f in rules.items():
        cells = above = 0
        means = []
        chosen_all = []
        for name, r in results.items():
            R = r["dm"].shape[0]
            gs = [f(r, i) for i in range(R)]
            chosen_all += gs
            sel = np.array([r["nmi"][i, g] for i, g in enumerate(gs)])  # (R, 2)
            ind = r["nmi"][:, 0]
            for t in range(2):
                cells += 1
                above += int(sel[:, t].mean() >= ind[:, t].mean())
            means.append((name, sel.mean() - ind.mean()))
        worst = min(means, key=lambda x: x[1])
        rows.append((rname, above, cells, worst, means, chosen_all))
    return rows


def print_scores(rows):
    print("| rule | cells at or above IND | worst data-set mean (auto - IND) | per data set |")
    print("|---|---|---|---|")
    for rname, above, cells, worst, means, _ in rows:
        per = ", ".join(f"{n} {d:+.3f}" for n, d in means)
        print(f"| {rname} | {above}/{cells} | {worst[1]:+.3f} ({worst[0]}) | {per} |")


def print_table(results, rname, others=("current", "bisect 0.5 (current)")):
    """The table of ``mbc_paper.py --lams auto 0.05 0.1 0.5`` for rule ``rname`` as "auto",
    with the previous rule beside it."""
    f, g_old = RULES[rname], RULES[others[1]]
    cols = [0.05, 0.1, 0.5]
    print(f"\nauto = {rname}; {others[0]} = {others[1]}\n")
    print("| data | task | lam=auto | " + " | ".join(f"lam={c:g}" for c in cols)
          + f" | IND | {others[0]} | lam_ (auto) |")
    print("|---|---|---|" + "---|" * len(cols) + "---|---|---|")
    above = cells = 0
    means = []
    for name, r in results.items():
        R = r["dm"].shape[0]
        gs = [f(r, i) for i in range(R)]
        go = [g_old(r, i) for i in range(R)]
        sel = np.array([r["nmi"][i, g] for i, g in enumerate(gs)])
        old = np.array([r["nmi"][i, g] for i, g in enumerate(go)])
        chosen = [GRID[g] for g in gs]
        vals, counts = np.unique(chosen, return_counts=True)
        lam_txt = ", ".join(f"{v:g} x{c}" for v, c in zip(vals, counts))
        for t in range(2):
            row = [f"{sel[:, t].mean():.3f}"]
            row += [f"{r['nmi'][:, GRID.index(c), t].mean():.3f}" for c in cols]
            row += [f"{r['nmi'][:, 0, t].mean():.3f}", f"{old[:, t].mean():.3f}"]
            print(f"| {name} | {t + 1} | " + " | ".join(row) + f" | {lam_txt if t == 0 else ''} |")
            cells += 1
            above += int(sel[:, t].mean() >= r["nmi"][:, 0, t].mean())
        means.append((name, sel.mean() - r["nmi"][:, 0].mean(), R))
    print(f"\nauto at or above IND in {above} of {cells} task cells "
          f"({100.0 * above / cells:.0f}%; target >= 75%)")
    print("data-set mean NMI, auto minus IND (target >= -0.02): "
          + ", ".join(f"{n} {d:+.3f}" for n, d, _ in means))
    print("runs per data set: " + ", ".join(f"{n} {R}" for n, _, R in means))


def print_paper_table(results, args, lam):
    """``mbc_paper.py``'s Table 3 (NMI and ARI, IND -> MBC at ``lam``, paper beside) from the
    sweeps' stored labels.

    A sweep draws its centres as ``mbc_paper.py`` does (same generator, same order) and fits
    IND as MBC at ``lam = 0``, so with the same ``--seed`` its runs are ``mbc_paper.py``'s runs:
    the table equals ``mbc_paper.py --runs R --lam LAM`` on the same data without refitting.
    """
    g = GRID.index(lam)
    print(f"\nTable 3 from the sweeps: NMI and ARI (mean+-std over the runs), IND -> MBC "
          f"lam={lam:g}; {args.divergence} on {args.representation}")
    print(f"{'data':<8} {'task':<4} {'runs':>4} | {'NMI IND':>10} {'NMI MBC':>10} {'paper':>10} | "
          f"{'ARI IND':>10} {'ARI MBC':>10} {'paper':>10}")
    for name, r in results.items():
        ys = _load(name, args.representation).ys
        n1 = int(r["n"][0])
        for t, y in enumerate(ys):
            cols = []
            for metric in (nmi, ari):
                for gg in (0, g):
                    labs = r["labels"][:, gg, :n1] if t == 0 else r["labels"][:, gg, n1:]
                    v = np.array([metric(y, lab) for lab in labs])
                    cols.append(f"{v.mean():.2f}+-{v.std():.2f}")
            p = PAPER_T3.get(name)
            pn = f"{p[t][0][0]:.2f}/{p[t][1][0]:.2f}" if p else "-"
            pa = f"{p[t][2][0]:.2f}/{p[t][3][0]:.2f}" if p else "-"
            print(f"{name:<8} X{t + 1:<3} {r['labels'].shape[0]:>4} | {cols[0]:>10} {cols[1]:>10} "
                  f"{pn:>10} | {cols[2]:>10} {cols[3]:>10} {pa:>10}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="tr11,tr45")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--representation", choices=("tfidf", "tf-l1", "counts"), default="tfidf")
    ap.add_argument("--divergence", default="sqeuclidean")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lloyd", type=int, default=3, help="Lloyd steps of the own-objective check")
    ap.add_argument("--cache", default=None, help="directory of cached sweeps (.npz)")
    ap.add_argument("--curves", action="store_true", help="print mean NMI and d_M ratio per lam")
    ap.add_argument("--table", default=None, metavar="RULE",
                    help="also print the mbc_paper-style table with RULE (a key of RULES) as auto")
    ap.add_argument("--runs-per-dataset", default=None, metavar="NAME=RUNS,...",
                    help="override --runs for some data sets (e.g. ohscal=8)")
    ap.add_argument("--paper-table", type=float, default=None, metavar="LAM",
                    help="also print mbc_paper.py's Table 3 at this lam (a grid value) from "
                         "the sweeps' labels")
    args = ap.parse_args(argv)
    if args.paper_table is not None and args.paper_table not in GRID:
        ap.error(f"--paper-table {args.paper_table:g} is not a value of the grid {GRID}")
    results = {}
    override = dict(item.split("=") for item in (args.runs_per_dataset or "").split(",") if item)
    default_runs = args.runs
    for name in [n.strip() for n in args.datasets.split(",") if n.strip()]:
        args.runs = int(override.get(name, default_runs))
        path = None
        if args.cache:
            os.makedirs(args.cache, exist_ok=True)
            path = os.path.join(args.cache, f"{name}_{args.divergence}_{args.representation}_"
                                f"r{args.runs}_s{args.seed}_l{args.lloyd}.npz")
        if path and os.path.exists(path):
            results[name] = dict(np.load(path))
            if "ownP" not in results[name]:  # caches of an earlier version of this script
                results[name]["ownP"] = _own_from_labels(name, args, results[name]["labels"])
                np.savez(path, **results[name])
        else:
            results[name] = sweep(name, args)
            if path:
                np.savez(path, **results[name])
    print(f"lam sweep ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}): "
          f"{args.divergence} on {args.representation}, {args.runs} runs, grid {GRID}")
    if args.curves:
        for name, r in results.items():
            print(f"{name}: mean NMI (t1/t2), mean d_M ratio, mean own-objective ratio, "
                  f"mean inertia ratio, seconds per fit")
            for g, lam in enumerate(GRID):
                ratio = np.mean(r["dm"][:, g] / r["dm"][:, 0])
                own = np.mean(r["ownL"][:, g].sum(1) / r["ownL"][:, 0].sum(1))
                ine = np.mean(r["inertia"][:, g].sum(1) / r["inertia"][:, 0].sum(1))
                print(f"  {lam:<5g} {r['nmi'][:, g, 0].mean():.3f}/{r['nmi'][:, g, 1].mean():.3f}"
                      f"  {ratio:.3f}  {own:.4f}  {ine:.4f}  {r['seconds'][:, g].mean():.1f}")
    print_scores(score(results, RULES))
    if args.table:
        print_table(results, args.table)
    if args.paper_table is not None:
        print_paper_table(results, args, args.paper_table)


if __name__ == "__main__":
    main()
