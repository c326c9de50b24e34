"""The von Mises-Fisher distribution on the unit sphere: its log normaliser, the mean resultant
length ``A_d`` and its inverse, and the family object that makes a mixture of vMF
distributions a Bregman mixture (:class:`bregclust.BregmanMixture` with ``divergence="cosine"``;
Banerjee, Dhillon, Ghosh & Sra, JMLR 6, 2005).

The density on the unit sphere of R^d (d >= 2) is

    f(x | m, kappa) = C_d(kappa) exp(kappa <m, x>),
    C_d(kappa) = kappa^v / ((2 pi)^(d/2) I_v(kappa)),  v = d/2 - 1,

and ``kappa <m, x> = kappa - kappa (1 - <m, x>)``: the component's log-density is
``alpha - kappa d_cos(x, m)`` with ``alpha = log C_d(kappa) + kappa``, the form every Bregman
mixture has (precision ``beta = kappa``, base measure 1 on the sphere).

Bessel functions of large order underflow (``I_v(kappa)`` for ``v = 5e4`` and ``kappa = 1`` is
far below 1e-308) and of large argument overflow, so everything is computed from
``log I_v(kappa) - kappa``: ``log(scipy.special.ive(v, kappa))`` where ``ive`` is a normal
number, else the uniform asymptotic (Debye) expansion of ``I_v(v z)`` with four correction
terms (relative error ``O(v^-5)``; it is used only where ``ive`` underflows, i.e. for
``v`` in the hundreds or more, where the error is below float64's resolution). scipy has no
log-Bessel function and no vMF normaliser usable at these orders, hence this module.
"""

import math
import warnings

import numpy as np
from scipy.special import gammaln, ive

from ._validation import user_stacklevel

__all__ = ["KAPPA_MAX", "KAPPA_MIN", "log_ive", "log_normaliser", "mean_resultant_length",
           "concentration", "VonMisesFisherFamily"]

#: Largest concentration a fit keeps: beyond it ``1 - <m, x>`` of the component's rows is at
#: the rounding error of float64 (near-duplicate rows), and ``kappa`` would be noise.
KAPPA_MAX = 1e10
#: Smallest concentration a fit keeps (``rbar = 0``: a component spread evenly over the
#: sphere), so that the dispersion ``1 / kappa`` stays a finite number.
KAPPA_MIN = 1e-10
_TINY = 1e-300
_LOG2PI = math.log(2.0 * math.pi)


def _debye_log_ive(v, k):
    """``log I_v(k) - k`` by the uniform asymptotic expansion (``v > 0``)."""
    z = k / v
    s = np.sqrt(1.0 + z * z)
    t = 1.0 / s
    t2 = t * t
    u1 = t * (3.0 - 5.0 * t2) / 24.0
    u2 = t2 * (81.0 - 462.0 * t2 + 385.0 * t2 * t2) / 1152.0
    u3 = t * t2 * (30375.0 - 369603.0 * t2 + 765765.0 * t2 ** 2 - 425425.0 * t2 ** 3) / 414720.0
    u4 = t2 * t2 * (4465125.0 - 94121676.0 * t2 + 349922430.0 * t2 ** 2
                     - 446185740.0 * t2 ** 3 + 185910725.0 * t2 ** 4) / 39813120.0
    series = 1.0 + u1 / v + u2 / v ** 2 + u3 / v ** 3 + u4 / v ** 4
    # v eta - k = v (s + log(z / (1 + s))) - k, with v s - k = v^2 / (v s + k) (no cancellation)
    veta_k = v * v / (v * s + k) + v * np.log(z / (1.0 + s))
    return veta_k - 0.5 * np.log(2.0 * math.pi * v) - 0.5 * np.log(s) + np.log(series)


