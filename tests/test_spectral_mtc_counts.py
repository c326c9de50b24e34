"""SpectralMTC(input="counts"): tf-idf computed inside for the graphs and the spectral /
spherical bases, the kl base on term frequencies. Oracles: today's estimator on the tf-idf
computed outside as ``benchmarks/mtc_compare.py`` computes it (scikit-learn's
``TfidfTransformer`` fitted on all tasks stacked), and ``BregmanKMeans(divergence="kl")`` on the
counts scaled to sum one; then the multi-task contract."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import quiet_fit
from naive_consensus import anmi as naive_anmi
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.preprocessing import normalize

from bregclust import BregmanKMeans
from bregclust.spectral_mtc import (
    CONSENSUS_SEEDS,
    SpectralMTC,
    kl_objective,
    spectral_labels,
    task_graph,
)


def _counts(seed=0, sizes=((20, 18), (16, 19, 15), (17, 14)), d=40, sparse=True):
    """Term counts of documents drawn from topics: half of every document's words are three
    "stop words" shared by all topics (which the idf weights down), a fifth are topic ``c``'s
    own block of words (shifted by the task), the rest spread over all words; document lengths
    vary (so that tf, tf-idf and counts differ, and kl k-means on tf and on l1-scaled tf-idf
    give different partitions)."""
    rng = np.random.default_rng(seed)
    Xs = []
    for t, part in enumerate(sizes):
        rows = []
        for c, m in enumerate(part):
            p = np.full(d, 0.3 / d)
            p[:3] += 0.5 / 3
            block = 3 + (np.arange(6) + 6 * c + t) % (d - 3)
            p[block] += 0.2 / block.size
            length = rng.integers(20, 80, size=m)
            rows.append(np.vstack([rng.multinomial(n, p) for n in length]))
        X = np.vstack(rows).astype(np.float64)
        Xs.append(sp.csr_matrix(X) if sparse else X)
    return Xs


def _tfidf(Xs):
    """mtc_compare's ``tfidf`` representation (``representations`` there)."""
    sizes = np.cumsum([0] + [X.shape[0] for X in Xs])
    T = TfidfTransformer().fit_transform(sp.vstack([sp.csr_matrix(X) for X in Xs]).tocsr())
    return [sp.csr_matrix(T[a:b]) for a, b in zip(sizes[:-1], sizes[1:])]


