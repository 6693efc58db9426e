"""The upstream server: streaming POSTs and plain GETs, with timeouts and error mapping.

Until :meth:`UpstreamStream.open` returns (once the upstream's headers came, or its
first event, see there), every upstream failure is a :class:`GatewayError` for the
gateway to answer with: an upstream HTTP error keeps its status, its message and its
retry headers (``Retry-After``, ``retry-after-ms``, ``x-should-retry``; its
``x-request-id`` as ``x-upstream-request-id``), so an SDK raises the matching error and
retries what it retries; a refused connection or a broken answer is 502, a connect or
read timeout 504.  After that a failure is an :class:`UpstreamInterrupted`, which the
conversions turn into ``error`` + ``response.failed`` (or an error chunk).

The upstream's own errors inside a stream keep their code, type and message (see
:func:`error_object`): as the first event, the answer is that error (its status is the
upstream's numeric code when that is an HTTP error status, else 502); later, an
``event: error`` frame whose data the conversions would not read as an error (a bare
``{"message": ...}``, or text) is passed on as ``{"error": {...}}``, which both
conversions end the stream with, code and message kept.
"""

from __future__ import annotations

import asyncio
import json
import math
import weakref
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.errors import BadValue, NotReady, ResponsesStreamError
from ..core.sse_parse import SSEMessage, aparse_sse
from .errors import GatewayError
from .http_client import Client, ClientError, ConnectTimeout, Response, describe
from .request_ids import HEADER as REQUEST_ID_HEADER
from .request_ids import current_request_id
from .transport import Transport

# Upstream response headers an error answer passes on to the client.
PASSED_HEADERS = ("retry-after", "retry-after-ms", "x-should-retry")
# the upstream's own request id, passed on beside the gateway's
UPSTREAM_REQUEST_ID = "x-upstream-request-id"
# what a failed exchange with the upstream raises (a timeout: TimeoutError)
TRANSPORT_ERRORS = (ClientError, TimeoutError)
# an idle upstream connection is kept this long: less than uvicorn's 5 s, so a
# connection is not reused just as a server of that default closes it
KEEPALIVE = 4.0
# how long a stream whose reader has all it wanted waits for the rest of the upstream's
# body (the ``[DONE]`` after the last chunk, the end of the chunked body), so that its
# connection can carry the next request instead of being closed
LINGER = 0.05
ERROR_BODY_LIMIT = 64 * 1024
JSON_BODY_LIMIT = 8 * 1024 * 1024
SHUTDOWN_CODE = "gateway_shutdown"
# the streams reading from an upstream in this process (what a shutdown ends)
_OPEN: weakref.WeakSet[UpstreamStream] = weakref.WeakSet()


def interrupt_streams() -> int:
    """Cut every upstream stream open in this process: each then fails with
    ``gateway_shutdown``.  Returns how many there were."""
    streams = list(_OPEN)
    for stream in streams:
        stream.interrupt()
    return len(streams)


