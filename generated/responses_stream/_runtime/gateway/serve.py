"""``python -m responses_stream serve``: the gateway under uvicorn, in one process or in
``--workers N`` (uvicorn's supervisor; each worker builds the app from the options this
process was given, passed in :data:`OPTIONS_ENV`).  With several workers the store must
be one they share (SQLite or Redis), and the metrics go through a folder they share
(``PROMETHEUS_MULTIPROC_DIR``, a temporary one unless it is set)."""

from __future__ import annotations

import dataclasses
import gc
import json
import logging
import logging.config
import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any

import uvicorn
from starlette.applications import Starlette

from ..core.errors import BadValue
from .asgi import DEFAULT_MAX_BODY, DEFAULT_STORE, create_app
from .logs import log_config
from .metrics import MULTIPROCESS_ENV
from .state import Gateway
from .transport import redact

log = logging.getLogger("responses_stream.gateway")
OPTIONS_ENV = "RESPONSES_STREAM_SERVE_OPTIONS"
# how much longer than the grace period the server waits for the streams it ended
ENDING_SECONDS = 10.0
# allocations between two collections of the young generation while serving (see settle)
YOUNG_THRESHOLD = 10_000


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
    workers: int = 1
    shutdown_grace: float = 20.0
    heartbeat: float = 15.0
    background_max: int = 16
    background_ttl: int = 24 * 3600
    background_lease: float = 10.0


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
        shutdown_grace=options.shutdown_grace,
        heartbeat=options.heartbeat,
        background_max=options.background_max,
        background_ttl=options.background_ttl,
        background_lease=options.background_lease,
    )


def worker_app() -> Starlette:
    """A worker's app, from the options in :data:`OPTIONS_ENV`."""
    given: dict[str, Any] = json.loads(os.environ[OPTIONS_ENV])
    if given.get("api_keys") is not None:
        given["api_keys"] = tuple(given["api_keys"])
    app = build(ServeOptions(**given))
    settle()
    return app


def settle() -> None:
    """Take what start-up made (modules, the app, the schemas) out of the garbage
    collector's way: collected once, then frozen in its permanent generation, so a full
    collection while serving scans only what the requests made.  Without it, a full
    collection of the gateway's heap took 24 ms under load: a stall of every stream.

    The young generation is then collected after :data:`YOUNG_THRESHOLD` allocations
    instead of Python's 700: a stream's objects are freed by their counts as it ends, so
    at 700 the collector ran about every five streams, each time scanning the live ones
    (0.1 ms, a stall of all of them), 30 µs of CPU a stream in all."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, *gc.get_threshold()[1:])


def run(options: ServeOptions) -> None:
    """Serve until interrupted (SIGTERM: gracefully, see ``shutdown``)."""
    logging_setup = log_config(options.log_level, options.log_format)
    logging.config.dictConfig(logging_setup)
    if options.workers < 1:
        raise BadValue("--workers must be 1 or more")
    if options.workers > 1 and options.store.startswith("memory:"):
        raise BadValue(
            "the memory: store is one per process: with --workers, give a store they share"
            " (sqlite:///FILE or redis://...)"
        )
    app = build(options)  # a bad option fails here, before any worker starts
    _describe(app.state.gateway, options)
    settings: dict[str, Any] = {
        "host": options.host,
        "port": options.port,
        "log_level": options.log_level,
        "log_config": logging_setup,
        "ws": "websockets-sansio",
        "lifespan": "on",
        # longer than clients keep idle connections (the openai SDK: 5 s), so a client
        # never reuses a connection the server is closing
        "timeout_keep_alive": 75,
        "timeout_graceful_shutdown": options.shutdown_grace + ENDING_SECONDS,
    }
    if options.workers == 1:
        settle()
        uvicorn.run(app, **settings)
        return
    made = None
    if not os.environ.get(MULTIPROCESS_ENV):
        made = tempfile.mkdtemp(prefix="responses-stream-metrics-")
        os.environ[MULTIPROCESS_ENV] = made
    os.environ[OPTIONS_ENV] = json.dumps(dataclasses.asdict(options))
    try:
        target = f"{__name__}:worker_app"
        uvicorn.run(target, factory=True, workers=options.workers, **settings)
    finally:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)


def _describe(gw: Gateway, options: ServeOptions) -> None:
    if gw.config.api_keys:
        log.info("gateway keys: %d (each a tenant of its own)", len(gw.config.api_keys))
    for settings in gw.router.settings.values():
        if settings.api_key:
            key = "its configured key"
        elif gw.config.api_keys:
            key = "no key (none is configured; clients use gateway keys)"
        else:
            key = "the client's Authorization"
        client = gw.router.clients[settings.name]
        via = f", through the proxy {redact(client.proxy)}" if client.proxy else ""
        log.info("upstream %s: %s (sending %s%s)", settings.name, settings.url, key, via)
    for warning in gw.router.warnings():
        log.warning("%s", warning)
    log.info(
        "gateway on http://%s:%d (store %s, %d worker%s): /v1 (openai), /openresponses/v1"
        " (openresponses)",
        options.host,
        options.port,
        gw.store.url,
        options.workers,
        "" if options.workers == 1 else "s",
    )
