"""The raw numba kernels against numpy (also run with NUMBA_DISABLE_JIT=1 for coverage)."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from _kernel_copies import entry
from numba import njit, types

pytestmark = pytest.mark.nojit  # all of this module runs with NUMBA_DISABLE_JIT=1 too


def test_fused_argmin_matches_numpy():
    from bregclust import _kernels as K

    rng = np.random.default_rng(0)
    P = rng.normal(size=(37, 5))
    phi_x = rng.random(37) + 10
    c = rng.normal(size=5)
    labels = np.empty(37, dtype=np.int64)
    mins = np.empty(37)
    K.fused_argmin(P, phi_x, c, labels, mins)
    D = phi_x[:, None] + c[None, :] - P
    assert np.array_equal(labels, D.argmin(axis=1))
    assert np.allclose(mins, D.min(axis=1))
    Q = P.copy()
    odd = np.arange(37) % 2 == 1
    thr = D.min(axis=1) + np.where(odd, 1e-3, -1e-3)  # odd rows: their minimum lies below
    few = np.empty(37, dtype=np.bool_)
    K.fused_pairwise(Q, phi_x, c, thr, few)
    assert np.allclose(Q, np.maximum(D, 0))
    assert np.array_equal(few, odd)


def test_fused_argmin_flags_non_finite_candidates_with_nan():
    """A NaN candidate anywhere in a row (an overflow in the GEMM form), or a non-finite
    minimum, makes ``mins`` NaN, so the caller evaluates that row by the definition; finite
    rows keep their exact minimum. The dense and CSR Lloyd passes share this argmin."""
    from bregclust import _kernels as K

    inf, nan = np.inf, np.nan
    # rows: NaN after the minimum, NaN first, +inf and -inf candidates, -inf minimum, finite
    P = np.array([[3.0, nan, 1.0], [nan, 3.0, 1.0], [-inf, 1.0, inf], [1.0, inf, 2.0],
                  [1.0, 2.0, 0.5]])
    labels = np.empty(5, dtype=np.int64)
    mins = np.empty(5)
    K.fused_argmin(P, np.full(5, 4.0), np.zeros(3), labels, mins)
    assert np.isnan(mins[:4]).all()
    assert labels[4] == 1 and mins[4] == 2.0
    X = np.ones((5, 3))
    S = np.zeros((1, 3, 3))
    W = np.zeros((1, 3))
    GT = np.array([[1.0, 2.0, 0.5]] * 3) / 3.0  # every row gives the last row's candidates
    labels[:] = -1
    K.lloyd.lloyd_step_dense_serial(X, np.full(5, 4.0), GT, np.array([0.0, nan, 0.0]), np.ones(5),
                                    2, labels, mins, S, W, O := np.zeros(1))
    assert np.isnan(mins).all() and (labels == 0).all()
    assert np.isnan(O[0])  # the pass's objective carries the flag


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lloyd_passes_return_the_objective_of_their_minima(dtype):
    """Dense and CSR, serial and threaded: ``O`` adds up to ``sum_i w_i mins_i``, and the labels,
    minima and sums are those of the nearest centres."""
    from bregclust import _kernels as K

    rng = np.random.default_rng(4)
    X = rng.random((203, 6)).astype(dtype)
    X[X < 0.4] = 0.0
    U = rng.random((4, 6))
    w = rng.random(203) + 0.5
    GT = np.ascontiguousarray(2.0 * U.T)
    c = (U * U).sum(axis=1)
    phi_x = (X.astype(np.float64) ** 2).sum(axis=1)
    D = ((X.astype(np.float64)[:, None, :] - U[None]) ** 2).sum(axis=2)
    Xs = sp.csr_matrix(X)
    runs = [(K.lloyd.lloyd_step_dense_serial, 1, (X, phi_x, GT.astype(dtype), c, w, 16)),
            (K.lloyd_step_dense, 3, (X, phi_x, GT.astype(dtype), c, w, 16)),
            (K.lloyd.lloyd_step_csr_serial, 1, (Xs.data, Xs.indices, Xs.indptr, phi_x, GT, c, w)),
            (K.lloyd_step_csr, 3, (Xs.data, Xs.indices, Xs.indptr, phi_x, GT, c, w))]
    for kern, T, args in runs:
        labels = np.empty(203, dtype=np.int64)
        mins = np.empty(203)
        S, W, O = np.zeros((T, 4, 6)), np.zeros((T, 4)), np.zeros(T)
        kern(*args, labels, mins, S, W, O)
        assert np.array_equal(labels, D.argmin(axis=1))
        np.testing.assert_allclose(mins, D.min(axis=1), rtol=1e-4 if dtype == np.float32 else 1e-9,
                                   atol=1e-5)
        np.testing.assert_allclose(O.sum(), w @ mins, rtol=1e-12)
        np.testing.assert_allclose(W.sum(axis=0), np.bincount(labels, weights=w, minlength=4))
        np.testing.assert_allclose(S.sum(axis=0)[labels[0]],
                                   (w[labels == labels[0]] @ X[labels == labels[0]]), rtol=1e-5)


def test_fused_kernels_clamp_rounding_negatives():
    from bregclust import _kernels as K

    P = np.array([[1.0 + 1e-15]])
    labels = np.empty(1, dtype=np.int64)
    mins = np.empty(1)
    K.fused_argmin(P, np.array([1.0]), np.array([0.0]), labels, mins)
    assert mins[0] == 0.0


def test_rowsum_dense_and_csr():
    from bregclust import _kernels as K
    from bregclust._kernels import generators as KG

    NOFN = KG.placeholder()

    rng = np.random.default_rng(1)
    X = rng.poisson(0.7, size=(20, 9)).astype(float)
    ref = np.array([sum(K.kl_phi(v) for v in row) for row in X])
    for kern in (K.rowsum, K.rowsum_par):
        out = np.empty(20)
        kern(KG.KL, NOFN, X, out)
        assert np.allclose(out, ref)
    S = sp.csr_matrix(X)
    out2 = np.empty(20)
    K.rowsum_csr(KG.KL, NOFN, S.data, S.indptr, 9, out2)
    assert np.allclose(out2, ref)
    # f(0) != 0: the implicit zeros still count (a custom generator through its pointer).
    out3 = np.empty(20)
    from numba import njit
    fn = KG.function_pointer(njit(lambda x: (x - 1.0) ** 2))
    K.rowsum_csr(KG.CUSTOM, fn, S.data, S.indptr, 9, out3)
    assert np.allclose(out3, ((X - 1.0) ** 2).sum(axis=1))


@pytest.mark.parametrize("code", ["SQ", "KL", "IS", "ABS"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_builtin_rowsum_without_a_pointer_equals_rowsum(code, dtype):
    """The pointer-free row sums of a built-in generator (the small centres' phi) equal the
    kernel that takes the pointer, bit for bit: zeros, tiny and huge values, 1-3 row tails."""
    from bregclust import _kernels as K
    from bregclust._kernels import generators as KG
    from bregclust._kernels.builtin_rows import rowsum_builtin

    rng = np.random.default_rng(3)
    c = getattr(KG, code)
    for n, d in [(1, 1), (3, 7), (6, 64), (13, 301)]:
        X = rng.random((n, d)) * 10.0 ** rng.integers(-30, 30, size=(n, d))
        X[rng.random((n, d)) < 0.25] = 0.0
        X = X.astype(dtype)
        ref, out = np.empty(n), np.full(n, np.nan)
        K.rowsum(c, KG.placeholder(), X, ref)
        rowsum_builtin(c, X, out)
        assert np.array_equal(out, ref, equal_nan=True)
        if c == KG.SQ:  # and the order of additions is the row's, left to right
            loop = []
            for row in X.astype(np.float64):
                s = 0.0
                for v in row:
                    s += v * v
                loop.append(s)
            assert np.array_equal(out, loop)


def test_kl_rows_from_the_gradients_log_add_kl_phi_left_to_right():
    """kl's phi rows from ``G = log U`` equal ``sum_l (u G - u)`` added left to right in
    float64 (0 at ``u = 0``, NaN for a negative entry), bit for bit, and the kernel's own kl
    rows to rounding."""
    from bregclust import _kernels as K
    from bregclust._kernels import generators as KG
    from bregclust._kernels.builtin_rows import kl_rows_from_log

    rng = np.random.default_rng(4)
    U = rng.random((9, 37)) * 10.0 ** rng.integers(-20, 20, size=(9, 37))
    U[rng.random(U.shape) < 0.2] = 0.0
    U[8, 5] = -1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        G = np.log(U)
    out = np.empty(9)
    kl_rows_from_log(U, G, out)
    loop = []
    for u, g in zip(U, G):
        s = 0.0
        for x, lg in zip(u, g):
            s += x * lg - x if x > 0 else (0.0 if x == 0 else np.nan)
        loop.append(s)
    assert np.array_equal(out, loop, equal_nan=True)
    assert np.isnan(out[8]) and np.isfinite(out[:8]).all()
    ref = np.empty(9)
    K.rowsum(KG.KL, KG.placeholder(), U, ref)
    np.testing.assert_allclose(out[:8], ref[:8], rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_squared_euclidean_rowsum_adds_each_row_left_to_right(dtype):
    """The squared Euclidean row sums (several rows interleaved) equal the float64 sum of each
    row's squares added left to right, bit for bit, for every row count (tails of 1-3 rows)."""
    from bregclust import _kernels as K
    from bregclust._kernels import generators as KG

    NOFN = KG.placeholder()

    rng = np.random.default_rng(2)
    for n, d in [(0, 3), (1, 5), (3, 7), (6, 1), (1030, 13), (5, 0)]:
        X = (rng.normal(size=(n, d)) * 7).astype(dtype)
        ref = np.zeros(n)
        for i in range(n):
            for v in X[i]:
                ref[i] += float(v) * float(v)
        for kern in (K.rowsum, K.rowsum_par):
            out = np.full(n, np.nan)
            kern(KG.SQ, NOFN, X, out)
            assert np.array_equal(out, ref)


def test_column_sums_of_float32_rows_accumulate_in_float64():
    from bregclust import _kernels as K

    rng = np.random.default_rng(3)
    X = (rng.normal(size=(301, 6)) * 1e3).astype(np.float32)
    w = rng.random(301)
    out = np.zeros(6)
    K.lloyd.column_sums_dense(X, w, out)
    ref = np.zeros(6)
    for i in range(301):
        ref += w[i] * X[i].astype(np.float64)
    assert np.array_equal(out, ref)


@pytest.mark.parametrize("name", ["SQ", "KL", "IS"])
def test_custom_pointer_matches_builtin_code(name):
    """A built-in generator passed as a custom function pointer gives the same numbers."""
    from bregclust import _kernels as K
    from bregclust._kernels import generators as KG

    NOFN = KG.placeholder()
    code = getattr(KG, name)
    phi, dphi, inv = {KG.SQ: (K.sq_phi, K.sq_dphi, K.sq_dphi_inv),
                      KG.KL: (K.kl_phi, K.kl_dphi, K.kl_dphi_inv),
                      KG.IS: (K.is_phi, K.is_dphi, K.is_dphi_inv)}[code]
    rng = np.random.default_rng(3)
    X = rng.uniform(0.1, 3.0, size=(7, 4))
    for which, f in ((KG.PHI, phi), (KG.DPHI, dphi), (KG.DPHI_INV, inv)):
        a = np.empty_like(X)
        b = np.empty_like(X)
        K.map_scalar(code, which, NOFN, X, a)
        K.map_scalar_par(KG.CUSTOM, which, KG.function_pointer(f), X, b)
        assert np.array_equal(a, b)


@pytest.mark.parametrize("code,f,inv,ts", [
    (0, lambda x: math.sinh(x), math.asinh, [-50.0, -1.0, 0.0, 0.3, 700.0]),
    (2, lambda x: math.log(x), math.exp, [-600.0, -3.0, 0.0, 5.0, 600.0]),
    (2, lambda x: -1.0 / x, lambda t: -1.0 / t, [-1e6, -2.0, -1e-3]),
])
def test_numeric_inverse(code, f, inv, ts):
    from numba import njit

    from bregclust import _kernels as K

    g = K.make_inverse(njit(f), code)
    for t in ts:
        assert g(t) == pytest.approx(inv(t), rel=1e-12, abs=1e-300)


def test_generic_pairwise_boundary_conventions():
    from bregclust import _kernels as K
    from bregclust._kernels import generators as KG

    NOFN = KG.placeholder()

    out = np.empty((2, 2))
    X = np.array([[0.0, 1.0], [1.0, 0.0]])
    U = np.array([[0.0, 1.0], [0.5, 0.5]])
    K.generic_pairwise(KG.KL, NOFN, NOFN, X, U, out)
    assert out[0, 0] == 0.0 and np.isinf(out[1, 0])
    assert out[0, 1] == pytest.approx(0.5 + math.log(2.0) - 0.5)


def _l1_definition(X, U):
    """``sum_l (0 if x_l u_l > 0 else 2 |x_l|)`` in numpy: signs compared (``1e-200 * 1e-200``
    underflows), the terms added left to right (``np.cumsum``), as the kernels add them."""
    X = np.asarray(X, dtype=np.float64)[:, None, :]
    same = ((X > 0) & (U > 0)) | ((X < 0) & (U < 0))
    return np.cumsum(np.where(same, 0.0, 2.0 * np.abs(X)), axis=2)[..., -1]


def test_l1_exact_kernel():
    from bregclust import _kernels as K

    X = np.array([[1.0, -2.0, 0.0], [-1.0, 3.0, 2.0], [1e-200, -1e-200, 3.0]])
    U = np.array([[1.0, 1.0, 1.0], [0.0, -1.0, -1.0], [1e-200, -1e-200, -1.0]])
    out = np.empty((3, 3))
    K.l1_pairwise_exact(X, U, out)
    assert out.tolist() == [[4.0, 2.0, 0.0], [2.0, 12.0, 12.0], [2e-200, 6.0, 6.0]]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_l1_kernels_equal_the_definition(dtype):
    """The ``prange`` kernel and the serial rows kernel (on a range of rows, the others left
    as they were) against the numpy definition, bit for bit: zeros, tiny values of one sign."""
    from bregclust._kernels import lloyd as KL

    rng = np.random.default_rng(5)
    X = (rng.normal(size=(300, 11)) * (rng.random((300, 11)) < 0.7)).astype(dtype)
    X[:5, :3] = 1e-30
    U = rng.normal(size=(6, 11)) * (rng.random((6, 11)) < 0.8)
    U[:3, 0] = 1e-30
    want = _l1_definition(X, U)
    out = np.empty((300, 6))
    KL.l1_pairwise_exact(X, U, out)
    assert np.array_equal(out, want)
    out[:] = -1.0
    KL.l1_pairwise_rows(X, U, out, 7, 120)
    assert np.array_equal(out[7:120], want[7:120])
    assert (out[:7] == -1.0).all() and (out[120:] == -1.0).all()


# ---------------------------------------------------------------------------- agglomerative helpers
def test_selection_equals_numpy_partition():
    """The pruned driver's hand-written selection gives np.partition's k-th value (ties,
    infinities and NaN, which sorts last, included) on any range of the array."""
    from bregclust._kernels.linkage_pruned import _kth

    # the driver compiles it without a Python entry point (calling that from Python crashes):
    # the same source compiled again with one
    _kth = entry(_kth)
    rng = np.random.default_rng(0)
    pool = np.array([-np.inf, 0.0, 1.0, 2.5, 3.0, np.inf, np.nan])
    for trial in range(400):
        m = int(rng.integers(1, 30))
        a = rng.choice(pool, size=m) if trial % 2 else rng.normal(size=m).round(1)
        lo = int(rng.integers(0, m))
        hi = int(rng.integers(lo + 1, m + 1))
        k = int(rng.integers(0, hi - lo))
        ref = np.partition(a[lo:hi], k)[k]
        got = _kth(a, lo, hi, k, np.empty(m))
        assert got == ref or (np.isnan(ref) and np.isnan(got)), (a, lo, hi, k)


def test_merge_argsort_is_the_stable_sort():
    """The pruned driver's hand-written argsort is numpy's stable (merge) sort."""
    from bregclust._kernels.linkage_pruned import _argsort

    _argsort = entry(_argsort)  # as _kth above
    rng = np.random.default_rng(1)
    for m in (0, 1, 2, 5, 17, 64):
        v = rng.integers(0, 4, size=m).astype(float)  # many ties
        order = np.empty(m, dtype=np.int64)
        _argsort(v, m, order, np.empty(m, dtype=np.int64))
        np.testing.assert_array_equal(order, np.argsort(v, kind="mergesort"))


def _divide_by_zero_at(x, k):
    x[k] = 1.0 / (float(x[k]) - float(x[k]))


def _double_at(x, k):
    x[k] = 2.0 * x[k]


@njit(cache=True)
def _call_each(f, x):
    for k in range(x.shape[0]):
        f(x, np.int64(k))
    return x.shape[0]


def test_an_exception_inside_a_kernel_called_through_a_pointer_is_raised_after_the_call():
    """numba cannot propagate an exception out of a C callback (it reports it to
    ``sys.unraisablehook`` and the call returns): ``callback_errors`` raises it once the kernel
    that called the callback returns, and the hook is restored."""
    import sys
    import threading

    from bregclust._kernels import generators as KG

    f = KG.compiled_pointer(_divide_by_zero_at, types.void(types.float64[::1], types.int64))
    assert KG.compiled_pointer(_divide_by_zero_at,
                               types.void(types.float64[::1], types.int64)) is f
    hook = sys.unraisablehook
    with pytest.raises(ZeroDivisionError, match="division by zero") as info:
        with KG.callback_errors():
            with KG.callback_errors():  # nested (a custom generator inside a driver call)
                _call_each(f, np.ones(3))
    assert sys.unraisablehook is hook
    with KG.callback_errors():  # nothing left over from the failed call
        _call_each(KG.compiled_pointer(_double_at, types.void(types.float64[::1], types.int64)),
                   np.ones(3))
    assert sys.unraisablehook is hook

    def other_fit():
        with KG.callback_errors():
            _call_each(KG.compiled_pointer(_double_at, types.void(types.float64[::1],
                                                                  types.int64)), np.ones(2))

    with KG.callback_errors():  # a context closing in another thread keeps this one's hook
        worker = threading.Thread(target=other_fit)
        worker.start()
        worker.join()
        assert sys.unraisablehook is not hook
    assert sys.unraisablehook is hook
    if hasattr(info.value, "__notes__"):  # compiled: the context names where it came from
        assert "called through a function pointer" in info.value.__notes__[0]


_AFTER_COMPILE = r"""
import warnings
import numpy as np
import scipy.sparse as sp
from numba.core import event
compiled = []
class Listener(event.Listener):
    def on_start(self, e):
        d = e.data.get("dispatcher")
        compiled.append(d.py_func.__qualname__ if d is not None else "?")
    def on_end(self, e):
        pass
event.register("numba:compile", Listener())
from bregclust import AgglomerativeBregman, BregmanKMeans, MultitaskBregmanClustering
from bregclust.agglomerative import _builtin_models
warnings.simplefilter("ignore")
rng = np.random.default_rng(5)
X = rng.gamma(2.0, 1.0, size=(30, 3))
C = rng.poisson(1.0, size=(40, 30)).astype(float) * (rng.random((40, 30)) < 0.2)
C[:, 0] += 1
for name, params in _builtin_models():
    data = X - 2.0 if name == "l1_subgradient" else X
    AgglomerativeBregman(3, model=name, model_params=params).fit(data).transform(data[:2])
AgglomerativeBregman(3, model="multinomial").fit(sp.csr_matrix(C))
for name in ("sqeuclidean", "kl", "itakura_saito"):
    BregmanKMeans(3, divergence=name, random_state=0).fit(X)
MultitaskBregmanClustering(3, divergence="kl", random_state=0).fit([X, X[:20]])
print("COMPILED", compiled)
from bregclust._kernels import generators as KG
print("POINTERS", len(KG._POINTER_CACHE),
      "COMPILED", [f.__qualname__ for f in KG._POINTER_CACHE.values() if not f.cache_hits])
"""


@pytest.mark.slow
def test_compile_command_leaves_the_built_in_models_nothing_to_compile(tmp_path):
    """`bregclust compile` with an empty numba cache: a later process fits every built-in
    agglomerative model (dense and sparse), k-means and MBC without compiling any kernel."""
    import os
    import subprocess
    import sys

    import numba

    if numba.config.DISABLE_JIT:
        pytest.skip("nothing is compiled with NUMBA_DISABLE_JIT=1")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-m", "bregclust.cli", "compile"], env=env,
                         capture_output=True, text=True, check=True)
    assert "agglomerative clustering (sqeuclidean, mahalanobis, kl" in out.stdout
    assert "compiling the agglomerative engine" not in out.stderr  # the command says it itself
    later = subprocess.run([sys.executable, "-c", _AFTER_COMPILE], env=env, capture_output=True,
                           text=True, check=True)
    assert "COMPILED []" in later.stdout, later.stdout[-2000:]
    # the kernels called through function pointers (C callbacks) loaded from the cache too
    assert "COMPILED []" in later.stdout.split("POINTERS")[1], later.stdout[-2000:]
    assert "POINTERS 0 " not in later.stdout
    assert "compiling the agglomerative engine" not in later.stderr


