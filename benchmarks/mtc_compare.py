"""One comparison table: every multi-task method against the best single-task baseline.

For each data set (two or more related tasks over one feature space) and each task, this prints
the best single-task NMI (mean over ``--runs`` seeds, and which baseline it was), the NMI of every
multi-task method in its documented best setting (the table :data:`MT_SETTINGS` below), and a
win / tie / loss mark against that best baseline. A **tie** is a mean NMI within
:data:`TIE` (0.01) of the best baseline; a win is more than 0.01 above it. The summary counts
wins, ties and losses per method and the headline: on how many task cells the best multi-task
method beats (by more than 0.01) the best single-task baseline.

Run ``r`` gives ``random_state=r`` to every method, so all methods see the same seeds.

Representations (computed here from the raw counts of each loader, the same for every data set):

* ``tfidf``  - tf-idf, idf fitted on all tasks stacked, rows scaled to unit L2 norm;
* ``tf``     - term frequencies: counts with rows scaled to sum to one (kl's simplex);
* ``counts`` - the raw counts (word presence for WebKB4).

For the digits tasks (8x8 pixel intensities, not words) ``tfidf`` and ``counts`` are the pixels
themselves and ``tf`` is the pixels with rows scaled to sum to one.

Single-task baselines (:data:`BASELINES`): squared-Euclidean k-means on tf-idf (= spherical-like
k-means, rows have unit norm), kl k-means on term frequencies (``BregmanKMeans(divergence="kl")``,
default smoothing), and NCut (scikit-learn ``SpectralClustering`` on the 10-nearest-neighbour graph
of the unit-norm rows, i.e. a cosine kNN graph), as the kernel-MTC and MTCMRL papers use; its
eigenvectors come from ARPACK up to :data:`NCUT_ARPACK_MAX_N` rows per task, from LOBPCG above
(ARPACK's shift-invert factorisation is too slow there).

Multi-task methods that cannot run on a data set (MTCMRL builds an n x n similarity per task) are
skipped with the reason printed. LSSMTC's row-space factorisation (an eigendecomposition of the
stacked tasks' Gram matrix, the fit's cubic-cost step) depends on the data only, so it is computed
once per data set and reused by every seed (the estimator's ``memory``, in ``--cache-dir`` or a
temporary directory removed at exit). The kernel MTC estimators run with their defaults for the
kernel k-means start and the factor (random partition, unit-norm rows: the paper "as run").
Controls (:data:`MT_SETTINGS` entries marked ``control``, e.g. LNKMTC without its cross-task
term) run only when named in ``--methods``; the table shows them, the headline leaves them out.

Data: ``load_mbc_tasks`` (CLUTO splits, NG20-1/2/3), ``load_malsar`` (Rec.vs.Talk, Comp.vs.Sci),
``load_webkb4`` (one task per university) from ``../shared/data`` or ``BREGCLUST_DATA``;
``make_digits_tasks`` needs no download. A data set whose files are missing is skipped.

Usage::

    python benchmarks/mtc_compare.py --datasets digits,webkb4,tr11 --runs 3
    python benchmarks/mtc_compare.py --quick --datasets digits          # smoke test
    python benchmarks/mtc_compare.py --methods MBC-kl,LSSMTC --runs 5

Long runs are split and joined: ``--save`` per data set (written after every data set), then
``--merge`` of the saved files. To re-run some methods only (e.g. after a change of MBC's
defaults), skip the baselines and let the merge take them from the earlier files; a later file's
score of a method replaces an earlier one::

    python benchmarks/mtc_compare.py --runs 5 --datasets tr11 --save all_tr11.json
    python benchmarks/mtc_compare.py --runs 5 --datasets tr11 --methods MBC-sq,MBC-kl \
        --baselines none --save mbc_tr11.json
    python benchmarks/mtc_compare.py --merge all_*.json mbc_*.json
    python benchmarks/mtc_compare.py --merge all_*.json mbc_*.json --methods MBC-sq,MBC-kl
"""

import argparse
import json
import tempfile
import time
import warnings

import numpy as np
import scipy.sparse as sp
from _common import machine
from sklearn.cluster import KMeans, SpectralClustering
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.manifold import spectral_embedding
from sklearn.neighbors import kneighbors_graph
from sklearn.preprocessing import normalize

