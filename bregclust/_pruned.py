"""Exact pruned Lloyd passes for Bregman k-means (``BregmanKMeans(algorithm="hamerly")``).

:class:`PrunedPasses` stands in for a data source's Lloyd pass inside
:func:`bregclust._centroid.lloyd`: it returns the same :class:`~bregclust._blocks.LloydPart`
(labels, centre sums, minima, objective) while evaluating the ``k`` scores of a row only when
its bounds cannot prove that its label stays.

The bound (docs/guide/kmeans.rst, "Pruned passes"): in the GEMM form the label of ``x`` is
``argmin_j D_j(x)``, ``D_j(x) = c_j - <x, t_j>``, ``t_j = grad phi(u_j)``,
``c_j = <u_j, t_j> - phi(u_j)``. When the centres move (``t -> t'``, ``c -> c'``), for any
reference point ``x0``

    D_j'(x) - D_j(x) = (dc_j - <x0, dt_j>) - <x - x0, dt_j>
                     >= beta_j(x0) - min(||x - x0||_2 ||dt_j||_2, ||x - x0||_1 ||dt_j||_inf)

(Cauchy-Schwarz / Hoelder), so a lower bound ``lb`` of ``min_{j != a} D_j(x)`` moves by
``min_{j != a} beta_j - r max_{j != a} ||dt_j||`` (Hamerly, 2010, with ``||x - x0||`` in place of
the triangle inequality). Dense rows take ``x0`` = their own cluster's new centre when the
``k x k`` table of ``beta`` costs little beside a pass (``k <= n / 8``); CSR rows (text: the
table would be ``k^2 d`` with ``d`` the vocabulary) take ``x0 = 0``, with both norms.

Every quantity that enters a bound is rounded towards the safe side, and the skip test keeps a
margin of twice the rounding error of the score Lloyd's kernel computes, so the labels are
Lloyd's exactly (ties included: a tie never passes the test).
"""

import numba
import numpy as np
import scipy.sparse as sp

from . import _blocks as B
from . import _execution as E
from ._kernels import adaptive as KA
from ._kernels import pruned as KP

__all__ = ["PrunedPasses", "CachedPasses", "AdaptivePasses", "make_passes", "ALGORITHMS",
           "AUTO_MIN_CLUSTERS", "resolve_algorithm"]

ALGORITHMS = ("auto", "lloyd", "hamerly", "yinyang", "cached")

#: ``algorithm="auto"`` prunes dense rows from this many clusters on (below it a
#: Lloyd pass is cheap and the bounds rarely pay for their bookkeeping). Kept by the rule of
#: ``benchmarks/kmeans_pruned.py --auto-rule`` (session 21, one thread, 20 iterations): forced
#: yinyang took 1.52, 1.22, 1.24, 0.88 and 0.70 of Lloyd's time at k = 16, 24, 32, 48, 64 on
#: 200,000 x 50 blobs, and still 1.14 at k = 64 on 100,000 x 20.
AUTO_MIN_CLUSTERS = 64

#: ``algorithm="auto"`` keeps the score columns of sparse rows (``"cached"``) from this many
#: clusters on, while its ``n x k`` float64 cache stays below :data:`CACHE_MAX_BYTES` (kl on
#: 20 Newsgroups term frequencies, one thread: 1.27x Lloyd's time at k = 32, where nearly every
#: centre moves every pass; 0.92x at k = 128, 0.59x at k = 256; benchmarks/RESULTS.md). Kept by
#: the rule of ``benchmarks/kmeans_pruned.py --auto-rule`` after the changed-clusters-only steps
#: (session 21): kl on term frequencies 0.89, 0.99, 1.01, 0.73, 0.69 of Lloyd's time at
#: k = 32, 48, 64, 96, 128; squared Euclidean on tf-idf 0.73, 1.14, 0.91, 0.94, 0.96.
AUTO_CACHED_MIN_CLUSTERS = 128

#: The largest score cache ``algorithm="auto"`` allocates (``n k`` float64 values).
CACHE_MAX_BYTES = 1 << 30

#: Centres per group of ``algorithm="yinyang"`` (Ding et al. use ``k / 10`` groups).
GROUP_SIZE = 10

#: Dense float64 rows whose bounds fail are scored in float32 first (one float32 product per
#: batch, about half the time of the float64 one), and only the rows whose float32 scores
#: cannot prove Lloyd's label (a near tie within the proven error) take Lloyd's float64
#: product (:func:`bregclust._kernels.pruned._filter_rows32`). Tests switch it off to compare.
FILTER32 = True

#: The filter's largest allowed ``||x||``, ``||t_j||`` and ``|c_j|`` (far from float32's
#: overflow, 3.4e38; beyond, the float64 path).
FILTER32_MAX = 1e30

_U = np.finfo(np.float64).eps / 2


def _gamma(m, u):
    """``m u / (1 - m u)``: the relative error bound of an ``m``-term dot product."""
    m = max(int(m), 1)
    return m * u / max(1.0 - m * u, 0.5)


def resolve_algorithm(algorithm, div, src, k):
    """``"lloyd"``, ``"hamerly"``, ``"yinyang"`` or ``"cached"`` for the ``algorithm`` parameter
    of a fit.

    ``"auto"`` prunes when the data are dense and in memory, the divergence has the fused GEMM
    form and ``k >= AUTO_MIN_CLUSTERS``; a dask array (chunked source) always runs Lloyd's
    passes. Sparse rows (text) take ``"cached"`` from ``AUTO_CACHED_MIN_CLUSTERS`` clusters on
    when its ``n x k`` cache fits in ``CACHE_MAX_BYTES``: the bounds of ``"hamerly"`` /
    ``"yinyang"`` need ``x0 = 0`` there, and ``||x|| ||dt_j||`` spans the whole vocabulary
    and prunes almost nothing (kl on 20 Newsgroups term frequencies, k = 256: 0.1% of the
    scores), while most centres of a text fit keep their members from one pass to the next
    (benchmarks/kmeans_pruned.py).
    """
    if not isinstance(algorithm, str) or algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {list(ALGORITHMS)}, got {algorithm!r}.")
    if algorithm == "cached" and not src.sparse:
        raise ValueError("algorithm='cached' keeps the score columns of sparse (CSR) rows; "
                         "use 'yinyang' or 'hamerly' for dense rows, or pass a scipy.sparse "
                         "matrix.")
    if algorithm == "lloyd" or src.chunked or not div.has_gemm:
        return "lloyd"
    if algorithm == "auto":
        if src.sparse:
            fits = src.n * k * 8 <= CACHE_MAX_BYTES
            return "cached" if k >= AUTO_CACHED_MIN_CLUSTERS and fits else "lloyd"
        return "yinyang" if k >= AUTO_MIN_CLUSTERS else "lloyd"
    return algorithm


