"""The ``bregclust`` command: ``divergences``, ``demo`` and ``fit``.

``bregclust demo`` clusters real multi-task data that ship with scikit-learn (the 8x8 digits,
split into two related tasks: digits 0-5 and 3-9) with every method of the library and prints
per-task scores with verdicts computed from the numbers (see :mod:`bregclust.demo`).
``bregclust fit`` reads data files and writes labels; which of its options a method takes is
read from the method's estimator (:data:`METHODS`, :data:`OPTIONS`, :func:`method_options`).
"""

import argparse
import math
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from . import __version__

__all__ = ["main", "read_matrix", "METHODS", "OPTIONS", "method_options"]


# ----------------------------------------------------------------------------- file input/output
def _is_number(field):
    try:
        float(field)
    except ValueError:
        return False
    return True


#: Fields of a text file read as a missing value (compared in lower case). A line of them is
#: data, never a header, and is refused by the finiteness check naming its line and column.
_MISSING = frozenset({"", "na", "n/a", "nan", "-nan", "null", "none", "?"})

_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


def _decode(p):
    """The text of ``p``: UTF-8 (a byte-order mark is dropped; UTF-16 with its mark is read).

    A file that is not UTF-8 is read as Latin-1, which decodes every byte: a header in a legacy
    encoding is then skipped like any header, and a stray byte in a data line is reported by
    the number check with its line.
    """
    raw = p.read_bytes()
    for bom, enc in _BOMS:
        if raw.startswith(bom):
            try:
                return raw[len(bom):].decode(enc)
            except UnicodeDecodeError:
                break
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _sniff_delimiter(line, suffix):
    """``";"``, ``","``, ``"\\t"`` or None (runs of whitespace, ``numpy.savetxt``'s default)."""
    if suffix == ".tsv":
        return "\t"
    # ';' first: files separated by semicolons (spreadsheets in locales with a decimal comma)
    # may hold commas inside their numbers, never the other way round
    for delim in (";", ",", "\t"):
        if delim in line:
            return delim
    return None


def _split(line, delim):
    fields = line.split(delim) if delim is not None else line.split()
    return [f.strip().strip('"').strip() for f in fields]


_DELIM_NAMES = {",": "commas", "\t": "tabs", ";": "semicolons", None: "whitespace"}


def _read_text(p):
    """Numbers separated by commas, tabs, semicolons or whitespace, one row a line.

    Skipped: blank lines (nothing but spaces), lines starting with ``#`` (``numpy.savetxt``'s
    header) and a first line with no numeric field (a header), unless every field of that line
    is a missing value (``,,`` or ``NA,NA``): such a line is data. Returns the matrix and the
    file line of every row, so that later checks can name lines.
    """
    delim = "\t" if p.suffix.lower() == ".tsv" else None
    sniffed = False
    data, linenos = [], []
    for lineno, line in enumerate(_decode(p).split("\n"), start=1):
        line = line.rstrip("\r")
        if (not line.strip() and (delim is None or delim not in line)) \
                or line.lstrip().startswith("#"):
            continue
        if not sniffed:
            sniffed = True
            delim = _sniff_delimiter(line, p.suffix.lower())
            fields = _split(line, delim)
            if not any(map(_is_number, fields)) and not all(
                    f.lower() in _MISSING for f in fields):
                continue
        data.append(line)
        linenos.append(lineno)
    if not data:
        raise ValueError(f"{p} holds no data rows.")
    try:
        X = np.loadtxt(data, delimiter=delim, ndmin=2, dtype=np.float64,
                       quotechar='"' if delim is not None else None)
    except ValueError:
        X = None
    if X is not None and X.shape[0] == len(data):
        return X, np.asarray(linenos)
    # Find the first offending line to name it.
    width = None
    for lineno, line in zip(linenos, data):
        row = _split(line, delim)
        for col, field in enumerate(row, start=1):
            if field.lower() in _MISSING:
                raise ValueError(_missing_message(p, f"line {lineno}, column {col}", field))
            if not _is_number(field):
                what = ("a header must have no numeric field" if lineno == linenos[0]
                        else "only the first line may be a header")
                if _is_number(field.replace(",", ".", 1)):
                    what = "a decimal comma: write numbers with a decimal point"
                raise ValueError(
                    f"{p}, line {lineno}, column {col}: {field!r} is not a number ({what}); "
                    "fix or remove that line."
                )
        if width is None:
            width = len(row)
        elif len(row) != width:
            raise ValueError(
                f"{p}, line {lineno}: {len(row)} fields where earlier lines have {width} "
                f"(separated by {_DELIM_NAMES[delim]}); every row needs the same number of "
                "columns."
            )
    raise ValueError(f"{p} could not be read as numbers separated by {_DELIM_NAMES[delim]}.")