def _same_labels(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("base", ["spectral", "spherical"])
@pytest.mark.parametrize("n_tasks", [2, 3])
def test_spectral_and_spherical_bases_match_the_estimator_on_outside_tfidf(base, n_tasks,
                                                                           sparse):
    """Every candidate but "kl" sees exactly the tf-idf of mtc_compare: the same labels, per
    coupling, as today's estimator given that tf-idf."""
    C = _counts(sparse=sparse)[:n_tasks]
    ks = [2, 3, 2][:n_tasks]
    kw = dict(n_neighbors=5, base=base, random_state=3)
    a = quiet_fit(SpectralMTC(ks, input="counts", **kw), C)
    b = quiet_fit(SpectralMTC(ks, **kw), _tfidf(C))
    _same_labels(a.labels_, b.labels_)
    for la, lb in zip(a.labels_per_coupling_, b.labels_per_coupling_):
        _same_labels(la, lb)
    np.testing.assert_array_equal(a.ncut_, b.ncut_)
    assert a.coupling_ == b.coupling_
    for Wa, Wb in zip(a.affinity_matrices_, b.affinity_matrices_):
        assert abs(Wa - Wb).max() == 0
    np.testing.assert_array_equal(a.tfidf_.idf_, TfidfTransformer().fit(
        sp.vstack([sp.csr_matrix(X) for X in C])).idf_)
    assert b.tfidf_ is None


@pytest.mark.parametrize("n_tasks", [2, 3])
def test_kl_base_is_kl_kmeans_on_term_frequencies(n_tasks):
    """base="kl" with input="counts" is BregmanKMeans(divergence="kl") on the counts scaled to
    sum one, with the task's seed; on the tf-idf (input="features") it is not the same run."""
    C = _counts()[:n_tasks]
    ks = [2, 3, 2][:n_tasks]
    est = quiet_fit(SpectralMTC(ks, base="kl", input="counts", n_neighbors=5, random_state=7), C)
    for X, k, lab in zip(C, ks, est.labels_):
        ref = BregmanKMeans(k, divergence="kl", random_state=7).fit(normalize(X, norm="l1"))
        np.testing.assert_array_equal(lab, ref.labels_)
    # today's kl base scales the tf-idf rows to sum one: a different input to kl k-means,
    # and here a different partition of task 1
    old = quiet_fit(SpectralMTC(ks, base="kl", n_neighbors=5, random_state=7), _tfidf(C))
    for X, k, lab in zip(_tfidf(C), ks, old.labels_):
        ref = BregmanKMeans(k, divergence="kl", random_state=7).fit(normalize(X, norm="l1"))
        np.testing.assert_array_equal(lab, ref.labels_)
    assert not np.array_equal(old.labels_[1], est.labels_[1])


@pytest.mark.parametrize("rule", ["modularity", "gain"])
def test_auto_base_differs_only_in_the_kl_candidate(rule):
    """base="auto": the spectral and spherical candidates (their modularity on the same graphs,
    their objectives) equal those of the estimator on outside tf-idf; the kl candidate is the
    kl k-means of the term frequencies, judged by the kl objective of the term frequencies."""
    C = _counts(seed=2)
    ks = [2, 3, 2]
    kw = dict(n_neighbors=5, base_rule=rule, random_state=1)
    a = quiet_fit(SpectralMTC(ks, input="counts", **kw), C)
    b = quiet_fit(SpectralMTC(ks, **kw), _tfidf(C))
    assert a.bases_ == b.bases_ == ("spectral", "spherical", "kl")
    np.testing.assert_array_equal(a.base_modularity_[:, :2], b.base_modularity_[:, :2])
    for oa, ob in zip(a.base_objectives_, b.base_objectives_):
        np.testing.assert_array_equal(oa[:2, :2], ob[:2, :2])
    for t, (X, k) in enumerate(zip(C, ks)):
        P = normalize(X, norm="l1")
        ref = BregmanKMeans(k, divergence="kl", random_state=1).fit(P).labels_
        # the kl objective (of base_rule="gain") is that of the term frequencies
        assert a.base_objectives_[t][2, 2] == pytest.approx(kl_objective(P, ref), rel=1e-12)
        assert a.base_chance_[t][2] == pytest.approx(
            kl_objective(P, np.zeros(X.shape[0], dtype=np.int64)), rel=1e-12)
        if a.base_[t] == "kl":
            np.testing.assert_array_equal(a.labels_[t], ref)
        elif a.base_[t] == b.base_[t]:
            np.testing.assert_array_equal(a.labels_[t], b.labels_[t])


@pytest.mark.parametrize("n_tasks", [2, 3])
def test_consensus_runs_the_kl_candidate_on_term_frequencies(n_tasks):
    """base_rule="consensus": the candidates' runs are spectral (scaled / unit rows) on the
    graph of the tf-idf, spherical k-means on the tf-idf and kl k-means on the term frequencies,
    at the task's seed and CONSENSUS_SEEDS more; the scores are rebuilt from those pieces with
    NMI counted from contingency tables (naive_consensus)."""
    C = _counts(seed=1)[:n_tasks]
    ks = [2, 3, 2][:n_tasks]
    est = quiet_fit(SpectralMTC(ks, base_rule="consensus", spectral_rows="both", coupling=0.0,
                                input="counts", n_neighbors=5, random_state=0), C)
    for t, (X, Y, k) in enumerate(zip(C, _tfidf(C), ks)):
        W = task_graph(Y, 5)
        runs = []
        for j in CONSENSUS_SEEDS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                spec = [spectral_labels(W, k, random_state=j, unit_rows=u) for u in (False, True)]
            runs.append(spec + [
                BregmanKMeans(k, random_state=j).fit(normalize(Y)).labels_,
                BregmanKMeans(k, divergence="kl", random_state=j).fit(
                    normalize(X, norm="l1")).labels_])
        scores = np.array([naive_anmi(runs[0][m], [r[o] for o in range(4) if o != m
                                                   for r in runs]) for m in range(4)])
        np.testing.assert_allclose(est.base_consensus_[t], scores, rtol=1e-10, atol=1e-12)
        i = int(np.flatnonzero(scores >= scores.max() - 1e-12)[0])
        np.testing.assert_array_equal(est.labels_[t], runs[0][i])


def test_mbc_coupling_of_kl_tasks_runs_on_term_frequencies():
    """kmeans_coupling="mbc": a task on the kl base is coupled in kl geometry on the counts
    scaled to sum one (MBC on those rows from the kl partitions gives the same partition)."""
    from bregclust import MultitaskBregmanClustering

    C = _counts(seed=2, sizes=((25, 25), (25, 25)))  # MBC couples here (lam > 0)
    est = quiet_fit(SpectralMTC(2, base="kl", input="counts", kmeans_coupling="mbc", n_neighbors=5,
                                random_state=0), C)
    P = [normalize(X, norm="l1") for X in C]
    starts = [BregmanKMeans(2, divergence="kl", random_state=0).fit(p).labels_ for p in P]
    mbc = MultitaskBregmanClustering([2, 2], divergence="kl", lam="auto", guard="task",
                                     init=starts, random_state=0).fit(P)
    assert mbc.lam_ > 0
    for t in range(2):
        np.testing.assert_array_equal(est.kmeans_coupled_labels_[t], mbc.labels_[t])


def test_predict_and_score_apply_the_fitted_idf():
    C = _counts(seed=3)
    new = _counts(seed=9)
    a = quiet_fit(SpectralMTC([2, 3, 2], input="counts", n_neighbors=5, random_state=0), C)
    b = quiet_fit(SpectralMTC([2, 3, 2], n_neighbors=5, random_state=0), _tfidf(C))
    for t in range(3):
        np.testing.assert_array_equal(a.predict(new[t], task=t),
                                      a.predict(new[t].toarray(), task=t))
        if a.base_[t] == b.base_[t]:
            np.testing.assert_array_equal(a.predict(new[t], task=t),
                                          b.predict(a.tfidf_.transform(new[t]), task=t))
        np.testing.assert_array_equal(a.predict(C[t], task=t), a.labels_[t])
    # score: within-cluster sum of squares of the tf-idf unit rows, as today's on the tf-idf
    b.labels_ = a.labels_
    assert a.score(C) == pytest.approx(b.score(_tfidf(C)), rel=1e-12)
    assert np.isfinite(a.score(new))


def test_pickle_and_inputs_unmodified():
    C = _counts(seed=4)
    D = [X.copy() for X in C]
    dense = [X.toarray() for X in C]
    Dd = [X.copy() for X in dense]
    est = quiet_fit(SpectralMTC([2, 3, 2], input="counts", n_neighbors=5, random_state=0), C)
    quiet_fit(SpectralMTC([2, 3, 2], input="counts", n_neighbors=5, random_state=0), dense)
    for X, Y in zip(C, D):
        assert abs(X - Y).max() == 0 and sp.issparse(X)
    for X, Y in zip(dense, Dd):
        np.testing.assert_array_equal(X, Y)
    Z = C[1][:7].copy()
    est.predict(Z, task=1)
    assert abs(Z - C[1][:7]).max() == 0
    back = pickle.loads(pickle.dumps(est))
    _same_labels(back.labels_, est.labels_)
    np.testing.assert_array_equal(back.predict(C[2], task=2), est.predict(C[2], task=2))
    np.testing.assert_array_equal(back.tfidf_.idf_, est.tfidf_.idf_)


def test_hostile_input_names_the_parameter():
    C = _counts(seed=6, sizes=((10, 10), (10, 10)))
    bad = [X.toarray() for X in C]
    bad[1][3, 2] = -1.0
    with pytest.raises(ValueError, match=r"input='counts'.*task 1.*negative"):
        SpectralMTC(2, input="counts", n_neighbors=5).fit(bad)
    inf = [X.toarray() for X in C]
    inf[0][0, 0] = np.inf
    with pytest.raises(ValueError, match="task 0 contains NaN or infinity"):
        SpectralMTC(2, input="counts", n_neighbors=5).fit(inf)
    with pytest.raises(ValueError, match="input"):
        SpectralMTC(2, input="tfidf").fit(C)
    est = quiet_fit(SpectralMTC(2, input="counts", n_neighbors=5, random_state=0), C)
    neg = C[0][:3].toarray()
    neg[0, 0] = -2.0
    with pytest.raises(ValueError, match=r"input='counts'.*X.*negative"):
        est.predict(neg, task=0)
    # negative rows are fine as features (the default input), spherical/spectral bases only
    est = quiet_fit(SpectralMTC(2, n_neighbors=5, random_state=0), bad)
    assert est.bases_ == ("spectral", "spherical")


def test_default_input_is_features():
    assert SpectralMTC().get_params()["input"] == "features"
