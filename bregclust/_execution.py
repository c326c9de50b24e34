"""How the registry's array methods run: chunking, the thread pool, BLAS limits, the fused pass.

A :class:`~bregclust.divergences.Divergence` record describes *what* a divergence is (its
generator, GEMM form, centroids); this module decides *how* the ``n x k`` work runs:

* :func:`pairwise`, :func:`assign`, :func:`assign_and_sum` and :func:`weighted_sums` implement the
  record's public methods of the same names, on arrays the boundary has validated (and, in a
  fit, conditioned: :mod:`bregclust._conditioning`);
* :class:`Block` and the block passes (:func:`lloyd_block`, :func:`top_block`, ...) are what a
  data source (:mod:`bregclust._sources`, :mod:`bregclust._dask`) runs on each of its blocks
  of rows, and :func:`combine` adds their results;
* :func:`mixture_block` is the E-step of a Bregman mixture (:mod:`bregclust.mixture`): the
  same GEMM form with a log-sum-exp per row and responsibility-weighted sums
  (:class:`MixturePart`);
* :class:`PreparedCentres` holds the GEMM parts of a set of centres so a loop that reuses the same
  centres (or already has them) does not recompute ``grad phi(U)`` and ``phi(U)``;
* chunks run on a small thread pool (one worker per core, ``BREGCLUST_NUM_THREADS`` overrides)
  with every BLAS library limited to one thread, as scikit-learn's k-means does: nested BLAS
  threads would oversubscribe the cores.
"""

import hashlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, fields

import numba
import numpy as np
import scipy.sparse as sp
from threadpoolctl import ThreadpoolController

from . import _kernels as K
from ._kernels import lloyd as KL
from ._kernels import mixture as KM
from ._validation import maybe_non_finite

__all__ = ["PreparedCentres", "prepare", "phi_rows", "prepare_centres", "exact_pairwise",
           "exact_objective", "exact_assigned", "pairwise", "assign", "assign_and_sum", "weighted_sums", "serial",
           "blas_one_thread", "min_max", "Block", "LloydPart", "Rows", "Cost", "lloyd_block", "label_block",
           "assign_block", "top_block", "cost_block", "sample_block", "take_block", "combine",
           "label_digest", "labels_differ", "farthest_by_passes", "MixtureCentres", "prepare_mixture",
           "mixture_pass", "MixturePart", "mixture_block"]

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
        ``G.T`` in C order (the operand of the products).
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

    __slots__ = ("U", "G", "GT", "c", "phi", "finite", "fused", "_gt32")

    def __init__(self, U, G, c, phi, fused):
        self.U = U
        self.G = G
        self.c = c
        self.phi = phi
        self.finite = not (maybe_non_finite(G) or maybe_non_finite(c)) or bool(
            np.isfinite(G).all() and np.isfinite(c).all())
        self.GT = np.ascontiguousarray(G.T)  # BLAS takes a contiguous operand faster
        self.fused = bool(fused and self.finite)
        self._gt32 = None

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
    """Whether an elementwise kernel over ``size`` elements takes its parallel version."""
    return size > PARALLEL_MIN and not getattr(_LOCAL, "serial", False)


def rowsum_kernels(size):
    """``(dense, csr)`` row-sum kernels of phi for ``size`` elements (see :func:`parallel`)."""
    if parallel(size):
        return K.rowsum_par, K.rowsum_csr
    return K.rowsum, KL.rowsum_csr_serial


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


def run_chunks(work, starts):
    """Run ``work(start)`` for every chunk start on the thread pool, BLAS single-threaded."""
    global _POOL
    starts = list(starts)
    workers = n_workers()
    if len(starts) <= 1 or workers <= 1:
        for s in starts:
            work(s)
        return
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bregclust")
    with blas_one_thread():
        for f in [_POOL.submit(work, s) for s in starts]:
            f.result()


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
    return div.form.prepare(div, X)