@dataclass(frozen=True)
class Timeouts:
    """``connect``: to open a connection; ``read``: the longest silence of the upstream,
    before its headers as between two reads of its body (a trickle is not cut off)."""

    connect: float = 10.0
    read: float = 300.0

    def __post_init__(self) -> None:
        for name in ("connect", "read"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise BadValue(f"the {name} timeout must be a positive number of seconds")


class UpstreamInterrupted(ResponsesStreamError):
    """The upstream failed after the stream started; ``code`` names how."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class Upstream:
    """The upstream at ``base_url`` (ending in ``/v1`` or wherever its API lives).

    ``api_key`` is sent as a bearer token; without one, the client's own
    ``Authorization`` header is forwarded.  The key is never logged or echoed.

    Its HTTP client (:mod:`.http_client`, reaching it as ``transport`` says, through
    the proxy chosen once here) is made anew when the event loop using it changes or
    once it was closed: its connections belong to one loop.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeouts: Timeouts | None = None,
        transport: Transport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        # told each failure's kind (the error code, http_<status>, stream_error)
        self.observer: Callable[[str], None] | None = None
        self.timeouts = timeouts or Timeouts()
        self.transport = transport or Transport()
        # chosen once: the environment's proxy variables are read at start-up
        self.proxy = self.transport.proxy_for(self.base_url)
        self._client = self._new_client()  # a base URL or TLS file it cannot use fails here
        self._loop: asyncio.AbstractEventLoop | None = None

    def _new_client(self) -> Client:
        timeouts = self.timeouts
        return Client(
            self.base_url,
            connect=timeouts.connect,
            read=timeouts.read,
            keepalive=KEEPALIVE,
            transport=self.transport,
            proxy=self.proxy,
        )

    @property
    def http(self) -> Client:
        """The HTTP client of the running event loop (it keeps no cookie: one client's
        would go with the next)."""
        loop = asyncio.get_running_loop()
        if self._loop is not None and self._loop is not loop and not self._client.closed:
            self._client.abandon()
        if self._client.closed:
            self._client = self._new_client()
        self._loop = loop
        return self._client

    @property
    def closed(self) -> bool:
        """Closed (its connections too) until the next request opens a new client."""
        return self._client.closed

    def __repr__(self) -> str:
        return f"Upstream({self.base_url!r})"

    def headers(self, authorization: str | None) -> dict[str, str]:
        """The request headers: the configured key, else the client's authorization; the
        request's id."""
        headers = {}
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        elif authorization:
            headers["authorization"] = authorization
        rid = current_request_id()
        if rid is not None:
            headers[REQUEST_ID_HEADER] = rid
        return headers

    def failed(self, kind: str) -> None:
        """Tell the observer of a failure."""
        if self.observer is not None:
            self.observer(kind)

    def failed_with(self, error: GatewayError, kind: str | None = None) -> GatewayError:
        """``error``, once the observer was told of it: of ``kind``, by default the code of
        a failure the gateway names (``upstream_...``), else ``http_<status>``."""
        code = error.code or ""
        if code != SHUTDOWN_CODE:  # the gateway's own shutdown is no failure of the upstream
            self.failed(kind or (code if code.startswith("upstream_") else f"http_{error.status}"))
        return error

    def stream(
        self, path: str, body: Mapping[str, Any], authorization: str | None, *, terminal: bool
    ) -> UpstreamStream:
        """The (not yet opened) SSE stream of a POST of ``body`` to ``path``.

        ``terminal``: the stream must end with a terminal event (a Responses stream),
        so an end of body before one is a failure.
        """
        return UpstreamStream(self, path, body, self.headers(authorization), terminal=terminal)

    async def get(self, path: str, authorization: str | None) -> tuple[int, dict[str, Any]]:
        """GET ``path``: its status and JSON body; :class:`GatewayError` when it fails."""
        try:
            return await self._get(path, authorization)
        except GatewayError as exc:
            raise self.failed_with(exc) from None

    async def _get(self, path: str, authorization: str | None) -> tuple[int, dict[str, Any]]:
        try:
            response = await self.http.request("GET", path, self.headers(authorization))
        except TRANSPORT_ERRORS as exc:
            raise self._transport_error(exc) from None
        try:
            if response.status >= 400:
                raise await _status_error(response)
            raw = await response.read(JSON_BODY_LIMIT)
        except TRANSPORT_ERRORS as exc:
            raise self._transport_error(exc) from None
        finally:
            response.close()
        body = _json_object(raw)
        if body is None:
            raise GatewayError(
                502,
                "the upstream answered with a body that is not a JSON object",
                code="upstream_bad_response",
            )
        return response.status, body

    def _transport_error(self, exc: BaseException) -> GatewayError:
        if isinstance(exc, ConnectTimeout):
            return GatewayError(
                504,
                f"the upstream did not accept the connection within {self.timeouts.connect:g}s",
                code="upstream_connect_timeout",
            )
        if isinstance(exc, TimeoutError):
            return GatewayError(
                504,
                f"the upstream sent no response within {self.timeouts.read:g}s",
                code="upstream_timeout",
            )
        return GatewayError(
            502, f"cannot reach the upstream: {describe(exc)}", code="upstream_unreachable"
        )

    async def aclose(self) -> None:
        await self._client.close()


class UpstreamStream:
    """The ``data:`` payloads of one upstream SSE response.

    ``open()`` sends the request and reads up to the first event, raising
    :class:`GatewayError` if that fails; iterating then yields every payload,
    raising :class:`UpstreamInterrupted` if the upstream fails on the way.
    ``aclose()`` closes the connection (at any time, more than once).
    """

    def __init__(
        self,
        upstream: Upstream,
        path: str,
        body: Mapping[str, Any],
        headers: Mapping[str, str],
        *,
        terminal: bool,
    ) -> None:
        self.upstream = upstream
        self.path = path
        self.body = body
        self.headers = headers
        self.terminal = terminal
        self._response: Response | None = None
        self._messages: AsyncIterator[SSEMessage] | None = None
        self._first: SSEMessage | None = None
        self._kind: str | None = None  # a failure's kind, where its code does not say
        self._shutdown = False  # cut by a shutdown

    async def open(self, first_event: bool = True) -> None:
        """Send the request; return once the upstream accepted it (its status and headers)
        and, with ``first_event``, once its first event came: a failure up to there is a
        :class:`GatewayError`.  Without ``first_event``, a stream that ends or fails
        before its first event fails as any stream that breaks off does (an empty one:
        ``upstream_empty``; an error as its first event: that error, to the conversion)."""
        try:
            await self._open(first_event)
        except GatewayError as exc:
            raise self.upstream.failed_with(exc, self._kind) from None

    async def _open(self, first_event: bool) -> None:
        up = self.upstream
        content = json.dumps(self.body, ensure_ascii=False).encode()
        headers = {**self.headers, "content-type": "application/json"}
        try:
            response = await up.http.request("POST", self.path, headers, content)
        except TRANSPORT_ERRORS as exc:
            raise up._transport_error(exc) from None
        self._response = response
        _OPEN.add(self)
        try:
            await _check_stream(response)
            self._messages = aparse_sse(response.pieces())
            if not first_event:
                return
            self._first = await self._next_message()
        except BaseException:
            await self.aclose()
            raise
        if self._first is None:
            await self.aclose()
            raise GatewayError(
                502, "the upstream ended its stream before the first event", code="upstream_empty"
            )
        error = error_object(self._first)
        if error is not None:
            await self.aclose()
            self._kind = "stream_error"
            raise stream_error(error)

    async def _next_message(self) -> SSEMessage | None:
        """The next SSE message before the stream started, or None at its end."""
        assert self._messages is not None
        try:
            return await anext(self._messages)
        except StopAsyncIteration:
            return None
        except TimeoutError:
            raise GatewayError(
                504,
                f"the upstream sent no event within {self.upstream.timeouts.read:g}s",
                code="upstream_timeout",
            ) from None
        except ClientError as exc:
            if self._shutdown:
                raise GatewayError(
                    503, "the gateway is shutting down", code=SHUTDOWN_CODE
                ) from None
            raise GatewayError(
                502,
                f"the upstream failed before its first event: {describe(exc)}",
                code="upstream_disconnected",
            ) from None
        except ValueError as exc:  # the SSE parser's caps
            raise GatewayError(
                502, f"the upstream sent a bad event stream: {exc}", code="upstream_bad_stream"
            ) from None

    def __aiter__(self) -> AsyncIterator[str]:
        return self._payloads()

    async def _payloads(self) -> AsyncIterator[str]:
        if self._messages is None:
            raise NotReady("UpstreamStream.open() must succeed before iterating")
        first, self._first = self._first, None
        seen = first is not None
        if first is not None:
            yield first.data
        try:
            async for message in self._messages:
                seen = True
                if message.event == "error":
                    self.upstream.failed("stream_error")
                    yield _error_frame(message)
                    continue
                data = message.data
                if data.startswith('{"error"'):  # a chat upstream's error chunk
                    self.upstream.failed("stream_error")
                try:
                    yield data
                except GeneratorExit:  # the reader has all it wanted
                    await self._linger()
                    raise
        except TimeoutError:
            raise self._interrupted(
                f"the upstream sent nothing for {self.upstream.timeouts.read:g}s",
                "upstream_timeout",
            ) from None
        except ClientError as exc:
            if self._shutdown:
                raise UpstreamInterrupted(
                    "the gateway shut down before the stream ended (its grace period passed)",
                    SHUTDOWN_CODE,
                ) from None
            raise self._interrupted(
                f"the upstream stream broke off: {describe(exc)}", "upstream_disconnected"
            ) from None
        except ValueError as exc:  # the SSE parser's caps
            raise self._interrupted(
                f"the upstream sent a bad event stream: {exc}", "upstream_bad_stream"
            ) from None
        finally:
            await self.aclose()
        if not seen:
            raise self._interrupted(
                "the upstream ended its stream before the first event", "upstream_empty"
            )
        if self.terminal:
            raise self._interrupted(
                "the upstream stream ended before its terminal event", "upstream_disconnected"
            )

    async def _linger(self) -> None:
        """Wait up to :data:`LINGER` seconds for the end of the body, unless the stream is
        cut (a shutdown, the client gone): at its end the connection goes back to the
        pool (see :meth:`aclose`)."""
        response = self._response
        task = asyncio.current_task()
        cut = self._shutdown or (task is not None and task.cancelling())
        if response is None or response.complete or cut:  # a read body needs no timer
            return
        try:
            async with asyncio.timeout(LINGER):
                await response.wait_end()
        except TRANSPORT_ERRORS:
            pass

    def _interrupted(self, message: str, code: str) -> UpstreamInterrupted:
        self.upstream.failed(code)
        return UpstreamInterrupted(message, code)

    def interrupt(self) -> None:
        """Cut the upstream connection under a read in progress (at shutdown): the read
        ends, and the stream fails with ``gateway_shutdown``."""
        self._shutdown = True
        if self._response is not None:
            self._response.abort()

    async def aclose(self) -> None:
        _OPEN.discard(self)
        response = self._response
        if response is not None:
            self._response = None
            response.close()  # the connection is kept only when its answer was read to its end


async def _check_stream(response: Response) -> None:
    """Raise the client's error for an upstream answer that is not an event stream."""
    status = response.status
    content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if 200 <= status < 300 and content_type != "application/json":
        return
    if status >= 400:
        raise await _status_error(response)
    try:
        raw = await response.read(ERROR_BODY_LIMIT)
    except TRANSPORT_ERRORS:
        raw = b""
    if status < 300:
        error = _error_of(raw)
        detail = f": {error['message']}" if error else ""
        raise GatewayError(
            502,
            f"the upstream answered with JSON, not an event stream{detail}",
            code="upstream_not_a_stream",
        )
    raise GatewayError(502, f"the upstream answered with HTTP {status}", code="upstream_bad_status")


async def _status_error(response: Response) -> GatewayError:
    """An upstream HTTP error as the client's error: same status, message and retry headers."""
    status = response.status
    try:
        raw = await response.read(ERROR_BODY_LIMIT)
    except TRANSPORT_ERRORS:
        raw = b""
    headers = {k: response.headers[k] for k in PASSED_HEADERS if k in response.headers}
    if REQUEST_ID_HEADER in response.headers:
        headers[UPSTREAM_REQUEST_ID] = response.headers[REQUEST_ID_HEADER]
    error = _error_of(raw)
    if error is None:
        text = raw.decode("utf-8", "replace").strip()
        message = f"upstream HTTP {status}: {text[:1000]}" if text else f"upstream HTTP {status}"
        return GatewayError(status, message, headers=headers)
    error_type = error.get("type")
    code, param = error.get("code"), error.get("param")
    return GatewayError(
        status,
        error["message"],
        error_type=error_type if isinstance(error_type, str) and error_type else None,
        code=str(code) if _scalar(code) and code is not None else None,
        param=param if isinstance(param, str) else None,
        headers=headers,
    )


def _json_object(raw: bytes) -> dict[str, Any] | None:
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return body if isinstance(body, dict) else None


def _error_of(raw: bytes) -> dict[str, Any] | None:
    """The error object of an error body (``{"error": {...}}``, ``{"error": "..."}``,
    ``{"message": ...}`` or ``{"detail": ...}``), with a string ``message``; None when
    the body is not one of these."""
    body = _json_object(raw)
    if body is None:
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


def error_object(message: SSEMessage) -> dict[str, Any] | None:
    """The upstream's own error in one SSE message, as it sent it; None for anything else.

    An error is a payload ``{"error": {...}}`` (or ``{"error": "text"}``) with no
    ``choices`` and no event ``type`` but ``error`` (llama.cpp's server, vLLM and other
    OpenAI-compatible servers send one mid-stream), a Responses ``error`` event (``code``,
    ``message``, ``param`` at its top), or whatever an ``event: error`` frame carries
    (its JSON object, else its text as the message).
    """
    data = message.data
    is_event = message.event == "error"
    if not is_event and '"error"' not in data:
        return None
    try:
        body = json.loads(data) if data.lstrip().startswith("{") else None
    except (ValueError, RecursionError):
        body = None
    if not isinstance(body, dict):
        return {"message": data.strip() or "the upstream sent an error event"} if is_event else None
    kind = body.get("type")
    if "error" in body and "choices" not in body and kind in (None, "error"):
        inner = body["error"]
        if isinstance(inner, dict):
            return inner
        if isinstance(inner, str) and inner:
            return {"message": inner}
        return {"message": data[:1000]} if is_event or kind == "error" else None
    if kind == "error":
        return {k: body[k] for k in ("message", "code", "param") if k in body}
    return body if is_event else None


def stream_error(error: Mapping[str, Any]) -> GatewayError:
    """The answer to an upstream error sent as the first event of its stream: its status
    (the upstream's numeric ``code`` if that is 400-599, else 502), message, code (or,
    without one, its ``type``), type and param."""
    code, kind, param = error.get("code"), error.get("type"), error.get("param")
    message = error.get("message")
    if not isinstance(message, str) or not message:
        message = json.dumps(error, default=str)[:1000]
    text = str(code) if _scalar(code) and code is not None and not isinstance(code, bool) else None
    kind = kind if isinstance(kind, str) and kind else None
    return GatewayError(
        error_status(text),
        message,
        code=text or kind or "upstream_error",
        error_type=kind,
        param=param if isinstance(param, str) else None,
    )


def error_status(code: Any, default: int = 502) -> int:
    """The HTTP status an upstream error code stands for: the code itself when it is an
    HTTP error status (``500``, ``"429"``), else ``default``."""
    if isinstance(code, str) and code.isdigit() and len(code) == 3:
        code = int(code)
    if type(code) is int and 400 <= code <= 599:
        return code
    return default


def _error_frame(message: SSEMessage) -> str:
    """An ``event: error`` frame's payload, as ``{"error": {...}}`` unless it already
    reads as an error (``{"error": ...}``, or an event whose ``type`` is ``error``)."""
    data = message.data
    try:
        body = json.loads(data)
    except (ValueError, RecursionError):
        body = None
    if isinstance(body, dict) and ("error" in body or body.get("type") == "error"):
        return data
    error = error_object(message)
    return data if error is None else json.dumps({"error": error}, ensure_ascii=False)


def _scalar(value: Any) -> bool:
    """Whether ``value`` can stand as an error's ``code`` (NaN cannot)."""
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, str | int | bool)
