"""Incremental Server-Sent Events parsing (WHATWG event-stream rules) for Responses streams.

Bytes may arrive split anywhere, even inside a UTF-8 character or between the CR and LF
of one line break.  Lines are split with ``str`` methods on the decoded buffer, so cost is
per line, not per byte.  Unlike the WHATWG algorithm, an event left unterminated at the end
of the stream is still dispatched by :meth:`SSEParser.close`.

Bytes that are not UTF-8 become U+FFFD, never an error.  What one stream may make the
parser hold is capped: ``max_line_bytes`` (one line, comments included) and
``max_event_bytes`` (the ``data`` of one event, all its lines), counted in UTF-8 bytes of
the decoded text; going over raises :class:`SSELimitError`.  ``None`` lifts a cap.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import Any, NamedTuple

from .convert import loads
from .errors import BadValue, ResponsesStreamError

DONE_DATA = "[DONE]"
MIB = 1024 * 1024
DEFAULT_MAX_LINE_BYTES = 16 * MIB
"""The longest line :class:`SSEParser` accepts by default (16 MiB)."""
DEFAULT_MAX_EVENT_BYTES = 16 * MIB
"""The largest event (its ``data`` lines joined) :class:`SSEParser` accepts by default (16 MiB)."""


_SURROGATE = re.compile("[\ud800-\udfff]")


MAX_NESTING = 128
"""How deep JSON arrays and objects may nest in one event before a checker refuses it.

Real events nest about ten levels; the bound keeps the verdict the same on every
Python version (their recursion limits differ)."""

_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(r"[\[\]{}]")


def nesting_exceeds(text: str, limit: int = MAX_NESTING) -> bool:
    """Whether the JSON ``text`` nests arrays and objects deeper than ``limit``."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for match in _BRACKET.finditer(_JSON_STRING.sub("", text)):
        if match.group() in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a UTF-16 surrogate code point (as a ``\\ud800`` escape decodes)."""
    return not text.isascii() and _SURROGATE.search(text) is not None


def join_surrogates(text: str) -> str:
    """``text`` with each high + low surrogate pair made the one character it encodes.

    A pair split over two JSON strings (two deltas) decodes to two lone surrogates; joined
    they are the character again.  Surrogates without their pair are kept.
    """
    if not has_surrogate(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def replace_surrogates(text: str) -> str:
    """``text`` with pairs joined and every lone surrogate replaced by U+FFFD."""
    if not has_surrogate(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


class SSEMessage(NamedTuple):
    """One dispatched event: its ``event:`` name (None if absent), data and last event id.

    Immutable and cheap to make (the parser makes one per event); two messages are equal
    when their fields are.
    """

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


_message = tuple.__new__  # SSEMessage(event, data, id) without the keyword handling


class SSEDecodeError(ResponsesStreamError, ValueError):
    """A message's data is not a JSON object with a string ``type``."""

    def __init__(self, index: int, message: SSEMessage, reason: str) -> None:
        self.index = index
        self.message = message
        self.reason = reason
        snippet = message.data if len(message.data) <= 80 else message.data[:77] + "..."
        super().__init__(
            f"SSE message {index} (event {message.event!r}): {reason}; data: {snippet!r}"
        )


class SSELimitError(ResponsesStreamError, ValueError):
    """An event stream went over one of its parser's caps.

    ``limit`` is ``"max_line_bytes"`` or ``"max_event_bytes"``, ``value`` the cap and
    ``size`` the size reached (UTF-8 bytes, at least ``value + 1``).  The parser has
    dropped what it held and starts afresh; the stream itself is broken.  ``messages``
    are the events the failing ``feed`` or ``close`` completed before the line that went
    over (the lines before it are read, as if they had been fed on their own).
    """

    def __init__(self, limit: str, value: int, size: int) -> None:
        self.limit = limit
        self.value = value
        self.size = size
        self.messages: list[SSEMessage] = []
        what = "a line" if limit == "max_line_bytes" else "an event's data"
        super().__init__(f"SSE input: {what} exceeds {limit}={value} ({size} bytes or more)")


def _cap(name: str, value: int | None) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise BadValue(f"{name} must be a positive int or None, got {value!r}")
    return value