def phi_rows(div, X, closed_form=False):
    """``phi(x_i)`` of every row of a validated array.

    With ``closed_form`` and a divergence that has one (:attr:`Divergence.phi_rule`), ``phi``
    of the stored values comes from numpy's vector functions and each row is added left to
    right (CSR: ``sum_stored (f(v) - f(0)) + d f(0)``, as the scalar kernels); the values
    agree with the scalar generator's to the rounding of the vector logarithm. Otherwise
    (and by default) the scalar generator kernels.
    """
    if not (closed_form and div.has_closed_form_phi):
        return div.form.phi_rows(div, X)
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
    """:class:`PreparedCentres` of validated centres ``U`` (dense, C order, float64)."""
    form = div.form
    if not div.differentiable:
        G, c = form.gemm_parts(div, U)
        return PreparedCentres(U, G, c, None, fused=False)
    G = form.grad(div, U)
    phi = form.phi_rows(div, U)
    with np.errstate(invalid="ignore"):
        c = np.einsum("ij,ij->i", U, G) - phi
    return PreparedCentres(U, G, c, phi, fused=form.fused)


def exact_pairwise(div, Xd, U):
    """The definition of ``d`` between dense rows ``Xd`` and centres ``U`` (the oracle)."""
    out = np.empty((Xd.shape[0], U.shape[0]))
    div.form.generic_pairwise(div, Xd, U, out)
    return out


def exact_objective(div, X, U, labels, w, chunk=4096):
    """``sum_i w_i d(x_i, u_{labels_i})`` by the definition (rows of zero weight count 0).

    Sparse ``X`` takes the GEMM form on its non-zeros, cluster by cluster: the definition would
    densify every row, ``O(n d)`` time and memory instead of ``O(nnz)``.
    """
    if sp.issparse(X):
        keep = np.flatnonzero(w > 0)
        total = 0.0
        for j in range(U.shape[0]):
            idx = keep[labels[keep] == j]
            for s in range(0, idx.size, chunk):
                rows = idx[s:s + chunk]
                d = pairwise(div, X[rows], U[j:j + 1])[:, 0]
                with np.errstate(over="ignore", invalid="ignore"):
                    total += float(w[rows] @ d)
        return total
    d = np.empty(X.shape[0])
    div.form.generic_assigned(div, X, np.ascontiguousarray(U), labels, w, d)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported by the caller
        return float(np.sum(w * d))


def exact_assigned(div, X, U, labels, *, guard=False):
    """``d(x_i, u_{labels_i})`` of every row by the definition (sparse rows: the GEMM form of
    their non-zeros, cluster by cluster; with ``guard`` the rows that may have lost digits
    there by the definition, as :func:`pairwise`)."""
    n = X.shape[0]
    out = np.empty(n)
    if sp.issparse(X):
        for j in range(U.shape[0]):
            idx = np.flatnonzero(labels == j)
            if idx.size:
                out[idx] = pairwise(div, X[idx], U[j:j + 1], guard=guard)[:, 0]
        return out
    div.form.generic_assigned(div, X, U, labels, np.ones(n), out)
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
    G, c = div.form.gemm_parts(div, U)
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
    if sp.issparse(Xg):
        kern = K.lloyd_step_csr if T > 1 else KL.lloyd_step_csr_serial
        kern(Xg.data, Xg.indices, Xg.indptr, phi_x, GT, c, w, labels, mins, S, W, O)
    else:
        Xg = np.ascontiguousarray(Xg)
        if GT.dtype != Xg.dtype:  # the product runs in the data's type (BLAS needs one type)
            GT = np.ascontiguousarray(GT, dtype=Xg.dtype)
        kern = K.lloyd_step_dense if T > 1 else KL.lloyd_step_dense_serial
        with blas_one_thread():
            kern(Xg, phi_x, GT, c, w, _LLOYD_CHUNK, labels, mins, S, W, O)
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
    if T > 1:
        KL.nearest_csr(Xg.data, Xg.indices, Xg.indptr, phi_x, GT, c, T, labels, mins)
    else:
        KL.nearest_csr_serial(Xg.data, Xg.indices, Xg.indptr, phi_x, GT, c, labels, mins)
    return labels, mins


