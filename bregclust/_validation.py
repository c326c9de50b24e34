"""Array and parameter checks shared by every estimator.

Python validates; numba computes: everything that reaches a jitted kernel has passed through
these functions first (2-D, float64, finite, C-contiguous or canonical CSR, inside the domain
of the divergence in use).
"""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_array as _sk_check_array

__all__ = [
    "DomainError",
    "EmptyClusterWarning",
    "check_array",
    "check_finite",
    "check_tasks",
    "check_sample_weight",
    "check_n_clusters",
    "check_scalar",
]


class DomainError(ValueError):
    """Data lie outside the domain of a Bregman divergence (e.g. negative values with ``kl``)."""


class EmptyClusterWarning(UserWarning):
    """A cluster lost all its points and was re-seeded."""


def _first_bad(mask):
    """Row and column of the first True entry of a boolean 2-D array."""
    r, c = np.unravel_index(int(np.argmax(mask)), mask.shape)
    return int(r), int(c)


def check_finite(X, *, name="X"):
    """Raise ``ValueError`` naming the first NaN or infinite entry of ``X``."""
    data = X.data if sp.issparse(X) else X
    if data.size and not np.isfinite(data).all():
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


def check_array(X, *, name="X", accept_sparse=True, divergence=None, side="left", copy=False,
                min_samples=1):
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

    Returns
    -------
    X : ndarray (float64, C-contiguous) or scipy.sparse.csr_matrix (float64)
    """
    if X is None:
        raise TypeError(f"{name} is None; pass a 2-D array of shape (n_samples, n_features).")
    if sp.issparse(X) and not accept_sparse:
        raise TypeError(
            f"{name} is a sparse matrix but a dense array is required; call .toarray() first."
        )
    X = _sk_check_array(
        X,
        accept_sparse=["csr"] if accept_sparse else False,
        dtype=np.float64,
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
    check_finite(X, name=name)
    if divergence is not None:
        divergence.check_domain(X, name=name, side=side)
    return X


def check_tasks(Xs, *, name="Xs", divergence=None, min_samples=1, accept_sparse=True):
    """Validate a list of tasks sharing one feature space.

    Returns a list of validated matrices (see :func:`check_array`). Raises ``ValueError`` for an
    empty list or tasks with different numbers of features, naming the task.
    """
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
    try:
        Xs = list(Xs)
    except TypeError as exc:
        raise TypeError(f"{name} must be a list of 2-D arrays, one per task.") from exc
    if len(Xs) == 0:
        raise ValueError(f"{name} is empty; pass at least one task (a list of 2-D arrays).")
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


def check_sample_weight(sample_weight, n_samples, *, name="sample_weight"):
    """Non-negative finite float64 weights of length ``n_samples`` (ones when None)."""
    if sample_weight is None:
        return np.ones(n_samples)
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.ndim == 0:
        w = np.full(n_samples, float(w))
    if w.ndim != 1 or w.shape[0] != n_samples:
        raise ValueError(
            f"{name} must be 1-D of length n_samples={n_samples}, got shape {w.shape}."
        )
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError(f"{name} must be finite and non-negative.")
    if w.sum() <= 0:
        raise ValueError(f"{name} sums to zero; at least one sample needs positive weight.")
    return w.copy()


def check_scalar(value, name, *, kind=numbers.Real, lo=None, hi=None, lo_closed=True,
                 hi_closed=True):
    """Check a scalar parameter's type and range with an informative message."""
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(f"{name} must be a {getattr(kind, '__name__', kind)}, got {value!r}.")
    if lo is not None and (value < lo or (value == lo and not lo_closed)):
        op = ">=" if lo_closed else ">"
        raise ValueError(f"{name} must be {op} {lo}, got {value!r}.")
    if hi is not None and (value > hi or (value == hi and not hi_closed)):
        op = "<=" if hi_closed else "<"
        raise ValueError(f"{name} must be {op} {hi}, got {value!r}.")
    return value


def check_n_clusters(n_clusters, n_samples, *, name="n_clusters", task=None):
    """An integer 1 <= n_clusters <= n_samples."""
    where = f" for task {task}" if task is not None else ""
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, numbers.Integral):
        raise TypeError(f"{name}{where} must be an int, got {n_clusters!r}.")
    if n_clusters < 1:
        raise ValueError(f"{name}{where} must be >= 1, got {n_clusters}.")
    if n_clusters > n_samples:
        raise ValueError(
            f"{name}={n_clusters}{where} is larger than n_samples={n_samples}; "
            "use fewer clusters or more data."
        )
    return int(n_clusters)
