"""A recording pass-through put between the gateway and a real upstream.

It forwards every request as it came and relays the upstream's answer byte for byte,
keeping both, so a test can set what the gateway said beside what the server said to the
very same request (its random call ids and its token counts included).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route


@dataclass
class Exchange:
    """One request forwarded upstream and the answer's bytes as they came."""

    path: str
    request: dict[str, Any]
    status: int = 0
    content_type: str = ""
    body: bytearray = field(default_factory=bytearray)

    @property
    def streamed(self) -> bool:
        return self.content_type.startswith("text/event-stream")

    def chunks(self) -> list[dict[str, Any]]:
        """The JSON payloads of a streamed answer, ``[DONE]`` left out."""
        text = self.body.decode("utf-8")
        return [
            json.loads(line[5:])
            for line in text.splitlines()
            if line.startswith("data:") and line[5:].strip() != "[DONE]"
        ]

    def answer(self) -> dict[str, Any]:
        """The JSON body of an answer that was not streamed."""
        value: dict[str, Any] = json.loads(self.body)
        return value


class Tap:
    """A Starlette app forwarding everything to ``upstream`` (a base URL) and keeping
    each exchange in ``exchanges``, in the order the requests came."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.exchanges: list[Exchange] = []
        self.app = Starlette(routes=[Route("/{path:path}", self._forward, methods=["GET", "POST"])])

    def last(self, path: str = "/v1/chat/completions") -> Exchange:
        return next(e for e in reversed(self.exchanges) if e.path == path)

    async def _forward(self, request: Request) -> Response:
        body = await request.body()
        path = request.url.path
        exchange = Exchange(path, json.loads(body) if body else {})
        self.exchanges.append(exchange)
        client = httpx.AsyncClient(timeout=httpx.Timeout(300, connect=10))
        headers = {"content-type": request.headers.get("content-type", "application/json")}
        sent = client.build_request(
            request.method, self.upstream + path, content=body, headers=headers
        )
        answer = await client.send(sent, stream=True)
        exchange.status = answer.status_code
        exchange.content_type = answer.headers.get("content-type", "")

        async def relay() -> AsyncIterator[bytes]:
            try:
                async for piece in answer.aiter_raw():
                    exchange.body += piece
                    yield piece
            finally:
                await answer.aclose()
                await client.aclose()

        return StreamingResponse(
            relay(), status_code=answer.status_code, media_type=exchange.content_type or None
        )
