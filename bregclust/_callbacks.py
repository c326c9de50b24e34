"""scikit-learn's callback API (:mod:`sklearn.callback`) for every iterative fit.

The estimators inherit :class:`sklearn.callback.CallbackSupportMixin` (through
:class:`bregclust._centroid.DivergenceEstimatorMixin` and
:class:`bregclust._multitask.MultiTaskMixin`), so ``est.set_callbacks(ProgressBar())`` or
``est.set_callbacks(ScoringMonitor(scoring=...))`` works on each, beside ``verbose``. A fit
wrapped in :func:`fit_callbacks` is the root task of the callbacks (``X``, ``y`` and the sample
weights as ``metadata``; at its end, the fitted estimator). Each iterative loop of the fit
reports through :func:`bregclust._progress.progress`, the one place every loop already
reports to: there each loop (a restart, an EM run, a mini-batch run) is a subtask of the fit
with ``max_iter`` subtasks, and each iteration a leaf task whose end hook may stop the loop
(a hook returning True). The k-means loop hands the centres of each iteration to the hooks
that ask for ``fitted_estimator`` (a copy of the estimator that predicts with them).

scikit-learn's ``ScoringMonitor`` calls its scorer only when ``fit`` got ``y`` (scikit-learn
1.9 skips the score when ``y is None``): the hooks receive the ``y`` given to ``fit``, never an
invented one. Without labels, a callback asking for ``fitted_estimator`` can record
``fitted_estimator.score(X)`` (minus the objective) at every iteration.

Without callbacks nothing here runs: no context, no copy, the same arithmetic. scikit-learn
< 1.9 has no :mod:`sklearn.callback`: the fits then run as they are and ``set_callbacks``
says what to upgrade.
"""

import functools
import threading
import types

try:
    from sklearn.callback import CallbackSupportMixin, with_callbacks
except ImportError:  # scikit-learn < 1.9 (a core dependency from 1.6 on): no callback API
    with_callbacks = None

    class CallbackSupportMixin:
        """Stand-in for :class:`sklearn.callback.CallbackSupportMixin` on scikit-learn < 1.9."""

        def set_callbacks(self, *callbacks):
            """Refuse: scikit-learn's callback API needs scikit-learn >= 1.9.

            Parameters
            ----------
            *callbacks : callback instances

            Returns
            -------
            self
            """
            raise ImportError("set_callbacks needs scikit-learn >= 1.9 (sklearn.callback); "
                              "upgrade scikit-learn, or use verbose=1 for a progress bar.")

__all__ = ["CallbackSupportMixin", "fit_callbacks", "loop_task"]

_LOCAL = threading.local()  # the fits with callbacks running on this thread, innermost last


class _Fit:
    """A running fit with callbacks: its estimator, root context and the data of the hooks."""

    __slots__ = ("estimator", "ctx", "X", "y", "metadata")

    def __init__(self, estimator, ctx, X, y, metadata):
        self.estimator = estimator
        self.ctx = ctx
        self.X = X
        self.y = y
        self.metadata = metadata

    def hooks(self, ctx, which, **kw):
        call = ctx.call_on_fit_task_begin if which == "begin" else ctx.call_on_fit_task_end
        return call(estimator=self.estimator, X=self.X, y=self.y, metadata=self.metadata, **kw)


def _stack():
    stack = getattr(_LOCAL, "stack", None)
    if stack is None:
        stack = _LOCAL.stack = []
    return stack


class fit_callbacks:
    """Decorator of an estimator's ``fit(X, y=None, ...)``: the fit is the callbacks' root
    task when the estimator has callbacks (:meth:`set_callbacks`), or was handed a context
    by a meta-estimator; otherwise ``est.fit`` is the plain ``fit`` (a descriptor hands it out
    as it is: no wrapper frame, so the warnings' ``stacklevel`` still points at the caller).

    Parameters
    ----------
    fit : callable
        The estimator's ``fit``.
    """

    def __init__(self, fit):
        self.fit = fit
        functools.update_wrapper(self, fit)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self.fit
        if not (getattr(obj, "_skl_callbacks", None) or hasattr(obj, "_parent_callback_ctx")):
            return self.fit.__get__(obj, objtype)
        return types.MethodType(self._with_callbacks, obj)

    def _with_callbacks(self_, est, X, y=None, *args, **kwargs):  # noqa: N805
        stack = _stack()
        if any(f.estimator is est for f in stack):  # fit called again inside fit
            return self_.fit(est, X, y, *args, **kwargs)
        return _root_task(est, self_.fit, X, y, args, kwargs, stack)


def _root_task(estimator, fit, X, y, args, kwargs, stack):
    sw = kwargs.get("sample_weight", args[0] if args else None)
    metadata = {"sample_weight": sw} if sw is not None else None
    ctx = estimator._init_callback_context(task_name="fit", max_subtasks=None)
    run = _Fit(estimator, ctx, X, y, metadata)
    run.hooks(ctx, "begin")
    stack.append(run)
    try:
        out = fit(estimator, X, y, *args, **kwargs)
    finally:
        stack.pop()
    run.hooks(ctx, "end", reconstruction_attributes={})
    return out


if with_callbacks is not None:
    _root_task = with_callbacks(_root_task)  # the callbacks' teardown runs however fit ends


class _Loop:
    """The callbacks' view of one iterative loop (see :func:`loop_task`)."""

    __slots__ = ("fit", "ctx", "total", "n")

    def __init__(self, fit, desc, total):
        self.fit = fit
        self.total = total
        self.n = 0
        self.ctx = fit.ctx.subcontext(task_name=desc, max_subtasks=total)
        fit.hooks(self.ctx, "begin")

    def step(self, n=1, fitted=None):
        """``n`` iterations done; ``fitted``: a callable giving the attributes of an estimator
        fitted at this point (called only when a hook asks). Returns whether a hook asks the
        loop to stop."""
        stop = False
        for _ in range(n):
            if self.total is not None and self.n >= self.total:
                break
            self.n += 1
            it = self.ctx.subcontext(task_name="iteration")
            self.fit.hooks(it, "begin")
            stop |= bool(self.fit.hooks(it, "end", reconstruction_attributes=fitted))
        return stop

    def close(self):
        self.fit.hooks(self.ctx, "end")


def loop_task(desc, total):
    """A :class:`_Loop` for a loop of the innermost running fit with callbacks on this thread,
    or None (no fit with callbacks: nothing is created).

    Parameters
    ----------
    desc : str
        The loop's name (the progress bar's description).
    total : int or None
        Its iteration budget.

    Returns
    -------
    _Loop or None
    """
    stack = getattr(_LOCAL, "stack", None)
    if not stack:
        return None
    return _Loop(stack[-1], desc, total)
