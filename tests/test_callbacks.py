"""scikit-learn's callback API (``sklearn.callback``) on every iterative estimator: the hooks
see one task per fit, one per loop (restart, EM run, mini-batch run) and one per iteration,
as many as the fit reports (``n_iter_``, ``n_steps_``); a hook can stop the Lloyd loop; and the
results are those of a fit without callbacks, bit for bit."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from bregclust import (
    BisectingBregmanKMeans,
    BregmanCoclustering,
    BregmanKMeans,
    BregmanMixture,
    MiniBatchBregmanKMeans,
    ModelRelationClustering,
    MultitaskBregmanClustering,
    SharedSubspaceClustering,
)

callback = pytest.importorskip("sklearn.callback")  # scikit-learn >= 1.9
ProgressBar, ScoringMonitor = callback.ProgressBar, callback.ScoringMonitor


class Recorder:
    """A FitCallback writing down every task it sees: ``(event, task name, parent's name)``."""

    def __init__(self, stop_after=None):
        self.events = []
        self.setups = self.teardowns = 0
        self.stop_after = stop_after
        self.fitted = []

    def setup(self, estimator, context):
        self.setups += 1

    def teardown(self, estimator, context):
        self.teardowns += 1

    def on_fit_task_begin(self, estimator, context):
        self.events.append(("begin", context.task_name, _parent(context)))

    def on_fit_task_end(self, estimator, context, *, fitted_estimator=None):
        self.events.append(("end", context.task_name, _parent(context)))
        if context.task_name == "iteration":
            self.fitted.append(fitted_estimator)
            n = sum(1 for e in self.events if e[:2] == ("end", "iteration"))
            return self.stop_after is not None and n >= self.stop_after
        return False

    def iterations(self, loop=None, exact=False):
        """Ends of iterations (of the loops whose name starts with ``loop``, or is ``loop``)."""
        return sum(1 for ev, name, parent in self.events if ev == "end" and name == "iteration"
                   and (loop is None or (parent == loop if exact else parent.startswith(loop))))

    def loops(self):
        return [name for ev, name, parent in self.events if ev == "end" and parent == "fit"]


def _parent(context):
    return context.parent.task_name if context.parent is not None else None


def blobs(seed=0, n=60):
    rng = np.random.default_rng(seed)
    centres = rng.gamma(3.0, 1.0, size=(3, 5))
    return np.vstack([rng.gamma(20.0, c / 20.0, size=(n, 5)) for c in centres])


def _same(a, b, attrs):
    for attr in attrs:
        x, y = getattr(a, attr), getattr(b, attr)
        if isinstance(x, list):
            for u, v in zip(x, y):
                np.testing.assert_array_equal(u, v)
        else:
            np.testing.assert_array_equal(x, y)


def test_kmeans_hooks_see_every_restart_and_iteration_and_change_nothing():
    X = blobs()
    rec = Recorder()
    est = BregmanKMeans(3, divergence="kl", n_init=3, random_state=0).set_callbacks(rec).fit(X)
    ref = BregmanKMeans(3, divergence="kl", n_init=3, random_state=0).fit(X)
    _same(est, ref, ["labels_", "cluster_centers_", "inertia_", "n_iter_", "objective_history_"])
    assert rec.setups == rec.teardowns == 1
    assert rec.events[0] == ("begin", "fit", None) and rec.events[-1] == ("end", "fit", None)
    assert rec.loops() == [f"BregmanKMeans restart {r}" for r in range(3)]
    # every begin has its end, and the restart of the best objective ran n_iter_ iterations
    begins = [e[1:] for e in rec.events if e[0] == "begin"]
    ends = [e[1:] for e in rec.events if e[0] == "end"]
    assert sorted(begins, key=str) == sorted(ends, key=str)
    per_restart = [rec.iterations(f"BregmanKMeans restart {r}") for r in range(3)]
    assert est.n_iter_ in per_restart and all(1 <= n <= est.max_iter for n in per_restart)
    one = Recorder()
    est1 = BregmanKMeans(3, divergence="kl", random_state=1).set_callbacks(one).fit(X)
    assert one.iterations() == est1.n_iter_


def test_iteration_hooks_get_an_estimator_predicting_with_that_iterations_centres():
    X = blobs(1)
    rec = Recorder()
    est = BregmanKMeans(3, divergence="kl", random_state=0).set_callbacks(rec).fit(X)
    assert len(rec.fitted) == est.n_iter_ and all(f is not None for f in rec.fitted)
    last = rec.fitted[-1]
    assert last is not est
    np.testing.assert_array_equal(last.cluster_centers_, est.cluster_centers_)
    np.testing.assert_array_equal(last.predict(X), est.labels_)
    # an earlier iteration's copy holds that iteration's centres, not the final ones
    if est.n_iter_ > 1:
        assert not np.array_equal(rec.fitted[0].cluster_centers_, est.cluster_centers_)


def test_a_hook_returning_true_stops_the_lloyd_loop_without_a_convergence_warning():
    X = blobs(2)
    rec = Recorder(stop_after=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = BregmanKMeans(3, divergence="kl", random_state=0, tol=0.0,
                            max_iter=50).set_callbacks(rec).fit(X)
    assert est.n_iter_ == 1 and rec.iterations() == 1


@pytest.mark.parametrize("make, loop, count", [
    (lambda: MiniBatchBregmanKMeans(3, divergence="kl", batch_size=32, random_state=0),
     "MiniBatchBregmanKMeans", lambda e: e.n_steps_),
    (lambda: BisectingBregmanKMeans(3, divergence="kl", random_state=0),
     "BisectingBregmanKMeans", None),
    (lambda: BregmanCoclustering(3, 2, n_init=1, random_state=0), "BregmanCoclustering",
     lambda e: e.n_iter_),
])
def test_single_task_estimators_report_their_iterations(make, loop, count):
    X = blobs(3)
    rec = Recorder()
    est = make().set_callbacks(rec).fit(X)
    ref = make().fit(X)
    attrs = [a for a in ("labels_", "cluster_centers_", "means_", "row_labels_",
                         "column_labels_") if hasattr(ref, a)]
    _same(est, ref, attrs)
    assert rec.setups == rec.teardowns == 1
    assert any(name.startswith(loop) for name in rec.loops())
    if count is not None:
        assert rec.iterations(loop) == count(est) > 0
    else:  # bisecting: one Lloyd restart per split, each at least one iteration
        splits = [n for n in rec.loops() if n.startswith(loop)]
        assert len(splits) >= 2 and rec.iterations(loop) >= len(splits)


def test_mixture_reports_its_starts_and_the_em_run_that_continues_the_best():
    X = blobs(3)
    rec = Recorder()
    est = BregmanMixture(3, divergence="kl", random_state=0).set_callbacks(rec).fit(X)
    ref = BregmanMixture(3, divergence="kl", random_state=0).fit(X)
    _same(est, ref, ["means_", "weights_", "lower_bound_", "n_iter_"])
    starts = [n for n in rec.loops() if n.startswith("BregmanMixture start")]
    assert starts and rec.loops()[-1] == "BregmanMixture"
    # n_iter_ counts the best start's EM iterations and those of the run continuing it
    final = rec.iterations("BregmanMixture", exact=True)
    assert est.n_iter_ - final in {rec.iterations(n, exact=True) for n in starts}


@pytest.mark.parametrize("make", [
    lambda: MultitaskBregmanClustering(3, divergence="kl", lam=0.5, random_state=0),
    lambda: SharedSubspaceClustering(3, random_state=0),
    lambda: ModelRelationClustering(3, max_iter=30, random_state=0),
])
def test_multitask_estimators_report_their_iterations(make):
    X = blobs(4)
    tasks = [X[:100], X[80:]]
    rec = Recorder()
    est = make().set_callbacks(rec).fit(tasks)
    ref = make().fit(tasks)
    _same(est, ref, ["labels_"])
    name = type(est).__name__
    assert rec.setups == rec.teardowns == 1 and rec.events[-1] == ("end", "fit", None)
    assert rec.iterations(name) >= 1
    if hasattr(est, "n_iter_") and np.ndim(est.n_iter_) == 0:
        assert rec.iterations(name) >= est.n_iter_


def test_chunked_mini_batch_reports_every_step():
    da = pytest.importorskip("dask.array")
    X = blobs(5)
    D = da.from_array(X, chunks=(50, -1))
    rec = Recorder()
    est = MiniBatchBregmanKMeans(3, divergence="kl", batch_size=32,
                                 random_state=0).set_callbacks(rec).fit(D)
    ref = MiniBatchBregmanKMeans(3, divergence="kl", batch_size=32, random_state=0).fit(D)
    np.testing.assert_array_equal(est.cluster_centers_, ref.cluster_centers_)
    assert rec.iterations("MiniBatchBregmanKMeans") == est.n_steps_


def test_scoring_monitor_scores_every_kmeans_iteration_against_given_labels():
    X = blobs(6)
    y = np.repeat([0, 1, 2], 60)
    monitor = ScoringMonitor(scoring="adjusted_rand_score")
    est = BregmanKMeans(3, divergence="kl", random_state=0).set_callbacks(monitor).fit(X, y)
    rows = monitor.get_logs().data
    iters = [r for r in rows if r["task_name"] == "iteration"]
    assert len(iters) == est.n_iter_
    final = [r for r in rows if r["task_name"] == "fit"]
    assert len(final) == 1
    from sklearn.metrics import adjusted_rand_score

    assert final[0]["adjusted_rand_score"] == pytest.approx(adjusted_rand_score(y, est.labels_))
    assert iters[-1]["adjusted_rand_score"] == pytest.approx(final[0]["adjusted_rand_score"])


def test_progress_bar_is_called_once_per_iteration():
    pytest.importorskip("rich")

    class CountingBar(ProgressBar):
        def __init__(self):
            super().__init__(max_propagation_depth=1)
            self.ends = []

        def on_fit_task_end(self, estimator, context):
            self.ends.append(context.task_name)
            super().on_fit_task_end(estimator, context)

    X = blobs(7)
    bar = CountingBar()
    est = BregmanKMeans(3, divergence="kl", n_init=2, random_state=0).set_callbacks(bar).fit(X)
    ref = BregmanKMeans(3, divergence="kl", n_init=2, random_state=0).fit(X)
    np.testing.assert_array_equal(est.labels_, ref.labels_)
    assert bar.ends.count("iteration") >= est.n_iter_ and bar.ends[-1] == "fit"
    assert bar.ends.count("BregmanKMeans restart 0") == 1
    bar = CountingBar()
    mb = MiniBatchBregmanKMeans(3, divergence="kl", random_state=0).set_callbacks(bar).fit(X)
    assert bar.ends.count("iteration") == mb.n_steps_


def test_callbacks_must_follow_the_protocol():
    with pytest.raises(TypeError, match="FitCallback"):
        BregmanKMeans(2).set_callbacks(object())


def test_every_estimator_accepting_callbacks_calls_them_from_fit():
    """Every public class with ``set_callbacks`` calls the hooks from ``fit``: set up once,
    ``fit`` the root task, begun first and ended last, torn down once."""
    import inspect
    import warnings

    import bregclust

    accepting = {getattr(bregclust, n) for n in bregclust.__all__
                 if inspect.isclass(getattr(bregclust, n))
                 and hasattr(getattr(bregclust, n), "set_callbacks")}
    assert len(accepting) >= 11  # 11 classes (LSSMTC, LNKMTC, ... are aliases)
    X, X2 = blobs(0, n=20), blobs(1, n=20)
    silent = []
    for cls in sorted(accepting, key=lambda c: c.__name__):
        rec = Recorder()
        est = cls(3, random_state=0).set_callbacks(rec)
        multitask = list(inspect.signature(cls.fit).parameters)[1] == "Xs"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit([X, X2] if multitask else X)
        if not (rec.setups == rec.teardowns == 1 and rec.events
                and rec.events[0] == ("begin", "fit", None)
                and rec.events[-1] == ("end", "fit", None)):
            silent.append(cls.__name__)
    assert not silent, f"set_callbacks accepted but fit does not call the hooks: {silent}"


def test_without_sklearn_callback_fits_run_and_set_callbacks_says_what_to_upgrade():
    """scikit-learn 1.6-1.8 (the core dependency's range) has no sklearn.callback: simulated
    in a fresh interpreter, bregclust still imports and fits, and set_callbacks refuses with a
    message naming the version."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import sklearn.preprocessing, sklearn.metrics, sklearn.linear_model, sklearn.cluster\n"
        "import sklearn.mixture, sklearn.model_selection\n"
        "sys.modules['sklearn.callback'] = None\n"
        "import numpy as np, bregclust as B\n"
        "X = np.random.default_rng(0).gamma(2.0, 1.0, (60, 3))\n"
        "assert B.BregmanKMeans(2, random_state=0).fit(X).n_iter_ >= 1\n"
        "try:\n"
        "    B.BregmanKMeans(2).set_callbacks()\n"
        "except ImportError as e:\n"
        "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    assert "scikit-learn >= 1.9" in out.stdout


def test_without_callbacks_fit_is_the_plain_method_and_adds_no_frame():
    """No wrapper frame without callbacks: a warning's stacklevel lands where the plain
    function's does (never in bregclust/_callbacks.py)."""
    X = blobs(8)
    est = BregmanKMeans(3, divergence="kl", random_state=0, max_iter=1, tol=0.0)
    assert est.fit.__func__ is BregmanKMeans.fit
    where = []
    for call in (lambda: est.fit(X), lambda: BregmanKMeans.fit(est, X)):
        with pytest.warns(ConvergenceWarning) as record:
            call()
        where.append((record[0].filename, record[0].lineno))
    assert where[0] == where[1] and not where[0][0].endswith("bregclust/_callbacks.py")


def test_with_callbacks_warnings_still_point_at_the_users_fit_line():
    """The callback wrapper of ``fit`` (bregclust's and scikit-learn's frames) is skipped too:
    the ConvergenceWarning names this file and the line calling ``fit``."""
    import inspect

    X = blobs(8)
    for make in (lambda: BregmanKMeans(3, divergence="kl", random_state=0, max_iter=1, tol=0.0),
                 lambda: BregmanMixture(2, max_iter=1, random_state=0)):
        est = make().set_callbacks(Recorder())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            line = inspect.currentframe().f_lineno + 1
            est.fit(X)
        hits = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
        assert hits and (hits[0].filename, hits[0].lineno) == (__file__, line)


@pytest.mark.parametrize("make", [
    lambda: MultitaskBregmanClustering(3, divergence="kl", lam=0.5, random_state=0, max_iter=1),
    lambda: SharedSubspaceClustering(3, random_state=0, max_iter=1),
    lambda: ModelRelationClustering(3, max_iter=1, random_state=0),
])
@pytest.mark.parametrize("with_callbacks", [False, True])
def test_multitask_warnings_point_at_the_users_fit_line(make, with_callbacks):
    """The multi-task estimators' ConvergenceWarnings name this file and the ``fit`` line,
    with and without the callback wrapper of ``fit`` (a fixed stacklevel is right for one
    call depth only)."""
    import inspect

    X = blobs(4)
    tasks = [X[:100], X[80:]]
    est = make()
    if with_callbacks:
        est.set_callbacks(Recorder())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = inspect.currentframe().f_lineno + 1
        est.fit(tasks)
    hits = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert hits, "max_iter=1 must end before converging"
    assert all((w.filename, w.lineno) == (__file__, line) for w in hits)


class ObjectiveLog:
    """A label-free monitor written against scikit-learn's FitCallback protocol: at the end of
    every iteration, the score (minus the objective) of the estimator fitted so far on the
    training data. scikit-learn's ScoringMonitor calls its scorer only when ``fit`` gets ``y``
    (1.9: ``if X is not None and y is not None``), so without labels this is the route."""

    def __init__(self):
        self.scores = []

    def setup(self, estimator, context):
        pass

    def teardown(self, estimator, context):
        pass

    def on_fit_task_begin(self, estimator, context):
        pass

    def on_fit_task_end(self, estimator, context, *, X=None, fitted_estimator=None, **kw):
        if context.task_name == "iteration" and fitted_estimator is not None:
            self.scores.append(fitted_estimator.score(X))
        return False


def test_a_label_free_monitor_scores_every_iteration_with_the_estimators_own_score():
    """Without ``y``, ScoringMonitor logs no score; a callback asking for ``fitted_estimator``
    gets the estimator of every iteration and its own ``score`` (minus the objective): non-
    decreasing over the Lloyd iterations, the last equal to the fitted model's score."""
    X = blobs(9)
    monitor = ScoringMonitor(scoring="adjusted_rand_score")
    BregmanKMeans(3, divergence="kl", random_state=0).set_callbacks(monitor).fit(X)
    assert all(set(r) <= {"task_id_path", "parent_task_id_path", "estimator_name", "task_name",
                          "task_id", "sequential_subtasks"} for r in monitor.get_logs().data)
    log = ObjectiveLog()
    est = BregmanKMeans(3, divergence="kl", n_init=1, random_state=0).set_callbacks(log).fit(X)
    assert len(log.scores) == est.n_iter_ >= 2
    assert np.all(np.diff(log.scores) >= -1e-9 * abs(log.scores[0]))
    assert log.scores[-1] == pytest.approx(est.score(X), rel=1e-12)
