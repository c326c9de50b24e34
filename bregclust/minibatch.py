"""Mini-batch Bregman k-means (Sculley, 2010), scikit-learn's ``MiniBatchKMeans`` with any divergence.

The Bregman centroid of a set of points is their mean for *every* Bregman divergence
(Banerjee et al., 2005), so scikit-learn's mini-batch update with per-centre counts,

.. math::

   u_j \\leftarrow \\frac{m_j u_j + \\sum_{i \\in B_j} w_i x_i}{m_j + \\sum_{i \\in B_j} w_i},
   \\qquad m_j \\leftarrow m_j + \\sum_{i \\in B_j} w_i,

(``B_j`` the rows of the batch nearest to ``u_j`` by the divergence) keeps each centre the mean
of every row assigned to it so far, whatever the divergence. :class:`MiniBatchBregmanKMeans`
runs it on every data source:

* in memory: batches drawn as scikit-learn's ``MiniBatchKMeans`` draws them (with replacement,
  in proportion to the sample weights, from the estimator's ``RandomState``), so the same
  seed gives the same batches and, for the squared Euclidean distance, the same centres;
* a dask array: every epoch visits the chunks in a random order and runs a chunk's batches (a
  random permutation of its rows, split into batches) in a task on that chunk; the centres
  and counts travel from task to task (:meth:`bregclust._dask.DaskSource.fold`), the chunks
  stay where they are;
* a stream: :meth:`MiniBatchBregmanKMeans.partial_fit`, one step per call.

Bisecting k-means lives in :mod:`bregclust.bisecting`.
"""

import contextlib
import math
import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
from sklearn.utils import check_random_state

from . import _conditioning as C
from . import _execution as E
from ._callbacks import fit_callbacks
from ._centroid import NearestCentreMixin, in_dtype, out_dtype, reported_objective
from ._kernels import minibatch as KM
from ._progress import progress
from ._seeding import seed_centres
from ._smoothing import push_inside, resolve_smoothing, smoothed_points
from ._sources import InMemorySource, as_source, is_dask_array
from ._validation import (
    check_finite,
    check_n_clusters,
    check_scalar,
    user_stacklevel,
)

__all__ = ["MiniBatchBregmanKMeans"]

#: Batches with fewer multiply-adds (stored entries times centres) than this run on one thread.
SERIAL_WORK = 1 << 22
#: Centres with fewer coordinates (``k d``) than this take the fused count-update kernel even
#: when the divergence has closed-form parts: below it, numpy's per-call overhead outweighs
#: its vector arithmetic.
VECTOR_PARTS = 1 << 14


