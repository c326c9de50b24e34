"""Bregman soft clustering: mixtures of exponential families (Banerjee et al., 2005, Sec. 5).

A regular exponential family and a Bregman divergence determine each other: the density of a
component with mean ``mu`` is ``p(x | mu) = exp(-beta d_phi(x, mu)) b_beta(x)``. A mixture of
such components is fitted by EM, whose E-step is the k-means assignment pass with a
log-sum-exp per row (:func:`bregclust._mixture_pass.mixture_block`, one read of the data) and whose
M-step is the responsibility-weighted mean, exact for every Bregman divergence.

:class:`BregmanMixture` is the estimator (scikit-learn's ``GaussianMixture`` manners);
:func:`select_n_clusters` chooses the number of clusters of :class:`~bregclust.BregmanKMeans`
by the information criterion of its hard-assignment (classification) likelihood.
"""

import math
import numbers
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln, polygamma, psi, xlogy
from sklearn.base import BaseEstimator, DensityMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from . import _conditioning as C
from . import _execution as E
from . import _mixture_init as MI
from . import _mixture_pass as MP
from ._callbacks import fit_callbacks
from ._centroid import DivergenceEstimatorMixin, lloyd
from ._mixture_init import (
    mixture_smoothing,
    one_hot,
)
from ._progress import progress
from ._seeding import seed_centres, seeding_method
from ._selection import cross_validated_loglik
from ._smoothing import push_inside
from ._sources import as_source
from ._validation import (
    EmptyClusterWarning,
    check_array,
    check_finite,
    check_n_clusters,
    check_scalar,
    user_stacklevel,
)
from ._vmf import VonMisesFisherFamily
from .divergences import get_divergence
from .kmeans import BregmanKMeans

__all__ = ["BregmanMixture", "select_n_clusters", "ClusterCountSelection", "FAMILIES",
           "gamma_shape"]

_LOG2 = math.log(2.0)
_EPS = float(np.finfo(np.float64).eps)


# ----------------------------------------------------------------------------- the families
def _log_minus_digamma(a):
    """``log a - psi(a)`` without cancellation for large ``a`` (its asymptotic series)."""
    a = np.asarray(a, dtype=np.float64)
    out = np.empty_like(a)
    big = a >= 20.0
    small = ~big
    out[small] = np.log(a[small]) - psi(a[small])
    b = a[big]
    i2 = 1.0 / (b * b)
    out[big] = (0.5 / b + i2 * (1.0 / 12 - i2 * (1.0 / 120 - i2 * (1.0 / 252 - i2 * (
        1.0 / 240 - i2 / 132)))))
    return out


def _log_minus_digamma_prime(a):
    """Derivative of :func:`_log_minus_digamma`: ``1/a - psi'(a)`` (negative)."""
    a = np.asarray(a, dtype=np.float64)
    out = np.empty_like(a)
    big = a >= 20.0
    small = ~big
    out[small] = 1.0 / a[small] - polygamma(1, a[small])
    b = a[big]
    i2 = 1.0 / (b * b)
    out[big] = -(0.5 * i2 + i2 / b * (1.0 / 6 - i2 * (1.0 / 30 - i2 * (1.0 / 42 - i2 * (
        1.0 / 30 - i2 * 10.0 / 132)))))
    return out


def gamma_shape(m):
    """The Gamma shape ``a`` solving ``log a - psi(a) = m`` (the shape step of a Gamma fit).

    ``m`` is the mean Itakura-Saito divergence per coordinate of the points to their
    (weighted) mean, ``log mean(x) - mean(log x)`` for one coordinate: the maximum-likelihood
    shape of a Gamma sample. Solved by Minka's generalised Newton iteration on ``1/a`` (each
    step a Newton step of a function of ``1/a`` that is nearly linear), started from his
    closed-form approximation, to full precision.

    Parameters
    ----------
    m : array-like of float, ``m > 0``

    Returns
    -------
    ndarray
        ``inf`` where ``m <= 0`` (no dispersion at all).

    References
    ----------
    T. Minka. Estimating a Gamma distribution. Technical report, 2002.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.special import psi
    >>> a = gamma_shape([0.05, 1.0, 20.0])
    >>> bool(np.allclose(np.log(a) - psi(a), [0.05, 1.0, 20.0]))
    True
    """
    m = np.atleast_1d(np.asarray(m, dtype=np.float64))
    out = np.full(m.shape, np.inf)
    pos = m > 0
    if not pos.any():
        return out
    mm = m[pos]
    a = (3.0 - mm + np.sqrt((mm - 3.0) ** 2 + 24.0 * mm)) / (12.0 * mm)
    for _ in range(100):
        f = _log_minus_digamma(a) - mm
        fp = _log_minus_digamma_prime(a)
        inv = 1.0 / a + f / (a * a * fp)
        new = np.where(inv > 0, 1.0 / np.where(inv > 0, inv, 1.0), 0.5 * a)
        done = np.all(np.abs(new - a) <= 4 * _EPS * a)
        a = new
        if done:
            break
    out[pos] = a
    return out


class _Family:
    """One exponential family: the constants of its log-density ``alpha_h - beta_h d(x, u_h)
    + b(x)`` given the component's precision ``beta``, its base measure and its dispersion.

    Families hold no divergence (only its name's constants), so they travel to dask workers
    by reference; the divergence is passed beside them.
    """

    name = ""
    divergences = ()  # built-in divergences it goes with; () for registered generators
    fitted = False  # its dispersion can be fitted
    known = True  # its base measure is known (a true log-likelihood)
    simplex = False  # means are probability vectors
    sphere = False  # means are unit directions (d - 1 free parameters each)
    conditions = False  # data may be rescaled by powers of two (a density, with a Jacobian)
    degree = 0  # dispersion scales as (data scale)^degree

    def __init__(self, const=0.0):
        self.const = float(const)

    def __reduce__(self):
        return (type(self), (self.const,))

    def bound(self, d):
        """The family for data of dimension ``d`` (the same object unless it needs ``d``)."""
        return self

    def beta(self, dispersion):
        """Precision ``beta`` of a dispersion (``log p = -beta d + ...``)."""
        return 1.0 / np.asarray(dispersion, dtype=np.float64)

    def dispersion(self, beta):
        return 1.0 / np.asarray(beta, dtype=np.float64)

    def alpha_part(self, beta, d):
        """The part of ``log b_beta(x)`` that depends on the component (its precision)."""
        return np.full(np.shape(beta), self.const)

    def row_base(self, X):
        """The part of ``log b(x)`` that depends on the row only (per row)."""
        return np.zeros(X.shape[0])

    def solve(self, m):
        """Dispersion from ``m``: the weighted mean divergence per coordinate of a component's
        points to its mean (the dispersion's maximum-likelihood step)."""
        raise NotImplementedError

    def jacobian(self, cond, d):
        """``log |dx' / dx|`` per row for the conditioning ``cond`` (``x' = x 2^-e``): the
        log-density of the data is that of the conditioned data plus this."""
        if not self.conditions:
            return 0.0
        e = d * cond.scale
        if cond.col_scale is not None:
            e += float(np.sum(cond.col_scale))
        return -_LOG2 * e

    def to_conditioned(self, dispersion, cond):
        """A dispersion in the data's units, in the conditioned units."""
        p = self.degree * cond.scale
        return np.ldexp(np.asarray(dispersion, dtype=np.float64), -p) if p else dispersion

    def from_conditioned(self, dispersion, cond):
        p = self.degree * cond.scale
        if not p:
            return np.asarray(dispersion, dtype=np.float64)
        with np.errstate(over="ignore", under="ignore"):
            return np.ldexp(np.asarray(dispersion, dtype=np.float64), p)


class _Gaussian(_Family):
    """Gaussian with covariance ``s^2 I`` (sqeuclidean) or ``s^2 A^-1`` (mahalanobis):
    ``log p = -d(x, mu) / (2 s^2) - (d/2) log(2 pi s^2) + (1/2) log det A``."""

    name = "gaussian"
    divergences = ("sqeuclidean", "mahalanobis")
    fitted = True
    conditions = True
    degree = 2

    def beta(self, dispersion):
        return 0.5 / np.asarray(dispersion, dtype=np.float64)

    def dispersion(self, beta):
        return 0.5 / np.asarray(beta, dtype=np.float64)

    def alpha_part(self, beta, d):
        return 0.5 * d * np.log(np.asarray(beta) / math.pi) + self.const

    def solve(self, m):
        return np.asarray(m, dtype=np.float64)


class _Gamma(_Family):
    """Gamma with shape ``a`` and mean ``mu`` per coordinate (Itakura-Saito, ``beta = a``):
    ``log p = -a d_IS(x, mu) + sum_l (a log a - a - lgamma(a) - log x_l)``."""

    name = "gamma"
    divergences = ("itakura_saito",)
    fitted = True
    conditions = True
    degree = 0

    def alpha_part(self, beta, d):
        a = np.asarray(beta, dtype=np.float64)
        out = np.empty_like(a)
        big = a >= 30.0
        s = a[~big]
        out[~big] = xlogy(s, s) - s - gammaln(s)
        b = a[big]  # Stirling's series: the three terms above cancel to O(log a)
        out[big] = (0.5 * np.log(b / (2 * math.pi)) - 1.0 / (12 * b) + 1.0 / (360 * b ** 3)
                    - 1.0 / (1260 * b ** 5))
        return d * out

    def row_base(self, X):
        return -np.log(X).sum(axis=1)

    def solve(self, m):
        return 1.0 / gamma_shape(m)


def _poisson_rows(X):
    """``sum_l x_l log x_l - x_l - lgamma(x_l + 1)`` per row (0 for a zero entry; NaN where
    it overflows, which the caller refuses)."""
    with np.errstate(over="ignore", invalid="ignore"):
        if sp.issparse(X):
            v = xlogy(X.data, X.data) - X.data - gammaln(X.data + 1.0)
            rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
            return np.bincount(rows, weights=v, minlength=X.shape[0])
        return (xlogy(X, X) - X - gammaln(X + 1.0)).sum(axis=1)