def _missing_message(p, where, value):
    what = "an empty field" if value == "" else repr(value)
    kind = "an infinite value" if value.lower().lstrip("+-") in ("inf", "infinity") else \
        "a missing value"
    return (f"{p}, {where}: {what} is {kind}; bregclust needs complete finite data: drop or "
            "impute missing values before clustering.")


def _check_finite(p, X, linenos=None):
    """Refuse NaN or infinity, naming the file and the line (text) or the row (arrays)."""
    vals = X.data if sp.issparse(X) else X
    if vals.dtype.kind != "f":
        return
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(vals.sum()) or np.isfinite(vals).all():  # one sum first: the usual case
            return
    if sp.issparse(X):
        X = X.tocoo()
        i = int(np.flatnonzero(~np.isfinite(X.data))[0])
        r, c, v = int(X.row[i]), int(X.col[i]), X.data[i]
    else:
        r, c = (int(v) for v in np.argwhere(~np.isfinite(X))[0])
        v = X[r, c]
    where = f"line {linenos[r]}, column {c + 1}" if linenos is not None else \
        f"row {r}, column {c} (counting from 0)"
    raise ValueError(_missing_message(p, where, str(v)))


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
    if 0 in shape:
        raise ValueError(f"{p} holds an empty matrix of shape {shape}.")
    return X


_READERS = {}


def read_matrix(path):
    """Read a data matrix from .npy, .npz, .csv/.txt/.tsv, .mtx or svmlight (.svm/.svmlight/.libsvm).

    ``.npz``: a file written by ``scipy.sparse.save_npz`` or ``numpy.savez`` with an array
    named ``X`` (or a single array). Text (``.csv``, ``.tsv``, ``.txt``): numbers separated by
    commas, tabs, semicolons or whitespace (``numpy.savetxt``'s default), UTF-8 with or without
    a byte-order mark (Excel's "CSV UTF-8"); blank lines and lines starting with ``#`` are
    skipped, and so is a first line with no numeric field (a header) unless all its fields are
    missing values. svmlight labels are ignored.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    X : ndarray or scipy.sparse.csr_matrix of shape (n_samples, n_features)
        Real (bool, integer or float) values, all finite.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        A directory, an empty or unreadable file, an unsupported suffix, content that is not
        a 2-D real matrix, or a missing (NaN) or infinite value; the message names the file
        (and the line and column for text files).
    """
    return _read(path)[0]


def _read(path):
    """``(X, linenos)``: the checked matrix and, for text files, the file line of every row."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"data file not found: {p}")
    if p.is_dir():
        raise ValueError(f"{p} is a directory, not a data file.")
    suf = p.suffix.lower()
    if suf not in _READERS:
        raise ValueError(
            f"unsupported file type {suf!r} for {p}; use .npy, .npz, .csv, .tsv, .txt, .mtx or "
            ".svmlight."
        )
    if p.stat().st_size == 0:
        raise ValueError(f"{p} is empty (0 bytes).")
    out = _READERS[suf](p)
    X, linenos = out if isinstance(out, tuple) else (out, None)
    X = _check_loaded(p, X)
    _check_finite(p, X, linenos)
    if sp.issparse(X):
        _check_width(p, X.shape[1])
    return X, linenos


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


_READERS.update({".npy": _read_npy, ".npz": _read_npz, ".csv": _read_text, ".txt": _read_text,
                 ".tsv": _read_text, ".mtx": _read_mtx, ".svm": _read_svmlight,
                 ".svmlight": _read_svmlight, ".libsvm": _read_svmlight})


# ----------------------------------------------------------------------------- memory
def _available_memory():
    """Bytes of memory available to a new allocation (MemAvailable), or None if unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _gib(n_bytes):
    return f"{n_bytes / 2**30:,.1f} GiB"


def _check_width(p, n_features):
    """Refuse a sparse matrix whose width alone needs more memory than is available.

    Every method keeps dense vectors of ``n_features`` values (column statistics, a centre per
    cluster); a sparse file with one stray feature index of 2e9 asks for tens of GiB.
    """
    need = 2 * 8 * n_features
    avail = _available_memory()
    if avail is not None and need > avail:
        raise ValueError(
            f"{p} has {n_features:,} feature columns: two dense vectors of that length need "
            f"{_gib(need)}, more than the {_gib(avail)} of memory available; a sparse file is "
            "as wide as its largest feature index, so number the features consecutively."
        )


