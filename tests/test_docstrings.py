"""Every public callable of bregclust documents its parameters and what it returns (numpydoc).

Public callables: the names in each public module's ``__all__`` and the public methods their
classes define themselves (inherited scikit-learn methods are documented upstream).
"""

import importlib
import inspect

import pytest

numpydoc = pytest.importorskip("numpydoc.docscrape")

MODULES = ["bregclust", "bregclust.divergences", "bregclust.kmeans", "bregclust.mbc",
           "bregclust.minibatch", "bregclust.bisecting", "bregclust.agglomerative", "bregclust.kernel_mtc",
           "bregclust.shared_subspace", "bregclust.model_relation", "bregclust.metrics", "bregclust.datasets",
           "bregclust.plotting", "bregclust.demo"]


def public_callables():
    seen, out = set(), []
    for modname in MODULES:
        mod = importlib.import_module(modname)
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if inspect.isclass(obj):
                for mname, meth in inspect.getmembers(obj, inspect.isfunction):
                    if not mname.startswith("_") and meth.__qualname__.split(".")[0] == obj.__name__:
                        out.append((f"{modname}.{name}.{mname}", meth))
            elif callable(obj):
                out.append((f"{modname}.{name}", obj))
    return out


CALLABLES = public_callables()


def test_the_census_is_not_empty():
    names = {q for q, _ in CALLABLES}
    assert len(CALLABLES) > 80
    assert "bregclust.BregmanKMeans.fit" in names and "bregclust.kmeans.auto_smoothing" in names


@pytest.mark.parametrize("qualname, obj", CALLABLES, ids=[q for q, _ in CALLABLES])
def test_numpydoc_sections(qualname, obj):
    doc = numpydoc.FunctionDoc(obj)
    params = [p for p in inspect.signature(obj).parameters
              if p not in ("self", "cls") and not p.startswith("_")]  # private keywords
    assert doc["Summary"], f"{qualname}: no summary line"
    if params:
        assert doc["Parameters"], f"{qualname}: no Parameters section"
        documented = {n.strip() for p in doc["Parameters"] for n in p.name.split(",")}
        documented = {n.lstrip("*") for n in documented}
        missing = [p for p in params if p.lstrip("*") not in documented]
        assert not missing, f"{qualname}: parameters not documented: {missing}"
    if not qualname.endswith((".fit", ".set_params")):
        assert doc["Returns"] or doc["Yields"], f"{qualname}: no Returns section"
