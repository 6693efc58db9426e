"""The gateway's Prometheus metrics, served on ``GET /metrics`` (text format).

Made with ``prometheus-client``.  With ``PROMETHEUS_MULTIPROC_DIR`` set (an empty
folder, before the processes start), every worker process writes its values there
and ``/metrics`` adds them up, whichever worker answers; without it, one process
keeps them in memory.

- ``responses_stream_requests_total{route, dialect, model, status}``: requests
  answered (a stream: once it ended); ``model`` is the model asked for once it was
  routed, else empty, so clients cannot grow the label set.
- ``responses_stream_upstream_errors_total{upstream, kind}``: failures of the
  upstream (``kind``: the gateway's error code, ``http_<status>`` for an HTTP error,
  ``stream_error`` for an error the upstream sent inside its stream).
- ``responses_stream_time_to_first_event_seconds{route}``: from the request to its
  first streamed event; ``responses_stream_stream_duration_seconds{route}``: to its end.
- ``responses_stream_events_total{route}``, ``responses_stream_streamed_bytes_total{route}``.
- ``responses_stream_active_streams``: streams under way.
- ``responses_stream_store_operations_total{operation, outcome}`` and
  ``responses_stream_store_seconds{operation}``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, TypeVar

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

from .store import Store, StoredConversation, StoredResponse
from .store.base import LogEntry, RunClaim, RunState

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = CONTENT_TYPE_LATEST
_LATENCY = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
_DURATION = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
_STORE = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1)
T = TypeVar("T")


@dataclass(frozen=True)
class RouteMetrics:
    """The series of one route's streams."""

    first_event: Any
    duration: Any
    events: Any
    bytes: Any


class Metrics:
    """The gateway's metrics (see the module doc); one per app."""

    def __init__(self) -> None:
        self.multiprocess = bool(os.environ.get(MULTIPROCESS_ENV))
        self.registry = CollectorRegistry()
        # with several processes the values live in files: no registry holds them
        reg = None if self.multiprocess else self.registry
        self.requests = Counter(
            "responses_stream_requests",
            "Requests answered, by route, dialect, routed model and HTTP status",
            ["route", "dialect", "model", "status"],
            registry=reg,
        )
        self.upstream_errors = Counter(
            "responses_stream_upstream_errors",
            "Upstream failures, by upstream and kind",
            ["upstream", "kind"],
            registry=reg,
        )
        self.first_event = Histogram(
            "responses_stream_time_to_first_event_seconds",
            "From the request to its first streamed event",
            ["route"],
            buckets=_LATENCY,
            registry=reg,
        )
        self.duration = Histogram(
            "responses_stream_stream_duration_seconds",
            "From the request to the end of its stream",
            ["route"],
            buckets=_DURATION,
            registry=reg,
        )
        self.events = Counter(
            "responses_stream_events", "Events streamed to clients", ["route"], registry=reg
        )
        self.bytes = Counter(
            "responses_stream_streamed_bytes",
            "Bytes streamed to clients",
            ["route"],
            registry=reg,
        )
        self.active = Gauge(
            "responses_stream_active_streams",
            "Streams under way",
            registry=reg,
            multiprocess_mode="livesum",
        )
        self.upstream_faults = Counter(
            "responses_stream_upstream_stream_faults",
            "Protocol faults in upstream Responses streams (responses: pass), by upstream,"
            " mode and the validator's rule id, counted once per rule and stream",
            ["upstream", "mode", "rule"],
            registry=reg,
        )
        self.store_operations = Counter(
            "responses_stream_store_operations",
            "Store operations, by operation and outcome (ok, error)",
            ["operation", "outcome"],
            registry=reg,
        )
        self.store_seconds = Histogram(
            "responses_stream_store_seconds",
            "Store operation latency",
            ["operation"],
            buckets=_STORE,
            registry=reg,
        )

        # the labelled series a request touches, looked up once (``labels`` takes a lock
        # and builds a key on every call)
        self._routes: dict[str, RouteMetrics] = {}
        self._answers: dict[tuple[str, str, str, int], Any] = {}

    def route(self, route: str) -> RouteMetrics:
        """The stream series of ``route``."""
        found = self._routes.get(route)
        if found is None:
            found = self._routes[route] = RouteMetrics(
                self.first_event.labels(route),
                self.duration.labels(route),
                self.events.labels(route),
                self.bytes.labels(route),
            )
        return found

    def answered(self, route: str, dialect: str, model: str, status: int) -> None:
        """Count one request answered."""
        key = (route, dialect, model, status)
        series = self._answers.get(key)
        if series is None:
            series = self._answers[key] = self.requests.labels(route, dialect, model, str(status))
        series.inc()

    def upstream_error(self, upstream: str, kind: str) -> None:
        self.upstream_errors.labels(upstream, kind).inc()

    def upstream_fault(self, upstream: str, mode: str, rule: str) -> None:
        self.upstream_faults.labels(upstream, mode, rule).inc()

    def exposition(self) -> bytes:
        """The metrics in Prometheus text format (every process's, when there are several)."""
        if self.multiprocess:
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            return generate_latest(registry)
        return generate_latest(self.registry)


