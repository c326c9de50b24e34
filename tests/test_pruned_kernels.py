"""The pruning kernels (bregclust/_kernels/pruned.py) against Lloyd's passes, through the public
estimator: Yinyang and Hamerly bounds on many clusters (dense, float32, CSR), the scores skipped
they report, the cached score columns that share Lloyd's row product, and what runs on dask.

Every pruned fit here runs with the debug mode of the pruned passes on (the ``debug_bounds``
fixture): after each pass the bound of every row and group is checked against the true scores,
and labels and centre sums against a full Lloyd pass from the same centres. The fits are then
compared with ``algorithm="lloyd"`` from the same start: the same labels, centres, iterations
and inertia, the objective history to the rounding of a skipped row's own score.
"""

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bregclust import BregmanKMeans, register_divergence, unregister_divergence

CUSTOM = "test_pruned_kernels_cosh"
SPD = np.array([[2.0, 0.4, 0.0, 0.1], [0.4, 1.0, 0.1, 0.0], [0.0, 0.1, 0.5, 0.0],
                [0.1, 0.0, 0.0, 1.5]])
DIVS = ["sqeuclidean", "mahalanobis", "kl", "itakura_saito", CUSTOM]


@pytest.fixture(scope="module", autouse=True)
def custom_generator():
    """A user generator phi(x) = cosh(x)."""
    register_divergence(CUSTOM, phi=lambda x: math.cosh(x), dphi=lambda x: math.sinh(x),
                        overwrite=True)
    yield
    unregister_divergence(CUSTOM)


@pytest.fixture(autouse=True)
def debug_bounds(monkeypatch):
    """The bounds of every row checked against the true scores after every pruned pass."""
    import bregclust._pruned as P
    monkeypatch.setattr(P, "DEBUG", True)


def _domain(div, Z):
    if div in ("kl", "itakura_saito"):
        return np.abs(Z) + (0.5 if div == "itakura_saito" else 0.0)
    return Z


def _blobs(div, rng, n, d, k, grid=False):
    """``k`` overlapping blobs (the centres move for many passes, then settle); ``grid`` draws
    the rows from a few values (exact ties and duplicate rows)."""
    if grid:
        Z = rng.integers(0, 4, size=(n, d)).astype(float)
    else:
        C = rng.normal(scale=3.0, size=(k, d))
        Z = C[rng.integers(0, k, n)] + rng.normal(size=(n, d))
    if div == CUSTOM:
        Z = Z / 4.0
    return _domain(div, Z)


def _fit(alg, X, k, div, sw=None, **kw):
    params = {"A": SPD[:X.shape[1], :X.shape[1]]} if div == "mahalanobis" else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return BregmanKMeans(k, divergence=div, divergence_params=params, algorithm=alg,
                             **kw).fit(X, sample_weight=sw)


def _same(a, b, float32=False):
    """Same fit. The objective history agrees to the rounding of the minima: a pruned row's
    score is evaluated in float64, Lloyd's float32 product rounds in float32 with the
    cancellation of the GEMM form (the terms are of the size of the first objective, the last
    one can be 1e-4 of it); the inertia is the exact objective of the same labels and
    centres."""
    assert a.algorithm_ == "lloyd" and b.algorithm_ != "lloyd"
    assert np.array_equal(a.labels_, b.labels_)
    assert np.array_equal(a.cluster_centers_, b.cluster_centers_)
    assert a.n_iter_ == b.n_iter_
    assert a.inertia_ == b.inertia_
    atol = 1e-4 * abs(a.objective_history_[0]) if float32 else 1e-300
    np.testing.assert_allclose(a.objective_history_, b.objective_history_,
                               rtol=1e-5 if float32 else 1e-12, atol=atol)


def _whole_rows(m, k):
    """Every pass skipped a multiple of ``k - 1`` scores: a row is skipped whole (its own score
    evaluated) or evaluated whole."""
    return not (m.n_skipped_ % (k - 1)).any()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(div=st.sampled_from(DIVS), seed=st.integers(0, 2**31 - 1), n=st.integers(150, 700),
       d=st.integers(1, 4), k=st.integers(20, 90), grid=st.booleans(),
       weights=st.sampled_from(["none", "random", "zeros"]), dup_init=st.booleans(),
       smoothing=st.sampled_from([0.0, 0.5]), float32=st.booleans())
def test_yinyang_many_clusters_equals_lloyd(div, seed, n, d, k, grid, weights, dup_init,
                                            smoothing, float32):
    """Random blobs or a grid (ties, duplicate rows), weights (zero weights too), duplicate
    initial centres (ties between centres, empty clusters and their re-seeding), smoothing,
    float32, 20 to 90 clusters (2 to 9 groups): yinyang is Lloyd's fit."""
    rng = np.random.default_rng(seed)
    X = _blobs(div, rng, n, d, k, grid)
    sw = None
    if weights == "random":
        sw = rng.uniform(0.1, 3.0, n)
    elif weights == "zeros":
        sw = rng.integers(0, 3, n).astype(float)
        sw[0] = 1.0
    idx = rng.choice(n, k, replace=False)
    if dup_init:
        idx[-3:] = idx[0]
    init = X[idx]
    if div == "kl":
        init = init + 0.25
        if smoothing == 0.0:
            X = X + 0.1
    if float32:
        X, init = X.astype(np.float32), init.astype(np.float32)
    kw = dict(init=init, max_iter=40, tol=0.0, smoothing=smoothing, sw=sw)
    _same(_fit("lloyd", X, k, div, **kw), _fit("yinyang", X, k, div, **kw), float32)


