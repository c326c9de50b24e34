"""The E-step pass of a Bregman mixture (:mod:`bregclust.mixture`).

The same GEMM form as the Lloyd pass of the engine (:mod:`bregclust._execution`), with a
log-sum-exp per row instead of an argmin and responsibility-weighted sums
(:class:`MixturePart`) instead of per-label sums; :func:`mixture_block` runs it on a block of
rows (:mod:`bregclust._blocks`).
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ._execution import (
    _LLOYD_CHUNK,
    PAIRWISE_DIGITS_GUARD,
    PARALLEL_MIN,
    _digits_threshold,
    _exact_rows,
    blas_one_thread,
    n_workers,
    pairwise,
    prepare_centres,
    run_chunks,
)
from ._kernels import mixture as KM

__all__ = ["MixtureCentres", "prepare_mixture", "EStep", "mixture_pass", "MIXTURE_LOGIT_GUARD",
           "MixturePart", "mixture_block"]


# ----------------------------------------------------------------------------- the mixture pass
# The E-step of a Bregman mixture (bregclust.mixture): the Lloyd pass with a log-sum-exp per row
# instead of an argmin, and responsibility-weighted sums instead of per-label sums.
class MixtureCentres:
    """The components of a Bregman mixture as the E-step pass sees them.

    Component ``h`` has the log-density ``alpha_h - beta_h d(x, u_h) + b(x)``; ``b`` does not
    depend on the component and is left to the caller. Build it with :func:`prepare_mixture`.

    Attributes
    ----------
    U : ndarray of shape (k, d)
        The means (conditioned units, float64).
    GT : ndarray of shape (d, k) or (d, 2 k)
        ``grad phi(U)^T``; with ``bounded``, ``[G~^T | B^T]`` (see
        :mod:`bregclust._kernels.mixture`).
    c, alpha, beta : ndarray of shape (k,)
    bounded : bool
        Some means have coordinates on the boundary of the domain (a zero kl coordinate).
    exact : bool
        The GEMM form does not apply (a non-finite part that is not a boundary zero, or a
        non-differentiable generator): the pass evaluates ``d`` by the definition.
    """

    __slots__ = ("U", "GT", "c", "alpha", "beta", "bounded", "exact")

    def __init__(self, U, G, c, alpha, beta, bounded, exact):
        self.U = U
        self.GT = np.ascontiguousarray(G.T)
        self.c = np.ascontiguousarray(c, dtype=np.float64)
        self.alpha = np.ascontiguousarray(alpha, dtype=np.float64)
        self.beta = np.ascontiguousarray(beta, dtype=np.float64)
        self.bounded = bool(bounded)
        self.exact = bool(exact)

    @property
    def k(self):
        return self.c.shape[0]


def prepare_mixture(div, U, alpha, beta):
    """:class:`MixtureCentres` of validated means ``U`` (conditioned units) with the
    per-component constants ``alpha`` and precisions ``beta``.

    Means with zero coordinates under a divergence on non-negative data (kl) keep the GEMM
    form: their infinite gradient entries become a boundary indicator (see
    :mod:`bregclust._kernels.mixture`)."""
    U = np.ascontiguousarray(U, dtype=np.float64)
    pc = prepare_centres(div, U)
    G, c = pc.G, pc.c
    bounded = exact = False
    if not pc.fused:
        bad = ~np.isfinite(G)
        if (div.differentiable and div.domain == "nonnegative" and bad.any()
                and np.all(U[bad] == 0.0) and np.isfinite(pc.phi).all()):
            G = np.where(bad, 0.0, G)
            with np.errstate(invalid="ignore"):
                c = np.einsum("ij,ij->i", U, G) - pc.phi
            if np.isfinite(c).all():
                bounded = True
                G = np.vstack([G, bad.astype(np.float64)])
            else:
                exact = True
        else:
            exact = True
    return MixtureCentres(U, G, c, alpha, beta, bounded, exact)


def _soft_from_divergences(D, alpha, beta, hard):
    """``(labels, lse, resp)`` of rows from their divergences ``D`` (n x k, ``inf`` allowed),
    with the conventions of the fused kernel."""
    with np.errstate(invalid="ignore", over="ignore"):
        t = alpha[None, :] - beta[None, :] * D
    t[~(t == t)] = -np.inf
    best = t.max(axis=1) if t.shape[1] else np.zeros(t.shape[0])
    labels = np.argmax(t, axis=1)
    dead = ~(best > -np.inf)
    if hard:
        resp = np.zeros_like(t)
        resp[np.arange(t.shape[0]), labels] = 1.0
        lse = best.copy()
    else:
        with np.errstate(invalid="ignore", under="ignore"):
            e = np.exp(t - np.where(dead, 0.0, best)[:, None])
            s = e.sum(axis=1)
            resp = e / np.where(s > 0, s, 1.0)[:, None]
            lse = best + np.log(np.where(s > 0, s, 1.0))
    if dead.any():
        resp[dead] = 0.0
        labels[dead] = 0
        resp[dead, 0] = 1.0
        lse[dead] = -np.inf
    return labels.astype(np.int64), lse, resp


def _add_rows(X, rows, resp, w, phi_x, lse, S, W, Phi, accumulate):
    """The sums of rows ``rows`` (responsibilities ``resp``) added to ``S``, ``W``, ``Phi``;
    returns their part of the log-likelihood."""
    wr = w[rows]
    pos = wr > 0
    if not pos.any():
        return 0.0
    rows, wr, resp, lse_r = rows[pos], wr[pos], resp[pos], lse[pos]
    R = resp * wr[:, None]
    W += R.sum(axis=0)
    Phi += R.T @ phi_x[rows]
    if accumulate:
        Xr = X[rows]
        S += np.asarray((Xr.T @ R).T) if sp.issparse(Xr) else R.T @ Xr
    with np.errstate(invalid="ignore"):
        return float(wr @ lse_r)


@dataclass(frozen=True)
class EStep:
    """What one E-step pass over rows returns (:func:`mixture_pass`).

    Attributes
    ----------
    labels : ndarray of int64, shape (n,)
        The component of largest logit of every row.
    lse : ndarray of shape (n,)
        ``log sum_h exp(alpha_h - beta_h d(x_i, u_h))`` of every row.
    resp : ndarray of shape (n, k) or None
        The responsibilities (None unless asked with ``keep_resp``).
    S : ndarray of shape (k, d)
        ``sum_i w_i r_ih x_i`` (zeros unless asked with ``accumulate``).
    W, Phi : ndarray of shape (k,)
        ``sum_i w_i r_ih`` and ``sum_i w_i r_ih phi(x_i)``.
    loglik : float
        ``sum_i w_i lse_i`` over the rows of positive weight.
    """

    labels: np.ndarray
    lse: np.ndarray
    resp: object
    S: np.ndarray
    W: np.ndarray
    Phi: np.ndarray
    loglik: float


def mixture_pass(div, X, prepared, mc, w, *, hard=False, accumulate=True, keep_resp=False):
    """One E-step pass over validated rows (:class:`EStep`).

    ``resp`` is None unless ``keep_resp``; ``S`` is zeros unless ``accumulate``. The fused
    kernels (:mod:`bregclust._kernels.mixture`) run when the GEMM form applies; rows they flag
    (a non-finite divergence) and components outside the GEMM form are evaluated by the
    definition of ``d``.
    """
    Xg, phi_x = prepared
    n, d = X.shape
    k = mc.k
    if mc.exact:
        D = pairwise(div, X, mc.U, prepared)
        labels, lse, resp = _soft_from_divergences(D, mc.alpha, mc.beta, hard)
        S = np.zeros((k, d))
        W = np.zeros(k)
        Phi = np.zeros(k)
        ll = _add_rows(X, np.arange(n), resp, w, phi_x, lse, S, W, Phi, accumulate)
        return EStep(labels, lse, (resp if keep_resp else None), S, W, Phi, ll)
    labels = np.empty(n, dtype=np.int64)
    lse = np.empty(n)
    R = np.empty((n if keep_resp else 0, k))
    S = np.zeros((k, d))
    W = np.zeros(k)
    Phi = np.zeros(k)
    if n == 0:
        return EStep(labels, lse, (R if keep_resp else None), S, W, Phi, 0.0)
    sparse = sp.issparse(Xg)
    if not sparse:
        Xg = np.ascontiguousarray(Xg)
    GT = mc.GT if sparse or mc.GT.dtype == Xg.dtype else mc.GT.astype(Xg.dtype)
    w_all = w
    guard = _mixture_guard_rows(Xg, phi_x, mc)
    if guard.size:  # by the definition below; left out of the kernel's sums
        w = w.copy()
        w[guard] = 0.0
    # One block of rows per worker of the pool, each with its own sums, added in block order.
    workers = n_workers() if n * d > PARALLEL_MIN else 1
    step = -(-n // workers)
    shape = ((d if accumulate else 0, k) if sparse else (k, d if accumulate else 0))
    bufs = {s: (np.zeros(shape), np.zeros(k), np.zeros(k), np.zeros(1))
            for s in range(0, n, step)}
    args = (mc.c, mc.alpha, mc.beta)
    flags = (mc.bounded, hard, accumulate)

    def work(s):
        e = min(n, s + step)
        Sb, Wb, Pb, Lb = bufs[s]
        Rb = R[s:e] if keep_resp else R
        if sparse:
            KM.mixture_step_csr(Xg.data, Xg.indices, Xg.indptr[s:e + 1], phi_x[s:e], GT, *args,
                                w[s:e], *flags, labels[s:e], lse[s:e], Rb, Sb, Wb, Pb, Lb)
        else:
            KM.mixture_step_dense(Xg[s:e], phi_x[s:e], GT, *args, w[s:e], *flags, _LLOYD_CHUNK,
                                  labels[s:e], lse[s:e], Rb, Sb, Wb, Pb, Lb)

    if len(bufs) == 1:
        with blas_one_thread():
            work(0)
    else:
        run_chunks(work, bufs)
    ll = 0.0
    with np.errstate(invalid="ignore"):
        for Sb, Wb, Pb, Lb in bufs.values():
            if accumulate:
                S += Sb.T if sparse else Sb
            W += Wb
            Phi += Pb
            ll += float(Lb[0])
    bad = np.flatnonzero(labels < 0)
    if guard.size:
        bad = np.union1d(bad, guard)
    if bad.size:  # an overflow of the GEMM form, or lost digits: these rows by the definition
        D = _exact_rows(div, X, bad, mc.U)
        lab, v, resp = _soft_from_divergences(D, mc.alpha, mc.beta, hard)
        labels[bad], lse[bad] = lab, v
        if keep_resp:
            R[bad] = resp
        ll += _add_rows(X, bad, resp, w_all, phi_x, v, S, W, Phi, accumulate)
    return EStep(labels, lse, (R if keep_resp else None), S, W, Phi, ll)


#: The E-step evaluates by the definition the rows whose logits ``alpha_h - beta_h d`` the
#: GEMM form may get wrong by more than this (nats): a tight component far from the origin
#: has a large ``beta_h`` times a divergence that lost its digits to cancellation. float32
#: rows are compared in float32 by design, as in :data:`PAIRWISE_DIGITS_GUARD`.
MIXTURE_LOGIT_GUARD = {np.dtype(np.float64): 2.0 ** -26, np.dtype(np.float32): 2.0 ** -10}


def _mixture_guard_rows(Xg, phi_x, mc):
    """Rows whose GEMM-form logits may be off by more than :data:`MIXTURE_LOGIT_GUARD`:
    the rounding bound of :func:`_digits_threshold` (the one :func:`pairwise` guards the
    k-means passes with) times the largest precision."""
    k = mc.k
    if Xg.shape[0] == 0 or k == 0:
        return np.empty(0, dtype=np.int64)
    G = mc.GT[:, :k].T
    dtype = Xg.dtype if Xg.dtype == np.float32 else np.dtype(np.float64)
    thr = _digits_threshold(dtype, Xg, phi_x, G, mc.c) / PAIRWISE_DIGITS_GUARD[np.dtype(dtype)]
    with np.errstate(over="ignore", invalid="ignore"):
        err = thr * float(np.max(mc.beta))
    return np.flatnonzero(~(err <= MIXTURE_LOGIT_GUARD[np.dtype(dtype)]))


@dataclass
class MixturePart:
    """What an E-step pass returns for one block, or for a data set once blocks are combined.

    Attributes
    ----------
    S : ndarray of shape (k, d)
        ``sum_i w_i r_ih x_i``.
    W : ndarray of shape (k,)
        ``sum_i w_i r_ih``.
    Phi : ndarray of shape (k,)
        ``sum_i w_i r_ih phi(x_i)`` (the dispersion step needs it).
    loglik : float
        ``sum_i w_i log sum_h exp(alpha_h - beta_h d(x_i, u_h))`` (without the base measure).
    labels, lse, resp : ndarray or None
        Per-row labels, log-sum-exps and responsibilities (kept by in-memory passes only).
    """

    S: np.ndarray
    W: np.ndarray
    Phi: np.ndarray
    loglik: float
    labels: object = None
    lse: object = None
    resp: object = None


def mixture_block(block, div, mc, hard=False, keep=0, accumulate=True):
    """One E-step pass over a block (:func:`mixture_pass`).

    Parameters
    ----------
    block : Block
    div : Divergence
    mc : MixtureCentres
    hard : bool, default=False
        One-hot responsibilities (the nearest component by the logits): the statistics of a
        hard partition.
    keep : {0, 1, 2}, default=0
        Keep nothing (a chunked source), the labels and log-sum-exps, or also the
        responsibilities.
    accumulate : bool, default=True
        Compute ``S`` (the M-step's weighted sums).

    Returns
    -------
    MixturePart
    """
    e = mixture_pass(div, block.X, block.prepared(div), mc, block.weights(), hard=hard,
                     accumulate=accumulate, keep_resp=keep >= 2)
    part = MixturePart(S=e.S, W=e.W, Phi=e.Phi, loglik=e.loglik)
    if keep:
        part.labels, part.lse, part.resp = e.labels, e.lse, e.resp
    return part
