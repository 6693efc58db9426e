"""What the accumulator folds by: per item type and part kind, the events that open and
close it and the fields its deltas and totals fill, read once from the tables."""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeGuard

from ...core.dialect import Dialect
from ...core.errors import ResponsesStreamError
from ...core.sse_parse import has_surrogate, join_surrogates

_log = logging.getLogger(__package__)  # the package's logger


# (holder field, payload field, accumulator kind), for deltas and for totals
Delta = tuple[str, str, str]
Total = tuple[str, str, str]
# where a text was streamed: (part index key or None for the item, part index, holder field)
Place = tuple[str | None, int, str]
OPAQUE_FIELDS = frozenset({"encrypted_content", "fingerprint"})


class AccumulateError(ResponsesStreamError, ValueError):
    """The stream cannot be folded into a Response: it breaks the protocol."""


def _transitions_from(table: Mapping[str, Any], states: Iterable[str]) -> list[dict[str, Any]]:
    return [table["transitions"][name] for s in states for name in table["states"][s]]


def _opening(table: Mapping[str, Any]) -> set[str]:
    """The first event emitted from a machine's initial state."""
    return {tr["emits"][0] for tr in _transitions_from(table, [table["initial"]]) if tr["emits"]}


def _closing(table: Mapping[str, Any]) -> set[str]:
    """The last event emitted by each transition into a final state."""
    finals = set(table["finals"])
    return {
        tr["emits"][-1]
        for tr in table["transitions"].values()
        if tr["to"] in finals and tr["emits"]
    }


def _emits(table: Mapping[str, Any]) -> set[str]:
    return {e for tr in table["transitions"].values() for e in tr["emits"]}


def _union(sets: Iterable[set[str]]) -> set[str]:
    out: set[str] = set()
    for s in sets:
        out |= s
    return out


def _folds(
    table: Mapping[str, Any], holders: Mapping[str, str]
) -> tuple[dict[str, list[Delta]], dict[str, list[Total]]]:
    """Per event: the deltas and totals it folds into the fields in ``holders`` (acc -> field)."""
    deltas: dict[str, list[Delta]] = {}
    totals: dict[str, list[Total]] = {}
    for acc, spec in table["accumulators"].items():
        held = holders.get(acc)
        if held is None:
            continue  # no field of the item or part holds it
        for event, pfield in spec["deltas"].items():
            deltas.setdefault(event, []).append((held, pfield, spec["kind"]))
        for event, pfield in spec["totals"].items():
            totals.setdefault(event, []).append((held, pfield, spec["kind"]))
    return deltas, totals


class _ItemPlan:
    """What each event means for one item type."""

    def __init__(self, table: Mapping[str, Any], parts: Mapping[str, Any]) -> None:
        fields: Mapping[str, Mapping[str, Any]] = table["fields"]
        holders = {f["acc"]: name for name, f in fields.items() if "acc" in f}
        self.deltas, self.totals = _folds(table, holders)
        self.events = _emits(table)
        slot_fields = {f["slot"]: name for name, f in fields.items() if "slot" in f}
        # part kind -> the item field whose list holds it
        self.slots: dict[str, str] = {
            kind: slot_fields.get(slot, slot)
            for slot, kinds in table["slots"].items()
            for kind in kinds
            if kind in parts
        }
        statuses = set(table["statuses"])
        finals = set(table["finals"])
        targets: dict[str, set[str]] = {}
        for tr in table["transitions"].values():
            if tr["to"] in finals:
                continue  # output_item.done carries the final status
            for event in tr["emits"]:
                # a self-loop (a partial image while generating) leaves the status as it is
                targets.setdefault(event, set()).add("" if tr["to"] in tr["from"] else tr["to"])
        # event -> the status its transition sets, where the tables show it
        self.status: dict[str, str] = {}
        for event, tos in targets.items():
            if len(tos) == 1:
                (to,) = tos
                if to in statuses and to not in finals:
                    self.status[event] = to


class _PartPlan:
    def __init__(self, table: Mapping[str, Any]) -> None:
        fields: Mapping[str, Mapping[str, Any]] | None = table.get("fields")
        if fields is None:  # tables without part fields: a part accumulator is its field
            holders = {acc: acc for acc in table["accumulators"]}
        else:
            holders = {f["acc"]: name for name, f in fields.items() if "acc" in f}
        self.deltas, self.totals = _folds(table, holders)
        self.events = _emits(table)
        self.index: str = table["index"]