@pytest.mark.parametrize("div", DIVS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_separated_blobs_prune_and_equal_lloyd(div, dtype):
    """Many clusters on well separated blobs: most scores are skipped once the centres settle,
    whole rows at a time, and the fit is Lloyd's."""
    rng = np.random.default_rng(7)
    k, n = 120, 6000
    C = rng.normal(scale=10.0, size=(k, 3))
    X = _domain(div, (C[rng.integers(0, k, n)] + rng.normal(scale=0.7, size=(n, 3)))
                / (4.0 if div == CUSTOM else 1.0)).astype(dtype)
    kw = dict(init=X[rng.choice(n, k, replace=False)], max_iter=30, tol=0.0)
    a, b = _fit("lloyd", X, k, div, **kw), _fit("yinyang", X, k, div, **kw)
    _same(a, b, dtype == np.float32)
    assert _whole_rows(b, k) and b.n_skipped_[-1] > n * (k - 1) // 2
    assert b.n_skipped_[0] == 0 and (b.n_skipped_ <= n * (k - 1)).all()
    assert b.cluster_centers_.dtype == dtype


def test_hamerly_and_sparse_rows_equal_lloyd():
    """One group (Hamerly) on dense rows, and every pruned algorithm on CSR rows: Lloyd's fits;
    the bounds skip whole rows."""
    rng = np.random.default_rng(8)
    k, n = 60, 3000
    X = _blobs("sqeuclidean", rng, n, 3, k)
    kw = dict(init=X[:k], max_iter=30, tol=0.0)
    a, b = _fit("lloyd", X, k, "sqeuclidean", **kw), _fit("hamerly", X, k, "sqeuclidean", **kw)
    _same(a, b)
    assert b.n_skipped_.any() and _whole_rows(b, k)
    Z = np.abs(X)
    Z[rng.random(Z.shape) < 0.3] = 0.0
    Z[:, 0] += 0.2
    S = sp.csr_matrix(Z)
    kw = dict(init=Z[:k] + 0.1, max_iter=30, tol=0.0)
    a = _fit("lloyd", S, k, "kl", **kw)
    for alg in ("hamerly", "yinyang", "cached"):
        b = _fit(alg, S, k, "kl", **kw)
        _same(a, b)
        if alg != "cached":
            assert _whole_rows(b, k)


@pytest.mark.parametrize("div", ["sqeuclidean", "kl"])
def test_cached_columns_are_lloyds_row_product(div):
    """The cached pass computes the moved columns with Lloyd's own row product: objectives,
    labels and centres bit for bit, on a fit where some centres stay and some move."""
    rng = np.random.default_rng(9)
    Z = rng.gamma(1.0, 1.0, size=(1500, 40)) * (rng.random((1500, 40)) < 0.25)
    Z[:, 0] += 0.1
    X = sp.csr_matrix(Z)
    kw = dict(init=Z[rng.choice(1500, 50, replace=False)] + 0.05, max_iter=40, tol=0.0,
              smoothing=0.5 if div == "kl" else 0.0)
    a, b = _fit("lloyd", X, 50, div, **kw), _fit("cached", X, 50, div, **kw)
    _same(a, b)
    np.testing.assert_array_equal(a.objective_history_, b.objective_history_)
    skipped = b.n_skipped_[1:] / (1500 * 50)
    assert (skipped > 0).any() and (skipped < 1).all()


def test_debug_mode_catches_a_broken_group_bound(monkeypatch):
    """The debug check can fail on many clusters and groups: group bounds raised by a constant
    (so rows are skipped wrongly) are caught."""
    import bregclust._pruned as P
    real = P.PrunedPasses._shifts

    def broken(self, old, new):
        m, s2, sinf, U0, ref = real(self, old, new)
        return m + 50.0, s2, sinf, U0, ref

    monkeypatch.setattr(P.PrunedPasses, "_shifts", broken)
    rng = np.random.default_rng(10)
    X = _blobs("sqeuclidean", rng, 2000, 3, 60)
    with pytest.raises(AssertionError, match="bound|differ"):
        _fit("yinyang", X, 60, "sqeuclidean", init=X[:60], max_iter=20)


def test_dask_runs_lloyd_with_the_same_fit():
    """Decision for dask: Lloyd's passes (bounds would have to live on the workers between
    passes); the fit equals the in-memory Lloyd fit and reports nothing skipped."""
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(11)
    X = _blobs("sqeuclidean", rng, 1200, 3, 70)
    kw = dict(init=X[:70], max_iter=15, tol=0.0)
    ref = _fit("lloyd", X, 70, "sqeuclidean", **kw)
    for alg in ("yinyang", "hamerly", "auto"):
        km = _fit(alg, da.from_array(X, chunks=300), 70, "sqeuclidean", **kw)
        assert km.algorithm_ == "lloyd" and not km.n_skipped_.any()
        assert np.array_equal(np.asarray(km.labels_), ref.labels_)
        np.testing.assert_allclose(km.cluster_centers_, ref.cluster_centers_, rtol=1e-12)

