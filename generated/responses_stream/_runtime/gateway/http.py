"""HTTP plumbing shared by the routes: bodies in, errors and streams out."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import anyio
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Scope

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


def event_stream(
    frames: AsyncIterator[bytes],
    cleanup: Callable[[], Awaitable[None]],
    headers: Mapping[str, str] | None = None,
    heartbeat: float = 0.0,
) -> StreamingResponse:
    """An SSE answer on Starlette's ``StreamingResponse``: each of ``frames`` sent as it
    comes.  The client going away ends it (Starlette stops the sending); ``frames`` is
    closed and ``cleanup`` runs however it ends.  With ``heartbeat`` (seconds), an SSE
    comment goes out whenever nothing was sent for that long, so that a balancer's idle
    timeout does not cut a stream whose upstream is thinking."""
    return StreamingResponse(
        _sent(frames, cleanup, heartbeat),
        headers={**SSE_HEADERS, **(headers or {})},
        media_type="text/event-stream",
    )


async def _sent(
    frames: AsyncIterator[bytes], cleanup: Callable[[], Awaitable[None]], heartbeat: float
) -> AsyncIterator[bytes]:
    body = _beating(frames, heartbeat) if heartbeat > 0 else frames
    try:
        async for frame in body:
            yield frame
    finally:
        # Starlette cancels the sending in a cancel scope when the client leaves: the
        # closing must not be cancelled with it
        with anyio.CancelScope(shield=True):
            try:
                if body is not frames:
                    await aclose(body)  # its reading of the frames ends first
                await aclose(frames)
            finally:
                await cleanup()


class _End:
    __slots__ = ("error",)

    def __init__(self, error: BaseException | None) -> None:
        self.error = error


async def _beating(frames: AsyncIterator[bytes], every: float) -> AsyncIterator[bytes]:
    """``frames``, and ``HEARTBEAT`` whenever none came for ``every`` seconds.

    A task reads the frames into a queue of one (so the upstream is read no faster than
    the client takes them); another puts a beat there when it has been silent.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes | _End] = asyncio.Queue(1)
    last = loop.time()

    async def pump() -> None:
        try:
            async for frame in frames:
                await queue.put(frame)
        except Exception as exc:
            await queue.put(_End(exc))
        else:
            await queue.put(_End(None))

    async def beat() -> None:
        while True:
            await asyncio.sleep(max(0.0, last + every - loop.time()))
            if loop.time() - last >= every:
                if queue.empty():  # else a frame waits for the client already
                    queue.put_nowait(HEARTBEAT)
                await asyncio.sleep(every)

    pumping, beating = loop.create_task(pump()), loop.create_task(beat())
    try:
        while True:
            item = await queue.get()
            if isinstance(item, _End):
                if item.error is not None:
                    raise item.error
                return
            yield item
            last = loop.time()
    finally:
        beating.cancel()
        pumping.cancel()
        with anyio.CancelScope(shield=True):  # the frames are closed once the pump ended
            await asyncio.gather(pumping, beating, return_exceptions=True)
