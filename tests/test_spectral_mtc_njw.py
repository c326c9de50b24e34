"""SpectralMTC(spectral_rows=...): k-means on the unit rows of the spectral embeddings (Ng,
Jordan & Weiss 2002) against the dense reference (numpy ``eigh`` of the normalised adjacency,
rows scaled to unit norm as NJW print it), the per-task choice of ``"both"``, and the contract."""

import pickle
import warnings

import naive_spectral_mtc as naive
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import noisy_tasks, quiet_fit
from sklearn.cluster import KMeans
from sklearn.manifold import spectral_embedding
from sklearn.metrics import adjusted_rand_score
from sklearn.preprocessing import normalize

from bregclust.spectral_mtc import SpectralMTC, joint_graph, spectral_labels, task_graph


def _dense_njw_labels(W, k, seed, rows=None, m=None):
    """k-means (scikit-learn, ``n_init=10``) on the dense reference's NJW rows, its generator in
    the state the embedding leaves it in (the rows themselves come from ``numpy.linalg.eigh``;
    scikit-learn's embedding is called only to advance the generator as the estimator's does)."""
    m = k if m is None else m
    _, R = naive.njw_embedding(W, m)
    if rows is not None:
        R = naive.unit(R[rows])
    rng = np.random.RandomState(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        spectral_embedding(sp.csr_matrix(W), n_components=m, random_state=rng,
                           eigen_solver="arpack", drop_first=False)
    return KMeans(k, n_init=10, random_state=rng).fit(R).labels_


def test_unit_rows_of_the_scaled_embedding_are_the_njw_rows():
    """The rows k-means sees (scikit-learn's D^-1/2-scaled eigenvectors at unit norm) equal the
    dense NJW rows up to a rotation of the eigenvector basis: equal Gram matrices."""
    X = noisy_tasks()[2]
    W = task_graph(X, 5)
    for m in (2, 3):
        E = spectral_embedding(W, n_components=m, eigen_solver="arpack", random_state=0,
                               drop_first=False)
        vals, _ = naive.njw_embedding(W.toarray(), m + 1)
        assert vals[m - 1] - vals[m] > 1e-3  # a gap: the subspace is well defined
        _, R = naive.njw_embedding(W.toarray(), m)
        U = normalize(E)
        np.testing.assert_allclose(U @ U.T, R @ R.T, atol=1e-7)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_spectral_labels_unit_rows_equal_the_dense_reference(seed):
    for X, k in zip(noisy_tasks(), (2, 3, 2)):
        W = task_graph(X, 5)
        got = spectral_labels(W, k, unit_rows=True, random_state=seed, eigen_solver="arpack")
        ref = _dense_njw_labels(W.toarray(), k, seed)
        assert adjusted_rand_score(got, ref) == 1.0


def test_the_option_changes_a_partition_on_these_tasks():
    """Not a no-op: the third task's unit-row partition differs from the scaled one."""
    W = task_graph(noisy_tasks()[2], 5)
    a = spectral_labels(W, 2, random_state=1)
    b = spectral_labels(W, 2, random_state=1, unit_rows=True)
    assert adjusted_rand_score(a, b) < 0.95


@pytest.mark.parametrize("sizes, ks", [(((15, 14), (12, 13, 11)), [2, 3]),
                                       (((15, 14), (12, 13, 11), (10, 12)), [2, 3, 2])])
def test_unit_single_task_base_equals_the_dense_reference(sizes, ks):
    """coupling=0, base="spectral": every task's labels are NJW on its own graph, and NJW from
    the public function with the same seed (2 and 3 tasks, per-task K)."""
    Xs = noisy_tasks(sizes=sizes)
    est = quiet_fit(SpectralMTC(ks, base="spectral", spectral_rows="unit", coupling=0.0,
                                n_neighbors=5, random_state=3), Xs)
    assert est.spectral_rows_ == ["unit"] * len(Xs)
    for X, k, lab in zip(Xs, ks, est.labels_):
        W = task_graph(X, 5)
        np.testing.assert_array_equal(lab, spectral_labels(W, k, unit_rows=True,
                                                            random_state=3))
        assert adjusted_rand_score(lab, _dense_njw_labels(naive.task_graph(X, 5), k, 3)) == 1.0


@pytest.mark.parametrize("n_tasks", [2, 3])
def test_unit_joint_candidates_equal_k_means_on_the_dense_joint_njw_rows(n_tasks):
    """At a fixed coupling every task's candidate is k-means on its unit rows of the joint
    embedding: the dense reference's joint graph, eigh, unit rows, k-means with the task's
    seed; per-task K."""
    Xs = noisy_tasks()[:n_tasks]
    ks = [2, 3, 2][:n_tasks]
    mu = 0.3
    est = quiet_fit(SpectralMTC(ks, base="spectral", spectral_rows="unit", coupling=mu,
                                n_neighbors=5, random_state=2), Xs)
    assert list(est.couplings_) == [mu]
    J = naive.joint_graph(Xs, 5, mu)
    np.testing.assert_allclose(joint_graph(Xs, mu, 5).toarray(), J, rtol=1e-12, atol=1e-12)
    _, R = naive.njw_embedding(J, sum(ks))
    starts = np.concatenate([[0], np.cumsum([X.shape[0] for X in Xs])])
    for t in range(n_tasks):
        rows = naive.unit(R[starts[t]:starts[t + 1]])
        ref = KMeans(ks[t], n_init=10, random_state=2).fit(rows).labels_
        assert adjusted_rand_score(est.labels_per_coupling_[0][t], ref) == 1.0


def test_scaled_and_unit_joint_candidates_differ_only_in_the_rows():
    """"scaled" (the default) still clusters scikit-learn's rows; "unit" differs on a task."""
    Xs = noisy_tasks()
    kw = dict(base="spectral", coupling=0.3, n_neighbors=5, random_state=2)
    a = quiet_fit(SpectralMTC([2, 3, 2], **kw), Xs)
    b = quiet_fit(SpectralMTC([2, 3, 2], spectral_rows="scaled", **kw), Xs)
    c = quiet_fit(SpectralMTC([2, 3, 2], spectral_rows="unit", **kw), Xs)
    for x, y in zip(a.labels_, b.labels_):
        np.testing.assert_array_equal(x, y)
    assert min(adjusted_rand_score(x, y) for x, y in zip(a.labels_, c.labels_)) < 1.0


@pytest.mark.parametrize("seed", [1, 4])
def test_both_keeps_per_task_the_variant_of_larger_dense_modularity(seed):
    """spectral_rows="both": the two single-task spectral partitions are the "scaled" and
    "unit" fits', their modularities the dense reference's, and each task's spectral base
    (coupling 0) is the one of larger modularity (ties to "scaled"); 3 tasks, per-task K."""
    Xs = noisy_tasks(seed=seed)
    ks = [2, 3, 2]
    kw = dict(base="spectral", coupling=0.0, n_neighbors=5, random_state=1)
    both = quiet_fit(SpectralMTC(ks, spectral_rows="both", **kw), Xs)
    scaled = quiet_fit(SpectralMTC(ks, spectral_rows="scaled", **kw), Xs)
    unit = quiet_fit(SpectralMTC(ks, spectral_rows="unit", **kw), Xs)
    for t, X in enumerate(Xs):
        W = naive.task_graph(X, 5)
        q = [naive.modularity(W, scaled.labels_[t]), naive.modularity(W, unit.labels_[t])]
        np.testing.assert_allclose(both.spectral_modularity_[t], q, rtol=1e-9, atol=1e-12)
        want = "unit" if q[1] > q[0] + 1e-12 else "scaled"
        assert both.spectral_rows_[t] == want
        np.testing.assert_array_equal(both.labels_[t],
                                      (unit if want == "unit" else scaled).labels_[t])
    assert np.isnan(scaled.spectral_modularity_).all()
    if seed == 4:
        assert both.spectral_rows_ == ["scaled", "scaled", "unit"]


def test_both_with_the_base_choice_and_the_coupling():
    """The default base choice and coupling on top of "both": a task's spectral candidate at
    coupling 0 is its kept variant, and its joint candidates use the same rows."""
    Xs = noisy_tasks()
    ks = [2, 3, 2]
    est = quiet_fit(SpectralMTC(ks, spectral_rows="both", coupling_grid=(0.3,), n_neighbors=5,
                                random_state=2), Xs)
    assert est.spectral_rows_ == ["scaled", "scaled", "unit"]
    J = naive.joint_graph(Xs, 5, 0.3)
    E = spectral_embedding(sp.csr_matrix(J), n_components=sum(ks), eigen_solver="arpack",
                           random_state=0, drop_first=False)
    starts = np.concatenate([[0], np.cumsum([X.shape[0] for X in Xs])])
    for t, v in enumerate(est.spectral_rows_):
        single = spectral_labels(task_graph(Xs[t], 5), ks[t], random_state=2,
                                 unit_rows=v == "unit")
        np.testing.assert_array_equal(est.labels_per_coupling_[0][t], single)
        rows = E[starts[t]:starts[t + 1]]
        rows = normalize(rows) if v == "unit" else rows
        ref = KMeans(ks[t], n_init=10, random_state=2).fit(rows).labels_
        assert adjusted_rand_score(est.labels_per_coupling_[1][t], ref) == 1.0


@pytest.mark.parametrize("rows", ["unit", "both"])
def test_predict_pickle_inputs_untouched_sparse_equals_dense(rows):
    Xs = noisy_tasks()
    copies = [X.copy() for X in Xs]
    est = quiet_fit(SpectralMTC([2, 3, 2], spectral_rows=rows, n_neighbors=5, random_state=0), Xs)
    for X, C in zip(Xs, copies):
        np.testing.assert_array_equal(X, C)
    for t in range(3):
        np.testing.assert_array_equal(est.predict(Xs[t], task=t), est.labels_[t])
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(Xs[2], task=2), est.labels_[2])
    assert again.spectral_rows_ == est.spectral_rows_
    sparse = quiet_fit(SpectralMTC([2, 3, 2], spectral_rows=rows, n_neighbors=5, random_state=0),
                       [sp.csr_matrix(X) for X in Xs])
    for a, b in zip(sparse.labels_, est.labels_):
        assert adjusted_rand_score(a, b) == 1.0


@pytest.mark.parametrize("value, exc", [("njw", ValueError), ("Unit", ValueError),
                                        (1, TypeError), (None, TypeError)])
def test_bad_spectral_rows_is_named(value, exc):
    with pytest.raises(exc, match="spectral_rows"):
        SpectralMTC(2, spectral_rows=value).fit(noisy_tasks()[:2])
