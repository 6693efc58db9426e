"""HTTP plumbing shared by the routes: bodies in, errors and streams out."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from ..core.aio import aclose
from ..core.errors import BadValue
from .errors import GatewayError

# The base paths of the gateway's dialects.
DIALECT_PREFIXES = {"/v1": "openai", "/openresponses/v1": "openresponses"}
SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}
# What a stream sends while its upstream is silent: an SSE comment, which clients skip.
HEARTBEAT = b": keep-alive\n\n"
# Names the tool types left out of the upstream request (``--hosted-tools drop``).
DROPPED_TOOLS_HEADER = "x-dropped-tools"


def dropped_tools_headers(dropped: list[str]) -> dict[str, str]:
    """The header that names each dropped tool type once, in request order."""
    return {DROPPED_TOOLS_HEADER: ", ".join(dict.fromkeys(dropped))} if dropped else {}


def route_path(scope: Scope) -> str:
    """The request's path under where the app is mounted (``root_path``, stripped only
    at a segment's end, as Starlette's router reads it)."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root) and path[len(root) : len(root) + 1] == "/":
        return path[len(root) :]
    return path


def error_response(exc: GatewayError) -> Response:
    """An error answer in the OpenAI shape, with its status and headers; logged
    (:meth:`GatewayError.log`: status, code, param and message, never a header)."""
    exc.log()
    return JSONResponse(exc.body(), exc.status, headers=exc.headers)


async def read_json(request: Request, limit: int) -> dict[str, Any]:
    """The request's JSON object: 413 over ``limit`` bytes, 400 for anything not an object."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large(limit)
    raw = bytearray()
    try:
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > limit:
                raise too_large(limit)
    except ClientDisconnect:
        raise GatewayError(400, "the client closed the request body early") from None
    return parse_object(bytes(raw))


def parse_object(raw: bytes | str) -> dict[str, Any]:
    """``raw`` as a JSON object; 400 naming what is wrong otherwise."""
    try:
        body = json.loads(raw, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise GatewayError(400, f"the request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise GatewayError(400, f"the request body must be a JSON object, not {_kind(body)}")
    return body


def too_large(limit: int) -> GatewayError:
    return GatewayError(
        413, f"the request body is larger than {limit} bytes", code="request_too_large"
    )


def _no_constant(name: str) -> Any:
    raise BadValue(f"{name} is not a JSON number")


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"


class EventStreamResponse(Response):
    """An SSE answer: each of ``frames`` sent as it comes, in one write; ``cleanup``
    runs however the stream ends.  The client going away (``http.disconnect``) ends
    the stream at once: a task that waits for it cancels the sending, which then ends
    quietly (the frames closed, so is the upstream).  With ``heartbeat`` (seconds), an
    SSE comment goes out whenever nothing was sent for that long, so that a balancer's
    idle timeout does not cut a stream whose upstream is thinking.  Leaner than
    Starlette's ``StreamingResponse``, whose task group costs a stream about 50 µs."""

    def __init__(
        self,
        frames: AsyncIterator[bytes],
        cleanup: Callable[[], Awaitable[None]],
        headers: Mapping[str, str] | None = None,
        heartbeat: float = 0.0,
    ) -> None:
        self.frames = frames
        self.cleanup = cleanup
        self.heartbeat = heartbeat
        self.status_code = 200
        self.background = None
        given = {"content-type": "text/event-stream; charset=utf-8", **SSE_HEADERS}
        given.update(headers or {})
        self.raw_headers = [
            (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in given.items()
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        task = asyncio.current_task()
        assert task is not None
        gone = done = False

        async def watch() -> None:
            nonlocal gone
            while (await receive())["type"] != "http.disconnect":
                pass
            if not done:
                gone = True
                task.cancel()

        watcher = asyncio.get_running_loop().create_task(watch())
        try:
            start = {"type": "http.response.start", "status": 200, "headers": self.raw_headers}
            await send(start)
            if self.heartbeat > 0:
                await _with_heartbeat(self.frames, send, self.heartbeat)
            else:
                async for frame in self.frames:
                    await send({"type": "http.response.body", "body": frame, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except asyncio.CancelledError:
            if not gone:
                raise
            task.uncancel()  # the client left: nothing more to send
        finally:
            done = True
            watcher.cancel()
            try:
                await aclose(self.frames)
            finally:
                await self.cleanup()


async def _with_heartbeat(frames: AsyncIterator[bytes], send: Send, every: float) -> None:
    """Send ``frames``, and ``HEARTBEAT`` whenever nothing went out for ``every`` seconds.

    The beat runs beside the sending, in a task of its own; a lock keeps the two from
    writing at once.
    """
    loop = asyncio.get_running_loop()
    lock = asyncio.Lock()
    last = loop.time()

    async def beat() -> None:
        nonlocal last
        while True:
            await asyncio.sleep(max(0.0, last + every - loop.time()))
            if loop.time() - last >= every:
                async with lock:
                    await send({"type": "http.response.body", "body": HEARTBEAT, "more_body": True})
                last = loop.time()

    beating = loop.create_task(beat())
    try:
        async for frame in frames:
            async with lock:
                await send({"type": "http.response.body", "body": frame, "more_body": True})
            last = loop.time()
    finally:
        beating.cancel()
