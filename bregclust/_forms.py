"""The forms of the built-in divergences: the GEMM form and the definition, on arrays.

A :class:`~bregclust.divergences.Divergence` record holds one form object (a strategy): the
separable generators share :class:`SeparableForm` (scalar generator kernels), l1_subgradient,
Mahalanobis and cosine have their own. The engine (:mod:`bregclust._execution`) is their one
caller on the passes of a fit; :mod:`bregclust.divergences` calls them for its public array
methods. A method's ``parallel`` argument is what :func:`bregclust._execution.parallel` returns:
``False`` (one kernel call on the calling thread) or the engine's runner of blocks of rows on
its thread pool, over which the serial kernels run block by block.
"""

import math
from contextlib import nullcontext

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from . import _kernels as K
from . import _spherical as SPH
from ._kernels import builtin_rows as KB
from ._kernels import generators as KG
from ._kernels import lloyd as KL

__all__ = ["SeparableForm", "L1Form", "MahalanobisForm", "CosineForm", "assigned_by_cluster"]


def _rows(parallel, work, n):
    """``work(s, e)`` over blocks of rows covering ``0..n-1``: by the runner ``parallel`` when
    one is given (the engine's thread pool: :func:`bregclust._execution.parallel` returns it for
    a large array), else in one call on the calling thread. The forms' kernels compute each
    row's values from that row alone, so the split does not change them."""
    if callable(parallel):
        parallel(work, n)
    elif n > 0:
        work(0, n)


