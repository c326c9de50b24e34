"""Sphinx configuration of the bregclust documentation (``tox -e docs`` builds it with -W)."""

import importlib
import inspect
import os
import pkgutil
import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from gallery_skips import skip_reasons  # noqa: E402
from inventories import write_inventories  # noqa: E402

import bregclust  # noqa: E402

project = "bregclust"
author = "the bregclust developers"
copyright = "2026, the bregclust developers"  # noqa: A001 - Sphinx's name
release = bregclust.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    # MathJax 3 from the PyPI package sphinx-mathjax-offline (the docs extra installs it):
    # copied into _static/mathjax of the built site, so formulas render without internet.
    "sphinx-mathjax-offline",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "auto_examples/*.ipynb",
                    "auto_examples/*.py", "auto_examples/*.zip"]
root_doc = "index"

html_theme = "pydata_sphinx_theme"
html_title = f"bregclust {release}"
html_static_path = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_prev_next": True,
    "secondary_sidebar_items": ["page-toc"],
}

# API reference -------------------------------------------------------------------------------
autosummary_generate = True
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
# Types in Parameters / Returns link to Python, NumPy, SciPy and our own classes.
numpydoc_xref_param_type = True
numpydoc_xref_aliases = {
    "ndarray": "numpy.ndarray",
    "array-like": ":term:`array-like <array_like>`",
    "array_like": ":term:`array_like`",
    "sparse matrix": "scipy.sparse.spmatrix",
    "RandomState": "numpy.random.RandomState",
    "Generator": "numpy.random.Generator",
    "Divergence": "bregclust.Divergence",
    "DomainError": "bregclust.DomainError",
    "Bunch": "sklearn.utils.Bunch",
    "Axes": "matplotlib.axes.Axes",
    "Figure": "matplotlib.figure.Figure",
}
numpydoc_xref_ignore = {"of", "or", "shape", "optional", "default", "type", "instance",
                        "fitted", "estimator", "sequence", "path-like", "iterable", "pair",
                        "each", "one", "per", "task", "array", "such", "sequences", "function",
                        "matrix", "sparse", "dense", "scalar", "mapping", "them", "the", "a",
                        "an", "and", "for", "with", "from", "to", "in", "at", "by", "as"}

# Intersphinx without downloads: inventories written from the installed packages at build time
# (see inventories.py; no internet is needed, links point at each project's stable docs).
intersphinx_mapping = write_inventories(HERE / "_build" / "inventories")

# Modules that are not part of the public API (the command line has its own --help).
_PRIVATE_MODULES = {"cli", "demo", "demos"}


def public_modules():
    """``bregclust.<name>`` for every public top-level module or package of the library."""
    names = []
    for info in pkgutil.iter_modules(bregclust.__path__):
        if info.name.startswith("_") or info.name in _PRIVATE_MODULES:
            continue
        names.append(f"bregclust.{info.name}")
    return sorted(names)


def public_callables(modname):
    """Public functions and classes a module defines (its ``__all__`` when it has one)."""
    mod = importlib.import_module(modname)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n, obj in vars(mod).items()
                 if not n.startswith("_") and (inspect.isfunction(obj) or inspect.isclass(obj))
                 and getattr(obj, "__module__", "").startswith(modname)]
    out, aliases = [], []
    for n in names:
        obj = getattr(mod, n, None)
        if not (callable(obj) and getattr(obj, "__module__", "").startswith(modname)):
            continue
        if getattr(obj, "__name__", n) != n:  # a second name of a documented object
            aliases.append((n, obj.__name__))
        else:
            out.append(n)
    out.sort(key=lambda n: (not inspect.isclass(getattr(mod, n)), n.lower()))
    return out, sorted(aliases)


def write_api_pages(app=None):
    """Write ``api/<module>.rst`` (one autosummary table per public module) and ``api/index``.

    Generated on every build from the modules themselves, so a function added to (or moved
    between) modules appears in the reference without editing the docs.
    """
    api = HERE / "api"
    api.mkdir(exist_ok=True)
    mods = public_modules()
    index = ["API reference", "=============", "",
             "Every public class and function, by module. The names most people need are also",
             "importable from the top-level package (``from bregclust import BregmanKMeans``).",
             "", ".. toctree::", "   :maxdepth: 1", ""]
    index += [f"   {m}" for m in mods]
    _write(api / "index.rst", "\n".join(index) + "\n")
    for m in mods:
        names, aliases = public_callables(m)
        lines = [m, "=" * len(m), "", f".. automodule:: {m}", "   :no-members:", ""]
        if aliases:
            lines += ["Aliases: " + ", ".join(f"``{a}`` = :class:`{t}`" for a, t in aliases)
                      + ".", ""]
        if names:
            lines += [f".. currentmodule:: {m}", "", ".. autosummary::",
                      "   :toctree: generated/", "   :nosignatures:", ""]
            lines += [f"   {n}" for n in names]
        _write(api / f"{m}.rst", "\n".join(lines) + "\n")


def _write(path, text):
    if not path.exists() or path.read_text() != text:  # keep mtimes stable for incremental builds
        path.write_text(text)


write_api_pages()

# Gallery -------------------------------------------------------------------------------------
_skip_reasons = skip_reasons(ROOT / "examples")
_skips = [re.escape(name) for name in _skip_reasons]
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": (r"(__init__\.py|" + "|".join(_skips) + ")") if _skips else r"__init__\.py",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": False,
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib",),
    "min_reported_time": 1,
    "doc_module": ("bregclust",),
    "backreferences_dir": "api/generated/backreferences",
}
if _skips:
    print(f"[bregclust docs] gallery examples skipped: {', '.join(sorted(_skips))}")

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


# Public names ------------------------------------------------------------------------------
def _resolve_public_name(app, env, node, contnode):
    """Resolve ``bregclust.X`` (the import path users write) to the page of ``X``.

    The API pages document every object under its module (``bregclust.kmeans.BregmanKMeans``);
    docstrings and guide pages refer to the top-level names, including aliases such as
    ``bregclust.LNKMTC``. This maps a reference to the documented path of the same object.
    """
    target = node.get("reftarget", "")
    if node.get("refdomain") != "py" or not target.startswith("bregclust."):
        return None
    parts = target.split(".")
    obj, i = bregclust, 1
    while i < len(parts) and hasattr(obj, parts[i]):
        obj = getattr(obj, parts[i])
        i += 1
        if inspect.isclass(obj) or inspect.isfunction(obj):
            break
    if not (inspect.isclass(obj) or inspect.isfunction(obj)):
        return None
    documented = ".".join([obj.__module__, obj.__qualname__, *parts[i:]])
    if documented == target:
        return None
    return env.get_domain("py").resolve_xref(env, node["refdoc"], app.builder, node["reftype"],
                                             documented, node, contnode)


def _skipped_example(app, env, node, contnode):
    """A reference to a gallery example left out of this build (see ``gallery_skips``; e.g.
    its data set is missing) becomes the example's file name in plain text, so the guide
    builds without the data; a reference to any other missing label still fails the build."""
    target = node.get("reftarget", "")
    prefix = "sphx_glr_auto_examples_"
    if node.get("reftype") != "ref" or not target.startswith(prefix):
        return None
    name = target[len(prefix):]
    if name not in _skip_reasons:
        return None
    from docutils import nodes

    return nodes.inline("", f"the gallery example {name} (not built here: {_skip_reasons[name]})")


def setup(app):
    app.connect("missing-reference", _resolve_public_name)
    app.connect("missing-reference", _skipped_example)
