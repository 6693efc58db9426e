"""Views of the catalog shaped for the templates: names, signatures and code lines.

The templates lay code out; this module decides what each line says, so the
templates stay free of logic beyond loops.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any

import msgspec

from .compile import (
    ADDRESS_FIELDS,
    ENVELOPE_OWN_FIELDS,
    ActionC,
    Binding,
    Catalog,
    DialectC,
    EmitC,
    ItemC,
    MachineC,
    Param,
    PartC,
    TransitionC,
    catalogue_dialect,
)
from .pyexpr import MUTABLE, constname, literal, needs_convert, pytype
from .resources import runtime_constant
from .schema import dialect_schema
from .types import TypeRef
from .writer import OutputError


@dataclass
class Frame:
    """A delta event's SSE frame put together from bytes, without its model (the ``_sse``
    twin of a delta transition).

    The payload's fields go out in the model's order: type and sequence number (``head``,
    a module constant), the address fields, which stay the same while the item or part is
    open (their bytes are made once and kept in ``cache``), then the transition's
    arguments.  Only for events whose other fields are all arguments.
    """

    head: str  # the module constant: SSE prefix, '{"type":...,"sequence_number":'
    cache: str  # where the address fields' bytes are kept ("p._frame", "self._frame")
    fixed: str  # the expression of those bytes, through the first argument's key
    pieces: str  # the expressions that follow the head, comma-separated


@dataclass
class Method:
    name: str
    doc: str
    signature: str
    prelude: list[str]
    guard_states: tuple[str, ...]
    target: str
    body: list[str]
    emits: list[str]  # event constructor expressions, in order
    emit_when: list[tuple[str, ...]]  # per emit: the source states it is limited to, or ()
    events: list[str]  # catalogue names, in order
    returns: str  # the return annotation: a list of exactly the event models it may emit
    closes_part: bool = False
    final: bool = False
    part: str = ""  # the part kind for part transitions
    transition: str = ""
    frame: Frame | None = None  # how the ``_sse`` twin frames its event without the model
    prefix: str = ""  # the SSE prefix of its first event: a module constant or the binding's
    params: list[tuple[str, str]] = field(default_factory=list)  # (name, annotation)

    @property
    def binds(self) -> bool:
        """Whether its code reads the dialect's binding (``b``)."""
        code = [*self.prelude, *self.body, *self.emits, self.signature]
        return any(reads_binding(c) for c in code)

    @property
    def sse_binds(self) -> bool:
        """Whether its ``_sse`` twin reads the binding (the twin has no events list)."""
        frame = self.frame
        code = [*self.prelude, *self.body, self.signature]
        code += [frame.head, frame.fixed, frame.pieces] if frame else [self.prefix, *self.emits]
        return any(reads_binding(c) for c in code)


@dataclass
class PartView:
    name: str
    cls: str
    state_cls: str
    index: str
    slot: str
    accs: list[tuple[str, str, str]]  # (name, annotation, initial value)
    snapshot: str
    methods: list[Method]
    framed: bool = False  # a method has a Frame: the state keeps its bytes
    annot: str = ""  # the annotation of its snapshot


@dataclass
class ItemView:
    type: str
    wire: str
    cls: str
    emitter: str
    factory: str
    id_prefix: str
    doc: str
    thin: bool
    init_params: list[str]
    stored: list[tuple[str, str, str]]  # (attribute, annotation, initial expression)
    status_type: str
    initial_status: str
    accs: list[tuple[str, str, str]]  # (name, annotation, initial value)
    slots: list[str]
    parts: list[PartView]
    snapshot: str
    methods: list[Method]
    initial: str
    finals: list[str]
    machine: MachineC
    events: list[str]
    framed: bool = False  # a method has a Frame: the emitter keeps its bytes
    annot: str = ""  # the annotation of its snapshot
    typevars: list[str] = field(default_factory=list)  # its type parameters

    @property
    def generic(self) -> str:
        """The class with its type parameters, as its factory returns it."""
        return f"{self.emitter}[{', '.join(self.typevars)}]" if self.typevars else self.emitter

    @property
    def any(self) -> str:
        """The class with ``Any`` for each type parameter."""
        params = ", ".join("Any" for _ in self.typevars)
        return f"{self.emitter}[{params}]" if self.typevars else self.emitter


