"""Rooms of a readable size: no module of the generator or the runtime past 700 lines, no
class past 400, no function past 80, and a docstring on every public class and function
of the generator.

Measured with ``ast`` (a definition runs from its first decorator to its last line);
the failure names each room past its limit.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREES = (ROOT / "generator", ROOT / "generated" / "responses_stream" / "_runtime")
LIMITS = {"module": 700, "class": 400, "function": 80}


def _files() -> Iterator[Path]:
    for tree in TREES:
        for path in sorted(tree.rglob("*.py")):
            if "__pycache__" not in path.parts:
                yield path


def rooms() -> dict[str, tuple[str, int]]:
    """Every module, class and function (by qualified name): name -> (kind, lines)."""
    out: dict[str, tuple[str, int]] = {}
    for path in _files():
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        out[rel] = ("module", len(text.splitlines()))
        todo: list[tuple[str, ast.AST]] = [(rel + ":", ast.parse(text))]
        while todo:
            prefix, owner = todo.pop()
            for node in ast.iter_child_nodes(owner):
                if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                    kind = "class" if isinstance(node, ast.ClassDef) else "function"
                    first = min([d.lineno for d in node.decorator_list] + [node.lineno])
                    assert node.end_lineno is not None
                    out[prefix + node.name] = (kind, node.end_lineno - first + 1)
                    todo.append((f"{prefix}{node.name}.", node))
                else:
                    todo.append((prefix, node))
    return out


def test_no_room_is_past_its_limit() -> None:
    found = rooms()
    over = {
        name: f"{kind} of {size} lines (at most {LIMITS[kind]})"
        for name, (kind, size) in found.items()
        if size > LIMITS[kind]
    }
    assert over == {}, "too large (split it by what it does):\n" + "\n".join(
        f"  {name}: {why}" for name, why in sorted(over.items())
    )


def test_every_public_definition_of_the_generator_has_a_docstring() -> None:
    missing = []
    for path in sorted((ROOT / "generator").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        owners: list[tuple[str, ast.AST]] = [("", tree)]
        while owners:
            prefix, owner = owners.pop()
            for node in getattr(owner, "body", []):
                if not isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                if node.name.startswith("_"):
                    continue
                if ast.get_docstring(node) is None:
                    missing.append(f"{path.relative_to(ROOT)}:{node.lineno} {prefix}{node.name}")
                if isinstance(node, ast.ClassDef):
                    owners.append((f"{prefix}{node.name}.", node))
    assert missing == [], "public definitions without a docstring:\n" + "\n".join(missing)


def test_the_measure_sees_every_room() -> None:
    """The walk reaches modules, classes, methods and nested functions of both trees."""
    found = rooms()
    validator = "generated/responses_stream/_runtime/consumers/validate/validator.py"
    assert found[validator][0] == "module"
    assert found[f"{validator}:StreamValidator"][0] == "class"
    assert found[f"{validator}:StreamValidator.feed_raw"][0] == "function"
    assert found["generator/compile.py:_Builder.build"][0] == "function"
    assert sum(kind == "function" for kind, _ in found.values()) > 1000