from bregclust import datasets as ds
from bregclust.kernel_mtc import NonparametricKernelMTC, SpectralKernelMTC
from bregclust.kmeans import BregmanKMeans
from bregclust.mbc import MultitaskBregmanClustering
from bregclust.metrics import nmi
from bregclust.model_relation import ModelRelationClustering
from bregclust.shared_subspace import SharedSubspaceClustering
from bregclust.spectral_mtc import SpectralMTC

#: A multi-task mean NMI within this of the best single-task mean NMI counts as a tie.
TIE = 0.01

#: Multi-task methods in their documented best setting: representation, estimator and keyword
#: arguments (the estimator's defaults otherwise).
MT_SETTINGS = {
    "MBC-sq": dict(rep="tfidf", est=MultitaskBregmanClustering,
                   kw=dict(divergence="sqeuclidean")),
    "MBC-kl": dict(rep="tf", est=MultitaskBregmanClustering, kw=dict(divergence="kl")),
    # the estimator's defaults: C="auto" (label-free choice of C), b=30, random-partition
    # start, unit-norm factor rows
    "LNKMTC": dict(rep="tfidf", est=NonparametricKernelMTC, kw=dict()),
    "LSKMTC": dict(rep="tfidf", est=SpectralKernelMTC,
                   kw=dict(C=1000.0, b=1, n_eigenvectors=30)),
    "LSSMTC": dict(rep="counts", est=SharedSubspaceClustering,
                   kw=dict(n_components=2, lam=0.75, init="random")),
    "MTCMRL": dict(rep="tfidf", est=ModelRelationClustering,
                   kw=dict(lam=4.0, alpha=4.0, mu=0.5, beta=0.5), max_n=4000),
    # the recommended entry point (issue 38): per task, a label-free choice of base (spectral
    # clustering on the cosine 10-NN graph = the NCut baseline, or k-means sq on unit rows, or
    # kl k-means on sum-one rows: the largest modularity on the task's graph); tasks on the
    # spectral base joined by cross-task kNN edges, the coupling chosen per task by the
    # normalised cut on the task's own graph under the pareto guard (0 included)
    "SpecMTC": dict(rep="tfidf", est=SpectralMTC, kw=dict()),
    # Controls (run only when named in --methods; shown in the table, left out of the headline):
    # the coupling off (base choice only), the base choice off (spectral base, coupled as the
    # default), both off (= the NCut baseline, same seeds), the joint graph only and the
    # instance transfer only at fixed couplings on the spectral base, the instance transfer
    # chosen "auto", and on the spectral base the previous guard (agreement only) and none
    "SpecMTC-mu0": dict(rep="tfidf", est=SpectralMTC, kw=dict(coupling=0.0), control=True),
    # the k-means bases coupled in the manner of MBC under the modularity guard (issue 38,
    # session 17; benchmarks/spectral_mtc_kmeans_coupling.py scores it with the default and
    # the gain rule from one fit per seed)
    "SpecMTC-kmc": dict(rep="tfidf", est=SpectralMTC, kw=dict(kmeans_coupling="mbc"),
                        control=True),
    # session 15's base rule (smallest regret of the gains over chance of three objectives)
    "SpecMTC-gain": dict(rep="tfidf", est=SpectralMTC, kw=dict(base_rule="gain"), control=True),
    "SpecMTC-gain-mu0": dict(rep="tfidf", est=SpectralMTC, kw=dict(base_rule="gain", coupling=0.0),
                             control=True),
    "SpecMTC-spectral": dict(rep="tfidf", est=SpectralMTC, kw=dict(base="spectral"),
                             control=True),
    "SpecMTC-spectral-mu0": dict(rep="tfidf", est=SpectralMTC,
                                 kw=dict(base="spectral", coupling=0.0), control=True),
    "SpecMTC-joint.05": dict(rep="tfidf", est=SpectralMTC,
                             kw=dict(base="spectral", coupling=0.05, transfer="joint"),
                             control=True),
    "SpecMTC-inst.05": dict(rep="tfidf", est=SpectralMTC,
                            kw=dict(base="spectral", coupling=0.05, transfer="instance"),
                            control=True),
    "SpecMTC-inst-auto": dict(rep="tfidf", est=SpectralMTC, kw=dict(transfer="instance"),
                              control=True),
    "SpecMTC-spectral-agree": dict(rep="tfidf", est=SpectralMTC,
                                   kw=dict(base="spectral", guard="agreement"), control=True),
    "SpecMTC-spectral-noguard": dict(rep="tfidf", est=SpectralMTC,
                                     kw=dict(base="spectral", guard="agreement",
                                             min_agreement=-1.0), control=True),
    # LNKMTC without its cross-task MMD term (C=0), to tell its kernel learning and kernel
    # k-means apart from the multi-task coupling.
    "LNKMTC-C0": dict(rep="tfidf", est=NonparametricKernelMTC, kw=dict(C=0.0), control=True),
    "MBC-sq-g": dict(rep="tfidf", est=MultitaskBregmanClustering, kw=dict(guard="task"), control=True),
    # issue 38, session 19: k-means on the unit rows of every spectral embedding (Ng, Jordan &
    # Weiss 2002) in place of the scaled rows ("njw"), or per task the one of larger modularity
    # ("njw-both"); with the coupling off (-mu0: the method's own single-task base)
    "SpecMTC-njw": dict(rep="tfidf", est=SpectralMTC, kw=dict(spectral_rows="unit"),
                        control=True),
    "SpecMTC-njw-both": dict(rep="tfidf", est=SpectralMTC, kw=dict(spectral_rows="both"),
                             control=True),
    "SpecMTC-njw-mu0": dict(rep="tfidf", est=SpectralMTC,
                            kw=dict(spectral_rows="unit", coupling=0.0), control=True),
    "SpecMTC-njw-both-mu0": dict(rep="tfidf", est=SpectralMTC,
                                 kw=dict(spectral_rows="both", coupling=0.0), control=True),
    # issue 38, session 20: per task the candidate base (spectral on scaled / unit rows, k-means
    # sq on unit rows, kl k-means) that agrees most with the others (mean NMI with their runs at
    # three seeds; benchmarks/spectral_mtc_base.py), with the coupling off (-mu0)
    "SpecMTC-cons": dict(rep="tfidf", est=SpectralMTC,
                         kw=dict(base_rule="consensus", spectral_rows="both"), control=True),
    "SpecMTC-cons-mu0": dict(rep="tfidf", est=SpectralMTC,
                             kw=dict(base_rule="consensus", spectral_rows="both", coupling=0.0),
                             control=True),
    # issue 38, session 20 (tf38): SpectralMTC given the raw counts (input="counts"): tf-idf
    # computed inside as the "tfidf" representation for the graphs and the spectral / spherical
    # bases, the kl base on term frequencies; -mu0 with the coupling off. On the digits tasks
    # "counts" are the pixels, so the graphs there are on pixels weighted by an idf.
    "SpecMTC-counts": dict(rep="counts", est=SpectralMTC, kw=dict(input="counts"),
                           control=True),
    "SpecMTC-counts-mu0": dict(rep="counts", est=SpectralMTC,
                               kw=dict(input="counts", coupling=0.0), control=True),
}
#: Methods run by default (every entry of MT_SETTINGS that is not a control).
DEFAULT_METHODS = tuple(m for m, s in MT_SETTINGS.items() if not s.get("control"))

