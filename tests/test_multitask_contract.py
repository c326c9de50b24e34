"""The contract of bregclust._multitask, run over every multi-task estimator.

Small synthetic tasks (two well separated clusters per task, directions distinct so the cosine
graph of the kernel methods separates them too) keep the whole file to a few seconds.
"""

import copy
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import adjusted_rand_score

from bregclust import (
    LNKMTC,
    LSKMTC,
    LSSMTC,
    ModelRelationClustering,
    MultitaskBregmanClustering,
)

#: estimator class and small-problem parameters
ESTIMATORS = {
    "mbc": (MultitaskBregmanClustering, dict(lam=0.5)),
    # joint=False: on these perfectly separated tasks the joint kernel k-means groups the
    # four (task, cluster) components by task; per-task kernel k-means recovers the clusters
    "lnkmtc": (LNKMTC, dict(b=4, n_neighbors=5, joint=False)),
    "lskmtc": (LSKMTC, dict(b=1, n_eigenvectors=4, n_neighbors=5, joint=False)),
    "mtcmrl": (ModelRelationClustering, dict(max_iter=60)),
    "lssmtc": (LSSMTC, dict(n_components=2)),
}
NAMES = list(ESTIMATORS)
#: the methods whose fitting loop never increases its objective
MONOTONE = {"mbc", "mtcmrl", "lssmtc"}
#: the methods with a deprecated spelling of "k-means++"
ALIASED = {"mtcmrl", "lssmtc"}


def _tasks(seed=0, sizes=((12, 10), (9, 11))):
    rng = np.random.default_rng(seed)
    Xs, ys = [], []
    for t, (a, b) in enumerate(sizes):
        c0 = np.array([4.0, 0.5, 0.5, 0.5]) + 0.2 * t
        c1 = np.array([0.5, 4.0, 0.5, 0.5]) + 0.2 * t
        X = np.vstack([c0 + 0.3 * rng.random((a, 4)), c1 + 0.3 * rng.random((b, 4))])
        Xs.append(X)
        ys.append(np.repeat([0, 1], [a, b]))
    return Xs, ys


