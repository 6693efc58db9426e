"""Which upstream serves a model.

A :class:`Router` holds the upstreams (each with its own settings and client) and the
model routes: exact names first, then glob patterns (``*``, ``?``, ``[...]``) in the
order given, then the default upstream, if any.  A route may rename the model sent
upstream.  A model no route takes is a 404 ``model_not_found``, as OpenAI answers.
``serve --upstream URL`` is one upstream that is the default for every model.
"""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import BadValue
from .errors import GatewayError
from .request_ids import note_route
from .transport import Transport
from .upstream import Timeouts, Upstream

log = logging.getLogger("responses_stream.gateway")

# The API the gateway was asked on -> what an upstream must speak to serve it: any serves
# the gateway's Responses API (Chat Completions translated, a Responses API repaired or
# passed: ``UpstreamSettings.responses``), the Responses API its Chat Completions.
_SERVES = {"responses": ("both", "chat", "responses"), "chat": ("both", "responses")}


@dataclass(frozen=True)
class UpstreamSettings:
    """One upstream: where it is, its key, what it speaks, how it is talked to."""

    name: str
    url: str
    api_key: str | None = None
    dialect: str = "both"
    reasoning_field: str = "reasoning_content"
    hosted_tools: str = "drop"
    timeouts: Timeouts = field(default_factory=Timeouts)
    transport: Transport = field(default_factory=Transport)
    # how the upstream's own /responses serves the gateway's Responses route: "repair"
    # or "pass"; None: its chat completions do, translated
    responses: str | None = None

    def __repr__(self) -> str:  # the key stays out of logs and tracebacks
        return f"UpstreamSettings({self.name!r}, {self.url!r}, dialect={self.dialect!r})"


@dataclass(frozen=True)
class ModelRoute:
    """Models named ``match`` (an exact name or a glob) go to ``upstream``, as ``model``
    when it is given."""

    match: str
    upstream: str
    model: str | None = None

    @property
    def is_glob(self) -> bool:
        return any(c in self.match for c in "*?[")


@dataclass(frozen=True)
class Routed:
    """Where one request goes: the upstream's settings and client, the model sent."""

    settings: UpstreamSettings
    client: Upstream
    model: str


class Router:
    """The upstreams and the routes between them (see the module doc)."""

    def __init__(
        self,
        upstreams: Sequence[tuple[UpstreamSettings, Upstream]],
        routes: Sequence[ModelRoute] = (),
        default: str | None = None,
    ) -> None:
        self.settings = {s.name: s for s, _ in upstreams}
        self.clients = {s.name: c for s, c in upstreams}
        for name in [r.upstream for r in routes] + ([default] if default else []):
            if name not in self.settings:
                raise BadValue(f"no upstream named {name!r}")
        self.exact: dict[str, ModelRoute] = {}
        for r in routes:
            if not r.is_glob:
                self.exact.setdefault(r.match, r)
        self.globs = [r for r in routes if r.is_glob]
        self.default = default

    @classmethod
    def single(cls, settings: UpstreamSettings, client: Upstream) -> Router:
        """One upstream, the default for every model (``serve --upstream``)."""
        return cls([(settings, client)], default=settings.name)

    def warnings(self) -> list[str]:
        """What the operator must be told about the upstreams' settings (``/health``
        says it too)."""
        return [w for s in self.settings.values() for w in s.transport.warnings(s.name)]

    @property
    def is_single(self) -> bool:
        """One upstream taking every model as it is named."""
        return len(self.clients) == 1 and not self.exact and not self.globs

    def find(self, model: str) -> tuple[str, str] | None:
        """The upstream's name and the model sent there, or None for no route."""
        route = self.exact.get(model) or next(
            (r for r in self.globs if fnmatch.fnmatchcase(model, r.match)), None
        )
        if route is not None:
            return route.upstream, route.model or model
        return (self.default, model) if self.default else None

    def route(self, model: str, api: str) -> Routed:
        """Where a request for ``model`` (a checked body's) on the gateway's ``api``
        (``responses`` or ``chat``) goes; :class:`GatewayError` when nowhere."""
        found = self.find(model)
        if found is None:
            raise _not_found(model)
        name, sent = found
        settings = self.settings[name]
        if settings.dialect not in _SERVES[api]:
            other = "/v1/chat/completions" if api == "responses" else "/v1/responses"
            raise GatewayError(
                400,
                f"the model '{model}' is served by upstream '{name}', which speaks only the"
                f" {'Responses' if settings.dialect == 'responses' else 'Chat Completions'}"
                f" API: ask {other} for it",
                code="unsupported_api",
                param="model",
            )
        note_route(model, name)
        return Routed(settings, self.clients[name], sent)

    async def models(self, authorization: str | None) -> list[dict[str, Any]]:
        """The routed models in OpenAI's list shape: each exact route, and the models of
        the upstreams behind a glob or the default that match them (an upstream that does
        not answer is left out, and logged)."""
        listed: dict[str, dict[str, Any]] = {}
        for name, r in self.exact.items():
            listed[name] = _model(name, r.upstream)
        asked = {r.upstream for r in self.globs} | ({self.default} if self.default else set())
        for upstream in sorted(asked):
            for entry in await self._upstream_models(upstream, authorization):
                model = entry.get("id")
                if not isinstance(model, str) or model in listed:
                    continue
                if self.find(model) == (upstream, model):
                    listed[model] = {**entry, "owned_by": entry.get("owned_by") or upstream}
        return list(listed.values())

    async def model(self, model: str, authorization: str | None) -> dict[str, Any]:
        """One routed model: as its upstream describes the model sent there, under the
        routed name (an exact route the upstream does not describe: the route alone)."""
        found = self.find(model)
        if found is None:
            raise _not_found(model)
        upstream, sent = found
        try:
            _, body = await self.clients[upstream].get(f"/models/{sent}", authorization)
        except GatewayError:
            if model not in self.exact:
                raise
            return _model(model, upstream)
        return {**body, "id": model}

    async def _upstream_models(
        self, upstream: str, authorization: str | None
    ) -> list[Mapping[str, Any]]:
        try:
            _, body = await self.clients[upstream].get("/models", authorization)
        except GatewayError as exc:
            log.warning("upstream %s did not list its models: %s", upstream, exc.message)
            return []
        data = body.get("data")
        return [e for e in data if isinstance(e, Mapping)] if isinstance(data, list) else []

    async def aclose(self) -> None:
        for client in self.clients.values():
            await client.aclose()


def _model(name: str, upstream: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": upstream}


def _not_found(model: str) -> GatewayError:
    return GatewayError(
        404,
        f"The model '{model}' does not exist or you do not have access to it.",
        code="model_not_found",
        param="model",
    )