def _objective(w, mins):
    """``sum_i w_i mins_i`` (one BLAS dot)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return float(w @ mins)


def assign_and_sum(div, X, w, centres, prepared=None, *, objective=False):
    """One Lloyd pass ``(labels, mins, S, W)``: fused when the centres allow it, else
    :func:`assign` then :func:`weighted_sums`. With ``objective=True`` also
    ``sum_i w_i mins_i`` as a fifth item."""
    prepared = prepared if prepared is not None else prepare(div, X)
    if not centres.fused:
        labels, mins = assign(div, X, centres, prepared=prepared)
        S, W = weighted_sums(X, labels, centres.U.shape[0], w)
        return (labels, mins, S, W, _objective(w, mins)) if objective else (labels, mins, S, W)
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
    return (labels, mins, S, W, obj) if objective else (labels, mins, S, W)


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




# ----------------------------------------------------------------------------- blocks of rows
class Block:
    """Rows ``start .. start + len(X) - 1`` of a data set, as a fit sees them (conditioned).

    A data source (:mod:`bregclust._sources`) hands its blocks to the block passes below: an
    in-memory source has one block (the whole data set), a dask source one per chunk.
    ``prepared(div)`` computes the GEMM preparation ``(Xg, phi_x)`` once and keeps it.

    Parameters
    ----------
    X : ndarray or CSR matrix
        Validated rows (float64, C order / canonical CSR).
    w : ndarray of shape (n,), optional
        Sample weights; None for unit weights.
    start : int, default=0
        Global index of the first row.
    index : int, default=0
        Position of the block in its data source.
    prep : tuple, optional
        Its GEMM preparation, when already known.
    """

    __slots__ = ("X", "w", "start", "index", "prep", "range")

    def __init__(self, X, w=None, start=0, index=0, prep=None):
        self.X = X
        self.w = w
        self.start = int(start)
        self.index = int(index)
        self.prep = prep
        self.range = None

    def value_range(self):
        """``(min, max)`` of the stored values (NaN when one is NaN), computed once: the
        finiteness and domain checks and the conditioning's magnitude all read it."""
        if self.range is None:
            data = self.X.data if sp.issparse(self.X) else self.X
            self.range = min_max(data) if data.size else (0.0, 0.0)
        return self.range

    @property
    def n(self):
        return self.X.shape[0]

    def weights(self):
        """The weights as an array (ones for unit weights)."""
        return np.ones(self.X.shape[0]) if self.w is None else self.w

    def prepared(self, div, closed_form=False):
        """``(Xg, phi_x)`` of the block, computed on first use (``closed_form`` as in
        :func:`phi_rows`, for that first computation)."""
        if self.prep is None:
            self.prep = prepare(div, self.X, closed_form)
        return self.prep


def labels_differ(a, b):
    """Whether two label arrays differ (the kernel stops at the first difference, where
    ``np.array_equal`` compares every entry into a temporary first)."""
    if a.shape != b.shape or a.dtype != b.dtype or a.ndim != 1:
        return not np.array_equal(a, b)
    return bool(KL.labels_differ(a, b))


def label_digest(labels):
    """A 16-byte digest of a label array (chunked sources compare labels by digest)."""
    return hashlib.blake2b(np.ascontiguousarray(labels).tobytes(), digest_size=16).digest()


@dataclass
class LloydPart:
    """What a Lloyd pass returns for one block, or for a data set once blocks are combined.

    Attributes
    ----------
    S : ndarray of shape (k, d)
        Per-cluster weighted sums of the rows.
    W : ndarray of shape (k,)
        Per-cluster total weights.
    objective : float
        ``sum_i w_i d(x_i, u_label)`` (the GEMM minima).
    labels, mins : ndarray or None
        The labels and minima (kept by in-memory sources only).
    digest : dict or None
        ``{block index: label digest}`` (chunked sources compare labels by digest).
    Phi : ndarray of shape (k,) or None
        Per-cluster weighted sums of ``phi(x)`` (asked with ``extra="phi"``).
    PN : ndarray of shape (k, 2 d) or None
        Per-cluster positive and negative masses (asked with ``extra="pn"``;
        l1_subgradient).
    """

    S: np.ndarray
    W: np.ndarray
    objective: float
    labels: object = None
    mins: object = None
    digest: object = None
    Phi: object = None
    PN: object = None


def _label_extras(div, block, labels, k, w, extra):
    if extra == "phi":
        return {"Phi": np.bincount(labels, weights=w * block.prepared(div)[1], minlength=k)}
    if extra == "pn":
        Xg = block.prepared(div)[0]
        return {"PN": weighted_sums(Xg, labels, k, w)[0]}
    return {}


