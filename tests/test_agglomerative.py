"""Agglomerative Bregman clustering: oracles (scipy Ward, brute-force Definition 3.7), the
paper's propositions, smoothing, dendrogram purity, the estimator and bad input."""

import math
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from _kernel_copies import entry
from conftest import require_data, run_isolated, uniform_points
from hypothesis import given, settings
from hypothesis import strategies as hst
from naive_agglomerative import (
    Reference,
    check_greedy,
    merges_from_linkage,
    naive_agglomerate,
    naive_dendrogram_purity,
    plain_generic_linkage,
    prop38_merge_cost,
)
from scipy.cluster.hierarchy import fcluster, is_monotonic, is_valid_linkage, linkage
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.metrics import adjusted_rand_score

from bregclust import DomainError, list_divergences, register_divergence, unregister_divergence
from bregclust import agglomerative as AG
from bregclust.agglomerative import (
    AgglomerativeBregman,
    bregman_linkage,
    bregman_merge_cost,
    dendrogram_purity,
)


def _sparse_counts(rng, n, d, density=0.2):
    X = rng.poisson(1.5, size=(n, d)).astype(float) * (rng.random((n, d)) < density)
    X[:, 0] += 1.0  # no empty rows
    return X


# ---------------------------------------------------------------------------- scipy Ward oracle
def test_ward_reproduces_scipy_on_glass():
    from bregclust.datasets import load_glass

    require_data("uci_glass/glass.data")
    X = load_glass().X
    Z = bregman_linkage(X, "sqeuclidean")
    Zs = linkage(X, "ward")
    assert is_valid_linkage(Z)
    np.testing.assert_array_equal(Z[:, [0, 1, 3]], Zs[:, [0, 1, 3]])
    np.testing.assert_allclose(np.sqrt(2.0 * Z[:, 2]), Zs[:, 2], rtol=1e-12, atol=1e-12)


def test_ward_reproduces_scipy_on_digits():
    X = load_digits().data
    # integer pixels give exactly tied merges, resolved differently by equally valid trees:
    # the heights agree on the raw data, the merges too once a 1e-7 jitter breaks the ties
    Z = bregman_linkage(X, "ward")
    assert is_valid_linkage(Z)
    np.testing.assert_allclose(np.sqrt(2.0 * Z[:, 2]), linkage(X, "ward")[:, 2], rtol=1e-12,
                               atol=1e-10)
    Xj = X + 1e-7 * np.random.default_rng(0).standard_normal(X.shape)
    Z = bregman_linkage(Xj, "ward")
    Zs = linkage(Xj, "ward")
    np.testing.assert_array_equal(Z[:, [0, 1, 3]], Zs[:, [0, 1, 3]])
    np.testing.assert_allclose(np.sqrt(2.0 * Z[:, 2]), Zs[:, 2], rtol=1e-12, atol=1e-10)


def test_generic_algorithm_equals_nn_chain_for_ward():
    X = np.random.default_rng(0).normal(size=(150, 4))
    Z1 = bregman_linkage(X, "sqeuclidean", algorithm="nn_chain")
    Z2 = bregman_linkage(X, "sqeuclidean", algorithm="generic")
    np.testing.assert_array_equal(Z1[:, [0, 1, 3]], Z2[:, [0, 1, 3]])
    np.testing.assert_allclose(Z1[:, 2], Z2[:, 2], rtol=1e-12)


def test_mahalanobis_is_ward_after_whitening():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 3))
    M = rng.normal(size=(3, 3))
    A = M @ M.T + 0.5 * np.eye(3)
    Z = bregman_linkage(X, "mahalanobis", model_params={"A": A})
    Zs = linkage(X @ np.linalg.cholesky(A), "ward")
    np.testing.assert_array_equal(Z[:, [0, 1, 3]], Zs[:, [0, 1, 3]])
    np.testing.assert_allclose(np.sqrt(2.0 * Z[:, 2]), Zs[:, 2], rtol=1e-10)


def test_weighted_ward_equals_duplicated_points():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(12, 2))
    w = np.array([1, 2, 1, 3, 1, 1, 2, 1, 1, 1, 2, 1], dtype=float)
    Z = bregman_linkage(X, "sqeuclidean", sample_weight=w)
    ref = Reference(X, "sqeuclidean", w=w)
    assert check_greedy(ref, merges_from_linkage(Z, 12)) == []


# ---------------------------------------------------------------------------- brute force
_CASES = {
    "kl_sparse": ("kl", "sparse", "multinomial", None),
    "kl_dense_nosmooth": ("kl", "gamma", "none", None),
    "kl_user_convex": ("kl", "sparse", (0.3, 0.5), None),
    "itakura_saito": ("itakura_saito", "gamma", None, None),
    "gaussian_diag": ("gaussian_diag", "normal", None, None),
    "gaussian_full": ("gaussian_full", "normal", None, None),
    "gaussian_full_nd": ("gaussian_full", "normal", "nd", None),
    "l1_subgradient": ("l1_subgradient", "normal", None, None),
    "multinomial": ("multinomial", "sparse", "multinomial", None),
    "multinomial_weighted": ("multinomial", "sparse", "multinomial", "lengths"),
    "gaussian_diag_weighted": ("gaussian_diag", "normal", None, "random"),
}


@pytest.mark.nojit
@pytest.mark.parametrize("case", sorted(_CASES))
def test_merges_equal_brute_force_definition_3_7(case):
    model, data, smoothing, weights = _CASES[case]
    rng = np.random.default_rng(sum(map(ord, case)))
    n = 13
    X = {"sparse": lambda: _sparse_counts(rng, n, 24),
         "gamma": lambda: rng.gamma(2.0, size=(n, 4)),
         "normal": lambda: rng.normal(size=(n, 3))}[data]()
    w = None
    if weights == "lengths":
        w = X.sum(axis=1)
    elif weights == "random":
        w = rng.random(n) + 0.5
    ref_smoothing = smoothing
    if model.startswith("gaussian") and smoothing is None:
        ref_smoothing = "nd" if model == "gaussian_diag" else "n"
    ref = Reference(X, model, w=w, smoothing=ref_smoothing)
    Z = bregman_linkage(X, model, smoothing="auto" if smoothing is None else smoothing,
                        sample_weight=w)
    assert is_valid_linkage(Z)
    assert check_greedy(ref, merges_from_linkage(Z, n), rtol=1e-8) == []


@pytest.mark.nojit
def test_merges_equal_brute_force_exactly_without_ties():
    X = np.random.default_rng(5).gamma(2.0, size=(11, 3))
    ref = Reference(X, "kl", smoothing="multinomial")
    naive = naive_agglomerate(ref)
    ours = merges_from_linkage(bregman_linkage(X, "kl"), 11)
    assert [{a, b} for a, b, _ in naive] == [{a, b} for a, b, _ in ours]
    np.testing.assert_allclose([c for *_, c in naive], [h for *_, h in ours], rtol=1e-10)


@pytest.mark.nojit
def test_custom_generator_works_and_matches_brute_force():
    name = "agglo_test_cosh"
    div = register_divergence(name, phi=lambda x: math.cosh(x), dphi=lambda x: math.sinh(x))
    try:
        X = np.random.default_rng(7).normal(size=(10, 3))
        Z = bregman_linkage(X, name)
        assert check_greedy(Reference(X, name), merges_from_linkage(Z, 10)) == []
        Z2 = bregman_linkage(X, div)  # a Divergence object works too
        np.testing.assert_array_equal(Z, Z2)
    finally:
        unregister_divergence(name)


