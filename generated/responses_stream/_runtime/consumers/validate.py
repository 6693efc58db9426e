"""Conformance validator for Responses event streams, driven by the spec's state machines.

Nothing here is written per event type.  The envelope, item and part
machines come from the generated tables; an event is legal when some
transition of its machine, from the current state, emits it next.  Payloads
are checked against the dialect's generated models.
"""

from __future__ import annotations

import importlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, TypeGuard

import msgspec
import msgspec.inspect as mi

from ..core.dialect import Dialect
from ..core.errors import BadValue
from ..core.input_form import sse_from_input
from ..core.processor import get_dialect
from ..core.sse_parse import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_LINE_BYTES,
    MAX_NESTING,
    SSELimitError,
    has_surrogate,
    join_surrogates,
    nesting_exceeds,
    parse_sse,
    replace_surrogates,
)
from ..core.stream import TextAcc

ERROR = "error"
WARNING = "warning"
# Every rule: its stable id, its severity, and what it means.  An error breaks
# a strict client or an invariant of the protocol; a warning is legal but
# unusual, or rejected only by a newer strict SDK than the producer targeted.
RULES: dict[str, tuple[str, str]] = {
    "MALFORMED_JSON": (
        ERROR,
        "a data line is not JSON, or holds NaN, Infinity or a number beyond the double range",
    ),
    "SSE_LIMIT": (
        ERROR,
        "an SSE line or event is over the parser's size cap; the rest is not read",
    ),
    "LONE_SURROGATE": (
        WARNING,
        "a string holds a UTF-16 surrogate without its pair (clients make it U+FFFD or fail)",
    ),
    "MALFORMED_EVENT": (ERROR, "an event is not a JSON object with a string type"),
    "BARE_ERROR": (ERROR, "an error object without a type instead of error + response.failed"),
    "EVENT_NAME_MISMATCH": (ERROR, "the SSE event: line differs from the JSON type"),
    "SEQ_MISSING": (ERROR, "sequence_number is missing or not an integer"),
    "SEQ_LEGACY": (
        WARNING,
        "no event carries sequence_number: a stream from before the API added it",
    ),
    "SEQ_NOT_FROM_ZERO": (ERROR, "sequence_number does not start at 0"),
    "CONTINUATION": (
        WARNING,
        "a resumed stream (starting_after): it starts past 0 without response.created; "
        "what came before it is not checked",
    ),
    "SEQ_NOT_INCREASING": (ERROR, "sequence_number does not strictly increase"),
    "NON_STANDARD_EVENT": (ERROR, "an event some servers send that no dialect defines"),
    "EXTENSION_EVENT": (
        ERROR,
        "a slug-prefixed extension event in the openai dialect (strict openai clients reject it)",
    ),
    "UNKNOWN_EXTENSION_EVENT": (
        WARNING,
        "a slug-prefixed extension event the spec does not describe (Open Responses)",
    ),
    "NEWER_EVENT": (WARNING, "an event type the spec does not know: a newer API; not checked"),
    "LEGACY_FIELD": (
        WARNING,
        "a field that older genuine streams leave out, which the newest SDK requires",
    ),
    "SCHEMA_INVALID": (ERROR, "the payload does not match the dialect's model of its event"),
    "CREATED_NOT_FIRST": (ERROR, "the stream does not start with response.created"),
    "ENVELOPE_ORDER": (
        ERROR,
        "an envelope event out of order (created, in_progress, ..., terminal)",
    ),
    "ERROR_WITHOUT_FAILED": (ERROR, "an error event not followed by response.failed"),
    "EVENT_AFTER_TERMINAL": (ERROR, "an event after the terminal event"),
    "MISSING_TERMINAL": (ERROR, "the stream ends without a terminal event"),
    "MISSING_DONE": (ERROR, "an item or part is not closed before the next step or the end"),
    "OUTPUT_MISMATCH": (ERROR, "the terminal Response's output differs from the streamed items"),
    "STATUS_MISMATCH": (ERROR, "the terminal Response's status differs from its event"),
    "TRUNCATED_BUT_COMPLETED": (ERROR, "response.completed although an item is incomplete"),
    "INCOMPLETE_WITHOUT_REASON": (
        ERROR,
        "response.incomplete without a valid incomplete_details.reason",
    ),
    "USAGE_MISSING": (WARNING, "the terminal Response carries no usage"),
    "ITEM_OUTSIDE_RESPONSE": (ERROR, "an item event before response.in_progress or after the end"),
    "ADDRESS_MISSING": (ERROR, "an event lacks output_index or its content/summary index"),
    "DUPLICATE_OUTPUT_INDEX": (ERROR, "output_item.added for an output_index already used"),
    "OUTPUT_INDEX_NOT_DENSE": (ERROR, "output_index skips or goes back"),
    "INTERLEAVED_ITEMS": (WARNING, "an item opens while another is still open"),
    "UNSPECIFIED_ITEM": (WARNING, "an item type without a spec; its payload is not checked"),
    "EXTENSION_ITEM": (
        ERROR,
        "a slug-prefixed extension item in the openai dialect (strict openai clients reject it)",
    ),
    "DUPLICATE_ITEM_ID": (ERROR, "two items share an id"),
    "ITEM_ORDER": (ERROR, "an item event its state machine does not allow here"),
    "ADDED_NOT_IN_PROGRESS": (WARNING, "an item is added with a status other than in_progress"),
    "UNKNOWN_ITEM": (ERROR, "an event for an output_index that was never added"),
    "ITEM_ID_MISMATCH": (ERROR, "an event's item_id differs from the item at its output_index"),
    "EVENT_AFTER_ITEM_DONE": (ERROR, "an event for an item after its output_item.done"),
    "ITEM_TYPE_CHANGED": (ERROR, "output_item.done carries another item type than added"),
    "DONE_IN_PROGRESS": (ERROR, "output_item.done with status in_progress"),
    "DONE_TEXT_MISMATCH": (ERROR, "a done text or item field differs from the concatenated deltas"),
    "DONE_WITHOUT_DELTAS": (WARNING, "a text or arguments that arrive only in their done event"),
    "DONE_PARTS_MISMATCH": (ERROR, "the done item's parts differ from the parts streamed"),
    "ARGUMENTS_NOT_JSON": (WARNING, "completed tool arguments that are not JSON (glued calls?)"),
    "CONTENT_INDEX_NOT_DENSE": (ERROR, "content_index is not dense from 0 within the item"),
    "SUMMARY_INDEX_NOT_DENSE": (ERROR, "summary_index is not dense from 0 within the item"),
    "PART_NOT_OPEN": (ERROR, "a part event before its part was added"),
    "EVENT_AFTER_PART_DONE": (ERROR, "a part event after the part was done"),
    "PART_ORDER": (ERROR, "a part event its state machine does not allow here"),
    "PART_KIND": (ERROR, "a part kind the item type has no slot for"),
}
# Warnings about a producer's hygiene: ``strict`` makes them errors, for server
# authors who test their own output.
HYGIENE = frozenset(
    {
        "INTERLEAVED_ITEMS",
        "USAGE_MISSING",
        "ADDED_NOT_IN_PROGRESS",
        "ARGUMENTS_NOT_JSON",
        "DONE_WITHOUT_DELTAS",
        "LEGACY_FIELD",
        "SEQ_LEGACY",
        "NEWER_EVENT",
        "UNSPECIFIED_ITEM",
        "UNKNOWN_EXTENSION_EVENT",
        "LONE_SURROGATE",
    }
)
# Fields whose bytes the server may change between events (OpenAI re-encrypts
# them): compared by presence only.
OPAQUE_FIELDS = frozenset({"encrypted_content", "fingerprint"})
TERMINALS = ("response.completed", "response.incomplete", "response.failed")
INCOMPLETE_REASONS = ("max_output_tokens", "content_filter")
# Events that some servers send but no dialect of the protocol defines.
KNOWN_NON_STANDARD = {
    "response.reasoning_part.added": "vLLM's reasoning part event",
    "response.reasoning_part.done": "vLLM's reasoning part event",
}


