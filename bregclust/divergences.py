"""The divergence registry: one record per Bregman divergence, looked up by name.

Every algorithm in bregclust asks this module for a :class:`Divergence` by name
(``get_divergence("kl")``) and uses only its vectorised methods, so a generator registered with
:func:`register_divergence` works in every algorithm without further code.

Built-ins (MATH.md 1)

============== ============================ ================ ======================================
name           phi(x)                       domain x / y     d(x, y)
============== ============================ ================ ======================================
sqeuclidean    sum x^2                      R / R            sum (x - y)^2
mahalanobis    x^T A x  (A SPD)             R / R            (x - y)^T A (x - y)
kl             sum x log x - x              x >= 0 / y > 0   sum x log(x / y) - x + y
itakura_saito  -sum log x                   x > 0 / y > 0    sum x / y - log(x / y) - 1
l1_subgradient sum abs(x)                   R / R            sum (0 if x y > 0 else 2 abs(x))
============== ============================ ================ ======================================
"""

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numba
import numpy as np
import scipy.linalg
import scipy.sparse as sp
from numba import njit
from numba.core.registry import CPUDispatcher
from threadpoolctl import ThreadpoolController

from . import _kernels as K
from ._validation import DomainError

__all__ = [
    "Divergence",
    "get_divergence",
    "list_divergences",
    "register_divergence",
    "unregister_divergence",
    "divergence_table",
]

_DOMAINS = ("real", "nonnegative", "positive")
_PARALLEL_MIN = 1 << 18  # elements below which elementwise kernels run serially
_CHUNK_ELEMENTS = 1 << 17  # rows per chunk = this / k  (1 MB of float64 per block)
_LLOYD_CHUNK = 256  # rows per BLAS call in the fused Lloyd pass (as scikit-learn's k-means)


class _SeparableKernels:
    """Vectorised kernels of one scalar generator, compiled once (lazily) per registration."""

    def __init__(self, phi, dphi, dphi_inv, domain):
        self.phi, self.dphi, self.dphi_inv = phi, dphi, dphi_inv
        self.domain = domain
        self._built = {}
        self._lock = threading.Lock()

    def get(self, key):
        fn = self._built.get(key)
        if fn is None:
            with self._lock:
                fn = self._built.get(key)
                if fn is None:
                    maker = {
                        "dphi_map": lambda: K.make_map(self.dphi),
                        "dphi_map_par": lambda: K.make_map(self.dphi, parallel=True),
                        "inv_map": lambda: K.make_map(self.dphi_inv),
                        "rowsum": lambda: K.make_rowsum(self.phi),
                        "rowsum_par": lambda: K.make_rowsum(self.phi, parallel=True),
                        "rowsum_csr": lambda: K.make_rowsum_csr(self.phi, parallel=True),
                        "generic": lambda: K.make_generic_pairwise(self.phi, self.dphi),
                    }[key]
                    fn = self._built[key] = maker()
        return fn