# ----------------------------------------------------------------------------- one run's state
class MiniBatchRun:
    """The state of one mini-batch run, carried from batch to batch (and from chunk task to
    chunk task: it pickles without its cached GEMM parts).

    Parameters
    ----------
    U : ndarray of shape (k, d)
        Initial centres (conditioned units, float64).
    rho : float
        Smoothing pseudo-count per unit of sample weight seen: a batch of weight ``W_B`` adds
        ``rho W_B`` at the smoothing point ``z`` to every centre.
    z : ndarray of shape (d,) or None
        The smoothing point (``rho > 0``).
    beta_seed : float
        Pseudo-count of the smoothing point in re-seeded centres (as in k-means seeding).
    batch_size : int
        Nominal batch size (counts towards the reassignment schedule, as in scikit-learn).
    n_ref : int
        Rows of the data set (the weight of a batch in the moving average of the objective).
    tol : float
        Stop when the centres move by at most this (``sum_j d(u_j', u_j)``, conditioned units).
    max_no_improvement : int or None
        Stop after this many steps without a new minimum of the averaged objective.
    reassignment_ratio : float
        Centres whose count falls below this fraction of the largest count are re-seeded.
    monitor : bool
        Whether the stopping rules apply (``fit``) or not (``partial_fit``).
    """

    def __init__(self, U, *, rho, z, beta_seed, batch_size, n_ref, tol, max_no_improvement,
                 reassignment_ratio, monitor):
        self.U = U
        self.mass = np.zeros(U.shape[0])
        self.rho = float(rho)
        self.z = z
        self.beta_seed = float(beta_seed)
        self.batch_size = int(batch_size)
        self.n_ref = int(n_ref)
        self.tol = float(tol)
        self.max_no_improvement = max_no_improvement
        self.reassignment_ratio = float(reassignment_ratio)
        self.monitor = bool(monitor)
        self.ewa = None
        self.ewa_min = None
        self.no_improvement = 0
        self.since_reassign = 0
        self.steps = 0
        self.rows = 0
        self.reassigned = 0
        self.converged = False
        self.history = []
        self._pc = None
        self._parts = None
        self._phi_z = None
        self._zero = None
        self._z1 = None

    def __getstate__(self):
        state = dict(self.__dict__)
        for key in ("_pc", "_parts", "_phi_z", "_zero", "_z1"):
            state[key] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__dict__.setdefault("_z1", None)

    def fused(self, div):
        """Whether the fused count update applies (a separable differentiable generator)."""
        return div.generator is not None and div.has_gemm

    def vector_parts(self, div):
        """Whether the count update takes the parts of the centres that moved from the
        engine's one path (the form's ``centre_parts``, as
        :func:`bregclust._execution.prepare_centres`: the same numbers) instead of the fused
        kernel's scalar generator functions: built-in generators
        (:attr:`~bregclust.divergences.Divergence.has_closed_form_parts`) on large centres."""
        return div.has_closed_form_parts and self.U.size >= VECTOR_PARTS

    def prepared(self, div):
        """The :class:`~bregclust._execution.PreparedCentres` of the current centres (the
        engine's path, for divergences the fused count update does not cover)."""
        if self._pc is None:
            self._pc = E.prepare_centres(div, self.U)
        return self._pc

    def prepared_centres(self, div):
        """The current centres as :class:`~bregclust._execution.PreparedCentres` for a pass of
        the engine, from the parts the count update keeps when they are finite."""
        if self.fused(div):
            GT, c, _, fin = self.parts(div)
            if fin.all():
                # U copied: lazy dask labels keep it, and later steps update U in place
                return E.PreparedCentres(self.U.copy(), GT.T, c.copy(), None, fused=True)
        return E.prepare_centres(div, self.U.copy())

    def parts(self, div):
        """``(GT, c, zg, finite)``: the GEMM parts of the current centres, ``<z, g_j>`` and
        whether each centre's parts are finite, kept up to date by the fused count update."""
        if self._parts is None:
            k, d = self.U.shape
            self._parts = (np.empty((d, k)), np.empty(k), np.empty(k), np.empty(k, dtype=bool))
            self._moved(div, np.arange(k))
        return self._parts

    def _zvec(self):
        """``z``, or zeros without smoothing (the kernels take an array)."""
        if self.z is not None:
            return self.z
        if self._zero is None:
            self._zero = np.zeros(self.U.shape[1])
        return self._zero

    def _moved(self, div, rows):
        """Recompute the parts of the centres ``rows`` (moved outside the fused kernel)."""
        if self._parts is None:
            return
        rows = np.asarray(rows, dtype=np.int64)
        GT, c, zg, fin = self._parts
        if not self.vector_parts(div):
            g = div.generator
            KM.centre_parts(g.code, g.fn_phi, g.fn_dphi, self.U, rows, self._zvec(), GT, c,
                            zg, fin)
            if not fin.all():
                div.form.check_grad(self.U, GT)
            return
        if rows.size == 0:
            return
        rows = _span(rows)  # a range of centres: a view of U, no copy
        Ur = self.U[rows]
        G, c[rows], _ = div.form.centre_parts(Ur, E.parallel(Ur.size))
        GT[:, rows] = G.T
        self._product(rows)

    def _product(self, rows):
        """``<z, g_j>`` and the finiteness flags of the centres ``rows`` (an index array or a
        slice) from their closed-form parts: ``<z, g_j>`` and ``sum_l g_jl`` in one product,
        the finiteness test of the fused kernel."""
        GT, c, zg, fin = self._parts
        with np.errstate(over="ignore", invalid="ignore"):
            P = self._z_and_ones() @ GT[:, rows]
        zg[rows] = P[0]
        fin[rows] = np.isfinite(c[rows]) & np.isfinite(P[0]) & np.isfinite(P[1])

    def _z_and_ones(self):
        """``[z; 1]`` (2 x d): one product gives ``<z, g_j>`` and ``sum_l g_jl``."""
        if self._z1 is None:
            self._z1 = np.vstack([self._zvec(), np.ones(self.U.shape[1])])
        return self._z1

    def move(self, div, S, W, b):
        """The count update with closed-form parts (:meth:`vector_parts`): every centre that
        received rows (every centre, with smoothing) moves (:func:`move_centres`) and its parts
        are recomputed.

        One thread: ``G^T`` is ``d x k``, so blocks of centres on several threads would write
        the same cache lines of every row of it."""
        k = self.U.shape[0]
        self.parts(div)
        moved = np.empty(k, dtype=np.bool_)
        KM.move_centres(self.U, self.mass, S, W, b, self._zvec(), moved)
        self._moved(div, np.flatnonzero(moved))

    def smoothing_term(self, div, c=None, zg=None):
        """``sum_j d(z, u_j) = sum_j phi(z) + c_j - <z, g_j>`` (by the definition where the
        GEMM form is not finite)."""
        if self._phi_z is None:
            self._phi_z = float(E.phi_rows(div, self.z[None, :])[0])
        if c is None:
            pc = self.prepared(div)
            if pc.finite and pc.phi is not None:
                c = pc.c
                with np.errstate(over="ignore", invalid="ignore"):
                    zg = np.asarray(pc.GT.T @ self.z)
        if c is not None:
            with np.errstate(over="ignore", invalid="ignore"):
                d = self._phi_z + c - zg
            if np.isfinite(d).all():
                return float(np.maximum(d, 0.0).sum())
        return float(E.pairwise(div, self.z[None, :], self.U).sum())


def _span(rows):
    """``slice(lo, hi)`` when the sorted indices ``rows`` are a range (views instead of
    copies), else ``rows``."""
    if rows.size and int(rows[-1]) - int(rows[0]) + 1 == rows.size and (
            rows.size == 1 or bool((np.diff(rows) == 1).all())):
        return slice(int(rows[0]), int(rows[-1]) + 1)
    return rows


