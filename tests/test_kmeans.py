"""BregmanKMeans: scikit-learn oracle, monotone objective, estimator contract, bad input."""

import math
import pickle
import warnings

import naive
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import offset_blobs, require_data, uniform_points
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning

from bregclust import (
    BregmanKMeans,
    DomainError,
    EmptyClusterWarning,
    MultitaskBregmanClustering,
    bregman_kmeans_plusplus,
    get_divergence,
    register_divergence,
    unregister_divergence,
)
from bregclust.metrics import ari

CUSTOM = "test_kmeans_exp"


@pytest.fixture(scope="module", autouse=True)
def custom_generator():
    """A test generator phi(x) = exp(x), registered for this module's tests, removed after."""
    register_divergence(CUSTOM, phi=lambda x: math.exp(x), dphi=lambda x: math.exp(x),
                        overwrite=True)
    yield
    unregister_divergence(CUSTOM)


SPD = np.array([[2.0, 0.4, 0.0], [0.4, 1.0, 0.1], [0.0, 0.1, 0.5]])
BUILTINS = ["sqeuclidean", "mahalanobis", "kl", "itakura_saito", "l1_subgradient", CUSTOM]


def blobs(div, n=150, rng=None):
    rng = rng or np.random.default_rng(0)
    lab = rng.integers(0, 3, n)
    if div in ("kl",):
        rates = np.array([[1.0, 5.0, 0.2], [6.0, 0.5, 2.0], [0.3, 0.3, 8.0]])
        return rng.poisson(rates[lab]).astype(float), lab
    if div in ("itakura_saito",):
        scale = np.array([[1.0, 5.0, 0.2], [6.0, 0.5, 2.0], [0.3, 0.3, 8.0]])
        return rng.gamma(4.0, scale[lab] / 4.0), lab
    means = np.array([[2.0, -2.0, 1.0], [-2.0, 2.0, 0.0], [1.0, 1.0, -3.0]])
    return means[lab] + 0.5 * rng.normal(size=(n, 3)), lab


def params_for(div):
    return {"A": SPD} if div == "mahalanobis" else None


def load_glass():
    home = require_data("uci_glass/glass.data")
    D = np.loadtxt(home / "uci_glass" / "glass.data", delimiter=",")
    return D[:, 1:10]


# ----------------------------------------------------------------------------- oracle: sklearn
@pytest.mark.nojit
@pytest.mark.parametrize("dataset", ["digits",
                                     pytest.param("glass", marks=pytest.mark.data("uci_glass"))])
@pytest.mark.parametrize("seed", [0, 1])
def test_sqeuclidean_equals_sklearn_lloyd(dataset, seed):
    X = load_digits().data if dataset == "digits" else load_glass()
    k = 10 if dataset == "digits" else 6
    C0, _ = kmeans_plusplus(X, k, random_state=seed)
    sk = KMeans(k, init=C0, n_init=1, algorithm="lloyd", tol=0.0, max_iter=500).fit(X)
    ours = BregmanKMeans(k, init=C0, n_init=1, tol=0.0, max_iter=500).fit(X)
    assert np.array_equal(ours.labels_, sk.labels_)
    assert ours.inertia_ == pytest.approx(sk.inertia_, rel=1e-9)
    assert np.allclose(ours.cluster_centers_, sk.cluster_centers_, rtol=1e-10, atol=1e-10)


@pytest.mark.nojit
def test_matches_naive_lloyd_for_kl():
    X, _ = blobs("kl", n=60)
    div = get_divergence("kl")
    C0 = X[[0, 1, 2]] + 0.5
    labels, C = naive.lloyd(X, C0, div)
    km = BregmanKMeans(3, divergence="kl", init=C0, smoothing=0.0, tol=0.0).fit(X)
    assert np.array_equal(km.labels_, labels)
    assert np.allclose(km.cluster_centers_, C)


