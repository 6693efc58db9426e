"""Plain-data tables of the state machines, for the runtime's generic tools.

The stream processor drives items through these tables (which transition
finishes an item from a given state, which one takes deltas), and the
validator and accumulator read what each event means.  Everything here is
derived from the specs; nothing is written per item type.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from .catalog import Catalog, FieldC, ItemC, MachineC, TransitionC
from .schema import legacy_fields

TERMINAL = {"done": "completed", "incomplete": "incomplete", "fail": "failed"}


def _transition(tr: TransitionC) -> dict[str, Any]:
    return {
        "from": list(tr.sources),
        "to": tr.target,
        "params": [p.name for p in tr.params],
        "required": [p.name for p in tr.params if p.required],
        "emits": [e.event for e in tr.emits],
        "emits_from": {
            state: [e.event for e in tr.emits if e.when is None or state in e.when]
            for state in tr.sources
        },
    }


def _progress_paths(m: MachineC) -> dict[str, list[str]]:
    """For each open state, the transitions (no required params) that lead to ``done``."""
    out: dict[str, list[str]] = {}
    for start in m.states:
        if start in m.finals or start == m.initial:
            continue
        queue: deque[tuple[str, list[str]]] = deque([(start, [])])
        seen = {start}
        while queue:
            state, path = queue.popleft()
            if "done" in m.states[state].on:
                out[start] = path
                break
            for name, target in m.states[state].on.items():
                tr = m.transitions[name]
                if target == state or name in TERMINAL or target in seen:
                    continue
                if any(p.required for p in tr.params):
                    continue
                seen.add(target)
                queue.append((target, path + [name]))
    return out


def _accumulators(m: MachineC) -> dict[str, dict[str, Any]]:
    """Each accumulator: the events that append to it (with the field) and that report it."""
    out: dict[str, dict[str, Any]] = {}
    for acc, spec in m.context.items():
        deltas: dict[str, str] = {}
        totals: dict[str, str] = {}
        for tr in m.transitions.values():
            appended = {a.source for a in tr.actions if a.op == "append" and a.target == acc}
            for e in tr.emits:
                for b in e.bindings:
                    if isinstance(b.source, str) and b.source in appended:
                        deltas[e.event] = b.name
                    if b.source == f"acc.{acc}":
                        totals[e.event] = b.name
        out[acc] = {"kind": spec.kind, "deltas": deltas, "totals": totals}
    return out


def _machine(m: MachineC) -> dict[str, Any]:
    return {
        "initial": m.initial,
        "finals": list(m.finals),
        "states": {name: dict(state.on) for name, state in m.states.items()},
        "transitions": {name: _transition(tr) for name, tr in m.transitions.items()},
        "accumulators": _accumulators(m),
    }


def _field(f: FieldC) -> dict[str, Any]:
    out: dict[str, Any] = (
        {"acc": f.spec.acc}
        if f.spec.acc
        else {"slot": f.spec.slot}
        if f.spec.slot
        else {"stored": True}
    )
    if f.spec.format:
        out["format"] = f.spec.format
    return out


def item_table(cat: Catalog, item: ItemC) -> dict[str, Any]:
    """The JSON table of one item type: its machine, fields, slots and events."""
    m = item.machine
    table = _machine(m)
    table.update(
        {
            "id_prefix": item.id_prefix,
            "statuses": list(item.statuses),
            "slots": {slot: list(parts) for slot, parts in item.slots.items()},
            "fields": {f.name: _field(f) for f in item.fields},
            "progress": _progress_paths(m),
            "delta": "delta" if "delta" in m.transitions else None,
        }
    )
    return table


def tables(cat: Catalog) -> dict[str, Any]:
    """Every table the runtime reads, as plain literals."""
    return {
        "items": {name: item_table(cat, item) for name, item in cat.items.items()},
        "parts": {
            name: {
                **_machine(part.machine),
                "wire": part.wire,
                "index": part.index,
                "fields": {f.name: {"acc": f.spec.acc} for f in part.fields if f.spec.acc},
            }
            for name, part in cat.parts.items()
        },
        "envelope": {**_machine(cat.envelope), "items_in": cat.items_in},
        "events": {
            name: {
                "address": ev.address,
                "fields": list(ev.fields),
                # declared by an item file: beyond the shared catalogue
                "beyond_sdk": ev.owner.startswith("spec/items/") or ev.owner.startswith("items/"),
            }
            for name, ev in cat.events.items()
        },
        "legacy": legacy_fields(cat),
    }
