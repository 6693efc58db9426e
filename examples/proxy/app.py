"""A two-way proxy between the Chat Completions and Responses APIs.

- ``POST /v1/chat/completions`` is served from an upstream ``/v1/responses``
  (for Chat-Completions-only clients in front of a Responses-only server);
- ``POST /v1/responses`` is served from an upstream ``/v1/chat/completions``
  (a Responses API in front of any chat-completions server).

Run it with ``UPSTREAM_URL=http://host:port/v1 uvicorn examples.proxy.app:app``;
``UPSTREAM_API_KEY`` is sent upstream as a bearer token.  Only streaming
requests are supported.  When the client disconnects, the streaming body is
cancelled and the upstream connection closes with it.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from responses_stream import achat_sse_from_responses, aparse_sse, asse_from_chat

from .translate import chat_to_responses_request, responses_to_chat_request

SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


class Upstream:
    """Streaming POSTs to the upstream server."""

    def __init__(
        self, base_url: str, api_key: str | None = None, client: httpx.AsyncClient | None = None
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = client or httpx.AsyncClient(timeout=httpx.Timeout(60.0, read=None))

    async def data(self, path: str, body: dict[str, Any]) -> AsyncIterator[str]:
        """The ``data:`` payloads of an upstream SSE response."""
        async with self.client.stream(
            "POST", self.base_url + path, json=body, headers=self.headers
        ) as response:
            if response.status_code != 200:
                detail = (await response.aread()).decode("utf-8", "replace")
                yield json.dumps(
                    {
                        "error": {
                            "message": f"upstream {response.status_code}: {detail[:500]}",
                            "code": "upstream_error",
                        }
                    }
                )
                return
            async for message in aparse_sse(response.aiter_bytes()):
                yield message.data


def _bad_request(message: str) -> Response:
    return JSONResponse({"error": {"message": message, "type": "invalid_request_error"}}, 400)


def create_app(upstream: Upstream) -> Starlette:
    """The proxy's ASGI app, talking to ``upstream``."""

    async def chat_completions(request: Request) -> Response:
        body = await request.json()
        if not body.get("stream"):
            return _bad_request("this proxy only serves stream=true")
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        frames = achat_sse_from_responses(
            upstream.data("/responses", chat_to_responses_request(body)),
            include_usage=include_usage,
            reasoning=os.environ.get("PROXY_REASONING", "reasoning_content"),  # type: ignore[arg-type]
            model=body.get("model"),
        )
        return StreamingResponse(frames, media_type="text/event-stream", headers=SSE_HEADERS)

    async def responses(request: Request) -> Response:
        body = await request.json()
        if not body.get("stream"):
            return _bad_request("this proxy only serves stream=true")
        frames = asse_from_chat(
            upstream.data("/chat/completions", responses_to_chat_request(body)),
            dialect=request.query_params.get("dialect", "openai"),
            request=body,
            model=body.get("model"),
        )
        return StreamingResponse(frames, media_type="text/event-stream", headers=SSE_HEADERS)

    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/v1/responses", responses, methods=["POST"]),
        ]
    )


def _from_env() -> Starlette:
    url = os.environ.get("UPSTREAM_URL", "http://127.0.0.1:8000/v1")
    return create_app(Upstream(url, os.environ.get("UPSTREAM_API_KEY")))


app = _from_env()
