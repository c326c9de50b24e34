"""Every estimator of the library, with its defaults, on the bundled digits tasks.

A first-contact check: ``make_digits_tasks()`` (digits 0-5, 811 images, and 3-9, 986 images;
no download), the number of clusters of each task set to its number of classes and every
other parameter left at its default. Each fit must end without an error and without a
``ConvergenceWarning`` (an estimator whose defaults stop before convergence fails here).
Single-task estimators fit each task on its own; ``SharedSubspaceTransfer`` labels task 2
from task 1's labels.
"""

import inspect
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import bregclust
from bregclust.datasets import make_digits_tasks

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def digits():
    d = make_digits_tasks()
    return d.Xs, d.ys, [int(np.unique(y).size) for y in d.ys]


def _single(cls):
    def fit(Xs, ys, ks):
        return [cls(k).fit(X) for X, k in zip(Xs, ks)]
    return fit


def _multi(cls):
    def fit(Xs, ys, ks):
        return [cls(ks).fit(Xs)]
    return fit


def _lssmtc(Xs, ys, ks):
    # cluster j has one shared centre in every task, so LSSMTC takes one K for all tasks
    return [bregclust.LSSMTC(max(ks)).fit(Xs)]


def _lssttc(Xs, ys, ks):
    X = np.vstack(Xs)
    y = np.concatenate([ys[0], np.full(Xs[1].shape[0], -1)])
    return [bregclust.LSSTTC().fit(X, y)]


def _mixture(Xs, ys, ks):
    # n_components as GaussianMixture's; its labels are predict's
    return [bregclust.BregmanMixture(k).fit(X) for X, k in zip(Xs, ks)]


FITS = {
    "BregmanKMeans": _single(bregclust.BregmanKMeans),
    "MiniBatchBregmanKMeans": _single(bregclust.MiniBatchBregmanKMeans),
    "BisectingBregmanKMeans": _single(bregclust.BisectingBregmanKMeans),
    "BregmanCoclustering": _single(bregclust.BregmanCoclustering),
    "BregmanMixture": _mixture,
    "AgglomerativeBregman": _single(bregclust.AgglomerativeBregman),
    "SymmetricNMF": _single(bregclust.SymmetricNMF),
    "MultitaskBregmanClustering": _multi(bregclust.MultitaskBregmanClustering),
    "NonparametricKernelMTC": _multi(bregclust.NonparametricKernelMTC),
    "SpectralKernelMTC": _multi(bregclust.SpectralKernelMTC),
    "ModelRelationClustering": _multi(bregclust.ModelRelationClustering),
    "SpectralMTC": _multi(bregclust.SpectralMTC),
    "SharedSubspaceClustering": _lssmtc,
    "SharedSubspaceTransfer": _lssttc,
}


def test_every_estimator_of_the_library_is_listed():
    estimators = {name for name in bregclust.__all__
                  if inspect.isclass(getattr(bregclust, name))
                  and hasattr(getattr(bregclust, name), "fit")}
    aliases = {"LNKMTC", "LSKMTC", "LSSMTC", "LSSTTC"}  # paper names of listed classes
    assert estimators - aliases == set(FITS)


@pytest.mark.parametrize("name", list(FITS))
def test_defaults_fit_the_digits_tasks_without_convergence_warning(name, digits):
    Xs, ys, ks = digits
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        models = FITS[name](Xs, ys, ks)
    for model, X in zip(models, Xs):
        labels = getattr(model, "labels_", getattr(model, "row_labels_", None))
        if isinstance(model, bregclust.BregmanMixture):
            assert model.converged_
            labels = model.predict(X)
        elif labels is None:
            labels = model.transduction_
        labels = labels if isinstance(labels, list) else [labels]
        assert all(np.isfinite(np.asarray(lab, dtype=float)).all() for lab in labels)