class MeteredStore:
    """A store whose every operation is counted and timed."""

    def __init__(self, store: Store, metrics: Metrics) -> None:
        self.inner = store
        self.url = store.url
        self.metrics = metrics

    async def _timed(self, operation: str, call: Awaitable[T]) -> T:
        start = time.perf_counter()
        outcome = "error"
        try:
            result = await call
            outcome = "ok"
            return result
        finally:
            m = self.metrics
            m.store_operations.labels(operation, outcome).inc()
            m.store_seconds.labels(operation).observe(time.perf_counter() - start)

    async def put(self, record: StoredResponse) -> None:
        await self._timed("put", self.inner.put(record))

    async def get(self, response_id: str) -> StoredResponse | None:
        return await self._timed("get", self.inner.get(response_id))

    async def find_item(self, item_id: str, tenant: str | None = None) -> StoredResponse | None:
        return await self._timed("find_item", self.inner.find_item(item_id, tenant))

    async def tenant_secret(self) -> bytes:
        return await self._timed("tenant_secret", self.inner.tenant_secret())

    async def delete(self, response_id: str) -> bool:
        return await self._timed("delete", self.inner.delete(response_id))

    async def conversation_put(self, conversation: StoredConversation) -> None:
        return await self._timed("conversation_put", self.inner.conversation_put(conversation))

    async def conversation_get(self, conversation_id: str) -> StoredConversation | None:
        return await self._timed("conversation_get", self.inner.conversation_get(conversation_id))

    async def conversation_delete(self, conversation_id: str) -> bool:
        return await self._timed(
            "conversation_delete", self.inner.conversation_delete(conversation_id)
        )

    async def conversation_append(self, conversation_id: str, items: list[dict[str, Any]]) -> None:
        return await self._timed(
            "conversation_append", self.inner.conversation_append(conversation_id, items)
        )

    async def conversation_items(self, conversation_id: str) -> list[dict[str, Any]]:
        return await self._timed(
            "conversation_items", self.inner.conversation_items(conversation_id)
        )

    async def conversation_item_delete(self, conversation_id: str, item_id: str) -> bool:
        return await self._timed(
            "conversation_item_delete",
            self.inner.conversation_item_delete(conversation_id, item_id),
        )

    async def run_start(self, response_id: str, claim: RunClaim) -> bool:
        return await self._timed("run_start", self.inner.run_start(response_id, claim))

    async def run_state(self, response_id: str) -> RunState | None:
        return await self._timed("run_state", self.inner.run_state(response_id))

    async def run_renew(self, response_id: str, owner: str, lease_until: float) -> RunState | None:
        return await self._timed("run_renew", self.inner.run_renew(response_id, owner, lease_until))

    async def run_release(self, response_id: str) -> None:
        await self._timed("run_release", self.inner.run_release(response_id))

    async def run_cancel(self, response_id: str) -> RunState | None:
        return await self._timed("run_cancel", self.inner.run_cancel(response_id))

    async def run_end(self, response_id: str, expired_before: float | None = None) -> bool:
        return await self._timed("run_end", self.inner.run_end(response_id, expired_before))

    async def log_append(self, response_id: str, entries: list[LogEntry]) -> None:
        await self._timed("log_append", self.inner.log_append(response_id, entries))

    async def log_read(self, response_id: str, after: int = -1) -> list[LogEntry]:
        return await self._timed("log_read", self.inner.log_read(response_id, after))

    async def close(self) -> None:
        await self.inner.close()

    def __getattr__(self, name: str) -> Any:  # what a backend has besides the protocol
        return getattr(self.inner, name)