def step(run, div, X, prep, w, rng):
    """One mini-batch step of scikit-learn's ``MiniBatchKMeans`` with a Bregman divergence.

    Assign the batch to the nearest centres, move every centre that received rows to the
    mean of all the rows it has received so far (the pseudo-point of the smoothing too),
    re-seed low-count centres from rows of the batch when the schedule says so, then apply
    the stopping rules (``run.monitor``).

    Parameters
    ----------
    run : MiniBatchRun
        Updated in place.
    div : Divergence
    X : ndarray or CSR matrix of shape (b, d)
        The batch (validated, conditioned).
    prep : tuple
        Its GEMM preparation ``(Xg, phi_x)``.
    w : ndarray of shape (b,)
        Its weights.
    rng : RandomState
        Draws the rows that re-seed centres.

    Returns
    -------
    float
        The batch objective per unit weight (before the update).
    """
    nb = X.shape[0]
    U, mass = run.U, run.mass
    k = U.shape[0]
    # scikit-learn's schedule: re-seed whenever a centre has no count yet, else every 10 k rows
    run.since_reassign += run.batch_size
    reassign = bool((mass == 0).any() or run.since_reassign >= 10 * k)
    if reassign:
        run.since_reassign = 0
    wb = float(w.sum())
    b = run.rho * wb
    fused = run.fused(div)
    if fused:
        GT, c, zg, fin = run.parts(div)
        fused = bool(fin.all())
    # a batch is little work: threads cost more than they save below
    # SERIAL_WORK multiply-adds (the engine decides by n d, which is far larger for sparse rows)
    work = (X.nnz if sp.issparse(X) else X.size) * k
    with (E.serial() if work < SERIAL_WORK else contextlib.nullcontext()):
        if fused:
            labels, mins, S, W, _ = E.fused_pass(prep, GT, c, w)
            E._fix_non_finite(div, X, U, labels, mins, w, S, W)
        else:
            res = E.assign_and_sum(div, X, w, run.prepared(div), prep)
            mins, S, W = res.mins, res.S, res.W
    with np.errstate(over="ignore", invalid="ignore"):
        obj = float(w @ mins)
    if b > 0:
        obj += b * (run.smoothing_term(div, c, zg) if fused else run.smoothing_term(div))
    old = U.copy() if (run.monitor and run.tol > 0) else U
    if run.fused(div):
        # in place: the moved centres, their counts and their parts
        GT, c, zg, fin = run.parts(div)
        if run.vector_parts(div):
            run.move(div, S, W, b)
        else:
            g = div.generator
            kern = KM.count_update_par if E.parallel(U.size) else KM.count_update
            kern(g.code, g.fn_phi, g.fn_dphi, U, mass, S, W, b, run._zvec(), GT, c, zg, fin)
            if not fin.all():
                div.form.check_grad(U, GT)
    else:
        if b > 0:  # the pseudo-point joins every centre in proportion to the weight seen
            new_mass = mass + W + b
            U[:] = (mass[:, None] * U + S + b * run.z) / new_mass[:, None]
        else:
            hit = W > 0
            new_mass = mass + W
            U[hit] = (mass[hit, None] * U[hit] + S[hit]) / new_mass[hit, None]
        mass[:] = new_mass
    run._pc = None
    if reassign and run.reassignment_ratio > 0:
        moved = _reassign(run, U, mass, X, w, rng)
        if moved is not None and run.fused(div):
            run._moved(div, moved)
    diff = 0.0
    if run.monitor and run.tol > 0:
        diff = float(E.exact_assigned(div, U, old, np.arange(k)).sum())
    run.steps += 1
    run.rows += nb
    per = obj / wb if wb > 0 else float("nan")
    run.history.append(per)
    if run.monitor and wb > 0:
        run.converged = _stop(run, per, diff, nb)
    return per


def _reassign(run, U, mass, X, w, rng):
    """scikit-learn's low-count reassignment: centres whose count is below
    ``reassignment_ratio`` times the largest are moved to rows of the batch drawn uniformly
    (rows of positive weight), at most half the batch; their counts become the smallest
    count of the others, so they are not re-seeded again at once. Returns the centres moved
    (None when none)."""
    nb = X.shape[0]
    to = mass < run.reassignment_ratio * mass.max()
    if to.sum() > 0.5 * nb:
        to[np.argsort(mass)[int(0.5 * nb):]] = False
    pos = np.flatnonzero(w > 0)
    m = int(to.sum())
    if m > pos.size:
        to[np.flatnonzero(to)[pos.size:]] = False
        m = pos.size
    if not m:
        return None
    new = pos[rng.choice(pos.size, replace=False, size=m)]
    rows = X[new]
    rows = rows.toarray() if sp.issparse(rows) else np.asarray(rows)
    U[to] = smoothed_points(rows, w[new], run.beta_seed, run.z)
    if (~to).any():
        mass[to] = np.min(mass[~to])
    run.reassigned += m
    return np.flatnonzero(to)


def _stop(run, per, diff, nb):
    """scikit-learn's stopping rules: centres moved by at most ``tol``, or no new minimum of
    the exponentially weighted average of the batch objective for ``max_no_improvement``
    steps (the first step, which measures the initial centres, is not counted)."""
    if run.steps == 1:
        return False
    if run.ewa is None:
        run.ewa = per
    else:
        alpha = min(nb * 2.0 / (run.n_ref + 1), 1.0)
        run.ewa = run.ewa * (1 - alpha) + per * alpha
    if run.tol > 0.0 and diff <= run.tol:
        return True
    if run.ewa_min is None or run.ewa < run.ewa_min:
        run.no_improvement = 0
        run.ewa_min = run.ewa
    else:
        run.no_improvement += 1
    return run.max_no_improvement is not None and run.no_improvement >= run.max_no_improvement


