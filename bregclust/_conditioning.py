"""Conditioning: centring and power-of-two scaling, decided once per fit, undone once.

The GEMM form ``d(x, u) = phi(x) + phi(u) - <x, grad phi(u)>`` loses digits or overflows on
data of extreme magnitude or far from the origin, although the divergence itself is well
defined there. What can be done about it depends only on the divergence record's
capabilities:

* ``homogeneity`` ``p`` (``d(s x, s u) = s^p d(x, u)``): data whose largest magnitude lies
  beyond ``2^+-SCALE_LIMIT`` are clustered as ``X 2^-e`` (exact: a power of two); centres are
  scaled back by ``2^e`` and objectives by ``2^(p e)``.
* ``coordinate_scale_invariant`` (Itakura-Saito: ``d(D x, D u) = d(x, u)`` for a positive
  diagonal ``D``): each column is scaled by its own power of two instead, so a column at
  ``1e-300`` next to one at ``1e300`` keeps all its digits; objectives are unchanged.
* ``translation_invariant`` (the quadratic forms): dense data far from the origin are centred
  at their weighted mean ``m`` when the GEMM form would lose more than four digits
  (``phi(m) > 1e4 s2``, ``s2`` the mean spread ``mean phi(x) - phi(m)``), so results on data
  near the origin stay those of the plain GEMM form.
* ``spherical`` (cosine): every row is scaled to unit Euclidean length
  (:func:`bregclust._spherical.unit_rows`, exact at any magnitude); centres are unit
  directions in both units.
* sample weights beyond ``2^+-SCALE_LIMIT`` are scaled by a power of two too (only their
  ratios matter to the partition); objectives and pseudo-counts follow.

:func:`decide` takes the statistics of one pass over the data (:class:`DataStats`, which any
data source computes chunk by chunk and combines exactly) and returns a :class:`Conditioning`
that every data source applies to its blocks. :func:`for_assignment` decides from one block and
a set of centres, for ``predict`` and ``transform``.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from . import _blocks as B
from . import _execution as E
from . import _spherical as SPH

__all__ = ["SCALE_LIMIT", "CENTRING_DIGITS", "DataStats", "block_stats", "Conditioning",
           "IDENTITY", "exponent", "decide", "for_assignment", "assign_rows", "pairwise_rows",
           "score_block", "centres_exponent", "unit_rows"]

#: Data (or weights) whose largest magnitude lies beyond ``2^+-SCALE_LIMIT`` are rescaled.
SCALE_LIMIT = 100
#: Dense data are centred when the GEMM form would lose more than this many digits.
CENTRING_DIGITS = 4


def exponent(m):
    """``e`` with ``m = f 2^e``, ``f`` in ``[0.5, 1)``, when ``m`` lies beyond
    ``2^+-SCALE_LIMIT``; 0 otherwise (and for 0, NaN or infinity).

    Parameters
    ----------
    m : float
        A non-negative magnitude.

    Returns
    -------
    int
    """
    if not (np.isfinite(m) and m > 0):
        return 0
    e = int(np.frexp(m)[1])
    return e if abs(e) > SCALE_LIMIT else 0


@dataclass
class DataStats:
    """What one pass over a data set tells its conditioning and its smoothing rule.

    Sums are held with power-of-two exponents (``xexp``, ``wexp``) so that data or weights of
    extreme magnitude neither overflow nor underflow while they are added; blocks combine
    exactly (:meth:`merge`).

    Attributes
    ----------
    n, d : int
        Rows and columns.
    npos : int
        Rows of positive weight.
    nnz : int or None
        Non-zero entries (asked with ``nnz=True``).
    sparse : bool
        Whether the rows are a sparse matrix.
    maxabs : float
        Largest ``|x|``.
    wmax : float
        Largest weight.
    colmax : ndarray of shape (d,) or None
        Largest ``|x|`` of each column (asked with ``colmax=True``).
    xexp : int or ndarray of int
        Exponent of the row sums below (one per column when ``colmax`` was asked: columns
        of a coordinate-scale-invariant divergence may lie far apart).
    wexp : int
        Exponent of the weight sums.
    weight : float
        ``sum_i w_i 2^-wexp``.
    wx : ndarray of shape (d,)
        ``sum_i w_i x_i 2^-(wexp + xexp)``.
    wphi : float or None
        ``sum_i w_i phi(x_i 2^-xexp) 2^-wexp`` for a quadratic ``phi`` (asked with
        ``phi=True``).
    colmin : ndarray of shape (d,) or None
        Smallest positive ``|x|`` of each column (``inf`` for a column of zeros), with
        ``colmax``: a column's scale must not push its smallest value below float64's range.
    """

    n: int
    d: int
    npos: int
    nnz: object
    sparse: bool
    maxabs: float
    wmax: float
    colmax: object
    xexp: int
    wexp: int
    weight: float
    wx: np.ndarray
    wphi: object
    colmin: object = None

    @property
    def total_weight(self):
        """``sum_i w_i`` (``inf`` when it overflows float64)."""
        with np.errstate(over="ignore"):
            return float(np.ldexp(self.weight, self.wexp))

    def counts(self):
        """``(n, d, nnz, total weight)`` for :func:`bregclust._smoothing.resolve_smoothing`."""
        return self.n, self.d, self.nnz, self.total_weight

    @staticmethod
    def merge(*parts):
        """The statistics of several blocks (or data sets) together."""
        parts = [p for p in parts if p is not None]
        if len(parts) == 1:
            return parts[0]
        X = parts[0].xexp
        for p in parts[1:]:
            X = np.maximum(X, p.xexp)
        Wx = max(p.wexp for p in parts)
        with np.errstate(under="ignore"):
            weight = sum(float(np.ldexp(p.weight, p.wexp - Wx)) for p in parts)
            wx = sum(np.ldexp(p.wx, (p.wexp - Wx) + (p.xexp - X)) for p in parts)
            wphi = (None if any(p.wphi is None for p in parts) else
                    sum(float(np.ldexp(p.wphi, (p.wexp - Wx) + 2 * (p.xexp - X)))
                        for p in parts))
        colmax = (None if any(p.colmax is None for p in parts) else
                  np.maximum.reduce([p.colmax for p in parts]))
        colmin = (None if any(p.colmin is None for p in parts) else
                  np.minimum.reduce([p.colmin for p in parts]))
        nnz = None if any(p.nnz is None for p in parts) else sum(p.nnz for p in parts)
        return DataStats(
            n=sum(p.n for p in parts), d=parts[0].d, npos=sum(p.npos for p in parts), nnz=nnz,
            sparse=any(p.sparse for p in parts), maxabs=max(p.maxabs for p in parts),
            wmax=max(p.wmax for p in parts), colmax=colmax, xexp=X, wexp=Wx, weight=weight,
            wx=wx, wphi=wphi, colmin=colmin)


def _column_min_positive(X, d):
    """Smallest positive ``|x|`` of every column (``inf`` where a column has none)."""
    out = np.full(d, np.inf)
    if sp.issparse(X):
        A = abs(X).tocsc()
        for j in range(d):
            v = A.data[A.indptr[j]:A.indptr[j + 1]]
            v = v[v > 0]
            if v.size:
                out[j] = v.min()
        return out
    if X.shape[0]:
        A = np.abs(X)
        out = np.where(A > 0, A, np.inf).min(axis=0).astype(np.float64)
    return out


def block_stats(block, div, *, phi=False, colmax=False, nnz=False):
    """:class:`DataStats` of one block of validated rows.

    Parameters
    ----------
    block : bregclust._blocks.Block
    div : Divergence
    phi : bool, default=False
        Also ``sum w phi(x)`` (translation-invariant divergences: the centring rule). When no
        scaling is needed the values of ``phi(x)`` are kept in the block's GEMM preparation.
    colmax : bool, default=False
        Also the largest ``|x|`` of every column (coordinate-scale-invariant divergences).
    nnz : bool, default=False
        Also the number of non-zero entries (the smoothing rule on non-negative data).

    Returns
    -------
    DataStats
    """
    X, w = block.X, block.w
    n, d = X.shape
    sparse = sp.issparse(X)
    lo, hi = block.value_range()
    maxabs = max(hi, -lo)
    cm = None
    if colmax and not phi:
        if n == 0:
            cm = np.zeros(d)
        elif sparse:
            cm = np.asarray(abs(X).max(axis=0).toarray()).ravel()
        else:
            cm = np.abs(X).max(axis=0)
        # columns of very different magnitude (coordinate-scale-invariant divergences): one
        # exponent per column, so a tiny column does not vanish next to a huge one
        xe = np.array([exponent(v) for v in cm], dtype=np.int64)
        if not xe.any():
            xe = 0
    else:
        xe = exponent(maxabs)
        if colmax:
            cm = (np.zeros(d) if n == 0 else
                  np.asarray(abs(X).max(axis=0).toarray()).ravel() if sparse else
                  np.abs(X).max(axis=0))
    cmin = _column_min_positive(X, d) if colmax else None
    if w is None:
        wmax, we, ws, npos = (1.0 if n else 0.0), 0, None, n
    else:
        wmax = float(w.max()) if n else 0.0
        we = exponent(wmax)
        ws = np.ldexp(w, -we) if we else w
        npos = int(np.count_nonzero(w > 0))
    Xs = X
    if np.any(xe):
        if sparse:
            Xs = X.copy()
            Xs.data = np.ldexp(X.data, -(xe[X.indices] if np.ndim(xe) else xe))
        else:
            Xs = np.ldexp(X, -xe)
    ones = ws if ws is not None else np.ones(n)
    with np.errstate(over="ignore", under="ignore"):
        wx = E.column_sums(ones, Xs) if n else np.zeros(d)
        wphi = None
        if phi:
            ph = block.prepared(div)[1] if not np.any(xe) else E.phi_rows(div, Xs)
            wphi = float(ones @ ph) if n else 0.0
    nz = None
    if nnz:
        nz = int(np.count_nonzero(X.data) if sparse else np.count_nonzero(X))
    return DataStats(n=n, d=d, npos=npos, nnz=nz, sparse=sparse, maxabs=maxabs, wmax=wmax,
                     colmax=cm, xexp=xe, wexp=we, weight=float(np.sum(ones)) if n else 0.0,
                     wx=wx, wphi=wphi, colmin=cmin)


class Conditioning:
    """How a fit sees its data: ``(X 2^-scale 2^-col_scale) - offset``, weights ``w 2^-weight_scale``.

    Parameters
    ----------
    scale : int, default=0
        Common power-of-two exponent of the data.
    col_scale : ndarray of int, optional
        Per-column exponents (coordinate-scale-invariant divergences).
    offset : ndarray of shape (n_features,), optional
        Subtracted after scaling (translation-invariant divergences, dense data).
    weight_scale : int, default=0
        Power-of-two exponent of the sample weights.
    degree : int, default=0
        Homogeneity of the divergence under ``scale`` (objectives scale by ``2^(degree
        scale)``).
    unit : bool, default=False
        Rows scaled to unit length (a ``spherical`` divergence: cosine); centres are unit
        directions.
    """

    __slots__ = ("scale", "col_scale", "offset", "weight_scale", "degree", "unit")

    def __init__(self, scale=0, col_scale=None, offset=None, weight_scale=0, degree=0,
                 unit=False):
        self.scale = int(scale)
        self.col_scale = col_scale
        self.offset = offset
        self.weight_scale = int(weight_scale)
        self.degree = int(degree)
        self.unit = bool(unit)

    def __repr__(self):
        cols = None if self.col_scale is None else f"{int(np.count_nonzero(self.col_scale))} cols"
        return (f"Conditioning(scale={self.scale}, col_scale={cols}, "
                f"offset={'yes' if self.offset is not None else None}, "
                f"weight_scale={self.weight_scale}" + (", unit=True)" if self.unit else ")"))

    def __reduce__(self):
        return (Conditioning, (self.scale, self.col_scale, self.offset, self.weight_scale,
                               self.degree, self.unit))

    @property
    def identity(self):
        """Whether the data are used as given."""
        return (not self.scale and self.col_scale is None and self.offset is None
                and not self.weight_scale and not self.unit)

    @property
    def data_identity(self):
        """Whether the data rows (not the weights) are used as given."""
        return (not self.scale and self.col_scale is None and self.offset is None
                and not self.unit)

    def token(self):
        """A hashable summary, equal for equal conditionings (a cache key)."""
        cols = None if self.col_scale is None else self.col_scale.tobytes()
        off = None if self.offset is None else self.offset.tobytes()
        return (self.scale, cols, off, self.weight_scale, self.unit)

    # ------------------------------------------------------------------ forward
    def apply(self, X):
        """The conditioned data (a new array; ``X`` itself when nothing changes).

        Parameters
        ----------
        X : ndarray or CSR matrix of shape (n, d)

        Returns
        -------
        ndarray or CSR matrix
        """
        if self.data_identity:
            return X
        if self.unit:  # nothing else applies to a spherical divergence (see decide)
            return SPH.unit_rows(X)
        if sp.issparse(X):
            X = X.copy()
            if self.col_scale is not None:
                X.data = np.ldexp(X.data, -self.col_scale[X.indices])
            if self.scale:
                X.data = np.ldexp(X.data, -self.scale)
            return X  # sparse data are never centred (see decide)
        if self.col_scale is not None:
            X = np.ldexp(X, -self.col_scale[None, :])
        if self.scale:
            X = np.ldexp(X, -self.scale)
        if self.offset is not None:
            X = (X - self.offset).astype(X.dtype, copy=False)
        return np.ascontiguousarray(X)

    def apply_weights(self, w):
        """Conditioned sample weights (``None`` stays ``None``)."""
        if w is None or not self.weight_scale:
            return w
        return np.ldexp(w, -self.weight_scale)

    def apply_mass(self, beta):
        """A pseudo-count in units of sample weight (smoothing) in the conditioned units."""
        return float(np.ldexp(beta, -self.weight_scale)) if self.weight_scale else float(beta)

    def apply_centres(self, U):
        """Centres given in the data's units, in the conditioned units."""
        if self.unit:
            return SPH.unit_centres(U)
        U = np.asarray(U, dtype=np.float64)
        if self.col_scale is not None:
            U = np.ldexp(U, -self.col_scale[None, :])
        if self.scale:
            U = np.ldexp(U, -self.scale)
        if self.offset is not None:
            U = U - self.offset
        return np.ascontiguousarray(U)

    # ------------------------------------------------------------------ back
    def undo_centres(self, U):
        """Centres of the conditioned data, in the data's units."""
        if self.unit:
            return SPH.unit_centres(U)
        U = np.asarray(U, dtype=np.float64)
        if self.offset is not None:
            U = U + self.offset
        if self.scale:
            U = np.ldexp(U, self.scale)
        if self.col_scale is not None:
            U = np.ldexp(U, self.col_scale[None, :])
        return U

    def undo_divergences(self, D):
        """Divergences between conditioned points, in the data's units (``inf`` on overflow)."""
        p = self.degree * self.scale
        if not p:
            return D
        with np.errstate(over="ignore"):
            if np.ndim(D) == 0:
                return float(np.ldexp(float(D), p))
            return np.ldexp(D, p)

    def undo_objective(self, v):
        """A weighted sum of divergences (an objective), in the data's units."""
        p = self.degree * self.scale + self.weight_scale
        if not p:
            return v
        with np.errstate(over="ignore"):
            if np.ndim(v) == 0:
                return float(np.ldexp(float(v), p))
            return np.ldexp(np.asarray(v, dtype=np.float64), p)

    def undo_mass(self, beta):
        """A pseudo-count of the conditioned units, in units of sample weight."""
        return float(np.ldexp(beta, self.weight_scale)) if self.weight_scale else float(beta)

    def mean(self, stats):
        """The weighted mean of the conditioned data, from the statistics of the raw data."""
        if stats.weight <= 0:
            return np.zeros(stats.wx.shape[0])
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            m = stats.wx / stats.weight
            if self.col_scale is not None:
                m = np.ldexp(m, stats.xexp - self.scale - self.col_scale)
            else:
                m = np.ldexp(m, stats.xexp - self.scale)
        if self.offset is not None:
            m = m - self.offset
        if self.unit:  # the direction of the mean: a point of the sphere, as the centres
            return SPH.unit_centres(m[None, :])[0]
        return m


