"""Cosine geometry: rows on the unit sphere, and the centre of a cluster its normalised mean.

The registry's ``cosine`` record (``Divergence.spherical``) asks every pass for rows scaled to
unit Euclidean length; this module does the scaling, once per fit (the conditioning,
:class:`bregclust._conditioning.Conditioning` with ``unit=True``) and in the record's own
array methods, and projects centres back onto the sphere (the centroid step of spherical
k-means, Dhillon & Modha 2001: ``u = s / ||s||``, ``s`` the weighted sum of the cluster's
rows).

With unit rows, ``1 - cos(x, u)`` is the Bregman divergence of ``phi(x) = ||x||_2``:
``||x|| - ||u|| - <x - u, u / ||u||> = ||x|| (1 - cos(x, u))``, whose GEMM parts are
``grad phi(u) = u / ||u||`` and ``<u, grad phi(u)> - phi(u) = 0``; so the fused Lloyd kernels
run unchanged, one product of unit rows and unit centres per pass.
"""

import numpy as np
import scipy.sparse as sp

__all__ = ["unit_rows", "unit_centres", "row_norms", "zero_row_error"]


def zero_row_error(i, name="X"):
    """The error for an all-zero row, which has no direction."""
    return ValueError(
        f"cosine needs rows of non-zero length; {name} has an all-zero row at row {int(i)}, "
        "which has no direction. Remove the zero rows (e.g. empty documents) first.")


def _exponents(big):
    """Per-row power-of-two exponents bringing the largest entry near 1."""
    return np.frexp(np.where(big > 0, big, 1.0))[1]


def unit_rows(X, *, name="X"):
    """Rows scaled to unit Euclidean length, in their own floating type.

    Each row is first scaled by a power of two (its largest entry to about 1), so its squared
    norm neither overflows nor underflows at any magnitude; the norm is then taken in float64.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n, d)
        Validated, finite rows (float32 or float64).
    name : str, default="X"
        Name used in the error message.

    Returns
    -------
    ndarray or CSR matrix
        A new array of the same type and dtype (``X`` is not modified); dense rows whose
        norms are already 1 to rounding are returned as given.

    Raises
    ------
    ValueError
        An all-zero row (no direction), named by its index.
    """
    dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.float64
    n = X.shape[0]
    if sp.issparse(X):
        Y = sp.csr_matrix(X, dtype=dtype, copy=True)
        counts = np.diff(Y.indptr)
        rows = np.repeat(np.arange(n), counts)
        big = np.zeros(n)
        if Y.nnz:
            np.maximum.at(big, rows, np.abs(Y.data))
        zero = np.flatnonzero(big == 0)
        if zero.size:
            raise zero_row_error(zero[0], name)
        data = np.ldexp(Y.data.astype(np.float64), -_exponents(big)[rows])
        norms = np.sqrt(np.bincount(rows, weights=data * data, minlength=n))
        Y.data = (data / norms[rows]).astype(dtype, copy=False)
        return Y
    X = np.asarray(X)
    if X.dtype == dtype and n and X.shape[1]:
        # rows a fit has already scaled (the conditioning, then the GEMM preparation): one
        # product instead of a copy, when every norm is 1 to the rounding of the scaling
        sq = np.einsum("ij,ij->i", X, X, dtype=np.float64)
        if np.all(np.abs(sq - 1.0) <= 8.0 * np.finfo(dtype).eps):
            return X
    big = np.abs(X).max(axis=1) if X.shape[1] else np.zeros(n)
    zero = np.flatnonzero(~(big > 0))
    if zero.size:
        raise zero_row_error(zero[0], name)
    e = _exponents(big.astype(np.float64))
    if np.any(np.abs(e) > 60):  # only rows of extreme magnitude need the power-of-two step
        Y = np.ldexp(X.astype(np.float64), -e[:, None])
    else:
        Y = X
    norms = np.sqrt(np.einsum("ij,ij->i", Y, Y, dtype=np.float64))
    out = np.empty(X.shape, dtype=dtype)
    np.divide(Y, norms[:, None], out=out, casting="unsafe")
    return out


def row_norms(U):
    """Euclidean norms of the rows of a dense float64 array, exact at any magnitude."""
    U = np.asarray(U, dtype=np.float64)
    big = np.abs(U).max(axis=1) if U.shape[1] else np.zeros(U.shape[0])
    ok = np.isfinite(big) & (big > 0)
    e = np.where(ok, _exponents(np.where(ok, big, 1.0)), 0)
    V = np.ldexp(U, -e[:, None])
    with np.errstate(over="ignore", invalid="ignore"):
        return np.ldexp(np.sqrt(np.einsum("ij,ij->i", V, V)), e)


def unit_centres(U, previous=None):
    """Centres projected onto the unit sphere: ``u / ||u||`` per row (a new float64 array).

    A zero row (a cluster whose rows cancel, or an empty one) keeps the row of ``previous``
    when given (the objective does not depend on it then), else stays zero.

    Parameters
    ----------
    U : ndarray of shape (k, d)
    previous : ndarray of shape (k, d), optional

    Returns
    -------
    ndarray of shape (k, d)
    """
    U = np.array(U, dtype=np.float64)
    norms = row_norms(U)
    ok = np.isfinite(norms) & (norms > 0)
    U[ok] /= norms[ok, None]
    if not ok.all():
        if previous is not None:
            U[~ok] = previous[~ok]
        else:
            U[~ok] = 0.0
    return U