@dataclass
class EnvelopeView:
    fields: list[tuple[str, str]]  # (name, default expression)
    params: list[tuple[str, str]]  # (keyword argument of the emitter, annotation)
    echo: list[str]
    methods: list[Method]
    initial: str
    snapshot: str
    annot: str = ""  # the annotation of the Response snapshot
    hooks: list[Hook] = field(default_factory=list)


@dataclass
class Hook:
    """An event of the envelope that a dialect spells its own way: the shared emitter
    calls this method, and a dialect that spells the event otherwise overrides it."""

    name: str
    params: list[tuple[str, str]]  # (name, annotation)
    returns: str
    expr: str

    @property
    def binds(self) -> bool:
        """Whether its expression reads the dialect's binding."""
        return reads_binding(self.expr)


@dataclass(frozen=True)
class Naming:
    """How the emitters, written once for every dialect, name what a dialect changes.

    A model class in ``varying`` and the SSE prefix and head of an event in
    ``renamed`` are read from the dialect's binding (``b``); everything else is the
    shared models module (``c``) or a module constant.
    """

    dialects: tuple[str, ...] = ()
    varying: frozenset[str] = frozenset()
    renamed: frozenset[str] = frozenset()
    respelled: tuple[str, ...] = ()  # the dialects that spell something otherwise


@dataclass
class DialectView:
    name: str
    doc: str
    items: list[ItemView]
    envelope: EnvelopeView
    constants: list[tuple[str, str]] = field(default_factory=list)
    typing_names: list[str] = field(default_factory=list)  # what the emitters import
    heads: list[tuple[str, str]] = field(default_factory=list)  # Frame heads: name, text
    bound_models: list[str] = field(default_factory=list)  # the binding's model classes
    bound_wire: list[tuple[str, str, str]] = field(default_factory=list)  # (field, kind, event)
    aliases: list[tuple[str, str]] = field(default_factory=list)  # (dialect, its models' alias)
    respelled: list[str] = field(default_factory=list)  # dialects not spelled as the catalogue
    prefixes: list[tuple[str, str]] = field(default_factory=list)  # (constant, wire): shared ones

    @property
    def typevars(self) -> list[str]:
        """The ResponseEmitter's type parameters: one per class the binding holds."""
        return [f"_T_{cls}" for cls in self.bound_models]


