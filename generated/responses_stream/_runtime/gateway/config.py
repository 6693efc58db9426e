"""The gateway's settings."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.errors import BadValue
from .tenancy import LEGACY_POLICIES
from .upstream import Timeouts

REASONING_FIELDS = ("reasoning_content", "reasoning")
HOSTED_POLICIES = ("drop", "refuse")


@dataclass(frozen=True)
class GatewayConfig:
    """What ``serve`` is told on its command line.

    ``upstream``: the upstream API's base URL (``http://host:port/v1``), when one
    upstream serves every model (else the gateway has routes, see ``routing``);
    ``api_key``: sent upstream instead of the client's own ``Authorization``;
    ``max_body_bytes``: the largest request body taken (413 beyond);
    ``reasoning_field``: where earlier reasoning goes in chat messages sent upstream,
    and which field of chat chunks sent to clients carries reasoning;
    ``websocket_seconds``: how long one WebSocket connection may last;
    ``connection_cache``: how many responses a WebSocket connection keeps for
    ``previous_response_id`` (also ``store: false`` ones);
    ``hosted_tools``: ``drop`` leaves tools only OpenAI's servers run out of the
    upstream request (and says so), ``refuse`` answers them with a 400;
    ``api_keys``: the gateway's own keys (none: the client's credential is forwarded);
    ``tenant_secret``: what tenants are derived with (None: the store's own);
    ``legacy_records``: who sees records from before tenancy (``hidden``: no one,
    ``shared``: everyone);
    ``shutdown_grace``: how long streams in flight may go on after SIGTERM;
    ``heartbeat``: seconds of an upstream's silence after which a stream sends an SSE
    comment (0: never);
    ``background_ttl``: seconds a background response's event log is kept;
    ``background_max``: background responses one key may have running at once (counted
    in the store, so over every replica);
    ``background_lease``: seconds a replica holds a background run between renewals; one
    it no longer renews (the replica died) fails that long after.
    """

    upstream: str | None = None
    api_key: str | None = None
    timeouts: Timeouts = field(default_factory=Timeouts)
    max_body_bytes: int = 32 * 1024 * 1024
    reasoning_field: str = "reasoning_content"
    websocket_seconds: float = 3600.0
    connection_cache: int = 16
    max_chain: int = 1000
    hosted_tools: str = "drop"
    api_keys: tuple[str, ...] = ()
    tenant_secret: str | None = None
    legacy_records: str = "hidden"
    shutdown_grace: float = 20.0
    heartbeat: float = 15.0
    background_ttl: int = 24 * 3600
    background_max: int = 16
    background_lease: float = 10.0

    def __post_init__(self) -> None:
        if self.upstream is not None and not self.upstream.startswith(("http://", "https://")):
            raise BadValue(
                f"the upstream must be an http:// or https:// URL, not {self.upstream!r}"
            )
        if self.reasoning_field not in REASONING_FIELDS:
            raise BadValue(f"the reasoning field must be one of {REASONING_FIELDS}")
        if self.hosted_tools not in HOSTED_POLICIES:
            raise BadValue(f"the hosted tools policy must be one of {HOSTED_POLICIES}")
        if self.background_max < 1 or self.background_ttl < 1 or not self.background_lease > 0:
            raise BadValue("the background limit, log ttl and lease must be positive")
        if self.legacy_records not in LEGACY_POLICIES:
            raise BadValue(f"legacy records must be one of {LEGACY_POLICIES}")
        if any(not key or key != key.strip() or "," in key for key in self.api_keys):
            raise BadValue("a gateway key must be non-empty, without commas or spaces around")
        if self.tenant_secret is not None and len(self.tenant_secret) < 16:
            raise BadValue("the tenant secret must be at least 16 characters")
        if not 0 <= self.shutdown_grace < float("inf"):
            raise BadValue("the shutdown grace period must be a number of seconds, 0 or more")
        if not 0 <= self.heartbeat < float("inf"):
            raise BadValue("the heartbeat must be a number of seconds, 0 (none) or more")
        if self.max_body_bytes < 1024:
            raise BadValue("the body size limit must be at least 1024 bytes")

    def __repr__(self) -> str:  # the key stays out of logs and tracebacks
        key = "set" if self.api_key else None
        return (
            f"GatewayConfig(upstream={self.upstream!r}, api_key={key!r},"
            f" api_keys={len(self.api_keys)})"
        )
