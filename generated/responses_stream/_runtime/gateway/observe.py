"""ASGI middleware that counts and times every request for the metrics (``metrics``).

An HTTP request is counted once answered (a stream once it ended) by route, dialect,
routed model and status; an event stream's first event, duration, events and bytes
are measured as they go out.  A WebSocket connection is counted when it closes
(status 101 once accepted), each message sent as an event.
"""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .http import DIALECT_PREFIXES, route_path
from .metrics import Metrics
from .request_ids import current_request


def classify(method: str, path: str, websocket: bool = False) -> tuple[str, str]:
    """The route and dialect labels of a request."""
    prefix, dialect = next(
        ((p, d) for p, d in DIALECT_PREFIXES.items() if path.startswith(p + "/")), ("", "")
    )
    if not prefix:
        return (path[1:] if path in ("/health", "/metrics") else "other"), ""
    rest = path[len(prefix) :]
    if rest == "/chat/completions" and dialect == "openai":
        return "chat_completions", "chat"
    if rest == "/responses":
        return ("responses_websocket" if websocket else "responses"), dialect
    if rest == "/responses/compact":
        return "compact", dialect
    if rest.startswith("/responses/"):
        if rest.endswith("/input_items"):
            return "input_items", dialect
        return ("delete" if method == "DELETE" else "retrieve"), dialect
    if rest == "/models" or rest.startswith("/models/"):
        return "models", dialect
    return "other", dialect


class Observe:
    """Measures each request for ``metrics`` (see the module doc)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            return await self._http(scope, receive, send)
        if scope["type"] == "websocket":
            return await self._websocket(scope, receive, send)
        return await self.app(scope, receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        m = self.metrics
        start = time.perf_counter()
        route, dialect = classify(scope["method"], route_path(scope))
        series = m.route(route)
        status, streaming, first, events, size = 500, False, True, 0, 0

        async def sending(message: Message) -> None:
            nonlocal status, streaming, first, events, size
            if message["type"] == "http.response.start":
                status = message["status"]
                for name, value in message.get("headers") or ():
                    if name.lower() == b"content-type":
                        streaming = value.startswith(b"text/event-stream")
                if streaming:
                    m.active.inc()
            elif streaming and message["type"] == "http.response.body":
                body = message.get("body") or b""
                if body:
                    if first:
                        series.first_event.observe(time.perf_counter() - start)
                        first = False
                    events += body.count(b"\n\n")
                    size += len(body)
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            if streaming:
                m.active.dec()
                series.duration.observe(time.perf_counter() - start)
                series.events.inc(events)
                series.bytes.inc(size)
            self._count(route, dialect, status)

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        m = self.metrics
        route, dialect = classify("GET", route_path(scope), websocket=True)
        status, events, size = 403, 0, 0

        async def sending(message: Message) -> None:
            nonlocal status, events, size
            kind = message["type"]
            if kind == "websocket.accept":
                status = 101
            elif kind == "websocket.send":
                events += 1
                text = message.get("text")
                size += len(text.encode()) if text is not None else len(message.get("bytes") or b"")
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            series = m.route(route)
            series.events.inc(events)
            series.bytes.inc(size)
            self._count(route, dialect, status)

    def _count(self, route: str, dialect: str, status: int) -> None:
        info = current_request()
        model = info.model if info is not None else ""
        self.metrics.answered(route, dialect, model, status)
