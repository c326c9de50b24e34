"""MBC with ``lam="auto"`` and the S-MBC guard on the MTCMRL paper's task splits (issue 38 item 2).

The MTCMRL paper (Zhang et al., IJCAI 2018, Tables 2-4) reports S-MBC (Zhang & Zhang, AAAI
2013: MBC whose tasks fall back to the single-task centre step whenever the coupled one gives
their own objective a higher value), MTSC, SAMTC and SNMF on WebKB4 (4 tasks), 20 Newsgroups
(4 tasks) and Reuters (3 tasks, Deng Cai's data). The splits are those of
``benchmarks/mtcmrl_paper.py`` (its ``load``). This prints, per task, accuracy and NMI (mean
and std over ``--runs`` runs, in %):

* "as printed": the paper's k-means, SNMF, S-MBC, MTSC and SAMTC rows (MTSC and SAMTC have no
  public code and are not run here; the library's :class:`~bregclust.SpectralMTC` is "in the
  manner of" SAMTC, see ``benchmarks/mtc_compare.py``);
* "as run", single-task baselines: k-means (= MBC with ``lam=0`` from the same starts),
  spectral clustering on the cosine 10-nearest-neighbour graph (scikit-learn's
  ``SpectralClustering(affinity="nearest_neighbors")`` on unit tf-idf rows), SNMF (the MTCMRL
  benchmark's solver with ``lam = alpha = 0``, from the k-means labels, as there);
* "as run", MBC (``MultitaskBregmanClustering``) with ``lam="auto"`` and ``guard`` "none",
  "task" and "sweep", label-free, and "S-MBC protocol": ``guard="sweep"`` at the best ``lam``
  of the paper's grid {0.1, ..., 1} chosen by the mean accuracy (uses the labels, as the
  paper's protocol did; reported as an upper bound, not a method).

Run ``r`` starts every MBC variant and k-means from the same k-means++ centres (seeded by
``r``; ``--init random``: k rows of each task drawn uniformly). The features of S-MBC are not stated in the paper; ``--variants`` runs each of

* ``raw-sq``: the loader's features (WebKB4 binary, 20NG tf-idf, Reuters counts), squared
  Euclidean;
* ``l2-sq``: the loader's features with rows L2-normalised (no idf), squared Euclidean;
* ``tfidf-sq``: tf-idf (idf fitted on all tasks), rows L2-normalised, squared Euclidean;
* ``tf-kl``: term frequencies (rows L1-normalised), KL (the MBC paper's model).

Usage::

    python benchmarks/mbc_mtcmrl.py                          # all three, 10 runs, all variants
    python benchmarks/mbc_mtcmrl.py --datasets reuters --runs 3 --variants tfidf-sq
"""

import argparse
import datetime
import pathlib
import platform
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.cluster import SpectralClustering
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.preprocessing import normalize

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import mtcmrl_paper as P  # noqa: E402  (the paper's splits and its SNMF baseline)

import bregclust.model_relation as mr  # noqa: E402
from bregclust.kmeans import bregman_kmeans_plusplus  # noqa: E402
from bregclust.mbc import MultitaskBregmanClustering  # noqa: E402
from bregclust.metrics import clustering_accuracy, nmi  # noqa: E402

