"""How the registry's array methods run: chunking, the thread pool, BLAS limits, the fused pass.

A :class:`~bregclust.divergences.Divergence` record describes *what* a divergence is (its
generator, GEMM form, centroids); this module decides *how* the ``n x k`` work runs:

* :func:`pairwise`, :func:`assign`, :func:`assign_and_sum` and :func:`weighted_sums` implement the
  record's public methods of the same names;
* :class:`PreparedCentres` holds the GEMM parts of a set of centres so a loop that reuses the same
  centres (or already has them) does not recompute ``grad phi(U)`` and ``phi(U)``;
* chunks run on a small thread pool (one worker per core, ``BREGCLUST_NUM_THREADS`` overrides)
  with every BLAS library limited to one thread, as scikit-learn's k-means does: nested BLAS
  threads would oversubscribe the cores.
"""

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numba
import numpy as np
import scipy.sparse as sp
from threadpoolctl import ThreadpoolController

from . import _kernels as K
from ._kernels import lloyd as KL
from ._validation import maybe_non_finite

__all__ = ["PreparedCentres", "pairwise", "assign", "assign_and_sum", "weighted_sums",
           "serial", "prepare_data"]

PARALLEL_MIN = 1 << 18  # elements below which elementwise kernels run serially
_CHUNK_ELEMENTS = 1 << 17  # rows per chunk = this / k  (1 MB of float64 per block)
_LLOYD_CHUNK = 256  # rows per BLAS call in the fused Lloyd pass (as scikit-learn's k-means)

_POOL = None
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

    __slots__ = ("U", "G", "GT", "c", "phi", "finite", "fused")

    def __init__(self, U, G, c, phi, fused):
        self.U = U
        self.G = G
        self.c = c
        self.phi = phi
        self.finite = bool(np.isfinite(G).all() and np.isfinite(c).all())
        self.GT = np.ascontiguousarray(G.T)  # measured: BLAS is faster with a contiguous operand
        self.fused = bool(fused and self.finite)


def n_workers():
    """Worker threads: 1 inside :func:`serial`, else ``BREGCLUST_NUM_THREADS`` or the number of
    cores (at most 8)."""
    if getattr(_LOCAL, "serial", False):
        return 1
    env = os.environ.get("BREGCLUST_NUM_THREADS")
    if env:
        return max(1, int(env))
    return max(1, min(os.cpu_count() or 1, 8))


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


def blas_one_thread():
    """Context limiting every BLAS library to one thread: our threads (the pool, the numba
    kernels) each call BLAS, and nested BLAS threads would oversubscribe the cores."""
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1, user_api="blas")


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


