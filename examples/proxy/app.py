"""A two-way proxy between the Chat Completions and Responses APIs.

- ``POST /v1/chat/completions`` is served from an upstream ``/v1/responses``
  (for Chat-Completions-only clients in front of a Responses-only server);
- ``POST /v1/responses`` is served from an upstream ``/v1/chat/completions``
  (a Responses API in front of any chat-completions server).

Run it with ``UPSTREAM_URL=http://host:port/v1 uvicorn examples.proxy.app:app``;
``UPSTREAM_API_KEY`` is sent upstream as a bearer token.  Only streaming
requests are supported.

Faults, in the order they can happen:

- A request body that is not a JSON object, a bad field in it, or an unknown
  ``?dialect=``: HTTP 400 in the OpenAI error shape
  (``{"error": {"message", "type", "param", "code"}}``).
- Before the first byte goes to the client, the proxy waits for the upstream's
  headers and its first event.  An upstream HTTP error keeps its status and its
  retry headers (``Retry-After``, ``retry-after-ms``, ``x-should-retry``), with
  the upstream's message in the OpenAI error shape, so an SDK raises the
  matching error (``RateLimitError`` for 429...) and retries what it retries.
  A refused connection or a broken answer is 502, a connect or read timeout
  504.
- After the first byte, an upstream that fails (the connection drops, it goes
  silent for longer than the read timeout, a Responses stream ends without its
  terminal event) ends the stream cleanly: ``error`` then ``response.failed``
  on ``/v1/responses``, an ``{"error": ...}`` chunk then ``data: [DONE]`` on
  ``/v1/chat/completions`` (the openai SDK raises ``APIError``).  What was
  received before stays in the output.
- When the client disconnects, the upstream connection is closed at once.

Timeouts, in seconds: ``UPSTREAM_CONNECT_TIMEOUT`` (default 10) to open the
connection, ``UPSTREAM_READ_TIMEOUT`` (default 120) for the longest silence
from the upstream, before its headers as between two reads of its body (an
upstream that trickles bytes is not cut off).  ``Upstream(...)`` takes the same
as ``connect_timeout`` and ``read_timeout``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from responses_stream import (
    DIALECTS,
    SSEMessage,
    achat_sse_from_responses,
    aparse_sse,
    asse_from_chat,
)

from .translate import BadRequest, chat_to_responses_request, responses_to_chat_request

SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_READ_TIMEOUT = 120.0
REASONING_MODES = ("reasoning_content", "reasoning", "think", "omit")
# Upstream response headers an error answer passes on to the client.
PASSED_HEADERS = ("retry-after", "retry-after-ms", "x-should-retry", "x-request-id")
ERROR_BODY_LIMIT = 64 * 1024
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}


class UpstreamError(Exception):
    """The upstream failed before the stream started: the HTTP error to answer with."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        error_type: str | None = None,
        code: Any = None,
        param: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_type = error_type or ERROR_TYPES.get(status, "server_error")
        self.code = code
        self.param = param
        self.headers = dict(headers or {})

    def response(self) -> Response:
        return error_response(
            self.status, self.message, self.error_type, self.code, self.param, self.headers
        )


