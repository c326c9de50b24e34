"""Intersphinx inventories of Python, NumPy, SciPy, scikit-learn and POT, written at build time.

The documentation is built without internet access beyond the package index, so the
``objects.inv`` files of the projects we link to cannot be downloaded. Instead this module
writes one for each project from the *installed* package: it walks the public modules listed
below, records every public class and function that really exists there (so a link is only
made to an object the reader's version has), and maps it to the project's documented URL
scheme (one generated page per object for NumPy, SciPy and scikit-learn, one page per module
for POT). ``conf.py`` then points ``intersphinx_mapping`` at these files; Sphinx's own
intersphinx extension resolves the references, as it would with the downloaded inventories.

Links point at the projects' *stable* documentation; an object the installed version has but
the stable docs moved would give a dead link, which the URL schemes below (unchanged for
years in all four projects) make unlikely.
"""

import builtins
import importlib
import inspect
import zlib
from pathlib import Path

#: project -> (base URL, [(module, page template)]). A template gets ``{full}`` (the object's
#: full dotted name) and ``{module}``; names come from the module's ``__all__`` (or its public
#: attributes), imported or not, so that ``numpy.linalg.eigh`` and ``ot.emd`` both resolve.
PROJECTS = {
    "numpy": ("https://numpy.org/doc/stable/", [
        ("numpy", "reference/generated/{full}.html#{full}"),
        ("numpy.linalg", "reference/generated/{full}.html#{full}"),
        ("numpy.fft", "reference/generated/{full}.html#{full}"),
        ("numpy.random", "reference/random/generated/{full}.html#{full}"),
    ]),
    "scipy": ("https://docs.scipy.org/doc/scipy/", [
        (m, "reference/generated/{full}.html#{full}") for m in (
            "scipy.sparse", "scipy.sparse.linalg", "scipy.sparse.csgraph", "scipy.linalg",
            "scipy.optimize", "scipy.special", "scipy.cluster.hierarchy", "scipy.cluster.vq",
            "scipy.spatial", "scipy.spatial.distance", "scipy.stats", "scipy.io",
            "scipy.integrate", "scipy.interpolate", "scipy.signal", "scipy.ndimage")
    ]),
    "sklearn": ("https://scikit-learn.org/stable/", [
        (m, "modules/generated/{full}.html#{full}") for m in (
            "sklearn.base", "sklearn.cluster", "sklearn.metrics", "sklearn.metrics.cluster",
            "sklearn.utils", "sklearn.utils.validation", "sklearn.exceptions",
            "sklearn.datasets", "sklearn.preprocessing", "sklearn.feature_extraction.text",
            "sklearn.decomposition", "sklearn.neighbors", "sklearn.pipeline",
            "sklearn.model_selection", "sklearn.manifold", "sklearn.mixture",
            "sklearn.linear_model", "sklearn.semi_supervised")
    ]),
    "ot": ("https://pythonot.github.io/", [
        (m, "gen_modules/{module}.html#{full}") for m in (
            "ot.lp", "ot.bregman", "ot.utils", "ot.unbalanced", "ot.partial", "ot.optim",
            "ot.da", "ot.gromov", "ot.datasets", "ot.backend", "ot.smooth", "ot.stochastic")
    ]),
}

#: Objects whose page does not follow their module's template.
SPECIAL = {
    "numpy": {
        "numpy.random.Generator": ("py:class",
                                   "reference/random/generator.html#numpy.random.Generator"),
        "numpy.random.default_rng": ("py:function",
                                     "reference/random/generator.html#numpy.random.default_rng"),
        "numpy.random.RandomState": ("py:class",
                                     "reference/random/legacy.html#numpy.random.RandomState"),
        "array_like": ("std:term", "glossary.html#term-array_like"),
        "arrays.scalars": ("std:label", "reference/arrays.scalars.html#arrays-scalars"),
    },
    # labels that inherited scikit-learn docstrings (``score``) refer to
    "sklearn": {
        "accuracy_score": ("std:label", "modules/model_evaluation.html#accuracy-score"),
        "r2_score": ("std:label", "modules/model_evaluation.html#r2-score"),
    },
}

