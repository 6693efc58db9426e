"""Conformance validator for Responses event streams, driven by the spec's state machines.

Nothing here is written per event type.  The envelope, item and part
machines come from the generated tables; an event is legal when some
transition of its machine, from the current state, emits it next.  Payloads
are checked against the dialect's generated models.
"""

from __future__ import annotations

from .rules import ERROR, HYGIENE, RULES, WARNING, Violation
from .validator import StreamValidator, validate_payloads

__all__ = [
    "ERROR",
    "HYGIENE",
    "RULES",
    "WARNING",
    "StreamValidator",
    "Violation",
    "validate_payloads",
]
