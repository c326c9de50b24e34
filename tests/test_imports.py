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
