"""Machinery shared by every multi-task estimator.

One place for what the multi-task methods (MBC, LNKMTC / LSKMTC, LSSMTC, MTCMRL) have in
common: the parameter constraint tables and the helper that checks them, the task list, the
per-task number of clusters, the per-task initialisation vocabulary, ``n_init="auto"`` and
``smoothing="auto"``, the fitted attributes every method sets (``n_tasks_``, ``labels_`` as a
list, ``objective_history_`` as a 1-D float array) and the task selection of ``predict``.
"""

import hashlib
import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.utils._available_if import available_if
from sklearn.utils.validation import check_is_fitted

from ._callbacks import CallbackSupportMixin
from ._labels import label_indicator
from ._validation import check_array, check_n_clusters, check_scalar, user_stacklevel

__all__ = [
    "check_task_magnitudes",
    "Interval",
    "Options",
    "BOOLEAN",
    "check_params",
    "per_task",
    "check_n_clusters_per_task",
    "parse_init",
    "resolve_n_init",
    "resolve_smoothing",
    "as_history",
    "within_cluster_per_point",
    "label_indicator",
    "cluster_sums",
    "MultiTaskMixin",
]


# ------------------------------------------------------------------------ constraint tables
class Interval:
    """A numeric parameter: ``kind`` (``numbers.Integral`` or ``numbers.Real``) in a range.

    Parameters
    ----------
    kind : type
        ``numbers.Integral`` or ``numbers.Real`` (booleans are refused for both).
    lo, hi : float or None
        Bounds; None for unbounded.
    lo_closed, hi_closed : bool, default=True
        Whether the bounds are attained.
    finite : bool, default=True
        Refuse NaN and infinity.
    """

    def __init__(self, kind, lo=None, hi=None, *, lo_closed=True, hi_closed=True, finite=True):
        self.kind = kind
        self.lo = lo
        self.hi = hi
        self.lo_closed = lo_closed
        self.hi_closed = hi_closed
        self.finite = finite

    def accepts_type(self, value):
        return not isinstance(value, bool) and isinstance(value, self.kind)

    def check(self, value, name):
        check_scalar(value, name, kind=self.kind, lo=self.lo, hi=self.hi,
                     lo_closed=self.lo_closed, hi_closed=self.hi_closed)
        if self.finite and not np.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value!r}.")

    def describe(self):
        what = "an integer" if self.kind is numbers.Integral else "a float"
        parts = []
        if self.lo is not None:
            parts.append(f"{'>=' if self.lo_closed else '>'} {self.lo}")
        if self.hi is not None:
            parts.append(f"{'<=' if self.hi_closed else '<'} {self.hi}")
        return what + (" " + " and ".join(parts) if parts else "")


class Options:
    """A string parameter taking one of ``values``.

    Parameters
    ----------
    *values : str
    """

    def __init__(self, *values):
        self.values = tuple(values)

    def describe(self):
        return " or ".join(repr(v) for v in self.values)


#: A parameter that must be True or False.
BOOLEAN = "boolean"


def check_params(est, constraints):
    """Check the parameters of ``est`` against its constraint table.

    Parameters
    ----------
    est : object
        The estimator; parameter ``name`` is read as ``getattr(est, name)``.
    constraints : dict
        ``{name: [alternative, ...]}``. An alternative is an :class:`Interval`, an
        :class:`Options`, :data:`BOOLEAN`, ``None`` (the value None is allowed) or a type
        (``isinstance`` check, e.g. ``dict``). The value must satisfy one alternative.

    Raises
    ------
    TypeError
        The value has none of the accepted types.
    ValueError
        The value has an accepted type but lies outside the allowed range or options.
    """
    for name, alternatives in constraints.items():
        _check_one(name, getattr(est, name), alternatives)