@dataclass(frozen=True, eq=False)
class Divergence:
    """A Bregman divergence ``d(x, y) = phi(x) - phi(y) - <x - y, grad phi(y)>``.

    Instances come from :func:`get_divergence`; do not build them directly. The scalar
    generator functions ``phi``, ``dphi`` and ``dphi_inv`` are numba-compiled (separable
    generators only; ``None`` for Mahalanobis). All array methods expect validated float64
    input: dense ``ndarray`` or CSR for the data ``X``, dense arrays for centres ``U``.

    Attributes
    ----------
    name : str
        Canonical name.
    aliases : tuple of str
    domain : {"real", "nonnegative", "positive"}
        Domain of the first argument ``x``; the second argument (a centre) must lie in the
        interior (``kl`` accepts ``x >= 0`` but needs ``y > 0``).
    separable, symmetric, differentiable : bool
    params : tuple of (str, object)
        Bound parameters (Mahalanobis' read-only matrix ``A``).
    formula : str
        Human-readable ``d(x, y)``.
    """

    name: str
    aliases: tuple = ()
    domain: str = "real"
    separable: bool = True
    symmetric: bool = False
    differentiable: bool = True
    phi: object = field(default=None, repr=False)
    dphi: object = field(default=None, repr=False)
    dphi_inv: object = field(default=None, repr=False)
    params: tuple = field(default=(), repr=False)
    formula: str = ""
    builtin: bool = False
    phi0_zero: bool = False
    _kind: str = field(default="separable", repr=False)
    _kernels: object = field(default=None, repr=False)

    # ------------------------------------------------------------------ pickling / params
    def __reduce__(self):
        return (_restore_divergence, (self.name, dict(self.params)))

    def param(self, key):
        """Value of a bound parameter (e.g. ``param("A")``)."""
        return dict(self.params)[key]

    @property
    def right_domain(self):
        """Domain of the second argument (centres): the interior of :attr:`domain`."""
        return "positive" if self.domain in ("nonnegative", "positive") else "real"

    # ------------------------------------------------------------------ domain checks
    def check_domain(self, X, *, name="X", side="left"):
        """Raise :class:`DomainError` if ``X`` leaves the domain of this divergence.

        ``side="left"`` checks data points (first argument), ``side="right"`` centres (second
        argument, strict interior).
        """
        dom = self.domain if side == "left" else self.right_domain
        if dom == "real":
            return
        strict = dom == "positive"
        if sp.issparse(X):
            data = X.data
            bad_stored = (data <= 0) if strict else (data < 0)
            if bad_stored.any():
                coo = X.tocoo()
                bad = (coo.data <= 0) if strict else (coo.data < 0)
                i = int(np.argmax(bad))
                r, c, v = int(coo.row[i]), int(coo.col[i]), float(coo.data[i])
                self._raise_domain(name, dom, r, c, v, side)
            if strict and X.nnz < X.shape[0] * X.shape[1]:
                r, c = _first_implicit_zero(X)
                self._raise_domain(name, dom, r, c, 0.0, side, implicit=True)
            return
        bad = (X <= 0) if strict else (X < 0)
        if bad.any():
            r, c = np.unravel_index(int(np.argmax(bad)), bad.shape)
            self._raise_domain(name, dom, int(r), int(c), float(X[r, c]), side)

    def _raise_domain(self, name, dom, r, c, v, side, implicit=False):
        need = "positive" if dom == "positive" else "non-negative"
        what = "centres" if side == "right" else "data"
        where = " (an implicit zero of the sparse matrix)" if implicit else ""
        if self.name == "itakura_saito" or dom == "positive" and side == "left":
            fix = ("Add a small positive offset, or use 'kl' if the data are counts with "
                   "zeros.")
        elif side == "right":
            fix = "Use smoothing (e.g. smoothing=1.0) so centres stay inside the domain."
        else:
            fix = "Shift or rescale the data, or use a divergence defined on R such as 'sqeuclidean'."
        lead = "Negative values in data: " if v < 0 else ""
        raise DomainError(
            f"{lead}{self.name} needs {need} {what}; {name} has {v:g} at row {r}, column {c}"
            f"{where}. {fix}"
        )

    # ------------------------------------------------------------------ generator pieces
    def phi_rows(self, X):
        """``phi(x_i)`` for every row (dense or CSR)."""
        n, d = X.shape
        if self._kind == "mahalanobis":
            A = self.param("A")
            out = np.empty(n)
            for s in range(0, n, 4096):
                Xc = X[s:s + 4096]
                XA = np.asarray(Xc @ A)
                out[s:s + 4096] = (
                    np.asarray(Xc.multiply(XA).sum(axis=1)).ravel() if sp.issparse(Xc)
                    else np.einsum("ij,ij->i", Xc, XA)
                )
            return out
        out = np.empty(n)
        if sp.issparse(X):
            self._kernels.get("rowsum_csr")(X.data, X.indptr, d, out)
        else:
            # Parallel launches cost more than they save on small arrays (centres).
            key = "rowsum_par" if n * d > _PARALLEL_MIN else "rowsum"
            self._kernels.get(key)(np.ascontiguousarray(X), out)
        return out

    def grad(self, U):
        """``grad phi`` of each row of a dense array."""
        U = np.asarray(U, dtype=np.float64)
        if self._kind == "mahalanobis":
            return 2.0 * (U @ self.param("A"))
        self._need_differentiable("grad")
        U2 = np.ascontiguousarray(np.atleast_2d(U))
        out = np.empty_like(U2)
        self._kernels.get("dphi_map_par" if U2.size > _PARALLEL_MIN else "dphi_map")(U2, out)
        return out.reshape(U.shape)

    def grad_inv(self, T):
        """Inverse of ``grad phi`` for each row of a dense array."""
        T = np.asarray(T, dtype=np.float64)
        if self._kind == "mahalanobis":
            return 0.5 * scipy.linalg.cho_solve(_cho_factor(self), T.T).T
        self._need_differentiable("grad_inv")
        T2 = np.ascontiguousarray(np.atleast_2d(T))
        out = np.empty_like(T2)
        self._kernels.get("inv_map")(T2, out)
        return out.reshape(T.shape)

    def _need_differentiable(self, what):
        if not self.differentiable:
            raise ValueError(
                f"{self.name} is not differentiable, so {what} is undefined; "
                "use a differentiable divergence such as 'sqeuclidean' or 'kl'."
            )

    # ------------------------------------------------------------------ GEMM form
    def prepare(self, X):
        """Per-data quantities reused across assignment steps: ``(Xg, phi_x)``.

        ``D = phi_x 1^T + 1 c^T - Xg G^T``. For l1_subgradient ``Xg = [X+, X-]`` and
        ``phi_x = 2 ||x||_1``.
        """
        if self._kind == "l1":
            if sp.issparse(X):
                Xp = X.maximum(0)
                Xm = (-X).maximum(0)
                Xg = sp.hstack([Xp, Xm], format="csr")
                phi_x = 2.0 * np.asarray(abs(X).sum(axis=1)).ravel()
            else:
                Xg = np.hstack([np.maximum(X, 0), np.maximum(-X, 0)])
                phi_x = 2.0 * np.abs(X).sum(axis=1)
            return Xg, phi_x
        return X, self.phi_rows(X)

    def gemm_parts(self, U):
        """``(G, c)`` with ``D = phi_x 1^T + 1 c^T - Xg G^T`` (see :meth:`prepare`)."""
        U = np.ascontiguousarray(U, dtype=np.float64)
        if self._kind == "l1":
            G = 2.0 * np.hstack([(U > 0), (U < 0)]).astype(np.float64)
            return G, np.zeros(U.shape[0])
        G = self.grad(U)
        with np.errstate(invalid="ignore"):
            c = np.einsum("ij,ij->i", U, G) - self.phi_rows(U)
        return G, c

    def _chunk_rows(self, k):
        return max(256, _CHUNK_ELEMENTS // max(k, 1))

    def pairwise(self, X, U, *, prepared=None):
        """The matrix ``D[i, j] = d(x_i, u_j)``, shape ``(n, k)``, by the GEMM form.

        Centres on the boundary of the domain (e.g. a zero coordinate with ``kl``) make the
        GEMM form undefined; those columns fall back to the exact generic kernel, which
        returns ``+inf`` where the divergence is infinite.
        """
        Xg, phi_x = prepared if prepared is not None else self.prepare(X)
        U = np.ascontiguousarray(U, dtype=np.float64)
        G, c = self.gemm_parts(U)
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
        if bad.any():
            D[:, bad] = self.generic_pairwise(X, U[bad])
        return D

    def assign(self, X, U, *, prepared=None, chunk_rows=None):
        """Nearest centre of every row: ``(labels, min divergences)``, chunked over rows.

        Memory is ``O(chunk x k)`` per worker: the GEMM block of one chunk plus two vectors.
        Chunks run on a small thread pool (one per core) with BLAS limited to one thread
        each, as scikit-learn's k-means does; the numba kernel releases the GIL.
        """
        Xg, phi_x = prepared if prepared is not None else self.prepare(X)
        U = np.ascontiguousarray(U, dtype=np.float64)
        n = Xg.shape[0]
        k = U.shape[0]
        G, c = self.gemm_parts(U)
        labels = np.empty(n, dtype=np.int64)
        mins = np.empty(n)
        step = chunk_rows or self._chunk_rows(k)
        if not (np.isfinite(G).all() and np.isfinite(c).all()):
            for s in range(0, n, step):
                D = self.pairwise(X[s:s + step], U)
                labels[s:s + step] = np.argmin(D, axis=1)
                mins[s:s + step] = D[np.arange(D.shape[0]), labels[s:s + step]]
            return labels, mins
        GT = np.ascontiguousarray(G.T)  # measured: BLAS is faster with a contiguous operand

        def work(s):
            e = min(n, s + step)
            P = np.ascontiguousarray(Xg[s:e] @ GT)
            K.fused_argmin(P, phi_x[s:e], c, labels[s:e], mins[s:e])

        _run_chunks(work, range(0, n, step))
        return labels, mins

    def assign_and_sum(self, X, U, sample_weight=None, *, prepared=None):
        """One Lloyd pass: ``(labels, mins, S, W)`` - :meth:`assign` and :meth:`weighted_sums`
        for those labels, computed in a single read of ``X`` when the GEMM form applies.

        The fused kernels (``_kernels.lloyd_step_dense``/``lloyd_step_csr``) give the same
        labels and minima as :meth:`assign`; l1_subgradient and centres on the domain boundary
        take the two-pass route.
        """
        Xg, phi_x = prepared if prepared is not None else self.prepare(X)
        U = np.ascontiguousarray(U, dtype=np.float64)
        n = X.shape[0]
        k = U.shape[0]
        w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        G, c = self.gemm_parts(U)
        if self._kind == "l1" or not (np.isfinite(G).all() and np.isfinite(c).all()):
            labels, mins = self.assign(X, U, prepared=prepared)
            S, W = self.weighted_sums(X, labels, k, w)
            return labels, mins, S, W
        return self._fused_pass((Xg, phi_x), np.ascontiguousarray(G.T), c, w)

    @staticmethod
    def _fused_pass(prepared, GT, c, w):
        """The fused kernels on finite GEMM parts ``GT = G^T`` (d x k, C order) and ``c``."""
        Xg, phi_x = prepared
        n, d = Xg.shape
        k = GT.shape[1]
        T = min(_n_workers(), numba.get_num_threads()) if n * d > _PARALLEL_MIN else 1
        T = max(1, min(T, n))
        labels = np.empty(n, dtype=np.int64)
        mins = np.empty(n)
        S = np.zeros((T, k, d))
        W = np.zeros((T, k))
        if sp.issparse(Xg):
            K.lloyd_step_csr(Xg.data, Xg.indices, Xg.indptr, phi_x, GT, c, w, labels, mins, S, W)
        else:
            Xg = np.ascontiguousarray(Xg, dtype=np.float64)
            with _blas_one_thread():
                K.lloyd_step_dense(Xg, phi_x, GT, c, w, _LLOYD_CHUNK, labels, mins, S, W)
        return labels, mins, S.sum(axis=0) if T > 1 else S[0], W.sum(axis=0)

    # ------------------------------------------------------------------ slow, obvious versions
    def generic_pairwise(self, X, U):
        """The definition, coordinate by coordinate (the oracle for :meth:`pairwise`)."""
        Xd = X.toarray() if sp.issparse(X) else np.ascontiguousarray(X, dtype=np.float64)
        U = np.ascontiguousarray(U, dtype=np.float64)
        out = np.empty((Xd.shape[0], U.shape[0]))
        if self._kind == "mahalanobis":
            A = self.param("A")
            for j in range(U.shape[0]):
                diff = Xd - U[j]
                out[:, j] = np.einsum("ij,jk,ik->i", diff, A, diff)
            return out
        if self._kind == "l1":
            K.l1_pairwise_exact(Xd, U, out)
            return out
        self._kernels.get("generic")(Xd, U, out)
        return out

    def divergence(self, x, y):
        """``d(x, y)`` for two 1-D vectors, by the definition."""
        x = np.asarray(x, dtype=np.float64).reshape(1, -1)
        y = np.asarray(y, dtype=np.float64).reshape(1, -1)
        if x.shape != y.shape:
            raise ValueError(f"x and y must have the same length, got {x.shape[1]} and {y.shape[1]}.")
        return float(self.generic_pairwise(x, y)[0, 0])

    __call__ = divergence

    # ------------------------------------------------------------------ centroids
    @staticmethod
    def _indicator(labels, k, sample_weight):
        n = labels.shape[0]
        w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        M = sp.csr_matrix((w, (labels, np.arange(n))), shape=(k, n))
        return M, np.asarray(M.sum(axis=1)).ravel()

    def weighted_sums(self, X, labels, k, sample_weight=None):
        """``(S, W)``: per-cluster weighted sums of rows (k x d) and total weights (k,)."""
        n = X.shape[0]
        w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        labels = np.asarray(labels, dtype=np.int64)
        # One block of rows per worker, each with its own (k x d) buffer, summed afterwards.
        workers = _n_workers() if n * X.shape[1] > _PARALLEL_MIN else 1
        step = -(-n // workers)
        bufs = {s: (np.zeros((k, X.shape[1])), np.zeros(k)) for s in range(0, n, step)}

        def work(s):
            e = min(n, s + step)
            S, W = bufs[s]
            if sp.issparse(X):
                K.weighted_sums_csr(X.data, X.indices, X.indptr[s:e + 1], labels[s:e], w[s:e],
                                    S, W)
            else:
                K.weighted_sums_dense(X[s:e], labels[s:e], w[s:e], S, W)

        _run_chunks(work, bufs)
        S, W = bufs.pop(0)
        for S2, W2 in bufs.values():
            S += S2
            W += W2
        return S, W

    def right_centroid(self, X, labels, k, sample_weight=None):
        """``argmin_c sum_i w_i d(x_i, c)`` per cluster: the weighted mean (any Bregman
        divergence; Banerjee et al. 2005). For l1_subgradient the mean is optimal too (its
        sign in each coordinate is the side holding more absolute mass). Empty clusters get
        NaN rows. Returns ``(centres, weights)``."""
        S, W = self.weighted_sums(X, labels, k, sample_weight)
        with np.errstate(invalid="ignore", divide="ignore"):
            return S / W[:, None], W

    def left_centroid(self, X, labels, k, sample_weight=None):
        """``argmin_c sum_i w_i d(c, x_i)`` per cluster: ``grad_inv`` of the weighted mean of
        ``grad phi(x_i)``. Returns ``(centres, weights)``; empty clusters get NaN rows."""
        self._need_differentiable("the left-type centroid")
        M, W = self._indicator(labels, k, sample_weight)
        S = np.zeros((k, X.shape[1]))
        for s in range(0, X.shape[0], 4096):
            Xc = X[s:s + 4096]
            Xc = Xc.toarray() if sp.issparse(Xc) else Xc
            S += M[:, s:s + 4096] @ self.grad(Xc)
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.grad_inv(S / W[:, None]), W


_POOL = None
_CONTROLLER = None


def _run_chunks(work, starts):
    """Run ``work(start)`` for every chunk start on a thread pool, BLAS single-threaded.

    Oversubscription (BLAS threads x workers) made the GEMM several times slower on the 2-core
    machine (benchmarks/assign_speed.py), hence one BLAS thread per worker.
    """
    global _POOL
    starts = list(starts)
    workers = _n_workers()
    if len(starts) <= 1 or workers <= 1:
        for s in starts:
            work(s)
        return
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bregclust")
    with _blas_one_thread():
        for f in [_POOL.submit(work, s) for s in starts]:
            f.result()


def _blas_one_thread():
    """Context limiting every BLAS library to one thread: our threads (the pool above, the
    numba kernels) each call BLAS, and nested BLAS threads would oversubscribe the cores."""
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1, user_api="blas")


def _n_workers():
    env = os.environ.get("BREGCLUST_NUM_THREADS")
    if env:
        return max(1, int(env))
    return max(1, min(os.cpu_count() or 1, 8))


def _first_implicit_zero(X):
    n, d = X.shape
    counts = np.diff(X.indptr)
    r = int(np.argmax(counts < d))
    cols = set(X.indices[X.indptr[r]:X.indptr[r + 1]].tolist())
    c = next(j for j in range(d) if j not in cols)
    return r, c


_CHO_CACHE = {}


def _cho_factor(div):
    key = id(div)
    hit = _CHO_CACHE.get(key)
    if hit is None or hit[0] is not div:
        hit = (div, scipy.linalg.cho_factor(div.param("A")))
        _CHO_CACHE.clear()
        _CHO_CACHE[key] = hit
    return hit[1]


# ---------------------------------------------------------------------------- the registry
_REGISTRY = {}
_ALIASES = {}
_PARAM_NAMES = {"mahalanobis": ("A",)}


def _canonical(name):
    return str(name).strip().lower().replace("-", "_").replace(" ", "_")


def _add(div, overwrite=False):
    keys = (div.name,) + tuple(div.aliases)
    for key in keys:
        owner = _ALIASES.get(key)
        if owner is not None and owner != div.name and not overwrite:
            raise ValueError(
                f"the name {key!r} is already used by the divergence {owner!r}; choose another "
                "name or pass overwrite=True."
            )
    if div.name in _REGISTRY and not overwrite:
        raise ValueError(
            f"a divergence named {div.name!r} is already registered; pass overwrite=True to "
            "replace it."
        )
    if div.name in _REGISTRY:
        old = _REGISTRY[div.name]
        if old.builtin:
            raise ValueError(f"the built-in divergence {div.name!r} cannot be overwritten.")
        for a in old.aliases:
            _ALIASES.pop(a, None)
    _REGISTRY[div.name] = div
    for key in keys:
        _ALIASES[key] = div.name


def list_divergences(*, aliases=False):
    """Names of the registered divergences (with their aliases when ``aliases=True``)."""
    if aliases:
        return {name: tuple(d.aliases) for name, d in _REGISTRY.items()}
    return list(_REGISTRY)


def get_divergence(divergence, **params):
    """Look a divergence up by name (or pass a :class:`Divergence` through).

    Parameters
    ----------
    divergence : str or Divergence
        A registered name or alias (case-insensitive), e.g. ``"kl"``, ``"is"``.
    **params
        Parameters of the divergence, matched by keyword: ``A`` for ``"mahalanobis"`` (a
        symmetric positive definite ``d x d`` matrix).

    Returns
    -------
    Divergence

    Raises
    ------
    ValueError
        Unknown name (the message lists the known ones) or an invalid parameter value.
    TypeError
        Unknown parameter name, or a missing required one.

    Examples
    --------
    >>> from bregclust import get_divergence
    >>> d = get_divergence("kl")
    >>> round(d.divergence([1.0, 2.0], [2.0, 1.0]), 6)
    0.693147
    """
    if isinstance(divergence, Divergence):
        if params:
            return get_divergence(divergence.name, **params)
        return divergence
    if not isinstance(divergence, str):
        raise TypeError(
            f"divergence must be a name (str) or a Divergence, got {type(divergence).__name__}."
        )
    key = _canonical(divergence)
    name = _ALIASES.get(key)
    if name is None:
        known = ", ".join(sorted(_REGISTRY))
        raise ValueError(
            f"unknown divergence {divergence!r}; known divergences: {known} "
            "(aliases via list_divergences(aliases=True)). Register your own with "
            "register_divergence()."
        )
    base = _REGISTRY[name]
    accepted = _PARAM_NAMES.get(name, ())
    unknown = set(params) - set(accepted)
    if unknown:
        raise TypeError(
            f"{name} got unexpected parameter(s) {sorted(unknown)}; "
            f"it accepts {list(accepted) or 'no parameters'}."
        )
    if name == "mahalanobis":
        if "A" not in params or params["A"] is None:
            raise TypeError(
                "mahalanobis needs the parameter A, a symmetric positive definite matrix: "
                "get_divergence('mahalanobis', A=A) or divergence_params={'A': A}."
            )
        return _bind_mahalanobis(base, params["A"])
    return base


def _bind_mahalanobis(base, A):
    A = np.array(A, dtype=np.float64, copy=True)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"mahalanobis A must be a square matrix, got shape {A.shape}.")
    if not np.isfinite(A).all():
        raise ValueError("mahalanobis A contains NaN or infinity.")
    if not np.allclose(A, A.T, rtol=1e-10, atol=1e-12 * max(1.0, np.abs(A).max())):
        raise ValueError("mahalanobis A must be symmetric; use (A + A.T) / 2.")
    try:
        np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        w = np.linalg.eigvalsh(A)
        raise ValueError(
            f"mahalanobis A must be positive definite; its smallest eigenvalue is {w.min():.3g}. "
            "Add a ridge (A + eps I) or use an inverse covariance estimate."
        ) from None
    A = 0.5 * (A + A.T)
    A.setflags(write=False)
    return Divergence(
        name=base.name, aliases=base.aliases, domain="real", separable=False, symmetric=True,
        differentiable=True, params=(("A", A),), formula=base.formula, builtin=True,
        phi0_zero=True, _kind="mahalanobis",
    )


