"""Reproduce Tables 2-4 of the MTCMRL paper (Zhang et al., IJCAI 2018) and its Sec. 4.6.

For WebKB4, 20 Newsgroups (4 tasks) and Reuters (3 tasks) this prints, per task, accuracy and
NMI (mean and std over ``--runs`` runs, in %) of

* k-means   - ``BregmanKMeans("sqeuclidean")`` on the task's rows (also MTCMRL's initialiser);
* SNMF      - symmetric NMF of the cosine similarity (``lam = alpha = 0``);
* SNMF+LR   - ``alpha = beta = 0``, ``lam`` on the grid;
* MTCMRL    - ``mu = beta = 2^-1``, ``lam, alpha`` on the grid ``{2^-2, ..., 2^2}``;

beside the paper's numbers, each twice:

* "as printed" - the paper's Algorithm 1 literally: the undamped multiplicative update (Eq. 19)
  and its stopping rule (stop once a sweep lowers J by less than 1). Not monotone: it usually
  stops a few sweeps after the k-means start.
* "as run" - ours: the estimator's default solver (``algorithm="lbfgs"``; ``--as-run damped``
  for the damped multiplicative update), J never increases, run to convergence (relative
  decrease of J per sweep below ``--tol``, the estimators' default).

The alpha = 0 control ("MTCMRL alpha=0") is SNMF+LR at the lam of the best MTCMRL point, so
"gain" = MTCMRL - control is what the multi-task term adds. As in the paper, each method is
reported at its best grid point (highest accuracy averaged over tasks and runs). Run ``r``
initialises every method from the same k-means labels (``Y = onehot + 0.2``, ``W = 1``), seeded
by ``r``. Then one learned ``G^(1,2)``
is printed with rows/columns reordered so that cluster ``i`` is the one the accuracy's
Hungarian matching sends to class ``i`` (the paper's Sec. 4.6), and the paper's matrix beside it.
Finally the measured fraction of ``Y`` steps in which the paper's multiplicative update would
have increased ``J`` (and was damped).

Data (``../shared/data``, see DATA.md; provenance printed with each table):

* WebKB4: LINQS release (1,703 binary features, 838 pages; the paper's version had 2,500
  features and 1,052 pages) via ``load_mtcmrl_tasks("webkb4")``.
* 20NG: bydate *test* split (its category sizes match the paper's Table 1 to within 2
  documents), the paper's 4 tasks, tf-idf with L2 rows over the 3,000 most frequent terms
  (the paper's feature count), label = root category.
* Reuters (``--source cai``, the default): Deng Cai's Reuters21578.mat, the paper's data (its
  Table 1 sizes and 6,439 terms exactly), raw counts, via
  ``load_mtcmrl_tasks("reuters", source="cai")``. ``--source r52``: Cardoso-Cachopo's R52
  (train + test, tf-idf, 6,648 terms).

``--representation`` defaults to raw counts for Cai's Reuters and tf-idf for 20ng and R52;
``counts`` uses raw term counts for 20ng/reuters instead of tf-idf: the
cosine similarity is the same up to idf weighting, but the regression ``X W ~ Y`` then needs a
much smaller ``W``, so ``A_ij = ||W^t_i - W^s_j||^2`` is small next to ``2 beta`` and the learned
``G`` is spread out like the paper's; with unit-norm tf-idf rows ``A`` is O(1) and ``G``
concentrates on the closest cluster pair.

Usage::

    python benchmarks/mtcmrl_paper.py                       # all three, 1 run, full grid
    python benchmarks/mtcmrl_paper.py --datasets reuters --runs 10
    python benchmarks/mtcmrl_paper.py --datasets reuters --source r52 --runs 10
    python benchmarks/mtcmrl_paper.py --grid 1 1 --runs 1   # one grid point (quick)
    python benchmarks/mtcmrl_paper.py --datasets 20ng --runs 1 --lams 0.25 1 4 --alphas 0.25 1 4
    python benchmarks/mtcmrl_paper.py --datasets reuters --runs 10 --tol-study [--grid 4 4]
"""

import argparse
import datetime
import itertools
import pathlib
import sys
import time
import warnings

import numpy as np
from scipy.optimize import linear_sum_assignment

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import bregclust.model_relation as mr  # noqa: E402
from bregclust.kmeans import BregmanKMeans  # noqa: E402
from bregclust.metrics import clustering_accuracy, nmi  # noqa: E402

PAPER_GRID = [2.0 ** k for k in range(-2, 3)]

