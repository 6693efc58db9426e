"""The in-memory backend: dicts of this process, lost when it ends (tests, and
``store: false`` only use)."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from .base import (
    LogEntry,
    RunClaim,
    RunState,
    StoredConversation,
    StoredResponse,
    decode_record,
    encode_json,
    encode_record,
    new_secret,
)
from .conversation import (
    decode_conversation,
    decode_item,
    encode_conversation,
)


class MemoryStore:
    """Records in dicts of this process: lost when it ends (tests, ``store: false`` only)."""

    url = "memory:"

    def __init__(self) -> None:
        self._records: dict[str, bytes] = {}  # encoded, so callers cannot mutate them
        self._items: dict[tuple[str, str], str] = {}  # (tenant, item id) -> response id
        self._secret = new_secret()
        self._runs: dict[str, RunState] = {}
        self._logs: dict[str, list[LogEntry]] = {}
        self._run_expiry: dict[str, float] = {}
        self._run_tenants: dict[str, str] = {}
        self._conversations: dict[str, bytes] = {}
        self._conversation_items: dict[str, list[bytes]] = {}

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

    async def conversation_put(self, conversation: StoredConversation) -> None:
        self._conversations[conversation.id] = encode_conversation(conversation)
        self._conversation_items.setdefault(conversation.id, [])

    async def conversation_get(self, conversation_id: str) -> StoredConversation | None:
        data = self._conversations.get(conversation_id)
        return None if data is None else decode_conversation(data, conversation_id)

    async def conversation_delete(self, conversation_id: str) -> bool:
        self._conversation_items.pop(conversation_id, None)
        return self._conversations.pop(conversation_id, None) is not None

    async def conversation_append(self, conversation_id: str, items: list[dict[str, Any]]) -> None:
        encoded = [encode_json(item) for item in items]
        self._conversation_items.setdefault(conversation_id, []).extend(encoded)

    async def conversation_items(self, conversation_id: str) -> list[dict[str, Any]]:
        kept = self._conversation_items.get(conversation_id, [])
        return [decode_item(data, conversation_id) for data in kept]

    async def conversation_item_delete(self, conversation_id: str, item_id: str) -> bool:
        kept = self._conversation_items.get(conversation_id, [])
        for n, data in enumerate(kept):
            if decode_item(data, conversation_id).get("id") == item_id:
                del kept[n]
                return True
        return False

    async def close(self) -> None:
        """Nothing to release; the records stay until the process ends."""
