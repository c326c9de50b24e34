"""Mini-batch k-means kernels: the per-centre count update fused with the GEMM parts.

After each mini-batch, every centre that received rows (every centre, with smoothing) moves to
``u' = (m u + S + b z) / (m + W + b)``, and the next batch needs its GEMM parts
``g = grad phi(u')``, ``c = <u', g> - phi(u')`` (see :mod:`bregclust._kernels.lloyd`). On
high-dimensional data (text: ``k x d`` in the hundreds of thousands) that work outweighs the
batch itself, so it is done here in one read of the centres instead of a pass per quantity.
The smoothing term of the objective needs ``<z, g>`` too, taken in the same loop.

Separable generators only (a generator code and function pointers, as the generic kernels of
:mod:`bregclust._kernels.lloyd`); the caller falls back on the engine for the others. For a
generator whose parts have a vectorised closed form (``Divergence.has_closed_form_parts``),
the caller moves the centres with :func:`move_centres` and takes the parts from the form's
``centre_parts`` (the engine's one path: numpy's vector logarithm, several times faster than a
scalar ``log`` per coordinate).
"""

import numpy as np
from numba import njit, prange

from .generators import JIT, PJIT, dphi_of, phi_of


@njit(**JIT)
def _parts_row(code, fphi, fdphi, U, j, z, GT, c, zg, finite):
    """``GT[:, j] = grad phi(U[j])``, ``c[j]``, ``zg[j] = <z, GT[:, j]>`` and whether they are
    finite (a centre on the domain boundary has infinite parts)."""
    d = U.shape[1]
    cj = 0.0
    zj = 0.0
    gs = 0.0
    for l in range(d):
        u = U[j, l]
        g = dphi_of(code, fdphi, u)
        GT[l, j] = g
        gs += g
        cj += u * g - phi_of(code, fphi, u)
        zj += z[l] * g
    c[j] = cj
    zg[j] = zj
    finite[j] = abs(gs) < np.inf and abs(cj) < np.inf and abs(zj) < np.inf


@njit(**JIT)
def _move_row(code, fphi, fdphi, U, mass, S, W, b, z, GT, c, zg, finite, j):
    if W[j] > 0.0 or b > 0.0:
        m = mass[j]
        M = m + W[j] + b
        for l in range(U.shape[1]):
            U[j, l] = (m * U[j, l] + S[j, l] + b * z[l]) / M
        mass[j] = M
        _parts_row(code, fphi, fdphi, U, j, z, GT, c, zg, finite)


@njit(**JIT)
def move_centres(U, mass, S, W, b, z, moved):
    """INOUT the count update of :func:`count_update` without the parts: every centre ``j``
    with ``W[j] > 0`` or ``b > 0`` moves to ``(mass[j] U[j] + S[j] + b z) / (mass[j] + W[j]
    + b)`` and its count grows; OUT ``moved[j]`` says which did."""
    for j in range(U.shape[0]):
        moved[j] = W[j] > 0.0 or b > 0.0
        if moved[j]:
            m = mass[j]
            M = m + W[j] + b
            for l in range(U.shape[1]):
                U[j, l] = (m * U[j, l] + S[j, l] + b * z[l]) / M
            mass[j] = M


@njit(**JIT)
def count_update(code, fphi, fdphi, U, mass, S, W, b, z, GT, c, zg, finite):
    """INOUT the mini-batch update of every centre ``j`` with ``W[j] > 0`` or ``b > 0``:
    ``U[j] <- (mass[j] U[j] + S[j] + b z) / (mass[j] + W[j] + b)``,
    ``mass[j] <- mass[j] + W[j] + b``, and its parts in ``GT[:, j]``, ``c[j]``, ``zg[j]``,
    ``finite[j]`` (:func:`centre_parts`). Centres that do not move keep theirs."""
    for j in range(U.shape[0]):
        _move_row(code, fphi, fdphi, U, mass, S, W, b, z, GT, c, zg, finite, j)


@njit(**PJIT)
def count_update_par(code, fphi, fdphi, U, mass, S, W, b, z, GT, c, zg, finite):
    """:func:`count_update`, one centre per iteration in parallel (each writes its own row
    of ``U`` and column of ``GT``)."""
    for j in prange(U.shape[0]):
        _move_row(code, fphi, fdphi, U, mass, S, W, b, z, GT, c, zg, finite, j)


@njit(**JIT)
def centre_parts(code, fphi, fdphi, U, rows, z, GT, c, zg, finite):
    """OUT the GEMM parts of the centres ``rows`` of ``U``: ``GT[:, j] = grad phi(U[j])``,
    ``c[j] = <U[j], GT[:, j]> - phi(U[j])``, ``zg[j] = <z, GT[:, j]>`` and ``finite[j]``."""
    for r in range(rows.shape[0]):
        _parts_row(code, fphi, fdphi, U, rows[r], z, GT, c, zg, finite)


@njit(**JIT)
def draw_rows(cdf, u, out):
    """OUT ``out[i] = searchsorted(cdf, u[i], side="right")``: the rows that
    ``RandomState.choice(n, p=p)`` draws from the uniforms ``u`` (``cdf`` the normalised
    cumulative sum of ``p``).

    Each search starts at ``u n``, the answer for equal weights (up to the rounding of the
    cumulative sum), walks at most a few entries from there and falls back to bisection, so
    a batch costs ``O(b)`` instead of ``O(b log n)`` cache misses for (near) equal weights
    and never more than bisection otherwise."""
    n = cdf.shape[0]
    for i in range(u.shape[0]):
        v = u[i]
        g = int(v * n)
        if g > n - 1:
            g = n - 1
        # cdf[g - 1] <= v < cdf[g] makes g the answer
        steps = 0
        while steps < 8 and g < n - 1 and cdf[g] <= v:
            g += 1
            steps += 1
        while steps < 8 and g > 0 and cdf[g - 1] > v:
            g -= 1
            steps += 1
        if (g == 0 or cdf[g - 1] <= v) and (cdf[g] > v or g == n - 1):
            out[i] = g if cdf[g] > v else n
            continue
        lo, hi = 0, n  # bisection: the first index with cdf > v
        while lo < hi:
            mid = (lo + hi) // 2
            if cdf[mid] > v:
                hi = mid
            else:
                lo = mid + 1
        out[i] = lo
