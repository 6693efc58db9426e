"""What every route shares: the settings, the upstream and the store."""

from __future__ import annotations

from dataclasses import dataclass

from .config import GatewayConfig
from .store import Store
from .upstream import Upstream


@dataclass
class Gateway:
    config: GatewayConfig
    upstream: Upstream
    store: Store
