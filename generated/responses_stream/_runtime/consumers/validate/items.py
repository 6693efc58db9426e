"""The validator's rules for output items and their parts."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...core.stream import TextAcc
from .checks import _Checks
from .machines import (
    _is_index,
    _is_mapping,
    _Item,
    _list_left_out,
    _Machine,
    _opaque,
    _Part,
    _text,
    _value,
)


class _ItemChecks(_Checks):
    """The rules of output items and their content parts: opened in order, stepped by
    their machines, their deltas adding up to what their done events say."""

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
