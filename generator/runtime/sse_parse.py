"""Incremental Server-Sent Events parsing (WHATWG event-stream rules) for Responses streams.

Bytes may arrive split anywhere, even inside a UTF-8 character or between the CR and LF
of one line break.  Lines are split with ``str`` methods on the decoded buffer, so cost is
per line, not per byte.  Unlike the WHATWG algorithm, an event left unterminated at the end
of the stream is still dispatched by :meth:`SSEParser.close`.
"""

from __future__ import annotations

import codecs
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .convert import loads

DONE_DATA = "[DONE]"


@dataclass(frozen=True, slots=True)
class SSEMessage:
    """One dispatched event: its ``event:`` name (None if absent), data and last event id."""

    event: str | None
    data: str
    id: str | None = None

    @property
    def is_done(self) -> bool:
        """Whether this is the ``data: [DONE]`` end-of-stream sentinel."""
        return self.data == DONE_DATA

    def json(self) -> Any:
        """The data parsed as JSON (raises ``json.JSONDecodeError``)."""
        return loads(self.data)


class SSEDecodeError(ValueError):
    """A message's data is not a JSON object with a string ``type``."""

    def __init__(self, index: int, message: SSEMessage, reason: str) -> None:
        self.index = index
        self.message = message
        self.reason = reason
        snippet = message.data if len(message.data) <= 80 else message.data[:77] + "..."
        super().__init__(
            f"SSE message {index} (event {message.event!r}): {reason}; data: {snippet!r}"
        )


class SSEParser:
    """Turns chunks of an event stream into :class:`SSEMessage` values as they complete.

    ``feed`` returns the messages completed by a chunk; ``close`` ends the stream, dispatches
    a final event that lacks its blank line and resets the parser for reuse.
    """

    __slots__ = ("_data", "_decoder", "_event", "_id", "_pending", "_skip_lf", "_start")

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending: list[str] = []  # text of the current, unterminated line
        self._skip_lf = False  # the last text ended with CR: drop one LF at the next start
        self._start = True  # no text decoded yet: a BOM may still come
        self._data: list[str] = []
        self._event: str | None = None
        self._id: str | None = None  # the last event id persists across events

    def feed(self, data: bytes) -> list[SSEMessage]:
        """Parse one chunk; return the messages it completes."""
        out: list[SSEMessage] = []
        self._text(self._decoder.decode(data), out)
        return out

    def close(self) -> list[SSEMessage]:
        """End the stream: flush the decoder and a last unterminated line and event."""
        out: list[SSEMessage] = []
        self._text(self._decoder.decode(b"", True), out)
        if self._pending:
            tail = "".join(self._pending)
            self._pending = []
            self._lines([tail], out)
        self._dispatch(out)
        self._reset()
        return out

    def _text(self, text: str, out: list[SSEMessage]) -> None:
        if not text:
            return
        if self._start:
            self._start = False
            if text[0] == "\ufeff":
                text = text[1:]
        if self._skip_lf:
            self._skip_lf = False
            if text[:1] == "\n":
                text = text[1:]
        if "\n" not in text and "\r" not in text:
            if text:
                self._pending.append(text)
            return
        if self._pending:
            self._pending.append(text)
            text = "".join(self._pending)
            self._pending = []
        if "\r" in text:
            self._skip_lf = text[-1] == "\r"
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        tail = lines.pop()
        if tail:
            self._pending.append(tail)
        self._lines(lines, out)

    def _lines(self, lines: list[str], out: list[SSEMessage]) -> None:
        for line in lines:
            if not line:
                self._dispatch(out)
                continue
            if line[0] == ":":
                continue
            name, _, value = line.partition(":")
            if value[:1] == " ":
                value = value[1:]
            if name == "data":
                self._data.append(value)
            elif name == "event":
                self._event = value
            elif name == "id":
                if "\0" not in value:
                    self._id = value
            # "retry" and unknown fields are ignored

    def _dispatch(self, out: list[SSEMessage]) -> None:
        if self._data:
            out.append(SSEMessage(self._event or None, "\n".join(self._data), self._id))
            self._data = []
        self._event = None


def parse_sse(chunks: Iterable[bytes]) -> Iterator[SSEMessage]:
    """The messages of an event stream given as byte chunks."""
    parser = SSEParser()
    for chunk in chunks:
        yield from parser.feed(chunk)
    yield from parser.close()


async def aparse_sse(chunks: AsyncIterable[bytes]) -> AsyncIterator[SSEMessage]:
    """The messages of an event stream given as async byte chunks."""
    parser = SSEParser()
    async for chunk in chunks:
        for message in parser.feed(chunk):
            yield message
    for message in parser.close():
        yield message


def iter_payloads(messages: Iterable[SSEMessage]) -> Iterator[tuple[SSEMessage, dict[str, Any]]]:
    """Each message with its decoded JSON payload, skipping ``[DONE]``.

    Route by ``payload["type"]``; ``message.event`` (optional) is exposed unchecked, so a
    mismatch with the JSON type is left to the validator.  Raises :class:`SSEDecodeError`
    (carrying the 0-based message index) when data is not a JSON object with a string type.
    """
    for index, message in enumerate(messages):
        if message.data == DONE_DATA:
            continue
        try:
            payload = loads(message.data)
        except ValueError as exc:
            raise SSEDecodeError(index, message, f"invalid JSON ({exc})") from exc
        if not isinstance(payload, dict):
            raise SSEDecodeError(index, message, f"payload is a {type(payload).__name__}")
        if not isinstance(payload.get("type"), str):
            raise SSEDecodeError(index, message, 'payload has no string "type"')
        yield message, payload
