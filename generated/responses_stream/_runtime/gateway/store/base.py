"""Stored responses: the record and the :class:`Store` interface every backend has.

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
from dataclasses import dataclass
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
class StoredConversation:
    """A conversation (``/v1/conversations``): its id, when it was made, its metadata and
    whose it is; its items are kept apart, in the order they were added (see
    :class:`Store`)."""

    id: str
    created_at: int
    metadata: dict[str, str]
    tenant: str | None = None

    def resource(self) -> dict[str, Any]:
        """The conversation as the API answers it."""
        return {
            "id": self.id,
            "object": "conversation",
            "created_at": self.created_at,
            "metadata": self.metadata,
        }


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

    # -- conversations: each its own fields and its items, in the order they were added ----
    async def conversation_put(self, conversation: StoredConversation) -> None:
        """Insert ``conversation``, or replace its fields (its items stay)."""

    async def conversation_get(self, conversation_id: str) -> StoredConversation | None:
        """The conversation ``conversation_id``, None when there is none."""

    async def conversation_delete(self, conversation_id: str) -> bool:
        """Remove the conversation and its items; True when it existed."""

    async def conversation_append(self, conversation_id: str, items: list[dict[str, Any]]) -> None:
        """Add ``items`` after the conversation's, in order, in one step: appends made at
        once by two responses both land, each whole."""

    async def conversation_items(self, conversation_id: str) -> list[dict[str, Any]]:
        """The conversation's items, in the order they were added."""

    async def conversation_item_delete(self, conversation_id: str, item_id: str) -> bool:
        """Remove the item ``item_id`` from the conversation; True when it was there."""


def encode_record(record: StoredResponse) -> bytes:
    """``record`` as JSON bytes (ASCII-escaped when it holds lone surrogates)."""
    body = {
        "format": RECORD_FORMAT,
        "tenant": record.tenant,
        "response": record.response,
        "input_items": record.input_items,
    }
    return encode_json(body)


def encode_json(value: Any) -> bytes:
    """``value`` as JSON bytes (ASCII-escaped when it holds lone surrogates)."""
    try:
        return msgspec.json.encode(value)
    except (UnicodeEncodeError, msgspec.EncodeError):
        return json.dumps(value, ensure_ascii=True).encode("ascii")


def decode_json(data: bytes, what: str) -> Any:
    """What :func:`encode_json` wrote; StoreError naming ``what`` when it is not JSON."""
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError:
        try:
            return json.loads(data)
        except ValueError:
            raise StoreError(f"the stored {what} is not JSON") from None


def decode_record(data: bytes, response_id: str) -> StoredResponse:
    """The record ``encode_record`` wrote; StoreError when ``data`` is not one."""
    body = decode_json(data, f"record of {response_id!r}")
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