IDENTITY = Conditioning()


def _offset(div, stats, scale):
    """The centring offset of :func:`decide` (``None`` when the data stay where they are)."""
    if not div.translation_invariant or stats.sparse or stats.wphi is None:
        return None
    if stats.weight <= 0 or stats.n == 0:
        return None
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        m = np.ldexp(stats.wx / stats.weight, stats.xexp - scale)
        # phi is a quadratic form for every translation-invariant divergence
        mean_phi = float(np.ldexp(stats.wphi / stats.weight, 2 * (stats.xexp - scale)))
        if not np.isfinite(m).all():
            return None
        pm = float(E.phi_rows(div, np.ascontiguousarray(m[None, :]))[0])
        s2 = mean_phi - pm
    if not (np.isfinite(pm) and np.isfinite(s2)):
        return None
    return m if pm > 10.0 ** CENTRING_DIGITS * max(s2, 0.0) else None


def decide(div, stats, *, centres=None):
    """The conditioning of one fit, from the statistics of its data.

    Parameters
    ----------
    div : Divergence
    stats : DataStats
        :class:`bregclust._execution.DataStats` of the whole data set (all tasks of a
        multi-task fit, combined), collected with ``phi`` for translation-invariant
        divergences and ``colmax`` for coordinate-scale-invariant ones.
    centres : ndarray, optional
        Initial centres given by the user: their magnitude counts for the scale.

    Returns
    -------
    Conditioning
    """
    ws = exponent(stats.wmax)
    if div.spherical:
        return Conditioning(weight_scale=ws, unit=True)
    if div.coordinate_scale_invariant and stats.colmax is not None:
        colmax = stats.colmax
        if centres is not None and centres.size:
            colmax = np.maximum(colmax, np.abs(centres).max(axis=0))
        cols = np.array([exponent(v) for v in colmax], dtype=np.int64)
        if stats.colmin is not None:
            cols = _keep_smallest(cols, stats.colmin)
        col_scale = cols if cols.any() else None
        return Conditioning(col_scale=col_scale, weight_scale=ws, degree=0)
    if div.homogeneity is None:
        return Conditioning(weight_scale=ws)
    m = stats.maxabs
    if centres is not None and centres.size:
        m = max(m, float(np.abs(centres).max()))
    e = exponent(m)
    return Conditioning(scale=e, offset=_offset(div, stats, e), weight_scale=ws,
                        degree=div.homogeneity)


