"""Tests of bregclust.metrics against brute force, hand computations, POT and cvxpy."""

import itertools
import math
import warnings

import cvxpy as cp
import numpy as np
import ot
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist

from bregclust import DomainError
from bregclust.metrics import (
    ari,
    clustering_accuracy,
    clustering_scores,
    mixture_proportions,
    nmi,
    partition_emd,
)

# ------------------------------------------------------------------------- slow oracles


def brute_force_accuracy(y_true, y_pred):
    """Best injective cluster -> class map by trying every permutation (small cases only)."""
    classes = sorted(set(y_true))
    clusters = sorted(set(y_pred))
    m = max(len(classes), len(clusters))
    best = 0
    for perm in itertools.permutations(range(m), len(clusters)):
        mapping = {c: perm[j] for j, c in enumerate(clusters)}
        hits = sum(
            1
            for t, p in zip(y_true, y_pred)
            if mapping[p] < len(classes) and classes[mapping[p]] == t
        )
        best = max(best, hits)
    return best / len(y_true)


def hand_nmi(y_true, y_pred):
    """I(Y;C) / sqrt(H(Y) H(C)) from the joint frequencies, natural logs."""
    n = len(y_true)
    joint = {}
    for t, p in zip(y_true, y_pred):
        joint[(t, p)] = joint.get((t, p), 0) + 1
    pt = {t: sum(v for (a, _), v in joint.items() if a == t) / n for t in set(y_true)}
    pp = {p: sum(v for (_, b), v in joint.items() if b == p) / n for p in set(y_pred)}
    mi = sum(v / n * math.log((v / n) / (pt[t] * pp[p])) for (t, p), v in joint.items())
    ht = -sum(q * math.log(q) for q in pt.values())
    hp = -sum(q * math.log(q) for q in pp.values())
    if ht == 0 and hp == 0:
        return 1.0
    if ht == 0 or hp == 0:
        return 0.0
    return mi / math.sqrt(ht * hp)


def pair_count_ari(y_true, y_pred):
    """Hubert-Arabie ARI from pair counts."""
    n = len(y_true)
    comb = lambda k: k * (k - 1) / 2  # noqa: E731
    cont = {}
    for t, p in zip(y_true, y_pred):
        cont[(t, p)] = cont.get((t, p), 0) + 1
    a = {t: list(y_true).count(t) for t in set(y_true)}
    b = {p: list(y_pred).count(p) for p in set(y_pred)}
    index = sum(comb(v) for v in cont.values())
    sa, sb = sum(comb(v) for v in a.values()), sum(comb(v) for v in b.values())
    expected = sa * sb / comb(n)
    top = (sa + sb) / 2
    if top == expected:
        return 1.0
    return (index - expected) / (top - expected)


def lp_emd(a, b, M):
    """The transport LP solved by cvxpy (independent of POT)."""
    G = cp.Variable(M.shape, nonneg=True)
    prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(G, M))),
                      [cp.sum(G, axis=1) == a, cp.sum(G, axis=0) == b])
    prob.solve()
    assert prob.status == cp.OPTIMAL
    return prob.value


# ------------------------------------------------------------------------- accuracy


def test_accuracy_hand_cases():
    assert clustering_accuracy([0, 0, 1, 1, 2, 2], [2, 2, 0, 0, 1, 1]) == 1.0
    # 3 classes, 2 clusters: class 2 unmatched -> its 2 points are errors
    assert clustering_accuracy([0, 0, 1, 1, 2, 2], [0, 0, 1, 1, 1, 1]) == pytest.approx(4 / 6)
    # 2 classes, 4 clusters: only two clusters can be matched
    assert clustering_accuracy([0, 0, 0, 1, 1, 1], [0, 1, 1, 2, 3, 3]) == pytest.approx(4 / 6)
    # string labels, one cluster
    assert clustering_accuracy(["a", "b", "b"], [7, 7, 7]) == pytest.approx(2 / 3)


def test_accuracy_not_greedy():
    # greedy matching (largest cell first) would pair cluster 0 with class 0 (3) and lose 4
    y_true = [0, 0, 0, 1, 1, 1, 1, 0, 0]
    y_pred = [0, 0, 0, 0, 0, 0, 0, 1, 1]
    # best: cluster 0 -> class 1 (4 hits), cluster 1 -> class 0 (2 hits) = 6
    assert clustering_accuracy(y_true, y_pred) == pytest.approx(6 / 9)
    assert brute_force_accuracy(y_true, y_pred) == pytest.approx(6 / 9)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 3), min_size=n, max_size=n),
    st.lists(st.integers(0, 4), min_size=n, max_size=n))))