#: Single-task baselines: representation and how they are fitted (see the module docstring).
BASELINES = {
    "k-means sq (tf-idf)": "tfidf",
    "k-means kl (tf)": "tf",
    "NCut (cosine 10-NN)": "tfidf",
    # NCut's graph and embedding, k-means on the embedding's unit rows (Ng, Jordan & Weiss 2002)
    "NJW (cosine 10-NN)": "tfidf",
}

CLUTO = ("tr11", "tr23", "tr45", "reviews", "hitech", "ohscal")
NG20 = ("ng20-1", "ng20-2", "ng20-3")
MALSAR = ("rec.vs.talk", "comp.vs.sci")
#: Default order: small data sets first.
DATASETS = ("digits", "webkb4", "tr23", "tr11", "tr45", "rec.vs.talk", "comp.vs.sci", "hitech",
            "reviews", "ohscal", "ng20-1", "ng20-2", "ng20-3")


def load(name):
    """Raw non-negative matrices, labels and task names of one data set (``is_text`` flag)."""
    if name == "digits":
        b = ds.make_digits_tasks(random_state=0)
        return [np.asarray(X, float) for X in b.Xs], b.ys, b.task_names, False
    if name == "webkb4":
        b = ds.load_webkb4(sparse=True)
    elif name in MALSAR:
        b = ds.load_malsar(name)
    else:
        b = ds.load_mbc_tasks(name, representation="counts")
    return list(b.Xs), list(b.ys), list(b.task_names), True