class _Poisson(_Family):
    """Independent Poisson counts with means ``mu`` (generalised I-divergence, the registry's
    ``kl``): ``log p = -d(x, mu) + sum_l (x_l log x_l - x_l - lgamma(x_l + 1))``."""

    name = "poisson"
    divergences = ("kl",)

    def beta(self, dispersion):
        return np.ones(np.shape(dispersion))

    def dispersion(self, beta):
        return np.ones(np.shape(beta))

    def row_base(self, X):
        return _poisson_rows(X)


class _Multinomial(_Poisson):
    """Multinomial counts with probabilities ``p`` and the row's total ``N`` trials:
    ``log p = -d(x, p) + sum_l (x_l log x_l - x_l - lgamma(x_l + 1)) + 1 + lgamma(N + 1)``,
    ``d`` the registry's ``kl`` between the counts and ``p`` (``sum p = 1``)."""

    name = "multinomial"
    simplex = True

    def row_base(self, X):
        N = np.asarray(X.sum(axis=1)).ravel()
        return _poisson_rows(X) + 1.0 + gammaln(N + 1.0)


class _Custom(_Family):
    """A registered generator: ``log p = -d(x, mu) / dispersion + log b(x)`` with ``b``
    unknown (a log-likelihood up to a constant)."""

    name = "custom"
    known = False


#: The families and the divergences each goes with (``"custom"``: any registered generator).
FAMILIES = {"gaussian": ("sqeuclidean", "mahalanobis"), "multinomial": ("kl",),
            "poisson": ("kl",), "gamma": ("itakura_saito",), "custom": ()}
_CLASSES = {"gaussian": _Gaussian, "multinomial": _Multinomial, "poisson": _Poisson,
            "gamma": _Gamma, "custom": _Custom}
_AUTO = {"sqeuclidean": "gaussian", "mahalanobis": "gaussian", "kl": "multinomial",
         "itakura_saito": "gamma"}
FAMILIES["vmf"] = ("cosine",)  # von Mises-Fisher (bregclust._vmf)
_CLASSES["vmf"] = VonMisesFisherFamily
_AUTO["cosine"] = "vmf"


def _family(div, family):
    """The family object of a divergence and the ``family`` parameter."""
    if not div.differentiable:
        raise ValueError(f"divergence {div.name!r} is not differentiable and belongs to no "
                         "exponential family; use a differentiable divergence.")
    if not isinstance(family, str):
        raise TypeError(f"family must be a string, got {family!r}.")
    if family == "auto":
        family = _AUTO.get(div.name, "custom" if not div.builtin else None)
    if family not in _CLASSES:
        raise ValueError(f"family must be 'auto' or one of {sorted(_CLASSES)}, got {family!r}.")
    allowed = FAMILIES[family]
    if (allowed and div.name not in allowed) or (not allowed and div.builtin):
        fams = [f for f, divs in FAMILIES.items() if div.name in divs] or ["custom"]
        raise ValueError(f"family {family!r} does not go with divergence {div.name!r}; use "
                         f"family={fams[0]!r} (or 'auto').")
    const = 0.0
    if family == "gaussian" and div.name == "mahalanobis":
        const = 0.5 * float(np.linalg.slogdet(div.param("A"))[1])
    return _CLASSES[family](const)


def _init_vector(value, k, name):
    """A scalar or ``k`` real numbers of an init dict as float64 (the shape and type named in
    the message, not numpy's broadcast or conversion error)."""
    v = np.asarray(value)
    if v.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a number or {k} numbers, got {value!r}.")
    if v.ndim > 1 or (v.ndim == 1 and v.shape[0] != k):
        raise ValueError(f"{name} must be a number or {k} numbers (one per component), got "
                         f"shape {v.shape}.")
    return v.astype(np.float64)


def _dispersion_param(fam, dispersion, div):
    """``(mode, fixed)``: ``"component"``, ``"tied"`` or ``"fixed"`` and the fixed value."""
    if isinstance(dispersion, str):
        if dispersion == "auto":
            if fam.name == "gaussian" and div.name == "mahalanobis":
                return "fixed", 1.0
            return ("component", None) if fam.fitted else ("fixed", 1.0)
        if dispersion not in ("component", "tied"):
            raise ValueError("dispersion must be 'auto', 'component', 'tied' or a positive "
                             f"float, got {dispersion!r}.")
        if not fam.fitted:
            why = ("its base measure is unknown, so the likelihood of a dispersion cannot be "
                   "compared" if not fam.known else "it has no dispersion parameter")
            raise ValueError(f"the {fam.name} family cannot fit a dispersion ({why}); use "
                             "dispersion='auto'" + (" or a positive float." if not fam.known
                                                    else "."))
        return dispersion, None
    check_scalar(dispersion, "dispersion", lo=0.0, lo_closed=False, finite=True)
    if fam.name in ("poisson", "multinomial") and float(dispersion) != 1.0:
        raise ValueError(f"the {fam.name} family has no dispersion parameter (it is 1); use "
                         "dispersion='auto'.")
    return "fixed", float(dispersion)


# ----------------------------------------------------------------------------- block passes
@dataclass
class _Setup:
    """``sum_i w_i b(x_i)`` (the row part of the base measure) and ``sum_i w_i phi(x_i)``."""

    base: float
    wphi: float
    wx: object = None  # sum_i w_i x_i of the conditioned rows (families on the sphere)


def setup_block(block, div, family):
    """The base-measure and ``phi`` sums of one block (conditioned units)."""
    w = block.weights()
    phi_x = block.prepared(div)[1]
    b = family.row_base(block.X)
    pos = w > 0
    wx = E.column_sums(w, block.X) if family.sphere else None
    with np.errstate(over="ignore", invalid="ignore"):
        return _Setup(base=float(w[pos] @ b[pos]), wphi=float(w @ phi_x), wx=wx)


class _Model:
    """A fitted mixture in the data's units, as the per-block evaluation needs it."""

    __slots__ = ("family", "means", "logpi", "dispersion")

    def __init__(self, family, means, logpi, dispersion):
        self.family = family
        self.means = means
        self.logpi = logpi
        self.dispersion = dispersion

    def __reduce__(self):
        return (_Model, (self.family, self.means, self.logpi, self.dispersion))


def evaluate_rows(X, div, model, what):
    """Labels, responsibilities or log-densities of validated rows under a fitted model.

    The rows are conditioned with the means (power-of-two scales, centring far from the
    origin; :func:`bregclust._conditioning.for_assignment`) when the family allows it, and
    log-densities are returned in the data's units.

    Parameters
    ----------
    X : ndarray or CSR matrix
    div : Divergence
    model : _Model
    what : {"labels", "proba", "log"}

    Returns
    -------
    ndarray
    """
    fam = model.family
    n, d = X.shape
    U = np.ascontiguousarray(model.means, dtype=np.float64)
    cond = C.for_assignment(div, X, U) if fam.conditions else C.IDENTITY
    if not cond.data_identity:
        X = cond.apply(X)
        U = cond.apply_centres(U)
    with np.errstate(divide="ignore", over="ignore"):
        beta = fam.beta(fam.to_conditioned(model.dispersion, cond))
        alpha = model.logpi + fam.alpha_part(beta, d)
    mc = MP.prepare_mixture(div, U, alpha, beta)
    e = MP.mixture_pass(div, X, E.prepare(div, X), mc, np.ones(n), accumulate=False,
                        keep_resp=what == "proba")
    labels, lse, resp = e.labels, e.lse, e.resp
    if what == "labels":
        return labels
    if what == "proba":
        return resp
    with np.errstate(invalid="ignore"):
        return lse + fam.row_base(X) + fam.jacobian(cond, d)


def score_block(block, div, model):
    """``(sum_i w_i log p(x_i), sum_i w_i)`` of a block (data units)."""
    w = block.weights()
    ll = evaluate_rows(block.X, div, model, "log")
    pos = w > 0
    with np.errstate(invalid="ignore", over="ignore"):
        return float(w[pos] @ ll[pos]), float(w.sum())


def _rows_l1(X):
    """Rows divided by their totals (empty rows stay 0)."""
    N = np.asarray(X.sum(axis=1), dtype=np.float64).ravel()
    inv = np.divide(1.0, N, out=np.zeros_like(N), where=N > 0)
    if sp.issparse(X):
        return sp.csr_matrix(sp.diags(inv) @ X)
    return X * inv[:, None]


def _row_totals(X):
    return np.asarray(X.sum(axis=1), dtype=np.float64).ravel()


def _simplex_view(src):
    """The source that a multinomial's hard counterpart clusters: rows ``x / N`` with weights
    ``w N`` (``N`` the row's total), since ``log p(x | p) = -N KL(x/N || p) + const``."""
    return src.reweighted(_rows_l1, _row_totals)


# ----------------------------------------------------------------------------- the EM loop
@dataclass
class _Params:
    """Means, log mixing weights and precisions (conditioned units)."""

    U: np.ndarray
    logpi: np.ndarray
    beta: np.ndarray

    def centres(self, div, fam, temper=1.0):
        """The E-step's components; ``temper`` < 1 (annealed EM) multiplies every logit
        ``alpha_h - beta_h d(x, u_h)`` by it, so the responsibilities are proportional to
        ``(pi_h p(x | h))^temper`` (the row's base measure cancels)."""
        d = self.U.shape[1]
        with np.errstate(divide="ignore"):
            alpha = self.logpi + fam.alpha_part(self.beta, d)
        if temper != 1.0:
            return MP.prepare_mixture(div, self.U, temper * alpha, temper * self.beta)
        return MP.prepare_mixture(div, self.U, alpha, self.beta)


@dataclass
class _Candidate:
    """A fitted number of components (:meth:`BregmanMixture._criterion`): the best run, its
    smoothing, mean log-likelihood per unit weight on the training data, the dispersion
    regularisation (conditioned units), the criterion (lower is better; ``criterion="cv"``
    replaces it by minus the held-out log-likelihood) and the labels of the final E-step (None
    for a chunked source)."""

    run: object
    k: int
    smoothing: float
    mean_ll: float
    reg: float
    criterion: float
    labels: object = None