def fold_block(block, div, run, seed):
    """One chunk's share of an epoch: its rows in a random order (``RandomState(seed)``),
    split into batches of at most ``run.batch_size`` rows, each a :func:`step`.

    The block function of :meth:`~bregclust._sources.ChunkSource.fold` and
    :meth:`~bregclust._dask.DaskSource.fold`; ``run.history`` holds this chunk's batches only.
    """
    run.history = []
    if run.converged or block.n == 0:
        return run
    rng = np.random.RandomState(seed)
    Xg, phi = block.prepared(div, closed_form=True)
    X = block.X
    w = block.weights()
    perm = rng.permutation(block.n)
    for idx in np.array_split(perm, -(-block.n // run.batch_size)):
        Xb = X[idx]
        prep = (Xb if Xg is X else Xg[idx], phi[idx])
        step(run, div, Xb, prep, w[idx], rng)
        if run.converged:
            break
    return run


class _Sample:
    """Rows of a data set at given global indices, with their weights (the blocks' samples
    combine by stacking)."""

    def __init__(self, idx, X, w):
        self.idx, self.X, self.w = idx, X, w

    @staticmethod
    def merge(*parts):
        X = [p.X for p in parts]
        X = sp.vstack(X, format="csr") if sp.issparse(X[0]) else np.vstack(X)
        return _Sample(np.concatenate([p.idx for p in parts]), X,
                       np.concatenate([p.w for p in parts]))


def stats_and_sample(block, div, need, ids):
    """The statistics of a block and its rows at the global indices ``ids`` (sorted, inside
    the block): the first pass of a chunked fit, which validates the chunks too."""
    local = np.asarray(ids, dtype=np.int64) - block.start
    return (C.block_stats(block, div, **need),
            _Sample(np.asarray(ids, dtype=np.int64), block.X[local], block.weights()[local]))


# ----------------------------------------------------------------------------- batch schedules
class _MemoryBatches:
    """Batches of an in-memory source, drawn as scikit-learn's ``MiniBatchKMeans`` draws them:
    the validation sample first, a seeding sample per seeding (drawn for an array init too,
    gathered only when read), then ``max_iter n / batch_size`` batches drawn with
    replacement in proportion to the weights (steps take unit weights)."""

    def __init__(self, src, div, rng, n_init, is_array, isize):
        self.stats = src.stats(div)
        self.valid = rng.randint(0, src.n, isize)
        self.rng, self.is_array, self.isize = rng, is_array, isize

    def condition(self, src, cond):
        """The conditioned source the samples and batches are read from."""
        self.src = src

    def seeding_sample(self, run_i):
        X, w, n = self.src.X, self.src.w, self.src.n
        if self.isize < n:
            s = self.rng.randint(0, n, self.isize)
            return (X[s], w[s]) if not self.is_array else (None, None)
        return X, w

    def validation_sample(self):
        return self.src.X[self.valid], self.src.w[self.valid]

    def budget(self, max_iter, bsize):
        """The number of steps at most."""
        return (max_iter * self.src.n) // bsize

    def run(self, run, div, rng, max_iter, report):
        """Steps until the budget or until ``report(run, 1)`` says a stopping rule fired."""
        src = self.src
        X, w = src.X, src.w
        bsize = run.batch_size
        cdf = np.cumsum(w / w.sum())
        cdf /= cdf[-1]
        Xg, phi = src.block.prepared(div, closed_form=True)
        ones = np.ones(bsize)
        idx = np.empty(bsize, dtype=np.int64)
        for _ in range(self.budget(max_iter, bsize)):
            # RandomState.choice(n, b, p=w / W): its uniforms, its cumulative sum (made once),
            # its search
            KM.draw_rows(cdf, rng.random_sample(bsize), idx)
            Xb = X[idx]
            step(run, div, Xb, (Xb if Xg is X else Xg[idx], phi[idx]), ones, rng)
            if report(run, 1):
                break
        return run


class _ChunkBatches:
    """Batches of a chunked source: the first pass validates the chunks, collects the
    statistics and fetches the validation and seeding samples (drawn uniformly, as in
    memory); each epoch then visits every chunk once, in a random order, where it lives
    (:func:`fold_block`), every row once with its weight."""

    def __init__(self, src, div, rng, n_init, is_array, isize):
        n = src.n
        self.draws = [rng.randint(0, n, isize) for _ in range(1 + (0 if is_array else n_init))]
        ids = np.unique(np.concatenate(self.draws))
        self.starts = np.asarray(src.starts)
        chunk = np.searchsorted(self.starts, ids, side="right") - 1
        per = {i: ids[chunk == i] for i in range(src.nblocks)}
        self.stats, self.sample = src.run(stats_and_sample, div, _stats_need(div),
                                          extra=lambda i: (per[i],), check=True)
        if self.stats.weight <= 0:
            raise ValueError("sample_weight sums to zero; at least one sample needs positive "
                             "weight.")
        self.is_array = is_array

    def condition(self, src, cond):
        """The conditioned source, and the fetched sample seen through ``cond``."""
        self.src = src
        sample = self.sample
        order = np.argsort(sample.idx)
        SX = sample.X[order]
        self.SX = cond.apply(SX) if not cond.data_identity else SX
        self.Sw = cond.apply_weights(sample.w[order])
        self.pos = {int(i): j for j, i in enumerate(sample.idx[order])}

    def _rows(self, draw):
        sel = np.array([self.pos[int(i)] for i in draw], dtype=np.int64)
        return self.SX[sel], self.Sw[sel]

    def seeding_sample(self, run_i):
        return self._rows(self.draws[1 + run_i]) if not self.is_array else (None, None)

    def validation_sample(self):
        return self._rows(self.draws[0])

    def budget(self, max_iter, bsize):
        """The number of steps at most (every chunk in batches of ``bsize`` rows per epoch)."""
        return int(np.sum(-(-np.diff(self.starts) // bsize))) * max_iter

    def run(self, run, div, rng, max_iter, report):
        """Epochs until ``max_iter`` or until ``report(run, steps)``, called after each chunk,
        says a stopping rule fired."""
        src = self.src
        history = []

        def each(state):
            history.extend(state.history)
            return report(state, len(state.history))

        for _ in range(max_iter):
            order = rng.permutation(src.nblocks)
            seeds = rng.randint(0, 2**31 - 1, size=src.nblocks)
            run = src.fold(fold_block, div, run, order, extra=lambda i: (int(seeds[i]),),
                           callback=each)
            if run.converged:
                break
        run.history = history
        return run


# ----------------------------------------------------------------------------- helpers
def _stats_need(div):
    return dict(phi=div.translation_invariant, colmax=div.coordinate_scale_invariant,
                nnz=div.domain != "real")


def _representable(cond, div, stats, where):
    """Refuse a batch that the conditioning fixed by the first batch cannot represent.

    A stream's conditioning is decided from its first batch; a later batch is accepted when,
    seen through it, its largest magnitude (per column for coordinate-scale-invariant
    divergences) and its largest weight stay within ``2^SCALE_LIMIT``, the range the
    conditioning of a whole data set guarantees. Smaller magnitudes are always representable.
    """
    lim = C.SCALE_LIMIT

    def over(m, e):
        return np.isfinite(m) and m > 0 and int(np.frexp(m)[1]) - int(e) > lim

    if div.coordinate_scale_invariant and stats.colmax is not None:
        cs = cond.col_scale if cond.col_scale is not None else np.zeros(stats.d, dtype=np.int64)
        bad = [j for j in range(stats.d) if over(float(stats.colmax[j]), cs[j])]
        if bad:
            j = bad[0]
            raise ValueError(
                f"{where}: column {j} reaches {stats.colmax[j]:.3g}, beyond what the "
                f"conditioning fixed by the first batch can represent (2^{lim} times its "
                f"scale 2^{int(cs[j])}); rescale the batches alike or call fit on all the data.")
    elif div.homogeneity is not None and over(stats.maxabs, cond.scale):
        raise ValueError(
            f"{where}: its largest |x| is {stats.maxabs:.3g}, beyond what the conditioning "
            f"fixed by the first batch can represent (2^{lim} times its scale "
            f"2^{cond.scale}); rescale the batches alike or call fit on all the data.")
    if over(stats.wmax, cond.weight_scale):
        raise ValueError(
            f"{where}: its largest sample weight is {stats.wmax:.3g}, beyond what the "
            f"conditioning fixed by the first batch can represent (2^{lim} times its scale "
            f"2^{cond.weight_scale}); rescale the weights alike (only their ratios matter).")


# ----------------------------------------------------------------------------- the estimator
class MiniBatchBregmanKMeans(NearestCentreMixin, ClusterMixin, TransformerMixin,
                             BaseEstimator):
    """Mini-batch k-means with any Bregman divergence, in memory, on dask arrays and on streams.

    scikit-learn's :class:`~sklearn.cluster.MiniBatchKMeans` (Sculley, 2010) with ``d(x, u)``
    in place of the squared Euclidean distance: each step assigns a batch of rows to the
    nearest centres by the divergence and moves each centre to the mean of every row it has
    received so far, through a per-centre count. The mean is the Bregman centroid for every
    Bregman divergence, so the update is the exact one for all of them. With
    ``divergence="sqeuclidean"`` and the same seed, batches, centres and stopping rules are
    those of scikit-learn.

    Parameters
    ----------
    n_clusters : int, default=8
    divergence : str or Divergence, default="sqeuclidean"
        Any registered divergence (:func:`bregclust.list_divergences`), custom ones too.
    divergence_params : dict, optional
        Parameters of the divergence, e.g. ``{"A": A}`` for ``"mahalanobis"``.
    init : {"k-means++", "random"} or ndarray of shape (n_clusters, n_features), \
default="k-means++"
        Seeding on a random sample of ``init_size`` rows: Bregman k-means++ (D-sampling by
        the divergence) or distinct rows drawn in proportion to their weights; an array
        gives the initial centres.
    max_iter : int, default=100
        Passes over the data (epochs): ``max_iter * n_samples // batch_size`` steps in memory,
        ``max_iter`` visits of every chunk on a dask array.
    batch_size : int, default=1024
        Rows per step.
    verbose : int, default=0
        1 shows a progress bar (on stderr) with the running objective (the moving average
        of the batch objectives, scaled to the data set); 2 also prints a line per step.
    compute_labels : bool, default=True
        Compute ``labels_`` and ``inertia_`` with one pass over the data at the end of ``fit``
        (of the batch, in ``partial_fit``); otherwise ``inertia_`` is the moving average of
        the batch objectives times the total weight.
    random_state : int, RandomState instance or None, default=None
    tol : float, default=0.0
        Stop when the centres move by at most ``tol`` times the mean Bregman information
        per feature, ``sum_i w_i d(x_i, mean) / (W d)`` (for the squared Euclidean distance,
        scikit-learn's mean variance); the move is ``sum_j d(u_j', u_j)``. 0 disables it.
    max_no_improvement : int or None, default=10
        Stop after this many steps without a new minimum of the exponentially weighted
        average of the batch objectives. None disables it.
    init_size : int, optional
        Rows of the sample the seeding runs on; default ``3 * batch_size`` (at least
        ``3 * n_clusters``).
    n_init : int or "auto", default="auto"
        Seedings tried, each on its own sample; the one with the lowest objective on a
        validation sample of ``init_size`` rows is kept. "auto": 3 for "random", else 1.
    reassignment_ratio : float, default=0.01
        Centres whose count falls below this fraction of the largest count are moved to rows
        of the batch drawn at random (every ``10 * n_clusters`` rows, and whenever a centre
        has no count); 0 disables it.
    smoothing : float or "auto", default="auto"
        Pseudo-count ``beta`` of a point ``z`` (the data mean pushed inside the domain) per
        pass over the data, as in :class:`~bregclust.BregmanKMeans`: a batch of weight
        ``W_B`` adds ``beta W_B / W`` at ``z`` to every centre (``W`` the total weight), so
        the centres tend to the smoothed centroids ``(S_j + beta z) / (W_j + beta)`` of
        k-means. It keeps kl and Itakura-Saito centres off the domain boundary. "auto": the
        k-means rule (:func:`~bregclust.kmeans.auto_smoothing`). In ``partial_fit`` the rule
        is applied to the first batch and ``W`` is its weight.

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        float32 when ``X`` is float32.
    labels_ : ndarray of shape (n_samples,)
        With ``compute_labels``; a lazy ``dask.array.Array`` when ``X`` was a dask array.
    inertia_ : float
        ``sum_i w_i d(x_i, u_{label(i)})`` (see ``compute_labels``).
    n_iter_ : int
        Passes over the data started.
    n_steps_ : int
        Batches processed.
    batch_objectives_ : ndarray
        The objective of each batch per unit weight, before its step: the divergences to the
        centres (and the smoothing term) divided by the batch's weight.
    divergence_ : Divergence
    smoothing_ : float
    n_features_in_ : int

    See Also
    --------
    BregmanKMeans : Lloyd's algorithm on the whole data at each iteration.
    BisectingBregmanKMeans : divisive clustering by Bregman 2-means.

    Notes
    -----
    **Streams.** ``partial_fit(X)`` runs one step on ``X`` (scikit-learn's semantics; split a
    large chunk into batches yourself). The first call seeds the centres on ``X`` and fixes
    the conditioning (power-of-two scaling, centring) from it; a later batch whose magnitude
    that conditioning cannot represent (more than ``2^100`` times the first batch's scale)
    raises a ``ValueError``, as do batches with another number of features.

    **Dask.** ``X`` may be a row-chunked ``dask.array.Array`` (dense or CSR chunks). A first
    pass validates the chunks, collects the statistics that decide the conditioning and the
    smoothing, and fetches the seeding samples; each epoch then visits the chunks in a random
    order, running a chunk's batches in one task where the chunk lives and passing the
    ``k x d`` centres and counts to the next task. The epochs are a sequential fold: one
    worker computes at a time, the others read the next chunks. The array is never gathered
    on the client.

    References
    ----------
    D. Sculley. Web-scale k-means clustering. WWW 2010.
    A. Banerjee, S. Merugu, I. Dhillon, J. Ghosh. Clustering with Bregman divergences.
    JMLR 2005.

    Examples
    --------
    >>> import numpy as np
    >>> from bregclust import MiniBatchBregmanKMeans
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.poisson(2.0, (100, 3)), rng.poisson(20.0, (100, 3))]).astype(float)
    >>> mbk = MiniBatchBregmanKMeans(2, divergence="kl", batch_size=50,
    ...                              random_state=0).fit(X)
    >>> sorted(np.bincount(mbk.labels_).tolist())
    [100, 100]
    >>> stream = MiniBatchBregmanKMeans(2, divergence="kl", random_state=0)
    >>> for chunk in np.array_split(rng.permutation(X), 4):
    ...     stream = stream.partial_fit(chunk)
    >>> stream.n_steps_
    4
    """

    _preserves_dtype = ("float64", "float32")
    _check_finite = False  # the data source checks the values (one read for their range)

    def __init__(self, n_clusters=8, *, divergence="sqeuclidean", divergence_params=None,
                 init="k-means++", max_iter=100, batch_size=1024, verbose=0,
                 compute_labels=True, random_state=None, tol=0.0, max_no_improvement=10,
                 init_size=None, n_init="auto", reassignment_ratio=0.01, smoothing="auto"):
        self.n_clusters = n_clusters
        self.divergence = divergence
        self.divergence_params = divergence_params
        self.init = init
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.verbose = verbose
        self.compute_labels = compute_labels
        self.random_state = random_state
        self.tol = tol
        self.max_no_improvement = max_no_improvement
        self.init_size = init_size
        self.n_init = n_init
        self.reassignment_ratio = reassignment_ratio
        self.smoothing = smoothing

    # ------------------------------------------------------------------ checks
    def _check_params(self):
        check_scalar(self.max_iter, "max_iter", kind=numbers.Integral, lo=1)
        check_scalar(self.batch_size, "batch_size", kind=numbers.Integral, lo=1)
        check_scalar(self.verbose, "verbose", kind=numbers.Integral, lo=0)
        check_scalar(self.tol, "tol", lo=0.0, finite=True)
        if self.max_no_improvement is not None:
            check_scalar(self.max_no_improvement, "max_no_improvement", kind=numbers.Integral,
                         lo=0)
        if self.init_size is not None:
            check_scalar(self.init_size, "init_size", kind=numbers.Integral, lo=1)
        check_scalar(self.reassignment_ratio, "reassignment_ratio", lo=0.0, finite=True)
        if not isinstance(self.compute_labels, (bool, np.bool_)):
            raise TypeError(f"compute_labels must be True or False, got {self.compute_labels!r}.")

    def _check_init(self, div, k, d):
        """``(init, is_array)``: a validated init name or a copy of the centres array."""
        init = self.init
        if isinstance(init, str):
            if init not in ("k-means++", "random"):
                raise ValueError(f"init must be 'k-means++', 'random' or an array of shape "
                                 f"(n_clusters, n_features), got {init!r}.")
            return init, False
        if init is None or callable(init):
            raise TypeError("init must be 'k-means++', 'random' or an array of initial centres "
                            f"of shape (n_clusters, n_features), got {init!r}.")
        U = np.array(init, dtype=np.float64, copy=True)
        if U.ndim != 2 or U.shape != (k, d):
            raise ValueError(f"init array must have shape (n_clusters, n_features) = {(k, d)}, "
                             f"got {U.shape}.")
        check_finite(U, name="init")
        div.check_domain(U, name="init", side="right",
                         advice="Move the initial centres inside the domain.")
        return U, True

    def _check_n_init(self, is_array):
        n_init = self.n_init
        if isinstance(n_init, str):
            if n_init != "auto":
                raise ValueError(f"n_init must be a positive int or 'auto', got {n_init!r}.")
            return 3 if (isinstance(self.init, str) and self.init == "random") else 1
        check_scalar(n_init, "n_init", kind=numbers.Integral, lo=1)
        if is_array and n_init != 1:
            warnings.warn(f"init is an array of centres, so n_init={n_init} is ignored (1 run).",
                          RuntimeWarning, stacklevel=user_stacklevel())
            return 1
        return int(n_init)

    def _sizes(self, n):
        """scikit-learn's ``(batch_size, init_size)`` for ``n`` rows."""
        b = min(self.batch_size, n)
        s = self.init_size
        if s is None:
            s = 3 * b
            if s < self.n_clusters:
                s = 3 * self.n_clusters
        elif s < self.n_clusters:
            warnings.warn(f"init_size={s} should be larger than n_clusters={self.n_clusters}; "
                          "using min(3 * n_clusters, n_samples).", RuntimeWarning, stacklevel=user_stacklevel())
            s = 3 * self.n_clusters
        return b, min(s, n)

    # ------------------------------------------------------------------ seeding
    def _seed(self, div, X, w, k, init, rng, beta, z):
        """Initial centres from the rows ``X`` (weights ``w``) of an init sample."""
        if not isinstance(init, str):
            return init
        if not (w > 0).any():
            raise ValueError("sample_weight is zero on every row of the seeding sample; "
                             "increase init_size or give more rows positive weight.")
        if init == "random" and np.count_nonzero(w) < k:
            raise ValueError(f"init='random' needs n_clusters={k} rows of positive weight in "
                             f"the seeding sample, got {np.count_nonzero(w)}; increase "
                             "init_size or use init='k-means++'.")
        return seed_centres(InMemorySource(X, w), div, k, rng, init, beta, z, weighted=True)

    @staticmethod
    def _sample_objective(div, X, w, U):
        pc = E.prepare_centres(div, U)
        _, mins = E.assign(div, X, pc)
        with np.errstate(over="ignore", invalid="ignore"):
            return float(w @ mins)

    # ------------------------------------------------------------------ fit
    @fit_callbacks
    def fit(self, X, y=None, sample_weight=None):
        """Cluster ``X`` by mini-batches.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask.array.Array} of shape (n_samples, n_features)
            Must lie in the divergence's domain (e.g. ``X >= 0`` for ``kl``). A dask array must
            be chunked by rows only.
        y : ignored
        sample_weight : array-like or dask array of shape (n_samples,), optional
            In memory, batches are drawn in proportion to the weights (and steps use unit
            weights); on a dask array every row is visited once per epoch with its weight.

        Returns
        -------
        self
        """
        with E.blas_one_thread():
            div = self._get_divergence()
            self._check_params()
            src = as_source(X, sample_weight, div, validate=self._validator(reset=True))
            k = check_n_clusters(self.n_clusters, src.n)
            init, is_array = self._check_init(div, k, src.d)
            n_init = self._check_n_init(is_array)
            rng = check_random_state(self.random_state)
            bsize, isize = self._sizes(src.n)
            dtype = out_dtype(X)
            return self._fit(src, div, k, init, is_array, n_init, rng, bsize, isize, dtype)

    def _setup(self, div, stats, k, init, is_array):
        """Conditioning, smoothing and the run's smoothing parameters from the statistics."""
        cond = C.decide(div, stats, centres=init if is_array else None)
        smoothing = resolve_smoothing(self.smoothing, div, stats.counts(), k)
        beta = cond.apply_mass(smoothing)
        z = push_inside(cond.mean(stats), div) if beta > 0 else None
        # pseudo-count per unit weight: beta / W, as a ratio of the power-of-two held sums
        rho = float(np.ldexp(smoothing, -stats.wexp) / stats.weight) if smoothing > 0 else 0.0
        if is_array:
            init = cond.apply_centres(init)
        return cond, smoothing, beta, z, rho, init

    def _tolerance(self, src, div, cond, stats):
        """``tol`` times the mean Bregman information per feature (conditioned units)."""
        if self.tol == 0:
            return 0.0
        m = cond.mean(stats)
        W = cond.apply_mass(stats.total_weight)
        phis = src.run(_phi_sum, div)
        with np.errstate(over="ignore", invalid="ignore"):
            info = (phis - W * float(E.phi_rows(div, m[None, :])[0])) / (W * src.d)
        return float(self.tol * max(info, 0.0)) if np.isfinite(info) else 0.0

    def _new_run(self, U, *, rho, z, beta, bsize, n, tol, monitor):
        return MiniBatchRun(np.ascontiguousarray(U, dtype=np.float64), rho=rho, z=z,
                            beta_seed=beta, batch_size=bsize, n_ref=n, tol=tol,
                            max_no_improvement=self.max_no_improvement,
                            reassignment_ratio=self.reassignment_ratio, monitor=monitor)

    def _fit(self, src, div, k, init, is_array, n_init, rng, bsize, isize, dtype):
        """The one fit loop, in memory and on chunks: the statistics, the conditioning, the
        seedings scored on a validation sample, then steps until the budget or a stopping
        rule. Only the batch schedule depends on the source (:class:`_MemoryBatches`,
        :class:`_ChunkBatches`): where the samples come from and how batches are drawn."""
        batches = (_ChunkBatches if src.chunked else _MemoryBatches)(src, div, rng, n_init,
                                                                     is_array, isize)
        stats = batches.stats
        cond, smoothing, beta, z, rho, init = self._setup(div, stats, k, init, is_array)
        src = src.conditioned(cond)
        batches.condition(src, cond)
        tol = self._tolerance(src, div, cond, stats)
        Xv = wv = None
        best = best_obj = None
        for run_i in range(n_init):
            Xs, ws = batches.seeding_sample(run_i)
            U0 = self._seed(div, Xs, ws, k, init, rng, beta, z)
            if n_init == 1:  # nothing to choose: the validation sample was drawn, not scored
                best = U0
                break
            if Xv is None:
                Xv, wv = batches.validation_sample()
            obj = self._sample_objective(div, Xv, wv, U0)
            if self.verbose:
                print(f"MiniBatchBregmanKMeans seeding {run_i}: objective on the validation "
                      f"sample {cond.undo_objective(obj):.6g}")
            if best is None or obj < best_obj:
                best, best_obj = U0, obj
        run = self._new_run(best, rho=rho, z=z, beta=beta, bsize=bsize, n=src.n, tol=tol,
                            monitor=True)
        total = cond.apply_mass(stats.total_weight)
        with progress(self.verbose, total=batches.budget(self.max_iter, bsize),
                      desc="MiniBatchBregmanKMeans") as bar:
            def report(state, n):
                """After ``n`` steps: the bar, and whether a stopping rule fired."""
                if bar.active:
                    bar.step(cond.undo_objective(_running(state) * total), n=n)
                return state.converged

            run = batches.run(run, div, rng, self.max_iter, report)
        self._finish(src, div, cond, smoothing, run, stats, dtype)
        return self

    def _finish(self, src, div, cond, smoothing, run, stats, dtype):
        U = run.U
        if self.compute_labels:
            # one pass: the labels and the objective of their minima (GEMM form, rows whose
            # form is not finite by the definition), without per-cluster sums
            pc = run.prepared_centres(div)
            part = src.lloyd(div, pc, sums=False)
            inertia = part.objective
            self.labels_ = src.labels(div, pc, part)
        else:
            est = run.ewa if run.ewa is not None else (run.history[-1] if run.history else 0.0)
            inertia = est * cond.apply_mass(stats.total_weight)
            if hasattr(self, "labels_"):  # of an earlier fit
                del self.labels_
        self.divergence_ = div
        self.smoothing_ = float(smoothing)
        self.cluster_centers_ = in_dtype(dtype, np.array(cond.undo_centres(U)))
        # fit -> _fit -> _finish: the warning points at the user's fit
        self.inertia_ = reported_objective(type(self).__name__, div, cond, inertia)
        self.n_steps_ = int(run.steps)
        self.n_iter_ = int(math.ceil(run.rows / src.n)) if src.n else 0
        # per unit weight: only the data's scale is undone
        self.batch_objectives_ = np.asarray(cond.undo_divergences(
            np.asarray(run.history, dtype=np.float64)))
        self.n_features_in_ = int(src.d)
        run.monitor = False
        run.history = []
        self._run, self._cond, self._dtype = run, cond, dtype

    # ------------------------------------------------------------------ streams
    def partial_fit(self, X, y=None, sample_weight=None):
        """One mini-batch step on ``X`` (a batch of a stream, or the next file of a data set).

        The first call (or the first after ``fit``, which continues from the fitted centres)
        seeds the centres on ``X`` and fixes the conditioning and the smoothing from it; see
        the class Notes for the batches it accepts afterwards.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : ignored
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        self
        """
        with E.blas_one_thread():
            started = hasattr(self, "cluster_centers_") and getattr(self, "_run", None) is not None
            div = self.divergence_ if started else self._get_divergence()
            if is_dask_array(X):
                raise TypeError("partial_fit takes one batch in memory (array-like or sparse "
                                "matrix); compute the dask chunk first, or call fit on the "
                                "dask array.")
            self._check_params()
            src = as_source(X, sample_weight, div, validate=self._validator(reset=not started),
                            n_features=self.n_features_in_ if started else None)
            stats = src.stats(div)
            if stats.weight <= 0:
                raise ValueError("sample_weight sums to zero on this batch; at least one "
                                 "sample needs positive weight.")
            if not started:
                self._random_state = check_random_state(self.random_state)
                k = check_n_clusters(self.n_clusters, src.n)
                init, is_array = self._check_init(div, k, src.d)
                bsize, isize = self._sizes(src.n)
                cond, smoothing, beta, z, rho, init = self._setup(div, stats, k, init, is_array)
                csrc = src.conditioned(cond)
                Xs, ws = csrc.X, csrc.w
                if isize < src.n:
                    s = self._random_state.randint(0, src.n, isize)
                    Xs, ws = Xs[s], ws[s]
                U0 = self._seed(div, Xs, ws, k, init, self._random_state, beta, z)
                run = self._new_run(U0, rho=rho, z=z, beta=beta, bsize=bsize, n=src.n, tol=0.0,
                                    monitor=False)
                self._run, self._cond, self._dtype = run, cond, out_dtype(X)
                self.divergence_ = div
                self.smoothing_ = float(smoothing)
                self.n_steps_ = 0
                self.n_features_in_ = int(src.d)
            else:
                if not hasattr(self, "_random_state"):
                    self._random_state = check_random_state(self.random_state)
                _representable(self._cond, div, stats, f"partial_fit batch {self.n_steps_}")
                csrc = src.conditioned(self._cond)
            run, cond = self._run, self._cond
            run.history = []
            block = csrc.block
            per = step(run, div, block.X, block.prepared(div, closed_form=True), block.weights(),
                       self._random_state)
            if self.verbose >= 2:
                print(f"MiniBatchBregmanKMeans partial_fit step {run.steps}: batch objective "
                      f"per unit weight {cond.undo_divergences(per):.6g}")
            self.cluster_centers_ = in_dtype(self._dtype,
                                                      np.array(cond.undo_centres(run.U)))
            self.n_steps_ = int(getattr(self, "n_steps_", 0)) + 1
            prev = getattr(self, "batch_objectives_", np.empty(0))
            self.batch_objectives_ = np.append(prev, cond.undo_divergences(per))
            if self.compute_labels:
                pc = run.prepared_centres(div)
                part = csrc.lloyd(div, pc, sums=False)
                self.labels_ = part.labels
                self.inertia_ = reported_objective(type(self).__name__, div, cond,
                                                   part.objective)
            elif hasattr(self, "labels_"):  # of an earlier batch or fit
                del self.labels_
            return self

    # ------------------------------------------------------------------ fitted model
    def transform(self, X):
        """Divergences ``d(x_i, u_j)`` to every centre, shape ``(n_samples, n_clusters)``.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask.array.Array} of shape (n_samples, n_features)

        Returns
        -------
        D : ndarray of shape (n_samples, n_clusters)
            float32 for float32 ``X``; a lazy dask array when ``X`` is one.
        """
        D = self._source(X).transform(self.divergence_, self._pass_centres())
        return D.astype(np.float32) if out_dtype(X) == np.float32 else D

    def _pass_centres(self):
        run, cond = getattr(self, "_run", None), getattr(self, "_cond", None)
        if run is not None and cond is not None:
            return cond.undo_centres(run.U)
        return np.asarray(self.cluster_centers_, dtype=np.float64)


def _running(run):
    """The moving average of the batch objectives per unit weight (the last batch's before
    the average starts)."""
    if run.ewa is not None:
        return run.ewa
    return run.history[-1] if run.history else float("nan")


def _phi_sum(block, div):
    """``sum_i w_i phi(x_i)`` of a block."""
    with np.errstate(over="ignore", invalid="ignore"):
        return float(block.weights() @ block.prepared(div, closed_form=True)[1])
