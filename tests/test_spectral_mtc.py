"""SpectralMTC: graphs against the dense reference, the single-task base against scikit-learn,
the label-free choice of the coupling, and the multi-task contract (2 and 3 tasks, per-task K)."""

import pickle
import warnings

import naive_spectral_mtc as naive
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import direction_tasks, quiet_fit
from sklearn.base import clone
from sklearn.cluster import SpectralClustering
from sklearn.manifold import spectral_embedding
from sklearn.metrics import adjusted_rand_score
from sklearn.preprocessing import normalize

import bregclust.spectral_mtc as smtc
from bregclust.kmeans import BregmanKMeans
from bregclust.spectral_mtc import (
    SpectralMTC,
    base_regret,
    cross_task_graph,
    joint_graph,
    kl_objective,
    modularity,
    normalized_cut,
    task_graph,
    transfer_graph,
    within_cluster_unit,
)


# ------------------------------------------------------------------ graphs: dense reference
@pytest.mark.parametrize("k", [3, 5])
def test_task_graph_matches_dense_reference(k):
    X = direction_tasks()[0][0]
    np.testing.assert_allclose(task_graph(X, k).toarray(), naive.task_graph(X, k), atol=0)


@pytest.mark.parametrize("n_tasks", [2, 3])
def test_transfer_graph_matches_dense_reference(n_tasks):
    Xs, _ = direction_tasks(sizes=((14, 12), (11, 13), (9, 10))[:n_tasks])
    for t in range(n_tasks):
        H = transfer_graph(Xs, t, 4)
        R = naive.transfer_graph(Xs, t, 4)
        np.testing.assert_allclose(H.toarray(), R, rtol=1e-12, atol=1e-12)
        assert np.allclose(H.toarray(), H.toarray().T) and np.all(H.diagonal() == 0)


@pytest.mark.parametrize("n_tasks", [2, 3])
def test_joint_graph_matches_dense_reference(n_tasks):
    Xs, _ = direction_tasks(sizes=((14, 12), (11, 13), (9, 10))[:n_tasks])
    J = joint_graph(Xs, 0.3, 4)
    np.testing.assert_allclose(J.toarray(), naive.joint_graph(Xs, 4, 0.3), rtol=1e-12, atol=1e-12)
    B = cross_task_graph(Xs, 0, 1, 4)
    assert B.shape == (Xs[0].shape[0], Xs[1].shape[0])


def test_normalized_cut_matches_dense_reference():
    Xs, ys = direction_tasks()
    W = task_graph(Xs[0], 4)
    rng = np.random.default_rng(1)
    for lab in (ys[0], rng.integers(0, 3, Xs[0].shape[0])):
        assert normalized_cut(W, lab) == pytest.approx(naive.normalized_cut(W.toarray(), lab),
                                                       rel=1e-12)
    assert normalized_cut(W, ys[0]) < normalized_cut(W, rng.integers(0, 2, Xs[0].shape[0]))


def test_joint_embedding_spans_the_dense_eigenvectors():
    """The embedding the joint transfer clusters spans the dense Laplacian's eigenvectors."""
    Xs, _ = direction_tasks(sizes=((14, 12), (11, 13), (9, 10)))
    J = joint_graph(Xs, 0.2, 4)
    m = 4
    vals, R = naive.embedding(J.toarray(), m)
    assert vals[m] - vals[m - 1] > 1e-3 if len(vals) > m else True
    E = spectral_embedding(J, n_components=m, eigen_solver="arpack", random_state=0,
                           drop_first=False)
    # same column space (projections equal) after undoing the D^-1/2 scaling
    d = np.sqrt(np.asarray(J.sum(axis=1)).ravel() - J.diagonal())[:, None]
    P = np.linalg.qr(E * d)[0]
    Q = np.linalg.qr(R * d)[0]
    np.testing.assert_allclose(P @ P.T, Q @ Q.T, atol=1e-6)


# --------------------------------------------------------------- the single-task base
@pytest.mark.parametrize("transfer", ["joint", "instance"])
def test_coupling_zero_is_scikit_learn_spectral_clustering(transfer):
    Xs, _ = direction_tasks(sizes=((30, 25), (28, 31)))
    Xs = [X + np.random.default_rng(2).random(X.shape) for X in Xs]  # a harder problem
    est = quiet_fit(SpectralMTC(2, base="spectral", coupling=0.0, transfer=transfer, n_neighbors=6,
                                random_state=3), Xs)
    for X, lab in zip(Xs, est.labels_):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            ref = SpectralClustering(2, affinity="nearest_neighbors", n_neighbors=6,
                                     random_state=3).fit(normalize(X)).labels_
        np.testing.assert_array_equal(lab, ref)


