"""A dialect as the generated package describes it: names, framing, models."""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

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

    def encoder(self) -> SSEEncoder:
        """An SSE encoder with this dialect's framing."""
        return SSEEncoder(done_sentinel=self.done_sentinel)

    @property
    def wire_types(self) -> dict[str, str]:
        """wire type -> catalogue name."""
        return {wire: name for name, wire in self.event_types.items()}