def log_ive(v, k):
    """``log I_v(k) - k`` (``k > 0``), stable for orders up to 1e5 and any argument.

    Parameters
    ----------
    v : float
        Order (``>= 0``).
    k : array-like of float
        Positive arguments.

    Returns
    -------
    ndarray
    """
    k = np.asarray(k, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        e = ive(v, k)
        out = np.log(e)
    bad = ~(np.isfinite(e) & (e > _TINY))
    if np.any(bad) and v > 0:
        kb = np.broadcast_to(k, out.shape)[bad]
        out = np.array(out, copy=True)
        out[bad] = _debye_log_ive(float(v), kb)
    return out


def log_normaliser(d, kappa, plus_kappa=False):
    """``log C_d(kappa)`` (``+ kappa`` with ``plus_kappa``, without cancellation).

    ``kappa = 0`` gives the uniform density, ``-log`` of the sphere's area
    ``2 pi^(d/2) / Gamma(d/2)``.

    Parameters
    ----------
    d : int
        Dimension of the ambient space (``>= 2``).
    kappa : array-like of float
        Concentrations (``>= 0``).
    plus_kappa : bool, default=False

    Returns
    -------
    ndarray
    """
    kappa = np.atleast_1d(np.asarray(kappa, dtype=np.float64))
    v = d / 2.0 - 1.0
    out = np.empty_like(kappa)
    zero = kappa <= 0
    out[zero] = gammaln(d / 2.0) - math.log(2.0) - 0.5 * d * math.log(math.pi)
    k = kappa[~zero]
    if k.size:
        # log C + kappa = v log kappa - (d/2) log(2 pi) - (log I_v(kappa) - kappa)
        val = v * np.log(k) - 0.5 * d * _LOG2PI - log_ive(v, k)
        out[~zero] = val if plus_kappa else val - k
    return out


def mean_resultant_length(d, kappa):
    """``A_d(kappa) = I_(d/2)(kappa) / I_(d/2-1)(kappa)``, the mean resultant length of a vMF
    distribution (``E <m, x>``), in ``[0, 1)``.

    Parameters
    ----------
    d : int
    kappa : array-like of float, ``>= 0``

    Returns
    -------
    ndarray
    """
    kappa = np.atleast_1d(np.asarray(kappa, dtype=np.float64))
    v = d / 2.0 - 1.0
    out = np.zeros_like(kappa)
    pos = kappa > 0
    k = kappa[pos]
    with np.errstate(divide="ignore", invalid="ignore", under="ignore", over="ignore"):
        a = ive(v + 1.0, k)
        b = ive(v, k)
        r = a / b
    bad = ~(np.isfinite(r) & (a > _TINY) & (b > _TINY))
    if bad.any():
        r[bad] = np.exp(log_ive(v + 1.0, k[bad]) - log_ive(v, k[bad]))
    out[pos] = np.minimum(r, 1.0)
    return out


def concentration(d, rbar, *, newton_steps=20):
    """``kappa`` solving ``A_d(kappa) = rbar``: Banerjee et al.'s approximation
    ``rbar (d - rbar^2) / (1 - rbar^2)`` refined by Newton steps on ``A_d(kappa) - rbar``
    (``A_d'(kappa) = 1 - A_d^2 - (d - 1) A_d / kappa``).

    Parameters
    ----------
    d : int
    rbar : array-like of float in ``[0, 1]``
        Mean resultant lengths ``||sum_i r_i x_i|| / sum_i r_i``.
    newton_steps : int, default=20
        At most this many steps (they stop at relative change ``1e-13``).

    Returns
    -------
    kappa : ndarray
        0 where ``rbar <= 0``; ``inf`` where ``rbar >= 1`` (the caller caps it).
    """
    r = np.atleast_1d(np.asarray(rbar, dtype=np.float64))
    out = np.zeros_like(r)
    out[r >= 1.0] = np.inf
    live = (r > 0) & (r < 1.0)
    if not live.any():
        return out
    rl = r[live]
    k = rl * (d - rl * rl) / (1.0 - rl * rl)
    for _ in range(newton_steps):
        A = mean_resultant_length(d, k)
        dA = 1.0 - A * A - (d - 1.0) * A / k
        ok = dA > 0
        step = np.where(ok, (A - rl) / np.where(ok, dA, 1.0), 0.0)
        new = k - step
        new = np.where(new > 0, new, 0.5 * k)  # stay positive (A_d is increasing and concave)
        done = np.all(np.abs(new - k) <= 1e-13 * k)
        k = new
        if done:
            break
    out[live] = k
    return out


class VonMisesFisherFamily:
    """The von Mises-Fisher family as :class:`bregclust.BregmanMixture` sees a family: the
    precision ``beta`` is the concentration ``kappa`` and the dispersion ``1 / kappa``; the
    log-density is ``log C_d(kappa) + kappa - kappa d_cos(x, m)`` (base measure 1 on the unit
    sphere); the dispersion step turns the weighted mean divergence per coordinate ``m`` of a
    component into its mean resultant length ``rbar = 1 - d m`` and solves ``A_d(kappa) =
    rbar`` (:func:`concentration`).

    Parameters
    ----------
    const : float, default=0.0
    d : int, optional
        Dimension (set by :meth:`bound` once the data are known).
    """

    name = "vmf"
    divergences = ("cosine",)
    fitted = True
    known = True
    simplex = False
    sphere = True  # means are unit directions: d - 1 free parameters each
    conditions = True  # rows are scaled to unit length (the record's spherical conditioning)
    degree = 0

    def __init__(self, const=0.0, d=None):
        self.const = float(const)
        self.d = d

    def __reduce__(self):
        return (type(self), (self.const, self.d))

    def bound(self, d):
        """The family for data of dimension ``d``."""
        return type(self)(self.const, int(d))

    def beta(self, dispersion):
        with np.errstate(divide="ignore"):
            return 1.0 / np.asarray(dispersion, dtype=np.float64)

    def dispersion(self, beta):
        with np.errstate(divide="ignore"):
            return 1.0 / np.asarray(beta, dtype=np.float64)

    def alpha_part(self, beta, d):
        shape = np.shape(beta)
        return log_normaliser(d, np.ravel(beta), plus_kappa=True).reshape(shape) + self.const

    def row_base(self, X):
        return np.zeros(X.shape[0])

    def solve(self, m):
        """Dispersion ``1 / kappa`` from the mean divergence per coordinate ``m``."""
        m = np.asarray(m, dtype=np.float64)
        rbar = np.clip(1.0 - self.d * m, 0.0, 1.0)
        kappa = concentration(self.d, rbar)
        big = kappa > KAPPA_MAX
        if np.any(big):
            warnings.warn(
                f"vMF concentration capped at {KAPPA_MAX:g}: the rows of a component are "
                "(near-)duplicates of one direction (mean resultant length 1 - "
                f"{float(np.min(1.0 - rbar[big])):.3g}); remove duplicate rows or use fewer "
                "components.", RuntimeWarning, stacklevel=user_stacklevel())
            kappa = np.minimum(kappa, KAPPA_MAX)
        kappa = np.maximum(kappa, KAPPA_MIN)
        with np.errstate(divide="ignore"):
            return 1.0 / kappa

    def jacobian(self, cond, d):
        return 0.0

    def to_conditioned(self, dispersion, cond):
        return dispersion

    def from_conditioned(self, dispersion, cond):
        return np.asarray(dispersion, dtype=np.float64)
