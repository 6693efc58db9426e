"""The code of the emitters' methods, built as Python syntax trees.

A transition's actions and emitted events become statements and expressions here: each is
an ``ast`` node put together from the spec's references (``params.x``, ``acc.x``,
``last.x``, ``field.x``, ``item``, ...) and unparsed once; the writer's ruff format gives
the text its final layout.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

import msgspec

from .catalog import ActionC, EmitC, MachineC, Param, PartC, TransitionC
from .reserved import ADDRESS_FIELDS
from .resources import runtime_constant
from .types import TypeRef
from .view_models import Frame, Method

if TYPE_CHECKING:
    from .views import DialectViews

# The code each fixed value source and address field reads.
FIXED_SOURCES = {
    "item": "snap",
    "part": "p.snapshot()",
    "response": "self.snapshot()",
    "now": "now()",
    "id": "self.item_id",
    "status": "self.status",
}
ADDRESS_SOURCES = {
    "item_id": "self.item_id",
    "output_index": "self.output_index",
    "content_index": "p.index",
    "summary_index": "p.index",
}


def code(text: str) -> ast.expr:
    """The syntax tree of one fixed expression (a name, an attribute, a call)."""
    return ast.parse(text, mode="eval").body


def call(func: str | ast.expr, *args: ast.expr, **keywords: ast.expr) -> ast.Call:
    """``func(*args, **keywords)``, keywords in the order given."""
    target = code(func) if isinstance(func, str) else func
    kws = [ast.keyword(arg=name, value=value) for name, value in keywords.items()]
    return ast.Call(func=target, args=list(args), keywords=kws)


def unparse(*nodes: ast.AST) -> str:
    """The source of an expression, or of statements one to a line."""
    if len(nodes) == 1 and isinstance(nodes[0], ast.expr):
        return ast.unparse(nodes[0])
    module = ast.Module(body=[n for n in nodes if isinstance(n, ast.stmt)], type_ignores=[])
    return ast.unparse(ast.fix_missing_locations(module))


def param_of(src: str | dict[str, str]) -> str | None:
    """The parameter a ``params.<name>`` source reads, else None."""
    if not isinstance(src, str):
        return None
    head, _, tail = src.partition(".")
    return tail if head == "params" else None


def strip_null(ref: TypeRef) -> TypeRef:
    """``ref`` without its null."""
    return TypeRef(ref.kind, False, ref.item, ref.values, ref.name)


def key_bytes(name: str) -> ast.Constant:
    """The bytes of ``,"name":``, as a payload's key follows the one before."""
    return ast.Constant(b"," + msgspec.json.encode(name) + b":")


def signature_params(signature: str) -> list[tuple[str, str]]:
    """A method signature's parameters past ``self``, with their annotations."""
    args = ast.parse(f"def f({signature}): pass").body[0]
    assert isinstance(args, ast.FunctionDef)
    every = args.args.args[1:] + args.args.kwonlyargs
    return [(a.arg, ast.unparse(a.annotation) if a.annotation else "Any") for a in every]


