"""How the registry's array methods run: chunking, the thread pool, BLAS limits, the fused pass.

A :class:`~bregclust.divergences.Divergence` record describes *what* a divergence is (its
generator, GEMM form, centroids); this module decides *how* the ``n x k`` work runs:

* :func:`pairwise`, :func:`assign`, :func:`assign_and_sum` and :func:`weighted_sums` implement the
  record's public methods of the same names, on arrays the boundary has validated (and, in a
  fit, conditioned: :mod:`bregclust._conditioning`);
* the block passes a data source runs on its blocks of rows are in :mod:`bregclust._blocks`,
  the E-step pass of a Bregman mixture in :mod:`bregclust._mixture_pass`; both call this engine;
* :class:`PreparedCentres` holds the GEMM parts of a set of centres so a loop that reuses the same
  centres (or already has them) does not recompute ``grad phi(U)`` and ``phi(U)``;
* chunks run on a small thread pool (one worker per core, ``BREGCLUST_NUM_THREADS`` overrides)
  with every BLAS library limited to one thread, as scikit-learn's k-means does: nested BLAS
  threads would oversubscribe the cores.
"""

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp
from threadpoolctl import ThreadpoolController

from . import _kernels as K
from ._kernels import lloyd as KL
from ._validation import maybe_non_finite

__all__ = ["PreparedCentres", "prepare", "phi_rows", "prepare_centres", "exact_pairwise",
           "exact_objective", "exact_assigned", "pairwise", "assign", "assign_and_sum", "LloydPass", "weighted_sums", "serial",
           "blas_one_thread", "min_max"]

PARALLEL_MIN = 1 << 18  # elements below which elementwise kernels run serially
_CHUNK_ELEMENTS = 1 << 17  # rows per chunk = this / k  (1 MB of float64 per block)
_LLOYD_CHUNK = 256  # rows per BLAS call in the fused Lloyd pass (as scikit-learn's k-means)

_POOL = None
_CPUS = os.cpu_count() or 1  # read once: each query is a system call
_CONTROLLER = None
_LOCAL = threading.local()  # per-thread: inside serial()


class PreparedCentres:
    """The GEMM parts of centres ``U``: ``D = phi_x 1^T + 1 c^T - Xg G^T``.

    Build it with :meth:`Divergence.prepare_centres`; pass it as ``centres=`` to
    :meth:`Divergence.assign_and_sum` to reuse it.

    Attributes
    ----------
    U : ndarray of shape (k, d)
        The centres (C order, float64).
    G : ndarray of shape (k, p)
        ``grad phi(U)`` (for l1_subgradient the sign indicators of ``[U+, U-]``).
    GT : ndarray of shape (p, k)
        ``G.T`` in C order (the operand of the products), made on first use (the cached passes
        on text never use it, and its copy of ``k x p`` values cost 0.15 s a pass there).
    c : ndarray of shape (k,)
        ``<u, g> - phi(u)``.
    phi : ndarray of shape (k,) or None
        ``phi(U)`` for differentiable generators.
    finite : bool
        Whether ``G`` and ``c`` are finite; centres on the domain boundary (e.g. a zero coordinate
        with kl) are not, and take the exact generic kernel instead of the GEMM form.
    fused : bool
        Whether the one-pass Lloyd kernels apply (finite parts of a differentiable generator).
    """

    __slots__ = ("U", "G", "_GT", "c", "phi", "finite", "fused", "_gt32")

    def __init__(self, U, G, c, phi, fused):
        self.U = U
        self.G = G
        self.c = c
        self.phi = phi
        self.finite = not (maybe_non_finite(G) or maybe_non_finite(c)) or bool(
            np.isfinite(G).all() and np.isfinite(c).all())
        self._GT = None
        self.fused = bool(fused and self.finite)
        self._gt32 = None

    @property
    def GT(self):
        if self._GT is None:  # BLAS takes a contiguous operand faster
            self._GT = np.ascontiguousarray(self.G.T)
        return self._GT

    def __getstate__(self):
        state = {name: getattr(self, name) for name in self.__slots__}
        state["_GT"] = self.GT  # made before shipping: every receiver would make it again
        return state

    def __setstate__(self, state):
        for name, value in state.items():
            setattr(self, name, value)

    def gt(self, dtype):
        """``G^T`` in the data's floating type (the GEMM runs in it: float32 data take the
        float32 product, as scikit-learn's k-means does)."""
        if dtype != np.float32:
            return self.GT
        if self._gt32 is None:
            with np.errstate(over="ignore"):
                self._gt32 = np.ascontiguousarray(self.GT, dtype=np.float32)
        return self._gt32