def subsample(Xs, ys, n_max, seed=0):
    """At most ``n_max`` rows per task (a fixed random subset), for ``--quick``."""
    rng = np.random.RandomState(seed)
    out_X, out_y = [], []
    for X, y in zip(Xs, ys):
        keep = np.sort(rng.permutation(X.shape[0])[:n_max])
        out_X.append(X[keep])
        out_y.append(np.asarray(y)[keep])
    return out_X, out_y


def representations(Xs, is_text):
    """``{"tfidf", "tf", "counts"}`` -> list of per-task matrices (see the module docstring)."""
    tf = [normalize(X, norm="l1") for X in Xs]
    if not is_text:
        return {"tfidf": Xs, "tf": tf, "counts": Xs}
    sizes = np.cumsum([0] + [X.shape[0] for X in Xs])
    T = TfidfTransformer().fit_transform(sp.vstack([sp.csr_matrix(X) for X in Xs]).tocsr())
    tfidf = [sp.csr_matrix(T[a:b]) for a, b in zip(sizes[:-1], sizes[1:])]
    return {"tfidf": tfidf, "tf": [sp.csr_matrix(X) for X in tf],
            "counts": [sp.csr_matrix(X) for X in Xs]}


#: Above this many rows NCut's spectral embedding uses LOBPCG: scikit-learn's default ARPACK
#: runs in shift-invert mode, whose sparse LU of the kNN graph's Laplacian did not finish in
#: 40 minutes on a task of 8,452 documents (ohscal); at or below it, ARPACK as before.
NCUT_ARPACK_MAX_N = 3000


def ncut_eigen_solver(n):
    """``eigen_solver`` of NCut's ``SpectralClustering`` for a task of ``n`` rows."""
    return "arpack" if n <= NCUT_ARPACK_MAX_N else "lobpcg"


def fit_baseline(name, X, k, seed):
    """Labels of one single-task baseline on one task."""
    if name.startswith("NJW"):
        # NCut's steps, seeds drawn in the same order (SpectralClustering has no NJW rounding:
        # its assign_labels are k-means on the scaled rows, discretize, cluster_qr)
        rng = np.random.RandomState(seed)
        Xn = normalize(X)
        A = kneighbors_graph(Xn, n_neighbors=min(10, X.shape[0] - 1), include_self=True)
        maps = spectral_embedding(0.5 * (A + A.T), n_components=k, random_state=rng,
                                  eigen_solver=ncut_eigen_solver(X.shape[0]), drop_first=False)
        return KMeans(k, n_init=10, random_state=rng).fit(normalize(maps)).labels_
    if name.startswith("NCut"):
        Xn = normalize(X)
        nn = min(10, X.shape[0] - 1)
        est = SpectralClustering(k, affinity="nearest_neighbors", n_neighbors=nn,
                                 assign_labels="kmeans", random_state=seed,
                                 eigen_solver=ncut_eigen_solver(X.shape[0]))
        return est.fit(Xn).labels_
    div = "kl" if "kl" in name else "sqeuclidean"
    return BregmanKMeans(k, divergence=div, random_state=seed).fit(X).labels_


def resolve_settings(methods):
    """Keyword arguments that will run per method (printed, one line each)."""
    out = {}
    for m in methods:
        s = MT_SETTINGS[m]
        out[m] = dict(s["kw"])
        args = ", ".join(f"{k}={v!r}" for k, v in out[m].items())
        print(f"  {m}: {s['est'].__name__}({args}) on {s['rep']}"
              + (" [control]" if s.get("control") else ""))
    return out


def fit_mt(method, kw, Xs, ks, seed, memory=None):
    """Labels per task of one multi-task method (``memory``: LSSMTC's cache directory)."""
    est_cls = MT_SETTINGS[method]["est"]
    kw = dict(kw)
    if est_cls in (NonparametricKernelMTC, SpectralKernelMTC):
        joint = len(set(ks)) == 1
        n = sum(X.shape[0] for X in Xs)
        if "b" in kw and est_cls is NonparametricKernelMTC:
            kw["b"] = min(kw["b"], n - 2)
        if "n_eigenvectors" in kw:
            kw["n_eigenvectors"] = min(kw["n_eigenvectors"], n - 2)
        kw["n_neighbors"] = min(10, min(X.shape[0] for X in Xs) - 1)
        est = est_cls(ks[0] if joint else list(ks), joint=joint, random_state=seed, **kw)
    elif est_cls is SharedSubspaceClustering:
        kw["n_components"] = min(kw.get("n_components", 2), Xs[0].shape[1])
        est = est_cls(max(ks), random_state=seed, memory=memory, **kw)
    else:
        est = est_cls(list(ks), random_state=seed, **kw)
    return est.fit(Xs).labels_


