"""Property-based hostile-input suite: generated bad and extreme inputs.

Every public estimator and the public ``Divergence`` methods get NaN/inf, values near 1e+-300,
large offsets, int/bool/complex/object dtypes, sparse formats and bad label arrays. The
property: a clear ``ValueError``/``TypeError`` (a readable one-sentence message) or a correct,
finite result - never a crash or a silent non-finite answer.

Inputs that could crash the interpreter are tested beside the behaviour they guard, in a
subprocess (Ward on values near 1e300 in tests/test_agglomerative.py, non-CSR sparse matrices
and out-of-range labels in tests/test_divergences.py). Non-CSR sparse matrices and label arrays
go straight to the ``Divergence`` methods here (they are converted or refused at the public
boundary). The last section checks parameters and messages shared by several estimators.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import uniform_points
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bregclust import (
    AgglomerativeBregman,
    BisectingBregmanKMeans,
    BregmanKMeans,
    BregmanMixture,
    MiniBatchBregmanKMeans,
    ModelRelationClustering,
    MultitaskBregmanClustering,
    SharedSubspaceClustering,
    SharedSubspaceTransfer,
    SpectralKernelMTC,
    SymmetricNMF,
    bregman_linkage,
    dendrogram_purity,
    get_divergence,
    register_divergence,
)

FAST = settings(max_examples=15, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
LONG = settings(max_examples=200, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

SPECIAL = [np.nan, np.inf, -np.inf, 1e300, -1e300, 1e-300, 0.0, -0.0, 5e-324, 1e8]


@st.composite
def hostile_matrix(draw, max_abs=None, allow_sparse=True):
    n = draw(st.integers(1, 12))
    d = draw(st.integers(1, 4))
    base = np.random.RandomState(draw(st.integers(0, 2**16))).rand(n, d)
    scale = draw(st.sampled_from([1.0, 1e-300, 1e-8, 1e8, 1e150, 1e300]))
    offset = draw(st.sampled_from([0.0, 1e7, -1e7, 1e12]))
    X = base * scale + offset
    n_special = draw(st.integers(0, 2))
    for _ in range(n_special):
        X[draw(st.integers(0, n - 1)), draw(st.integers(0, d - 1))] = draw(st.sampled_from(SPECIAL))
    if max_abs is not None:
        X = np.where(np.abs(X) > max_abs, np.sign(X) * max_abs, X)
    kind = draw(st.sampled_from(["float", "int", "bool", "complex", "object", "f32", "list"]
                                + (["csr"] if allow_sparse else [])))
    with np.errstate(all="ignore"):
        if kind == "int":
            return np.nan_to_num(X, posinf=0, neginf=0).clip(-1e6, 1e6).astype(np.int64)
        if kind == "bool":
            return X > 0.5
        if kind == "complex":
            return X.astype(complex) + 1j
        if kind == "object":
            return X.astype(object)
        if kind == "f32":
            return X.astype(np.float32)
        if kind == "list":
            return X.tolist()
        if kind == "csr":
            return sp.csr_matrix(np.nan_to_num(X, nan=0.0))
    return X


def _clear_error(exc):
    msg = str(exc)
    assert isinstance(exc, (ValueError, TypeError)), repr(exc)
    assert msg and "Traceback" not in msg and len(msg) < 2000, msg
    assert "unsupported operand" not in msg and "object has no attribute" not in msg, msg


def _check(fit, result_ok):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = fit()
        except (ValueError, TypeError) as exc:
            _clear_error(exc)
            return
    warned = any(issubclass(w.category, RuntimeWarning) for w in caught)
    result_ok(res, warned)


def _labels_ok(labels, n, k):
    labels = np.asarray(labels)
    assert labels.shape == (n,)
    assert labels.min() >= 0 and labels.max() < k


def _n(X):
    return X.shape[0] if hasattr(X, "shape") else len(X)


@FAST
@given(X=hostile_matrix(), div=st.sampled_from(["sqeuclidean", "kl", "itakura_saito",
                                                "l1_subgradient"]),
       k=st.integers(1, 3))
def test_bregman_kmeans_hostile(X, div, k):
    def ok(km, warned):
        _labels_ok(km.labels_, _n(X), k)
        assert np.isfinite(km.inertia_) or warned
    _check(lambda: BregmanKMeans(k, divergence=div, random_state=0).fit(X), ok)


CENTROID_DIVERGENCES = ["sqeuclidean", "kl", "itakura_saito", "l1_subgradient"]


def _centroid_estimator(name, div, k, X):
    """One of the estimators written on the k-means pass, at small settings for ``X``."""
    if name == "minibatch":
        return MiniBatchBregmanKMeans(k, divergence=div, batch_size=4, max_iter=5, n_init=1,
                                      random_state=0)
    if name == "bisecting":
        return BisectingBregmanKMeans(k, divergence=div, random_state=0)
    return BregmanMixture(k, divergence=div, max_iter=10, random_state=0)


@FAST
@given(X=hostile_matrix(), div=st.sampled_from(CENTROID_DIVERGENCES), k=st.integers(1, 3),
       name=st.sampled_from(["minibatch", "bisecting", "mixture"]))
def test_centroid_estimators_hostile(X, div, k, name):
    def ok(est, warned):
        _labels_ok(est.predict(X), _n(X), k)
        if name == "mixture":
            assert np.isfinite(est.lower_bound_) or warned
            proba = est.predict_proba(X)
            assert np.all(np.isfinite(proba)) and np.allclose(proba.sum(axis=1), 1.0)
        else:
            _labels_ok(est.labels_, _n(X), k)
            assert np.isfinite(est.inertia_) or warned
    _check(lambda: _centroid_estimator(name, div, k, X).fit(X), ok)


@FAST
@given(X=hostile_matrix(), X2=hostile_matrix(), div=st.sampled_from(CENTROID_DIVERGENCES),
       k=st.integers(1, 3))
def test_minibatch_partial_fit_hostile(X, X2, div, k):
    """A hostile second chunk is refused or absorbed; it never leaves non-finite centres."""
    def fit():
        est = MiniBatchBregmanKMeans(k, divergence=div, random_state=0)
        try:
            est.partial_fit(X)
        except (ValueError, TypeError) as exc:
            _clear_error(exc)
            return None
        before = est.cluster_centers_.copy()
        try:
            est.partial_fit(X2)
        except (ValueError, TypeError) as exc:
            _clear_error(exc)
            np.testing.assert_array_equal(est.cluster_centers_, before)
        return est

    def ok(est, warned):
        if est is not None:
            assert np.all(np.isfinite(est.cluster_centers_)) or warned
    _check(fit, ok)


@FAST
@given(X=hostile_matrix(max_abs=1e100),
       model=st.sampled_from(["sqeuclidean", "kl", "multinomial", "gaussian_diag"]),
       k=st.integers(1, 3))
def test_agglomerative_hostile(X, model, k):
    def ok(agg, warned):
        _labels_ok(agg.labels_, _n(X), k)
        assert len(np.unique(agg.labels_)) == min(k, _n(X))
    _check(lambda: AgglomerativeBregman(k, model=model).fit(X), ok)


@FAST
@given(X=hostile_matrix(), X2=hostile_matrix(), k=st.integers(1, 2))
def test_multitask_estimators_hostile(X, X2, k):
    for make in (lambda: MultitaskBregmanClustering(k, random_state=0),
                 lambda: ModelRelationClustering(k, random_state=0, max_iter=5),
                 lambda: SharedSubspaceClustering(k, n_components=1, random_state=0)):
        def ok(est, warned):
            for t, Xt in enumerate((X, X2)):
                _labels_ok(est.labels_[t], _n(Xt), k)
        _check(lambda: make().fit([X, X2]), ok)


@FAST
@given(X=hostile_matrix(), k=st.integers(1, 3))
def test_symmetric_nmf_hostile(X, k):
    def ok(est, warned):
        _labels_ok(est.labels_, _n(X), k)
    _check(lambda: SymmetricNMF(k, random_state=0, max_iter=20).fit(X), ok)


@FAST
@given(X=hostile_matrix(allow_sparse=True), U=hostile_matrix(allow_sparse=False),
       div=st.sampled_from(["sqeuclidean", "kl", "l1_subgradient"]))
def test_divergence_public_methods_hostile(X, U, div):
    d = get_divergence(div)
    Xa = X if sp.issparse(X) else np.asarray(X, dtype=object)
    Ua = np.asarray(U, dtype=object)
    if Xa.ndim != 2 or Ua.ndim != 2 or Xa.shape[1] != Ua.shape[1]:
        return
    # Validated input, as a caller validates with public tools: scikit-learn's check_array
    # (CSR, float64 or float32, finite), then the divergence's own domain check.
    from sklearn.utils import check_array

    def valid(A, side):
        A = check_array(A, accept_sparse="csr", dtype=[np.float64, np.float32])
        d.check_domain(A, name="X", side=side)
        return A

    def run():
        Xv = valid(X, "left")
        Uv = valid(U, "right")
        return Xv, Uv, d.pairwise(Xv, Uv), d.assign(Xv, Uv)

    def ok(res, warned):
        Xv, Uv, D, (lab, mins) = res
        exact = d.generic_pairwise(Xv, Uv)
        finite = np.isfinite(exact)
        assert D.shape == exact.shape
        assert (D >= 0).all() or not finite.all()
        assert lab.min() >= 0 and lab.max() < Uv.shape[0]
    _check(run, ok)


@st.composite
def any_sparse(draw):
    """A hostile matrix in any scipy sparse format (finite entries: NaN is tested apart)."""
    X = np.asarray(draw(hostile_matrix(allow_sparse=False)), dtype=object)
    with np.errstate(all="ignore"):
        try:
            X = np.nan_to_num(X.astype(np.float64), nan=0.0, posinf=1e300, neginf=-1e300)
        except TypeError:  # complex
            X = np.zeros(X.shape)
    fmt = draw(st.sampled_from(["csr", "csc", "coo", "lil", "dok", "bsr", "csr_array"]))
    return sp.csr_array(X) if fmt == "csr_array" else sp.csr_matrix(X).asformat(fmt)


@FAST
@given(X=st.one_of(hostile_matrix(allow_sparse=False), any_sparse()),
       U=hostile_matrix(allow_sparse=False),
       labels=st.lists(st.one_of(st.integers(-2, 4), st.floats(-1, 4)), min_size=1, max_size=13),
       k=st.integers(1, 3), div=st.sampled_from(["sqeuclidean", "kl", "l1_subgradient"]))
def test_divergence_public_methods_unvalidated_input(X, U, labels, k, div):
    """Every public Divergence method straight on hostile input (any sparse format, dtypes,
    extremes, label arrays): a clear error or a result equal to the definition."""
    d = get_divergence(div)

    def exact_ok(res, warned):
        D, (lab, mins), (lab2, mins2, S, W), phi = res
        exact = d.generic_pairwise(X, U)
        assert np.array_equal(np.isinf(D), np.isinf(exact))
        fin = np.isfinite(exact)
        assert np.allclose(D[fin], exact[fin], rtol=1e-6, atol=1e-6 * np.abs(exact[fin]).max(
            initial=0.0) + 1e-300)
        assert not np.isnan(D).any() and not np.isnan(mins).any()
        assert np.array_equal(lab, lab2)
        assert phi.shape == (D.shape[0],)

    _check(lambda: (d.pairwise(X, U), d.assign(X, U), d.assign_and_sum(X, U), d.phi_rows(X)),
           exact_ok)

    def sums_ok(res, warned):
        S, W = res
        assert S.shape[0] == W.shape[0] == k and W.sum() == pytest.approx(len(labels))
    Xd = X.toarray() if sp.issparse(X) else X
    rows = np.asarray(Xd, dtype=object)[: len(labels)] if np.ndim(Xd) == 2 else Xd
    _check(lambda: d.weighted_sums(rows, np.array(labels), k), sums_ok)


@FAST
@given(labels=st.lists(st.one_of(st.integers(-3, 5), st.floats(allow_nan=True)), min_size=1,
                       max_size=8), k=st.integers(1, 4))
def test_label_checks_hostile(labels, k):
    """Hostile label arrays through the public method that validates them: a clear error, or
    every label counted once in a cluster below ``k`` (a label let through out of range would
    raise an IndexError or lose its row)."""
    d = get_divergence("sqeuclidean")
    X = np.arange(len(labels), dtype=float)[:, None]

    def ok(res, warned):
        S, W = res
        assert S.shape == (k, 1) and W.shape == (k,)
        assert W.sum() == len(labels) and np.all(W >= 0) and np.all(W == np.round(W))
        assert S.sum() == pytest.approx(X.sum())
    _check(lambda: d.weighted_sums(X, np.array(labels), k), ok)


@pytest.mark.slow
@LONG
@given(X=hostile_matrix(), div=st.sampled_from(["sqeuclidean", "kl", "itakura_saito",
                                                "l1_subgradient", "mahalanobis"]),
       k=st.integers(1, 4), smoothing=st.sampled_from(["auto", 0.0, 1.0, 1e300]))
def test_bregman_kmeans_hostile_long(X, div, k, smoothing):
    shape = X.shape if sp.issparse(X) else np.asarray(X, dtype=object).shape
    params = ({"A": np.eye(shape[1] if len(shape) == 2 else 1)} if div == "mahalanobis"
              else None)

    def ok(km, warned):
        _labels_ok(km.labels_, _n(X), k)
        assert np.isfinite(km.inertia_) or warned
    _check(lambda: BregmanKMeans(k, divergence=div, divergence_params=params,
                                 smoothing=smoothing, random_state=0).fit(X), ok)


# -------------------------------------------- parameter checks and messages across estimators
def test_nan_parameters_are_refused():
    Xs = [uniform_points(), uniform_points(seed=1)]
    with pytest.raises(ValueError, match="lam must be a number, got NaN"):
        SharedSubspaceClustering(2, lam=float("nan")).fit(Xs)
    with pytest.raises(ValueError, match="tol must be a number"):
        BregmanKMeans(2, tol=float("nan")).fit(uniform_points())
    with pytest.raises(ValueError, match="distance_threshold must be a number"):
        AgglomerativeBregman(None, distance_threshold=float("nan")).fit(uniform_points())
    with pytest.raises(ValueError, match="tie_tol must be a number"):
        from bregclust.kernel_mtc import spectral_kernel_weights
        spectral_kernel_weights(np.arange(5.), np.ones(5), 1.0, 2.0, tie_tol=float("nan"))
    with pytest.raises(ValueError, match="eigen_tol must be a number"):
        SpectralKernelMTC(2, eigen_tol=float("nan")).fit(Xs)
    with pytest.raises(ValueError, match="b must be a number"):
        SpectralKernelMTC(2, b=float("nan")).fit(Xs)
    with pytest.raises(ValueError, match="C must be a number"):
        SpectralKernelMTC(2, C=float("nan")).fit(Xs)


def test_bad_parameters_fail_early():
    Xs = [uniform_points(), uniform_points(seed=1)]
    with pytest.raises(ValueError, match="b must be a number"):
        SpectralKernelMTC(2, b=float("nan")).fit(Xs)
    with pytest.raises(ValueError, match="use a smaller C"):
        SpectralKernelMTC(2, C=1e300).fit(Xs)
    with pytest.raises(ValueError, match="init_offset must be a number"):
        SharedSubspaceClustering(2, init_offset=float("nan")).fit(Xs)
    with pytest.raises(TypeError, match="init must be 'k-means\\+\\+', 'random' or an array"):
        BregmanKMeans(2, init=None).fit(uniform_points())
    with pytest.raises(TypeError, match="smoothing must be a string or a tuple"):
        AgglomerativeBregman(2, smoothing=1.0).fit(uniform_points())
    with pytest.raises(TypeError, match="model_params must be a dict"):
        AgglomerativeBregman(2, model_params="abc").fit(uniform_points())
    est = SpectralKernelMTC(2).fit(Xs)
    with pytest.raises(ValueError, match="task must be <= 1, got 5"):
        est.kernel_matrix(task=5)


def test_messages_name_the_actual_problem():
    Xs = [uniform_points(), uniform_points(seed=1)]
    with pytest.raises(TypeError, match="X is None; pass a 2-D array"):
        BregmanKMeans(2).fit(None)
    with pytest.raises(TypeError, match="init is one 2-D array but there are 2 tasks"):
        MultitaskBregmanClustering(2, init=uniform_points()[:2]).fit(Xs)
    for tasks in ({0: Xs[0], 1: Xs[1]}, "abc"):
        with pytest.raises(TypeError, match="Xs must be a list of 2-D arrays"):
            MultitaskBregmanClustering(2).fit(tasks)
    with pytest.raises(TypeError, match="n_clusters must be an integer, got '2'"):
        BregmanKMeans("2").fit(uniform_points())
    with pytest.raises(TypeError, match="aliases must be a sequence of strings"):
        register_divergence("bad_aliases", phi=lambda x: x * x, dphi=lambda x: 2 * x, aliases=None)


def test_parameters_are_never_silently_accepted():
    Xs = [uniform_points(), uniform_points(seed=1)]
    with pytest.raises(ValueError, match="tol must be a number"):
        MultitaskBregmanClustering(2, tol=float("nan")).fit(Xs)
    with pytest.raises(ValueError, match="distance_threshold must be a number"):
        AgglomerativeBregman(None, distance_threshold=float("nan")).fit(uniform_points())
    with pytest.raises(ValueError, match="verbose must be >= 0"):
        BregmanKMeans(2, verbose=-1).fit(uniform_points())
    with pytest.raises(ValueError, match="verbose must be >= 0"):
        ModelRelationClustering(2, verbose=-1).fit(Xs)
    with pytest.raises(TypeError, match="n_clusters for task 1 must be an integer, got 2.0"):
        MultitaskBregmanClustering([2, 2.0]).fit(Xs)
    y = np.r_[np.repeat([0.0, 1.0], 9), np.nan, np.nan]
    with pytest.raises(ValueError, match="y has a missing label"):
        SharedSubspaceTransfer(n_components=2).fit(np.vstack([uniform_points(), uniform_points(seed=1)]),
                                                   np.r_[y, np.full(20, -1.0)])
    with pytest.raises(ValueError, match="y has a missing label"):
        dendrogram_purity(bregman_linkage(uniform_points()), np.r_[np.zeros(19), np.nan])


def test_domain_advice_only_where_the_parameter_exists():
    from bregclust import DomainError, partition_emd
    with pytest.raises(DomainError, match="needs positive centres") as e:
        partition_emd([[1.0]], [1], [[0.0]], [1], "kl")
    assert "smoothing" not in str(e.value)
    with pytest.raises(DomainError, match="Move the initial centres inside the domain"):
        BregmanKMeans(1, divergence="kl", init=[[0.0, 1.0, 1.0]]).fit(uniform_points())


# ----------------------------------------------------------------------------- issue 45
def _nan_gradient_divergence(name, cut):
    """A user generator whose ``dphi`` is NaN from ``cut`` on (outside the registration
    probe points, so registering it succeeds)."""
    import math

    def dphi(x):
        return 2.0 * x if x < cut else math.nan

    return register_divergence(name, phi=lambda x: x * x, dphi=dphi, dphi_inv=lambda t: 0.5 * t,
                               overwrite=True)


ESTIMATORS_EVALUATING_DPHI = [
    lambda div, Z: BregmanKMeans(2, divergence=div, init=Z[[0, -1]]),
    lambda div, Z: BregmanKMeans(2, divergence=div, init=Z[[0, 6]]),  # the NaN comes later
    lambda div, Z: MiniBatchBregmanKMeans(2, divergence=div, init=Z[[0, 6]], batch_size=4,
                                          random_state=0),
    lambda div, Z: MiniBatchBregmanKMeans(2, divergence=div, init=Z[[0, -1]], random_state=0),
    lambda div, Z: BisectingBregmanKMeans(2, divergence=div, random_state=0),
    lambda div, Z: BregmanMixture(2, divergence=div, random_state=0),
    lambda div, Z: MultitaskBregmanClustering(2, divergence=div, random_state=0),
]


@pytest.mark.parametrize("make", ESTIMATORS_EVALUATING_DPHI)
def test_nan_from_a_users_dphi_is_named_by_every_estimator(make):
    div = _nan_gradient_divergence("u_dnan45", 21.5)
    Z = np.r_[np.linspace(-1, 1, 6), np.linspace(21, 23, 6)].reshape(-1, 1)
    est = make(div.name, Z)
    X = [Z, Z.copy()] if isinstance(est, MultitaskBregmanClustering) else Z
    with pytest.raises(ValueError, match=r"dphi of divergence 'u_dnan45' returned NaN at x = 2"):
        est.fit(X)


@FAST
@given(cut=st.floats(3.0, 60.0), seed=st.integers(0, 2**16), k=st.integers(1, 3))
def test_property_nan_gradients_from_user_code_are_refused_or_never_reached(cut, seed, k):
    """Data on both sides of the point where the user's ``dphi`` turns NaN: a fit either
    names the NaN or ends with every centre where ``dphi`` is finite and a finite inertia."""
    div = _nan_gradient_divergence("u_dnan45p", cut)
    rng = np.random.RandomState(seed)
    X = np.r_[rng.uniform(-1, 1, 8), rng.uniform(cut - 2, cut + 2, 8)].reshape(-1, 2)
    for est in (BregmanKMeans(k, divergence=div.name, random_state=0, n_init=1),
                MiniBatchBregmanKMeans(k, divergence=div.name, random_state=0, n_init=1),
                BregmanMixture(k, divergence=div.name, random_state=0, n_init=1)):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(X)
        except ValueError as exc:
            assert "dphi of divergence 'u_dnan45p' returned NaN" in str(exc)
            continue
        centres = est.cluster_centers_ if hasattr(est, "cluster_centers_") else est.means_
        assert (centres < cut).all()
        if hasattr(est, "inertia_"):
            assert np.isfinite(est.inertia_)


@st.composite
def _row_chunks(draw, n):
    """Row chunk sizes summing to ``n``, often with empty chunks (first, inside, last)."""
    sizes = []
    left = n
    while left:
        s = draw(st.sampled_from([0, 0, 1, 3, 7, 20, 60]))
        sizes.append(min(s, left))
        left -= sizes[-1]
        if len(sizes) > 12:
            sizes.append(left)
            left = 0
    if draw(st.booleans()):
        sizes.insert(0, 0)
    return tuple(sizes)


@FAST
@given(data=st.data(), seed=st.integers(0, 2**16), dtype=st.sampled_from([np.float32, np.float64]),
       spread=st.sampled_from([1.0, 0.1, 0.01]), offset=st.sampled_from([0.0, 10.0, 300.0]))
def test_property_float32_dask_reductions_and_empty_first_chunks(data, seed, dtype, spread, offset):
    """A dask fit over any row chunking (empty first, inner or last chunks) equals the
    in-memory fit from the same centres: labels, and an inertia_ within 1e-10 (float32 data
    too: the chunked objective is summed in float64 by the definition)."""
    da = pytest.importorskip("dask.array")
    from bregclust import MultitaskBregmanClustering
    rng = np.random.RandomState(seed)
    means = rng.uniform(-3, 3, (3, 2)) + offset
    X = (means[rng.randint(0, 3, 60)] + spread * rng.randn(60, 2)).astype(dtype)
    chunks = data.draw(_row_chunks(60))
    dX = da.from_array(X, chunks=(chunks, (2,)))
    init = X[[0, 1, 2]].astype(np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = BregmanKMeans(3, init=init, max_iter=20).fit(X)
        b = BregmanKMeans(3, init=init, max_iter=20).fit(dX)
        ma = MultitaskBregmanClustering(3, init=[init, init], max_iter=5).fit([X, X])
        mb = MultitaskBregmanClustering(3, init=[init, init], max_iter=5).fit([dX, dX])
    np.testing.assert_array_equal(b.labels_.compute(), a.labels_)
    np.testing.assert_allclose(b.inertia_, a.inertia_, rtol=1e-10, atol=1e-300)
    for u, v in zip(ma.labels_, mb.labels_):
        np.testing.assert_array_equal(np.asarray(v), u)


def _every_fitted_estimator():
    """One fitted instance of every public estimator (single- and multi-task)."""
    from bregclust import (
        LNKMTC,
        LSKMTC,
        LSSMTC,
        NonparametricKernelMTC,
    )
    X = uniform_points()
    Xs = [uniform_points(), uniform_points(seed=1)]
    y = np.r_[np.zeros(10), np.ones(10)]
    single = [BregmanKMeans(2, random_state=0), BregmanMixture(2, random_state=0),
              MiniBatchBregmanKMeans(2, random_state=0, batch_size=8),
              BisectingBregmanKMeans(3, random_state=0), AgglomerativeBregman(2)]
    multi = [MultitaskBregmanClustering(2, random_state=0), LSSMTC(2, random_state=0),
             SharedSubspaceClustering(2, random_state=0), ModelRelationClustering(2, random_state=0),
             LNKMTC(2, random_state=0), LSKMTC(2, random_state=0),
             NonparametricKernelMTC(2, n_neighbors=4, random_state=0),
             SpectralKernelMTC(2, random_state=0)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for est in single:
            yield est.fit(X)
        for est in multi:
            yield est.fit(Xs)
        yield SymmetricNMF(2, random_state=0).fit(np.abs(np.corrcoef(X)))
        yield SharedSubspaceTransfer(n_components=2).fit(np.vstack(Xs), np.r_[y, np.full(20, -1.0)])


def test_every_fitted_estimator_pickles_with_every_protocol():
    import pickle
    for est in _every_fitted_estimator():
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            again = pickle.loads(pickle.dumps(est, protocol=protocol))
            assert type(again) is type(est)
            for key in ("labels_", "cluster_centers_", "means_"):
                if hasattr(est, key):
                    a, b = getattr(est, key), getattr(again, key)
                    if isinstance(a, list):
                        for u, v in zip(a, b):
                            np.testing.assert_array_equal(v, u)
                    else:
                        np.testing.assert_array_equal(b, a)
            if isinstance(est, BisectingBregmanKMeans):  # the tree itself came back
                np.testing.assert_array_equal(again.predict(uniform_points(seed=3)),
                                              est.predict(uniform_points(seed=3)))


@pytest.mark.parametrize("scale", [1e200, 1e300, 1e-300])
def test_tasks_too_far_apart_for_one_scale_are_refused(scale):
    """One task of extreme magnitude among normal ones: the multi-task objectives compare
    the tasks in one unit, so the small task's divergences would fall below float64's range
    (a degenerate partition and an infinite objective without a word): a ValueError naming
    both tasks. Tasks that fit in one scale are still fitted."""
    from bregclust import LSSMTC
    rng = np.random.RandomState(0)
    Xs = [rng.randn(30, 3) + 4 * np.eye(3)[rng.randint(0, 2, 30)] for _ in range(3)]
    Zs = [Xs[0] * scale, Xs[1], Xs[2]]
    for est in (MultitaskBregmanClustering(2, lam=0.5, random_state=0), LSSMTC(2, random_state=0)):
        with pytest.raises(ValueError, match=r"task \d \(largest \|x\| .*\) and task \d .* too far "
                                             r"apart for one common scale"):
            est.fit(Zs)
    for est in (MultitaskBregmanClustering(2, lam=0.5, random_state=0), LSSMTC(2, random_state=0)):
        est.fit([Xs[0] * 1e100, Xs[1], Xs[2]])  # 2^332 apart: representable


def test_multitask_objective_overflow_is_said():
    Xs = [uniform_points() * 1e200, uniform_points(seed=1) * 1e200]
    with pytest.warns(RuntimeWarning, match="objective_ overflowed to inf"):
        est = MultitaskBregmanClustering(2, lam=0.5, random_state=0).fit(Xs)
    assert not np.isfinite(est.objective_)
    assert all(np.isfinite(c).all() for c in est.cluster_centers_)


@FAST
@given(seed=st.integers(0, 2**16), offset=st.sampled_from([0.0, 1e3, 1e4, -1e6]),
       spread=st.sampled_from([1.0, 1e-2, 1e-3]), d=st.integers(1, 3))
def test_property_tight_components_far_from_the_origin(seed, offset, spread, d):
    """A unit component at the origin and a tight one far from it: the mixture's
    log-densities are scipy's and its dispersions the components' variances, whatever the
    ratio of spread to distance (the GEMM form cancels there)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parent))
    from naive_mixture import log_likelihood

    rng = np.random.RandomState(seed)
    A = rng.randn(30, d)
    B = offset + 30.0 + spread * rng.randn(30, d)  # 30 unit sds apart: hard responsibilities
    X = np.vstack([A, B])
    means = np.array([A.mean(axis=0), B.mean(axis=0)])
    g = BregmanMixture(2, init={"means": means}, reg_dispersion=0.0, smoothing=0.0,
                       dispersion="component", max_iter=5, tol=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g.fit(X)
    np.testing.assert_allclose(g.dispersion_, [np.mean((A - means[0]) ** 2),
                                               np.mean((B - means[1]) ** 2)], rtol=1e-6)
    ref, _ = log_likelihood(X, "gaussian", g.weights_, g.means_, g.dispersion_)
    np.testing.assert_allclose(g.score_samples(X), ref, rtol=1e-9, atol=1e-7)


def _blobs_for_adaptive(n=1500, d=8, k=64, seed=0):
    """Positive, well separated blobs: ``k`` >= AUTO_MIN_CLUSTERS clusters of dense rows, so
    ``algorithm="auto"`` runs the adaptive (Lloyd, then yinyang) passes."""
    rng = np.random.default_rng(seed)
    centres = rng.gamma(4.0, 1.0, size=(k, d)) + 0.5
    X = centres[rng.integers(0, k, n)] * rng.gamma(40.0, 1.0 / 40.0, size=(n, d))
    return X


@pytest.mark.parametrize("div", ["sqeuclidean", "kl"])
def test_adaptive_auto_at_64_clusters_hostile(div):
    """At k >= 64 on dense rows ``algorithm="auto"`` reaches the adaptive passes (the hostile
    cases above run k <= 3, where "auto" is Lloyd): NaN and inf are named, the data scaled by
    1e300 and 1e-300 give Lloyd's labels with finite centres, float32 stays float32 with
    Lloyd's labels, and the input is never modified."""
    k = 64
    X = _blobs_for_adaptive(k=k)
    kw = dict(divergence=div, n_init=1, max_iter=30, random_state=0)

    for bad, word in ((np.nan, "NaN"), (np.inf, "infinity")):
        Xb = X.copy()
        Xb[5, 3] = bad
        with pytest.raises(ValueError, match=word) as info:
            BregmanKMeans(k, **kw).fit(Xb)
        assert "row 5" in str(info.value) and "column 3" in str(info.value)

    for scale in (1.0, 1e300, 1e-300):
        Xs = X * scale
        before = Xs.copy()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")  # an emptied cluster re-seeded: same in both fits
            auto = BregmanKMeans(k, algorithm="auto", **kw).fit(Xs)
            lloyd = BregmanKMeans(k, algorithm="lloyd", **kw).fit(Xs)
        assert auto.algorithm_ == "yinyang" and lloyd.algorithm_ == "lloyd"
        np.testing.assert_array_equal(auto.labels_, lloyd.labels_)
        assert np.isfinite(auto.cluster_centers_).all()
        # squared distances of values near 1e300 overflow: the objective says so, never in silence
        said = any("inertia_ overflowed to inf" in str(w.message) for w in caught)
        assert np.isfinite(auto.inertia_) or (said and auto.inertia_ == lloyd.inertia_)
        np.testing.assert_array_equal(Xs, before)
        if scale == 1.0:
            ref = auto.labels_
        else:  # the scale is conditioned away: the unscaled partition
            np.testing.assert_array_equal(auto.labels_, ref)

    X32 = X.astype(np.float32)
    before = X32.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        auto = BregmanKMeans(k, algorithm="auto", **kw).fit(X32)
        lloyd = BregmanKMeans(k, algorithm="lloyd", **kw).fit(X32)
    assert auto.algorithm_ == "yinyang"
    assert auto.cluster_centers_.dtype == np.float32
    np.testing.assert_array_equal(auto.labels_, lloyd.labels_)
    np.testing.assert_array_equal(X32, before)