# The paper's Tables 2-4, rows not in mtcmrl_paper.PAPER: per task (acc, std, nmi, std) in %.
PAPER_MTC = {
    "webkb4": {
        "S-MBC": [(57.91, 8.43, 24.95, 2.80), (63.84, 7.37, 26.97, 2.23),
                  (57.80, 5.38, 26.72, 3.36), (70.85, 6.56, 39.38, 5.45)],
        "MTSC": [(53.82, 0.99, 25.84, 2.15), (58.40, 0.00, 26.10, 0.00),
                 (58.20, 6.28, 28.40, 0.22), (66.99, 0.00, 45.22, 0.00)],
        "SAMTC": [(66.27, 6.04, 35.12, 6.51), (62.96, 5.36, 32.64, 4.97),
                  (58.04, 6.39, 28.65, 5.46), (72.43, 6.80, 42.51, 5.19)],
    },
    "20ng": {
        "S-MBC": [(44.06, 4.46, 14.61, 11.98), (46.64, 5.75, 22.51, 5.52),
                  (43.93, 0.89, 19.45, 3.52), (70.88, 9.52, 40.61, 8.56)],
        "MTSC": [(76.72, 0.00, 45.44, 0.00), (62.48, 0.08, 42.29, 0.21),
                 (61.53, 0.24, 38.62, 4.44), (60.06, 0.03, 43.87, 0.01)],
        "SAMTC": [(68.21, 10.29, 40.10, 7.61), (58.16, 6.55, 41.55, 3.22),
                  (67.14, 9.64, 45.54, 9.33), (68.18, 9.04, 50.16, 8.12)],
    },
    "reuters": {
        "S-MBC": [(89.47, 9.99, 76.48, 13.64), (92.54, 5.89, 79.71, 7.48),
                  (75.58, 7.64, 55.66, 6.16)],
        "MTSC": [(97.57, 0.00, 89.49, 0.00), (96.15, 0.00, 85.00, 0.00),
                 (90.16, 8.55, 74.04, 11.05)],
        "SAMTC": [(96.94, 3.38, 89.45, 7.35), (96.69, 0.73, 86.35, 2.54),
                  (90.21, 9.27, 76.05, 13.12)],
    },
}
SMBC_GRID = [round(0.1 * i, 1) for i in range(1, 11)]  # the paper's grid for S-MBC's lambda
VARIANTS = {
    "raw-sq": "loader's features, sqeuclidean",
    "l2-sq": "loader's features, L2 rows (no idf), sqeuclidean",
    "tfidf-sq": "tf-idf (idf on all tasks), L2 rows, sqeuclidean",
    "tf-kl": "term frequencies (L1 rows), kl",
}


def features(Xs, variant):
    """The tasks' rows for one variant and its divergence."""
    if variant == "raw-sq":
        return list(Xs), "sqeuclidean"
    if variant == "l2-sq":
        return [normalize(sp.csr_matrix(X, dtype=np.float64)) for X in Xs], "sqeuclidean"
    if variant == "tfidf-sq":
        stack = sp.vstack([sp.csr_matrix(X) for X in Xs]).tocsr()
        tf = TfidfTransformer(norm="l2").fit(stack)
        return [tf.transform(sp.csr_matrix(X)) for X in Xs], "sqeuclidean"
    return [normalize(sp.csr_matrix(X, dtype=np.float64), norm="l1") for X in Xs], "kl"


def scores(ys, labels):
    return np.array([[clustering_accuracy(y, lab), nmi(y, lab)] for y, lab in zip(ys, labels)])


def fmt(S):
    """``(runs, T, 2)`` scores in [0, 1] -> the per-task 'acc±std nmi±std' cells in %."""
    S = np.asarray(S) * 100
    mean, std = S.mean(0), S.std(0)
    return "".join(f"{mean[t, 0]:7.2f}±{std[t, 0]:5.2f} {mean[t, 1]:7.2f}±{std[t, 1]:5.2f}  "
                   for t in range(S.shape[1])), mean


def paper_cells(rows):
    return "".join(f"{a:7.2f}±{sa:5.2f} {b:7.2f}±{sb:5.2f}  " for a, sa, b, sb in rows)


