"""Sync and async entry points: chat chunks or Harmony segments in, events or SSE bytes out.

The chat entry points take the chat stream in any of the forms it comes in off the wire,
one form per item of the input:

- a parsed chunk (a ``Mapping``, usually a ``dict``);
- a ``data:`` payload (a ``str``: the chunk's JSON text, or ``[DONE]``);
- an SSE line (a ``str`` as ``httpx``'s ``iter_lines()`` gives it: ``data: {...}``,
  ``event: x``, ``: comment``, or ``""`` ending an event; a line end may follow);
- SSE bytes (as ``httpx``'s ``iter_bytes()`` gives them, split anywhere).

SSE lines and bytes go through the package's SSE parser (its caps apply); their payloads
then take the ``data:`` payload path.  A ``str`` is an SSE line when it is empty or a line
break, starts with ``:``, or starts with a field name (``data``, ``event``, ``id``,
``retry``) and a colon; it is a payload when it starts with ``{`` or ``[`` (as ``[DONE]``
does), white space aside.  ``chat_data_lines`` marks the payloads it yields that could
read as SSE lines (``DataPayload``), so they stay payloads.
Parsed chunks and payloads may mix in one stream, SSE lines and bytes too; once SSE input
has come, a chunk or payload after it ends the stream as bad input (it could not be put
in order with an unfinished SSE event).  Any other item (``None``, an ``int``, a list, a
``str`` that is neither JSON nor SSE) ends the stream with ``error`` (code
``invalid_upstream_chunk``, a message naming what came and what is accepted) and
``response.failed``.
"""

from __future__ import annotations

from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Iterable,
    Iterator,
    Mapping,
)
from typing import TYPE_CHECKING, Any, TypeAlias

from ..core.dialect import Dialect
from ..core.errors import source_failure
from ..core.input_form import sse_from_input
from ..core.processor import StreamProcessor, get_dialect
from ..core.sse_parse import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_LINE_BYTES,
    SSELimitError,
    SSEParser,
    replace_surrogates,
)
from .chat import BAD_INPUT, ChatToResponses, DataPayload, InputFailure
from .drive import adrive, adrive_sse, drive

if TYPE_CHECKING:
    from ..core.processor import ResponsesEvent

SSE_LIMIT_EXCEEDED = "sse_limit_exceeded"

ChatInput: TypeAlias = Mapping[str, Any] | str | bytes
"""One item of chat input: a parsed chunk, a ``data:`` payload, an SSE line or SSE bytes."""

ACCEPTED = (
    "chat input items must be parsed chunks (dicts), data: payload strings (JSON or [DONE]), "
    "SSE lines (str) or SSE bytes"
)
_SSE_FIELDS = ("data", "event", "id", "retry")
_LINE_ENDS = ("\n", "\r")


def _payload(data: str) -> str:
    """``data`` as a payload the chat APIs cannot take for an SSE line."""
    return data if data[:1] == "{" else DataPayload(data)


def _payloads(parser: SSEParser, raw: bytes, mark: bool = True) -> list[str]:
    """The ``data:`` payloads of the events ``raw`` completes, fed to ``parser``.

    Input over the parser's caps ends the list with an ``InputFailure``; the events
    completed before the line that went over are kept (``SSELimitError.messages``).
    With ``mark``, payloads that do not start with ``{`` are ``DataPayload``: they stay
    payloads if given back to a chat API (a converter fed them directly needs no mark).
    """
    try:
        payloads = parser.feed_data(raw)
    except SSELimitError as exc:
        out = [_payload(message.data) for message in exc.messages]
        out.append(InputFailure(f"the chat input is unreadable: {exc}", SSE_LIMIT_EXCEEDED))
        return out
    if not mark:
        return payloads
    return [d if d[:1] == "{" else DataPayload(d) for d in payloads]


def _close(parser: SSEParser) -> list[str]:
    """The payloads of an event left unterminated at the end of the input."""
    try:
        return [_payload(message.data) for message in parser.close()]
    except SSELimitError as exc:
        out = [_payload(message.data) for message in exc.messages]
        out.append(InputFailure(f"the chat input is unreadable: {exc}", SSE_LIMIT_EXCEEDED))
        return out


def chat_data_lines(
    lines: Iterable[str | bytes],
    *,
    max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
    max_event_bytes: int | None = DEFAULT_MAX_EVENT_BYTES,
    input: str = "auto",
) -> Iterator[str]:
    """The ``data:`` payloads of a chat SSE stream, joined per event, or of a chat stream
    kept as JSON lines (one chunk per line): ``input`` is ``"sse"``, ``"jsonl"`` or
    ``"auto"``, told from the first bytes (``sse_from_input``).

    ``lines`` are pieces of the stream, text or bytes, split anywhere (lines with their
    line ends, or chunks as they arrive; lines without their ends, as ``iter_lines()``
    gives them, go to the chat APIs directly).  They are read by the package's SSE
    parser, so a BOM, CR, CRLF or LF line ends, comments and multi-line ``data`` are as
    the SSE rules say.  Input over the parser's caps ends the payloads with an
    ``InputFailure`` that ends the converted stream with ``error`` (code
    ``sse_limit_exceeded``) and ``response.failed``.  Input with no ``data:`` line
    (empty, binary, plain text) yields nothing: the converter ends it with ``error``
    (code ``empty_input``).  Lone surrogates in ``str`` pieces become U+FFFD.
    """
    parser = SSEParser(max_line_bytes=max_line_bytes, max_event_bytes=max_event_bytes)
    pieces = (p if isinstance(p, bytes) else replace_surrogates(p).encode() for p in lines)
    for raw in sse_from_input(pieces, input):
        payloads = _payloads(parser, raw)
        yield from payloads
        if payloads and isinstance(payloads[-1], InputFailure):
            return
    yield from _close(parser)


