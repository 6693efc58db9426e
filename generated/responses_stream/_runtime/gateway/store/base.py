"""Stored responses: the record, the :class:`Store` interface every backend has,
and the in-memory backend.

A record is JSON: ``{"format": 2, "tenant": ..., "response": {...}, "input_items": [...]}``;
``format`` lets a later version read and migrate what an earlier one wrote (a format-1
record, from before tenancy, reads with no tenant).  ``tenant`` is who may see it
(see ``..tenancy``): the store keeps it, and a secret tenants are derived with
(:meth:`Store.tenant_secret`), but never a credential.  Every backend also
indexes the ids of a record's items (its input items and output items), so that an
``item_reference`` finds the record holding the item (:meth:`Store.find_item`).
This module imports no backend; :func:`..store.open_store` picks one.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass, replace
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

import msgspec

from ...core.errors import BadValue, ResponsesStreamError

RECORD_FORMAT = 2  # 2: the record has its tenant; 1 (before tenancy): it has none
READ_FORMATS = (1, 2)
SECRET_BYTES = 32


class StoreError(ResponsesStreamError):
    """A backend failed (disk full, Redis down...); the message never shows a password."""


class StoreUnavailable(StoreError):
    """The backend could not be reached, or did not take a write (it may come back)."""


@dataclass(frozen=True)
class StoredResponse:
    """A finished response as sent to the client, and the input items of its own turn."""

    response: dict[str, Any]
    input_items: list[dict[str, Any]]
    tenant: str | None = None  # None: a record from before tenancy

    @property
    def id(self) -> str:
        value = self.response.get("id")
        if not isinstance(value, str) or not value:
            raise BadValue("a stored response needs a non-empty string 'id'")
        return value

    @property
    def previous_response_id(self) -> str | None:
        value = self.response.get("previous_response_id")
        return value if isinstance(value, str) else None

    def items(self) -> list[dict[str, Any]]:
        """Its input items, then its output items."""
        output = self.response.get("output")
        return [*self.input_items, *(output if isinstance(output, list) else [])]

    def item_ids(self) -> list[str]:
        """The ids of :meth:`items` (each once, those that have one)."""
        ids = (item.get("id") for item in self.items() if isinstance(item, dict))
        return list(dict.fromkeys(i for i in ids if isinstance(i, str) and i))

    def item(self, item_id: str) -> dict[str, Any] | None:
        """The item with ``item_id``; the output's when both have it."""
        for item in reversed(self.items()):
            if isinstance(item, dict) and item.get("id") == item_id:
                return item
        return None


@dataclass(frozen=True)
class RunState:
    """A background response's run as the store keeps it, for every replica to read:
    which replica runs it and until when it holds it (the lease, renewed while it runs),
    whether a client asked to cancel it, and whether it ended."""

    owner: str
    lease_until: float  # Unix time
    cancel: bool = False
    ended: bool = False
    dialect: str = "openai"  # the dialect its events are logged in


@dataclass(frozen=True)
class RunClaim:
    """What a replica asks for as it starts a background run: that ``owner`` runs it for
    ``tenant`` until ``lease_until``, its events logged in ``dialect``, its state and log
    kept ``ttl`` seconds; with ``limit``, only while ``tenant`` has fewer runs going."""

    owner: str
    lease_until: float  # Unix time
    ttl: int
    dialect: str = "openai"
    tenant: str | None = None
    limit: int | None = None


LogEntry = tuple[int, bytes]  # an event's sequence number, and its SSE frame