def make_passes(src, div, algorithm, debug=False, adaptive=False):
    """The ``passes=`` object of :func:`bregclust._centroid.lloyd` for a resolved
    ``algorithm`` (None for ``"lloyd"``: the source's own pass). ``adaptive`` (the user asked
    for ``"auto"``): dense rows take :class:`AdaptivePasses`, which run Lloyd's passes until
    the bounds of ``algorithm`` would pay."""
    if algorithm == "lloyd":
        return None
    if algorithm == "cached":
        return CachedPasses(src, div, debug=debug)
    if adaptive and not src.sparse:
        return AdaptivePasses(src, div, algorithm, debug=debug)
    return PrunedPasses(src, div, algorithm, debug=debug)


def _run_blocks(block, T):
    """``block(t)`` for the ``T`` row blocks of a pass (``t * per`` to ``(t + 1) * per``, the
    blocks of :func:`bregclust._execution.fused_pass`, so the same sums), on the thread pool of
    :func:`bregclust._execution.run_chunks` when ``T > 1``. The block kernels release the GIL;
    calling them from Python threads, rather than from a ``prange`` kernel over the blocks,
    spares a cold first fit the compilation of one parallel kernel per pass type (about
    1.7-3.4 s CPU each, numba's compile events, benchmarks/RESULTS.md)."""
    if T == 1:
        block(0)
    else:
        E.run_chunks(block, range(T))


