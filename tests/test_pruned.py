"""Pruned Bregman k-means (``algorithm="hamerly"``, ``"yinyang"``, and the cached score columns
of ``"cached"`` on sparse rows): the same fit as Lloyd's passes.

Every pruned fit here runs with the debug mode of :mod:`bregclust._pruned` on: after each pass
it checks that the lower bound of every row is below its true second score, and that labels and
centre sums equal those of a full Lloyd pass from the same centres (the cached passes: labels,
minima, sums and objective). The fits are then compared
with ``algorithm="lloyd"``: labels, centres, iterations and inertia.
"""

import math
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bregclust._pruned as P
from bregclust import BregmanKMeans, register_divergence, unregister_divergence

CUSTOM = "test_pruned_cosh"
SPD = np.array([[2.0, 0.4, 0.0], [0.4, 1.0, 0.1], [0.0, 0.1, 0.5]])
DIVS = ["sqeuclidean", "mahalanobis", "kl", "itakura_saito", CUSTOM]


@pytest.fixture(scope="module", autouse=True)
def custom_generator():
    """A user generator phi(x) = cosh(x) (its own scalar functions, the CUSTOM kernels)."""
    register_divergence(CUSTOM, phi=lambda x: math.cosh(x), dphi=lambda x: math.sinh(x),
                        overwrite=True)
    yield
    unregister_divergence(CUSTOM)


@pytest.fixture(autouse=True)
def debug_bounds(monkeypatch):
    monkeypatch.setattr(P, "DEBUG", True)


def _data(div, rng, n, d, grid):
    """Rows in the divergence's domain; ``grid`` draws them from a few values (exact ties and
    duplicate rows)."""
    if grid:
        Z = rng.integers(0, 3, size=(n, d)).astype(float)
    else:
        Z = rng.gamma(2.0, 1.0, size=(n, d)) * rng.integers(1, 4, size=(n, 1))
    if div == "itakura_saito":
        Z = Z + 0.5
    elif div in ("sqeuclidean", "mahalanobis", CUSTOM):
        Z = Z - (1.0 if grid else 2.0)
    return Z


