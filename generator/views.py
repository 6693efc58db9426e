"""Views of the catalog shaped for the templates: names, signatures and code lines.

The templates lay code out; this module decides what each line says, so the
templates stay free of logic beyond loops.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

import msgspec

from .catalog import (
    Binding,
    Catalog,
    DialectC,
    EmitC,
    ItemC,
    Param,
    PartC,
    catalogue_dialect,
)
from .method_code import MethodCode, call, code, strip_null, unparse
from .pyexpr import MUTABLE, constname, literal, needs_convert, pytype
from .reserved import ENVELOPE_OWN_FIELDS
from .schema import dialect_schema
from .types import TypeRef
from .view_models import (
    DialectView,
    EnvelopeView,
    Hook,
    ItemView,
    Method,
    Naming,
    PartView,
)
from .writer import OutputError


def _or_else(value: ast.expr, default: ast.expr) -> ast.expr:
    """``value if value is not None else default``."""
    test = ast.Compare(left=value, ops=[ast.IsNot()], comparators=[ast.Constant(None)])
    return ast.IfExp(test=test, body=value, orelse=default)


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
        """The type of a named type's field."""
        if type_name in self.cat.type_fields:
            return self.cat.type_fields[type_name][field_name]
        return TypeRef("any")

    def stored_type(self, scope: str, owner: str, name: str) -> TypeRef:
        """The type of a field an item, part or the envelope stores."""
        if scope == "envelope":
            return next(f.type for f in self.cat.response_fields if f.name == name)
        item = self.cat.items[owner]
        return next(f.type for f in item.fields if f.name == name)

    def bindings(self, emit: EmitC) -> list[Binding]:
        """The fields of an emitted event with their sources, as the dialect spells the event."""
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
            expr = f"msgspec.convert({literal(value)}, type={pytype(strip_null(ref), _any)})"
        else:
            if any(n in self.naming.varying for n in _named(ref)):
                raise AssertionError(f"a default of {ref} differs between dialects")
            expr = f"msgspec.convert({literal(value)}, type={pytype(strip_null(ref), 'c')})"
        name = f"_DEFAULT_{len(self.constants)}"
        for existing, e in self.constants.items():
            if e == expr:
                return existing
        self.constants[name] = expr
        return name

    def signature(self, params: list[Param], owner: str, tr: str) -> tuple[str, list[str]]:
        """A transition's method signature, and the lines that convert its arguments first."""
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
        """The view of one item type's emitter."""
        self.typevars = set()
        ctx = MethodCode(self, "item", item.type)
        init_params, stored, snapshot = self._item_state(item, ctx)
        methods = self._item_methods(item, ctx)
        parts = [
            self.part(self.cat.parts[part_name], slot, item.type)
            for slot, kinds in item.slots.items()
            for part_name in kinds
        ]
        cls = item.cls
        factory = item.type.replace(":", "_").replace("-", "_")
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
            accs=[_acc(n, a.kind) for n, a in item.machine.context.items()],
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

    def _item_state(
        self, item: ItemC, ctx: MethodCode
    ) -> tuple[list[str], list[tuple[str, str, str]], str]:
        """An emitter's keyword arguments, the attributes it stores (name, annotation,
        initial expression) and the expression of its snapshot."""
        init_params: list[str] = []
        stored: list[tuple[str, str, str]] = []
        snap: dict[str, ast.expr] = {"id": code("self.item_id"), "status": code("self.status")}
        for f in item.fields:
            spec = f.spec
            attr = ast.Attribute(value=ast.Name(id="self"), attr=f.name)
            if spec.acc is not None:
                snap[f.name] = ctx.acc_value(spec.acc, item.machine.context[spec.acc].kind)
                continue
            if spec.slot is not None:
                snap[f.name] = call("list", code(f"self._slot_{spec.slot}"))
                continue
            snap[f.name] = _or_else(attr, code("UNSET")) if spec.optional else attr
            annot = pytype(f.type, self.param_annot)
            if "init" in spec.model_fields_set:
                convert = needs_convert(f.type) and spec.init is not None
                value = self.constant(spec.init, f.type) if convert else literal(spec.init)
                stored.append((f.name, annot, value))
            elif "default" not in spec.model_fields_set:
                init_params.append(f"{f.name}: {annot}")
                stored.append((f.name, annot, f.name))
            elif spec.default is None:
                opt = annot if f.type.nullable else f"{annot} | None"
                init_params.append(f"{f.name}: {opt} = None")
                stored.append((f.name, opt, f.name))
            else:
                init_params.append(f"{f.name}: {annot} | None = None")
                value = unparse(_or_else(ast.Name(id=f.name), code(literal(spec.default))))
                stored.append((f.name, annot, value))
        return init_params, stored, unparse(call(self.model(item.cls), **snap))

    def _item_methods(self, item: ItemC, ctx: MethodCode) -> list[Method]:
        """An emitter's transitions; a final one also returns what closing an open part
        (its "done") emits, before its own events."""
        closing: list[str] = []
        for kinds in item.slots.values():
            for name in kinds:
                done = self.cat.parts[name].machine.transitions.get("done")
                closing += [e.event for e in done.emits] if done else []
        methods = []
        for tr in item.machine.transitions.values():
            meth = ctx.method(tr, item.machine, tr.name)
            meth.closes_part = meth.final and bool(item.slots)
            if meth.closes_part:
                meth.returns = self.returns(closing + meth.events)
            methods.append(meth)
        return methods

    def part(self, part: PartC, slot: str, owner: str) -> PartView:
        """The view of one content part kind inside an item's emitter."""
        ctx = MethodCode(self, "part", owner, part)
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
        """The view of the response emitter."""
        ctx = MethodCode(self, "envelope", "envelope")
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
            fills=[(f.name, literal(f.spec.fill)) for f in self.cat.response_fields if f.spec.fill],
            methods=methods,
            initial=self.cat.envelope.initial,
            snapshot=self.model("Response"),
            annot=self.annot("Response"),
        )

    def build(self) -> DialectView:
        """The view of every emitter of the dialect."""
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
    """The emitter views of one dialect of the catalog."""
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
