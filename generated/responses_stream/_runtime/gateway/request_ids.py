"""Request ids: every answer carries ``x-request-id``, every upstream call and every
log line of the request too.

The client's own ``x-request-id`` is kept when it is sane (1 to 128 characters:
letters, digits, ``.``, ``_``, ``:``, ``-``, starting with a letter or digit); anything
else is replaced by a new ``req_`` id, so a header cannot inject text into the logs.
The id lives in a context variable for the request's whole life (its stream
included), with what routing learnt of the request (its model and upstream).
"""

from __future__ import annotations

import logging
import re
import secrets
from contextvars import ContextVar
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import GatewayError
from .http import error_response

log = logging.getLogger("responses_stream.gateway")
HEADER = "x-request-id"
_HEADER = HEADER.encode()
_SANE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:\-]{0,127}")


@dataclass
class RequestInfo:
    """The request being served: its id, and once routed its model and upstream."""

    id: str
    model: str = ""
    upstream: str = ""


REQUEST: ContextVar[RequestInfo | None] = ContextVar("responses_stream_request", default=None)


def new_request_id() -> str:
    return "req_" + secrets.token_hex(16)


def current_request() -> RequestInfo | None:
    """The request being served here, if any."""
    return REQUEST.get()


def current_request_id() -> str | None:
    """The id of the request being served here, if any."""
    info = REQUEST.get()
    return info.id if info is not None else None


def note_route(model: str, upstream: str) -> None:
    """Say where the request being served was routed."""
    info = REQUEST.get()
    if info is not None:
        info.model, info.upstream = model, upstream


def request_id_of(given: str | None) -> str:
    """The client's id when it is sane, else a new one."""
    return given if given is not None and _SANE.fullmatch(given) else new_request_id()


class RequestIds:
    """ASGI middleware: sets the request's id (see the module doc) and puts it on the
    answer's headers, a WebSocket handshake's included.  As the gateway's outermost
    layer, it also answers an exception that escaped before an HTTP answer started: a
    500 ``internal_error`` (with the id), the exception logged."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        given = None
        for name, value in scope.get("headers") or ():
            if name.lower() == _HEADER:
                given = value.decode("latin-1")
        rid = request_id_of(given)
        stamp = (_HEADER, rid.encode())

        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            if message["type"] in ("http.response.start", "websocket.accept"):
                started = True
                headers = [h for h in message.get("headers") or () if h[0].lower() != _HEADER]
                message = {**message, "headers": [*headers, stamp]}
            await send(message)

        token = REQUEST.set(RequestInfo(rid))
        try:
            await self.app(scope, receive, sending)
        except Exception:
            if scope["type"] != "http" or started:
                raise
            log.exception("internal error on %s %s", scope["method"], scope["path"])
            error = GatewayError(500, "internal error in the gateway", code="internal_error")
            await error_response(error)(scope, receive, sending)
        finally:
            REQUEST.reset(token)