# ---------------------------------------------------------------------------- forms (strategies)
class SeparableForm:
    """GEMM form and definition of a differentiable separable generator."""

    fused = True
    #: The built-in generator codes (inline scalar functions; :meth:`grad` a numpy ufunc for
    #: sqeuclidean and Itakura-Saito): their centre parts are computed over whole arrays here.
    BUILTIN = (KG.SQ, KG.KL, KG.IS)

    def __init__(self, gen):
        self.gen = gen

    @property
    def closed_parts(self):
        """Whether the generator is a built-in one (:attr:`BUILTIN`), whose centre parts
        :meth:`centre_parts` computes without calling a user's scalar functions."""
        return self.gen.code in self.BUILTIN

    def calls(self):
        """The context of a kernel call that may run a user's scalar functions: an exception
        raised inside one is raised once, as the user's, when the kernel returns."""
        return KG.callback_errors() if self.gen.code == KG.CUSTOM else nullcontext()

    def phi_rows(self, X, parallel=False):
        g = self.gen
        n, d = X.shape
        out = np.empty(n)
        # Serial kernels, on the engine's pool one block of rows per worker when the engine
        # says the array is large enough (bregclust._execution.parallel; a launch costs more
        # than small arrays - centres - take); each row's sum is that row's alone, so the
        # values of the former prange kernels rowsum_par / rowsum_csr bit for bit.
        if sp.issparse(X):
            data, indptr = X.data, X.indptr

            def block(s, e):
                KL.rowsum_csr_serial(g.code, g.fn_phi, data, indptr[s:e + 1], d, out[s:e])
        else:
            Xc = np.ascontiguousarray(X)
            if g.code != KG.CUSTOM:  # no pointer to type: see builtin_rows
                def block(s, e):
                    KB.rowsum_builtin(g.code, Xc[s:e], out[s:e])
            else:
                def block(s, e):
                    K.rowsum(g.code, g.fn_phi, Xc[s:e], out[s:e])
        with self.calls():
            _rows(parallel, block, n)
        if g.code == KG.CUSTOM and np.isnan(out).any():
            self._raise_nan_phi(X, int(np.flatnonzero(np.isnan(out))[0]))
        return out

    def _raise_nan_phi(self, X, i):
        """A user's ``phi`` returned NaN on row ``i`` of finite data: name the value (a NaN
        divergence would otherwise read as an overflow)."""
        g = self.gen
        row = X[i].toarray().ravel() if sp.issparse(X) else np.asarray(X[i])
        values = [0.0] + [float(v) for v in row] if sp.issparse(X) else [float(v) for v in row]
        bad = next((v for v in values if math.isnan(g.phi(v))), None)
        where = f"x = {bad!r}" if bad is not None else f"a value of row {i}"
        raise ValueError(
            f"phi of divergence {g.name!r} returned NaN at {where} (row {i}): a generator must "
            "be finite on its domain; declare a narrower domain when registering it or "
            "rescale the data.")

    def grad(self, U2, parallel=False):
        g = self.gen
        # The built-in derivatives are one vectorised ufunc each (the scalar kernels' values,
        # numpy's log within an ulp of numba's: 2x, log x with log 0 = -inf, -1/x); centres of
        # text data have hundreds of thousands of coordinates per cluster and are prepared
        # every iteration (the mini-batch count update too, for the centres that moved).
        if g.code == KG.SQ:
            return 2.0 * U2
        if g.code == KG.KL:  # log in float64 as the scalar kernel, stored in U2's type
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.log(U2, dtype=np.float64).astype(U2.dtype, copy=False)
        if g.code == KG.IS:
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(U2 >= 0, -1.0 / U2, np.nan)
        out = np.empty_like(U2)
        # one block of centres per worker of the engine's pool (each value is its own), as
        # phi_rows: the values of the former prange kernel map_scalar_par
        def block(s, e):
            K.map_scalar(g.code, KG.DPHI, g.fn_dphi, U2[s:e], out[s:e])
        with self.calls():
            if U2.flags.c_contiguous:  # slices of C rows: the whole array's signature
                _rows(parallel, block, U2.shape[0])
            else:
                K.map_scalar(g.code, KG.DPHI, g.fn_dphi, U2, out)
        self.check_grad(U2, out)
        return out

    def check_grad(self, U2, G):
        """Raise when a user's ``dphi`` returned NaN at a centre inside its domain (``G`` holds
        ``dphi`` of ``U2``, either ``(k, d)`` or transposed ``(d, k)``): a NaN gradient would
        otherwise turn every divergence to that centre into a silent non-finite value, read as
        a boundary centre. Every pass that evaluates ``dphi`` calls it: :meth:`grad` here, the
        mini-batch kernels that update the centres' parts in place."""
        g = self.gen
        if g.code != KG.CUSTOM or not np.isnan(G).any():
            return
        Gr = G if G.shape == U2.shape else G.T
        inside = np.isfinite(U2) if g.domain == "real" else np.isfinite(U2) & (U2 > 0)
        hit = np.argwhere(np.isnan(Gr) & inside)
        if hit.size:
            i, j = (int(v) for v in hit[0])
            raise ValueError(
                f"dphi of divergence {g.name!r} returned NaN at x = {float(U2[i, j])!r} (centre "
                f"{i}, feature {j}): a generator's derivative must be finite on its domain; "
                "declare a narrower domain when registering it or rescale the data.")

    def grad_inv(self, T2):
        g = self.gen
        out = np.empty_like(T2)
        with self.calls():
            K.map_scalar(g.code, KG.DPHI_INV, g.fn_dphi_inv, T2, out)
        return out

    def prepare(self, X, parallel=False):
        return X, self.phi_rows(X, parallel)

    def centre_parts(self, U, parallel=False):
        """``(G, c, phi)`` of centres ``U``: ``grad phi(U)``, ``<u, g> - phi(u)`` and
        ``phi(U)`` (the one place the GEMM parts of centres are computed:
        :func:`bregclust._execution.prepare_centres`, and the mini-batch count update for the
        centres that moved). kl's ``phi`` reuses the gradient's logarithm (float64 dense
        centres: :func:`~bregclust._kernels.builtin_rows.kl_rows_from_log`): one log per
        coordinate instead of two, the count update's cost on large centres."""
        G = self.grad(U, parallel)
        phi = self.centre_phi(U, G, parallel)
        with np.errstate(invalid="ignore"):
            c = np.einsum("ij,ij->i", U, G) - phi
        return G, c, phi

    def centre_phi(self, U, G, parallel=False):
        """``phi(U)`` of centres whose gradient ``G`` is computed: kl's reuses its logarithm
        (dense float64 centres: one log per coordinate, not two), the others
        :meth:`phi_rows`."""
        if self.gen.code == KG.KL and G.dtype == np.float64 and not sp.issparse(U):
            phi = np.empty(U.shape[0])
            KB.kl_rows_from_log(np.ascontiguousarray(U), np.ascontiguousarray(G), phi)
            return phi
        return self.phi_rows(U, parallel)

    def generic_pairwise(self, Xd, U, out):
        g = self.gen
        with self.calls():
            K.generic_pairwise(g.code, g.fn_phi, g.fn_dphi, Xd, U, out)

    def generic_assigned(self, Xd, U, labels, w, out, parallel=False):
        g = self.gen

        def block(s, e):  # each row's value is its own: the former prange kernel's bit for bit
            KL.generic_assigned_rows(g.code, g.fn_phi, g.fn_dphi, Xd, U, labels, w, out, s, e)
        with self.calls():
            _rows(parallel, block, Xd.shape[0])


