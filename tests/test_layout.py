"""The layout DEVELOPERS.md agreed on: no import cycles among trajectoriz's modules.

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
    assert {"trajectoriz", "catalog", "agents", "agents.claude", "atif.validate"} <= graph.keys()
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