#: Glossary terms and labels of the Python documentation that numpydoc's type links use.
_PYTHON_SPECIAL = {
    "sequence": ("std:term", "glossary.html#term-sequence"),
    "iterable": ("std:term", "glossary.html#term-iterable"),
    "mapping": ("std:term", "glossary.html#term-mapping"),
    "generator": ("std:term", "glossary.html#term-generator"),
    "path-like object": ("std:term", "glossary.html#term-path-like-object"),
    "bltin-boolean-values": ("std:label", "library/stdtypes.html#bltin-boolean-values"),
}

#: Python's builtin names by the page that documents them.
_PYTHON_PAGES = {
    "library/functions.html": ("abs", "all", "any", "bool", "callable", "float", "int", "isinstance",
                               "len", "max", "min", "object", "print", "range", "sorted", "sum",
                               "type", "zip", "iter", "next", "round", "slice", "memoryview"),
    "library/stdtypes.html": ("dict", "list", "tuple", "str", "set", "frozenset", "bytes"),
}


def _public(mod):
    """``(name, object)`` of the public names of ``mod`` (its ``__all__`` when it has one)."""
    names = getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]
    for name in names:
        try:
            obj = getattr(mod, name, None)
        except ImportError:  # lazily imported experimental names (scikit-learn)
            continue
        if obj is not None and not inspect.ismodule(obj):
            yield name, obj


def _role(obj):
    if inspect.isclass(obj):
        return "py:exception" if issubclass(obj, BaseException) else "py:class"
    return "py:function" if callable(obj) else None


def _entries_for(project):
    """``{name: (role, uri)}`` of every public class and function of ``project``'s modules."""
    base, modules = PROJECTS[project]
    out, by_object = {}, {}
    for modname, template in modules:
        try:
            mod = importlib.import_module(modname)
        except ImportError:
            continue
        for name, obj in _public(mod):
            role = _role(obj)
            if role is None or not str(getattr(obj, "__module__", None) or project).startswith(
                    project):
                continue  # a constant, or a name imported from elsewhere (the standard library)
            full = f"{modname}.{name}"
            out.setdefault(full, (role, template.format(full=full, module=modname)))
            by_object.setdefault(id(obj), out[full])
    # Names re-exported at the top level (``ot.emd`` is ``ot.lp.emd``) link to the page of the
    # module that documents them.
    for name, obj in _public(importlib.import_module(project)):
        if id(obj) in by_object:
            out.setdefault(f"{project}.{name}", by_object[id(obj)])
    out.update(SPECIAL.get(project, {}))
    return base, out


def _python_entries():
    out = {}
    for page, names in _PYTHON_PAGES.items():
        for name in names:
            role = "py:class" if inspect.isclass(getattr(builtins, name)) else "py:function"
            out[name] = (role, f"{page}#{name}")
    for name, obj in vars(builtins).items():
        if inspect.isclass(obj) and issubclass(obj, BaseException) and not name.startswith("_"):
            out[name] = ("py:exception", f"library/exceptions.html#{name}")
    for name in ("None", "True", "False", "NotImplemented", "Ellipsis"):
        out[name] = ("py:data", f"library/constants.html#{name}")
    out.update(_PYTHON_SPECIAL)
    return "https://docs.python.org/3/", out


def _write(path, project, version, entries):
    lines = []
    for name, (role, uri) in sorted(entries.items()):
        if uri.endswith("#" + name):
            uri = uri[: -len(name)] + "$"  # the inventory format's shorthand
        lines.append(f"{name} {role} 1 {uri} -")
    header = (f"# Sphinx inventory version 2\n# Project: {project}\n# Version: {version}\n"
              "# The remainder of this file is compressed using zlib.\n")
    path.write_bytes(header.encode() + zlib.compress(("\n".join(lines) + "\n").encode()))


def write_inventories(folder):
    """Write ``<project>.inv`` for Python and every project of :data:`PROJECTS` into ``folder``.

    Returns
    -------
    mapping : dict
        An ``intersphinx_mapping``: ``{project: (base URL, path of its inventory)}``.
    """
    import platform

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    mapping = {}
    base, entries = _python_entries()
    _write(folder / "python.inv", "Python", platform.python_version(), entries)
    mapping["python"] = (base, str(folder / "python.inv"))
    for project in PROJECTS:
        try:
            version = importlib.import_module(project).__version__
        except (ImportError, AttributeError):
            continue
        base, entries = _entries_for(project)
        _write(folder / f"{project}.inv", project, version, entries)
        mapping[project] = (base, str(folder / f"{project}.inv"))
    return mapping