def _check_memory(method, files, Xs, ks):
    """Refuse a fit whose dense working arrays cannot fit in the available memory.

    Counted: ``K`` cluster centres and their sums (``2 K d`` values) per task for every method,
    plus the dense ``n x n`` similarity (and one working copy) of every MTCMRL task.
    """
    avail = _available_memory()
    if avail is None:
        return
    for f, X, k in zip(files, Xs, ks):
        n, d = X.shape
        need = 2 * 8 * d * k
        what = f"{k} cluster centres of {d:,} features and their sums"
        if method == "mtcmrl":
            need += 2 * 8 * n * n
            what = f"the dense {n:,} x {n:,} similarity matrix MTCMRL builds and " + what
        if need > avail:
            raise ValueError(
                f"{f}: {what} need {_gib(need)}, more than the {_gib(avail)} of memory "
                "available; use fewer rows, features or clusters."
            )


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
#: ``--method`` -> (estimator class exported by ``bregclust``, how it fits the task files):
#: ``"per-task"`` one estimator per file; ``"joint"`` one estimator on all files; ``"one-k"``
#: joint, with one number of clusters for every task; ``"kernel"`` joint kernel learning, one
#: kernel k-means over all tasks when they share K (``joint=True``), else one per task.
METHODS = {
    "kmeans": ("BregmanKMeans", "per-task"),
    "minibatch": ("MiniBatchBregmanKMeans", "per-task"),
    "bisecting": ("BisectingBregmanKMeans", "per-task"),
    "mixture": ("BregmanMixture", "per-task"),
    "agglomerative": ("AgglomerativeBregman", "per-task"),
    "mbc": ("MultitaskBregmanClustering", "joint"),
    "mtcmrl": ("ModelRelationClustering", "joint"),
    "lssmtc": ("SharedSubspaceClustering", "one-k"),
    "lskmtc": ("SpectralKernelMTC", "kernel"),
    "lnkmtc": ("NonparametricKernelMTC", "kernel"),
    "coclustering": ("BregmanCoclustering", "per-task"),
}

#: ``fit`` option (its argparse ``dest``) -> the estimator parameter it sets. A method takes an
#: option exactly when its estimator has that parameter (``get_params()``, read through
#: ``_RENAMED``); every other combination is refused with one line naming both. An option the
#: user does not give is not passed: the estimator's own default applies.
OPTIONS = {
    "divergence": "divergence",
    "model": "model",
    "mahalanobis_matrix": "divergence_params",
    "lam": "lam",
    "C": "C",
    "marginals": "marginals",
    "centroid_solver": "centroid_solver",
    "smoothing": "smoothing",
    "batch_size": "batch_size",
    "bisecting_strategy": "bisecting_strategy",
    "family": "family",
    "basis": "basis",
    "column_clusters": "n_column_clusters",
    "n_init": "n_init",
    "max_iter": "max_iter",
    "tol": "tol",
    "seed": "random_state",
    "verbose": "verbose",
}

#: Parameters a method's estimator names differently (the agglomerative model is the
#: divergence whose identity statistic it merges with).
_RENAMED = {"agglomerative": {"divergence": "model", "divergence_params": "model_params"},
            "mixture": {"n_clusters": "n_components"},
            "coclustering": {"n_clusters": "n_row_clusters"}}

_FLAGS = {"divergence": "--divergence", "model": "--model",
          "mahalanobis_matrix": "--mahalanobis-matrix", "lam": "--lam", "C": "--C",
          "marginals": "--marginals", "centroid_solver": "--centroid-solver",
          "smoothing": "--smoothing", "batch_size": "--batch-size",
          "bisecting_strategy": "--bisecting-strategy", "family": "--family",
          "basis": "--basis", "column_clusters": "--column-clusters",
          "n_init": "--n-init", "max_iter": "--max-iter", "tol": "--tol", "seed": "--seed",
          "verbose": "-v"}


def _estimator_class(method):
    import bregclust

    return getattr(bregclust, METHODS[method][0])


def method_options(method):
    """The ``fit`` options a method takes, read from its estimator's parameters.

    Parameters
    ----------
    method : str
        A key of :data:`METHODS`.

    Returns
    -------
    options : dict {str: str}
        Option (argparse ``dest``, a key of :data:`OPTIONS`) -> the estimator parameter it
        sets, for every option whose parameter the estimator has.

    Examples
    --------
    >>> from bregclust.cli import method_options
    >>> sorted(method_options("mtcmrl"))
    ['lam', 'max_iter', 'seed', 'tol', 'verbose']
    """
    params = _estimator_class(method)().get_params(deep=False)
    renamed = _RENAMED.get(method, {})
    out = {}
    for dest, param in OPTIONS.items():
        param = renamed.get(param, param)
        if param in params:
            out[dest] = param
    return out


def _param_type(cls, param):
    """The type line ``param : <type>`` of ``cls``'s numpydoc Parameters section, or ''."""
    import inspect
    import re

    m = re.search(rf"^{re.escape(param)} : (.+)$", inspect.getdoc(cls) or "", re.MULTILINE)
    return m.group(1).strip() if m else ""


def _given(args, dest):
    value = getattr(args, dest, None)
    return bool(value) if dest == "verbose" else value is not None