@dataclass
class _Setting:
    """What every EM step of one fit shares (conditioned units)."""

    div: object
    fam: object
    mode: str
    d: int
    s: float  # smoothing pseudo-count
    z: object  # smoothing point
    reg: float  # added to every fitted dispersion
    unit: float  # the one-component dispersion
    base: float  # sum_i w_i b(x_i)
    wtot: float  # sum_i w_i
    n: int
    jac: float  # per-row log Jacobian of the conditioning
    beta_fixed: object = None  # a fixed precision (select_n_clusters)
    hard: bool = False  # classification EM (assignment="hard")

    @property
    def tiny(self):
        """A component with less total weight holds no sample: degenerate."""
        return 10.0 * _EPS * self.wtot / max(self.n, 1)


def _penalty(st, p):
    """``s sum_h beta_h d(z, u_h)``: the smoothing term of the objective."""
    if st.s <= 0:
        return 0.0
    dz = E.pairwise(st.div, st.z[None, :], p.U)[0]
    return st.s * float(p.beta @ dz)


def within_block(block, div, mc, U, hard):
    """``sum_i w_i r_ih d(x_i, u_h)`` of a block by the definition of ``d``, ``r`` the
    responsibilities of the E-step of ``mc`` (as a tuple of floats, added over blocks)."""
    X, w = block.X, block.weights()
    resp = MP.mixture_pass(div, X, block.prepared(div), mc, w, hard=hard, accumulate=False,
                           keep_resp=True).resp
    Xd = X.toarray() if sp.issparse(X) else X
    D = E.exact_pairwise(div, np.ascontiguousarray(Xd, dtype=np.float64), U)
    R = resp * w[:, None]
    with np.errstate(invalid="ignore", over="ignore"):
        J = np.where(R > 0, R * D, 0.0).sum(axis=0)
    return tuple(float(v) for v in J)


#: ``_within`` re-evaluates ``J`` by the definition when its closed form keeps fewer than
#: about eight significant digits (as :data:`bregclust._execution.PAIRWISE_DIGITS_GUARD`).
WITHIN_DIGITS_GUARD = 2.0 ** 26


def _within(st, S, W, Phi, U, exact=None):
    """``J_h = sum_i w_i r_ih d(x_i, u_h)`` from the sums, for any ``u_h``:
    ``Phi_h - W_h phi(u_h) - <S_h - W_h u_h, grad phi(u_h)>``, plus the smoothing point's
    ``s d(z, u_h)``.

    The closed form is a difference of terms that can be far larger than ``J_h`` (a tight
    component far from the origin: ``phi`` near 1e8, ``J_h`` near 1e-4). When it may have
    lost its digits, and ``exact = (source, mc, hard)`` names the E-step that gave the sums,
    ``J`` is evaluated again by the definition in one more pass over the data
    (:func:`within_block`), as :func:`bregclust._execution.pairwise` guards the k-means
    passes."""
    pc = E.prepare_centres(st.div, U)
    with np.errstate(invalid="ignore", over="ignore"):
        dot = np.einsum("ij,ij->i", S - W[:, None] * U, pc.G)
        J = Phi - W * pc.phi - dot
        bound = _EPS * (np.abs(Phi) + np.abs(W * pc.phi) + np.abs(np.einsum("ij,ij->i", S, pc.G))
                        + np.abs(W * np.einsum("ij,ij->i", U, pc.G)))
    live = W > 0
    if exact is not None and np.any(live & ~(J > WITHIN_DIGITS_GUARD * bound)):
        src, mc, hard = exact
        J = np.asarray(src.run(within_block, st.div, mc, np.ascontiguousarray(U), hard),
                       dtype=np.float64)
    J = np.where(np.isfinite(J) & (J > 0), J, 0.0)
    if st.s > 0:
        J = J + st.s * E.pairwise(st.div, st.z[None, :], U)[0]
    return J


def _dispersion_step(st, J, W, prev, live):
    """Precisions from the within-component divergences ``J`` (mode component or tied)."""
    fam = st.fam
    beta = prev.copy()
    if st.mode == "fixed":
        return beta
    tot = float(W[live].sum())
    if tot <= 0:
        return beta
    if st.mode == "tied":
        m = float(J[live].sum()) / (tot * st.d)
        return np.full(beta.shape, float(fam.beta(fam.solve(np.array([m]))[0] + st.reg)))
    with np.errstate(divide="ignore", invalid="ignore"):
        m = J[live] / (W[live] * st.d)
    beta[live] = fam.beta(fam.solve(m) + st.reg)
    return beta


def _m_step(st, part, prev, exact=None):
    """The exact M-step from the E-step's sums; returns ``(params, degenerate components)``.
    ``exact``: the E-step's ``(source, mc, hard)`` (see :func:`_within`)."""
    S, W, Phi = part.S, part.W, part.Phi
    fam = st.fam
    mass = S.sum(axis=1) if fam.simplex else W
    dead = (W <= st.tiny) | (mass + st.s <= 0)
    live = ~dead
    U = prev.U.copy()
    if live.any():
        num = S[live] + (st.s * st.z if st.s > 0 else 0.0)
        U[live] = num / (mass[live] + st.s)[:, None]
    with np.errstate(divide="ignore"):
        logpi = np.log(W / W.sum())
    beta = prev.beta
    if fam.fitted and st.mode != "fixed":
        J = _within(st, S, W, Phi, U, exact)
        beta = _dispersion_step(st, J, W, prev.beta, live)
    return _Params(U, logpi, beta), np.flatnonzero(dead)


def _objective(st, part, p, temper=1.0):
    """The per-sample objective EM increases (data units): the mean log-likelihood minus the
    smoothing term per unit weight. With ``temper`` < 1 (the E-step of ``p.centres(...,
    temper)``) the log-likelihood is replaced by the annealed one,
    ``(1 / temper) sum_i w_i log sum_h (pi_h p(x_i | h))^temper`` (minus the free energy of
    Ueda & Nakano, 1998), which annealed EM increases at a fixed ``temper``."""
    ll = part.loglik if temper == 1.0 else part.loglik / temper
    with np.errstate(invalid="ignore", over="ignore"):
        return (ll + st.base - _penalty(st, p)) / st.wtot + st.jac


@dataclass
class _Prepared:
    """One fit's conditioning and the constants every candidate shares."""

    cond: object
    srcc: object
    counts: tuple
    mean: np.ndarray
    shared: dict

    def setting(self, s):
        """The :class:`_Setting` of smoothing ``s`` (conditioned units)."""
        z = None
        if s > 0:
            fam, div = self.shared["fam"], self.shared["div"]
            z = push_inside(self.mean, div)
            if fam.simplex:
                z = z / z.sum()
        return _Setting(s=float(s), z=z, **self.shared)


def _prepare(src, div, fam, mode, reg_dispersion):
    """The statistics pass, the conditioning (power-of-two scales and centring for the
    densities that allow it, the weights' scale for all), the base-measure pass and the
    dispersion unit of one fit."""
    stats = src.stats(div)
    if fam.conditions:
        cond = C.decide(div, stats)
    else:
        cond = C.Conditioning(weight_scale=C.exponent(stats.wmax))
    srcc = src.conditioned(cond)
    d = src.d
    fam = fam.bound(d)
    setup = srcc.run(setup_block, div, fam)
    wtot = float(np.ldexp(stats.weight, stats.wexp - cond.weight_scale))
    mean = cond.mean(stats)
    counts = stats.counts()
    if fam.simplex:
        words = float(np.sum(mean)) * wtot
        if not words > 0:
            raise ValueError("the multinomial family needs at least one row with a positive "
                             "total count; X has none.")
        counts = counts[:3] + (float(np.ldexp(words, cond.weight_scale)),)
    if not np.isfinite(setup.base):
        raise ValueError(
            f"the {fam.name} log-likelihood of X is not finite (float64 overflow at entries up "
            f"to {stats.maxabs:g}); this family is not scale-invariant, so X cannot be "
            "rescaled for you.")
    unit = 1.0
    if fam.fitted:
        with np.errstate(invalid="ignore", over="ignore"):
            m1 = setup.wx / wtot if fam.sphere else mean  # unit rows: the mean of those
            J0 = setup.wphi - wtot * float(E.phi_rows(div, m1[None, :])[0])
        m0 = max(J0, 0.0) / (wtot * d) if np.isfinite(J0) else 0.0
        if not m0 > 0:  # constant data: the resolution of float64 at their magnitude
            m0 = (max(_EPS * float(np.max(np.abs(mean))) ** 2, 1e-300)
                  if fam.name == "gaussian" else _EPS)
        unit = float(fam.solve(np.array([m0]))[0])
        if not (np.isfinite(unit) and unit > 0):
            unit = 1.0
    shared = dict(div=div, fam=fam, mode=mode, d=d, reg=float(reg_dispersion) * unit,
                  unit=unit, base=setup.base, wtot=wtot, n=src.n, jac=fam.jacobian(cond, d))
    return _Prepared(cond, srcc, counts, mean, shared)


@dataclass
class _Run:
    params: _Params
    history: list
    n_iter: int
    converged: bool
    dead: set

    @property
    def lower_bound(self):
        return self.history[-1] if self.history else -np.inf


