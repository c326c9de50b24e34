"""Array and parameter checks shared by every estimator.

Python validates; numba computes: everything that reaches a jitted kernel has passed through
these functions first (2-D, float64, finite, C-contiguous or canonical CSR, inside the domain
of the divergence in use).
"""

import numbers
import os
import sys

import numpy as np
import scipy.sparse as sp
import sklearn
from sklearn.utils import check_array as _sk_check_array

__all__ = [
    "DomainError",
    "EmptyClusterWarning",
    "check_array",
    "check_finite",
    "check_tasks",
    "check_task_list",
    "as_block",
    "check_block",
    "check_float_dtype",
    "float_dtype",
    "FLOAT_DTYPES",
    "check_dask_array",
    "check_sample_weight",
    "check_n_clusters",
    "check_scalar",
    "check_smoothing",
    "check_params_dict",
    "check_label_array",
    "check_class_labels",
    "check_not_string",
    "user_stacklevel",
]

#: Frames of files under these folders belong to the call of ``fit`` (see user_stacklevel):
#: bregclust's own, and scikit-learn's callback machinery that wraps ``fit`` when callbacks
#: are set.
_OWN_DIRS = (os.path.dirname(os.path.abspath(__file__)) + os.sep,
             os.path.join(os.path.dirname(os.path.abspath(sklearn.__file__)), "callback") + os.sep)


def user_stacklevel():
    """The ``stacklevel`` that makes a warning raised by the caller point at the first frame
    outside bregclust (and outside scikit-learn's callback wrapper of ``fit``): the user's
    ``fit`` line (or scikit-learn's, when it calls ``fit``, e.g. in ``cross_val_score``).

    A fixed ``stacklevel`` is right for one call depth only, and the same warning is raised
    under several (``BregmanKMeans.fit``, bisecting, the mixture's starts, the callback
    wrapper of ``fit``); pandas' ``find_stack_level`` does the same walk (Python 3.12's
    ``warnings.warn(skip_file_prefixes=...)`` is not available on 3.9-3.11).

    Returns
    -------
    int
        1 is the function calling ``warnings.warn``.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("here", UserWarning, stacklevel=user_stacklevel())
    >>> caught[0].filename.endswith("_validation.py")
    False
    """
    frame = sys._getframe(1)  # the function that will call warnings.warn: level 1
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(
            _OWN_DIRS):
        frame = frame.f_back
        level += 1
    return level


class DomainError(ValueError):
    """Data lie outside the domain of a Bregman divergence (e.g. negative values with ``kl``)."""


class EmptyClusterWarning(UserWarning):
    """A cluster lost all its points and was re-seeded."""


def _first_bad(mask):
    """Row and column of the first True entry of a boolean 2-D array."""
    r, c = np.unravel_index(int(np.argmax(mask)), mask.shape)
    return int(r), int(c)


def maybe_non_finite(a):
    """False when one sum proves every entry of the array ``a`` finite; True when the caller
    must look entry by entry (a NaN or inf, or finite entries whose sum overflows).

    One reduction and no boolean temporary of ``a``'s size: the entrywise tests on the hot
    paths (input checks of every fit, the minima of every Lloyd pass) run only when needed."""
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(a.size) and not np.isfinite(a.sum())


def check_finite(X, *, name="X"):
    """Raise ``ValueError`` naming the first NaN or infinite entry of ``X``."""
    data = X.data if sp.issparse(X) else X
    if maybe_non_finite(data) and not np.isfinite(data).all():
        if sp.issparse(X):
            coo = X.tocoo()
            bad = ~np.isfinite(coo.data)
            i = int(np.argmax(bad))
            r, c, v = int(coo.row[i]), int(coo.col[i]), coo.data[i]
        else:
            r, c = _first_bad(~np.isfinite(X))
            v = X[r, c]
        kind = "NaN" if np.isnan(v) else "infinity"
        raise ValueError(
            f"{name} contains NaN or infinity ({kind} at row {r}, column {c}). "
            "Remove or impute missing values before clustering."
        )