def _check_one(name, value, alternatives):
    if value is None and None in alternatives:
        return
    options = [a for a in alternatives if isinstance(a, Options)]
    intervals = [a for a in alternatives if isinstance(a, Interval)]
    types = [a for a in alternatives if isinstance(a, type)]
    described = ([o.describe() for o in options] + [i.describe() for i in intervals]
                 + (["True or False"] if BOOLEAN in alternatives else [])
                 + [f"a {t.__name__}" for t in types] + (["None"] if None in alternatives else []))
    if isinstance(value, str):
        if any(value in o.values for o in options):
            return
        if options:
            if len(options) == 1 and not intervals:
                raise ValueError(f"{name} must be one of {options[0].values}, got {value!r}.")
            raise ValueError(f"{name} must be {' or '.join(described)}, got {value!r}.")
    if BOOLEAN in alternatives and isinstance(value, (bool, np.bool_)):
        return
    if any(isinstance(value, t) for t in types):
        return
    for iv in intervals:
        if iv.accepts_type(value):
            iv.check(value, name)
            return
    if intervals and not options and BOOLEAN not in alternatives and not types:
        intervals[0].check(value, name)  # the TypeError of check_scalar
    raise TypeError(f"{name} must be {' or '.join(described)}, got {value!r}.")


# ------------------------------------------------------------------------------ per task
def per_task(value, n_tasks, *, name, kind=numbers.Integral):
    """One value for every task: a scalar is repeated, a sequence must have one entry per task.

    Parameters
    ----------
    value : scalar or sequence
    n_tasks : int
    name : str
        The parameter name used in error messages.
    kind : type, default=numbers.Integral
        The scalar type that is broadcast.

    Returns
    -------
    values : list of length ``n_tasks``

    Raises
    ------
    TypeError
        ``value`` is neither a ``kind`` scalar nor a sequence.
    ValueError
        A sequence of the wrong length.
    """
    if isinstance(value, kind) and not isinstance(value, bool):
        return [value] * n_tasks
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__len__"):
        raise TypeError(
            f"{name} must be an int or a sequence of {n_tasks} ints (one per task), "
            f"got {value!r}."
        )
    values = list(value)
    if len(values) != n_tasks:
        raise ValueError(
            f"{name} has {len(values)} entries but there are {n_tasks} tasks; give one per "
            "task or a single int."
        )
    return values


def check_n_clusters_per_task(n_clusters, sizes, *, name="n_clusters", equal=None):
    """Per-task numbers of clusters, each an int in ``[1, n_t]``.

    Parameters
    ----------
    n_clusters : int or sequence of int
        One int for every task or one per task.
    sizes : sequence of int
        The largest number of clusters allowed for each task (its number of samples).
    name : str, default="n_clusters"
    equal : str or None, default=None
        When given, every task must have the same number of clusters; the string says why
        and is put in the error message.

    Returns
    -------
    ks : list of int
    """
    T = len(sizes)
    ks = per_task(n_clusters, T, name=name)
    for t, k in enumerate(ks):
        if isinstance(k, bool) or not isinstance(k, numbers.Integral):
            raise TypeError(f"{name} for task {t} must be an integer, got {k!r}.")
    if equal is not None and len({int(k) for k in ks}) > 1:
        raise ValueError(f"{equal} needs one number of clusters for every task, got "
                         f"{name}={[int(k) for k in ks]}.")
    return [check_n_clusters(int(k), int(n), name=name, task=t)
            for t, (k, n) in enumerate(zip(ks, sizes))]


# --------------------------------------------------------------------------- initialisation
_INIT_STRINGS = ("k-means++", "random")


def _canonical(value, t, aliases, strings=_INIT_STRINGS):
    if value in strings:
        return value
    if value in aliases:
        new = aliases[value]
        warnings.warn(
            f"init={value!r} is deprecated; use init={new!r} (same behaviour). The old "
            "spelling will be removed in a future release.", FutureWarning, stacklevel=user_stacklevel())
        return new
    where = "" if t is None else f" for task {t}"
    names = ", ".join(repr(v) for v in strings)
    raise ValueError(
        f"init{where} must be {names}, per-task labels or per-task centres, got {value!r}."
    )