def _em(src, st, params, max_iter, tol, *, verbose=0, desc="BregmanMixture", lower=-np.inf,
        temper=1.0):
    """One restart of EM from ``params``: E-step pass, M-step, until the per-sample objective
    changes by less than ``tol`` (scikit-learn's rule) or ``max_iter``. With ``st.hard`` the
    E-step gives every row wholly to its most probable component (classification EM) and the
    objective is the classification log-likelihood. ``temper`` < 1: annealed EM at that
    inverse temperature (responsibilities proportional to ``(pi_h p(x | h))^temper``, the
    objective that of :func:`_objective`)."""
    history = []
    converged = False
    n_iter = 0
    dead = set()
    lb = lower
    with progress(verbose, total=max_iter, desc=desc) as bar:
        for it in range(1, max_iter + 1):
            mc = params.centres(st.div, st.fam, temper)
            part = src.run(MP.mixture_block, st.div, mc, st.hard)
            F = _objective(st, part, params, temper)
            if F != F or F == np.inf:
                raise ValueError(
                    f"the {st.fam.name} log-likelihood of X is not finite (float64 overflow); "
                    + ("rescale X." if st.fam.conditions else
                       "this family is not scale-invariant, so X cannot be rescaled for you."))
            params, gone = _m_step(st, part, params, (src, mc, st.hard))
            dead.update(int(h) for h in gone)
            history.append(float(F))
            n_iter = it
            change = F - lb
            lb = F
            bar.step(F)
            if abs(change) < tol:
                converged = True
                break
    return _Run(params, history, n_iter, converged, dead)