# ---------------------------------------------------------------------------- the propositions
@pytest.mark.nojit
@pytest.mark.parametrize("model", ["sqeuclidean", "kl", "itakura_saito"])
def test_jensen_gap_equals_definition_and_prop_3_8(model):
    rng = np.random.default_rng(11)
    X = rng.gamma(1.5, size=(9, 5)) + 0.05
    w = rng.random(9) + 0.3
    i1, i2 = [0, 2, 3, 7], [1, 4, 8]
    fast = bregman_merge_cost(X, i1, i2, model=model, smoothing="none", sample_weight=w)
    ref = Reference(X, model, w=w)
    definition = ref.merge_cost(i1, i2)
    prop = prop38_merge_cost(X[i1], w[i1], X[i2], w[i2], model)
    np.testing.assert_allclose(fast, definition, rtol=1e-10)
    np.testing.assert_allclose(fast, prop, rtol=1e-10)


def test_ward_cost_closed_form():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(7, 3))
    c = bregman_merge_cost(X, [0, 1, 2], [3, 4, 5, 6])
    m1, m2 = X[:3].mean(0), X[3:].mean(0)
    np.testing.assert_allclose(c, 3 * 4 / 7 * np.sum((m1 - m2) ** 2), rtol=1e-12)


@pytest.mark.parametrize("model", ["gaussian_diag", "gaussian_full"])
def test_gaussian_cost_is_gaussian_kl_sum(model):
    X = np.random.default_rng(4).normal(size=(12, 3))
    H = np.array([0.3, 0.2, 0.5])
    c = bregman_merge_cost(X, np.arange(5), np.arange(5, 12), model=model, smoothing=(1.0, H))
    ref = Reference(X, model, smoothing=np.diag(H))
    np.testing.assert_allclose(c, ref.merge_cost(range(5), range(5, 12)), rtol=1e-10)


# ---------------------------------------------------------------------------- smoothing
def test_smoothing_keeps_singleton_costs_finite_in_high_dimension():
    X = np.random.default_rng(8).normal(size=(6, 20))  # d > n: every covariance is singular
    for model in ("gaussian_diag", "gaussian_full"):
        Z = bregman_linkage(X, model)
        assert np.isfinite(Z[:, 2]).all() and (Z[:, 2] > 0).all()
    Xc = _sparse_counts(np.random.default_rng(9), 8, 30, density=0.1)
    Z = bregman_linkage(Xc, "multinomial")
    assert np.isfinite(Z[:, 2]).all()


def test_gaussians_refuse_no_smoothing():
    X = np.random.default_rng(0).normal(size=(5, 2))
    with pytest.raises(ValueError, match="needs smoothing"):
        bregman_linkage(X, "gaussian_full", smoothing="none")


def test_multinomial_smoothing_is_the_confidence_term():
    X = _sparse_counts(np.random.default_rng(1), 6, 40)
    est = AgglomerativeBregman(2, model="multinomial").fit(X)
    m, p = X.sum(), 1 / 40
    assert f"{1 / m + math.sqrt(p * (1 - p) / m):.3g}" in est.smoothing_


def test_sparse_input_equals_dense_input():
    X = _sparse_counts(np.random.default_rng(12), 40, 50)
    Zd = bregman_linkage(X, "kl")
    Zs = bregman_linkage(sp.csr_matrix(X), "kl")
    np.testing.assert_array_equal(Zd[:, [0, 1, 3]], Zs[:, [0, 1, 3]])
    np.testing.assert_allclose(Zd[:, 2], Zs[:, 2], rtol=1e-12)


# ---------------------------------------------------------------------------- dendrogram purity
@pytest.mark.nojit
def test_dendrogram_purity_equals_pairwise_definition():
    rng = np.random.default_rng(13)
    for n, L in [(30, 3), (25, 2), (40, 5)]:
        X = rng.normal(size=(n, 2))
        y = rng.integers(0, L, n)
        Z = linkage(X, "average")
        assert dendrogram_purity(Z, y) == pytest.approx(naive_dendrogram_purity(Z, y), rel=1e-12)


@pytest.mark.nojit
def test_dendrogram_purity_hand_examples():
    Z = np.array([[0, 1, 1.0, 2], [2, 3, 1.0, 2], [4, 5, 2.0, 4]])
    assert dendrogram_purity(Z, [0, 0, 1, 1]) == 1.0
    assert dendrogram_purity(Z, ["a", "b", "a", "b"]) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="at least two points with the same label"):
        dendrogram_purity(Z, [0, 1, 2, 3])
    with pytest.raises(ValueError, match="shape"):
        dendrogram_purity(Z, [0, 1, 1])


# ---------------------------------------------------------------------------- heights, estimator
def test_cumulative_heights_are_monotone_and_cost_heights_may_invert():
    X = np.random.default_rng(14).gamma(0.7, size=(80, 6))
    Zc = bregman_linkage(X, "itakura_saito", heights="cumulative")
    Zh = bregman_linkage(X, "itakura_saito", heights="cost")
    assert is_valid_linkage(Zc) and is_monotonic(Zc)
    np.testing.assert_array_equal(Zc[:, [0, 1, 3]], Zh[:, [0, 1, 3]])
    np.testing.assert_allclose(Zc[:, 2], np.cumsum(Zh[:, 2]), rtol=1e-10)


def test_estimator_cut_matches_fcluster_for_ward():
    X = load_digits().data[:300]
    est = AgglomerativeBregman(n_clusters=7).fit(X)
    ref = fcluster(linkage(X, "ward"), 7, criterion="maxclust")
    assert est.n_clusters_ == 7
    assert adjusted_rand_score(est.labels_, ref) == 1.0
    assert est.children_.shape == (299, 2) and est.distances_.shape == (299,)
    np.testing.assert_array_equal(est.fit_predict(X), est.labels_)


def test_distance_threshold_cut():
    X = np.array([[0.0], [0.1], [5.0], [5.2], [20.0]])
    est = AgglomerativeBregman(None, distance_threshold=1.0).fit(X)
    assert est.n_clusters_ == 3
    np.testing.assert_array_equal(est.labels_, [0, 0, 1, 1, 2])


@pytest.mark.nojit
def test_transform_gives_merge_costs_to_top_clusters():
    rng = np.random.default_rng(15)
    X = rng.normal(size=(30, 3))
    Xnew = rng.normal(size=(4, 3))
    H = np.array([0.2, 0.3, 0.4])
    est = AgglomerativeBregman(3, model="gaussian_diag", smoothing=(1.0, H), n_features=3).fit(X)
    F = est.transform(Xnew)
    assert F.shape == (4, 3)
    ref = Reference(np.vstack([X, Xnew]), "gaussian_diag", smoothing=np.diag(H))
    for p in range(4):
        expect = ref.merge_cost(range(30), [30 + p])  # column 0 is the root
        assert F[p, 0] == pytest.approx(expect, rel=1e-10)
    # the next columns are the root's children
    Z = est.linkage_matrix_
    members = merges_from_linkage(Z, 30)
    child = members[-2][0] | members[-2][1]
    assert F[0, 1] == pytest.approx(ref.merge_cost(sorted(child), [30]), rel=1e-10)


@pytest.mark.nojit
def test_transform_sparse_kl_matches_merge_cost():
    X = _sparse_counts(np.random.default_rng(16), 25, 40)
    est = AgglomerativeBregman(2, model="kl", n_features=2).fit(X[:20])
    F = est.transform(X[20:])
    m = X[:20].sum()  # the smoothing is resolved on the training data
    eps = 1 / m + math.sqrt((1 / 40) * (1 - 1 / 40) / m)
    for p in range(5):  # column 0: the root, i.e. all 20 training points
        Xa = np.vstack([X[:20], X[20 + p]])
        ref = Reference(Xa, "kl")
        ref.T = Xa + eps
        assert F[p, 0] == pytest.approx(ref.merge_cost(range(20), [20]), rel=1e-9)


