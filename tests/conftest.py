"""Put the committed generated package and its test support on the import path."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT / "generated", ROOT / "generated" / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

# The Redis fixtures (redis_url, redis_server), the forward proxy (tinyproxy) and the
# gateway's (upstream, gw: module-scoped, so each module has its own; a module may define
# its own) for every test module.
from gateway_support import gw, upstream  # noqa: E402, F401
from proxy_server import tinyproxy  # noqa: E402, F401
from redis_server import redis_server, redis_url  # noqa: E402, F401

# `make e2e` runs tests/e2e, with the clients' own environment; `make test` leaves it out.
collect_ignore = [] if os.environ.get("RESPONSES_STREAM_E2E_PYTHON") else ["e2e"]