@dataclass(frozen=True)
class Violation:
    """One broken rule, at one event of the stream."""

    rule: str
    severity: str
    index: int  # position of the event in the stream, from 0
    sequence_number: int | None
    message: str

    def __str__(self) -> str:
        seq = "-" if self.sequence_number is None else str(self.sequence_number)
        return f"#{self.index} seq={seq} {self.severity} {self.rule}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


Config = tuple[str, tuple[str, ...]]  # (state, events still to come from the transition)


Configs = frozenset[Config]
# Per machine table: (table, {(configs, event): next configs}); every run of a table
# shares it, so each step is computed once per stream shape, then looked up.
_STEPS: dict[int, tuple[Mapping[str, Any], dict[tuple[Configs, str], Configs]]] = {}


def _steps_of(table: Mapping[str, Any]) -> dict[tuple[Configs, str], Configs]:
    entry = _STEPS.get(id(table))
    if entry is None or entry[0] is not table:
        if len(_STEPS) >= 256:  # tables made on the fly: keep the cache bounded
            _STEPS.clear()
        entry = _STEPS[id(table)] = (table, {})
    return entry[1]


class _Machine:
    """Nondeterministic run of a spec machine over the events it emits."""

    __slots__ = ("configs", "table", "_steps")

    def __init__(self, table: Mapping[str, Any]) -> None:
        self.table = table
        self.configs: Configs = frozenset({(table["initial"], ())})
        self._steps = _steps_of(table)

    def _closure(self, configs: Configs) -> set[Config]:
        out = set(configs)
        todo = [c for c in configs if not c[1]]
        while todo:
            state, _ = todo.pop()
            for name, target in self.table["states"].get(state, {}).items():
                emits = self.table["transitions"][name]["emits_from"][state]
                if not emits and (target, ()) not in out:
                    out.add((target, ()))
                    todo.append((target, ()))
        return out

    def _next(self, event: str) -> Configs:
        key = (self.configs, event)
        nxt = self._steps.get(key)
        if nxt is None:
            found: set[Config] = set()
            for state, rest in self._closure(self.configs):
                if rest:
                    if rest[0] == event:
                        found.add((state, rest[1:]))
                    continue
                for name, target in self.table["states"].get(state, {}).items():
                    emits = self.table["transitions"][name]["emits_from"][state]
                    if emits and emits[0] == event:
                        found.add((target, tuple(emits[1:])))
            nxt = self._steps[key] = frozenset(found)
        return nxt

    def step(self, event: str) -> bool:
        nxt = self._next(event)
        if not nxt:
            return False
        self.configs = nxt
        return True

    def expects(self, event: str) -> bool:
        """Whether ``event`` could come next."""
        return bool(self._next(event))

    @property
    def finished(self) -> bool:
        return any(not rest and s in self.table["finals"] for s, rest in self.configs)

    @property
    def mid_transition(self) -> bool:
        return all(rest for _, rest in self.configs)

    @property
    def states(self) -> set[str]:
        return {s for s, _ in self.configs}

    def resume(self) -> None:
        """Start anywhere past the initial state, mid-transition included: a stream
        resumed partway, whose beginning is not seen."""
        table = self.table
        configs: set[Config] = set()
        for state, moves in table["states"].items():
            if state != table["initial"]:
                configs.add((state, ()))
            for name, target in moves.items():
                emits = table["transitions"][name]["emits_from"][state]
                configs.update((target, tuple(emits[k:])) for k in range(1, len(emits)))
        self.configs = frozenset(configs)

    def in_state(self, name: str) -> bool:
        """Whether ``name`` is one of the states the run may be in."""
        for state, _ in self.configs:
            if state == name:
                return True
        return False


