"""One shared models module for every dialect, and in each dialect only what differs.

Each dialect's models are rendered in full, and so are the catalogue's own (every
wire name as the catalogue spells it, nothing reshaped).  ``share`` then writes
the shared module and, per dialect, a module of what that dialect changes:

- a definition whose text and references are the catalogue's is shared: the
  dialect module re-exports it;
- a class that differs only by its tag keeps its fields in a shared base
  (``_NameFields``), and each spelling of the tag is a class on that base: the
  catalogue's in the shared module, a dialect's own in the dialect module;
- a class whose text is the catalogue's but which refers to a definition the
  dialect has of its own (a ``Response`` holds the dialect's items) is generic in
  the shared module (``_NameOf``), and the dialect binds its own definitions;
- anything else (a class the dialect reshapes, the unions of its own classes) is
  written out in the dialect module.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass


@dataclass
class _Def:
    """A top-level definition of a models module: a class or a type alias."""

    name: str
    node: ast.stmt
    lines: list[str]  # the module's lines, for slicing out this definition's parts

    @functools.cached_property
    def text(self) -> str:
        return "".join(self.lines[self.node.lineno - 1 : self.node.end_lineno])

    @property
    def is_class(self) -> bool:
        return isinstance(self.node, ast.ClassDef)

    @functools.cached_property
    def refs(self) -> set[str]:
        return {n.id for n in ast.walk(self.node) if isinstance(n, ast.Name)} - {self.name}


def _parse(source: str) -> tuple[str, dict[str, _Def]]:
    """The preamble (header and imports) and the definitions of a models module, in order."""
    tree = ast.parse(source)
    # Lines as Python counts them: str.splitlines would also break at U+2028 and the
    # like, which a docstring may hold.
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z", source)
    defs: dict[str, _Def] = {}
    start = len(lines)
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            name = node.name
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            name = node.target.id
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
        else:
            if not defs and isinstance(node, ast.Import | ast.ImportFrom):
                continue
            raise AssertionError(f"a models module holds {ast.dump(node)[:60]}")
        start = min(start, node.lineno - 1)
        defs[name] = _Def(name, node, lines)
    return "".join(lines[:start]), defs


def _tag_var(node: ast.ClassDef) -> ast.AnnAssign | None:
    """The class variable that states a tagged class's tag (``type: ClassVar[...]``)."""
    kws = {k.arg: k.value for k in node.keywords}
    if "tag" not in kws or "tag_field" not in kws:
        return None
    field = ast.literal_eval(kws["tag_field"])
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and ast.unparse(stmt.target) == field:
            return stmt
    return None


def _untagged(d: _Def) -> str | None:
    """A tagged class as it is without its tag, to compare classes that differ only there."""
    node = d.node
    if not isinstance(node, ast.ClassDef) or _tag_var(node) is None:
        return None
    var = _tag_var(node)
    parts: list[ast.AST] = [*node.bases, *(k for k in node.keywords if k.arg != "tag")]
    parts += [s for s in node.body if s is not var]
    return "\n".join([node.name, *(ast.dump(p) for p in parts)])


def _class_line(name: str, bases: list[str], keywords: list[ast.keyword]) -> str:
    args = bases + [f"{k.arg}={ast.unparse(k.value)}" for k in keywords]
    return f"class {name}({', '.join(args)}):\n"


def _body(d: _Def, skip: ast.stmt | None = None, rename: dict[str, str] | None = None) -> str:
    """A class's body lines, ``skip`` left out and the names in ``rename`` renamed."""
    node = d.node
    assert isinstance(node, ast.ClassDef)
    first = node.body[0].lineno - 1
    lines = list(d.lines[first : node.end_lineno])
    for sub in sorted(
        (n for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in (rename or {})),
        key=lambda n: (n.lineno, -n.col_offset),
    ):
        assert rename is not None and sub.end_col_offset is not None
        i = sub.lineno - 1 - first
        raw = lines[i].encode("utf-8")  # ast offsets count UTF-8 bytes
        new = rename[sub.id].encode("utf-8")
        lines[i] = (raw[: sub.col_offset] + new + raw[sub.end_col_offset :]).decode("utf-8")
    if skip is not None:
        lo, hi = skip.lineno - 1 - first, (skip.end_lineno or skip.lineno) - first
        del lines[lo:hi]
    body = "".join(lines)
    return body if body.strip() else "    pass\n"


def _typevar(name: str) -> str:
    return f"_{name}T"


@dataclass
class _Plan:
    """What each definition of one dialect becomes."""

    shared: set[str]
    retag: list[str]
    generic: list[str]
    own: list[str]


def _plan(catalogue: dict[str, _Def], mine: dict[str, _Def]) -> _Plan:
    own = {n for n in mine if n not in catalogue or mine[n].text != catalogue[n].text}
    grown = True
    while grown:  # a definition that refers to one of the dialect's own is its own too
        grown = False
        for name in mine:
            if name not in own and mine[name].refs & own:
                own.add(name)
                grown = True
    plan = _Plan(set(mine) - own, [], [], [])
    for name in mine:
        if name not in own:
            continue
        d, k = mine[name], catalogue.get(name)
        if k is not None and d.is_class and d.text == k.text:
            plan.generic.append(name)
        elif (
            k is not None
            and not d.refs & own
            and _untagged(d) is not None
            and _untagged(d) == _untagged(k)
        ):
            plan.retag.append(name)
        else:
            plan.own.append(name)
    return plan