def _lloyd_case(case, n, k, dtype=np.float64):
    """Rows (dense or CSR), ``phi_x``, ``GT``, ``c`` and weights (a quarter of them zero) of a
    squared Euclidean Lloyd pass."""
    rng = np.random.default_rng(n + 7 * k)
    X = rng.random((n, 9)).astype(dtype)
    X[X < 0.5] = 0.0
    U = rng.random((k, 9))
    w = rng.random(n) + 0.5
    w[rng.random(n) < 0.25] = 0.0
    phi_x = (X.astype(np.float64) ** 2).sum(axis=1)
    return (sp.csr_matrix(X) if case == "csr" else X), phi_x, np.ascontiguousarray(2.0 * U.T), \
        (U * U).sum(axis=1), w


def _prange_pass(X, phi_x, GT, c, w, T):
    """The fused Lloyd pass of main 2325843 with ``T`` threads: the ``prange`` kernel, then its
    ``T`` slices added in order (the oracle of the pool pass)."""
    from bregclust import _kernels as K
    from bregclust._execution import _LLOYD_CHUNK

    n, d = X.shape
    k = GT.shape[1]
    labels, mins = np.empty(n, dtype=np.int64), np.empty(n)
    S, W, O = np.zeros((T, k, d)), np.zeros((T, k)), np.zeros(T)
    if sp.issparse(X):
        K.lloyd_step_csr(X.data, X.indices, X.indptr, phi_x, GT, c, w, labels, mins, S, W, O)
    else:
        K.lloyd_step_dense(X, phi_x, GT.astype(X.dtype), c, w, _LLOYD_CHUNK, labels, mins, S,
                           W, O)
    obj = float(O[0])
    for t in range(1, T):
        S[0] += S[t]
        obj += float(O[t])
    return labels, mins, S[0], W.sum(axis=0), obj


