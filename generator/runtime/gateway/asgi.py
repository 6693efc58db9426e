"""The gateway as an ASGI app to serve or mount: :func:`create_app` takes the settings
``serve`` takes on its command line.

Mounted inside another app (Starlette's ``Mount``, FastAPI's ``app.mount``), the
gateway's lifespan is not run by the host: enter it from the host's own lifespan
(``async with gateway.router.lifespan_context(gateway): ...``) so that the upstream
connections and the store are closed at shutdown.
"""

from __future__ import annotations

import os

from starlette.applications import Starlette

from .app import create_app as app_for
from .config import GatewayConfig
from .state import Gateway
from .store import open_store
from .upstream import Timeouts, Upstream

API_KEY_ENV = "UPSTREAM_API_KEY"
DEFAULT_STORE = "sqlite:///responses-stream.db"
DEFAULT_MAX_BODY = 32 * 1024 * 1024


def create_app(
    upstream: str,
    *,
    store: str = DEFAULT_STORE,
    api_key: str | None = None,
    connect_timeout: float = 10.0,
    read_timeout: float = 300.0,
    max_body_bytes: int = DEFAULT_MAX_BODY,
    reasoning_field: str = "reasoning_content",
    hosted_tools: str = "drop",
) -> Starlette:
    """The gateway for the chat completions server at ``upstream`` (its ``/v1`` base
    URL), keeping stored responses in ``store`` (a URL, see ``open_store``).

    ``api_key`` is sent upstream instead of each client's ``Authorization`` (default:
    the ``UPSTREAM_API_KEY`` environment variable, if set).  The other settings are
    ``serve``'s options of the same names.  The routes are those of ``serve``: ``/v1``,
    ``/openresponses/v1``, ``/v1/chat/completions`` and ``/health``, under wherever the
    app is mounted.  ``app.state.gateway`` holds its settings, upstream and store.
    ValueError (one line) for a bad setting.
    """
    config = GatewayConfig(
        upstream=upstream,
        api_key=api_key if api_key is not None else os.environ.get(API_KEY_ENV) or None,
        timeouts=Timeouts(connect=connect_timeout, read=read_timeout),
        max_body_bytes=max_body_bytes,
        reasoning_field=reasoning_field,
        hosted_tools=hosted_tools,
    )
    client = Upstream(config.upstream, api_key=config.api_key, timeouts=config.timeouts)
    gw = Gateway(config=config, upstream=client, store=open_store(store))
    app = app_for(gw)
    app.state.gateway = gw
    return app
