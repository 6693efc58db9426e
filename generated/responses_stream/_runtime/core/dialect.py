"""A dialect as the generated package describes it: names, framing, models."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from .sse import SSEEncoder

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_B = TypeVar("_B", bound="DataclassInstance")


@dataclass(frozen=True)
class Dialect:
    """One wire dialect of the Responses streaming protocol."""

    name: str
    done_sentinel: bool
    event_types: dict[str, str]  # catalogue name -> wire type
    standard_events: frozenset[str]  # catalogue names
    item_types: dict[str, str]  # spec item type -> wire type
    models: ModuleType  # what producers write: every field present
    reading: ModuleType  # what consumers accept: the SDK's optional fields may be absent
    emitter: Any  # the dialect's ResponseEmitter class
    item_emitters: dict[str, Any]  # spec item type -> emitter class
    tables: ModuleType  # the package's state machine and routing tables
    # how a response echoes the request's tools: "as_requested", or "functions"
    # (function tools only, namespaces flattened to namespace.name)
    echo_tools: str = "as_requested"

    @classmethod
    def of(
        cls,
        name: str,
        tables: ModuleType,
        models: ModuleType,
        reading: ModuleType,
        emitter: Any,
        item_emitters: Mapping[str, Any],
    ) -> Dialect:
        """The dialect ``name`` as its row of the package's ``tables.DIALECTS`` describes it."""
        row = tables.DIALECTS[name]
        return cls(
            name=name,
            done_sentinel=row["done_sentinel"],
            event_types=row["event_types"],
            standard_events=frozenset(row["standard_events"]),
            item_types=row["item_types"],
            models=models,
            reading=reading,
            emitter=emitter,
            item_emitters=dict(item_emitters),
            tables=tables,
            echo_tools=row["echo_tools"],
        )

    def encoder(self) -> SSEEncoder:
        """An SSE encoder with this dialect's framing."""
        return SSEEncoder(done_sentinel=self.done_sentinel)

    @property
    def wire_types(self) -> dict[str, str]:
        """wire type -> catalogue name."""
        return {wire: name for name, wire in self.event_types.items()}


def bind(
    binding: type[_B],
    models: ModuleType,
    row: Mapping[str, Any],
    bound_wire: Mapping[str, tuple[str, str]],
) -> _B:
    """A dialect's binding of the shared emitters, from its models module and its row of
    ``tables.DIALECTS``: its echo of the request's tools; for each entry of ``bound_wire``
    (field -> kind, catalogue event) the bytes the event's frame starts with, its SSE
    prefix (``PREFIX``) or the prefix and the payload up to its sequence number (``HEAD``)
    as its model encodes it; for every other field the dialect's model class of that name.
    """
    values: dict[str, Any] = {"echo_tools": row["echo_tools"]}
    for field in dataclasses.fields(binding):
        if field.name in bound_wire:
            kind, event = bound_wire[field.name]
            wire: str = row["event_types"][event]
            frame = b"event: " + wire.encode("utf-8") + b"\ndata: "
            if kind == "HEAD":
                frame += b'{"type":' + msgspec.json.encode(wire) + b',"sequence_number":'
            values[field.name] = frame
        elif field.name not in values:
            values[field.name] = getattr(models, field.name)
    return binding(**values)
