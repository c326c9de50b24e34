"""Sphinx configuration of the bregclust documentation (``tox -e docs`` builds it with -W)."""

import importlib
import inspect
import os
import pkgutil
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from gallery_skips import skipped_examples  # noqa: E402

import bregclust  # noqa: E402

project = "bregclust"
author = "the bregclust developers"
copyright = "2026, the bregclust developers"  # noqa: A001 - Sphinx's name
release = bregclust.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
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
numpydoc_xref_param_type = False

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
_skips = skipped_examples(ROOT / "examples")
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
