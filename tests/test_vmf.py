"""Mixtures of von Mises-Fisher distributions: BregmanMixture(divergence="cosine") against
scipy.stats.vonmises_fisher and the slow EM of tests/naive_cosine.py."""

import pickle
import re
import warnings

import naive_cosine as naive
import numpy as np
import pytest
import scipy.sparse as sp

from bregclust import BregmanMixture

stats = pytest.importorskip("scipy.stats")
if not hasattr(stats, "vonmises_fisher"):  # scipy < 1.11
    pytest.skip("scipy.stats.vonmises_fisher needs scipy >= 1.11", allow_module_level=True)

KAPPAS = [1e-3, 1e-2, 0.1, 1.0, 10.0, 100.0, 1e3, 1e4]


def _sample(d=8, kappas=(20.0, 60.0, 150.0), n=150, seed=0):
    rng = np.random.default_rng(seed)
    mus = rng.normal(size=(len(kappas), d))
    mus /= np.linalg.norm(mus, axis=1, keepdims=True)
    X = np.vstack([stats.vonmises_fisher(m, k).rvs(n, random_state=seed + i)
                   for i, (m, k) in enumerate(zip(mus, kappas))])
    y = np.repeat(np.arange(len(kappas)), n)
    return X, y, mus


@pytest.mark.parametrize("d", [2, 3, 50, 2000])
def test_log_density_matches_scipy(d):
    from bregclust._vmf import log_normaliser

    rng = np.random.default_rng(d)
    for kappa in KAPPAS:
        mu = rng.normal(size=d)
        mu /= np.linalg.norm(mu)
        x = stats.vonmises_fisher(mu, kappa).rvs(3, random_state=1)
        ours = log_normaliser(d, kappa)[0] + kappa * (x @ mu)
        with np.errstate(divide="ignore"):
            ref = stats.vonmises_fisher(mu, kappa).logpdf(x)
        if np.all(np.isfinite(ref)):
            np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-9)
        else:  # scipy's ive underflows (d = 2000, small kappa): the power series
            series = naive.vmf_log_normaliser_series(d, kappa) + kappa * (x @ mu)
            np.testing.assert_allclose(ours, series, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("d", [20000, 100000])
def test_log_normaliser_at_high_dimension_matches_the_series(d):
    from bregclust._vmf import log_normaliser

    for kappa in [1e-3, 1.0, 100.0, 1e4]:
        ours = log_normaliser(d, kappa)[0]
        assert np.isfinite(ours)
        assert ours == pytest.approx(naive.vmf_log_normaliser_series(d, kappa), rel=1e-12)
    # kappa -> 0: the uniform density on the sphere
    assert log_normaliser(d, 1e-12)[0] == pytest.approx(log_normaliser(d, 0.0)[0], rel=1e-12)


@pytest.mark.parametrize("d", [2, 3, 10, 50, 300])
def test_concentration_inverts_the_mean_resultant_length(d):
    from bregclust._vmf import concentration, mean_resultant_length

    for kappa in [0.05, 1.0, 7.0, 80.0, 900.0]:
        r = mean_resultant_length(d, kappa)[0]
        assert concentration(d, r)[0] == pytest.approx(kappa, rel=1e-9)
        if d <= 50 and kappa <= 80:  # the unscaled Bessel functions stay finite there
            assert naive.mean_resultant_inverse(d, r) == pytest.approx(kappa, rel=1e-8)
    assert concentration(d, 0.0)[0] == 0.0


def test_fit_recovers_the_components_and_scores_like_scipy():
    X, y, mus = _sample()
    gm = BregmanMixture(3, divergence="cosine", random_state=0).fit(X * 7.0)
    assert gm.family_ == "vmf"
    np.testing.assert_allclose(np.linalg.norm(gm.means_, axis=1), 1.0, atol=1e-12)
    order = np.argmax(gm.means_ @ mus.T, axis=0)
    assert np.all(np.max(gm.means_ @ mus.T, axis=0) > 0.98)
    kappa = 1.0 / gm.dispersion_[order]
    np.testing.assert_allclose(kappa, [20.0, 60.0, 150.0], rtol=0.25)
    ref = np.log(sum(w * np.exp(stats.vonmises_fisher(m, 1.0 / s).logpdf(X))
                     for w, m, s in zip(gm.weights_, gm.means_, gm.dispersion_)))
    np.testing.assert_allclose(gm.score_samples(X), ref, rtol=1e-10)
    np.testing.assert_allclose(gm.score_samples(X * 1e-200), ref, rtol=1e-10)  # directions
    P = gm.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(gm.predict(X), P.argmax(axis=1))
    from sklearn.metrics import adjusted_rand_score
    assert adjusted_rand_score(y, gm.predict(X)) > 0.95
    g2 = pickle.loads(pickle.dumps(gm))
    np.testing.assert_allclose(g2.score_samples(X), gm.score_samples(X))


def test_em_equals_naive_em_and_lower_bound_non_decreasing():
    X, _, _ = _sample(d=5, kappas=(5.0, 12.0), n=80, seed=3)
    rng = np.random.default_rng(1)
    M0 = naive.unit(rng.normal(size=(2, 5)))
    init = {"means": M0, "weights": np.array([0.4, 0.6]), "dispersion": np.array([0.5, 0.25])}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gm = BregmanMixture(2, divergence="cosine", init=init, max_iter=6, tol=0.0,
                            reg_dispersion=0.0).fit(X)
    M, kap, pi, hist = naive.vmf_em(X, M0, [2.0, 4.0], [0.4, 0.6], 6)
    np.testing.assert_allclose(gm.lower_bounds_, hist, rtol=1e-10)
    np.testing.assert_allclose(gm.means_, M, atol=1e-9)
    np.testing.assert_allclose(1.0 / gm.dispersion_, kap, rtol=1e-7)
    np.testing.assert_allclose(gm.weights_, pi, rtol=1e-10)
    assert np.all(np.diff(gm.lower_bounds_) >= -1e-12)


def test_shared_kappa_sparse_equals_dense_float32():
    X, _, _ = _sample(d=12, seed=4)
    a = BregmanMixture(3, divergence="cosine", dispersion="tied", random_state=0).fit(X)
    assert np.ptp(a.dispersion_) == 0.0
    b = BregmanMixture(3, divergence="cosine", dispersion="tied", random_state=0).fit(
        sp.csr_matrix(X))
    np.testing.assert_allclose(b.means_, a.means_, atol=1e-10)
    np.testing.assert_allclose(b.dispersion_, a.dispersion_, rtol=1e-9)
    c = BregmanMixture(3, divergence="cosine", random_state=0).fit(X.astype(np.float32))
    assert c.means_.dtype == np.float32


def test_bic_parameter_count_and_choice_of_k():
    X, _, _ = _sample(d=6, seed=5)
    gm = BregmanMixture(range(1, 6), divergence="cosine", random_state=0).fit(X)
    assert gm.n_components_ == 3
    k, d = 3, 6
    p = (k - 1) + k * (d - 1) + k
    n = X.shape[0]
    assert gm.bic(X) == pytest.approx(-2 * gm.score(X) * n + p * np.log(n), rel=1e-12)
    assert gm.aic(X) == pytest.approx(-2 * gm.score(X) * n + 2 * p, rel=1e-12)
    tied = BregmanMixture(3, divergence="cosine", dispersion="tied", random_state=0).fit(X)
    assert tied.aic(X) == pytest.approx(-2 * tied.score(X) * n + 2 * (p - k + 1), rel=1e-12)


def test_near_duplicate_rows_cap_kappa_with_a_warning():
    rng = np.random.default_rng(6)
    base = naive.unit(rng.normal(size=(2, 4)))
    X = np.repeat(base, 30, axis=0) * (1.0 + 1e-15 * rng.normal(size=(60, 1)))
    with pytest.warns(RuntimeWarning, match="concentration capped") as record:
        gm = BregmanMixture(2, divergence="cosine", random_state=0).fit(X)
    # the cap the warning names is the one the fitted concentrations respect
    message = next(str(w.message) for w in record if "capped" in str(w.message))
    cap = float(re.search(r"capped at (\S+):", message).group(1))
    assert cap >= 1e8
    assert np.all(1.0 / gm.dispersion_ <= cap * (1 + 1e-12))
    s = gm.score_samples(X)
    assert np.all(np.isfinite(s))


def test_zero_row_refused():
    X, _, _ = _sample(d=4, n=20)
    X[5] = 0.0
    with pytest.raises(ValueError, match="all-zero row at row 5"):
        BregmanMixture(2, divergence="cosine").fit(X)


def test_select_n_clusters_with_cosine():
    from bregclust import select_n_clusters

    X, _, _ = _sample(d=6, kappas=(50.0, 50.0, 50.0), seed=5)
    sel = select_n_clusters(X, range(1, 7), divergence="cosine", random_state=0, n_init=5)
    assert sel.family == "vmf" and sel.n_clusters == 3
    np.testing.assert_allclose(np.linalg.norm(sel.estimator.cluster_centers_, axis=1), 1.0,
                               atol=1e-12)


def test_dask_equals_in_memory():
    da = pytest.importorskip("dask.array")
    X, _, _ = _sample(d=6, seed=3)
    C0 = X[[0, 200, 400]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = BregmanMixture(3, divergence="cosine", init=C0).fit(X)
        dX = da.from_array(X, chunks=(100, 6))
        b = BregmanMixture(3, divergence="cosine", init=C0).fit(dX)
    np.testing.assert_allclose(b.means_, a.means_, atol=1e-12)
    np.testing.assert_allclose(b.dispersion_, a.dispersion_, rtol=1e-10)
    np.testing.assert_allclose(b.lower_bounds_, a.lower_bounds_, rtol=1e-12)
    np.testing.assert_allclose(b.score_samples(dX).compute(), a.score_samples(X), rtol=1e-12,
                               atol=1e-12)


# ----------------------------------------------------------------------------- hard-moVMF
def test_hard_em_equals_naive_hard_em_and_never_decreases():
    X, _, _ = _sample(d=5, kappas=(5.0, 12.0), n=80, seed=3)
    rng = np.random.default_rng(1)
    M0 = naive.unit(rng.normal(size=(2, 5)))
    init = {"means": M0, "weights": np.array([0.4, 0.6]), "dispersion": np.array([0.5, 0.25])}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gm = BregmanMixture(2, divergence="cosine", init=init, max_iter=6, tol=0.0,
                            reg_dispersion=0.0, assignment="hard").fit(X)
        soft = BregmanMixture(2, divergence="cosine", init=init, max_iter=6, tol=0.0,
                              reg_dispersion=0.0).fit(X)
    M, kap, pi, hist = naive.vmf_em(X, M0, [2.0, 4.0], [0.4, 0.6], 6, hard=True)
    np.testing.assert_allclose(gm.lower_bounds_, hist, rtol=1e-10)
    np.testing.assert_allclose(gm.means_, M, atol=1e-9)
    np.testing.assert_allclose(1.0 / gm.dispersion_, kap, rtol=1e-7)
    np.testing.assert_allclose(gm.weights_, pi, rtol=1e-10)
    assert np.all(np.diff(gm.lower_bounds_) >= -1e-12)
    # the classification likelihood is below the mixture likelihood at the same start
    assert gm.lower_bounds_[0] < soft.lower_bounds_[0]


def test_hard_em_stops_at_a_fixed_point_of_its_partition():
    X, y, _ = _sample(d=8, seed=7)
    n, d = X.shape
    gm = BregmanMixture(3, divergence="cosine", assignment="hard", tol=1e-12,
                        reg_dispersion=0.0, random_state=0).fit(X)
    assert gm.converged_ and np.all(np.diff(gm.lower_bounds_) >= -1e-12)
    labels = gm.predict(X)
    # the labels: the most probable component by scipy's density (an independent oracle)
    logp = np.column_stack([np.log(w) + stats.vonmises_fisher(m, 1.0 / s).logpdf(X)
                            for w, m, s in zip(gm.weights_, gm.means_, gm.dispersion_)])
    np.testing.assert_array_equal(labels, logp.argmax(axis=1))
    # the parameters: the M-step of that partition (shares, mean directions, A_d^-1)
    for h in range(3):
        rows = X[labels == h]
        s = rows.sum(axis=0)
        assert gm.weights_[h] == pytest.approx(rows.shape[0] / n, rel=1e-12)
        np.testing.assert_allclose(gm.means_[h], s / np.linalg.norm(s), atol=1e-10)
        kappa = naive.mean_resultant_inverse(d, np.linalg.norm(s) / rows.shape[0])
        assert 1.0 / gm.dispersion_[h] == pytest.approx(kappa, rel=1e-7)
    assert gm.lower_bound_ == pytest.approx(float(logp.max(axis=1).mean()), rel=1e-10)
    from sklearn.metrics import adjusted_rand_score
    assert adjusted_rand_score(y, labels) > 0.95


def test_hard_em_sparse_dense_dask_and_other_families():
    X, _, _ = _sample(d=6, seed=3)
    C0 = X[[0, 200, 400]]
    kw = dict(divergence="cosine", init=C0, assignment="hard", max_iter=20)
    a = BregmanMixture(3, **kw).fit(X)
    b = BregmanMixture(3, **kw).fit(sp.csr_matrix(X))
    np.testing.assert_allclose(b.means_, a.means_, atol=1e-10)
    np.testing.assert_allclose(b.lower_bounds_, a.lower_bounds_, rtol=1e-10)
    da = pytest.importorskip("dask.array")
    c = BregmanMixture(3, **kw).fit(da.from_array(X, chunks=(100, 6)))
    np.testing.assert_allclose(c.means_, a.means_, atol=1e-12)
    np.testing.assert_allclose(c.lower_bounds_, a.lower_bounds_, rtol=1e-12)
    # classification EM is generic: a Gaussian mixture's never decreases either
    rng = np.random.default_rng(0)
    G = np.vstack([rng.normal(0, 1, (60, 2)), rng.normal(4, 0.5, (60, 2))])
    g = BregmanMixture(2, assignment="hard", reg_dispersion=0.0, random_state=0).fit(G)
    assert np.all(np.diff(g.lower_bounds_) >= -1e-12) and g.converged_


@pytest.mark.parametrize("bad", ["classification", 1, None])
def test_assignment_refused_with_the_choices(bad):
    X, _, _ = _sample(d=4, n=20)
    with pytest.raises(ValueError, match="assignment must be 'soft'"):
        BregmanMixture(2, divergence="cosine", assignment=bad).fit(X)


def test_mixture_refuses_bad_rows_at_fit_and_after():
    X, _, _ = _sample(d=4, n=20)
    bad = X.copy()
    bad[1, 1] = np.nan
    with pytest.raises(ValueError, match="NaN at row 1"):
        BregmanMixture(2, divergence="cosine").fit(bad)
    bad[1, 1] = np.inf
    with pytest.raises(ValueError, match="infinity at row 1"):
        BregmanMixture(2, divergence="cosine").fit(bad)
    with pytest.raises(ValueError, match="at least 2 features"):
        BregmanMixture(2, divergence="cosine").fit(X[:, :1])
    Z = X.copy()
    Z[3] = 0.0
    with pytest.raises(ValueError, match="all-zero row at row 3"):
        BregmanMixture(2, divergence="cosine").fit(sp.csr_matrix(Z))
    gm = BregmanMixture(2, divergence="cosine", random_state=0).fit(X)
    for method in ("predict", "predict_proba", "score_samples"):
        with pytest.raises(ValueError, match="all-zero row at row 3"):
            getattr(gm, method)(Z)


@pytest.mark.parametrize("assignment", ["soft", "hard"])
def test_integer_weights_equal_repeated_rows_and_input_unchanged(assignment):
    X, _, _ = _sample(d=5, n=40, seed=8)
    X = X * np.random.default_rng(8).uniform(0.5, 3.0, (X.shape[0], 1))  # not unit rows
    w = np.random.default_rng(9).integers(1, 4, X.shape[0])
    kept = X.copy()
    C0 = X[[0, 40, 80]]
    kw = dict(divergence="cosine", init=C0, assignment=assignment, tol=0.0, max_iter=15)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = BregmanMixture(3, **kw).fit(X, sample_weight=w)
        b = BregmanMixture(3, **kw).fit(np.repeat(X, w, axis=0))
    np.testing.assert_array_equal(X, kept)
    np.testing.assert_allclose(a.means_, b.means_, atol=1e-10)
    np.testing.assert_allclose(a.dispersion_, b.dispersion_, rtol=1e-8)
    np.testing.assert_allclose(a.weights_, b.weights_, rtol=1e-10)
    np.testing.assert_allclose(a.lower_bounds_, b.lower_bounds_, rtol=1e-10)
