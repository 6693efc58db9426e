"""Test scenarios derived from the state machines, for the generated tests.

A scenario is a list of calls on an item emitter with sample arguments, and
for each call the events the spec says it must emit, with their addressing.
The expectations come from the specs alone, never from the emitters.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .catalog import Catalog, ItemC, MachineC, Param, TransitionC
from .reserved import ADDRESS_FIELDS
from .types import TypeRef

DELTAS = ("Hel", 'lo, "wörld" ✓\n')


@dataclass
class Step:
    """One call of a scenario and the events it is expected to emit."""

    method: str
    kwargs: dict[str, Any]
    events: list[tuple[str, str, int]]  # (catalogue event, address, part index or -1)


@dataclass
class Scenario:
    """A generated test's run through an item's machine: its start and its calls in order."""

    name: str
    init: dict[str, Any]
    steps: list[Step] = field(default_factory=list)
    final_status: str = ""


@dataclass
class AccPair:
    """Where an accumulator's deltas are streamed and where its total is reported."""

    scope: str  # "item" or a part name
    deltas: list[tuple[str, str]]  # (event, field)
    totals: list[tuple[str, str]]  # (event, field)
    item_field: str  # the item (or part) field that holds the total, or ""
    kind: str


def sample(cat: Catalog, ref: TypeRef, name: str, n: int) -> Any:
    """A deterministic sample value of a spec type."""
    if ref.kind == "string":
        return DELTAS[n % 2] if name == "delta" else f"{name}-{n}"
    if ref.kind == "integer":
        return n
    if ref.kind == "number":
        return 0.5
    if ref.kind == "boolean":
        return True
    if ref.kind in ("any", "object"):
        return {}
    if ref.kind == "list":
        return []
    if ref.kind == "enum":
        return ref.values[0]
    spec = cat.types[ref.name]
    return {
        f: sample(cat, t, f, n)
        for f, t in cat.type_fields[ref.name].items()
        if f not in spec.optional
    }


def _args(cat: Catalog, params: list[Param], n: int, optional: bool = True) -> dict[str, Any]:
    out = {}
    for p in params:
        example = _example(p)
        if example is not None:
            out[p.name] = example
        elif p.required:
            out[p.name] = sample(cat, p.type, p.name, n)
    return out


def _example(p: Param) -> Any:
    return p.example


def _events(
    cat: Catalog, tr: TransitionC, index: int, state: str = ""
) -> list[tuple[str, str, int]]:
    out = []
    for e in tr.emits:
        if e.when is not None and state not in e.when:
            continue
        address = cat.events[e.event].address
        out.append((e.event, address, index if address in ("content", "summary") else -1))
    return out


def _finish_path(m: MachineC, start: str, last: str) -> list[str] | None:
    """The longest run of progress transitions from ``start`` ending with ``last``.

    The longest, not the shortest, so that a state a run may skip (a diff that
    streams before its item closes) is still gone through and its events checked.
    """
    best: list[str] | None = None

    def walk(state: str, path: list[str], seen: set[str]) -> None:
        nonlocal best
        for name, target in m.states[state].on.items():
            if name == last:
                if best is None or len(path) + 1 > len(best):
                    best = [*path, name]
                continue
            if target == state or name in ("incomplete", "fail", "done"):
                continue
            if target not in seen and target not in m.finals:
                walk(target, [*path, name], seen | {target})

    walk(start, [], {start})
    return best


