"""Check the loaded spec files together and resolve them into one ``Catalog``.

Every problem is collected as a ``SpecError`` with the file and line of the
key at fault; the catalog is only built when there are none.
"""

from __future__ import annotations

import dataclasses
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from . import names
from . import spec_model as sm
from .errors import SpecError, SpecErrors
from .loader import Source
from .types import BUILTIN_UNIONS, TypeRef, TypeSyntaxError, parse_type

__all__ = ["TypeRef"]

IDENT = re.compile(r"[a-z][a-z0-9_]*\Z")
ITEM_TYPE = re.compile(r"([a-z][a-z0-9_-]*:)?[a-z][a-z0-9_]*\Z")
EVENT_NAME = re.compile(r"([a-z][a-z0-9_-]*:)?[a-z][a-z0-9_.]*[a-z0-9_]\Z")
TYPE_NAME = re.compile(r"[A-Z][A-Za-z0-9]*\Z")
# The hard keywords a name must not be: keyword.kwlist, pinned (the same on 3.11,
# 3.12 and 3.13) so that a spec is accepted or refused alike on every supported
# Python. Soft keywords (match, case, type, _) are legal identifiers and field names.
HARD_KEYWORDS = frozenset(
    """False None True and as assert async await break class continue def del elif else
    except finally for from global if import in is lambda nonlocal not or pass raise
    return try while with yield""".split()
)
ADDRESS_FIELDS = {
    "none": (),
    "output": ("output_index",),
    "item": ("item_id", "output_index"),
    "content": ("item_id", "output_index", "content_index"),
    "summary": ("item_id", "output_index", "summary_index"),
}
RESERVED_FIELDS = {
    "type",
    "sequence_number",
    "item_id",
    "output_index",
    "content_index",
    "summary_index",
}
ITEM_AUTO_FIELDS = {"type", "id", "status"}
# Names the generated emitter classes use for themselves.
RESERVED_MEMBERS = {"state", "status", "snapshot", "closed", "item_id", "output_index", "item_type"}
RESERVED_ENVELOPE = RESERVED_MEMBERS | {
    "fields",
    "seq",
    "ids",
    "output",
    "open_items",
    "open_item",
    "close_item",
    "require_closed_items",
}
# Response fields the response emitter fills itself (the id and creation time
# have keyword arguments of their own; the output is the items streamed). Every
# other response field is a keyword argument of ``ResponseEmitter``.
ENVELOPE_OWN_FIELDS = {"id", "created_at", "output"}
# Names ``ResponseEmitter.__init__`` uses besides those keyword arguments: a
# response field of such a name would shadow one.
ENVELOPE_INIT_NAMES = {"function_tools", "ids", "key", "now", "request", "self", "super"}
# Names the generated emitters use themselves inside their methods: their own
# locals and parameters, the module-level names they import or define, and the
# builtins they call. A transition parameter or an item field (a keyword argument
# of the emitter and of its factory) with one of these names would shadow it and
# break, or silently change, the generated code. tests/test_generator_safety.py
# checks this set against every name the generated emitters read.
GENERATED_LOCALS = {
    "b",  # the dialect's binding
    "created_at",
    "events",
    "fields",
    "fixed",
    "id",
    "ids",
    "index",
    "key",
    "made",  # what a factory or a hook made
    "p",
    "prev",
    "request",
    "self",
    "seq",
    "snap",
    "stream",
    "unknown",
}
GENERATED_MODULE_NAMES = {"annotations", "c", "dataclass", "function_tools", "msgspec", "now"}
GENERATED_BUILTINS = {
    "bool",
    "bytes",
    "dict",
    "float",
    "int",
    "isinstance",
    "len",
    "list",
    "next",
    "object",
    "property",
    "set",
    "sorted",
    "str",
    "super",
    "tuple",
}
GENERATED_NAMES = frozenset(GENERATED_LOCALS | GENERATED_MODULE_NAMES | GENERATED_BUILTINS)
# Attributes of the generated part-state classes, which hold part accumulators.
PART_STATE_MEMBERS = {"index", "state", "snapshot"}
# Names bound at the top of the generated package (its exports and submodules):
# a dialect is a subpackage of that name.  The render checks the package it
# writes as well, so a name added to the package later is refused there too.
PACKAGE_NAMES = {
    "__version__",
    "achat_sse_from_sse",
    "achat_sse_from_responses",
    "aevents_from_chat",
    "annotations",
    "aparse_sse",
    "asse_from_chat",
    "asse_from_input",
    "chat_chunks_from_responses",
    "chat_data_lines",
    "chat_sse_from_responses",
    "chat_sse_from_sse",
    "events_from_chat",
    "events_from_harmony_tokens",
    "gateway",
    "load_harmony_encoding",
    "sse_from_harmony_tokens",
    "parse_sse",
    "sse_from_chat",
    "sse_from_input",
    "tables",
    "tests",
    "validate_payloads",
}
# Class and module-level names of the generated models and emitters that are not
# made from a spec name: a type, item, part or event must not produce one of them.
GENERATED_CLASSES = {
    "Annotated",
    "Any",
    "Callable",
    "ClassVar",
    "ContentPart",
    "Event",
    "Item",
    "ItemEmitter",
    "Literal",
    "Meta",
    "Never",
    "Payload",
    "Response",
    "ResponseEmitter",
    "StreamBase",
    "Struct",
    "SummaryPart",
    "TextAcc",
    "TransitionError",
    "TypeAlias",
    "UNSET",
    "UnsetType",
}
HARMONY_SOURCES = {
    "recipient",
    "recipient.head",
    "recipient.rest",
    "recipient.last",
    "recipient.second",
    "call_id",
    "text",
}
FIXED_REFS = {"item", "part", "response", "now", "id", "status"}


