"""Progress bars of long fits: one tqdm bar per restart at ``verbose=1``, on stderr.

Every estimator's iterative loop reports through :func:`progress`, so ``verbose`` means the
same thing everywhere: ``0`` silent, ``1`` a progress bar per restart showing the iteration
count and the current objective, ``2`` the bar plus one printed line per iteration (for
logs). The bar is written to ``sys.stderr`` (standard output stays for results); when the
loop ends, converged or not, it stays on screen with the final iteration count and objective.
"""

import sys

from ._callbacks import loop_task

__all__ = ["progress"]


class _Bar:
    """The handle a loop updates; a no-op when ``verbose == 0``."""

    __slots__ = ("_bar", "_verbose", "_desc", "_n", "_task")

    def __init__(self, verbose, total, desc):
        self._verbose = int(verbose)
        self._desc = desc
        self._n = 0
        self._bar = None
        self._task = loop_task(desc, total)  # scikit-learn's callbacks, when the fit has some
        if self._verbose >= 1:
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=desc, file=sys.stderr, leave=True,
                             dynamic_ncols=True, mininterval=0.2)

    @property
    def active(self):
        """Whether :meth:`step` shows anything (callers skip computing what it would show)."""
        return self._bar is not None or self._task is not None

    def step(self, objective=None, n=1, fitted=None, **postfix):
        """One iteration (``n`` of them) done; ``objective``: the value after it; ``fitted``:
        a callable giving the attributes of the estimator fitted at this point, for the
        callbacks that ask for it. Returns whether a callback asks the loop to stop."""
        self._n += n
        stop = self._task.step(n, fitted) if self._task is not None else False
        if self._bar is None:
            return stop
        if objective is not None:
            postfix = {"objective": f"{objective:.6g}", **postfix}
        if postfix:
            self._bar.set_postfix(postfix, refresh=False)
        self._bar.update(n)
        if self._verbose >= 2:
            extra = "".join(f", {k} {v}" for k, v in postfix.items() if k != "objective")
            obj = "" if objective is None else f": objective {objective:.10g}"
            self._bar.write(f"  {self._desc} iteration {self._n}{obj}{extra}", file=sys.stderr)
        return stop

    def close(self):
        """Draw the final state (iterations done, last objective) and end the bar's line."""
        if self._task is not None:
            task, self._task = self._task, None
            task.close()
        if self._bar is not None:
            self._bar.refresh()
            self._bar.close()
            self._bar = None


class progress:
    """Context manager yielding a bar for one restart of an iterative fit.

    Parameters
    ----------
    verbose : int
        The estimator's ``verbose``: 0 gives a bar that does nothing.
    total : int or None
        The iteration budget (``max_iter``), or None when unknown.
    desc : str
        What runs, e.g. ``"BregmanKMeans restart 0"``.

    Examples
    --------
    >>> with progress(0, total=3, desc="demo") as bar:
    ...     for it in range(3):
    ...         stop = bar.step(objective=1.0 / (it + 1))  # True: a callback asks to stop
    """

    def __init__(self, verbose, total=None, desc=""):
        self._handle = _Bar(verbose, total, desc)

    def __enter__(self):
        return self._handle

    def __exit__(self, *exc):
        self._handle.close()
        return False