class MethodCode:
    """The methods of one machine (an item, a part of an item, or the envelope)."""

    def __init__(
        self, view: DialectViews, scope: str, owner: str, part: PartC | None = None
    ) -> None:
        self.v = view
        self.scope = scope
        self.owner = owner
        self.part = part

    def acc_attr(self, name: str) -> ast.expr:
        """Where an accumulator is kept: on the part's state or on the emitter."""
        return code(f"p.{name}" if self.scope == "part" else f"self._acc_{name}")

    def acc_value(self, name: str, kind: str) -> ast.expr:
        """An accumulator's value: a text joined, a list copied."""
        attr = self.acc_attr(name)
        if kind == "text":
            return call(ast.Attribute(value=attr, attr="value"))
        return call("list", attr)

    def acc_expr(self, name: str, kind: str) -> str:
        """The code of an accumulator's value."""
        return unparse(self.acc_value(name, kind))

    def source(self, src: str | dict[str, str], ref: TypeRef, machine: MachineC) -> ast.expr:
        """The expression of a value source, of type ``ref``."""
        if isinstance(src, dict):
            assert ref.kind == "named", "object sources need a named type"
            fields = {
                k: self.source(v, self.v.field_type(ref.name, k), machine) for k, v in src.items()
            }
            return call(self.v.model(ref.name), **fields)
        head, _, tail = src.partition(".")
        if head == "params":
            return ast.Name(id=tail)
        if head == "acc":
            return self.acc_value(tail, machine.context[tail].kind)
        if head == "last":
            return ast.BinOp(
                left=call("len", self.acc_attr(tail)), op=ast.Sub(), right=ast.Constant(1)
            )
        if head == "field":
            return ast.Attribute(value=ast.Name(id="self"), attr=tail)
        return code(FIXED_SOURCES[src])

    def event(self, emit: EmitC, machine: MachineC) -> str:
        """The constructor call of an emitted event's model."""
        ev = self.v.cat.events[emit.event]
        fields: dict[str, ast.expr] = {"sequence_number": code("next(seq)")}
        for addr in ADDRESS_FIELDS[ev.address]:
            fields[addr] = code(ADDRESS_SOURCES[addr])
        for b in self.v.bindings(emit):
            fields[b.name] = self.source(b.source, b.type, machine)
        return unparse(call(self.v.model(ev.cls), **fields))

    def frame(self, tr: TransitionC, machine: MachineC) -> Frame | None:
        """The ``Frame`` of a delta transition that emits one event, each of whose fields
        past its address is one of the transition's arguments; else None."""
        if tr.name != "delta" or len(tr.emits) != 1 or tr.emits[0].when:
            return None
        if tr.target in machine.finals:
            return None
        emit = tr.emits[0]
        ev = self.v.cat.events[emit.event]
        order = list(self.v.d.overrides.get(ev.name, ev.fields))  # the model's field order
        sources = {b.name: param_of(b.source) for b in self.v.bindings(emit)}
        if not order or sorted(order) != sorted(sources):
            return None
        args = [(name, sources[name]) for name in order]
        if any(param is None for _, param in args):
            return None
        fixed: list[ast.expr] = []
        for addr in ADDRESS_FIELDS[ev.address]:
            fixed += [key_bytes(addr), call("_encode", code(ADDRESS_SOURCES[addr]))]
        fixed.append(key_bytes(args[0][0]))
        pieces: list[ast.expr] = [
            ast.BinOp(left=ast.Constant(b"%d"), op=ast.Mod(), right=code("next(seq)")),
            ast.Name(id="fixed"),
            call("_encode", ast.Name(id=str(args[0][1]))),
        ]
        for name, param in args[1:]:
            pieces += [key_bytes(name), call("_encode", ast.Name(id=str(param)))]
        pieces.append(ast.Constant(b"}\n\n"))
        join = ast.Attribute(value=ast.Constant(b""), attr="join")
        return Frame(
            head=self.v.wire_constant("HEAD", ev.name),
            cache="p._frame" if self.scope == "part" else "self._frame",
            fixed=unparse(call(join, ast.Tuple(elts=fixed))),
            pieces=", ".join(unparse(p) for p in pieces),
        )

    def action(self, act: ActionC, machine: MachineC, params: dict[str, Param]) -> str:
        """The statements of one action: an append to an accumulator, a field set, a
        status set."""
        if act.op == "append":
            return unparse(*self._append(act, machine, params))
        if act.op == "set":
            return unparse(self._set(act, machine, params))
        param = param_of(act.value)
        value = ast.Name(id=param) if param is not None else ast.Constant(act.value)
        target = code('self.fields["status"]' if self.scope == "envelope" else "self.status")
        return unparse(ast.Assign(targets=[target], value=value))

    def _append(self, act: ActionC, machine: MachineC, params: dict[str, Param]) -> list[ast.stmt]:
        kind: str = machine.context[act.target].kind
        assert isinstance(act.source, str)
        value = self.source(act.source, TypeRef("any"), machine)
        attr = self.acc_attr(act.target)
        if kind == "text":
            # A TextAcc: list.append on the hot path, joined every COMPACT_EVERY deltas.
            every = runtime_constant("core/stream.py", "COMPACT_EVERY")
            assert isinstance(every, int)
            full = ast.Compare(
                left=call("len", attr), ops=[ast.GtE()], comparators=[ast.Constant(every)]
            )
            compact = ast.Expr(call(ast.Attribute(value=attr, attr="compact")))
            appended = ast.Expr(call(ast.Attribute(value=attr, attr="append"), value))
            return [appended, ast.If(test=full, body=[compact], orelse=[])]
        param = param_of(act.source)
        is_list = param is not None and params[param].type.kind == "list"
        verb = "extend" if kind == "list" and is_list else "append"
        return [ast.Expr(call(ast.Attribute(value=attr, attr=verb), value))]

    def _set(self, act: ActionC, machine: MachineC, params: dict[str, Param]) -> ast.stmt:
        ftype = self.v.stored_type(self.scope, self.owner, act.target)
        value = self.source(act.source, strip_null(ftype), machine)
        if self.scope == "envelope":
            target = ast.Subscript(value=code("self.fields"), slice=ast.Constant(act.target))
            return ast.Assign(targets=[target], value=value)
        assign = ast.Assign(
            targets=[ast.Attribute(value=ast.Name(id="self"), attr=act.target)], value=value
        )
        param = param_of(act.source)
        if param is not None and not ftype.nullable:
            if params[param].type.nullable or params[param].default is None:
                test = ast.Compare(left=value, ops=[ast.IsNot()], comparators=[ast.Constant(None)])
                return ast.If(test=test, body=[assign], orelse=[])
        return assign

    def method(self, tr: TransitionC, machine: MachineC, name: str) -> Method:
        """The view of one transition's method (and the frame of its ``_sse`` twin)."""
        params = {p.name: p for p in tr.params}
        sig, prelude = self.v.signature(tr.params, self.owner, tr.name)
        events = [e.event for e in tr.emits]
        return Method(
            name=name,
            doc=tr.doc
            or f"The {tr.name!r} transition: emits " + (", ".join(events) or "nothing") + ".",
            signature=sig,
            prelude=prelude,
            guard_states=tuple(tr.sources),
            target=tr.target,
            body=[self.action(a, machine, params) for a in tr.actions],
            emits=[self.event(e, machine) for e in tr.emits],
            emit_when=[tuple(e.when or ()) for e in tr.emits],
            events=events,
            returns=self.v.returns(events),
            final=tr.target in machine.finals,
            transition=tr.name,
            frame=self.frame(tr, machine),
            prefix=self.v.wire_constant("PREFIX", events[0]) if events else "",
            params=signature_params(sig),
        )