# ----------------------------------------------------------------------------- the estimator
class BregmanMixture(DivergenceEstimatorMixin, DensityMixin, BaseEstimator):
    """Mixture of exponential-family distributions fitted by EM: Bregman soft clustering.

    Every regular exponential family corresponds to a Bregman divergence (Banerjee, Merugu,
    Dhillon & Ghosh, 2005): a component with mean ``mu`` has the density
    ``p(x | mu) = exp(-beta d_phi(x, mu)) b_beta(x)``. EM alternates the E-step, a soft
    assignment (the responsibilities ``r_ih``, a log-sum-exp per row over the same matrix of
    divergences as a k-means assignment, one read of the data), and the M-step: mixing weights
    ``sum_i w_i r_ih / sum_i w_i``, means the responsibility-weighted means (exact for every
    Bregman divergence) and, where the family has one, the dispersion.

    ================= ======================== =================================================
    ``divergence``    ``family``               component; ``dispersion``
    ================= ======================== =================================================
    sqeuclidean       ``"gaussian"``           Gaussian ``N(mu, s^2 I)``; variance ``s^2``
    mahalanobis (A)   ``"gaussian"``           Gaussian ``N(mu, s^2 A^-1)``; ``s^2``, default 1
    kl                ``"multinomial"``        multinomial over the row's ``N = sum x`` trials
                                               (raw counts: the classic mixture of
                                               multinomials); none
    kl                ``"poisson"``            independent Poisson counts; none
    itakura_saito     ``"gamma"``              independent Gamma, shape ``a``, mean ``mu``;
                                               ``1 / a`` (``dispersion=1.0``: exponential)
    cosine            ``"vmf"``                von Mises-Fisher on the unit sphere (rows scaled
                                               to unit length), mean direction ``mu``;
                                               ``1 / kappa`` (:mod:`bregclust._vmf`)
    registered        ``"custom"``             ``exp(-d(x, mu) / dispersion) b(x)``, ``b``
                                               unknown; a given float, default 1
    ================= ======================== =================================================

    Parameters
    ----------
    n_components : int or sequence of int, default=1
        Number of components, or candidates for it: every candidate is fitted and the one with
        the lowest ``criterion`` on the training data is kept (``criterion_path_``).
    divergence : str or Divergence, default="sqeuclidean"
        A differentiable registered divergence.
    divergence_params : dict, optional
        E.g. ``{"A": A}`` for ``"mahalanobis"`` (the Gaussian's covariance is ``A^-1``).
    family : {"auto", "gaussian", "multinomial", "poisson", "gamma", "vmf", "custom"}, \
default="auto"
        The exponential family (see the table). ``"auto"``: gaussian for sqeuclidean and
        mahalanobis, multinomial for kl, gamma for itakura_saito, custom for a registered
        generator. For kl, ``"multinomial"`` models each row as counts with a fixed total (the
        means ``means_`` are probability vectors and ``weights_`` the share of rows);
        ``"poisson"`` models every count as independent (means in count units: row length is
        part of the model).
    dispersion : {"auto", "component", "tied"} or float, default="auto"
        ``"component"``: one fitted dispersion per component (scikit-learn's spherical
        covariance); ``"tied"``: one shared; a float: fixed (the variance ``s^2`` for the
        Gaussian, ``1 / shape`` for the Gamma, the divisor of the divergence for a custom
        generator). ``"auto"``: ``"component"`` for sqeuclidean and itakura_saito, 1.0 for
        mahalanobis and custom generators, none for multinomial and Poisson.
    init : {"auto", "k-means++", "k-means||", "random", "kmeans", "tfidf-kmeans"}, \
BregmanKMeans, ndarray or dict, default="auto"
        Initial parameters. ``"k-means++"``/``"k-means||"``/``"random"``: Bregman seeds (for
        the multinomial on the rows divided by their totals, weighted by the totals), then one
        hard assignment gives the means (the seeds' cluster means), mixing weights and
        dispersions. ``"kmeans"``: a Bregman k-means fit from k-means++ seeds (k-means|| on a
        dask array); its centres are the means. ``"tfidf-kmeans"`` (multinomial, in-memory
        counts): ``max(n_init, 6)`` partitions by spherical k-means on the tf-idf rows, three EM
        iterations from each, then from the best deterministic-annealing EM (Ueda & Nakano,
        1998: responsibilities proportional to ``(pi_h p(x | h))^b``, ``b`` doubled up to 1,
        at most five iterations per temperature; not with ``assignment="hard"``) and EM to
        convergence (``bregclust._mixture_init``; ``lower_bounds_`` holds that last phase,
        ``n_iter_`` counts every iteration, ``max_iter`` bounds them all).
        ``"auto"``: ``"k-means||"`` for a dask array, ``"tfidf-kmeans"`` for the multinomial
        family, ``"k-means++"`` otherwise.
        A fitted :class:`~bregclust.BregmanKMeans` (its centres), an array of means
        ``(n_components, n_features)`` (weights and dispersions from their hard partition),
        an array of responsibilities ``(n_samples, n_components)`` (one M-step; in-memory
        data), or a dict with ``"means"`` and optionally ``"weights"`` and ``"dispersion"``
        (data units), or ``{"responsibilities": R}``.
    n_init : int, default=1
        Restarts; the one with the highest lower bound is kept.
    max_iter : int, default=100
        EM iterations per restart, in all (with ``init="tfidf-kmeans"`` the start's short EM
        runs, the annealed iterations and the final phase together).
    tol : float, default=1e-3
        Stop when the per-sample lower bound changes by less than ``tol``.
    smoothing : float or "auto", default="auto"
        Weight ``beta`` of a pseudo-point ``z`` (the data mean, for the multinomial the
        corpus' term distribution) in every component: means are
        ``(S_h + beta z) / (W_h + beta)``, a conjugate prior (MAP EM); it keeps kl and
        Itakura-Saito means off the boundary of their domain. ``"auto"`` as
        :class:`~bregclust.BregmanKMeans` (0 on R, three average cluster masses on sparse
        non-negative data, one pseudo-sample on dense); for the multinomial family ``0.1 d``
        pseudo-words per component (``d`` terms), which keeps every word probability positive
        without pulling components toward the corpus distribution.
    reg_dispersion : float, default=1e-6
        Added to every fitted dispersion, in units of the dispersion of the whole data set
        (the one-component fit), so that a component holding one point keeps a finite density
        at any scale of the data (scikit-learn's ``reg_covar``, made relative).
    warm_start : bool, default=False
        Start from the previous fit's parameters (``n_init`` ignored).
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0
        1 shows a progress bar per restart with the lower bound; 2 also a line per iteration.
    criterion : {"auto", "bic", "aic", "cv"}, default="auto"
        How ``n_components`` is chosen among candidates. ``"cv"``: the held-out
        log-likelihood per row, 3-fold cross-validated, the smallest candidate within one
        paired standard error of the best (:mod:`bregclust._selection`; the candidates are
        fitted once more per fold, in-memory data only). ``"auto"``: ``"bic"`` for every
        family (consistent for the number of mixture components; the held-out likelihood,
        like AIC, keeps rising with ``K`` on text, see the user guide). ``criterion_path_``
        holds minus the held-out log-likelihood per row for ``"cv"``.
    assignment : {"soft", "hard"}, default="soft"
        The E-step. ``"soft"``: EM (responsibilities). ``"hard"``: classification EM (Celeux &
        Govaert, 1992): every row is given wholly to its most probable component (the largest
        ``log pi_h + log p(x | h)``) and the M-step fits the partition (mixing weights the
        shares of rows, means and dispersions of each part); once the partition stops
        changing the objective does too, which stops it (``tol``). With
        ``divergence="cosine"`` this is hard-moVMF (Banerjee et al., 2005, Algorithm 2).
        ``lower_bound_``/``lower_bounds_`` then hold the classification
        log-likelihood per unit weight, ``sum_i w_i max_h (log pi_h + log p(x_i | h))``,
        which never decreases; ``predict_proba``, ``score_samples`` and the information
        criteria are those of the fitted mixture. A component that loses every row keeps its
        parameters with a mixing weight of 0 (an ``EmptyClusterWarning``).

    Attributes
    ----------
    weights_ : ndarray of shape (k,)
        Mixing weights; ``k`` is ``n_components_``.
    means_ : ndarray of shape (k, n_features)
        Component means (probability vectors for the multinomial).
    dispersion_ : ndarray of shape (k,)
        Variances (Gaussian), ``1 / shape`` (Gamma), the given value (custom), 1
        (multinomial, Poisson).
    family_ : str
    divergence_ : Divergence
    n_components_ : int
        The number of components (the chosen one when ``n_components`` was a sequence).
    n_components_path_, criterion_path_ : ndarray
        The candidates and their criterion on the training data.
    criterion_ : str
        The criterion used: ``"bic"``, ``"aic"`` or ``"cv"`` (``"auto"`` resolved; ``"bic"``
        for a single candidate).
    lower_bound_ : float
        The per-sample objective of the best restart at its last E-step: the weighted mean
        log-likelihood (minus the smoothing term per unit weight when ``smoothing > 0``).
    lower_bounds_ : list of float
        Its value at every iteration of the best restart; it never decreases (EM) when
        ``reg_dispersion=0`` and no component degenerates. After annealed EM (the multinomial
        ``init="tfidf-kmeans"``) it holds the final plain-EM phase.
    n_iter_ : int
        EM iterations of the best restart (at most ``max_iter``).
    converged_ : bool
    smoothing_ : float
    reg_dispersion_ : float
        The value added to fitted dispersions, in the data's units.
    n_features_in_ : int

    Notes
    -----
    ``score_samples`` is the log-density including the base measure, so ``bic`` and ``aic``
    compare different numbers of components (and families) honestly. For ``kl`` families on
    non-integer data the base measure uses ``lgamma(x + 1)`` for ``log x!`` (a log-likelihood
    up to a constant that does not depend on the parameters, so the choice of
    ``n_components`` is unaffected). For a custom generator the base measure is unknown: the
    log-likelihood is known up to a constant, ``bic``/``aic`` refuse unless asked with
    ``up_to_constant=True`` (the constant is the same for every fit on the same data).

    Data of extreme magnitude (beyond ``2^+-100``) are scaled by a power of two for the
    Gaussian and Gamma families (per column for the Gamma) and dense Gaussian data far from
    the origin are centred, as in :class:`~bregclust.BregmanKMeans`; means, dispersions and
    log-likelihoods are returned in the data's units (a fit of ``X 2^s`` is the fit of ``X``
    with means times ``2^s``, variances times ``4^s`` and log-densities minus
    ``d s log 2``). Multinomial and Poisson counts are not rescaled (the models are not
    scale-invariant); counts whose log-likelihood overflows float64 are refused.

    ``X`` may be a row-chunked ``dask.array``: every EM iteration is one pass over the chunks
    with the same kernel (``k x d`` sums tree-reduced); ``predict``, ``predict_proba`` and
    ``score_samples`` of a dask array are lazy.

    References
    ----------
    A. Banerjee, S. Merugu, I. Dhillon, J. Ghosh. Clustering with Bregman divergences. JMLR 6,
    2005 (Section 5, Bregman soft clustering).

    Examples
    --------
    >>> import numpy as np
    >>> from bregclust import BregmanMixture
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.poisson(3.0, (50, 4)), rng.poisson(12.0, (50, 4))]).astype(float)
    >>> gm = BregmanMixture(2, divergence="kl", family="poisson", random_state=0).fit(X)
    >>> np.round(np.sort(gm.means_.mean(axis=1)), 0).tolist()
    [3.0, 12.0]
    >>> gm.predict_proba(X[:1]).sum().round(6).item()
    1.0
    """

    def __init__(self, n_components=1, *, divergence="sqeuclidean", divergence_params=None,
                 family="auto", dispersion="auto", init="auto", n_init=1, max_iter=100,
                 tol=1e-3, smoothing="auto", reg_dispersion=1e-6, warm_start=False,
                 random_state=None, verbose=0, criterion="auto", assignment="soft"):
        self.n_components = n_components
        self.divergence = divergence
        self.divergence_params = divergence_params
        self.family = family
        self.dispersion = dispersion
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.smoothing = smoothing
        self.reg_dispersion = reg_dispersion
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose
        self.criterion = criterion
        self.assignment = assignment

    # ------------------------------------------------------------------ parameters
    def _candidates(self, n):
        nc = self.n_components
        if isinstance(nc, (numbers.Integral, str, float)) or nc is None:
            return [check_n_clusters(nc, n, name="n_components")]
        if isinstance(nc, (dict, set, frozenset)):  # keys or an unordered collection
            raise TypeError("n_components must be an int or a sequence of ints (a list, tuple "
                            f"or range), got a {type(nc).__name__}: {nc!r}.")
        try:
            ks = list(nc)
        except TypeError:
            raise TypeError("n_components must be an int or a sequence of ints, got "
                            f"{nc!r}.") from None
        if not ks:
            raise ValueError("n_components is an empty sequence; give at least one candidate.")
        out = []
        for k in ks:
            k = check_n_clusters(k, n, name="n_components")
            if k not in out:
                out.append(k)
        return out

    def _check_params(self):
        check_scalar(self.max_iter, "max_iter", kind=numbers.Integral, lo=1)
        check_scalar(self.tol, "tol", lo=0.0)
        check_scalar(self.verbose, "verbose", kind=numbers.Integral, lo=0)
        check_scalar(self.n_init, "n_init", kind=numbers.Integral, lo=1)
        check_scalar(self.reg_dispersion, "reg_dispersion", lo=0.0, finite=True)
        if self.criterion not in ("auto", "bic", "aic", "cv"):
            raise ValueError("criterion must be 'bic' or 'aic', 'cv' or 'auto', got "
                             f"{self.criterion!r}.")
        if not isinstance(self.warm_start, (bool, np.bool_)):
            raise TypeError(f"warm_start must be True or False, got {self.warm_start!r}.")
        if not (isinstance(self.assignment, str) and self.assignment in ("soft", "hard")):
            raise ValueError("assignment must be 'soft' (EM) or 'hard' (classification EM), "
                             f"got {self.assignment!r}.")

    # ------------------------------------------------------------------ fit
    @fit_callbacks
    def fit(self, X, y=None, sample_weight=None):
        """Fit the mixture by EM (for every candidate ``n_components``).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask.array.Array} of shape (n_samples, n_features)
            Inside the divergence's domain (``X >= 0`` for kl, ``X > 0`` for itakura_saito).
        y : ignored
        sample_weight : array-like or dask array of shape (n_samples,), optional
            Frequency weights: a row of weight 2 counts as two identical rows, with one
            exception: ``smoothing="auto"`` counts rows (its pseudo-count is the mean weight
            per row, and the sparse-data test counts zero entries per row), so integer weights
            and repeated rows then get different pseudo-counts, except for the multinomial
            family, whose ``"auto"`` depends on the vocabulary size only. Pass a number as
            ``smoothing`` for fits that agree exactly.

        Returns
        -------
        self
        """
        with E.blas_one_thread():
            self._fit(X, sample_weight)
        return self

    def fit_predict(self, X, y=None, sample_weight=None):
        """Fit, then the most probable component of every row of ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask.array.Array} of shape (n_samples, n_features)
        y : ignored
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        with E.blas_one_thread():
            labels = self._fit(X, sample_weight)
        # the labels of the final E-step (at the chosen parameters) as scikit-learn's mixtures
        # return; a dask array's fit keeps no per-row results, so it is read again
        return labels if labels is not None else self.predict(X)

    def _fit(self, X, sample_weight):
        """Fit to ``X``; returns the labels of the final E-step (None for a dask array)."""
        self._check_params()
        div = self._get_divergence()
        fam = _family(div, self.family)
        mode, fixed = _dispersion_param(fam, self.dispersion, div)
        warm = bool(self.warm_start) and hasattr(self, "converged_")
        src = as_source(X, sample_weight, div, validate=self._validator(reset=not warm))
        ks = self._candidates(src.n)
        if warm and (len(ks) > 1 or ks[0] != self.n_components_):
            raise ValueError("warm_start continues the previous fit, so n_components must be "
                             f"the previous fit's {self.n_components_}; got "
                             f"{self.n_components!r}.")
        fs = _prepare(src, div, fam, mode, self.reg_dispersion)
        cond, srcc, d = fs.cond, fs.srcc, src.d
        rng = check_random_state(self.random_state)
        results = []
        for k in ks:
            smoothing = mixture_smoothing(self.smoothing, div, fam, fs.counts, k)
            st = fs.setting(cond.apply_mass(smoothing))
            st.hard = self.assignment == "hard"
            fixed_c = None if fixed is None else float(fam.to_conditioned(fixed, cond))
            best = self._fit_k(srcc, src, st, k, fixed_c, cond, rng, warm)
            results.append(self._criterion(srcc, st, best, k, cond, smoothing))
        pick = int(np.argmin([r.criterion for r in results]))
        if len(ks) > 1 and self.criterion == "cv":
            if src.chunked:
                raise ValueError("criterion='cv' refits every candidate on in-memory folds; "
                                 "for a dask array use criterion='bic' or 'aic'.")
            cv = cross_validated_loglik(self, X, ks, sample_weight=sample_weight,
                                        random_state=rng)
            for r, v in zip(results, cv.mean):
                r.criterion = -float(v)
            pick = cv.choice
            self._set_fitted(div, fam, mode, cond, results[pick], results, ks, d)
            self.criterion_ = "cv"
        else:
            self._set_fitted(div, fam, mode, cond, results[pick], results, ks, d)
            self.criterion_ = "aic" if self.criterion == "aic" else "bic"
        # means in the data's type, as BregmanKMeans' centres (the fit computes in float64)
        self.means_ = self.means_.astype(src.dtype, copy=False)
        return results[pick].labels

    def _fit_k(self, srcc, src, st, k, fixed_c, cond, rng, warm):
        desc = "BregmanMixture" + (f" K={k}" if not isinstance(self.n_components,
                                                                numbers.Integral) else "")
        if warm:
            p0 = self._warm_params(st, cond)
            run = _em(srcc, st, p0, self.max_iter, self.tol, verbose=self.verbose,
                      desc=f"{desc} warm start", lower=self.lower_bound_)
            self._warn_run(run, desc, 0)
            if not run.converged:
                self._warn_convergence(desc)
            return run
        init, deterministic = self._check_init(st, k, src)
        if init == "tfidf-kmeans":
            return self._fit_text(srcc, st, k, fixed_c, cond, rng, desc)
        n_init = self.n_init
        if deterministic and n_init != 1:
            warnings.warn("init fixes the initial parameters, so n_init is ignored (1 run).",
                          RuntimeWarning, stacklevel=user_stacklevel())
            n_init = 1
        best = None
        for r in range(n_init):
            p0 = self._initial(srcc, st, k, init, fixed_c, cond, rng)
            run = _em(srcc, st, p0, self.max_iter, self.tol, verbose=self.verbose,
                      desc=f"{desc} restart {r}")
            self._warn_run(run, desc, r)
            if self.verbose:
                print(f"{desc} restart {r}: lower bound {run.lower_bound:.8g}, "
                      f"{run.n_iter} iterations")
            if best is None or run.lower_bound > best.lower_bound:
                best = run
        if not best.converged:
            self._warn_convergence(desc)
        return best

    def _fit_text(self, srcc, st, k, fixed_c, cond, rng, desc):
        """``init="tfidf-kmeans"``: ``max(n_init, TEXT_STARTS)`` spherical k-means partitions
        of the tf-idf rows, a few EM iterations from each, the best few continued a few more
        (``bregclust._mixture_init``: ``TEXT_SHORT_ITER``, ``TEXT_KEEP``, ``TEXT_MID_ITER``),
        then from the start with the highest objective annealed EM (``TEXT_ANNEAL``,
        :meth:`_anneal`) and EM to convergence."""
        blk = srcc.block
        parts = MI.tfidf_partitions(blk.X, k, max(self.n_init, MI.TEXT_STARTS), rng,
                                    blk.weights(), max_iter=MI.TEXT_KMEANS_ITER)
        runs = []
        for r, labels in enumerate(parts):
            p0 = self._initial(srcc, st, k, ("resp", one_hot(labels, k)), fixed_c, cond, rng)
            runs.append(_em(srcc, st, p0, min(MI.TEXT_SHORT_ITER, self.max_iter), self.tol,
                            verbose=self.verbose, desc=f"{desc} start {r}"))
        kept = MI.best_runs(runs, MI.TEXT_KEEP)
        if len(kept) > 1:  # each continued under its start's name (progress and callbacks)
            start = {id(run): r for r, run in enumerate(runs)}
            kept = MI.best_runs([self._more_em(srcc, st, run, MI.TEXT_MID_ITER,
                                               f"{desc} start {start[id(run)]}")
                                 for run in kept], 1)
        if MI.TEXT_ANNEAL and not st.hard:  # hard assignments are the same at any temperature
            best = self._anneal(srcc, st, kept[0], desc)
        else:
            best = self._more_em(srcc, st, kept[0], self.max_iter, desc)
        self._warn_run(best, desc, 0)
        if not best.converged:
            self._warn_convergence(desc)
        return best

    def _anneal(self, srcc, st, run, desc):
        """Deterministic-annealing EM (Ueda & Nakano, 1998) from ``run``'s parameters: at each
        inverse temperature of :func:`bregclust._mixture_init.anneal_schedule` (``beta0`` from
        the spread of the rows' logit gaps under those parameters, raised by
        ``ANNEAL_RATE`` up to 1) at most ``ANNEAL_ITER`` annealed EM iterations, then plain EM
        to convergence (at most ``max_iter`` iterations). The run's history is that of the
        final plain-EM phase (the annealed objectives are other functions); its ``n_iter``
        counts every iteration, and ``max_iter`` bounds them all, as without annealing: the
        temperatures stop when one iteration of the budget is left, which the final phase
        gets at least."""
        if self.max_iter - run.n_iter <= 0:
            return run
        p = run.params
        blk = srcc.block
        X, (Xg, phi_x) = blk.X, blk.prepared(st.div)
        alpha = (p.logpi + st.fam.alpha_part(p.beta, st.d))[None, :]
        n = Xg.shape[0]
        step = E.chunk_rows(p.U.shape[0])  # ~1 MB of scores a block (as assign): never n x k
        gaps = np.empty(n)
        for s in range(0, n, step):
            e = min(n, s + step)
            D = E.pairwise(st.div, X[s:e], p.U, (Xg[s:e], phi_x[s:e]))
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                gaps[s:e] = MI.logit_gaps(alpha - p.beta[None, :] * D)
        n_iter, dead = run.n_iter, set(run.dead)
        for t, temper in enumerate(MI.anneal_schedule(gaps, weights=blk.weights())):
            left = self.max_iter - n_iter - 1  # one iteration kept for the final phase
            if left <= 0:
                break
            r = _em(srcc, st, p, min(MI.ANNEAL_ITER, left), self.tol, verbose=self.verbose,
                    desc=f"{desc} anneal {t}", temper=temper)
            p, n_iter = r.params, n_iter + r.n_iter
            dead.update(r.dead)
        last = _em(srcc, st, p, self.max_iter - n_iter, self.tol, verbose=self.verbose,
                   desc=desc)
        return _Run(last.params, last.history, n_iter + last.n_iter, last.converged,
                    dead | last.dead)

    def _more_em(self, srcc, st, run, iters, desc):
        """``run`` continued by at most ``iters`` EM iterations (never past ``max_iter`` in
        all); a converged run is returned as it is."""
        iters = min(iters, self.max_iter - run.n_iter)
        if run.converged or iters <= 0:
            return run
        more = _em(srcc, st, run.params, iters, self.tol, verbose=self.verbose, desc=desc,
                   lower=run.lower_bound)
        return _Run(more.params, run.history + more.history, run.n_iter + more.n_iter,
                    more.converged, run.dead | more.dead)

    @staticmethod
    def _warn_run(run, desc, r):
        if run.dead:
            warnings.warn(
                f"{desc} restart {r}: component(s) {sorted(run.dead)} lost all responsibility "
                "(total weight below 10 machine epsilons of a sample); they keep their previous "
                "mean and dispersion with a mixing weight of about 0. Use fewer components or "
                "another init.", EmptyClusterWarning, stacklevel=user_stacklevel())

    def _warn_convergence(self, desc):
        warnings.warn(f"{desc}: the best restart did not converge within max_iter="
                      f"{self.max_iter}; increase max_iter or tol, try another init, or check "
                      "for degenerate data.", ConvergenceWarning,
                      stacklevel=user_stacklevel())

    # ------------------------------------------------------------------ initialisation
    def _check_init(self, st, k, src):
        """``(init, deterministic)``: a validated init name, or ``("means", U)``,
        ``("params", (U, weights, dispersion))``, ``("resp", R)`` in the data's units."""
        init = self.init
        div, fam = st.div, st.fam
        d = src.d
        if isinstance(init, str):
            if init == "auto" and fam.simplex and not src.chunked:
                init = "tfidf-kmeans"
            if init not in ("auto", "k-means++", "k-means||", "random", "kmeans", "tfidf-kmeans"):
                raise ValueError("init must be 'auto', 'k-means++', 'k-means||', 'random', "
                                 "'kmeans', 'tfidf-kmeans', a fitted BregmanKMeans, an array "
                                 f"or a dict, got {init!r}.")
            if init == "tfidf-kmeans" and (src.chunked or not fam.simplex):
                raise ValueError("init='tfidf-kmeans' starts the multinomial family on "
                                 "in-memory counts; use init='k-means||' (dask) or "
                                 "'k-means++'.")
            if init not in ("kmeans", "tfidf-kmeans"):
                init = seeding_method(src, init, others=("kmeans",))
            return init, False
        if not isinstance(self.n_components, numbers.Integral):
            raise ValueError("an init array, dict or estimator fixes the number of components; "
                             "pass an int n_components with it.")
        if isinstance(init, BregmanKMeans):
            check_is_fitted(init, "cluster_centers_")
            init = {"means": init.cluster_centers_}
        elif isinstance(init, dict):
            unknown = set(init) - {"means", "weights", "dispersion", "responsibilities"}
            if unknown or not ({"means", "responsibilities"} & set(init)):
                raise ValueError("an init dict holds 'means' (and optionally 'weights', "
                                 "'dispersion') or 'responsibilities'; got keys "
                                 f"{sorted(init)}.")
        else:
            A = np.asarray(init)
            if A.ndim == 2 and A.dtype.kind not in "biuf":
                raise TypeError(f"init array must hold real numbers (means or responsibilities), "
                                f"got dtype {A.dtype}; pass a float array.")
            if A.dtype.kind not in "biuf" or A.ndim != 2:
                raise TypeError("init must be a string, a fitted BregmanKMeans, a dict or a "
                                f"2-D array; got {type(init).__name__}.")
            means = A.shape == (k, d)
            resp = A.shape == (src.n, k)
            if means and resp:
                raise ValueError(
                    f"init of shape {A.shape} could be means or responsibilities; pass "
                    "{'means': init} or {'responsibilities': init}.")
            if not (means or resp):
                raise ValueError(
                    f"init array must be means of shape (n_components, n_features) = {(k, d)} "
                    f"or responsibilities of shape (n_samples, n_components) = {(src.n, k)}, "
                    f"got {A.shape}.")
            init = {"means": A} if means else {"responsibilities": A}
        if "responsibilities" in init:
            if src.chunked:
                raise ValueError("init responsibilities need in-memory X; for a dask array "
                                 "pass means.")
            R = check_array(init["responsibilities"], name="init responsibilities",
                            accept_sparse=False)
            if R.shape != (src.n, k):
                raise ValueError(f"init responsibilities must have shape (n_samples, "
                                 f"n_components) = {(src.n, k)}, got {R.shape}.")
            if (R < 0).any() or not np.allclose(R.sum(axis=1), 1.0, rtol=1e-6, atol=1e-6):
                raise ValueError("init responsibilities must be non-negative with rows summing "
                                 "to 1.")
            return ("resp", R), True
        if np.asarray(init["means"]).dtype.kind not in "biuf":
            raise TypeError("init means must hold real numbers, got dtype "
                            f"{np.asarray(init['means']).dtype}; pass a float array.")
        U = np.array(init["means"], dtype=np.float64, copy=True)
        if U.ndim != 2 or U.shape != (k, d):
            raise ValueError(f"init means must have shape (n_components, n_features) = "
                             f"{(k, d)}, got {U.shape}.")
        check_finite(U, name="init means")
        div.check_domain(U, name="init means", side="right",
                         advice="Move the initial means inside the domain.")
        if fam.simplex:
            U = U / U.sum(axis=1, keepdims=True)
        wts = init.get("weights")
        if wts is not None:
            wts = _init_vector(wts, k, "init weights")
            if wts.shape != (k,) or not np.all(np.isfinite(wts)) or (wts <= 0).any():
                raise ValueError(f"init weights must be {k} positive finite numbers, got "
                                 f"{wts!r}.")
            wts = wts / wts.sum()
        disp = init.get("dispersion")
        if disp is not None:
            disp = _init_vector(disp, k, "init dispersion")
            disp = np.broadcast_to(disp, (k,)).copy()
            if not np.all(np.isfinite(disp)) or (disp <= 0).any():
                raise ValueError(f"init dispersion must be positive and finite, got {disp!r}.")
        return ("params", (U, wts, disp)), True

    def _seeds(self, srcc, st, k, init, rng):
        """Seeds (conditioned units) on the source the hard counterpart clusters."""
        view = _simplex_view(srcc) if st.fam.simplex else srcc
        C0 = seed_centres(view, st.div, k, rng, "auto" if init == "kmeans" else init, st.s, st.z)
        if init == "kmeans":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                C0 = lloyd(view, st.div, C0, st.s, st.z, 100, 1e-4, 0,
                           desc="BregmanMixture init").centres
        if st.fam.simplex:
            C0 = C0 / C0.sum(axis=1, keepdims=True)
        return C0, init == "kmeans"

    def _initial(self, srcc, st, k, init, fixed_c, cond, rng):
        """Initial parameters (conditioned units)."""
        if isinstance(init, str):
            U0, keep = self._seeds(srcc, st, k, init, rng)
            return _partition_params(srcc, st, U0, keep, None, None, fixed_c)
        kind, val = init
        if kind == "resp":
            blk = srcc.block
            w = blk.weights()[:, None]
            R = val * w
            X, phi_x = blk.X, blk.prepared(st.div)[1]
            S = np.asarray((X.T @ R).T) if sp.issparse(X) else R.T @ X
            part = MP.MixturePart(S=S, W=R.sum(axis=0), Phi=R.T @ phi_x, loglik=0.0)
            if (part.W <= st.tiny).any():
                raise ValueError("init responsibilities give a component no weight; every "
                                 "column needs positive responsibility.")
            beta0 = np.full(k, 1.0 if fixed_c is None else float(st.fam.beta(fixed_c)))
            prev = _Params(np.zeros((k, st.d)), np.zeros(k), beta0)
            p, _ = _m_step(st, part, prev)
            if st.fam.fitted and st.mode == "fixed":
                p.beta = beta0
            return p
        U, wts, disp = val
        U = cond.apply_centres(U) if not cond.data_identity else U
        disp_c = None if disp is None else st.fam.to_conditioned(disp, cond)
        return _partition_params(srcc, st, U, True, wts, disp_c, fixed_c)

    def _warm_params(self, st, cond):
        U = self.means_
        U = cond.apply_centres(U) if not cond.data_identity else np.array(U, dtype=np.float64)
        with np.errstate(divide="ignore"):
            logpi = np.log(self.weights_)
        beta = st.fam.beta(st.fam.to_conditioned(self.dispersion_, cond))
        return _Params(U, logpi, np.asarray(beta, dtype=np.float64))

    # ------------------------------------------------------------------ results
    def _criterion(self, srcc, st, run, k, cond, smoothing):
        """The chosen criterion of a fitted candidate on the training data (one E-step pass
        at its final parameters)."""
        p = run.params
        keep = 0 if srcc.chunked else 1  # the labels of an in-memory pass (fit_predict's)
        part = srcc.run(MP.mixture_block, st.div, p.centres(st.div, st.fam), False, keep, False)
        with np.errstate(invalid="ignore", over="ignore"):
            mean_ll = (part.loglik + st.base) / st.wtot + st.jac
        n_eff = float(np.ldexp(st.wtot, cond.weight_scale))
        npar = _n_parameters(st.fam, st.mode, k, st.d)
        pen = 2.0 * npar if self.criterion == "aic" else npar * math.log(n_eff)
        return _Candidate(run=run, k=k, smoothing=smoothing, mean_ll=mean_ll, reg=st.reg,
                          criterion=-2.0 * mean_ll * n_eff + pen, labels=part.labels)

    def _set_fitted(self, div, fam, mode, cond, res, results, ks, d):
        run = res.run
        p = run.params
        disp = fam.from_conditioned(fam.dispersion(p.beta), cond)
        if fam.fitted and not np.all(np.isfinite(disp) & (disp >= np.finfo(np.float64).tiny)):
            raise ValueError(
                "the fitted dispersions of X are not representable in float64 (they scale as "
                f"the data to the power {fam.degree}); rescale X.")
        self.divergence_ = div
        self.family_ = fam.name
        self.dispersion_type_ = mode
        self.means_ = cond.undo_centres(p.U) if not cond.data_identity else p.U.copy()
        with np.errstate(under="ignore"):
            self.weights_ = np.exp(p.logpi)
        self.dispersion_ = np.asarray(disp, dtype=np.float64)
        self.lower_bound_ = float(run.lower_bound)
        self.lower_bounds_ = [float(v) for v in run.history]
        self.n_iter_ = int(run.n_iter)
        self.converged_ = bool(run.converged)
        self.smoothing_ = float(res.smoothing)
        self.reg_dispersion_ = (float(fam.from_conditioned(np.array([res.reg]), cond)[0])
                                if fam.fitted else 0.0)
        self.n_components_ = int(res.k)
        self.n_components_path_ = np.array(ks, dtype=np.int64)
        self.criterion_path_ = np.array([r.criterion for r in results])
        self.n_features_in_ = int(d)

    # ------------------------------------------------------------------ fitted models
    def _model(self):
        check_is_fitted(self, "means_")
        fam = _family(self.divergence_, self.family_)
        with np.errstate(divide="ignore"):
            logpi = np.log(self.weights_)
        return _Model(fam, np.asarray(self.means_, dtype=np.float64), logpi,
                      np.asarray(self.dispersion_, dtype=np.float64))

    def _source(self, X, sample_weight=None):
        check_is_fitted(self, "means_")
        return as_source(X, sample_weight, self.divergence_, validate=self._validator(False),
                         n_features=self.n_features_in_)

    def _rows(self, X, what, ncols=None):
        model = self._model()
        src = self._source(X)
        dtype = np.int64 if what == "labels" else np.float64
        with E.blas_one_thread():  # in memory: evaluated now; on dask: lazy
            return src.map_rows(evaluate_rows, self.divergence_, model, what, ncols=ncols,
                                dtype=dtype)

    def predict(self, X):
        """The most probable component of every row.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask.array.Array} of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            A lazy dask array when ``X`` is one.
        """
        return self._rows(X, "labels")

    def predict_proba(self, X):
        """Posterior probability of every component for every row (rows sum to 1).

        A row of probability 0 under every component (possible with ``smoothing=0`` on kl:
        a term no component uses) gets probability 1 for the component whose zero
        coordinates hold the least of its mass.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask.array.Array} of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, k)
            ``k`` is ``n_components_``.
        """
        check_is_fitted(self, "means_")
        return self._rows(X, "proba", ncols=self.n_components_)

    def score_samples(self, X):
        """Log-density of every row under the mixture, in the data's units.

        The true log-likelihood, base measure included, for the built-in families; for a
        custom generator it is known up to an additive constant (the unknown base measure).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask.array.Array} of shape (n_samples, n_features)

        Returns
        -------
        log_prob : ndarray of shape (n_samples,)
        """
        return self._rows(X, "log")

    def score(self, X, y=None, sample_weight=None):
        """Weighted mean log-likelihood per row.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask.array.Array} of shape (n_samples, n_features)
        y : ignored
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        float
        """
        total, wsum = self._total(X, sample_weight)
        return total / wsum

    def _total(self, X, sample_weight):
        src = self._source(X, sample_weight)
        model = self._model()
        with E.blas_one_thread():
            return src.run(score_block, self.divergence_, model, check=True)

    def _n_parameters(self):
        return _n_parameters(_family(self.divergence_, self.family_), self.dispersion_type_,
                             self.n_components_, self.n_features_in_)

    def _information(self, X, sample_weight, up_to_constant, penalty):
        check_is_fitted(self, "means_")
        if self.family_ == "custom" and not up_to_constant:
            raise ValueError(
                f"the base measure of the custom generator {self.divergence_.name!r} is "
                "unknown, so the criterion is known up to an additive constant (the same for "
                "every fit on the same X); pass up_to_constant=True to compare fits on X.")
        total, wsum = self._total(X, sample_weight)
        return -2.0 * total + penalty(self._n_parameters(), wsum)

    def bic(self, X, sample_weight=None, *, up_to_constant=False):
        """Bayesian information criterion ``-2 log L + p log n`` (the lower the better).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask.array.Array} of shape (n_samples, n_features)
        sample_weight : array-like of shape (n_samples,), optional
            Frequency weights: ``log L`` is the weighted sum, ``n`` the total weight.
        up_to_constant : bool, default=False
            Accept a custom generator, whose base measure is unknown.

        Returns
        -------
        float

        Raises
        ------
        ValueError
            A custom generator without ``up_to_constant=True``.
        """
        return self._information(X, sample_weight, up_to_constant,
                                 lambda p, n: p * math.log(n))

    def aic(self, X, sample_weight=None, *, up_to_constant=False):
        """Akaike information criterion ``-2 log L + 2 p`` (the lower the better).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask.array.Array} of shape (n_samples, n_features)
        sample_weight : array-like of shape (n_samples,), optional
        up_to_constant : bool, default=False
            Accept a custom generator, whose base measure is unknown.

        Returns
        -------
        float
        """
        return self._information(X, sample_weight, up_to_constant, lambda p, n: 2.0 * p)