def share(
    module: str, catalogue_source: str, dialect_sources: dict[str, str]
) -> tuple[str, dict[str, str]]:
    """The shared module's source, and each dialect module's source (see the module doc);
    ``module`` is the name of both (``models`` or ``reading``)."""
    preamble, catalogue = _parse(catalogue_source)
    parsed = {name: _parse(src) for name, src in dialect_sources.items()}
    plans = {name: _plan(catalogue, defs) for name, (_, defs) in parsed.items()}
    retag = {n for p in plans.values() for n in p.retag}
    params: dict[str, list[str]] = {}
    for dialect, plan in plans.items():
        mine = parsed[dialect][1]
        for name in plan.generic:
            own = set(plan.own) | set(plan.retag) | set(plan.generic)
            found = [n.id for n in ast.walk(mine[name].node) if isinstance(n, ast.Name)]
            refs = [r for r in dict.fromkeys(found) if r in own and r != name]
            params[name] = list(dict.fromkeys(params.get(name, []) + refs))
    shared = {n for p in plans.values() for n in p.shared}
    clash = retag & set(params)
    assert not clash, f"reshaped both ways: {sorted(clash)}"
    return (
        _shared_module(preamble, catalogue, shared, retag, params),
        {
            d: _dialect_module(module, parsed[d], plans[d], params, set(catalogue))
            for d in dialect_sources
        },
    )


def _shared_module(
    preamble: str,
    catalogue: dict[str, _Def],
    shared: set[str],
    retag: set[str],
    params: dict[str, list[str]],
) -> str:
    typevars = sorted({_typevar(p) for ps in params.values() for p in ps})
    out = [preamble.rstrip("\n") + "\n"]
    if typevars:
        out.append("from typing import Generic, TypeVar\n\n")
        out += [f'{t} = TypeVar("{t}")\n' for t in typevars]
    out.append("\n\n")
    # every class the catalogue spells (the emitters' type parameters default to them)
    needed = shared | retag | set(params) | {n for n, d in catalogue.items() if d.is_class}
    grown = True
    while grown:  # and whatever those refer to
        grown = False
        for name in list(needed):
            more = catalogue[name].refs & set(catalogue) - needed
            needed |= more
            grown = grown or bool(more)
    for name, d in catalogue.items():
        node = d.node
        if name not in needed:
            continue
        if name in retag:
            assert isinstance(node, ast.ClassDef)
            var = _tag_var(node)
            assert var is not None
            keep = [k for k in node.keywords if k.arg not in ("tag", "tag_field")]
            tags = [k for k in node.keywords if k.arg in ("tag_field", "tag")]
            bases = [ast.unparse(b) for b in node.bases]
            out.append(_class_line(f"_{name}Fields", bases, keep) + _body(d, skip=var) + "\n\n")
            out.append(_class_line(name, [f"_{name}Fields"], tags) + _stmt(d, var) + "\n\n")
        elif name in params:
            assert isinstance(node, ast.ClassDef)
            ps = params[name]
            generic = f"Generic[{', '.join(_typevar(p) for p in ps)}]"
            bases = [ast.unparse(b) for b in node.bases] + [generic]
            rename = {p: _typevar(p) for p in ps}
            out.append(_class_line(f"_{name}Of", bases, node.keywords) + _body(d, rename=rename))
            out.append("\n\n" + _class_line(name, [f"_{name}Of[{', '.join(ps)}]"], []))
            out.append("    pass\n\n\n")
        else:
            out.append(d.text + "\n\n")
    return "".join(out).rstrip("\n") + "\n"


def _stmt(d: _Def, stmt: ast.stmt) -> str:
    return "".join(d.lines[stmt.lineno - 1 : stmt.end_lineno])


def _dialect_module(
    module: str,
    parsed: tuple[str, dict[str, _Def]],
    plan: _Plan,
    params: dict[str, list[str]],
    catalogue: set[str],
) -> str:
    preamble, mine = parsed
    out = [preamble.rstrip("\n") + "\n", f"from .._shared import {module} as _shared\n"]
    if not plan.retag and not plan.generic and not set(plan.own) & catalogue:
        # the dialect spells every class as the catalogue does: it takes them all
        out.append(f"from .._shared.{module} import *  # noqa: F403\n")
    else:  # one import a line: the names this dialect takes as they are, re-exported
        out += [f"from .._shared.{module} import {n} as {n}\n" for n in mine if n in plan.shared]
    out.append("\n\n")
    for name, d in mine.items():
        node = d.node
        if name in plan.own:
            out.append(d.text + "\n\n")
        elif name in plan.retag:
            assert isinstance(node, ast.ClassDef)
            var = _tag_var(node)
            assert var is not None
            tags = [k for k in node.keywords if k.arg in ("tag_field", "tag")]
            base = f"_shared._{name}Fields"
            out.append(_class_line(name, [base], tags) + _stmt(d, var) + "\n\n")
        elif name in plan.generic:
            base = f"_shared._{name}Of[{', '.join(params[name])}]"
            out.append(_class_line(name, [base], []) + "    pass\n\n\n")
    return "".join(out).rstrip("\n") + "\n"