def _fit(alg, X, k, div, **kw):
    params = {"A": SPD[:X.shape[1], :X.shape[1]]} if div == "mahalanobis" else None
    sw = kw.pop("sw", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return BregmanKMeans(k, divergence=div, divergence_params=params, algorithm=alg,
                             **kw).fit(X, sample_weight=sw)


def _same(a, b, float32=False):
    """Same fit; the objective history agrees to the rounding of the minima (the pruned pass
    evaluates a skipped row's own score in float64, Lloyd's float32 product in float32)."""
    assert a.algorithm_ == "lloyd" and b.algorithm_ in ("hamerly", "yinyang", "cached")
    assert np.array_equal(a.labels_, b.labels_)
    assert np.array_equal(a.cluster_centers_, b.cluster_centers_)
    assert a.n_iter_ == b.n_iter_
    assert a.inertia_ == b.inertia_
    np.testing.assert_allclose(a.objective_history_, b.objective_history_,
                               rtol=1e-5 if float32 else 1e-12, atol=1e-300)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(div=st.sampled_from(DIVS), seed=st.integers(0, 2**31 - 1), n=st.integers(2, 90),
       d=st.integers(1, 3), k=st.integers(1, 12), grid=st.booleans(),
       weights=st.sampled_from(["none", "random", "zeros"]), dup_init=st.booleans(),
       smoothing=st.sampled_from([0.0, 0.5]), alg=st.sampled_from(["hamerly", "yinyang"]))
def test_pruned_equals_lloyd(div, seed, n, d, k, grid, weights, dup_init, smoothing, alg):
    rng = np.random.default_rng(seed)
    X = _data(div, rng, n, d, grid)
    k = min(k, n) if alg == "hamerly" else min(3 * k, n)  # yinyang: >= 10 centres, groups
    sw = None
    if weights == "random":
        sw = rng.uniform(0.1, 3.0, n)
    elif weights == "zeros":
        sw = rng.integers(0, 3, n).astype(float)
        sw[0] = 1.0
    idx = rng.choice(n, k, replace=False)
    if dup_init and k > 1:
        idx[-1] = idx[0]  # two identical centres: ties and an empty cluster
    init = X[idx]
    if div == "kl":
        init = init + 0.25
    if div == "kl" and smoothing == 0.0:
        X = X + 0.1  # no zero counts without smoothing (centres stay inside the domain)
    kw = dict(init=init, max_iter=60, tol=0.0, smoothing=smoothing, sw=sw)
    _same(_fit("lloyd", X, k, div, **dict(kw)), _fit(alg, X, k, div, **dict(kw)))


@pytest.mark.parametrize("alg", ["hamerly", "yinyang", "cached"])
@pytest.mark.parametrize("div", DIVS)
@pytest.mark.parametrize("form", ["float64", "float32", "csr"])
def test_pruned_equals_lloyd_many_clusters(div, form, alg):
    """Many clusters (many skipped rows), default tol, k-means++ and n_init restarts."""
    if form == "csr" and div in ("itakura_saito", "mahalanobis", CUSTOM):
        pytest.skip("CSR rows: divergences with 0 in the domain and separable generators")
    if alg == "cached" and form != "csr":
        pytest.skip("cached score columns: sparse rows only (test_cached_refuses_dense_rows)")
    rng = np.random.default_rng(3)
    X = rng.uniform(0.5, 6.0, size=(1500, 3)) * rng.integers(1, 3, size=(1500, 1))
    if div in ("kl", "itakura_saito"):
        X = np.abs(X) + (0.05 if div == "itakura_saito" else 0.0)
    if form == "csr":
        X[rng.random(X.shape) < 0.4] = 0.0
        X = sp.csr_matrix(X)
    elif form == "float32":
        X = X.astype(np.float32)
    kw = dict(init="k-means++", n_init=2, random_state=0, max_iter=100)
    a, b = _fit("lloyd", X, 40, div, **dict(kw)), _fit(alg, X, 40, div, **dict(kw))
    _same(a, b, float32=form == "float32")
    assert b.cluster_centers_.dtype == X.dtype
    frac = b.n_skipped_ / (X.shape[0] * 40)
    assert b.n_skipped_.shape == (b.n_iter_ + 1,)
    assert frac[0] == 0 and frac[-1] > 0.2  # the bounds prune once the centres settle
    assert not a.n_skipped_.any()


def test_debug_mode_catches_a_broken_bound(monkeypatch):
    """The debug check can fail: bounds raised by a constant are caught on the next pass."""
    real = P.PrunedPasses._shifts

    def broken(self, old, new):
        m, s2, sinf, U0, ref = real(self, old, new)
        return m + 1e3, s2, sinf, U0, ref

    monkeypatch.setattr(P.PrunedPasses, "_shifts", broken)
    X = np.random.default_rng(0).normal(size=(300, 2))
    for alg in ("hamerly", "yinyang"):
        with pytest.raises(AssertionError, match="bound"):
            _fit(alg, X, 20, "sqeuclidean", init=X[:20], max_iter=20)


def test_auto_chooses_by_k_and_source():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(700, 2))
    small = _fit("auto", X, 5, "sqeuclidean", random_state=0)
    large = _fit("auto", X, P.AUTO_MIN_CLUSTERS, "sqeuclidean", random_state=0)
    l1 = _fit("auto", X, P.AUTO_MIN_CLUSTERS, "l1_subgradient", random_state=0)
    assert (small.algorithm_, large.algorithm_, l1.algorithm_) == ("lloyd", "yinyang", "lloyd")
    sparse = _fit("auto", sp.csr_matrix(X), P.AUTO_CACHED_MIN_CLUSTERS, "sqeuclidean",
                  random_state=0)
    assert sparse.algorithm_ == "cached"
    few = _fit("auto", sp.csr_matrix(X), P.AUTO_CACHED_MIN_CLUSTERS - 1, "sqeuclidean",
               random_state=0)
    assert few.algorithm_ == "lloyd"
    forced = _fit("hamerly", X, 5, "l1_subgradient", random_state=0)
    assert forced.algorithm_ == "lloyd"  # no GEMM form to bound: Lloyd's passes
    assert BregmanKMeans().get_params()["algorithm"] == "auto"


