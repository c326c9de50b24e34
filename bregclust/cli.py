"""The ``bregclust`` command: ``divergences``, ``demo`` and ``fit``.

``bregclust demo`` clusters a real multi-task data set that ships with scikit-learn (the 8x8
digits, split into two related tasks: digits 0-5 and 3-9) with every method of the library in
its documented best setting, prints a per-task NMI / ARI / accuracy table and one verdict line
per method: its NMI minus the best IND row's, per task. ``bregclust fit`` reads data files and
writes labels.
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
def _is_number(field):
    try:
        float(field)
    except ValueError:
        return False
    return True


def _read_csv(p, delim):
    """Numbers only; a first line with no numeric field is a header, any other bad line an error."""
    with open(p, encoding="utf-8", errors="replace") as fh:
        first = fh.readline()
    fields = [f.strip() for f in first.strip().split(delim)]
    numeric = [_is_number(f) for f in fields]
    skip = 1 if first.strip() and not any(numeric) else 0
    try:
        X = np.loadtxt(p, delimiter=delim, ndmin=2, skiprows=skip)
    except ValueError:
        X = None
    if X is not None:
        if X.shape[0] == 0:
            raise ValueError(f"{p} holds no data rows.")
        return X
    # Find the first offending line to name it.
    width = None
    with open(p, encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, start=1):
            if lineno <= skip or not line.strip() or line.lstrip().startswith("#"):
                continue
            row = [f.strip() for f in line.strip().split(delim)]
            bad = [f for f in row if not _is_number(f)]
            if bad:
                what = ("a header must have no numeric field" if lineno == 1
                        else "only the first line may be a header")
                raise ValueError(
                    f"{p}, line {lineno}: {bad[0]!r} is not a number ({what}); fix or remove "
                    "that line."
                )
            if width is None:
                width = len(row)
            elif len(row) != width:
                raise ValueError(
                    f"{p}, line {lineno}: {len(row)} fields where earlier lines have {width}; "
                    "every row needs the same number of columns."
                )
    raise ValueError(f"{p} could not be read as numbers separated by {delim!r}.")


def _check_loaded(p, X):
    """A 2-D real matrix (dense or sparse) read from ``p``, or a one-sentence ValueError."""
    if sp.issparse(X):
        dtype, shape = X.dtype, X.shape
    else:
        X = np.asarray(X)
        dtype, shape = X.dtype, X.shape
    if dtype.kind == "c":
        raise ValueError(f"{p} holds complex numbers; bregclust clusters real data only.")
    if dtype.kind not in "biuf":
        raise ValueError(f"{p} holds {dtype} values; bregclust needs a numeric matrix.")
    if len(shape) != 2:
        hint = "; for one feature save X.reshape(-1, 1)" if len(shape) == 1 else ""
        raise ValueError(
            f"{p} holds an array of shape {shape}; save a 2-D matrix (n_samples, n_features)"
            f"{hint}."
        )
    return X


def read_matrix(path):
    """Read a data matrix from .npy, .npz, .csv/.txt/.tsv, .mtx or svmlight (.svm/.svmlight/.libsvm).

    ``.npz``: a file written by ``scipy.sparse.save_npz`` or ``numpy.savez`` with an array
    named ``X`` (or a single array). CSV: numbers only, comma-separated (tab for .tsv); a first
    line with no numeric field is a header and is skipped, any other non-numeric field is an
    error naming the line. svmlight labels are ignored.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    X : ndarray or scipy.sparse.csr_matrix of shape (n_samples, n_features)
        Real (bool, integer or float) values.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        A directory, an empty or unreadable file, an unsupported suffix, or content that is not
        a 2-D real matrix; the message names the file (and the line for CSV).
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"data file not found: {p}")
    if p.is_dir():
        raise ValueError(f"{p} is a directory, not a data file.")
    suf = p.suffix.lower()
    readers = {".npy": _read_npy, ".npz": _read_npz, ".csv": _read_text, ".txt": _read_text,
               ".tsv": _read_text, ".mtx": _read_mtx, ".svm": _read_svmlight,
               ".svmlight": _read_svmlight, ".libsvm": _read_svmlight}
    if suf not in readers:
        raise ValueError(
            f"unsupported file type {suf!r} for {p}; use .npy, .npz, .csv, .tsv, .txt, .mtx or "
            ".svmlight."
        )
    if p.stat().st_size == 0:
        raise ValueError(f"{p} is empty (0 bytes).")
    return _check_loaded(p, readers[suf](p))