class _Walker:
    def __init__(self, cat: Catalog, item: ItemC) -> None:
        self.cat = cat
        self.item = item
        self.m = item.machine
        self.n = 0
        self.counters: dict[str, int] = {}
        self.state = item.machine.initial
        self.open_part: tuple[str, int] | None = None

    def call(self, sc: Scenario, tr: TransitionC, method: str, index: int = -1) -> None:
        self.n += 1
        kwargs = _args(self.cat, tr.params, self.n)
        is_item = tr is self.m.transitions.get(tr.name)
        events = _events(self.cat, tr, index, self.state if is_item else "")
        if is_item:
            self.state = tr.target
        if is_item and tr.target in self.m.finals and self.open_part is not None:
            part, pindex = self.open_part
            done = self.cat.parts[part].machine.transitions["done"]
            events = _events(self.cat, done, pindex) + events
            self.open_part = None
        sc.steps.append(Step(method, kwargs, events))

    def loops(self, sc: Scenario, state: str) -> None:
        for name, target in self.m.states[state].on.items():
            if target != state:
                continue
            tr = self.m.transitions[name]
            for _ in range(2 if "delta" in {p.name for p in tr.params} else 1):
                self.call(sc, tr, name)

    def parts(self, sc: Scenario, leave_open: bool = False) -> None:
        """Every part kind of every slot, twice, so that part indexes go past 0.

        A truncated run closes its first part and leaves the second one open.
        """
        closed = 0
        for slot, kinds in self.item.slots.items():
            for kind in [*kinds, *kinds]:
                part = self.cat.parts[kind]
                index = self.counters.get(slot, 0)
                self.counters[slot] = index + 1
                pm = part.machine
                self.call(sc, pm.transitions["open"], f"{kind}_open", index)
                self.open_part = (kind, index)
                stays_open = leave_open and closed == 1
                state = pm.transitions["open"].target
                for name, target in pm.states[state].on.items():
                    if target != state:
                        continue
                    tr = pm.transitions[name]
                    reps = 2 if "delta" in {p.name for p in tr.params} else 1
                    for _ in range(1 if stays_open else reps):
                        self.call(sc, tr, f"{kind}_{name}", index)
                if stays_open:
                    return
                self.call(sc, pm.transitions["done"], f"{kind}_done", index)
                self.open_part = None
                closed += 1

    def scenario(self, name: str, last: str) -> Scenario | None:
        sc = Scenario(name, _init_args(self.cat, self.item))
        open_tr = self.m.transitions["open"]
        self.call(sc, open_tr, "open")
        state = open_tr.target
        if last == "incomplete":
            self.loops(sc, state)
            self.parts(sc, leave_open=True)
            self.call(sc, self.m.transitions["incomplete"], "incomplete")
            sc.final_status = _final_status(self.m.transitions["incomplete"])
            return sc
        path = _finish_path(self.m, state, last)
        if path is None:
            return None
        self.parts(sc)
        for name in path:
            self.loops(sc, state)
            tr = self.m.transitions[name]
            self.call(sc, tr, name)
            state = tr.target
        sc.final_status = _final_status(self.m.transitions[last])
        return sc


def _final_status(tr: TransitionC) -> str:
    for act in tr.actions:
        if act.op == "status":
            return act.value
    return ""


def _init_args(cat: Catalog, item: ItemC) -> dict[str, Any]:
    out: dict[str, Any] = {"id": f"{item.id_prefix}test"}
    for f in item.fields:
        spec = f.spec
        if spec.acc or spec.slot or "init" in spec.model_fields_set:
            continue
        if spec.example is not None:
            out[f.name] = spec.example
        elif "default" not in spec.model_fields_set or (
            f.type.kind == "string" and spec.default is None
        ):
            # Optional strings too, so that a field the emitter forgets shows.
            out[f.name] = sample(cat, f.type, f.name, 0)
        elif f.type.kind == "boolean" and isinstance(spec.default, bool):
            # The other value than the default, so that a dropped argument shows.
            out[f.name] = not spec.default
    return out


def scenarios(cat: Catalog, item: ItemC) -> list[Scenario]:
    """A completion run, a truncated run, and a failure run where the machine has one."""
    out = []
    for name, last in (("complete", "done"), ("truncated", "incomplete"), ("failed", "fail")):
        if last in item.machine.transitions:
            sc = _Walker(cat, item).scenario(name, last)
            if sc is not None:
                out.append(sc)
    return out


def acc_pairs(cat: Catalog, item: ItemC) -> list[AccPair]:
    """For every accumulator of the item and its parts: its delta and total events."""
    out = []
    machines: list[tuple[str, MachineC, list[Any]]] = [("item", item.machine, item.fields)]
    for kinds in item.slots.values():
        for kind in kinds:
            part = cat.parts[kind]
            machines.append((kind, part.machine, part.fields))
    for scope, m, fields in machines:
        for acc, spec in m.context.items():
            deltas, totals = [], []
            for tr in m.transitions.values():
                appended = {a.source for a in tr.actions if a.op == "append" and a.target == acc}
                for e in tr.emits:
                    for b in e.bindings:
                        if isinstance(b.source, str) and b.source in appended:
                            deltas.append((e.event, b.name))
                        if b.source == f"acc.{acc}":
                            totals.append((e.event, b.name))
            holder = next((f.name for f in fields if f.spec.acc == acc), "")
            if deltas and (totals or holder):
                out.append(
                    AccPair(scope, sorted(set(deltas)), sorted(set(totals)), holder, spec.kind)
                )
    return out


def address_fields(address: str) -> tuple[str, ...]:
    """The fields that address an event of ``address``."""
    return ADDRESS_FIELDS[address]