def run_dataset(name, args):
    t0 = time.perf_counter()
    Xs0, ys, _, desc = P.load(name, None, "cai")
    # tf-idf for the spectral baseline: the unit rows of the tfidf variant
    counts = Xs0
    if name == "20ng":  # the loader's 20ng is tf-idf already; counts for the tf-idf/kl variants
        counts = P.load(name, "counts", "cai")[0]
    T = len(Xs0)
    K = [int(np.unique(y).size) for y in ys]
    unit = features(counts, "tfidf-sq")[0]
    print(f"\n## {P.TABLE[name]} - {T} tasks, sizes {[X.shape[0] for X in Xs0]}, "
          f"{Xs0[0].shape[1]} features, clusters {K}")
    print(f"# data: {desc[:160]}...")
    print(f"# runs={args.runs}; accuracy and NMI in % per task (mean±std over runs)")
    head = "method".ljust(46) + "".join(f"{'task ' + str(t + 1) + ' Acc':>14}{'NMI':>14}"
                                        for t in range(T)) + f"{'mean Acc':>10}{'NMI':>8}"
    print(head)

    def line(label, cells, mean=None):
        tail = "" if mean is None else f"{mean[:, 0].mean():10.2f}{mean[:, 1].mean():8.2f}"
        print(f"{label:46}{cells}{tail}")

    for method in ("k-means", "SNMF"):
        rows = P.PAPER[name][method]
        line(f"as printed {method}", paper_cells(rows),
             np.array([[a, b] for a, _, b, _ in rows]))
    for method in ("S-MBC", "MTSC", "SAMTC"):
        rows = PAPER_MTC[name][method]
        line(f"as printed {method}", paper_cells(rows),
             np.array([[a, b] for a, _, b, _ in rows]))

    # single-task baselines independent of the variant: spectral, SNMF (mtcmrl_paper's)
    spec, snmf = [], []
    Ms, _ = mr._prepare(Xs0, "cosine", None, False)
    for r in range(args.runs):
        spec.append(scores(ys, [SpectralClustering(k, affinity="nearest_neighbors",
                                                   n_neighbors=10, random_state=r)
                                .fit(X).labels_ for X, k in zip(unit, K)]))
        if not args.skip_snmf:
            labs = []
            for t, (X, M, k) in enumerate(zip(Xs0, Ms, K)):
                from bregclust.kmeans import BregmanKMeans

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    lab = BregmanKMeans(k, n_init=1, random_state=1000 * r + t).fit(X).labels_
                out = mr._fit_loop([X], [M], [None], [P.indicators(lab, k)],
                                   [np.zeros((1, k))], 0.0, 0.5, 0.0, 0.0, 300, 1e-6)
                labs.append(out["Ys"][0].argmax(1))
            snmf.append(scores(ys, labs))
    line("as run spectral (cosine 10-NN, tf-idf)", *fmt(spec))
    if snmf:
        line("as run SNMF (mtcmrl_paper's solver)", *fmt(snmf))

    summary = {}
    for variant in args.variants:
        Xs, div = features(Xs0 if variant in ("raw-sq", "l2-sq") else counts, variant)
        res = {k: [] for k in ("k-means", "auto", "auto+task", "auto+sweep")}
        grid = {lam: [] for lam in SMBC_GRID}
        info = {"lam": [], "guarded_task": [], "guarded_sweep": [], "lam_sweep": []}
        for r in range(args.runs):
            rs = np.random.RandomState(r)
            smooth = 1.0 if div == "kl" else 0.0
            if args.init == "random":  # k distinct rows of the task, uniformly
                init = [np.asarray(X[np.sort(rs.choice(X.shape[0], k, replace=False))]
                                   .toarray() if sp.issparse(X) else
                                   X[np.sort(rs.choice(X.shape[0], k, replace=False))],
                                   dtype=np.float64) for X, k in zip(Xs, K)]
                if div == "kl":  # inside kl's domain, as the smoothed k-means++ centres
                    init = [(U + smooth * X.mean(axis=0).A.ravel()) / (1 + smooth)
                            if sp.issparse(X) else (U + smooth * X.mean(axis=0)) / (1 + smooth)
                            for U, X in zip(init, Xs)]
            else:
                init = [bregman_kmeans_plusplus(X, k, div, random_state=rs,
                                                smoothing=smooth)[0] for X, k in zip(Xs, K)]

            def fit(**kw):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    return MultitaskBregmanClustering(K, divergence=div, init=init,
                                                      **kw).fit(Xs)

            res["k-means"].append(scores(ys, fit(lam=0.0).labels_))
            est = fit(lam="auto")
            res["auto"].append(scores(ys, est.labels_))
            info["lam"].append(est.lam_)
            est = fit(lam="auto", guard="task")
            res["auto+task"].append(scores(ys, est.labels_))
            info["guarded_task"].append(est.guarded_)
            est = fit(lam="auto", guard="sweep")
            res["auto+sweep"].append(scores(ys, est.labels_))
            info["guarded_sweep"].append(est.guarded_)
            info["lam_sweep"].append(est.lam_)
            if not args.skip_grid:
                for lam in SMBC_GRID:
                    grid[lam].append(scores(ys, fit(lam=lam, guard="sweep").labels_))
        print(f"# variant {variant}: {VARIANTS[variant]}; starts: {args.init}")
        for key, label in (("k-means", "k-means (lam=0, same starts)"),
                           ("auto", "MBC lam=auto"), ("auto+task", "MBC lam=auto guard=task"),
                           ("auto+sweep", "MBC lam=auto guard=sweep")):
            cells, mean = fmt(res[key])
            line(f"as run [{variant}] {label}", cells, mean)
            summary[(variant, key)] = mean
        if not args.skip_grid:
            best = max(SMBC_GRID, key=lambda v: np.mean(np.asarray(grid[v])[:, :, 0]))
            cells, mean = fmt(grid[best])
            line(f"as run [{variant}] S-MBC protocol (lam={best:g})", cells, mean)
            summary[(variant, "smbc")] = mean
        print(f"#   lam_ chosen by auto: {sorted(info['lam'])}; with guard=sweep: "
              f"{sorted(info['lam_sweep'])}")
        print("#   tasks that took IND's partition (guard=task), per task over runs: "
              f"{np.sum(info['guarded_task'], axis=0).tolist()}; guard=sweep: "
              f"{np.sum(info['guarded_sweep'], axis=0).tolist()}")
    spec_mean = fmt(spec)[1]
    for variant in args.variants:
        base = np.maximum(summary[(variant, "k-means")][:, 1], spec_mean[:, 1])
        for key in ("auto", "auto+task", "auto+sweep"):
            gap = summary[(variant, key)][:, 1] - base
            print(f"# [{variant}] {key}: NMI minus the best single-task baseline (k-means or "
                  f"spectral) per task: " + ", ".join(f"{g:+.2f}" for g in gap))
    print(f"# {name}: {time.perf_counter() - t0:.0f} s")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", nargs="+", default=["webkb4", "20ng", "reuters"],
                   choices=["webkb4", "20ng", "reuters"])
    p.add_argument("--runs", type=int, default=10, help="runs (paper: 10)")
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    p.add_argument("--init", choices=["k-means++", "random"], default="k-means++",
                   help="starts of every MBC row and k-means: k-means++ centres, or k rows of "
                        "the task drawn uniformly (an unstated detail of the paper)")
    p.add_argument("--skip-grid", action="store_true",
                   help="leave out the S-MBC protocol row (10 lam values per run)")
    p.add_argument("--skip-snmf", action="store_true", help="leave out the SNMF row")
    p.add_argument("--threads", type=int, default=1, help="BLAS threads (threadpoolctl)")
    args = p.parse_args(argv)
    from threadpoolctl import threadpool_limits

    threadpool_limits(args.threads)
    print(f"# MBC on the MTCMRL splits, {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} "
          f"UTC, {platform.machine()}, command: python benchmarks/mbc_mtcmrl.py "
          f"{' '.join(argv if argv is not None else sys.argv[1:])}")
    for name in args.datasets:
        run_dataset(name, args)


if __name__ == "__main__":
    main()