#: Floating types the kernels run in; other numeric input becomes float64.
FLOAT_DTYPES = (np.float64, np.float32)


def check_float_dtype(X, name="X"):
    """Refuse complex numbers and half precision with a clear error (the kernels run in float32
    or float64, and a silent float64 copy would hide a 4x memory cost)."""
    dtype = getattr(X, "dtype", None)
    if dtype is not None and getattr(dtype, "kind", None) == "c":
        # a ValueError, as scikit-learn's estimators raise for complex data
        raise ValueError(f"Complex data not supported: {name} holds {dtype} values; bregclust "
                         "clusters real data only (take the real part or the modulus first).")
    if dtype is not None and getattr(dtype, "kind", None) == "f" and dtype.itemsize < 4:
        raise TypeError(f"{name} has dtype {dtype}, which bregclust does not compute in; convert "
                        f"it with {name}.astype('float32') (or float64).")


def check_array(X, *, name="X", accept_sparse=True, divergence=None, side="left", copy=False,
                min_samples=1, finite=True):
    """Validate one data matrix.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
    name : str, default="X"
        Used in error messages (e.g. ``"task 1"``).
    accept_sparse : bool, default=True
        Sparse input is converted to CSR with sorted indices; otherwise a ``TypeError`` is raised.
    divergence : Divergence or None
        When given, the data are checked against its domain (``DomainError``).
    side : {"left", "right"}
        Which argument of the divergence the data will be: ``"left"`` for points ``x`` in
        ``d(x, u)``, ``"right"`` for centres ``u`` (strict interior of the domain).
    copy : bool, default=False
        Force a copy even when the input is already float64 and contiguous.
    min_samples : int, default=1
    finite : bool, default=True
        Refuse NaN and infinity (``False``: the caller checks, e.g. a data source that reads
        the values' range anyway).

    Returns
    -------
    X : ndarray (C-contiguous) or scipy.sparse.csr_matrix
        float32 input stays float32 (the kernels run in it); any other numeric input becomes
        float64; float16 is refused.
    """
    if X is None:
        raise TypeError(f"{name} is None; pass a 2-D array of shape (n_samples, n_features).")
    if sp.issparse(X) and not accept_sparse:
        raise TypeError(
            f"{name} is a sparse matrix but a dense array is required; call .toarray() first."
        )
    check_float_dtype(X, name)
    X = _sk_check_array(
        X,
        accept_sparse=["csr"] if accept_sparse else False,
        dtype=FLOAT_DTYPES,
        order="C",
        copy=copy,
        ensure_all_finite=False,
        ensure_min_samples=min_samples,
        input_name=name,
    )
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        if not X.has_sorted_indices:
            X = X.copy()
            X.sort_indices()
    if finite:
        check_finite(X, name=name)
    if divergence is not None:
        divergence.check_domain(X, name=name, side=side)
    return X


def check_task_list(Xs, *, name="Xs"):
    """A list of tasks: refuses a single matrix, a string, a dict, a non-sequence or an empty
    list with a message saying what to pass.

    Parameters
    ----------
    Xs : sequence
    name : str, default="Xs"

    Returns
    -------
    list
    """
    if Xs is None:
        raise TypeError(f"{name} must be a list of 2-D arrays (one per task), got None; e.g. [X1, X2].")
    if sp.issparse(Xs) or isinstance(Xs, np.ndarray) and Xs.ndim == 2 and Xs.dtype != object:
        raise TypeError(
            f"{name} must be a list of 2-D arrays (one per task), got a single matrix; "
            f"wrap it as [X] for one task."
        )
    if isinstance(Xs, (str, bytes, dict)):
        raise TypeError(
            f"{name} must be a list of 2-D arrays (one per task), got a {type(Xs).__name__}; "
            "pass the tasks as a list, e.g. list(tasks.values()) for a dict."
        )
    if hasattr(Xs, "ndim") and hasattr(Xs, "chunks"):
        raise TypeError(
            f"{name} must be a list of 2-D arrays (one per task), got a single dask array; "
            "wrap it as [X] for one task."
        )
    try:
        Xs = list(Xs)
    except TypeError as exc:
        raise TypeError(f"{name} must be a list of 2-D arrays, one per task.") from exc
    if len(Xs) == 0:
        raise ValueError(f"{name} is empty; pass at least one task (a list of 2-D arrays).")
    return Xs


