"""What the validator's checks run on: the spec machines run over the events they emit,
the open items and parts, and the comparisons of what was streamed with what was done."""

from __future__ import annotations

import importlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

import msgspec
import msgspec.inspect as mi

from ...core.dialect import Dialect
from ...core.errors import BadValue
from ...core.sse_parse import (
    has_surrogate,
    join_surrogates,
    replace_surrogates,
)
from ...core.stream import TextAcc
from .rules import OPAQUE_FIELDS

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