@pytest.mark.parametrize("transfer", ["joint", "instance"])
def test_auto_keeps_per_task_the_smallest_own_graph_ncut(transfer):
    Xs, ys = direction_tasks(seed=4, sizes=((20, 18), (17, 21), (15, 16)))
    Xs = [X + 0.8 * np.random.default_rng(5).random(X.shape) for X in Xs]
    est = quiet_fit(SpectralMTC([2, 2, 2], base="spectral", transfer=transfer, n_neighbors=5,
                                random_state=0), Xs)
    assert est.couplings_[0] == 0.0 and est.ncut_.shape == (est.couplings_.size, 3)
    for t in range(3):
        # the pareto guard: agreement with the single-task partition and no larger k-means
        # sum of squares on the unit rows
        ok = (est.agreement_[:, t] >= est.min_agreement) & (est.within_[:, t]
                                                             <= est.within_[0, t] * (1 + 1e-12))
        assert ok[0] and est.agreement_[0, t] == 1.0
        i = int(np.argmin(np.where(ok, est.ncut_[:, t], np.inf)))
        assert est.agreement_[i, t] == pytest.approx(
            adjusted_rand_score(est.labels_per_coupling_[0][t], est.labels_[t]))
        assert est.coupling_[t] == est.couplings_[i]
        np.testing.assert_array_equal(est.labels_[t], est.labels_per_coupling_[i][t])
        assert est.ncut_[i, t] == pytest.approx(
            naive.normalized_cut(naive.task_graph(Xs[t], 5), est.labels_[t]))
    # every candidate is the fit at that fixed coupling (same seeds)
    for i, mu in enumerate(est.couplings_):
        fixed = quiet_fit(SpectralMTC([2, 2, 2], base="spectral", coupling=float(mu),
                                      transfer=transfer, n_neighbors=5, random_state=0), Xs)
        for a, b in zip(fixed.labels_, est.labels_per_coupling_[i]):
            np.testing.assert_array_equal(a, b)
    assert est.objective_history_.shape == (1,)
    assert est.objective_history_[0] == pytest.approx(
        sum(est.ncut_[est.couplings_.tolist().index(c), t] for t, c in enumerate(est.coupling_)))


def test_never_worse_on_its_own_graph_than_the_single_task_partition():
    """The label-free guarantee: every task's kept partition has a normalised cut on its own
    graph no larger than the single-task spectral partition's."""
    for seed in range(3):
        Xs, _ = direction_tasks(seed=seed, sizes=((20, 18), (17, 21)))
        Xs = [X + 1.5 * np.random.default_rng(seed).random(X.shape) for X in Xs]
        est = quiet_fit(SpectralMTC(2, base="spectral", n_neighbors=5, random_state=seed), Xs)
        best = est.ncut_[[list(est.couplings_).index(c) for c in est.coupling_], [0, 1]]
        assert np.all(best <= est.ncut_[0] + 1e-15)


def test_agreement_guard_keeps_the_single_task_partition_when_strict():
    """min_agreement=1: only candidates equal (as partitions) to the single-task one are
    eligible, so every task keeps its single-task partition; -1 lets the cut decide alone."""
    Xs, _ = direction_tasks(seed=7, sizes=((25, 25), (25, 25)))
    Xs[0] = Xs[0] + 2.5 * np.random.default_rng(8).random(Xs[0].shape)
    kw = dict(base="spectral", guard="agreement", coupling_grid=(0.5, 2.0), n_neighbors=5,
              random_state=0)
    strict = quiet_fit(SpectralMTC(2, min_agreement=1.0, **kw), Xs)
    for t in range(2):
        assert adjusted_rand_score(strict.labels_[t], strict.labels_per_coupling_[0][t]) == 1.0
    loose = quiet_fit(SpectralMTC(2, min_agreement=-1.0, **kw), Xs)
    for t in range(2):
        assert loose.coupling_[t] == loose.couplings_[int(np.argmin(loose.ncut_[:, t]))]
    with pytest.raises(ValueError, match="min_agreement"):
        SpectralMTC(2, min_agreement=2.0).fit(Xs)


