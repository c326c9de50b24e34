"""The one call site of POT (exact optimal transport between two discrete marginals).

Both the MBC relation step and :func:`bregclust.metrics.partition_emd` (the paper's ``d_M``)
call :func:`transport_plan`, so POT's quirks are handled here once: inputs are made float64 and
C-ordered, ``b`` is rescaled to the mass of ``a`` (POT rejects marginals whose sums differ by
rounding), a single row or column gives the forced plan without calling POT, the iteration
limit grows with the problem size, and a result code other than optimal becomes a
:class:`~sklearn.exceptions.ConvergenceWarning`.
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

__all__ = ["transport_plan"]


def transport_plan(a, b, M, *, where="", what="the transport plan may be suboptimal",
                   stacklevel=3, advice="rescale the centres or keep them inside the domain"):
    """Optimal transport plan ``argmin_W <W, M>`` with marginals ``a`` (rows), ``b`` (columns).

    Parameters
    ----------
    a : array-like of shape (k1,)
        Non-negative row marginal with positive mass.
    b : array-like of shape (k2,)
        Non-negative column marginal; rescaled to the mass of ``a``.
    M : array-like of shape (k1, k2)
        Finite cost matrix.
    where : str, default=""
        Appended to the messages (e.g. ``" between tasks 0 and 1"``).
    what : str
        Consequence named in the warning when POT stops before optimality.
    stacklevel : int, default=3
        Passed to :func:`warnings.warn`.
    advice : str
        The fix named when ``M`` is not finite (the caller knows its own parameters).

    Returns
    -------
    ndarray of shape (k1, k2)
        The plan (float64); its row sums are ``a`` and column sums the rescaled ``b``.

    Raises
    ------
    ValueError
        ``M`` is not finite.
    """
    import ot  # imported here: POT is slow to import and most fits never call it

    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    M = np.ascontiguousarray(M, dtype=np.float64)
    if np.isnan(M).any():
        raise ValueError(f"the cost matrix between cluster centres{where} contains NaN; {advice}.")
    if not np.isfinite(M).all():
        raise ValueError(
            f"the cost matrix between cluster centres{where} is infinite (a divergence "
            f"overflowed float64, or a centre lies on the boundary of the domain); {advice}."
        )
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError(f"the marginals{where} are not finite (their mass overflowed); "
                         "rescale the weights.")
    sa, sb = a.sum(), b.sum()
    if sb > 0:
        b = b * (sa / sb)
    if a.shape[0] == 1 or b.shape[0] == 1:  # a single cluster: the plan is forced
        return np.outer(a, b) / sa if sa > 0 else np.zeros((a.shape[0], b.shape[0]))
    G, log = ot.emd(a, b, M, numItermax=max(100000, 50 * a.size * b.size), log=True)
    code = log.get("result_code", 1)
    if code != 1:
        warnings.warn(
            f"ot.emd did not reach an optimal transport plan{where} (result code {code}: "
            f"{log.get('warning')}); {what}.",
            ConvergenceWarning,
            stacklevel=stacklevel,
        )
    return np.asarray(G, dtype=np.float64)