def _keep_smallest(cols, colmin):
    """Column exponents lowered so that no column's smallest positive value falls below the
    normal float64 range when scaled down (a column spanning 1e-300 to 1e300 would otherwise
    lose its small rows to underflow: they became 0, and every divergence to them inf)."""
    with np.errstate(divide="ignore"):
        emin = np.where(np.isfinite(colmin) & (colmin > 0), np.frexp(colmin)[1], 2000)
    room = emin.astype(np.int64) + 1021  # 2^(emin - 1 - shift) stays >= 2^-1022
    return np.where(cols > 0, np.minimum(cols, np.maximum(room, 0)), cols)


def centres_exponent(U):
    """The power-of-two exponent :func:`exponent` of the largest magnitude of ``U``."""
    return exponent(float(np.abs(U).max())) if np.size(U) else 0


def _for_block(div, X, U):
    block = B.Block(X)
    stats = block_stats(block, div, phi=div.translation_invariant,
                        colmax=div.coordinate_scale_invariant)
    return decide(div, stats, centres=U), block


def for_assignment(div, X, U):
    """The conditioning under which rows ``X`` are compared with centres ``U`` (``predict``).

    The scale comes from both (one common power of two, so every row keeps its nearest
    centre); dense rows far from the origin are centred at their mean, as in a fit.

    Parameters
    ----------
    div : Divergence
    X : ndarray or CSR matrix
        Validated rows.
    U : ndarray or None
        Centres in the data's units (None: the rows alone).

    Returns
    -------
    Conditioning
    """
    return _for_block(div, X, U)[0]