@dataclass
class Param:
    name: str
    type: TypeRef
    required: bool
    default: Any
    example: Any = None


@dataclass
class Binding:
    """An event field and where its value comes from."""

    name: str
    type: TypeRef
    source: str | dict[str, str]


@dataclass
class EmitC:
    event: str  # catalogue key
    bindings: list[Binding]
    when: list[str] | None = None  # only from these source states


@dataclass
class ActionC:
    op: str  # append | set | status
    target: str = ""
    source: str | dict[str, str] = ""
    value: str = ""


@dataclass
class TransitionC:
    name: str
    doc: str
    params: list[Param]
    actions: list[ActionC]
    emits: list[EmitC]
    sources: list[str] = field(default_factory=list)  # states it is legal from
    target: str = ""


@dataclass
class MachineC:
    name: str
    initial: str
    states: dict[str, sm.State]
    transitions: dict[str, TransitionC]
    context: dict[str, sm.AccumulatorSpec]
    finals: list[str]


@dataclass
class FieldC:
    name: str
    type: TypeRef
    spec: sm.ItemField


@dataclass
class PartC:
    name: str
    wire: str
    index: str
    doc: str
    fields: list[FieldC]
    machine: MachineC
    read_optional: list[str] = field(default_factory=list)
    cls: str = ""  # the model's class name


@dataclass
class ItemC:
    type: str
    id_prefix: str
    doc: str
    thin: bool
    statuses: list[str]
    fields: list[FieldC]
    slots: dict[str, list[str]]
    machine: MachineC
    source: str
    events: list[str]
    read_optional: list[str] = field(default_factory=list)
    cls: str = ""  # the model's class name
    emitter: str = ""  # the emitter's class name


@dataclass
class EventC:
    name: str
    address: str
    doc: str
    fields: dict[str, tuple[TypeRef, str | dict[str, str] | None]]
    owner: str = ""  # source file that declared it
    read_optional: list[str] = field(default_factory=list)
    read_legacy: list[str] = field(default_factory=list)
    cls: str = ""  # the model's class name


@dataclass
class ResponseFieldC:
    name: str
    type: TypeRef
    spec: sm.ResponseField


@dataclass
class DialectC:
    name: str
    doc: str
    prefix: str
    done_sentinel: bool
    standard_events: set[str]
    standard_items: set[str]
    renames: dict[str, str]
    overrides: dict[str, dict[str, tuple[TypeRef, str | dict[str, str] | None]]]
    response_required: set[str]
    echo_tools: str = "as_requested"

    def event_type(self, name: str) -> str:
        if name in self.renames:
            return self.renames[name]
        if name in self.standard_events or ":" in name:
            return name
        return self.prefix + name

    def item_type(self, name: str) -> str:
        if name in self.standard_items or ":" in name:
            return name
        return self.prefix + name

    def is_standard_event(self, name: str) -> bool:
        return name in self.standard_events

    def is_standard_item(self, name: str) -> bool:
        return name in self.standard_items


def catalogue_dialect(cat: Catalog) -> DialectC:
    """The catalogue's own spelling: every wire name as the catalogue has it, nothing
    reshaped (the base the dialects' models are written on)."""
    return dataclasses.replace(
        cat.dialects["openai"],
        name="catalogue",
        prefix="",
        standard_events=set(cat.events),
        standard_items=set(cat.items),
        renames={},
        overrides={},
    )


@dataclass
class Catalog:
    types: dict[str, sm.TypeSpec]
    type_fields: dict[str, dict[str, TypeRef]]
    events: dict[str, EventC]
    parts: dict[str, PartC]
    items: dict[str, ItemC]
    envelope: MachineC
    response_fields: list[ResponseFieldC]
    dialects: dict[str, DialectC]
    sources: list[str]
    items_in: str = ""
    chat_routes: sm.ChatRoutesFile | None = None
    harmony_routes: sm.HarmonyRoutesFile | None = None
    response_read_optional: list[str] = field(default_factory=list)
    # the request_document files, then the request_fields files (one a route), read
    # against their vendored documents at render
    requests: list[Source] = field(default_factory=list)


