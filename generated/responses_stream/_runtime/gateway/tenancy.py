"""Who is asking: gateway keys, and the tenant every stored response belongs to.

With gateway keys (``serve --api-key``, ``RESPONSES_STREAM_API_KEYS``), a request
must carry ``Authorization: Bearer <one of them>`` (else 401 ``invalid_api_key``,
before anything else is read; :class:`KeyCheck`), each key is a tenant of its own, and
no client credential is forwarded upstream.  Without gateway keys, the client's
credential is forwarded as before and its keyed hash is its tenant; a request with no
credential is the anonymous tenant.

A tenant is ``HMAC-SHA256(secret, kind + credential)`` in hex: the store keeps the
secret (or ``--tenant-secret`` / ``RESPONSES_STREAM_TENANT_SECRET`` gives it), so a
credential is never stored and tenants survive a restart.  A record of another tenant
is answered exactly as one that does not exist; records written before tenancy have
none and are seen by no one unless ``legacy_records`` is ``shared``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from ..core.errors import BadValue
from .errors import GatewayError
from .http import route_path
from .store import StoredConversation, StoredResponse

ANONYMOUS = "anonymous"
LEGACY_POLICIES = ("hidden", "shared")
OPEN_PATHS = ("/health", "/metrics")  # answered without a key


def bearer(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, else None."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


@dataclass(frozen=True)
class Tenancy:
    """The gateway keys (none: the client's credential is its identity), the secret
    tenants are derived with, and what records without a tenant do."""

    secret: bytes
    keys: tuple[str, ...] = ()
    legacy_records: str = "hidden"

    def __post_init__(self) -> None:
        if self.legacy_records not in LEGACY_POLICIES:
            raise BadValue(f"legacy records must be one of {LEGACY_POLICIES}")

    def __repr__(self) -> str:  # keys and secret stay out of logs and tracebacks
        return f"Tenancy(keys={len(self.keys)}, legacy_records={self.legacy_records!r})"

    @property
    def keyed(self) -> bool:
        return bool(self.keys)

    def tenant(self, authorization: str | None) -> str:
        """The tenant of a request with this ``Authorization`` header."""
        if self.keyed:
            token = bearer(authorization) or ""
            return self._digest("key", token)
        if not authorization or not authorization.strip():
            return ANONYMOUS
        return self._digest("credential", authorization.strip())

    def sees(self, record: StoredResponse | StoredConversation | None, tenant: str) -> bool:
        """Whether ``tenant`` may see ``record`` (a missing record: no)."""
        if record is None:
            return False
        if record.tenant is None:
            return self.legacy_records == "shared"
        return hmac.compare_digest(record.tenant, tenant)

    def _digest(self, kind: str, credential: str) -> str:
        message = f"{kind}\0{credential}".encode("utf-8", "surrogatepass")
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest()


def known_key(keys: Iterable[str], authorization: str | None) -> bool:
    """Whether ``authorization`` carries one of ``keys``, each compared in constant time."""
    token = bearer(authorization)
    if token is None:
        return False
    found = False
    for key in keys:  # every key is compared, whichever matches
        found |= hmac.compare_digest(token.encode(), key.encode())
    return found


@dataclass(frozen=True)
class Caller:
    """Who sent a request: its tenant, and the credential the upstream is sent for it."""

    tenancy: Tenancy
    tenant: str
    upstream_authorization: str | None

    def __repr__(self) -> str:
        return f"Caller(tenant={self.tenant[:8]!r}...)"

    def sees(self, record: StoredResponse | StoredConversation | None) -> bool:
        return self.tenancy.sees(record, self.tenant)

    @property
    def item_tenants(self) -> tuple[str | None, ...]:
        """The tenants whose items it may reference: its own, and with ``shared`` legacy
        records, theirs (None)."""
        shared = self.tenancy.legacy_records == "shared"
        return (self.tenant, None) if shared else (self.tenant,)


def gateway_keys(given: Iterable[str], listed: str | None = None) -> tuple[str, ...]:
    """The gateway keys ``given`` (``--api-key`` flags), then those of ``listed`` (the
    comma-separated environment variable), each once, in order."""
    keys = [k.strip() for k in given] + [k.strip() for k in (listed or "").split(",")]
    return tuple(dict.fromkeys(k for k in keys if k))


class KeyCheck:
    """ASGI middleware: with gateway keys, a request without a known key gets 401 (a
    WebSocket handshake too) before anything of it is read; ``/health`` is open."""

    def __init__(self, app: ASGIApp, keys: tuple[str, ...]) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or not self.keys:
            return await self.app(scope, receive, send)
        if scope["type"] == "http" and route_path(scope) in OPEN_PATHS:
            return await self.app(scope, receive, send)
        headers: Mapping[bytes, bytes] = dict(scope.get("headers") or [])
        authorization = headers.get(b"authorization", b"").decode("latin-1") or None
        if known_key(self.keys, authorization):
            return await self.app(scope, receive, send)
        await _unauthorized(scope, send, missing=bearer(authorization) is None)


UNAUTHORIZED_HEADERS = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]


def unauthorized_body(missing: bool) -> bytes:
    message = (
        "You didn't provide an API key: send it as 'Authorization: Bearer <key>'."
        if missing
        else "Incorrect API key provided."
    )
    error = {"message": message, "type": "invalid_request_error", "param": None}
    return json.dumps({"error": {**error, "code": "invalid_api_key"}}).encode()


async def _unauthorized(scope: Scope, send: Send, *, missing: bool) -> None:
    GatewayError(401, "a request without a known gateway key", code="invalid_api_key").log()
    body = unauthorized_body(missing)
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 401, "headers": UNAUTHORIZED_HEADERS})
        await send({"type": "http.response.body", "body": body})
        return
    if "websocket.http.response" in scope.get("extensions", {}):
        start = {"type": "websocket.http.response.start", "status": 401}
        await send({**start, "headers": UNAUTHORIZED_HEADERS})
        await send({"type": "websocket.http.response.body", "body": body})
        return
    await send({"type": "websocket.close", "code": 1008, "reason": "invalid_api_key"})