def _fit(est, Xs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(Xs)


def _make(name, k=2, **kw):
    cls, params = ESTIMATORS[name]
    est = cls(k, **{"random_state": 0, **params, **kw})
    return est


# ------------------------------------------------------------------------- task validation
@pytest.mark.parametrize("name", NAMES)
def test_task_list_validation(name):
    Xs, _ = _tasks()
    est = _make(name)
    with pytest.raises(TypeError, match="got a dict; pass the tasks as a list"):
        est.fit({"a": Xs[0], "b": Xs[1]})
    with pytest.raises(TypeError, match="got a str"):
        est.fit("tasks.npy")
    with pytest.raises(TypeError, match="got a single matrix; wrap it as \\[X\\]"):
        est.fit(Xs[0])
    with pytest.raises(TypeError, match="Xs must be a list of 2-D arrays"):
        est.fit(3)
    with pytest.raises(ValueError, match="Xs is empty"):
        est.fit([])
    with pytest.raises(ValueError, match="share one feature space"):
        est.fit([Xs[0], Xs[1][:, :3]])


# ------------------------------------------------------------------------- n_clusters
@pytest.mark.parametrize("name", NAMES)
def test_n_clusters_int_equals_repeated_list(name):
    Xs, ys = _tasks()
    a = _fit(_make(name, 2), Xs)
    b = _fit(_make(name, [2, 2]), Xs)
    for la, lb, y in zip(a.labels_, b.labels_, ys):
        np.testing.assert_array_equal(la, lb)
        assert adjusted_rand_score(y, la) == 1.0  # the tasks are easy: every method recovers them


@pytest.mark.parametrize("name", NAMES)
def test_n_clusters_per_task(name):
    Xs, _ = _tasks()
    if name == "lssmtc":  # cluster j is one shared centre: one K for all tasks
        with pytest.raises(ValueError, match="needs one number of clusters for every task"):
            _fit(_make(name, [2, 3]), Xs)
        return
    est = _fit(_make(name, [2, 3]), Xs)
    assert int(est.labels_[0].max()) <= 1 and int(est.labels_[1].max()) <= 2
    if hasattr(est, "n_clusters_"):
        assert est.n_clusters_ == [2, 3]


@pytest.mark.parametrize("name", NAMES)
def test_n_clusters_errors(name):
    Xs, _ = _tasks()
    with pytest.raises(ValueError, match="n_clusters has 3 entries but there are 2 tasks"):
        _fit(_make(name, [2, 2, 2]), Xs)
    with pytest.raises(TypeError, match="n_clusters must be an int or a sequence of 2 ints"):
        _fit(_make(name, 2.0), Xs)
    with pytest.raises(TypeError, match="n_clusters must be an int or a sequence"):
        _fit(_make(name, "2"), Xs)
    with pytest.raises(TypeError, match="n_clusters for task 1 must be an int"):
        _fit(_make(name, [2, 2.5]), Xs)
    with pytest.raises(ValueError, match="n_clusters=0 for task 0 is larger|must be >= 1"):
        _fit(_make(name, 0), Xs)


# ------------------------------------------------------------------------- init vocabulary
@pytest.mark.parametrize("init", ["k-means++", "random"])
@pytest.mark.parametrize("name", NAMES)
def test_init_strings(name, init):
    Xs, ys = _tasks()
    est = _fit(_make(name, init=init), Xs)
    assert min(adjusted_rand_score(y, lab) for y, lab in zip(ys, est.labels_)) == 1.0


@pytest.mark.parametrize("name", NAMES)
def test_init_labels_and_centres(name):
    Xs, ys = _tasks()
    labels = [y.copy() for y in ys]
    centres = [np.vstack([X[y == z].mean(axis=0) for z in range(2)]) for X, y in zip(Xs, ys)]
    before = copy.deepcopy((labels, centres))
    by_labels = _fit(_make(name, init=labels), Xs)
    by_centres = _fit(_make(name, init=centres), Xs)
    for lab_a, lab_b, y in zip(by_labels.labels_, by_centres.labels_, ys):
        np.testing.assert_array_equal(lab_a, y)  # starting at the truth, they stay there
        np.testing.assert_array_equal(lab_b, y)
    for a, b in zip(before[0] + before[1], labels + centres):
        np.testing.assert_array_equal(a, b)  # init arrays are not modified


@pytest.mark.parametrize("name", NAMES)
def test_init_mixed_per_task_and_errors(name):
    Xs, ys = _tasks()
    est = _fit(_make(name, init=["k-means++", ys[1]]), Xs)
    np.testing.assert_array_equal(est.labels_[1], ys[1])
    if "joint" in est.get_params():
        with pytest.raises(ValueError, match="joint=True .* needs one kind of init"):
            _fit(_make(name, init=["k-means++", ys[1]], joint=True), Xs)
        joint = _fit(_make(name, init=ys, joint=True), Xs)
        assert all(np.array_equal(a, y) for a, y in zip(joint.labels_, ys))
    with pytest.raises(ValueError, match="init must be 'k-means\\+\\+', 'random'"):
        _fit(_make(name, init="spectral"), Xs)
    with pytest.raises(ValueError, match="init has 1 entries but there are 2 tasks"):
        _fit(_make(name, init=[ys[0]]), Xs)
    with pytest.raises(ValueError, match=r"init labels for task 1 must lie in \[0, 1\]"):
        _fit(_make(name, init=[ys[0], ys[1] + 1]), Xs)
    with pytest.raises(ValueError, match="init labels for task 0 must be 22 integers"):
        _fit(_make(name, init=[ys[0][:-1], ys[1]]), Xs)
    with pytest.raises(ValueError, match="init .*for task 1 must have shape"):
        _fit(_make(name, init=[ys[0], np.ones((3, 3))]), Xs)


@pytest.mark.parametrize("name", NAMES)
def test_deprecated_init_alias(name):
    Xs, _ = _tasks()
    if name not in ALIASED:
        with pytest.raises(ValueError, match="init must be 'k-means\\+\\+'"):
            _fit(_make(name, init="k-means"), Xs)
        return
    new = _fit(_make(name, init="k-means++"), Xs)
    with pytest.warns(FutureWarning,
                      match="init='k-means' is deprecated; use init='k-means\\+\\+'"):
        old = _fit(_make(name, init="k-means"), Xs)
    for a, b in zip(old.labels_, new.labels_):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------------- fitted state
@pytest.mark.parametrize("name", NAMES)
def test_fitted_attributes_and_history(name):
    Xs, _ = _tasks()
    est = _fit(_make(name), Xs)
    assert est.n_tasks_ == 2 and est.n_features_in_ == 4
    assert isinstance(est.labels_, list) and len(est.labels_) == est.n_tasks_
    for lab, X in zip(est.labels_, Xs):
        assert lab.dtype == np.int64 and lab.shape == (X.shape[0],)
    h = est.objective_history_
    assert isinstance(h, np.ndarray) and h.ndim == 1 and h.dtype == np.float64 and h.size >= 1
    assert np.isfinite(h).all()
    if name in MONOTONE:
        assert h.size >= 2
        assert np.all(np.diff(h) <= 1e-10 * np.abs(h[:-1]) + 1e-13)


@pytest.mark.parametrize("name", NAMES)
def test_fit_predict_is_labels(name):
    Xs, _ = _tasks()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        labels = _make(name).fit_predict(Xs)
    ref = _fit(_make(name), Xs).labels_
    assert isinstance(labels, list)
    for a, b in zip(labels, ref):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("name", NAMES)
def test_inputs_never_modified(name, sparse):
    Xs, _ = _tasks()
    if sparse:
        Xs = [sp.csr_matrix(X) for X in Xs]
    before = copy.deepcopy(Xs)
    est = _make(name)
    params = copy.deepcopy(est.get_params())
    _fit(est, Xs)
    for a, b in zip(before, Xs):
        if sparse:
            assert (a != b).nnz == 0 and b.format == "csr"
        else:
            np.testing.assert_array_equal(a, b)
    assert str(est.get_params()) == str(params)


@pytest.mark.parametrize("name", NAMES)
def test_pickle_and_clone(name):
    Xs, _ = _tasks()
    est = _fit(_make(name), Xs)
    again = pickle.loads(pickle.dumps(est))
    new = np.vstack([Xs[1][:3], Xs[1][-3:]])
    np.testing.assert_array_equal(again.predict(new, task=1), est.predict(new, task=1))
    for a, b in zip(again.labels_, est.labels_):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(again.objective_history_, est.objective_history_)
    twin = _fit(clone(est), Xs)
    for a, b in zip(twin.labels_, est.labels_):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------------- predict
@pytest.mark.parametrize("name", NAMES)
def test_predict_with_task(name):
    Xs, ys = _tasks()
    est = _fit(_make(name), Xs)
    for t in range(2):
        # the training rows of a task get (almost all) their fitted labels back
        assert np.mean(est.predict(Xs[t], task=t) == est.labels_[t]) >= 0.9
    with pytest.raises(ValueError, match="pass task=t"):
        est.predict(Xs[0])
    with pytest.raises(ValueError, match=r"task must be in \[0, 1\], got 2"):
        est.predict(Xs[0], task=2)
    with pytest.raises(TypeError, match="task must be an int"):
        est.predict(Xs[0], task="0")
    with pytest.raises(ValueError, match="X has 3 features, but the model was fitted with 4"):
        est.predict(Xs[0][:, :3], task=0)


# ------------------------------------------------------------------------- constraint tables
@pytest.mark.parametrize("name", NAMES)
def test_constraint_table(name):
    Xs, _ = _tasks()
    with pytest.raises(ValueError, match="max_iter must be >= 1, got 0"):
        _fit(_make(name, max_iter=0), Xs)
    with pytest.raises(TypeError, match="max_iter must be an integer, got 2.5"):
        _fit(_make(name, max_iter=2.5), Xs)
    with pytest.raises(ValueError, match="tol must be >= 0"):
        _fit(_make(name, tol=-1.0), Xs)
    with pytest.raises(ValueError, match="tol must be finite"):
        _fit(_make(name, tol=np.inf), Xs)


def test_parameter_tables_give_one_sentence_errors():
    """The shared parameter check, through the estimators: an option-or-interval, a closed upper
    bound, a dict-or-None, each message naming the parameter, what it must be and the value."""
    Xs, _ = _tasks()
    _fit(_make("mbc", n_init=3), Xs)  # the interval branch of "'auto' or >= 1" accepts 3
    with pytest.raises(ValueError, match="n_init must be 'auto' or an integer >= 1, got 'fast'"):
        _make("mbc", n_init="fast").fit(Xs)
    _fit(_make("lssmtc", lam=1.0), Xs)  # the closed upper bound itself is allowed
    with pytest.raises(ValueError, match="lam must be <= 1.0, got 1.5"):
        _make("lssmtc", lam=1.5).fit(Xs)
    _fit(_make("mtcmrl", similarity_params=None), Xs)
    with pytest.raises(TypeError, match="similarity_params must be a dict or None"):
        _make("mtcmrl", similarity_params=[]).fit(Xs)


def test_per_task_cluster_counts():
    """``n_clusters``: one int for every task, or one per task; a wrong length or type refused."""
    Xs, _ = _tasks()
    assert _fit(_make("mbc", k=2), Xs).n_clusters_ == [2, 2]
    assert _fit(_make("mbc", k=[1, 2]), Xs).n_clusters_ == [1, 2]
    with pytest.raises(ValueError, match="n_clusters has 1 entries but there are 2 tasks"):
        _make("mbc", k=[1]).fit(Xs)
    with pytest.raises(TypeError, match="n_clusters must be an int or a sequence of 2 ints"):
        _make("mbc", k={"a": 1}).fit(Xs)


# ------------------------------------------------------------------------- score, model selection
#: the estimators with a label-free score (the hook _score_criterion) and the geometry of it
SCORED = {"mbc": False, "lnkmtc": True, "lskmtc": True, "mtcmrl": True, "lssmtc": False}


@pytest.mark.parametrize("name", NAMES)
def test_score_is_minus_the_single_task_criterion(name):
    from bregclust.kernel_mtc import single_task_objective

    if name not in SCORED:
        pytest.skip(f"{name}: no _score_criterion hook in this module's scope")
    Xs, _ = _tasks()
    est = _fit(_make(name), Xs)
    unit = SCORED[name]
    # the training tasks (copies: recognised by their values): the fitted partition labels_
    train = est.score([X.copy() for X in Xs])
    assert train == pytest.approx(-single_task_objective(Xs, est.labels_, unit_rows=unit),
                                  rel=1e-12)
    # other rows: the partition predict gives them
    new, _ = _tasks(seed=5)
    pred = [est.predict(X, task=t) for t, X in enumerate(new)]
    assert est.score(new) == pytest.approx(-single_task_objective(new, pred, unit_rows=unit),
                                           rel=1e-12)
    with pytest.raises(ValueError, match="one matrix per fitted task: the model has 2 tasks"):
        est.score(Xs[:1])
    with pytest.raises(TypeError, match="Xs must be a list of task matrices"):
        est.score(Xs[0])


def test_mbc_score_is_the_kl_objective_at_the_partition_means():
    """MBC's criterion uses its own divergence: with kl, minus the sum over tasks of the mean
    generalised KL divergence of each row to its cluster's mean (computed here with scipy),
    on the training tasks (labels_) and on new tasks (predict); sparse tasks give the same."""
    import scipy.sparse as sp
    from scipy.special import rel_entr

    def oracle(Xs, labels):
        total = 0.0
        for X, lab in zip(Xs, labels):
            M = np.array([X[lab == z].mean(axis=0) for z in range(lab.max() + 1)])
            Mi = M[lab]
            total += (rel_entr(X, Mi) - X + Mi).sum() / X.shape[0]
        return total

    Xs, _ = _tasks()
    est = _fit(MultitaskBregmanClustering(2, divergence="kl", lam=0.5, random_state=0), Xs)
    assert est.score(Xs) == pytest.approx(-oracle(Xs, est.labels_), rel=1e-10)
    assert est.score([sp.csr_matrix(X) for X in Xs]) == pytest.approx(est.score(Xs), rel=1e-10)
    new, _ = _tasks(seed=3)
    pred = [est.predict(X, task=t) for t, X in enumerate(new)]
    assert est.score(new) == pytest.approx(-oracle(new, pred), rel=1e-10)


@pytest.mark.parametrize("name", NAMES)
def test_grid_search_over_all_tasks_selects_by_score_without_labels(name):
    """scikit-learn's GridSearchCV with one split (fit and score on all tasks) picks the grid
    point of highest score, the same as fitting each value by hand; no labels are used."""
    from sklearn.model_selection import GridSearchCV

    if name not in SCORED:
        pytest.skip(f"{name}: no _score_criterion hook in this module's scope")
    Xs, _ = _tasks()
    param = {"mbc": "lam", "lnkmtc": "C", "lskmtc": "C", "mtcmrl": "alpha", "lssmtc": "lam"}[name]
    values = {"C": [0.5, 1.0, 10.0], "alpha": [0.0, 1.0], "lam": [0.25, 0.75]}[param]
    all_tasks = np.arange(len(Xs))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        search = GridSearchCV(_make(name), {param: values}, cv=[(all_tasks, all_tasks)]).fit(Xs)
        by_hand = [_fit(_make(name, **{param: v}), Xs).score(Xs) for v in values]
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], by_hand, rtol=1e-12)
    assert search.best_params_ == {param: values[int(np.argmax(by_hand))]}
    assert len(search.best_estimator_.labels_) == len(Xs)


