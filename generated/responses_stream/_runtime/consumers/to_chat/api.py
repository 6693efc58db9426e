"""The sync and async entry points: a Responses stream (payloads or SSE bytes) in,
chat chunks or chat SSE out, over one ``ResponsesToChat`` each."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import Any

from ...core.aio import aclose
from ...core.dialect import Dialect
from ...core.errors import source_failure
from ...core.input_form import asse_from_input, sse_from_input
from ...core.sse_parse import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_LINE_BYTES,
    SSELimitError,
    SSEParser,
)
from .converter import ResponsesToChat
from .shapes import (
    DONE_FRAME,
    HostedMode,
    Payload,
    ReasoningMode,
    _frame,
)


def _converter(
    reasoning: ReasoningMode,
    include_usage: bool,
    dialect: Dialect | str,
    hosted: HostedMode,
    model: str | None,
) -> ResponsesToChat:
    return ResponsesToChat(
        reasoning=reasoning,
        include_usage=include_usage,
        dialect=dialect,
        hosted=hosted,
        model=model,
    )


def _closing(conv: ResponsesToChat) -> list[bytes]:
    """The frames that end the chat stream: what closing the converter gives, then
    ``data: [DONE]``."""
    return [*map(_frame, conv.close()), DONE_FRAME]


def _failed(conv: ResponsesToChat, exc: Exception) -> list[bytes]:
    """The error chunk's frame for a source that raised ``exc`` (see ``source_failure``)."""
    return [_frame(chunk) for chunk in conv._end_with_error(*source_failure(exc))]


def _over_cap(conv: ResponsesToChat, exc: SSELimitError) -> list[bytes]:
    """The frames for the events a read completed before it went over an SSE cap, then
    the error chunk (code ``sse_limit_exceeded``) unless the stream had already ended."""
    frames: list[bytes] = []
    for message in exc.messages:
        if not conv.done:
            frames.extend(conv.feed_sse(message.data))
    if not conv.done:
        frames.extend(_frame(failed) for failed in conv.fail(str(exc), "sse_limit_exceeded"))
    return frames


class _SSEReader:
    """A Responses stream's SSE bytes in, chat SSE frames out, one read at a time (sans
    I/O): the sync and async entry points only move the reads in and the frames out."""

    __slots__ = ("conv", "parser", "stopped")

    def __init__(
        self, conv: ResponsesToChat, max_line_bytes: int | None, max_event_bytes: int | None
    ) -> None:
        self.conv = conv
        self.parser = SSEParser(max_line_bytes=max_line_bytes, max_event_bytes=max_event_bytes)
        self.stopped = False  # the input ended or went over a cap

    @property
    def done(self) -> bool:
        """Nothing more is read: the chat stream or the input has ended."""
        return self.stopped or self.conv.done

    def read(self, chunk: bytes | None) -> list[bytes]:
        """The frames one read makes; None is the end of the input."""
        conv = self.conv
        try:
            messages = self.parser.close() if chunk is None else self.parser.feed(chunk)
        except SSELimitError as exc:
            self.stopped = True
            return _over_cap(conv, exc)
        self.stopped = chunk is None
        frames: list[bytes] = []
        for message in messages:
            frames += conv.feed_sse(message.data)
            if conv.done:
                break
        return frames


def chat_chunks_from_responses(
    payloads: Iterable[Payload],
    *,
    reasoning: ReasoningMode = "reasoning_content",
    include_usage: bool = False,
    dialect: Dialect | str = "openai",
    hosted: HostedMode = "omit",
    model: str | None = None,
) -> Iterator[dict[str, Any]]:
    """Chat chunk dicts for a Responses stream's payloads; reading stops at its end."""
    conv = _converter(reasoning, include_usage, dialect, hosted, model)
    for payload in payloads:
        yield from conv.feed(payload)
        if conv.done:
            return
    yield from conv.close()


def chat_sse_from_responses(
    payloads: Iterable[Payload],
    *,
    reasoning: ReasoningMode = "reasoning_content",
    include_usage: bool = False,
    dialect: Dialect | str = "openai",
    hosted: HostedMode = "omit",
    model: str | None = None,
) -> Iterator[bytes]:
    """Chat SSE frames (``data: {json}\\n\\n``) for a Responses stream, then ``data: [DONE]``."""
    conv = _converter(reasoning, include_usage, dialect, hosted, model)
    for payload in payloads:
        yield from conv.feed_sse(payload)
        if conv.done:
            break
    yield from _closing(conv)