def _str_kind(text: str) -> str:
    """``"sse"``, ``"payload"`` or ``"junk"`` for a ``str`` item, before any SSE input."""
    if text[:1] == "{" or isinstance(text, DataPayload):
        return "payload"
    if text[:1] == "\ufeff":  # the stream's BOM, on its first line
        text = text[1:]
    if not text.strip("\r\n") or text[0] == ":":
        return "sse"  # a blank line (the end of an event) or a comment
    for name in _SSE_FIELDS:
        if text.startswith(name) and text[len(name) : len(name) + 1] in ("", ":", "\n", "\r"):
            return "sse"
    # JSON that is not an object is a payload too: the converter says it is not a chunk
    return "payload" if text.strip()[:1] in ("{", "[") else "junk"


def _junk(item: object) -> InputFailure:
    """The failure a chat input item of no accepted form ends the stream with."""
    if isinstance(item, str):
        what = f"a str that is neither JSON nor an SSE line ({item!r:.60})"
    elif item is None:
        what = "None"
    else:
        what = type(item).__name__
    return InputFailure(f"malformed chat input: got {what}; {ACCEPTED}", BAD_INPUT)


def _mixed(item: object) -> InputFailure:
    what = "a data: payload string" if isinstance(item, str) else "a parsed chunk"
    return InputFailure(
        f"malformed chat input: got {what} after SSE input; one stream's items are either "
        "SSE (lines or bytes) or parsed chunks and data: payloads",
        BAD_INPUT,
    )


class _Forms:
    """The chat input items that are not a plain ``dict`` or a chunk's JSON text.

    ``pieces`` turns each into what the converter is fed: parsed chunks and ``data:``
    payloads.  SSE lines and bytes go through one ``SSEParser``, made on the first of
    them; from then on ``sse`` is true and every item comes here.
    """

    __slots__ = ("conv", "parser")

    def __init__(self, conv: ChatToResponses) -> None:
        self.conv = conv
        self.parser: SSEParser | None = None  # with the default caps

    @property
    def sse(self) -> bool:
        return self.parser is not None

    def pieces(self, item: object) -> list[Any]:
        """The parsed chunks and ``data:`` payloads ``item`` stands for, in order."""
        parser = self.parser
        if isinstance(item, str):
            if isinstance(item, InputFailure):
                return [item]
            if parser is None:
                kind = _str_kind(item)
                if kind == "junk":
                    return [_junk(item)]
                if kind == "payload":
                    return [item]
            elif _str_kind(item) == "payload":
                return [_mixed(item)]
            # An SSE line (once SSE input has come, any str but a payload is one: the
            # parser ignores unknown fields, as the SSE rules say).
            raw = replace_surrogates(item).encode()
            if not item.endswith(_LINE_ENDS):
                raw += b"\n"  # a line as iter_lines() gives it, without its line end
        elif isinstance(item, bytes | bytearray):
            raw = bytes(item)
        elif isinstance(item, Mapping):
            return [item] if parser is None else [_mixed(item)]
        else:
            return [_junk(item)]
        if parser is None:
            parser = self.parser = SSEParser()
        return _payloads(parser, raw, mark=False)  # fed to the converter, never handed out

    def feed(self, item: object) -> None:
        conv = self.conv
        for piece in self.pieces(item):
            if isinstance(piece, str):
                conv.feed_data(piece)
            else:
                conv.feed(piece)

    def feed_sse(self, item: object) -> list[bytes]:
        conv = self.conv
        if type(item) is bytes:  # SSE bytes: payloads only
            return conv.feed_payloads_sse(self.pieces(item))
        frames: list[bytes] = []
        for piece in self.pieces(item):
            frames += conv.feed_data_sse(piece) if isinstance(piece, str) else conv.feed_sse(piece)
        return frames

    def _rest(self) -> list[str]:
        """The payloads of an SSE event the input left unterminated."""
        return [] if self.parser is None or self.conv.done else _close(self.parser)

    def end(self) -> None:
        for piece in self._rest():
            self.conv.feed_data(piece)
        self.conv.end()

    def end_sse(self) -> list[bytes]:
        frames: list[bytes] = []
        for piece in self._rest():
            frames += self.conv.feed_data_sse(piece)
        return frames + self.conv.end_sse()