@pytest.mark.parametrize("case,dtype", [("dense", np.float64), ("dense", np.float32),
                                        ("csr", np.float64), ("csr", np.float32)])
@pytest.mark.parametrize("n,k", [(1100, 7), (1100, 1), (3, 4)])
def test_pool_lloyd_pass_equals_the_prange_kernels(monkeypatch, case, dtype, n, k):
    """:func:`bregclust._execution.fused_pass` (serial block kernels on the thread pool) gives
    the labels, minima, sums, weights and objective of the ``prange`` kernels it replaced, bit
    for bit, for 1 and 2 threads; and the block kernels run in reverse order for ``T`` blocks
    (more blocks than rows when ``n = 3``) fill the ``prange`` kernel's ``T`` slices bit for
    bit."""
    import numba

    from bregclust import _execution as E
    from bregclust._kernels import lloyd as KL

    X, phi_x, GT, c, w = _lloyd_case(case, n, k, dtype)
    monkeypatch.setattr(E, "PARALLEL_MIN", 0)  # thread small problems too
    for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
        monkeypatch.setenv("BREGCLUST_NUM_THREADS", str(threads))
        T = max(1, min(threads, numba.get_num_threads(), n))
        got = E.fused_pass((X, phi_x), GT, c, w)
        ref = _prange_pass(X, phi_x, GT, c, w, T)
        for a, b in zip(got[:4], ref[:4]):
            assert a.dtype == b.dtype and np.array_equal(a, b)
        assert got[4] == ref[4]
        if case == "csr":  # the labels-only pass: Lloyd's labels and minima
            lab, mins = E.nearest_csr((X, phi_x), GT, c)
            assert np.array_equal(lab, ref[0]) and np.array_equal(mins, ref[1])
    for T in (3, 5):
        out = [(np.empty(n, dtype=np.int64), np.empty(n), np.zeros((T, k, 9)), np.zeros((T, k)),
                np.zeros(T)) for _ in range(2)]
        if case == "csr":
            KL.lloyd_step_csr(X.data, X.indices, X.indptr, phi_x, GT, c, w, *out[0])
            for t in reversed(range(T)):
                KL.lloyd_block_csr(X.data, X.indices, X.indptr, phi_x, GT, c, w, *out[1], t)
        else:
            G = GT.astype(dtype)
            KL.lloyd_step_dense(X, phi_x, G, c, w, 16, *out[0])
            for t in reversed(range(T)):
                KL.lloyd_block_dense(X, phi_x, G, c, w, 16, *out[1], t)
        for a, b in zip(*out):
            assert np.array_equal(a, b)