async def achat_sse_from_responses(
    payloads: AsyncIterable[Payload] | Iterable[Payload],
    *,
    reasoning: ReasoningMode = "reasoning_content",
    include_usage: bool = False,
    dialect: Dialect | str = "openai",
    hosted: HostedMode = "omit",
    model: str | None = None,
) -> AsyncIterator[bytes]:
    """The async twin of ``chat_sse_from_responses``.

    If the source raises (a dropped connection, a timeout), the stream ends with an
    ``{"error": ...}`` chunk (the openai SDK raises ``APIError``) and ``data: [DONE]``,
    never with a cut body or a ``finish_reason``; the message and code are those of
    ``source_failure``.  An async source is closed (its ``aclose()``) when the stream
    ends or is abandoned.
    """
    conv = _converter(reasoning, include_usage, dialect, hosted, model)
    is_async = isinstance(payloads, AsyncIterable)
    source: Any = aiter(payloads) if is_async else iter(payloads)  # type: ignore[arg-type]
    try:
        while not conv.done:
            try:
                payload = await anext(source) if is_async else next(source)
            except (StopAsyncIteration, StopIteration):
                break
            except Exception as exc:
                frames = _failed(conv, exc)
            else:
                frames = conv.feed_sse(payload)
            for frame in frames:
                yield frame
        for frame in _closing(conv):
            yield frame
    finally:
        await aclose(source)


def chat_sse_from_sse(
    chunks: Iterable[bytes],
    *,
    reasoning: ReasoningMode = "reasoning_content",
    include_usage: bool = False,
    dialect: Dialect | str = "openai",
    hosted: HostedMode = "omit",
    model: str | None = None,
    max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
    max_event_bytes: int | None = DEFAULT_MAX_EVENT_BYTES,
    input: str = "auto",
) -> Iterator[bytes]:
    """``chat_sse_from_responses`` for a Responses stream as SSE bytes, parsed here.

    ``input`` says what the bytes are: ``"sse"``, ``"jsonl"`` (one event per line) or
    ``"auto"``, told from the first bytes (see ``sse_from_input``).  Bytes that are not
    UTF-8 are read as U+FFFD.  An input line or event over the parser's caps (see
    ``SSEParser``) ends the chat stream with an error chunk, code
    ``sse_limit_exceeded``, then ``data: [DONE]``; input without any event, with an
    error chunk, code ``empty_input``.
    """
    reader = _SSEReader(
        _converter(reasoning, include_usage, dialect, hosted, model),
        max_line_bytes,
        max_event_bytes,
    )
    source = sse_from_input(chunks, input)
    while not reader.done:
        yield from reader.read(next(source, None))
    yield from _closing(reader.conv)


async def achat_sse_from_sse(
    chunks: AsyncIterable[bytes],
    *,
    reasoning: ReasoningMode = "reasoning_content",
    include_usage: bool = False,
    dialect: Dialect | str = "openai",
    hosted: HostedMode = "omit",
    model: str | None = None,
    max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
    max_event_bytes: int | None = DEFAULT_MAX_EVENT_BYTES,
    input: str = "auto",
) -> AsyncIterator[bytes]:
    """``chat_sse_from_sse`` for an async source of SSE or JSON lines (``aiter_bytes()``).

    The bytes are parsed here, one read at a time, as ``chat_sse_from_sse`` parses them
    (the same caps and the same error chunk over them).  A source that raises ends the
    stream as in ``achat_sse_from_responses``; the source is closed (its ``aclose()``)
    when the stream ends or is abandoned.
    """
    reader = _SSEReader(
        _converter(reasoning, include_usage, dialect, hosted, model),
        max_line_bytes,
        max_event_bytes,
    )
    source = asse_from_input(chunks, input)  # closes the source when it is closed
    try:
        while not reader.done:
            try:
                chunk: bytes | None = await anext(source)
            except StopAsyncIteration:
                chunk = None
            except Exception as exc:
                reader.stopped = True
                frames = _failed(reader.conv, exc)
            else:
                frames = reader.read(chunk)
            for frame in frames:
                yield frame
        for frame in _closing(reader.conv):
            yield frame
    finally:
        await aclose(source)