def _restore_divergence(name, params):
    return get_divergence(name, **params)


def unregister_divergence(name):
    """Remove a user-registered divergence (built-ins cannot be removed)."""
    key = _ALIASES.get(_canonical(name))
    if key is None:
        raise ValueError(f"no divergence named {name!r} is registered.")
    div = _REGISTRY[key]
    if div.builtin:
        raise ValueError(f"the built-in divergence {key!r} cannot be removed.")
    del _REGISTRY[key]
    for a in (key,) + tuple(div.aliases):
        _ALIASES.pop(a, None)


_PROBES = {
    "real": np.array([-3.0, -1.0, -0.25, 0.0, 0.5, 1.0, 2.5]),
    "nonnegative": np.array([1e-3, 0.1, 0.5, 1.0, 2.0, 7.0]),
    "positive": np.array([1e-3, 0.1, 0.5, 1.0, 2.0, 7.0]),
}


def _compile(fn, what, name):
    if fn is None:
        return None
    if isinstance(fn, CPUDispatcher):
        return fn
    if not callable(fn):
        raise TypeError(f"{what} for divergence {name!r} must be callable, got {type(fn).__name__}.")
    return njit(nogil=True, error_model="numpy")(fn)


def _call(fn, x, what, name):
    try:
        return float(fn(float(x)))
    except (ValueError, ZeroDivisionError, OverflowError):
        return math.nan  # plain-Python math errors (e.g. with NUMBA_DISABLE_JIT): not finite
    except Exception as exc:  # numba typing errors, Python errors in user code
        raise TypeError(
            f"{what} of divergence {name!r} could not be evaluated at {float(x)!r} (it must be a scalar "
            f"function that numba can compile): {type(exc).__name__}: {str(exc)[:300]}"
        ) from exc