@pytest.mark.parametrize("transfer", ["joint", "instance"])
def test_two_and_three_tasks_per_task_k_recover_clusters(transfer):
    Xs, ys = direction_tasks(sizes=((15, 14), (12, 13, 11), (10, 12)))
    est = quiet_fit(SpectralMTC([2, 3, 2], base="spectral", coupling=0.05, transfer=transfer,
                                n_neighbors=5, random_state=0), Xs)
    assert est.n_tasks_ == 3 and est.n_clusters_ == [2, 3, 2]
    for y, lab, k in zip(ys, est.labels_, [2, 3, 2]):
        assert lab.dtype == np.int64 and np.unique(lab).size == k
        assert adjusted_rand_score(y, lab) == 1.0
    est2 = quiet_fit(SpectralMTC(2, transfer=transfer, n_neighbors=5, random_state=0), Xs[::2])
    assert [adjusted_rand_score(y, lab) for y, lab in zip(ys[::2], est2.labels_)] == [1.0, 1.0]


def test_three_tasks_per_task_k_modularity_base_choice_against_dense_reference():
    """base="auto" with three tasks and per-task K: every task's modularities are the dense
    reference's on the dense graph, and the kept base is their argmax."""
    rng = np.random.default_rng(6)
    Xs, _ = direction_tasks(seed=6, sizes=((15, 14), (12, 13, 11), (10, 12)))
    Xs = [X + 6.0 * rng.random(X.shape) for X in Xs]  # task 0 keeps spherical k-means
    est = quiet_fit(SpectralMTC([2, 3, 2], n_neighbors=5, random_state=1), Xs)
    single = quiet_fit(SpectralMTC([2, 3, 2], base="spectral", coupling=0.0, n_neighbors=5,
                                   random_state=1), Xs).labels_
    assert est.base_modularity_.shape == (3, 3)
    for t, (X, k) in enumerate(zip(Xs, [2, 3, 2])):
        W = naive.task_graph(X, 5)
        cand = [single[t], BregmanKMeans(k, random_state=1).fit(normalize(X)).labels_,
                BregmanKMeans(k, divergence="kl", random_state=1).fit(
                    normalize(X, norm="l1")).labels_]
        mod = [naive.modularity(W, lab) for lab in cand]
        np.testing.assert_allclose(est.base_modularity_[t], mod, rtol=1e-9)
        assert est.base_[t] == est.bases_[int(np.argmax(mod))]
        if est.base_[t] != "spectral":
            np.testing.assert_array_equal(est.labels_[t], cand[est.bases_.index(est.base_[t])])
    assert est.base_ == ["spherical", "spectral", "spectral"]


def test_coupling_changes_the_partition_of_a_task_that_needs_it():
    """A task whose own kNN graph is ambiguous (two thin strands); the other task fills the gap
    between the strands' ends: fixed couplings give partitions other than the single-task one
    (the coupling is live, not ignored)."""
    Xs, ys = direction_tasks(seed=7, sizes=((25, 25), (25, 25)))
    Xs[0] = Xs[0] + 2.5 * np.random.default_rng(8).random(Xs[0].shape)
    est = quiet_fit(SpectralMTC(2, base="spectral", coupling_grid=(0.5, 2.0), n_neighbors=5,
                                random_state=0), Xs)
    parts = est.labels_per_coupling_
    assert any(adjusted_rand_score(parts[0][0], p[0]) < 1.0 for p in parts[1:])


# --------------------------------------------------------------------------- the contract
def test_predict_pickle_clone_and_inputs_untouched():
    Xs, ys = direction_tasks()
    copies = [X.copy() for X in Xs]
    est = quiet_fit(SpectralMTC(2, n_neighbors=4, random_state=0), Xs)
    for X, C in zip(Xs, copies):
        np.testing.assert_array_equal(X, C)
    for t in range(2):
        np.testing.assert_array_equal(est.predict(Xs[t], task=t), est.labels_[t])
    with pytest.raises(ValueError, match="pass task=t"):
        est.predict(Xs[0])
    with pytest.raises(ValueError, match="task must be in"):
        est.predict(Xs[0], task=2)
    with pytest.raises(ValueError, match="features"):
        est.predict(Xs[0][:, :3], task=0)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(Xs[1], task=1), est.labels_[1])
    assert clone(est).get_params() == est.get_params()
    assert est.fit_predict(Xs)[0].tolist() == est.labels_[0].tolist()


