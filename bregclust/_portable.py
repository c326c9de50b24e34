"""A divergence record that travels to other processes (dask workers).

Built-in records travel by name and parameters; a user-registered generator travels with its
Python functions (pickled by value) and is registered again where it lands. Used by the dask
data source for every record it sends with a pass; imports no estimator.
"""

import sys

__all__ = ["Portable", "portable", "unwrap"]


class Portable:
    """A divergence that unpickles in any worker process, or fails there with a clear error.

    Built-in divergences travel by name. A user-registered generator does not exist in a
    worker started before (or without) the ``register_divergence`` call, so its Python
    functions travel with it (pickled by value with cloudpickle) and the worker registers
    them on first use. Unpickling never raises: a record that cannot be restored (say, a
    generator whose functions need a module the worker lacks) becomes a placeholder whose
    first use raises, so the task fails and the error reaches the client instead of killing
    the worker (which the scheduler would restart and resubmit to forever).
    """

    def __init__(self, div, name=None, error=None):
        self.div = div
        self.name = div.name if div is not None else name
        self.error = error

    def __dask_tokenize__(self):
        return ("bregclust-divergence", self.name, id(self.div))

    def __reduce__(self):
        div = self.div
        if div is None:
            return (restore, (self.name, {}, None, self.error))
        if div.builtin:
            return (restore, (div.name, dict(div.params), None, None))
        return (restore, (div.name, {}, generator_spec(div), None))

    def get(self):
        if self.div is None:
            raise RuntimeError(self.error)
        return self.div


def generator_spec(div):
    """The registration of a custom generator, pickled with its functions by value."""
    import cloudpickle

    spec = {key: getattr(getattr(div, key), "py_func", getattr(div, key))
            for key in ("phi", "dphi", "dphi_inv")}
    inv = spec["dphi_inv"]
    if getattr(inv, "__module__", "").startswith("bregclust."):
        del spec["dphi_inv"]  # the registry's own bisection inverse: rebuilt by registering
    spec.update(domain=div.domain, symmetric=div.symmetric, aliases=tuple(div.aliases),
                formula=div.formula)
    mods = {sys.modules.get(getattr(f, "__module__", None)) for f in
            (spec["phi"], spec["dphi"], spec.get("dphi_inv"))}
    mods = [m for m in mods if m is not None and m.__name__ not in ("__main__", "builtins")
            and not m.__name__.startswith(("math", "numpy", "numba"))]
    registered = []
    try:
        for m in mods:  # user functions travel by value (workers need not import their module)
            try:
                cloudpickle.register_pickle_by_value(m)
                registered.append(m)
            except ValueError:
                pass
        return cloudpickle.dumps(spec)
    finally:
        for m in registered:
            cloudpickle.unregister_pickle_by_value(m)


def restore(name, params, spec, error):
    """Unpickle a :class:`Portable` (never raises; see there)."""
    if error is not None:
        return Portable(None, name, error)
    try:
        from .divergences import get_divergence, register_divergence

        try:
            return Portable(get_divergence(name, **params))
        except ValueError:
            if spec is None:
                raise
            import pickle

            return Portable(register_divergence(name, **pickle.loads(spec)))
    except Exception as exc:  # noqa: BLE001 - reported when the task runs, see Portable
        return Portable(None, name, (
            f"divergence {name!r} could not be restored on a dask worker "
            f"({type(exc).__name__}: {exc}). Make its generator functions importable there "
            f"or call client.run(register_divergence, {name!r}, phi=..., dphi=...) first."))


def portable(a):
    """``a`` wrapped in :class:`Portable` when it is a divergence record, else ``a``."""
    from .divergences import Divergence

    return Portable(a) if isinstance(a, Divergence) else a


def unwrap(a):
    """The record inside a :class:`Portable` (raising its restore error), else ``a``."""
    return a.get() if isinstance(a, Portable) else a