def parse_init(init, Xs, ks, *, aliases=None, membership=False, strings=_INIT_STRINGS):
    """Per-task initialisation in the one vocabulary shared by the multi-task estimators.

    Parameters
    ----------
    init : str or sequence
        ``"k-means++"`` or ``"random"`` applies to every task. A sequence gives one entry per
        task: one of those strings, an ``(n_t,)`` integer array of initial labels in
        ``[0, K_t)``, a ``(K_t, n_features)`` array of initial centres, or (when
        ``membership``) an ``(n_t, K_t)`` non-negative membership matrix. A single 2-D array
        is accepted for one task.
    Xs : list of validated task matrices
    ks : list of int
        Clusters per task.
    aliases : dict or None
        Deprecated spellings mapped to their new name; they work and raise a FutureWarning.
    membership : bool, default=False
        Accept ``(n_t, K_t)`` membership matrices. A 2-D array whose shape fits both centres
        and a membership matrix is read as centres.
    strings : tuple of str, default=("k-means++", "random")
        The init strings this estimator accepts (the kernel methods add
        ``"random-partition"``).

    Returns
    -------
    parsed : list of (kind, value)
        ``kind`` is ``"k-means++"``, ``"random"`` (value None), ``"labels"`` (int64 array),
        ``"centers"`` or ``"membership"`` (float64 copies).
    """
    aliases = aliases or {}
    T = len(Xs)
    if isinstance(init, str):
        kind = _canonical(init, None, aliases, strings)
        return [(kind, None)] * T
    if (isinstance(init, np.ndarray) or sp.issparse(init)) and init.ndim == 2 and T == 1:
        entries = [init]
    elif (isinstance(init, np.ndarray) or sp.issparse(init)) and init.ndim == 2:
        raise TypeError(
            f"init is one 2-D array but there are {T} tasks; pass a list with one entry per "
            "task (labels, a (n_clusters, n_features) array of centres, or a string)."
        )
    else:
        if isinstance(init, dict) or not hasattr(init, "__len__"):
            raise TypeError(
                "init must be 'k-means++', 'random' or a list with one entry per task (a "
                f"string, labels or centres), got {init!r}."
            )
        entries = list(init)
        if len(entries) != T:
            raise ValueError(f"init has {len(entries)} entries but there are {T} tasks.")
    parsed = []
    for t, e in enumerate(entries):
        if isinstance(e, str):
            parsed.append((_canonical(e, t, aliases, strings), None))
            continue
        a = e.toarray() if sp.issparse(e) else np.asarray(e)
        n, d = Xs[t].shape
        k = ks[t]
        if a.ndim == 1:
            if a.dtype.kind == "f" and np.isfinite(a).all() and np.array_equal(a, np.round(a)):
                a = a.astype(np.int64)
            if a.shape[0] != n or a.dtype.kind not in "iu":
                raise ValueError(
                    f"init labels for task {t} must be {n} integers, got shape {a.shape} and "
                    f"dtype {a.dtype}."
                )
            if a.size and (a.min() < 0 or a.max() >= k):
                raise ValueError(
                    f"init labels for task {t} must lie in [0, {k - 1}], got values in "
                    f"[{a.min()}, {a.max()}]."
                )
            parsed.append(("labels", a.astype(np.int64)))
        elif a.ndim == 2:
            if a.shape == (k, d):
                kind, what = "centers", "centres"
            elif membership and a.shape == (n, k):
                kind, what = "membership", "membership matrix"
            else:
                if not membership:
                    raise ValueError(
                        f"init centres for task {t} must have shape (n_clusters, n_features) "
                        f"= {(k, d)}, got {a.shape}."
                    )
                raise ValueError(
                    f"init for task {t} must have shape (n_clusters, n_features) = {(k, d)} "
                    f"(centres) or (n_samples, n_clusters) = {(n, k)} (a membership matrix), "
                    f"got {a.shape}."
                )
            a = np.array(a, dtype=np.float64, copy=True)
            if not np.isfinite(a).all():
                raise ValueError(f"init {what} for task {t} contain NaN or infinity.")
            if kind == "membership" and (a < 0).any():
                raise ValueError(f"init membership matrix for task {t} must be non-negative.")
            parsed.append((kind, a))
        else:
            raise ValueError(
                f"init for task {t} must be a string, a 1-D label array or a 2-D array, got an "
                f"array with {a.ndim} dimensions."
            )
    return parsed


