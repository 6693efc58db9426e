"""The store as the routes use it: an outage is a 503 with ``Retry-After``, never a 500.

A backend that fails (Redis down, a SQLite file that cannot be written) raises
``StoreUnavailable``; :class:`GuardedStore` answers it as a :class:`GatewayError` (503,
``store_unavailable``) that every route already turns into its error answer.  After a
failure, reads or writes (each on its own: an unwritable file still reads) fail at once
for :data:`RETRY_AFTER` seconds without asking the backend, so a request that needs the
store is refused before the upstream is called rather than after; then the next call
asks the backend again, and the gateway is back as soon as the backend is.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from .errors import GatewayError
from .store import Store, StoredConversation, StoredResponse, StoreUnavailable
from .store.base import LogEntry, RunClaim, RunState

T = TypeVar("T")
log = logging.getLogger("responses_stream.gateway")
RETRY_AFTER = 2.0  # seconds a failed read or write keeps its kind of call refused


class GuardedStore:
    """``inner`` with its failures answered as 503s (see the module doc)."""

    def __init__(
        self,
        inner: Store,
        retry_after: float = RETRY_AFTER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.inner = inner
        self.url = inner.url
        self.retry_after = retry_after
        self._clock = clock
        self._down: dict[str, tuple[float, str]] = {}  # "read"/"write" -> (until, why)

    def check(self, kind: str) -> None:
        """A 503 while ``kind`` ("read" or "write") calls are known to fail."""
        until, why = self._down.get(kind, (0.0, ""))
        left = until - self._clock()
        if left > 0:
            raise unavailable(why, left)

    async def _call(self, kind: str, call: Callable[[], Awaitable[T]]) -> T:
        self.check(kind)
        try:
            result = await call()
        except StoreUnavailable as exc:
            self._down[kind] = (self._clock() + self.retry_after, str(exc))
            log.error(
                "the store failed (%s calls refused for %gs): %s", kind, self.retry_after, exc
            )
            raise unavailable(str(exc), self.retry_after) from None
        if self._down.pop(kind, None) is not None:
            log.warning("the store answers %s calls again", kind)
        return result

    async def put(self, record: StoredResponse) -> None:
        await self._call("write", lambda: self.inner.put(record))

    async def get(self, response_id: str) -> StoredResponse | None:
        return await self._call("read", lambda: self.inner.get(response_id))

    async def find_item(self, item_id: str, tenant: str | None = None) -> StoredResponse | None:
        return await self._call("read", lambda: self.inner.find_item(item_id, tenant))

    async def tenant_secret(self) -> bytes:
        return await self._call("write", self.inner.tenant_secret)

    async def delete(self, response_id: str) -> bool:
        return await self._call("write", lambda: self.inner.delete(response_id))

    async def conversation_put(self, conversation: StoredConversation) -> None:
        return await self._call("write", lambda: self.inner.conversation_put(conversation))

    async def conversation_get(self, conversation_id: str) -> StoredConversation | None:
        return await self._call("read", lambda: self.inner.conversation_get(conversation_id))

    async def conversation_delete(self, conversation_id: str) -> bool:
        return await self._call("write", lambda: self.inner.conversation_delete(conversation_id))

    async def conversation_append(self, conversation_id: str, items: list[dict[str, Any]]) -> None:
        return await self._call(
            "write", lambda: self.inner.conversation_append(conversation_id, items)
        )

    async def conversation_items(self, conversation_id: str) -> list[dict[str, Any]]:
        return await self._call("read", lambda: self.inner.conversation_items(conversation_id))

    async def conversation_item_delete(self, conversation_id: str, item_id: str) -> bool:
        return await self._call(
            "write", lambda: self.inner.conversation_item_delete(conversation_id, item_id)
        )

    async def run_start(self, response_id: str, claim: RunClaim) -> bool:
        return await self._call("write", lambda: self.inner.run_start(response_id, claim))

    async def run_state(self, response_id: str) -> RunState | None:
        return await self._call("read", lambda: self.inner.run_state(response_id))

    async def run_renew(self, response_id: str, owner: str, lease_until: float) -> RunState | None:
        return await self._call(
            "write", lambda: self.inner.run_renew(response_id, owner, lease_until)
        )

    async def run_release(self, response_id: str) -> None:
        return await self._call("write", lambda: self.inner.run_release(response_id))

    async def run_cancel(self, response_id: str) -> RunState | None:
        return await self._call("write", lambda: self.inner.run_cancel(response_id))

    async def run_end(self, response_id: str, expired_before: float | None = None) -> bool:
        return await self._call("write", lambda: self.inner.run_end(response_id, expired_before))

    async def log_append(self, response_id: str, entries: list[LogEntry]) -> None:
        await self._call("write", lambda: self.inner.log_append(response_id, entries))

    async def log_read(self, response_id: str, after: int = -1) -> list[LogEntry]:
        return await self._call("read", lambda: self.inner.log_read(response_id, after))

    async def close(self) -> None:
        await self.inner.close()

    def __getattr__(self, name: str) -> Any:  # what a backend has besides the protocol
        return getattr(self.inner, name)


def unavailable(why: str, seconds: float) -> GatewayError:
    """The 503 for a store that cannot be used for ``seconds`` more."""
    wait = max(1, math.ceil(seconds))
    return GatewayError(
        503,
        f"The response store is unavailable; retry after {wait} s. ({why})",
        code="store_unavailable",
        headers={"Retry-After": str(wait)},
    )


def check_writable(store: Store) -> None:
    """A 503 when ``store`` is a :class:`GuardedStore` whose writes are known to fail."""
    if isinstance(store, GuardedStore):
        store.check("write")