class UpstreamInterrupted(Exception):
    """The upstream failed after the stream started; ``code`` names how."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


def error_response(
    status: int,
    message: str,
    error_type: str = "invalid_request_error",
    code: Any = None,
    param: Any = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """An error answer in the OpenAI shape."""
    body = {"error": {"message": message, "type": error_type, "param": param, "code": code}}
    return JSONResponse(body, status, headers=dict(headers or {}))


def _seconds(name: str, value: float | None, default: float) -> float:
    """A timeout from the argument, else the environment variable ``name``, else ``default``."""
    if value is None:
        text = os.environ.get(name)
        if text is None or not text.strip():
            return default
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{name} must be a number of seconds, not {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
    return value


class Upstream:
    """Streaming POSTs to the upstream server.

    ``connect_timeout`` bounds opening the connection and ``read_timeout`` any
    silence of the upstream (waiting for its headers, and between two reads of
    its body); they default to ``UPSTREAM_CONNECT_TIMEOUT`` and
    ``UPSTREAM_READ_TIMEOUT`` from the environment, else 10 and 120 seconds.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        client: httpx.AsyncClient | None = None,
        *,
        connect_timeout: float | None = None,
        read_timeout: float | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self.connect_timeout = _seconds(
            "UPSTREAM_CONNECT_TIMEOUT", connect_timeout, DEFAULT_CONNECT_TIMEOUT
        )
        self.read_timeout = _seconds("UPSTREAM_READ_TIMEOUT", read_timeout, DEFAULT_READ_TIMEOUT)
        self.timeout = httpx.Timeout(
            connect=self.connect_timeout,
            read=self.read_timeout,
            write=self.read_timeout,
            pool=self.connect_timeout,
        )
        self.client = client or httpx.AsyncClient(timeout=self.timeout)

    def stream(self, path: str, body: dict[str, Any], *, terminal: bool) -> UpstreamStream:
        """The (not yet opened) stream of a POST of ``body`` to ``path``.

        ``terminal``: the stream must end with a terminal event (a Responses
        stream), so an end of body before it is a failure.
        """
        return UpstreamStream(self, path, body, terminal=terminal)