def _estimator_params(args):
    """Estimator keyword arguments from the options the user gave, each checked against
    the method's estimator; a refused option raises one ValueError naming option and method."""
    method = args.method
    cls = _estimator_class(method)
    takes = method_options(method)
    given = [dest for dest in OPTIONS if _given(args, dest)]
    for dest in given:
        if dest not in takes:
            flags = " ".join(_FLAGS[d] for d in takes) or "no option"
            raise ValueError(
                f"{_FLAGS[dest]} does not apply to --method {method} ({cls.__name__} has no "
                f"{OPTIONS[dest]} parameter); {method} takes {flags}."
            )
    if "divergence" in given and "model" in given and takes["divergence"] == takes["model"]:
        raise ValueError(f"--divergence and --model both set the {takes['model']} of "
                         f"--method {method}; give one of them.")
    params = {}
    for dest in given:
        value = getattr(args, dest)
        if value == "auto" and '"auto"' not in _param_type(cls, takes[dest]):
            raise ValueError(
                f"{_FLAGS[dest]} auto is not available for --method {method} ({cls.__name__}'s "
                f"{takes[dest]} is {_param_type(cls, takes[dest]) or 'not auto'}); give a "
                "number."
            )
        if dest == "mahalanobis_matrix":
            continue
        params[takes[dest]] = value
    name = params.get(takes.get("divergence", ""), params.get(takes.get("model", "")))
    mahalanobis = str(name).strip().lower() in ("mahalanobis", "mahal")
    if "mahalanobis_matrix" in given:
        if not mahalanobis:
            raise ValueError("--mahalanobis-matrix is the matrix of --divergence mahalanobis; "
                             "add --divergence mahalanobis or drop the matrix.")
        A = read_matrix(args.mahalanobis_matrix)
        params[takes["mahalanobis_matrix"]] = {"A": A.toarray() if sp.issparse(A) else A}
    elif mahalanobis:
        raise ValueError(
            "--divergence mahalanobis needs its matrix: add --mahalanobis-matrix FILE.npy "
            "(a symmetric positive definite n_features x n_features matrix)."
        )
    # A command line run is reproducible unless the user asks otherwise: without --seed the
    # seed is 0, not the estimators' fresh randomness (random_state=None).
    if "seed" in takes and "seed" not in given:
        params["random_state"] = 0
    return cls, params


def _fit_method(args, cls, params, Xs, ks):
    """Fit the method on the tasks; ``ks`` is None when -k was not given. Returns labels."""
    params = dict(params)
    kind = METHODS[args.method][1]
    if kind == "per-task":
        n_name = _RENAMED.get(args.method, {}).get("n_clusters", "n_clusters")
        return [_labels(cls(**({} if ks is None else {n_name: k}), **params), X)
                for X, k in zip(Xs, ks or [None] * len(Xs))]
    if ks is not None:
        if kind == "one-k":
            if len(set(ks)) != 1:
                raise ValueError(f"{args.method} clusters every task into the same number of "
                                 "clusters; give one -k.")
            params["n_clusters"] = ks[0]
        elif kind == "kernel":
            joint = len(set(ks)) == 1
            params["n_clusters"] = ks[0] if joint else ks
            params["joint"] = joint
        else:
            params["n_clusters"] = ks
    return cls(**params).fit(Xs).labels_


def _labels(est, X):
    """The labels of one fitted per-file estimator (a mixture's most probable components)."""
    est.fit(X)
    labels = getattr(est, "labels_", getattr(est, "row_labels_", None))
    return est.predict(X) if labels is None else labels


def _number_or_auto(text):
    """``--lam`` / ``--C``: a finite number or "auto" (whether "auto" is allowed depends on the
    method and is checked against its estimator)."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number or 'auto', got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number or 'auto', got {text!r}")
    return value


def _finite_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


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


# ----------------------------------------------------------------------------- demo
def _print_table(rows, n_tasks, cell):
    head = ["method"] + [f"task {t} {cell[0]}" for t in range(n_tasks)]
    width = max(len(r[0]) for r in rows) + 2
    print((f"{head[0]:<{width}}" + "".join(f"{h:<{cell[1]}}" for h in head[1:])).rstrip())
    print("-" * (width + cell[1] * n_tasks))
    for name, cells in rows:
        print(f"{name:<{width}}" + "".join(f"{c:<{cell[1]}}" for c in cells).rstrip())


def _cmd_demo(args):
    """``bregclust demo``, with scikit-learn's OpenMP pool held to one thread.

    The demo's tasks have at most a thousand rows: there the pool's threads (scikit-learn's
    nearest-neighbour search) cost more CPU than they save, and wait for each other on a
    loaded machine. The numbers are the same with one thread or two.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="openmp"):
        return _run_demo(args)


