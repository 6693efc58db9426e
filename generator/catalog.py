"""The checked, resolved spec: what the generator's templates and tables read.

``compile.build_catalog`` makes one ``Catalog`` from the loaded spec files; every class
here is a plain record of one thing the spec declares, its names resolved.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from . import spec_model as sm
from .loader import Source
from .types import TypeRef


@dataclass
class Param:
    """A transition's parameter: its type, whether it is required, its default and an example."""

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
    """An event a transition emits, the source of each of its fields, and the states it is
    limited to."""

    event: str  # catalogue key
    bindings: list[Binding]
    when: list[str] | None = None  # only from these source states


@dataclass
class ActionC:
    """One action of a transition: an append to an accumulator, a field set or a status set."""

    op: str  # append | set | status
    target: str = ""
    source: str | dict[str, str] = ""
    value: str = ""


@dataclass
class TransitionC:
    """A transition resolved: its parameters, actions and events, the states it is taken
    from and its target."""

    name: str
    doc: str
    params: list[Param]
    actions: list[ActionC]
    emits: list[EmitC]
    sources: list[str] = field(default_factory=list)  # states it is legal from
    target: str = ""


@dataclass
class MachineC:
    """A state machine resolved: its states, transitions, accumulators and final states."""

    name: str
    initial: str
    states: dict[str, sm.State]
    transitions: dict[str, TransitionC]
    context: dict[str, sm.AccumulatorSpec]
    finals: list[str]


@dataclass
class FieldC:
    """A stored field of an item or part, with its parsed type."""

    name: str
    type: TypeRef
    spec: sm.ItemField


@dataclass
class PartC:
    """A content part kind: its wire type, index field, fields, machine and model class."""

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
    """An output item type: its id prefix, statuses, fields, slots, machine, events and
    class names."""

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
    """An event: its address, fields (with their default sources), declaring file and model
    class."""

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
    """A field of the response object, with its parsed type."""

    name: str
    type: TypeRef
    spec: sm.ResponseField


@dataclass
class DialectC:
    """A dialect: how it spells events and items, which it takes as standard, and its field
    overrides."""

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
        """The wire type of a catalogue event in this dialect."""
        if name in self.renames:
            return self.renames[name]
        if name in self.standard_events or ":" in name:
            return name
        return self.prefix + name

    def item_type(self, name: str) -> str:
        """The wire type of a catalogue item type in this dialect."""
        if name in self.standard_items or ":" in name:
            return name
        return self.prefix + name

    def is_standard_event(self, name: str) -> bool:
        """Whether the dialect takes the event under its catalogue name."""
        return name in self.standard_events

    def is_standard_item(self, name: str) -> bool:
        """Whether the dialect takes the item type under its catalogue name."""
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
    """Everything the spec declares, checked and resolved: what the templates and tables read."""

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