# ----------------------------------------------------------------------------- monotone objective
@pytest.mark.nojit
@pytest.mark.parametrize("div", BUILTINS)
@pytest.mark.parametrize("smoothing", [0.0, 2.0])
def test_objective_non_increasing(div, smoothing):
    X, y = blobs(div)
    if div == CUSTOM:
        X = X / 3.0
    km = BregmanKMeans(3, divergence=div, divergence_params=params_for(div), smoothing=smoothing,
                       random_state=0, tol=0.0, init="random", n_init=3).fit(X)
    h = np.array(km.objective_history_)
    assert len(h) == km.n_iter_ + 1
    assert (np.diff(h) <= 1e-10 * abs(h[0])).all()
    assert km.labels_.shape == (X.shape[0],)
    # l1 is nearly constant on data of one sign pattern; unsmoothed kl seeds on count vectors
    # with zeros sit on the domain boundary (infinite divergences) - the reason for smoothing.
    if div != "l1_subgradient" and not (div == "kl" and smoothing == 0.0):
        from sklearn.metrics import adjusted_rand_score
        assert adjusted_rand_score(y, km.labels_) > 0.8
    expected = float(km.transform(X)[np.arange(len(X)), km.labels_].sum())
    assert km.inertia_ == pytest.approx(expected, rel=1e-9, abs=1e-9)
    assert km.score(X) == pytest.approx(-km.inertia_, rel=1e-9, abs=1e-9)


@pytest.mark.nojit
def test_smoothing_keeps_kl_finite_on_sparse_counts():
    rng = np.random.default_rng(3)
    X = sp.random(200, 40, density=0.05, random_state=1, format="csr") * 10
    X.data = np.ceil(X.data)
    km = BregmanKMeans(4, divergence="kl", random_state=rng.integers(1 << 30)).fit(X)
    # 95% zeros: "auto" is three average cluster masses, 3 * 200 / 4
    assert km.smoothing_ == 150.0
    assert np.isfinite(km.inertia_)
    assert (km.cluster_centers_ > 0).all()
    assert np.isfinite(km.transform(X)).all()


def test_auto_smoothing_rule():
    from bregclust.kmeans import auto_smoothing

    X = sp.random(200, 40, density=0.05, random_state=1, format="csr")
    assert auto_smoothing(X, "kl", 4) == 150.0
    assert auto_smoothing(X, "itakura_saito", 8, sample_weight=np.full(200, 2.0)) == 150.0
    assert auto_smoothing(X, "sqeuclidean", 4) == 0.0
    dense = np.abs(np.random.default_rng(0).normal(size=(50, 4))) + 0.1
    assert auto_smoothing(dense, "kl", 4) == 1.0
    assert auto_smoothing(dense, "kl", 4, sample_weight=np.full(50, 3.0)) == 3.0
    # the same rule for the dense and the sparse form of one matrix, and in the estimators
    assert auto_smoothing(X.toarray(), "kl", 4) == 150.0
    Xc = X.copy()
    Xc.data = np.ceil(Xc.data * 10)
    assert BregmanKMeans(4, divergence="kl", random_state=0).fit(Xc).smoothing_ == 150.0
    mbc = MultitaskBregmanClustering([4, 5], divergence="kl", random_state=0).fit([Xc, Xc])
    assert mbc.smoothing_ == [150.0, 120.0]


@pytest.mark.nojit
def test_sparse_and_dense_agree():
    X, _ = blobs("kl")
    Xs = sp.csr_matrix(X)
    a = BregmanKMeans(3, divergence="kl", random_state=5, n_init=2).fit(X)
    b = BregmanKMeans(3, divergence="kl", random_state=5, n_init=2).fit(Xs)
    assert np.array_equal(a.labels_, b.labels_)
    assert np.allclose(a.cluster_centers_, b.cluster_centers_, rtol=1e-12)
    assert a.inertia_ == pytest.approx(b.inertia_, rel=1e-12)
    assert sp.issparse(Xs)  # input untouched and still sparse