def _n_parameters(fam, mode, k, d):
    """Free parameters: ``k - 1`` weights, the means (``d - 1`` each on the simplex) and the
    fitted dispersions."""
    mean = k * (d - 1) if fam.simplex or fam.sphere else k * d
    disp = {"component": k, "tied": 1}.get(mode, 0)
    return int(mean + disp + k - 1)


def _partition_params(src, st, U0, keep_means, weights, disp_c, fixed_c):
    """Parameters from the hard partition of the data around ``U0`` (nearest means): the
    partition's means (or ``U0`` itself when ``keep_means``), its shares as mixing weights
    and its within-cluster dispersions. Empty clusters keep ``U0`` and the weight of one
    average sample; clusters without spread take the pooled dispersion."""
    fam = st.fam
    k = U0.shape[0]
    need_part = not keep_means or weights is None or (fam.fitted and st.mode != "fixed"
                                                      and disp_c is None)
    U = np.array(U0, dtype=np.float64)
    W = None
    if need_part:
        mc = MP.prepare_mixture(st.div, U0, np.zeros(k), np.ones(k))
        part = src.run(MP.mixture_block, st.div, mc, True)
        W, S, Phi = part.W, part.S, part.Phi
        mass = S.sum(axis=1) if fam.simplex else W
        if not keep_means:
            live = mass + st.s > 0
            num = S[live] + (st.s * st.z if st.s > 0 else 0.0)
            U[live] = num / (mass[live] + st.s)[:, None]
    if weights is not None:
        logpi = np.log(weights)
    else:
        Wf = np.where(W > st.tiny, W, st.wtot / max(st.n, 1))
        logpi = np.log(Wf / Wf.sum())
    if fixed_c is not None:
        beta = np.full(k, float(fam.beta(fixed_c)))
    elif disp_c is not None:
        beta = np.asarray(fam.beta(disp_c), dtype=np.float64)
    elif fam.fitted:
        J = _within(st, S, W, Phi, U, (src, mc, True))
        tot = float(W.sum())
        m_pool = float(J.sum()) / (tot * st.d) if tot > 0 else 0.0
        pooled = (fam.solve(np.array([m_pool]))[0] if m_pool > 0 else st.unit) + st.reg
        if st.mode == "tied":
            beta = np.full(k, float(fam.beta(pooled)))
        else:
            ok = (W > st.tiny) & (J > 0)
            disp = np.full(k, pooled)
            with np.errstate(divide="ignore", invalid="ignore"):
                disp[ok] = fam.solve(J[ok] / (W[ok] * st.d)) + st.reg
            beta = np.asarray(fam.beta(disp), dtype=np.float64)
    else:
        beta = np.ones(k)
    return _Params(np.ascontiguousarray(U), logpi, beta)