def skip_reason(method, Xs):
    """Why ``method`` is not run on these tasks, or None."""
    max_n = MT_SETTINGS[method].get("max_n")
    n = max(X.shape[0] for X in Xs)
    if max_n is not None and n > max_n:
        return (f"a task has {n} rows > {max_n}: the dense n x n similarity per task is too "
                "large for this comparison")
    return None


def run_dataset(name, args, settings):
    """Mean NMI per task of every baseline and method; prints the data set's table."""
    try:
        Xs, ys, task_names, is_text = load(name)
    except FileNotFoundError as exc:
        print(f"\n### {name}: skipped (data missing: {exc})")
        return None
    if args.quick:
        Xs, ys = subsample(Xs, ys, args.quick_n)
    ys = [np.asarray(y) for y in ys]
    ks = [int(np.unique(y).size) for y in ys]
    reps = representations(Xs, is_text)
    sizes = " + ".join(str(X.shape[0]) for X in Xs)
    print(f"\n### {name}: {len(Xs)} tasks ({sizes} rows, {Xs[0].shape[1]} features, "
          f"classes {ks})")
    T = len(Xs)
    scores, times = {}, {}
    for b, rep in BASELINES.items():
        if b not in args.baselines:
            continue
        t0 = time.perf_counter()
        runs = [[nmi(y, fit_baseline(b, X, k, seed)) for X, y, k in zip(reps[rep], ys, ks)]
                for seed in range(args.runs)]
        scores[b] = np.mean(runs, axis=0)
        times[b] = time.perf_counter() - t0
    skipped = {}
    for m in args.methods:
        reason = skip_reason(m, Xs)
        if reason:
            skipped[m] = reason
            print(f"  {m}: skipped ({reason})")
            continue
        t0 = time.perf_counter()
        runs = []
        for seed in range(args.runs):
            labels = fit_mt(m, settings[m], reps[MT_SETTINGS[m]["rep"]], ks, seed,
                            memory=args.cache_dir)
            runs.append([nmi(y, lab) for y, lab in zip(ys, labels)])
        scores[m] = np.mean(runs, axis=0)
        times[m] = time.perf_counter() - t0
    ran = [m for m in args.methods if m in scores]
    ran_b = [b for b in BASELINES if b in scores]
    header = ["task", "best single-task (NMI, baseline)"] + ran
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    cells = []
    for t in range(T):
        best_b = max(ran_b, key=lambda b: scores[b][t]) if ran_b else None
        best = float(scores[best_b][t]) if ran_b else None
        row = [task_names[t], f"{best:.3f} ({best_b})" if ran_b else "- (baselines not run)"]
        marks = {}
        for m in ran:
            marks[m] = _mark(scores[m][t], best)
            row.append(f"{scores[m][t]:.3f} {marks[m]}".rstrip())
        cells.append(dict(data=name, task=task_names[t], best=best, best_b=best_b,
                          baselines={b: float(scores[b][t]) for b in ran_b},
                          mt={m: float(scores[m][t]) for m in ran}, marks=marks))
        print("| " + " | ".join(row) + " |")
    if ran_b:
        print("baselines per task: " + "; ".join(
            f"{b} " + "/".join(f"{v:.3f}" for v in scores[b]) for b in ran_b))
    print("seconds (all runs): " + ", ".join(f"{k} {v:.1f}" for k, v in times.items()))
    return cells, skipped


def _mark(score, best):
    """W / T / L of a multi-task mean NMI against the best baseline's ("" without one)."""
    if best is None:
        return ""
    d = score - best
    return "W" if d > TIE else ("T" if d >= -TIE else "L")