@pytest.mark.nojit
def test_sample_weight_equals_repetition():
    X, _ = blobs("sqeuclidean", n=60)
    w = np.random.default_rng(1).integers(1, 4, 60)
    C0 = X[[0, 1, 2]]
    a = BregmanKMeans(3, init=C0, tol=0.0).fit(X, sample_weight=w)
    b = BregmanKMeans(3, init=C0, tol=0.0).fit(np.repeat(X, w, axis=0))
    assert np.allclose(a.cluster_centers_, b.cluster_centers_)
    assert a.inertia_ == pytest.approx(b.inertia_)


@pytest.mark.nojit
def test_empty_cluster_is_reseeded_with_warning():
    X, _ = blobs("sqeuclidean", n=90)
    C0 = np.vstack([X[:2], [[100.0, 100.0, 100.0]]])
    with pytest.warns(EmptyClusterWarning, match="re-seeded with the points farthest"):
        km = BregmanKMeans(3, init=C0, tol=0.0).fit(X)
    assert np.bincount(km.labels_, minlength=3).min() > 0
    h = np.array(km.objective_history_)
    assert (np.diff(h) <= 1e-10 * h[0]).all()


@pytest.mark.nojit
def test_kmeans_plusplus_seeds_are_data_points_and_reproducible():
    X, _ = blobs("kl")
    C1, idx1 = bregman_kmeans_plusplus(X, 3, "kl", random_state=0)
    C2, idx2 = bregman_kmeans_plusplus(X, 3, "kl", random_state=0)
    assert np.array_equal(idx1, idx2) and len(set(idx1.tolist())) == 3
    assert np.array_equal(C1, X[idx1])
    Cs, _ = bregman_kmeans_plusplus(X, 3, "kl", random_state=0, smoothing=1.0)
    assert (Cs > 0).all()


@pytest.mark.nojit
def test_predict_transform_consistent():
    X, _ = blobs("itakura_saito")
    km = BregmanKMeans(3, divergence="is", random_state=0).fit(X)
    assert np.array_equal(km.predict(X), km.transform(X).argmin(axis=1))
    assert np.array_equal(km.fit_predict(X), km.labels_)


# ----------------------------------------------------------------------------- contract
@pytest.mark.nojit
def test_pickle_and_reproducible():
    X, _ = blobs("mahalanobis")
    km = BregmanKMeans(3, divergence="mahalanobis", divergence_params={"A": SPD},
                       random_state=7).fit(X)
    again = pickle.loads(pickle.dumps(km))
    assert np.array_equal(again.predict(X), km.predict(X))
    assert np.array_equal(again.transform(X), km.transform(X))
    km2 = BregmanKMeans(3, divergence="mahalanobis", divergence_params={"A": SPD},
                        random_state=7).fit(X)
    assert np.array_equal(km2.labels_, km.labels_)
    assert np.array_equal(km2.cluster_centers_, km.cluster_centers_)


@pytest.mark.nojit
def test_custom_divergence_pickles_by_name():
    X, _ = blobs("sqeuclidean")
    km = BregmanKMeans(3, divergence=CUSTOM, random_state=0).fit(X / 3)
    again = pickle.loads(pickle.dumps(km))
    assert again.divergence_.name == CUSTOM
    assert np.array_equal(again.predict(X / 3), km.labels_)


@pytest.mark.nojit
def test_inputs_not_mutated():
    X, _ = blobs("kl")
    Xs = sp.csr_matrix(X)
    X0, Xs0 = X.copy(), Xs.copy()
    w = np.ones(len(X))
    C0 = X[:3] + 1.0
    C00 = C0.copy()
    BregmanKMeans(3, divergence="kl", init=C0).fit(X, sample_weight=w)
    BregmanKMeans(3, divergence="kl", random_state=0).fit(Xs)
    assert np.array_equal(X, X0) and np.array_equal(C0, C00) and (w == 1).all()
    assert (Xs != Xs0).nnz == 0


