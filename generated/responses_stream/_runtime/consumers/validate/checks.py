"""The validator's state and how a violation is recorded."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ...core.dialect import Dialect
from ...core.processor import get_dialect
from .machines import _Item, _legacy_fields, _Machine
from .rules import ERROR, HYGIENE, RULES, Violation


class _Checks:
    """What every check reads and writes: the dialect's tables, the stream's state so
    far, and the violations found (``_add``)."""

    def __init__(
        self, dialect: Dialect | str = "openai", strict: bool = False, *, resumed: bool = False
    ) -> None:
        self.dialect = get_dialect(dialect)
        self.strict = strict
        # told the stream was resumed (starting_after): one that starts past 0 without
        # response.created is then read as a continuation, not as a stream missing its start
        self.may_resume = resumed
        self.legacy: Mapping[str, list[str]] = getattr(self.dialect.tables, "LEGACY", {})
        self._legacy_fields = _legacy_fields(self.dialect, self.legacy)
        self._raw: str | None = None  # the JSON text of the payload being checked, if known
        self.warned: set[tuple[str, str]] = set()
        t = self.dialect.tables
        self.items_table: Mapping[str, Any] = t.ITEMS
        self.parts_table: Mapping[str, Any] = t.PARTS
        self.events_table: Mapping[str, Any] = t.EVENTS
        self.envelope = _Machine(t.ENVELOPE)
        self.items_in: str = t.ENVELOPE["items_in"]
        self.wire = self.dialect.wire_types
        self.item_kinds = {wire: spec for spec, wire in self.dialect.item_types.items()}
        self.part_kinds = {p["wire"]: k for k, p in self.parts_table.items()}
        self.event_type = msgspec.json.Decoder(self.dialect.reading.Event)
        self.violations: list[Violation] = []
        self.items: dict[int, _Item] = {}
        self.by_id: dict[str, _Item] = {}
        self.index = -1
        # the first event had no sequence_number: read as a stream from before the API
        # numbered its events (SEQ_LEGACY, once); events without one are then checked as
        # if numbered in order
        self.unsequenced = False
        self.seq: int | None = None
        self.last_seq: int | None = None
        # the first event is past sequence_number 0 and not response.created: a stream
        # resumed with starting_after (CONTINUATION); what it cannot see is not checked
        self.resumed = False
        # the first payload was a Chat Completions chunk: said once, the rest not checked
        self.chat_stream = False
        self.terminal: str | None = None
        self.pending_error = False
        self.open_item: _Item | None = None

    def _add(self, rule: str, message: str) -> None:
        severity = RULES[rule][0]
        if self.strict and rule in HYGIENE:
            severity = ERROR
        self.violations.append(Violation(rule, severity, self.index, self.seq, message))

    @property
    def errors(self) -> list[Violation]:
        return [v for v in self.violations if v.severity == ERROR]

    def _once(self, rule: str, key: str, message: str) -> None:
        if (rule, key) not in self.warned:
            self.warned.add((rule, key))
            self._add(rule, message)