def register_divergence(name, *, phi, dphi, dphi_inv=None, domain="real", symmetric=False,
                        aliases=(), overwrite=False, formula=""):
    """Register a separable Bregman generator ``phi(x) = sum_l f(x_l)``.

    Parameters
    ----------
    name : str
        The new divergence's name (case-insensitive; ``-`` and spaces become ``_``).
    phi, dphi : callable
        The scalar ``f`` (strictly convex on ``domain``) and its derivative ``f'``. Plain
        Python functions of one float using ``math``/numpy scalar operations, or numba
        dispatchers; they are compiled with numba.
    dphi_inv : callable, optional
        The inverse of ``f'``. When omitted it is solved numerically (``f'`` is increasing, so
        a bracketing bisection converges to machine precision).
    domain : {"real", "nonnegative", "positive"}, default="real"
        Domain of the data; centres must lie in its interior.
    symmetric : bool, default=False
        Declare ``d(x, y) = d(y, x)`` (checked at probe points). Symmetric divergences get
        closed-form centroids in the multi-task methods.
    aliases : sequence of str, default=()
    overwrite : bool, default=False
        Replace an existing user-registered divergence of the same name.
    formula : str, default=""
        A readable ``d(x, y)`` for the divergence table.

    Returns
    -------
    Divergence

    Raises
    ------
    ValueError
        Name taken, unknown domain, or the probe finds ``f``/``f'`` non-finite, ``f'`` not
        increasing, ``f`` not convex, ``dphi_inv`` not inverting ``dphi``, or a false
        ``symmetric`` claim.
    TypeError
        A function that is not callable or cannot be compiled by numba.

    Notes
    -----
    The probe evaluates the functions at a few points of the domain (``[-3, 2.5]`` for
    ``real``, ``[1e-3, 7]`` otherwise).

    Examples
    --------
    >>> import math
    >>> from bregclust import register_divergence, unregister_divergence
    >>> d = register_divergence("exp_gen", phi=lambda x: math.exp(x), dphi=lambda x: math.exp(x))
    >>> round(d.divergence([0.0], [1.0]), 6)   # e^0 - e^1 - (0 - 1) e^1
    1.0
    >>> unregister_divergence("exp_gen")
    """
    if not isinstance(name, str) or not name.strip():
        raise TypeError("name must be a non-empty string.")
    cname = _canonical(name)
    if domain not in _DOMAINS:
        raise ValueError(f"domain must be one of {_DOMAINS}, got {domain!r}.")
    if isinstance(aliases, str):
        aliases = (aliases,)
    if aliases is None or not all(isinstance(a, str) for a in aliases):
        raise TypeError(f"aliases must be a sequence of strings (possibly empty), got {aliases!r}.")
    aliases = tuple(_canonical(a) for a in aliases if _canonical(a) != cname)
    if not overwrite and (cname in _ALIASES or any(a in _ALIASES for a in aliases)):
        taken = [k for k in (cname, *aliases) if k in _ALIASES]
        raise ValueError(
            f"the name {taken[0]!r} is already registered (for {_ALIASES[taken[0]]!r}); choose "
            "another name or pass overwrite=True."
        )
    f = _compile(phi, "phi", cname)
    df = _compile(dphi, "dphi", cname)
    code = K.DOMAIN_CODES[domain]
    inv = _compile(dphi_inv, "dphi_inv", cname) if dphi_inv is not None else K.make_inverse(df, code)

    xs = _PROBES[domain]
    fv = np.array([_call(f, x, "phi", cname) for x in xs])
    dv = np.array([_call(df, x, "dphi", cname) for x in xs])
    if not (np.isfinite(fv).all() and np.isfinite(dv).all()):
        raise ValueError(
            f"phi/dphi of {cname!r} are not finite on the {domain} domain at the probe points "
            f"{xs.tolist()}: phi={fv.tolist()}, dphi={dv.tolist()}."
        )
    if not (np.diff(dv) > 0).all():
        raise ValueError(
            f"dphi of {cname!r} must be strictly increasing on its domain (phi strictly "
            f"convex); at {xs.tolist()} it is {dv.tolist()}."
        )
    for a in xs:
        for b in xs:
            gap = fv[xs == b][0] - fv[xs == a][0] - (b - a) * dv[xs == a][0]
            if gap < -1e-9 * (1.0 + abs(fv).max()):
                raise ValueError(
                    f"phi of {cname!r} is not convex (or dphi is not its derivative): "
                    f"phi({b}) < phi({a}) + ({b} - {a}) dphi({a})."
                )
    for x, t in zip(xs, dv):
        h = 1e-5 * max(1.0, abs(x))
        if domain != "real" and x - h <= 0:
            h = 0.5 * x
        fd = (_call(f, x + h, "phi", cname) - _call(f, x - h, "phi", cname)) / (2 * h)
        if not abs(fd - t) <= 1e-4 * max(1.0, abs(t)):
            raise ValueError(
                f"dphi of {cname!r} is not the derivative of phi: at x={x} dphi gives {t} but "
                f"a finite difference of phi gives {fd}."
            )
    for x, t in zip(xs, dv):
        back = _call(inv, t, "dphi_inv", cname)
        if not abs(back - x) <= 1e-6 * max(1.0, abs(x)):
            raise ValueError(
                f"dphi_inv of {cname!r} does not invert dphi: dphi_inv(dphi({x})) = {back}."
            )
    phi0_zero = domain != "positive" and abs(_call(f, 0.0, "phi", cname)) == 0.0
    div = Divergence(
        name=cname, aliases=aliases, domain=domain, separable=True, symmetric=bool(symmetric),
        differentiable=True, phi=f, dphi=df, dphi_inv=inv, formula=formula,
        phi0_zero=phi0_zero, _kind="separable", _kernels=_SeparableKernels(f, df, inv, domain),
    )
    if symmetric:
        P = xs.reshape(-1, 1)
        D = div.generic_pairwise(P, P)
        if not np.allclose(D, D.T, rtol=1e-8, atol=1e-12):
            raise ValueError(f"{cname!r} was declared symmetric but d(x, y) != d(y, x) at the probe points.")
    _add(div, overwrite=overwrite)
    return div