class _Ctx:
    """Code generation for one machine (item, part of an item, or envelope)."""

    def __init__(
        self, view: DialectViews, scope: str, owner: str, part: PartC | None = None
    ) -> None:
        self.v = view
        self.scope = scope
        self.owner = owner
        self.part = part

    def acc_expr(self, name: str, kind: str) -> str:
        holder = "p" if self.scope == "part" else "self"
        attr = f"{holder}.{name}" if self.scope == "part" else f"self._acc_{name}"
        return f"{attr}.value()" if kind == "text" else f"list({attr})"

    def acc_attr(self, name: str) -> str:
        return f"p.{name}" if self.scope == "part" else f"self._acc_{name}"

    def source(self, src: str | dict[str, str], ref: TypeRef, machine: MachineC) -> str:
        if isinstance(src, dict):
            assert ref.kind == "named", "object sources need a named type"
            args = ", ".join(
                f"{k}={self.source(v, self.v.field_type(ref.name, k), machine)}"
                for k, v in src.items()
            )
            return f"{self.v.model(ref.name)}({args})"
        head, _, tail = src.partition(".")
        if head == "params":
            return tail
        if head == "acc":
            return self.acc_expr(tail, machine.context[tail].kind)
        if head == "last":
            return f"len({self.acc_attr(tail)}) - 1"
        if head == "field":
            return f"self.{tail}"
        if src == "item":
            return "snap"
        if src == "part":
            return "p.snapshot()"
        if src == "response":
            return "self.snapshot()"
        if src == "now":
            return "now()"
        if src == "id":
            return "self.item_id"
        if src == "status":
            return "self.status"
        raise AssertionError(src)

    def event(self, emit: EmitC, machine: MachineC) -> str:
        ev = self.v.cat.events[emit.event]
        args = ["sequence_number=next(seq)"]
        for addr in ADDRESS_FIELDS[ev.address]:
            args.append(f"{addr}={_ADDRESS_EXPR[addr]}")
        bindings = self.v.bindings(emit)
        for b in bindings:
            args.append(f"{b.name}={self.source(b.source, b.type, machine)}")
        return f"{self.v.model(ev.cls)}({', '.join(args)})"

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
        sources = {b.name: b.source for b in self.v.bindings(emit)}
        if not order or sorted(order) != sorted(sources):
            return None
        args = []
        for name in order:
            src = sources[name]
            if not isinstance(src, str) or not src.startswith("params."):
                return None
            args.append((name, src[len("params.") :]))
        fixed = []
        for addr in ADDRESS_FIELDS[ev.address]:
            fixed += [_key_bytes(addr), f"_encode({_ADDRESS_EXPR[addr]})"]
        fixed.append(_key_bytes(args[0][0]))
        pieces = ['b"%d" % next(seq)', "fixed", f"_encode({args[0][1]})"]
        for name, param in args[1:]:
            pieces += [_key_bytes(name), f"_encode({param})"]
        pieces.append(repr(b"}\n\n"))
        head = self.v.wire_constant("HEAD", ev.name)
        return Frame(
            head=head,
            cache="p._frame" if self.scope == "part" else "self._frame",
            fixed=f'b"".join(({", ".join(fixed)}))',
            pieces=", ".join(pieces),
        )

    def action(self, act: ActionC, machine: MachineC, params: dict[str, Param]) -> str:
        if act.op == "append":
            kind: str = machine.context[act.target].kind
            src = act.source
            assert isinstance(src, str)
            value = self.source(src, TypeRef("any"), machine)
            is_list = src.startswith("params.") and params[src[7:]].type.kind == "list"
            attr = self.acc_attr(act.target)
            if kind == "text":
                # A TextAcc: list.append on the hot path, joined every COMPACT_EVERY deltas.
                return (
                    f"{attr}.append({value})\n"
                    f"if len({attr}) >= {runtime_constant('core/stream.py', 'COMPACT_EVERY')}:\n    {attr}.compact()"
                )
            verb = "extend" if kind == "list" and is_list else "append"
            return f"{attr}.{verb}({value})"
        if act.op == "set":
            ftype = self.v.stored_type(self.scope, self.owner, act.target)
            value = self.source(act.source, _strip_null(ftype), machine)
            if self.scope == "envelope":
                return f"self.fields[{literal(act.target)}] = {value}"
            src = act.source
            if isinstance(src, str) and src.startswith("params.") and not ftype.nullable:
                if params[src[7:]].type.nullable or params[src[7:]].default is None:
                    return f"if {value} is not None:\n    self.{act.target} = {value}"
            return f"self.{act.target} = {value}"
        value = act.value[7:] if act.value.startswith("params.") else literal(act.value)
        if self.scope == "envelope":
            return f'self.fields["status"] = {value}'
        return f"self.status = {value}"

    def method(self, tr: TransitionC, machine: MachineC, name: str) -> Method:
        params = {p.name: p for p in tr.params}
        sig, prelude = self.v.signature(tr.params, self.owner, tr.name)
        body = [self.action(a, machine, params) for a in tr.actions]
        events = [e.event for e in tr.emits]
        emits = [self.event(e, machine) for e in tr.emits]
        returns = self.v.returns(events)
        final = tr.target in machine.finals
        meth = Method(
            name=name,
            doc=tr.doc
            or f"The {tr.name!r} transition: emits " + (", ".join(events) or "nothing") + ".",
            signature=sig,
            prelude=prelude,
            guard_states=tuple(tr.sources),
            target=tr.target,
            body=body,
            emits=emits,
            emit_when=[tuple(e.when or ()) for e in tr.emits],
            events=events,
            returns=returns,
            final=final,
            transition=tr.name,
            frame=self.frame(tr, machine),
            prefix=self.v.wire_constant("PREFIX", events[0]) if events else "",
            params=_params(sig),
        )
        return meth


