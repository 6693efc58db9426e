"""The records the emitter templates read: one per method, part, item, envelope and
dialect, each holding the names, signatures and code lines its template lays out."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .catalog import MachineC


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
    """One method of an emitter, as the template writes it."""

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
    """The state and methods of one content part kind, inside an item's emitter."""

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
    """One item type's emitter, as the template writes it."""

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
    """The response emitter, as the template writes it."""

    fields: list[tuple[str, str]]  # (name, default expression)
    params: list[tuple[str, str]]  # (keyword argument of the emitter, annotation)
    echo: list[str]
    methods: list[Method]
    initial: str
    snapshot: str
    annot: str = ""  # the annotation of the Response snapshot
    fills: list[tuple[str, str]] = field(default_factory=list)  # (echoed object, its fill)
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
    """Everything the emitter templates write for a dialect."""

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


_BINDS = re.compile(r"(?<![\w.])b\.")


def reads_binding(code: str) -> bool:
    """Whether a piece of generated code reads the dialect's binding (``b``)."""
    return bool(_BINDS.search(code))
