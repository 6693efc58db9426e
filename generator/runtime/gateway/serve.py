"""``python -m responses_stream serve``: the gateway under uvicorn."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import uvicorn
from starlette.applications import Starlette

from .asgi import DEFAULT_MAX_BODY, DEFAULT_STORE, create_app
from .state import Gateway

log = logging.getLogger("responses_stream.gateway")


@dataclass(frozen=True)
class ServeOptions:
    upstream: str
    host: str = "127.0.0.1"
    port: int = 8080
    store: str = DEFAULT_STORE
    connect_timeout: float = 10.0
    read_timeout: float = 300.0
    max_body_bytes: int = DEFAULT_MAX_BODY
    reasoning_field: str = "reasoning_content"
    hosted_tools: str = "drop"
    log_level: str = "info"


def build(options: ServeOptions) -> Starlette:
    """The app ``options`` describe; ValueError for a bad one (one line)."""
    return create_app(
        options.upstream,
        store=options.store,
        connect_timeout=options.connect_timeout,
        read_timeout=options.read_timeout,
        max_body_bytes=options.max_body_bytes,
        reasoning_field=options.reasoning_field,
        hosted_tools=options.hosted_tools,
    )


def run(options: ServeOptions) -> None:
    """Serve until interrupted."""
    app = build(options)
    gw: Gateway = app.state.gateway
    logging.basicConfig(level=options.log_level.upper(), format="%(levelname)s: %(message)s")
    key = "the configured key" if gw.config.api_key else "the client's Authorization"
    log.info(
        "gateway for %s (sending %s), store %s, on http://%s:%d: "
        "/v1 (openai), /openresponses/v1 (openresponses)",
        gw.config.upstream,
        key,
        gw.store.url,
        options.host,
        options.port,
    )
    uvicorn.run(
        app,
        host=options.host,
        port=options.port,
        log_level=options.log_level,
        ws="websockets-sansio",
        lifespan="on",
        # longer than clients keep idle connections (the openai SDK: 5 s), so a client
        # never reuses a connection the server is closing
        timeout_keep_alive=75,
    )