def summary(cells, methods):
    """The table of all task cells, win / tie / loss per method and the headline."""
    print("\n## All task cells: mean NMI; W / T / L against the best single-task baseline "
          "(- : skipped or not run)\n")
    header = ["data", "task", "best single-task"] + list(methods)
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for c in cells:
        row = [c["data"], c["task"], f"{c['best']:.3f} ({c['best_b'].split(' (')[0]})"]
        row += [f"{c['mt'][m]:.3f} {c['marks'][m]}" if m in c["mt"] else "-"
                for m in methods]
        print("| " + " | ".join(row) + " |")
    print(f"\n## Summary over {len(cells)} task cells (W: more than {TIE} NMI above the best "
          f"single-task baseline, T: within {TIE}, L: more than {TIE} below)\n")
    print("| method | cells run | W | T | L | mean NMI - best baseline |")
    print("|---|---|---|---|---|---|")
    for m in methods:
        run = [c for c in cells if m in c["marks"]]
        if not run:
            print(f"| {m} | 0 | - | - | - | - |")
            continue
        w, t, l = (sum(c["marks"][m] == x for c in run) for x in "WTL")
        gap = np.mean([c["mt"][m] - c["best"] for c in run])
        print(f"| {m} | {len(run)} | {w} | {t} | {l} | {gap:+.3f} |")
    data_sets = list(dict.fromkeys(c["data"] for c in cells))
    print("\nPer data set: mean over its task cells of (method NMI - best single-task NMI); the "
          "issue-38 target is no data set below -0.02\n")
    print("| method | " + " | ".join(data_sets) + " | data sets below -0.02 |")
    print("|---|" + "---|" * (len(data_sets) + 1))
    for m in methods:
        means = []
        for d in data_sets:
            run = [c["mt"][m] - c["best"] for c in cells if c["data"] == d and m in c["mt"]]
            means.append(float(np.mean(run)) if run else None)
        below = sum(v is not None and v < -0.02 for v in means)
        print(f"| {m} | " + " | ".join("-" if v is None else f"{v:+.3f}" for v in means)
              + f" | {below} |")
    best_mt = []
    for c in cells:
        mt = {m: v for m, v in c["mt"].items() if not MT_SETTINGS.get(m, {}).get("control")}
        if mt:
            m = max(mt, key=mt.get)
            best_mt.append((c, m, mt[m] - c["best"]))
    wins = sum(d > TIE for _, _, d in best_mt)
    ties = sum(-TIE <= d <= TIE for _, _, d in best_mt)
    above = sum(d > 0 for _, _, d in best_mt)
    n = len(best_mt)
    print(f"\nHeadline: the best multi-task method beats the best single-task baseline by more "
          f"than {TIE} NMI on {wins} of {n} task cells ({ties} ties within {TIE}; above it at "
          f"all on {above} of {n}). Goal: at least half ({(n + 1) // 2}): "
          f"{'met' if n and 2 * wins >= n else 'not met'}.")
    which = {}
    for c, m, d in best_mt:
        if d > TIE:
            which.setdefault(m, []).append(f"{c['data']}/{c['task']}")
    for m, where in which.items():
        print(f"  wins by {m}: {', '.join(where)}")