_ADDRESS_EXPR = {
    "item_id": "self.item_id",
    "output_index": "self.output_index",
    "content_index": "p.index",
    "summary_index": "p.index",
}


_BINDS = re.compile(r"(?<![\w.])b\.")


def reads_binding(code: str) -> bool:
    """Whether a piece of generated code reads the dialect's binding (``b``)."""
    return bool(_BINDS.search(code))


def _params(signature: str) -> list[tuple[str, str]]:
    """A method signature's parameters past ``self``, with their annotations."""
    args = ast.parse(f"def f({signature}): pass").body[0]
    assert isinstance(args, ast.FunctionDef)
    every = args.args.args[1:] + args.args.kwonlyargs
    return [(a.arg, ast.unparse(a.annotation) if a.annotation else "Any") for a in every]


def _key_bytes(name: str) -> str:
    """The bytes literal of ``,"name":``, as a payload's key follows the one before."""
    return repr(b"," + msgspec.json.encode(name) + b":")


def _acc(name: str, kind: str) -> tuple[str, str, str]:
    """An accumulator's (name, annotation, initial value): text in a TextAcc, lists as lists."""
    if kind == "text":
        return (name, "TextAcc", "TextAcc()")
    return (name, "list[Any]", "[]")


def _alias(dialect: str) -> str:
    """The name the shared emitters give a dialect's models module (for annotations)."""
    return f"_{dialect}_models"


def _any(name: str) -> str:
    return "Any"


def _named(ref: TypeRef) -> set[str]:
    """The model classes a type refers to."""
    if ref.kind == "named":
        return {ref.name}
    return _named(ref.item) if ref.kind == "list" and ref.item is not None else set()


def _strip_null(ref: TypeRef) -> TypeRef:
    return TypeRef(ref.kind, False, ref.item, ref.values, ref.name)


