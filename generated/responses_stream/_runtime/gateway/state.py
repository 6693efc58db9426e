"""What every route shares: the settings, the upstream, the store, and who is asking."""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field

from ..core.errors import BadValue
from .admission import Admission
from .background import Runs
from .config import GatewayConfig
from .routing import Router, UpstreamSettings
from .store import Store
from .tenancy import Caller, Tenancy
from .upstream import Upstream


@dataclass
class Gateway:
    """``routes``: the upstreams by model; without it, ``upstream`` (set up by the
    config's upstream settings) serves every model."""

    config: GatewayConfig
    upstream: Upstream | None
    store: Store
    _tenancy: Tenancy | None = field(default=None, repr=False)
    routes: InitVar[Router | None] = None
    router: Router = field(init=False)
    # new streams set up one per turn of the event loop (see ``admission``)
    admission: Admission = field(default_factory=Admission, repr=False)
    _runs: Runs | None = field(default=None, repr=False)

    def __post_init__(self, routes: Router | None) -> None:
        if routes is not None:
            self.router = routes
            return
        if self.upstream is None or self.config.upstream is None:
            raise BadValue("the gateway needs an upstream or routes")
        settings = UpstreamSettings(
            "default",
            self.config.upstream,
            self.config.api_key,
            reasoning_field=self.config.reasoning_field,
            hosted_tools=self.config.hosted_tools,
            timeouts=self.config.timeouts,
        )
        self.router = Router.single(settings, self.upstream)

    @property
    def runs(self) -> Runs:
        """The background runs (made on first use, over the store as the app wraps it)."""
        if self._runs is None:
            config = self.config
            self._runs = Runs(
                self.store, config.background_ttl, config.background_max, config.background_lease
            )
        return self._runs

    async def tenancy(self) -> Tenancy:
        """The tenancy rules (its secret read from the store the first time)."""
        if self._tenancy is None:
            given = self.config.tenant_secret
            secret = given.encode() if given else await self.store.tenant_secret()
            self._tenancy = Tenancy(secret, self.config.api_keys, self.config.legacy_records)
        return self._tenancy

    async def caller(self, authorization: str | None) -> Caller:
        """Who sent a request with this ``Authorization`` header (already let in)."""
        tenancy = await self.tenancy()
        return Caller(tenancy, tenancy.tenant(authorization), self.forwarded(authorization))

    def forwarded(self, authorization: str | None) -> str | None:
        """The client's credential as the upstream may see it: never a gateway key."""
        return None if self.config.api_keys else authorization
