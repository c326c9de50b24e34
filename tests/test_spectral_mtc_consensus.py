"""SpectralMTC(base_rule="consensus") and its cluster-ensemble helpers, against the dense reference
``tests/naive_consensus.py`` (co-association by loops, ``numpy.linalg.eigh``, NMI counted)
and the consensus choice rebuilt from independent pieces; the multi-task contract."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import noisy_tasks, quiet_fit
from naive_consensus import anmi as naive_anmi
from naive_consensus import coassociation as naive_coassociation
from naive_consensus import embedding as naive_embedding
from sklearn.cluster import KMeans
from sklearn.preprocessing import normalize

from bregclust.kmeans import BregmanKMeans
from bregclust.metrics import nmi
from bregclust.spectral_mtc import (
    CONSENSUS_SEEDS,
    SpectralMTC,
    anmi,
    coassociation,
    coassociation_labels,
    consensus_scores,
    spectral_labels,
    task_graph,
)


def _ensemble(seed, n=40, m=5, k=(2, 3, 4, 3, 5)):
    rng = np.random.RandomState(seed)
    truth = rng.randint(3, size=n)
    parts = []
    for p in range(m):
        lab = truth.copy()
        flip = rng.rand(n) < 0.25
        lab[flip] = rng.randint(k[p], size=flip.sum())
        parts.append(lab * 7 + p)  # arbitrary label values
    return parts, truth


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("weights", [None, [1.0, 2.0, 0.5, 0.0, 1.5]])
def test_coassociation_equals_the_loops(seed, weights):
    parts, _ = _ensemble(seed)
    np.testing.assert_allclose(coassociation(parts, weights), naive_coassociation(parts, weights),
                               atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("weights", [None, [1.0, 2.0, 0.5, 0.0, 1.5]])
def test_coassociation_labels_equal_kmeans_on_the_dense_eigenvectors(seed, weights):
    parts, _ = _ensemble(seed)
    k = 3
    rows, vals = naive_embedding(parts, k, weights)
    assert vals[k - 1] - vals[k] > 1e-6  # the subspace is determined on these draws
    ref = KMeans(k, n_init=10, random_state=seed).fit(rows).labels_
    got = coassociation_labels(parts, k, weights, random_state=seed)
    assert got.dtype == np.int64 and got.shape == (40,)
    # the same subspace up to a rotation (signs / order of eigenvectors): same k-means
    # partition of the unit rows
    assert nmi(ref, got) == pytest.approx(1.0)


def test_coassociation_labels_recover_an_agreed_partition():
    rng = np.random.RandomState(0)
    truth = np.repeat([0, 1, 2], 20)
    parts = [truth, (truth + 1) % 3, rng.permutation(truth)]
    got = coassociation_labels(parts, 3, [0.45, 0.45, 0.1], random_state=0)
    assert nmi(truth, got) == pytest.approx(1.0)


@pytest.mark.parametrize("seed", [0, 1])
def test_anmi_equals_the_counted_nmi(seed):
    parts, truth = _ensemble(seed)
    for w in (None, [1.0, 2.0, 0.5, 0.0, 1.5]):
        assert anmi(truth, parts, w) == pytest.approx(naive_anmi(truth, parts, w), abs=1e-12)


def test_inputs_unmodified_and_bad_input_named():
    parts, _ = _ensemble(0)
    copies = [p.copy() for p in parts]
    coassociation_labels(parts, 3, random_state=0)
    for a, b in zip(parts, copies):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="weights"):
        coassociation(parts, [1.0, -1.0, 1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="weights"):
        coassociation(parts, [1.0, 1.0])
    with pytest.raises(ValueError, match="partitions"):
        coassociation([])
    with pytest.raises(ValueError, match="same n rows"):
        coassociation([np.zeros(4), np.zeros(5)])
    with pytest.raises(ValueError, match="n_clusters"):
        coassociation_labels(parts, 0)


# ------------------------------------------------------------ SpectralMTC(base_rule="consensus")
def _reference_choice(X, k, seed, rows=("scaled", "unit")):
    """The consensus choice from independent pieces: every candidate method at seeds
    ``seed + (0, 100, 200)``, NMI counted from contingency tables (naive_consensus), the
    largest mean NMI with the other methods' runs; ties to the earlier candidate."""
    W = task_graph(X, 5)
    runs = []
    for j in CONSENSUS_SEEDS:
        s = seed + j
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            spec = [spectral_labels(W, k, random_state=s, unit_rows=v == "unit") for v in rows]
        Xn = normalize(X)
        P = normalize(X, norm="l1")
        runs.append(spec + [BregmanKMeans(k, random_state=s).fit(Xn).labels_,
                            BregmanKMeans(k, divergence="kl", random_state=s).fit(P).labels_])
    M = len(runs[0])
    scores = np.array([naive_anmi(runs[0][m], [r[o] for o in range(M) if o != m for r in runs])
                       for m in range(M)])
    names = [f"spectral-{v}" for v in rows] + ["spherical", "kl"]
    return names[int(np.flatnonzero(scores >= scores.max() - 1e-12)[0])], scores, runs[0]


@pytest.mark.parametrize("n_tasks, ks, noise", [(2, [2, 3], 5.0), (3, [2, 3, 2], 5.0),
                                                (3, [2, 3, 2], 3.0)])