class _Plan:
    """The tables of one dialect, indexed by event."""

    def __init__(self, dialect: Dialect) -> None:
        t = dialect.tables
        self.wire = dialect.wire_types
        self.item_kinds = {wire: spec for spec, wire in dialect.item_types.items()}
        self.part_kinds: dict[str, str] = {p["wire"]: k for k, p in t.PARTS.items()}
        self.events: Mapping[str, Mapping[str, Any]] = t.EVENTS
        env: Mapping[str, Any] = t.ENVELOPE
        self.envelope = env
        self.items_in: str | None = env.get("items_in")
        self.envelope_events = _emits(env)
        self.items = {name: _ItemPlan(table, t.PARTS) for name, table in t.ITEMS.items()}
        self.parts = {name: _PartPlan(table) for name, table in t.PARTS.items()}
        self.item_open = _union(_opening(x) for x in t.ITEMS.values())
        self.item_close = _union(_closing(x) for x in t.ITEMS.values())
        self.part_open = _union(_opening(x) for x in t.PARTS.values())
        self.part_close = _union(_closing(x) for x in t.PARTS.values())
        # event -> the part kinds whose machines emit it
        self.part_events: dict[str, set[str]] = {}
        for kind, part in self.parts.items():
            for event in part.events:
                self.part_events.setdefault(event, set()).add(kind)

    def field(self, event: str) -> str:
        """The payload field carrying the item or part of an opening or closing event."""
        fields = self.events[event]["fields"]
        if len(fields) != 1:
            raise AccumulateError(f"{event}: expected one object field, the tables list {fields}")
        return str(fields[0])


def _text(value: Any) -> Any:
    """A text as compared with its deltas: surrogate pairs split over deltas joined."""
    return join_surrogates(value) if isinstance(value, str) else value


def _fold(
    target: dict[str, Any],
    deltas: Iterable[Delta],
    totals: Iterable[Total],
    payload: Mapping[str, Any],
    wire: str,
    streamed: set[str],
    warn: Callable[[str], None] | None = None,
) -> None:
    """Apply an event's deltas and totals to an item or part (all checked before any is applied).

    ``streamed`` holds the target's text fields that deltas have appended to; a total for
    one of them that differs from the text the deltas made is taken, as the SDK takes it,
    and ``warn`` is told (None: not compared); a delta adds its field to ``streamed``.
    """
    deltas = [d for d in deltas if d[1] in payload or d[2] == "text"]
    for held, pfield, kind in totals:
        if warn and kind == "text" and held in streamed and pfield in payload:
            if _text(payload[pfield]) != _text(target.get(held)):
                warn(f"{wire}: {pfield!r} differs from the text its deltas streamed; taken")
    for held, pfield, kind in deltas:
        if pfield not in payload:
            raise AccumulateError(f"{wire}: missing {pfield!r}")
        current = target.get(held)
        if kind == "text":
            if not isinstance(payload[pfield], str):
                raise AccumulateError(f"{wire}: {pfield!r} must be a string")
            if not isinstance(current, str | None):
                raise AccumulateError(f"{wire}: the {held!r} it appends to is not a string")
        elif not isinstance(current, list | None):
            raise AccumulateError(f"{wire}: the {held!r} it appends to is not a list")
    for held, pfield, kind in deltas:
        value = payload[pfield]
        if kind == "text":
            text = (target.get(held) or "") + value
            target[held] = join_surrogates(text) if has_surrogate(value) else text
            streamed.add(held)
        else:
            if target.get(held) is None:
                target[held] = []
            if value != []:
                target[held].extend(copy.deepcopy(value if isinstance(value, list) else [value]))
    for held, pfield, _ in totals:
        if pfield in payload:
            target[held] = copy.deepcopy(payload[pfield])


def _number(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _index(payload: Mapping[str, Any], key: str, wire: str) -> int:
    value = payload.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise AccumulateError(f"{wire}: {key!r} must be a non-negative integer, got {value!r}")
    return value


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _object(payload: Mapping[str, Any], key: str, wire: str) -> dict[str, Any]:
    value = payload.get(key)
    if not isinstance(value, Mapping) or not isinstance(value.get("type"), str):
        raise AccumulateError(f"{wire}: {key!r} must be an object with a string 'type'")
    return copy.deepcopy(dict(value))
