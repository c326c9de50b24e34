"""Sided Bregman centroids: ``argmin_u A d(mL, u) + B d(u, mR)`` per coordinate, by bisection.

The closed forms of the built-in generators live with their registry records; this kernel
solves the same problem for any separable generator given only ``f'`` (the oracle for the closed
forms, and the solver for user-registered generators).
"""

import math

from numba import njit, prange

from .generators import JIT, dphi_of


@njit(**dict(JIT, parallel=True))
def sided_centroid_bisect(code, fdphi, domain_code, A, B, mL, mR, out):
    """OUT ``out[z, j]``: the root of the stationarity equation of ``A[z] d(mL, u) + B[z] d(u, mR)``.

    IN ``A, B`` (k,) positive weights, ``mL, mR`` (k, d) C-ordered; ``code``/``fdphi`` select
    ``f'`` (see :mod:`bregclust._kernels.generators`), ``domain_code`` the generator's domain.

    For each coordinate the stationarity equation is ``A f''(u) (u - mL) + B (f'(u) - f'(mR)) =
    0``. Outside ``[min(mL, mR), max(mL, mR)]`` both terms have the same sign, so a root lies in
    that bracket; bisection on the sign of ``A (u - mL) + B (f'(u) - f'(mR)) / f''(u)`` runs until
    the bracket stops shrinking. ``f''`` is a central difference of ``f'`` with step ``1e-5 |u|``
    (relative error ~1e-10, which moves the root by the same relative amount). On positive
    domains the midpoint is geometric while the bracket spans more than a factor 4.
    """
    k, d = mL.shape
    for idx in prange(k * d):
        z = idx // d
        j = idx - z * d
        a = A[z]
        b = B[z]
        xl = mL[z, j]
        xr = mR[z, j]
        lo = min(xl, xr)
        hi = max(xl, xr)
        if not (hi > lo):
            out[z, j] = xl
            continue
        tr = dphi_of(code, fdphi, xr)
        scale = max(abs(xl), abs(xr))
        for _ in range(4000):
            if domain_code > 0 and lo > 0.0 and hi / lo > 4.0:
                mid = math.sqrt(lo * hi)
            else:
                mid = 0.5 * (lo + hi)
            if mid <= lo or mid >= hi:
                break
            if domain_code > 0:
                h = 1e-5 * mid
            else:
                h = 1e-5 * max(abs(mid), scale, 1e-300)
            f2 = (dphi_of(code, fdphi, mid + h) - dphi_of(code, fdphi, mid - h)) / (2.0 * h)
            g = a * (mid - xl) + b * (dphi_of(code, fdphi, mid) - tr) / f2
            if g > 0.0:
                hi = mid
            else:
                lo = mid
        out[z, j] = 0.5 * (lo + hi)
