"""The layout README's Layout section draws: packages in layers, each importing only its own
modules and the packages below it, so no import cycle can form between packages or modules.

Imports inside functions count (a late import only hides a cycle), and the `agents` package
counts as importing every module in it, since it loads them all by name. A module's own
package is not counted as its import (Python loads it first, whatever the module says).
"""

from __future__ import annotations

import ast
import glob
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def module_files(root: str) -> dict[str, str]:
    found = {}
    for path in glob.glob(os.path.join(root, "*.py")) + glob.glob(os.path.join(root, "*", "*.py")):
        relative = os.path.relpath(path, root)
        if relative.split(os.sep)[0] in ("tests", "bench", "build", "conformance", "examples"):
            continue
        name = relative[:-3].replace(os.sep, ".")
        found[name[: -len(".__init__")] if name.endswith(".__init__") else name] = path
    return found


def imported(name: str, path: str, known: dict) -> set[str]:
    """The project's modules that `name` imports anywhere in its file."""
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(filter(None, [package, base]))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    if path.endswith("__init__.py"):  # a package that loads its modules by name
        found.update(other for other in known if other.startswith(name + "."))
    ancestors = {name.rsplit(".", depth)[0] for depth in range(1, name.count(".") + 1)}
    return {module for module in found if module in known and module != name and module not in ancestors}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    state, stack, found = {}, [], []

    def visit(node: str) -> None:
        state[node] = "open"
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                found.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def import_graph(root: str) -> dict[str, set[str]]:
    known = module_files(root)
    return {name: imported(name, path, known) for name, path in known.items()}


def test_the_graph_sees_the_modules_and_their_imports():
    graph = import_graph(ROOT)
    assert {"trajectoriz", "discovery.catalog", "agents", "agents.claude", "atif.validate"} <= graph.keys()
    assert "agents.base" in graph["agents.claude"]
    assert "agents.claude" in graph["agents"]


def test_a_late_import_that_closes_a_loop_is_a_cycle(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("import importlib\n")
    (tmp_path / "pkg" / "leaf.py").write_text("def f():\n    from top import X\n")
    (tmp_path / "top.py").write_text("import pkg\nX = 1\n")
    assert cycles(import_graph(str(tmp_path))) == [["pkg", "pkg.leaf", "top", "pkg"]]


def test_no_import_cycles():
    assert cycles(import_graph(ROOT)) == []


# Lowest first: a package may import the packages before it in this list, and its own modules.
LAYERS = ["core", "atif", "redaction", "agents", "discovery", "rendering", "archiving", "sharing", "mount",
          "commands", "trajectoriz"]


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported) pairs where a package reaches into one above it (or one not layered)."""
    def layer(module: str) -> int:
        top = module.split(".")[0]
        return LAYERS.index(top) if top in LAYERS else len(LAYERS)
    return sorted((name, target) for name, targets in graph.items() for target in targets
                  if target.split(".")[0] != name.split(".")[0] and layer(target) >= layer(name))


def test_packages_import_only_downwards():
    assert upward_imports(import_graph(ROOT)) == []


def test_an_upward_import_is_found(tmp_path):
    for package, source in (("core", "def f():\n    from discovery import catalog\n"), ("discovery", "")):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
        (tmp_path / package / ("helper.py" if package == "core" else "catalog.py")).write_text(source)
    assert upward_imports(import_graph(str(tmp_path))) == [("core.helper", "discovery"), ("core.helper", "discovery.catalog")]


def test_every_module_lives_in_a_documented_package():
    """The root holds the entry point alone; each package says what it holds and may import."""
    assert sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "*.py"))) == ["trajectoriz.py"]
    packages = {name.split(".")[0] for name in module_files(ROOT)} - {"trajectoriz"}
    assert packages == set(LAYERS) - {"trajectoriz"}
    for package in packages:
        doc = ast.get_docstring(ast.parse(open(os.path.join(ROOT, package, "__init__.py")).read()))
        assert doc and "import" in doc.lower(), package