def test_sparse_and_float32_give_the_dense_labels():
    Xs, _ = direction_tasks()
    ref = quiet_fit(SpectralMTC(2, n_neighbors=4, random_state=0), Xs).labels_
    for conv in (sp.csr_matrix, lambda X: X.astype(np.float32)):
        got = quiet_fit(SpectralMTC(2, n_neighbors=4, random_state=0),
                        [conv(X) for X in Xs]).labels_
        for a, b in zip(got, ref):
            assert adjusted_rand_score(a, b) == 1.0


@pytest.mark.parametrize("kw, exc, match", [
    (dict(coupling=-0.1), ValueError, "coupling"),
    (dict(coupling="big"), ValueError, "coupling"),
    (dict(transfer="both"), ValueError, "transfer"),
    (dict(n_neighbors=0), ValueError, "n_neighbors"),
    (dict(coupling_grid=()), TypeError, "coupling_grid"),
    (dict(coupling_grid=(0.1, -1.0)), ValueError, "coupling_grid"),
    (dict(coupling_grid=(0.1, float("nan"))), ValueError, "coupling_grid"),
    (dict(eigen_solver="amg"), ValueError, "eigen_solver"),
    (dict(base="nmf"), ValueError, "base"),
    (dict(base_rule="ncut"), ValueError, "base_rule"),
    (dict(guard="none"), ValueError, "guard"),
])
def test_bad_parameters_are_named(kw, exc, match):
    Xs, _ = direction_tasks()
    with pytest.raises(exc, match=match):
        SpectralMTC(2, **kw).fit(Xs)


def test_bad_tasks_are_named():
    Xs, _ = direction_tasks()
    with pytest.raises(ValueError, match="at least two tasks"):
        SpectralMTC(2).fit(Xs[:1])
    with pytest.raises(ValueError, match="feature space"):
        SpectralMTC(2).fit([Xs[0], Xs[1][:, :3]])
    with pytest.raises(ValueError, match="n_clusters"):
        SpectralMTC([2, 99]).fit(Xs)
    with pytest.raises(ValueError, match="NaN|infinity"):
        SpectralMTC(2).fit([Xs[0], np.full_like(Xs[1], np.nan)])
    with pytest.raises(TypeError, match="list"):
        SpectralMTC(2).fit(Xs[0])
    with pytest.raises(ValueError, match="base='kl'"):
        SpectralMTC(2, base="kl").fit([Xs[0], Xs[1] - 3.0])


# ------------------------------------------------ one similarity pass per task pair
@pytest.mark.parametrize("sizes, k", [((50, 40), 5), ((7, 30), 10), ((30, 4), 10)])
def test_cross_knn_both_is_two_neighbour_searches(sizes, k):
    """Both directions of the cross-task kNN from one pass equal scikit-learn's neighbour
    search run once per direction (dense and sparse; k larger than a task)."""
    rng = np.random.default_rng(1)
    A, B = rng.random((sizes[0], 6)), rng.random((sizes[1], 6))
    for conv in (np.asarray, sp.csr_matrix):
        ab, ba = smtc._cross_knn_both(conv(A), conv(B), k)
        assert (ab != smtc._cross_knn(A, B, k)).nnz == 0
        assert (ba != smtc._cross_knn(B, A, k)).nnz == 0
        np.testing.assert_array_equal(np.asarray(ab.sum(axis=1)).ravel(), min(k, sizes[1]))


# ------------------------------------------------------------------ the base choice
def test_base_objectives_match_dense_reference():
    rng = np.random.default_rng(3)
    X = rng.random((40, 6)) * (rng.random((40, 6)) > 0.3) + 0.01
    lab = rng.integers(0, 3, 40)
    U = naive.unit(X)
    ref = np.mean([np.sum((U[i] - U[lab == lab[i]].mean(axis=0)) ** 2) for i in range(40)])
    assert within_cluster_unit(sp.csr_matrix(U), lab) == pytest.approx(ref, rel=1e-10)
    P = X / X.sum(axis=1, keepdims=True)
    P[P < 0.02] = 0.0  # zeros in the rows, as in term frequencies
    P /= P.sum(axis=1, keepdims=True)
    from scipy.special import rel_entr

    ref = np.mean([rel_entr(P[i], P[lab == lab[i]].mean(axis=0)).sum() for i in range(40)])
    assert kl_objective(P, lab) == pytest.approx(ref, rel=1e-10)
    assert kl_objective(sp.csr_matrix(P), lab) == pytest.approx(ref, rel=1e-10)
    # gains over chance (10, 4, 8): [[8, 3, 5], [9, 2, 5], [6, 3, 2]] -> best [9, 3, 5]
    o = np.array([[2.0, 1.0, 3.0], [1.0, 2.0, 3.0], [4.0, 1.0, 6.0]])
    np.testing.assert_allclose(base_regret(o, [10.0, 4.0, 8.0]),
                               [(1 / 9 + 0 + 0) / 3, (0 + 1 / 3 + 0) / 3,
                                (1 / 3 + 0 + 3 / 5) / 3])
    # an objective no partition beats chance on counts for nobody
    np.testing.assert_allclose(base_regret([[1.0, 2.0], [1.0, 3.0]], [4.0, 1.0]),
                               [0.0, 0.0])