class UpstreamStream:
    """The ``data:`` payloads of one upstream SSE response.

    ``open()`` sends the request and reads up to the first event, raising
    :class:`UpstreamError` if that fails; iterating then yields every payload,
    raising :class:`UpstreamInterrupted` if the upstream fails on the way.
    ``aclose()`` closes the connection (at any time, more than once).
    """

    def __init__(
        self, upstream: Upstream, path: str, body: dict[str, Any], *, terminal: bool
    ) -> None:
        self.upstream = upstream
        self.path = path
        self.body = body
        self.terminal = terminal
        self._response: httpx.Response | None = None
        self._messages: AsyncIterator[SSEMessage] | None = None
        self._first: SSEMessage | None = None

    async def open(self) -> None:
        up = self.upstream
        request = up.client.build_request(
            "POST", up.base_url + self.path, json=self.body, headers=up.headers, timeout=up.timeout
        )
        try:
            response = await up.client.send(request, stream=True)
        except httpx.ConnectTimeout:
            raise UpstreamError(
                504,
                f"the upstream did not accept the connection within {up.connect_timeout:g}s",
                code="upstream_connect_timeout",
            ) from None
        except httpx.TimeoutException:
            raise UpstreamError(
                504,
                f"the upstream sent no response within {up.read_timeout:g}s",
                code="upstream_timeout",
            ) from None
        except httpx.HTTPError as exc:
            raise UpstreamError(
                502, f"cannot reach the upstream: {_describe(exc)}", code="upstream_unreachable"
            ) from None
        self._response = response
        try:
            await self._check(response)
            self._messages = aparse_sse(response.aiter_bytes())
            self._first = await self._next_message()
        except BaseException:
            await self.aclose()
            raise
        if self._first is None:
            await self.aclose()
            raise UpstreamError(
                502, "the upstream ended its stream before the first event", code="upstream_empty"
            )

    async def _check(self, response: httpx.Response) -> None:
        """Raise the client's error for an upstream answer that is not a stream."""
        status = response.status_code
        content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if 200 <= status < 300 and content_type != "application/json":
            return
        try:
            raw = await _read_some(response, ERROR_BODY_LIMIT)
        except httpx.HTTPError:
            raw = b""
        headers = {k: response.headers[k] for k in PASSED_HEADERS if k in response.headers}
        if status < 300:
            error = _error_of(raw)
            detail = f": {error['message']}" if error else ""
            raise UpstreamError(
                502,
                f"the upstream answered with JSON, not an event stream{detail}",
                code="upstream_not_a_stream",
            )
        if status < 400:
            raise UpstreamError(
                502, f"the upstream answered with HTTP {status}", code="upstream_bad_status"
            )
        error = _error_of(raw)
        if error is None:
            text = raw.decode("utf-8", "replace").strip()
            raise UpstreamError(
                status,
                f"upstream HTTP {status}: {text[:1000]}" if text else f"upstream HTTP {status}",
                headers=headers,
            )
        error_type = error.get("type")
        raise UpstreamError(
            status,
            error["message"],
            error_type=error_type if isinstance(error_type, str) and error_type else None,
            code=error.get("code") if _scalar(error.get("code")) else None,
            param=error.get("param") if _scalar(error.get("param")) else None,
            headers=headers,
        )

    async def _next_message(self) -> SSEMessage | None:
        """The next SSE message before the stream started, or None at its end."""
        assert self._messages is not None
        up = self.upstream
        try:
            return await anext(self._messages)
        except StopAsyncIteration:
            return None
        except httpx.TimeoutException:
            raise UpstreamError(
                504,
                f"the upstream sent no event within {up.read_timeout:g}s",
                code="upstream_timeout",
            ) from None
        except httpx.HTTPError as exc:
            raise UpstreamError(
                502,
                f"the upstream failed before its first event: {_describe(exc)}",
                code="upstream_disconnected",
            ) from None
        except ValueError as exc:  # the SSE parser's caps
            raise UpstreamError(
                502, f"the upstream sent a bad event stream: {exc}", code="upstream_bad_stream"
            ) from None

    def __aiter__(self) -> AsyncIterator[str]:
        return self._payloads()

    async def _payloads(self) -> AsyncIterator[str]:
        if self._first is None or self._messages is None:
            raise RuntimeError("UpstreamStream.open() must succeed before iterating")
        first, self._first = self._first, None
        yield first.data
        try:
            async for message in self._messages:
                yield message.data
        except httpx.TimeoutException:
            raise UpstreamInterrupted(
                f"the upstream sent nothing for {self.upstream.read_timeout:g}s",
                "upstream_timeout",
            ) from None
        except httpx.HTTPError as exc:
            raise UpstreamInterrupted(
                f"the upstream stream broke off: {_describe(exc)}", "upstream_disconnected"
            ) from None
        except ValueError as exc:  # the SSE parser's caps
            raise UpstreamInterrupted(
                f"the upstream sent a bad event stream: {exc}", "upstream_bad_stream"
            ) from None
        finally:
            await self.aclose()
        if self.terminal:
            raise UpstreamInterrupted(
                "the upstream stream ended before its terminal event", "upstream_disconnected"
            )

    async def aclose(self) -> None:
        response = self._response
        if response is not None:
            await response.aclose()
            self._response = None


async def _read_some(response: httpx.Response, limit: int) -> bytes:
    """Up to ``limit`` bytes of the body."""
    out = bytearray()
    async for chunk in response.aiter_bytes():
        out += chunk
        if len(out) >= limit:
            break
    return bytes(out[:limit])


def _error_of(raw: bytes) -> dict[str, Any] | None:
    """The error object of an error body (``{"error": {...}}``, ``{"error": "..."}``,
    ``{"message": ...}`` or ``{"detail": ...}``), with a string ``message``; None when
    the body is not one of these."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str) and error["message"]:
        return error
    if isinstance(error, dict):
        return {**error, "message": json.dumps(error)[:1000]}
    for key in ("error", "message", "detail"):
        if isinstance(body.get(key), str) and body[key]:
            return {"message": body[key]}
    return None


def _scalar(value: Any) -> bool:
    """Whether ``value`` can stand as an error's ``code`` or ``param`` (NaN cannot)."""
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, str | int | bool)


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class ProxyStreamingResponse(StreamingResponse):
    """A streaming response that closes its upstream however it ends (client gone too)."""

    def __init__(self, frames: AsyncIterator[bytes], upstream: UpstreamStream) -> None:
        super().__init__(frames, media_type="text/event-stream", headers=SSE_HEADERS)
        self.frames = frames
        self.upstream = upstream

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            try:
                aclose = getattr(self.frames, "aclose", None)
                if aclose is not None:
                    await aclose()
            finally:
                await self.upstream.aclose()