def chunk_rows(k):
    """Rows per chunk for ``k`` centres (about 1 MB of float64 per block)."""
    return max(256, _CHUNK_ELEMENTS // max(k, 1))


def _reference(div, X, phi_x, w=None):
    """A point ``m`` to subtract from data and centres before the GEMM form, or ``None``.

    Only for translation-invariant divergences (``d(x - m, u - m) = d(x, u)``) on dense data.
    The GEMM form ``phi(x) + phi(u) - 2 <x, A u>`` loses about ``log10(phi(m) / s2)`` digits,
    ``m`` the (``w``-weighted) mean row and ``s2 = mean phi(x) - phi(m)`` the mean squared
    spread about it (``phi_x``: phi's row values, which the GEMM form needs anyway); the data
    are centred once that exceeds 4 digits, so results on data near the origin stay bit-for-bit
    those of the plain GEMM form. Overflowing magnitudes are not centred (a huge mean would
    wipe out the small rows); the exact fallback handles them.
    """
    if not div.translation_invariant or sp.issparse(X) or X.shape[0] == 0:
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        if w is None:
            m = X.mean(axis=0)
            mean_phi = float(phi_x.mean())
        else:
            W = float(w.sum())
            m = (w @ X) / W
            mean_phi = float(w @ phi_x) / W
        if not np.isfinite(m).all():
            return None
        pm = float(div._phi_rows(m[None, :])[0])
        s2 = mean_phi - pm
    if not (np.isfinite(pm) and np.isfinite(s2)):
        return None
    return m if pm > 1e4 * max(s2, 0.0) else None


def prepare_data(div, X):
    """What a pass derives from ``X`` alone: ``(Xc, prepared, m)``.

    ``m`` is the offset of :func:`_reference` (or ``None``), ``Xc = X - m`` and ``prepared``
    is :meth:`Divergence.prepare` of ``Xc``. A caller that passes over the same block again
    (a dask chunk kept in worker memory) can keep it and hand it to :func:`assign_and_sum`.
    """
    prepared = div._prepare(X)
    m = _reference(div, X, prepared[1])
    if m is None:
        return X, prepared, None
    X = X - m
    return X, div._prepare(X), m


def _centred(div, X, U, prepared, data=None):
    """``(X, U, prepared, m)``, centred by :func:`_reference` when ``prepared`` is not given
    (``data``: :func:`prepare_data` of ``X``, when already computed)."""
    if prepared is not None:
        return X, U, prepared, None
    Xc, prepared, m = data if data is not None else prepare_data(div, X)
    return Xc, (U if m is None else U - m), prepared, m


def _exact_rows(div, X, rows, U):
    """The definition of ``d`` for the rows ``rows`` of ``X`` against every centre."""
    Xr = X[rows]
    Xr = Xr.toarray() if sp.issparse(Xr) else np.ascontiguousarray(Xr)
    out = np.empty((Xr.shape[0], U.shape[0]))
    div._ready().generic_pairwise(div, Xr, U, out)
    return out


def pairwise(div, X, U, prepared=None):
    """``D[i, j] = d(x_i, u_j)`` by the GEMM form; boundary centres by the generic kernel.

    Entries of the GEMM form that are not finite (an overflow, or ``inf - inf``) are never
    clamped to 0: their rows are evaluated by the definition instead.
    """
    X, U, prepared, _ = _centred(div, X, U, prepared)
    Xg, phi_x = prepared
    G, c = div._ready().gemm_parts(div, U)
    bad = ~(np.isfinite(G).all(axis=1) & np.isfinite(c))
    if bad.any():
        G = G.copy()
        c = c.copy()
        G[bad] = 0.0
        c[bad] = 0.0
    D = np.asarray(Xg @ G.T)
    if not D.flags.c_contiguous or not D.flags.writeable:
        D = np.ascontiguousarray(D)
    K.fused_pairwise(D, phi_x, c)
    rows = np.flatnonzero(~np.isfinite(D[:, ~bad]).all(axis=1)) if (~bad).any() else ()
    if len(rows):
        D[rows] = _exact_rows(div, X, rows, U)
    if bad.any():
        D[:, bad] = _exact_rows(div, X, slice(None), U[bad])
    return D


def assign(div, X, U, prepared=None, step=None, centres=None):
    """Nearest centre of every row: ``(labels, mins)``, chunked over rows on the pool.

    Rows whose GEMM minimum is not finite (overflow) are assigned by the definition of ``d``.
    """
    if centres is None:
        X, U, prepared, _ = _centred(div, X, U, prepared)
    Xg, phi_x = prepared if prepared is not None else div._prepare(X)
    pc = centres if centres is not None else div._prepare_centres(U)
    U = pc.U
    n = Xg.shape[0]
    k = U.shape[0]
    labels = np.empty(n, dtype=np.int64)
    mins = np.empty(n)
    step = step or chunk_rows(k)
    if not pc.finite:
        for s in range(0, n, step):
            D = pairwise(div, X[s:s + step], U)
            labels[s:s + step] = np.argmin(D, axis=1)
            mins[s:s + step] = D[np.arange(D.shape[0]), labels[s:s + step]]
        return labels, mins
    GT, c = pc.GT, pc.c

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
    ``(labels, mins, S, W)`` in one read of the data."""
    Xg, phi_x = prepared
    n, d = Xg.shape
    k = GT.shape[1]
    T = min(n_workers(), numba.get_num_threads()) if n * d > PARALLEL_MIN else 1
    T = max(1, min(T, n))
    labels = np.empty(n, dtype=np.int64)
    mins = np.empty(n)
    S = np.zeros((T, k, d))
    W = np.zeros((T, k))
    if sp.issparse(Xg):
        kern = K.lloyd_step_csr if T > 1 else KL.lloyd_step_csr_serial
        kern(Xg.data, Xg.indices, Xg.indptr, phi_x, GT, c, w, labels, mins, S, W)
    else:
        Xg = np.ascontiguousarray(Xg, dtype=np.float64)
        kern = K.lloyd_step_dense if T > 1 else KL.lloyd_step_dense_serial
        with blas_one_thread():
            kern(Xg, phi_x, GT, c, w, _LLOYD_CHUNK, labels, mins, S, W)
    return labels, mins, S.sum(axis=0) if T > 1 else S[0], W.sum(axis=0)


def assign_and_sum(div, X, U, w, prepared=None, centres=None, data=None):
    """One Lloyd pass ``(labels, mins, S, W)``: fused when the centres allow it, else
    :func:`assign` then :func:`weighted_sums` (``data``: :func:`prepare_data` of ``X``)."""
    m = None
    if centres is None:
        Xc, U, prepared, m = _centred(div, X, U, prepared, data)
    if m is not None:  # far from the origin: assign on centred data, sum the original rows
        labels, mins = assign(div, Xc, U, prepared=prepared)
        S, W = weighted_sums(X, labels, U.shape[0], w)
        return labels, mins, S, W
    prepared = prepared if prepared is not None else div._prepare(X)
    pc = centres if centres is not None else div._prepare_centres(U)
    if not pc.fused:
        labels, mins = assign(div, X, pc.U, prepared=prepared, centres=pc)
        S, W = weighted_sums(X, labels, pc.U.shape[0], w)
        return labels, mins, S, W
    labels, mins, S, W = fused_pass(prepared, pc.GT, pc.c, w)
    _fix_non_finite(div, X, pc.U, labels, mins, w, S, W)
    return labels, mins, S, W


def weighted_sums(X, labels, k, w):
    """``(S, W)``: per-cluster weighted sums of rows (k x d) and total weights (k,)."""
    n = X.shape[0]
    labels = np.asarray(labels, dtype=np.int64)
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


# ----------------------------------------------------------------------------- array backends
# Inputs that do not live in memory (dask arrays) are handled by an optional backend module that
# registers itself here when the package is imported (bregclust._dask, from the package
# __init__). The estimators ask this registry instead of importing the backend, so the backend
# can build on the estimators' engines (Lloyd steps, the MBC loop) without an import cycle.
_ARRAY_BACKENDS = []


def register_array_backend(accepts, backend):
    """Register ``backend`` for the inputs where ``accepts(X)`` is true.

    Parameters
    ----------
    accepts : callable
        ``accepts(X) -> bool``; must not import anything heavy for ordinary arrays.
    backend : object
        Namespace with the entry points the estimators call: ``kmeans_fit``,
        ``kmeans_predict``, ``kmeans_transform``, ``kmeans_score``, ``mbc_fit``,
        ``mbc_predict``, ``mbc_transform``.
    """
    _ARRAY_BACKENDS.append((accepts, backend))


def array_backend(X):
    """The registered backend for ``X``, or None for in-memory arrays and sparse matrices.

    Parameters
    ----------
    X : object
        An input as given to an estimator.

    Returns
    -------
    backend : object or None
    """
    for accepts, backend in _ARRAY_BACKENDS:
        if accepts(X):
            return backend
    return None