def _wide_tasks(seed):
    """Two tasks of three text-like clusters (non-negative rows, ambiguous neighbours)."""
    rng = np.random.default_rng(seed)
    Xs = []
    for n in (45, 39):
        y = np.arange(n) % 3
        X = 2.0 * rng.random((n, 12)) + 1.5 * np.eye(3, 12)[y] + 0.8 * np.eye(3, 12, k=3)[y]
        Xs.append(X)
    return Xs


def test_modularity_matches_dense_reference():
    rng = np.random.default_rng(4)
    for n, k in ((30, 3), (41, 5)):
        X = rng.random((n, 6))
        W = naive.task_graph(X, 4)
        for lab in (rng.integers(0, k, n), np.zeros(n, dtype=np.int64), np.arange(n)):
            ref = naive.modularity(W, lab)
            assert modularity(sp.csr_matrix(W), lab) == pytest.approx(ref, rel=1e-10, abs=1e-14)
    assert modularity(sp.csr_matrix((4, 4)), np.array([0, 0, 1, 1])) == 0.0
    # the chance value is the same cluster volumes': one giant cluster and slivers scores low
    # although its normalised cut is small
    W = naive.task_graph(np.repeat(np.eye(3), 10, axis=0) + 0.1 * rng.random((30, 3)), 5)
    good, sliver = np.repeat(np.arange(3), 10), np.r_[np.zeros(28, int), 1, 2]
    assert modularity(sp.csr_matrix(W), good) > 0.5 > modularity(sp.csr_matrix(W), sliver)


@pytest.mark.parametrize("base_rule", ["modularity", "gain"])
@pytest.mark.parametrize("seed", [0, 2, 3, 4])
def test_auto_base_keeps_the_partition_the_rule_prefers(seed, base_rule):
    Xs = _wide_tasks(seed)
    est = quiet_fit(SpectralMTC(3, n_neighbors=5, random_state=2, base_rule=base_rule), Xs)
    assert est.bases_ == ("spectral", "spherical", "kl")
    single = quiet_fit(SpectralMTC(3, base="spectral", coupling=0.0, n_neighbors=5,
                                   random_state=2), Xs).labels_
    chosen = []
    for t, X in enumerate(Xs):
        cand = {"spectral": single[t],
                "spherical": BregmanKMeans(3, random_state=2).fit(normalize(X)).labels_,
                "kl": BregmanKMeans(3, divergence="kl", random_state=2).fit(
                    normalize(X, norm="l1")).labels_}
        W = naive.task_graph(X, 5)
        U, P = naive.unit(X), X / X.sum(axis=1, keepdims=True)
        crit = [lambda lab: naive.normalized_cut(W, lab),
                lambda lab: within_cluster_unit(U, lab), lambda lab: kl_objective(P, lab)]
        o = np.array([[c(cand[b]) for c in crit] for b in est.bases_])
        np.testing.assert_allclose(est.base_objectives_[t], o, rtol=1e-9)
        one = np.zeros(len(X), dtype=np.int64)
        chance = [2.0, within_cluster_unit(U, one), kl_objective(P, one)]
        np.testing.assert_allclose(est.base_chance_[t], chance, rtol=1e-12)
        mod = [naive.modularity(W, cand[b]) for b in est.bases_]
        np.testing.assert_allclose(est.base_modularity_[t], mod, rtol=1e-9)
        r = base_regret(o, chance) if base_rule == "gain" else -np.array(mod)
        b = est.bases_[int(np.flatnonzero(r <= r.min() + 1e-9)[0])]  # ties to the earlier
        assert est.base_[t] == b
        chosen.append(b)
        if b == "spectral":
            assert any(np.array_equal(est.labels_[t], p[t]) for p in est.labels_per_coupling_)
        else:
            np.testing.assert_array_equal(est.labels_[t], cand[b])
            assert est.coupling_[t] == 0.0
    if seed > 0:  # these draws keep a k-means base (kl at 2 and 3, spherical at 4) on a task
        assert set(chosen) != {"spectral"}
    # a fixed base is that base's partition; kl only on non-negative rows
    for b in ("spherical", "kl"):
        fixed = quiet_fit(SpectralMTC(3, base=b, n_neighbors=5, random_state=2), Xs)
        assert fixed.base_ == [b, b] and fixed.couplings_.tolist() == [0.0]
        for t, X in enumerate(Xs):
            Z = normalize(X) if b == "spherical" else normalize(X, norm="l1")
            ref = BregmanKMeans(3, divergence="sqeuclidean" if b == "spherical" else "kl",
                                random_state=2).fit(Z).labels_
            np.testing.assert_array_equal(fixed.labels_[t], ref)
    signed = quiet_fit(SpectralMTC(3, n_neighbors=5, random_state=2), [X - 0.5 for X in Xs])
    assert signed.bases_ == ("spectral", "spherical")


