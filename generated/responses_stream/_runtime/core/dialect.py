"""A dialect as the generated package describes it: names, framing, models."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import msgspec

from .sse import SSEEncoder


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


def binding_fields(
    models: ModuleType,
    row: Mapping[str, Any],
    bound_models: tuple[str, ...],
    bound_wire: Mapping[str, tuple[str, str]],
) -> dict[str, Any]:
    """The fields of a dialect's binding of the shared emitters, from its models module and
    its row of ``tables.DIALECTS``: its echo of the request's tools, the model classes
    named in ``bound_models``, and per entry of ``bound_wire`` (field -> kind, catalogue
    event) the bytes an event's frame starts with: its SSE prefix (``PREFIX``), or the
    prefix and the payload up to its sequence number (``HEAD``), as its model encodes it.
    """
    fields: dict[str, Any] = {"echo_tools": row["echo_tools"]}
    fields.update((name, getattr(models, name)) for name in bound_models)
    for name, (kind, event) in bound_wire.items():
        wire: str = row["event_types"][event]
        frame = b"event: " + wire.encode("utf-8") + b"\ndata: "
        if kind == "HEAD":
            frame += b'{"type":' + msgspec.json.encode(wire) + b',"sequence_number":'
        fields[name] = frame
    return fields