def merge(files):
    """Cells of several ``--save`` files, joined by (data set, task).

    A cell's best single-task baseline is taken from the first file that ran baselines on that
    cell (a file saved with ``--baselines none``, e.g. a re-run of some multi-task methods only,
    contributes no baseline); the multi-task scores of all files are pooled (a later file's score
    of the same method replaces an earlier one) and the W / T / L marks are recomputed against
    that baseline. Cells that no file gives a baseline for are dropped with a message.
    """
    by_key, methods = {}, []
    for f in files:
        with open(f) as fh:
            saved = json.load(fh)
        methods += [m for m in saved["methods"] if m not in methods]
        for c in saved["cells"]:
            cell = by_key.setdefault((c["data"], c["task"]), dict(c, mt={}))
            if cell.get("best") is None and c.get("best") is not None:
                cell.update(best=c["best"], best_b=c["best_b"],
                            baselines=c.get("baselines", {}))
            cell["mt"].update(c["mt"])
    cells = [c for c in by_key.values() if c.get("best") is not None]
    for key, c in by_key.items():
        if c.get("best") is None:
            print(f"  {key[0]}/{key[1]}: no file has its baselines; left out")
    for c in cells:
        c["marks"] = {m: _mark(v, c["best"]) for m, v in c["mt"].items()}
    return cells, methods


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", default=",".join(DATASETS),
                   help="comma-separated, from: " + ", ".join(DATASETS))
    p.add_argument("--runs", type=int, default=3, help="seeds 0..runs-1 (default 3)")
    p.add_argument("--methods", default=None,
                   help="comma-separated multi-task methods (default: all but the controls), from: "
                        + ", ".join(MT_SETTINGS) + "; with --merge: the columns to show")
    p.add_argument("--baselines", default="all",
                   help="'all' (default), 'none' (multi-task methods only, e.g. to re-run some "
                        "methods and --merge them with an earlier run's baselines) or a "
                        "comma-separated subset of: " + ", ".join(BASELINES))
    p.add_argument("--quick", action="store_true",
                   help="subsample every task to --quick-n rows (smoke test)")
    p.add_argument("--quick-n", type=int, default=150)
    p.add_argument("--save", metavar="FILE",
                   help="also write the per-task cells as JSON (to merge runs with --merge)")
    p.add_argument("--cache-dir", metavar="DIR",
                   help="keep LSSMTC's row-space factorisations here (joblib.Memory; reused by "
                        "later runs on the same data); default: a temporary directory removed "
                        "at exit")
    p.add_argument("--merge", nargs="+", metavar="FILE",
                   help="print the summary of cells saved by earlier --save runs, run nothing")
    args = p.parse_args(argv)
    if args.merge:
        print(f"mtc_compare --merge {' '.join(args.merge)}")
        cells, methods = merge(args.merge)
        if args.methods is not None:
            wanted = [m.strip() for m in args.methods.split(",") if m.strip()]
            unknown = [m for m in wanted if m not in methods]
            if unknown:
                p.error(f"--methods {','.join(unknown)} not in the merged files; they hold "
                        f"{', '.join(methods)}")
            methods = wanted
            for c in cells:  # the headline counts the shown methods only
                c["mt"] = {m: v for m, v in c["mt"].items() if m in methods}
                c["marks"] = {m: v for m, v in c["marks"].items() if m in methods}
        summary(cells, methods)
        return
    args.datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    args.methods = [m.strip() for m in (args.methods or ",".join(DEFAULT_METHODS)).split(",")
                    if m.strip()]
    for d in args.datasets:
        if d not in DATASETS:
            p.error(f"unknown data set {d!r}; choose from {', '.join(DATASETS)}")
    for m in args.methods:
        if m not in MT_SETTINGS:
            p.error(f"unknown method {m!r}; choose from {', '.join(MT_SETTINGS)}")
    if args.runs < 1:
        p.error("--runs must be at least 1")
    if args.baselines.strip().lower() in ("all", "none"):
        args.baselines = list(BASELINES) if args.baselines.strip().lower() == "all" else []
    else:
        args.baselines = [b.strip() for b in args.baselines.split(",") if b.strip()]
        for b in args.baselines:
            if b not in BASELINES:
                p.error(f"unknown baseline {b!r}; choose from {', '.join(BASELINES)}")
    print(f"mtc_compare: {machine()}")
    print(f"runs (seeds) 0..{args.runs - 1}; data sets {', '.join(args.datasets)}"
          f"{f'; --quick: at most {args.quick_n} rows per task' if args.quick else ''}")
    print("settings:")
    settings = resolve_settings(args.methods)
    print("  baselines: " + ("; ".join(f"{b} on {BASELINES[b]}" for b in args.baselines)
                             or "none (multi-task methods only; --merge with a run that has them)"))
    cells, skipped_all = [], {}
    t0 = time.perf_counter()
    with warnings.catch_warnings(), tempfile.TemporaryDirectory(prefix="mtc_compare_") as tmp:
        if args.cache_dir is None:
            args.cache_dir = tmp
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.filterwarnings("ignore", message=".*C=0.*")
        for name in args.datasets:
            res = run_dataset(name, args, settings)
            if res is not None:
                cells += res[0]
                for m in res[1]:
                    skipped_all.setdefault(m, []).append(name)
            if args.save:  # after every data set, so an interrupted run keeps what it measured
                with open(args.save, "w") as fh:
                    json.dump({"methods": args.methods, "cells": cells}, fh, indent=1)
    if args.baselines:
        summary(cells, args.methods)
    else:
        print("\nno baselines run: no W / T / L summary; pass this --save file to --merge after "
              "a file that has the baselines")
    for m, where in skipped_all.items():
        print(f"  {m} skipped on: {', '.join(where)}")
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
