"""The ``bregclust`` command: ``divergences``, ``demo`` and ``fit``.

``bregclust demo`` clusters a real multi-task data set that ships with scikit-learn (the 8x8
digits, split into two related tasks: digits 0-5 and 3-9) with every method of the library and
prints a per-task NMI / ARI / accuracy table. ``bregclust fit`` reads data files and writes labels.
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

__all__ = ["main", "read_matrix", "METHODS"]


# ----------------------------------------------------------------------------- file input/output
def read_matrix(path):
    """Read a data matrix from .npy, .npz, .csv/.txt/.tsv, .mtx or svmlight (.svm/.svmlight/.libsvm).

    ``.npz``: a file written by ``scipy.sparse.save_npz`` or ``numpy.savez`` with an array
    named ``X`` (or a single array). CSV: numbers only, comma-separated (tab for .tsv), no header
    (a first line that is not numeric is skipped). svmlight labels are ignored.
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"data file not found: {p}")
    suf = p.suffix.lower()
    if suf == ".npy":
        return np.load(p, allow_pickle=False)
    if suf == ".npz":
        try:
            return sp.load_npz(p).tocsr()
        except (ValueError, KeyError):
            with np.load(p, allow_pickle=False) as z:
                if "X" in z.files:
                    return z["X"]
                if len(z.files) == 1:
                    return z[z.files[0]]
                raise ValueError(
                    f"{p} holds arrays {z.files}; name the data array 'X'."
                ) from None
    if suf in (".csv", ".txt", ".tsv"):
        delim = "\t" if suf == ".tsv" else ","
        try:
            return np.loadtxt(p, delimiter=delim, ndmin=2)
        except ValueError:
            return np.loadtxt(p, delimiter=delim, ndmin=2, skiprows=1)
    if suf == ".mtx":
        from scipy.io import mmread
        M = mmread(str(p))
        return M.tocsr() if sp.issparse(M) else np.asarray(M)
    if suf in (".svm", ".svmlight", ".libsvm"):
        from sklearn.datasets import load_svmlight_file
        X, _ = load_svmlight_file(str(p))
        return X.tocsr()
    raise ValueError(
        f"unsupported file type {suf!r} for {p}; use .npy, .npz, .csv, .tsv, .txt, .mtx or "
        ".svmlight."
    )


def write_labels(path, labels):
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    if p.suffix.lower() == ".npy":
        np.save(p, np.asarray(labels))
    else:
        np.savetxt(p, np.asarray(labels), fmt="%d")
    return p


# ----------------------------------------------------------------------------- methods
def _fit_kmeans(Xs, args):
    """IND: BregmanKMeans on each task separately (restarts with a progress bar)."""
    from tqdm import tqdm

    from .kmeans import BregmanKMeans

    ks = _per_task(args.n_clusters, len(Xs))
    out = []
    for t, (X, k) in enumerate(zip(Xs, ks)):
        best = None
        for r in tqdm(range(args.n_init), desc=f"task {t}", disable=args.quiet or args.n_init < 2,
                      file=sys.stderr):
            km = BregmanKMeans(k, divergence=args.divergence, divergence_params=_params(args),
                               max_iter=args.max_iter, random_state=args.seed + r).fit(X)
            if best is None or km.inertia_ < best.inertia_:
                best = km
        out.append(best.labels_)
    return out


def _fit_agglomerative(Xs, args):
    """AgglomerativeBregman per task (identity statistic of --divergence), cut at K clusters."""
    from .agglomerative import AgglomerativeBregman

    ks = _per_task(args.n_clusters, len(Xs))
    model = args.model or args.divergence
    return [AgglomerativeBregman(k, model=model, model_params=_params(args)).fit(X).labels_
            for X, k in zip(Xs, ks)]


def _fit_mbc(Xs, args):
    """MBC: all task files clustered jointly (--lam is the paper's lambda, default 0.5)."""
    from .mbc import MultitaskBregmanClustering

    est = MultitaskBregmanClustering(
        _per_task(args.n_clusters, len(Xs)), divergence=args.divergence,
        divergence_params=_params(args), lam=0.5 if args.lam is None else args.lam,
        marginals=args.marginals, centroid_solver=args.centroid_solver, n_init=args.n_init,
        max_iter=args.max_iter, random_state=args.seed).fit(Xs)
    return est.labels_