def _builtin(name, aliases, domain, phi, dphi, inv, formula, symmetric=False, kind="separable",
             differentiable=True):
    div = Divergence(
        name=name, aliases=aliases, domain=domain, separable=kind != "mahalanobis",
        symmetric=symmetric, differentiable=differentiable, phi=phi, dphi=dphi, dphi_inv=inv,
        formula=formula, builtin=True, phi0_zero=domain != "positive",
        _kind=kind,
        _kernels=_SeparableKernels(phi, dphi, inv, domain) if phi is not None else None,
    )
    _add(div)


_builtin("sqeuclidean", ("euclidean2", "squared_euclidean", "l2sq", "sq_euclidean"), "real",
         K.sq_phi, K.sq_dphi, K.sq_dphi_inv, "sum (x - y)^2", symmetric=True)
_builtin("mahalanobis", ("mahal",), "real", None, None, None, "(x - y)^T A (x - y), A SPD",
         symmetric=True, kind="mahalanobis")
_builtin("kl", ("gkl", "i_divergence", "kullback_leibler", "generalized_kl", "generalised_kl"),
         "nonnegative", K.kl_phi, K.kl_dphi, K.kl_dphi_inv, "sum x log(x/y) - x + y")
_builtin("itakura_saito", ("is", "itakura"), "positive", K.is_phi, K.is_dphi, K.is_dphi_inv,
         "sum x/y - log(x/y) - 1")
_builtin("l1_subgradient", ("l1", "l1_sub"), "real", K.abs_phi, K.sign_dphi, None,
         "sum (0 if x y > 0 else 2 |x|)", kind="l1", differentiable=False)


def divergence_table():
    """Rows ``(name, aliases, domain of x / y, d(x, y), symmetric, differentiable)``."""
    rows = []
    for name, d in _REGISTRY.items():
        rows.append((name, ", ".join(d.aliases), f"{_DOM_TXT[d.domain]} / {_DOM_TXT[d.right_domain]}",
                     d.formula, d.symmetric, d.differentiable))
    return rows


_DOM_TXT = {"real": "R", "nonnegative": ">= 0", "positive": "> 0"}