def test_accuracy_equals_brute_force(pair):
    y_true, y_pred = pair
    assert clustering_accuracy(y_true, y_pred) == pytest.approx(brute_force_accuracy(y_true, y_pred))


def test_accuracy_label_invariance():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 50)
    p = rng.integers(0, 5, 50)
    relabel = np.array([10, 3, 7, -1, 42])
    assert clustering_accuracy(y, p) == clustering_accuracy(y, relabel[p])


# ------------------------------------------------------------------------- NMI / ARI


def test_nmi_hand_value():
    y, c = [0, 0, 1, 1], [0, 0, 0, 1]
    mi = 0.5 * math.log(4 / 3) + 0.25 * math.log(2 / 3) + 0.25 * math.log(2)
    hy = math.log(2)
    hc = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    assert nmi(y, c) == pytest.approx(mi / math.sqrt(hy * hc), rel=1e-12)


def test_nmi_is_sqrt_not_arithmetic():
    y, c = [0, 0, 1, 1, 2, 2], [0, 0, 0, 1, 1, 1]
    from sklearn.metrics import normalized_mutual_info_score as sk

    assert nmi(y, c) == pytest.approx(sk(y, c, average_method="geometric"))
    assert nmi(y, c) != pytest.approx(sk(y, c, average_method="arithmetic"))


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 30).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 3), min_size=n, max_size=n),
    st.lists(st.integers(0, 3), min_size=n, max_size=n))))
def test_nmi_ari_match_hand_formulas(pair):
    y, c = pair
    assert nmi(y, c) == pytest.approx(hand_nmi(y, c), abs=1e-10)
    assert ari(y, c) == pytest.approx(pair_count_ari(y, c), abs=1e-10)


def test_scores_dict():
    s = clustering_scores([0, 0, 1, 1], [1, 1, 0, 0])
    assert s == pytest.approx({"nmi": 1.0, "ari": 1.0, "accuracy": 1.0})


@pytest.mark.parametrize("fn", [clustering_accuracy, nmi, ari])
def test_label_validation(fn):
    with pytest.raises(ValueError, match="same length; got 3 and 2"):
        fn([0, 1, 1], [0, 1])
    with pytest.raises(ValueError, match="y_pred contains NaN"):
        fn([0, 1, 1], [0.0, np.nan, 1.0])
    with pytest.raises(ValueError, match="y_true must be a 1-D array"):
        fn(np.zeros((3, 2)), [0, 1, 1])
    with pytest.raises(ValueError, match="y_true is empty"):
        fn([], [])
    with pytest.raises(TypeError, match="y_pred is None"):
        fn([0], None)


# ------------------------------------------------------------------------- partition EMD


def test_mixture_proportions():
    assert mixture_proportions([0, 2, 2, 2], 4).tolist() == [0.25, 0.0, 0.75, 0.0]
    with pytest.raises(ValueError, match=r"labels must lie in 0..2"):
        mixture_proportions([0, 3], 3)
    with pytest.raises(ValueError, match="n_clusters must be a positive integer"):
        mixture_proportions([0], 0)
    with pytest.raises(ValueError, match="labels contain NaN"):
        mixture_proportions([0.0, np.nan], 2)
    with pytest.raises(ValueError, match="non-empty 1-D"):
        mixture_proportions([], 2)


def _random_mixtures(rng, k1, k2, d, positive=False):
    U1 = rng.random((k1, d)) + 0.1 if positive else rng.normal(size=(k1, d))
    U2 = rng.random((k2, d)) + 0.1 if positive else rng.normal(size=(k2, d))
    return U1, rng.random(k1) + 0.05, U2, rng.random(k2) + 0.05


def test_emd_matches_pot_directly():
    rng = np.random.default_rng(1)
    U1, w1, U2, w2 = _random_mixtures(rng, 4, 6, 5)
    M = cdist(U1, U2, "sqeuclidean")
    expected = ot.emd2(w1 / w1.sum(), w2 / w2.sum(), M)
    assert partition_emd(U1, w1, U2, w2) == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("divergence", ["sqeuclidean", "kl", "itakura_saito", "mahalanobis"])
