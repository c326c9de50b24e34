"""BregmanMixture against its oracles: scikit-learn's spherical GaussianMixture, a slow dense EM
from the maths (tests/naive_mixture.py) and scipy.stats densities; EM's guarantees; every input
format; choosing the number of components."""

import pickle
import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from naive_mixture import component_logpdf, em, log_likelihood
from scipy.special import logsumexp
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import GaussianMixture

from bregclust import (
    BregmanKMeans,
    BregmanMixture,
    DomainError,
    EmptyClusterWarning,
    register_divergence,
    select_n_clusters,
    unregister_divergence,
)
from bregclust.divergences import get_divergence
from bregclust.mixture import gamma_shape


# ----------------------------------------------------------------------------- data
def gaussian_data(n=300, d=4, seed=0):
    rng = np.random.default_rng(seed)
    parts = [rng.normal(c, s, size=(n // 3, d)) for c, s in [(0.0, 1.0), (3.0, 0.5), (6.0, 2.0)]]
    return np.vstack(parts)


def count_data(n=120, d=8, seed=0, total=(20, 60)):
    """Documents of three topics: multinomial counts with lengths in ``total``."""
    rng = np.random.default_rng(seed)
    topics = rng.dirichlet(np.full(d, 0.5), size=3)
    y = rng.integers(0, 3, size=n)
    N = rng.integers(*total, size=n)
    X = np.array([rng.multinomial(m, topics[t]) for m, t in zip(N, y)], dtype=np.float64)
    return X, y


def poisson_data(n=150, d=5, seed=0):
    rng = np.random.default_rng(seed)
    rates = np.array([[1.0] * d, [6.0] * d, [15.0] * d]) * rng.uniform(0.7, 1.3, size=(3, d))
    y = rng.integers(0, 3, size=n)
    return rng.poisson(rates[y]).astype(np.float64), y


def gamma_data(n=150, d=4, seed=0):
    rng = np.random.default_rng(seed)
    means = np.array([[1.0] * d, [5.0] * d, [20.0] * d])
    shapes = np.array([3.0, 8.0, 2.0])
    y = rng.integers(0, 3, size=n)
    return rng.gamma(shapes[y][:, None], means[y] / shapes[y][:, None]), y


def _quiet(fn, *a, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fn(*a, **kw)


# ----------------------------------------------------------------------------- scikit-learn
@pytest.mark.nojit
@pytest.mark.parametrize("reg", [0.0, 1e-3])
def test_spherical_gaussian_matches_scikit_learn_from_the_same_start(reg):
    X = gaussian_data()
    rng = np.random.default_rng(1)
    U0 = X[rng.choice(len(X), 3, replace=False)]
    w0, v0 = np.array([0.2, 0.3, 0.5]), np.array([1.0, 2.0, 0.5])
    init = {"means": U0, "weights": w0, "dispersion": v0}
    unit = _quiet(BregmanMixture(3, init=init, reg_dispersion=1.0, max_iter=1).fit,
                  X).reg_dispersion_
    sk = _quiet(GaussianMixture(3, covariance_type="spherical", weights_init=w0, means_init=U0,
                                precisions_init=1 / v0, reg_covar=reg, max_iter=25, tol=0).fit, X)
    ours = _quiet(BregmanMixture(3, init=init, reg_dispersion=reg / unit, max_iter=25,
                                 tol=0).fit, X)
    assert ours.reg_dispersion_ == pytest.approx(reg, rel=1e-12)
    # scikit-learn keeps the whole history (lower_bounds_) from 1.7; before, only the last bound
    sk_bounds = getattr(sk, "lower_bounds_", [sk.lower_bound_])
    np.testing.assert_allclose(ours.lower_bounds_[-len(sk_bounds):], sk_bounds, rtol=1e-8)
    np.testing.assert_allclose(ours.predict_proba(X), sk.predict_proba(X), atol=1e-8)
    np.testing.assert_allclose(ours.means_, sk.means_, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(ours.dispersion_, sk.covariances_, rtol=1e-8)
    np.testing.assert_allclose(ours.weights_, sk.weights_, rtol=1e-8)
    np.testing.assert_allclose(ours.score_samples(X), sk.score_samples(X), rtol=1e-10)
    assert ours.bic(X) == pytest.approx(sk.bic(X), rel=1e-10)
    assert ours.aic(X) == pytest.approx(sk.aic(X), rel=1e-10)
    np.testing.assert_array_equal(ours.predict(X), sk.predict(X))


def test_gaussian_default_fit_agrees_with_scikit_learn_likelihood():
    X = gaussian_data(seed=3)
    ours = BregmanMixture(3, n_init=3, random_state=0).fit(X)
    sk = GaussianMixture(3, covariance_type="spherical", n_init=3, random_state=0).fit(X)
    assert ours.converged_
    assert ours.score(X) == pytest.approx(sk.score(X), abs=1e-3)


# ----------------------------------------------------------------------------- scipy densities
def _fitted(family, X, **kw):
    div = {"gaussian": "sqeuclidean", "poisson": "kl", "multinomial": "kl",
           "gamma": "itakura_saito"}[family]
    return _quiet(BregmanMixture(3, divergence=div, family=family, random_state=0,
                                 max_iter=5, **kw).fit, X)


@pytest.mark.parametrize("family, data, kw", [
    ("gaussian", gaussian_data, {}),
    ("gaussian", gaussian_data, {"dispersion": "tied"}),
    ("gaussian", gaussian_data, {"dispersion": 0.7}),
    ("poisson", lambda: poisson_data()[0], {}),
    ("multinomial", lambda: count_data()[0], {}),
    ("gamma", lambda: gamma_data()[0], {}),
    ("gamma", lambda: gamma_data()[0], {"dispersion": 1.0}),
])
def test_score_samples_is_the_scipy_log_density(family, data, kw):
    X = data()
    gm = _fitted(family, X, **kw)
    ll, R = log_likelihood(X, family, gm.weights_, gm.means_, gm.dispersion_)
    np.testing.assert_allclose(gm.score_samples(X), ll, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(gm.predict_proba(X), R, atol=1e-10)
    assert gm.score(X) == pytest.approx(ll.mean(), rel=1e-12)
    assert gm.bic(X) == pytest.approx(-2 * ll.sum() + gm._n_parameters() * np.log(len(X)),
                                      rel=1e-12)


def test_mahalanobis_is_the_gaussian_with_covariance_a_inverse():
    X = gaussian_data(d=3)
    M = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 0.5]])
    A = np.linalg.inv(M)
    gm = BregmanMixture(3, divergence="mahalanobis", divergence_params={"A": A},
                        random_state=0).fit(X)
    np.testing.assert_array_equal(gm.dispersion_, 1.0)
    L = np.column_stack([np.log(gm.weights_[h]) + component_logpdf(X, "gaussian", gm.means_[h],
                                                                   1.0, cov=M)
                         for h in range(3)])
    np.testing.assert_allclose(gm.score_samples(X), logsumexp(L, axis=1), rtol=1e-10)
    # a fitted scale s^2 of the covariance: the naive EM with covariance s^2 M
    U0, w0, v0 = gm.means_, gm.weights_, np.array([0.5, 1.0, 2.0])
    init = {"means": U0, "weights": w0, "dispersion": v0}
    ours = _quiet(BregmanMixture(3, divergence="mahalanobis", divergence_params={"A": A},
                                 dispersion="component", init=init, reg_dispersion=0.0,
                                 max_iter=6, tol=0).fit, X)
    hist, w1, m1, v1 = em(X, "gaussian", w0, U0, v0, 6, cov=M)
    np.testing.assert_allclose(ours.lower_bounds_, hist, rtol=1e-10)
    np.testing.assert_allclose(ours.dispersion_, v1, rtol=1e-9)
    np.testing.assert_allclose(ours.means_, m1, rtol=1e-9, atol=1e-12)


def test_custom_generator_is_the_gaussian_up_to_a_constant():
    register_divergence("mixture_test_square", phi=lambda x: x * x, dphi=lambda x: 2.0 * x,
                        dphi_inv=lambda t: 0.5 * t)
    try:
        X = gaussian_data()
        var = 0.8
        init = {"means": X[[0, 120, 250]], "weights": [0.3, 0.3, 0.4]}
        g = _quiet(BregmanMixture(3, init={**init, "dispersion": var}, dispersion=var,
                                  max_iter=5).fit, X)
        c = _quiet(BregmanMixture(3, divergence="mixture_test_square", dispersion=2 * var,
                                  init=init, max_iter=5).fit, X)
        assert c.family_ == "custom"
        shift = 0.5 * X.shape[1] * np.log(2 * np.pi * var)
        np.testing.assert_allclose(c.score_samples(X) - shift, g.score_samples(X), rtol=1e-10)
        np.testing.assert_allclose(c.means_, g.means_, rtol=1e-10)
        with pytest.raises(ValueError, match="pass up_to_constant=True"):
            c.bic(X)
        assert c.bic(X, up_to_constant=True) == pytest.approx(
            g.bic(X) - 2 * shift * len(X), rel=1e-10)
        with pytest.raises(ValueError, match="cannot fit a dispersion"):
            BregmanMixture(2, divergence="mixture_test_square", dispersion="component").fit(X)
    finally:
        unregister_divergence("mixture_test_square")


# ----------------------------------------------------------------------------- the naive EM
def _naive_case(family, X, k=3, seed=0, **kw):
    rng = np.random.default_rng(seed)
    w0 = rng.dirichlet(np.full(k, 5.0))
    if family == "multinomial":
        U0 = rng.dirichlet(np.ones(X.shape[1]), size=k)
    else:
        U0 = X[rng.choice(len(X), k, replace=False)] + (0.5 if family != "gaussian" else 0.0)
    v0 = {"gaussian": np.array([1.0, 2.0, 0.5]), "gamma": np.array([0.3, 0.5, 0.2])}.get(
        family, np.ones(k))
    return w0, U0, v0


@pytest.mark.nojit
@pytest.mark.parametrize("family, smoothing, dispersion, weighted, sparse", [
    ("multinomial", 0.0, "auto", False, False),
    ("multinomial", 0.0, "auto", True, True),
    ("multinomial", 7.0, "auto", False, True),
    ("poisson", 0.0, "auto", False, True),
    ("poisson", 4.0, "auto", True, False),
    ("gamma", 0.0, "component", False, False),
    ("gamma", 2.0, "tied", True, False),
    ("gaussian", 0.0, "tied", True, False),
    ("gaussian", 3.0, "component", False, False),
])
def test_em_equals_the_naive_em(family, smoothing, dispersion, weighted, sparse):
    X = {"multinomial": lambda: count_data()[0], "poisson": lambda: poisson_data()[0],
         "gamma": lambda: gamma_data()[0], "gaussian": gaussian_data}[family]()
    n = len(X)
    w = np.random.default_rng(5).uniform(0.5, 2.0, n) if weighted else None
    w0, U0, v0 = _naive_case(family, X)
    div = {"gaussian": "sqeuclidean", "gamma": "itakura_saito"}.get(family, "kl")
    fit_kw = dict(init={"means": U0, "weights": w0, "dispersion": v0}, max_iter=8, tol=0.0,
                  smoothing=smoothing, reg_dispersion=0.0, dispersion=dispersion)
    ours = _quiet(BregmanMixture(3, divergence=div, family=family, **fit_kw).fit,
                  sp.csr_matrix(X) if sparse else X, sample_weight=w)
    ww = np.ones(n) if w is None else w
    z = ww @ X / ww.sum()
    if family == "multinomial":
        z = z / z.sum()
    hist, w1, m1, v1 = em(X, family, w0, U0, v0, 8, w=w, s=smoothing, z=z,
                          dispersion={"auto": "fixed"}.get(dispersion, dispersion))
    np.testing.assert_allclose(ours.lower_bounds_, hist, rtol=1e-9)
    np.testing.assert_allclose(ours.weights_, w1, rtol=1e-9)
    np.testing.assert_allclose(ours.means_, m1, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(ours.dispersion_, v1, rtol=1e-8)


def test_multinomial_on_raw_counts_is_the_classic_text_model():
    """Means are probability vectors, weights are shares of documents, and the E-step does not
    depend on document length beyond the counts (a document and its double differ)."""
    X, y = count_data(n=90)
    gm = BregmanMixture(3, divergence="kl", random_state=0, smoothing=0.0).fit(X)
    assert gm.family_ == "multinomial"
    np.testing.assert_allclose(gm.means_.sum(axis=1), 1.0, rtol=1e-12)
    assert gm.weights_.sum() == pytest.approx(1.0)
    from bregclust import nmi
    assert nmi(y, gm.predict(X)) > 0.9


def test_gamma_shape_solves_its_equation_over_many_magnitudes():
    from scipy.special import digamma
    m = np.logspace(-12, 3, 40)
    a = gamma_shape(m)
    f = np.log(a) - digamma(a)
    small = a < 1e4  # the cancellation of log a - digamma(a) hides the larger shapes' error
    np.testing.assert_allclose(f[small], m[small], rtol=1e-11)
    np.testing.assert_allclose(a[~small], 1 / (2 * m[~small]), rtol=1e-3)
    assert np.isinf(gamma_shape([0.0])[0])


# ----------------------------------------------------------------------------- EM's guarantees
@pytest.mark.parametrize("div, family, data, smoothing", [
    ("sqeuclidean", "gaussian", gaussian_data, 0.0),
    ("sqeuclidean", "gaussian", gaussian_data, 5.0),
    ("kl", "multinomial", lambda: sp.csr_matrix(count_data()[0]), "auto"),
    ("kl", "multinomial", lambda: count_data()[0], 0.0),
    ("kl", "poisson", lambda: poisson_data()[0], "auto"),
    ("itakura_saito", "gamma", lambda: gamma_data()[0], "auto"),
])
def test_lower_bound_never_decreases(div, family, data, smoothing):
    X = data()
    for seed in range(3):
        gm = _quiet(BregmanMixture(4, divergence=div, family=family, smoothing=smoothing,
                                   reg_dispersion=0.0, random_state=seed, max_iter=40,
                                   tol=0.0).fit, X)
        lb = np.array(gm.lower_bounds_)
        # max_iter in all; after annealed EM (multinomial) the history is the final phase's
        assert gm.n_iter_ == 40 and 20 <= len(lb) <= 40
        assert np.all(np.diff(lb) >= -1e-12 * np.abs(lb[1:])), np.diff(lb).min()


def test_predict_proba_rows_sum_to_one_and_predict_is_their_argmax():
    X = count_data()[0]
    gm = BregmanMixture(3, divergence="kl", random_state=0).fit(X)
    P = gm.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(gm.predict(X), P.argmax(axis=1))
    np.testing.assert_array_equal(gm.fit_predict(X), gm.predict(X))


@pytest.mark.parametrize("kw", [dict(divergence="sqeuclidean"), dict(divergence="kl"),
                                dict(divergence="kl", assignment="hard"),
                                dict(divergence="cosine", assignment="hard"),
                                dict(divergence="kl", n_components=[2, 3, 4]),
                                dict(divergence="kl", n_components=[2, 3], criterion="cv")])
def test_fit_predict_is_the_last_e_step_and_equals_predict(kw):
    """``fit_predict`` returns the labels of the final E-step (no second read of X); they are
    ``predict(X)`` of the fitted mixture, with zero sample weights too, and X is untouched."""
    X = count_data()[0]
    X0 = X.copy()
    w = np.ones(X.shape[0])
    w[::7] = 0.0
    kw = {"n_components": 3, **kw}
    for sw in (None, w):
        gm = BregmanMixture(random_state=0, **kw)
        labels = gm.fit_predict(X, sample_weight=sw)
        np.testing.assert_array_equal(labels, gm.predict(X))
        fitted = BregmanMixture(random_state=0, **kw).fit(X, sample_weight=sw)
        np.testing.assert_array_equal(labels, fitted.predict(X))  # the same fit as fit()
    np.testing.assert_array_equal(X, X0)


@pytest.mark.nojit
def test_rows_of_zero_probability_get_the_least_violating_component():
    X = np.array([[5.0, 0, 0, 0], [4, 1, 0, 0], [0, 0, 5, 1], [0, 0, 4, 2]])
    gm = BregmanMixture(2, divergence="kl", smoothing=0.0,
                        init={"means": [[0.7, 0.3, 1e-9, 1e-9], [1e-9, 1e-9, 0.7, 0.3]]}).fit(X)
    assert gm.means_[0, 2] == 0.0 and gm.means_[1, 0] == 0.0  # on the boundary
    new = np.array([[3.0, 0, 0, 1], [0, 1, 0, 0]])  # both have mass where one mean has none
    P = gm.predict_proba(new)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    ll = gm.score_samples(new)
    assert ll[0] == -np.inf and P[0, 0] == 1.0  # 1 of its 4 counts is off component 0
    assert np.isfinite(ll[1]) and P[1, 0] == 1.0


def test_degenerate_component_warns_and_keeps_its_mean():
    X = gaussian_data()
    far = np.array([[1e3] * 4])
    init = {"means": np.vstack([X[[0, 150]], far]), "weights": [0.4, 0.4, 0.2],
            "dispersion": [1.0, 1.0, 1.0]}
    with pytest.warns(EmptyClusterWarning, match=r"component\(s\) \[2\] lost all responsibility"):
        gm = BregmanMixture(3, init=init).fit(X)
    np.testing.assert_array_equal(gm.means_[2], far[0])
    assert gm.weights_[2] == 0.0


# ----------------------------------------------------------------------------- inputs
def test_dense_sparse_and_weighted_repeats_agree():
    X = count_data()[0]
    kw = dict(divergence="kl", random_state=0, max_iter=20, tol=0.0, smoothing=1.0)
    a = _quiet(BregmanMixture(3, **kw).fit, X)
    b = _quiet(BregmanMixture(3, **kw).fit, sp.csr_matrix(X))
    np.testing.assert_allclose(b.lower_bounds_, a.lower_bounds_, rtol=1e-11)
    np.testing.assert_allclose(b.means_, a.means_, rtol=1e-9, atol=1e-14)
    # a row of weight 2 is two rows (from the same start)
    w = np.ones(len(X))
    w[:10] = 2.0
    init = {"means": a.means_, "weights": a.weights_}
    c = _quiet(BregmanMixture(3, divergence="kl", init=init, max_iter=5, tol=0.0,
                              smoothing=1.0).fit, X, sample_weight=w)
    d = _quiet(BregmanMixture(3, divergence="kl", init=init, max_iter=5, tol=0.0,
                              smoothing=1.0).fit, np.vstack([X, X[:10]]))
    np.testing.assert_allclose(c.means_, d.means_, rtol=1e-10)
    np.testing.assert_allclose(c.lower_bounds_, d.lower_bounds_, rtol=1e-10)


@pytest.mark.parametrize("div, data, sparse", [
    ("sqeuclidean", gaussian_data, False),
    ("kl", lambda: count_data()[0], True),
    ("itakura_saito", lambda: gamma_data()[0], False),
])
def test_dask_input_gives_the_in_memory_result(div, data, sparse):
    da = pytest.importorskip("dask.array")
    X = data()
    Xm = sp.csr_matrix(X) if sparse else X
    w = np.random.default_rng(2).uniform(0.5, 2.0, len(X))
    kw = dict(divergence=div, max_iter=10, tol=0.0, init="random", random_state=0)
    a = _quiet(BregmanMixture(3, **kw).fit, Xm, sample_weight=w)
    dX = da.from_array(X, chunks=(47, -1))
    if sparse:
        dX = dX.map_blocks(sp.csr_matrix, dtype=np.float64)
    b = _quiet(BregmanMixture(3, **kw).fit, dX, sample_weight=da.from_array(w, chunks=47))
    np.testing.assert_allclose(b.lower_bounds_, a.lower_bounds_, rtol=1e-10)
    np.testing.assert_allclose(b.means_, a.means_, rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(b.dispersion_, a.dispersion_, rtol=1e-9)
    lazy = b.predict_proba(dX)
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(lazy.compute(), a.predict_proba(Xm), atol=1e-10)
    np.testing.assert_allclose(b.score_samples(dX).compute(), a.score_samples(Xm), rtol=1e-10)
    np.testing.assert_array_equal(b.predict(dX).compute(), a.predict(Xm))
    assert b.score(dX) == pytest.approx(a.score(Xm), rel=1e-12)
    assert b.bic(dX) == pytest.approx(a.bic(Xm), rel=1e-12)


@pytest.mark.parametrize("init", ["auto", "kmeans", "random"])
def test_dask_starts_of_the_multinomial_run_on_its_simplex_view(init):
    da = pytest.importorskip("dask.array")
    X = count_data()[0]
    dX = da.from_array(X, chunks=(50, -1)).map_blocks(sp.csr_matrix, dtype=np.float64)
    gm = _quiet(BregmanMixture(3, divergence="kl", init=init, random_state=0).fit, dX)
    np.testing.assert_allclose(gm.means_.sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(np.diff(gm.lower_bounds_) >= -1e-12 * np.abs(gm.lower_bounds_[1:]))
    from bregclust import nmi
    assert nmi(count_data()[1], gm.predict(X)) > 0.8


@pytest.mark.slow
def test_custom_generator_mixture_on_fresh_process_workers():
    """Worker processes that never ran register_divergence get the generator with every task:
    the fit passes and the lazy per-row evaluations (DaskSource.map_rows)."""
    da = pytest.importorskip("dask.array")
    from distributed import Client, LocalCluster

    register_divergence("mixture_dask_cosh", phi=lambda x: np.cosh(x), dphi=lambda x: np.sinh(x))
    try:
        X = gaussian_data(d=3) / 4.0
        kw = dict(divergence="mixture_dask_cosh", dispersion=0.5, max_iter=6, tol=0.0,
                  init={"means": X[[0, 120, 250]]})
        a = _quiet(BregmanMixture(3, **kw).fit, X)
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster):
            dX = da.from_array(X, chunks=(100, 3))
            b = _quiet(BregmanMixture(3, **kw).fit, dX)
            np.testing.assert_allclose(b.lower_bounds_, a.lower_bounds_, rtol=1e-10)
            np.testing.assert_allclose(b.predict_proba(dX).compute(), a.predict_proba(X),
                                       atol=1e-10)
            np.testing.assert_allclose(b.score_samples(dX).compute(), a.score_samples(X),
                                       rtol=1e-10)
    finally:
        unregister_divergence("mixture_dask_cosh")


def test_inputs_are_not_modified_and_fitted_models_pickle():
    X = count_data()[0]
    Xs = sp.csr_matrix(X)
    w = np.linspace(0.5, 1.5, len(X))
    U0 = np.full((3, X.shape[1]), 1.0 / X.shape[1])
    copies = [X.copy(), Xs.data.copy(), w.copy(), U0.copy()]
    gm = BregmanMixture(3, divergence="kl", init={"means": U0}).fit(Xs, sample_weight=w)
    gm.predict_proba(X)
    gm.score(X, sample_weight=w)
    for a, b in zip([X, Xs.data, w, U0], copies):
        np.testing.assert_array_equal(a, b)
    again = pickle.loads(pickle.dumps(gm))
    np.testing.assert_array_equal(again.predict_proba(X), gm.predict_proba(X))


def test_bad_input_gets_clear_errors():
    X = gaussian_data()
    with pytest.raises(ValueError, match="n_components=1000 is larger than n_samples"):
        BregmanMixture(1000).fit(X)
    with pytest.raises(ValueError, match="family 'poisson' does not go with divergence "
                                         "'sqeuclidean'; use family='gaussian'"):
        BregmanMixture(2, family="poisson").fit(X)
    with pytest.raises(ValueError, match="family must be 'auto' or one of"):
        BregmanMixture(2, family="student").fit(X)
    with pytest.raises(ValueError, match="not differentiable and belongs to no exponential"):
        BregmanMixture(2, divergence="l1_subgradient").fit(X)
    with pytest.raises(DomainError, match="kl needs non-negative"):
        BregmanMixture(2, divergence="kl").fit(X)
    with pytest.raises(ValueError, match="the poisson family cannot fit a dispersion"):
        BregmanMixture(2, divergence="kl", family="poisson", dispersion="component").fit(abs(X))
    with pytest.raises(ValueError, match="has no dispersion parameter"):
        BregmanMixture(2, divergence="kl", dispersion=2.0).fit(abs(X))
    with pytest.raises(ValueError, match="dispersion must be 'auto', 'component', 'tied'"):
        BregmanMixture(2, dispersion="full").fit(X)
    with pytest.raises(ValueError, match="dispersion must be > 0"):
        BregmanMixture(2, dispersion=0.0).fit(X)
    with pytest.raises(ValueError, match="criterion must be 'bic' or 'aic'"):
        BregmanMixture(2, criterion="icl").fit(X)
    with pytest.raises(ValueError, match="init array must be means of shape"):
        BregmanMixture(2, init=np.ones((3, 4))).fit(X)
    with pytest.raises(ValueError, match="could be means or responsibilities"):
        BregmanMixture(4, init=np.eye(4)).fit(np.eye(4) + 0.1)
    with pytest.raises(ValueError, match="init responsibilities must be non-negative"):
        BregmanMixture(2, init={"responsibilities": np.ones((len(X), 2))}).fit(X)
    with pytest.raises(ValueError, match="init means must be strictly positive|init means"):
        BregmanMixture(2, divergence="kl", init={"means": [[0.0, 1.0], [1.0, 1.0]]}).fit(
            np.ones((5, 2)))
    with pytest.raises(ValueError, match="fixes the number of components"):
        BregmanMixture([2, 3], init=X[:2]).fit(X)
    with pytest.raises(ValueError, match="an init dict holds 'means'"):
        BregmanMixture(2, init={"centres": X[:2]}).fit(X)
    with pytest.raises(ValueError, match="init must be 'auto', 'k-means\\+\\+'"):
        BregmanMixture(2, init="spectral").fit(X)
    with pytest.raises(TypeError, match="n_components must be an integer"):
        BregmanMixture(2.5).fit(X)
    with pytest.raises(ValueError, match="n_components is an empty sequence"):
        BregmanMixture([]).fit(X)
    with pytest.raises(ValueError, match="X contains NaN"):
        BregmanMixture(2).fit(np.where(X > 5, np.nan, X))
    with pytest.raises(ValueError, match="needs at least one row with a positive total"):
        BregmanMixture(1, divergence="kl").fit(np.zeros((4, 3)))
    gm = BregmanMixture(2, random_state=0).fit(X)
    with pytest.raises(ValueError, match="X has 3 features, but BregmanMixture is expecting 4"):
        gm.predict(X[:, :3])
    with pytest.raises(ValueError, match="warm_start continues the previous fit"):
        gm.set_params(warm_start=True, n_components=3).fit(X)


def test_warm_start_continues_from_the_previous_parameters():
    X = gaussian_data()
    a = _quiet(BregmanMixture(3, random_state=0, max_iter=3, tol=0.0).fit, X)
    full = _quiet(BregmanMixture(3, random_state=0, max_iter=6, tol=0.0).fit, X)
    a.set_params(warm_start=True)
    _quiet(a.fit, X)
    np.testing.assert_allclose(a.means_, full.means_, rtol=1e-10)
    np.testing.assert_allclose(a.lower_bounds_, full.lower_bounds_[3:], rtol=1e-12)


def test_every_init_gives_a_valid_start():
    X, y = count_data()
    km = BregmanKMeans(3, divergence="kl", random_state=0).fit(X)
    R = np.eye(3)[y] * 0.9 + 0.1 / 3
    for init in ["k-means++", "random", "kmeans", km, km.cluster_centers_, {"responsibilities": R},
                 R]:
        gm = _quiet(BregmanMixture(3, divergence="kl", init=init, random_state=0).fit, X)
        np.testing.assert_allclose(gm.means_.sum(axis=1), 1.0, rtol=1e-12)
        assert np.isfinite(gm.lower_bound_)
    with pytest.warns(RuntimeWarning, match="n_init is ignored"):
        BregmanMixture(3, divergence="kl", init=km, n_init=2).fit(X)


# ----------------------------------------------------------------------------- conditioning
@pytest.mark.parametrize("s", [-300, 300])
def test_gaussian_fit_of_scaled_data_is_the_rescaled_fit(s):
    X = gaussian_data()
    kw = dict(random_state=0, max_iter=15, tol=0.0)
    a = _quiet(BregmanMixture(3, **kw).fit, X)
    b = _quiet(BregmanMixture(3, **kw).fit, np.ldexp(X, s))
    np.testing.assert_allclose(b.means_, np.ldexp(a.means_, s), rtol=1e-10)
    np.testing.assert_allclose(b.dispersion_, np.ldexp(a.dispersion_, 2 * s), rtol=1e-9)
    shift = X.shape[1] * s * np.log(2)
    np.testing.assert_allclose(b.lower_bounds_, np.array(a.lower_bounds_) - shift, rtol=1e-10)
    np.testing.assert_allclose(b.score_samples(np.ldexp(X, s)), a.score_samples(X) - shift,
                               rtol=1e-10)
    np.testing.assert_allclose(b.predict_proba(np.ldexp(X, s)), a.predict_proba(X), atol=1e-10)


def test_gaussian_data_whose_variances_leave_float64_are_refused():
    with pytest.raises(ValueError, match="fitted dispersions of X are not representable"):
        BregmanMixture(2, random_state=0).fit(np.ldexp(gaussian_data(), -1000))


@pytest.mark.parametrize("s", [-1000, 1000])
def test_gamma_fit_of_columns_far_apart_is_the_rescaled_fit(s):
    X = gamma_data()[0]
    cols = np.array([s, 0, -s, s // 2])
    kw = dict(divergence="itakura_saito", random_state=0, max_iter=15, tol=0.0)
    a = _quiet(BregmanMixture(3, **kw).fit, X)
    Xs = np.ldexp(X, cols[None, :])
    b = _quiet(BregmanMixture(3, **kw).fit, Xs)
    np.testing.assert_allclose(b.means_, np.ldexp(a.means_, cols[None, :]), rtol=1e-9)
    np.testing.assert_allclose(b.dispersion_, a.dispersion_, rtol=1e-9)
    shift = cols.sum() * np.log(2)
    np.testing.assert_allclose(b.score_samples(Xs), a.score_samples(X) - shift, rtol=1e-10,
                               atol=1e-8)


def test_counts_are_never_rescaled_and_overflowing_counts_are_refused():
    X = poisson_data()[0]
    tiny = _quiet(BregmanMixture(2, divergence="kl", family="poisson", random_state=0,
                                 smoothing=0.0).fit, np.ldexp(X, -1000))
    assert np.all(tiny.means_ < 2.0 ** -990)
    with pytest.raises(ValueError, match="this family is not scale-invariant"):
        BregmanMixture(2, divergence="kl", family="poisson").fit(X * 1e306)


@pytest.mark.nojit
def test_the_e_step_kernel_keeps_float32_rows_in_float32():
    from bregclust import _execution as E
    from bregclust import _mixture_pass as MP

    rng = np.random.default_rng(0)
    div = get_divergence("sqeuclidean")
    X = rng.normal(size=(700, 6))
    U = X[:3].copy()
    mc = MP.prepare_mixture(div, U, np.log([0.2, 0.3, 0.5]), np.array([0.5, 1.0, 2.0]))
    ref = MP.mixture_pass(div, X, E.prepare(div, X), mc, np.ones(700), keep_resp=True)
    X32 = X.astype(np.float32)
    out = MP.mixture_pass(div, X32, (X32, E.phi_rows(div, X)), mc, np.ones(700), keep_resp=True)
    np.testing.assert_allclose(out.lse, ref.lse, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(out.S, ref.S, rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(out.resp, ref.resp, atol=1e-4)


# ----------------------------------------------------------------------------- choosing K
def test_n_components_range_picks_the_true_k_and_reports_the_path():
    X = gaussian_data(n=450)
    gm = BregmanMixture(range(1, 7), random_state=0, n_init=2).fit(X)
    assert gm.n_components_ == 3
    np.testing.assert_array_equal(gm.n_components_path_, np.arange(1, 7))
    assert gm.criterion_path_.argmin() == 2
    assert gm.criterion_path_[2] == pytest.approx(gm.bic(X), rel=1e-12)
    aic = BregmanMixture([2, 3, 4], random_state=0, criterion="aic").fit(X)
    assert aic.criterion_path_[aic.n_components_path_.tolist().index(aic.n_components_)] == \
        pytest.approx(aic.aic(X), rel=1e-12)


@pytest.mark.parametrize("family, data", [
    ("multinomial", lambda: count_data(n=240)),
    ("poisson", lambda: poisson_data(n=240)),
    ("gamma", lambda: gamma_data(n=240)),
])
def test_bic_picks_the_true_k_for_every_family(family, data):
    X, _ = data()
    div = "itakura_saito" if family == "gamma" else "kl"
    gm = _quiet(BregmanMixture(range(1, 6), divergence=div, family=family, n_init=3,
                               random_state=0).fit, X)
    assert gm.n_components_ == 3, gm.criterion_path_


def test_select_n_clusters_scores_kmeans_by_its_classification_likelihood():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(c, 1.0, size=(150, 4)) for c in (0.0, 4.0, 8.0)])
    sel = select_n_clusters(X, range(1, 7), random_state=0, n_init=3)
    assert sel.n_clusters == 3 and sel.estimator.n_clusters == 3
    np.testing.assert_array_equal(sel.n_clusters_path, np.arange(1, 7))
    # the tied spherical Gaussian's classification likelihood at K=3, written out
    lab, U = sel.estimator.labels_, sel.estimator.cluster_centers_
    n, d = X.shape
    reg = 1e-6 * ((X - X.mean(axis=0)) ** 2).sum() / X.size  # of the data's own variance
    var = ((X - U[lab]) ** 2).sum() / (n * d) + reg
    pi = np.bincount(lab) / n
    ll = np.sum(np.log(pi[lab]) - ((X - U[lab]) ** 2).sum(axis=1) / (2 * var)
                - 0.5 * d * np.log(2 * np.pi * var))
    assert sel.log_likelihood_path[2] == pytest.approx(ll, rel=1e-10)
    p = 2 + 3 * d + 1
    assert sel.criterion_path[2] == pytest.approx(-2 * ll + p * np.log(n), rel=1e-10)


def test_select_n_clusters_with_unequal_spreads_needs_a_dispersion_per_cluster():
    X = gaussian_data(n=450)  # spreads 1, 0.5 and 2: a tied variance splits the widest cluster
    assert select_n_clusters(X, range(1, 7), random_state=0, n_init=3).n_clusters > 3
    assert select_n_clusters(X, range(1, 7), random_state=0, n_init=3,
                             dispersion="component").n_clusters == 3
    words, _ = count_data(n=240)
    sel = select_n_clusters(words, range(1, 6), divergence="kl", random_state=0, n_init=3)
    assert sel.family == "multinomial" and sel.n_clusters == 3
    np.testing.assert_allclose(sel.estimator.cluster_centers_.sum(axis=1), 1.0, rtol=1e-12)


def test_float32_input_keeps_float32_means_and_the_float64_labels():
    """float32 rows go through the E-step kernel in float32 (sums in float64): the same
    labels and nearly the same lower bound as float64, means in the data's type."""
    rng = np.random.default_rng(11)
    X = np.vstack([rng.normal(m, 1.0, size=(120, 5)) for m in (0.0, 5.0, 10.0)])
    a = BregmanMixture(3, random_state=0).fit(X)
    b = BregmanMixture(3, random_state=0).fit(X.astype(np.float32))
    assert b.means_.dtype == np.float32
    assert np.array_equal(a.predict(X), b.predict(X.astype(np.float32)))
    np.testing.assert_allclose(b.lower_bound_, a.lower_bound_, rtol=1e-6)
    C = sp.csr_matrix(rng.poisson(0.4, size=(300, 30)).astype(float))
    C = C[np.asarray(C.sum(axis=1)).ravel() > 0]
    a = BregmanMixture(3, divergence="kl", random_state=0).fit(C)
    b = BregmanMixture(3, divergence="kl", random_state=0).fit(C.astype(np.float32))
    assert b.means_.dtype == np.float32 and np.array_equal(a.predict(C), b.predict(C))


def test_verbose_shows_a_progress_bar_with_the_lower_bound(capsys):
    X = np.random.default_rng(0).normal(size=(300, 4))
    BregmanMixture(3, random_state=0, verbose=1).fit(X)
    out, err = capsys.readouterr()
    assert "BregmanMixture restart 0" in err and "objective=" in err  # the bar, on stderr
    assert "BregmanMixture restart 0: lower bound" in out
    BregmanMixture(3, random_state=0).fit(X)
    assert capsys.readouterr() == ("", "")



def test_gaussian_scale_limit_is_the_one_the_readme_states():
    """The README's ``X * 2**s`` rule excepts the Gaussian mixture beyond about 2^+-500: its
    dispersions scale as X^2. Inside the limit the fit is the rescaled fit; beyond it a
    ValueError asks to rescale (never a silent wrong fit)."""
    from pathlib import Path
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert "except for the Gaussian `BregmanMixture`" in readme
    X = gaussian_data(n=60, d=2)
    ref = BregmanMixture(2, random_state=0).fit(X)
    for s in (-480, 480):
        got = BregmanMixture(2, random_state=0).fit(X * 2.0**s)
        np.testing.assert_allclose(got.means_, ref.means_ * 2.0**s, rtol=1e-9)
        np.testing.assert_array_equal(got.predict(X * 2.0**s), ref.predict(X))
    for s in (-520, 520, 1000):
        with pytest.raises(ValueError, match="not representable in float64.*rescale X"):
            BregmanMixture(2, random_state=0).fit(X * 2.0**s)


def test_parameters_of_the_wrong_kind_are_named():
    """A dict of candidates, a non-boolean warm_start, init vectors of the wrong length or
    type, a bool n_components and an init of strings: one sentence naming the parameter."""
    X = gaussian_data(n=40, d=2)
    means = X[:2]
    cases = [
        (dict(n_components={2: 1, 3: 1}), TypeError, "n_components must be an int or a sequence"),
        (dict(n_components={2, 3}), TypeError, "got a set"),
        (dict(n_components=2, warm_start="yes"), TypeError, "warm_start must be True or False"),
        (dict(n_components=2, init={"means": means, "dispersion": [1.0, 2.0, 3.0]}), ValueError,
         r"init dispersion must be a number or 2 numbers \(one per component\), got shape \(3,\)"),
        (dict(n_components=2, init={"means": means, "dispersion": "x"}), TypeError,
         "init dispersion must be a number or 2 numbers"),
        (dict(n_components=2, init={"means": means, "weights": [[0.5, 0.5]]}), ValueError,
         "init weights must be a number or 2 numbers"),
        (dict(n_components=True), TypeError, "pass an int, not a bool"),
        (dict(n_components=[2, True]), TypeError, "pass an int, not a bool"),
        (dict(n_components=2, init=np.array([["a", "b"], ["c", "d"]])), TypeError,
         "init array must hold real numbers"),
        (dict(n_components=2, init={"means": [["a", "b"], ["c", "d"]]}), TypeError,
         "init means must hold real numbers"),
    ]
    for kw, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            BregmanMixture(**kw).fit(X)
    # what stays accepted: a scalar dispersion for every component, a numpy bool warm_start
    BregmanMixture(2, init={"means": means, "dispersion": 0.5}, max_iter=2).fit(X)
    BregmanMixture(2, warm_start=np.bool_(False), max_iter=2).fit(X)


@pytest.mark.parametrize("div,family", [("kl", "multinomial"), ("kl", "poisson"),
                                        ("itakura_saito", "gamma"), ("sqeuclidean", "gaussian")])
def test_integer_weights_equal_repeated_rows_as_the_docstring_states(div, family):
    """Integer sample weights are repeated rows for every family once ``smoothing`` is a
    number; ``smoothing="auto"`` counts rows, as the docstring now says: its pseudo-count is
    the mean weight per row (dense data), so it differs between the two."""
    rng = np.random.RandomState(0)
    X = rng.poisson(3, (30, 6)).astype(float) + (0.5 if div == "itakura_saito" else 0.0)
    w = rng.randint(1, 4, 30)
    Xr = np.repeat(X, w, axis=0)
    kw = dict(divergence=div, family=family, init=X[[0, 1]] + 0.1, max_iter=60, tol=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for s in (0.0, 2.5):
            if s == 0.0 and div == "kl":
                continue  # kl means need a pseudo-count on these counts
            a = BregmanMixture(2, smoothing=s, **kw).fit(X, sample_weight=w)
            b = BregmanMixture(2, smoothing=s, **kw).fit(Xr)
            np.testing.assert_allclose(a.means_, b.means_, rtol=1e-7, atol=1e-9)
            np.testing.assert_allclose(a.weights_, b.weights_, rtol=1e-7)
            assert a.lower_bound_ == pytest.approx(b.lower_bound_, rel=1e-7, abs=1e-9)
        a = BregmanMixture(2, **kw).fit(X, sample_weight=w)
        b = BregmanMixture(2, **kw).fit(Xr)
    if div == "sqeuclidean":
        assert a.smoothing_ == b.smoothing_ == 0.0
    elif family == "multinomial":  # "auto" is pseudo-words per term: the vocabulary only
        per_term = float(re.search(r"``([0-9.e+-]+) d``", BregmanMixture.__doc__).group(1))
        assert a.smoothing_ == b.smoothing_ == pytest.approx(per_term * X.shape[1])
    else:
        assert b.smoothing_ != a.smoothing_
        if family != "multinomial":  # dense data: one pseudo-row of the mean weight
            assert a.smoothing_ == pytest.approx(w.mean()) and b.smoothing_ == pytest.approx(1.0)
    assert "smoothing=\"auto\"`` counts rows" in BregmanMixture.fit.__doc__


def _is_divergence_decimal(x, u):
    """``x/u - log(x/u) - 1`` in 60-digit decimal arithmetic (the oracle of a divergence that
    float64 cannot form by its definition near ``x = u``)."""
    from decimal import Decimal, localcontext
    with localcontext() as ctx:
        ctx.prec = 60
        r = Decimal(float(x)) / Decimal(float(u))
        return float(r - r.ln() - 1)


def test_tight_gaussian_components_far_from_the_origin_keep_their_digits():
    """N(0, 1) and 1e4 + N(0, s^2), s = 1e-3 and 1e-4: the E-step, score_samples, score and
    the dispersion step formed by the GEMM form cancelled (log-densities off by 0.04,
    dispersion +9 %, an overflow refusal at s = 1e-4); they now match scipy's densities and
    the components' maximum-likelihood variances."""
    rng = np.random.RandomState(0)
    for sd in (1e-3, 1e-4):
        A = rng.randn(50, 2)
        B = 1e4 + sd * rng.randn(50, 2)
        X = np.vstack([A, B])
        means = np.array([A.mean(axis=0), B.mean(axis=0)])
        g = BregmanMixture(2, init={"means": means}, reg_dispersion=0.0, smoothing=0.0,
                           dispersion="component", max_iter=20, tol=0.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            g.fit(X)
        np.testing.assert_allclose(g.means_, means, rtol=1e-12, atol=1e-12)
        var = [np.mean((A - means[0]) ** 2), np.mean((B - means[1]) ** 2)]
        np.testing.assert_allclose(g.dispersion_, var, rtol=1e-6)
        ref, _ = log_likelihood(X, "gaussian", g.weights_, g.means_, g.dispersion_)
        np.testing.assert_allclose(g.score_samples(X), ref, rtol=1e-10, atol=1e-8)
        assert g.score(X) == pytest.approx(ref.mean(), rel=1e-10)
    da = pytest.importorskip("dask.array")  # the same passes over chunks (one empty)
    on_dask = BregmanMixture(2, init={"means": means}, reg_dispersion=0.0, smoothing=0.0,
                             dispersion="component", max_iter=20, tol=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        on_dask.fit(da.from_array(X, chunks=((0, 30, 70), 2)))
    np.testing.assert_allclose(on_dask.dispersion_, g.dispersion_, rtol=1e-9)


def test_tight_gamma_components_keep_their_digits():
    """Gamma components of relative spread 1e-6 to 1e-12: the Itakura-Saito definition
    ``x/u - log(x/u) - 1`` cancels near ``x = u``; dispersions and log-densities now match a
    60-digit evaluation."""
    from bregclust.mixture import gamma_shape
    rng = np.random.RandomState(0)
    for rel in (1e-6, 1e-9, 1e-12):
        parts = [3.0 * (1.0 + rel * rng.randn(40, 2)), 7.0 * (1.0 + rel * rng.randn(40, 2))]
        X = np.vstack(parts)
        means = np.array([p.mean(axis=0) for p in parts])
        g = BregmanMixture(2, divergence="itakura_saito", init={"means": means},
                           reg_dispersion=0.0, smoothing=0.0, max_iter=3, tol=0.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            g.fit(X)
        for h, P in enumerate(parts):
            m = np.mean([_is_divergence_decimal(x, u) for x, u in zip(P.ravel(),
                                                                     np.tile(g.means_[h], 40))])
            assert g.dispersion_[h] == pytest.approx(1.0 / gamma_shape(m)[0], rel=1e-6)
        rows = [0, 1, 40, 41]
        ref = []
        for i in rows:
            comp = []
            for h in range(2):
                a = 1.0 / g.dispersion_[h]
                stirling = 0.5 * np.log(a / (2 * np.pi)) - 1.0 / (12 * a)  # a log a - a - lgamma(a)
                dv = sum(_is_divergence_decimal(x, u) for x, u in zip(X[i], g.means_[h]))
                comp.append(np.log(g.weights_[h]) - a * dv + 2 * stirling - np.log(X[i]).sum())
            ref.append(logsumexp(comp))
        np.testing.assert_allclose(g.score_samples(X[rows]), ref, rtol=1e-9, atol=1e-6)