# ----------------------------------------------------------------------------- k-means' K
@dataclass
class ClusterCountSelection:
    """The result of :func:`select_n_clusters`.

    Attributes
    ----------
    estimator : BregmanKMeans
        The fit with the chosen number of clusters (for the multinomial family, fitted on the
        rows divided by their totals, weighted by the totals).
    n_clusters : int
        The chosen number of clusters.
    n_clusters_path : ndarray of int
        The candidates.
    criterion_path : ndarray
        Their criterion (the lower the better).
    log_likelihood_path : ndarray
        Their classification log-likelihood ``sum_i w_i log(pi_h(i) p(x_i | h(i)))``.
    criterion : str
        ``"bic"`` or ``"aic"``.
    family : str
    """

    estimator: object
    n_clusters: int
    n_clusters_path: np.ndarray
    criterion_path: np.ndarray
    log_likelihood_path: np.ndarray
    criterion: str
    family: str


def _classification_loglik(fs, st, U):
    """``sum_i w_i log(pi_h p(x_i | u_h))`` for the hard partition of the data around the
    centres ``U`` (conditioned units), with the partition's shares as mixing weights and its
    maximum-likelihood dispersions (data units: the mean per unit weight plus the Jacobian,
    times the total weight)."""
    fam = st.fam
    k = U.shape[0]
    mc = MP.prepare_mixture(st.div, U, np.zeros(k), np.ones(k))
    part = fs.srcc.run(MP.mixture_block, st.div, mc, True)
    W, S, Phi = part.W, part.S, part.Phi
    J = _within(st, S, W, Phi, U, (fs.srcc, mc, True))
    live = W > 0
    if fam.fitted and st.mode != "fixed":
        beta = _dispersion_step(st, J, W, np.ones(k), live)
        if st.mode == "component":
            tot = float(W.sum())
            pooled = fam.solve(np.array([float(J.sum()) / (tot * st.d)]))[0] + st.reg
            beta = np.where(live & (J > 0), beta, float(fam.beta(pooled)))
    else:
        beta = np.full(k, st.beta_fixed)
    with np.errstate(divide="ignore", invalid="ignore"):
        logpi = np.log(W / W.sum())
        terms = W * (logpi + fam.alpha_part(beta, st.d)) - beta * J
    ll = float(terms[live].sum()) + st.base
    return ll / st.wtot + st.jac


