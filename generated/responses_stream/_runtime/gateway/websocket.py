"""The WebSocket mode of ``/responses`` (Open Responses, 2026-04-24).

A client sends ``{"type": "response.create", ...create body}`` messages; each turn's
events come back as one JSON text message each, the same events a stream has.  Turns
run one at a time.  The connection keeps its last responses (``store: false`` ones
too) for ``previous_response_id``; a continuation that fails evicts the response it
continued, and one whose response is not known fails with
``previous_response_not_found``.  Failures before a turn's stream are
``WebSocketErrorEvent`` messages.  ``stream`` and ``stream_options`` are taken and
ignored (a WebSocket turn always streams); ``generate: false`` warms the connection
up: the turn is kept for continuation, no model is called, and its stream is a
completed response with no output.  A connection lasts at most
``GatewayConfig.websocket_seconds``, then ends with ``websocket_connection_limit_reached``.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import aclosing
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from .context import ConnectionCache
from .errors import GatewayError, bad_request
from .http import parse_object, too_large
from .request_check import check_request
from .state import Gateway
from .tenancy import Caller
from .turn import plan_turn

IGNORED = ("stream", "stream_options")  # a WebSocket turn always streams


async def serve_websocket(gw: Gateway, ws: WebSocket, dialect: str) -> None:
    """One connection: turns until the client leaves or the time limit is reached."""
    await ws.accept()
    cache = ConnectionCache(gw.config.connection_cache)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + gw.config.websocket_seconds
    caller = await gw.caller(ws.headers.get("authorization"))
    try:
        while True:
            try:
                message = await asyncio.wait_for(ws.receive(), deadline - loop.time())
            except TimeoutError:
                limit = GatewayError(
                    400,
                    "the WebSocket connection reached its time limit; open a new one",
                    code="websocket_connection_limit_reached",
                )
                await _send(ws, limit.websocket_event())
                await ws.close(1000)
                return
            if message["type"] == "websocket.disconnect":
                return
            text = message.get("text")
            if text is None:
                raw = message.get("bytes") or b""
                text = raw.decode("utf-8", "replace")
            await _turn(gw, ws, text, dialect, cache, caller)
    except WebSocketDisconnect:
        return


async def _turn(
    gw: Gateway,
    ws: WebSocket,
    text: str,
    dialect: str,
    cache: ConnectionCache,
    caller: Caller,
) -> None:
    previous: Any = None
    try:
        if len(text.encode()) > gw.config.max_body_bytes:
            raise too_large(gw.config.max_body_bytes)
        body = parse_object(text)
        previous = body.get("previous_response_id")
        if body.get("type") != "response.create":
            raise bad_request("a client message must have type 'response.create'", "type")
        if body.get("background"):
            raise bad_request("'background' must not be sent over a WebSocket", "background")
        generate = body.pop("generate", None)
        if generate is not None and not isinstance(generate, bool):
            raise bad_request("'generate' must be a boolean", "generate")
        for name in ("type", *IGNORED):
            body.pop(name, None)
        check_request(body, "responses")
        route = gw.router.route(body["model"], "responses")
        turn = await plan_turn(
            gw.config,
            gw.store,
            body,
            dialect,
            caller=caller,
            route=route,
            cache=cache,
            missing_status=400,
        )
        if generate is False:
            turn.prewarm()
        else:
            await turn.start(route.client, caller.upstream_authorization, first_event=False)
    except GatewayError as exc:
        if isinstance(previous, str):
            cache.evict(previous)
        await _send(ws, exc.websocket_event())
        return
    async with aclosing(turn.frames(gw.store)) as frames:
        async for frame in frames:
            for payload in _payloads(frame):
                await ws.send_text(payload)
    if (turn.response or {}).get("status") == "failed":
        if isinstance(previous, str):
            cache.evict(previous)
        return
    cache.put(turn.response_id, turn.items)


def _payloads(frames: bytes) -> list[str]:
    """The ``data:`` payloads of SSE frames (``[DONE]`` left out)."""
    out = []
    for frame in frames.split(b"\n\n"):
        for line in frame.split(b"\n"):
            if line.startswith(b"data: ") and line != b"data: [DONE]":
                out.append(line[6:].decode())
    return out


async def _send(ws: WebSocket, event: dict[str, Any]) -> None:
    await ws.send_text(json.dumps(event, ensure_ascii=False))
