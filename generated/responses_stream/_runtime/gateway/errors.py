"""The gateway's errors and their wire shapes.

A :class:`GatewayError` is an answer the gateway gives instead of a response: over
HTTP the OpenAI error body (``{"error": {"message", "type", "param", "code"}}``) with
its status and headers, over a WebSocket the Open Responses ``WebSocketErrorEvent``
(``{"type": "error", "status", "error": {...}}``).

Every error answered is logged on the ``responses_stream.gateway`` logger when its
answer is made (``http.error_response``, :meth:`GatewayError.websocket_event`), at
warning level, with its status, code, param and message (the
record's ``error_status``, ``error_code``, ``error_param`` attributes hold the first
three).  Never a request body or a header value: the message is cut to
:data:`LOGGED_MESSAGE_CHARS` characters and anything in it that looks like a key or a
bearer token is masked.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from ..core.errors import ResponsesStreamError

_log = logging.getLogger("responses_stream.gateway")
LOGGED_MESSAGE_CHARS = 500
WIRE_TRACE = ("< ", "> ")  # how the websockets library starts a header or frame record
# What reads as a credential inside an error message (an upstream may echo one).
_SECRET = re.compile(
    r"(?i)\b(bearer|basic)\s+[^\s,;\"']+"
    r"|\b(sk|rk|pk)-[A-Za-z0-9_\-*.]{6,}"
    r"|\b((?:api[_-]?)?key|token|secret|password)([\"']?\s*[=:]\s*[\"']?)[^\s,;\"']+"
)

# The error ``type`` an HTTP status gets when nothing more precise is known.
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    409: "conflict_error",
    413: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}


class GatewayError(ResponsesStreamError):
    """An error answer: ``status``, ``message``, ``type``, ``code``, ``param``, ``headers``."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str | None = None,
        param: str | None = None,
        error_type: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param
        self.type = error_type or ERROR_TYPES.get(status, "server_error")
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        """The HTTP error body."""
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }

    def log(self) -> None:
        """Log this answer at warning level (see the module doc)."""
        if not _log.isEnabledFor(logging.WARNING):
            return
        code = self.code or self.type
        _log.warning(
            "answered %d %s (param %s): %s",
            self.status,
            code,
            self.param,
            safe_message(self.message),
            extra={"error_status": self.status, "error_code": code, "error_param": self.param},
        )

    def websocket_event(self) -> dict[str, Any]:
        """The WebSocket error event (``code`` is required there); logs it (:meth:`log`)."""
        self.log()
        return {
            "type": "error",
            "status": self.status,
            "error": {
                "type": self.type,
                "code": self.code or self.type,
                "message": self.message,
                "param": self.param,
            },
        }


def safe_message(message: str) -> str:
    """``message`` as it may be logged: keys and tokens masked, at most
    :data:`LOGGED_MESSAGE_CHARS` characters, on one line."""
    text = masked(" ".join(message.split()))
    if len(text) > LOGGED_MESSAGE_CHARS:
        text = text[: LOGGED_MESSAGE_CHARS - 1] + "\u2026"
    return text


def masked(text: str) -> str:
    """``text`` with anything that reads as a key or a bearer token masked."""
    return _SECRET.sub(_mask, text)


class RedactSecrets(logging.Filter):
    """A log filter that masks keys and bearer tokens in every record it passes, and
    drops the WebSocket wire trace: at debug level the websockets library logs each
    handshake header (the client's key) and each frame (the prompt), one ``< ...`` or
    ``> ...`` record each."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if record.levelno <= logging.DEBUG and text[:2] in WIRE_TRACE:
            return False
        clean = masked(text)
        if clean != text:
            record.msg, record.args = clean, None
        return True


def _mask(match: re.Match[str]) -> str:
    scheme, prefix, name, sep = match.group(1, 2, 3, 4)
    if scheme:
        return f"{scheme} ***"
    if prefix:
        return f"{prefix}-***"
    return f"{name}{sep}***"


def bad_request(message: str, param: str | None, code: str = "invalid_value") -> GatewayError:
    """A 400 that names the field at fault."""
    return GatewayError(400, message, code=code, param=param)


def unsupported(param: str, why: str) -> GatewayError:
    """A 400 for a field the gateway cannot translate for its upstream."""
    return GatewayError(
        400,
        f"{param!r} is not supported by this gateway: {why}",
        code="unsupported_parameter",
        param=param,
    )


def missing_parameter(param: str) -> GatewayError:
    """A 400 for a required field left out."""
    return GatewayError(
        400,
        f"Missing required parameter: '{param}'.",
        code="missing_required_parameter",
        param=param,
    )


def unknown_parameter(param: str) -> GatewayError:
    """A 400 for a field the API does not define."""
    return GatewayError(
        400,
        f"Unrecognized request argument supplied: {param}",
        code="unknown_parameter",
        param=param,
    )
