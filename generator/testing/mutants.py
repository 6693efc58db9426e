"""Mutants of a generated emitters module: the sites where an operator applies, and the
source of the module with one of them applied (``mutate`` runs the tests against each).

Every site is found by walking the module's syntax tree in a fixed order, so that a
site's number names the same mutant on every run.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

INDEX_ATTRS = ("index", "output_index", "content_index", "summary_index")
SWAP_KEYWORDS = {"sequence_number", "output_index", "content_index", "summary_index", "item_id"}


@dataclass
class Site:
    """One place where one operator applies."""

    module: str  # the subpackage of the emitters module
    number: int  # position among the module's sites, in walk order
    line: int
    col: int
    operator: str
    detail: str
    owner: str  # the enclosing class, or "" at module level
    function: str
    equivalent: str = ""  # why the mutant cannot change behaviour, or ""


# -- finding mutation sites ---------------------------------------------------------
Apply = Callable[[ast.AST], None]


def _is_docstring(parents: list[ast.AST], node: ast.AST) -> bool:
    parent = parents[-1] if parents else None
    return isinstance(parent, ast.Expr) and isinstance(node, ast.Constant)


class _Finder:
    """Walks a module in a fixed order and yields (node path, operator, detail, apply)."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree

    def sites(self) -> Iterator[tuple[ast.AST, list[ast.AST], str, str, Apply]]:
        yield from self._walk(self.tree, [])

    def _walk(
        self, node: ast.AST, parents: list[ast.AST]
    ) -> Iterator[tuple[ast.AST, list[ast.AST], str, str, Apply]]:
        yield from self._at(node, parents)
        if isinstance(node, ast.JoinedStr):
            return  # the pieces of an f-string are not mutated one by one
        for child in ast.iter_child_nodes(node):
            yield from self._walk(child, [*parents, node])

    def _at(
        self, node: ast.AST, parents: list[ast.AST]
    ) -> Iterator[tuple[ast.AST, list[ast.AST], str, str, Apply]]:
        if isinstance(node, ast.Constant) and not _is_docstring(parents, node):
            yield from self._constant(node, parents)
        elif isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                flipped = _FLIP.get(type(op))
                if flipped is not None:
                    yield (
                        node,
                        parents,
                        "compare",
                        f"{type(op).__name__} -> {flipped.__name__}",
                        _set_op(i, flipped),
                    )
        elif isinstance(node, ast.BoolOp):
            other: type[ast.boolop] = ast.Or if isinstance(node.op, ast.And) else ast.And
            yield node, parents, "boolop", f"-> {other.__name__}", _set_attr("op", other)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield node, parents, "not", "drop not", _replace_with(lambda n: n.operand)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            if node.attr in INDEX_ATTRS:
                yield node, parents, "index", f"{ast.unparse(node)} -> 0", _zero
        elif isinstance(node, ast.Call):
            yield from self._call(node, parents)
        if isinstance(node, ast.stmt) and not isinstance(node, ast.Pass):
            yield from self._statement(node, parents)

    def _constant(
        self, node: ast.Constant, parents: list[ast.AST]
    ) -> Iterator[tuple[ast.AST, list[ast.AST], str, str, Apply]]:
        value = node.value
        if isinstance(value, bool):
            yield node, parents, "constant", f"{value} -> {not value}", _const(not value)
        elif isinstance(value, int):
            yield node, parents, "constant", f"{value} -> {value + 1}", _const(value + 1)
            if value != 0:
                yield node, parents, "constant", f"{value} -> 0", _const(0)
        elif isinstance(value, str):
            yield node, parents, "constant", f"{value!r} -> 'XX' + ...", _const("XX" + value)
        elif isinstance(value, bytes):
            yield node, parents, "constant", f"{value!r} -> b'XX' + ...", _const(b"XX" + value)

    def _call(
        self, node: ast.Call, parents: list[ast.AST]
    ) -> Iterator[tuple[ast.AST, list[ast.AST], str, str, Apply]]:
        if isinstance(node.func, ast.Name) and node.func.id == "next":
            yield node, parents, "index", "next(seq) -> 0 (a reused sequence number)", _zero
        names = [k.arg for k in node.keywords]
        for i, kw in enumerate(node.keywords):
            if kw.arg is None:
                continue
            yield node, parents, "keyword", f"drop {kw.arg}=", _drop_keyword(i)
            if kw.arg in SWAP_KEYWORDS and not _is_zero(kw.value):
                yield node, parents, "keyword", f"{kw.arg}=0", _keyword_zero(i)
            j = i + 1
            if j < len(names) and names[j] is not None:
                yield (
                    node,
                    parents,
                    "keyword",
                    f"swap {kw.arg}= and {names[j]}=",
                    _swap_keywords(i, j),
                )

    def _statement(
        self, node: ast.stmt, parents: list[ast.AST]
    ) -> Iterator[tuple[ast.AST, list[ast.AST], str, str, Apply]]:
        if not parents or isinstance(parents[-1], ast.Module | ast.ClassDef):
            return  # module and class bodies: definitions, not behaviour
        if isinstance(node, ast.AugAssign):
            yield node, parents, "augassign", f"remove {ast.unparse(node)}", _to_pass
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            text = ast.unparse(node.value.func)
            yield node, parents, "delete", f"delete {text}(...)", _to_pass
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Attribute | ast.Subscript) for t in node.targets
        ):
            target = ast.unparse(node.targets[0])
            yield node, parents, "delete", f"delete {target} = ...", _to_pass