def assign_rows(div, X, U):
    """Nearest centre of every row under :func:`for_assignment`: ``(labels, mins)``, the
    minima in the data's units. The labels are those of a fit's Lloyd pass (the fused
    kernel when it applies).

    Under a power-of-two scale the minima are evaluated again by the definition in the
    data's units: scaled divergences between points much smaller than the largest ones would
    underflow (the labels do not depend on it).

    Parameters
    ----------
    div : Divergence
    X : ndarray or CSR matrix
        Validated rows.
    U : ndarray
        Validated centres in the data's units.

    Returns
    -------
    labels : ndarray of int64
    mins : ndarray
    """
    cond, block = _for_block(div, X, U)
    if not cond.data_identity:
        block = B.Block(cond.apply(X))
    labels, mins = B.assign_block(block, div, E.prepare_centres(div, cond.apply_centres(U)))
    if cond.scale:
        mins = E.exact_assigned(div, X, np.ascontiguousarray(U, dtype=np.float64), labels,
                                guard=True)
    return labels, mins


def pairwise_rows(div, X, U):
    """Every divergence ``d(x_i, u_j)``, in the data's units, dense rows far from the origin
    centred as in a fit.

    Divergences are evaluated in the data's units (no power-of-two scale): where a value
    over- or underflows there it is truly beyond float64, and a scale would make small
    values underflow next to large ones.

    Parameters
    ----------
    div : Divergence
    X : ndarray or CSR matrix
        Validated rows.
    U : ndarray
        Validated centres in the data's units.

    Returns
    -------
    ndarray of shape (n, k)
    """
    cond, block = _for_block(div, X, U)
    if cond.offset is None:
        return E.pairwise(div, X, U, block.prep, guard=True)
    offset = np.ldexp(cond.offset, cond.scale) if cond.scale else cond.offset
    with np.errstate(over="ignore", invalid="ignore"):
        centred = Conditioning(offset=offset)
        return E.pairwise(div, centred.apply(X), centred.apply_centres(U), guard=True)