def n_workers():
    """Worker threads: 1 inside :func:`serial`, else ``BREGCLUST_NUM_THREADS`` or the number of
    cores (at most 8)."""
    if getattr(_LOCAL, "serial", False):
        return 1
    env = os.environ.get("BREGCLUST_NUM_THREADS")
    if env:
        return max(1, int(env))
    return max(1, min(_CPUS, 8))


@contextmanager
def serial():
    """Run the calling thread's kernels on that thread alone: no pool, no parallel launch.

    For callers that are already one of several parallel workers (a dask task on a worker
    thread): nested kernel threads would oversubscribe the cores, and a parallel launch per
    small block costs more than the block. Labels and minima are those of the threaded
    kernels bit for bit; centre sums add the rows in one block instead of one block per
    thread (see :func:`bregclust._kernels.lloyd.lloyd_step_dense`), so they agree to rounding.
    """
    prev = getattr(_LOCAL, "serial", False)
    _LOCAL.serial = True
    try:
        yield
    finally:
        _LOCAL.serial = prev


def parallel(size):
    """Whether an elementwise kernel over ``size`` elements runs in parallel: :func:`row_blocks`
    (a true value, the runner of its blocks of rows on the pool) when the array is large and
    the thread is not inside :func:`serial`, else ``False`` (one call on the calling thread).
    The forms (:mod:`bregclust._forms`, below the engine) take it as their ``parallel``
    argument."""
    return row_blocks if size > PARALLEL_MIN and not getattr(_LOCAL, "serial", False) else False


@contextmanager
def blas_one_thread():
    """Context limiting every BLAS library to one thread: our threads (the pool, the numba
    kernels) each call BLAS, and nested BLAS threads would oversubscribe the cores.

    Inside a context this thread already opened (a fit runs its whole loop in one, and every
    Lloyd pass asks again) nothing is queried or set: each limit is a round of calls into
    every loaded BLAS library."""
    global _CONTROLLER
    if getattr(_LOCAL, "blas_one", False):
        yield
        return
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    with _CONTROLLER.limit(limits=1, user_api="blas"):
        _LOCAL.blas_one = True
        try:
            yield
        finally:
            _LOCAL.blas_one = False


def _in_pool():
    """Marks a worker thread of the pool (its initializer)."""
    _LOCAL.in_pool = True


def run_chunks(work, starts, blas=True):
    """Run ``work(start)`` for every chunk start on the thread pool, BLAS single-threaded
    (``blas=False``: the work calls no BLAS, and the limit is not set).

    Called from one of the pool's own workers it runs the chunks on that worker, in order: a
    worker waiting for chunks queued behind itself would wait for ever."""
    global _POOL
    starts = list(starts)
    workers = n_workers()
    if len(starts) <= 1 or workers <= 1 or getattr(_LOCAL, "in_pool", False):
        for s in starts:
            work(s)
        return
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bregclust",
                                   initializer=_in_pool)
    with blas_one_thread() if blas else nullcontext():
        for f in [_POOL.submit(work, s) for s in starts]:
            f.result()