def nearest_center_labels(X, C):
    """Labels of the nearest centre (squared Euclidean) of every row of ``X``.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n, d)
    C : ndarray of shape (k, d)

    Returns
    -------
    labels : ndarray of shape (n,), int64
    """
    D = np.asarray(X @ C.T) * -2.0 + np.sum(C ** 2, axis=1)[None, :]
    return np.argmin(D, axis=1).astype(np.int64)


def resolve_n_init(n_init, parsed):
    """``n_init="auto"``: 10 restarts when a task starts at random, else 1.

    Parameters
    ----------
    n_init : int or "auto"
    parsed : list of (kind, value)
        The output of :func:`parse_init`.

    Returns
    -------
    n_init : int
        1 (with a RuntimeWarning when another int was asked) when every task's start is
        given as labels, centres or memberships.
    """
    if isinstance(n_init, str):
        return 10 if any(kind == "random" for kind, _ in parsed) else 1
    if all(value is not None for _, value in parsed) and n_init != 1:
        warnings.warn("init gives every task's centres or labels, so n_init is ignored "
                      "(1 run).", RuntimeWarning, stacklevel=user_stacklevel())
        return 1
    return int(n_init)


def resolve_smoothing(smoothing, divergence, Xs, ks):
    """Per-task smoothing pseudo-counts; ``"auto"`` is :func:`bregclust.kmeans.auto_smoothing`.

    Parameters
    ----------
    smoothing : float or "auto"
        Already checked by the estimator's constraint table.
    divergence : Divergence
    Xs : list of validated task matrices
    ks : list of int
        Clusters per task.

    Returns
    -------
    betas : list of float
        One pseudo-count per task.
    """
    from .kmeans import auto_smoothing  # kmeans imports nothing from here: no cycle

    if isinstance(smoothing, str):
        return [auto_smoothing(X, divergence, k) for X, k in zip(Xs, ks)]
    return [float(smoothing)] * len(Xs)


def as_history(values):
    """The objective history in its one type: a 1-D float64 ndarray (a copy)."""
    return np.array(values, dtype=np.float64, copy=True).reshape(-1)


def check_task_magnitudes(maxabs, degree, method):
    """Refuse tasks whose magnitudes lie too far apart for one common scale.

    A multi-task objective compares every task in one unit (its relation costs compare
    centres across tasks), so the fit takes one power-of-two scale, that of the largest task.
    A divergence homogeneous of degree ``degree`` then puts task ``t``'s divergences at
    ``(maxabs[t] / max(maxabs))^degree``; below float64's normal range (``2^-1022``) they
    have lost their digits and the task's partition is decided by rounding (a degenerate
    result and an infinite objective, without a word).

    Parameters
    ----------
    maxabs : sequence of float
        Largest ``|x|`` of every task (0 for an all-zero task, which is skipped).
    degree : float or None
        Homogeneity degree of the objective (None: not homogeneous, nothing checked).
    method : str
        The estimator, for the message.
    """
    m = np.asarray(maxabs, dtype=np.float64)
    pos = np.flatnonzero(np.isfinite(m) & (m > 0))
    if degree is None or pos.size < 2:
        return
    e = np.frexp(m[pos])[1].astype(np.int64)
    hi, lo = int(np.argmax(e)), int(np.argmin(e))
    if degree * (e[hi] - e[lo]) > 1022:
        raise ValueError(
            f"{method}: task {int(pos[lo])} (largest |x| {m[pos[lo]]:.3g}) and task "
            f"{int(pos[hi])} (largest |x| {m[pos[hi]]:.3g}) lie too far apart for one common "
            f"scale: the objective compares the tasks in one unit and, of degree {degree:g} "
            "in the data, the smaller task's divergences would fall below float64's range. "
            "Rescale the tasks to comparable magnitudes (e.g. divide each by its largest "
            "absolute value).")