class DialectViews:
    """Builds the views of every template for one dialect."""

    def __init__(self, cat: Catalog, dialect: DialectC, naming: Naming | None = None) -> None:
        self.cat = cat
        self.d = dialect
        self.naming = naming or Naming(tuple(cat.dialects))
        self.constants: dict[str, str] = {}
        self.typing_names = {"Any", "Literal"}
        self.heads: dict[str, str] = {}  # Frame heads: constant name -> its text
        self.bound_models: set[str] = set()
        self.typevars: set[str] = set()  # those the class being built uses
        self.bound_wire: dict[str, tuple[str, str]] = {}  # binding field -> (kind, event)

    def model(self, cls: str) -> str:
        """The expression of a model class: the shared one, or the dialect's own."""
        if cls in self.naming.varying:
            self.bound_models.add(cls)
            return f"b.{cls}"
        return f"c.{cls}"

    def annot(self, cls: str) -> str:
        """The annotation of a model class: the shared one, or, for a class the dialects
        spell differently, a type variable (``_T_<class>``) of the emitter class, which
        each dialect binds to its own class."""
        if cls in self.naming.varying:
            self.bound_models.add(cls)
            self.typevars.add(f"_T_{cls}")
            return f"_T_{cls}"
        return f"c.{cls}"

    def param_annot(self, cls: str) -> str:
        """The annotation of a model class in a parameter: the shared one only (a class
        a dialect changes has no type at run time for the runtime's argument checks)."""
        if cls in self.naming.varying:
            raise OutputError(f"a parameter has the type {cls}, which a dialect changes")
        return f"c.{cls}"

    def wire_constant(self, kind: str, event: str) -> str:
        """The SSE prefix (``PREFIX``) or frame head (``HEAD``) of ``event``: a module
        constant, or the binding's where a dialect renames the event."""
        name = f"{kind}_{constname(event)}"
        if event in self.naming.renamed:
            self.bound_wire[name] = (kind, event)
            return f"b.{name}"
        if kind == "HEAD":
            wire = self.d.event_type(event)
            tag = msgspec.json.encode(wire).decode()  # as the model's encoder writes it
            self.heads[f"_{name}"] = f'event: {wire}\ndata: {{"type":{tag},"sequence_number":'
        return f"_{name}"

    def returns(self, events: list[str]) -> str:
        """``list[m.A | m.B]``: the models of ``events``, each once, in order of appearance."""
        classes = list(dict.fromkeys(self.annot(self.cat.events[e].cls) for e in events))
        if not classes:
            self.typing_names.add("Never")
            return "list[Never]"
        return f"list[{' | '.join(classes)}]"

    def field_type(self, type_name: str, field_name: str) -> TypeRef:
        if type_name in self.cat.type_fields:
            return self.cat.type_fields[type_name][field_name]
        return TypeRef("any")

    def stored_type(self, scope: str, owner: str, name: str) -> TypeRef:
        if scope == "envelope":
            return next(f.type for f in self.cat.response_fields if f.name == name)
        item = self.cat.items[owner]
        return next(f.type for f in item.fields if f.name == name)

    def bindings(self, emit: EmitC) -> list[Binding]:
        override = self.d.overrides.get(emit.event)
        if override is None:
            return emit.bindings
        return [
            Binding(name, ref, src if src is not None else f"params.{name}")
            for name, (ref, src) in override.items()
        ]

    def constant(self, value: Any, ref: TypeRef) -> str:
        """A module-level constant holding a converted default value."""
        if value in ([], {}):  # empty: any dialect's type converts it the same
            expr = f"msgspec.convert({literal(value)}, type={pytype(_strip_null(ref), _any)})"
        else:
            if any(n in self.naming.varying for n in _named(ref)):
                raise AssertionError(f"a default of {ref} differs between dialects")
            expr = f"msgspec.convert({literal(value)}, type={pytype(_strip_null(ref), 'c')})"
        name = f"_DEFAULT_{len(self.constants)}"
        for existing, e in self.constants.items():
            if e == expr:
                return existing
        self.constants[name] = expr
        return name

    def signature(self, params: list[Param], owner: str, tr: str) -> tuple[str, list[str]]:
        args = ["self"]
        prelude: list[str] = []
        for p in sorted(params, key=lambda p: not p.required):
            annot = pytype(p.type, self.param_annot)
            if p.required:
                args.append(f"{p.name}: {annot}")
                continue
            if p.default is None:
                args.append(f"{p.name}: {annot if p.type.nullable else annot + ' | None'} = None")
            elif isinstance(p.default, MUTABLE) or needs_convert(p.type):
                args.append(f"{p.name}: {annot} | None = None")
                if p.default == [] or not needs_convert(p.type):
                    value = literal(p.default)
                else:
                    value = self.constant(p.default, p.type)
                    if isinstance(p.default, list):
                        value = f"list({value})"
                prelude.append(f"if {p.name} is None:\n    {p.name} = {value}")
            else:
                args.append(f"{p.name}: {annot} = {literal(p.default)}")
        return ", ".join(args), prelude

    # -- items ----------------------------------------------------------------
    def item(self, item: ItemC) -> ItemView:
        self.typevars = set()
        cls = item.cls
        factory = item.type.replace(":", "_").replace("-", "_")
        ctx = _Ctx(self, "item", item.type)
        init_params: list[str] = []
        stored: list[tuple[str, str, str]] = []
        accs = [_acc(n, a.kind) for n, a in item.machine.context.items()]
        snap_args = ["id=self.item_id", "status=self.status"]
        for f in item.fields:
            spec = f.spec
            if spec.acc is not None:
                kind = item.machine.context[spec.acc].kind
                snap_args.append(f"{f.name}={ctx.acc_expr(spec.acc, kind)}")
                continue
            if spec.slot is not None:
                snap_args.append(f"{f.name}=list(self._slot_{spec.slot})")
                continue
            annot = pytype(f.type, self.param_annot)
            if "init" in spec.model_fields_set:
                value = (
                    self.constant(spec.init, f.type)
                    if needs_convert(f.type) and spec.init is not None
                    else literal(spec.init)
                )
                stored.append((f.name, annot, f"{value}"))
            elif "default" in spec.model_fields_set:
                if spec.default is None:
                    opt = annot if f.type.nullable else f"{annot} | None"
                    init_params.append(f"{f.name}: {opt} = None")
                    stored.append((f.name, opt, f.name))
                else:
                    init_params.append(f"{f.name}: {annot} | None = None")
                    stored.append(
                        (
                            f.name,
                            annot,
                            f"{f.name} if {f.name} is not None else {literal(spec.default)}",
                        )
                    )
            else:
                init_params.append(f"{f.name}: {annot}")
                stored.append((f.name, annot, f.name))
            if spec.optional:
                snap_args.append(f"{f.name}=self.{f.name} if self.{f.name} is not None else UNSET")
            else:
                snap_args.append(f"{f.name}=self.{f.name}")
        snapshot = f"{self.model(cls)}({', '.join(snap_args)})"
        methods = []
        # What closing an open part (its "done") emits, before a final transition's own events.
        closing: list[str] = []
        for kinds in item.slots.values():
            for name in kinds:
                done = self.cat.parts[name].machine.transitions.get("done")
                closing += [e.event for e in done.emits] if done else []
        for tr in item.machine.transitions.values():
            meth = ctx.method(tr, item.machine, tr.name)
            meth.closes_part = meth.final and bool(item.slots)
            if meth.closes_part:
                meth.returns = self.returns(closing + meth.events)
            methods.append(meth)
        parts = []
        for slot, kinds in item.slots.items():
            for part_name in kinds:
                parts.append(self.part(self.cat.parts[part_name], slot, item.type))
        return ItemView(
            type=item.type,
            wire=self.d.item_type(item.type),
            cls=cls,
            emitter=item.emitter,
            factory=factory,
            id_prefix=item.id_prefix,
            doc=item.doc,
            thin=item.thin,
            init_params=init_params,
            stored=stored,
            status_type="Literal[" + ", ".join(literal(x) for x in item.statuses) + "]",
            initial_status=literal(
                "in_progress" if "in_progress" in item.statuses else item.statuses[0]
            ),
            accs=accs,
            slots=list(item.slots),
            parts=parts,
            snapshot=snapshot,
            methods=methods,
            initial=item.machine.initial,
            finals=item.machine.finals,
            machine=item.machine,
            events=item.events,
            framed=any(m.frame for m in methods),
            annot=self.annot(cls),
            typevars=sorted(self.typevars),
        )

    def part(self, part: PartC, slot: str, owner: str) -> PartView:
        ctx = _Ctx(self, "part", owner, part)
        cls = part.cls
        args = []
        for f in part.fields:
            if f.spec.acc is not None:
                kind = part.machine.context[f.spec.acc].kind
                args.append(f"{f.name}={ctx.acc_expr(f.spec.acc, kind).replace('p.', 'self.')}")
            else:
                args.append(f"{f.name}={literal(f.spec.init)}")
        methods = []
        for tr in part.machine.transitions.values():
            meth = ctx.method(tr, part.machine, f"{part.name}_{tr.name}")
            meth.part = part.name
            methods.append(meth)
        return PartView(
            name=part.name,
            cls=cls,
            state_cls=f"_{cls}State",
            index=part.index,
            slot=slot,
            accs=[_acc(n, a.kind) for n, a in part.machine.context.items()],
            snapshot=f"{self.model(cls)}({', '.join(args)})",
            methods=methods,
            framed=any(m.frame for m in methods),
            annot=self.annot(cls),
        )

    # -- envelope and dialect -------------------------------------------------
    def envelope(self) -> EnvelopeView:
        ctx = _Ctx(self, "envelope", "envelope")
        fields = []
        for f in self.cat.response_fields:
            default = f.spec.default
            if default is None:
                expr = "None"
            elif needs_convert(f.type):
                expr = self.constant(default, f.type)
            else:
                expr = literal(default)
            fields.append((f.name, expr))
        methods = [
            ctx.method(tr, self.cat.envelope, tr.name)
            for tr in self.cat.envelope.transitions.values()
        ]
        # Every field but those the emitter fills itself can be given to it.
        params = [
            (f.name, pytype(f.type, self.param_annot))
            for f in self.cat.response_fields
            if f.name not in ENVELOPE_OWN_FIELDS
        ]
        return EnvelopeView(
            fields=fields,
            params=params,
            echo=[f.name for f in self.cat.response_fields if f.spec.echo],
            methods=methods,
            initial=self.cat.envelope.initial,
            snapshot=self.model("Response"),
            annot=self.annot("Response"),
        )

    def build(self) -> DialectView:
        items = [self.item(i) for i in self.cat.items.values()]
        env = self.envelope()
        return DialectView(
            name=self.d.name,
            doc=self.d.doc,
            items=items,
            envelope=env,
            constants=sorted(self.constants.items()),
            typing_names=sorted(self.typing_names),
            heads=sorted(self.heads.items()),
            bound_models=sorted(self.bound_models),
            respelled=list(self.naming.respelled),
            bound_wire=sorted((f, k, e) for f, (k, e) in self.bound_wire.items()),
            aliases=[(d, _alias(d)) for d in self.naming.dialects],
            prefixes=[
                (f"_PREFIX_{constname(n)}", self.d.event_type(n))
                for n in self.cat.events
                if n not in self.naming.renamed
            ],
        )


