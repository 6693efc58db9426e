"""The validator's driver: SSE bytes, messages or payloads in, each event routed to the
rules that check it."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ...core.dialect import Dialect
from ...core.input_form import sse_from_input
from ...core.sse_parse import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_LINE_BYTES,
    MAX_NESTING,
    SSELimitError,
    nesting_exceeds,
    parse_sse,
)
from .machines import _decode, _is_mapping, _not_json, _resumes
from .payloads import _PayloadChecks
from .rules import Violation


class StreamValidator(_PayloadChecks):
    """Checks a stream event by event; ``violations`` collects what it finds."""

    # -- input ----------------------------------------------------------------
    def feed_sse(
        self,
        chunks: Iterable[bytes],
        *,
        max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
        max_event_bytes: int | None = DEFAULT_MAX_EVENT_BYTES,
        input: str = "auto",
    ) -> None:
        """Every message of an SSE byte stream, or of JSON lines (``feed_raw`` each).

        ``input`` is ``"sse"``, ``"jsonl"`` (one event per line) or ``"auto"``, told from
        the first bytes (``sse_from_input``).  A line or event over the parser's caps is
        an ``SSE_LIMIT`` violation, and what follows it is not read.  Call ``finish``
        afterwards.
        """
        try:
            for message in parse_sse(
                sse_from_input(chunks, input),
                max_line_bytes=max_line_bytes,
                max_event_bytes=max_event_bytes,
            ):
                self.feed_raw(message.data, message.event)
        except SSELimitError as exc:
            self.index += 1
            self.seq = None
            self._add("SSE_LIMIT", str(exc))

    def feed_raw(self, data: str, event: str | None = None) -> None:
        """One SSE message: its ``data`` text and its ``event:`` name, if any."""
        if data.strip() == "[DONE]":
            return
        if nesting_exceeds(data):
            self.index += 1
            self.seq = None
            self._add("MALFORMED_JSON", f"data nests deeper than {MAX_NESTING} levels")
            return
        try:
            payload = _decode(data)
            raw: str | None = data
        except Exception:  # what msgspec refuses: json.loads decides (and words the error)
            raw = None
            try:
                payload = json.loads(data, parse_constant=_not_json)
            except (ValueError, RecursionError) as exc:
                self.index += 1
                self.seq = None
                self._add("MALFORMED_JSON", f"data is not JSON: {exc}")
                return
        self._raw = raw
        try:
            self.feed(payload, event)
        finally:
            self._raw = None

    def feed(self, payload: Any, event: str | None = None) -> None:
        """One event payload (a parsed JSON object).  Never raises on any JSON value."""
        self.index += 1
        self.seq = None
        try:
            self._feed(payload, event)
        except RecursionError:
            self._add("MALFORMED_EVENT", "the payload is nested too deeply to check")

    def _feed(self, payload: Any, event: str | None) -> None:
        if self.chat_stream:
            return
        if self.index == 0 and _is_chat_chunk(payload):
            self.chat_stream = True
            self._add(
                "CHAT_COMPLETIONS_STREAM",
                "this is a Chat Completions stream (chat.completion.chunk), not a Responses "
                "stream; convert it first: python -m responses_stream from-chat",
            )
            return
        if not _is_mapping(payload) or not isinstance(payload.get("type"), str):
            if _is_mapping(payload) and "error" in payload:
                self._add(
                    "BARE_ERROR",
                    "an error object without a type; send 'error' then 'response.failed'",
                )
            else:
                self._add("MALFORMED_EVENT", "an event must be a JSON object with a string 'type'")
            return
        kind: str = payload["type"]
        seq = payload.get("sequence_number")
        self.seq = seq if isinstance(seq, int) else None
        if event is not None and event != kind:
            self._add("EVENT_NAME_MISMATCH", f"SSE event {event!r} but JSON type {kind!r}")
        if self.index == 0 and "sequence_number" not in payload:
            self.unsequenced = True
            self._add("SEQ_LEGACY", "no sequence_number: read as a stream from an older API")
        elif (
            self.index == 0
            and self.may_resume
            and isinstance(seq, int)
            and _resumes(seq, kind, self.wire)
        ):
            self.resumed = True
            self.envelope.resume()
            self._add(
                "CONTINUATION",
                f"the stream resumes after sequence_number {seq - 1}: a continuation; "
                "items opened before it and the output they made are not checked",
            )
        if not (self.unsequenced and "sequence_number" not in payload):
            self._sequence(seq)
        if self.terminal is not None:
            self._add("EVENT_AFTER_TERMINAL", f"{kind} after {self.terminal}")
            return
        name = self.wire.get(kind)
        if name is None:
            self._unknown(kind, payload)
            return
        self._schema(payload, kind)
        if self.pending_error and name != "response.failed":
            self._add(
                "ERROR_WITHOUT_FAILED", "an 'error' event must be followed by response.failed"
            )
        self.pending_error = name == "error"
        address = self.events_table[name]["address"]
        if address == "none":
            self._envelope(name, payload)
        elif address in ("output", "item"):
            self._item_event(name, payload)
        else:
            self._part_event(name, payload, address)

    def finish(self) -> list[Violation]:
        """End of input: report what never closed."""
        self.index += 1
        self.seq = None
        if self.terminal is None and not self.chat_stream:
            self._add(
                "MISSING_TERMINAL",
                "the stream ended without response.completed, "
                "response.incomplete or response.failed",
            )
            for item in self.items.values():
                if item.done is None:
                    self._add(
                        "MISSING_DONE",
                        f"item {item.item_id} (output_index "
                        f"{item.output_index}) never got output_item.done",
                    )
        return self.violations


def _is_chat_chunk(payload: Any) -> bool:
    """A Chat Completions chunk (or whole completion): named by its ``object``, or a
    ``choices`` list where a Responses event has its ``type``."""
    if not _is_mapping(payload) or isinstance(payload.get("type"), str):
        return False
    kind = payload.get("object")
    return kind in ("chat.completion.chunk", "chat.completion") or (
        kind is None and isinstance(payload.get("choices"), list)
    )


def validate_payloads(
    payloads: Iterable[Any],
    dialect: Dialect | str = "openai",
    strict: bool = False,
    *,
    resumed: bool = False,
) -> list[Violation]:
    """Every violation in a whole stream of parsed payloads.

    ``strict`` turns the producer-hygiene warnings into errors; ``resumed`` says the
    stream was resumed (``starting_after``), so that one starting past 0 without
    ``response.created`` is read as a continuation.
    """
    v = StreamValidator(dialect, strict=strict, resumed=resumed)
    for payload in payloads:
        v.feed(payload)
    return v.finish()
