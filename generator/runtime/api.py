"""Sync and async entry points: chat chunks or Harmony segments in, events or SSE bytes out."""

from __future__ import annotations

from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Iterable,
    Iterator,
    Mapping,
)
from contextlib import aclosing
from typing import Any

from .chat import ChatToResponses, InputFailure
from .dialect import Dialect
from .processor import StreamProcessor, get_dialect
from .sse_parse import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_LINE_BYTES,
    SSELimitError,
    SSEParser,
    replace_surrogates,
)

SSE_LIMIT_EXCEEDED = "sse_limit_exceeded"


def chat_data_lines(
    lines: Iterable[str | bytes],
    *,
    max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
    max_event_bytes: int | None = DEFAULT_MAX_EVENT_BYTES,
) -> Iterator[str]:
    """The ``data:`` payloads of a chat SSE stream, joined per event.

    ``lines`` are pieces of the stream, text or bytes, split anywhere (lines, or
    chunks as they arrive).  They are read by the package's SSE parser, so a BOM,
    CR, CRLF or LF line ends, comments and multi-line ``data`` are as the SSE rules
    say.  Input over the parser's caps ends the payloads with an ``InputFailure`` that
    ends the converted stream with ``error`` (code ``sse_limit_exceeded``) and
    ``response.failed``.  Input with no ``data:`` line (empty, binary, plain text)
    yields nothing: the converter ends it with ``error`` (code ``empty_input``).  Lone
    surrogates in ``str`` pieces become U+FFFD.
    """
    parser = SSEParser(max_line_bytes=max_line_bytes, max_event_bytes=max_event_bytes)
    try:
        for piece in lines:
            raw = piece if isinstance(piece, bytes) else replace_surrogates(piece).encode()
            # One line per feed: the events before a line over the caps are still yielded.
            for line in raw.splitlines(keepends=True) if b"\n" in raw or b"\r" in raw else [raw]:
                for message in parser.feed(line):
                    yield message.data
        for message in parser.close():
            yield message.data
    except SSELimitError as exc:
        yield InputFailure(f"the chat input is unreadable: {exc}", SSE_LIMIT_EXCEEDED)


def _setup(
    dialect: Dialect | str, request: Mapping[str, Any] | None, model: str | None, **kw: Any
) -> ChatToResponses:
    proc = StreamProcessor(get_dialect(dialect), request=request, model=model, **kw)
    proc.start()
    return ChatToResponses(proc, request)


def events_from_chat(
    chunks: Iterable[Mapping[str, Any] | str],
    *,
    dialect: Dialect | str = "openai",
    request: Mapping[str, Any] | None = None,
    model: str | None = None,
    **kw: Any,
) -> Iterator[Any]:
    """Typed Responses events for chat chunks (parsed dicts or raw ``data:`` payloads)."""
    conv = _setup(dialect, request, model, **kw)
    yield from conv.proc.drain()
    for chunk in chunks:
        if isinstance(chunk, str):
            conv.feed_data(chunk)
        else:
            conv.feed(chunk)
        yield from conv.proc.drain()
        if conv.done:
            return
    conv.end()
    yield from conv.proc.drain()


def sse_from_chat(
    chunks: Iterable[Mapping[str, Any] | str],
    *,
    dialect: Dialect | str = "openai",
    request: Mapping[str, Any] | None = None,
    model: str | None = None,
    **kw: Any,
) -> Iterator[bytes]:
    """The same stream as SSE frames, with the dialect's closing frame."""
    conv = _setup(dialect, request, model, **kw)
    yield from conv.proc.drain_sse()
    for chunk in chunks:
        yield from conv.feed_data_sse(chunk) if isinstance(chunk, str) else conv.feed_sse(chunk)
        if conv.done:
            return
    yield from conv.end_sse()


async def aevents_from_chat(
    chunks: AsyncIterable[Mapping[str, Any] | str],
    *,
    dialect: Dialect | str = "openai",
    request: Mapping[str, Any] | None = None,
    model: str | None = None,
    **kw: Any,
) -> AsyncIterator[Any]:
    """``events_from_chat`` for an async source.

    If the source raises (a dropped connection, a timeout), the stream ends with
    ``error`` and ``response.failed`` (see ``source_failure``), keeping what was
    received.  The source is closed (its ``aclose()``) when the stream ends or is
    abandoned.
    """
    conv = _setup(dialect, request, model, **kw)
    for event in conv.proc.drain():
        yield event
    async with aclosing(_read(conv, chunks)) as reader:
        async for chunk in reader:
            if isinstance(chunk, str):
                conv.feed_data(chunk)
            else:
                conv.feed(chunk)
            for event in conv.proc.drain():
                yield event
    conv.end()
    for event in conv.proc.drain():
        yield event


async def asse_from_chat(
    chunks: AsyncIterable[Mapping[str, Any] | str],
    *,
    dialect: Dialect | str = "openai",
    request: Mapping[str, Any] | None = None,
    model: str | None = None,
    **kw: Any,
) -> AsyncIterator[bytes]:
    """``sse_from_chat`` for an async source.

    A source that raises ends the stream with ``error`` and ``response.failed``, as in
    ``aevents_from_chat``; the source is closed when the stream ends or is abandoned.
    """
    conv = _setup(dialect, request, model, **kw)
    for frame in conv.proc.drain_sse():
        yield frame
    async with aclosing(_read(conv, chunks)) as reader:
        async for chunk in reader:
            frames = conv.feed_data_sse(chunk) if isinstance(chunk, str) else conv.feed_sse(chunk)
            for frame in frames:
                yield frame
    for frame in conv.end_sse():
        yield frame


async def _read(
    conv: ChatToResponses, chunks: AsyncIterable[Mapping[str, Any] | str]
) -> AsyncGenerator[Mapping[str, Any] | str, None]:
    """The chunks of an async source until it ends or the stream is done.

    A source that raises fails the stream (see ``source_failure``) and ends the
    reading; the source is closed (its ``aclose()``) however the reading ends,
    also when the stream is abandoned.
    """
    source = aiter(chunks)
    try:
        while not conv.done:
            try:
                chunk = await anext(source)
            except StopAsyncIteration:
                return
            except Exception as exc:
                conv._fail(*source_failure(exc))
                return
            yield chunk
    finally:
        await _aclose(source)


SOURCE_FAILED = "source_failed"


def source_failure(exc: BaseException) -> tuple[str, str]:
    """The message and code an async stream ends with when its source raised ``exc``.

    A source can name its failure: an exception with a non-empty string ``code``
    attribute gives that code and its own text as the message.  Otherwise the code is
    ``source_timeout`` for a timeout (``TimeoutError``, or any exception whose class
    name contains ``Timeout``, like httpx's) and ``source_failed`` for anything else,
    and the message names the exception.
    """
    name, text = type(exc).__name__, str(exc)
    code = getattr(exc, "code", None)
    if isinstance(code, str) and code:
        return text or name, code
    timeout = isinstance(exc, TimeoutError) or any(
        "Timeout" in cls.__name__ for cls in type(exc).__mro__
    )
    detail = f"{name}: {text}" if text else name
    return f"the input stream failed: {detail}", "source_timeout" if timeout else SOURCE_FAILED


async def _aclose(source: AsyncIterator[Any]) -> None:
    """Close an async iterator that can be closed (an async generator, an httpx stream)."""
    aclose = getattr(source, "aclose", None)
    if aclose is not None:
        await aclose()
