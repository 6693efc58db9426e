"""``python -m responses_stream serve``: the gateway under uvicorn."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import uvicorn

from .app import create_app
from .config import GatewayConfig
from .state import Gateway
from .store import open_store
from .upstream import Timeouts, Upstream

API_KEY_ENV = "UPSTREAM_API_KEY"
DEFAULT_STORE = "sqlite:///responses-stream.db"

log = logging.getLogger("responses_stream.gateway")


@dataclass(frozen=True)
class ServeOptions:
    upstream: str
    host: str = "127.0.0.1"
    port: int = 8080
    store: str = DEFAULT_STORE
    connect_timeout: float = 10.0
    read_timeout: float = 300.0
    max_body_bytes: int = 32 * 1024 * 1024
    reasoning_field: str = "reasoning_content"
    hosted_tools: str = "drop"
    log_level: str = "info"


def build(options: ServeOptions) -> Gateway:
    """The gateway ``options`` describe; ValueError for a bad one (one line)."""
    config = GatewayConfig(
        upstream=options.upstream,
        api_key=os.environ.get(API_KEY_ENV) or None,
        timeouts=Timeouts(connect=options.connect_timeout, read=options.read_timeout),
        max_body_bytes=options.max_body_bytes,
        reasoning_field=options.reasoning_field,
        hosted_tools=options.hosted_tools,
    )
    store = open_store(options.store)
    upstream = Upstream(config.upstream, api_key=config.api_key, timeouts=config.timeouts)
    return Gateway(config=config, upstream=upstream, store=store)


def run(options: ServeOptions) -> None:
    """Serve until interrupted."""
    gw = build(options)
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
        create_app(gw),
        host=options.host,
        port=options.port,
        log_level=options.log_level,
        ws="websockets-sansio",
        lifespan="on",
        # longer than clients keep idle connections (the openai SDK: 5 s), so a client
        # never reuses a connection the server is closing
        timeout_keep_alive=75,
    )