def test_emd_matches_cvxpy_lp(divergence):
    rng = np.random.default_rng(2)
    U1, w1, U2, w2 = _random_mixtures(rng, 3, 4, 3, positive=True)
    params = {}
    if divergence == "mahalanobis":
        B = rng.normal(size=(3, 3))
        params["A"] = B @ B.T + 3 * np.eye(3)
    # ground cost from the definition, one pair at a time (independent of the GEMM form)
    from bregclust import get_divergence

    div = get_divergence(divergence, **params)
    M = np.array([[div.divergence(u, v) for v in U2] for u in U1])
    expected = lp_emd(w1 / w1.sum(), w2 / w2.sum(), M)
    got = partition_emd(U1, w1, U2, w2, divergence, **params)
    assert got == pytest.approx(expected, rel=1e-6, abs=1e-9)


def test_emd_identical_mixtures_zero_and_symmetric():
    rng = np.random.default_rng(3)
    U1, w1, U2, w2 = _random_mixtures(rng, 5, 3, 4)
    assert partition_emd(U1, w1, U1, w1) == pytest.approx(0.0, abs=1e-12)
    assert partition_emd(U1, w1, U2, w2) == pytest.approx(partition_emd(U2, w2, U1, w1),
                                                           rel=1e-12)
    # kl on positive centres: zero for identical mixtures as well
    P = rng.random((4, 6)) + 0.2
    assert partition_emd(P, [1, 2, 3, 4], P, [1, 2, 3, 4], "kl") == pytest.approx(0.0, abs=1e-12)


def test_emd_hand_value_and_plan():
    # one point at 0 against two equal-weight points at 1 and 3: 0.5 * 1 + 0.5 * 9
    cost, plan = partition_emd([[0.0]], [1.0], [[1.0], [3.0]], [2.0, 2.0], return_plan=True)
    assert cost == pytest.approx(5.0)
    np.testing.assert_allclose(plan, [[0.5, 0.5]])
    # weights are normalised: scaling them changes nothing
    rng = np.random.default_rng(4)
    U1, w1, U2, w2 = _random_mixtures(rng, 3, 3, 2)
    assert partition_emd(U1, 7 * w1, U2, 0.1 * w2) == pytest.approx(partition_emd(U1, w1, U2, w2))


def test_emd_with_mixture_proportions_of_labels():
    U = np.array([[0.0, 0.0], [4.0, 0.0]])
    w1 = mixture_proportions([0, 0, 0, 1], 2)   # 0.75, 0.25
    w2 = mixture_proportions([0, 1, 1, 1], 2)   # 0.25, 0.75
    # 0.5 of the mass moves from (0,0) to (4,0): 0.5 * 16
    assert partition_emd(U, w1, U, w2) == pytest.approx(8.0)


def test_emd_validation():
    U = np.zeros((2, 3))
    with pytest.raises(ValueError, match=r"one entry per centre \(2\)"):
        partition_emd(U, [1.0], U, [1.0, 1.0])
    with pytest.raises(ValueError, match="centres contain NaN"):
        partition_emd(np.full((2, 3), np.nan), [1, 1], U, [1, 1])
    with pytest.raises(ValueError, match="weights contain NaN"):
        partition_emd(U, [np.nan, 1], U, [1, 1])
    with pytest.raises(ValueError, match="weights must be non-negative; weight 1 is -1"):
        partition_emd(U, [1, -1], U, [1, 1])
    with pytest.raises(ValueError, match="weights sum to 0"):
        partition_emd(U, [0, 0], U, [1, 1])
    with pytest.raises(ValueError, match="same number of features; got 3 and 2"):
        partition_emd(U, [1, 1], np.zeros((2, 2)), [1, 1])
    with pytest.raises(ValueError, match="non-empty 2-D array"):
        partition_emd(np.zeros(3), [1], U, [1, 1])
    with pytest.raises(DomainError, match="kl needs"):
        partition_emd(np.ones((2, 3)), [1, 1], np.zeros((2, 3)), [1, 1], "kl")
    with pytest.raises(ValueError, match="unknown divergence .no-such-divergence."):
        partition_emd(U, [1, 1], U, [1, 1], "no-such-divergence")


def test_emd_inputs_not_mutated():
    rng = np.random.default_rng(5)
    U1, w1, U2, w2 = _random_mixtures(rng, 3, 4, 2)
    copies = [a.copy() for a in (U1, w1, U2, w2)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        partition_emd(U1, w1, U2, w2)
    for a, b in zip((U1, w1, U2, w2), copies):
        np.testing.assert_array_equal(a, b)


# -------------------------------------------------------------------- partition EMD: overflow
def test_partition_emd_overflow_is_not_a_domain_problem():
    U1, U2 = np.array([[1e300], [0.]]), np.array([[-1e300], [1.]])
    with pytest.raises(ValueError, match="overflow"):
        partition_emd(U1, [.5, .5], U2, [.5, .5])