def _run_demo(args):
    import textwrap

    from tqdm import tqdm

    from .datasets import make_digits_tasks
    from .demo import (
        DEMOS,
        MEASURED_ELSEWHERE,
        TIE,
        few_sample_runs,
        same_start_gains,
        verdicts,
        verdicts_over_draws,
    )

    def say(text, indent=""):
        """Print ``text`` wrapped to the table width; a leading newline stays a blank line."""
        lead = "\n" * (len(text) - len(text.lstrip("\n")))
        tail = "\n" * (len(text) - len(text.rstrip("\n")))
        print(lead + textwrap.fill(text.strip("\n"), _TABLE_WIDTH, initial_indent=indent,
                                   subsequent_indent=indent + "    " if indent else "") + tail)

    unknown = sorted(set(args.methods or ()) - {n.lower() for n, _ in DEMOS})
    if unknown:
        raise ValueError(f"--methods: unknown method group(s) {', '.join(unknown)}; choose from "
                         f"{', '.join(n.lower() for n, _ in DEMOS)}.")
    if args.draws < 2:
        raise ValueError(f"--draws must be >= 2 (the verdicts need a spread), got {args.draws}.")
    if args.plot:
        _check_demo_plot(args)
    data = make_digits_tasks(random_state=args.seed)
    T = len(data.Xs)
    say(f"bregclust demo: scikit-learn's bundled 8x8 digits as {T} related tasks "
        f"({', '.join(data.task_names)}), {data.Xs[0].shape[1]} pixel counts (0-16) per image.")
    print("Scores per task: NMI (sqrt normalisation) / ARI / clustering accuracy (Hungarian).")
    demos = [(n, f) for n, f in DEMOS if not args.methods or n.lower() in args.methods]
    # the SpectralMTC group brings its own single-task row (IND spectral)
    has_ind = any(n in ("IND", "SpectralMTC") for n, _ in demos)

    # 1. the full tasks, one run
    print(f"\n1. Full tasks ({' and '.join(str(X.shape[0]) for X in data.Xs)} images), one run "
          f"at seed {args.seed}\n")
    results, full_time = [], {}
    for name, fn in tqdm(demos, desc="full tasks", disable=args.quiet, file=sys.stderr):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results.extend(fn(data.Xs, data.ys, args.seed))
        full_time[name] = time.perf_counter() - t0
    _print_table([(name, [f"{s[0]:.3f} / {s[1]:.3f} / {s[2]:.3f}" for s in per])
                  for name, per in results], T, ("NMI / ARI / acc", 26))
    full_gains = []
    if has_ind:
        say(f"\nVerdicts: NMI per task minus the best IND row's (a difference within {TIE} is "
            "a tie; one run at one seed, so small differences are noise):")
        for line in verdicts(results):
            say(line, indent="  ")
            if line.endswith("gains on every task"):
                full_gains.append(line.split(":")[0])

    # 2. few images per class, several draws
    sizes = [args.per_class * np.unique(y).size for y in data.ys]
    say(f"\n2. Few images per class: {args.per_class} per class and task "
        f"({' and '.join(map(str, sizes))} images), {args.draws} random draws (seeds "
        f"{args.seed}..{args.seed + args.draws - 1}), the setting in which related tasks "
        "should help each other most"
        + ("; few draws keep the demo short, --draws 10 or more narrows the spreads"
           if args.draws < 10 else "") + "\n")

    def make_tasks(seed):
        d = make_digits_tasks(random_state=seed)
        return d.Xs, d.ys

    bar = tqdm(total=args.draws * len(demos), desc="few images", disable=args.quiet,
               file=sys.stderr)

    def counted(fn):
        def run(Xs, ys, seed):
            out = fn(Xs, ys, seed)
            bar.update(1)
            return out
        return run

    runs, chosen, few_time = few_sample_runs(make_tasks, args.per_class, args.draws,
                                             [(n, counted(f)) for n, f in demos],
                                             random_state=args.seed)
    bar.close()
    _print_table([(name, [f"{a[:, t, 0].mean():.3f} / {a[:, t, 1].mean():.3f} / "
                          f"{a[:, t, 2].mean():.3f}" for t in range(T)])
                  for name, a in runs.items()], T, ("NMI / ARI / acc", 26))
    print(f"(means over the {args.draws} draws)")
    few_gains = []
    if has_ind:
        lines, few_gains = verdicts_over_draws(runs)
        say("\nVerdicts: mean NMI gain per task over the best IND row, ± 2 standard errors "
            f"over the draws (a gain needs a mean above {TIE} and a lower bound above 0):")
        for line in lines:
            say(line, indent="  ")
    if chosen:
        print("\nValues the label-free rules chose over the draws:")
    for name, counts in chosen.items():
        print(f"  {name}: " + ", ".join(f"{v} ({c}x)" for v, c in sorted(
            counts.items(), key=lambda kv: float(kv[0]) if _is_number(kv[0]) else 0.0)))
    same_start = same_start_gains(runs)
    if same_start:
        print("\nThe papers' comparison, MBC against k-means from the same initial centres "
              "(one start):")
        for name, (mean, se2) in same_start.items():
            print(f"  {name}: " + " / ".join(f"{m:+.3f} ± {e:.3f}" for m, e in zip(mean, se2))
                  + " NMI vs its own IND start")

    # conclusion, from the numbers above
    def multitask(names):
        return [n for n in names if not n.startswith(("IND", "AGG"))]

    print()
    if not has_ind:
        print("(no verdicts: add 'ind' to --methods to compare with IND)")
    elif not multitask(runs):
        print("(no conclusion: add a multi-task method to --methods)")
    else:
        full_mt, few_mt = multitask(full_gains), multitask(few_gains)
        if few_mt or full_mt:
            if few_mt:
                say("Conclusion: with few images per class, " + ", ".join(few_mt)
                    + " beat IND on every task, beyond the spread of the draws.")
            if full_mt:
                say("On the full tasks, " + ", ".join(full_mt) + " beat IND on every task in "
                    "this one run.")
        else:
            text = ("Conclusion: no multi-task method beats IND on these tasks, neither on the "
                    "full tasks nor with few images per class (IND: the best single-task row, "
                    "spectral clustering on the cosine 10-NN graph or k-means with the best of "
                    "5 restarts, chosen without labels).")
            above = [n for n, (mean, se2) in same_start.items() if np.all(mean - se2 > 0)]
            if above:
                text += (" " + " and ".join(above) + (" beats" if len(above) == 1 else " beat")
                         + " k-means from the same single start (the papers' comparison), but "
                         "not k-means given restarts.")
            single = [n for n in few_gains if n.startswith("AGG")]
            if single:
                text += (" Of the single-task methods, " + " and ".join(single)
                         + (" beats" if len(single) == 1 else " beat")
                         + " IND k-means with few images per class.")
            say(text)
            say(MEASURED_ELSEWHERE)
    say("\nTime per method group (full tasks / few images, all draws): "
        + ", ".join(f"{n}: {full_time[n]:.1f} / {few_time[n]:.1f} s" for n, _ in demos))
    if args.plot:
        _demo_plot(args.plot, data, results, args.seed)
        print(f"wrote {args.plot}: MBC's transport plan between the tasks' clusters and the "
              "per-task NMI of every method against IND (full tasks)")
    return 0


