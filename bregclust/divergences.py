"""The divergence registry: one record per Bregman divergence, looked up by name.

Every algorithm in bregclust asks this module for a :class:`Divergence` by name
(``get_divergence("kl")``) and uses only its public methods and capability fields, so a
generator registered with :func:`register_divergence` works in every algorithm without further
code. A record holds everything that describes its divergence: the scalar generator and the
function pointers the kernels call (:class:`Generator`), the GEMM form and the exact definition
(a *form* strategy), the parameter validator (Mahalanobis' ``A``), the exact sided centroid
``argmin_u A d(mL, u) + B d(u, mR)``, and what the agglomerative engine needs (``ward``,
:meth:`Divergence.whitening`, :attr:`Divergence.generator`). How the array methods run (chunks,
threads, the fused Lloyd pass) is :mod:`bregclust._execution`'s business.

Built-ins (:doc:`/guide/divergences`)

============== ============================ ================ ======================================
name           phi(x)                       domain x / y     d(x, y)
============== ============================ ================ ======================================
sqeuclidean    sum x^2                      R / R            sum (x - y)^2
mahalanobis    x^T A x  (A SPD)             R / R            (x - y)^T A (x - y)
kl             sum x log x - x              x >= 0 / y > 0   sum x log(x / y) - x + y
itakura_saito  -sum log x                   x > 0 / y > 0    sum x / y - log(x / y) - 1
l1_subgradient sum abs(x)                   R / R            sum (0 if x y > 0 else 2 abs(x))
cosine         ||x|| on unit rows           R / R, x != 0    1 - <x, y> / (||x|| ||y||)
============== ============================ ================ ======================================
"""

import hashlib
import math
import numbers
import re
import threading
import types
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from numba import njit
from numba.core.errors import NumbaError
from numba.core.registry import CPUDispatcher
from scipy.special import wrightomega

from . import _conditioning as C
from . import _execution as E
from . import _forms as F
from . import _kernels as K
from ._kernels import generators as KG
from ._labels import label_indicator
from ._validation import (
    DomainError,
    check_float_dtype,
    check_label_array,
    check_sample_weight,
    check_scalar,
    float_dtype,
    maybe_non_finite,
)

__all__ = [
    "Divergence",
    "Generator",
    "get_divergence",
    "list_divergences",
    "register_divergence",
    "unregister_divergence",
    "divergence_table",
]

_DOMAINS = ("real", "nonnegative", "positive")


# ---------------------------------------------------------------------------- generators
class Generator:
    """A separable scalar generator ``phi(x) = sum_l f(x_l)`` as the kernels see it.

    The built-ins carry a generator code that the kernels evaluate inline; a user-registered
    generator gets :data:`~bregclust._kernels.generators.CUSTOM` and function pointers to its
    scalar functions, compiled lazily once and owned by this object (hence by its registry
    record: they are released with it).

    A user function that raises inside a kernel makes its callback return NaN and record the
    failure; the caller of the kernel raises it with
    :func:`bregclust._kernels.generators.check_callbacks`.

    Parameters
    ----------
    code : int
        Generator code (``SQ``, ``KL``, ``IS``, ``ABS`` or ``CUSTOM``).
    phi, dphi, dphi_inv : numba dispatcher or None
        The scalar ``f``, ``f'`` and ``(f')^-1``.
    domain : {"real", "nonnegative", "positive"}
    name : str, optional
        The divergence's name, for error messages.
    """

    def __init__(self, code, phi, dphi, dphi_inv, domain, name=None):
        self.code = code
        self.phi, self.dphi, self.dphi_inv = phi, dphi, dphi_inv
        self.domain = domain
        self.domain_code = KG.DOMAIN_CODES[domain]
        self.name = name
        self._fns = {}
        self._lock = threading.Lock()

    def _fn(self, which):
        fn = self._fns.get(which)
        if fn is None:
            with self._lock:
                fn = self._fns.get(which)
                if fn is None:
                    if self.code == KG.CUSTOM:
                        f = (self.phi, self.dphi, self.dphi_inv)[which]
                        what = ("phi", "dphi", "dphi_inv")[which]
                        fn = KG.function_pointer(f, f"{what} of divergence {self.name!r}")
                    else:
                        fn = KG.placeholder()
                    self._fns[which] = fn
        return fn

    @property
    def fn_phi(self):
        """Function pointer to ``f`` (a placeholder for built-in codes)."""
        return self._fn(KG.PHI)

    @property
    def fn_dphi(self):
        """Function pointer to ``f'`` (a placeholder for built-in codes)."""
        return self._fn(KG.DPHI)

    @property
    def fn_dphi_inv(self):
        """Function pointer to ``(f')^-1`` (a placeholder for built-in codes)."""
        return self._fn(KG.DPHI_INV)


# ---------------------------------------------------------------------------- sided centroids
def _symmetric_centroid(div, A, B, mL, mR):
    """Symmetric (quadratic) generators: ``(A mL + B mR) / (A + B)``."""
    return (A * mL + B * mR) / (A + B)


