"""``python -m responses_stream serve``: the gateway under uvicorn."""

from __future__ import annotations

import logging
import logging.config
from dataclasses import dataclass

import uvicorn
from starlette.applications import Starlette

from .asgi import DEFAULT_MAX_BODY, DEFAULT_STORE, create_app
from .logs import log_config
from .state import Gateway

log = logging.getLogger("responses_stream.gateway")


@dataclass(frozen=True)
class ServeOptions:
    upstream: str | None = None
    config: str | None = None  # a config file (upstreams and model routes)
    host: str = "127.0.0.1"
    port: int = 8080
    store: str = DEFAULT_STORE
    connect_timeout: float = 10.0
    read_timeout: float = 300.0
    max_body_bytes: int = DEFAULT_MAX_BODY
    reasoning_field: str = "reasoning_content"
    hosted_tools: str = "drop"
    api_keys: tuple[str, ...] | None = None  # None: RESPONSES_STREAM_API_KEYS
    tenant_secret: str | None = None
    legacy_records: str = "hidden"
    log_level: str = "info"
    log_format: str = "text"  # or "json": one JSON object per line


def build(options: ServeOptions) -> Starlette:
    """The app ``options`` describe; ValueError for a bad one (one line)."""
    return create_app(
        options.upstream,
        config_file=options.config,
        store=options.store,
        connect_timeout=options.connect_timeout,
        read_timeout=options.read_timeout,
        max_body_bytes=options.max_body_bytes,
        reasoning_field=options.reasoning_field,
        hosted_tools=options.hosted_tools,
        api_keys=options.api_keys,
        tenant_secret=options.tenant_secret,
        legacy_records=options.legacy_records,
    )


def run(options: ServeOptions) -> None:
    """Serve until interrupted."""
    logging.config.dictConfig(log_config(options.log_level, options.log_format))
    app = build(options)
    gw: Gateway = app.state.gateway
    if gw.config.api_keys:
        log.info("gateway keys: %d (each a tenant of its own)", len(gw.config.api_keys))
    for settings in gw.router.settings.values():
        if settings.api_key:
            key = "its configured key"
        elif gw.config.api_keys:
            key = "no key (none is configured; clients use gateway keys)"
        else:
            key = "the client's Authorization"
        log.info("upstream %s: %s (sending %s)", settings.name, settings.url, key)
    log.info(
        "gateway on http://%s:%d (store %s): /v1 (openai), /openresponses/v1 (openresponses)",
        options.host,
        options.port,
        gw.store.url,
    )
    uvicorn.run(
        app,
        host=options.host,
        port=options.port,
        log_level=options.log_level,
        log_config=None,  # set up above
        ws="websockets-sansio",
        lifespan="on",
        # longer than clients keep idle connections (the openai SDK: 5 s), so a client
        # never reuses a connection the server is closing
        timeout_keep_alive=75,
    )