def test_estimator_pickle_clone_and_no_mutation():
    X = np.random.default_rng(17).gamma(2.0, size=(25, 4))
    X0 = X.copy()
    est = AgglomerativeBregman(3, model="kl", n_features=4).fit(X)
    np.testing.assert_array_equal(X, X0)
    est2 = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(est2.labels_, est.labels_)
    np.testing.assert_allclose(est2.transform(X[:3]), est.transform(X[:3]))
    c = clone(est)
    assert c.get_params() == est.get_params() and not hasattr(c, "labels_")


# ---------------------------------------------------------------------------- degenerate data
@pytest.mark.nojit
@pytest.mark.parametrize("model", ["sqeuclidean", "kl", "itakura_saito", "gaussian_diag",
                                   "gaussian_full", "l1_subgradient", "multinomial"])
def test_degenerate_inputs(model):
    same = np.ones((6, 3))
    Z = bregman_linkage(same, model)
    assert is_valid_linkage(Z) and np.allclose(Z[:, 2], 0.0, atol=1e-9)
    X = np.random.default_rng(18).gamma(2.0, size=(8, 3))
    X[:, 1] = 2.0  # a constant feature
    X[3] = X[5]  # a duplicate point
    Z = bregman_linkage(X, model)
    assert is_valid_linkage(Z) and np.isfinite(Z).all()
    assert bregman_linkage(X[:1], model).shape == (0, 4)
    Z2 = bregman_linkage(X[:2], model)
    assert Z2.shape == (1, 4) and Z2[0, 3] == 2
    labels = AgglomerativeBregman(1, model=model).fit(X[:1]).labels_
    np.testing.assert_array_equal(labels, [0])


# ---------------------------------------------------------------------------- bad input
@pytest.mark.nojit
def test_bad_input_messages():
    X = np.random.default_rng(19).gamma(2.0, size=(6, 2))
    bad = X.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        bregman_linkage(bad)
    with pytest.raises(DomainError, match="kl needs non-negative"):
        bregman_linkage(X - 3.0, "kl")
    with pytest.raises(DomainError, match="itakura_saito needs positive"):
        bregman_linkage(np.vstack([X, np.zeros((1, 2))]), "itakura_saito")
    with pytest.raises(ValueError, match="unknown model"):
        bregman_linkage(X, "no_such_model")
    with pytest.raises(ValueError, match="not reducible"):
        bregman_linkage(X, "kl", algorithm="nn_chain")
    with pytest.raises(ValueError, match="unknown smoothing"):
        bregman_linkage(X, "kl", smoothing="bogus")
    with pytest.raises(ValueError, match="applies to the Gaussian models"):
        bregman_linkage(X, "kl", smoothing="nd")
    with pytest.raises(ValueError, match="alpha must lie in"):
        bregman_linkage(X, "kl", smoothing=(1.5, 1.0))
    with pytest.raises(ValueError, match="heights must be"):
        bregman_linkage(X, heights="tall")
    with pytest.raises(ValueError, match="strictly positive"):
        bregman_linkage(X, sample_weight=[1, 1, 0, 1, 1, 1])
    with pytest.raises(ValueError, match="row 1 sums to 0"):
        bregman_linkage(np.array([[1.0, 2.0], [0.0, 0.0]]), "multinomial")
    with pytest.raises(ValueError, match="exactly one of n_clusters and distance_threshold"):
        AgglomerativeBregman(2, distance_threshold=1.0).fit(X)
    with pytest.raises(ValueError, match="must lie in"):
        AgglomerativeBregman(9).fit(X)
    est = AgglomerativeBregman(2).fit(X)
    with pytest.raises(ValueError, match="X has 3 features, but AgglomerativeBregman is expecting 2"):
        est.transform(np.ones((2, 3)))
    with pytest.raises(TypeError, match="model must be a string"):
        bregman_linkage(X, model=3)


def test_mahalanobis_matrix_of_the_wrong_size_is_a_clear_error():
    """``A`` not matching the features is refused by name before any matrix product, in fit,
    bregman_linkage and bregman_merge_cost; transform names the feature count."""
    X = np.random.default_rng(3).normal(size=(10, 3))
    for A in (np.eye(4), np.eye(2)):
        with pytest.raises(ValueError, match=r"mahalanobis A must be \(n_features, n_features\) "
                                             r"= \(3, 3\) for X, got \(\d, \d\)"):
            AgglomerativeBregman(2, model="mahalanobis", model_params={"A": A}).fit(X)
        with pytest.raises(ValueError, match="mahalanobis A must be"):
            bregman_linkage(X, "mahalanobis", model_params={"A": A}, algorithm="generic")
        with pytest.raises(ValueError, match="mahalanobis A must be"):
            bregman_merge_cost(X, [0], [1], model="mahalanobis", model_params={"A": A})
    est = AgglomerativeBregman(2, model="mahalanobis", model_params={"A": np.eye(3)}).fit(X)
    with pytest.raises(ValueError, match="X has 4 features, but AgglomerativeBregman is expecting 3"):
        est.transform(np.ones((2, 4)))


def _phi_undefined_above_5(x):
    if x > 5.0:
        raise ValueError("phi_undefined_above_5 at x > 5")
    return x * x


@pytest.mark.nojit
def test_exception_in_a_user_generator_surfaces_from_fit_and_transform():
    """A registered phi that raises on the data: fit raises the user's exception (not a tree
    built from NaN costs), and so does transform on new rows that reach it."""
    name = "agglo_test_raising"
    register_divergence(name, phi=_phi_undefined_above_5, dphi=lambda x: 2.0 * x)
    try:
        rng = np.random.default_rng(4)
        with pytest.raises(ValueError, match="phi_undefined_above_5 at x > 5"):
            AgglomerativeBregman(2, model=name).fit(rng.uniform(0.0, 9.0, size=(12, 2)))
        est = AgglomerativeBregman(2, model=name).fit(rng.uniform(0.0, 2.0, size=(12, 2)))
        with pytest.raises(ValueError, match="phi_undefined_above_5 at x > 5"):
            est.transform(np.full((2, 2), 50.0))
        assert np.isfinite(est.transform(np.ones((2, 2)))).all()
    finally:
        unregister_divergence(name)


# ------------------------------------------------------------------------- custom generators
def _kl_twin_name():
    name = "test_agg_kl_twin"
    if name not in list_divergences():
        def f(x):
            return x * math.log(x) - x if x > 0 else 0.0

        def df(x):
            return math.log(x) if x > 0 else -math.inf

        register_divergence(name, phi=f, dphi=df, dphi_inv=lambda t: math.exp(t),
                            domain="nonnegative")
    return name


@pytest.mark.parametrize("sparse", [False, True])
def test_custom_generator_engine_agrees_with_builtin(sparse):
    """The engine evaluating a registered generator through its function pointer gives the
    built-in kl engine's merges and costs (dense statistics and sparse supports)."""
    name = _kl_twin_name()
    rng = np.random.default_rng(31)
    X = rng.poisson(0.4, size=(40, 20)).astype(float) + (0.0 if sparse else 0.5)
    if sparse:
        X[X.sum(axis=1) == 0, 0] = 1.0
        X = sp.csr_matrix(X)
    smoothing = (0.2, 1.0, "cone")
    Zb = bregman_linkage(X, "kl", smoothing=smoothing)
    Zc = bregman_linkage(X, name, smoothing=smoothing)
    np.testing.assert_array_equal(Zb[:, [0, 1, 3]], Zc[:, [0, 1, 3]])
    np.testing.assert_allclose(Zb[:, 2], Zc[:, 2], rtol=1e-12, atol=1e-12)
    a = AgglomerativeBregman(3, model="kl", smoothing=smoothing).fit(X)
    b = AgglomerativeBregman(3, model=name, smoothing=smoothing).fit(X)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_allclose(a.transform(X), b.transform(X), rtol=1e-12, atol=1e-12)