def _fit_mtcmrl(Xs, args):
    """MTCMRL on all task files together (paper defaults; --lam sets lambda)."""
    from .model_relation import ModelRelationClustering

    ks = _per_task(args.n_clusters, len(Xs))
    lam = 4.0 if args.lam is None else args.lam
    m = ModelRelationClustering(ks, lam=lam, max_iter=args.max_iter,
                                random_state=args.seed).fit(Xs)
    return m.labels_


def _fit_lssmtc(Xs, args):
    """LSSMTC on all task files together (one K for all tasks; --lam sets lambda)."""
    from .shared_subspace import SharedSubspaceClustering

    ks = set(_per_task(args.n_clusters, len(Xs)))
    if len(ks) != 1:
        raise ValueError("lssmtc clusters every task into the same number of clusters; give one -k.")
    lam = 0.5 if args.lam is None else args.lam
    m = SharedSubspaceClustering(ks.pop(), lam=lam, random_state=args.seed).fit(Xs)
    return m.labels_


def _fit_kernel_mtc(Xs, args):
    """LSKMTC on all task files together (the paper's b=1, r=30, kNN 10; --C sets C)."""
    from .kernel_mtc import SpectralKernelMTC

    if args.lam is not None:
        raise ValueError("lskmtc has no lam; its MMD weight is --C (default 100).")
    ks = _per_task(args.n_clusters, len(Xs))
    C = 100.0 if args.C is None else args.C
    joint = len(set(ks)) == 1
    m = SpectralKernelMTC(ks[0] if joint else ks, C=C, joint=joint,
                          random_state=args.seed).fit(Xs)
    return m.labels_


METHODS = {"kmeans": _fit_kmeans, "mbc": _fit_mbc, "agglomerative": _fit_agglomerative,
           "mtcmrl": _fit_mtcmrl,
           "lssmtc": _fit_lssmtc, "lskmtc": _fit_kernel_mtc}


def _per_task(n_clusters, T):
    from ._multitask import per_task

    try:
        ks = [int(v) for v in str(n_clusters).split(",")]
    except ValueError:
        raise ValueError(
            f"--n-clusters must be an int or comma-separated ints, got {n_clusters!r}."
        ) from None
    return per_task(ks[0] if len(ks) == 1 else ks, T, name="--n-clusters")


def _params(args):
    if getattr(args, "mahalanobis_matrix", None):
        return {"A": read_matrix(args.mahalanobis_matrix)}
    return None


# ----------------------------------------------------------------------------- demo
def _cmd_demo(args):
    from tqdm import tqdm

    from .datasets import make_digits_tasks
    from .demo import DEMOS

    data = make_digits_tasks(random_state=args.seed)
    T = len(data.Xs)
    print(f"bregclust demo: scikit-learn's bundled 8x8 digits as {T} related tasks "
          f"({', '.join(data.task_names)}); sizes {[X.shape[0] for X in data.Xs]}, "
          f"{data.Xs[0].shape[1]} pixel counts (0-16) per image.")
    print("Scores per task: NMI (sqrt normalisation) / ARI / clustering accuracy (Hungarian).\n")
    demos = [(n, f) for n, f in DEMOS if not args.methods or n.lower() in args.methods]
    results = []
    timings = []
    for name, fn in tqdm(demos, desc="methods", disable=args.quiet, file=sys.stderr):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results.extend(fn(data.Xs, data.ys, args.seed))
        timings.append((name, time.perf_counter() - t0))
    head = ["method"] + [f"task {t} NMI / ARI / acc" for t in range(T)]
    width = max(len(r[0]) for r in results) + 2
    print(f"{head[0]:<{width}}" + "".join(f"{h:<26}" for h in head[1:]))
    print("-" * (width + 26 * T))
    for name, per in results:
        cells = "".join(f"{s[0]:.3f} / {s[1]:.3f} / {s[2]:.3f}    " for s in per)
        print(f"{name:<{width}}{cells}")
    print("\n" + ", ".join(f"{n}: {s:.1f} s" for n, s in timings))
    return 0