def check_tasks(Xs, *, name="Xs", divergence=None, min_samples=1, accept_sparse=True):
    """Validate a list of tasks sharing one feature space.

    Returns a list of validated matrices (see :func:`check_array`). Raises ``ValueError`` for an
    empty list or tasks with different numbers of features, naming the task.
    """
    Xs = check_task_list(Xs, name=name)
    out = []
    for t, X in enumerate(Xs):
        out.append(check_array(X, name=f"task {t}", divergence=divergence,
                               min_samples=min_samples, accept_sparse=accept_sparse))
    d0 = out[0].shape[1]
    for t, X in enumerate(out):
        if X.shape[1] != d0:
            raise ValueError(
                f"all tasks must share one feature space: task 0 has {d0} features but task {t} "
                f"has {X.shape[1]}. Vectorise the tasks with a common vocabulary/feature map."
            )
    return out


def check_sample_weight(sample_weight, n_samples, *, name="sample_weight", allow_zero=False,
                        where=None, start=0):
    """Non-negative finite float64 weights of length ``n_samples`` (ones when None).

    The one sample-weight check of the package: estimators call it at their boundary, the
    registry's array methods with ``allow_zero=True`` (a block of rows may carry no weight),
    and chunked sources on every chunk with ``where`` naming it.

    Parameters
    ----------
    sample_weight : array-like of shape (n_samples,), scalar or None
    n_samples : int
    name : str, default="sample_weight"
    allow_zero : bool, default=False
        Accept weights that sum to zero.
    where : str, optional
        Where the weights come from, for the message (e.g. ``"chunk 2 (global rows
        200..299)"``); row numbers in messages are then offset by ``start``.
    start : int, default=0
        Global index of the first weight (with ``where``).

    Returns
    -------
    ndarray of shape (n_samples,)
        A float64 copy.

    Raises
    ------
    TypeError
        Complex, string or object weights.
    ValueError
        Wrong shape, NaN/inf, negative weights, weights summing to zero (unless
        ``allow_zero``) or to infinity.
    """
    if sample_weight is None:
        return np.ones(n_samples)
    raw = np.asarray(sample_weight)
    if raw.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {raw.dtype}.")
    w = raw.astype(np.float64)
    if w.ndim == 0:
        w = np.full(n_samples, float(w))
    if w.ndim != 1 or w.shape[0] != n_samples:
        raise ValueError(
            f"{name} must be 1-D of length n_samples={n_samples}, got shape {w.shape}."
        )
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        r = int(np.argmax(bad))
        at = f"; {where} has {w[r]:g} at global row {start + r}" if where else (
            f"; it has {w[r]:g} at position {r}")
        raise ValueError(f"{name} must be finite and non-negative{at}.")
    total = float(np.sum(w))
    if total <= 0 and not allow_zero:
        raise ValueError(f"{name} sums to zero; at least one sample needs positive weight.")
    if not np.isfinite(total):
        raise ValueError(
            f"{name} sums to infinity (float64 overflow); rescale the weights, e.g. divide them "
            "by their maximum (only their ratios matter for the clustering)."
        )
    return w.copy()


_KIND_NAMES = {numbers.Integral: "an integer", numbers.Real: "a real number",
               numbers.Number: "a number", str: "a string", bool: "a bool"}