def _row_case(name, case, dtype, n):
    """Rows in the domain of ``name`` (a quarter zero except for Itakura-Saito; dense or CSR),
    centres inside it, labels and weights (a quarter zero)."""
    rng = np.random.default_rng(n)
    X = rng.gamma(2.0, 1.0, size=(n, 9))
    if name == "itakura_saito":
        X += 0.2
    else:
        X[rng.random(X.shape) < 0.25] = 0.0
        if name in ("sqeuclidean", "cosh"):
            X -= 1.0 * (X > 0)
    U = rng.gamma(2.0, 1.0, size=(4, 9)) + 0.1
    labels = rng.integers(0, 4, n)
    w = rng.random(n) + 0.5
    w[rng.random(n) < 0.25] = 0.0
    X = X.astype(dtype)
    return (sp.csr_matrix(X) if case == "csr" else X), U, labels, w


@pytest.mark.parametrize("case", ["dense", "csr"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [5, 1100])
def test_pool_row_kernels_equal_the_prange_kernels(monkeypatch, cosh_generator, case, dtype, n):
    """phi of the rows, a user generator's gradient at the centres and the exact divergence of
    each row to its centre, run by the forms as serial kernels per block of rows on the
    engine's pool, equal the ``prange`` kernels they replaced (``rowsum_par`` / ``rowsum_csr``,
    ``map_scalar_par``, ``generic_assigned``) bit for bit: sqeuclidean, kl, Itakura-Saito and a
    user generator (cosh), 1, 2, 3 and 7 workers (7 > n = 5 rows: one row per block), the
    blocks run in reverse order, weights with zeros."""
    from bregclust import _execution as E
    from bregclust import _kernels as K
    from bregclust import get_divergence
    from bregclust._kernels import generators as KG

    monkeypatch.setattr(E, "PARALLEL_MIN", 0)  # every array takes the pool
    forward = E.run_chunks

    def reverse(work, starts, blas=True):
        for s in reversed(list(starts)):
            work(s)

    for name in ("sqeuclidean", "kl", "itakura_saito", cosh_generator):
        div = get_divergence(name)
        g = div.form.gen
        X, U, labels, w = _row_case("cosh" if name == cosh_generator else name, case, dtype, n)
        Xd = X.toarray() if case == "csr" else X
        phi_ref = np.empty(n)
        if case == "csr":
            K.rowsum_csr(g.code, g.fn_phi, X.data, X.indptr, 9, phi_ref)
        else:
            K.rowsum_par(g.code, g.fn_phi, X, phi_ref)
        d_ref = np.empty(n)
        K.generic_assigned(g.code, g.fn_phi, g.fn_dphi, Xd, U, labels, w, d_ref)
        grad_ref = np.empty_like(U)
        K.map_scalar_par(g.code, KG.DPHI, g.fn_dphi, U, grad_ref)
        for threads, runner in [(1, forward), (2, forward), (3, forward), (7, forward),
                                (3, reverse)]:
            monkeypatch.setenv("BREGCLUST_NUM_THREADS", str(threads))
            monkeypatch.setattr(E, "run_chunks", runner)
            assert E.parallel(X.shape[0] * 9) is E.row_blocks
            phi = E.phi_rows(div, X)
            assert phi.dtype == np.float64 and np.array_equal(phi, phi_ref), (name, threads)
            d = E.exact_assigned(div, Xd, U, labels, w=w)
            assert np.array_equal(d, d_ref), (name, threads)
            if name == cosh_generator:  # the built-in gradients are numpy's
                assert np.array_equal(div.form.grad(U, E.parallel(U.size)), grad_ref)
        monkeypatch.setattr(E, "run_chunks", forward)
        # under serial() (a dask task's thread) one call on the calling thread: the same values
        with E.serial():
            assert E.parallel(X.shape[0] * 9) is False
            assert np.array_equal(E.phi_rows(div, X), phi_ref)


_NESTED_CHUNKS = r"""
import threading
from bregclust import _execution as E
seen, lock = [], threading.Lock()

def inner(s):
    with lock:
        seen.append((threading.current_thread().name, s))

E.run_chunks(lambda s: E.run_chunks(inner, [10 * s + 1, 10 * s + 2, 10 * s + 3]), range(4))
print("SEEN", seen)
"""


def test_run_chunks_inside_a_pool_worker_runs_there():
    """``run_chunks`` called from one of the pool's own workers runs its chunks on that worker,
    in order (waiting for chunks queued behind itself would never end), and the outer call
    still spreads its chunks over the pool. In a fresh process with a time limit: a deadlock
    would leave the pool's threads stuck for the rest of the session."""
    import ast
    import os
    import subprocess
    import sys

    env = dict(os.environ, BREGCLUST_NUM_THREADS="2")
    try:
        out = subprocess.run([sys.executable, "-c", _NESTED_CHUNKS], env=env, timeout=120,
                             capture_output=True, text=True, check=True).stdout
    except subprocess.TimeoutExpired:
        pytest.fail("run_chunks called inside a pool worker did not return")
    seen = ast.literal_eval(out.split("SEEN", 1)[1].strip())
    assert sorted(s for _, s in seen) == sorted(10 * s + j for s in range(4) for j in (1, 2, 3))
    by_outer = {}
    for thread, s in seen:
        by_outer.setdefault(s // 10, []).append((thread, s))
    for chunks in by_outer.values():  # each outer chunk's inner chunks: one thread, in order
        assert len({th for th, _ in chunks}) == 1
        assert [s for _, s in chunks] == sorted(s for _, s in chunks)
    assert all(th.startswith("bregclust") for th, _ in seen)  # the outer call used the pool


def test_a_user_generators_exception_in_a_pool_block_is_raised(monkeypatch):
    """A user's ``phi`` raising inside a serial kernel on one of the pool's workers (an
    exception numba cannot propagate through the kernel) is raised to the caller, as on the
    calling thread, and the next call without it runs."""
    from bregclust import _execution as E
    from bregclust import get_divergence, register_divergence, unregister_divergence

    def phi(x):
        if x > 50.0:
            raise ValueError("phi: x above 50")
        return math.cosh(x)

    register_divergence("tests_raising_cosh", phi=phi, dphi=lambda x: math.sinh(x),
                        overwrite=True)
    try:
        div = get_divergence("tests_raising_cosh")
        monkeypatch.setattr(E, "PARALLEL_MIN", 0)
        monkeypatch.setenv("BREGCLUST_NUM_THREADS", "2")
        X = np.linspace(-1.0, 1.0, 30).reshape(10, 3)
        X[7, 1] = 60.0  # in the second block
        with pytest.raises(ValueError, match="x above 50"):
            E.phi_rows(div, X)
        X[7, 1] = 0.5
        np.testing.assert_allclose(E.phi_rows(div, X), np.cosh(X).sum(axis=1), rtol=1e-14)
    finally:
        unregister_divergence("tests_raising_cosh")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [5, 1100])
def test_pool_l1_exact_values_equal_the_definition(monkeypatch, dtype, n):
    """l1_subgradient's exact per-row values (the final objective of a fit), run as the serial
    ``l1_pairwise_rows`` per block of rows on the engine's pool, equal the numpy definition
    (:func:`_l1_definition`) at each row's centre bit for bit (0 for rows of zero weight), and
    so does ``Divergence.generic_pairwise`` (the ``prange`` kernel): 1, 2, 3 and 7 workers, tiny
    values whose product underflows, exact zeros."""
    from bregclust import _execution as E
    from bregclust import get_divergence

    rng = np.random.default_rng(n)
    X = (rng.normal(size=(n, 9)) * (rng.random((n, 9)) < 0.8)).astype(dtype)
    X[0, :2] = 1e-30  # same sign as a tiny centre coordinate below: 0, not 2|x|
    U = rng.normal(size=(4, 9))
    U[:, 0] = 1e-30
    labels = rng.integers(0, 4, n)
    w = rng.random(n) + 0.5
    w[rng.random(n) < 0.25] = 0.0
    D = _l1_definition(X, U)
    ref = np.where(w > 0, D[np.arange(n), labels], 0.0)
    div = get_divergence("l1_subgradient")
    assert np.array_equal(div.generic_pairwise(X, U), D)
    monkeypatch.setattr(E, "PARALLEL_MIN", 0)
    for threads in (1, 2, 3, 7):
        monkeypatch.setenv("BREGCLUST_NUM_THREADS", str(threads))
        assert np.array_equal(E.exact_assigned(div, X, U, labels, w=w), ref), threads