def test_pareto_guard_never_keeps_a_coupled_partition_worse_for_k_means():
    """The guard's guarantee: a task's kept spectral partition is no worse than its
    single-task spectral partition for both the cut on its own graph and the k-means sum of
    squares on its unit rows."""
    for seed in range(3):
        Xs, _ = direction_tasks(seed=seed, sizes=((20, 18), (17, 21)))
        Xs = [X + 1.5 * np.random.default_rng(seed).random(X.shape) for X in Xs]
        est = quiet_fit(SpectralMTC(2, base="spectral", coupling_grid=(0.05, 0.5, 2.0),
                                    n_neighbors=5, random_state=seed), Xs)
        kept = [list(est.couplings_).index(c) for c in est.coupling_]
        for t, i in enumerate(kept):
            assert est.ncut_[i, t] <= est.ncut_[0, t] + 1e-15
            assert est.within_[i, t] <= est.within_[0, t] * (1 + 1e-12)
            assert est.within_[i, t] == pytest.approx(
                within_cluster_unit(naive.unit(Xs[t]), est.labels_[t]))


# ------------------------------------------------------------------------------ the demo
def test_demo_prints_the_spectral_rows_and_verdicts_from_the_numbers(capsys):
    import re

    from bregclust.cli import main

    assert main(["demo", "--quiet", "--methods", "spectralmtc", "ind", "--draws", "2"]) == 0
    out = capsys.readouterr().out
    rows = {}
    for ln in out.splitlines():
        m = re.match(r"(IND spectral \(cosine 10-NN\)|SpectralMTC \(base, coupling=auto[^)]*\)|"
                     r"IND k-means \(\w+\), best of 5)\s+(\d\.\d{3}) / .*?(\d\.\d{3}) / "
                     r"\d\.\d{3} / \d\.\d{3}\s*$", ln)
        if m and m.group(1).split(" (base")[0] not in rows:  # the full tasks come first
            rows[m.group(1).split(" (base")[0]] = float(m.group(2))
    assert {"IND spectral (cosine 10-NN)", "SpectralMTC"} <= set(rows)
    assert rows["IND spectral (cosine 10-NN)"] > 0.8  # spectral clustering of the digits
    # the SpectralMTC verdict is against the best IND row, spectral included: recompute it
    ind = max(v for k, v in rows.items() if k.startswith("IND"))
    line = next(ln for ln in out.splitlines() if ln.startswith("  SpectralMTC (base, coupling="))
    diff = float(re.search(r": ([+-]\d\.\d{3}) /", line).group(1))
    assert diff == pytest.approx(rows["SpectralMTC"] - ind, abs=1.5e-3)
    assert "Conclusion" in out


# ------------------------------------------------------- k-means bases coupled (MBC manner)
def _blobs(seed, sizes, d=6, spread=0.9):
    """Non-negative blobs around shared centres (cluster c of every task near centre c)."""
    rng = np.random.default_rng(seed)
    centres = np.abs(rng.normal(0, 1, (8, d))) * 3 + 0.2
    return [np.abs(np.vstack([centres[c] + spread * rng.normal(size=(m, d))
                              for c, m in enumerate(part)])) for part in sizes]