def _read_npy(p):
    try:
        return np.load(p, allow_pickle=False)
    except (ValueError, EOFError, OSError) as exc:
        raise ValueError(
            f"{p} is not a readable .npy file of numbers ({' '.join(str(exc).split())}); "
            "write it with numpy.save."
        ) from None


def _read_npz(p):
    import zipfile

    if not zipfile.is_zipfile(p):
        raise ValueError(
            f"{p} is not a .npz archive; write it with scipy.sparse.save_npz or numpy.savez."
        )
    try:
        return sp.load_npz(p).tocsr()
    except (ValueError, KeyError, OSError, EOFError, zipfile.BadZipFile):
        pass
    try:
        with np.load(p, allow_pickle=False) as z:
            if "X" in z.files:
                return z["X"]
            if len(z.files) == 1:
                return z[z.files[0]]
            names = z.files
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise ValueError(
            f"{p} is not a readable .npz archive of numbers ({' '.join(str(exc).split())}); "
            "write it with scipy.sparse.save_npz or numpy.savez."
        ) from None
    if not names:
        raise ValueError(f"{p} holds no arrays.")
    raise ValueError(f"{p} holds arrays {names}; name the data array 'X'.")


def _read_text(p):
    return _read_csv(p, "\t" if p.suffix.lower() == ".tsv" else ",")


def _read_mtx(p):
    from scipy.io import mmread
    try:
        M = mmread(str(p))
    except (ValueError, OSError, IndexError) as exc:
        raise ValueError(f"{p} is not a readable Matrix Market file ({exc}).") from None
    return M.tocsr() if sp.issparse(M) else np.asarray(M)


def _read_svmlight(p):
    from sklearn.datasets import load_svmlight_file
    try:
        X, _ = load_svmlight_file(str(p))
    except (ValueError, OSError) as exc:
        raise ValueError(f"{p} is not a readable svmlight file ({exc}).") from None
    return X.tocsr()


def write_labels(path, labels):
    """Write labels as text (one int a line) or ``.npy``; creates the parent folder.

    Parameters
    ----------
    path : str or path-like
    labels : array-like of int

    Returns
    -------
    pathlib.Path
    """
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"output {p} is a directory; give a file name such as {p / 'labels.txt'}.")
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


