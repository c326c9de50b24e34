"""The one call site of POT (exact optimal transport between two discrete marginals).

Both the MBC relation step and :func:`bregclust.metrics.partition_emd` (the paper's ``d_M``)
call :func:`transport_plan`, so POT's quirks are handled here once: inputs are made float64 and
C-ordered, ``b`` is rescaled to the mass of ``a`` (POT rejects marginals whose sums differ by
rounding), a single row or column gives the forced plan without calling POT, the iteration
limit grows with the problem size, and a result code other than optimal becomes a
:class:`~sklearn.exceptions.ConvergenceWarning`.
"""

import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ._validation import user_stacklevel

__all__ = ["transport_plan", "assignment_plan", "entropic_plan", "AssignmentPlan"]


def transport_plan(a, b, M, *, where="", what="the transport plan may be suboptimal",
                   advice="rescale the centres or keep them inside the domain"):
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
            stacklevel=user_stacklevel(),
        )
    return np.asarray(G, dtype=np.float64)


@dataclass(frozen=True)
class AssignmentPlan:
    """An exact transport plan and its cost.

    Attributes
    ----------
    plan : ndarray of shape (n_rows, n_cols)
        The optimal plan (float64).
    cost : float
        ``<plan, M>``.
    """

    plan: np.ndarray
    cost: float


def _check_costs(a, b, M, name, advice):
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    M = np.ascontiguousarray(M, dtype=np.float64)
    if np.isnan(M).any():
        raise ValueError(f"{name} contains NaN; {advice}.")
    if not np.isfinite(M).all():
        raise ValueError(f"{name} is infinite (a divergence overflowed float64, or a centre lies "
                         f"on the boundary of the domain); {advice}.")
    return a, b, M


def assignment_plan(a, b, M, *, where="", advice="use smoothing > 0 or rescale the data"):
    """Exact plan of a transport problem whose marginals are equal sums (POT's network simplex).

    Used by the size-constrained assignment (:mod:`bregclust._constrained`): ``a`` are the
    sample weights (and a slack row), ``b`` the cluster capacities, ``M`` the divergences.
    Unlike :func:`transport_plan`, ``b`` is not rescaled (the caller balances the marginals
    exactly: with integer marginals the network simplex then returns an integral vertex). POT's
    warm start from the previous iteration's dual potentials is not used: it made whole fits
    slower (2x on balanced blobs, 20x on 20 Newsgroups; benchmarks/RESULTS.md).

    Parameters
    ----------
    a : array-like of shape (n_rows,)
        Positive row marginal.
    b : array-like of shape (n_cols,)
        Positive column marginal with the sum of ``a``.
    M : array-like of shape (n_rows, n_cols)
        Finite cost matrix.
    where : str, default=""
        Appended to the messages.
    advice : str
        The fix named when ``M`` is not finite.

    Returns
    -------
    AssignmentPlan

    Raises
    ------
    ValueError
        ``M`` is not finite.
    """
    import ot

    a, b, M = _check_costs(a, b, M, f"the divergences between points and centres{where}",
                           advice)
    # check_marginals=False: the caller's marginals have equal sums up to the rounding of the
    # sum of the weights (POT would refuse a difference of one ulp)
    G, log = ot.emd(a, b, M, numItermax=max(100000, 50 * a.size * b.size), log=True,
                    check_marginals=False)
    code = log.get("result_code", 1)
    if code != 1:
        warnings.warn(
            f"ot.emd did not reach an optimal assignment{where} (result code {code}: "
            f"{log.get('warning')}); the cluster sizes may miss their bounds.",
            ConvergenceWarning, stacklevel=user_stacklevel())
    G = np.asarray(G, dtype=np.float64)
    return AssignmentPlan(G, float(log["cost"]))


def entropic_plan(a, b, M, reg, *, where="", max_iter=1000,
                  advice="use smoothing > 0 or rescale the data"):
    """Entropic transport plan by POT's Sinkhorn iterations.

    The kernel ``exp(-M / reg)`` is formed in float64 when no entry underflows, otherwise the
    iterations run in the log domain.

    Parameters
    ----------
    a : array-like of shape (n_rows,)
    b : array-like of shape (n_cols,)
        Marginals of equal sums.
    M : array-like of shape (n_rows, n_cols)
        Finite cost matrix.
    reg : float
        Entropic regularisation, in the units of ``M``.
    where : str, default=""
    max_iter : int, default=1000
    advice : str

    Returns
    -------
    ndarray of shape (n_rows, n_cols)
        The plan (float64): its rows sum to ``a`` only approximately.

    Raises
    ------
    ValueError
        ``M`` is not finite.
    """
    import ot

    a, b, M = _check_costs(a, b, M, f"the divergences between points and centres{where}",
                           advice)
    with warnings.catch_warnings():
        # POT warns when Sinkhorn stops at max_iter; the caller rounds and repairs the plan,
        # so an unconverged plan is only a worse starting point, never an error
        warnings.simplefilter("ignore")
        # the kernel exp(-M / reg) in float64 while no entry underflows (two matrix-vector
        # products per iteration), the log-domain iterations (a log-sum-exp per entry) else
        method = "sinkhorn" if float(M.max()) / reg < 600 else "sinkhorn_log"
        G = ot.sinkhorn(a, b, M, reg, method=method, numItermax=max_iter, stopThr=1e-6)
    return np.asarray(G, dtype=np.float64)