class CachedPasses:
    """Lloyd passes over sparse rows that keep the products ``<x_i, t_j>`` of every centre
    whose gradient did not change, and recompute only the centres whose members changed.

    A centre whose members did not change in a pass is recomputed bit for bit (the same rows
    summed in the same order), so its gradient ``t_j`` and every product ``<x_i, t_j>`` are
    those of the previous pass. A pass therefore multiplies each row by the moved columns of
    ``G^T`` only (the same sum over the same stored entries in the same order as the Lloyd
    kernel, so the same values), reads the other columns from an ``n x k`` float64 cache, and
    runs Lloyd's argmin and sums on the result: labels, minima, sums and centres are Lloyd's
    bit for bit. A row whose centre did not move compares its own score with the moved
    centres' only (:func:`bregclust._kernels.pruned.cached_rows_csr`).

    The same fact spares the rest of an iteration the clusters whose members stayed
    (:meth:`update_centres`, :meth:`prepare`): the pass adds up only the sums of the clusters
    that gained or lost a row (the others are the previous pass's sums, kept), the centre
    step divides only those, and the preparation computes the gradients, ``phi`` and ``c``
    of those centres only, written over the previous ones. Each of these falls back to the
    whole computation when it cannot tell what changed (the first pass, an empty cluster, a
    pass the cache did not serve, spherical centres, centres it did not make itself).

    Call it as ``passes(div, centres)`` where :func:`bregclust._centroid.lloyd` would call
    ``src.lloyd(div, centres)``. Passes the cache cannot serve (centres outside the fused GEMM
    form, extra statistics, a labels-only pass, an overflow) run the source's own pass. The
    sums ``S`` a pass returns are this object's buffer, updated in place by the next pass:
    read them before it. They are re-used (only the changed clusters re-added) only after
    :meth:`update_centres` made the next centres from them; a loop with its own centre step
    gets whole sums every pass.

    Parameters
    ----------
    src : InMemorySource
        Sparse (CSR) rows.
    div : Divergence
    debug : bool, default=False
        Check after every pass that labels, minima and sums are those of the source's Lloyd
        pass, and every preparation against a fresh one (tests only: a full pass more per
        iteration).

    Attributes
    ----------
    skipped : list of int
        Per pass, the products ``<x_i, t_j>`` read from the cache instead of computed.
    centre_rows, prepared_rows, summed : list of int
        Per centre step, preparation and cached pass, the centres computed or the clusters
        summed (``k`` for a whole one).
    total : int
        ``n k``, the products of a Lloyd pass.
    """

    candidates = True

    def __init__(self, src, div, debug=False):
        self.src = src
        self.div = div
        self.debug = bool(debug)
        block = src.block
        self.Xg, self.phi_x = block.prepared(div)
        if not sp.issparse(self.Xg):
            raise ValueError("CachedPasses needs sparse (CSR) rows.")
        self.w = block.weights()
        self.n, self.d = self.Xg.shape
        self.k = None
        self.P = None
        self.pc = None  # the centres self.prepare returned last
        self.pending = None  # bool (k,): centres prepared since P was last written; None: all
        self.labels = None  # labels of the last cached pass whose minima were all finite
        self.S = None  # the sums of the last cached pass (every cluster), or None
        self.changed = None  # bool (k,): clusters whose members that pass changed
        self.kept = -1  # the pass whose sums self.update_centres left intact (read in place)
        self.npass = 0
        # the last centre step: (its centres, the pass it read, the rows it recomputed or None
        # for all, its previous centres, whether every centre is its cluster's quotient)
        self.step = None
        self.skipped = []
        self.centre_rows = []
        self.prepared_rows = []
        self.summed = []
        self.total = 0
        self.T = PrunedPasses._threads(self)

    # ------------------------------------------------------------------ the centre step
    def update_centres(self, S, W, candidates, div, beta, z, run, previous):
        """:func:`bregclust._centroid.update_centres` (the same centres bit for bit), dividing
        only the sums of the clusters whose members changed in the last pass when
        ``previous`` are the centres this step made from the pass before it: every other
        centre is then the previous one (the same sums, so the same quotient). When more than
        a third changed, all are divided (no copy of the previous centres), and the
        preparation still recomputes only the changed ones."""
        from ._centroid import update_centres

        last = self.step
        # every centre a quotient of its own cluster's sums: no re-seeding, no normalisation
        clean = not div.spherical and bool((W > 0).all())
        incremental = (clean and self.changed is not None and S is self.S and last is not None
                       and last[0] is previous and last[1] == self.npass - 1 and last[4])
        if not incremental:
            self.S = None  # update_centres may write into S (re-seeding, the division)
            U = update_centres(S, W, candidates, div, beta, z, run, previous)
            self.step = (U, self.npass, None, previous, clean)
            self.centre_rows.append(U.shape[0])
            return U
        rows = np.flatnonzero(self.changed)
        if 3 * rows.size > S.shape[0]:  # many: whole (a copy of the centres costs as much)
            U = update_centres(S if beta > 0 else S.copy(), W, (), div, beta, z, run, previous)
        else:
            U = previous.copy()
            if rows.size:
                U[rows] = update_centres(S[rows], W[rows], (), div, beta, z, run,
                                         previous[rows])
        self.step = (U, self.npass, rows, previous, True)
        self.kept = self.npass  # S untouched: the next pass may re-add only changed clusters
        self.centre_rows.append(U.shape[0] if 3 * rows.size > S.shape[0] else int(rows.size))
        if self.debug:
            ref = update_centres(S.copy(), W.copy(), (), div, beta, z, run, previous)
            assert np.array_equal(ref.view(np.uint64), U.view(np.uint64)), (
                "cached centre step differs from update_centres")
        return U

    # ------------------------------------------------------------------ the preparation
    def prepare(self, div, U):
        """:func:`bregclust._execution.prepare_centres` of ``U``, recomputing only the rows
        that changed since the centres prepared last: those :meth:`update_centres` recomputed
        when it made ``U`` from them, else the rows that differ in their bits. For a separable
        generator the gradients, ``phi`` and ``c`` are computed row by row (elementwise maps
        and row sums), so the other rows are the previous values; other generators
        (Mahalanobis: a matrix product) are prepared whole, and so are centres of which more
        than half changed (the unchanged rows then have the same values, and the pass still
        recomputes only the changed columns). The previous centres' ``G`` is written over
        (the loop never reads a preparation after the next one). The debug mode checks every
        preparation against a fresh one."""
        last = self.pc
        U = np.ascontiguousarray(U)
        if (last is None or last.phi is None or last.U.shape != U.shape or not last.finite
                or last.U.dtype != U.dtype or not (div.differentiable and div.separable)):
            pc = E.prepare_centres(div, U)
            self.pc, self.pending = pc, None
            self.prepared_rows.append(U.shape[0])
            return pc
        step = self.step
        if step is not None and step[0] is U and step[2] is not None and step[3] is last.U:
            moved = step[2]  # the rows the centre step recomputed; the others are last.U's
        else:
            bits = f"u{U.itemsize}"
            moved = np.flatnonzero(~(U.view(bits) == last.U.view(bits)).all(axis=1))
        whole = 2 * moved.size > U.shape[0]
        if whole:  # most rows: whole (no gather, no scatter)
            pc = E.prepare_centres(div, U)
        else:
            G, c, phi = last.G, last.c.copy(), last.phi.copy()
            if moved.size:
                part = E.prepare_centres(div, U[moved])
                G[moved], c[moved], phi[moved] = part.G, part.c, part.phi
            pc = E.PreparedCentres(U, G, c, phi, fused=div.form.fused)
            last.G = None  # written over: the previous preparation is no longer valid
        if self.debug:
            ref = E.prepare_centres(div, U)
            for name in ("G", "c", "phi"):
                a, b = getattr(ref, name), getattr(pc, name)
                assert np.array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}")), (
                    f"cached preparation: {name} differs from prepare_centres")
            assert (ref.finite, ref.fused) == (pc.finite, pc.fused)
        if self.pending is not None:
            self.pending[moved] = True
        self.pc = pc
        self.prepared_rows.append(U.shape[0] if whole else int(moved.size))
        return pc

    # ------------------------------------------------------------------ the pass
    def __call__(self, div, pc, extra=None, sums=True):
        k = pc.U.shape[0]
        if self.k != k:
            self.k, self.total, self.P = k, self.n * k, None
            self.labels = self.S = self.changed = None
        if not pc.fused or extra is not None or not sums or self.n == 0:
            self.skipped.append(0)
            self.labels = self.S = self.changed = None
            self.npass += 1
            return self.src.lloyd(div, pc, extra, sums)
        G = pc.G
        if self.P is None or pc is not self.pc or self.pending is None:
            if self.P is None:
                self.P = np.empty((self.n, k))
            moved = np.arange(k, dtype=np.int64)
        else:
            moved = np.flatnonzero(self.pending).astype(np.int64)
        GTm = pc.GT if moved.shape[0] == k else np.ascontiguousarray(G[moved].T)
        stay = np.ones(k, dtype=np.uint8)
        stay[moved] = 0
        prev = self.labels if self.labels is not None else np.empty(0, dtype=np.int64)
        # the last pass's sums are re-used only when this object's own centre step left them
        # intact since (a caller's update_centres may divide S in place)
        full_sums = self.S is None or self.labels is None or self.kept != self.npass
        n, d, T = self.n, self.d, self.T
        labels = np.empty(n, dtype=np.int64)
        mins = np.empty(n)
        St = [np.zeros((k, d)) for _ in range(T)] if full_sums else None
        W = np.zeros((T, k))
        O = np.zeros(T)
        Xg = self.Xg
        per = (n + T - 1) // T
        dummy = np.zeros((0, 0))

        def block(t):
            O[t] = KP.cached_rows_csr(Xg.data, Xg.indices, Xg.indptr, self.phi_x, GTm, moved,
                                      pc.c, self.w, self.P, labels, mins,
                                      St[t] if full_sums else dummy, W[t], t * per,
                                      min(n, (t + 1) * per), np.empty(moved.shape[0]), prev,
                                      stay, full_sums)

        _run_blocks(block, T)
        self.pending = np.zeros(k, dtype=bool)  # P now holds the products of pc
        self.npass += 1
        self.skipped.append(n * (k - moved.shape[0]))
        obj = float(O[0])
        for t in range(1, T):  # as fused_pass adds the threads' objectives
            obj += float(O[t])
        if not np.isfinite(obj):  # a minimum to evaluate by the definition: Lloyd's pass
            self.labels = self.S = self.changed = None
            self.skipped[-1] = 0  # the cached products were thrown away: Lloyd's pass counts
            return self.src.lloyd(div, pc)
        changed = np.ones(k, dtype=bool)
        if self.labels is not None:  # the clusters that gained or lost a row
            diff = labels != self.labels
            changed[:] = False
            changed[labels[diff]] = True
            changed[self.labels[diff]] = True
        if full_sums:
            S = St[0]
            for t in range(1, T):  # as fused_pass adds the threads' sums
                S += St[t]
            self.summed.append(k)
        else:  # the other clusters' sums are the last pass's, bit for bit
            S = self.S
            rows = np.flatnonzero(changed)
            self.summed.append(int(rows.size))
            S[rows] = 0.0
            Sx = [S] + [np.zeros((k, d)) for _ in range(1, T)]

            def sums_block(t):
                KP.cluster_sums_csr(Xg.data, Xg.indices, Xg.indptr, self.w, labels, changed,
                                    Sx[t], t * per, min(n, (t + 1) * per))

            _run_blocks(sums_block, T)
            for t in range(1, T):  # as fused_pass adds the threads' sums
                S[rows] += Sx[t][rows]
        self.labels, self.S, self.changed = labels, S, changed
        part = B.LloydPart(S=S, W=W.sum(axis=0), objective=obj, labels=labels, mins=mins)
        if self.debug:
            ref = self.src.lloyd(div, pc)
            assert np.array_equal(ref.labels, part.labels), "cached labels differ from Lloyd's"
            assert np.array_equal(ref.mins, part.mins), "cached minima differ from Lloyd's"
            assert np.array_equal(ref.W, part.W), "cached cluster weights differ from Lloyd's"
            assert np.array_equal(ref.S, part.S), "cached cluster sums differ from Lloyd's"
            assert ref.objective == part.objective, "cached objective differs from Lloyd's"
        return part


