"""The spec checker's rules for types, events, parts and items: each is read, checked
and resolved into its ``catalog`` record."""

from __future__ import annotations

import re

from . import names
from . import spec_model as sm
from .catalog import EventC, FieldC, ItemC, MachineC, PartC
from .errors import did_you_mean
from .loader import Source
from .machine_rules import MachineRules
from .reserved import (
    EVENT_NAME,
    GENERATED_CLASSES,
    HARD_KEYWORDS,
    ITEM_AUTO_FIELDS,
    ITEM_TYPE,
    PART_STATE_MEMBERS,
    RESERVED_FIELDS,
    RESERVED_MEMBERS,
    TYPE_NAME,
)
from .types import BUILTIN_UNIONS, TypeRef


class ItemRules(MachineRules):
    """Types, events, parts and items, each checked and added to the catalog's maps."""

    type_fields: dict[str, dict[str, TypeRef]]

    def add_types(self, sources: list[Source]) -> dict[str, Source]:
        """The named types (``self.types``, ``self.type_fields``), and the file of each."""
        type_src: dict[str, Source] = {}
        for src in sources:
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
        self.type_fields = {}
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
            self.type_fields[name] = fields
        return type_src

    def add_parts(self, src: Source) -> None:
        """The content part kinds of a ``parts`` file, each with its machine."""
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

    def add_events(
        self, src: Source, path: tuple[str | int, ...], events: dict[str, sm.EventSpec]
    ) -> None:
        """The events a file declares, each checked and added once."""
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
        """An event's fields, each with its type and default source."""
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

    def add_item(self, src: Source) -> None:
        """An item file checked and added: its type, statuses, slots, fields and machine."""
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
                    self.err(
                        src,
                        ("slots", sname, "parts", i),
                        f"unknown part {p!r}{did_you_mean(p, self.parts)}",
                    )
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
        """The stored fields of an item or part, each a safe name with a known type."""
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
                self.err(
                    src,
                    fpath + ("acc",),
                    f"unknown accumulator {f.acc!r}{did_you_mean(f.acc, context)}",
                )
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
