"""Sync and async entry points: chat chunks or Harmony segments in, events or SSE bytes out."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from typing import Any

from .chat import ChatToResponses
from .dialect import Dialect
from .processor import StreamProcessor, get_dialect


def chat_data_lines(lines: Iterable[str]) -> Iterator[str]:
    """The ``data:`` payloads of a chat SSE stream, joined per event."""
    buf: list[str] = []
    for raw in lines:
        line = raw.rstrip("\r\n")
        if line.startswith("data:"):
            buf.append(line[5:].removeprefix(" "))
        elif line == "" and buf:
            yield "\n".join(buf)
            buf = []
    if buf:
        yield "\n".join(buf)


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
    """``events_from_chat`` for an async source."""
    conv = _setup(dialect, request, model, **kw)
    for event in conv.proc.drain():
        yield event
    async for chunk in chunks:
        if isinstance(chunk, str):
            conv.feed_data(chunk)
        else:
            conv.feed(chunk)
        for event in conv.proc.drain():
            yield event
        if conv.done:
            return
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
    """``sse_from_chat`` for an async source."""
    conv = _setup(dialect, request, model, **kw)
    for frame in conv.proc.drain_sse():
        yield frame
    async for chunk in chunks:
        frames = conv.feed_data_sse(chunk) if isinstance(chunk, str) else conv.feed_sse(chunk)
        for frame in frames:
            yield frame
        if conv.done:
            return
    for frame in conv.end_sse():
        yield frame