def naming_of(cat: Catalog) -> Naming:
    """What the dialects change against the catalogue's own spelling: the model classes
    whose schema differs in some dialect (and those that refer to one), and the events
    some dialect renames."""
    catalogue = catalogue_dialect(cat)
    base = dialect_schema(cat, catalogue)["$defs"]
    varying: set[str] = set()
    respelled = []
    for name, dialect in sorted(cat.dialects.items()):
        defs = dialect_schema(cat, dialect)["$defs"]
        differs = {n for n in set(defs) | set(base) if defs.get(n) != base.get(n)}
        renames = any(dialect.event_type(e) != catalogue.event_type(e) for e in cat.events)
        if differs or renames:
            respelled.append(name)
        varying |= differs
    refs = {n: set(re.findall(r'"#/\$defs/([^"]+)"', json.dumps(d))) for n, d in base.items()}
    grown = True
    while grown:
        grown = False
        for name, used in refs.items():
            if name not in varying and used & varying:
                varying.add(name)
                grown = True
    renamed = {
        e
        for e in cat.events
        for d in cat.dialects.values()
        if d.event_type(e) != catalogue.event_type(e)
    }
    return Naming(
        tuple(sorted(cat.dialects)), frozenset(varying), frozenset(renamed), tuple(respelled)
    )