async def _prepend(first: list[bytes], rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    for frame in first:
        yield frame
    try:
        async for frame in rest:
            yield frame
    finally:
        aclose = getattr(rest, "aclose", None)
        if aclose is not None:
            await aclose()


async def _read_body(request: Request) -> dict[str, Any]:
    """The request's JSON object; :class:`BadRequest` for anything else."""
    raw = await request.body()
    try:
        body = json.loads(raw, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise BadRequest(f"the request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise BadRequest(f"the request body must be a JSON object, not {_json_kind(body)}")
    if body.get("stream") is not True:
        raise BadRequest("this proxy only serves stream=true", param="stream")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise BadRequest("'model' must be a string", param="model")
    return body


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"


async def _serve(
    frames: AsyncIterator[bytes], stream: UpstreamStream, *, prefetch: bool
) -> Response:
    """Open the upstream, then stream ``frames``.

    ``prefetch``: the conversion's opening frames need no upstream data, so they are
    made first: a request the conversion rejects is a 400 and costs no upstream call.
    """
    first: list[bytes] = []
    if prefetch:
        try:
            first.append(await anext(frames))
        except Exception as exc:
            await _aclose(frames)
            return error_response(400, f"invalid request: {_describe(exc)}")
    try:
        await stream.open()
    except UpstreamError as exc:
        await _aclose(frames)
        return exc.response()
    except BaseException:
        await _aclose(frames)
        raise
    return ProxyStreamingResponse(_prepend(first, frames), stream)


async def _aclose(frames: AsyncIterator[bytes]) -> None:
    aclose = getattr(frames, "aclose", None)
    if aclose is not None:
        await aclose()


def create_app(upstream: Upstream) -> Starlette:
    """The proxy's ASGI app, talking to ``upstream``."""
    reasoning = os.environ.get("PROXY_REASONING", "reasoning_content")
    if reasoning not in REASONING_MODES:
        raise ValueError(f"PROXY_REASONING must be one of {REASONING_MODES}, not {reasoning!r}")

    async def chat_completions(request: Request) -> Response:
        try:
            body = await _read_body(request)
            options = body.get("stream_options")
            if options is not None and not isinstance(options, dict):
                raise BadRequest("'stream_options' must be an object", param="stream_options")
            include_usage = bool((options or {}).get("include_usage"))
            stream = upstream.stream("/responses", chat_to_responses_request(body), terminal=True)
        except BadRequest as exc:
            return error_response(400, str(exc), param=exc.param)
        frames = achat_sse_from_responses(
            stream,
            include_usage=include_usage,
            reasoning=reasoning,  # type: ignore[arg-type]
            model=body.get("model"),
        )
        return await _serve(frames, stream, prefetch=False)

    async def responses(request: Request) -> Response:
        try:
            body = await _read_body(request)
            dialect = request.query_params.get("dialect", "openai")
            if dialect not in DIALECTS:
                raise BadRequest(
                    f"unknown dialect {dialect!r}; known: {', '.join(sorted(DIALECTS))}",
                    param="dialect",
                )
            stream = upstream.stream(
                "/chat/completions", responses_to_chat_request(body), terminal=False
            )
        except BadRequest as exc:
            return error_response(400, str(exc), param=exc.param)
        frames = asse_from_chat(stream, dialect=dialect, request=body, model=body.get("model"))
        return await _serve(frames, stream, prefetch=True)

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