def test_consensus_base_equals_the_reference_choice(n_tasks, ks, noise):
    """coupling=0: each task's base, spectral rows, labels and consensus scores are those of
    the independent reference (2 and 3 tasks, per-task K); the draws cover a k-means base, the
    unit rows and the scaled rows."""
    Xs = noisy_tasks(seed=4, noise=noise)[:n_tasks]
    est = quiet_fit(SpectralMTC(ks, base_rule="consensus", spectral_rows="both", coupling=0.0,
                                n_neighbors=5, random_state=0), Xs)
    assert est.consensus_candidates_ == ("spectral-scaled", "spectral-unit", "spherical", "kl")
    seen = set()
    for t, (X, k) in enumerate(zip(Xs, ks)):
        name, scores, own = _reference_choice(X, k, 0)
        np.testing.assert_allclose(est.base_consensus_[t], scores, rtol=1e-10, atol=1e-12)
        seen.add(name)
        if name.startswith("spectral"):
            assert est.base_[t] == "spectral" and est.spectral_rows_[t] == name[9:]
        else:
            assert est.base_[t] == name
        np.testing.assert_array_equal(est.labels_[t], own[est.consensus_candidates_.index(name)])
    if noise == 5.0 and n_tasks == 3:
        assert seen == {"spectral-scaled", "kl"}
    if noise == 3.0:
        assert est.spectral_rows_ == ["scaled", "scaled", "unit"]


def test_consensus_changes_the_choice_of_the_modularity_rule():
    """Not a no-op: on this draw modularity keeps the spectral base where consensus takes kl."""
    Xs = noisy_tasks(seed=4, noise=5.0)
    kw = dict(spectral_rows="both", coupling=0.0, n_neighbors=5, random_state=0)
    a = quiet_fit(SpectralMTC([2, 3, 2], base_rule="consensus", **kw), Xs)
    b = quiet_fit(SpectralMTC([2, 3, 2], **kw), Xs)
    assert a.base_ != b.base_
    assert b.base_consensus_.shape == (3, 0) and b.consensus_candidates_ == ()


def test_consensus_scaled_rows_only_and_the_coupling_on_top():
    """spectral_rows="scaled": three candidates; with a coupling, a task the rule keeps on the
    spectral base has its consensus partition as the coupling-0 candidate and a task on a
    k-means base keeps its k-means partition."""
    Xs = noisy_tasks(seed=4, noise=5.0)
    est = quiet_fit(SpectralMTC([2, 3, 2], base_rule="consensus", coupling_grid=(0.3,),
                                n_neighbors=5, random_state=0), Xs)
    assert est.consensus_candidates_ == ("spectral-scaled", "spherical", "kl")
    assert est.base_consensus_.shape == (3, 3)
    for t, X in enumerate(Xs):
        name, _, own = _reference_choice(X, [2, 3, 2][t], 0, rows=("scaled",))
        want = own[est.consensus_candidates_.index(name)]
        if est.base_[t] == "spectral":
            np.testing.assert_array_equal(est.labels_per_coupling_[0][t], want)
        else:
            np.testing.assert_array_equal(est.labels_[t], want)
            assert est.coupling_[t] == 0.0


def test_consensus_predict_pickle_inputs_untouched_sparse_equals_dense():
    Xs = noisy_tasks(seed=4, noise=5.0)
    copies = [X.copy() for X in Xs]
    kw = dict(base_rule="consensus", spectral_rows="both", n_neighbors=5, random_state=0)
    est = quiet_fit(SpectralMTC([2, 3, 2], **kw), Xs)
    for X, C in zip(Xs, copies):
        np.testing.assert_array_equal(X, C)
    for t in range(3):
        np.testing.assert_array_equal(est.predict(Xs[t], task=t), est.labels_[t])
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(Xs[1], task=1), est.labels_[1])
    np.testing.assert_array_equal(again.base_consensus_, est.base_consensus_)
    sparse = quiet_fit(SpectralMTC([2, 3, 2], **kw), [sp.csr_matrix(X) for X in Xs])
    assert sparse.base_ == est.base_
    for a, b in zip(sparse.labels_, est.labels_):
        assert nmi(a, b) == pytest.approx(1.0)


@pytest.mark.parametrize("rule", ["consensus", "modularity", "gain"])
def test_fit_leaves_no_scratch_on_the_estimator(rule):
    """The consensus choice of the spectral rows passes from the base choice to the row choice
    as a value: a fitted estimator holds its parameters, fitted attributes (trailing
    underscore) and the rows ``predict`` reads, nothing else."""
    est = quiet_fit(SpectralMTC([2, 3, 2], base_rule=rule, spectral_rows="both", n_neighbors=5,
                                random_state=0), noisy_tasks(seed=4, noise=5.0))
    extra = {a for a in vars(est) if a not in est.get_params() and not a.endswith("_")}
    assert extra == {"_fit_tasks"}


@pytest.mark.parametrize("value, exc", [("Consensus", ValueError), ("ensemble", ValueError),
                                        (1, TypeError), (None, TypeError)])
def test_bad_base_rule_is_named(value, exc):
    with pytest.raises(exc, match="base_rule"):
        SpectralMTC(2, base_rule=value).fit(noisy_tasks()[:2])


def test_consensus_scores_bad_runs_named():
    with pytest.raises(ValueError, match="runs"):
        consensus_scores([[np.zeros(4)]])
    with pytest.raises(ValueError, match="runs"):
        consensus_scores([[np.zeros(4), np.zeros(4)], [np.zeros(4)]])
    with pytest.raises(ValueError, match="runs"):
        consensus_scores([])