@pytest.mark.parametrize("name", NAMES)
def test_default_n_clusters_follows_scikit_learn_kmeans(name):
    """One rule: every flat clustering estimator defaults to scikit-learn KMeans' 8."""
    cls, _ = ESTIMATORS[name]
    assert cls().n_clusters == 8


@pytest.mark.parametrize("name", [n for n in NAMES if n != "mbc"])
def test_verbose_one_shows_a_progress_bar_on_stderr_and_zero_is_silent(name, capfd):
    Xs, _ = _tasks()
    _fit(_make(name, verbose=0), Xs)
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    _fit(_make(name, verbose=1), Xs)
    out, err = capfd.readouterr()
    assert out == "" and type(_make(name)).__name__ in err
    # verbose=2 adds one line per iteration with the objective (a fast bar may not redraw)
    _fit(_make(name, verbose=2), Xs)
    out, err = capfd.readouterr()
    assert out == "" and "objective" in err


def test_transfer_and_snmf_verbose_bars():
    import io
    import sys

    from bregclust import LSSTTC, SymmetricNMF

    Xs, ys = _tasks()
    buf = io.StringIO()
    old, sys.stderr = sys.stderr, buf
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            LSSTTC(n_components=2, verbose=2, max_iter=5).fit(
                np.vstack(Xs), np.concatenate([ys[0], np.full(len(ys[1]), -1)]))
            SymmetricNMF(2, verbose=2).fit(Xs[0])
    finally:
        sys.stderr = old
    text = buf.getvalue()
    assert "SharedSubspaceTransfer" in text and "SymmetricNMF" in text
    assert "iteration 1: objective" in text