def _driver_linkage(plan, Xv, w, pruned, kcand=0, nthreads=2):
    """Slot merges of one generic driver run explicitly (the estimators pick the exact driver
    for small sparse fits while the pruned one is not compiled)."""
    from bregclust._kernels import linkage_generic as KG
    from bregclust._kernels import linkage_pruned as KP

    n = Xv.shape[0]
    si = np.zeros(n - 1, dtype=np.int64)
    sj = np.zeros(n - 1, dtype=np.int64)
    h = np.zeros(n - 1)
    stats = np.zeros(KG.N_STATS, dtype=np.int64)
    driver = KP.pruned_linkage if pruned else KG.generic_linkage
    st = plan.state(Xv, w)
    status = driver(plan.kind, st, plan.fc, plan.gcode, plan.fn, si, sj, h, nthreads, kcand, stats,
                    n - 1, AG._top_buffers(st, 0), *AG._driver_pointers(driver, st, plan))
    assert status == KG.OK
    return si, sj, h, stats


# ---------------------------------------------------------------------------- engine: exact speed-ups
@pytest.mark.parametrize("model,data", [
    ("kl", "dense"), ("kl", "sparse"), ("multinomial", "sparse"), ("itakura_saito", "dense"),
    ("l1_subgradient", "dense"), ("gaussian_diag", "dense"), ("custom", "dense"),
    ("custom", "sparse"),
])
def test_each_driver_equals_the_plain_algorithm_and_definition_3_7(model, data):
    """The exact generic driver (every model) and the pruned one (sparse supports) give the
    plain generic algorithm's merges and heights bit for bit, and the estimator's linkage
    (whichever driver it picks) greedy merges by Definition 3.7 evaluated from the points."""
    rng = np.random.default_rng(23)
    n = 16
    if data == "sparse":
        X = _sparse_counts(rng, n, 24, density=0.15)
    else:
        X = rng.gamma(2.0, 1.0, size=(n, 4)) - (2.0 if model == "l1_subgradient" else 0.0)
    name = _kl_twin_name() if model == "custom" else model
    smoothing = (0.3, 0.5) if model in ("kl", "custom") else "auto"
    Xv, w = AG._validate(X, name, None, None)
    plan = AG._build_plan(Xv, w, name, None, smoothing)
    assert (plan.smax > 0) == (data == "sparse")
    ri, rj, rh = plain_generic_linkage(plan, Xv, w)
    for pruned in ([False, True] if data == "sparse" else [False]):
        si, sj, h, _ = _driver_linkage(plan, Xv, w, pruned)
        np.testing.assert_array_equal(si, ri)
        np.testing.assert_array_equal(sj, rj)
        np.testing.assert_array_equal(h, rh)
    ref_smoothing = {"multinomial": "multinomial", "gaussian_diag": "nd"}.get(model, smoothing)
    ref = Reference(X, name, smoothing=None if ref_smoothing == "auto" else ref_smoothing)
    Z = bregman_linkage(X, name, smoothing=smoothing)
    assert check_greedy(ref, merges_from_linkage(Z, n), rtol=1e-8) == []