def row_blocks(work, n):
    """``work(s, e)`` over contiguous blocks of rows covering ``0..n-1``, one block per worker
    of the pool (what :func:`parallel` returns for a large array). For serial kernels whose
    every row's value depends on that row alone (phi of the rows, the exact divergence of each
    row to its centre): any split gives the values of the former ``prange`` kernels bit for bit,
    and a serial kernel compiles in a fraction of a ``prange`` kernel's time (a cold first fit
    pays it; benchmarks/RESULTS.md, "House, session 20"). ``work`` calls no BLAS."""
    if n <= 0:
        return
    step = -(-n // n_workers())
    run_chunks(lambda s: work(s, min(n, s + step)), range(0, n, step), blas=False)


def min_max(a):
    """``(min, max)`` of a non-empty array (NaN when one entry is NaN); one block of rows per
    worker on the thread pool when the array is large (numpy's reductions release the GIL)."""
    n = a.shape[0]
    step = -(-n // n_workers()) if parallel(a.size) else n
    starts = range(0, n, max(step, 1))
    if len(starts) <= 1:
        return float(a.min()), float(a.max())
    parts = {}

    def work(s):
        b = a[s:s + step]
        parts[s] = (b.min(), b.max())

    run_chunks(work, starts)
    return float(np.min([p[0] for p in parts.values()])), float(np.max([p[1] for p in parts.values()]))


def column_sums(w, X):
    """``w @ X`` accumulated in float64. Float32 rows go through a kernel that converts each
    value as it adds it (BLAS would need a float64 copy of the rows)."""
    if sp.issparse(X) or X.dtype == np.float64:
        return np.asarray(w @ X).ravel()
    out = np.zeros(X.shape[1])
    KL.column_sums_dense(np.ascontiguousarray(X), np.ascontiguousarray(w, dtype=np.float64), out)
    return out


def chunk_rows(k):
    """Rows per chunk for ``k`` centres (about 1 MB of float64 per block)."""
    return max(256, _CHUNK_ELEMENTS // max(k, 1))


# ----------------------------------------------------------------------------- the record's parts
# The registry record describes a divergence through its form (GEMM parts, the exact definition);
# this engine is the one caller of the form, on arrays the boundary has validated.
def prepare(div, X, closed_form=False):
    """``(Xg, phi_x)``: what every pass derives from ``X`` alone (see
    :meth:`Divergence.prepare`); ``closed_form`` as in :func:`phi_rows`."""
    if closed_form and div.has_closed_form_phi:
        return X, phi_rows(div, X, closed_form=True)
    return div.form.prepare(X, parallel(X.shape[0] * X.shape[1]))


def phi_rows(div, X, closed_form=False):
    """``phi(x_i)`` of every row of a validated array.

    With ``closed_form`` and a divergence that has one (:attr:`Divergence.phi_rule`), ``phi``
    of the stored values comes from numpy's vector functions and each row is added left to
    right (CSR: ``sum_stored (f(v) - f(0)) + d f(0)``, as the scalar kernels); the values
    agree with the scalar generator's to the rounding of the vector logarithm. Otherwise
    (and by default) the scalar generator kernels.
    """
    if not (closed_form and div.has_closed_form_phi):
        return div.form.phi_rows(X, parallel(X.shape[0] * X.shape[1]))
    rule = div.phi_rule
    n, d = X.shape
    out = np.empty(n)
    if n == 0:
        return out
    sparse = sp.issparse(X)
    if sparse:
        f0 = float(rule(np.zeros(1))[0])
        f0 = f0 if np.isfinite(f0) else 0.0  # 0 outside the domain: stored entries only
    # one block of rows per worker (numpy's vector functions release the GIL), each block
    # in slices of about _CHUNK_ELEMENTS values so temporaries stay small
    size = X.nnz if sparse else n * d
    per_row = max(1, size // n)
    step = max(1, _CHUNK_ELEMENTS // per_row)
    workers = n_workers() if size > PARALLEL_MIN else 1
    block = max(step, -(-n // workers))

    def work(s):
        for a in range(s, min(n, s + block), step):
            e = min(n, a + step, s + block)
            if sparse:
                ptr = X.indptr[a:e + 1]
                vals = rule(X.data[ptr[0]:ptr[-1]])
                if f0 != 0.0:
                    vals -= f0
                KL.segment_sums(vals, ptr - ptr[0], out[a:e])
            else:
                out[a:e] = rule(X[a:e]).sum(axis=1)

    run_chunks(work, range(0, n, block))
    if sparse and f0 != 0.0:
        out += d * f0
    return out


def prepare_centres(div, U):
    """:class:`PreparedCentres` of validated centres ``U`` (dense, C order, float64): the one
    place the GEMM parts of centres are computed (the form's ``centre_parts``); every pass,
    :func:`pairwise` included, reads them from here."""
    G, c, phi = div.form.centre_parts(U, parallel(U.size))
    return PreparedCentres(U, G, c, phi, fused=div.form.fused and phi is not None)


def exact_pairwise(div, Xd, U):
    """The definition of ``d`` between dense rows ``Xd`` and centres ``U`` (the oracle)."""
    out = np.empty((Xd.shape[0], U.shape[0]))
    div.form.generic_pairwise(Xd, U, out)
    return out


def exact_objective(div, X, U, labels, w):
    """``sum_i w_i d(x_i, u_{labels_i})`` by the definition (rows of zero weight count 0):
    :func:`exact_assigned` weighted and summed.

    Sparse ``X``: one dot product over the rows of positive weight, so the total may differ
    from a sum cluster by cluster in its last digits; dense ``X``: numpy's sum of ``w * d``
    over every row.
    """
    d = exact_assigned(div, X, U, labels, w=w)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported by the caller
        if sp.issparse(X):
            keep = np.flatnonzero(w > 0)
            return float(w[keep] @ d[keep])
        return float(np.sum(w * d))


def _own_gemm(div, X, U, labels):
    """``d(x_i, u_{labels_i})`` of sparse rows by the GEMM form ``phi(x_i) + c_a - <xg_i, g_a>``
    (``a = labels_i``), clamped at 0 as :func:`pairwise`; a row whose value is not finite, or
    whose centre is outside the form (non-finite ``G`` or ``c``), by the definition. Float32
    rows are widened first (their ``phi``, unit rows, ... in float64: the definition's
    precision)."""
    if X.dtype != np.float64:
        X = X.astype(np.float64)
    Xg, phi_x = prepare(div, X)
    pc = prepare_centres(div, U)
    G, c = pc.G, pc.c
    n = X.shape[0]
    prod = np.empty(n)
    if sp.issparse(Xg):
        Xg = Xg.tocsr()
        Gf = G.ravel()
        dg = G.shape[1]
        step = max(1, _CHUNK_ELEMENTS * 8 // max(Xg.nnz // max(n, 1), 1))
        for a in range(0, n, step):  # about 2^20 stored values at a time
            e = min(n, a + step)
            ptr = Xg.indptr[a:e + 1]
            lo, hi = int(ptr[0]), int(ptr[-1])
            at = np.repeat(labels[a:e] * dg, np.diff(ptr)) + Xg.indices[lo:hi]
            with np.errstate(over="ignore", invalid="ignore"):
                vals = Xg.data[lo:hi] * Gf[at]
            KL.segment_sums(vals, ptr - lo, prod[a:e])
    else:
        Xg = np.asarray(Xg)
        for a in range(0, n, 4096):
            with np.errstate(over="ignore", invalid="ignore"):
                prod[a:a + 4096] = np.einsum("ij,ij->i", Xg[a:a + 4096], G[labels[a:a + 4096]],
                                             dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        d = phi_x + c[labels] - prod
        d = np.where(d > 0.0, d, np.where(d > -np.inf, 0.0, np.nan))
    outside = ~(np.isfinite(G).all(axis=1) & np.isfinite(c))
    redo = np.flatnonzero(~np.isfinite(d) | outside[labels])
    for j in np.unique(labels[redo]):
        rows = redo[labels[redo] == j]
        d[rows] = _exact_rows(div, X, rows, U[j:j + 1])[:, 0]
    return d


def exact_assigned(div, X, U, labels, *, guard=False, w=None):
    """``d(x_i, u_{labels_i})`` of every row (with ``w``: of the rows with ``w_i > 0``, 0 for
    the others, which are not evaluated).

    Dense rows: the definition. Sparse rows: the GEMM form of their non-zeros, each row against
    its own centre only (:func:`_own_gemm`: ``O(nnz)``, where the definition would densify every
    row, ``O(n d)`` time and memory; float32 rows widened to float64 first); a row whose value
    is not finite, or whose centre is outside the form, by the definition. With ``guard`` (the
    values a user reads) sparse rows go through :func:`pairwise` cluster by cluster instead,
    which also evaluates by the definition the rows that may have lost their digits to
    cancellation (float32 rows in float32, as every value a user reads).
    """
    n = X.shape[0]
    if not sp.issparse(X):
        out = np.empty(n)
        div.form.generic_assigned(X, np.ascontiguousarray(U), labels,
                                  np.ones(n) if w is None else w, out, parallel(X.size))
        return out
    labels = np.asarray(labels, dtype=np.int64)
    keep = np.arange(n) if w is None else np.flatnonzero(w > 0)
    out = np.zeros(n)
    if keep.size == 0:
        return out
    Xk = X if keep.size == n else X[keep]
    lab = np.ascontiguousarray(labels[keep])
    if not guard:
        out[keep] = _own_gemm(div, Xk, np.ascontiguousarray(U, dtype=np.float64), lab)
        return out
    for j in range(U.shape[0]):
        idx = np.flatnonzero(lab == j)
        if idx.size:
            out[keep[idx]] = pairwise(div, Xk[idx], U[j:j + 1], guard=True)[:, 0]
    return out


def _exact_rows(div, X, rows, U):
    """The definition of ``d`` for the rows ``rows`` of ``X`` against every centre."""
    Xr = X[rows]
    Xr = Xr.toarray() if sp.issparse(Xr) else np.ascontiguousarray(Xr)
    return exact_pairwise(div, Xr, U)


# ----------------------------------------------------------------------------- passes
def pairwise(div, X, U, prepared=None, *, guard=False):
    """``D[i, j] = d(x_i, u_j)`` by the GEMM form; boundary centres by the definition.

    Entries of the GEMM form that are not finite (an overflow, or ``inf - inf``) are never
    clamped to 0: their rows are evaluated by the definition instead. With ``guard`` (the
    values a user reads: ``Divergence.pairwise``, ``transform``), so are the rows whose minimum
    may have lost its digits to cancellation (:func:`_digits_threshold`); the passes of a fit
    (seeding, re-seeding, objectives) keep the GEMM form, whose rounding they are written for.
    """
    Xg, phi_x = prepared if prepared is not None else prepare(div, X)
    pc = prepare_centres(div, U)
    G, c = pc.G, pc.c
    bad = ~(np.isfinite(G).all(axis=1) & np.isfinite(c))
    if bad.any():
        G = G.copy()
        c = c.copy()
        G[bad] = 0.0
        c[bad] = 0.0
    if Xg.dtype == np.float32:
        with np.errstate(over="ignore"):
            G = G.astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):  # non-finite rows: the definition
        D = np.asarray(Xg @ G.T)
    if not D.flags.c_contiguous or not D.flags.writeable:
        D = np.ascontiguousarray(D)
    few = np.empty(D.shape[0], dtype=np.bool_)
    thr = (_digits_threshold(D.dtype, Xg, phi_x, G, c) if guard
           else np.full(D.shape[0], -np.inf))
    K.fused_pairwise(D, phi_x, c, thr, few)
    if (~bad).any():
        rows = np.flatnonzero(~np.isfinite(D[:, ~bad]).all(axis=1) | few)
    else:
        rows = ()
    if len(rows):
        D[rows] = _exact_rows(div, X, rows, U)
    if bad.any():
        D[:, bad] = _exact_rows(div, X, slice(None), U[bad])
    return D


#: ``pairwise`` evaluates by the definition the rows where the GEMM form may keep fewer than
#: about eight significant digits in float64 (``2^26 eps``), three in float32 (``2^10 eps``,
#: float32 data are compared in float32 by design).
PAIRWISE_DIGITS_GUARD = {np.dtype(np.float64): 2.0 ** 26, np.dtype(np.float32): 2.0 ** 10}


def _digits_threshold(dtype, Xg, phi_x, G, c):
    """Per row, the divergence below which the GEMM form may have lost most of its digits.

    ``d = phi(x) - <xg, g> + c`` is a difference of terms that can be far larger than ``d``
    (a coordinate near 1e300 beside one near 1: the small one is absorbed). Its rounding error
    is at most a few ``eps (|phi(x)| + |c| + sum_k |xg_k g_k|)``, and the last sum is at most
    ``||xg||_2 ||g||_2`` (dense rows) or ``||xg||_1 max_k |g_k|`` (sparse rows, from the stored
    entries alone). :func:`pairwise` evaluates again by the definition every row with an entry
    below ``PAIRWISE_DIGITS_GUARD`` times that bound. Rows of ordinary data are far from it
    (their divergences are not 1e-8 of their own magnitude); a row equal to a centre is not,
    and its exact value (0) costs one row of the definition.
    """
    n = phi_x.shape[0]
    if n == 0 or G.shape[0] == 0:
        return np.zeros(n)
    with np.errstate(over="ignore", invalid="ignore"):
        if sp.issparse(Xg):
            Xg = Xg.tocsr()
            nx = np.zeros(n)
            stored = np.diff(Xg.indptr) > 0
            nx[stored] = np.add.reduceat(np.abs(Xg.data, dtype=np.float64),
                                         Xg.indptr[:-1][stored])
            ng = float(np.abs(G).max())
        else:
            nx = np.sqrt(np.einsum("ij,ij->i", Xg, Xg, dtype=np.float64))
            ng = float(np.sqrt(np.einsum("ij,ij->i", G, G)).max())
        guard = PAIRWISE_DIGITS_GUARD[np.dtype(dtype)] * float(np.finfo(dtype).eps)
        return guard * (np.abs(phi_x) + float(np.abs(c).max()) + nx * ng)


def assign(div, X, centres, prepared=None, step=None):
    """Nearest centre of every row: ``(labels, mins)``, chunked over rows on the pool.

    ``centres``: :class:`PreparedCentres`. Rows whose GEMM minimum is not finite (overflow)
    are assigned by the definition of ``d``.
    """
    Xg, phi_x = prepared if prepared is not None else prepare(div, X)
    U = centres.U
    n = Xg.shape[0]
    k = U.shape[0]
    labels = np.empty(n, dtype=np.int64)
    mins = np.empty(n)
    step = step or chunk_rows(k)
    if not centres.finite:
        for s in range(0, n, step):
            D = pairwise(div, X[s:s + step], U)
            labels[s:s + step] = np.argmin(D, axis=1)
            mins[s:s + step] = D[np.arange(D.shape[0]), labels[s:s + step]]
        return labels, mins
    GT, c = centres.gt(Xg.dtype), centres.c

    def work(s):
        e = min(n, s + step)
        P = np.ascontiguousarray(Xg[s:e] @ GT)
        K.fused_argmin(P, phi_x[s:e], c, labels[s:e], mins[s:e])

    run_chunks(work, range(0, n, step))
    _fix_non_finite(div, X, U, labels, mins)
    return labels, mins


def _fix_non_finite(div, X, U, labels, mins, w=None, S=None, W=None):
    """Re-assign by the definition the rows whose fast minimum is not finite (the kernels flag
    an overflow or ``inf - inf`` with NaN); move their weight in ``S``/``W`` when given."""
    if not maybe_non_finite(mins):
        return
    rows = np.flatnonzero(~np.isfinite(mins))
    if not rows.size:
        return
    D = _exact_rows(div, X, rows, U)
    new = np.argmin(D, axis=1)
    if S is not None:
        Xr = X[rows]
        Xr = Xr.toarray() if sp.issparse(Xr) else Xr
        for r, x, old, lab in zip(rows, Xr, labels[rows], new):
            if old != lab:
                S[old] -= w[r] * x
                W[old] -= w[r]
                S[lab] += w[r] * x
                W[lab] += w[r]
    labels[rows] = new
    mins[rows] = D[np.arange(rows.size), new]


def fused_pass(prepared, GT, c, w):
    """The fused Lloyd kernels on finite GEMM parts ``GT = G^T`` (p x k, C order) and ``c``:
    ``(labels, mins, S, W, obj)`` in one read of the data, ``obj = sum_i w_i mins_i`` (added
    in row order within each thread's block of rows, then over the blocks; NaN when a minimum
    is flagged NaN)."""
    Xg, phi_x = prepared
    n, d = Xg.shape
    k = GT.shape[1]
    T = min(n_workers(), numba.get_num_threads()) if n * d > PARALLEL_MIN else 1
    T = max(1, min(T, n))
    labels = np.empty(n, dtype=np.int64)
    mins = np.empty(n)
    S = np.zeros((T, k, d))
    W = np.zeros((T, k))
    O = np.zeros(T)
    if n == 0:
        return labels, mins, S[0], W[0], 0.0
    # One block of rows per thread (the blocks of the prange kernels lloyd_step_dense/_csr,
    # so their sums bit for bit), each a serial kernel on the pool: a cold first fit compiles
    # one serial kernel instead of a parallel one (benchmarks/RESULTS.md, "Lloyd's passes on
    # the pool").
    if sp.issparse(Xg):
        def block(t):
            KL.lloyd_block_csr(Xg.data, Xg.indices, Xg.indptr, phi_x, GT, c, w, labels, mins,
                               S, W, O, t)
        run_chunks(block, range(T))
    else:
        Xg = np.ascontiguousarray(Xg)
        if GT.dtype != Xg.dtype:  # the product runs in the data's type (BLAS needs one type)
            GT = np.ascontiguousarray(GT, dtype=Xg.dtype)

        def block(t):
            KL.lloyd_block_dense(Xg, phi_x, GT, c, w, _LLOYD_CHUNK, labels, mins, S, W, O, t)
        with blas_one_thread():
            run_chunks(block, range(T))
    obj = float(O[0])
    for t in range(1, T):  # the threads' sums, added in place (no k x d temporary)
        S[0] += S[t]
        obj += float(O[t])
    return labels, mins, S[0], W.sum(axis=0), obj


def nearest_csr(prepared, GT, c):
    """``(labels, mins)`` of CSR rows on finite GEMM parts ``GT`` (p x k) and ``c``: the
    labels and minima of :func:`fused_pass` bit for bit (the same product and argmin), without
    its per-cluster sums. Rows are split over the worker threads when the stored entries
    times the centres exceed :data:`PARALLEL_MIN`."""
    Xg, phi_x = prepared
    n = Xg.shape[0]
    k = GT.shape[1]
    labels = np.empty(n, dtype=np.int64)
    mins = np.empty(n)
    if n == 0:
        return labels, mins
    T = min(n_workers(), numba.get_num_threads()) if Xg.nnz * k > PARALLEL_MIN else 1
    T = max(1, min(T, n))

    def block(t):  # serial block kernels on the pool, as in fused_pass
        KL.nearest_block_csr(Xg.data, Xg.indices, Xg.indptr, phi_x, GT, c, T, labels, mins, t)
    run_chunks(block, range(T))
    return labels, mins


def _objective(w, mins):
    """``sum_i w_i mins_i`` (one BLAS dot)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return float(w @ mins)


@dataclass(frozen=True)
class LloydPass:
    """What one Lloyd pass over rows returns (:func:`assign_and_sum`).

    Attributes
    ----------
    labels : ndarray of int64, shape (n,)
        The nearest centre of every row.
    mins : ndarray of shape (n,)
        The divergence of every row to that centre.
    S : ndarray of shape (k, d)
        Per-cluster weighted sums of the rows.
    W : ndarray of shape (k,)
        Per-cluster total weights.
    objective : float
        ``sum_i w_i mins_i``.
    """

    labels: np.ndarray
    mins: np.ndarray
    S: np.ndarray
    W: np.ndarray
    objective: float


def assign_and_sum(div, X, w, centres, prepared=None):
    """One Lloyd pass (:class:`LloydPass`): fused when the centres allow it, else
    :func:`assign` then :func:`weighted_sums`."""
    prepared = prepared if prepared is not None else prepare(div, X)
    if not centres.fused:
        labels, mins = assign(div, X, centres, prepared=prepared)
        S, W = weighted_sums(X, labels, centres.U.shape[0], w)
        return LloydPass(labels, mins, S, W, _objective(w, mins))
    Xg = prepared[0]
    # dense float32 rows take the float32 product (BLAS); sparse rows multiply each stored
    # value into a row of G^T in the kernel, where float64 G^T needs no copy
    gt = centres.GT if sp.issparse(Xg) else centres.gt(Xg.dtype)
    labels, mins, S, W, obj = fused_pass(prepared, gt, centres.c, w)
    # The weights are finite and non-negative and a flagged minimum is NaN, so a finite
    # objective proves every minimum finite: the objective doubles as the check.
    if not np.isfinite(obj):
        _fix_non_finite(div, X, centres.U, labels, mins, w, S, W)
        obj = _objective(w, mins)
    return LloydPass(labels, mins, S, W, obj)


def weighted_sums(X, labels, k, w):
    """``(S, W)``: per-cluster weighted sums of rows (k x d) and total weights (k,)."""
    n = X.shape[0]
    labels = np.asarray(labels, dtype=np.int64)
    if n == 0:
        return np.zeros((k, X.shape[1])), np.zeros(k)
    # One block of rows per worker, each with its own (k x d) buffer, summed afterwards.
    workers = n_workers() if n * X.shape[1] > PARALLEL_MIN else 1
    step = -(-n // workers)
    bufs = {s: (np.zeros((k, X.shape[1])), np.zeros(k)) for s in range(0, n, step)}

    def work(s):
        e = min(n, s + step)
        S, W = bufs[s]
        if sp.issparse(X):
            K.weighted_sums_csr(X.data, X.indices, X.indptr[s:e + 1], labels[s:e], w[s:e], S, W)
        else:
            K.weighted_sums_dense(X[s:e], labels[s:e], w[s:e], S, W)

    run_chunks(work, bufs)
    S, W = bufs.pop(0)
    for S2, W2 in bufs.values():
        S += S2
        W += W2
    return S, W