def assigned_by_cluster(form, Xd, U, labels, w, out, chunk=4096, pairwise=None):
    """``generic_assigned`` of a form without its own kernel: its ``generic_pairwise`` (or
    ``pairwise(Xc, Uj, d)``, the same values) against each centre, on the rows of that
    cluster, ``chunk`` rows at a time."""
    pairwise = form.generic_pairwise if pairwise is None else pairwise
    out[:] = 0.0
    for j in range(U.shape[0]):
        idx = np.flatnonzero((labels == j) & (w > 0))
        for s in range(0, idx.size, chunk):
            rows = idx[s:s + chunk]
            d = np.empty((rows.size, 1))
            pairwise(Xd[rows], U[j:j + 1], d)
            out[rows] = d[:, 0]


class L1Form(SeparableForm):
    """l1_subgradient: ``Xg = [X+, X-]``, ``phi_x = 2 ||x||_1``, sign indicators as ``G``."""

    fused = False  # the fused Lloyd pass sums Xg, not X

    def prepare(self, X, parallel=False):
        if sp.issparse(X):
            Xp = X.maximum(0)
            Xm = (-X).maximum(0)
            Xg = sp.hstack([Xp, Xm], format="csr")
            phi_x = 2.0 * np.asarray(abs(X).sum(axis=1)).ravel()
        else:
            Xg = np.hstack([np.maximum(X, 0), np.maximum(-X, 0)])
            phi_x = 2.0 * np.abs(X).sum(axis=1)
        return Xg, phi_x

    def centre_parts(self, U, parallel=False):
        """``(G, 0, None)``: the sign indicators of ``[U+, U-]`` (no gradient, no phi)."""
        G = 2.0 * np.hstack([(U > 0), (U < 0)]).astype(np.float64)
        return G, np.zeros(U.shape[0]), None

    def generic_pairwise(self, Xd, U, out):
        K.l1_pairwise_exact(Xd, U, out)

    def generic_assigned(self, Xd, U, labels, w, out, parallel=False):
        def pairwise(Xc, Uj, d):  # serial blocks of rows: the prange kernel's values
            _rows(parallel, lambda s, e: KL.l1_pairwise_rows(Xc, Uj, d, s, e), Xc.shape[0])
        assigned_by_cluster(self, Xd, U, labels, w, out, pairwise=pairwise)