class _LegacyFields:
    """Where a payload's LEGACY fields can be: for each Struct class, its own legacy
    fields and the fields whose types can lead to a class that has some.

    Computed once per class from the models' types, so checking an event walks only the
    parts of it where a legacy field can be (none, for most events).
    """

    def __init__(self, legacy: Mapping[str, list[str]]) -> None:
        self.legacy = legacy
        self._reaches: dict[type, bool] = {}
        self._walk: dict[type, tuple[str, ...]] = {}

    def own(self, cls: type) -> list[str]:
        return self.legacy.get(cls.__name__, [])

    def walk(self, cls: type) -> tuple[str, ...]:
        """The fields of ``cls`` to look into."""
        fields = self._walk.get(cls)
        if fields is None:
            try:
                info = mi.type_info(cls)
                assert isinstance(info, mi.StructType)
                fields = tuple(
                    f.name
                    for f in info.fields
                    if any(self.reaches(c) for c in _struct_classes(f.type))
                )
            except Exception:  # a type inspect cannot read: look everywhere, as before
                fields = tuple(getattr(cls, "__struct_fields__", ()))
            self._walk[cls] = fields
        return fields

    def reaches(self, cls: type) -> bool:
        """Whether a value of ``cls`` can hold a legacy field."""
        found = self._reaches.get(cls)
        if found is None:
            self._reaches[cls] = False  # a class that holds itself: no answer from there
            found = bool(self.own(cls)) or bool(self.walk(cls))
            self._reaches[cls] = found
        return found


def _struct_classes(t: Any) -> list[type]:
    """The Struct classes a field of inspected type ``t`` can hold (not looking inside)."""
    if isinstance(t, mi.StructType):
        return [t.cls]
    if isinstance(t, mi.UnionType):
        return [c for member in t.types for c in _struct_classes(member)]
    if isinstance(t, mi.ListType | mi.SetType | mi.FrozenSetType | mi.VarTupleType):
        return _struct_classes(t.item_type)
    if isinstance(t, mi.TupleType):
        return [c for member in t.item_types for c in _struct_classes(member)]
    if isinstance(t, mi.DictType):
        return _struct_classes(t.value_type)
    if isinstance(t, mi.Metadata):
        return _struct_classes(t.type)
    return []


@dataclass
class _Part:
    kind: str
    machine: _Machine
    accs: dict[str, Any] = field(default_factory=dict)
    done: dict[str, Any] | None = None


@dataclass
class _Item:
    type: str | None  # spec item type, None when the spec has no such item
    item_id: str
    output_index: int
    machine: _Machine | None
    added: dict[str, Any]
    accs: dict[str, Any] = field(default_factory=dict)
    parts: dict[str, list[_Part]] = field(default_factory=dict)  # index key -> parts
    done: dict[str, Any] | None = None
    earlier: bool = False  # opened before a resumed stream began: not checked

    def open_parts(self) -> list[_Part]:
        return [p for ps in self.parts.values() for p in ps if not p.machine.finished]