class ChatFeed:
    """One chat stream converted, sans I/O: each input item in, the events (or SSE
    frames) it makes out.  The sync and async entry points below only move items in and
    results out.

    A ``dict``, or a ``str`` that starts with ``{``, goes to the converter directly (the
    bulk of every stream, at no cost added by the other forms); anything else, and
    everything once SSE input has come, goes through ``_Forms``.
    """

    __slots__ = ("conv", "forms", "sse")

    def __init__(
        self,
        dialect: Dialect | str,
        request: Mapping[str, Any] | None,
        model: str | None,
        **kw: Any,
    ) -> None:
        proc = StreamProcessor(get_dialect(dialect), request=request, model=model, **kw)
        proc.start()
        self.conv = ChatToResponses(proc, request)
        self.forms = _Forms(self.conv)
        self.sse = False  # SSE input has come: every item goes through the forms

    @property
    def done(self) -> bool:
        """The stream has ended: no more input is read."""
        return self.conv.done

    def start(self) -> list[ResponsesEvent]:
        """The events of the stream's start."""
        return self.conv.proc.drain()

    def start_sse(self) -> list[bytes]:
        """The frames of the stream's start."""
        return self.conv.proc.drain_sse()

    def events(self, chunk: ChatInput) -> list[ResponsesEvent]:
        """The events one input item makes."""
        conv = self.conv
        if type(chunk) is dict and not self.sse:
            conv.feed(chunk)
        elif type(chunk) is str and chunk and chunk[0] == "{" and not self.sse:
            conv.feed_data(chunk)
        else:
            self.forms.feed(chunk)
            self.sse = self.forms.sse
        return conv.proc.drain()

    def frames(self, chunk: ChatInput) -> list[bytes]:
        """The SSE frames one input item makes."""
        conv = self.conv
        if type(chunk) is dict and not self.sse:
            return conv.feed_sse(chunk)
        if type(chunk) is str and chunk and chunk[0] == "{" and not self.sse:
            return conv.feed_data_sse(chunk)
        frames = self.forms.feed_sse(chunk)
        self.sse = self.forms.sse
        return frames

    def end(self) -> list[ResponsesEvent]:
        """The events that end the stream once the input has ended."""
        self.forms.end()
        return self.conv.proc.drain()

    def end_sse(self) -> list[bytes]:
        """The frames that end the stream once the input has ended."""
        return self.forms.end_sse()

    def fail(self, exc: Exception) -> None:
        """End the stream as the failure of its source (see ``source_failure``)."""
        self.conv._fail(*source_failure(exc))


def events_from_chat(
    chunks: Iterable[ChatInput],
    *,
    dialect: Dialect | str = "openai",
    request: Mapping[str, Any] | None = None,
    model: str | None = None,
    **kw: Any,
) -> Iterator[ResponsesEvent]:
    """Typed Responses events for chat input: parsed chunks, ``data:`` payloads, SSE
    lines or SSE bytes (see the module's doc string)."""
    feed = ChatFeed(dialect, request, model, **kw)
    yield from drive(feed, chunks, feed.start(), feed.events, feed.end)


def sse_from_chat(
    chunks: Iterable[ChatInput],
    *,
    dialect: Dialect | str = "openai",
    request: Mapping[str, Any] | None = None,
    model: str | None = None,
    **kw: Any,
) -> Iterator[bytes]:
    """The same stream as SSE frames, with the dialect's closing frame."""
    feed = ChatFeed(dialect, request, model, **kw)
    yield from drive(feed, chunks, feed.start_sse(), feed.frames, feed.end_sse)


async def aevents_from_chat(
    chunks: AsyncIterable[ChatInput],
    *,
    dialect: Dialect | str = "openai",
    request: Mapping[str, Any] | None = None,
    model: str | None = None,
    **kw: Any,
) -> AsyncIterator[ResponsesEvent]:
    """``events_from_chat`` for an async source (``aiter_lines()``, ``aiter_bytes()``, ...).

    If the source raises (a dropped connection, a timeout), the stream ends with
    ``error`` and ``response.failed`` (see ``source_failure``), keeping what was
    received.  The source is closed (its ``aclose()``) when the stream ends or is
    abandoned.
    """
    feed = ChatFeed(dialect, request, model, **kw)
    async for event in adrive(feed, chunks, feed.start(), feed.events, feed.end):
        yield event


async def asse_from_chat(
    chunks: AsyncIterable[ChatInput],
    *,
    dialect: Dialect | str = "openai",
    request: Mapping[str, Any] | None = None,
    model: str | None = None,
    joined: bool = False,
    **kw: Any,
) -> AsyncIterator[bytes]:
    """``sse_from_chat`` for an async source.

    A source that raises ends the stream with ``error`` and ``response.failed``, as in
    ``aevents_from_chat``; the source is closed when the stream ends or is abandoned.
    With ``joined``, the frames of one source item (and those of the stream's start
    and end) come as one ``bytes``, the same bytes in fewer pieces: one write each
    for a server, where a frame a write costs a system call each.
    """
    feed = ChatFeed(dialect, request, model, **kw)
    async for piece in adrive_sse(feed, chunks, joined):
        yield piece
