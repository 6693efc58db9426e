"""The sync and async drivers of a sans-I/O feed: input items in, events or frames out.

A feed (the chat conversion's ``ChatFeed``, the repair's ``ResponsesFeed``) turns each
input item into what it makes; the drivers only move items in and results out, stop
once the feed is done, and close an async source however the stream ends.
"""

from __future__ import annotations

from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
)
from contextlib import aclosing
from typing import Any, Protocol, TypeVar

from ..core.aio import aclose

_T = TypeVar("_T")
Step = Callable[[Any], list[_T]]


class Feed(Protocol):
    """What the drivers need of a feed."""

    @property
    def done(self) -> bool: ...

    def fail(self, exc: Exception) -> None: ...


class SSEFeed(Feed, Protocol):
    """A feed that makes SSE frames: the stream's start, each item's, the stream's end."""

    def start_sse(self) -> list[bytes]: ...

    def frames(self, item: Any) -> list[bytes]: ...

    def end_sse(self) -> list[bytes]: ...


def drive(
    feed: Feed,
    items: Iterable[Any],
    start: list[_T],
    step: Step[_T],
    end: Callable[[], list[_T]],
) -> Iterator[_T]:
    """The sync driver: ``start``, each item's results until the feed is done, ``end``."""
    yield from start
    for item in items:
        yield from step(item)
        if feed.done:
            return
    yield from end()


async def adrive(
    feed: Feed,
    items: AsyncIterable[Any],
    start: list[_T],
    step: Step[_T],
    end: Callable[[], list[_T]],
) -> AsyncIterator[_T]:
    """The async driver: as ``drive``; a source that raises fails the stream, and the
    source is closed however the stream ends (``read``)."""
    for out in start:
        yield out
    async with aclosing(read(feed, items)) as reader:
        async for item in reader:
            for out in step(item):
                yield out
    for out in end():
        yield out


async def adrive_sse(
    feed: SSEFeed, items: AsyncIterable[Any], joined: bool
) -> AsyncIterator[bytes]:
    """``adrive`` for SSE frames; with ``joined``, the frames of one source item (and
    those of the stream's start and end) come as one ``bytes``: the same bytes in fewer
    pieces, one write each for a server."""
    if not joined:
        async for frame in adrive(feed, items, feed.start_sse(), feed.frames, feed.end_sse):
            yield frame
        return
    start = _joined(feed.start_sse())
    step, end = (lambda item: _joined(feed.frames(item))), (lambda: _joined(feed.end_sse()))
    async for piece in adrive(feed, items, start, step, end):
        yield piece


def _joined(frames: list[bytes]) -> list[bytes]:
    """``frames`` as one ``bytes`` (none if none)."""
    return [b"".join(frames)] if frames else []


async def read(feed: Feed, items: AsyncIterable[Any]) -> AsyncGenerator[Any, None]:
    """The items of an async source until it ends or the feed is done.

    A source that raises fails the stream (the feed's ``fail``) and ends the reading;
    the source is closed (its ``aclose()``) however the reading ends, also when the
    stream is abandoned.
    """
    source = aiter(items)
    try:
        while not feed.done:
            try:
                item = await anext(source)
            except StopAsyncIteration:
                return
            except Exception as exc:
                feed.fail(exc)
                return
            yield item
    finally:
        await aclose(source)
