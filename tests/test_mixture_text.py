"""The multinomial mixture on documents: tf-idf starts, the default smoothing, the plain-EM oracle."""

import numpy as np
import pytest
import scipy.sparse as sp
from naive_text_mixture import loglik, multinomial_em
from sklearn.feature_extraction.text import TfidfTransformer

from bregclust import BregmanMixture
from bregclust.kmeans import auto_smoothing
from bregclust.metrics import nmi


def topic_corpus(k=4, per=40, d=80, seed=0):
    """Documents of 40-120 words drawn from ``k`` sparse topics (Dirichlet(0.1))."""
    rng = np.random.default_rng(seed)
    topics = rng.dirichlet(np.full(d, 0.1), size=k)
    y = np.repeat(np.arange(k), per)
    N = rng.integers(40, 120, size=k * per)
    X = np.array([rng.multinomial(m, topics[t]) for m, t in zip(N, y)], dtype=np.float64)
    return sp.csr_matrix(X), y


def test_tfidf_rows_equal_scikit_learn_tfidf_transformer():
    from bregclust._mixture_init import tfidf_rows

    X, _ = topic_corpus()
    X = X.tolil()
    X[:, 3] = 0  # a term no document uses
    X = sp.csr_matrix(X)
    want = TfidfTransformer().fit_transform(X).toarray()
    np.testing.assert_allclose(tfidf_rows(X).toarray(), want, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(tfidf_rows(X.toarray()), want, rtol=1e-12, atol=1e-15)


def test_tfidf_rows_weight_two_is_a_repeated_row():
    from bregclust._mixture_init import tfidf_rows

    X, _ = topic_corpus(per=10)
    w = np.ones(X.shape[0])
    w[:5] = 2.0
    rep = sp.vstack([X, X[:5]]).tocsr()
    np.testing.assert_allclose(tfidf_rows(X, w).toarray(), tfidf_rows(rep).toarray()[:X.shape[0]],
                               rtol=1e-12)


@pytest.mark.parametrize("sparse", [True, False])
def test_spherical_kmeans_stops_at_a_fixed_point_of_the_cosine_lloyd_step(sparse):
    """At convergence every row is with its most similar normalised cluster mean (the fixed
    point of spherical k-means, checked by a dense numpy recomputation)."""
    from bregclust._mixture_init import spherical_kmeans, tfidf_rows

    X, y = topic_corpus(k=4, per=30, seed=2)
    T = tfidf_rows(X)
    T = T if sparse else T.toarray()
    w = np.random.default_rng(0).uniform(0.5, 2.0, size=X.shape[0])
    lab = spherical_kmeans(T, 4, np.random.RandomState(0), max_iter=500, sample_weight=w)
    D = T.toarray() if sparse else T
    C = np.array([(w[lab == h, None] * D[lab == h]).sum(axis=0) for h in range(4)])
    C /= np.linalg.norm(C, axis=1, keepdims=True)
    np.testing.assert_array_equal((D @ C.T).argmax(axis=1), lab)
    assert nmi(y, lab) > 0.9


def test_spherical_kmeans_agrees_with_scikit_learn_on_separated_topics():
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score

    from bregclust._mixture_init import spherical_kmeans, tfidf_rows

    X, y = topic_corpus(k=3, per=30, seed=4)
    T = tfidf_rows(X)
    ours = spherical_kmeans(T, 3, np.random.RandomState(1))
    theirs = KMeans(3, n_init=10, random_state=0).fit_predict(T)
    assert adjusted_rand_score(ours, theirs) == 1.0


def test_one_hot_rows_sum_to_one_and_keep_every_component_alive():
    from bregclust._mixture_init import one_hot

    R = one_hot(np.array([0, 0, 2]), 4)
    np.testing.assert_allclose(R.sum(axis=1), 1.0)
    assert (R > 0).all()
    assert R.argmax(axis=1).tolist() == [0, 0, 2]


def test_unsmoothed_em_from_a_partition_reaches_the_plain_em_optimum():
    """Oracle: the plain multinomial EM (alpha = 0) and ours (smoothing = 0) from the same
    responsibilities reach the same fixed point and log-likelihood."""
    X, y = topic_corpus(k=3, per=30, seed=3)
    rng = np.random.default_rng(1)
    labels = np.where(rng.uniform(size=y.size) < 0.7, y, rng.integers(0, 3, size=y.size))
    ref = multinomial_em(X, 3, alpha=0.0, labels=labels, max_iter=500, rtol=1e-14)
    R = np.zeros((y.size, 3))
    R[np.arange(y.size), labels] = 1.0
    gm = BregmanMixture(3, divergence="kl", smoothing=0.0, init={"responsibilities": R},
                        max_iter=500, tol=1e-12).fit(X)
    ours = loglik(X, gm.weights_, gm.means_)
    assert ours == pytest.approx(ref["loglik"], rel=1e-9)
    assert gm.score(X) * X.shape[0] == pytest.approx(ref["loglik"], rel=1e-9)
    np.testing.assert_allclose(gm.means_, ref["means"], atol=1e-7)


def test_default_smoothing_is_a_tenth_of_a_pseudo_word_per_term():
    X, _ = topic_corpus()
    gm = BregmanMixture(4, divergence="kl", random_state=0).fit(X)
    assert gm.smoothing_ == pytest.approx(0.1 * X.shape[1])  # as documented: 0.1 d
    # every word keeps a positive probability, and components are not the corpus distribution
    assert (gm.means_ > 0).all()
    corpus = np.asarray(X.sum(axis=0)).ravel() / X.sum()
    assert np.abs(gm.means_ - corpus).sum(axis=1).min() > 0.5


def test_poisson_family_keeps_the_centroid_smoothing_rule():
    X, _ = topic_corpus()
    gm = BregmanMixture(4, divergence="kl", family="poisson", random_state=0).fit(X)
    assert gm.smoothing_ == pytest.approx(auto_smoothing(X, "kl", 4))


def test_default_start_recovers_topics_and_its_lower_bound_never_decreases():
    X, y = topic_corpus(k=5, per=40, seed=2)
    gm = BregmanMixture(5, divergence="kl", random_state=0, tol=1e-8).fit(X)
    assert nmi(y, gm.predict(X)) > 0.95
    lb = np.array(gm.lower_bounds_)  # the final plain-EM phase (after the start and annealing)
    assert gm.n_iter_ > lb.size
    assert np.all(np.diff(lb) >= -1e-9 * np.abs(lb[1:]))


def test_tfidf_start_is_deterministic_for_a_seed():
    X, _ = topic_corpus()
    a = BregmanMixture(4, divergence="kl", random_state=7).fit(X)
    b = BregmanMixture(4, divergence="kl", random_state=7).fit(X)
    np.testing.assert_array_equal(a.means_, b.means_)


def test_tfidf_start_refuses_other_families():
    X = np.abs(np.random.default_rng(0).normal(size=(30, 3)))
    with pytest.raises(ValueError, match="init='tfidf-kmeans' starts the multinomial"):
        BregmanMixture(2, init="tfidf-kmeans").fit(X)


def test_old_default_stays_selectable():
    X, _ = topic_corpus()
    k = 4
    gm = BregmanMixture(k, divergence="kl", init="k-means++", smoothing=3.0 * X.sum() / k,
                        random_state=0).fit(X)
    assert gm.smoothing_ == pytest.approx(3.0 * X.sum() / k)


# ----------------------------------------------------------------------------- choosing K
def test_one_se_choice_takes_the_smallest_candidate_within_a_paired_standard_error():
    from bregclust._selection import one_se_choice

    # candidate 2 is best; candidate 1 trails it by 0.01 and 0.03 per fold: paired mean 0.02,
    # standard error 0.01, outside; candidate 0 trails by about 1
    F = np.array([[-5.0, -6.0], [-4.00, -5.00], [-3.99, -4.97]])
    assert one_se_choice(F) == 2
    # paired differences 0.01 and 0.0: mean 0.005, standard error 0.005: within
    F = np.array([[-5.0, -6.0], [-4.00, -5.00], [-3.99, -5.00]])
    assert one_se_choice(F) == 1
    # a shift common to every candidate in a fold does not matter
    assert one_se_choice(F + np.array([[100.0, -300.0]])) == 1


def test_textbook_one_se_rule_uses_the_spread_of_the_best_candidate():
    from bregclust._selection import one_se_choice

    # best = candidate 2, fold values -3.99 and -4.97: sd 0.693, standard error 0.49; the
    # means are -5.5, -4.5, -4.48: candidate 1 is within, candidate 0 is not
    F = np.array([[-5.0, -6.0], [-4.00, -5.00], [-3.99, -4.97]])
    assert one_se_choice(F, paired=False) == 1
    assert one_se_choice(F) == 2  # the paired rule sees candidate 2 better in every fold


def test_stability_is_the_mean_pairwise_ari_of_the_fold_models():
    from sklearn.metrics import adjusted_rand_score

    from bregclust._selection import CVSelection

    a, b, c = np.array([0, 0, 1, 1]), np.array([1, 1, 0, 0]), np.array([0, 1, 0, 1])
    sel = CVSelection(np.array([2, 3]), np.zeros((2, 3)), 0,
                      np.array([[a, b, a], [a, b, c]]))
    want = np.mean([adjusted_rand_score(a, b), adjusted_rand_score(a, c),
                    adjusted_rand_score(b, c)])
    np.testing.assert_allclose(sel.stability(), [1.0, want])
    with pytest.raises(ValueError, match="keep_labels=True"):
        CVSelection(np.array([2]), np.zeros((1, 3)), 0).stability()


def test_cross_validation_keeps_the_fold_models_labels_on_request():
    from bregclust._selection import cross_validated_loglik

    X, y = topic_corpus(k=3, per=20, seed=5)
    sel = cross_validated_loglik(BregmanMixture(divergence="kl"), X, [2, 3],
                                 random_state=np.random.RandomState(0), keep_labels=True)
    assert sel.fold_labels.shape == (2, 3, X.shape[0])
    assert sel.stability()[1] > 0.9  # three topics: the fold models agree


@pytest.mark.parametrize("k", [3, 5])
def test_cv_criterion_picks_the_number_of_topics(k):
    X, _ = topic_corpus(k=k, per=40, seed=k)
    gm = BregmanMixture(range(1, k + 3), divergence="kl", criterion="cv",
                        random_state=0).fit(X)
    assert gm.n_components_ == k, gm.criterion_path_
    assert gm.criterion_ == "cv"
    # the path is minus the held-out log-likelihood per row: one component is worst
    assert gm.criterion_path_.argmax() == 0


@pytest.mark.parametrize("k", [3, 5])
def test_auto_criterion_is_bic_for_the_multinomial_and_picks_the_number_of_topics(k):
    X, _ = topic_corpus(k=k, per=40, seed=k)
    gm = BregmanMixture(range(1, k + 3), divergence="kl", random_state=0).fit(X)
    assert gm.criterion_ == "bic"
    assert gm.n_components_ == k, gm.criterion_path_
    assert gm.criterion_path_[k - 1] == pytest.approx(gm.bic(X), rel=1e-12)


def test_bic_stays_available_for_the_multinomial_and_picks_the_true_k():
    X, _ = topic_corpus(k=3, per=40, seed=1)
    gm = BregmanMixture(range(1, 6), divergence="kl", criterion="bic", random_state=0).fit(X)
    assert gm.n_components_ == 3
    assert gm.criterion_ == "bic"
    assert gm.criterion_path_[2] == pytest.approx(gm.bic(X), rel=1e-12)


def test_cv_criterion_refuses_dask_arrays():
    da = pytest.importorskip("dask.array")
    X, _ = topic_corpus(k=2, per=20)
    Xd = da.from_array(X.toarray(), chunks=(20, -1))
    with pytest.raises(ValueError, match="criterion='cv' refits every candidate"):
        BregmanMixture([1, 2], divergence="kl", criterion="cv", init="k-means||").fit(Xd)


# ----------------------------------------------------------------------------- the start search
SCHEDULES = [(6, 10, 3, 1, 3), (7, 3, 1, 3, 2), (5, 2, 2, 2, 4)]
KNOBS = ("TEXT_STARTS", "TEXT_KMEANS_ITER", "TEXT_SHORT_ITER", "TEXT_KEEP", "TEXT_MID_ITER")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_start_search_keeps_the_best_objective_among_the_candidates(monkeypatch, schedule):
    """Oracle through the public API: every start's partition (the same tf-idf k-means draws)
    fitted for the short iterations, the best ``keep`` refitted for ``short + mid``, the best of
    those fitted to convergence - the default fit must be that model."""
    import bregclust._mixture_init as MI

    for a, v in zip(KNOBS, schedule):
        monkeypatch.setattr(MI, a, v)
    monkeypatch.setattr(MI, "TEXT_ANNEAL", False)  # the search alone (annealing: below)
    starts, passes, short, keep, mid = schedule
    X, _ = topic_corpus(k=4, per=30, seed=6)
    k, seed = 4, 3
    gm = BregmanMixture(k, divergence="kl", random_state=seed).fit(X)
    parts = MI.tfidf_partitions(X, k, starts, np.random.RandomState(seed), np.ones(X.shape[0]),
                                max_iter=passes)

    def fit(labels, iters):
        return BregmanMixture(k, divergence="kl", max_iter=iters, init={
            "responsibilities": MI.one_hot(labels, k)}).fit(X)

    bounds = [fit(p, short).lower_bounds_[-1] for p in parts]
    order = np.argsort(-np.array(bounds), kind="stable")[:keep]
    if keep > 1:
        mids = [fit(parts[i], short + mid).lower_bounds_[-1] for i in order]
        order = [order[int(np.argmax(mids))]]
    want = fit(parts[order[0]], 100)
    np.testing.assert_allclose(gm.means_, want.means_, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(gm.weights_, want.weights_, rtol=1e-12, atol=1e-15)
    assert gm.lower_bounds_[-1] == pytest.approx(want.lower_bounds_[-1], rel=1e-12)
    # the objective EM increases never fell along the chosen start's whole history
    lb = np.array(gm.lower_bounds_)
    assert np.all(np.diff(lb) >= -1e-9 * np.abs(lb[1:]))
    # and the chosen start ends at least as high as any candidate did after its short run
    assert gm.lower_bounds_[-1] >= max(bounds) - 1e-12 * abs(max(bounds))


def _reproducible_fit(seed):
    """Two fits of one topic corpus (4 topics, 25 documents each, corpus ``seed``) with one
    ``random_state``: the same means and lower bounds, the CSR input unmodified. Returns the
    corpus and the first fit."""
    X, _ = topic_corpus(k=4, per=25, seed=seed)
    X0 = X.copy()
    a = BregmanMixture(4, divergence="kl", random_state=5).fit(X)
    b = BregmanMixture(4, divergence="kl", random_state=5).fit(X)
    np.testing.assert_array_equal(a.means_, b.means_)
    np.testing.assert_array_equal(a.lower_bounds_, b.lower_bounds_)
    for attr in ("data", "indices", "indptr"):
        np.testing.assert_array_equal(getattr(X, attr), getattr(X0, attr))
    return X, a


@pytest.mark.parametrize("schedule", SCHEDULES[1:])
def test_start_search_is_reproducible_and_leaves_the_input_alone(monkeypatch, schedule):
    import bregclust._mixture_init as MI

    for a, v in zip(KNOBS, schedule):
        monkeypatch.setattr(MI, a, v)
    _reproducible_fit(seed=8)


def test_spherical_kmeans_shared_transpose_and_layouts_give_the_same_labels():
    """The transposed rows passed in, CSC rows, dense rows and rows with duplicate stored
    entries (summed, as scipy's products do) all give the labels of the plain CSR call."""
    from bregclust._mixture_init import spherical_kmeans, tfidf_rows

    X, _ = topic_corpus(k=3, per=30, seed=9)
    T = tfidf_rows(X)
    want = spherical_kmeans(T, 3, np.random.RandomState(2), max_iter=4)
    got = spherical_kmeans(T, 3, np.random.RandomState(2), max_iter=4, transposed=T.T.tocsr())
    np.testing.assert_array_equal(got, want)
    Tc = T.tocsc()
    Tc0 = Tc.copy()
    np.testing.assert_array_equal(spherical_kmeans(Tc, 3, np.random.RandomState(2), max_iter=4),
                                  want)
    np.testing.assert_array_equal(Tc.data, Tc0.data)
    dense = spherical_kmeans(T.toarray(), 3, np.random.RandomState(2), max_iter=4)
    np.testing.assert_array_equal(dense, want)
    # every stored entry split in two halves: the same matrix with duplicate entries
    lengths = np.diff(T.indptr)
    idx = np.concatenate([np.r_[T.indices[a:b], T.indices[a:b]]
                          for a, b in zip(T.indptr[:-1], T.indptr[1:])])
    val = np.concatenate([np.r_[T.data[a:b], T.data[a:b]] / 2
                          for a, b in zip(T.indptr[:-1], T.indptr[1:])])
    dup = sp.csr_matrix((val, idx, np.r_[0, np.cumsum(2 * lengths)]), shape=T.shape)
    assert not dup.has_canonical_format and dup.nnz == 2 * T.nnz
    np.testing.assert_array_equal(spherical_kmeans(dup, 3, np.random.RandomState(2), max_iter=4),
                                  want)


# ----------------------------------------------------------------------------- annealed EM
ANNEAL = dict(TEXT_ANNEAL=True, ANNEAL_NATS=2.0, ANNEAL_RATE=2.0, ANNEAL_ITER=3)


def _annealing(monkeypatch, **knobs):
    import bregclust._mixture_init as MI

    for a, v in {**ANNEAL, **knobs}.items():
        monkeypatch.setattr(MI, a, v)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("knobs, temperatures", [("default", 1), ("test", 3)])
def test_annealed_em_equals_the_loop_reference(monkeypatch, knobs, temperatures):
    """Oracle: ``tests/naive_anneal_mixture.py`` (loops over documents, components and words)
    from the chosen start's parameters - the same schedule (``b0`` from the median logit gap),
    the same iterations per temperature, then plain EM - gives our weights and means; its
    annealed objective never decreases at a fixed temperature. ``"default"``: the default fit,
    the search then annealed EM with the default constants, refitted by hand."""
    from naive_anneal_mixture import annealed_em

    import bregclust._mixture_init as MI

    X, _ = topic_corpus(k=3, per=12, d=25, seed=11)
    X = X[np.asarray(X.sum(axis=1)).ravel() > 0]
    k, seed, final = 3, 2, 4
    # the start: the search's chosen run after its short EM iterations (nothing after it)
    monkeypatch.setattr(MI, "TEXT_ANNEAL", False)
    start = BregmanMixture(k, divergence="kl", random_state=seed,
                           max_iter=MI.TEXT_SHORT_ITER).fit(X)
    monkeypatch.setattr(MI, "TEXT_ANNEAL", True)
    if knobs == "test":
        _annealing(monkeypatch)
    ref = annealed_em(X.toarray(), start.weights_, start.means_, nats=MI.ANNEAL_NATS,
                      rate=MI.ANNEAL_RATE, iters=MI.ANNEAL_ITER, final_iters=final,
                      s=start.smoothing_)
    assert len(ref["betas"]) >= temperatures  # the corpus is annealed from below 1
    # max_iter is the budget of all of them: the start's, the annealed and the final iterations
    budget = MI.TEXT_SHORT_ITER + len(ref["betas"]) * MI.ANNEAL_ITER + final
    gm = BregmanMixture(k, divergence="kl", random_state=seed, tol=0.0,
                        max_iter=budget).fit(X)  # tol 0: every temperature runs ANNEAL_ITER
    assert gm.smoothing_ == start.smoothing_
    np.testing.assert_allclose(gm.weights_, ref["weights"], rtol=1e-9)
    np.testing.assert_allclose(gm.means_, ref["means"], rtol=1e-8, atol=1e-14)
    assert gm.n_iter_ == MI.TEXT_SHORT_ITER + len(ref["betas"]) * MI.ANNEAL_ITER + final
    for obj in ref["objectives"]:
        assert np.all(np.diff(obj) >= -1e-9 * np.abs(obj[1:]))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("max_iter", [1, 2, 3, 4, 7, 12])
def test_max_iter_bounds_every_iteration_under_annealing(monkeypatch, max_iter):
    """``max_iter`` bounds the start's short EM runs, the annealed iterations and the final
    phase together (as without annealing); with ``tol=0`` the budget is used up exactly."""
    _annealing(monkeypatch)
    X, _ = topic_corpus(k=3, per=12, d=25, seed=11)
    X = X[np.asarray(X.sum(axis=1)).ravel() > 0]
    gm = BregmanMixture(3, divergence="kl", random_state=2, tol=0.0, max_iter=max_iter).fit(X)
    assert gm.n_iter_ == max_iter
    assert len(gm.lower_bounds_) <= max_iter


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_annealing_gaps_in_row_blocks_give_the_same_fit(monkeypatch):
    """The schedule's logit gaps computed a few rows at a time (never the whole n x k scores;
    the blocks of ``_execution.chunk_rows``) give the fit of the gaps computed at once."""
    import bregclust._execution as E
    import bregclust._mixture_init as MI

    _annealing(monkeypatch)  # a schedule of several temperatures on this corpus
    X, _ = topic_corpus(k=3, per=12, d=25, seed=11)
    X = X[np.asarray(X.sum(axis=1)).ravel() > 0]
    assert E.chunk_rows(3) >= X.shape[0]  # the default: all rows in one block
    whole = BregmanMixture(3, divergence="kl", random_state=2).fit(X)
    plain = BregmanMixture(3, divergence="kl", random_state=2, max_iter=MI.TEXT_SHORT_ITER).fit(X)
    assert whole.n_iter_ > plain.n_iter_ + MI.ANNEAL_ITER  # annealed over several temperatures
    rows, pairwise = [], E.pairwise

    def spy(div, X, U, *args, **kw):
        rows.append(X.shape[0])
        return pairwise(div, X, U, *args, **kw)

    monkeypatch.setattr(E, "chunk_rows", lambda k: 2)  # blocks of 2 rows
    monkeypatch.setattr(E, "pairwise", spy)
    blocks = BregmanMixture(3, divergence="kl", random_state=2).fit(X)
    assert rows.count(2) == X.shape[0] // 2 and max(rows) == 2  # the gaps' blocks
    assert blocks.n_iter_ == whole.n_iter_
    np.testing.assert_allclose(blocks.means_, whole.means_, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(blocks.weights_, whole.weights_, rtol=1e-12)


@pytest.mark.parametrize("kw, name", [(dict(nats=0.0), "nats"), (dict(nats=-1.0), "nats"),
                                      (dict(nats=np.inf), "nats"), (dict(rate=1.0), "rate"),
                                      (dict(rate=0.5), "rate"), (dict(rate=np.nan), "rate")])
def test_anneal_schedule_refuses_a_schedule_that_never_reaches_one(kw, name):
    """A non-positive start contrast or a factor not above 1 would never reach ``b = 1``."""
    from bregclust._mixture_init import anneal_schedule

    with pytest.raises(ValueError, match=name):
        anneal_schedule(np.array([40.0, 10.0]), **kw)


def test_anneal_schedule_matches_the_loop_reference():
    from naive_anneal_mixture import logit_gaps as naive_gaps
    from naive_anneal_mixture import schedule

    from bregclust._mixture_init import anneal_schedule, logit_gaps

    X, _ = topic_corpus(k=3, per=10, d=20, seed=12)
    X = X.toarray()
    rng = np.random.default_rng(0)
    means = rng.dirichlet(np.ones(20), size=3)
    weights = np.array([0.5, 0.3, 0.2])
    logits = X @ np.log(means).T + np.log(weights)
    want = naive_gaps(X, weights, means)
    np.testing.assert_allclose(logit_gaps(logits), want, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(anneal_schedule(logit_gaps(logits), nats=1.5, rate=1.7),
                               schedule(want, 1.5, 1.7), rtol=1e-12)
    assert anneal_schedule(np.array([0.5, 0.2]), nats=1.0, rate=2.0) == []  # b0 >= 1
    assert anneal_schedule(logit_gaps(logits[:, :1])) == []  # one component: nothing to anneal


def test_weighted_median_is_the_median_of_the_repeated_values():
    from bregclust._mixture_init import anneal_schedule, weighted_median

    rng = np.random.default_rng(3)
    for n in (1, 2, 5, 8):
        v = rng.normal(size=n)
        w = rng.integers(0, 4, size=n)
        w[0] = max(w[0], 1)
        assert weighted_median(v, w) == np.median(np.repeat(v, w))
        assert weighted_median(v) == np.median(v)
    g = rng.uniform(10, 200, size=9)
    w = rng.integers(1, 4, size=9)
    assert anneal_schedule(g, nats=3.0, rate=2.0, weights=w) == anneal_schedule(
        np.repeat(g, w), nats=3.0, rate=2.0)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_classification_em_is_not_annealed(monkeypatch):
    """Hard assignments do not depend on the temperature: ``assignment="hard"`` skips it."""
    import bregclust._mixture_init as MI

    X, _ = topic_corpus(k=3, per=15, seed=15)
    got = BregmanMixture(3, divergence="kl", assignment="hard", random_state=0).fit(X)
    monkeypatch.setattr(MI, "TEXT_ANNEAL", False)
    want = BregmanMixture(3, divergence="kl", assignment="hard", random_state=0).fit(X)
    np.testing.assert_array_equal(got.means_, want.means_)
    assert got.n_iter_ == want.n_iter_ == len(got.lower_bounds_)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_annealed_fit_with_one_component_is_the_plain_fit(monkeypatch):
    import bregclust._mixture_init as MI

    X, _ = topic_corpus(k=2, per=10)
    monkeypatch.setattr(MI, "TEXT_ANNEAL", False)
    want = BregmanMixture(1, divergence="kl", random_state=0).fit(X)
    _annealing(monkeypatch)
    got = BregmanMixture(1, divergence="kl", random_state=0).fit(X)
    np.testing.assert_allclose(got.means_, want.means_, rtol=1e-12)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_annealed_fit_is_the_search_then_annealing_then_plain_em(monkeypatch):
    """The annealed default refitted by hand: the chosen start's parameters, then at every
    temperature the same iterations - and with a schedule that is empty (``b0 >= 1``) the fit
    is plain EM from the start's parameters exactly. The final plain-EM phase's objective
    (``lower_bounds_``) never decreases."""
    import bregclust._mixture_init as MI
    import bregclust.mixture as M

    X, y = topic_corpus(k=4, per=30, seed=13)
    k, seed = 4, 1
    monkeypatch.setattr(MI, "TEXT_ANNEAL", False)
    start = BregmanMixture(k, divergence="kl", random_state=seed,
                           max_iter=MI.TEXT_SHORT_ITER).fit(X)
    _annealing(monkeypatch, ANNEAL_NATS=1e12)  # b0 >= 1: no temperature below 1
    gm = BregmanMixture(k, divergence="kl", random_state=seed, tol=1e-8).fit(X)
    want = BregmanMixture(k, divergence="kl", tol=1e-8, init={
        "means": start.means_, "weights": start.weights_}).fit(X)
    np.testing.assert_array_equal(gm.means_, want.means_)
    np.testing.assert_array_equal(gm.weights_, want.weights_)
    np.testing.assert_array_equal(gm.lower_bounds_, want.lower_bounds_)
    # a real schedule: record every EM run's temperature and objective
    seen = []
    em = M._em

    def spy(*args, **kw):
        run = em(*args, **kw)
        seen.append((kw.get("temper", 1.0), np.array(run.history)))
        return run

    monkeypatch.setattr(M, "_em", spy)
    _annealing(monkeypatch)
    gm = BregmanMixture(k, divergence="kl", random_state=seed, tol=1e-8).fit(X)
    tempers = [t for t, _ in seen if t < 1.0]
    assert len(tempers) >= 3 and np.all(np.diff(tempers) > 0) and tempers[-1] < 1.0
    np.testing.assert_allclose(np.diff(tempers) * 0 + ANNEAL["ANNEAL_RATE"],
                               np.array(tempers[1:]) / np.array(tempers[:-1]), rtol=1e-12)
    for t, hist in seen:  # EM at a fixed temperature never lowers its objective
        assert np.all(np.diff(hist) >= -1e-9 * np.abs(hist[1:])), t
    np.testing.assert_array_equal(gm.lower_bounds_, seen[-1][1])
    assert seen[-1][0] == 1.0 and gm.converged_
    assert nmi(y, gm.predict(X)) > 0.9


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_annealed_fit_is_reproducible_pickles_and_leaves_the_input_alone(monkeypatch):
    import pickle

    _annealing(monkeypatch)
    X, a = _reproducible_fit(seed=14)
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(c.predict_proba(X), a.predict_proba(X))
    # dense counts give the sparse fit
    d = BregmanMixture(4, divergence="kl", random_state=5).fit(X.toarray())
    np.testing.assert_allclose(d.means_, a.means_, rtol=1e-10, atol=1e-15)
