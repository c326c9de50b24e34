"""Every module of bregclust imports on its own, and the package's import graph has no cycle.

Each module is imported in a fresh interpreter, so a module that only works because another one
happened to be imported first fails here. The import graph is read from the source with ``ast``:
every ``import`` / ``from ... import`` statement counts, at module level and inside functions (a
function-level import hides a cycle from the interpreter, not from a reader).
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import bregclust

PACKAGE = "bregclust"
ROOT = Path(bregclust.__file__).resolve().parent


def package_modules(root=ROOT, package=PACKAGE):
    """Dotted names of the package, its subpackages and their modules (from the files), sorted."""
    names = []
    for path in root.rglob("*.py"):
        rel = path.relative_to(root)
        if not all((root / d / "__init__.py").exists() for d in
                   [Path(*rel.parts[:i]) for i in range(len(rel.parts))]):
            continue  # a directory without __init__.py is not part of the package
        parts = list(rel.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join([package, *parts]))
    return sorted(names)


def module_file(name, root=ROOT, package=PACKAGE):
    """The source file of a dotted module name inside ``package`` (rooted at ``root``)."""
    parts = name.split(".")[1:]
    path = root.joinpath(*parts)
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _resolve(name, node, is_package):
    """Absolute name of the module a ``from`` statement in module ``name`` imports from."""
    if node.level == 0:
        return node.module
    base = name.split(".")
    if not is_package:
        base = base[:-1]  # a module's relative imports start at its package
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph(root=ROOT, package=PACKAGE):
    """``{module: {(imported module, line), ...}}`` for imports between modules of ``package``.

    Every import statement counts, wherever it stands (module level, function, method);
    ``from pkg import name`` counts as an import of ``pkg.name`` when that is a module of the
    package, else of ``pkg``.
    """
    modules = set(package_modules(root, package))
    graph = {}
    for name in modules:
        path = module_file(name, root, package)
        tree = ast.parse(path.read_text(), filename=str(path))
        edges = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                source = _resolve(name, node, path.name == "__init__.py")
                targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules
                           else source for alias in node.names]
            else:
                continue
            edges |= {(t, node.lineno) for t in targets if t in modules and t != name}
        graph[name] = edges
    return graph


def find_cycle(graph, ignore=()):
    """One import cycle as a list of ``"module:line"`` steps back to the start, or None.

    ``ignore`` holds ``(importer, imported)`` pairs left out of the graph.
    """
    succ = {m: sorted({t for t, _ in e if (m, t) not in ignore}) for m, e in graph.items()}
    line = {(m, t): ln for m, e in graph.items() for t, ln in sorted(e, key=lambda x: -x[1])}
    state = dict.fromkeys(graph, 0)  # 0 new, 1 on the stack, 2 done
    stack = []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for t in succ[m]:
            if state[t] == 1:
                loop = stack[stack.index(t):] + [t]
                return [f"{a}:{line[(a, b)]} -> {b}" for a, b in zip(loop, loop[1:])]
            if state[t] == 0:
                found = visit(t)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if state[m] == 0:
            found = visit(m)
            if found:
                return found
    return None


@pytest.fixture(scope="module")
def fresh_imports(request):
    """One fresh interpreter per selected module, all started at once, each importing only it."""
    selected = [item.callspec.params["module"] for item in request.session.items
                if getattr(item, "originalname", None) == "test_module_imports_on_its_own"]
    procs = {m: subprocess.Popen([sys.executable, "-c", f"import {m}"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
             for m in selected}
    yield procs
    for proc in procs.values():
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


@pytest.mark.parametrize("module", package_modules())
def test_module_imports_on_its_own(module, fresh_imports):
    proc = fresh_imports[module]
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, f"import {module} failed in a fresh interpreter:\n{err}"


def test_import_graph_has_no_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_cycle_finder_sees_function_level_and_relative_imports(tmp_path):
    pkg = tmp_path / "toy"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import f\n")
    (pkg / "a.py").write_text("from . import b\n\ndef f():\n    return b.g()\n")
    (pkg / "b.py").write_text("def g():\n    from .sub.c import h\n    return h()\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "c.py").write_text("import math\n\ndef h():\n    from ..a import f\n"
                                      "    return f\n")
    graph = import_graph(pkg, "toy")
    assert set(graph) == {"toy", "toy.a", "toy.b", "toy.sub", "toy.sub.c"}
    assert graph["toy.b"] == {("toy.sub.c", 2)} and graph["toy.sub.c"] == {("toy.a", 4)}
    assert find_cycle(graph) == ["toy.a:1 -> toy.b", "toy.b:2 -> toy.sub.c",
                                 "toy.sub.c:4 -> toy.a"]
    assert find_cycle(graph, ignore={("toy.sub.c", "toy.a")}) is None


# ----------------------------------------------------------------------------- the layers
#: Modules whose private names other modules may use: the numba kernels, the execution engine
#: and the validators are the package's shared internals.
PRIVATE_OK = ("bregclust._kernels", "bregclust._execution", "bregclust._validation")
#: Data sources and the machinery under them: they serve the estimators and import none.
BACKENDS = ("bregclust._dask", "bregclust._dask_local", "bregclust._portable",
            "bregclust._sources", "bregclust._execution", "bregclust._conditioning",
            "bregclust._kernels", "bregclust._blocks", "bregclust._mixture_pass", "bregclust._forms")


def _within(name, prefixes):
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _trees(root=ROOT, package=PACKAGE):
    return {name: ast.parse(module_file(name, root, package).read_text())
            for name in package_modules(root, package)}


def estimator_modules(root=ROOT, package=PACKAGE):
    """Modules that define a scikit-learn estimator (a class with ``BaseEstimator`` among its
    bases)."""
    out = set()
    for name, tree in _trees(root, package).items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                    getattr(b, "id", getattr(b, "attr", None)) == "BaseEstimator"
                    for b in node.bases):
                out.add(name)
    return out


def private_name_uses(root=ROOT, package=PACKAGE, allowed=PRIVATE_OK):
    """``(module, line, what)`` for every use of another module's private name outside
    ``allowed``: ``from m import _x`` and ``alias._x`` on a module imported as ``alias``."""
    modules = set(package_modules(root, package))
    found = []
    for name, tree in _trees(root, package).items():
        path = module_file(name, root, package)
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = _resolve(name, node, path.name == "__init__.py")
                for alias in node.names:
                    full = f"{source}.{alias.name}"
                    if full in modules:
                        aliases[alias.asname or alias.name] = full
                    elif (alias.name.startswith("_") and not alias.name.endswith("__")
                          and source in modules and source != name
                          and not _within(source, allowed)):
                        found.append((name, node.lineno, f"{source}.{alias.name}"))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in modules and alias.asname:
                        aliases[alias.asname] = alias.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                target = aliases[node.value.id]
                if target != name and not _within(target, allowed):
                    found.append((name, node.lineno, f"{target}.{node.attr}"))
    return sorted(set(found))


def private_method_uses(cls_module, cls_name, root=ROOT, package=PACKAGE):
    """``(module, line, name)`` for every call of a private method of class ``cls_name``
    (defined in ``cls_module``) from another module (any ``obj._method`` with that name)."""
    trees = _trees(root, package)
    private = set()
    for node in ast.walk(trees[cls_module]):
        if isinstance(node, ast.ClassDef) and node.name == cls_name:
            private = {f.name for f in node.body if isinstance(f, ast.FunctionDef)
                       and f.name.startswith("_") and not f.name.startswith("__")}
    found = []
    for name, tree in trees.items():
        if name == cls_module:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in private:
                found.append((name, node.lineno, node.attr))
    return sorted(found)


def test_backends_import_no_estimator_module():
    estimators = estimator_modules()
    assert {"bregclust.kmeans", "bregclust.mbc"} <= estimators
    graph = import_graph()
    bad = [(m, line, t) for m, edges in graph.items() if _within(m, BACKENDS)
           for t, line in edges if t in estimators]
    assert not bad, f"a backend imports an estimator module: {bad}"


def test_no_module_reads_another_modules_private_names():
    bad = private_name_uses()
    assert not bad, ("private names used across modules (make them public in their module, or "
                     f"move them to a shared one): {bad}")


def test_no_module_calls_private_methods_of_the_divergence_record():
    bad = private_method_uses("bregclust.divergences", "Divergence")
    assert not bad, f"private methods of Divergence called from other modules: {bad}"


def test_layer_checks_see_violations(tmp_path):
    pkg = tmp_path / "toy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "_execution.py").write_text("def _ok():\n    pass\n")
    (pkg / "est.py").write_text(
        "from sklearn.base import BaseEstimator\n\nclass Est(BaseEstimator):\n"
        "    def _hidden(self):\n        pass\n\ndef _secret():\n    pass\n")
    (pkg / "_dask.py").write_text("from . import est\nfrom .est import _secret\n"
                                  "from ._execution import _ok\n")
    (pkg / "user.py").write_text("from . import est as E\n\ndef f(o):\n"
                                 "    return E._secret, o._hidden()\n")
    assert estimator_modules(pkg, "toy") == {"toy.est"}
    assert private_name_uses(pkg, "toy", allowed=("toy._execution",)) == [
        ("toy._dask", 2, "toy.est._secret"), ("toy.user", 4, "toy.est._secret")]
    assert private_method_uses("toy.est", "Est", pkg, "toy") == [("toy.user", 4, "_hidden")]
    graph = import_graph(pkg, "toy")
    assert ("toy.est", 1) in graph["toy._dask"]


def test_estimator_modules_do_not_import_each_other_for_the_skeleton():
    """The centroid skeleton (Lloyd loop, centre update, reported objective, mixins) lives in
    ``_centroid``, below the estimators: mini-batch, bisecting, the mixture and MBC take it from
    there, not from ``kmeans``."""
    trees = _trees()
    skeleton = {"lloyd", "update_centres", "reported_objective", "DivergenceEstimatorMixin",
                "NearestCentreMixin", "smoothed_objective", "LloydResult"}
    bad = []
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("kmeans"):
                bad += [(name, a.name) for a in node.names if a.name in skeleton]
    assert not bad, f"import the skeleton from bregclust._centroid: {bad}"


def test_the_engine_and_the_forms_call_down_only():
    """Engine below the registry, forms below the engine: the divergence forms take arrays and
    return arrays (no ``div`` argument, no import of the engine, the registry or the passes),
    and the engine imports neither the registry nor the forms nor the passes built on it."""
    import inspect

    from bregclust import _forms

    graph = import_graph()
    upper = {"bregclust.divergences", "bregclust._blocks", "bregclust._mixture_pass",
             "bregclust._sources", "bregclust._dask"}
    rules = {"bregclust._forms": upper | {"bregclust._execution"},
             "bregclust._execution": upper | {"bregclust._forms"}}
    bad = [(m, line, t) for m, above in rules.items() for t, line in graph[m] if t in above]
    assert not bad, f"an import points up: {bad}"
    forms = [_forms.SeparableForm, _forms.L1Form, _forms.MahalanobisForm, _forms.CosineForm]
    takes_div = [(f.__name__, name) for f in forms for name, fn in vars(f).items()
                 if callable(fn) and "div" in inspect.signature(fn).parameters]
    assert not takes_div, f"form methods taking a divergence record: {takes_div}"