def _check_demo_plot(args):
    """Refuse a ``--plot`` the demo could not draw, before the methods run."""
    groups = {g.lower() for g in (args.methods or ())}
    if groups and ("ind" not in groups or groups == {"ind"}):
        raise ValueError("--plot needs the IND rows and at least one other method; keep 'ind' "
                         "and a multi-task method in --methods.")
    try:
        from .plotting import check_figure_path

        check_figure_path(args.plot)
    except ImportError as exc:  # matplotlib is an extra
        raise ValueError(f"--plot needs matplotlib: {exc}") from None
    return args.plot


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
_TABLE_WIDTH = 100


def _cmd_divergences(args):
    import textwrap

    from .divergences import divergence_table

    rows = [(name, dom, formula, "yes" if sym else "no", "yes" if diff else "no", aliases)
            for name, aliases, dom, formula, sym, diff in divergence_table()]
    head = ("name", "domain x / y", "d(x, y)", "symmetric", "differentiable")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    # A long formula (a registered generator's) wraps within its column.
    widths[2] = max(20, min(widths[2], _TABLE_WIDTH - sum(widths) + widths[2] - 8))
    line = "  ".join(f"{h:<{w}}" for h, w in zip(head, widths)).rstrip()
    print(line)
    print("-" * min(len(line), _TABLE_WIDTH))
    for r in rows:
        formula = textwrap.wrap(r[2], widths[2]) or [""]
        cells = (r[0], r[1], formula[0], r[3], r[4])
        print("  ".join(f"{str(v):<{w}}" for v, w in zip(cells, widths)).rstrip())
        for more in formula[1:]:
            print(" " * (widths[0] + widths[1] + 4) + more)
        # Aliases go on their own wrapped line, so the table stays within _TABLE_WIDTH columns.
        if r[5]:
            print("\n".join(textwrap.wrap(r[5], _TABLE_WIDTH, initial_indent="    aliases: ",
                                          subsequent_indent=" " * 13)))
    print("\nDomain: of the data x / of the centres y. Any name or alias works in --divergence.")
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
    for name in ("n_init", "max_iter"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {value}.")
    if args.tol is not None and args.tol < 0:
        raise ValueError(f"--tol must be >= 0, got {args.tol}.")
    ks = None if args.n_clusters is None else _per_task(args.n_clusters, len(args.files))
    cls, params = _estimator_params(args)
    targets = _fit_targets(args)
    Xs = [read_matrix(f) for f in args.files]
    widths = {X.shape[1] for X in Xs}
    if len(widths) > 1 and METHODS[args.method][1] != "per-task":
        raise ValueError(
            "the task files must share one feature space; they have "
            + ", ".join(f"{X.shape[1]} ({f})" for f, X in zip(args.files, Xs)) + " columns."
        )
    n_name = _RENAMED.get(args.method, {}).get("n_clusters", "n_clusters")
    default_k = cls().get_params()[n_name] or 2
    _check_memory(args.method, args.files, Xs, ks or [default_k] * len(Xs))
    t0 = time.perf_counter()
    labels = _fit_method(args, cls, params, Xs, ks)
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
    from .agglomerative import compile_kernels
    from .divergences import divergence_table
    from .kmeans import BregmanKMeans
    from .mbc import MultitaskBregmanClustering
    from .minibatch import MiniBatchBregmanKMeans
    from .mixture import BregmanMixture

    def say(msg):
        if not args.quiet:
            print(msg, flush=True)

    say("bregclust compile: numba compiles every kernel of the built-in models once and caches "
        "it on disk; later sessions load it.")
    t0 = time.perf_counter()
    t = time.perf_counter()
    models = compile_kernels()
    say(f"  agglomerative clustering ({', '.join(models)}): {time.perf_counter() - t:.1f} s")
    rng = np.random.default_rng(0)
    Xs = [rng.gamma(2.0, 1.0, size=(20, 3)), rng.gamma(2.0, 1.0, size=(16, 3))]
    # the built-in divergences (divergence_table lists the registry: built-ins first)
    builtin = {"sqeuclidean", "mahalanobis", "kl", "itakura_saito", "l1_subgradient"}
    names = [row[0] for row in divergence_table() if row[0] in builtin]
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in names:
            params = {"A": np.eye(3)} if name == "mahalanobis" else None
            data = [X - 2.0 for X in Xs] if name == "l1_subgradient" else Xs
            for dtype in (np.float64, np.float32):
                X0 = data[0].astype(dtype)
                for est in (BregmanKMeans(2, divergence=name, divergence_params=params,
                                          n_init=1, random_state=0),
                            MiniBatchBregmanKMeans(2, divergence=name, divergence_params=params,
                                                   batch_size=8, max_iter=2, random_state=0),
                            BregmanMixture(2, divergence=name, divergence_params=params,
                                           max_iter=2, random_state=0)):
                    if isinstance(est, BregmanMixture) and name == "l1_subgradient":
                        continue  # no exponential family behind l1_subgradient
                    est.fit(X0)
                if name not in ("itakura_saito", "mahalanobis"):  # sparse input
                    BregmanKMeans(2, divergence=name, n_init=1, random_state=0).fit(
                        sp.csr_matrix(X0))
            MultitaskBregmanClustering(2, divergence=name, divergence_params=params, lam=0.5,
                                       n_init=1, random_state=0).fit(data)
    say(f"  k-means, mini-batch, mixture and MBC ({', '.join(names)}; float64 and float32): "
        f"{time.perf_counter() - t:.1f} s")
    say(f"done in {time.perf_counter() - t0:.1f} s")
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``bregclust fit: error: ...``) and exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _options_epilog():
    """The table of ``fit --help``: which method takes which option, from the estimators."""
    lines = ["Which method takes which option (read from each estimator's parameters; any "
             "other", "combination is refused):"]
    import textwrap

    for method, (cls, _) in METHODS.items():
        flags = " ".join(_FLAGS[d] for d in method_options(method))
        lines += textwrap.wrap(f"{cls}: {flags}", _TABLE_WIDTH - 2, initial_indent=f"  {method:<14}",
                               subsequent_indent=" " * 16)
    lines += ["Options not given are not passed: the estimator's own default applies (see "
              "its", "documentation), except --seed, which is 0 so that runs are reproducible."]
    return "\n".join(lines)