def _kind_name(kind):
    """English name of a type or tuple of types for error messages ("an integer", ...)."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(_KIND_NAMES.get(k, f"a {getattr(k, '__name__', k)}") for k in kinds)


def check_scalar(value, name, *, kind=numbers.Real, lo=None, hi=None, lo_closed=True,
                 hi_closed=True, finite=False):
    """Check a scalar parameter's type and range with an informative message.

    Parameters
    ----------
    value : object
        The parameter value.
    name : str
        Its name, used in the messages.
    kind : type or tuple of types, default=numbers.Real
        Accepted types (``bool`` is refused unless ``kind`` is ``bool``).
    lo, hi : float, optional
        Bounds of the accepted range.
    lo_closed, hi_closed : bool, default=True
        Whether the bounds are included.
    finite : bool, default=False
        Refuse infinite values too (NaN is always refused).

    Returns
    -------
    value
        The value, unchanged.

    Raises
    ------
    TypeError
        ``value`` is not of type ``kind`` (e.g. "max_iter must be an integer, got True.").
    ValueError
        ``value`` is NaN, infinite with ``finite=True``, or outside the range.
    """
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        raise TypeError(f"{name} must be {_kind_name(kind)}, got {value!r}.")
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        try:
            fv = float(value)
        except (OverflowError, ValueError):  # pragma: no cover - exotic Real types
            fv = value
        if fv != fv:
            raise ValueError(f"{name} must be a number, got NaN.")
        if finite and fv in (float("inf"), float("-inf")):
            raise ValueError(f"{name} must be finite, got {value!r}.")
    if lo is not None and (value < lo or (value == lo and not lo_closed)):
        op = ">=" if lo_closed else ">"
        raise ValueError(f"{name} must be {op} {lo}, got {value!r}.")
    if hi is not None and (value > hi or (value == hi and not hi_closed)):
        op = "<=" if hi_closed else "<"
        raise ValueError(f"{name} must be {op} {hi}, got {value!r}.")
    return value


def check_smoothing(smoothing, *, name="smoothing", allow_auto=True):
    """A finite non-negative smoothing weight, or ``"auto"`` when ``allow_auto``.

    Parameters
    ----------
    smoothing : float or str
    name : str, default="smoothing"
    allow_auto : bool, default=True

    Returns
    -------
    float or "auto"

    Raises
    ------
    TypeError, ValueError
        Not a real number (or ``"auto"``), NaN, infinite or negative.
    """
    if isinstance(smoothing, str):
        if allow_auto and smoothing == "auto":
            return smoothing
        what = "a non-negative float or 'auto'" if allow_auto else "a non-negative float"
        raise ValueError(f"{name} must be {what}, got {smoothing!r}.")
    check_scalar(smoothing, name, lo=0.0, finite=True)
    return float(smoothing)


def check_params_dict(params, name):
    """``None`` or a mapping of keyword parameters; returns a plain dict.

    Parameters
    ----------
    params : dict or None
    name : str
        The parameter name for the message (e.g. ``"model_params"``).

    Returns
    -------
    dict
    """
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise TypeError(
            f"{name} must be a dict of keyword parameters or None, got {params!r}; "
            f"e.g. {name}={{'A': A}}."
        )
    return dict(params)


def check_class_labels(y, n_samples=None, *, name="y"):
    """1-D class labels (any hashable values) without NaN or None.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
    n_samples : int, optional
        Required length.
    name : str, default="y"

    Returns
    -------
    ndarray
    """
    a = np.asarray(y)
    if a.ndim != 1 or (n_samples is not None and a.shape[0] != n_samples):
        want = f"({n_samples},)" if n_samples is not None else "1-D"
        raise ValueError(f"{name} must have shape {want} (one label per row), got {a.shape}.")
    if a.dtype.kind == "c":
        raise TypeError(f"{name} holds complex numbers; labels must be integers or strings.")
    if a.dtype.kind == "f":
        bad = ~np.isfinite(a)
    elif a.dtype.kind == "O":
        bad = np.array([v is None or (isinstance(v, float) and v != v) for v in a], dtype=bool)
    else:
        bad = np.zeros(a.shape, dtype=bool)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{name} has a missing label ({a[i]}) at position {i}; labels must be "
                         "finite (drop or label those rows).")
    return a


def check_label_array(labels, *, name="labels", n_classes=None, allow_negative=False):
    """1-D integer labels: refuse NaN/inf, fractional values and values outside ``0..n_classes-1``.

    Parameters
    ----------
    labels : array-like of shape (n_samples,)
    name : str, default="labels"
    n_classes : int, optional
        When given, labels must lie in ``0..n_classes-1``.
    allow_negative : bool, default=False
        Accept negative labels (only when ``n_classes`` is None).

    Returns
    -------
    ndarray of int64
    """
    a = np.asarray(labels)
    if a.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of integer labels, got shape {a.shape}.")
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold integer labels, got dtype {a.dtype}.")
    if a.dtype.kind == "f":
        if not np.isfinite(a).all():
            i = int(np.argmax(~np.isfinite(a)))
            raise ValueError(f"{name} holds {a[i]} at position {i}; labels must be integers.")
        if (a != np.round(a)).any():
            i = int(np.argmax(a != np.round(a)))
            raise ValueError(f"{name} holds {a[i]} at position {i}; labels must be integers.")
    a = a.astype(np.int64)
    lo = 0 if (n_classes is not None or not allow_negative) else None
    if a.size and lo is not None and a.min() < lo:
        raise ValueError(f"{name} holds {int(a.min())}; labels must be >= 0.")
    if a.size and n_classes is not None and a.max() >= n_classes:
        raise ValueError(
            f"{name} holds {int(a.max())}; labels must lie in 0..{n_classes - 1}."
        )
    return a


def check_not_string(value, name, expected):
    """Raise ``TypeError`` when a sequence-or-number parameter is given as a string.

    Parameters
    ----------
    value : object
    name : str
    expected : str
        What is accepted, e.g. ``"an int or a list of ints (one per task)"``.

    Returns
    -------
    value
        Unchanged.
    """
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be {expected}, got the string {value!r}; drop the quotes.")
    return value


def check_n_clusters(n_clusters, n_samples, *, name="n_clusters", task=None):
    """An integer 1 <= n_clusters <= n_samples."""
    where = f" for task {task}" if task is not None else ""
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, numbers.Integral):
        hint = ""
        if isinstance(n_clusters, str):
            hint = f"; pass {name}={n_clusters.strip()}, not a string" if n_clusters.strip().isdigit() else ""
        elif isinstance(n_clusters, (bool, np.bool_)):
            hint = "; pass an int, not a bool"
        elif isinstance(n_clusters, numbers.Real):
            hint = "; pass an int, not a float"
        raise TypeError(f"{name}{where} must be an integer, got {n_clusters!r}{hint}.")
    if n_clusters < 1:
        raise ValueError(f"{name}{where} must be >= 1, got {n_clusters}.")
    if n_clusters > n_samples:
        raise ValueError(
            f"{name}={n_clusters}{where} is larger than n_samples={n_samples}; "
            "use fewer clusters or more data."
        )
    return int(n_clusters)


# ----------------------------------------------------------------------------- blocks of rows
def as_block(X):
    """A block of rows (a dask chunk, a chunk of a stream) as a float64 C-contiguous ndarray or
    a canonical float64 CSR matrix; complex, string or object values are refused.

    A float64 C-contiguous ndarray is returned as the very object given (callers key caches
    by it).
    """
    check_float_dtype(X, "a chunk")
    if sp.issparse(X):
        if X.dtype.kind not in "biuf":
            raise TypeError(f"a chunk holds {X.dtype} values; bregclust clusters real data only.")
        X = sp.csr_matrix(X, dtype=float_dtype(X.dtype))
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        return X
    if (type(X) is np.ndarray and X.dtype in FLOAT_DTYPES and X.flags.c_contiguous
            and X.ndim == 2):
        return X
    A = np.asarray(X)
    if A.dtype.kind not in "biuf":
        raise TypeError(f"a chunk holds {A.dtype} values; bregclust clusters real data only "
                        "(take the real part or the modulus first).")
    if A.ndim != 2:
        raise ValueError(f"a chunk must be 2-D (rows, features), got shape {A.shape}.")
    return np.ascontiguousarray(A, dtype=float_dtype(A.dtype))


def float_dtype(dtype):
    """The floating type the kernels run numeric data of ``dtype`` in: float32 stays, every
    other numeric type becomes float64."""
    return np.float32 if np.dtype(dtype) == np.float32 else np.float64


def _where(meta):
    i, a, b = meta
    return f"chunk {i} (global rows {a}..{b - 1})"


def _first_outside(X, div):
    strict = div.domain == "positive"
    if sp.issparse(X):
        coo = X.tocoo()
        bad = (coo.data <= 0) if strict else (coo.data < 0)
        if bad.any():
            j = int(np.argmax(bad))
            return int(coo.row[j]), int(coo.col[j]), float(coo.data[j])
        X = X.toarray()  # an implicit zero (positive domain)
    bad = (X <= 0) if strict else (X < 0)
    r, c = _first_bad(bad)
    return r, c, float(X[r, c])


def check_block(X, w, div, meta, name="X"):
    """Finite values, the divergence's domain and the weights of one block of rows (from
    :func:`as_block`), with the block and the global row named in every message.

    Parameters
    ----------
    X : ndarray or CSR matrix
    w : array-like of shape (n,) or None
    div : Divergence
    meta : tuple
        ``(block index, first global row, end global row)``.
    name : str, default="X"
    """
    i, a, _ = meta
    data = X.data if sp.issparse(X) else X
    if maybe_non_finite(data) and not np.isfinite(data).all():
        if sp.issparse(X):
            coo = X.tocoo()
            j = int(np.argmax(~np.isfinite(coo.data)))
            r, c, v = int(coo.row[j]), int(coo.col[j]), coo.data[j]
        else:
            r, c = _first_bad(~np.isfinite(X))
            v = X[r, c]
        kind = "NaN" if np.isnan(v) else "infinity"
        raise ValueError(
            f"{name} {_where(meta)} contains {kind} at global row {a + r} (row {r} of the "
            f"chunk), column {c}. Remove or impute missing values before clustering."
        )
    try:
        div.check_domain(X, name="chunk")
    except DomainError as exc:
        r, c, v = _first_outside(X, div)
        raise DomainError(
            f"{name} {_where(meta)} leaves the domain of {div.name}: {v:g} at global row "
            f"{a + r} (row {r} of the chunk), column {c}. ({exc})"
        ) from None
    if w is not None:
        check_sample_weight(w, X.shape[0], allow_zero=True, where=_where(meta), start=a)


def check_dask_array(X, *, name="X", n_features=None):
    """Check the layout of a 2-D dask array: rows chunked, features in one chunk, known
    chunk sizes.

    Parameters
    ----------
    X : dask.array.Array
    name : str, default="X"
    n_features : int, optional
        Expected number of columns (for ``predict`` after ``fit``).

    Returns
    -------
    X : dask.array.Array
        The same array.
    """
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D dask array (n_samples, n_features), got {X.ndim}-D.")
    if any(np.isnan(c) for c in X.chunks[0]) or np.isnan(X.shape[1]):
        raise ValueError(
            f"{name} has unknown chunk sizes; call {name}.compute_chunk_sizes() first."
        )
    if X.numblocks[1] != 1:
        raise ValueError(
            f"{name} is chunked along features ({X.numblocks[1]} column blocks); chunk it by "
            f"rows only, e.g. {name}.rechunk({{1: -1}})."
        )
    if X.shape[0] < 1:
        raise ValueError(f"{name} has no rows.")
    if X.shape[1] < 1:  # as scikit-learn's check_array in memory
        raise ValueError(
            f"{name} has 0 features (shape={tuple(X.shape)}) while a minimum of 1 is required; "
            "pass a dask array with at least one column.")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(
            f"{name} has {X.shape[1]} features, but the model was fitted with {n_features}."
        )
    return X