def _kl_centroid(div, A, B, mL, mR):
    """``argmin_u A d(mL, u) + B d(u, mR)`` for kl, per coordinate, in closed form.

    Stationarity ``A (1 - mL/u) + B log(u/mR) = 0``. With ``y = A mL / (B u)`` it reads
    ``y + log y = A/B + log(A mL / (B mR))``, i.e. ``y = W0(c)`` (Lambert W) with
    ``c = (A mL / (B mR)) exp(A/B)``. ``c`` overflows for small ``B``, so ``y`` is evaluated as
    the Wright omega function of ``log c`` (``omega(z) = W0(exp(z))``). ``mL = 0`` gives
    ``u = mR exp(-A/B)``.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        r = A / B
        z = np.log(r * mL) - np.log(mR) + r
        y = wrightomega(z).real
        u = r * mL / y
    zero = mL <= 0
    if zero.any():
        u = np.where(zero, mR * np.exp(-np.broadcast_to(r, mL.shape)), u)
    return u


def _kl_phi(x):
    """kl: ``phi(x) = x log x - x`` elementwise, 0 at 0 and NaN below 0 (the scalar
    generator's values), with numpy's vector logarithm."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(x)
        out *= x
        out -= x
    zero = x == 0.0
    if zero.any():
        out[zero] = 0.0
    return out


def _is_phi(x):
    """Itakura-Saito: ``phi(x) = -log x`` elementwise (``+inf`` at 0, NaN below 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(np.asarray(x, dtype=np.float64))
    return np.negative(out, out=out)


def _is_centroid(div, A, B, mL, mR):
    """Itakura-Saito: the positive root of ``B u^2 + (A - B) mR u - A mL mR = 0``.

    (Stationarity ``A (u - mL)/u^2 + B (1/mR - 1/u) = 0`` times ``u^2 mR``.) The root is
    evaluated in the form that avoids cancellation for either sign of ``(A - B)``.
    """
    p = (A - B) * mR
    q = A * mL * mR
    disc = np.sqrt(p * p + 4.0 * B * q)
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(p >= 0, 2.0 * q / (p + disc), (disc - p) / (2.0 * B))
    return u


def _bisection_centroid(div, A, B, mL, mR):
    """Any separable generator: bisection on the stationarity equation (numba)."""
    return div.centroid_by_bisection(A, B, mL, mR)


@dataclass(frozen=True, eq=False)
class Divergence:
    """A Bregman divergence ``d(x, y) = phi(x) - phi(y) - <x - y, grad phi(y)>``.

    Instances come from :func:`get_divergence`; do not build them directly. The scalar
    generator functions ``phi``, ``dphi`` and ``dphi_inv`` are numba-compiled (separable
    generators only; ``None`` for Mahalanobis). The public array methods accept any 2-D
    array-like or scipy sparse matrix/array for the data ``X`` (converted to float64 C-ordered
    or canonical CSR; integer, boolean and float32 input is converted, other sparse formats
    become CSR) and a dense 2-D array-like for centres ``U``; NaN, mismatched feature counts
    and malformed label arrays raise a ``ValueError``/``TypeError`` naming the argument.

    Attributes
    ----------
    name : str
        Canonical name.
    aliases : tuple of str
        Other names accepted by :func:`get_divergence`.
    domain : {"real", "nonnegative", "positive"}
        Domain of the first argument ``x``; the second argument (a centre) must lie in the
        interior (``kl`` accepts ``x >= 0`` but needs ``y > 0``).
    separable, symmetric, differentiable : bool
        Capabilities of the generator.
    params : tuple of (str, object)
        Bound parameters (Mahalanobis' read-only matrix ``A``).
    formula : str
        Human-readable ``d(x, y)``.
    builtin : bool
        Built-in record (cannot be removed or overwritten).
    generator : Generator or None
        The separable scalar generator as the kernels see it (``None`` for Mahalanobis).
    ward : bool
        ``phi`` is a quadratic form: merge costs are Ward's on whitened data
        (:meth:`whitening`), which the agglomerative engine solves with a reducible
        nearest-neighbour chain.
    has_gemm : bool
        The one-pass fused Lloyd kernels apply (:meth:`assign_and_sum` on
        :meth:`prepare_centres`); ``False`` for l1_subgradient, whose GEMM form runs on
        ``[X+, X-]``.
    param_names : tuple of str
        Parameters accepted by :func:`get_divergence`.
    translation_invariant : bool
        ``d(x + t, y + t) = d(x, y)`` for every ``t`` (sqeuclidean, mahalanobis): the array
        methods centre data far from the origin before the GEMM form, which would otherwise
        lose digits to cancellation.
    homogeneity : int or None
        Degree ``p`` with ``d(s x, s y) = s^p d(x, y)`` for ``s > 0`` (2 for the quadratic
        forms, 1 for kl and l1_subgradient, 0 for Itakura-Saito); ``None`` when unknown (user
        generators). Estimators rescale data of extreme magnitude by a power of two with it.
    coordinate_scale_invariant : bool
        ``d(D x, D y) = d(x, y)`` for every positive diagonal ``D`` (Itakura-Saito): data of
        extreme magnitude are rescaled column by column instead (see
        :mod:`bregclust._conditioning`).
    spherical : bool
        Rows are scaled to unit Euclidean length before the passes of a fit (an all-zero row
        is refused) and the centre of a cluster is the *normalised* weighted mean ``s /
        ||s||``, not the mean itself (cosine: spherical k-means, :mod:`bregclust._spherical`).
        Needs at least two features.
    phi_rule : callable or None
        ``phi_rule(x) -> phi(x)`` elementwise on an array in closed form with numpy ufuncs
        (float64, the scalar generator's values at the domain's edge: kl gives 0 at 0);
        ``None`` for user generators and for sqeuclidean, whose kernels already evaluate
        ``x^2`` inline (see :attr:`has_closed_form_phi`).
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
    generator: object = field(default=None, repr=False)
    form: object = field(default=None, repr=False)
    centroid_rule: object = field(default=None, repr=False)
    phi_rule: object = field(default=None, repr=False)
    ward: bool = False
    param_names: tuple = ()
    binder: object = field(default=None, repr=False)
    translation_invariant: bool = False
    homogeneity: object = None
    coordinate_scale_invariant: bool = False
    spherical: bool = False

    # ------------------------------------------------------------------ pickling / params
    def __reduce__(self):
        return (_restore_divergence, (self.name, dict(self.params)))

    def param(self, key):
        """Value of a bound parameter.

        Parameters
        ----------
        key : str
            Parameter name, e.g. ``"A"`` for mahalanobis.

        Returns
        -------
        object
        """
        return dict(self.params)[key]

    @property
    def right_domain(self):
        """Domain of the second argument (centres): the interior of :attr:`domain`."""
        return "positive" if self.domain in ("nonnegative", "positive") else "real"

    @property
    def has_gemm(self):
        """Whether the fused one-pass Lloyd kernels apply (see the class docstring)."""
        return bool(self.form is not None and self.form.fused)

    def whitening(self):
        """For a quadratic generator (``ward``), a matrix ``L`` with ``phi(x) = ||x L||^2``
        (``None`` for the identity); ``None`` for every other generator.

        Returns
        -------
        ndarray of shape (d, d) or None
        """
        if self.ward and self.generator is None:
            return np.linalg.cholesky(self.param("A"))
        return None

    def _ready(self):
        if self.form is None:
            raise TypeError(
                f"{self.name} needs its parameters; use get_divergence({self.name!r}, "
                f"{', '.join(f'{p}=...' for p in self.param_names)})."
            )
        return self.form

    # ------------------------------------------------------------------ the public boundary
    def check_n_features(self, n_features, *, name="X"):
        """Raise ``ValueError`` when ``n_features`` does not fit the bound parameters.

        Parameters
        ----------
        n_features : int
            Number of columns of the data.
        name : str, default="X"
            Name used in the error message.

        Returns
        -------
        None
        """
        if self.spherical and n_features < 2:
            raise ValueError(
                f"{self.name} needs at least 2 features (on one feature every row has "
                f"direction +1 or -1); {name} has n_features = {n_features}. Use "
                "'sqeuclidean' instead.")
        if self.generator is None and self.form is not None and "A" in dict(self.params):
            A = self.param("A")
            if A.shape[0] != n_features:
                raise ValueError(
                    f"mahalanobis A must be (n_features, n_features) = ({n_features}, "
                    f"{n_features}) for {name}, got {A.shape}; pass a matrix matching the data."
                )

    def _as_data(self, X, name="X", *, check_nan=True):
        """``X`` as float64 C-ordered ndarray or canonical float64 CSR (never read as CSR when
        it is not), checked for NaN and for its feature count."""
        if sp.issparse(X):
            if X.ndim != 2:
                raise ValueError(f"{name} must be 2-D, got a sparse array of shape {X.shape}.")
            if X.dtype.kind not in "biuf":
                raise TypeError(f"{name} must hold real numbers, got dtype {X.dtype}.")
            check_float_dtype(X, name)
            # converts CSC/COO/LIL/DOK/BSR, keeps CSR; float32 stays float32
            X = sp.csr_matrix(X, dtype=float_dtype(X.dtype))
            if not X.has_canonical_format:
                X = X.copy()
                X.sum_duplicates()
            data = X.data
        else:
            if X is None:
                raise TypeError(f"{name} is None; pass a 2-D array of shape (n, n_features).")
            A = np.asarray(X)
            if A.dtype.kind not in "biuf":
                raise TypeError(f"{name} must hold real numbers, got dtype {A.dtype}.")
            if A.ndim != 2:
                raise ValueError(f"{name} must be a 2-D array (n, n_features), got shape {A.shape}.")
            check_float_dtype(A, name)
            X = np.ascontiguousarray(A, dtype=float_dtype(A.dtype))
            data = X
        if check_nan and maybe_non_finite(data) and np.isnan(data).any():
            raise ValueError(f"{name} contains NaN; remove or impute missing values first.")
        self.check_n_features(X.shape[1], name=name)
        return X

    def _as_centres(self, U, n_features=None, name="U"):
        """Centres as a dense float64 C-ordered 2-D array with ``n_features`` columns."""
        if sp.issparse(U):
            U = U.toarray()
        if U is None:
            raise TypeError(f"{name} is None; pass a 2-D array of centres (k, n_features).")
        A = np.asarray(U)
        if A.dtype.kind not in "biuf":
            raise TypeError(f"{name} must hold real numbers, got dtype {A.dtype}.")
        if A.ndim != 2:
            raise ValueError(f"{name} must be a 2-D array (k, n_features), got shape {A.shape}.")
        U = np.ascontiguousarray(A, dtype=np.float64)
        if n_features is not None and U.shape[1] != n_features:
            raise ValueError(
                f"{name} has {U.shape[1]} features but X has {n_features}; both must have the "
                "same number of columns."
            )
        if U.size and np.isnan(U).any():
            raise ValueError(f"{name} contains NaN; centres must be numbers.")
        self.check_n_features(U.shape[1], name=name)
        return U

    @staticmethod
    def _as_labels(labels, n, k):
        """Labels as int64 in ``0..k-1`` (length ``n``), else a clear error."""
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
            raise TypeError(f"k must be an integer (the number of clusters), got {k!r}.")
        if k < 1:
            raise ValueError(f"k must be >= 1 (the number of clusters), got {k}.")
        lab = check_label_array(labels, name="labels", n_classes=int(k))
        if lab.shape[0] != n:
            raise ValueError(f"labels has {lab.shape[0]} entries but X has {n} rows.")
        return lab

    # ------------------------------------------------------------------ domain checks
    def check_domain(self, X, *, name="X", side="left", advice=None):
        """Raise :class:`DomainError` if ``X`` leaves the domain of this divergence.

        Parameters
        ----------
        X : ndarray or sparse matrix
            Data points (``side="left"``, first argument) or centres (``side="right"``, second
            argument, strict interior).
        name : str, default="X"
            Name used in the error message.
        side : {"left", "right"}, default="left"
        advice : str, optional
            The fix named in the message for centres outside the domain (e.g. the caller's
            smoothing parameter); by default a neutral sentence.

        Returns
        -------
        None

        Raises
        ------
        DomainError
            With the first offending row and column.
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
                self._raise_domain(name, dom, r, c, v, side, advice=advice)
            if strict and X.nnz < X.shape[0] * X.shape[1]:
                X = sp.csr_matrix(X)
                r, c = _first_implicit_zero(X)
                self._raise_domain(name, dom, r, c, 0.0, side, implicit=True, advice=advice)
            return
        bad = (X <= 0) if strict else (X < 0)
        if bad.any():
            r, c = np.unravel_index(int(np.argmax(bad)), bad.shape)
            self._raise_domain(name, dom, int(r), int(c), float(X[r, c]), side, advice=advice)

    def _raise_domain(self, name, dom, r, c, v, side, implicit=False, advice=None):
        need = "positive" if dom == "positive" else "non-negative"
        what = "centres" if side == "right" else "data"
        where = " (an implicit zero of the sparse matrix)" if implicit else ""
        if self.name == "itakura_saito" or dom == "positive" and side == "left":
            fix = ("Add a small positive offset, or use 'kl' if the data are counts with "
                   "zeros.")
        elif side == "right":
            fix = advice or "Centres must lie in the interior of the domain."
        else:
            fix = "Shift or rescale the data, or use a divergence defined on R such as 'sqeuclidean'."
        lead = "Negative values in data: " if v < 0 else ""
        raise DomainError(
            f"{lead}{self.name} needs {need} {what}; {name} has {v:g} at row {r}, column {c}"
            f"{where}. {fix}"
        )

    # ------------------------------------------------------------------ generator pieces
    def phi_rows(self, X):
        """``phi(x_i)`` for every row.

        Parameters
        ----------
        X : ndarray or CSR matrix of shape (n, d)

        Returns
        -------
        ndarray of shape (n,)
        """
        self._ready()
        return E.phi_rows(self, self._as_data(X))

    def grad(self, U):
        """``grad phi`` of each row of a dense array.

        Parameters
        ----------
        U : array-like of shape (k, d) or (d,)

        Returns
        -------
        ndarray of the shape of ``U``
        """
        U = np.asarray(U, dtype=np.float64)
        form = self._ready()
        if self.generator is None:  # a quadratic form: a matrix product
            return form.grad(U)
        self._need_differentiable("grad")
        U2 = np.ascontiguousarray(np.atleast_2d(U))
        return form.grad(U2, E.parallel(U2.size)).reshape(U.shape)

    def grad_inv(self, T):
        """Inverse of ``grad phi`` for each row of a dense array.

        Parameters
        ----------
        T : array-like of shape (k, d) or (d,)

        Returns
        -------
        ndarray of the shape of ``T``
        """
        T = np.asarray(T, dtype=np.float64)
        form = self._ready()
        if self.generator is None:
            return form.grad_inv(T)
        self._need_differentiable("grad_inv")
        T2 = np.ascontiguousarray(np.atleast_2d(T))
        return form.grad_inv(T2).reshape(T.shape)

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

        Parameters
        ----------
        X : ndarray or CSR matrix of shape (n, d)

        Returns
        -------
        Xg : ndarray or CSR matrix
        phi_x : ndarray of shape (n,)
        """
        self._ready()
        return E.prepare(self, self._as_data(X))

    def gemm_parts(self, U):
        """``(G, c)`` with ``D = phi_x 1^T + 1 c^T - Xg G^T`` (see :meth:`prepare`).

        Parameters
        ----------
        U : array-like of shape (k, d)

        Returns
        -------
        G : ndarray of shape (k, p)
        c : ndarray of shape (k,)
        """
        self._ready()
        pc = E.prepare_centres(self, self._as_centres(U))
        return pc.G, pc.c

    def prepare_centres(self, U):
        """The GEMM parts of centres ``U``, computed once for reuse.

        Parameters
        ----------
        U : array-like of shape (k, d)

        Returns
        -------
        bregclust._execution.PreparedCentres
            Pass it as ``centres=`` to :meth:`assign_and_sum`.
        """
        self._ready()
        return E.prepare_centres(self, self._as_centres(U))

    def pairwise(self, X, U, *, prepared=None):
        """The matrix ``D[i, j] = d(x_i, u_j)``, shape ``(n, k)``, by the GEMM form.

        Centres on the boundary of the domain (e.g. a zero coordinate with ``kl``) make the
        GEMM form undefined; those columns fall back to the exact generic kernel, which
        returns ``+inf`` where the divergence is infinite. Rows whose smallest value may have
        lost its digits to cancellation in the GEMM form (a value below about ``1e-8`` of the
        row's own terms in float64, e.g. ``0.7`` beside a coordinate near ``1e300``, or a row
        equal to a centre) are evaluated again by the definition.

        Parameters
        ----------
        X : ndarray or CSR matrix of shape (n, d)
        U : array-like of shape (k, d)
        prepared : tuple, optional
            :meth:`prepare` of ``X``.

        Returns
        -------
        ndarray of shape (n, k)
            ``+inf`` where the divergence overflows or is infinite (never 0 for a non-finite
            intermediate).

        Raises
        ------
        ValueError
            NaN in ``X`` or ``U``, or different numbers of features.
        """
        self._ready()
        X = self._as_data(X, check_nan=prepared is None)
        U = self._as_centres(U, X.shape[1])
        if prepared is not None:
            return E.pairwise(self, X, U, prepared, guard=True)
        return C.pairwise_rows(self, X, U)

    def assign(self, X, U, *, prepared=None, chunk_rows=None):
        """Nearest centre of every row, chunked over rows on a small thread pool.

        Parameters
        ----------
        X : ndarray or CSR matrix of shape (n, d)
        U : array-like of shape (k, d)
        prepared : tuple, optional
            :meth:`prepare` of ``X``.
        chunk_rows : int, optional
            Rows per chunk (default: about 1 MB of divergences per chunk).

        Returns
        -------
        labels : ndarray of int64, shape (n,)
        mins : ndarray of shape (n,)
            The divergence to the nearest centre.
        """
        self._ready()
        X = self._as_data(X, check_nan=prepared is None)
        U = self._as_centres(U, X.shape[1])
        if chunk_rows is not None:
            check_scalar(chunk_rows, "chunk_rows", kind=numbers.Integral, lo=1)
        if prepared is not None or chunk_rows is not None:
            cond = C.IDENTITY if prepared is not None else C.for_assignment(self, X, U)
            labels, mins = E.assign(self, cond.apply(X),
                                    E.prepare_centres(self, cond.apply_centres(U)),
                                    prepared=prepared, step=chunk_rows)
            return labels, cond.undo_divergences(mins)
        return C.assign_rows(self, X, U)

    def assign_and_sum(self, X, U, sample_weight=None, *, prepared=None, centres=None):
        """One Lloyd pass: :meth:`assign` and :meth:`weighted_sums` for those labels, in a
        single read of ``X`` when the fused kernels apply (``has_gemm`` and centres inside the
        domain); the same labels and minima as :meth:`assign` either way.

        Parameters
        ----------
        X : ndarray or CSR matrix of shape (n, d)
        U : array-like of shape (k, d)
            Centres (ignored when ``centres`` is given).
        sample_weight : array-like of shape (n,), optional
        prepared : tuple, optional
            :meth:`prepare` of ``X``.
        centres : PreparedCentres, optional
            :meth:`prepare_centres` of ``U``, to reuse the centres' GEMM parts.

        Returns
        -------
        labels : ndarray of int64, shape (n,)
        mins : ndarray of shape (n,)
        S : ndarray of shape (k, d)
            Weighted sums of the rows per cluster.
        W : ndarray of shape (k,)
            Total weight per cluster.
        """
        self._ready()
        X = self._as_data(X, check_nan=prepared is None)
        w = check_sample_weight(sample_weight, X.shape[0], allow_zero=True)
        if centres is not None:
            if centres.U.shape[1] != X.shape[1]:
                raise ValueError(f"centres have {centres.U.shape[1]} features but X has "
                                 f"{X.shape[1]}.")
            res = E.assign_and_sum(self, X, w, centres, prepared)
            return res.labels, res.mins, res.S, res.W
        U = self._as_centres(U, X.shape[1])
        cond = C.IDENTITY if prepared is not None else C.for_assignment(self, X, U)
        if cond.data_identity:
            res = E.assign_and_sum(self, X, w, E.prepare_centres(self, U), prepared)
            return res.labels, res.mins, res.S, res.W
        # far from the origin or of extreme magnitude: assign the conditioned rows, sum the
        # rows as given
        labels, mins = E.assign(self, cond.apply(X),
                                E.prepare_centres(self, cond.apply_centres(U)))
        S, W = E.weighted_sums(X, labels, U.shape[0], w)
        return labels, cond.undo_divergences(mins), S, W

    # ------------------------------------------------------------------ slow, obvious versions
    def generic_pairwise(self, X, U):
        """The definition, coordinate by coordinate (the oracle for :meth:`pairwise`).

        Parameters
        ----------
        X : ndarray or sparse matrix of shape (n, d)
        U : array-like of shape (k, d)

        Returns
        -------
        ndarray of shape (n, k)
        """
        self._ready()
        X = self._as_data(X)
        Xd = X.toarray() if sp.issparse(X) else X
        U = self._as_centres(U, Xd.shape[1])
        out = np.empty((Xd.shape[0], U.shape[0]))
        self._ready().generic_pairwise(Xd, U, out)
        return out

    def divergence(self, x, y):
        """``d(x, y)`` for two 1-D vectors, by the definition.

        Parameters
        ----------
        x, y : array-like of shape (d,)

        Returns
        -------
        float
        """
        x = np.asarray(x, dtype=np.float64).reshape(1, -1)
        y = np.asarray(y, dtype=np.float64).reshape(1, -1)
        if x.shape != y.shape:
            raise ValueError(f"x and y must have the same length, got {x.shape[1]} and {y.shape[1]}.")
        return float(self.generic_pairwise(x, y)[0, 0])

    __call__ = divergence

    # ------------------------------------------------------------------ centroids
    def weighted_sums(self, X, labels, k, sample_weight=None):
        """Per-cluster weighted sums of rows and total weights.

        Parameters
        ----------
        X : ndarray or CSR matrix of shape (n, d)
        labels : array-like of int, shape (n,)
        k : int
            Number of clusters.
        sample_weight : array-like of shape (n,), optional

        Returns
        -------
        S : ndarray of shape (k, d)
        W : ndarray of shape (k,)

        Raises
        ------
        ValueError
            Labels outside ``0..k-1``, fractional, or not 1-D of length ``n``.
        TypeError
            Labels or ``k`` not integers.
        """
        X = self._as_data(X)
        labels = self._as_labels(labels, X.shape[0], k)
        w = check_sample_weight(sample_weight, X.shape[0], allow_zero=True)
        return E.weighted_sums(X, labels, int(k), w)

    def right_centroid(self, X, labels, k, sample_weight=None):
        """``argmin_c sum_i w_i d(x_i, c)`` per cluster: the weighted mean (any Bregman
        divergence; Banerjee et al. 2005). For l1_subgradient the mean is optimal too (its
        sign in each coordinate is the side holding more absolute mass).

        Parameters
        ----------
        X : ndarray or CSR matrix of shape (n, d)
        labels : array-like of int, shape (n,)
        k : int
        sample_weight : array-like of shape (n,), optional

        Returns
        -------
        centres : ndarray of shape (k, d)
            NaN rows for empty clusters.
        weights : ndarray of shape (k,)
        """
        S, W = self.weighted_sums(X, labels, k, sample_weight)
        with np.errstate(invalid="ignore", divide="ignore"):
            return S / W[:, None], W

    def left_centroid(self, X, labels, k, sample_weight=None):
        """``argmin_c sum_i w_i d(c, x_i)`` per cluster: ``grad_inv`` of the weighted mean of
        ``grad phi(x_i)``.

        Parameters
        ----------
        X : ndarray or CSR matrix of shape (n, d)
        labels : array-like of int, shape (n,)
        k : int
        sample_weight : array-like of shape (n,), optional

        Returns
        -------
        centres : ndarray of shape (k, d)
            NaN rows for empty clusters.
        weights : ndarray of shape (k,)
        """
        self._need_differentiable("the left-type centroid")
        X = self._as_data(X)
        labels = self._as_labels(labels, X.shape[0], k)
        w = check_sample_weight(sample_weight, X.shape[0], allow_zero=True)
        k = int(k)
        M = label_indicator(labels, k, w, by_cluster=True)  # k x n, the rows' weights
        W = np.asarray(M.sum(axis=1)).ravel()
        S = np.zeros((k, X.shape[1]))
        for s in range(0, X.shape[0], 4096):
            Xc = X[s:s + 4096]
            Xc = Xc.toarray() if sp.issparse(Xc) else Xc
            S += M[:, s:s + 4096] @ self.grad(Xc)
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.grad_inv(S / W[:, None]), W

    @property
    def has_closed_form_parts(self):
        """Whether the GEMM parts of centres (``grad phi(u)`` and ``<u, grad phi(u)> - phi(u)``)
        come from a built-in generator's whole-array evaluation (sqeuclidean, kl,
        Itakura-Saito) rather than a user's scalar functions. Either way :meth:`gemm_parts`
        and every pass (the mini-batch count update included) take them from one place, the
        record's form."""
        return bool(getattr(self.form, "closed_parts", False))

    @property
    def has_closed_form_phi(self):
        """Whether ``phi`` has a vectorised closed form (:attr:`phi_rule`: kl,
        Itakura-Saito), which evaluates ``phi`` of many values at once with numpy's vector
        functions instead of one scalar generator call per value."""
        return self.phi_rule is not None

    @property
    def has_sided_centroid(self):
        """Whether :meth:`sided_centroid` has an exact solver (closed form or bisection)."""
        return self.centroid_rule is not None

    def sided_centroid(self, A, B, mu_L, mu_R):
        """Exact ``argmin_u A_z d(mu_L[z], u) + B_z d(u, mu_R[z])`` for every row ``z``.

        Closed forms for symmetric generators (``(A mu_L + B mu_R) / (A + B)``), kl (Lambert
        W) and Itakura-Saito (a quadratic root); bisection on the stationarity equation for
        any other separable generator (:meth:`centroid_by_bisection`).

        Parameters
        ----------
        A, B : ndarray of shape (k, 1)
            Positive weights.
        mu_L, mu_R : ndarray of shape (k, d)
            Left and right arguments (inside the domain).

        Returns
        -------
        ndarray of shape (k, d)

        Raises
        ------
        ValueError
            The divergence has no exact sided centroid (see :attr:`has_sided_centroid`).
        """
        if self.centroid_rule is None:
            raise ValueError(
                f"{self.name} has no exact sided centroid; use a differentiable separable or "
                "symmetric divergence."
            )
        return self.centroid_rule(self, A, B, mu_L, mu_R)

    def centroid_by_bisection(self, A, B, mu_L, mu_R):
        """:meth:`sided_centroid` by bisection (numba), for any separable differentiable
        generator; the oracle for the closed forms.

        Parameters
        ----------
        A, B : ndarray of shape (k,) or (k, 1)
            Positive weights.
        mu_L, mu_R : ndarray of shape (k, d)

        Returns
        -------
        ndarray of shape (k, d)
        """
        if self.generator is None or not self.differentiable:
            raise ValueError(
                f"centroid_by_bisection needs a differentiable separable generator; {self.name} "
                "is not one."
            )
        g = self.generator
        mL = np.ascontiguousarray(mu_L, dtype=np.float64)
        mR = np.ascontiguousarray(mu_R, dtype=np.float64)
        out = np.empty_like(mL)
        with self.form.calls():
            K.centroids.sided_centroid_bisect(
                g.code, g.fn_dphi, g.domain_code,
                np.ascontiguousarray(np.asarray(A, dtype=np.float64).ravel()),
                np.ascontiguousarray(np.asarray(B, dtype=np.float64).ravel()), mL, mR, out)
        return out


def _first_implicit_zero(X):
    n, d = X.shape
    counts = np.diff(X.indptr)
    r = int(np.argmax(counts < d))
    cols = set(X.indices[X.indptr[r]:X.indptr[r + 1]].tolist())
    c = next(j for j in range(d) if j not in cols)
    return r, c


# ---------------------------------------------------------------------------- the registry
_REGISTRY = {}
_ALIASES = {}


def _canonical(name):
    return str(name).strip().lower().replace("-", "_").replace(" ", "_")


def _reserved(key):
    """The built-in divergence owning ``key`` (a name or alias), or ``None``."""
    owner = _ALIASES.get(key)
    return owner if owner is not None and _REGISTRY[owner].builtin else None


def _add(div, overwrite=False):
    keys = (div.name,) + tuple(div.aliases)
    if not div.builtin:
        for key in keys:
            owner = _reserved(key)
            if owner is not None:
                raise ValueError(
                    f"the name {key!r} is already registered for the built-in divergence "
                f"{owner!r}; built-in names and aliases are reserved (even with "
                "overwrite=True), so choose another name."
                )
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
            if _ALIASES.get(a) == div.name:
                _ALIASES.pop(a, None)
    _REGISTRY[div.name] = div
    for key in keys:
        _ALIASES[key] = div.name


def list_divergences(*, aliases=False):
    """Names of the registered divergences (with their aliases when ``aliases=True``).

    Parameters
    ----------
    aliases : bool, default=False
        Also return every divergence's aliases.

    Returns
    -------
    names : list of str, or dict {str: tuple of str} when ``aliases=True``
    """
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
    accepted = base.param_names
    unknown = set(params) - set(accepted)
    if unknown:
        raise TypeError(
            f"{name} got unexpected parameter(s) {sorted(unknown)}; "
            f"it accepts {list(accepted) or 'no parameters'}."
        )
    if base.binder is not None:
        return base.binder(base, **params)
    return base


def _bind_mahalanobis(base, A=None):
    """The parameter validator of mahalanobis: a bound record for a checked, read-only ``A``."""
    if A is None:
        raise TypeError(
            "mahalanobis needs the parameter A, a symmetric positive definite matrix: "
            "get_divergence('mahalanobis', A=A) or divergence_params={'A': A}."
        )
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
        form=F.MahalanobisForm(A), centroid_rule=_symmetric_centroid, ward=True,
        param_names=base.param_names, translation_invariant=True, homogeneity=2,
    )


def _restore_divergence(name, params):
    return get_divergence(name, **params)


def unregister_divergence(name):
    """Remove a user-registered divergence (built-ins cannot be removed).

    Parameters
    ----------
    name : str
        The divergence's name or one of its aliases.

    Returns
    -------
    None

    Raises
    ------
    ValueError
        No divergence of that name, or a built-in one.
    """
    key = _ALIASES.get(_canonical(name))
    if key is None:
        raise ValueError(f"no divergence named {name!r} is registered.")
    div = _REGISTRY[key]
    if div.builtin:
        raise ValueError(f"the built-in divergence {key!r} cannot be removed.")
    del _REGISTRY[key]
    for a in (key,) + tuple(div.aliases):
        if _ALIASES.get(a) == key:  # only the names this divergence owns
            _ALIASES.pop(a, None)


_PROBES = {
    "real": np.array([-3.0, -1.0, -0.25, 0.0, 0.5, 1.0, 2.5]),
    "nonnegative": np.array([1e-3, 0.1, 0.5, 1.0, 2.0, 7.0]),
    "positive": np.array([1e-3, 0.1, 0.5, 1.0, 2.0, 7.0]),
}


#: Compiled scalar functions by the content of their source (see :func:`_source_key`), with
#: the objects the key refers to by id (kept alive so an id is never reused). numba never frees
#: machine code, so registering the same functions again must reuse the compiled ones.
_JIT_CACHE = {}


class _Unkeyable(Exception):
    """A value whose content the compile cache cannot key: the function is compiled afresh."""


def _freeze(value, refs, names, depth=0):
    """A hashable stand-in for a value numba freezes into the compiled code (a global, a cell,
    a default): the value itself for scalars and strings, a digest of the content for numpy
    arrays, the referenced attributes (``names``) for modules, and the identity for functions
    and classes (numba dispatchers, builtins, ufuncs, Python functions, types). Anything else
    (lists, dicts, other objects, whose content can change under the same identity) raises
    :class:`_Unkeyable`."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return (type(value).__name__, value)
    if isinstance(value, np.generic):
        return ("numpy scalar", value.dtype.str, value.tobytes())
    if isinstance(value, tuple):
        return ("tuple",) + tuple(_freeze(v, refs, names, depth) for v in value)
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise _Unkeyable
        data = np.ascontiguousarray(value).tobytes()
        return ("ndarray", value.dtype.str, value.shape, hashlib.sha256(data).hexdigest())
    if isinstance(value, types.ModuleType):
        if depth >= 3:
            raise _Unkeyable
        attrs = tuple((nm, _freeze(getattr(value, nm), refs, names, depth + 1))
                      for nm in sorted(names) if hasattr(value, nm))
        return ("module", value.__name__) + attrs
    if isinstance(value, (CPUDispatcher, types.BuiltinFunctionType, types.FunctionType, np.ufunc,
                          type)):
        refs.append(value)
        return ("id", id(value))
    raise _Unkeyable


def _source_key(fn):
    """A key equal for two functions numba compiles to the same code: the same bytecode,
    constants, names, defaults, and the same *content* of the closure values and referenced
    globals (an array changed in place gives a new key); ``None`` if a referenced value cannot
    be keyed by content (see :func:`_freeze`). Returns ``(key, refs)``."""
    code = getattr(fn, "__code__", None)
    glb = getattr(fn, "__globals__", None)
    if code is None or glb is None:
        return None
    refs = []
    names, stack = set(), [code]
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if hasattr(k, "co_code"))
    try:
        key = (
            code,
            tuple((nm, _freeze(glb[nm], refs, names)) for nm in sorted(names) if nm in glb),
            tuple(_freeze(c.cell_contents, refs, names) for c in (fn.__closure__ or ())),
            _freeze(fn.__defaults__, refs, names),
            _freeze(getattr(fn, "__kwdefaults__", None), refs, names),
        )
        hash(key)
    except (_Unkeyable, TypeError, ValueError):  # unkeyable or unhashable value, empty cell
        return None
    return key, refs


def _wrap(fn):
    """A Python function of one argument calling the builtin or ufunc ``fn`` (numba compiles
    calls to ``math``/numpy functions, not the objects themselves)."""
    def scalar(x):
        return fn(x)

    scalar.__name__ = scalar.__qualname__ = getattr(fn, "__name__", "scalar")
    scalar.wraps = fn
    return scalar


def _compile(fn, what, name):
    """The scalar function ``fn`` compiled with numba (a dispatcher is used as given)."""
    if fn is None:
        return None
    if isinstance(fn, CPUDispatcher):
        return fn
    if isinstance(fn, (types.BuiltinFunctionType, np.ufunc)):
        # math.exp, np.exp, ...: compiled through a Python wrapper, cached by the object itself
        hit = _JIT_CACHE.get(("builtin", fn))
        if hit is not None:
            return hit[0]
        disp = njit(nogil=True, error_model="numpy")(_wrap(fn))
        _JIT_CACHE[("builtin", fn)] = (disp, [], fn)
        return disp
    if not isinstance(fn, types.FunctionType):
        kind = "not callable" if not callable(fn) else f"a callable {type(fn).__name__} object"
        raise TypeError(
            f"{what} for divergence {name!r} must be a function numba can compile (a def or "
            f"lambda of one float, a math/numpy function such as math.exp, or a numba.njit "
            f"function), got {kind}; pass such a function, e.g. {what}=lambda x: ..."
        )
    found = _source_key(fn)
    if found is not None and found[0] in _JIT_CACHE:
        return _JIT_CACHE[found[0]][0]
    disp = njit(nogil=True, error_model="numpy")(fn)
    if found is not None:
        _JIT_CACHE[found[0]] = (disp, found[1], fn)
    return disp


def _call(fn, x, what, name):
    try:
        return float(fn(float(x)))
    except (ValueError, ZeroDivisionError, OverflowError):
        return math.nan  # plain-Python math errors (e.g. with NUMBA_DISABLE_JIT): not finite
    except NumbaError as exc:
        wrapped = getattr(getattr(fn, "py_func", None), "wraps", None)
        if wrapped is not None:
            raise TypeError(
                f"{what} of divergence {name!r} is {wrapped!r}, which numba cannot compile; write "
                f"{what} as a function of one float using math/numpy operations numba supports."
            ) from exc
        lines = [ln.strip() for ln in re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).splitlines()]
        reason = next((ln for ln in lines if ln and not ln.startswith(("Failed in", "During:"))),
                      type(exc).__name__)
        raise TypeError(
            f"{what} of divergence {name!r} cannot be compiled by numba ({reason[:200]}); write it "
            "as a function of one float using math/numpy scalar operations."
        ) from exc
    except Exception as exc:  # the user's own exception at a probe point
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
        Python functions of one float using ``math``/numpy scalar operations, ``math``/numpy
        functions themselves (``math.exp``, ``np.exp``), or numba dispatchers; they are
        compiled with numba. Callable objects are refused (numba cannot compile them).
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

    numba freezes the globals a function reads (numbers, arrays) into its compiled code, so a
    later change of such a global does not reach a registered divergence: register it again.
    Registering functions whose code and globals are unchanged reuses the compiled code.

    An exception raised by a function inside a compiled kernel cannot cross the kernel: the
    call returns NaN and the failure is recorded, once per kernel call, not printed per
    element. Agglomerative clustering then raises the function's exception (with a note naming
    the function and the argument) when the kernel returns; elsewhere the NaN shows as a
    non-finite divergence.

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
    for key in (cname, *aliases):
        owner = _reserved(key)
        if owner is not None:
            raise ValueError(
                f"the name {key!r} is already registered for the built-in divergence "
                f"{owner!r}; built-in names and aliases are reserved (even with "
                "overwrite=True), so choose another name."
            )
    if not overwrite and (cname in _ALIASES or any(a in _ALIASES for a in aliases)):
        taken = [k for k in (cname, *aliases) if k in _ALIASES]
        raise ValueError(
            f"the name {taken[0]!r} is already registered (for {_ALIASES[taken[0]]!r}); choose "
            "another name or pass overwrite=True."
        )
    f = _compile(phi, "phi", cname)
    df = _compile(dphi, "dphi", cname)
    code = KG.DOMAIN_CODES[domain]
    inv = _compile(dphi_inv, "dphi_inv", cname) if dphi_inv is not None else KG.make_inverse(df, code)

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
    gen = Generator(KG.CUSTOM, f, df, inv, domain, name=cname)
    div = Divergence(
        name=cname, aliases=aliases, domain=domain, separable=True, symmetric=bool(symmetric),
        differentiable=True, phi=f, dphi=df, dphi_inv=inv, formula=formula,
        generator=gen, form=F.SeparableForm(gen),
        centroid_rule=_symmetric_centroid if symmetric else _bisection_centroid,
    )
    if symmetric:
        P = xs.reshape(-1, 1)
        D = div.generic_pairwise(P, P)
        if not np.allclose(D, D.T, rtol=1e-8, atol=1e-12):
            raise ValueError(f"{cname!r} was declared symmetric but d(x, y) != d(y, x) at the probe points.")
    _add(div, overwrite=overwrite)
    return div


def _builtin(name, aliases, domain, code, phi, dphi, inv, formula, *, symmetric=False,
             centroid=None, form=None, differentiable=True, ward=False, param_names=(),
             binder=None, translation_invariant=False, homogeneity=None,
             coordinate_scale_invariant=False, phi_values=None, spherical=False):
    gen = Generator(code, phi, dphi, inv, domain, name=name) if phi is not None else None
    if form is None and gen is not None:
        form = F.SeparableForm(gen)
    div = Divergence(
        name=name, aliases=aliases, domain=domain, separable=gen is not None,
        symmetric=symmetric, differentiable=differentiable, phi=phi, dphi=dphi, dphi_inv=inv,
        formula=formula, builtin=True, generator=gen, form=form(gen) if isinstance(form, type)
        else form, centroid_rule=centroid, ward=ward, param_names=param_names, binder=binder,
        translation_invariant=translation_invariant, homogeneity=homogeneity,
        coordinate_scale_invariant=coordinate_scale_invariant,
        phi_rule=phi_values, spherical=spherical,
    )
    _add(div)


_builtin("sqeuclidean", ("euclidean2", "squared_euclidean", "l2sq", "sq_euclidean"), "real",
         KG.SQ, K.sq_phi, K.sq_dphi, K.sq_dphi_inv, "sum (x - y)^2", symmetric=True,
         centroid=_symmetric_centroid, ward=True, translation_invariant=True, homogeneity=2)
_builtin("mahalanobis", ("mahal",), "real", None, None, None, None,
         "(x - y)^T A (x - y), A SPD", symmetric=True, centroid=_symmetric_centroid, ward=True,
         param_names=("A",), binder=_bind_mahalanobis, translation_invariant=True,
         homogeneity=2)
_builtin("kl", ("gkl", "i_divergence", "kullback_leibler", "generalized_kl", "generalised_kl"),
         "nonnegative", KG.KL, K.kl_phi, K.kl_dphi, K.kl_dphi_inv, "sum x log(x/y) - x + y",
         centroid=_kl_centroid, homogeneity=1, phi_values=_kl_phi)
_builtin("itakura_saito", ("is", "itakura"), "positive", KG.IS, K.is_phi, K.is_dphi,
         K.is_dphi_inv, "sum x/y - log(x/y) - 1", centroid=_is_centroid, homogeneity=0,
         coordinate_scale_invariant=True, phi_values=_is_phi)
_builtin("l1_subgradient", ("l1", "l1_sub"), "real", KG.ABS, K.abs_phi, K.sign_dphi, None,
         "sum (0 if x y > 0 else 2 |x|)", form=F.L1Form, differentiable=False, homogeneity=1)
_builtin("cosine", ("spherical", "cos"), "real", None, None, None, None,
         "1 - <x, y> / (|x| |y|)", symmetric=True, form=F.CosineForm(), homogeneity=0,
         spherical=True)


def divergence_table():
    """The registry as a table, one row per divergence.

    Returns
    -------
    rows : list of tuple
        ``(name, aliases, domain of x / y, d(x, y), symmetric, differentiable)``.
    """
    rows = []
    for name, d in _REGISTRY.items():
        rows.append((name, ", ".join(d.aliases), f"{_DOM_TXT[d.domain]} / {_DOM_TXT[d.right_domain]}",
                     d.formula, d.symmetric, d.differentiable))
    return rows


_DOM_TXT = {"real": "R", "nonnegative": ">= 0", "positive": "> 0"}