class Store(Protocol):
    """Where responses are kept; async, shared by the concurrent requests of one process."""

    url: str  # for logs: never shows a password

    async def put(self, record: StoredResponse) -> None:
        """Insert or replace ``record``; returns once the backend has it."""

    async def get(self, response_id: str) -> StoredResponse | None:
        """The record of ``response_id``, None when there is none."""

    async def find_item(self, item_id: str, tenant: str | None = None) -> StoredResponse | None:
        """The record of ``tenant`` holding the item ``item_id`` (the latest put), None
        when none does."""

    async def tenant_secret(self) -> bytes:
        """The secret tenants are derived with: made once, kept by the store for good."""

    async def delete(self, response_id: str) -> bool:
        """Remove ``response_id``'s record (and its items' index entries); True when it
        existed."""

    async def close(self) -> None:
        """Release the backend (files, connections)."""

    # -- background runs: their state and their event log, both kept ``ttl`` seconds ------
    async def run_start(self, response_id: str, claim: RunClaim) -> bool:
        """Record the run of ``response_id`` as ``claim`` says (runs older than their ttl
        are dropped).  False, and nothing recorded, when the claim's tenant already has
        ``limit`` runs going (not ended, their lease held) on any replica: the check and
        the start are one step, so racing replicas cannot pass the limit together."""

    async def run_state(self, response_id: str) -> RunState | None:
        """The run of ``response_id``, None when there is none (or no longer)."""

    async def run_renew(self, response_id: str, owner: str, lease_until: float) -> RunState | None:
        """Extend ``owner``'s lease (not once the run ended or another owns it); the state
        after, so that the runner learns of a cancel as it renews."""

    async def run_release(self, response_id: str) -> None:
        """The run no longer counts against its tenant's limit (its final Response is
        kept: the client may start the next at once)."""

    async def run_cancel(self, response_id: str) -> RunState | None:
        """Ask for the run to be cancelled (nothing once it ended); the state after."""

    async def run_end(self, response_id: str, expired_before: float | None = None) -> bool:
        """Mark the run ended; True for the one call that did.  With ``expired_before``,
        only a run whose lease ran out before that time (its replica died)."""

    async def log_append(self, response_id: str, entries: list[LogEntry]) -> None:
        """Append events, in order, to the run's log."""

    async def log_read(self, response_id: str, after: int = -1) -> list[LogEntry]:
        """The logged events numbered above ``after``, in order."""


def encode_record(record: StoredResponse) -> bytes:
    """``record`` as JSON bytes (ASCII-escaped when it holds lone surrogates)."""
    body = {
        "format": RECORD_FORMAT,
        "tenant": record.tenant,
        "response": record.response,
        "input_items": record.input_items,
    }
    try:
        return msgspec.json.encode(body)
    except (UnicodeEncodeError, msgspec.EncodeError):
        return json.dumps(body, ensure_ascii=True).encode("ascii")


def decode_record(data: bytes, response_id: str) -> StoredResponse:
    """The record ``encode_record`` wrote; StoreError when ``data`` is not one."""
    try:
        body = msgspec.json.decode(data)
    except msgspec.DecodeError:
        try:
            body = json.loads(data)
        except ValueError:
            raise StoreError(f"the stored record of {response_id!r} is not JSON") from None
    if not isinstance(body, dict) or body.get("format") not in READ_FORMATS:
        found = body.get("format") if isinstance(body, dict) else None
        raise StoreError(f"the stored record of {response_id!r} has unknown format {found!r}")
    response, items = body.get("response"), body.get("input_items")
    if not isinstance(response, dict) or not isinstance(items, list):
        raise StoreError(f"the stored record of {response_id!r} is malformed")
    tenant = body.get("tenant") if body.get("format") == RECORD_FORMAT else None
    if tenant is not None and not isinstance(tenant, str):
        raise StoreError(f"the stored record of {response_id!r} has a malformed tenant")
    return StoredResponse(response=response, input_items=items, tenant=tenant)


def new_secret() -> bytes:
    """A fresh secret for deriving tenants."""
    return secrets.token_bytes(SECRET_BYTES)