# ----------------------------------------------------------------------------- divergences
def _cmd_divergences(args):
    from .divergences import divergence_table
    rows = divergence_table()
    head = ("name", "aliases", "domain x / y", "d(x, y)", "symmetric", "differentiable")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    line = "  ".join(f"{h:<{w}}" for h, w in zip(head, widths))
    print(line)
    print("-" * len(line))
    for r in rows:
        print("  ".join(f"{str(v):<{w}}" for v, w in zip(r, widths)))
    return 0


# ----------------------------------------------------------------------------- fit
def _cmd_fit(args):
    if args.C is not None and args.method != "lskmtc":
        raise ValueError(f"--C is the MMD weight of lskmtc; {args.method} does not take it.")
    Xs = [read_matrix(f) for f in args.files]
    fn = METHODS[args.method]
    t0 = time.perf_counter()
    labels = fn(Xs, args)
    dt = time.perf_counter() - t0
    outs = []
    for t, (f, lab) in enumerate(zip(args.files, labels)):
        if args.output and len(args.files) == 1:
            target = args.output
        else:
            base = Path(args.output_dir or Path(f).parent)
            target = base / f"{Path(f).stem}.labels.txt"
        outs.append(write_labels(target, lab))
        if not args.quiet:
            counts = np.bincount(lab)
            print(f"task {t}: {len(lab)} points -> {len(counts)} clusters of sizes "
                  f"{counts.tolist()}; labels written to {outs[-1]}")
    if not args.quiet:
        print(f"{args.method} fitted in {dt:.1f} s")
    return 0


def build_parser():
    ap = argparse.ArgumentParser(
        prog="bregclust",
        description="Clustering with Bregman divergences and multi-task clustering.",
    )
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("divergences", help="list the registered divergences and their domains",
                       description="List the registered divergences, aliases and domains.")
    p.set_defaults(func=_cmd_divergences)

    p = sub.add_parser("demo", help="cluster real digits tasks with every method",
                       description=("Cluster scikit-learn's bundled digits, split into two "
                                    "related tasks (0-5 and 3-9), with every method; print "
                                    "per-task NMI / ARI / accuracy. No download."))
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--methods", nargs="*", type=str.lower, default=None,
                   help="restrict to these method groups (e.g. ind mbc)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_demo)

    p = sub.add_parser("fit", help="cluster data files and write labels",
                       description=("Cluster one data file (or several related tasks, one file "
                                    "each) and write one label file per input. Formats: .npy, "
                                    ".npz (scipy.sparse.save_npz or numpy.savez with 'X'), .csv, "
                                    ".tsv, .txt, .mtx, .svmlight."))
    p.add_argument("files", nargs="+", help="data files, one per task")
    p.add_argument("--method", choices=sorted(METHODS), default="kmeans",
                   help="clustering method (default kmeans = BregmanKMeans per task)")
    p.add_argument("-k", "--n-clusters", default="8",
                   help="clusters: one int, or comma-separated per task (e.g. 4,5)")
    p.add_argument("--divergence", default="sqeuclidean",
                   help="divergence name (see `bregclust divergences`)")
    p.add_argument("--model", default=None,
                   help="agglomerative model (default: --divergence; also gaussian_diag, "
                        "gaussian_full, multinomial)")
    p.add_argument("--mahalanobis-matrix", default=None,
                   help="file holding the SPD matrix A for --divergence mahalanobis")
    p.add_argument("--lam", type=float, default=None,
                   help="lambda of mbc (task coupling), mtcmrl (regression weight) or lssmtc "
                        "(within-task weight in [0, 1]); default: the paper's value")
    p.add_argument("--C", type=float, default=None, dest="C",
                   help="lskmtc: weight of the MMD term (default 100)")
    p.add_argument("--marginals", choices=["uniform", "empirical"], default="uniform",
                   help="mbc: transport marginals (uniform = the paper's relaxation)")
    p.add_argument("--centroid-solver", choices=["exact", "geodesic"], default="exact",
                   help="mbc: exact centre step or the paper's geodesic-walk approximation")
    p.add_argument("--n-init", type=int, default=1, help="restarts (best objective wins)")
    p.add_argument("--max-iter", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--output", default=None,
                   help="label file for a single input (.txt or .npy)")
    p.add_argument("--output-dir", default=None,
                   help="folder for <input stem>.labels.txt (default: beside each input)")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=_cmd_fit)
    return ap


def main(argv=None):
    ap = build_parser()
    args = ap.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        print(f"bregclust {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