@pytest.mark.parametrize("model,case", [
    ("multinomial", "sparse"), ("kl", "sparse"), ("kl", "duplicates"), ("itakura_saito", "dense"),
    ("gaussian_diag", "dense"), ("gaussian_full", "dense"), ("l1_subgradient", "dense"),
])
def test_engine_equals_plain_generic_algorithm_bit_for_bit(model, case):
    """Candidate lists and parallel cost passes change no merge and no height: the engine equals
    the plain generic algorithm (full rescans) on the same cost kernels, ties included."""
    rng = np.random.default_rng(7)
    n = 70 if model != "gaussian_full" else 40
    if case == "dense":
        X = rng.gamma(2.0, 1.0, size=(n, 5))
    else:
        X = _sparse_counts(rng, n, 40, density=0.15)
        if case == "duplicates":  # exact ties: zero-cost merges between repeated rows
            X[n // 2:] = X[: n - n // 2]
    Xv, w = AG._validate(X, model, None, None)
    plan = AG._build_plan(Xv, w, model, None, "auto")
    si, sj, h, _ = AG._run(Xv, w, plan, "generic")
    ri, rj, rh = plain_generic_linkage(plan, Xv, w)
    np.testing.assert_array_equal(si, ri)
    np.testing.assert_array_equal(sj, rj)
    np.testing.assert_array_equal(h, rh)


# ---------------------------------------------------------------------------- hostile input
def test_ward_overflow_is_refused():
    X = np.random.RandomState(0).rand(20, 3)
    with pytest.raises(ValueError, match="merge costs of model 'sqeuclidean' overflow float64"):
        bregman_linkage(X * 1e300)
    with pytest.raises(ValueError, match="merge costs of model 'sqeuclidean' overflow float64"):
        bregman_linkage(np.array([[0.0], [1e155], [5.0]]))
    # the estimator needs only the merge order, which stays exact: it warns
    with pytest.warns(RuntimeWarning, match="overflow float64.*labels_ and children_ are exact"):
        est = AgglomerativeBregman(2).fit(X * 1e300)
    assert np.array_equal(est.labels_, AgglomerativeBregman(2).fit(X).labels_)
    with pytest.raises(ValueError, match="sample_weight sums to infinity"):
        AgglomerativeBregman(2).fit(X, sample_weight=np.full(20, 1e308))
    # large but representable: a correct, valid result
    Z = bregman_linkage(X * 1e150)
    assert is_valid_linkage(Z)
    Z1 = bregman_linkage(X)
    np.testing.assert_array_equal(Z[:, [0, 1, 3]], Z1[:, [0, 1, 3]])
    np.testing.assert_allclose(Z[:, 2], Z1[:, 2] * 1e300, rtol=1e-12)


@pytest.mark.parametrize("model", ["gaussian_diag", "gaussian_full"])
@pytest.mark.parametrize("scale", [1e300, 1e-300])
def test_gaussian_models_are_scale_invariant(model, scale):
    X = np.random.RandomState(0).rand(20, 3)
    ref = AgglomerativeBregman(2, model=model).fit(X)
    est = AgglomerativeBregman(2, model=model).fit(X * scale)
    assert is_valid_linkage(est.linkage_matrix_)
    np.testing.assert_array_equal(est.labels_, ref.labels_)
    np.testing.assert_array_equal(est.children_, ref.children_)
    np.testing.assert_allclose(est.distances_, ref.distances_, rtol=1e-9)
    assert (est.distances_[-3:] > 0).all()
    # a power-of-two scale is exact: the same tree to the last bit
    Z2 = bregman_linkage(X * 2.0 ** 900, model)
    np.testing.assert_array_equal(Z2, ref.linkage_matrix_)


def test_cone_smoothing_domain_and_nonfinite_costs():
    X = np.random.RandomState(0).rand(20, 3)
    with pytest.raises(DomainError, match="smoothing z"):
        AgglomerativeBregman(2, model="kl", smoothing=(0.5, -100.0, "cone")).fit(X)
    with pytest.raises(ValueError, match="sample_weight sums to infinity"):
        AgglomerativeBregman(2, model="kl").fit(X, sample_weight=np.full(20, 1e308))
    # costs that overflow (weights near the float64 limit, sum still finite) are caught
    w = np.full(20, 1e306)
    with pytest.raises(ValueError, match="merge costs of model 'kl' overflow float64"):
        bregman_linkage(X * 1e300, "kl", sample_weight=w)
    est = AgglomerativeBregman(2, model="kl").fit(X, sample_weight=np.full(20, 1e300))
    assert est.n_clusters_ == 2 and np.unique(est.labels_).size == 2
    assert is_valid_linkage(est.linkage_matrix_)


def test_merge_cost_index_validation():
    X = np.random.RandomState(0).rand(20, 3)
    with pytest.raises(ValueError, match="members1 holds duplicate indices"):
        bregman_merge_cost(X, [0, 0, 0], [3, 4, 5])
    with pytest.raises(TypeError, match="members1 must hold integer row indices"):
        bregman_merge_cost(X, [0.9], [3])
    with pytest.raises(ValueError, match="members1 holds index -1, outside"):
        bregman_merge_cost(X, [-1], [19])
    with pytest.raises(ValueError, match="members2 holds index 20, outside"):
        bregman_merge_cost(X, [0], [20])
    with pytest.raises(ValueError, match="members1 must be a 1-D index array"):
        bregman_merge_cost(X, [[0]], [[3]])
    with pytest.raises(ValueError, match="boolean mask must have length n_samples=20"):
        bregman_merge_cost(X, np.ones(3, dtype=bool), [3])
    mask = np.zeros(20, dtype=bool)
    mask[[0, 1]] = True
    assert bregman_merge_cost(X, mask, [3]) == bregman_merge_cost(X, [0, 1], [3])


def test_transform_refuses_rows_fit_refuses():
    X = np.random.RandomState(0).rand(20, 3)
    est = AgglomerativeBregman(model="multinomial").fit(X)
    with pytest.raises(ValueError, match="row 0 sums to 0 in X"):
        est.transform(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="row 1 sums to 0 in X"):
        AgglomerativeBregman(model="multinomial").fit(np.vstack([X[:1], np.zeros((1, 3)), X]))
    assert np.isfinite(est.transform(X)).all()


def test_ward_overflow_never_crashes_the_interpreter():
    rc, out, err = run_isolated("""
        from scipy.cluster.hierarchy import is_valid_linkage
        def ok(f):
            try:
                Z = f()
            except ValueError as e:
                assert "overflow" in str(e).lower(), e
                return
            assert is_valid_linkage(Z), Z
        ok(lambda: bregman_linkage(np.random.RandomState(0).rand(20, 3) * 1e300))
        ok(lambda: bregman_linkage(np.array([[0.], [1e155], [5.]])))
        ok(lambda: AgglomerativeBregman(2).fit(np.random.RandomState(0).rand(20, 3),
                                              sample_weight=np.full(20, 1e308)).linkage_matrix_)
        print("OK")
    """)
    assert rc == 0 and "OK" in out, err[-2000:]


def test_gaussian_models_separate_blobs_at_extreme_scales():
    X = np.vstack([uniform_points(10, 3, 1), uniform_points(10, 3, 2) + 5])
    for model in ("gaussian_diag", "gaussian_full"):
        for s in (1e300, 1e-300):
            agg = AgglomerativeBregman(2, model=model).fit(X * s)
            assert sorted(np.bincount(agg.labels_)) == [10, 10]


def test_cone_smoothing_point_outside_the_domain_is_refused():
    X = uniform_points() + 0.1
    with pytest.raises(ValueError, match="smoothing"):
        AgglomerativeBregman(2, model="kl", smoothing=(0.5, -100., "cone")).fit(X)
    try:
        agg = AgglomerativeBregman(2, model="kl").fit(X, sample_weight=np.full(20, 1e308))
    except ValueError as e:
        assert "overflow" in str(e) or "sample_weight" in str(e)
    else:
        assert len(np.unique(agg.labels_)) == 2


@pytest.mark.parametrize("model", ["kl", "sqeuclidean", "itakura_saito"])
def test_smoothing_point_of_the_wrong_length_is_refused_naming_it(model):
    X = uniform_points() + 0.1  # 3 features
    for z in (np.full(5, 0.2), np.full((3, 3), 0.2)):
        with pytest.raises(ValueError, match=r"smoothing z must be a scalar or a \(3,\) vector"):
            AgglomerativeBregman(2, model=model, smoothing=(0.5, z, "convex")).fit(X)
    # a scalar or one value per feature is accepted
    for z in (0.2, np.full(3, 0.2)):
        AgglomerativeBregman(2, model=model, smoothing=(0.5, z, "convex")).fit(X)


def test_merge_cost_refuses_bad_member_indices():
    X = uniform_points()
    with pytest.raises(ValueError, match="duplicate|twice"):
        bregman_merge_cost(X, [0, 0, 0], [3, 4, 5])
    with pytest.raises((ValueError, TypeError), match="integer"):
        bregman_merge_cost(X, [0.9], [3])
    with pytest.raises(ValueError, match="range|-1"):
        bregman_merge_cost(X, [-1], [19])
    with pytest.raises(ValueError, match="1-D"):
        bregman_merge_cost(X, [[0, 1]], [3])


def test_multinomial_transform_refuses_a_zero_row():
    agg = AgglomerativeBregman(2, model="multinomial").fit(uniform_points() + 0.1)
    with pytest.raises(ValueError, match="sums to 0"):
        agg.transform(np.zeros((1, 3)))


# ---------------------------------------------------------------------------- pruning bounds
# the drivers compile some kernels without a Python entry point: the oracle tests below call
# a copy compiled from the same source with one (entry, tests/_kernel_copies.py)


def _clustered_state(X, model, sample_weight, merges, seed, smoothing="auto"):
    """Singleton state of ``X`` after ``merges`` random merges (clusters of mixed weights)."""
    from bregclust._kernels import agglomerative as KA

    Xv, w = AG._validate(X, model, None, sample_weight)
    plan = AG._build_plan(Xv, w, model, None, smoothing)
    st = plan.state(Xv, w)
    n, d = st[0].shape
    work = np.zeros((1, 1))
    ibuf = np.empty(2 * st[4].shape[1] + 1, dtype=st[4].dtype)
    rng = np.random.default_rng(seed)
    alive = list(range(n))
    for _ in range(merges):
        i, j = sorted(rng.choice(len(alive), size=2, replace=False))
        KA.merge(plan.kind, alive[i], alive[j], st, plan.fc, plan.gcode, plan.fn, work, ibuf)
        del alive[i]
    return plan, st, alive


def _bounds_and_costs(plan, st, alive):
    """Level-1 (where it applies) and level-2 bounds of every pair of live slots as the engine
    computes them (level 1 of a sparse pivot and kl: the log-free bound from the factors stored
    per slot, ``_level1s_rows``; of a dense pivot: ``_pivot_lower``'s), with the exact costs the
    engine would compute."""
    from bregclust._kernels import agglomerative as KA
    from bregclust._kernels import linkage_pruned as KP

    n, d = st[0].shape
    A, B, C, w, sup, slen, aux = st
    fc = plan.fc
    P = np.zeros((n if plan.gcode == KP._GEN_KL else 0, KP.N_SUMS))
    LG = np.zeros((P.shape[0], 2 * sup.shape[1] if P.shape[0] else 0))
    for x in alive if P.shape[0] else []:
        entry(KP._slot_sums)(x, st, fc, P, LG)
    pv = KP._make_pv(fc, P, LG)
    work = np.zeros((1, 1))
    out = []
    for b in alive:
        entry(KP._pivot)(b, st, fc, pv, 1)
        xs = np.array([x for x in alive if x != b], dtype=np.int64)
        lob = np.full(xs.size, np.nan)
        lvl = np.full(xs.size, -1, dtype=np.int8)
        if P.shape[0] and slen[b] >= 0:  # the engine's first pass for kl and a sparse pivot
            KP._level1s_rows(b, xs, 0, xs.size, w, C, P, sup, slen, LG, pv[2][3], lob, lvl)
        for first in (True, False):
            memo = np.zeros((KP.N_MEMO + 1, 3))
            for t, x in enumerate(xs):
                if first and lvl[t] == 1 and lob[t] == lob[t] and lob[t] != KP.NO_BOUND:
                    lo, level = lob[t], 1
                else:
                    lo, level = entry(KP._pivot_lower)(b, x, st, fc, plan.gcode, plan.fn, pv,
                                                       memo, 0.0, first and lvl[t] != 1)
                exact = KA.cost(plan.kind, min(x, b), max(x, b), st, fc, plan.gcode, plan.fn, work)
                out.append((lo, level, exact))
        entry(KP._pivot)(b, st, fc, pv, 0)
    return np.array(out)


@settings(max_examples=25, deadline=None)
@given(seed=hst.integers(0, 2**31 - 1), model=hst.sampled_from(["multinomial", "kl"]),
       weighted=hst.booleans(), smoothing=hst.sampled_from(["auto", "none", (0.3, 1.0, "cone")]))
def test_pruning_bounds_never_exceed_the_exact_cost(seed, model, weighted, smoothing):
    """Both pruning bounds are below the merge cost the engine computes, for every pair of
    clusters of mixed weights (integral sizes or real sample weights), and level 1 is used."""
    rng = np.random.default_rng(seed)
    n = 40
    X = _sparse_counts(rng, n, 40, density=0.2)
    sw = rng.uniform(0.2, 5.0, size=n) if weighted else None
    if model == "multinomial" and smoothing != "auto":
        smoothing = "auto"
    plan, st, alive = _clustered_state(X, model, sw, int(rng.integers(0, 30)), seed, smoothing)
    r = _bounds_and_costs(plan, st, alive)
    lo, level, exact = r[:, 0], r[:, 1], r[:, 2]
    assert np.all(lo <= exact), float(np.max(lo - exact))
    assert np.isfinite(lo).any()  # the bounds apply to the sparse clusters (not to dense ones)
    if smoothing != (0.3, 1.0, "cone"):  # a large pseudo-count makes level 1 too loose to use
        assert (level == 1).any()


def test_pruning_bound_is_tight_and_falls_back_for_other_generators():
    """Level 2 is the cost itself up to the rounding margin; a custom generator on sparse data
    gets level 2 only (no level-1 form), still below the exact cost."""
    rng = np.random.default_rng(3)
    X = _sparse_counts(rng, 30, 40, density=0.2)
    plan, st, alive = _clustered_state(X, "multinomial", None, 10, 3)
    r = _bounds_and_costs(plan, st, alive)
    l2 = r[r[:, 1] == 2]
    assert np.all(l2[:, 0] <= l2[:, 2])
    np.testing.assert_allclose(l2[:, 0], l2[:, 2], rtol=1e-5)
    name = "agglo_test_kl_copy"
    register_divergence(name, phi=lambda x: x * math.log(x) - x if x > 0 else 0.0,
                        dphi=lambda x: math.log(x), domain="nonnegative")
    try:
        plan, st, alive = _clustered_state(X, name, None, 10, 3, smoothing=(0.2, 1.0, "cone"))
        assert plan.smax > 0  # sparse supports
        r = _bounds_and_costs(plan, st, alive)
        assert set(np.unique(r[:, 1])) == {2.0}
        assert np.all(r[:, 0] <= r[:, 2])
        assert np.isfinite(r[:, 0]).all()
    finally:
        unregister_divergence(name)


@pytest.mark.parametrize("weights", ["none", "integral", "real", "extreme"])
@pytest.mark.parametrize("model,smoothing", [("multinomial", "auto"), ("kl", "none"),
                                             ("kl", (0.3, 1.0, "cone"))])
def test_pruned_engine_equals_plain_generic_algorithm(model, smoothing, weights):
    """With the pruning bounds active (sparse kl data, clusters of mixed weights) the merges and
    heights are the plain generic algorithm's, bit for bit."""
    rng = np.random.default_rng(11)
    n = 120
    X = _sparse_counts(rng, n, 60, density=0.12)
    X[n // 3: n // 3 + 10] = X[:10]  # exact ties
    sw = {"none": None, "integral": rng.integers(1, 4, size=n).astype(float),
          "real": rng.uniform(0.5, 3.0, size=n),
          "extreme": 10.0 ** rng.uniform(-5, 5, size=n)}[weights]
    Xv, w = AG._validate(X, model, None, sw)
    plan = AG._build_plan(Xv, w, model, None, smoothing)
    assert plan.smax > 0
    si, sj, h, _ = _driver_linkage(plan, Xv, w, pruned=True)
    ri, rj, rh = plain_generic_linkage(plan, Xv, w)
    np.testing.assert_array_equal(si, ri)
    np.testing.assert_array_equal(sj, rj)
    np.testing.assert_array_equal(h, rh)

def test_pruned_initial_lists_in_threads_do_not_change_the_tree_or_the_counters():
    """The pruned driver builds its initial candidate lists in blocks run by a thread pool: 1, 2
    or 3 threads (1, 16 or 24 blocks) give the same merges, heights and engine counters."""
    rng = np.random.default_rng(2)
    X = _sparse_counts(rng, 150, 60, density=0.12)
    Xv, w = AG._validate(X, "kl", None, None)
    plan = AG._build_plan(Xv, w, "kl", None, "auto")
    runs = [_driver_linkage(plan, Xv, w, pruned=True, nthreads=t) for t in (1, 2, 3)]
    for si, sj, h, stats in runs[1:]:
        np.testing.assert_array_equal(si, runs[0][0])
        np.testing.assert_array_equal(sj, runs[0][1])
        np.testing.assert_array_equal(h, runs[0][2])
        np.testing.assert_array_equal(stats, runs[0][3])


_DIRECT_PRUNED_CALL = """
import bregclust.agglomerative as AG
from bregclust._kernels import linkage_generic as KG, linkage_pruned as KP
rng = np.random.default_rng(4)
X = np.where(rng.random((60, 30)) < 0.15, rng.integers(1, 4, (60, 30)), 0).astype(float)
X[:, 0] += 1.0
Xv, w = AG._validate(sp.csr_matrix(X), "multinomial", None, None)
plan = AG._build_plan(Xv, w, "multinomial", None, "auto")
st = plan.state(Xv, w)
n = Xv.shape[0]
out = (np.zeros(n - 1, dtype=np.int64), np.zeros(n - 1, dtype=np.int64), np.zeros(n - 1))
print("STATUS", KP.pruned_linkage(plan.kind, st, plan.fc, plan.gcode, plan.fn, *out, 2, 0,
      np.zeros(KG.N_STATS, dtype=np.int64), n - 1, AG._top_buffers(st, 0),
      *AG._driver_pointers(KP.pruned_linkage, st, plan)))
"""


def test_pruned_driver_called_directly_in_a_fresh_process_loads_its_callbacks():
    """The pruned driver has no parallel loop of its own; its scan callback has one, which links
    against numba's threading layer when loaded from the cache. Called directly in a fresh
    process (no estimator started the threading layer), the second time from the cache, it
    runs instead of aborting the process ("Symbol not found: allocate_sched")."""
    for _ in range(2):  # the first run may compile (and cache) the callbacks, the second loads
        code, out, err = run_isolated(_DIRECT_PRUNED_CALL)
        assert code == 0, err[-2000:]
        assert "STATUS 0" in out


@pytest.mark.slow
def test_pruned_driver_reports_a_nan_cost_from_its_threaded_initial_lists():
    """A user generator that returns NaN at a merged mean: the initial lists (serial or in the
    thread pool) report it and the driver returns NAN_COST, which the estimator turns into a
    clear error."""
    from bregclust._kernels import linkage_generic as KG
    from bregclust._kernels import linkage_pruned as KP

    name = "agglo_test_nan_at_three_halves"
    register_divergence(name, phi=lambda x: math.nan if x == 1.5 else (
        x * math.log(x) - x if x > 0 else 0.0), dphi=lambda x: math.log(x), domain="nonnegative")
    try:
        rng = np.random.default_rng(0)
        X = np.zeros((40, 30))
        X[:, 0] = 1.0
        for i in range(40):
            X[i, rng.choice(30, 3, replace=False)] = rng.integers(1, 3, 3)
        Xv, w = AG._validate(sp.csr_matrix(X), name, None, None)
        plan = AG._build_plan(Xv, w, name, None, "none")
        assert plan.smax > 0
        n = Xv.shape[0]
        for nthreads in (1, 2):
            st = plan.state(Xv, w)
            out = (np.zeros(n - 1, dtype=np.int64), np.zeros(n - 1, dtype=np.int64), np.zeros(n - 1))
            status = KP.pruned_linkage(
                plan.kind, st, plan.fc, plan.gcode, plan.fn, *out, nthreads, 0,
                np.zeros(KG.N_STATS, dtype=np.int64), n - 1, AG._top_buffers(st, 0),
                *AG._driver_pointers(KP.pruned_linkage, st, plan))
            assert status == KG.NAN_COST
        AG.PRUNED_MIN_N, old = 10, AG.PRUNED_MIN_N
        try:
            with pytest.raises(ValueError, match="not finite"):
                AgglomerativeBregman(2, model=name, smoothing="none").fit(sp.csr_matrix(X))
        finally:
            AG.PRUNED_MIN_N = old
    finally:
        unregister_divergence(name)


def test_separable_state_kernel_matches_the_all_model_one():
    """``init_cache_separable`` (the state kernel of separable models) gives the cached terms
    of ``init_cache``, bit for bit, on sparse and dense statistics."""
    from bregclust._kernels import agglomerative as KA

    rng = np.random.default_rng(1)
    for X, model in ((_sparse_counts(rng, 50, 40, density=0.15), "kl"),
                     (rng.gamma(2.0, 1.0, size=(30, 5)), "itakura_saito")):
        Xv, w = AG._validate(X, model, None, None)
        plan = AG._build_plan(Xv, w, model, None, "auto")
        st = plan.state(Xv, w, init=False)
        st2 = tuple(a.copy() for a in st)
        KA.init_cache(plan.kind, st, plan.fc, plan.gcode, plan.fn, np.zeros((1, 1)))
        KA.init_cache_separable(st2, plan.fc, plan.gcode, plan.fn)
        assert np.any(st[2] != 0.0)
        np.testing.assert_array_equal(st[2], st2[2])


@pytest.mark.parametrize("kcand", [1, 2, 5])
@pytest.mark.parametrize("model,case", [("multinomial", "sparse"), ("kl", "duplicates"),
                                        ("itakura_saito", "dense")])
def test_short_candidate_lists_force_rescans_same_linkage(model, case, kcand):
    """Candidate lists of 1, 2 or 5 entries run out often: the refreshes then rescan (and, with
    the pruning bounds, fall back to exact list builds), dead entries of merged slots reach the
    heads of the lists, and the linkage is still the plain generic algorithm's, bit for bit."""
    from bregclust._kernels import linkage_generic as KG

    rng = np.random.default_rng(5)
    n = 90
    if case == "dense":
        X = rng.gamma(2.0, 1.0, size=(n, 4))
    else:
        X = _sparse_counts(rng, n, 50, density=0.15)
        if case == "duplicates":
            X[n // 2:] = X[: n - n // 2]
    Xv, w = AG._validate(X, model, None, None)
    plan = AG._build_plan(Xv, w, model, None, "auto")
    assert (plan.smax > 0) == (case != "dense")
    si, sj, h, stats = _driver_linkage(plan, Xv, w, plan.smax > 0, kcand=kcand)
    ri, rj, rh = plain_generic_linkage(plan, Xv, w)
    np.testing.assert_array_equal(si, ri)
    np.testing.assert_array_equal(sj, rj)
    np.testing.assert_array_equal(h, rh)
    assert stats[KG.ST_RESCAN] > 0 and stats[KG.ST_LISTHIT] > 0
    if case != "dense":  # pruning bounds: every pair bounded once in the initial scan
        assert stats[KG.ST_B_INIT] == n * (n - 1) // 2
        assert stats[KG.ST_B_RESCAN] > 0 and stats[KG.ST_B_MERGE] > 0
        assert stats[KG.ST_FULL] > 0  # lists whose pending head could not be certified


def _one_sided_sum(plan, st, x, r):
    """``h_x(r) = sum_{k in supp x} psi_k((1 - r) a_k + r c_k)`` in extended precision."""
    A, B, C, w, sup, slen, aux = st
    k = sup[x, :slen[x]]
    a = B[x, :slen[x]].astype(np.longdouble)
    c = plan.fc[1, k].astype(np.longdouble)
    m = (1 - np.longdouble(r)) * a + np.longdouble(r) * c
    f = np.where(m > 0, m * np.log(np.where(m > 0, m, 1)) - m, 0)
    return float(np.sum(f) - np.sum(plan.fc[0, k].astype(np.longdouble)))


def test_one_sided_table_chord_is_an_upper_bound_exact_on_the_grid():
    """The chord of the per-slot table of ``h_x`` (convex in ``r = wb / W``) is above ``h_x``
    everywhere, including beyond both ends of the grid, and equals it at grid points."""
    from bregclust._kernels import linkage_pruned as KP

    rng = np.random.default_rng(5)
    X = _sparse_counts(rng, 30, 60, density=0.15)
    plan, st, alive = _clustered_state(X, "multinomial", None, 12, 5)
    n, d = st[0].shape
    P = np.zeros((n, KP.N_SUMS))
    LG = np.zeros((n, st[4].shape[1]))
    sparse = [x for x in alive if st[5][x] >= 0]
    assert len(sparse) >= 10
    ratios = np.concatenate([2.0 ** rng.uniform(-20, 20, 40), [1.0, 2.0, 0.25, 2.0**-17, 2.0**17]])
    for x in sparse:
        entry(KP._slot_sums)(x, st, plan.fc, P, LG)
        scale = 1.0 + abs(P[x, 7 + KP.N_GRID])
        for q in ratios:
            wx, wb = 1.0, float(q)
            h = _one_sided_sum(plan, st, x, wb / (wx + wb))
            ch = entry(KP._chord_h)(x, wx, wb, P)
            assert ch >= h - 1e-12 * scale, (x, q, ch, h)
            if q in (1.0, 2.0, 0.25):  # grid points: the table value itself
                assert ch == pytest.approx(h, rel=1e-12, abs=1e-12 * scale)


@pytest.mark.parametrize("smoothing", ["auto", "none"])
def test_intersection_bounds_hold_for_extreme_weight_ratios(smoothing):
    """The log-free (level 1) and the intersection-form (level 2) bounds stay below the exact
    cost for weights from 1e-6 to 1e6 (ratios beyond the grid of the table, where the chord is
    loose but still an upper bound of the one-sided sum), and both levels are used."""
    rng = np.random.default_rng(8)
    n = 36
    X = _sparse_counts(rng, n, 60, density=0.12)
    sw = 10.0 ** rng.uniform(-6, 6, size=n)
    plan, st, alive = _clustered_state(X, "multinomial" if smoothing == "auto" else "kl", sw, 8,
                                       8, smoothing)
    assert plan.smax > 0
    r = _bounds_and_costs(plan, st, alive)
    lo, level, exact = r[:, 0], r[:, 1], r[:, 2]
    assert np.all(lo <= exact), float(np.max(lo - exact))
    sparse_pair = np.isfinite(lo)
    assert (level[sparse_pair] == 1).sum() > 0 and (level[sparse_pair] == 2).sum() > 0


# ---------------------------------------------------------------------------- data-mean rule
def _text_counts(rng, n=30, d=120):
    """Sparse counts (> 90% zeros), no empty row: the sparse branch of the auto rule."""
    X = rng.poisson(2.0, size=(n, d)).astype(float) * (rng.random((n, d)) < 0.04)
    X[np.arange(n), rng.integers(0, d, n)] += 1.0
    return X


def test_multinomial_auto_is_the_kmeans_rule_on_sparse_counts():
    """On sparse counts, "auto" shrinks every point (hence every cluster mean) three quarters of
    the way to the weighted data mean: k-means' auto pseudo-count 3 W / K at an average cluster."""
    from bregclust.kmeans import AUTO_SPARSE_CLUSTER_MASSES, auto_smoothing

    rng = np.random.default_rng(14)
    X = _text_counts(rng)
    assert auto_smoothing(X, "kl", 5) == AUTO_SPARSE_CLUSTER_MASSES * X.shape[0] / 5
    w = rng.random(X.shape[0]) + 0.5
    X0, w0 = X.copy(), w.copy()
    T = X / X.sum(axis=1, keepdims=True)
    z = w @ T / w.sum()
    z = np.maximum(z, 1e-12 * z.max())
    alpha = AUTO_SPARSE_CLUSTER_MASSES / (1 + AUTO_SPARSE_CLUSTER_MASSES)
    assert alpha == 0.75
    est = AgglomerativeBregman(3, model="multinomial").fit(X, sample_weight=w)
    assert est.smoothing_.startswith("data-mean rule")
    ref = bregman_linkage(X, "multinomial", smoothing=(alpha, z, "convex"), sample_weight=w)
    np.testing.assert_array_equal(est.linkage_matrix_[:, [0, 1, 3]], ref[:, [0, 1, 3]])
    np.testing.assert_allclose(est.linkage_matrix_[:, 2], ref[:, 2], rtol=1e-12, atol=1e-15)
    named = bregman_linkage(sp.csr_matrix(X), "multinomial", smoothing="data-mean",
                            sample_weight=w)
    np.testing.assert_allclose(named, est.linkage_matrix_, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(X, X0)  # inputs untouched
    np.testing.assert_array_equal(w, w0)
    # the merge cost is the Jensen gap of f = sum x log x at the shrunk cluster means
    i1, i2 = [0, 3, 5], [1, 2]
    m1 = (1 - alpha) * (w[i1] @ T[i1]) / w[i1].sum() + alpha * z
    m2 = (1 - alpha) * (w[i2] @ T[i2]) / w[i2].sum() + alpha * z
    W1, W2 = w[i1].sum(), w[i2].sum()
    m12 = (W1 * m1 + W2 * m2) / (W1 + W2)

    def f(v):
        return float(np.sum(v * np.log(v)))

    gap = W1 * f(m1) + W2 * f(m2) - (W1 + W2) * f(m12)
    cost = bregman_merge_cost(X, i1, i2, model="multinomial", sample_weight=w)
    np.testing.assert_allclose(cost, gap, rtol=1e-9)


def test_multinomial_confidence_term_stays_reachable_and_dense_default():
    rng = np.random.default_rng(15)
    X = _text_counts(rng)
    confidence = AgglomerativeBregman(3, model="multinomial", smoothing="multinomial").fit(X)
    assert confidence.smoothing_.startswith("multinomial confidence term")
    auto = AgglomerativeBregman(3, model="multinomial").fit(X)
    assert not np.allclose(confidence.linkage_matrix_[:, 2], auto.linkage_matrix_[:, 2])
    # dense data (fewer than 90% zeros): "auto" keeps the confidence term
    D = rng.gamma(2.0, size=(25, 6))
    np.testing.assert_array_equal(bregman_linkage(D, "multinomial"),
                                  bregman_linkage(D, "multinomial", smoothing="multinomial"))
    # the kl model's auto smoothing stays the confidence term, on sparse counts too
    np.testing.assert_array_equal(bregman_linkage(X, "kl"),
                                  bregman_linkage(X, "kl", smoothing="multinomial"))
    with pytest.raises(ValueError, match="smoothing 'data-mean' is the rule of the 'multinomial'"):
        bregman_linkage(X, "kl", smoothing="data-mean")
    with pytest.raises(ValueError, match="'data-mean'"):
        bregman_linkage(X, "multinomial", smoothing="data_mean")


# ---------------------------------------------------------------------------- cold start
def test_the_driver_is_chosen_by_the_data_alone():
    """Dense statistics always run the exact driver, sparse supports the pruned one above
    ``PRUNED_MIN_N`` points: a function of the size and sparsity only (nothing in numba's cache
    or in the process changes it)."""
    import inspect

    from bregclust._kernels import linkage_generic as KG
    from bregclust._kernels import linkage_pruned as KP

    big = AG.PRUNED_MIN_N + 1
    assert AG._generic_driver(10, False) is KG.generic_linkage
    assert AG._generic_driver(big, False) is KG.generic_linkage
    assert AG._generic_driver(AG.PRUNED_MIN_N, True) is KG.generic_linkage
    assert AG._generic_driver(big, True) is KP.pruned_linkage
    # no compilation machinery left in the fit: no process, no probe of numba's cache
    from bregclust._kernels import generators as KGen

    for module in (AG, KGen, KG, KP):
        src = inspect.getsource(module)
        for word in ("subprocess", "_load_index", "FunctionCache", "sys.executable",
                     "is_compiled"):
            assert word not in src, (module.__name__, word)


_NOTICE = r"""
import numpy as np
from bregclust import bregman_linkage
X = np.random.default_rng(2).gamma(2.0, size=(8, 3))
bregman_linkage(X, "kl")
bregman_linkage(X, "itakura_saito")
"""


@pytest.mark.slow
def test_compile_notice_is_one_line_once_and_only_when_numba_compiles(tmp_path):
    """A first agglomerative fit with an empty numba cache writes one line on stderr (once per
    process) naming the one-time compilation and `bregclust compile`, without a duration; a
    later process loading the kernels from the cache writes nothing."""
    import os
    import subprocess
    import sys

    import numba

    if numba.config.DISABLE_JIT:
        pytest.skip("nothing is compiled with NUMBA_DISABLE_JIT=1")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", _NOTICE], env=env, capture_output=True,
                           text=True, check=True) for _ in range(2)]
    err = runs[0].stderr.splitlines()
    assert len(err) == 1, runs[0].stderr
    assert err[0].startswith("bregclust: numba is compiling the agglomerative engine, once per "
                             "installation")
    assert "`bregclust compile`" in err[0] and " s " not in err[0]
    assert runs[1].stderr == ""


def test_compile_notice_comes_from_numba_compile_events(monkeypatch, capsys):
    """The notice is written when numba reports a compilation (its public event API) during an
    agglomerative run, once per process; a run that compiles nothing writes nothing."""
    from numba.core import event

    X = np.random.default_rng(2).gamma(2.0, size=(8, 3))
    monkeypatch.setattr(AG, "_ANNOUNCED", [False])
    bregman_linkage(X, "kl")  # compiled earlier in this process (or loaded from the cache)
    assert capsys.readouterr().err == ""
    with AG._compile_notice():
        for _ in range(2):
            event.start_event("numba:compile", data={})
            event.end_event("numba:compile", data={})
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "`bregclust compile`" in err[0]
    event.start_event("numba:compile", data={})  # outside a run: no listener
    event.end_event("numba:compile", data={})
    assert capsys.readouterr().err == ""