# The paper's Tables 2-4: per task (acc, acc std, nmi, nmi std) in %.
PAPER = {
    "webkb4": {
        "k-means": [(64.00, 0.00, 18.49, 0.01), (58.00, 5.64, 12.11, 1.11),
                    (51.57, 2.67, 6.74, 3.65), (58.27, 0.80, 20.04, 3.24)],
        "SNMF": [(72.89, 0.00, 37.11, 0.00), (65.04, 3.61, 30.55, 2.09),
                 (71.18, 3.34, 39.25, 2.47), (75.42, 3.14, 46.65, 2.25)],
        "SNMF+LR": [(73.33, 0.00, 37.66, 0.00), (67.68, 0.77, 30.18, 0.47),
                    (71.57, 3.64, 39.92, 3.05), (75.39, 2.98, 46.52, 2.13)],
        "MTCMRL": [(73.78, 0.00, 39.29, 0.00), (68.48, 0.17, 31.99, 1.51),
                   (73.45, 0.93, 41.53, 2.03), (79.67, 2.89, 49.57, 2.10)],
    },
    "20ng": {
        "k-means": [(33.90, 0.00, 2.90, 0.00), (27.26, 0.58, 7.00, 1.58),
                    (33.93, 0.11, 2.89, 0.09), (28.15, 0.14, 2.23, 0.40)],
        "SNMF": [(80.99, 0.00, 48.78, 0.00), (61.84, 2.77, 41.04, 1.11),
                 (59.58, 0.00, 30.02, 0.00), (83.64, 7.55, 61.54, 10.14)],
        "SNMF+LR": [(81.05, 0.13, 48.70, 0.52), (62.94, 0.33, 41.46, 0.65),
                    (60.15, 2.89, 29.94, 1.20), (83.68, 7.61, 61.83, 10.40)],
        "MTCMRL": [(82.07, 0.00, 49.80, 0.00), (65.52, 0.10, 43.42, 0.15),
                   (77.97, 0.00, 45.94, 0.00), (85.96, 0.00, 63.19, 0.00)],
    },
    "reuters": {
        "k-means": [(73.16, 0.46, 44.70, 0.78), (64.62, 3.42, 41.59, 5.71),
                    (45.89, 1.33, 21.48, 1.27)],
        "SNMF": [(97.57, 0.00, 89.49, 0.00), (94.77, 8.17, 85.74, 10.83),
                 (93.21, 3.16, 77.86, 5.00)],
        "SNMF+LR": [(97.57, 0.00, 89.49, 0.00), (94.08, 8.80, 84.23, 10.49),
                    (93.32, 2.83, 77.98, 4.64)],
        "MTCMRL": [(97.57, 0.00, 89.49, 0.00), (97.00, 1.93, 88.67, 5.21),
                   (94.74, 0.00, 80.58, 0.00)],
    },
}
PAPER_G12 = {
    "webkb4": [[0.0816, 0.0675, 0.0823, 0.0000], [0.0860, 0.1231, 0.0907, 0.0305],
               [0.1002, 0.0903, 0.1404, 0.0000], [0.0000, 0.0201, 0.0203, 0.0670]],
    "20ng": [[0.1730, 0.0000, 0.1236, 0.0699], [0.0000, 0.1507, 0.1321, 0.0000],
             [0.1365, 0.0000, 0.1923, 0.0219]],
    "reuters": [[0.1957, 0.1005, 0.0899], [0.0788, 0.1259, 0.2013], [0.0000, 0.1075, 0.1004]],
}
TABLE = {"webkb4": "Table 2 (WebKB4)", "20ng": "Table 3 (20 Newsgroups)",
         "reuters": "Table 4 (Reuters)"}
_DEFAULTS = mr.ModelRelationClustering().get_params()


def load(name, representation=None, source="cai"):
    """Return (Xs, ys, class_names per task (ordered as the paper's C1.. of Table 1), desc)."""
    from bregclust.datasets import load_mtcmrl_tasks

    if name == "20ng":
        representation = representation or "tfidf"
        # the paper's task sizes match the bydate test split; 3,000 most frequent terms
        data = load_mtcmrl_tasks("20ng", subset="test", max_features=3000,
                                 representation=representation)
        roots = list(data.target_names[0])
        names = [{roots.index(c.split(".")[0]): c for c in cats} for cats in data.categories]
        return list(data.Xs), list(data.ys), names, data.description
    kw = {"source": source} if name == "reuters" else {}
    data = load_mtcmrl_tasks(name, representation=representation, **kw)
    names = []
    for t, y in enumerate(data.ys):
        if name == "reuters":
            fine = np.asarray(data.fine_labels[t])
            order = [c for c in data.categories[t]]
            lab = {int(np.bincount(y[fine == c]).argmax()): c for c in order}
        else:
            lab = {int(c): data.target_names[t][c] for c in np.unique(y)}
        names.append(lab)
    return list(data.Xs), list(data.ys), names, data.description