_FLIP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}


def _is_zero(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value == 0


# Each operator returns a function that rewrites the node in place; a node that
# must become another kind of node is replaced through a marker the rewriter reads.
class _Replace:
    def __init__(self, make: Callable[[Any], ast.AST]) -> None:
        self.make = make


def _const(value: str | bytes | int) -> Apply:
    def apply(node: ast.AST) -> None:
        assert isinstance(node, ast.Constant)
        node.value = value
        node.kind = None

    return apply


def _set_op(i: int, op: type[ast.cmpop]) -> Apply:
    def apply(node: ast.AST) -> None:
        assert isinstance(node, ast.Compare)
        node.ops[i] = op()

    return apply


def _set_attr(name: str, op: type[ast.AST]) -> Apply:
    def apply(node: ast.AST) -> None:
        setattr(node, name, op())

    return apply


def _replace_with(make: Callable[[Any], ast.AST]) -> Apply:
    def apply(node: ast.AST) -> None:
        node._mutate_replace = _Replace(make)  # type: ignore[attr-defined]

    return apply


_zero = _replace_with(lambda n: ast.Constant(0))
_to_pass = _replace_with(lambda n: ast.Pass())


def _drop_keyword(i: int) -> Apply:
    def apply(node: ast.AST) -> None:
        assert isinstance(node, ast.Call)
        del node.keywords[i]

    return apply


def _keyword_zero(i: int) -> Apply:
    def apply(node: ast.AST) -> None:
        assert isinstance(node, ast.Call)
        node.keywords[i].value = ast.Constant(0)

    return apply


def _swap_keywords(i: int, j: int) -> Apply:
    def apply(node: ast.AST) -> None:
        assert isinstance(node, ast.Call)
        a, b = node.keywords[i], node.keywords[j]
        a.value, b.value = b.value, a.value

    return apply


class _Rewriter(ast.NodeTransformer):
    def generic_visit(self, node: ast.AST) -> ast.AST:
        replace = getattr(node, "_mutate_replace", None)
        if isinstance(replace, _Replace):
            return ast.copy_location(replace.make(node), node)
        return super().generic_visit(node)


def _owner(parents: list[ast.AST]) -> tuple[str, str]:
    cls = next((p.name for p in parents if isinstance(p, ast.ClassDef)), "")
    fn = next((p.name for p in reversed(parents) if isinstance(p, ast.FunctionDef)), "")
    return cls, fn


@dataclass
class _Context:
    """Facts about the whole module that decide equivalence."""

    unread: set[str]  # module-level names that nothing in the module reads
    local_annotations: set[int]  # ids of nodes inside annotations of attributes in functions


def _context(tree: ast.Module) -> _Context:
    assigned = {
        t.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    local = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef):
            for stmt in ast.walk(fn):
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Attribute):
                    local |= {id(n) for n in ast.walk(stmt.annotation)}
    return _Context(assigned - read - {"ITEM_EMITTERS"}, local)


def _equivalent(
    node: ast.AST, parents: list[ast.AST], operator: str, detail: str, ctx: _Context
) -> str:
    """Why a mutant cannot change what the emitters do, or ""."""
    chain = [*parents, node]
    if id(node) in ctx.local_annotations:
        return "annotation of an attribute inside a function: never evaluated"
    top = parents[1] if len(parents) > 1 and isinstance(parents[0], ast.Module) else None
    if isinstance(top, ast.Assign) and all(
        isinstance(t, ast.Name) and t.id in ctx.unread for t in top.targets
    ):
        return "a module constant nothing reads (an SSE prefix of an event with no fast path)"
    for p in chain:
        # ``if len(acc) >= 256: acc.compact()`` only bounds memory: compacting
        # joins the pieces and never changes the text.
        if isinstance(p, ast.If) and "compact()" in ast.unparse(p.body[0]):
            return "compaction threshold: compacting a text accumulator keeps its value"
    if operator == "delete" and "compact" in detail:
        return "compaction threshold: compacting a text accumulator keeps its value"
    return ""


def find_sites(module: str, source: str) -> list[Site]:
    """Every site where an operator applies in ``source``, in walk order."""
    tree = ast.parse(source)
    ctx = _context(tree)
    out = []
    for number, (node, parents, operator, detail, _) in enumerate(_Finder(tree).sites()):
        cls, fn = _owner(parents)
        out.append(
            Site(
                module,
                number,
                getattr(node, "lineno", 0),
                getattr(node, "col_offset", 0),
                operator,
                detail,
                cls,
                fn,
                _equivalent(node, parents, operator, detail, ctx),
            )
        )
    return out


def mutant_source(source: str, number: int) -> str:
    """The module with site ``number`` mutated, as source text."""
    tree = ast.parse(source)
    for n, (node, _, _, _, apply) in enumerate(_Finder(tree).sites()):
        if n == number:
            apply(node)
            break
    else:
        raise IndexError(number)
    tree = _Rewriter().visit(tree)
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def baseline_source(source: str) -> str:
    """The module unparsed without a mutation: what every mutant is compared with."""
    return ast.unparse(ast.parse(source)) + "\n"
