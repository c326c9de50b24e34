"""Size-constrained BregmanKMeans (``size_min`` / ``size_max``) against its oracles.

* ``k-means-constrained`` (squared Euclidean, min-cost flow by OR-tools) from the same start;
* the constrained assignment step by brute force on tiny data, and by scipy's ``linprog`` on
  the assignment LP (integral for unit weights: its matrix is totally unimodular);
* every size within its bounds, whatever the data and bounds (hypothesis);
* the objective history never increases, for every divergence and mode.
"""

import itertools
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import COSH as CUSTOM
from conftest import SPD
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from bregclust import BregmanKMeans, EmptyClusterWarning

pytestmark = pytest.mark.usefixtures("cosh_generator")  # the user generator CUSTOM
DIVS = ["sqeuclidean", "mahalanobis", "kl", "itakura_saito", "l1_subgradient", CUSTOM]
METHODS = ["exact", "sinkhorn", "greedy"]


def params(div):
    return {"A": SPD[:3, :3]} if div == "mahalanobis" else None


def data(div, n=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if div in ("kl", "itakura_saito"):
        X = np.exp(X)
    return X


def sizes(labels, k, w=None):
    return np.bincount(labels, weights=w, minlength=k)


def cost(km, X, labels, w=None):
    D = km.transform(X)
    w = np.ones(X.shape[0]) if w is None else w
    return float(w @ D[np.arange(X.shape[0]), labels])


def brute_force(D, lo, hi, w=None):
    """The least ``sum_i w_i D[i, l_i]`` over every labelling with sizes in ``[lo, hi]``."""
    n, k = D.shape
    w = np.ones(n) if w is None else w
    best = np.inf
    for lab in itertools.product(range(k), repeat=n):
        lab = np.array(lab)
        W = sizes(lab, k, w)
        if (W >= lo - 1e-12).all() and (W <= hi + 1e-12).all():
            best = min(best, float(w @ D[np.arange(n), lab]))
    return best


def lp_optimum(D, lo, hi):
    """The assignment LP ``min <P, D>``, rows summing to one, column sums in ``[lo, hi]``."""
    n, k = D.shape
    A_eq = np.kron(np.eye(n), np.ones((1, k)))
    A_col = np.kron(np.ones((1, n)), np.eye(k))
    res = linprog(D.ravel(), A_ub=np.vstack([A_col, -A_col]), b_ub=np.concatenate([hi, -lo]),
                  A_eq=A_eq, b_eq=np.ones(n), bounds=(0, None), method="highs")
    assert res.status == 0
    return res.fun


# ----------------------------------------------------------------------------- k-means-constrained
def _objective(X, labels, k):
    """Squared-Euclidean objective of labels with their own means."""
    C = np.array([X[labels == j].mean(axis=0) for j in range(k)])
    return float(((X - C[labels]) ** 2).sum())


BOUNDS = [dict(size_min=20, size_max=20), dict(size_min=17), dict(size_max=23),
          dict(size_min=12, size_max=26)]


@pytest.mark.parametrize("bounds", BOUNDS, ids=lambda b: "-".join(f"{k}{v}" for k, v in b.items()))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_same_objective_as_k_means_constrained_with_squared_costs(bounds, seed, monkeypatch):
    """The package's Lloyd loop and min-cost flow (OR-tools), fed squared distances, from our
    start.

    ``k-means-constrained`` assigns by the sum of *unsquared* Euclidean distances (its costs
    are ``euclidean_distances(X, C, squared=False)`` times 1000 rounded to int32), which is not
    the constrained k-means assignment. Its assignment function is replaced by the same graph
    and solver on squared distances (and the squared distances as its inertia), so both sides
    solve the same problem exactly: costs here are of order 1e3-1e4, and their rounding to
    1e-3 does not change an optimum on these data."""
    kmc = pytest.importorskip("k_means_constrained")
    from k_means_constrained import k_means_constrained_ as mod
    from sklearn.metrics.pairwise import euclidean_distances

    def squared_labels(X, centers, size_min, size_max, distances):
        D = euclidean_distances(X, centers, squared=True)
        graph = mod.minimum_cost_flow_problem_graph(X, centers, D, size_min, size_max)
        labels = mod.solve_min_cost_flow_graph(*graph).astype(np.int32)
        distances[:] = D[np.arange(X.shape[0]), labels]
        return labels, distances.sum()

    monkeypatch.setattr(mod, "_labels_constrained", squared_labels)
    rng = np.random.default_rng(seed)
    X = rng.normal(scale=30.0, size=(80, 2))
    k = 4
    C0 = X[rng.choice(80, k, replace=False)]
    ours = BregmanKMeans(k, init=C0, tol=0.0, max_iter=100, **bounds).fit(X)
    peer = kmc.KMeansConstrained(k, init=C0, n_init=1, tol=0.0, max_iter=100, **bounds).fit(X)
    assert np.array_equal(ours.labels_, peer.labels_)
    assert _objective(X, ours.labels_, k) == pytest.approx(_objective(X, peer.labels_, k),
                                                           rel=1e-9)
    assert ours.inertia_ == pytest.approx(_objective(X, ours.labels_, k), rel=1e-9)


def test_same_objective_as_k_means_constrained_unpatched_on_separated_blobs():
    """Unpatched peer: on well-separated blobs both costs give the same assignments."""
    kmc = pytest.importorskip("k_means_constrained")
    rng = np.random.default_rng(3)
    centres = np.array([[0.0, 0.0], [40.0, 0.0], [0.0, 40.0]])
    X = np.vstack([c + rng.normal(size=(30, 2)) for c in centres])
    C0 = X[[0, 30, 60]] + 0.5
    ours = BregmanKMeans(3, init=C0, tol=0.0, size_min=30, size_max=30).fit(X)
    peer = kmc.KMeansConstrained(3, init=C0, n_init=1, tol=0.0, size_min=30,
                                 size_max=30).fit(X)
    assert _objective(X, ours.labels_, 3) == pytest.approx(_objective(X, peer.labels_, 3),
                                                           rel=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_assignment_never_costs_more_than_k_means_constrained(seed):
    """Same centres: our constrained labels cost at most the peer's (its assignment minimises
    unsquared distances, ours the k-means objective), and strictly less on some data."""
    kmc = pytest.importorskip("k_means_constrained")
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(120, 5))
    km = BregmanKMeans(6, random_state=seed, size_min=20, size_max=20).fit(X)
    peer = kmc.KMeansConstrained(6, n_init=1, size_min=20, size_max=20, random_state=0).fit(X)
    peer.cluster_centers_ = km.cluster_centers_.copy()
    theirs = peer.predict(X)
    mine = km.predict_constrained(X)
    assert (sizes(mine, 6) == 20).all() and (sizes(theirs, 6) == 20).all()
    assert cost(km, X, mine) <= cost(km, X, theirs) * (1 + 1e-12)


# ----------------------------------------------------------------------------- brute force / LP
def _fitted(div, X, k, seed=0):
    return BregmanKMeans(k, divergence=div, divergence_params=params(div),
                         random_state=seed).fit(X)


TINY_BOUNDS = [(2, 3), (1, 7), (0, 3), (2, 2)]


@pytest.mark.parametrize("div", DIVS)
@pytest.mark.parametrize("lo, hi", TINY_BOUNDS)
def test_assignment_step_matches_brute_force(div, lo, hi):
    k = 3
    n = 7 if lo * k <= 7 <= hi * k else 6
    X = data(div, n=30, seed=1)
    km = _fitted(div, X, k)
    rng = np.random.default_rng(5)
    for trial in range(3):
        Y = data(div, n=n, seed=10 + trial)
        labels = km.predict_constrained(Y, size_min=lo, size_max=hi)
        W = sizes(labels, k)
        assert (W >= lo).all() and (W <= hi).all()
        D = km.transform(Y)
        assert cost(km, Y, labels) == pytest.approx(brute_force(D, np.full(k, lo),
                                                                np.full(k, hi)), rel=1e-9)
        # per-cluster bounds too
        los = rng.integers(0, 2, size=k)
        his = np.maximum(los, [n, 2, 4])
        labels = km.predict_constrained(Y, size_min=los, size_max=his)
        assert cost(km, Y, labels) == pytest.approx(brute_force(D, los, his), rel=1e-9)


@pytest.mark.parametrize("div", DIVS)
@pytest.mark.parametrize("method", METHODS)
def test_assignment_step_matches_lp_and_fit_is_monotone(div, method):
    """Exact mode: the optimum of the assignment LP (scipy HiGHS); approximate modes: within
    the bounds and never below it. Every mode: the objective history never increases."""
    k = 4
    X = data(div, n=80, seed=2)
    km = BregmanKMeans(k, divergence=div, divergence_params=params(div), random_state=0,
                       size_min=15, size_max=25, size_method=method).fit(X)
    h = np.array(km.objective_history_)
    assert (np.diff(h) <= 1e-12 * abs(h[0])).all()
    W = sizes(km.labels_, k)
    assert (W >= 15).all() and (W <= 25).all()
    Y = data(div, n=50, seed=3)
    labels = km.predict_constrained(Y, size_min=10, size_max=14)
    opt = lp_optimum(km.transform(Y), np.full(k, 10.0), np.full(k, 14.0))
    assert cost(km, Y, labels) == pytest.approx(opt, rel=1e-9)
    assert km.inertia_ == pytest.approx(cost(km, X, km.labels_), rel=1e-9)


def test_weighted_sizes_and_doubled_weights():
    """Weights 2 and doubled bounds give the labels of the unweighted fit (the plan of the
    doubled problem is twice the unit vertex); weighted sizes hold in general."""
    X = data("sqeuclidean", n=60)
    a = BregmanKMeans(3, random_state=0, size_min=18, size_max=22).fit(X)
    b = BregmanKMeans(3, random_state=0, size_min=36, size_max=44).fit(
        X, sample_weight=np.full(60, 2.0))
    assert np.array_equal(a.labels_, b.labels_)
    rng = np.random.default_rng(0)
    for seed in range(5):
        w = rng.uniform(0.5, 2.0, size=60)
        km = BregmanKMeans(3, random_state=seed, size_min=0.3 * w.sum(),
                           size_max=0.36 * w.sum()).fit(X, sample_weight=w)
        W = sizes(km.labels_, 3, w)
        assert (W >= 0.3 * w.sum() - 1e-9).all() and (W <= 0.36 * w.sum() + 1e-9).all()
        h = np.array(km.objective_history_)
        assert (np.diff(h) <= 1e-12 * h[0]).all()


def test_weighted_assignment_matches_brute_force_when_no_point_splits():
    """Tiny weighted problems: the labels meet the bounds and cost no more than the best
    feasible labelling found by enumeration (they cost exactly that: the plan's split points
    are placed by the exact milp, every other point held where the plan put it)."""
    X = data("sqeuclidean", n=30, seed=4)
    km = _fitted("sqeuclidean", X, 3)
    rng = np.random.default_rng(1)
    hits = 0
    for trial in range(8):
        Y = data("sqeuclidean", n=7, seed=20 + trial)
        w = rng.integers(1, 4, size=7).astype(float)
        lo, hi = np.full(3, 0.2 * w.sum()), np.full(3, 0.45 * w.sum())
        best = brute_force(km.transform(Y), lo, hi, w)
        if not np.isfinite(best):
            continue
        labels = km.predict_constrained(Y, w, size_min=lo, size_max=hi)
        W = sizes(labels, 3, w)
        assert (W >= lo - 1e-9).all() and (W <= hi + 1e-9).all()
        assert cost(km, Y, labels, w) >= best * (1 - 1e-12)
        hits += cost(km, Y, labels, w) <= best * (1 + 1e-9)
    assert hits >= 4  # most: the split points are placed exactly, the others where the plan put them


def test_zero_weight_rows_take_the_nearest_centre_and_do_not_count():
    X = data("sqeuclidean", n=40)
    w = np.ones(40)
    w[:5] = 0.0
    km = BregmanKMeans(5, random_state=0, size_min=7, size_max=7).fit(X, sample_weight=w)
    assert (sizes(km.labels_, 5, w) == 7).all()
    assert np.array_equal(km.labels_[:5], km.predict(X[:5]))


# ----------------------------------------------------------------------------- property
@st.composite
def problems(draw):
    k = draw(st.integers(1, 5))
    n = draw(st.integers(k, 40))
    lo = draw(st.lists(st.integers(0, n // k), min_size=k, max_size=k))
    room = n - sum(lo)
    extra = draw(st.lists(st.integers(0, n), min_size=k, max_size=k))
    hi = [a + e for a, e in zip(lo, extra)]
    if sum(hi) < n:  # give the missing room to the last cluster
        hi[-1] += n - sum(hi)
    assert sum(lo) <= n <= sum(hi) and room >= 0
    seed = draw(st.integers(0, 2**16))
    method = draw(st.sampled_from(METHODS))
    div = draw(st.sampled_from(["sqeuclidean", "kl"]))
    return k, n, np.array(lo), np.array(hi), seed, method, div


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_every_size_within_bounds(problem):
    k, n, lo, hi, seed, method, div = problem
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, size=(n, 2)).astype(float)  # many ties and duplicate rows
    if div == "kl":
        X += 0.5
    with warnings.catch_warnings():  # a cluster bounded to 0 (or left at 0) stays empty
        warnings.simplefilter("ignore", EmptyClusterWarning)
        km = BregmanKMeans(k, divergence=div, random_state=seed, size_min=lo, size_max=hi,
                           size_method=method).fit(X)
    W = sizes(km.labels_, k)
    assert (W >= lo).all() and (W <= hi).all()
    h = np.array(km.objective_history_)
    assert (np.diff(h) <= 1e-12 * max(1.0, abs(h[0]))).all()


# ----------------------------------------------------------------------------- formats
def test_sparse_float32_and_dense_agree():
    X = data("kl", n=90, d=6, seed=7)
    X[X < 1.0] = 0.0
    kw = dict(divergence="kl", random_state=0, size_min=25, size_max=35)
    dense = BregmanKMeans(3, **kw).fit(X)
    csr = BregmanKMeans(3, **kw).fit(sp.csr_matrix(X))
    assert np.array_equal(dense.labels_, csr.labels_)
    f32 = BregmanKMeans(3, **kw).fit(X.astype(np.float32))
    assert f32.cluster_centers_.dtype == np.float32
    W = sizes(f32.labels_, 3)
    assert (W >= 25).all() and (W <= 35).all()
    Xs = sp.csr_matrix(X)
    before = Xs.copy()
    csr.predict_constrained(Xs)
    assert (Xs != before).nnz == 0


def test_predict_is_nearest_centre_and_predict_constrained_scales_the_fitted_bounds():
    X = data("sqeuclidean", n=100)
    km = BregmanKMeans(4, random_state=0, size_min=25, size_max=25).fit(X)
    Y = data("sqeuclidean", n=40, seed=9)
    assert np.array_equal(km.predict(Y), np.argmin(km.transform(Y), axis=1))
    assert (sizes(km.predict_constrained(Y), 4) == 10).all()  # balanced stays balanced
    Z = data("sqeuclidean", n=42, seed=9)  # 25 * 42 / 100 = 10.5: floor 10, ceil 11
    W = sizes(km.predict_constrained(Z), 4)
    assert (W >= 10).all() and (W <= 11).all()
    assert (sizes(km.predict_constrained(Y, size_min=None, size_max=None), 4)
            == sizes(km.predict(Y), 4)).all()
    free = BregmanKMeans(4, random_state=0).fit(X)
    assert free.size_min_ is None and free.size_max_ is None
    assert np.array_equal(free.predict_constrained(Y), free.predict(Y))
    assert (sizes(free.predict_constrained(Y, size_max=10), 4) == 10).all()


def test_pickle_round_trip():
    X = data("itakura_saito", n=60)
    km = BregmanKMeans(3, divergence="itakura_saito", random_state=0, size_min=20,
                       size_max=20).fit(X)
    back = pickle.loads(pickle.dumps(km))
    assert np.array_equal(back.labels_, km.labels_)
    assert np.array_equal(back.predict_constrained(X), km.predict_constrained(X))
    np.testing.assert_array_equal(back.size_min_, [20, 20, 20])


def test_itakura_saito_and_kl_balanced_fits_reach_their_bounds():
    for div in ("kl", "itakura_saito"):
        X = data(div, n=120, d=4, seed=11)
        km = BregmanKMeans(5, divergence=div, random_state=0, size_min=24, size_max=24,
                           n_init=3).fit(X)
        assert (sizes(km.labels_, 5) == 24).all()
        h = np.array(km.objective_history_)
        assert (np.diff(h) <= 1e-12 * h[0]).all()
        # at the fitted centres, the labels are the optimum of the assignment LP
        assert km.inertia_ == pytest.approx(
            lp_optimum(km.transform(X), np.full(5, 24.0), np.full(5, 24.0)), rel=1e-9)


# ----------------------------------------------------------------------------- hostile input
@pytest.mark.parametrize("kw, match", [
    (dict(size_min=30), r"size_min asks for 4 \* 30 = 120 over n_clusters=4 clusters, more "
                        r"than 100 samples"),
    (dict(size_max=20), r"size_max allows only 4 \* 20 = 80 over n_clusters=4 clusters, fewer "
                        r"than 100 samples"),
    (dict(size_min=[40, 30, 20, 20]), r"sum\(size_min\) = 110 .* more than 100 samples"),
    (dict(size_max=[40, 30, 20, 5]), r"sum\(size_max\) = 95 .* fewer than 100 samples"),
    (dict(size_min=30, size_max=20), r"size_min exceeds size_max for cluster 0 \(30 > 20\)"),
    (dict(size_min=2.5), r"size_min must be whole numbers of samples without sample_weight"),
    (dict(size_min=-1), r"size_min must be finite and non-negative, got -1"),
    (dict(size_max=np.nan), r"size_max must be finite and non-negative, got nan"),
    (dict(size_min=[1, 2]), r"one value per cluster \(n_clusters=4\), got shape \(2,\)"),
    (dict(size_min=10, size_method="lp"), r"size_method must be one of 'exact'"),
])
def test_infeasible_or_bad_bounds_are_refused(kw, match):
    X = data("sqeuclidean", n=100)
    with pytest.raises(ValueError, match=match):
        BregmanKMeans(4, **kw).fit(X)


@pytest.mark.parametrize("value", ["10", True, object()])
def test_bounds_of_the_wrong_type_are_refused(value):
    with pytest.raises(TypeError, match="size_min must be None, a number or one number"):
        BregmanKMeans(2, size_min=value).fit(data("sqeuclidean", n=10))


def test_weighted_infeasible_message_names_the_total_weight():
    X = data("sqeuclidean", n=10)
    with pytest.raises(ValueError, match=r"more than a total sample weight of 5"):
        BregmanKMeans(2, size_min=3.0).fit(X, sample_weight=np.full(10, 0.5))


def test_dask_input_is_refused():
    da = pytest.importorskip("dask.array")
    X = da.from_array(data("sqeuclidean", n=40), chunks=(20, 3))
    with pytest.raises(ValueError, match=r"size_min / size_max need the data in memory"):
        BregmanKMeans(2, size_min=10).fit(X)
    km = BregmanKMeans(2, size_min=10, random_state=0).fit(X.compute())
    with pytest.raises(ValueError, match=r"predict_constrained needs the data in memory"):
        km.predict_constrained(X)


def test_boundary_centres_without_smoothing_are_refused_clearly():
    """A kl centre with a zero coordinate puts the other points at infinite divergence."""
    X = np.array([[0.0, 1.0], [0.0, 2.0], [1.0, 0.0], [2.0, 0.0]])
    init = np.array([[0.1, 1.0], [1.0, 0.1]])
    with pytest.raises(ValueError, match=r"are not finite .* use smoothing > 0"):
        BregmanKMeans(2, divergence="kl", smoothing=0.0, init=init, size_min=2,
                      size_max=2).fit(X)


def test_a_cluster_bounded_to_zero_stays_empty():
    X = data("sqeuclidean", n=30)
    with pytest.warns(EmptyClusterWarning, match="became empty"):
        km = BregmanKMeans(3, random_state=0, size_max=[0, 15, 15]).fit(X)
    assert (sizes(km.labels_, 3) == [0, 15, 15]).all()


def test_inputs_are_not_modified():
    X = data("sqeuclidean", n=30)
    X0 = X.copy()
    lo = np.array([5, 5, 5])
    w = np.ones(30)
    BregmanKMeans(3, random_state=0, size_min=lo, size_max=[15, 15, 15]).fit(X, sample_weight=w)
    assert np.array_equal(X, X0) and np.array_equal(lo, [5, 5, 5]) and (w == 1).all()
