"""The gateway's ASGI app: its routes for both dialects.

- ``/v1/...``: the OpenAI dialect; ``/openresponses/v1/...``: the Open Responses
  dialect (a client picks one with its base URL alone).  Under each:
  ``POST /responses`` (and its WebSocket mode), ``POST /responses/compact``,
  ``GET``/``DELETE /responses/{id}``, ``GET /responses/{id}/input_items`` and
  ``GET /models`` (the routed models; with one upstream, its own list).
- ``POST /v1/chat/completions``: served from the upstream's ``/responses``.
- ``GET /health``: answers without touching the upstream; ``GET /metrics``: the
  Prometheus metrics (``metrics``).  Neither needs a gateway key.

Every answer carries ``x-request-id`` (``request_ids``).  Served with its lifespan, the
app ends its streams gracefully on SIGTERM (``shutdown``).

Every error is the OpenAI error shape, unknown paths and methods included.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket

from ..version import __version__
from . import conversations
from .chat_route import chat_completions
from .compact import compact
from .errors import GatewayError
from .http import DIALECT_PREFIXES, error_response
from .metrics import CONTENT_TYPE as METRICS_TYPE
from .metrics import MeteredStore, Metrics
from .observe import Observe
from .request_ids import RequestIds
from .responses_routes import cancel, create, delete, input_items, retrieve
from .shutdown import Drain
from .state import Gateway
from .store_guard import GuardedStore
from .tenancy import KeyCheck
from .websocket import serve_websocket

log = logging.getLogger("responses_stream.gateway")


Handler = Callable[[Request], Awaitable[Response]]


def create_app(gw: Gateway) -> Starlette:
    """The ASGI app serving ``gw``; closing it closes the upstream clients and the store.
    Its metrics are ``app.state.metrics``; ``gw.store`` is then metered, and its outages
    are 503s (``store_guard``)."""
    metrics = Metrics()
    gw.store = GuardedStore(MeteredStore(gw.store, metrics))
    for name, client in gw.router.clients.items():
        client.observer = functools.partial(metrics.upstream_error, name)

    drain = Drain(gw.config.shutdown_grace)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        uninstall = drain.install()
        try:
            yield
        finally:
            uninstall()
            await gw.runs.aclose()
            await gw.router.aclose()
            await gw.store.close()

    async def serve_metrics(request: Request) -> Response:
        return Response(metrics.exposition(), media_type=METRICS_TYPE)

    served = [*routes(gw), Route("/metrics", serve_metrics, methods=["GET"])]
    app = Starlette(
        routes=served,
        middleware=[
            Middleware(RequestIds),
            Middleware(Observe, metrics=metrics),
            Middleware(KeyCheck, keys=gw.config.api_keys),
        ],
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_error},
    )
    app.state.metrics = metrics
    return app


def routes(gw: Gateway) -> list[BaseRoute]:
    out: list[BaseRoute] = []
    for prefix, dialect in DIALECT_PREFIXES.items():
        out += _dialect_routes(gw, prefix, dialect)
    out += [
        Route("/v1/chat/completions", _bind(chat_completions, gw), methods=["POST"]),
        Route("/health", functools.partial(_health, gw), methods=["GET"]),
    ]
    return out


def _dialect_routes(gw: Gateway, prefix: str, dialect: str) -> list[BaseRoute]:
    async def post_response(request: Request) -> Response:
        return await create(gw, request, dialect)

    async def post_compact(request: Request) -> Response:
        return await compact(gw, request, dialect)

    async def websocket(ws: WebSocket) -> None:
        await serve_websocket(gw, ws, dialect)

    async def one(request: Request) -> Response:
        if request.method == "DELETE":
            return await delete(gw, request)
        return await retrieve(gw, request)

    return [
        Route(f"{prefix}/responses", post_response, methods=["POST"]),
        WebSocketRoute(f"{prefix}/responses", websocket),
        Route(f"{prefix}/responses/compact", post_compact, methods=["POST"]),
        Route(f"{prefix}/responses/{{response_id}}", one, methods=["GET", "DELETE"]),
        Route(f"{prefix}/responses/{{response_id}}/cancel", _bind(cancel, gw), methods=["POST"]),
        Route(
            f"{prefix}/responses/{{response_id}}/input_items",
            _bind(input_items, gw),
            methods=["GET"],
        ),
        Route(f"{prefix}/models", _bind(_models, gw), methods=["GET"]),
        Route(f"{prefix}/models/{{model:path}}", _bind(_models, gw), methods=["GET"]),
        *_conversation_routes(gw, prefix),
    ]


def _conversation_routes(gw: Gateway, prefix: str) -> list[BaseRoute]:
    at = f"{prefix}/conversations"
    return [
        Route(at, _bind(conversations.create, gw), methods=["POST"]),
        Route(
            f"{at}/{{conversation_id}}",
            _bind(conversations.one, gw),
            methods=["GET", "POST", "DELETE"],
        ),
        Route(
            f"{at}/{{conversation_id}}/items",
            _bind(conversations.items, gw),
            methods=["GET", "POST"],
        ),
        Route(
            f"{at}/{{conversation_id}}/items/{{item_id}}",
            _bind(conversations.item, gw),
            methods=["GET", "DELETE"],
        ),
    ]


def _bind(handler: Callable[[Gateway, Request], Awaitable[Response]], gw: Gateway) -> Handler:
    async def route(request: Request) -> Response:
        return await handler(gw, request)

    return route


async def _models(gw: Gateway, request: Request) -> Response:
    """The models: with one upstream, its own list (or model) as it answers; with routes,
    the routed models (one of them: as its upstream describes it, under the routed name)."""
    model = request.path_params.get("model")
    forwarded = gw.forwarded(request.headers.get("authorization"))
    router = gw.router
    try:
        if router.is_single:
            path = "/models" if model is None else f"/models/{model}"
            client = next(iter(router.clients.values()))
            status, body = await client.get(path, forwarded)
            return JSONResponse(body, status)
        if model is None:
            return JSONResponse({"object": "list", "data": await router.models(forwarded)})
        return JSONResponse(await router.model(model, forwarded))
    except GatewayError as exc:
        return error_response(exc)


async def _health(gw: Gateway, request: Request) -> Response:
    body: dict[str, object] = {"status": "ok", "version": __version__}
    warnings = gw.router.warnings()
    if warnings:
        body["warnings"] = warnings
    return JSONResponse(body)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    message = {404: "no such route", 405: "method not allowed"}.get(exc.status_code, exc.detail)
    where = f"{message}: {request.method} {request.url.path}"
    # the router's headers kept: a 405 says which methods the route takes (Allow)
    return error_response(GatewayError(exc.status_code, where, headers=exc.headers))