class MahalanobisForm:
    """``phi(x) = x^T A x``: products with ``A`` and a cached Cholesky factor."""

    fused = True

    def __init__(self, A):
        self.A = A
        self._cho = None

    def phi_rows(self, X, parallel=False):
        A = self.A
        n = X.shape[0]
        out = np.empty(n)
        for s in range(0, n, 4096):
            Xc = X[s:s + 4096]
            XA = np.asarray(Xc @ A)
            out[s:s + 4096] = (
                np.asarray(Xc.multiply(XA).sum(axis=1)).ravel() if sp.issparse(Xc)
                else np.einsum("ij,ij->i", Xc, XA)
            )
        return out

    def grad(self, U2, parallel=False):
        return 2.0 * (U2 @ self.A)

    def grad_inv(self, T2):
        if self._cho is None:
            self._cho = scipy.linalg.cho_factor(self.A)
        return 0.5 * scipy.linalg.cho_solve(self._cho, T2.T).T

    prepare = SeparableForm.prepare
    centre_parts = SeparableForm.centre_parts

    def centre_phi(self, U, G, parallel=False):
        """``phi(U)`` (:meth:`phi_rows`; ``G`` is not needed)."""
        return self.phi_rows(U, parallel)

    def generic_pairwise(self, Xd, U, out):
        A = self.A
        with np.errstate(over="ignore", invalid="ignore"):
            for j in range(U.shape[0]):
                diff = Xd - U[j]
                out[:, j] = np.einsum("ij,jk,ik->i", diff, A, diff)
        # inputs are finite, so a NaN is an overflow (inf - inf) of a positive quadratic form
        out[np.isnan(out)] = np.inf

    def generic_assigned(self, Xd, U, labels, w, out, parallel=False):
        assigned_by_cluster(self, Xd, U, labels, w, out)


class CosineForm:
    """cosine: ``phi(x) = ||x||`` on rows scaled to unit length (:mod:`bregclust._spherical`).

    ``Xg`` is the unit rows and ``phi_x = 1``; the GEMM parts of a centre are its direction
    ``u / ||u||`` and ``0``, so ``D = 1 - <x / ||x||, u / ||u||>``: one product per pass."""

    fused = True

    def phi_rows(self, X, parallel=False):
        if sp.issparse(X):
            sq = np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
            return np.sqrt(sq)
        return SPH.row_norms(X)

    def grad(self, U2, parallel=False):
        return SPH.unit_centres(U2)

    def prepare(self, X, parallel=False):
        Xg = SPH.unit_rows(X)
        return Xg, np.ones(X.shape[0])

    def centre_parts(self, U, parallel=False):
        """``(u / ||u||, 0, ||u||)``: ``c = <u, u / ||u||> - ||u||`` is 0 exactly."""
        return SPH.unit_centres(U), np.zeros(U.shape[0]), self.phi_rows(U)

    def grad_inv(self, T2):
        raise ValueError(
            "cosine: grad phi(u) = u / ||u|| forgets the length of u, so it has no "
            "inverse (and no left-type centroid); use the centres' directions as they are.")

    def generic_pairwise(self, Xd, U, out):
        n = Xd.shape[0]
        col = np.empty(n)
        for j in range(U.shape[0]):  # the definition of generic_assigned, column by column
            self.generic_assigned(Xd, U, np.full(n, j, dtype=np.int64), np.ones(n), col)
            out[:, j] = col

    def generic_assigned(self, Xd, U, labels, w, out, parallel=False, *, chunk=4096):
        Uu = SPH.unit_centres(U)
        for s in range(0, Xd.shape[0], chunk):
            Xc = Xd[s:s + chunk]
            with np.errstate(over="ignore", under="ignore"):
                sq = np.einsum("ij,ij->i", Xc, Xc, dtype=np.float64)
            if np.all((sq > 1e-280) & (sq < 1e280)):  # no scaling needed: no copy of the rows
                cos = np.einsum("ij,ij->i", Xc, Uu[labels[s:s + chunk]],
                                dtype=np.float64) / np.sqrt(sq)
            else:
                Xu = SPH.unit_rows(Xc).astype(np.float64, copy=False)
                cos = np.einsum("ij,ij->i", Xu, Uu[labels[s:s + chunk]])
            # 1 - cos >= 0 (rounding may give -eps); rows of zero weight count 0
            out[s:s + chunk] = np.where(w[s:s + chunk] > 0, np.maximum(1.0 - cos, 0.0), 0.0)