def _lam_arg(text):
    """``--lam``: a number, or "auto" (MBC's label-free coupling rule)."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number or 'auto', got {text!r}") from None


def _fit_mbc(Xs, args):
    """MBC: all task files clustered jointly (--lam is the task coupling; default "auto", the
    estimator's label-free rule; 0.5 is the paper's value)."""
    from .mbc import MultitaskBregmanClustering

    est = MultitaskBregmanClustering(
        _per_task(args.n_clusters, len(Xs)), divergence=args.divergence,
        divergence_params=_params(args), lam="auto" if args.lam is None else args.lam,
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
        ks = []
    if not ks or min(ks) < 1:
        raise ValueError(
            f"-k/--n-clusters must be a positive integer or comma-separated positive integers "
            f"(one per task file), got {n_clusters!r}."
        )
    return per_task(ks[0] if len(ks) == 1 else ks, T, name="--n-clusters")


def _params(args):
    if getattr(args, "mahalanobis_matrix", None):
        A = read_matrix(args.mahalanobis_matrix)
        return {"A": A.toarray() if sp.issparse(A) else A}
    names = {getattr(args, "divergence", None), getattr(args, "model", None)}
    if names & {"mahalanobis", "mahal"}:
        raise ValueError(
            "--divergence mahalanobis needs its matrix: add --mahalanobis-matrix FILE.npy "
            "(a symmetric positive definite n_features x n_features matrix)."
        )
    return None


# ----------------------------------------------------------------------------- demo
def _cmd_demo(args):
    from tqdm import tqdm

    from .datasets import make_digits_tasks
    from .demo import DEMOS, TIE, verdicts

    unknown = sorted(set(args.methods or ()) - {n.lower() for n, _ in DEMOS})
    if unknown:
        raise ValueError(f"--methods: unknown method group(s) {', '.join(unknown)}; choose from "
                         f"{', '.join(n.lower() for n, _ in DEMOS)}.")
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
    if any(name.startswith("IND") for name, _ in results):
        print(f"\nVerdicts: NMI per task minus the best IND row's (a difference within {TIE} is a "
              "tie; single runs at one seed, so small differences are noise):")
        for line in verdicts(results):
            print("  " + line)
    else:
        print("\n(no verdicts: add 'ind' to --methods to compare with IND)")
    print("\n" + ", ".join(f"{n}: {s:.1f} s" for n, s in timings))
    if args.plot:
        _demo_plot(args.plot, data, results, args.seed)
        print(f"wrote {args.plot}: MBC's transport plan between the tasks' clusters and the "
              "per-task NMI of every method against IND")
    return 0


def _demo_plot(path, data, results, seed):
    """``demo --plot``: :func:`bregclust.plotting.plot_demo` of the demo's rows and an MBC fit."""
    from .mbc import MultitaskBregmanClustering
    from .plotting import plot_demo

    scores = {name: [s[0] for s in per] for name, per in results}
    ind = [name for name in scores if name.startswith("IND")]
    if not ind or len(scores) == len(ind):
        raise ValueError("--plot needs the IND rows and at least one other method; keep 'ind' "
                         "and a multi-task method in --methods.")
    best = max(ind, key=lambda n: sum(scores[n]))
    scores = {("IND" if n == best else n): v for n, v in scores.items()
              if n == best or not n.startswith("IND")}
    K = [len(set(y.tolist())) for y in data.ys]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mbc = MultitaskBregmanClustering(K, divergence="kl", random_state=seed).fit(data.Xs)
    try:
        plot_demo(scores, mbc, baseline="IND", ys=data.ys, path=path)
    except ImportError as exc:  # matplotlib is an extra
        raise ValueError(f"--plot needs matplotlib: {exc}") from None


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
def _fit_targets(args):
    """The label file of every input, checked before any fitting starts."""
    if args.output and args.output_dir:
        raise ValueError("give either -o/--output or --output-dir, not both.")
    if args.output:
        if len(args.files) != 1:
            raise ValueError(
                f"-o/--output names one label file but {len(args.files)} input files were given; "
                "use --output-dir DIR to write <input stem>.labels.txt for each."
            )
        targets = [Path(args.output)]
    else:
        if args.output_dir and Path(args.output_dir).exists() and not Path(args.output_dir).is_dir():
            raise ValueError(f"--output-dir {args.output_dir} exists and is not a directory.")
        targets = [Path(args.output_dir or Path(f).parent) / f"{Path(f).stem}.labels.txt"
                   for f in args.files]
    seen = {}
    for f, tgt in zip(args.files, targets):
        if tgt.is_dir():
            raise ValueError(f"output {tgt} is a directory; give a file name such as "
                             f"{tgt / 'labels.txt'}.")
        if tgt in seen:
            raise ValueError(f"inputs {seen[tgt]} and {f} would both write {tgt}; rename one or "
                             "use different folders.")
        seen[tgt] = f
    return targets


def _cmd_fit(args):
    if args.C is not None and args.method != "lskmtc":
        raise ValueError(f"--C is the MMD weight of lskmtc; {args.method} does not take it.")
    if args.lam == "auto" and args.method != "mbc":
        raise ValueError(f"--lam auto is MBC's label-free coupling rule; give {args.method} a "
                         "number.")
    for name in ("n_init", "max_iter"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}.")
    _per_task(args.n_clusters, len(args.files))
    targets = _fit_targets(args)
    Xs = [read_matrix(f) for f in args.files]
    fn = METHODS[args.method]
    t0 = time.perf_counter()
    labels = fn(Xs, args)
    dt = time.perf_counter() - t0
    outs = []
    for t, (target, lab) in enumerate(zip(targets, labels)):
        outs.append(write_labels(target, lab))
        if not args.quiet:
            counts = np.bincount(lab)
            print(f"task {t}: {len(lab)} points -> {len(counts)} clusters of sizes "
                  f"{counts.tolist()}; labels written to {outs[-1]}")
    if not args.quiet:
        print(f"{args.method} fitted in {dt:.1f} s")
    return 0