def select_n_clusters(X, n_clusters, *, divergence="sqeuclidean", divergence_params=None,
                      family="auto", dispersion="auto", criterion="bic", sample_weight=None,
                      random_state=None, reg_dispersion=1e-6, **kmeans_params):
    """Choose the number of clusters of Bregman k-means by an information criterion (X-means).

    For every candidate ``K``, :class:`~bregclust.BregmanKMeans` is fitted and scored by the
    criterion of its *classification likelihood* in the exponential family of the divergence
    (Pelleg & Moore's X-means score for the Gaussian, generalised):
    ``log L = sum_i w_i [log pi_h(i) + log p(x_i | u_h(i))]`` with ``h(i)`` the nearest centre,
    ``pi_h`` the clusters' shares and the dispersions fitted to the partition.
    BIC is ``-2 log L + p log n``, AIC ``-2 log L + 2 p``, ``p = (K - 1) + K d`` (``K (d - 1)``
    mean parameters on the simplex) plus the fitted dispersions.

    Parameters
    ----------
    X : {array-like, sparse matrix, dask.array.Array} of shape (n_samples, n_features)
        For the multinomial family, counts: k-means runs on the rows divided by their totals,
        weighted by the totals (the hard counterpart of the multinomial mixture).
    n_clusters : sequence of int
        The candidates.
    divergence : str or Divergence, default="sqeuclidean"
    divergence_params : dict, optional
    family : str, default="auto"
        As :class:`BregmanMixture`.
    dispersion : {"auto", "tied", "component"} or float, default="auto"
        ``"tied"``: one dispersion for every cluster, the assumption under which k-means is
        the hard limit of a mixture (X-means' pooled variance); ``"component"``: one per
        cluster (clusters of unequal spread). ``"auto"``: ``"tied"`` for the families with a
        fitted dispersion (sqeuclidean, itakura_saito), as :class:`BregmanMixture` otherwise.
    criterion : {"bic", "aic"}, default="bic"
    sample_weight : array-like of shape (n_samples,), optional
        Frequency weights.
    random_state : int, RandomState instance or None, default=None
    reg_dispersion : float, default=1e-6
        As :class:`BregmanMixture`.
    **kmeans_params
        Passed to :class:`~bregclust.BregmanKMeans` (``n_init``, ``smoothing``, ``init``,
        ``max_iter``, ...).

    Returns
    -------
    ClusterCountSelection

    References
    ----------
    D. Pelleg, A. Moore. X-means: extending k-means with efficient estimation of the number of
    clusters. ICML 2000.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(c, 0.3, size=(60, 2)) for c in ([0, 0], [4, 0], [0, 4])])
    >>> sel = select_n_clusters(X, range(1, 6), random_state=0)
    >>> sel.n_clusters
    3
    """
    if criterion not in ("bic", "aic"):
        raise ValueError(f"criterion must be 'bic' or 'aic', got {criterion!r}.")
    check_scalar(reg_dispersion, "reg_dispersion", lo=0.0, finite=True)
    bad = {"n_clusters", "divergence", "divergence_params", "random_state"} & set(kmeans_params)
    if bad:
        raise TypeError(f"select_n_clusters got {sorted(bad)} twice; pass them once.")
    div = get_divergence(divergence, **(divergence_params or {}))
    fam = _family(div, family)
    if isinstance(dispersion, str) and dispersion == "auto" and fam.fitted and \
            div.name != "mahalanobis":
        dispersion = "tied"
    mode, fixed = _dispersion_param(fam, dispersion, div)
    src = as_source(X, sample_weight, div)
    try:
        ks = list(n_clusters)
    except TypeError:
        raise TypeError(f"n_clusters must be a sequence of ints, got {n_clusters!r}.") from None
    if not ks:
        raise ValueError("n_clusters is an empty sequence; give at least one candidate.")
    ks = [check_n_clusters(k, src.n) for k in ks]
    fs = _prepare(src, div, fam, mode, reg_dispersion)
    st = fs.setting(0.0)
    st.beta_fixed = None if fixed is None else float(fam.beta(fam.to_conditioned(fixed,
                                                                                   fs.cond)))
    view = _simplex_view(src) if fam.simplex else src
    Xk, wk = view.X, view.w
    rng = check_random_state(random_state)
    n_eff = float(np.ldexp(st.wtot, fs.cond.weight_scale))
    fits, lls, crit = [], [], []
    for k in ks:
        km = BregmanKMeans(k, divergence=div, random_state=rng, **kmeans_params)
        km.fit(Xk, sample_weight=wk)
        U = km.cluster_centers_
        U = fs.cond.apply_centres(U) if not fs.cond.data_identity else U
        if fam.simplex:
            U = U / U.sum(axis=1, keepdims=True)
        mean_ll = _classification_loglik(fs, st, np.ascontiguousarray(U))
        npar = _n_parameters(fam, mode, k, st.d)
        pen = npar * math.log(n_eff) if criterion == "bic" else 2.0 * npar
        fits.append(km)
        lls.append(mean_ll * n_eff)
        crit.append(-2.0 * mean_ll * n_eff + pen)
    pick = int(np.argmin(crit))
    return ClusterCountSelection(fits[pick], int(ks[pick]), np.array(ks, dtype=np.int64),
                                 np.array(crit), np.array(lls), criterion, fam.name)