# ----------------------------------------------------------------------------- bad input
@pytest.mark.nojit
def test_bad_input_messages():
    X, _ = blobs("sqeuclidean")
    bad = X.copy()
    bad[4, 1] = np.nan
    with pytest.raises(ValueError, match="NaN at row 4, column 1"):
        BregmanKMeans(3).fit(bad)
    bad[4, 1] = np.inf
    with pytest.raises(ValueError, match="infinity at row 4, column 1"):
        BregmanKMeans(3).fit(bad)
    with pytest.raises(DomainError, match="kl needs non-negative data.*Shift or rescale"):
        BregmanKMeans(3, divergence="kl").fit(X)
    Z = np.abs(X)
    Z[0, 0] = 0.0
    with pytest.raises(DomainError, match="itakura_saito needs positive data.*row 0, column 0"):
        BregmanKMeans(3, divergence="itakura_saito").fit(Z)
    with pytest.raises(ValueError, match="Expected 2D array"):
        BregmanKMeans(3).fit(X[:, 0])
    with pytest.raises(ValueError, match="n_clusters=200 is larger than n_samples=150"):
        BregmanKMeans(200).fit(X)
    with pytest.raises(ValueError, match="unknown divergence 'euclid'; known divergences"):
        BregmanKMeans(3, divergence="euclid").fit(X)
    with pytest.raises(ValueError, match="positive definite"):
        BregmanKMeans(3, divergence="mahalanobis",
                      divergence_params={"A": -np.eye(3)}).fit(X)
    with pytest.raises(ValueError, match="init array must have shape"):
        BregmanKMeans(3, init=np.zeros((2, 3))).fit(X)
    with pytest.raises(DomainError, match="needs positive centres"):
        BregmanKMeans(3, divergence="kl", init=np.zeros((3, 3))).fit(np.abs(X))
    with pytest.raises(ValueError, match="smoothing must be"):
        BregmanKMeans(3, smoothing="lots").fit(X)
    with pytest.raises(ValueError, match="init must be"):
        BregmanKMeans(3, init="kmeans").fit(X)
    km = BregmanKMeans(3, random_state=0).fit(X)
    with pytest.raises(ValueError, match="has 2 features, but BregmanKMeans is expecting 3"):
        km.predict(X[:, :2])
    with pytest.raises(DomainError, match="kl needs"):
        BregmanKMeans(3, divergence="kl").fit(np.abs(X)).predict(X)


@pytest.mark.nojit
def test_max_iter_warns():
    X, _ = blobs("sqeuclidean")
    with pytest.warns(ConvergenceWarning, match="reached max_iter=1"):
        BregmanKMeans(3, init="random", max_iter=1, tol=0.0, random_state=0).fit(X)


def test_centring_rule_is_weighted_and_measured_in_phi():
    """The fit centres data far from the origin by the weighted mean (zero weights do not
    count), decided from phi's row values: Mahalanobis in its own norm, so an offset along a
    direction A hardly weighs does not trigger it."""
    from bregclust import _blocks as B
    from bregclust import _conditioning as C

    def offset(div, X, w):
        return C.decide(div, C.block_stats(B.Block(X, w), div, phi=True)).offset

    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    w = rng.random(50)
    w[:20] = 0.0
    sq = get_divergence("sqeuclidean")
    assert offset(sq, X, w) is None
    Xf = X + 1e4
    np.testing.assert_allclose(offset(sq, Xf, w), (w @ Xf) / w.sum())
    X2 = X.copy()
    X2[:, 0] += 1e4
    mah = get_divergence("mahalanobis", A=np.diag([1e-12, 1.0, 1.0]))
    assert offset(mah, X2, w) is None
    assert offset(sq, X2, w) is not None
    # end to end: far from the origin, weighted, the same partition as near it
    C0 = X[[20, 30, 40]]
    a = BregmanKMeans(3, init=C0, n_init=1).fit(X, sample_weight=w)
    b = BregmanKMeans(3, init=C0 + 1e8, n_init=1).fit(X + 1e8, sample_weight=w)
    assert np.array_equal(a.labels_, b.labels_)
    np.testing.assert_allclose(b.cluster_centers_ - 1e8, a.cluster_centers_, atol=1e-6)