def build_parser():
    ap = _Parser(
        prog="bregclust",
        description="Clustering with Bregman divergences and multi-task clustering.",
    )
    ap.add_argument("--version", action="version", version=f"bregclust {__version__}",
                    help="print the version and exit")
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("divergences", help="list the registered divergences and their domains",
                       description="List the registered divergences, aliases and domains.")
    p.set_defaults(func=_cmd_divergences)

    p = sub.add_parser("demo", help="cluster real digits tasks with every method",
                       description=("Cluster scikit-learn's bundled digits, split into two "
                                    "related tasks (0-5 and 3-9), with every method in its "
                                    "best setting: once on the full tasks, then over several "
                                    "random draws of a few images per class. Prints per-task "
                                    "NMI / ARI / accuracy and a verdict per method against IND, "
                                    "computed from the numbers. No download."))
    p.add_argument("--seed", type=int, default=0,
                   help="random seed of the full run and of the first draw (default 0)")
    p.add_argument("--per-class", type=int, default=20,
                   help="images per class and task in the few-image regime (default 20)")
    p.add_argument("--draws", type=int, default=3,
                   help="random draws of the few-image regime (default 3, which keeps the "
                        "demo short; at least 2, 10 or more for narrower spreads)")
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
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog=_options_epilog(),
                       description=("Cluster one data file (or several related tasks, one file "
                                    "each,\nsharing one feature space) and write one label file "
                                    "per input.\nFormats: .npy, .npz (scipy.sparse.save_npz or "
                                    "numpy.savez with 'X'), .csv, .tsv,\n.txt (numbers separated "
                                    "by commas, tabs, semicolons or spaces), .mtx, .svmlight."))
    p.add_argument("files", nargs="+", help="data files, one per task")
    p.add_argument("--method", choices=list(METHODS), default="kmeans",
                   help="clustering method (default kmeans: BregmanKMeans on each file; "
                        "minibatch, bisecting and mixture also cluster each file on its own)")
    p.add_argument("-k", "--n-clusters", default=None,
                   help="clusters: one int, or comma-separated per task (e.g. 4,5); default: "
                        "the estimator's")
    p.add_argument("--divergence", default=None,
                   help="divergence name or alias (see `bregclust divergences`); for "
                        "agglomerative the model")
    p.add_argument("--model", default=None,
                   help="agglomerative model: a divergence name, gaussian_diag, gaussian_full "
                        "or multinomial")
    p.add_argument("--mahalanobis-matrix", default=None, metavar="FILE",
                   help="file holding the SPD matrix A of --divergence mahalanobis")
    p.add_argument("--lam", type=_number_or_auto, default=None,
                   help="lam of the estimator: mbc's task coupling (a number or 'auto'), "
                        "mtcmrl's regression weight, lssmtc's within-task weight in [0, 1]")
    p.add_argument("--C", type=_number_or_auto, default=None, dest="C",
                   help="weight of the MMD term of lskmtc / lnkmtc ('auto' for lnkmtc)")
    p.add_argument("--marginals", choices=["uniform", "empirical"], default=None,
                   help="mbc: transport marginals (uniform = the paper's relaxation)")
    p.add_argument("--centroid-solver", choices=["exact", "geodesic"], default=None,
                   help="mbc: exact centre step or the paper's geodesic-walk approximation")
    p.add_argument("--smoothing", type=_number_or_auto, default=None,
                   help="pseudo-count of the smoothing point (kl / Itakura-Saito centres stay "
                        "inside the domain): a number or 'auto'")
    p.add_argument("--batch-size", type=int, default=None,
                   help="minibatch: rows per mini-batch")
    p.add_argument("--bisecting-strategy", choices=["biggest_inertia", "largest_cluster"],
                   default=None, help="bisecting: which cluster to split next")
    p.add_argument("--family", default=None,
                   help="mixture: the exponential family of kl (multinomial or poisson)")
    p.add_argument("--basis", default=None,
                   help="coclustering: the basis C1-C6 (default C2, block averages)")
    p.add_argument("--column-clusters", type=int, default=None,
                   help="coclustering: column clusters (-k gives the row clusters, whose "
                        "labels are written)")
    p.add_argument("--n-init", type=int, default=None,
                   help="restarts; the one with the best objective is kept")
    p.add_argument("--max-iter", type=int, default=None,
                   help="iteration budget of each restart")
    p.add_argument("--tol", type=_finite_float, default=None,
                   help="convergence tolerance of the estimator")
    p.add_argument("--seed", type=int, default=None,
                   help="random seed (default 0: the same labels on every run)")
    p.add_argument("-o", "--output", default=None,
                   help="label file for a single input (.txt or .npy); an error with several "
                        "inputs (use --output-dir)")
    p.add_argument("--output-dir", default=None,
                   help="folder for <input stem>.labels.txt (default: beside each input)")
    p.add_argument("-v", "--verbose", action="count", default=0,
                   help="progress bars on stderr (-vv: also a line per iteration)")
    p.add_argument("--quiet", action="store_true",
                   help="print nothing on success (label files are still written)")
    p.set_defaults(func=_cmd_fit)
    return ap


def main(argv=None):
    """Run the ``bregclust`` command.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    status : int
        0 on success, 2 for a user error (one line on stderr, no traceback).
    """
    ap = build_parser()
    args = ap.parse_args(argv)
    prefix = f"bregclust {args.command}"

    def one_line_warning(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())
        print(f"{prefix}: warning: {text} ({category.__name__})", file=sys.stderr)

    # The one place user errors are reported: bad files, parameters and data raise ValueError,
    # TypeError or OSError (unreadable/unwritable paths) anywhere below; print one line, no
    # traceback. Anything else is a bug and keeps its traceback.
    with warnings.catch_warnings():
        warnings.showwarning = one_line_warning
        try:
            return args.func(args)
        except (ValueError, TypeError, OSError) as exc:
            msg = " ".join(str(exc).split()) or type(exc).__name__
            print(f"{prefix}: error: {msg}", file=sys.stderr)
            return 2
        except MemoryError as exc:
            msg = " ".join(str(exc).split())
            print(f"{prefix}: error: out of memory ({msg or 'MemoryError'}); use fewer rows, "
                  "features or clusters.", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print(f"{prefix}: interrupted", file=sys.stderr)
            return 130


if __name__ == "__main__":
    sys.exit(main())