def cluster_sums(X, labels):
    """Per-cluster sums of the rows of ``X`` and the cluster sizes.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n, d)
    labels : ndarray of shape (n,)
        Non-negative integer labels.

    Returns
    -------
    sums : ndarray of shape (K, d)
        ``sums[c] = sum_{i: labels[i] = c} x_i`` (dense), ``K = labels.max() + 1``.
    counts : ndarray of shape (K,), float64

    Examples
    --------
    >>> cluster_sums(np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 1.0]]), np.array([0, 1, 0]))
    (array([[4., 1.],
           [0., 2.]]), array([2., 1.]))
    """
    lab = np.asarray(labels, dtype=np.int64)
    k = int(lab.max()) + 1 if lab.size else 0
    counts = np.bincount(lab, minlength=k).astype(np.float64)
    sums = sp.csr_matrix(label_indicator(lab, k).T) @ X
    return (sums.toarray() if sp.issparse(sums) else np.asarray(sums)), counts


def within_cluster_per_point(Xs, labels, *, unit_rows=True):
    """Sum over tasks of each task's k-means objective per point (label-free).

    ``sum_t (1 / n_t) sum_i ||x_i - m_t(label_i)||^2`` with ``m_t(z)`` the mean of task
    ``t``'s rows in cluster ``z``: how good each partition is as a single-task clustering.

    Parameters
    ----------
    Xs : list of validated task matrices (ndarray or sparse)
    labels : list of ndarray of shape (n_t,)
        Non-negative integer labels per task.
    unit_rows : bool, default=True
        Scale every row to unit Euclidean norm first (the geometry of a cosine similarity).

    Returns
    -------
    float
    """
    from ._conditioning import unit_rows as _unit_rows

    if len(Xs) != len(labels):
        raise ValueError(f"need one label array per task: {len(Xs)} tasks, {len(labels)} "
                         "label arrays.")
    total = 0.0
    for t, (X, lab) in enumerate(zip(Xs, labels)):
        lab = np.asarray(lab)
        if (lab.ndim != 1 or lab.shape[0] != X.shape[0] or not np.issubdtype(lab.dtype, np.integer)
                or (lab.size and lab.min() < 0)):
            raise ValueError(f"labels[{t}] must be {X.shape[0]} non-negative integers, one per "
                             f"row of task {t}.")
        if unit_rows:  # exact at any magnitude (scikit-learn's normalize leaves rows near
            X = _unit_rows(X)  # 1e-170 as given: their squared norm underflows to 0)
        sums, counts = cluster_sums(X, lab)
        if sp.issparse(X):
            sq = float(X.multiply(X).sum())
        else:
            sq = float(np.einsum("ij,ij->", X, X))
        nz = counts > 0
        within = sq - float(np.sum(np.einsum("ij,ij->i", sums[nz], sums[nz]) / counts[nz]))
        total += max(within, 0.0) / X.shape[0]
    if not np.isfinite(total):
        raise ValueError("the within-cluster sum of squares overflowed (rows near the float64 "
                         "limit); rescale the rows or use unit_rows=True.")
    return total