class StreamValidator:
    """Checks a stream event by event; ``violations`` collects what it finds."""

    def __init__(self, dialect: Dialect | str = "openai", strict: bool = False) -> None:
        self.dialect = get_dialect(dialect)
        self.strict = strict
        self.legacy: Mapping[str, list[str]] = getattr(self.dialect.tables, "LEGACY", {})
        self._legacy_fields = _legacy_fields(self.dialect, self.legacy)
        self._raw: str | None = None  # the JSON text of the payload being checked, if known
        self.warned: set[tuple[str, str]] = set()
        t = self.dialect.tables
        self.items_table: Mapping[str, Any] = t.ITEMS
        self.parts_table: Mapping[str, Any] = t.PARTS
        self.events_table: Mapping[str, Any] = t.EVENTS
        self.envelope = _Machine(t.ENVELOPE)
        self.items_in: str = t.ENVELOPE["items_in"]
        self.wire = self.dialect.wire_types
        self.item_kinds = {wire: spec for spec, wire in self.dialect.item_types.items()}
        self.part_kinds = {p["wire"]: k for k, p in self.parts_table.items()}
        self.event_type = msgspec.json.Decoder(self.dialect.reading.Event)
        self.violations: list[Violation] = []
        self.items: dict[int, _Item] = {}
        self.by_id: dict[str, _Item] = {}
        self.index = -1
        # the first event had no sequence_number: read as a stream from before the API
        # numbered its events (SEQ_LEGACY, once); events without one are then checked as
        # if numbered in order
        self.unsequenced = False
        self.seq: int | None = None
        self.last_seq: int | None = None
        # the first event is past sequence_number 0 and not response.created: a stream
        # resumed with starting_after (CONTINUATION); what it cannot see is not checked
        self.resumed = False
        self.terminal: str | None = None
        self.pending_error = False
        self.open_item: _Item | None = None

    # -- reporting ------------------------------------------------------------
    def _add(self, rule: str, message: str) -> None:
        severity = RULES[rule][0]
        if self.strict and rule in HYGIENE:
            severity = ERROR
        self.violations.append(Violation(rule, severity, self.index, self.seq, message))

    @property
    def errors(self) -> list[Violation]:
        return [v for v in self.violations if v.severity == ERROR]

    # -- input ----------------------------------------------------------------
    def feed_sse(
        self,
        chunks: Iterable[bytes],
        *,
        max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
        max_event_bytes: int | None = DEFAULT_MAX_EVENT_BYTES,
        input: str = "auto",
    ) -> None:
        """Every message of an SSE byte stream, or of JSON lines (``feed_raw`` each).

        ``input`` is ``"sse"``, ``"jsonl"`` (one event per line) or ``"auto"``, told from
        the first bytes (``sse_from_input``).  A line or event over the parser's caps is
        an ``SSE_LIMIT`` violation, and what follows it is not read.  Call ``finish``
        afterwards.
        """
        try:
            for message in parse_sse(
                sse_from_input(chunks, input),
                max_line_bytes=max_line_bytes,
                max_event_bytes=max_event_bytes,
            ):
                self.feed_raw(message.data, message.event)
        except SSELimitError as exc:
            self.index += 1
            self.seq = None
            self._add("SSE_LIMIT", str(exc))

    def feed_raw(self, data: str, event: str | None = None) -> None:
        """One SSE message: its ``data`` text and its ``event:`` name, if any."""
        if data.strip() == "[DONE]":
            return
        if nesting_exceeds(data):
            self.index += 1
            self.seq = None
            self._add("MALFORMED_JSON", f"data nests deeper than {MAX_NESTING} levels")
            return
        try:
            payload = _decode(data)
            raw: str | None = data
        except Exception:  # what msgspec refuses: json.loads decides (and words the error)
            raw = None
            try:
                payload = json.loads(data, parse_constant=_not_json)
            except (ValueError, RecursionError) as exc:
                self.index += 1
                self.seq = None
                self._add("MALFORMED_JSON", f"data is not JSON: {exc}")
                return
        self._raw = raw
        try:
            self.feed(payload, event)
        finally:
            self._raw = None

    def feed(self, payload: Any, event: str | None = None) -> None:
        """One event payload (a parsed JSON object).  Never raises on any JSON value."""
        self.index += 1
        self.seq = None
        try:
            self._feed(payload, event)
        except RecursionError:
            self._add("MALFORMED_EVENT", "the payload is nested too deeply to check")

    def _feed(self, payload: Any, event: str | None) -> None:
        if not _is_mapping(payload) or not isinstance(payload.get("type"), str):
            if _is_mapping(payload) and "error" in payload:
                self._add(
                    "BARE_ERROR",
                    "an error object without a type; send 'error' then 'response.failed'",
                )
            else:
                self._add("MALFORMED_EVENT", "an event must be a JSON object with a string 'type'")
            return
        kind: str = payload["type"]
        seq = payload.get("sequence_number")
        self.seq = seq if isinstance(seq, int) else None
        if event is not None and event != kind:
            self._add("EVENT_NAME_MISMATCH", f"SSE event {event!r} but JSON type {kind!r}")
        if self.index == 0 and "sequence_number" not in payload:
            self.unsequenced = True
            self._add("SEQ_LEGACY", "no sequence_number: read as a stream from an older API")
        elif self.index == 0 and isinstance(seq, int) and _resumes(seq, kind, self.wire):
            self.resumed = True
            self.envelope.resume()
            self._add(
                "CONTINUATION",
                f"the stream resumes after sequence_number {seq - 1}: a continuation; "
                "items opened before it and the output they made are not checked",
            )
        if not (self.unsequenced and "sequence_number" not in payload):
            self._sequence(seq)
        if self.terminal is not None:
            self._add("EVENT_AFTER_TERMINAL", f"{kind} after {self.terminal}")
            return
        name = self.wire.get(kind)
        if name is None:
            self._unknown(kind, payload)
            return
        self._schema(payload, kind)
        if self.pending_error and name != "response.failed":
            self._add(
                "ERROR_WITHOUT_FAILED", "an 'error' event must be followed by response.failed"
            )
        self.pending_error = name == "error"
        address = self.events_table[name]["address"]
        if address == "none":
            self._envelope(name, payload)
        elif address in ("output", "item"):
            self._item_event(name, payload)
        else:
            self._part_event(name, payload, address)

    def finish(self) -> list[Violation]:
        """End of input: report what never closed."""
        self.index += 1
        self.seq = None
        if self.terminal is None:
            self._add(
                "MISSING_TERMINAL",
                "the stream ended without response.completed, "
                "response.incomplete or response.failed",
            )
            for item in self.items.values():
                if item.done is None:
                    self._add(
                        "MISSING_DONE",
                        f"item {item.item_id} (output_index "
                        f"{item.output_index}) never got output_item.done",
                    )
        return self.violations

    # -- rules ----------------------------------------------------------------
    def _sequence(self, seq: Any) -> None:
        if not isinstance(seq, int) or isinstance(seq, bool):
            self._add("SEQ_MISSING", "sequence_number is missing or not an integer")
            return
        if self.last_seq is None:
            if seq != 0 and not self.resumed:
                self._add("SEQ_NOT_FROM_ZERO", f"sequence_number starts at {seq}, not 0")
        elif seq <= self.last_seq:
            self._add("SEQ_NOT_INCREASING", f"sequence_number {seq} after {self.last_seq}")
        self.last_seq = seq

    def _once(self, rule: str, key: str, message: str) -> None:
        if (rule, key) not in self.warned:
            self.warned.add((rule, key))
            self._add(rule, message)

    def _unknown(self, kind: str, payload: Mapping[str, Any]) -> None:
        if kind in KNOWN_NON_STANDARD:
            self._add(
                "NON_STANDARD_EVENT",
                f"{kind} is not in the {self.dialect.name} protocol ({KNOWN_NON_STANDARD[kind]})",
            )
            return
        other = _other_dialect(self.dialect, kind)
        if other is not None:
            self._add(
                "NON_STANDARD_EVENT",
                f"{kind} is the {other} dialect's name; the {self.dialect.name} dialect "
                "does not define it",
            )
        elif ":" in kind and self.dialect.name == "openai":
            self._add("EXTENSION_EVENT", f"{kind} is an extension event; openai clients reject it")
        elif ":" in kind:
            self._once(
                "UNKNOWN_EXTENSION_EVENT",
                kind,
                f"{kind} is a provider extension the spec does not describe; not checked",
            )
        else:
            self._once(
                "NEWER_EVENT", kind, f"{kind} is not in the spec (a newer API?); not checked"
            )
        # The envelope invariants still hold for an event the spec does not know.
        if self.pending_error:
            self._add(
                "ERROR_WITHOUT_FAILED", "an 'error' event must be followed by response.failed"
            )
            self.pending_error = False
        oi = payload.get("output_index")
        if _is_index(oi):
            self._in_items_state(kind)
            self._find(payload, oi)

    def _schema(self, payload: Mapping[str, Any], kind: str) -> None:
        known = self._known_items(payload)
        if known is None:
            return
        if self.unsequenced and "sequence_number" not in known:  # checked as if numbered
            known = {**known, "sequence_number": self.index}
        if known is payload and self._raw is not None:
            text = self._raw  # the payload's own JSON, its nesting already checked
        else:
            try:
                text = json.dumps(known)
            except (TypeError, ValueError) as exc:  # a payload given as objects, not JSON
                self._add("MALFORMED_EVENT", f"{kind}: not a JSON value ({exc})")
                return
            if nesting_exceeds(text):
                self._add("MALFORMED_EVENT", f"{kind}: nests deeper than {MAX_NESTING} levels")
                return
        try:
            decoded = self.event_type.decode(text)
        except msgspec.ValidationError as exc:
            self._add("SCHEMA_INVALID", f"{kind}: {exc}")
            return
        except msgspec.DecodeError:
            # what json accepts and msgspec does not: a number beyond the double range
            # (NaN, Infinity), or a lone surrogate
            decoded = self._odd_values(known, kind)
            if decoded is None:
                return
        if self.legacy:
            self._legacy(decoded, "$")

    def _odd_values(self, payload: Mapping[str, Any], kind: str) -> Any:
        """Report non-finite numbers and lone surrogates; the payload decoded without them."""
        found: dict[str, str] = {}
        clean = _scrub(payload, "$", found)
        if "number" in found:
            self._add(
                "MALFORMED_JSON",
                f"{kind}: {found['number']} is NaN, Infinity or beyond the range of a double",
            )
        if "surrogate" in found:
            self._once(
                "LONE_SURROGATE",
                "",
                f"{kind}: {found['surrogate']} holds a surrogate without its pair (read as U+FFFD)",
            )
        try:
            return self.event_type.decode(json.dumps(clean))
        except msgspec.ValidationError as exc:
            self._add("SCHEMA_INVALID", f"{kind}: {exc}")
        except msgspec.DecodeError as exc:
            self._add("MALFORMED_EVENT", f"{kind}: cannot be checked ({exc})")
        return None

    def _known(self, item: Any) -> bool:
        """Whether the schema check covers ``item``: anything but an item whose type is a
        string the spec lacks (a type that is not a string is a schema error)."""
        if not _is_mapping(item):
            return True
        kind = item.get("type")
        return not isinstance(kind, str) or kind in self.item_kinds

    def _known_items(self, payload: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The payload without items of types the spec lacks (they are warned about).

        None for an event that carries such an item: its payload is not checked.
        """
        if not self._known(payload.get("item")):
            return None
        response = payload.get("response")
        if _is_mapping(response) and isinstance(response.get("output"), list):
            output = response["output"]
            if not all(self._known(i) for i in output):
                kept = [i for i in output if self._known(i)]
                payload = {**payload, "response": {**response, "output": kept}}
        return payload

    def _legacy(self, value: Any, path: str) -> None:
        if isinstance(value, msgspec.Struct):
            cls = type(value)
            fields = self._legacy_fields
            for fname in fields.own(cls):
                if getattr(value, fname, None) is msgspec.UNSET:
                    self._once(
                        "LEGACY_FIELD",
                        f"{cls.__name__}.{fname}",
                        f"{path}.{fname} is missing: older streams leave it out, "
                        "the newest SDK requires it",
                    )
            for fname in fields.walk(cls):
                self._legacy(getattr(value, fname), f"{path}.{fname}")
        elif isinstance(value, list):
            for i, v in enumerate(value[:64]):
                self._legacy(v, f"{path}[{i}]")

    def _envelope(self, name: str, payload: Mapping[str, Any]) -> None:
        first = self.index == 0 and not self.resumed
        if first and name not in ("response.created", "response.queued"):
            self._add(
                "CREATED_NOT_FIRST", f"the first event is {payload['type']}, not response.created"
            )
        if not self.envelope.step(name):
            self._add(
                "ENVELOPE_ORDER",
                f"{payload['type']} is not allowed in envelope state "
                f"{sorted(self.envelope.states)}",
            )
        if name in TERMINALS:
            self.terminal = payload["type"]
            self._terminal(name, payload)

    def _terminal(self, name: str, payload: Mapping[str, Any]) -> None:
        response = payload.get("response")
        if not isinstance(response, Mapping):
            return
        for item in self.items.values():
            if item.done is None:
                self._add(
                    "MISSING_DONE",
                    f"item {item.item_id} (output_index "
                    f"{item.output_index}) is still open at {payload['type']}",
                )
            for part in item.open_parts():
                self._add(
                    "MISSING_DONE",
                    f"a {part.kind} part of {item.item_id} is still open at {payload['type']}",
                )
        output = response.get("output")
        if self._output_differs(output):
            got = len(output) if isinstance(output, list) else output
            self._add(
                "OUTPUT_MISMATCH",
                f"the final Response's output ({got} items) differs "
                f"from the {len(self.items)} streamed items",
            )
        expected = {
            "response.completed": "completed",
            "response.incomplete": "incomplete",
            "response.failed": "failed",
        }[name]
        if response.get("status") != expected:
            self._add(
                "STATUS_MISMATCH", f"{payload['type']} carries status {response.get('status')!r}"
            )
        if name == "response.completed":
            cut = [
                i.item_id
                for i in self.items.values()
                if isinstance(i.done, Mapping) and i.done.get("status") == "incomplete"
            ]
            if cut:
                self._add(
                    "TRUNCATED_BUT_COMPLETED",
                    f"items {cut} are incomplete but the "
                    "response says completed; send response.incomplete",
                )
        if name == "response.incomplete":
            details = response.get("incomplete_details")
            reason = details.get("reason") if isinstance(details, Mapping) else None
            if reason not in INCOMPLETE_REASONS:
                self._add("INCOMPLETE_WITHOUT_REASON", f"incomplete_details.reason is {reason!r}")
        usage = response.get("usage")
        if not isinstance(usage, Mapping):
            self._add("USAGE_MISSING", "the terminal Response has no usage")

    def _output_differs(self, output: Any) -> bool:
        """Whether the terminal output differs from the items streamed and closed.

        Items left open were reported (MISSING_DONE), and a continuation's items opened
        before it are unseen: neither is compared.  A continuation's output may hold
        items from before it, so its items are compared by output_index.
        """
        if not isinstance(output, list):
            return True
        if self.resumed:
            placed = [(i, it) for i, it in self.items.items() if not it.earlier]
        else:
            if len(output) != len(self.items):
                return True
            placed = [(n, self.items[i]) for n, i in enumerate(sorted(self.items))]
        for at, item in placed:
            if item.done is None:
                continue
            if at >= len(output) or _opaque(output[at]) != _opaque(item.done):
                return True
        return False

    # -- items ----------------------------------------------------------------
    def _in_items_state(self, kind: str) -> None:
        if not self.envelope.in_state(self.items_in):
            self._add(
                "ITEM_OUTSIDE_RESPONSE",
                f"{kind} before response.in_progress or after the response ended",
            )

    def _item_event(self, name: str, payload: Mapping[str, Any]) -> None:
        kind = payload["type"]
        self._in_items_state(kind)
        oi = payload.get("output_index")
        if not _is_index(oi):
            self._add("ADDRESS_MISSING", f"{kind} has no output_index (a non-negative integer)")
            return
        if name == "response.output_item.added":
            self._added(payload, oi)
            return
        item = self._find(payload, oi)
        if item is None:
            return
        self._advance_item(item, name, kind)
        self._accumulate(
            item.accs, item.type and self.items_table[item.type]["accumulators"], name, payload
        )
        if name == "response.output_item.done":
            self._item_done(item, payload)

    def _added(self, payload: Mapping[str, Any], oi: int) -> None:
        item = payload.get("item")
        if not isinstance(item, Mapping):
            return
        expected = len(self.items)
        if self.resumed:  # a continuation may open its first item at any index
            expected = max(self.items, default=oi - 1) + 1
        if oi in self.items:
            self._add("DUPLICATE_OUTPUT_INDEX", f"output_index {oi} was already added")
            return
        if oi != expected:
            self._add("OUTPUT_INDEX_NOT_DENSE", f"output_index {oi}, expected {expected}")
        if self.open_item is not None and self.open_item.done is None:
            self._add(
                "INTERLEAVED_ITEMS",
                f"item {item.get('id')} opens while {self.open_item.item_id} is still open",
            )
        spec_type = self.item_kinds.get(str(item.get("type")))
        machine = _Machine(self.items_table[spec_type]) if spec_type else None
        if spec_type is None and ":" in str(item.get("type")) and self.dialect.name == "openai":
            self._add(
                "EXTENSION_ITEM",
                f"item type {item.get('type')!r} is an extension; openai clients reject it",
            )
        elif spec_type is None:
            self._once(
                "UNSPECIFIED_ITEM",
                str(item.get("type")),
                f"item type {item.get('type')!r} has no spec; its payload is not checked",
            )
        record = _Item(spec_type, str(item.get("id")), oi, machine, dict(item))
        if record.item_id in self.by_id:
            self._add("DUPLICATE_ITEM_ID", f"item id {record.item_id} is used twice")
        self.items[oi] = record
        self.by_id[record.item_id] = record
        self.open_item = record
        if machine is not None and not machine.step("response.output_item.added"):
            self._add("ITEM_ORDER", "output_item.added is not how this item starts")
        if item.get("status") not in (None, "in_progress"):
            self._add("ADDED_NOT_IN_PROGRESS", f"item added with status {item.get('status')!r}")

    def _find(self, payload: Mapping[str, Any], oi: int) -> _Item | None:
        item = self.items.get(oi)
        kind = payload["type"]
        if item is None and self.resumed and not self._opened_since(oi):
            item_id = payload.get("item_id")
            if _is_mapping(payload.get("item")):
                item_id = payload["item"].get("id")
            item = self.items[oi] = _Item(None, str(item_id), oi, None, {}, earlier=True)
            return item
        if item is None:
            self._add("UNKNOWN_ITEM", f"{kind} for output_index {oi}, which was never added")
            return None
        item_id = payload.get("item_id")
        if "item" in payload and _is_mapping(payload["item"]):
            item_id = payload["item"].get("id")
        if item_id is not None and item_id != item.item_id:
            self._add(
                "ITEM_ID_MISMATCH",
                f"{kind} names item {item_id} but output_index {oi} is {item.item_id}",
            )
        if item.done is not None:
            self._add("EVENT_AFTER_ITEM_DONE", f"{kind} after output_item.done of {item.item_id}")
            return None
        return item

    def _opened_since(self, oi: int) -> bool:
        """Whether a continuation opened an item at or past ``oi`` itself."""
        return any(not it.earlier and i >= oi for i, it in self.items.items())

    def _advance_item(self, item: _Item, name: str, kind: str) -> None:
        if item.machine is None:
            return
        if name == "response.output_item.done":
            for part in item.open_parts():
                self._add(
                    "MISSING_DONE",
                    f"the {part.kind} part of {item.item_id} is not done before output_item.done",
                )
        if not item.machine.step(name):
            self._add(
                "ITEM_ORDER",
                f"{kind} is not allowed for a {item.type} item in state "
                f"{sorted(item.machine.states)}",
            )

    def _item_done(self, item: _Item, payload: Mapping[str, Any]) -> None:
        done = payload.get("item")
        if not isinstance(done, Mapping):
            return
        item.done = dict(done)
        if self.open_item is item:
            self.open_item = None
        if item.earlier:
            return
        if done.get("type") != item.added.get("type"):
            self._add("ITEM_TYPE_CHANGED", f"item {item.item_id} changed type")
        caller = done.get("caller")
        by_program = isinstance(caller, Mapping) and caller.get("type") == "program"
        if done.get("status") == "in_progress" and not by_program:
            # A call made by a program stays in_progress until the program ends.
            self._add("DONE_IN_PROGRESS", f"item {item.item_id} is done with status in_progress")
        if item.type is None:
            return
        table = self.items_table[item.type]
        for fname, spec in table["fields"].items():
            acc = spec.get("acc")
            if acc and acc in item.accs and _text(done.get(fname)) != _text(_value(item.accs[acc])):
                self._add(
                    "DONE_TEXT_MISMATCH",
                    f"{item.type}.{fname} in output_item.done differs from the concatenated deltas",
                )
            if spec.get("format") == "json" and done.get("status") == "completed":
                self._check_json(item, fname, done.get(fname))
            slot = spec.get("slot")
            if slot and isinstance(done.get(fname), list):
                key = self._slot_key(item.type, slot)
                streamed = [
                    p.done for p in item.parts.get(key, []) if p.kind in table["slots"][slot]
                ]
                if streamed and _opaque(done[fname]) != _opaque(streamed):
                    self._add(
                        "DONE_PARTS_MISMATCH",
                        f"{item.type}.{fname} differs from the parts that were streamed",
                    )

    def _check_json(self, item: _Item, fname: str, value: Any) -> None:
        if not isinstance(value, str) or not value:
            return
        try:
            json.loads(value)
        except (ValueError, RecursionError):
            glued = value.count("}{") > 0
            self._add(
                "ARGUMENTS_NOT_JSON",
                f"{item.type}.{fname} of {item.item_id} is not JSON"
                + (" (several calls glued together?)" if glued else ""),
            )

    def _slot_key(self, item_type: str, slot: str) -> str:
        kinds = self.items_table[item_type]["slots"][slot]
        return str(self.parts_table[kinds[0]]["index"]) if kinds else ""

    # -- parts ------------------------------------------------------------------
    def _part_event(self, name: str, payload: Mapping[str, Any], address: str) -> None:
        kind = payload["type"]
        self._in_items_state(kind)
        key = "content_index" if address == "content" else "summary_index"
        oi, idx = payload.get("output_index"), payload.get(key)
        if not _is_index(oi) or not _is_index(idx):
            self._add(
                "ADDRESS_MISSING", f"{kind} needs output_index and {key} (non-negative integers)"
            )
            return
        item = self._find(payload, oi)
        if item is None or item.earlier:  # a continuation's earlier item: its parts unseen
            return
        parts = item.parts.setdefault(key, [])
        if "part" in payload and idx == len(parts) and isinstance(payload["part"], Mapping):
            pk = self.part_kinds.get(str(payload["part"].get("type")))
            if pk is not None and _Machine(self.parts_table[pk]).expects(name):
                self._open_part(item, parts, pk, name)
                return
        if idx >= len(parts):
            rule = (
                "CONTENT_INDEX_NOT_DENSE" if key == "content_index" else "SUMMARY_INDEX_NOT_DENSE"
            )
            if idx > len(parts) and "part" in payload and name.endswith(".added"):
                self._add(rule, f"{key} {idx} in item {item.item_id}, expected {len(parts)}")
            else:
                self._add(
                    "PART_NOT_OPEN",
                    f"{kind} for {key} {idx} of {item.item_id}, which was never added",
                )
            return
        part = parts[idx]
        if part.machine.finished:
            self._add("EVENT_AFTER_PART_DONE", f"{kind} after the {part.kind} part was done")
            return
        if not part.machine.step(name):
            self._add(
                "PART_ORDER",
                f"{kind} is not allowed for a {part.kind} part in state "
                f"{sorted(part.machine.states)}",
            )
        table = self.parts_table[part.kind]
        self._accumulate(part.accs, table["accumulators"], name, payload)
        if "part" in payload and isinstance(payload["part"], Mapping) and part.machine.finished:
            done_part = dict(payload["part"])
            for fname, spec in table["fields"].items():
                acc = spec["acc"]
                if fname not in done_part and _value(part.accs.get(acc)) == []:
                    continue  # a list no delta added to, left out (OpenRouter)
                if _list_left_out(done_part.get(fname), part.accs.get(acc)):
                    # OpenAI's content_part.done carries logprobs: [] after deltas that
                    # had them (the text's done event and the item have them all)
                    done_part[fname] = _value(part.accs[acc])
                    continue
                if acc in part.accs and _text(done_part.get(fname)) != _text(
                    _value(part.accs[acc])
                ):
                    self._add(
                        "DONE_TEXT_MISMATCH",
                        f"{part.kind}.{fname} in the done part "
                        "differs from the concatenated deltas",
                    )
            part.done = done_part

    def _open_part(self, item: _Item, parts: list[_Part], kind: str, name: str) -> None:
        if item.type is not None:
            slots = self.items_table[item.type]["slots"]
            if not any(kind in kinds for kinds in slots.values()):
                self._add("PART_KIND", f"a {item.type} item has no {kind} parts")
        for other in item.open_parts():
            self._add(
                "MISSING_DONE",
                f"the {other.kind} part of {item.item_id} is not done before the next part",
            )
        machine = _Machine(self.parts_table[kind])
        machine.step(name)
        parts.append(_Part(kind, machine))

    def _accumulate(
        self, accs: dict[str, Any], table: Any, name: str, payload: Mapping[str, Any]
    ) -> None:
        if not table:
            return
        for acc, spec in table.items():
            delta_field = spec["deltas"].get(name)
            if delta_field is not None and delta_field in payload:
                value = payload[delta_field]
                if spec["kind"] == "list":
                    before = accs.get(acc, [])
                    before = before if isinstance(before, list) else []
                    accs[acc] = before + (value if isinstance(value, list) else [value])
                elif isinstance(value, str):
                    text = accs.get(acc)
                    if type(text) is not TextAcc:  # the first delta, or after a total
                        pieces = TextAcc()
                        if isinstance(text, str):
                            pieces.add(text)
                        accs[acc] = text = pieces
                    text.add(value)  # joined when compared (see _value): no quadratic copies
            total_field = spec["totals"].get(name)
            if total_field is not None and total_field in payload:
                empty: Any = [] if spec["kind"] == "list" else ""
                total = payload[total_field]
                if acc not in accs and total and isinstance(total, str):
                    # no delta at all: the whole text comes at once, which
                    # clients that render deltas never show
                    self._add(
                        "DONE_WITHOUT_DELTAS",
                        f"{payload['type']}.{total_field} arrives without any delta",
                    )
                elif _text(total) != _text(_value(accs.get(acc, empty))):
                    self._add(
                        "DONE_TEXT_MISMATCH",
                        f"{payload['type']}.{total_field} differs from the concatenated deltas",
                    )
                accs[acc] = payload[total_field]


def _list_left_out(done: Any, streamed: Any) -> bool:
    """Whether a done part's list field is empty where its deltas brought items."""
    return done == [] and isinstance(streamed, list) and bool(streamed)


def _is_mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """``isinstance(value, Mapping)``, without the ABC machinery for the usual answers."""
    return type(value) is dict or (value is not None and isinstance(value, Mapping))


def _value(acc: Any) -> Any:
    """An accumulator's value: the text of the deltas joined, or what a total set."""
    return acc.value() if type(acc) is TextAcc else acc


_decode = msgspec.json.Decoder().decode
# The LEGACY walk of each dialect, shared by every validator of it.
_LEGACY_WALKS: dict[int, tuple[Dialect, _LegacyFields]] = {}


def _legacy_fields(dialect: Dialect, legacy: Mapping[str, list[str]]) -> _LegacyFields:
    entry = _LEGACY_WALKS.get(id(dialect))
    if entry is None or entry[0] is not dialect or entry[1].legacy is not legacy:
        if len(_LEGACY_WALKS) >= 64:
            _LEGACY_WALKS.clear()
        entry = _LEGACY_WALKS[id(dialect)] = (dialect, _LegacyFields(legacy))
    return entry[1]


def _not_json(constant: str) -> Any:
    raise BadValue(f"{constant} is not JSON")


def _is_index(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _text(value: Any) -> Any:
    """A text as compared with its deltas: surrogate pairs split over deltas joined."""
    return join_surrogates(value) if isinstance(value, str) else value


def _scrub(value: Any, path: str, found: dict[str, str]) -> Any:
    """``value`` with non-finite floats as null and lone surrogates as U+FFFD (noted in found)."""
    if isinstance(value, float) and not math.isfinite(value):
        found.setdefault("number", path)
        return None
    if isinstance(value, str):
        if has_surrogate(value):
            fixed = replace_surrogates(value)
            if fixed != join_surrogates(value):
                found.setdefault("surrogate", path)
            return fixed
        return value
    if isinstance(value, Mapping):
        return {
            _scrub(k, path, found) if isinstance(k, str) else k: _scrub(v, f"{path}.{k}", found)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_scrub(v, f"{path}[{i}]", found) for i, v in enumerate(value)]
    return value


def _other_dialect(dialect: Dialect, kind: str) -> str | None:
    """The name of another dialect whose wire type ``kind`` is, if any."""
    package = importlib.import_module(__name__.partition("._runtime.")[0])
    for name, other in sorted(package.DIALECTS.items()):
        if name != dialect.name and kind in other.wire_types:
            return str(name)
    return None


def _resumes(seq: Any, kind: str, wire: Mapping[str, str]) -> bool:
    """Whether a first event starts a resumed stream: numbered past 0, not the creation."""
    number = isinstance(seq, int) and not isinstance(seq, bool) and seq > 0
    return number and wire.get(kind) != "response.created"


def _opaque(value: Any) -> Any:
    """``value`` as compared across events: every opaque field replaced by whether it is
    present, and each ``logprob`` rounded to 6 places (OpenAI rounds them so in the done
    item and the terminal output, not in the deltas and the text's done event)."""
    if isinstance(value, Mapping):
        return {
            k: (v is not None)
            if k in OPAQUE_FIELDS
            else round(v, 6)
            if k == "logprob" and isinstance(v, float)
            else _opaque(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_opaque(v) for v in value]
    return value


def validate_payloads(
    payloads: Iterable[Any], dialect: Dialect | str = "openai", strict: bool = False
) -> list[Violation]:
    """Every violation in a whole stream of parsed payloads.

    ``strict`` turns the producer-hygiene warnings into errors.
    """
    v = StreamValidator(dialect, strict=strict)
    for payload in payloads:
        v.feed(payload)
    return v.finish()
