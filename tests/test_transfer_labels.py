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

