"""The gateway's errors and their wire shapes.

A :class:`GatewayError` is an answer the gateway gives instead of a response: over
HTTP the OpenAI error body (``{"error": {"message", "type", "param", "code"}}``) with
its status and headers, over a WebSocket the Open Responses ``WebSocketErrorEvent``
(``{"type": "error", "status", "error": {...}}``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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


class GatewayError(Exception):
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

    def websocket_event(self) -> dict[str, Any]:
        """The WebSocket error event (``code`` is required there)."""
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


def unknown_parameter(param: str) -> GatewayError:
    """A 400 for a field the API does not define."""
    return GatewayError(
        400,
        f"Unrecognized request argument supplied: {param}",
        code="unknown_parameter",
        param=param,
    )