def test_dask_runs_lloyd():
    da = pytest.importorskip("dask.array")
    X = np.random.default_rng(0).normal(size=(400, 2))
    km = _fit("hamerly", da.from_array(X, chunks=100), 70, "sqeuclidean", random_state=0,
              max_iter=5)
    assert km.algorithm_ == "lloyd" and not km.n_skipped_.any()


@pytest.mark.parametrize("bad", ["elkan", None, 3])
def test_bad_algorithm(bad):
    X = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises(ValueError, match="algorithm must be one of"):
        BregmanKMeans(2, algorithm=bad).fit(X)


def test_pruned_model_pickles_and_input_untouched():
    X = np.random.default_rng(1).normal(size=(500, 3))
    X0 = X.copy()
    km = _fit("yinyang", X, 70, "sqeuclidean", random_state=0)
    assert np.array_equal(X, X0)
    again = pickle.loads(pickle.dumps(km))
    assert np.array_equal(again.predict(X), km.labels_)
    assert np.array_equal(again.n_skipped_, km.n_skipped_)


def test_verbose_bar_shows_skipped(capsys):
    X = np.random.default_rng(2).normal(size=(400, 2))
    _fit("hamerly", X, 20, "sqeuclidean", init=X[:20], verbose=2, max_iter=30)
    assert "skipped" in capsys.readouterr().err


@pytest.mark.parametrize("n", [257, 30722])
@pytest.mark.parametrize("form", ["dense", "float32", "csr"])
def test_pruned_threads_and_one_row_products(n, form):
    """Rows in blocks whose last BLAS call has one row (257 rows in one block; 30,722 rows over
    two threads when numba has them: 15,361 = 60 x 256 + 1 per block), where Lloyd's product
    takes gemv: the pruned pass must reproduce it. Large enough for the threaded kernels."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(n, 10)) + rng.integers(0, 5, size=(n, 1))
    div = "sqeuclidean"
    if form == "float32":
        X = X.astype(np.float32)
    elif form == "csr":
        X = sp.csr_matrix(np.where(rng.random((n, 10)) < 0.5, 0.0, np.abs(X)))
        div = "kl"
    init = (X[:70].toarray() + 0.01) if sp.issparse(X) else X[:70]
    kw = dict(init=init, max_iter=8, tol=0.0)
    a = _fit("lloyd", X, 70, div, **dict(kw))
    for alg in ("hamerly", "yinyang") + (("cached",) if form == "csr" else ()):
        _same(a, _fit(alg, X, 70, div, **dict(kw)), float32=form == "float32")


# ------------------------------------------------------------------ cached score columns (CSR)
CSR_DIVS = ["sqeuclidean", "kl"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(div=st.sampled_from(CSR_DIVS), seed=st.integers(0, 2**31 - 1), n=st.integers(2, 90),
       d=st.integers(1, 6), k=st.integers(1, 30), grid=st.booleans(),
       weights=st.sampled_from(["none", "random", "zeros"]), dup_init=st.booleans(),
       smoothing=st.sampled_from([0.0, 0.5]), density=st.sampled_from([0.3, 0.7, 1.0]))
def test_cached_equals_lloyd(div, seed, n, d, k, grid, weights, dup_init, smoothing, density):
    """Sparse rows (ties, duplicate rows and centres, empty clusters, zero weights): the cached
    passes give Lloyd's labels, centres, iterations and objectives bit for bit."""
    rng = np.random.default_rng(seed)
    Z = _data(div, rng, n, d, grid)
    Z[rng.random(Z.shape) > density] = 0.0
    if div == "kl":
        Z = np.abs(Z)
        Z[:, 0] += 0.5  # no empty row (a kl centre of zeros has no gradient)
    X = sp.csr_matrix(Z)
    k = min(k, n)
    sw = None
    if weights == "random":
        sw = rng.uniform(0.1, 3.0, n)
    elif weights == "zeros":
        sw = rng.integers(0, 3, n).astype(float)
        sw[0] = 1.0
    idx = rng.choice(n, k, replace=False)
    if dup_init and k > 1:
        idx[-1] = idx[0]
    init = Z[idx] + (0.25 if div == "kl" else 0.0)
    if div == "kl" and smoothing == 0.0:
        init = init + 0.1
    kw = dict(init=init, max_iter=60, tol=0.0, smoothing=smoothing, sw=sw)
    a, b = _fit("lloyd", X, k, div, **dict(kw)), _fit("cached", X, k, div, **dict(kw))
    _same(a, b)
    np.testing.assert_array_equal(a.objective_history_, b.objective_history_)  # NaN == NaN