def _digest(X):
    """A fingerprint of one task's values (to recognise the training tasks in ``score``)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((X.shape, str(X.dtype), sp.issparse(X))).encode())
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        for a in (X.indptr, X.indices, X.data):
            h.update(np.ascontiguousarray(a).view(np.uint8))
    else:
        h.update(np.ascontiguousarray(X).view(np.uint8))
    return h.hexdigest()


def _has_score_criterion(est):
    return hasattr(est, "_score_criterion")


# ----------------------------------------------------------------------------- the mixin
class MultiTaskMixin(CallbackSupportMixin):
    """Contract shared by the multi-task estimators.

    ``fit(Xs)`` takes a list of tasks (2-D arrays or sparse matrices sharing one feature
    space) and sets ``n_tasks_``, ``n_features_in_``, ``labels_`` (a list of int64 arrays,
    one per task) and ``objective_history_`` (a 1-D float ndarray). ``predict(X, task=t)``
    uses task ``t``'s model. Subclasses declare ``_parameter_constraints`` (see
    :func:`check_params`) and the deprecated spellings of their ``init`` strings in
    ``_init_aliases``.

    ``score(Xs)`` exists on an estimator that defines the hook ``_score_criterion(Xs,
    labels) -> float`` (lower is better, label-free); it returns minus the criterion of the
    model's partition of ``Xs``: ``labels_`` when ``Xs`` are the training tasks, else
    ``predict(Xs[t], task=t)`` for every task.
    """

    _parameter_constraints = {}
    _init_aliases = {}

    def _validate_params(self):
        check_params(self, self._parameter_constraints)

    def _set_fitted_tasks(self, Xs, labels, history):
        self.n_tasks_ = len(Xs)
        self.n_features_in_ = int(Xs[0].shape[1])
        self.labels_ = [np.asarray(lab, dtype=np.int64) for lab in labels]
        self.objective_history_ = as_history(history)
        self._remember_training_tasks(Xs)

    def _remember_training_tasks(self, Xs):
        """Fingerprints of the training tasks (validated arrays), by which ``score`` knows
        them; only on estimators with a score."""
        if _has_score_criterion(self):
            self._task_digests_ = [_digest(X) for X in Xs]

    def _partition_of(self, Xs):
        """The model's labels for the tasks ``Xs`` (validated): ``labels_`` for the training
        tasks, ``predict`` otherwise."""
        digests = getattr(self, "_task_digests_", None)
        if digests is not None and [_digest(X) for X in Xs] == digests:
            return self.labels_
        return [self.predict(X, task=t) for t, X in enumerate(Xs)]

    @available_if(_has_score_criterion)
    def score(self, Xs, y=None):
        """Label-free score of the model's partition of the tasks ``Xs`` (higher is better).

        Minus the estimator's single-task criterion (``_score_criterion``): the sum over
        tasks of each task's within-cluster sum of squares per point (see the estimator's
        docstring for the geometry), the criterion of ``C="auto"`` / ``lam="auto"``. On the
        training tasks the partition is ``labels_``; on other tasks (one per fitted task, in
        order) it is ``predict(Xs[t], task=t)``. It does not depend on the coupling
        parameters themselves, so values are comparable across them: scikit-learn's
        ``GridSearchCV(est, grid, cv=[(all_tasks, all_tasks)])`` with
        ``all_tasks = np.arange(n_tasks)`` selects them without labels.

        Parameters
        ----------
        Xs : list of {array-like, sparse matrix} of shape (n_t, n_features)
            One matrix per fitted task.
        y : None
            Ignored.

        Returns
        -------
        score : float
        """
        check_is_fitted(self, "labels_")
        if isinstance(Xs, np.ndarray) or sp.issparse(Xs) or not hasattr(Xs, "__len__"):
            raise TypeError("Xs must be a list of task matrices (2-D arrays or sparse "
                            f"matrices), got {type(Xs).__name__}.")
        Xs = [self._check_X(X) for X in Xs]
        if len(Xs) != self.n_tasks_:
            raise ValueError(f"score needs one matrix per fitted task: the model has "
                             f"{self.n_tasks_} tasks, got {len(Xs)}.")
        return -float(self._score_criterion(Xs, self._partition_of(Xs)))

    def fit_predict(self, Xs, y=None, **fit_params):
        """Fit and return ``labels_``.

        Parameters
        ----------
        Xs : list of {array-like, sparse matrix}, each of shape (n_t, n_features)
        y : ignored
        **fit_params : dict
            Passed on to ``fit``.

        Returns
        -------
        labels : list of ndarray of shape (n_t,)
            One label vector per task.
        """
        return self.fit(Xs, y, **fit_params).labels_

    def _check_task(self, task):
        check_is_fitted(self, "labels_")
        T = self.n_tasks_
        if task is None:
            if T == 1:
                return 0
            raise ValueError(
                f"this model has {T} tasks; pass task=t (0 <= t < {T}) to say whose model "
                "to use."
            )
        if isinstance(task, bool) or not isinstance(task, numbers.Integral):
            raise TypeError(f"task must be an integer, got {task!r}.")
        if not 0 <= task < T:
            raise ValueError(f"task must be in [0, {T - 1}], got {task}.")
        return int(task)

    def _check_X(self, X, divergence=None):
        X = check_array(X, divergence=divergence)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but the model was fitted with "
                f"{self.n_features_in_}."
            )
        return X