def score_block(block, div, U):
    """``sum_i w_i min_j d(x_i, u_j)`` of a block, in the data's units (``score``)."""
    _, mins = assign_rows(div, block.X, U)
    with np.errstate(over="ignore", invalid="ignore"):
        return float(block.weights() @ mins)


def unit_rows(X):
    """Rows scaled to unit Euclidean norm, exactly at any magnitude: each row is first scaled
    by a power of two (its largest entry to about 1), so its squared norm neither overflows
    (rows near 1e300) nor underflows (rows near 1e-300). All-zero rows stay zero. Cosine
    similarities of the result are those of the rows as given.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n, d)
        Validated rows.

    Returns
    -------
    ndarray or CSR matrix
        A new array (the input is not modified).
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X, copy=True)
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
        big = np.zeros(X.shape[0])
        np.maximum.at(big, rows, np.abs(X.data))
        e = np.frexp(np.where(big > 0, big, 1.0))[1]
        X.data = np.ldexp(X.data, -e[rows])
        norms = np.sqrt(np.bincount(rows, weights=X.data ** 2, minlength=X.shape[0]))
        X.data = X.data / np.where(norms > 0, norms, 1.0)[rows]
        return X
    big = np.abs(X).max(axis=1) if X.shape[1] else np.zeros(X.shape[0])
    e = np.frexp(np.where(big > 0, big, 1.0))[1]
    Y = np.ldexp(X, -e[:, None])
    norms = np.sqrt(np.einsum("ij,ij->i", Y, Y))
    return Y / np.where(norms > 0, norms, 1.0)[:, None]
