"""The gateway as an ASGI app to serve or mount: :func:`create_app` takes the settings
``serve`` takes on its command line.

Mounted inside another app (Starlette's ``Mount``, FastAPI's ``app.mount``), the
gateway's lifespan is not run by the host: enter it from the host's own lifespan
(``async with gateway.router.lifespan_context(gateway): ...``) so that the upstream
connections and the store are closed at shutdown.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from starlette.applications import Starlette

from ..core.errors import BadValue
from .app import create_app as app_for
from .config import GatewayConfig
from .config_file import load_config
from .state import Gateway
from .store import open_store
from .tenancy import gateway_keys
from .upstream import Timeouts, Upstream

API_KEY_ENV = "UPSTREAM_API_KEY"
GATEWAY_KEYS_ENV = "RESPONSES_STREAM_API_KEYS"
TENANT_SECRET_ENV = "RESPONSES_STREAM_TENANT_SECRET"
DEFAULT_STORE = "sqlite:///responses-stream.db"
DEFAULT_MAX_BODY = 32 * 1024 * 1024


def create_app(
    upstream: str | None = None,
    *,
    config_file: str | None = None,
    store: str = DEFAULT_STORE,
    api_key: str | None = None,
    connect_timeout: float = 10.0,
    read_timeout: float = 300.0,
    max_body_bytes: int = DEFAULT_MAX_BODY,
    reasoning_field: str = "reasoning_content",
    hosted_tools: str = "drop",
    api_keys: Iterable[str] | None = None,
    tenant_secret: str | None = None,
    legacy_records: str = "hidden",
    shutdown_grace: float = 20.0,
    heartbeat: float = 15.0,
    background_max: int = 16,
    background_ttl: int = 24 * 3600,
    background_lease: float = 10.0,
) -> Starlette:
    """The gateway for the chat completions server at ``upstream`` (its ``/v1`` base
    URL), or for the upstreams and model routes of ``config_file`` (see
    ``config_file.load_config``; its upstreams' settings replace the per-upstream
    arguments here), keeping stored responses in ``store`` (a URL, see ``open_store``).

    ``api_key`` is sent upstream instead of each client's ``Authorization`` (default:
    the ``UPSTREAM_API_KEY`` environment variable, if set).  ``api_keys`` are the
    gateway's own keys (default: the comma-separated ``RESPONSES_STREAM_API_KEYS``): with
    any, a request needs one of them, each is a tenant of its own, and no client
    credential goes upstream.  ``tenant_secret`` (default:
    ``RESPONSES_STREAM_TENANT_SECRET``, else a secret the store keeps) derives tenants;
    ``legacy_records`` says who sees records from before tenancy.  The other settings are
    ``serve``'s options of the same names.  The routes are those of ``serve``: ``/v1``,
    ``/openresponses/v1``, ``/v1/chat/completions`` and ``/health``, under wherever the
    app is mounted.  ``app.state.gateway`` holds its settings, upstream and store.
    ValueError (one line) for a bad setting.
    """
    if (upstream is None) == (config_file is None):
        raise BadValue("give either the upstream or a config file")
    listed = os.environ.get(GATEWAY_KEYS_ENV) if api_keys is None else None
    keys = gateway_keys(api_keys or (), listed)
    loaded = load_config(config_file) if config_file is not None else None
    if loaded is not None:
        keys = tuple(dict.fromkeys([*keys, *loaded.api_keys]))
    config = GatewayConfig(
        upstream=upstream,
        api_key=api_key if api_key is not None else os.environ.get(API_KEY_ENV) or None,
        timeouts=Timeouts(connect=connect_timeout, read=read_timeout),
        max_body_bytes=max_body_bytes,
        reasoning_field=reasoning_field,
        hosted_tools=hosted_tools,
        api_keys=keys,
        tenant_secret=tenant_secret or os.environ.get(TENANT_SECRET_ENV) or None,
        legacy_records=legacy_records,
        shutdown_grace=shutdown_grace,
        heartbeat=heartbeat,
        background_max=background_max,
        background_ttl=background_ttl,
        background_lease=background_lease,
    )
    if loaded is not None:
        gw = Gateway(config=config, upstream=None, store=open_store(store), routes=loaded.router)
    else:
        assert config.upstream is not None
        client = Upstream(config.upstream, api_key=config.api_key, timeouts=config.timeouts)
        gw = Gateway(config=config, upstream=client, store=open_store(store))
    app = app_for(gw)
    app.state.gateway = gw
    return app