class _Builder:
    def __init__(self, sources: list[Source]) -> None:
        self.sources = sources
        self.errors: list[SpecError] = []

    def err(self, src: Source, path: tuple[str | int, ...], msg: str) -> None:
        self.errors.append(src.error(path, msg))

    def read_optional(
        self, src: Source, path: tuple[str | int, ...], names: list[str], known: list[str]
    ) -> None:
        for name in names:
            if name not in known:
                self.err(src, path + ("read_optional",), f"unknown field {name!r}")

    def typ(self, src: Source, path: tuple[str | int, ...], text: str) -> TypeRef:
        try:
            ref = parse_type(text)
        except TypeSyntaxError as exc:
            self.err(src, path, str(exc))
            return TypeRef("any")
        for name in ref.named_refs():
            if name not in self.type_names and name not in BUILTIN_UNIONS:
                self.err(src, path, f"unknown type {name!r}")
        return ref

    def ident(self, src: Source, path: tuple[str | int, ...], name: str, what: str) -> bool:
        if name in HARD_KEYWORDS:
            self.err(src, path, f"{what} {name!r} is a Python keyword")
        elif not IDENT.match(name):
            self.err(src, path, f"{what} {name!r} is not a safe identifier ([a-z][a-z0-9_]*)")
        else:
            return True
        return False

    def py_name(
        self,
        src: Source,
        path: tuple[str | int, ...],
        name: str,
        what: str,
        reserved: frozenset[str] | set[str] = GENERATED_NAMES,
    ) -> None:
        """A name that becomes a Python identifier in generated code: safe and not shadowing."""
        if self.ident(src, path, name, what) and name in reserved:
            self.err(
                src,
                path,
                f"{what} {name!r} is reserved: the generated code uses that name itself",
            )

    # -- the whole catalog --------------------------------------------------
    def build(self) -> Catalog:
        by_kind: dict[str, list[Source]] = {}
        for src in self.sources:
            by_kind.setdefault(src.model.kind, []).append(src)
        for kind in ("envelope", "events", "parts", "types", "dialect"):
            if not by_kind.get(kind):
                self.errors.append(SpecError("spec", 1, "-", f"no spec file of kind {kind!r}"))
        if len(by_kind.get("envelope", [])) > 1:
            for src in by_kind["envelope"][1:]:
                self.err(src, ("kind",), "a second envelope spec; there must be exactly one")
        if self.errors:
            raise SpecErrors(self.errors)

        self.types: dict[str, sm.TypeSpec] = {}
        type_src: dict[str, Source] = {}
        for src in by_kind["types"]:
            for name, spec in src.model.types.items():
                if name in self.types:
                    self.err(src, ("types", name), f"type {name!r} is declared twice")
                elif not TYPE_NAME.match(name) or name in BUILTIN_UNIONS:
                    self.err(
                        src, ("types", name), f"bad type name {name!r} (CamelCase, not built in)"
                    )
                else:
                    self.types[name] = spec
                    type_src[name] = src
        self.type_names = set(self.types)
        type_fields: dict[str, dict[str, TypeRef]] = {}
        for name, spec in self.types.items():
            src = type_src[name]
            fields: dict[str, TypeRef] = {}
            for fname, decl in spec.fields.items():
                self.ident(src, ("types", name, "fields", fname), fname, "field")
                text = decl if isinstance(decl, str) else decl.type
                fields[fname] = self.typ(src, ("types", name, "fields", fname), text)
            for opt in spec.optional:
                if opt not in spec.fields:
                    self.err(src, ("types", name, "optional"), f"unknown field {opt!r}")
            self.read_optional(
                src, ("types", name), spec.read_optional + spec.read_legacy, list(spec.fields)
            )
            type_fields[name] = fields

        self.events: dict[str, EventC] = {}
        self.event_src: dict[str, tuple[Source, tuple[str | int, ...]]] = {}
        for src in by_kind["events"]:
            self.add_events(src, ("events",), src.model.events)
        for src in by_kind.get("item", []):
            self.add_events(src, ("events",), src.model.events)

        self.parts: dict[str, PartC] = {}
        self.part_src: dict[str, Source] = {}
        for src in by_kind["parts"]:
            for name, spec in src.model.parts.items():
                path: tuple[str | int, ...] = ("parts", name)
                self.ident(src, path, name, "part name")
                if name in self.parts:
                    self.err(src, path, f"part {name!r} is declared twice")
                    continue
                pfields = self.item_fields(src, path, spec.fields, spec.context, {}, part=True)
                machine = self.machine(src, path, name, spec, "part", spec.index, pfields)
                self.read_optional(src, path, spec.read_optional, [f.name for f in pfields])
                self.part_src[name] = src
                self.parts[name] = PartC(
                    name,
                    spec.type,
                    spec.index,
                    spec.doc,
                    pfields,
                    machine,
                    spec.read_optional,
                    self.class_name(src, path, spec.class_, names.part_class(name)),
                )

        self.items: dict[str, ItemC] = {}
        self.item_src: dict[str, Source] = {}
        for src in by_kind.get("item", []):
            self.add_item(src)

        env_src = by_kind["envelope"][0]
        env = env_src.model
        rfields = []
        for name, rf in env.response.items():
            self.py_name(env_src, ("response", name), name, "field", ENVELOPE_INIT_NAMES)
            rfields.append(ResponseFieldC(name, self.typ(env_src, ("response", name), rf.type), rf))
        self.read_optional(env_src, (), env.read_optional, list(env.response))
        envelope = self.machine(env_src, (), "envelope", env, "envelope", "", [])
        self.envelope = envelope
        if env.items_in not in env.states:
            self.err(env_src, ("items_in",), f"unknown state {env.items_in!r}")
        self.items_in = env.items_in
        for tname in envelope.transitions:
            if tname in RESERVED_ENVELOPE:
                self.err(
                    env_src,
                    ("transitions", tname),
                    f"transition {tname!r} clashes with a member of the emitter",
                )
        factories: dict[str, str] = {}
        for item in self.items.values():
            factory = item.type.replace(":", "_").replace("-", "_")
            isrc = self.item_src[item.type]
            if factory in envelope.transitions or factory in RESERVED_ENVELOPE:
                self.err(
                    isrc,
                    ("type",),
                    f"item type {item.type!r} clashes with a member of the response emitter",
                )
            elif factory in factories:
                self.err(
                    isrc,
                    ("type",),
                    f"item type {item.type!r} has the same factory name {factory!r} "
                    f"as {factories[factory]!r}",
                )
            factories.setdefault(factory, item.type)
        self.check_class_names(type_src)
        stored = {f.name for f in rfields}
        for tr in envelope.transitions.values():
            for i, act in enumerate(tr.actions):
                if act.op == "set" and act.target not in stored:
                    self.err(
                        env_src,
                        ("transitions", tr.name, "actions", i),
                        f"unknown response field {act.target!r}",
                    )

        dialects: dict[str, DialectC] = {}
        self.dialect_sources: dict[str, Source] = {}
        for src in by_kind["dialect"]:
            d = src.model
            if d.name in dialects:
                self.err(src, ("name",), f"dialect {d.name!r} is declared twice")
                continue
            self.py_name(src, ("name",), d.name, "dialect name", PACKAGE_NAMES)
            std_events = set(self.events) if d.standard_events == "all" else set(d.standard_events)
            for i, ev in enumerate([] if d.standard_events == "all" else d.standard_events):
                if ev not in self.events:
                    self.err(src, ("standard_events", i), f"unknown event {ev!r}")
            std_items = set(self.items) if d.standard_items == "all" else set(d.standard_items)
            for i, it in enumerate([] if d.standard_items == "all" else d.standard_items):
                if it not in self.items:
                    self.err(src, ("standard_items", i), f"unknown item type {it!r}")
            renames: dict[str, str] = {}
            overrides = {}
            for ev, spec in d.events.items():
                if ev not in self.events:
                    self.err(src, ("events", ev), f"unknown event {ev!r}")
                    continue
                if spec.type is not None:
                    if not EVENT_NAME.match(spec.type):
                        self.err(src, ("events", ev, "type"), f"bad event name {spec.type!r}")
                    renames[ev] = spec.type
                if spec.fields is not None:
                    overrides[ev] = self.event_fields(src, ("events", ev, "fields"), spec.fields)
            required = stored if d.response_required == "all" else set(d.response_required)
            self.dialect_sources[d.name] = src
            dialects[d.name] = DialectC(
                d.name,
                d.doc,
                d.extension_prefix,
                d.framing.done_sentinel,
                std_events,
                std_items,
                renames,
                overrides,
                required,
                d.echo_tools,
            )
        if "openai" not in dialects:
            self.errors.append(SpecError("spec", 1, "-", "the 'openai' dialect is required"))
        self.check_bindings(dialects)
        chat = self.single(by_kind, "chat_routes")
        harmony = self.single(by_kind, "harmony_routes")
        routes: dict[str, Source] = {}
        for src in by_kind.get("request_fields", []):
            if src.model.route in routes:
                self.err(
                    src, ("route",), f"a second request_fields spec of route {src.model.route!r}"
                )
            routes[src.model.route] = src
        documents: dict[str, Source] = {}
        for src in by_kind.get("request_document", []):
            if src.model.name in documents:
                self.err(src, ("name",), f"a second request_document named {src.model.name!r}")
            documents[src.model.name] = src
        if chat is not None:
            self.check_chat(chat)
        if harmony is not None:
            self.check_harmony(harmony)
        if self.errors:
            raise SpecErrors(self.errors)
        return Catalog(
            self.types,
            type_fields,
            self.events,
            self.parts,
            self.items,
            envelope,
            rfields,
            dialects,
            [s.name for s in self.sources],
            self.items_in,
            chat.model if chat else None,
            harmony.model if harmony else None,
            list(env.read_optional),
            [documents[d] for d in sorted(documents)] + [routes[r] for r in sorted(routes)],
        )

    def class_name(
        self, src: Source, path: tuple[str | int, ...], given: str | None, default: str
    ) -> str:
        """A model's class name: the spec's ``class``, checked, or the default rule's."""
        if given is None:
            return default
        if not TYPE_NAME.match(given) or given in HARD_KEYWORDS:
            self.err(src, path + ("class",), f"bad class name {given!r} (CamelCase)")
            return default
        return given

    def check_class_names(self, type_src: dict[str, Source]) -> None:
        """Every generated class name is distinct and does not shadow a name the modules use."""
        owners: dict[str, str] = {name: "the generated code" for name in GENERATED_CLASSES}
        found: list[tuple[str, Source, tuple[str | int, ...], str]] = []

        def at(path: tuple[str | int, ...], explicit: str | None) -> tuple[str | int, ...]:
            return path + ("class",) if explicit is not None else path

        for name in self.types:
            found.append((name, type_src[name], ("types", name), f"type {name!r}"))
        for name, part in self.parts.items():
            src = self.part_src[name]
            path = at(("parts", name), src.model.parts[name].class_)
            found.append((part.cls, src, path, f"part {name!r}"))
        for name, item in self.items.items():
            src = self.item_src[name]
            what = f"item type {name!r}"
            path = ("class",) if src.model.class_ is not None else ("type",)
            found.append((item.cls, src, path, what))
            found.append((item.emitter, src, ("type",), what))
        for name, (src, path) in self.event_src.items():
            path = at(path, src.model.events[name].class_)
            found.append((self.events[name].cls, src, path, f"event {name!r}"))
        for cls, src, path, what in found:
            if cls in owners:
                self.err(src, path, f"{what} makes the class {cls!r}, as does {owners[cls]}")
            else:
                owners[cls] = what

    # -- routes ---------------------------------------------------------------
    def single(self, by_kind: dict[str, list[Source]], kind: str) -> Source | None:
        found = by_kind.get(kind, [])
        for src in found[1:]:
            self.err(src, ("kind",), f"a second {kind} spec; there may be only one")
        return found[0] if found else None

    def check_item_part(
        self, src: Source, path: tuple[str | int, ...], item: str, part: str | None
    ) -> ItemC | None:
        it = self.items.get(item)
        if it is None:
            self.err(src, path + ("item",), f"unknown item type {item!r}")
            return None
        if part is not None and not any(part in kinds for kinds in it.slots.values()):
            self.err(src, path + ("part",), f"item {item!r} has no slot for part {part!r}")
        return it

    def check_chat(self, src: Source) -> None:
        spec: sm.ChatRoutesFile = src.model
        for key, route in spec.fields.items():
            self.check_item_part(src, ("fields", key), route.item, route.part)
        for kind in ("function", "custom"):
            it = self.check_item_part(src, ("tool_calls",), getattr(spec.tool_calls, kind), None)
            if it is not None:
                fields = {f.name for f in it.fields}
                if {"name", "call_id"} - fields or "delta" not in it.machine.transitions:
                    self.err(
                        src,
                        ("tool_calls", kind),
                        f"item {it.type!r} needs name and call_id fields and a delta transition",
                    )

    def check_harmony(self, src: Source) -> None:
        spec: sm.HarmonyRoutesFile = src.model
        for i, route in enumerate(spec.routes):
            path: tuple[str | int, ...] = ("routes", i)
            it = self.check_item_part(src, path, route.item, route.part)
            if it is None:
                continue
            m = it.machine
            if route.part is None and not route.buffer and "delta" not in m.transitions:
                self.err(src, path, f"item {it.type!r} takes no deltas; set part or buffer: true")
            for j, name in enumerate(route.finish):
                if name not in m.transitions:
                    self.err(
                        src, path + ("finish", j), f"item {it.type!r} has no transition {name!r}"
                    )
            init = {f.name for f in it.fields if not (f.spec.acc or f.spec.slot)}
            for key, value in route.open.items():
                if key not in init:
                    self.err(src, path + ("open", key), f"item {it.type!r} has no field {key!r}")
                self.harmony_source(src, path + ("open", key), value)
            done = m.transitions.get("done")
            params = {p.name for p in done.params} if done else set()
            for key, value in route.close.items():
                if key not in params:
                    self.err(
                        src,
                        path + ("close", key),
                        f"'done' of {it.type!r} has no parameter {key!r}",
                    )
                self.harmony_source(src, path + ("close", key), value)

    def harmony_source(
        self, src: Source, path: tuple[str | int, ...], value: str | dict[str, str]
    ) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                self.harmony_source(src, path + (k,), v)
            return
        head = value.split("|", 1)[0]
        ok = (
            head.startswith("=")
            or head in HARMONY_SOURCES
            or (head.startswith("args.") and len(head) > 5)
        )
        if not ok:
            self.err(src, path, f"bad harmony source {value!r}")

    # -- events ---------------------------------------------------------------
    def add_events(
        self, src: Source, path: tuple[str | int, ...], events: dict[str, sm.EventSpec]
    ) -> None:
        for name, spec in events.items():
            epath = path + (name,)
            if not EVENT_NAME.match(name):
                self.err(src, epath, f"bad event name {name!r}")
                continue
            if name in self.events:
                self.err(
                    src,
                    epath,
                    f"event {name!r} is declared twice (also in {self.events[name].owner})",
                )
                continue
            fields = self.event_fields(src, epath + ("fields",), spec.fields)
            self.read_optional(src, epath, spec.read_optional + spec.read_legacy, list(fields))
            self.event_src[name] = (src, epath)
            self.events[name] = EventC(
                name,
                spec.address,
                spec.doc,
                fields,
                src.name,
                spec.read_optional,
                spec.read_legacy,
                self.class_name(src, epath, spec.class_, names.event_class(name)),
            )

    def event_fields(
        self, src: Source, path: tuple[str | int, ...], decls: dict[str, sm.FieldDecl]
    ) -> dict[str, tuple[TypeRef, str | dict[str, str] | None]]:
        out: dict[str, tuple[TypeRef, str | dict[str, str] | None]] = {}
        for fname, decl in decls.items():
            self.ident(src, path + (fname,), fname, "field")
            if fname in RESERVED_FIELDS:
                self.err(src, path + (fname,), f"field {fname!r} is filled automatically")
            if isinstance(decl, str):
                out[fname] = (self.typ(src, path + (fname,), decl), None)
            else:
                out[fname] = (self.typ(src, path + (fname, "type"), decl.type), decl.source)
        return out

    # -- items ----------------------------------------------------------------
    def add_item(self, src: Source) -> None:
        spec: sm.ItemFile = src.model
        if not ITEM_TYPE.match(spec.type):
            self.err(src, ("type",), f"item type {spec.type!r} is not a safe identifier")
            return
        local = spec.type.split(":")[-1]
        if local in HARD_KEYWORDS:
            self.err(src, ("type",), f"item type {spec.type!r} is a Python keyword")
            return
        if spec.type in self.items:
            self.err(
                src,
                ("type",),
                f"duplicate item type {spec.type!r} (also in {self.items[spec.type].source})",
            )
            return
        if not re.match(r"[a-z][a-z0-9]*_\Z", spec.id_prefix):
            self.err(src, ("id_prefix",), f"id prefix {spec.id_prefix!r} must look like 'abc_'")
        for i, st in enumerate(spec.statuses):
            self.ident(src, ("statuses", i), st, "status")
        if not spec.statuses:
            self.err(src, ("statuses",), "an item needs at least one status")
        slots: dict[str, list[str]] = {}
        for sname, slot in spec.slots.items():
            self.ident(src, ("slots", sname), sname, "slot")
            for i, p in enumerate(slot.parts):
                if p not in self.parts:
                    self.err(src, ("slots", sname, "parts", i), f"unknown part {p!r}")
            slots[sname] = list(slot.parts)
        fields = self.item_fields(src, (), spec.fields, spec.context, slots)
        machine = self.machine(src, (), spec.type, spec, "item", "", fields)
        for name, tr in machine.transitions.items():
            for i, act in enumerate(tr.actions):
                if (
                    act.op == "status"
                    and not act.value.startswith("params.")
                    and act.value not in spec.statuses
                ):
                    self.err(
                        src,
                        ("transitions", name, "actions", i, "status"),
                        f"unknown status {act.value!r}",
                    )
        if "open" not in machine.transitions:
            self.err(src, ("transitions",), "an item needs an 'open' transition")
        self.check_members(src, spec, machine, fields, slots)
        for sname, state in spec.states.items():
            if state.type == "final" or sname == spec.initial:
                continue
            if "incomplete" not in state.on:
                self.err(
                    src,
                    ("states", sname, "on"),
                    "every open state needs an 'incomplete' transition, so truncation can close the item",
                )
        events = sorted({e.event for t in machine.transitions.values() for e in t.emits})
        self.read_optional(src, (), spec.read_optional, ["id", "status"] + [f.name for f in fields])
        self.item_src[spec.type] = src
        self.items[spec.type] = ItemC(
            spec.type,
            spec.id_prefix,
            spec.doc,
            spec.thin,
            list(spec.statuses),
            fields,
            slots,
            machine,
            src.name,
            events,
            spec.read_optional,
            self.class_name(src, (), spec.class_, names.item_class(spec.type)),
            names.emitter_class(spec.type),
        )

    def item_fields(
        self,
        src: Source,
        path: tuple[str | int, ...],
        decls: dict[str, sm.ItemField],
        context: dict[str, sm.AccumulatorSpec],
        slots: dict[str, list[str]],
        part: bool = False,
    ) -> list[FieldC]:
        out = []
        for fname, f in decls.items():
            fpath = path + ("fields", fname)
            if part:
                self.ident(src, fpath, fname, "field")
            elif fname not in ITEM_AUTO_FIELDS | RESERVED_MEMBERS:
                self.py_name(src, fpath, fname, "field")
            if fname in ITEM_AUTO_FIELDS:
                self.err(src, fpath, f"field {fname!r} is filled automatically")
            elif fname in RESERVED_MEMBERS:
                self.err(src, fpath, f"field {fname!r} clashes with a member of the emitter")
            if f.acc is not None and f.acc not in context:
                self.err(src, fpath + ("acc",), f"unknown accumulator {f.acc!r}")
            if f.slot is not None and f.slot not in slots:
                self.err(src, fpath + ("slot",), f"unknown slot {f.slot!r}")
            out.append(FieldC(fname, self.typ(src, fpath + ("type",), f.type), f))
        for acc in context:
            if part:
                self.py_name(src, path + ("context", acc), acc, "accumulator", PART_STATE_MEMBERS)
            else:
                self.ident(src, path + ("context", acc), acc, "accumulator")
        return out

    def check_members(
        self,
        src: Source,
        spec: sm.ItemFile,
        machine: MachineC,
        fields: list[FieldC],
        slots: dict[str, list[str]],
    ) -> None:
        """An emitter's attributes (stored fields) and methods (transitions) must not collide."""
        methods: dict[str, tuple[str | int, ...]] = {}
        for tname in machine.transitions:
            methods[tname] = ("transitions", tname)
        for sname, kinds in slots.items():
            for i, pname in enumerate(kinds):
                part = self.parts.get(pname)
                if part is None:
                    continue
                for ptr in part.machine.transitions:
                    for meth in (f"{pname}_{ptr}", f"{pname}_{ptr}_sse"):
                        if meth in methods and methods[meth][0] == "transitions":
                            self.err(
                                src,
                                methods[meth],
                                f"transition {meth!r} clashes with the method of part "
                                f"{pname!r} ({ptr!r})",
                            )
                        methods.setdefault(meth, ("slots", sname, "parts", i))
        for f in fields:
            if f.name in methods:
                self.err(
                    src,
                    ("fields", f.name),
                    f"field {f.name!r} clashes with the emitter method of the same name",
                )

    # -- state machines -------------------------------------------------------
    def machine(
        self,
        src: Source,
        path: tuple[str | int, ...],
        name: str,
        spec: sm.Machine,
        scope: str,
        index: str,
        fields: list[FieldC],
    ) -> MachineC:
        states = spec.states
        if spec.initial not in states:
            self.err(src, path + ("initial",), f"unknown initial state {spec.initial!r}")
        transitions: dict[str, TransitionC] = {}
        for tname, tr in spec.transitions.items():
            tpath = path + ("transitions", tname)
            self.ident(src, tpath, tname, "transition")
            if tname in RESERVED_MEMBERS or tname.startswith("_"):
                self.err(src, tpath, f"transition {tname!r} clashes with a member of the emitter")
            transitions[tname] = self.transition(src, tpath, tname, tr, spec, scope, index, fields)
        used: set[str] = set()
        for sname, state in states.items():
            spath = path + ("states", sname)
            self.ident(src, spath, sname, "state")
            if state.type == "final" and state.on:
                self.err(src, spath + ("on",), "a final state has no transitions")
            if state.type != "final" and not state.on:
                self.err(src, spath, "a state that is not final needs a transition out")
            for tname, target in state.on.items():
                if tname not in transitions:
                    self.err(src, spath + ("on", tname), f"unknown transition {tname!r}")
                    continue
                if target not in states:
                    self.err(src, spath + ("on", tname), f"unknown target state {target!r}")
                    continue
                tr_c = transitions[tname]
                if tr_c.target and tr_c.target != target:
                    self.err(
                        src,
                        spath + ("on", tname),
                        f"transition {tname!r} goes to {tr_c.target!r} elsewhere; one target per transition",
                    )
                tr_c.target = target
                tr_c.sources.append(sname)
                used.add(tname)
        for tname in transitions:
            if tname not in used:
                self.err(
                    src,
                    path + ("transitions", tname),
                    f"transition {tname!r} is never taken from any state",
                )
            for i, emit in enumerate(transitions[tname].emits):
                for when in emit.when or []:
                    if when not in transitions[tname].sources:
                        self.err(
                            src,
                            path + ("transitions", tname, "emit", i, "when"),
                            f"transition {tname!r} is not taken from state {when!r}",
                        )
        if spec.initial in states:
            seen = {spec.initial}
            queue = deque([spec.initial])
            while queue:
                for target in states[queue.popleft()].on.values():
                    if target in states and target not in seen:
                        seen.add(target)
                        queue.append(target)
            for sname in states:
                if sname not in seen:
                    self.err(
                        src,
                        path + ("states", sname),
                        f"state {sname!r} cannot be reached from {spec.initial!r}",
                    )
        finals = [s for s, st in states.items() if st.type == "final"]
        if not finals:
            self.err(src, path + ("states",), "no final state")
        return MachineC(name, spec.initial, dict(states), transitions, dict(spec.context), finals)

    def transition(
        self,
        src: Source,
        path: tuple[str | int, ...],
        name: str,
        tr: sm.Transition,
        spec: sm.Machine,
        scope: str,
        index: str,
        fields: list[FieldC],
    ) -> TransitionC:
        params = []
        for pname, decl in tr.params.items():
            ppath = path + ("params", pname)
            self.py_name(src, ppath, pname, "parameter")
            if isinstance(decl, str):
                params.append(Param(pname, self.typ(src, ppath, decl), True, None))
            else:
                params.append(
                    Param(
                        pname,
                        self.typ(src, ppath + ("type",), decl.type),
                        decl.required,
                        decl.default,
                        decl.example,
                    )
                )
        pnames = {p.name for p in params}
        field_names = {f.name for f in fields}
        actions = []
        for i, act in enumerate(tr.actions):
            apath = path + ("actions", i)
            set_keys = [k for k in ("append", "set", "status") if getattr(act, k) is not None]
            if len(set_keys) != 1:
                self.err(src, apath, "an action has exactly one of append, set, status")
                continue
            if act.append is not None:
                if act.append.acc not in spec.context:
                    self.err(
                        src, apath + ("append", "acc"), f"unknown accumulator {act.append.acc!r}"
                    )
                self.ref(src, apath + ("append", "from"), act.append.source, pnames, spec, scope)
                actions.append(ActionC("append", act.append.acc, act.append.source))
            elif act.set is not None:
                if scope != "envelope" and act.set.field not in field_names:
                    self.err(src, apath + ("set", "field"), f"unknown field {act.set.field!r}")
                self.ref(src, apath + ("set", "from"), act.set.source, pnames, spec, scope)
                actions.append(ActionC("set", act.set.field, act.set.source))
            elif act.status is not None:
                if act.status.startswith("params."):
                    self.ref(src, apath + ("status",), act.status, pnames, spec, scope)
                actions.append(ActionC("status", value=act.status))
        emits = []
        for i, edecl in enumerate(tr.emit):
            epath = path + ("emit", i)
            emit = edecl if isinstance(edecl, sm.Emit) else sm.Emit(event=edecl)
            event = self.events.get(emit.event)
            if event is None:
                self.err(src, epath, f"unknown event {emit.event!r}")
                continue
            self.check_address(src, epath, event, scope, index)
            bindings = []
            for fname, (ftype, fsource) in event.fields.items():
                source: str | dict[str, str] | None = emit.with_.get(fname, fsource)
                if source is None:
                    source = f"params.{fname}"
                self.ref(
                    src, epath, source, pnames, spec, scope, event=emit.event, field_name=fname
                )
                bindings.append(Binding(fname, ftype, source))
            for k in emit.with_:
                if k not in event.fields:
                    self.err(src, epath + ("with", k), f"event {emit.event!r} has no field {k!r}")
            if emit.when is not None and scope != "item":
                self.err(src, epath + ("when",), "'when' is only for item transitions")
            emits.append(EmitC(emit.event, bindings, emit.when))
        return TransitionC(name, tr.doc, params, actions, emits)

    def check_address(
        self, src: Source, path: tuple[str | int, ...], event: EventC, scope: str, index: str
    ) -> None:
        need = event.address
        ok = {
            "envelope": need == "none",
            "item": need in ("output", "item"),
            "part": (need == "content" and index == "content_index")
            or (need == "summary" and index == "summary_index"),
        }[scope]
        if not ok:
            self.err(
                src,
                path,
                f"event {event.name!r} (address {need!r}) cannot be emitted by a {scope}"
                + (f" indexed by {index}" if index else ""),
            )

    def ref(
        self,
        src: Source,
        path: tuple[str | int, ...],
        source: str | dict[str, str],
        pnames: set[str],
        spec: sm.Machine,
        scope: str,
        event: str = "",
        field_name: str = "",
    ) -> None:
        if isinstance(source, dict):
            for k, v in source.items():
                self.ref(src, path, v, pnames, spec, scope, event, k)
            return
        where = f" for field {field_name!r} of {event!r}" if event else ""
        head, _, tail = source.partition(".")
        if source in FIXED_REFS:
            needed = {"item": "item", "part": "part", "response": "envelope"}.get(source)
            if needed and needed != scope:
                self.err(src, path, f"{source!r}{where} is only available in a {needed}")
        elif head == "params":
            if tail not in pnames:
                self.err(src, path, f"no parameter {tail!r}{where}; declare it in params")
        elif head in ("acc", "last"):
            acc = spec.context.get(tail)
            if acc is None:
                self.err(src, path, f"unknown accumulator {tail!r}{where}")
            elif head == "last" and acc.kind != "list":
                self.err(src, path, f"last.{tail} needs a list accumulator{where}")
        elif head == "field":
            pass
        else:
            self.err(src, path, f"bad value source {source!r}{where}")

    def check_bindings(self, dialects: dict[str, DialectC]) -> None:
        """Dialect field overrides must still be fillable by every transition that emits the event."""
        for d in dialects.values():
            src = self.dialect_sources[d.name]
            for ev, fields in d.overrides.items():
                for owner in self._machines():
                    for tr in owner.transitions.values():
                        for emit in tr.emits:
                            if emit.event != ev:
                                continue
                            pnames = {p.name for p in tr.params}
                            for fname, (_, fsource) in fields.items():
                                sources = (
                                    fsource
                                    if isinstance(fsource, dict)
                                    else {fname: fsource or f"params.{fname}"}
                                )
                                for v in sources.values():
                                    if v.startswith("params.") and v[7:] not in pnames:
                                        self.err(
                                            src,
                                            ("events", ev, "fields", fname),
                                            f"transition {owner.name}.{tr.name} has no "
                                            f"parameter {v[7:]!r}",
                                        )

    def _machines(self) -> list[MachineC]:
        return (
            [p.machine for p in self.parts.values()]
            + [i.machine for i in self.items.values()]
            + [self.envelope]
        )


def build_catalog(sources: list[Source]) -> Catalog:
    """Resolve and check the loaded specs; raise ``SpecErrors`` with every problem."""
    return _Builder(sources).build()