def indicators(labels, h):
    Y = np.full((labels.size, h), 0.2)
    Y[np.arange(labels.size), labels] += 1.0
    return Y


def scores(ys, labels):
    return np.array([[clustering_accuracy(y, lab), nmi(y, lab)] for y, lab in zip(ys, labels)])


def run_dataset(name, args):
    t_load = time.perf_counter()
    Xs, ys, names, desc = load(name, args.representation, args.source)
    T = len(Xs)
    hs = [np.unique(y).size for y in ys]
    Ms, factors = mr._prepare(Xs, "cosine", None, True)
    t_load = time.perf_counter() - t_load
    grid_l = args.grid[0:1] if args.grid else args.lams
    grid_a = args.grid[1:2] if args.grid else args.alphas
    methods = ("SNMF", "SNMF+LR", "MTCMRL")
    run = args.as_run
    algorithms = (("as printed", "as_printed"), ("as run", run))
    res = {"k-means": {None: []}}
    for _, algo in algorithms:
        res[("SNMF", algo)] = {None: []}
        res[("SNMF+LR", algo)] = {lam: [] for lam in grid_l}
        res[("MTCMRL", algo)] = {(lam, al): [] for lam in grid_l for al in grid_a}
    fits, t_fit, n_fit = {}, 0.0, 0
    stats = {algo: {"damped": 0, "steps": 0, "up": 0, "sweeps": 0, "maxed": 0, "fits": 0,
                    "inner": 0, "blocks": 0}
             for _, algo in algorithms}

    def fit(Xl, Ml, Fl, Yl, Wl, lam, al, beta, algo):
        out = mr._fit_loop(Xl, Ml, Fl, Yl, Wl, lam, args.mu, al, beta, args.max_iter,
                           args.tol, algorithm=algo)
        J, st = out["history"], stats[algo]
        if algo != "as_printed":
            assert np.all(np.diff(J) <= 1e-10 * np.abs(J[:-1])), "objective increased"
        st["damped"] += int(np.count_nonzero(out["etas"] < 1))
        st["steps"] += out["etas"].size
        st["inner"] += int(out["inner"].sum())
        st["blocks"] += out["inner"].size
        st["up"] += int(np.count_nonzero(np.diff(J) > 0))
        st["sweeps"] += out["n_iter"]
        st["maxed"] += int(not out["converged"])
        st["fits"] += 1
        return out

    for r in range(args.runs):
        Y0 = []
        for t, (X, h) in enumerate(zip(Xs, hs)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lab = BregmanKMeans(h, n_init=1, random_state=1000 * r + t).fit(X).labels_
            Y0.append(indicators(lab, h))
        res["k-means"][None].append(scores(ys, [Y.argmax(1) for Y in Y0]))
        for _, algo in algorithms:
            # single-task baselines: one task at a time
            labs = [fit([Xs[t]], [Ms[t]], [None], [Y0[t]], [np.zeros((1, hs[t]))], 0.0, 0.0,
                        0.0, algo)["Ys"][0].argmax(1) for t in range(T)]
            res[("SNMF", algo)][None].append(scores(ys, labs))
            for lam in grid_l:
                labs = [fit([Xs[t]], [Ms[t]], [factors[t]], [Y0[t]],
                            [np.ones((Xs[t].shape[1], hs[t]))], lam, 0.0, 0.0,
                            algo)["Ys"][0].argmax(1) for t in range(T)]
                res[("SNMF+LR", algo)][lam].append(scores(ys, labs))
            for lam in grid_l:
                for al in grid_a:
                    W0 = [np.ones((X.shape[1], h)) for X, h in zip(Xs, hs)]
                    t0 = time.perf_counter()
                    out = fit(Xs, Ms, factors, Y0, W0, lam, al, args.beta, algo)
                    if algo == run:
                        t_fit += time.perf_counter() - t0
                        n_fit += 1
                    res[("MTCMRL", algo)][(lam, al)].append(
                        scores(ys, [Y.argmax(1) for Y in out["Ys"]]))
                    if r == 0 and algo == run:
                        fits[(lam, al)] = out

    print(f"\n## {TABLE[name]} - {T} tasks, sizes {[X.shape[0] for X in Xs]}, "
          f"{Xs[0].shape[1]} features, clusters {hs}")
    print(f"# data: {desc}")
    print(f"# runs={args.runs}, grid lam, alpha in {grid_l} x {grid_a}, mu={args.mu}, "
          f"beta={args.beta}, cosine similarity; as run: algorithm={run!r}, max_iter="
          f"{args.max_iter}, tol={args.tol:g} (relative); as printed: undamped Eq. 19, stop "
          f"when J drops by < {mr.PAPER_THRESHOLD:g}; setup (load + M + SVD) {t_load:.1f} s; "
          f"MTCMRL as run {t_fit / max(n_fit, 1):.2f} s per fit")
    head = "method".ljust(44) + "".join(f"{'task ' + str(t + 1) + ' Acc':>15}{'NMI':>15}"
                                        for t in range(T))
    print(head)

    def row(S):
        mean, std = S.mean(0), S.std(0)
        return "".join(f"{mean[t, 0]:8.2f}±{std[t, 0]:5.2f} {mean[t, 1]:8.2f}±{std[t, 1]:5.2f} "
                       for t in range(T))

    def best_key(table):
        # best grid point = highest accuracy averaged over tasks and runs
        return max(table, key=lambda k: np.mean([s[:, 0] for s in table[k]]))

    def paper_row(method):
        return "".join(f"{a:8.2f}±{sa:5.2f} {b:8.2f}±{sb:5.2f} "
                       for a, sa, b, sb in PAPER[name][method])

    S = np.array(res["k-means"][None]) * 100
    print(f"{'paper k-means':44}{paper_row('k-means')}")
    print(f"{'ours k-means (initialiser)':44}{row(S)}")
    best = {}
    for method in methods:
        print(f"{'paper ' + method:44}{paper_row(method)}")
        for label, algo in algorithms:
            table = res[(method, algo)]
            key = best_key(table)
            best[(method, algo)] = key
            if key is None:
                tag = method
            elif method == "SNMF+LR":
                tag = f"{method} (lam={key:g})"
            else:
                tag = f"{method} (lam={key[0]:g}, a={key[1]:g})"
            print(f"{label + ' ' + tag:44}{row(np.array(table[key]) * 100)}")
    # the alpha = 0 control: SNMF+LR at the lam of the best MTCMRL point, and the gain
    for label, algo in algorithms:
        lam = best[("MTCMRL", algo)][0]
        ctrl = np.array(res[("SNMF+LR", algo)][lam]) * 100
        mtc = np.array(res[("MTCMRL", algo)][best[("MTCMRL", algo)]]) * 100
        print(f"{label + ' MTCMRL alpha=0 (lam=' + format(lam, 'g') + ')':44}{row(ctrl)}")
        gain = (mtc - ctrl).mean(0)
        snmf = (mtc - np.array(res[("SNMF", algo)][None]) * 100).mean(0)
        print(f"# {label} gain MTCMRL - alpha=0 control, Acc per task: "
              + ", ".join(f"{g:+.2f}" for g in gain[:, 0])
              + f" (mean {gain[:, 0].mean():+.2f}); MTCMRL - SNMF: "
              + ", ".join(f"{g:+.2f}" for g in snmf[:, 0]) + f" (mean {snmf[:, 0].mean():+.2f})")
    pgain = [m[0] - c[0] for m, c in zip(PAPER[name]["MTCMRL"], PAPER[name]["SNMF+LR"])]
    print("# paper gain MTCMRL - SNMF+LR, Acc per task: " + ", ".join(f"{g:+.2f}" for g in pgain)
          + f" (mean {np.mean(pgain):+.2f})")
    for label, algo in algorithms:
        st = stats[algo]
        steps = (f"{st['damped']} of {st['steps']} Y steps damped "
                 f"({100.0 * st['damped'] / max(st['steps'], 1):.2f} %)" if algo != "lbfgs" else
                 f"mean {st['inner'] / max(st['blocks'], 1):.1f} L-BFGS-B iterations per Y block")
        print(f"# {label}: {st['fits']} fits, mean {st['sweeps'] / max(st['fits'], 1):.1f} "
              f"sweeps, {st['maxed']} stopped by max_iter, {st['up']} sweeps raised J, {steps}")

    # Sec. 4.6: G^(1,2) of the best MTCMRL setting (run 0), clusters mapped to classes
    out = fits[best[("MTCMRL", run)]]
    G = out["Gs"][(0, 1)]
    order = []
    for t in (0, 1):
        lab = out["Ys"][t].argmax(1)
        classes = sorted(names[t], key=lambda c: list(names[t]).index(c))
        C = np.array([[np.sum((lab == j) & (ys[t] == c)) for c in classes]
                      for j in range(hs[t])])
        rows, cols = linear_sum_assignment(-C)
        cluster_of = dict(zip(cols, rows))                 # class position -> cluster
        order.append(([cluster_of.get(i, -1) for i in range(len(classes))],
                      [names[t][c] for c in classes]))
    (r_idx, r_names), (c_idx, c_names) = order
    print("# G^(1,2), best MTCMRL setting, run 0 (rows: task 1 clusters, columns: task 2 "
          "clusters, each mapped to its class by the accuracy's matching)")
    width = max(len(n) for n in r_names) + 2
    print(" " * width + "".join(f"{n[:14]:>15}" for n in c_names))
    for i, rn in zip(r_idx, r_names):
        print(f"{rn:<{width}}" + "".join(f"{G[i, j]:15.4f}" for j in c_idx))
    print("# paper's G^(1,2):")
    for prow in PAPER_G12[name]:
        print(" " * width + "".join(f"{v:15.4f}" for v in prow))


TOL_STUDY = ((100, 1e-4), (300, 1e-6), (1000, 1e-7), (3000, 1e-8), (20000, 1e-10))


def _tol_setting(text):
    """``"MAX_ITER:TOL"`` -> ``(int, float)`` for ``--tol-grid``."""
    try:
        m, t = text.split(":")
        return int(m), float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--tol-grid: {text!r} is not MAX_ITER:TOL (e.g. 1000:1e-7)") from None


def tol_study(name, args):
    """Accuracy, sweeps and label agreement with the tightest setting for each
    (max_iter, tol) of TOL_STUDY: SNMF, and MTCMRL too when ``--grid LAM ALPHA`` is given."""
    from bregclust.metrics import ari

    Xs, ys, _, desc = load(name, args.representation, args.source)
    hs = [np.unique(y).size for y in ys]
    Ms, factors = mr._prepare(Xs, "cosine", None, True)
    lam, al = args.grid if args.grid else (0.0, 0.0)
    print(f"\n## stopping tolerance study, {name}: {desc[:90]}...")
    print(f"# runs={args.runs}, same k-means starts as the tables; SNMF = lam = alpha = 0"
          + (f"; MTCMRL lam={lam:g}, alpha={al:g}, mu={args.mu}, beta={args.beta}"
             if args.grid else ""))
    starts = []
    for r in range(args.runs):
        Y0 = []
        for t, (X, h) in enumerate(zip(Xs, hs)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lab = BregmanKMeans(h, n_init=1, random_state=1000 * r + t).fit(X).labels_
            Y0.append(indicators(lab, h))
        starts.append(Y0)
    runs = [("SNMF", (0.0, 0.0, 0.0))] + ([("MTCMRL", (lam, al, args.beta))] if args.grid else [])
    grid = sorted(args.tol_grid or TOL_STUDY, key=lambda s: (-s[1], s[0]))
    if any(b[0] < a[0] for a, b in zip(grid, grid[1:])):
        raise SystemExit("--tol-grid: a tighter tol must not have a smaller MAX_ITER "
                         f"(sorted by tol: {grid}); give each setting at least the sweeps of "
                         "the looser ones")
    for method, (lm, a, b) in runs:
        out = {}
        if method == "SNMF":
            # SNMF's state is Y alone, so a tighter setting continues the looser one's fit
            # (the grid is checked to tighten tol and never lower max_iter): the iterates, and
            # so the labels and sweep counts, equal those of a fit from the start.
            for Y0 in starts:
                for t, (X, M, Y, h) in enumerate(zip(Xs, Ms, Y0, hs)):
                    done, last = 0, None
                    for max_iter, tol in grid:
                        met = last is not None and last[0] - last[1] <= tol * abs(last[0])
                        if not met and done < max_iter:
                            f = mr._fit_loop([X], [M], [None], [Y], [np.zeros((1, h))], 0.0,
                                             1.0, 0.0, 0.0, max_iter - done, tol)
                            Y, done = f["Ys"][0], done + f["n_iter"]
                            last = tuple(f["history"][-2:]) if f["converged"] else None
                            met = f["converged"]
                        labs, sweeps, maxed = out.setdefault((max_iter, tol), ([], [], [0]))
                        if t == 0:
                            labs.append([])
                        labs[-1].append(Y.argmax(1))
                        sweeps.append(done)
                        maxed[0] += not met
            out = {k: (v[0], v[1], v[2][0]) for k, v in out.items()}
        for max_iter, tol in ([] if method == "SNMF" else grid):
            labs, sweeps, maxed = [], [], 0
            for Y0 in starts:
                W0 = [np.ones((X.shape[1], h)) for X, h in zip(Xs, hs)]
                f = mr._fit_loop(Xs, Ms, factors, Y0, W0, lm, args.mu, a, b, max_iter, tol)
                labs.append([Y.argmax(1) for Y in f["Ys"]])
                sweeps.append(f["n_iter"])
                maxed += not f["converged"]
            out[(max_iter, tol)] = (labs, sweeps, maxed)
        ref = out[grid[-1]][0]
        for (max_iter, tol), (labs, sweeps, maxed) in out.items():
            acc = np.array([[clustering_accuracy(y, lab) for y, lab in zip(ys, L)]
                            for L in labs]) * 100
            same = np.mean([[ari(a_, b_) > 1 - 1e-12 for a_, b_ in zip(L, R)]
                            for L, R in zip(labs, ref)]) * 100
            print(f"{method:7} max_iter={max_iter:<6d} tol={tol:<6g} Acc per task "
                  + " ".join(f"{v:6.2f}" for v in acc.mean(0))
                  + f"  sweeps median {np.median(sweeps):5.0f} max {max(sweeps):5d}, "
                  f"{maxed} fits at max_iter, labels equal to the tightest: {same:5.1f} %")


def _normalised(M):
    """``D^-1/2 M D^-1/2`` with ``D`` the row sums of ``M`` (the normalised similarity)."""
    d = M.sum(axis=1)
    r = np.where(d > 0, 1.0 / np.sqrt(np.where(d > 0, d, 1.0)), 0.0)
    return M * r[:, None] * r[None, :]


def _start(kind, X, h, seed):
    """Initial ``Y`` of one task for start ``kind`` with integer ``seed``."""
    from sklearn.preprocessing import normalize

    rng = np.random.default_rng(seed)
    if kind == "random":                        # uniform random labels, one-hot + 0.2
        return indicators(rng.integers(h, size=X.shape[0]), h)
    if kind == "uniform":                       # Y ~ U(0, 1) entrywise (Kuang et al.'s SNMF)
        return rng.random((X.shape[0], h))
    Xk = normalize(X) if kind == "kmeans-l2" else X
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lab = BregmanKMeans(h, n_init=1, random_state=seed).fit(Xk).labels_
    return indicators(lab, h)


# One row per variant: one unstated detail changed from the "as run" baseline (k-means starts
# on the task's features, seeded 1000 r + t as in the tables; raw counts; cosine M; damped
# update to tol; labels = argmax of Y).
SNMF_VARIANTS = (
    ("baseline (k-means starts, counts, cosine, tol, argmax)", {}),
    ("start: k-means on L2-normalised rows", {"start": "kmeans-l2"}),
    ("start: random labels (one-hot + 0.2)", {"start": "random"}),
    ("start: uniform random Y", {"start": "uniform"}),
    ("features: tf-idf (M and k-means start)", {"representation": "tfidf"}),
    ("similarity: D^-1/2 M D^-1/2", {"normalised": True}),
    ("stop: J drop < 1 (paper's rule), damped", {"stop": "paper"}),
    ("stop: 28 sweeps (paper's Reuters count)", {"stop": 28}),
    ("stop: max_iter=100, tol=1e-4 (old default)", {"stop": "old"}),
    ("as printed (undamped Eq. 19, J drop < 1)", {"stop": "as_printed"}),
    ("read-off: argmax of column-normalised Y", {"readout": "colnorm"}),
)


def snmf_study(name, args):
    """SNMF (lam = alpha = 0) over ``--starts`` starts for each of SNMF_VARIANTS: per task the
    mean, std, min and max accuracy over all starts, the range of the mean over disjoint blocks
    of 10 starts (10 runs with another seed set), and the share of starts within 0.5 point of
    the baseline's most frequent accuracy."""
    import collections

    reps = {}
    for rep in ("counts", "tfidf"):
        Xs, ys, _, desc = load(name, rep, args.source)
        reps[rep] = (Xs, [mr._similarity(X, "cosine", None, name=f"task {t}")
                          for t, X in enumerate(Xs)])
    default_rep = args.representation or ("counts" if name == "reuters"
                                          and args.source == "cai" else "tfidf")
    hs = [np.unique(y).size for y in ys]
    T, N = len(hs), args.starts
    print(f"\n## SNMF start/variant study, {name}: {desc[:90]}...")
    print(f"# {N} starts per variant (start r, task t seeded 1000 r + t; starts 0-9 are the "
          f"tables' runs); lam = alpha = 0; tol={args.tol:g}, max_iter={args.max_iter}; "
          f"baseline features: {default_rep}")
    print("# per task: Acc mean ± std [min, max] over all starts | range of the mean of 10 "
          "starts over disjoint blocks | % of starts within 0.5 of the baseline's mode")
    print("# paper SNMF (10 runs): " + " | ".join(f"task {t + 1} {a:.2f} ± {sa:.2f}"
                                                   for t, (a, sa, _, _) in
                                                   enumerate(PAPER[name]["SNMF"])))
    mode, outcomes = None, []
    for label, v in SNMF_VARIANTS:
        Xs, Ms = reps[v.get("representation", default_rep)]
        if v.get("normalised"):
            Ms = [_normalised(M) for M in Ms]
        stop = v.get("stop")
        algo = "as_printed" if stop == "as_printed" else "damped"
        max_iter, tol = {"old": (100, 1e-4)}.get(
            stop, (stop, 0.0) if isinstance(stop, int) else (args.max_iter, args.tol))
        acc = np.zeros((N, T))
        sweeps = []
        for r in range(N):
            for t, (X, M, h) in enumerate(zip(Xs, Ms, hs)):
                Y0 = _start(v.get("start", "kmeans"), X, h, 1000 * r + t)
                out = mr._fit_loop([X], [M], [None], [Y0], [np.zeros((1, h))], 0.0, args.mu,
                                   0.0, 0.0, max_iter, tol, algorithm=algo)
                if stop == "paper":     # damped steps, the paper's absolute rule
                    J = out["history"]
                    stop_at = np.flatnonzero(J[:-1] - J[1:] < mr.PAPER_THRESHOLD)
                    if stop_at.size and stop_at[0] + 1 < out["n_iter"]:
                        out = mr._fit_loop([X], [M], [None], [Y0], [np.zeros((1, h))], 0.0,
                                           args.mu, 0.0, 0.0, int(stop_at[0]) + 1, 0.0)
                Y = out["Ys"][0]
                if v.get("readout") == "colnorm":
                    Y = Y / np.maximum(np.linalg.norm(Y, axis=0), 1e-300)
                acc[r, t] = clustering_accuracy(ys[t], Y.argmax(1)) * 100
                sweeps.append(out["n_iter"])
        if mode is None:
            mode = [collections.Counter(np.round(acc[:, t], 2)).most_common(1)[0][0]
                    for t in range(T)]
        blocks = acc[: N - N % 10].reshape(-1, 10, T).mean(1) if N >= 10 else acc[None].mean(1)
        cells = []
        for t in range(T):
            a = acc[:, t]
            near = 100.0 * np.mean(np.abs(a - mode[t]) <= 0.5)
            cells.append(f"{a.mean():6.2f}±{a.std():5.2f} [{a.min():5.1f},{a.max():5.1f}] "
                         f"10-run {blocks[:, t].min():5.1f}-{blocks[:, t].max():5.1f} "
                         f"{near:3.0f}%")
        print(f"{label:56}" + " | ".join(cells) + f" | sweeps median {np.median(sweeps):.0f}")
        outcomes.append((label, acc))
    print("# outcomes per task, accuracy x number of starts (most frequent first):")
    for label, acc in outcomes:
        print(f"#   {label[:40]:40} " + " | ".join(
            ", ".join(f"{a:.2f}x{c}" for a, c in
                      collections.Counter(np.round(acc[:, t], 2)).most_common(4))
            + (" ..." if np.unique(np.round(acc[:, t], 2)).size > 4 else "")
            for t in range(T)))
    if name == "reuters" and args.source == "cai":
        print("# the paper's SNMF mean and std (10 runs) as c runs at one accuracy and the "
              "other 10 - c anywhere (c >= 8; document counts, rounding to 2 decimals, std "
              "with ddof 0 or 1):")
        for t, (a, sa, _, _) in enumerate(PAPER[name]["SNMF"]):
            found = paper_splits(len(ys[t]), a, sa)
            print(f"#   task {t + 1} ({a:.2f} ± {sa:.2f}): "
                  + ("; ".join(f"{c} x {v:.2f} + {', '.join(f'{o:.2f}' for o in off) or '-'}"
                               f" (ddof {dd})" for c, v, off, dd in found) or "none"))


def paper_splits(n, mean, std, min_common=8):
    """Ways to write a reported mean and std of 10 accuracies on ``n`` documents as ``c`` runs
    at one value and ``10 - c`` (at most 10 - min_common) other runs, all multiples of 1/n."""
    found = []
    totals = [K for K in range(10 * n + 1) if round(100 * K / (10 * n), 2) == mean]
    for K in totals:
        for common in range(n + 1):
            for c in range(10, min_common - 1, -1):
                rest = K - c * common
                for off in itertools.combinations_with_replacement(range(n + 1), 10 - c):
                    if sum(off) != rest or common in off:
                        continue
                    v = np.array([common] * c + list(off)) * 100.0 / n
                    for dd in (0, 1):
                        if round(float(v.std(ddof=dd)), 2) == std:
                            found.append((c, 100.0 * common / n, [100.0 * o / n for o in off],
                                          dd))
    return sorted(found, key=lambda f: (-f[0], -f[1]))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", nargs="+", default=["webkb4", "20ng", "reuters"],
                   choices=["webkb4", "20ng", "reuters"])
    p.add_argument("--runs", type=int, default=1, help="runs per grid point (paper: 10)")
    p.add_argument("--grid", type=float, nargs=2, metavar=("LAM", "ALPHA"),
                   help="a single (lam, alpha) instead of the paper's 5 x 5 grid")
    p.add_argument("--lams", type=float, nargs="+", default=PAPER_GRID,
                   help="lam grid (default: the paper's 2^-2 .. 2^2)")
    p.add_argument("--alphas", type=float, nargs="+", default=PAPER_GRID,
                   help="alpha grid (default: the paper's 2^-2 .. 2^2)")
    p.add_argument("--source", choices=["cai", "r52"], default="cai",
                   help="Reuters data: Deng Cai's .mat (the paper's) or R52 raw text")
    p.add_argument("--representation", choices=["tfidf", "counts"], default=None,
                   help="text features for 20ng/reuters (webkb4 is binary either way); default "
                        "counts for Cai's Reuters, tf-idf otherwise; the regression term and "
                        "hence the scale of W and G depend on it")
    p.add_argument("--mu", type=float, default=0.5)
    p.add_argument("--beta", type=float, default=0.5)
    p.add_argument("--max-iter", type=int, default=_DEFAULTS["max_iter"],
                   help="as run: most sweeps (default: the estimator's)")
    p.add_argument("--tol", type=float, default=_DEFAULTS["tol"],
                   help="as run: relative decrease of J that stops (default: the estimator's)")
    p.add_argument("--as-run", default=_DEFAULTS["algorithm"], choices=mr._ALGORITHMS[:2],
                   help="the solver of the 'as run' rows (default: the estimator's); 'damped' "
                        "is the damped multiplicative update")
    p.add_argument("--tol-study", action="store_true",
                   help="instead of the tables: accuracy and sweeps for several (max_iter, tol)")
    p.add_argument("--tol-grid", nargs="+", type=_tol_setting, metavar="MAX_ITER:TOL",
                   help="settings of --tol-study (default: " + " ".join(
                       f"{m}:{t:g}" for m, t in TOL_STUDY) + "); the tightest tol is the "
                        "reference of the label agreement")
    p.add_argument("--snmf-study", action="store_true",
                   help="instead of the tables: SNMF accuracy over --starts starts for each "
                        "unstated detail (start, features, similarity, stopping, read-off)")
    p.add_argument("--starts", type=int, default=50,
                   help="starts per variant in --snmf-study")
    p.add_argument("--threads", type=int, default=1,
                   help="BLAS threads (threadpoolctl); 1 avoids oversubscription on shared hosts")
    args = p.parse_args(argv)
    from threadpoolctl import threadpool_limits

    threadpool_limits(args.threads)
    print(f"# MTCMRL paper reproduction, {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} "
          f"UTC; command: python benchmarks/mtcmrl_paper.py {' '.join(argv or sys.argv[1:])}")
    for name in args.datasets:
        t0 = time.perf_counter()
        (snmf_study if args.snmf_study else tol_study if args.tol_study else run_dataset)(name, args)
        print(f"# {name}: {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