def _kmc_reference(Xs, ks, base, seed, n_neighbors=5):
    """kmeans_coupling="mbc" on a fixed k-means base, rebuilt from its parts: every task's
    BregmanKMeans partition, one MultitaskBregmanClustering from them, and the guard by the
    dense modularity of the dense kNN graph."""
    from bregclust.mbc import MultitaskBregmanClustering

    if base == "spherical":
        data, div = [normalize(X) for X in Xs], "sqeuclidean"
    else:
        data, div = [normalize(X, norm="l1") for X in Xs], "kl"
    start = [BregmanKMeans(k, divergence=div, random_state=seed).fit(Z).labels_
             for Z, k in zip(data, ks)]
    mbc = MultitaskBregmanClustering(ks, divergence=div, lam="auto", guard="task",
                                     init=start, random_state=seed).fit(data)
    out, kept, why = [], [], []
    for t, X in enumerate(Xs):
        W = naive.task_graph(X, n_neighbors)
        if not mbc.lam_ > 0:
            why.append("lam0")
        elif mbc.guarded_[t]:
            why.append("mbc-guard")
        elif naive.modularity(W, mbc.labels_[t]) < naive.modularity(W, start[t]) - 1e-12:
            why.append("modularity")
        else:
            why.append(None)
        keep = why[-1] is None
        out.append(mbc.labels_[t] if keep else start[t])
        kept.append(bool(keep))
    return out, kept, start, mbc.lam_, why


@pytest.mark.parametrize("base, seed, sizes", [
    ("spherical", 1, ((20, 20, 20, 20), (20, 20, 20, 20))),
    ("spherical", 0, ((20, 20, 20, 20), (25, 25, 25), (15, 15, 15, 15, 15))),
    ("kl", 3, ((20, 20, 20, 20), (20, 20, 20, 20))),
    ("kl", 2, ((20, 20, 20, 20), (25, 25, 25), (15, 15, 15, 15, 15))),
])
def test_kmeans_coupling_against_its_parts_and_dense_modularity(base, seed, sizes):
    """2 and 3 tasks, per-task K, both k-means bases: the labels are MBC's (lam="auto", task
    guard) from the tasks' k-means partitions where the dense modularity does not drop, the
    base partition elsewhere; and the coupling is live on these draws (some task changes)."""
    Xs = _blobs(seed, sizes)
    ks = [len(p) for p in sizes]
    est = quiet_fit(SpectralMTC(ks, base=base, kmeans_coupling="mbc", n_neighbors=5,
                                random_state=seed), Xs)
    ref, kept, start, lam, why = _kmc_reference(Xs, ks, base, seed)
    assert est.kmeans_coupled_ == kept
    assert est.kmeans_refusal_ == why
    assert est.kmeans_lam_ == [lam if k else 0.0 for k in kept]
    for t in range(len(Xs)):
        np.testing.assert_array_equal(est.labels_[t], ref[t])
        np.testing.assert_array_equal(est.labels_without_kmeans_coupling_[t], start[t])
        if kept[t]:
            np.testing.assert_array_equal(est.kmeans_coupled_labels_[t], ref[t])
    assert any(not np.array_equal(a, b) for a, b in zip(est.labels_, start))
    # kmeans_coupling="none" (the default) is the uncoupled partition
    plain = quiet_fit(SpectralMTC(ks, base=base, n_neighbors=5, random_state=seed), Xs)
    for a, b in zip(plain.labels_, start):
        np.testing.assert_array_equal(a, b)
    assert plain.kmeans_coupled_ == [False] * len(Xs)
    assert plain.kmeans_refusal_ == [None] * len(Xs)


@pytest.mark.parametrize("seed", range(6))
def test_kmeans_coupling_never_lowers_modularity_or_raises_the_sum_of_squares(seed):
    """The guarantees of a kept coupled partition (spherical base): modularity on the task's
    own graph at least the base partition's, k-means sum of squares on the unit rows at most
    its (MBC's task guard against the independent fit from the same start, which Lloyd
    steps from the base partition cannot make worse)."""
    sizes = ((20, 20, 20, 20), (25, 25, 25), (15, 15, 15, 15, 15))
    Xs = _blobs(seed, sizes)
    est = quiet_fit(SpectralMTC([4, 3, 5], base="spherical", kmeans_coupling="mbc", n_neighbors=5,
                                random_state=seed), Xs)
    for t, X in enumerate(Xs):
        W = naive.task_graph(X, 5)
        new, old = est.labels_[t], est.labels_without_kmeans_coupling_[t]
        assert naive.modularity(W, new) >= naive.modularity(W, old) - 1e-12
        U = naive.unit(X)
        assert within_cluster_unit(U, new) <= within_cluster_unit(U, old) * (1 + 1e-12)
        if est.kmeans_coupled_[t]:
            assert est.kmeans_modularity_[t] == pytest.approx(naive.modularity(W, new))


