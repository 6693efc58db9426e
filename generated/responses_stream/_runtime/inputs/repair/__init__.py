"""A server's Responses stream in, a strictly valid Responses stream out.

The entry points take the server's stream in the forms it comes in: parsed events
(``Mapping``), ``data:`` payloads (``str``: an event's JSON text; ``[DONE]`` is
ignored) or SSE bytes, split anywhere.  What is repaired, and how, is in ``reader``.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from ...core.convert import loads
from ...core.dialect import Dialect
from ...core.errors import source_failure
from ...core.processor import StreamProcessor, get_dialect
from ...core.sse_parse import SSELimitError, SSEParser
from ..drive import adrive, adrive_sse, drive
from .markup import CallMarkup, MarkupCall
from .reader import BAD_STREAM, ENDED_EARLY, ResponsesRepair

if TYPE_CHECKING:
    from ...core.processor import ResponsesEvent

__all__ = [
    "BAD_STREAM",
    "ENDED_EARLY",
    "CallMarkup",
    "MarkupCall",
    "ResponsesFeed",
    "ResponsesInput",
    "ResponsesRepair",
    "aevents_from_responses",
    "asse_from_responses",
    "events_from_responses",
    "sse_from_responses",
]

ResponsesInput: TypeAlias = Mapping[str, Any] | str | bytes
"""One item of a server's Responses stream: a parsed event, a ``data:`` payload or SSE bytes."""


class ResponsesFeed:
    """One server stream repaired, sans I/O: each input item in, the events (or SSE
    frames) it makes out."""

    __slots__ = ("parser", "repair")

    def __init__(
        self,
        dialect: Dialect | str,
        request: Mapping[str, Any] | None,
        model: str | None,
        **kw: Any,
    ) -> None:
        proc = StreamProcessor(get_dialect(dialect), request=request, model=model, **kw)
        proc.start()
        self.repair = ResponsesRepair(proc, request)
        self.parser: SSEParser | None = None

    @property
    def done(self) -> bool:
        return self.repair.done

    def _feed(self, item: object) -> None:
        repair = self.repair
        if isinstance(item, Mapping):
            repair.feed(item)
        elif isinstance(item, str):
            self._payload(item)
        elif isinstance(item, bytes | bytearray):
            if self.parser is None:
                self.parser = SSEParser()
            try:
                payloads = self.parser.feed_data(bytes(item))
            except SSELimitError as exc:
                for message in exc.messages:
                    self._payload(message.data)
                repair.fail(f"the upstream stream is unreadable: {exc}", BAD_STREAM)
                return
            for payload in payloads:
                self._payload(payload)
        else:
            repair.seen = True
            repair.fail(
                f"malformed input: got {type(item).__name__}; Responses input items must be"
                " parsed events (dicts), data: payload strings or SSE bytes",
                BAD_STREAM,
            )

    def _payload(self, data: str) -> None:
        if self.repair.done or data.strip() == "[DONE]":
            return
        try:
            event = loads(data)
        except (ValueError, RecursionError) as exc:
            self.repair.seen = True
            self.repair.fail(
                f"the upstream sent an event that is not JSON: {exc}"[:1000], BAD_STREAM
            )
            return
        self.repair.feed(event)

    def _end(self) -> None:
        if self.parser is not None and not self.repair.done:
            try:
                for message in self.parser.close():
                    self._payload(message.data)
            except SSELimitError as exc:
                self.repair.fail(f"the upstream stream is unreadable: {exc}", BAD_STREAM)
        self.repair.end()

    def start(self) -> list[ResponsesEvent]:
        return self.repair.proc.drain()

    def start_sse(self) -> list[bytes]:
        return self.repair.proc.drain_sse()

    def events(self, item: ResponsesInput) -> list[ResponsesEvent]:
        self._feed(item)
        return self.repair.proc.drain()

    def frames(self, item: ResponsesInput) -> list[bytes]:
        self._feed(item)
        return self.repair.proc.drain_sse()

    def end(self) -> list[ResponsesEvent]:
        self._end()
        return self.repair.proc.drain()

    def end_sse(self) -> list[bytes]:
        self._end()
        return self.repair.proc.drain_sse()

    def fail(self, exc: Exception) -> None:
        """End the stream as the failure of its source (see ``source_failure``)."""
        self.repair.fail(*source_failure(exc))


def events_from_responses(
    items: Iterable[ResponsesInput],
    *,
    dialect: Dialect | str = "openai",
    request: Mapping[str, Any] | None = None,
    model: str | None = None,
    **kw: Any,
) -> Iterator[ResponsesEvent]:
    """The repaired stream's typed events, for a server's Responses stream."""
    feed = ResponsesFeed(dialect, request, model, **kw)
    yield from drive(feed, items, feed.start(), feed.events, feed.end)


def sse_from_responses(
    items: Iterable[ResponsesInput],
    *,
    dialect: Dialect | str = "openai",
    request: Mapping[str, Any] | None = None,
    model: str | None = None,
    **kw: Any,
) -> Iterator[bytes]:
    """The repaired stream as SSE frames, with the dialect's closing frame."""
    feed = ResponsesFeed(dialect, request, model, **kw)
    yield from drive(feed, items, feed.start_sse(), feed.frames, feed.end_sse)


async def aevents_from_responses(
    items: AsyncIterable[ResponsesInput],
    *,
    dialect: Dialect | str = "openai",
    request: Mapping[str, Any] | None = None,
    model: str | None = None,
    **kw: Any,
) -> AsyncIterator[ResponsesEvent]:
    """``events_from_responses`` for an async source; a source that raises ends the
    stream with ``error`` and ``response.failed``, and is closed however it ends."""
    feed = ResponsesFeed(dialect, request, model, **kw)
    async for event in adrive(feed, items, feed.start(), feed.events, feed.end):
        yield event


async def asse_from_responses(
    items: AsyncIterable[ResponsesInput],
    *,
    dialect: Dialect | str = "openai",
    request: Mapping[str, Any] | None = None,
    model: str | None = None,
    joined: bool = False,
    **kw: Any,
) -> AsyncIterator[bytes]:
    """``sse_from_responses`` for an async source.  With ``joined``, the frames
    one source item makes come as one ``bytes`` (one write for a server)."""
    feed = ResponsesFeed(dialect, request, model, **kw)
    async for piece in adrive_sse(feed, items, joined):
        yield piece