def _cmd_compile(args):
    """Compile (or load from numba's cache) the kernels of every built-in model, timed."""
    from .agglomerative import _compile_kernels
    from .divergences import _REGISTRY
    from .kmeans import BregmanKMeans
    from .mbc import MultitaskBregmanClustering

    def say(msg):
        if not args.quiet:
            print(msg, flush=True)

    say("bregclust compile: numba compiles every kernel of the built-in models once and caches "
        "it on disk; later sessions load it.")
    t0 = time.perf_counter()
    t = time.perf_counter()
    models = _compile_kernels()
    say(f"  agglomerative clustering ({', '.join(models)}): {time.perf_counter() - t:.1f} s")
    rng = np.random.default_rng(0)
    Xs = [rng.gamma(2.0, 1.0, size=(20, 3)), rng.gamma(2.0, 1.0, size=(16, 3))]
    names = [name for name, div in _REGISTRY.items() if div.builtin]
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in names:
            params = {"A": np.eye(3)} if _REGISTRY[name].param_names else None
            data = [X - 2.0 for X in Xs] if name == "l1_subgradient" else Xs
            BregmanKMeans(2, divergence=name, divergence_params=params, n_init=1,
                          random_state=0).fit(data[0])
            if _REGISTRY[name].domain != "positive" and not params:  # sparse input
                BregmanKMeans(2, divergence=name, n_init=1, random_state=0).fit(
                    sp.csr_matrix(data[0]))
            MultitaskBregmanClustering(2, divergence=name, divergence_params=params, lam=0.5,
                                       n_init=1, random_state=0).fit(data)
    say(f"  k-means and MBC ({', '.join(names)}): {time.perf_counter() - t:.1f} s")
    say(f"done in {time.perf_counter() - t0:.1f} s")
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``bregclust fit: error: ...``) and exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser():
    ap = _Parser(
        prog="bregclust",
        description="Clustering with Bregman divergences and multi-task clustering.",
    )
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("divergences", help="list the registered divergences and their domains",
                       description="List the registered divergences, aliases and domains.")
    p.set_defaults(func=_cmd_divergences)

    p = sub.add_parser("demo", help="cluster real digits tasks with every method",
                       description=("Cluster scikit-learn's bundled digits, split into two "
                                    "related tasks (0-5 and 3-9), with every method in its "
                                    "best setting; print per-task NMI / ARI / accuracy and a "
                                    "verdict per method against IND. No download."))
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--methods", nargs="*", type=str.lower, default=None,
                   help="restrict to these method groups (e.g. ind mbc)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--plot", metavar="FILE.png", default=None,
                   help="also write MBC's relation heat map and the per-task NMI pairs "
                        "(needs matplotlib: pip install bregclust[plot])")
    p.set_defaults(func=_cmd_demo)

    p = sub.add_parser("compile", help="compile the numba kernels of every built-in model once",
                       description=("Compile the numba kernels of every built-in model "
                                    "(agglomerative clustering, k-means, MBC) and cache them on "
                                    "disk, so the first fit of later sessions does not wait for "
                                    "numba. Run once after installing (or upgrading) bregclust; "
                                    "it respects NUMBA_CACHE_DIR."))
    p.add_argument("--quiet", action="store_true", help="print nothing")
    p.set_defaults(func=_cmd_compile)

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
    p.add_argument("--lam", type=_lam_arg, default=None,
                   help="lambda of mbc (task coupling; a number or 'auto', the default), mtcmrl "
                        "(regression weight) or lssmtc (within-task weight in [0, 1]); default "
                        "for those two: the paper's value")
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
                   help="label file for a single input (.txt or .npy); an error with several "
                        "inputs (use --output-dir)")
    p.add_argument("--output-dir", default=None,
                   help="folder for <input stem>.labels.txt (default: beside each input)")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=_cmd_fit)
    return ap


def main(argv=None):
    ap = build_parser()
    args = ap.parse_args(argv)
    # The one place user errors are reported: bad files, parameters and data raise ValueError,
    # TypeError or OSError (unreadable/unwritable paths) anywhere below; print one line, no
    # traceback. Anything else is a bug and keeps its traceback.
    try:
        return args.func(args)
    except (ValueError, TypeError, OSError) as exc:
        msg = " ".join(str(exc).split()) or type(exc).__name__
        print(f"bregclust {args.command}: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