def _block_objective(block, div, centres, labels, w, mins, obj=None, exact=False):
    """``sum_i w_i d(x_i, u_{labels_i})`` of one pass over a block. With ``exact`` (a chunked
    source: dask, an iterator's chunks, whose reported objective is this sum with no final
    in-memory pass to mend it) dense float32 rows take the definition in float64 (``O(n d)``
    against the pass's ``O(n k d)``): their float32 GEMM minima keep only about
    ``eps32 (|phi(x)| + |c_j|)`` of each divergence, so a sum of small divergences of points
    far from the origin lost digits (2e-5 relative on three blobs). An in-memory source
    keeps the GEMM sum per pass and re-evaluates the final one (``final_objective``)."""
    X = block.X
    if exact and not sp.issparse(X) and X.dtype == np.float32 and X.shape[0]:
        return exact_objective(div, X, centres.U, labels, w)
    return _objective(w, mins) if obj is None else obj


def lloyd_block(block, div, centres, keep=False, extra=None, sums=True):
    """One Lloyd pass over a block: nearest centres and the statistics of those labels.

    Parameters
    ----------
    block : Block
    div : Divergence
    centres : PreparedCentres
    keep : bool, default=False
        Keep the labels and minima (an in-memory source); otherwise their digest.
    extra : {None, "phi", "pn"}
        Also the per-cluster sums of ``phi(x)`` or the sign masses (multi-task statistics).
    sums : bool, default=True
        Whether to form the per-cluster sums ``S`` and ``W``; without them (a final labels
        pass) ``S`` and ``W`` are None and the pass is :func:`assign_block`'s.

    Returns
    -------
    LloydPart
    """
    w = block.weights()
    if not sums:
        labels, mins = assign_block(block, div, centres)
        part = LloydPart(S=None, W=None, objective=_block_objective(block, div, centres, labels,
                                                                    w, mins, exact=not keep),
                         **_label_extras(div, block, labels, centres.U.shape[0], w, extra))
        if keep:
            part.labels, part.mins = labels, mins
        else:
            part.digest = {block.index: label_digest(labels)}
        return part
    labels, mins, S, W, obj = assign_and_sum(div, block.X, w, centres, block.prepared(div),
                                             objective=True)
    part = LloydPart(S=S, W=W, objective=_block_objective(block, div, centres, labels, w, mins,
                                                          obj, exact=not keep),
                     **_label_extras(div, block, labels, centres.U.shape[0], w, extra))
    if keep:
        part.labels, part.mins = labels, mins
    else:
        part.digest = {block.index: label_digest(labels)}
    return part


def label_block(block, div, labels, k, extra=None):
    """The statistics of given labels of a block (:class:`LloydPart` without an objective)."""
    w = block.weights()
    S, W = weighted_sums(block.X, labels, k, w)
    return LloydPart(S=S, W=W, objective=float("nan"), labels=labels,
                     **_label_extras(div, block, labels, k, w, extra))


def assign_block(block, div, centres):
    """``(labels, mins)`` of a block (the labels of :func:`lloyd_block`)."""
    if centres.fused and centres.finite and sp.issparse(block.X):
        # the fused kernel's product and argmin without its sums: the same labels and minima
        prepared = block.prepared(div)
        labels, mins = nearest_csr(prepared, centres.GT, centres.c)
        _fix_non_finite(div, block.X, centres.U, labels, mins)
        return labels, mins
    if centres.fused:
        labels, mins, _, _ = assign_and_sum(div, block.X, block.weights(), centres,
                                            block.prepared(div))
        return labels, mins
    return assign(div, block.X, centres, prepared=block.prepared(div))


def _dense_rows(X, idx):
    R = X[idx]
    return R.toarray() if sp.issparse(R) else np.array(R, dtype=np.float64)


@dataclass
class Rows:
    """Rows of a data set with their global indices and per-row values (combined by
    concatenation)."""

    idx: np.ndarray
    rows: np.ndarray
    w: np.ndarray
    key: object = None
    labels: object = None
    mins: object = None


