"""The accumulator's state, and the folding of output items and their parts."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...core.dialect import Dialect
from ...core.processor import get_dialect
from .plan import (
    OPAQUE_FIELDS,
    AccumulateError,
    Place,
    _fold,
    _index,
    _log,
    _mapping,
    _object,
    _Plan,
    _text,
)


class _Folds:
    """The accumulator's state, and how items and their parts are folded into it: opened
    at their index, filled by their deltas and totals, replaced by their done events."""

    def __init__(self, dialect: Dialect | str = "openai", *, check_texts: bool = True) -> None:
        self.dialect = get_dialect(dialect)
        self.check_texts = check_texts
        self._plan = _Plan(self.dialect)
        self._state: str = self._plan.envelope["initial"]
        self._snapshot: dict[str, Any] = {}
        self._output: list[dict[str, Any]] = []
        self._types: list[str | None] = []  # spec item type per output position
        self._pos: dict[int, int] = {}  # output_index -> position in the output list
        self._closed: set[int] = set()  # closed output positions
        self._closed_parts: set[tuple[int, str, int]] = set()  # (output position, key, index)
        # output position -> where deltas streamed text -> the slot of that part (None: item)
        self._streamed: dict[int, dict[Place, str | None]] = {}
        self._final: dict[str, Any] | None = None
        self._terminal: str | None = None
        self._last_seq: int | None = None
        self.warnings: list[str] = []  # each repair made to fold the stream, in order
        self._lost = False  # sequence numbers skipped: deltas may be missing
        self._after: int | None = None  # resumed: events numbered up to here are folded
        # resumed from a snapshot: items taken to be open that no event has touched since
        self._assumed_open: set[int] = set()

    @property
    def _checking(self) -> bool:
        """Whether done texts must match their deltas: asked for, and no event was lost."""
        return self.check_texts and not self._lost

    @property
    def _warning(self) -> Callable[[str], None] | None:
        """Where a done text that differs from its deltas is reported (None: not compared)."""
        return self._warn if self._checking else None

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        _log.warning("%s", message)

    def _skip_to_items(self) -> bool:
        """Move from ``created`` to the state items go in, as if ``in_progress`` had come."""
        env = self._plan.envelope
        items_in = self._plan.items_in
        if items_in is None or self._state == env["initial"] or not self._snapshot:
            return False
        if items_in not in env["states"][self._state].values():
            return False
        self._state = items_in
        return True

    # -- items and parts -------------------------------------------------------
    def _item_event(self, name: str, wire: str, payload: Mapping[str, Any]) -> None:
        plan = self._plan
        items_in = plan.items_in
        env = plan.envelope
        if items_in is not None and self._state != items_in:
            self._skip_to_items()  # a stream may skip response.in_progress
        if (items_in is not None and self._state != items_in) or (
            items_in is None and self._state == env["initial"]
        ):
            if self._state == env["initial"]:
                raise AccumulateError(f"{wire} before the response was created")
            raise AccumulateError(f"{wire} while the response is {self._state!r}, not {items_in!r}")
        output_index = _index(payload, "output_index", wire)
        if name in plan.item_open:
            self._open_item(name, wire, output_index, payload)
            return
        index, item = self._item(wire, output_index)
        if name in plan.item_close:
            self._close_item(name, wire, index, item, payload)
            return
        item_type = self._types[index]
        if item_type is None:
            return  # an item the spec does not know: its events pass through, as in the SDK
        ip = plan.items[item_type]
        kinds = plan.part_events.get(name, set()) & ip.slots.keys()
        if kinds:
            self._part_event(name, wire, index, item, item_type, kinds, payload)
            return
        if name not in ip.events:
            raise AccumulateError(f"{wire} does not apply to a {item.get('type')} item")
        places = self._streamed.setdefault(index, {})
        streamed = {held for (key, _, held) in places if key is None}
        deltas, totals = ip.deltas.get(name, ()), ip.totals.get(name, ())
        _fold(item, deltas, totals, payload, wire, streamed, self._warning)
        for held in streamed:
            places.setdefault((None, 0, held), None)
        status = ip.status.get(name)
        if status is not None:
            item["status"] = status

    def _item(self, wire: str, output_index: int) -> tuple[int, dict[str, Any]]:
        """The position and item of an output_index (item_id is not checked, as in the SDK)."""
        index = self._pos.get(output_index)
        if index is None:
            raise AccumulateError(f"{wire}: no output item at output_index {output_index}")
        if index in self._closed:
            raise AccumulateError(f"{wire}: output item {output_index} is already done")
        self._assumed_open.discard(index)
        return index, self._output[index]

    def _open_item(
        self, name: str, wire: str, output_index: int, payload: Mapping[str, Any]
    ) -> None:
        field = self._plan.field(name)
        if payload.get(field) is None:
            return  # an opening event without its item changes nothing, as in the SDK
        item = _object(payload, field, wire)
        following = max(self._pos, default=-1) + 1
        if output_index < following:
            raise AccumulateError(
                f"{wire}: output_index {output_index}, but the next item's index is {following}"
            )
        self._pos[output_index] = len(self._output)
        self._output.append(item)
        self._types.append(self._plan.item_kinds.get(item["type"]))

    def _close_item(
        self, name: str, wire: str, index: int, item: dict[str, Any], payload: Mapping[str, Any]
    ) -> None:
        done = _object(payload, self._plan.field(name), wire)
        # the type must match; the id may not (a gateway may hand out fresh ids on every event)
        if done["type"] != item.get("type"):
            raise AccumulateError(
                f"{wire}: {done['type']} {done.get('id')!r} does not match the "
                f"{item.get('type')} {item.get('id')!r} at output_index {index}"
            )
        if self._types[index] is not None and done.get("status") == "in_progress":
            caller = done.get("caller")
            if not (isinstance(caller, Mapping) and caller.get("type") == "program"):
                # only a call made by a program stays in_progress until the program ends
                raise AccumulateError(f"{wire}: {done['type']} {done.get('id')!r} is in_progress")
        self._check_streamed(wire, index, item, done)
        self._output[index] = done
        self._closed.add(index)

    def _check_streamed(
        self, wire: str, index: int, item: Mapping[str, Any], done: Mapping[str, Any]
    ) -> None:
        """Every text that deltas streamed into the item is the same in its closing item."""
        if not self._checking:
            return
        for (_key, at, held), slot in self._streamed.get(index, {}).items():
            if held in OPAQUE_FIELDS:
                continue
            if slot is None:
                want, got = item.get(held), done.get(held)
                where = repr(held)
            else:
                parts, final = item.get(slot), done.get(slot)
                where = f"{slot}[{at}].{held}"
                if not isinstance(final, list) or len(final) <= at:  # as the SDK: taken
                    self._warn(f"{wire}: the closing item lacks {where}, which streamed; taken")
                    continue
                if not isinstance(final[at], Mapping) or not isinstance(parts, list):
                    raise AccumulateError(f"{wire}: {where} is not an object")
                held_part = _mapping(parts[at]) if at < len(parts) else {}
                want, got = held_part.get(held), final[at].get(held)
            if _text(got) != _text(want):
                self._warn(f"{wire}: {where} differs from the text its deltas streamed; taken")

    def _part_event(
        self,
        name: str,
        wire: str,
        index: int,
        item: dict[str, Any],
        item_type: str,
        kinds: set[str],
        payload: Mapping[str, Any],
    ) -> None:
        plan = self._plan
        ip = plan.items[item_type]
        keys = {plan.parts[k].index for k in kinds}
        if len(keys) != 1:
            raise AccumulateError(f"{wire}: the tables address its parts by {sorted(keys)}")
        (key,) = keys
        at = _index(payload, key, wire)
        if name in plan.part_open:
            part = _object(payload, plan.field(name), wire)
            kind = plan.part_kinds.get(part["type"])
            if kind not in kinds:
                raise AccumulateError(
                    f"{wire}: a {part['type']} part cannot go in a {item.get('type')}"
                )
            slot = ip.slots[kind]
            parts = item.get(slot)
            if parts is None:
                parts = item[slot] = []
            if not isinstance(parts, list):
                raise AccumulateError(f"{wire}: the item's {slot!r} is not a list")
            if at != len(parts):
                raise AccumulateError(f"{wire}: {key} {at}, but the next part's is {len(parts)}")
            parts.append(part)
            return
        slots = {ip.slots[k] for k in kinds}
        if len(slots) != 1:
            raise AccumulateError(f"{wire}: its parts may be in any of {sorted(slots)}")
        (slot,) = slots
        parts = item.get(slot)
        if not isinstance(parts, list):
            parts = []
        if at >= len(parts):
            raise AccumulateError(
                f"{wire}: {key} {at} is out of range (the item has {len(parts)} {slot} parts)"
            )
        part = parts[at]
        if not isinstance(part, dict):
            raise AccumulateError(f"{wire}: the part at {key} {at} is not an object")
        kind = plan.part_kinds.get(str(part.get("type")))
        if kind not in kinds:
            raise AccumulateError(f"{wire} does not apply to the {part.get('type')} part at {at}")
        if (index, key, at) in self._closed_parts:
            raise AccumulateError(f"{wire}: part {key}={at} of output item {index} is done")
        places = self._streamed.setdefault(index, {})
        if name in plan.part_close:
            done = _object(payload, plan.field(name), wire)
            if done["type"] != part.get("type"):
                raise AccumulateError(f"{wire}: a {done['type']} part closes a {part.get('type')}")
            for k, i, held in places if self._checking else ():
                if k == key and i == at and _text(done.get(held)) != _text(part.get(held)):
                    self._warn(
                        f"{wire}: the part's {held!r} differs from the text its deltas "
                        "streamed; taken"
                    )
            parts[at] = done
            self._closed_parts.add((index, key, at))
            return
        pp = plan.parts[kind]
        streamed = {held for (k, i, held) in places if k == key and i == at}
        deltas, totals = pp.deltas.get(name, ()), pp.totals.get(name, ())
        _fold(part, deltas, totals, payload, wire, streamed, self._warning)
        for held in streamed:
            places.setdefault((key, at, held), slot)