# ----------------------------------------------------------------------------- float32
def _float32_blobs(seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.uniform(1.0, 10.0, size=(4, 12))
    X = np.vstack([c * rng.uniform(0.8, 1.2, size=(60, 12)) for c in centres])
    return X[rng.permutation(X.shape[0])]


@pytest.mark.parametrize("name", ["sqeuclidean", "kl", "itakura_saito", "mahalanobis"])
def test_float32_input_stays_float32_and_gives_the_float64_labels(name):
    """float32 data are clustered in float32 (the GEMM in float32, sums in float64): centres,
    transform and the pairwise matrix come back float32, labels equal the float64 fit's."""
    import dask.array as da

    X = _float32_blobs()
    params = {"A": np.eye(12) + 0.2} if name == "mahalanobis" else None
    kw = dict(divergence=name, divergence_params=params, random_state=0)
    ref = BregmanKMeans(4, **kw).fit(X)
    X32 = X.astype(np.float32)
    inputs = [X32, da.from_array(X32, chunks=(70, -1))]
    if name in ("sqeuclidean", "kl"):
        inputs.append(sp.csr_matrix(X32))
    for Xf in inputs:
        km = BregmanKMeans(4, **dict(kw, init=ref.cluster_centers_)).fit(Xf)
        labels = np.asarray(km.labels_.compute() if hasattr(km.labels_, "compute") else km.labels_)
        assert np.array_equal(labels, ref.labels_)
        assert km.cluster_centers_.dtype == np.float32
        T = km.transform(Xf)
        T = np.asarray(T.compute() if hasattr(T, "compute") else T)
        assert T.dtype == np.float32
        np.testing.assert_allclose(T, ref.transform(X), rtol=1e-4, atol=1e-4 * np.abs(T).max())
        np.testing.assert_allclose(km.inertia_, ref.inertia_, rtol=1e-5)
    assert X32.dtype == np.float32  # input untouched
    div = get_divergence(name, **(params or {}))
    assert div.pairwise(X32[:5], ref.cluster_centers_).dtype == np.float32


def test_float16_is_refused_with_the_fix():
    X = _float32_blobs().astype(np.float16)
    with pytest.raises(TypeError, match=r"float16.*astype\('float32'\)"):
        BregmanKMeans(4).fit(X)
    with pytest.raises(TypeError, match="float16"):
        get_divergence("kl").pairwise(X, np.ones((2, 12)))


def test_pandas_input_feature_names_and_set_output():
    pd = pytest.importorskip("pandas")
    X = _float32_blobs().astype(np.float64)
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    km = BregmanKMeans(4, random_state=0).fit(df)
    assert list(km.feature_names_in_) == list(df.columns)
    assert list(km.get_feature_names_out()) == [f"bregmankmeans{j}" for j in range(4)]
    out = km.set_output(transform="pandas").transform(df)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == list(km.get_feature_names_out())
    np.testing.assert_allclose(out.to_numpy(), BregmanKMeans(4, random_state=0).fit(X).transform(X))
    with pytest.warns(UserWarning, match="feature names"):
        km.predict(X)  # fitted with names, predicted without: scikit-learn's warning


def test_verbose_shows_a_progress_bar_with_the_objective(capsys):
    X = _float32_blobs().astype(np.float64)
    BregmanKMeans(4, random_state=0, verbose=1).fit(X)
    out, err = capsys.readouterr()
    assert "BregmanKMeans restart 0" in err and "objective" in err  # the bar, on stderr
    assert "BregmanKMeans restart 0: objective" in out  # the summary line of each restart
    BregmanKMeans(4, random_state=0).fit(X)
    assert capsys.readouterr() == ("", "")


def test_an_exception_in_a_user_generator_surfaces_once_as_the_users():
    from bregclust import register_divergence, unregister_divergence

    def phi(x):
        if x > 5.0:
            raise ValueError("phi out of its range")
        return x * x

    register_divergence("km_raising", phi=phi, dphi=lambda x: 2.0 * x)
    try:
        X = np.random.default_rng(0).normal(size=(300, 20)) * 3.0
        with pytest.raises(ValueError, match="phi out of its range"):
            get_divergence("km_raising").pairwise(X, X[:4])
        with pytest.raises(ValueError, match="phi out of its range"):
            BregmanKMeans(3, divergence="km_raising", random_state=0).fit(X)
        # inside its range it clusters
        BregmanKMeans(3, divergence="km_raising", random_state=0).fit(X / 10.0)
    finally:
        unregister_divergence("km_raising")


def test_a_nan_from_a_user_generator_is_named_not_called_an_overflow():
    import math
    import re

    import scipy.sparse as sp

    from bregclust import register_divergence, unregister_divergence

    register_divergence("km_nan", phi=lambda x: math.nan if x > 5.0 else x * x,
                        dphi=lambda x: 2.0 * x)
    try:
        X = np.random.default_rng(0).normal(size=(300, 20)) * 3.0
        for A in (X, sp.csr_matrix(X)):
            with pytest.raises(ValueError, match=r"phi of divergence 'km_nan' returned NaN at "
                                                 r"x = \S+ \(row \d+\)") as err:
                BregmanKMeans(3, divergence="km_nan", random_state=0).fit(A)
            assert float(re.search(r"x = (\S+) ", str(err.value)).group(1)) > 5.0
        with pytest.raises(ValueError, match="returned NaN"):
            get_divergence("km_nan").pairwise(X, X[:4] / 10.0)
        km = BregmanKMeans(3, divergence="km_nan", random_state=0).fit(X / 10.0)
        assert np.isfinite(km.inertia_)
    finally:
        unregister_divergence("km_nan")


# -------------------------------------------------------- extreme values and parameter checks
@pytest.mark.parametrize("offset", [1e7, 1e8, 1e10])
def test_far_from_origin_clusters_are_found_and_inertia_matches_labels(offset):
    X, y = offset_blobs(offset)
    km = BregmanKMeans(2, random_state=0).fit(X)
    assert ari(y, km.labels_) == 1.0
    brute = float(((X - km.cluster_centers_[km.labels_]) ** 2).sum())
    assert km.inertia_ == pytest.approx(brute, rel=1e-6)
    A = np.array([[2.0, 0.3], [0.3, 1.0]])
    km = BregmanKMeans(2, divergence="mahalanobis", divergence_params={"A": A},
                       random_state=0).fit(X)
    assert ari(y, km.labels_) == 1.0
    D = X - km.cluster_centers_[km.labels_]
    assert km.inertia_ == pytest.approx(float(np.einsum("ij,jk,ik->", D, A, D)), rel=1e-6)


@pytest.mark.parametrize("divergence", ["kl", "itakura_saito", "l1_subgradient"])
def test_inertia_equals_objective_of_returned_labels(divergence):
    X = np.random.RandomState(3).gamma(2.0, 1.0, (60, 4)) + 0.1
    km = BregmanKMeans(3, divergence=divergence, random_state=0).fit(X)
    div = get_divergence(divergence)
    brute = sum(div.divergence(x, km.cluster_centers_[c]) for x, c in zip(X, km.labels_))
    assert km.inertia_ == pytest.approx(brute, rel=1e-12, abs=1e-12)


def test_unreseedable_empty_cluster_keeps_its_centre():
    # Only two points carry weight, so a third cluster can never be re-seeded.
    X = np.array([[0.0], [10.0], [20.0], [30.0]])
    w = np.array([1.0, 1.0, 0.0, 0.0])
    init = np.array([[0.0], [10.0], [25.0]])
    with pytest.warns(UserWarning, match="could not be re-seeded.*keep their previous centres"):
        km = BregmanKMeans(3, init=init, random_state=0).fit(X, sample_weight=w)
    assert km.cluster_centers_[2, 0] == 25.0  # previous centre, not the origin
    assert km.inertia_ == 0.0


def test_overflow_is_reported_as_overflow():
    X = np.random.RandomState(0).rand(20, 3) * 1e300
    try:
        with pytest.warns(RuntimeWarning, match="overflowed"):
            BregmanKMeans(2, random_state=0).fit(X)
    except ValueError as e:  # an error is fine too, if it names the overflow
        assert "smoothing" not in str(e) and "overflow" in str(e)


def test_kmeans_plusplus_parameters_are_checked():
    X = uniform_points()
    with pytest.raises(ValueError, match="smoothing must be >= 0.0"):
        bregman_kmeans_plusplus(X, 2, smoothing=-1)
    with pytest.raises(ValueError, match="smoothing must be a number, got NaN"):
        bregman_kmeans_plusplus(X, 2, smoothing=float("nan"))
    c_auto, _ = bregman_kmeans_plusplus(X, 2, smoothing="auto", random_state=0)
    c_zero, _ = bregman_kmeans_plusplus(X, 2, smoothing=0.0, random_state=0)
    assert np.array_equal(c_auto, c_zero)  # "auto" is 0 on R
    with pytest.raises(ValueError, match="n_local_trials must be >= 1"):
        bregman_kmeans_plusplus(X, 2, n_local_trials=-1)
    with pytest.raises(ValueError, match="sample_weight sums to infinity"):
        bregman_kmeans_plusplus(X, 2, sample_weight=np.full(20, 1e308))


def test_messages_say_an_integer():
    with pytest.raises(TypeError, match="max_iter must be an integer, got True"):
        BregmanKMeans(2, max_iter=True).fit(uniform_points())
    with pytest.raises(TypeError, match="n_init must be an integer"):
        BregmanKMeans(2, n_init=2.5).fit(uniform_points())


def _warned_here(fit, category):
    """``(filename, lineno)`` of the first ``category`` warning ``fit()`` raises."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit()
    hits = [w for w in caught if issubclass(w.category, category)]
    assert hits, f"no {category.__name__}"
    return hits[0].filename, hits[0].lineno


def test_empty_cluster_and_convergence_warnings_point_at_the_users_fit_line():
    """The warnings a fit raises name the line that called ``fit`` (here, the lambda's line
    in this file), not a frame of bregclust nor the frame above the user's call."""
    import inspect

    from bregclust import BisectingBregmanKMeans, BregmanCoclustering, BregmanMixture

    rng = np.random.default_rng(0)
    X = np.abs(np.vstack([rng.normal(size=(60, 3)), rng.normal(size=(60, 3)) + 8])) + 0.1
    C0 = np.array([[0.5] * 3, [8.5] * 3, [500.5] * 3])
    here = inspect.currentframe().f_lineno
    cases = [
        (EmptyClusterWarning, here + 2, lambda: BregmanKMeans(3, init=C0, n_init=1).fit(X)),
        (ConvergenceWarning, here + 4,
         lambda: BregmanKMeans(6, max_iter=1, n_init=1, random_state=0).fit(X)),
        (ConvergenceWarning, here + 6,
         lambda: BregmanMixture(2, max_iter=1, random_state=0).fit(X)),
        (ConvergenceWarning, here + 8,
         lambda: BisectingBregmanKMeans(5, max_iter=1, random_state=0).fit(X)),
        (EmptyClusterWarning, here + 10,
         lambda: BregmanCoclustering(3, 2, max_iter=1, random_state=0, n_init=1).fit(X)),
    ]
    for category, line, fit in cases:
        assert _warned_here(fit, category) == (__file__, line), (category.__name__, line)