def top_block(block, div, centres, m):
    """The ``m`` rows of a block with the largest ``w_i d(x_i, u_label)`` (ties: lower row
    first), for the empty-cluster rule."""
    labels, mins = assign_block(block, div, centres)
    w = block.weights()
    order = np.argsort(-(w * mins), kind="stable")[:m]
    return Rows(idx=block.start + order, rows=_dense_rows(block.X, order), w=w[order],
                key=-(w * mins)[order], labels=labels[order], mins=mins[order])


@dataclass
class Cost:
    """``sum_i w_i min_c d(x_i, c)`` over the finite minima and the weight at infinity."""

    cost: float
    ninf: int


def cost_block(block, div, centres):
    """:class:`Cost` of a block (k-means|| sampling)."""
    _, mins = assign(div, block.X, centres, prepared=block.prepared(div))
    w = block.weights()
    inf = ~np.isfinite(mins)
    return Cost(cost=float(np.sum(w[~inf] * mins[~inf])),
                ninf=int(np.count_nonzero(inf & (w > 0))))


def sample_block(block, div, centres, ell, cost, seed):
    """k-means|| sampling: row ``i`` kept with probability ``min(1, ell w_i d_i / cost)``
    (points at infinite divergence first, when ``cost.ninf > 0``)."""
    _, mins = assign(div, block.X, centres, prepared=block.prepared(div))
    w = block.weights()
    rng = np.random.default_rng(seed)
    if cost.ninf > 0:
        p = np.where(~np.isfinite(mins) & (w > 0), min(1.0, ell / cost.ninf), 0.0)
    elif cost.cost > 0:
        p = np.minimum(1.0, ell * w * mins / cost.cost)
    else:
        p = np.zeros(block.n)
    keep = np.flatnonzero(rng.uniform(size=block.n) < p)
    return Rows(idx=block.start + keep, rows=_dense_rows(block.X, keep), w=w[keep])


def take_block(block, idx):
    """Dense rows at global indices ``idx`` (all inside the block), with their weights."""
    local = np.asarray(idx, dtype=np.int64) - block.start
    return Rows(idx=np.asarray(idx, dtype=np.int64), rows=_dense_rows(block.X, local),
                w=block.weights()[local])


def combine(*parts):
    """Combine the results of one pass over several blocks (in block order).

    :class:`LloydPart` and :class:`Cost` fields add (dict fields merge), :class:`Rows`
    concatenate, objects with a ``merge`` method (data statistics) merge, tuples combine
    entry by entry."""
    first = parts[0]
    if len(parts) == 1 or first is None:
        return first
    if isinstance(first, tuple):
        return tuple(combine(*[p[i] for p in parts]) for i in range(len(first)))
    if hasattr(first, "merge"):
        return first.merge(*parts)
    if isinstance(first, (int, float)):
        return sum(parts[1:], first)
    if isinstance(first, Rows):
        out = {}
        for f in fields(Rows):
            vals = [getattr(p, f.name) for p in parts]
            out[f.name] = None if vals[0] is None else np.concatenate(vals)
        return Rows(**out)
    out = {}
    for f in fields(first):
        vals = [getattr(p, f.name) for p in parts]
        if vals[0] is None:
            out[f.name] = None
        elif isinstance(vals[0], dict):
            merged = {}
            for v in vals:
                merged.update(v)
            out[f.name] = merged
        elif isinstance(vals[0], np.ndarray):
            # the widest type of the parts: an empty block's bincount is int64 whatever its
            # weights, so an empty first chunk must not fix the type of the sum
            acc = vals[0].astype(np.result_type(*vals), copy=True)
            for v in vals[1:]:
                acc += v
            out[f.name] = acc
        else:
            out[f.name] = sum(vals[1:], vals[0])
    return type(first)(**out)


def farthest_by_passes(src, div, centres):
    """Rows of a chunked source as ``(x as a 1 x d array, label, w, min)`` in decreasing
    ``w min`` order (ties: lower row first), fetched lazily: each block sends its top ``m``
    rows, which contain the global top ``m``; ``m`` grows when the walk goes past them."""
    m = 16
    done = 0
    while done < src.n:
        top = src.run(top_block, div, centres, m)
        order = np.lexsort((top.idx, top.key))[:m]
        for j in order[done:]:
            yield (top.rows[j:j + 1], int(top.labels[j]), float(top.w[j]), float(top.mins[j]))
        done = min(m, src.n)
        m *= 4