def hide_password(url: str) -> str:
    """``url`` with the password of its user part shown as ``***``."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        password = None
        parts = None
    if parts is None or password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    netloc = f"{parts.username or ''}:***@{host}"
    return urlunsplit(parts._replace(netloc=netloc))


class MemoryStore:
    """Records in a dict of this process: lost when it ends (tests, ``store: false`` only)."""

    url = "memory:"

    def __init__(self) -> None:
        self._records: dict[str, bytes] = {}  # encoded, so callers cannot mutate them
        self._items: dict[tuple[str, str], str] = {}  # (tenant, item id) -> response id
        self._secret = new_secret()
        self._runs: dict[str, RunState] = {}
        self._logs: dict[str, list[LogEntry]] = {}
        self._run_expiry: dict[str, float] = {}
        self._run_tenants: dict[str, str] = {}

    async def put(self, record: StoredResponse) -> None:
        self._records[record.id] = encode_record(record)
        for item_id in record.item_ids():
            self._items[record.tenant or "", item_id] = record.id

    async def get(self, response_id: str) -> StoredResponse | None:
        data = self._records.get(response_id)
        return None if data is None else decode_record(data, response_id)

    async def find_item(self, item_id: str, tenant: str | None = None) -> StoredResponse | None:
        response_id = self._items.get((tenant or "", item_id))
        return None if response_id is None else await self.get(response_id)

    async def tenant_secret(self) -> bytes:
        return self._secret

    async def delete(self, response_id: str) -> bool:
        data = self._records.pop(response_id, None)
        if data is None:
            return False
        record = decode_record(data, response_id)
        for item_id in record.item_ids():
            key = (record.tenant or "", item_id)
            if self._items.get(key) == response_id:
                del self._items[key]
        return True

    async def run_start(self, response_id: str, claim: RunClaim) -> bool:
        now = time.time()
        for gone in [k for k, expires in self._run_expiry.items() if expires < now]:
            self._runs.pop(gone, None)
            self._logs.pop(gone, None)
            self._run_tenants.pop(gone, None)
            del self._run_expiry[gone]
        tenant = claim.tenant or ""
        if claim.limit is not None:
            going = [
                run
                for rid, run in self._runs.items()
                if self._run_tenants.get(rid) == tenant and not run.ended and run.lease_until >= now
            ]
            if len(going) >= claim.limit:
                return False
        self._runs[response_id] = RunState(claim.owner, claim.lease_until, dialect=claim.dialect)
        self._run_tenants[response_id] = tenant
        self._logs[response_id] = []
        self._run_expiry[response_id] = now + claim.ttl
        return True

    async def run_state(self, response_id: str) -> RunState | None:
        return self._runs.get(response_id) if self._live(response_id) else None

    def _live(self, response_id: str) -> bool:
        return self._run_expiry.get(response_id, 0.0) >= time.time()

    async def run_renew(self, response_id: str, owner: str, lease_until: float) -> RunState | None:
        run = self._runs.get(response_id)
        if run is not None and run.owner == owner and not run.ended:
            run = self._runs[response_id] = replace(run, lease_until=lease_until)
        return run

    async def run_release(self, response_id: str) -> None:
        self._run_tenants.pop(response_id, None)

    async def run_cancel(self, response_id: str) -> RunState | None:
        run = self._runs.get(response_id)
        if run is not None and not run.ended:
            run = self._runs[response_id] = replace(run, cancel=True)
        return run

    async def run_end(self, response_id: str, expired_before: float | None = None) -> bool:
        run = self._runs.get(response_id)
        if run is None or run.ended:
            return False
        if expired_before is not None and run.lease_until >= expired_before:
            return False
        self._runs[response_id] = replace(run, ended=True)
        return True

    async def log_append(self, response_id: str, entries: list[LogEntry]) -> None:
        self._logs.setdefault(response_id, []).extend(entries)

    async def log_read(self, response_id: str, after: int = -1) -> list[LogEntry]:
        if not self._live(response_id):
            return []
        return [e for e in self._logs.get(response_id, []) if e[0] > after]

    async def close(self) -> None:
        """Nothing to release; the records stay until the process ends."""
