"""The runtime's layers, as a contract: imports point down, and nothing imports in a circle.

The hand-written runtime (``generated/responses_stream/_runtime/``, copied into every
other package the generator writes) has five floors: ``core`` at the bottom; ``inputs``
and ``consumers`` on it, neither importing the other; ``gateway`` over them, and the
conformance kit (``check``) over ``consumers``; ``cli`` on top.  Every import counts,
those inside functions too.  The benchmark suite is held to the no-circle rule as well.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = ROOT / "generated" / "responses_stream" / "_runtime"
# layer -> the layers it may import (itself included)
MAY_IMPORT = {
    "core": {"core"},
    "inputs": {"inputs", "core"},
    "consumers": {"consumers", "core"},
    "gateway": {"gateway", "inputs", "consumers", "core", "version"},
    "check": {"check", "consumers", "core", "version"},
    "cli": {"cli", "gateway", "check", "inputs", "consumers", "core", "version"},
    "version": {"version"},
    "__init__": {"__init__"},
}


def modules(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name (``package`` first) -> file, for every module under ``root``."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imported(name: str, path: Path, known: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """The known modules ``name`` (at ``path``) imports, with the line of each import."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                stem = ".".join([*base, *([node.module] if node.module else [])])
            else:
                stem = node.module or ""
            targets = [stem] + [f"{stem}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            if target in known and target != name:
                yield target, node.lineno


def graph(root: Path, package: str) -> dict[str, dict[str, int]]:
    known = modules(root, package)
    return {name: dict(imported(name, path, known)) for name, path in known.items()}


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """Every import circle, as the chain of modules that closes it (Tarjan's SCCs)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in edges[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_runtime_is_in_rooms_named_for_their_jobs() -> None:
    top = sorted(p.name for p in RUNTIME.iterdir() if not p.name.startswith("__pycache__"))
    assert top == [
        "__init__.py",
        "check",
        "cli",
        "consumers",
        "core",
        "gateway",
        "inputs",
        "version.py",
    ]
    for room in ("core", "inputs", "consumers", "gateway", "gateway/store", "check", "cli"):
        doc = ast.get_docstring(ast.parse((RUNTIME / room / "__init__.py").read_text()))
        assert doc and len(doc.split()) >= 15, f"{room}/__init__.py needs a docstring of its job"


def test_imports_point_down() -> None:
    wrong = [
        f"{module} imports {target} (line {line}): {layer(module)} may not import {layer(target)}"
        for module, targets in graph(RUNTIME, "runtime").items()
        for target, line in targets.items()
        if layer(target) not in MAY_IMPORT[layer(module)]
    ]
    assert wrong == []


@pytest.mark.parametrize(("root", "package"), [(RUNTIME, "runtime"), (ROOT / "benchmarks", "b")])
def test_no_import_circle(root: Path, package: str) -> None:
    assert cycles(graph(root, package)) == []


def test_the_checks_see_what_they_check() -> None:
    """The graph has the edges it should, and a circle is found when there is one."""
    edges = graph(RUNTIME, "runtime")
    assert "runtime.core.processor" in edges["runtime.inputs.chat.general"]
    assert "runtime.core.wire" in edges["runtime.core.processor"]  # from . import wire
    assert "runtime.gateway.store.sqlite" in edges["runtime.gateway.store"]  # in a function
    assert cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {}}) == [["a", "b", "c"]]