# ----------------------------------------------------------------------------- the mixture pass
# The E-step of a Bregman mixture (bregclust.mixture): the Lloyd pass with a log-sum-exp per row
# instead of an argmin, and responsibility-weighted sums instead of per-label sums.
class MixtureCentres:
    """The components of a Bregman mixture as the E-step pass sees them.

    Component ``h`` has the log-density ``alpha_h - beta_h d(x, u_h) + b(x)``; ``b`` does not
    depend on the component and is left to the caller. Build it with :func:`prepare_mixture`.

    Attributes
    ----------
    U : ndarray of shape (k, d)
        The means (conditioned units, float64).
    GT : ndarray of shape (d, k) or (d, 2 k)
        ``grad phi(U)^T``; with ``bounded``, ``[G~^T | B^T]`` (see
        :mod:`bregclust._kernels.mixture`).
    c, alpha, beta : ndarray of shape (k,)
    bounded : bool
        Some means have coordinates on the boundary of the domain (a zero kl coordinate).
    exact : bool
        The GEMM form does not apply (a non-finite part that is not a boundary zero, or a
        non-differentiable generator): the pass evaluates ``d`` by the definition.
    """

    __slots__ = ("U", "GT", "c", "alpha", "beta", "bounded", "exact")

    def __init__(self, U, G, c, alpha, beta, bounded, exact):
        self.U = U
        self.GT = np.ascontiguousarray(G.T)
        self.c = np.ascontiguousarray(c, dtype=np.float64)
        self.alpha = np.ascontiguousarray(alpha, dtype=np.float64)
        self.beta = np.ascontiguousarray(beta, dtype=np.float64)
        self.bounded = bool(bounded)
        self.exact = bool(exact)

    @property
    def k(self):
        return self.c.shape[0]


def prepare_mixture(div, U, alpha, beta):
    """:class:`MixtureCentres` of validated means ``U`` (conditioned units) with the
    per-component constants ``alpha`` and precisions ``beta``.

    Means with zero coordinates under a divergence on non-negative data (kl) keep the GEMM
    form: their infinite gradient entries become a boundary indicator (see
    :mod:`bregclust._kernels.mixture`)."""
    U = np.ascontiguousarray(U, dtype=np.float64)
    pc = prepare_centres(div, U)
    G, c = pc.G, pc.c
    bounded = exact = False
    if not pc.fused:
        bad = ~np.isfinite(G)
        if (div.differentiable and div.domain == "nonnegative" and bad.any()
                and np.all(U[bad] == 0.0) and np.isfinite(pc.phi).all()):
            G = np.where(bad, 0.0, G)
            with np.errstate(invalid="ignore"):
                c = np.einsum("ij,ij->i", U, G) - pc.phi
            if np.isfinite(c).all():
                bounded = True
                G = np.vstack([G, bad.astype(np.float64)])
            else:
                exact = True
        else:
            exact = True
    return MixtureCentres(U, G, c, alpha, beta, bounded, exact)


def _soft_from_divergences(D, alpha, beta, hard):
    """``(labels, lse, resp)`` of rows from their divergences ``D`` (n x k, ``inf`` allowed),
    with the conventions of the fused kernel."""
    with np.errstate(invalid="ignore", over="ignore"):
        t = alpha[None, :] - beta[None, :] * D
    t[~(t == t)] = -np.inf
    best = t.max(axis=1) if t.shape[1] else np.zeros(t.shape[0])
    labels = np.argmax(t, axis=1)
    dead = ~(best > -np.inf)
    if hard:
        resp = np.zeros_like(t)
        resp[np.arange(t.shape[0]), labels] = 1.0
        lse = best.copy()
    else:
        with np.errstate(invalid="ignore", under="ignore"):
            e = np.exp(t - np.where(dead, 0.0, best)[:, None])
            s = e.sum(axis=1)
            resp = e / np.where(s > 0, s, 1.0)[:, None]
            lse = best + np.log(np.where(s > 0, s, 1.0))
    if dead.any():
        resp[dead] = 0.0
        labels[dead] = 0
        resp[dead, 0] = 1.0
        lse[dead] = -np.inf
    return labels.astype(np.int64), lse, resp


