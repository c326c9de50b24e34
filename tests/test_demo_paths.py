"""The shortcuts the demo's methods take for speed give the results of the plain path, bit for
bit: ``factor_kernel_kmeans``'s random-partition starts (one input check and statistics pass
for all starts) against one :class:`BregmanKMeans` fit per start, as before the shortcut."""

import warnings

import numpy as np
import pytest
from sklearn.utils import check_random_state

from bregclust import BregmanKMeans, EmptyClusterWarning
from bregclust.kernel_mtc import factor_kernel_kmeans


def _partition_means(F, k, rng):
    """The random-partition start as factor_kernel_kmeans documents it (same draws)."""
    n = F.shape[0]
    labels = rng.randint(k, size=n)
    labels[rng.permutation(n)[:k]] = np.arange(k)
    counts = np.bincount(labels, minlength=k).astype(np.float64)
    sums = np.zeros((k, F.shape[1]))
    np.add.at(sums, labels, F)
    return sums / counts[:, None]


def _one_fit_per_start(F, k, n_init, max_iter, tol, seed):
    rng = check_random_state(seed)
    best = (None, np.inf)
    for _ in range(n_init):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EmptyClusterWarning)
            est = BregmanKMeans(k, divergence="sqeuclidean", init=_partition_means(F, k, rng),
                                n_init=1, max_iter=max_iter, tol=tol).fit(F)
        if best[0] is None or est.inertia_ < best[1]:
            best = (est.labels_.astype(np.int64), float(est.inertia_))
    return best


@pytest.mark.parametrize("case", range(24))
def test_factor_kernel_kmeans_is_one_bregman_kmeans_fit_per_start(case):
    g = np.random.default_rng(case)
    n = int(g.integers(10, 200))
    r = int(g.integers(1, 10))
    k = int(g.integers(1, min(n, 12) + 1))
    F = g.standard_normal((n, r)) * 10.0 ** int(g.integers(-4, 5))
    if case % 5 == 0:
        F[: n // 2] = F[0]  # repeated rows: ties and emptied clusters
    if case % 7 == 0:
        F *= 1e100  # a scale the estimator conditions (those starts go through it)
    if case % 11 == 0:
        F *= 1e200  # the objective overflows to inf: labels all the same
    max_iter = int(g.choice([1, 3, 300]))
    tol = float(g.choice([0.0, 1e-4]))
    seed = int(g.integers(1 << 30))
    n_init = int(g.integers(1, 5))
    F0 = F.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning at max_iter=1, on both paths
        labels, inertia = factor_kernel_kmeans(F, k, n_init=n_init, max_iter=max_iter, tol=tol,
                                               random_state=seed)
        ref_labels, ref_inertia = _one_fit_per_start(F, k, n_init, max_iter, tol, seed)
    np.testing.assert_array_equal(labels, ref_labels)
    assert labels.dtype == np.int64
    assert inertia == ref_inertia
    np.testing.assert_array_equal(F, F0)
