"""LSSTTC names each target cluster after the nearest source class in the shared subspace."""

import warnings

import numpy as np
import pytest

from bregclust.shared_subspace import SharedSubspaceTransfer, match_clusters_to_classes


def two_domains(seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[8.0, 1.0, 1.0], [1.0, 8.0, 1.0]])
    Xs = np.repeat(centres, 15, axis=0) + rng.normal(size=(30, 3))
    Xt = np.repeat(centres, 10, axis=0) + [0.5, -0.5, 1.0] + rng.normal(size=(20, 3))
    y = np.repeat(["a", "b", "-1"], [15, 15, 20])
    return np.vstack([Xs, Xt]), y, np.repeat(["a", "b"], 10)


def test_matching_is_the_optimal_assignment():
    A = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    B = np.array([[0.0, 9.0], [1.0, 0.0], [9.0, 1.0]])
    assert match_clusters_to_classes(A, B).tolist() == [1, 2, 0]


def test_an_empty_cluster_keeps_its_class_unless_a_live_cluster_needs_it():
    A = np.array([[0.0], [100.0], [5.0]])
    B = np.array([[0.0], [1.0], [5.0]])
    live = np.array([True, False, True])
    assert match_clusters_to_classes(A, B, live).tolist() == [0, 1, 2]


def test_a_fit_whose_clusters_agree_with_the_classes_keeps_their_names():
    X, y, yt = two_domains()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        clf = SharedSubspaceTransfer(n_components=2).fit(X, y)
    assert clf.cluster_class_.tolist() == [0, 1]
    assert (clf.transduction_[30:] == yt).all()
    assert (clf.predict(X[30:]) == yt).all()


def test_target_clusters_started_under_the_wrong_names_are_renamed_with_a_warning():
    X, y, yt = two_domains()
    wrong = np.where(yt == "a", "b", "a")  # every target row starts in the other class
    with pytest.warns(UserWarning, match="lie nearer, in the shared subspace"):
        clf = SharedSubspaceTransfer(n_components=3, lam=1.0, init=wrong).fit(X, y)
    assert clf.cluster_class_.tolist() == [1, 0]
    assert (clf.transduction_[30:] == yt).all()
    assert (clf.predict(X[30:]) == yt).all()
    # membership columns and target centres are per class
    assert (clf.classes_[clf.membership_.argmax(axis=1)] == yt).all()
    means = np.array([X[30:40].mean(axis=0), X[40:50].mean(axis=0)])
    d = ((clf.target_centers_[:, None, :] - means[None]) ** 2).sum(axis=2)
    assert d.argmin(axis=1).tolist() == [0, 1]



def orthogonal_target(seed=0):
    """Source classes split along feature 0 vs 1; the target's strongest split is feature 2."""
    rng = np.random.default_rng(seed)
    centres = np.array([[8.0, 1.0, 0.0], [1.0, 8.0, 0.0]])
    Xs = np.repeat(centres, 15, axis=0) + 0.3 * rng.normal(size=(30, 3))
    blobs = np.array([[8.0, 1.0, 15.0], [1.0, 8.0, 15.0], [8.0, 1.0, -15.0], [1.0, 8.0, -15.0]])
    Xt = np.repeat(blobs, 10, axis=0) + 0.3 * rng.normal(size=(40, 3))
    y = np.concatenate([np.repeat(["a", "b"], 15), np.full(40, "-1")])
    split = np.repeat(["a", "b"], 20)  # by the sign of feature 2
    return np.vstack([Xs, Xt]), y, split


def test_source_agreement_is_cohens_kappa_against_a_source_trained_svm():
    from sklearn.metrics import cohen_kappa_score
    from sklearn.svm import LinearSVC

    from bregclust.shared_subspace import source_agreement

    X, y, _ = two_domains()
    Xs, ys, Xt = X[:30], y[:30], X[30:]
    pred = LinearSVC(C=1.0).fit(Xs, ys).predict(Xt)
    rng = np.random.default_rng(1)
    labels = np.where(rng.random(20) < 0.3, np.where(pred == "a", "b", "a"), pred)
    assert source_agreement(Xs, ys, Xt, labels) == pytest.approx(cohen_kappa_score(pred, labels))
    assert source_agreement(Xs, ys, Xt, pred) == 1.0
    assert source_agreement(Xs, ys, Xt, np.where(pred == "a", "b", "a")) == -1.0


def test_a_fit_that_follows_the_source_classes_does_not_warn():
    X, y, yt = two_domains()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        clf = SharedSubspaceTransfer(n_components=2).fit(X, y)
    assert clf.source_agreement_ == 1.0


@pytest.mark.filterwarnings("ignore:LSSTTC. after the fit")
def test_target_clusters_unrelated_to_the_source_classes_raise_a_warning():
    # lam=1: the target is clustered on its own (its feature-2 split, the k-means optimum);
    # half of each cluster is each source class, so the labels agree with a source-trained
    # classifier at chance level - the warning says the data do not support the transfer
    X, y, split = orthogonal_target()
    with pytest.warns(UserWarning, match="transfer is not supported by the data"):
        clf = SharedSubspaceTransfer(n_components=3, lam=1.0, init=split).fit(X, y)
    assert abs(clf.source_agreement_) < 0.2
    assert sorted(np.unique(clf.transduction_[30:50]).tolist()) in (["a"], ["b"])


def test_source_svm_start_is_the_source_trained_linear_svm_s_labels():
    """Oracle: ``init="source-svm"`` is the fit from scikit-learn's LinearSVC(C=1), trained on
    the source rows, predicting the target rows (passed as explicit labels)."""
    from sklearn.svm import LinearSVC

    X, y, yt = two_domains(seed=3)
    X = X.copy()
    X[30:] += [3.0, -3.0, 0.0]  # a target domain shifted further from the source
    src = y != "-1"
    labels = LinearSVC(C=1.0).fit(X[src], y[src]).predict(X[~src])
    X0 = X.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        a = SharedSubspaceTransfer(n_components=2, init="source-svm").fit(X, y)
        b = SharedSubspaceTransfer(n_components=2, init=labels).fit(X, y)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(a.transduction_, b.transduction_)
    np.testing.assert_allclose(a.objective_history_, b.objective_history_, rtol=1e-12)
    assert np.all(np.diff(a.objective_history_) <= 1e-9 * a.objective_history_[:-1])


def test_unknown_init_name_is_refused_with_the_choices():
    X, y, _ = two_domains()
    with pytest.raises(ValueError, match="init must be 'source-means', 'source-svm'"):
        SharedSubspaceTransfer(n_components=2, init="svm").fit(X, y)