def dialect_view(cat: Catalog, dialect: DialectC, naming: Naming | None = None) -> DialectView:
    return DialectViews(cat, dialect, naming).build()


def emitter_views(
    cat: Catalog,
) -> tuple[DialectView, dict[str, DialectView], dict[str, list[Hook]]]:
    """The view of the emitters every dialect shares, each dialect's own view, and the
    envelope hooks each dialect overrides (the events it spells its own way).

    The shared view is the catalogue's spelling; an envelope event whose expression
    differs in some dialect becomes a hook method.
    """
    naming = naming_of(cat)
    maker = DialectViews(cat, catalogue_dialect(cat), naming)
    base = maker.build()
    own = {name: dialect_view(cat, d, naming) for name, d in sorted(cat.dialects.items())}
    hooks: dict[str, list[Hook]] = {name: [] for name in own}
    for i, meth in enumerate(base.envelope.methods):
        for k, expr in enumerate(meth.emits):
            spelled = {name: v.envelope.methods[i].emits[k] for name, v in own.items()}
            if all(e == expr for e in spelled.values()):
                continue
            every = [expr, *spelled.values()]
            used = [(n, a) for n, a in meth.params if any(re.search(rf"\b{n}\b", e) for e in every)]
            cls = cat.events[meth.events[k]].cls
            hook = Hook(f"_emit_{meth.name}_{k}", used, maker.annot(cls), expr)
            call = f"self.{hook.name}({', '.join(n for n, _ in used)})"
            base.envelope.hooks.append(hook)
            for name, view in own.items():
                view.envelope.methods[i].emits[k] = call
                if spelled[name] != expr:  # returns the dialect module's own class
                    hooks[name].append(Hook(hook.name, used, f"models.{cls}", spelled[name]))
            meth.emits[k] = call
    for view in own.values():  # every dialect's emitters module has the same hook methods
        view.envelope.hooks = base.envelope.hooks
    return base, own, hooks