def test_kmeans_coupling_leaves_spectral_tasks_and_keeps_the_contract():
    """base="auto": only tasks on a k-means base can change (the spectral tasks' labels are
    the default's); predict, pickle, inputs untouched, sparse input; a bad value is named."""
    Xs = _wide_tasks(4)
    copies = [X.copy() for X in Xs]
    est = quiet_fit(SpectralMTC(3, n_neighbors=5, random_state=2, kmeans_coupling="mbc"), Xs)
    ref = quiet_fit(SpectralMTC(3, n_neighbors=5, random_state=2), Xs)
    assert est.base_ == ref.base_ and set(est.base_) != {"spectral"}
    for t in range(len(Xs)):
        np.testing.assert_array_equal(est.labels_without_kmeans_coupling_[t], ref.labels_[t])
        if est.base_[t] == "spectral":
            np.testing.assert_array_equal(est.labels_[t], ref.labels_[t])
        np.testing.assert_array_equal(Xs[t], copies[t])
        np.testing.assert_array_equal(est.predict(Xs[t], task=t), est.labels_[t])
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(Xs[1], task=1), est.labels_[1])
    got = quiet_fit(SpectralMTC(3, n_neighbors=5, random_state=2, kmeans_coupling="mbc"),
                    [sp.csr_matrix(X) for X in Xs])
    for a, b in zip(got.labels_, est.labels_):
        assert adjusted_rand_score(a, b) == 1.0
    with pytest.raises(ValueError, match="kmeans_coupling"):
        SpectralMTC(3, kmeans_coupling="yes").fit(Xs)


def test_kmeans_coupling_skips_a_partition_with_an_empty_cluster():
    """Two distinct rows per task and K=3: kl k-means leaves a cluster empty, MBC cannot start
    from it, so that task takes no part (here: nothing to couple) instead of an error."""
    rng = np.random.default_rng(0)
    Xs = [np.repeat(np.array([[1.0, 0, 0.1], [0, 1, 0.1]]), 15, axis=0)
          + 1e-9 * rng.random((30, 3)) for _ in range(2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SpectralMTC(3, base="kl", kmeans_coupling="mbc", n_neighbors=4,
                          random_state=0).fit(Xs)
    assert any(np.unique(lab).size < 3 for lab in est.labels_without_kmeans_coupling_)
    assert est.kmeans_coupled_ == [False, False]
    assert set(est.kmeans_refusal_) <= {"empty", "alone"} and "empty" in est.kmeans_refusal_
    for a, b in zip(est.labels_, est.labels_without_kmeans_coupling_):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("scale, fmt", [(1e200, "dense"), (1e-200, "dense"), (1e300, "csr"),
                                        (1e-300, "csr"), (1e18, "float32"), (1e18, "csr32")])
def test_extreme_scales_give_the_partition_of_unscaled_rows(scale, fmt):
    # every base and graph sees a row only through its direction; squared norms of rows near
    # the ends of the float range must not overflow to inf or underflow to 0 (which turned such
    # rows into zero rows and changed the partition)
    rng = np.random.default_rng(3)
    blocks = np.repeat(np.eye(6)[:3] * 4, 30, axis=0)
    A = np.abs(rng.normal(size=(90, 6))) + blocks
    B = np.abs(rng.normal(size=(90, 6))) + blocks[::-1]
    conv = {"dense": lambda X: X * scale, "csr": lambda X: sp.csr_matrix(X * scale),
            "float32": lambda X: (X * scale).astype(np.float32),
            "csr32": lambda X: sp.csr_matrix((X * scale).astype(np.float32))}[fmt]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # scikit-learn: graph not connected
        ref = SpectralMTC(3, random_state=0).fit([A, B])
        Xs = [conv(A), conv(B)]
        before = [X.copy() for X in Xs]
        model = SpectralMTC(3, random_state=0).fit(Xs)
        pred = model.predict(Xs[1], task=1)
    for got, want in zip(model.labels_, ref.labels_):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(pred, ref.predict(B, task=1))
    for X, X0 in zip(Xs, before):  # inputs never modified
        np.testing.assert_array_equal(X.toarray() if sp.issparse(X) else X,
                                      X0.toarray() if sp.issparse(X0) else X0)
