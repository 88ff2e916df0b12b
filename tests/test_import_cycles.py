"""No import cycles: read statically, no module of agentdbg imports (at the top level, where
it runs on import) a module that imports it back, directly or through others; and each
package imports alone in a fresh interpreter, so no import order is needed to load it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "agentdbg"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _run_on_import(node: ast.AST, deferred: bool = False):
    """Import statements that run when the module is imported (not in functions or
    classes' methods, nor under ``if TYPE_CHECKING``); ``deferred``: those in functions too."""
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) and not deferred:
        return
    elif isinstance(node, ast.If) and _is_type_checking(node.test):
        for child in node.orelse:
            yield from _run_on_import(child, deferred)
    else:
        for child in ast.iter_child_nodes(node):
            yield from _run_on_import(child, deferred)


def _known(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path, deferred: bool = False) -> set[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: list[str] = []
    for node in _run_on_import(ast.parse(path.read_text(encoding="utf-8")), deferred):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
            continue
        base = node.module or ""
        if node.level:
            parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            base = ".".join(parts + ([node.module] if node.module else []))
        names += [f"{base}.{alias.name}" for alias in node.names]
    found = set()
    for name in names:
        target = _known(name)
        if target is None or target == module:
            continue
        found.add(target)
        # Importing a.b.c runs a and a.b first (a module's own packages are loaded already).
        parts = target.split(".")
        for depth in range(1, len(parts)):
            parent = ".".join(parts[:depth])
            if parent in MODULES and parent != module and not module.startswith(parent + "."):
                found.add(parent)
    return found


def import_cycles(deferred: bool = False, allowed: frozenset[tuple[str, str]] = frozenset()
                  ) -> list[list[str]]:
    """Groups of modules that import each other; ``deferred``: counting imports inside
    functions too, except the edges in ``allowed``."""
    graph = {module: {target for target in _imports(module, path, deferred)
                      if (module, target) not in allowed}
             for module, path in MODULES.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in graph[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph)))
    for module in graph:
        if module not in index:
            visit(module)
    return cycles


def test_no_import_cycles():
    assert import_cycles() == []


# A function-level import that points back up the layers is how a cycle hides; these few
# are plug-ins loaded on request (a recorder wrapping a model SDK client).
DEFERRED_ON_PURPOSE = frozenset({
    ("agentdbg.recorder", "agentdbg.integrations.openai"),
    ("agentdbg.recorder", "agentdbg.integrations.anthropic"),
})


def test_no_import_cycles_through_deferred_imports():
    assert import_cycles(deferred=True, allowed=DEFERRED_ON_PURPOSE) == []


def test_the_cycle_finder_finds_a_cycle(tmp_path, monkeypatch):
    (tmp_path / "agentdbg").mkdir()
    (tmp_path / "agentdbg" / "__init__.py").write_text("")
    (tmp_path / "agentdbg" / "a.py").write_text("from agentdbg.b import x\n")
    (tmp_path / "agentdbg" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from agentdbg.c import y\n"
        "def f():\n    from agentdbg.c import y\nfrom . import a\n")
    (tmp_path / "agentdbg" / "c.py").write_text("import agentdbg.b\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "agentdbg")
    monkeypatch.setattr(sys.modules[__name__], "MODULES", _modules())
    assert import_cycles() == [["agentdbg.a", "agentdbg.b"]]
    assert import_cycles(deferred=True) == [["agentdbg.a", "agentdbg.b", "agentdbg.c"]]


PACKAGES = sorted(module for module, path in MODULES.items()
                  if (path.name == "__init__.py" or module.count(".") == 1)
                  and module != "agentdbg.__main__")  # that one runs the command line


@pytest.mark.parametrize("module", PACKAGES)
def test_imports_alone(module):
    done = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