class PrunedPasses:
    """Lloyd passes with Hamerly-type bounds on an in-memory data source.

    Call it as ``passes(div, centres)`` where :func:`bregclust._centroid.lloyd` would call
    ``src.lloyd(div, centres)``. The bounds carry from one call to the next (the centres of
    consecutive calls are consecutive iterations); on dense rows the first pass is Lloyd's
    pass that also writes them (:meth:`start`). A pass that cannot use them (centres
    outside the fused GEMM form, an overflow, an empty cluster whose re-seeding reads the
    minima) runs the source's own Lloyd pass instead and restarts the bounds.

    Parameters
    ----------
    src : InMemorySource
    div : Divergence
    algorithm : {"hamerly", "yinyang"}, default="hamerly"
        One bound per row, or one per group of about 10 centres (groups of nearby initial
        centres, Ding et al., 2015).
    debug : bool, default=False
        Check after every pass that the bounds hold on every row and that the labels and sums
        are those of the source's Lloyd pass (tests only: a full pass more per iteration).

    Attributes
    ----------
    skipped : list of int
        Per pass, the score evaluations skipped (``k - 1`` per row whose bound held: its own
        score is still evaluated).
    total : int
        ``n k``, the evaluations of a Lloyd pass.
    """

    def __init__(self, src, div, algorithm="hamerly", debug=False):
        self.src = src
        self.div = div
        self.algorithm = algorithm
        self.grp = None
        self.debug = bool(debug)
        block = src.block
        self.Xg, self.phi_x = block.prepared(div)
        self.sparse = sp.issparse(self.Xg)
        if not self.sparse:
            self.Xg = np.ascontiguousarray(self.Xg)
        self.w = block.weights()
        n, d = self.Xg.shape
        self.n, self.d = n, d
        self.k = None
        self.prev = None
        self.labels = None
        self.lb = None
        self.skipped = []
        self.total = 0
        Xg = self.Xg
        L = (int(np.diff(Xg.indptr).max()) if n else 1) if self.sparse else d
        self.L = L
        g = _gamma(L, _U) + 4 * _U
        self._norms = None  # (xn, x1), computed on first use (an O(n d) read of the rows)
        self.gam = g
        # the rounding of a score as Lloyd's kernel computes it (product in the data's type,
        # float32 G^T for float32 dense rows) and as the own-score loop does (float64)
        u_dt = (np.finfo(np.float32).eps / 2 if (not self.sparse and Xg.dtype == np.float32)
                else _U)
        self.rho = 2.0 * (_gamma(L, u_dt) + u_dt + _gamma(L, _U) + 4 * _U)
        self.lim = 1e36 if (not self.sparse and Xg.dtype == np.float32) else 1e300
        self.T = self._threads()
        self._x32 = None  # the rows in float32 with a column of ones (built on first use)
        self.float64_rows = []  # per pass: failing rows the float32 filter left to float64

    def centre_norms(self, pc):
        """``(TN, CN)``: ``max_j ||g_j||_2`` rounded up and ``max_j |c_j|`` of prepared
        centres (the scale of a score's rounding error)."""
        with np.errstate(over="ignore", invalid="ignore"):
            TN = float(np.sqrt(np.einsum("ij,ij->i", pc.G, pc.G)).max()) * (1 + self.gam)
            CN = float(np.abs(pc.c).max())
        return TN, CN

    def filter_applies(self, pc):
        """Whether a pruned pass at the prepared centres ``pc`` scores its failing rows with
        the float32 filter (:meth:`filter32` would not refuse), without making its float32
        copy of the rows."""
        if (not FILTER32 or self.sparse or self.Xg.dtype != np.float64 or self.n == 0
                or not pc.fused):
            return False
        TN, CN = self.centre_norms(pc)
        return bool(TN < FILTER32_MAX and CN < FILTER32_MAX
                    and float(self.xn.max()) < FILTER32_MAX)

    def filter32(self, TN, CN):
        """``(X32, kap, eta)`` of the float32 filter for this pass
        (:func:`bregclust._kernels.pruned._filter_rows32`: the rows in float32 with a column of
        ones, and the error bound ``kap (||x|| TN + CN) + eta (2 + TN + ||x||)`` of a float32
        score), or None (sparse or float32 rows, :data:`FILTER32` off, values beyond
        :data:`FILTER32_MAX`)."""
        if (not FILTER32 or self.sparse or self.Xg.dtype != np.float64
                or not (TN < FILTER32_MAX and CN < FILTER32_MAX)):
            return None
        if self._x32 is None:
            ok = self.n > 0 and float(self.xn.max()) < FILTER32_MAX
            X32 = np.empty((self.n if ok else 0, self.d + 1), np.float32)
            if ok:
                X32[:, :self.d] = self.Xg
                X32[:, self.d] = 1.0
            self._x32 = X32
        if not self._x32.shape[0]:
            return None
        d, u32 = self.d, np.finfo(np.float32).eps / 2
        # the conversions of x_l and g_l (gamma_2) and a sum of d + 1 products in any order
        # (gamma_{d+1}); (1 + 1e-6) covers the float64 rounding of the bound itself
        kap = _gamma(d + 3, u32) * (1.0 + 1e-6)
        # underflow, absolute: at most 2^-150 per operation, or 2^-126 if the process flushes
        # subnormals to zero (a library built with fast-math can switch that on): 2^-125 each
        eta = 2.4e-38 * (d + 3)
        return self._x32, kap, eta

    @property
    def xn(self):
        """``||x_i||_2`` per row, rounded up."""
        return self.norms()[0]

    @property
    def x1(self):
        """``||x_i||_1`` per row, rounded up."""
        return self.norms()[1]

    def norms(self, rows=None):
        """``(||x_i||_2, ||x_i||_1)`` rounded up, of every row (kept) or of ``rows`` only."""
        if rows is None and self._norms is not None:
            return self._norms
        Xg, g = self.Xg, self.gam
        if self.sparse:
            Xr = Xg if rows is None else Xg[rows]
            m = Xr.shape[0]
            sq = np.zeros(m)
            ab = np.zeros(m)
            data = np.abs(Xr.data.astype(np.float64))
            ids = np.repeat(np.arange(m), np.diff(Xr.indptr))
            np.add.at(sq, ids, data * data)
            np.add.at(ab, ids, data)
        else:
            Xr = Xg if rows is None else Xg[rows]
            sq = np.empty(Xr.shape[0])
            ab = np.empty(Xr.shape[0])
            KA.row_norms_dense(Xr, sq, ab)  # any order of the sums: g bounds each
        out = (np.sqrt(sq) * (1 + g), ab * (1 + g))
        if rows is None:
            self._norms = out
        return out

    def _threads(self):
        """The thread blocks of :func:`bregclust._execution.fused_pass` (the sums are added
        per block, so the same split gives the same sums)."""
        n, d = self.n, self.d
        T = min(E.n_workers(), numba.get_num_threads()) if n * d > E.PARALLEL_MIN else 1
        return max(1, min(T, n))

    # ------------------------------------------------------------------ the pass
    def __call__(self, div, pc, extra=None, sums=True):
        k = pc.U.shape[0]
        if self.k != k:
            self.k = k
            self.total = self.n * k
            self.prev = None
        if not pc.fused or self.n == 0:
            return self._fallback(pc)
        if self.prev is None:
            if self.grp is None or self.grp.shape[0] != k:
                self._group(pc.U)
            part = self.start(pc)  # dense rows: a Lloyd pass that writes the bounds
            if part is not None:
                self.skipped.append(0)
                return part
            G = self.starts.shape[0]
            self.labels = np.zeros(self.n, dtype=np.int64)
            self.lb = np.full((self.n, G), -np.inf)
            shifts = (np.zeros((1, G)), np.zeros(G), np.zeros(G), np.zeros((0, self.d)), False)
        else:
            shifts = self._shifts(self.prev, pc)
        part, nrec = self._run(pc, shifts)
        if part is None:
            return self._fallback(pc)
        self.prev = pc
        if (part.W <= 0).any():
            # the re-seeding of an empty cluster orders rows by their minima: take Lloyd's
            # minima (the labels are the same; the bounds stay valid)
            lloyd = self.src.lloyd(div, pc)
            if self.debug:
                assert np.array_equal(lloyd.labels, part.labels)
            part = lloyd
        self.skipped.append((self.n - nrec) * (k - 1))
        if self.debug:
            self._check(pc, part)
        return part

    def start(self, pc):
        """Lloyd's pass on dense rows that also starts the bounds
        (:func:`bregclust._kernels.adaptive.start_block`: Lloyd's labels, minima, sums
        and objective bit for bit); None after an overflow (the caller runs Lloyd's pass,
        which evaluates those rows by the definition)."""
        P = self
        if P.sparse:
            return None
        n, d, k, T = P.n, P.d, pc.U.shape[0], P.T
        if n == 0:
            return None
        labels = np.empty(n, dtype=np.int64)
        mins = np.empty(n)
        lb = np.empty((n, P.starts.shape[0]))
        S = np.zeros((T, k, d))
        W = np.zeros((T, k))
        O = np.zeros(T)
        with np.errstate(over="ignore", invalid="ignore"):
            TN = float(np.sqrt(np.einsum("ij,ij->i", pc.G, pc.G)).max()) * (1 + P.gam)
            CN = float(np.abs(pc.c).max())
        GT = pc.gt(P.Xg.dtype)
        per = (n + T - 1) // T

        def block(t):
            O[t] = KA.start_block(P.Xg, P.phi_x, GT, pc.c, P.perm, P.gstart, P.grp, P.xn, P.rho,
                                  TN, CN, P.w, E._LLOYD_CHUNK, labels, mins, lb, S[t], W[t],
                                  t * per, min(n, (t + 1) * per),
                                  np.empty((E._LLOYD_CHUNK, k), P.Xg.dtype))

        with E.blas_one_thread():
            _run_blocks(block, T)
        obj = float(O[0])
        for t in range(1, T):  # as fused_pass adds the threads' sums
            S[0] += S[t]
            obj += float(O[t])
        if not np.isfinite(obj):
            return None
        P.labels, P.lb, P.prev, P.k, P.total = labels, lb, pc, k, n * k
        part = B.LloydPart(S=S[0], W=W.sum(axis=0), objective=obj, labels=labels.copy(),
                           mins=mins)
        if P.debug:
            P._check(pc, part)
        return part

    def _group(self, U):
        """Groups of centres: one (Hamerly), or about ``k / 10`` from a few Lloyd steps on the
        first centres (Yinyang's grouping; any grouping keeps the bounds valid)."""
        k = U.shape[0]
        G = 1 if self.algorithm == "hamerly" else max(1, k // GROUP_SIZE)
        grp = np.zeros(k, dtype=np.int64)
        if G > 1:
            V = np.nan_to_num(U)
            C = V[np.linspace(0, k - 1, G).astype(np.int64)]
            for _ in range(5):
                D = (C * C).sum(axis=1)[None, :] - 2.0 * V @ C.T
                grp = np.argmin(D, axis=1)
                for g in range(G):
                    if (grp == g).any():
                        C[g] = V[grp == g].mean(axis=0)
            grp = np.unique(grp, return_inverse=True)[1].astype(np.int64)  # no empty group
        self.grp = np.ascontiguousarray(grp)
        self.perm = np.argsort(grp, kind="stable")
        self.starts = np.flatnonzero(np.r_[True, np.diff(grp[self.perm]) != 0])
        self.gstart = np.r_[self.starts, k].astype(np.int64)

    def _fallback(self, pc):
        self.prev = None
        self.skipped.append(0)
        return self.src.lloyd(self.div, pc)

    def _shifts(self, old, new):
        """Per cluster ``a`` (row 0 for all without a reference point) and group ``g``:
        ``(shift_m, shift_2, shift_inf, U0, use_ref)`` with
        ``shift_m[a, g] <= min_{j in g, j != a} beta_j`` and
        ``shift_2[g] >= max_{j in g} ||dt_j||_2`` (``shift_inf``: the infinity norm), each
        rounded to the safe side. The last result is kept: ``"auto"``'s sample asks for the
        shifts of the pass just run (the same two prepared centres, never modified)."""
        memo = getattr(self, "_memo", None)
        if memo is not None and memo[0] is old and memo[1] is new:
            return memo[2]
        out = self._shifts_of(old, new)
        self._memo = (old, new, out)
        return out

    def _shifts_of(self, old, new):
        """:meth:`_shifts`, computed."""
        k, d = new.G.shape
        g = _gamma(d, _U) + 8 * _U
        with np.errstate(invalid="ignore", over="ignore"):
            dT = new.G - old.G
            dc = new.c - old.c
            d2 = np.sqrt(np.einsum("ij,ij->i", dT, dT)) * (1 + g)
            dinf = np.abs(dT).max(axis=1) * (1 + 4 * _U) if d else np.zeros(k)
            use_ref = (not self.sparse) and k * 8 <= self.n
            if use_ref:
                U0 = new.U
                un = np.sqrt(np.einsum("ij,ij->i", U0, U0))
                B = dc[None, :] - U0 @ dT.T
                B -= g * (np.abs(dc)[None, :] + un[:, None] * d2[None, :]) + 4 * _U * np.abs(B)
                np.fill_diagonal(B, np.inf)
            else:
                U0 = np.zeros((0, d))
                B = (dc - 4 * _U * np.abs(dc))[None, :]
            perm, starts = self.perm, self.starts
            shift_m = np.minimum.reduceat(B[:, perm], starts, axis=1)
            shift_2 = np.maximum.reduceat(d2[perm], starts)
            shift_inf = np.maximum.reduceat(dinf[perm], starts)
        shift_m = np.where(np.isnan(shift_m), -np.inf, shift_m)
        shift_2 = np.where(np.isnan(shift_2), np.inf, shift_2)
        shift_inf = np.where(np.isnan(shift_inf), np.inf, shift_inf)
        return (np.ascontiguousarray(shift_m), shift_2, shift_inf, np.ascontiguousarray(U0),
                use_ref)

    def _run(self, pc, shifts):
        """The kernel pass: ``(LloydPart, rows recomputed)``, or ``(None, 0)`` after an
        overflow (the caller then runs Lloyd's pass, which evaluates those rows by the
        definition)."""
        shift_m, shift_2, shift_inf, U0, use_ref = shifts
        n, d, k, T = self.n, self.d, self.k, self.T
        TN, CN = self.centre_norms(pc)
        G = np.ascontiguousarray(pc.G)
        c = pc.c
        mins = np.empty(n)
        S = np.zeros((T, k, d))
        W = np.zeros((T, k))
        O = np.zeros(T)
        R = np.zeros(T, dtype=np.int64)
        R64 = np.zeros(T, dtype=np.int64)  # CSR rows: every recomputed row is float64
        labels, lb = self.labels, self.lb
        use_l1 = not use_ref
        per = (n + T - 1) // T
        Xg = self.Xg
        if self.sparse:
            GT = pc.GT

            def block(t):
                O[t], R[t] = KP.pruned_rows_csr(
                    Xg.data, Xg.indices, Xg.indptr, self.phi_x, GT, G, c, self.grp, self.perm,
                    self.gstart, self.w, self.xn, self.x1, lb, labels, shift_m, shift_2,
                    shift_inf, use_l1, self.rho, TN, CN, mins, S[t], W[t], t * per,
                    min(n, (t + 1) * per))

            _run_blocks(block, T)
        else:
            GT = pc.gt(self.Xg.dtype)
            f32 = self.filter32(TN, CN)
            if f32 is None:
                X32, kap, eta = np.empty((0, d + 1), np.float32), 0.0, 0.0
                GT32 = np.empty((k, d + 1), np.float32)
            else:  # the centres in group order, -c_j last
                X32, kap, eta = f32
                GT32 = np.empty((k, d + 1), np.float32)
                GT32[:, :d] = G[self.perm]
                GT32[:, d] = -c[self.perm]

            def block(t):
                O[t], R[t], R64[t] = KP.pruned_block_dense(
                    Xg, self.phi_x, GT, G, c, self.grp, self.perm, self.gstart, self.w, self.xn,
                    self.x1, lb, labels, shift_m, shift_2, shift_inf, U0, use_ref, use_l1,
                    self.rho, self.gam, TN, CN, self.lim, E._LLOYD_CHUNK, mins, S[t], W[t],
                    t * per, min(n, (t + 1) * per), X32, GT32, kap, eta)

            with E.blas_one_thread():
                _run_blocks(block, T)
        obj = float(O[0])
        for t in range(1, T):  # as fused_pass adds the threads' sums
            S[0] += S[t]
            obj += float(O[t])
        if not np.isfinite(obj):
            return None, 0
        part = B.LloydPart(S=S[0], W=W.sum(axis=0), objective=obj, labels=labels.copy(),
                           mins=mins)
        self.float64_rows.append(int(R64.sum()) if not self.sparse else int(R.sum()))
        return part, int(R.sum())

    # ------------------------------------------------------------------ debug checks
    def _check(self, pc, part):
        """Tests only: the bounds hold on every row, and the pass is Lloyd's."""
        Xg = self.Xg
        P = np.asarray(Xg @ pc.G.T) if self.sparse else Xg.astype(np.float64) @ pc.G.T
        D = pc.c[None, :] - P
        a = self.labels
        D[np.arange(self.n), a] = np.inf
        slack = 1e-12 * (self.xn * np.sqrt((pc.G ** 2).sum(axis=1)).max() + np.abs(pc.c).max())
        for g in range(self.starts.shape[0]):
            low = D[:, self.grp == g].min(axis=1)
            bad = ~(self.lb[:, g] <= low + slack)
            assert not bad.any(), (f"pruned bound broken on {int(bad.sum())} rows (group {g}): "
                                   f"lb {self.lb[bad, g][:3]} > {low[bad][:3]}")
        ref = self.src.lloyd(self.div, pc)
        assert np.array_equal(ref.labels, part.labels), "pruned labels differ from Lloyd's"
        assert np.array_equal(ref.W, part.W), "pruned cluster weights differ from Lloyd's"
        assert np.array_equal(ref.S, part.S), "pruned cluster sums differ from Lloyd's"


#: Rows of the sample on which :class:`AdaptivePasses` measures what pruning would skip (at
#: most ``n / 16`` of the rows, and at least 64).
SAMPLE_ROWS = 512

#: The cost model of :class:`AdaptivePasses`, in units of a Lloyd pass: a pruned pass that
#: skips the fraction ``s`` of the rows costs ``PRUNED_FIXED + PRUNED_ROW (1 - s)``; the Lloyd
#: pass that also starts the bounds (:func:`bregclust._kernels.adaptive.start_block`)
#: costs ``START``. Measured pass by pass on 200k x 128 unit rows (cosine), k = 256, one
#: thread (benchmarks/RESULTS.md): a pruned pass took 0.76 of a Lloyd pass skipping 47% of the
#: rows, 0.49 skipping 72%, 1.04 skipping 21%; a starting pass 1.4 (its group minima read the
#: scores of each group through the grouping's permutation, about 1.3 ns per score). With the
#: float32 filter of the failing rows (:data:`FILTER32`; 50,000 x 50 blobs, k = 256, least
#: squares of pass time on the fraction recomputed, one thread): fixed 0.21, per recomputed row
#: 0.61 of a Lloyd pass (:data:`PRUNED_ROW`), against 1.08 without the filter
#: (:data:`PRUNED_ROW_FLOAT64`: float32 rows, or values beyond float32's range).
PRUNED_FIXED = 0.19
PRUNED_ROW = 0.61
PRUNED_ROW_FLOAT64 = 1.08
START = 1.4

#: :class:`AdaptivePasses` weighs its choice over this pass and the next ``HORIZON - 1`` (at
#: most the passes left): a starting pass is repaid by the pruned passes after it (with the
#: float32 filter a pruned pass skipping nothing costs 0.8 of a
#: Lloyd pass, so the bounds repay their start within four passes even early in a fit).
HORIZON = 4


class AdaptivePasses:
    """``algorithm="auto"`` on dense rows: Lloyd's passes while pruning would not pay, the
    pruned passes of :class:`PrunedPasses` once it would, and back.

    Every pass is exact whichever it is (Lloyd's pass; the Lloyd pass that also starts the
    bounds, :func:`bregclust._kernels.adaptive.start_block`, with Lloyd's arithmetic bit
    for bit; or a pruned pass, with Lloyd's labels and sums), so the choice changes the time
    of a fit, never its result. The choice is measured. On a fixed sample of
    :data:`SAMPLE_ROWS` rows every pass evaluates all scores (about ``SAMPLE_ROWS / n`` of a
    pass), keeps the exact bounds they give, and moves them to the next centres with the
    pruned pass' own shifts: the fraction of sample rows whose bound test passes, ``s_f``, is
    what a pruned pass would skip one pass after the bounds were started. The last pruned
    pass gives the fraction ``s_r`` its aged bounds skip. With the cost model
    (:data:`PRUNED_FIXED`, :data:`PRUNED_ROW`, :data:`START`; a Lloyd pass costs 1) the passes
    take, over this pass and the next ``HORIZON - 1`` (:data:`HORIZON`, at most the passes
    left), the cheapest of: Lloyd's passes, a starting pass then pruned passes skipping
    ``s_f``, or (after a pruned pass) more pruned passes skipping ``s_r``; on the last pass of
    ``max_iter``, never a starting pass. Before the first measurement ``s_f`` is taken as 0:
    with the float32 filter (:data:`PRUNED_ROW`) the bounds then start on the first pass.

    Parameters
    ----------
    src : InMemorySource
        Dense rows.
    div : Divergence
    algorithm : {"hamerly", "yinyang"}
        The pruned passes to switch to.
    debug : bool, default=False
        Passed to :class:`PrunedPasses`: the bounds and the pass are checked on every pruned
        and starting pass.

    Attributes
    ----------
    skipped : list of int
        Per pass, the score evaluations skipped (0 on Lloyd's and starting passes).
    total : int
        ``n k``.
    modes : list of str
        Per pass, ``"lloyd"``, ``"start"`` or ``"pruned"``.
    predicted : list of float
        Per pass, ``s_f`` measured on the sample (NaN before the second pass).
    row_costs : list of float
        Per pass, the cost of a recomputed row the choice used: :data:`PRUNED_ROW` when a
        pruned pass at the pass's centres would run the float32 filter, else
        :data:`PRUNED_ROW_FLOAT64` (float32 rows, the filter off, or rows or centres beyond
        :data:`FILTER32_MAX`, where the filter refuses).
    """

    #: tests: a callable ``pass number -> "lloyd" | "start" | "pruned"`` in place of the
    #: measured rule ("pruned" right after a Lloyd pass starts the bounds, as "start" does)
    schedule = None

    def __init__(self, src, div, algorithm, debug=False):
        self.src = src
        self.div = div
        self.pruned = PrunedPasses(src, div, algorithm, debug=debug)
        n = self.pruned.n
        float64 = self.pruned.Xg.dtype == np.float64
        # the cost of a recomputed row, set again before every choice from what a pruned
        # pass at the pass's centres would run (the filter refuses rows or centres beyond
        # FILTER32_MAX)
        self.row_cost = PRUNED_ROW if FILTER32 and float64 else PRUNED_ROW_FLOAT64
        self.row_costs = []
        m = min(n, SAMPLE_ROWS, max(n // 16, 64))  # 1/16 of the rows, at least 64
        self.rows = (np.arange(m, dtype=np.int64) * n) // max(m, 1)
        self.Xs = np.ascontiguousarray(self.pruned.Xg[self.rows], dtype=np.float64)
        self.xs_n, self.xs_1 = self.pruned.norms(self.rows)
        self.left = None  # passes left in the fit (set by budget)
        self.mode = "lloyd"
        self.state = None  # (pc, labels, bounds) of the sample at the last pass
        self.skipped = []
        self.modes = []
        self.predicted = []
        self.total = 0

    def budget(self, max_iter):
        """The fit makes at most ``max_iter`` passes after the first (called by
        :func:`bregclust._centroid.lloyd`)."""
        self.left = int(max_iter) + 1

    # ------------------------------------------------------------------ the sample
    def _sample(self, pc, labels):
        """Measure ``s_f`` at the centres ``pc`` and keep the sample's exact bounds for the
        next pass (``labels``: the pass's labels of all rows). Returns ``s_f`` or None."""
        P = self.pruned
        if not pc.fused or self.Xs.shape[0] == 0:
            self.state = None
            return None
        with np.errstate(over="ignore", invalid="ignore"):
            D = pc.c[None, :] - self.Xs @ pc.G.T
        s_f = self._predict(pc, D)
        a = labels[self.rows]
        lb = D.copy()
        lb[np.arange(a.shape[0]), a] = np.inf
        self.state = (pc, a, np.minimum.reduceat(lb[:, P.perm], P.starts, axis=1))
        return s_f

    def _predict(self, pc, D):
        """The fraction of sample rows whose bounds, exact at the centres of the last pass and
        moved to ``pc`` by :meth:`PrunedPasses._shifts`, prove their label (scores ``D``)."""
        if self.state is None:
            return None
        old, a, lb = self.state
        P = self.pruned
        if not old.fused or old.U.shape != pc.U.shape:
            return None
        shift_m, shift_2, shift_inf, U0, use_ref = P._shifts(old, pc)
        Da = D[np.arange(a.shape[0]), a]
        xn = self.xs_n
        with np.errstate(invalid="ignore", over="ignore"):
            if use_ref:
                diff = self.Xs - U0[a]
                r2 = np.sqrt(np.einsum("ij,ij->i", diff, diff)) * (1 + P.gam)
                move = shift_m[a] - r2[:, None] * shift_2[None, :]
            else:
                move = shift_m[np.zeros_like(a)] - np.minimum(
                    xn[:, None] * shift_2[None, :], self.xs_1[:, None] * shift_inf[None, :])
            low = np.nan_to_num(lb + move, nan=-np.inf).min(axis=1)
            TN = float(np.sqrt(np.einsum("ij,ij->i", pc.G, pc.G)).max()) * (1 + P.gam)
            Ei = P.rho * (xn * TN + float(np.abs(pc.c).max()))
            return float(np.mean(Da + 2.0 * Ei < low))

    # ------------------------------------------------------------------ the rule
    def _cost(self, s):
        """A pruned pass skipping the fraction ``s`` of the rows, in Lloyd passes."""
        return PRUNED_FIXED + self.row_cost * (1.0 - s)

    def _choose(self):
        """``"lloyd"``, ``"start"`` or ``"pruned"`` for the next pass (see the class)."""
        s_f = self.predicted[-1] if self.predicted else np.nan
        left = self.left if self.left is not None else 2
        H = float(max(1, min(left, HORIZON)))  # the passes the choice is weighed over
        options = {"lloyd": H}
        if self.mode == "start":
            options["pruned"] = H * self._cost(s_f) if s_f == s_f else 0.95 * H
        elif self.mode == "pruned":
            s_r = self.skipped[-1] / max(self.total, 1)
            options["pruned"] = H * self._cost(s_r)
        if H >= 2:  # never on the last pass: no next pass to share its cost
            # before the first measurement, priced as if nothing were skipped: it pays then
            # only where a pruned pass skipping nothing beats Lloyd's (the float32 filter)
            options["start"] = START + (H - 1.0) * self._cost(s_f if s_f == s_f else 0.0)
        return min(options, key=lambda m: (options[m], m != "lloyd"))

    # ------------------------------------------------------------------ the pass
    def __call__(self, div, pc, extra=None, sums=True):
        if extra is not None or not sums:  # not a pass of the loop: Lloyd's
            return self.src.lloyd(div, pc, extra, sums)
        P = self.pruned
        k = pc.U.shape[0]
        self.total = P.n * k
        if pc.fused and (P.grp is None or P.grp.shape[0] != k):
            P._group(pc.U)
        self.row_cost = PRUNED_ROW if P.filter_applies(pc) else PRUNED_ROW_FLOAT64
        self.row_costs.append(self.row_cost)
        if self.schedule is not None:
            mode = self.schedule(len(self.skipped))
        else:
            mode = self._choose()
        if self.left is not None:
            self.left -= 1
        part = None
        if mode == "pruned" and pc.fused:
            if self.mode == "lloyd":
                P.prev = None  # the pruned kernel starts the bounds itself
            P.skipped = []
            part = P(div, pc, extra, sums)
            self.skipped.append(P.skipped[-1])
        elif mode == "start" and pc.fused:
            part = P.start(pc)
            if part is not None:
                self.skipped.append(0)
        if part is None:
            mode = "lloyd"
            P.prev = None
            part = self.src.lloyd(div, pc, extra, sums)
            self.skipped.append(0)
        self.mode = mode
        self.modes.append(mode)
        s_f = self._sample(pc, part.labels) if self.schedule is None else None
        self.predicted.append(np.nan if s_f is None else s_f)
        return part


#: Tests set this to check the bounds on every row at every pass (:meth:`PrunedPasses._check`).
DEBUG = False