def _size(text: str) -> int:
    """The UTF-8 length of decoded text (which holds no surrogates)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class SSEParser:
    """Turns chunks of an event stream into :class:`SSEMessage` values as they complete.

    ``feed`` returns the messages completed by a chunk; ``close`` ends the stream, dispatches
    a final event that lacks its blank line and resets the parser for reuse.  Both raise
    :class:`SSELimitError` when a line is longer than ``max_line_bytes`` or an event's data
    larger than ``max_event_bytes`` (``None``: no cap).
    """

    __slots__ = (
        "_data",
        "_data_only",
        "_data_size",
        "_decoder",
        "_event",
        "_id",
        "_pending",
        "_pending_size",
        "_skip_lf",
        "_start",
        "max_event_bytes",
        "max_line_bytes",
    )

    def __init__(
        self,
        *,
        max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
        max_event_bytes: int | None = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        self.max_line_bytes = _cap("max_line_bytes", max_line_bytes)
        self.max_event_bytes = _cap("max_event_bytes", max_event_bytes)
        self._data_only = False  # feed_data: each event's data instead of its message
        self._reset()

    def _reset(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending: list[str] = []  # text of the current, unterminated line
        self._pending_size = 0  # its UTF-8 length
        self._skip_lf = False  # the last text ended with CR: drop one LF at the next start
        self._start = True  # no text decoded yet: a BOM may still come
        self._data: list[str] = []
        self._data_size = 0  # UTF-8 length of the data joined so far
        self._event: str | None = None
        self._id: str | None = None  # the last event id persists across events

    def _over(self, limit: str, value: int, size: int) -> SSELimitError:
        self._reset()
        return SSELimitError(limit, value, size)

    def feed(self, data: bytes) -> list[SSEMessage]:
        """Parse one chunk; return the messages it completes."""
        out: list[SSEMessage] = []
        try:
            self._text(self._decoder.decode(data), out)
        except SSELimitError as exc:
            exc.messages = out
            raise
        return out

    def feed_data(self, data: bytes) -> list[str]:
        """``feed`` for a reader that needs only each event's data: the data of the events
        the chunk completes, in order (no message is built for them).  On a cap, the
        ``SSELimitError`` carries the completed events as messages without name or id."""
        out: list[Any] = []
        self._data_only = True
        try:
            self._text(self._decoder.decode(data), out)
        except SSELimitError as exc:
            exc.messages = [SSEMessage(None, d, None) for d in out]
            raise
        finally:
            self._data_only = False
        return out

    def close(self) -> list[SSEMessage]:
        """End the stream: flush the decoder and a last unterminated line and event."""
        out: list[SSEMessage] = []
        try:
            self._text(self._decoder.decode(b"", True), out)
            if self._pending:
                tail = "".join(self._pending)
                self._pending = []
                self._lines([tail], out)
        except SSELimitError as exc:
            exc.messages = out
            raise
        self._dispatch(out)
        self._reset()
        return out

    def _text(self, text: str, out: list[Any]) -> None:
        """Parse decoded ``text`` into ``out``: messages, or with ``_data_only`` their
        data."""
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
                self._hold(text)
            return
        if self._pending:
            self._pending.append(text)
            text = "".join(self._pending)
            self._pending = []
            self._pending_size = 0
        if "\r" in text:
            self._skip_lf = text[-1] == "\r"
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        # Whole events at a time: the text up to its last line end, cut at blank lines.
        # An event that is one data line (the usual one) is dispatched as it is; any
        # other goes line by line.  The text after the last line end waits for more.
        cut = text.rindex("\n")
        tail = text[cut + 1 :]
        body = text[:cut]
        ended = body[-1:] == "\n"  # the text ends with a blank line
        if ended:
            body = body[:-1]
        events = body.split("\n\n")
        last = None if ended else events.pop()
        caps = [c for c in (self.max_line_bytes, self.max_event_bytes) if c is not None]
        small = min(caps) // 4 if caps else len(body)  # a UTF-8 character is at most 4 bytes
        data_only = self._data_only
        for event in events:
            if len(event) <= small and not self._data and self._event is None:
                if event[:6] == "data: " and "\n" not in event:
                    if data_only:
                        out.append(event[6:])
                    else:
                        out.append(_message(SSEMessage, (None, event[6:], self._id)))
                    continue
                if event[:7] == "event: ":  # a named event: its name line, one data line
                    nl = event.find("\n")
                    if event[nl + 1 : nl + 7] == "data: " and event.find("\n", nl + 1) < 0:
                        name = event[7:nl] if nl > 0 else ""
                        data = event[nl + 7 :]
                        if data_only:
                            out.append(data)
                        else:
                            out.append(_message(SSEMessage, (name or None, data, self._id)))
                        continue
            self._lines(event.split("\n"), out)
            self._dispatch(out)
        if last is not None:
            self._lines(last.split("\n"), out)
        if tail:
            self._hold(tail)

    def _hold(self, text: str) -> None:
        """Keep ``text`` as the start (or more) of a line still unterminated."""
        self._pending.append(text)
        cap = self.max_line_bytes
        if cap is not None:
            self._pending_size += _size(text)
            if self._pending_size > cap:
                raise self._over("max_line_bytes", cap, self._pending_size)

    def _lines(self, lines: list[str], out: list[Any]) -> None:
        line_cap = self.max_line_bytes
        event_cap = self.max_event_bytes
        for line in lines:
            if line_cap is not None and len(line) > line_cap // 4:
                size = _size(line)
                if size > line_cap:
                    raise self._over("max_line_bytes", line_cap, size)
            if not line:
                self._dispatch(out)
                continue
            if line[0] == ":":
                continue
            name, _, value = line.partition(":")
            if value[:1] == " ":
                value = value[1:]
            if name == "data":
                if event_cap is not None:
                    self._data_size += _size(value) + (1 if self._data else 0)
                    if self._data_size > event_cap:
                        raise self._over("max_event_bytes", event_cap, self._data_size)
                self._data.append(value)
            elif name == "event":
                self._event = value
            elif name == "id":
                if "\0" not in value:
                    self._id = value
            # "retry" and unknown fields are ignored

    def _dispatch(self, out: list[Any]) -> None:
        if self._data:
            data = "\n".join(self._data)
            out.append(
                data
                if self._data_only
                else _message(SSEMessage, (self._event or None, data, self._id))
            )
            self._data = []
            self._data_size = 0
        self._event = None


def parse_sse(
    chunks: Iterable[bytes],
    *,
    max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
    max_event_bytes: int | None = DEFAULT_MAX_EVENT_BYTES,
) -> Iterator[SSEMessage]:
    """The messages of an event stream given as byte chunks.

    Raises :class:`SSELimitError` when the stream goes over a cap (see :class:`SSEParser`).
    """
    parser = SSEParser(max_line_bytes=max_line_bytes, max_event_bytes=max_event_bytes)
    try:
        for chunk in chunks:
            yield from parser.feed(chunk)
        yield from parser.close()
    except SSELimitError as exc:
        yield from exc.messages  # the events the chunk completed before the cap
        raise


async def aparse_sse(
    chunks: AsyncIterable[bytes],
    *,
    max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
    max_event_bytes: int | None = DEFAULT_MAX_EVENT_BYTES,
) -> AsyncIterator[SSEMessage]:
    """The messages of an event stream given as async byte chunks (caps as in ``parse_sse``)."""
    parser = SSEParser(max_line_bytes=max_line_bytes, max_event_bytes=max_event_bytes)
    try:
        async for chunk in chunks:
            for message in parser.feed(chunk):
                yield message
        for message in parser.close():
            yield message
    except SSELimitError as exc:
        for message in exc.messages:  # the events the chunk completed before the cap
            yield message
        raise


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
        except (ValueError, RecursionError) as exc:
            raise SSEDecodeError(index, message, f"invalid JSON ({exc})") from exc
        if not isinstance(payload, dict):
            raise SSEDecodeError(index, message, f"payload is a {type(payload).__name__}")
        if not isinstance(payload.get("type"), str):
            raise SSEDecodeError(index, message, 'payload has no string "type"')
        yield message, payload