def test_cached_skips_the_columns_of_centres_that_stay():
    """Once few centres move, most products come from the cache (and the counts say so)."""
    rng = np.random.default_rng(4)
    Z = rng.gamma(1.0, 1.0, size=(2000, 30)) * (rng.random((2000, 30)) < 0.3)
    Z[:, 0] += 0.1
    X = sp.csr_matrix(Z)
    b = _fit("cached", X, 60, "kl", init=Z[:60] + 0.1, max_iter=100)
    frac = b.n_skipped_ / (2000 * 60)
    assert b.n_skipped_.shape == (b.n_iter_ + 1,)
    assert frac[0] == 0 and frac[-1] > 0.5 and (frac <= 1).all()


def test_cached_debug_mode_catches_a_stale_cache(monkeypatch):
    """The debug check can fail: treating every centre as unmoved after the first pass (stale
    products) is caught."""
    real = P.KP.cached_step_csr_serial

    def stale(data, indices, indptr, phi_x, GTm, moved, *rest):
        if moved.shape[0] < GTm.shape[1] or not stale.first:
            moved, GTm = moved[:0], GTm[:, :0]
        stale.first = False
        return real(data, indices, indptr, phi_x, GTm, moved, *rest)

    stale.first = True
    monkeypatch.setattr(P.KP, "cached_step_csr_serial", stale)
    monkeypatch.setattr(P.KP, "cached_step_csr", stale)
    Z = np.abs(np.random.default_rng(0).normal(size=(300, 4)))
    with pytest.raises(AssertionError, match="cached"):
        _fit("cached", sp.csr_matrix(Z), 20, "kl", init=Z[:20] + 0.1, max_iter=20)


def test_cached_refuses_dense_rows():
    X = np.random.default_rng(0).normal(size=(50, 2))
    with pytest.raises(ValueError, match="algorithm='cached'.*sparse"):
        BregmanKMeans(5, algorithm="cached").fit(X)


@pytest.mark.parametrize("div", DIVS + ["cosine"])
def test_smoothing_term_from_prepared_centres_is_pairwise(div):
    """The Lloyd loop's smoothing term from the prepared centres (no second gradient of the
    centres) is the value of ``pairwise(z, centres)`` bit for bit."""
    from bregclust import _centroid, _execution, get_divergence
    rng = np.random.default_rng(7)
    d = 3
    U = rng.gamma(2.0, 1.0, size=(40, d)) + (0.1 if div in ("kl", "itakura_saito") else -2.0)
    z = rng.gamma(2.0, 1.0, size=d) + 0.1
    dv = get_divergence(div, **({"A": SPD} if div == "mahalanobis" else {}))
    pc = _execution.prepare_centres(dv, U)
    fast = _centroid.smoothed_objective(1.25, U, dv, 0.7, z, pc)
    ref = _centroid.smoothed_objective(1.25, U, dv, 0.7, z)
    assert fast == ref
    if div in ("kl", "sqeuclidean", "itakura_saito", CUSTOM):
        assert _centroid._smoothing_terms(dv, z, U, pc) is not None  # the fast path ran