def _add_rows(X, rows, resp, w, phi_x, lse, S, W, Phi, accumulate):
    """The sums of rows ``rows`` (responsibilities ``resp``) added to ``S``, ``W``, ``Phi``;
    returns their part of the log-likelihood."""
    wr = w[rows]
    pos = wr > 0
    if not pos.any():
        return 0.0
    rows, wr, resp, lse_r = rows[pos], wr[pos], resp[pos], lse[pos]
    R = resp * wr[:, None]
    W += R.sum(axis=0)
    Phi += R.T @ phi_x[rows]
    if accumulate:
        Xr = X[rows]
        S += np.asarray((Xr.T @ R).T) if sp.issparse(Xr) else R.T @ Xr
    with np.errstate(invalid="ignore"):
        return float(wr @ lse_r)


def mixture_pass(div, X, prepared, mc, w, *, hard=False, accumulate=True, keep_resp=False):
    """One E-step pass over validated rows: ``(labels, lse, resp, S, W, Phi, loglik)``.

    ``resp`` is None unless ``keep_resp``; ``S`` is zeros unless ``accumulate``. The fused
    kernels (:mod:`bregclust._kernels.mixture`) run when the GEMM form applies; rows they flag
    (a non-finite divergence) and components outside the GEMM form are evaluated by the
    definition of ``d``.
    """
    Xg, phi_x = prepared
    n, d = X.shape
    k = mc.k
    if mc.exact:
        D = pairwise(div, X, mc.U, prepared)
        labels, lse, resp = _soft_from_divergences(D, mc.alpha, mc.beta, hard)
        S = np.zeros((k, d))
        W = np.zeros(k)
        Phi = np.zeros(k)
        ll = _add_rows(X, np.arange(n), resp, w, phi_x, lse, S, W, Phi, accumulate)
        return labels, lse, (resp if keep_resp else None), S, W, Phi, ll
    labels = np.empty(n, dtype=np.int64)
    lse = np.empty(n)
    R = np.empty((n if keep_resp else 0, k))
    S = np.zeros((k, d))
    W = np.zeros(k)
    Phi = np.zeros(k)
    if n == 0:
        return labels, lse, (R if keep_resp else None), S, W, Phi, 0.0
    sparse = sp.issparse(Xg)
    if not sparse:
        Xg = np.ascontiguousarray(Xg)
    GT = mc.GT if sparse or mc.GT.dtype == Xg.dtype else mc.GT.astype(Xg.dtype)
    w_all = w
    guard = _mixture_guard_rows(Xg, phi_x, mc)
    if guard.size:  # by the definition below; left out of the kernel's sums
        w = w.copy()
        w[guard] = 0.0
    # One block of rows per worker of the pool, each with its own sums, added in block order.
    workers = n_workers() if n * d > PARALLEL_MIN else 1
    step = -(-n // workers)
    shape = ((d if accumulate else 0, k) if sparse else (k, d if accumulate else 0))
    bufs = {s: (np.zeros(shape), np.zeros(k), np.zeros(k), np.zeros(1))
            for s in range(0, n, step)}
    args = (mc.c, mc.alpha, mc.beta)
    flags = (mc.bounded, hard, accumulate)

    def work(s):
        e = min(n, s + step)
        Sb, Wb, Pb, Lb = bufs[s]
        Rb = R[s:e] if keep_resp else R
        if sparse:
            KM.mixture_step_csr(Xg.data, Xg.indices, Xg.indptr[s:e + 1], phi_x[s:e], GT, *args,
                                w[s:e], *flags, labels[s:e], lse[s:e], Rb, Sb, Wb, Pb, Lb)
        else:
            KM.mixture_step_dense(Xg[s:e], phi_x[s:e], GT, *args, w[s:e], *flags, _LLOYD_CHUNK,
                                  labels[s:e], lse[s:e], Rb, Sb, Wb, Pb, Lb)

    if len(bufs) == 1:
        with blas_one_thread():
            work(0)
    else:
        run_chunks(work, bufs)
    ll = 0.0
    with np.errstate(invalid="ignore"):
        for Sb, Wb, Pb, Lb in bufs.values():
            if accumulate:
                S += Sb.T if sparse else Sb
            W += Wb
            Phi += Pb
            ll += float(Lb[0])
    bad = np.flatnonzero(labels < 0)
    if guard.size:
        bad = np.union1d(bad, guard)
    if bad.size:  # an overflow of the GEMM form, or lost digits: these rows by the definition
        D = _exact_rows(div, X, bad, mc.U)
        lab, v, resp = _soft_from_divergences(D, mc.alpha, mc.beta, hard)
        labels[bad], lse[bad] = lab, v
        if keep_resp:
            R[bad] = resp
        ll += _add_rows(X, bad, resp, w_all, phi_x, v, S, W, Phi, accumulate)
    return labels, lse, (R if keep_resp else None), S, W, Phi, ll


#: The E-step evaluates by the definition the rows whose logits ``alpha_h - beta_h d`` the
#: GEMM form may get wrong by more than this (nats): a tight component far from the origin
#: has a large ``beta_h`` times a divergence that lost its digits to cancellation. float32
#: rows are compared in float32 by design, as in :data:`PAIRWISE_DIGITS_GUARD`.
MIXTURE_LOGIT_GUARD = {np.dtype(np.float64): 2.0 ** -26, np.dtype(np.float32): 2.0 ** -10}


def _mixture_guard_rows(Xg, phi_x, mc):
    """Rows whose GEMM-form logits may be off by more than :data:`MIXTURE_LOGIT_GUARD`:
    the rounding bound of :func:`_digits_threshold` (the one :func:`pairwise` guards the
    k-means passes with) times the largest precision."""
    k = mc.k
    if Xg.shape[0] == 0 or k == 0:
        return np.empty(0, dtype=np.int64)
    G = mc.GT[:, :k].T
    dtype = Xg.dtype if Xg.dtype == np.float32 else np.dtype(np.float64)
    thr = _digits_threshold(dtype, Xg, phi_x, G, mc.c) / PAIRWISE_DIGITS_GUARD[np.dtype(dtype)]
    with np.errstate(over="ignore", invalid="ignore"):
        err = thr * float(np.max(mc.beta))
    return np.flatnonzero(~(err <= MIXTURE_LOGIT_GUARD[np.dtype(dtype)]))


@dataclass
class MixturePart:
    """What an E-step pass returns for one block, or for a data set once blocks are combined.

    Attributes
    ----------
    S : ndarray of shape (k, d)
        ``sum_i w_i r_ih x_i``.
    W : ndarray of shape (k,)
        ``sum_i w_i r_ih``.
    Phi : ndarray of shape (k,)
        ``sum_i w_i r_ih phi(x_i)`` (the dispersion step needs it).
    loglik : float
        ``sum_i w_i log sum_h exp(alpha_h - beta_h d(x_i, u_h))`` (without the base measure).
    labels, lse, resp : ndarray or None
        Per-row labels, log-sum-exps and responsibilities (kept by in-memory passes only).
    """

    S: np.ndarray
    W: np.ndarray
    Phi: np.ndarray
    loglik: float
    labels: object = None
    lse: object = None
    resp: object = None


def mixture_block(block, div, mc, hard=False, keep=0, accumulate=True):
    """One E-step pass over a block (:func:`mixture_pass`).

    Parameters
    ----------
    block : Block
    div : Divergence
    mc : MixtureCentres
    hard : bool, default=False
        One-hot responsibilities (the nearest component by the logits): the statistics of a
        hard partition.
    keep : {0, 1, 2}, default=0
        Keep nothing (a chunked source), the labels and log-sum-exps, or also the
        responsibilities.
    accumulate : bool, default=True
        Compute ``S`` (the M-step's weighted sums).

    Returns
    -------
    MixturePart
    """
    labels, lse, resp, S, W, Phi, ll = mixture_pass(
        div, block.X, block.prepared(div), mc, block.weights(), hard=hard,
        accumulate=accumulate, keep_resp=keep >= 2)
    part = MixturePart(S=S, W=W, Phi=Phi, loglik=ll)
    if keep:
        part.labels, part.lse, part.resp = labels, lse, resp
    return part
