"""``item_reference`` input items, resolved to the items they name.

A reference (``{"type": "item_reference", "id": ...}``, or ``{"id": ...}`` alone, as the
API allows) stands for an item of a response this gateway stored: an input or output
item of any stored record (:meth:`Store.find_item`), or of a response the WebSocket
connection keeps.  It is replaced in place by a copy of that item; an id found nowhere
is a 400 naming the input index.
"""

from __future__ import annotations

import copy
from typing import Any

from .context import ConnectionCache
from .errors import GatewayError
from .items import normalize_input, with_ids
from .store import Store
from .tenancy import Caller

REFERENCE = "item_reference"


async def resolve_references(
    store: Store,
    items: list[dict[str, Any]],
    *,
    caller: Caller,
    cache: ConnectionCache | None = None,
) -> list[dict[str, Any]]:
    """``items`` with each reference replaced by the item it names (an item of a record
    ``caller`` may see)."""
    if not any(item.get("type") == REFERENCE for item in items):
        return items
    out = []
    for i, item in enumerate(items):
        if item.get("type") != REFERENCE:
            out.append(item)
            continue
        where = f"input[{i}]"
        item_id = item["id"]
        found = cache.find_item(item_id) if cache is not None else None
        for tenant in caller.item_tenants if found is None else ():
            record = await store.find_item(item_id, tenant)
            if record is not None and caller.sees(record):
                found = record.item(item_id)
            if found is not None:
                break
        if found is None:
            raise GatewayError(
                400,
                f"Item with id {item_id!r} not found: an item_reference names an item of a"
                " stored response (one created with store not false), or of a response"
                " kept by this WebSocket connection.",
                code="item_not_found",
                param=where,
            )
        out.append(copy.deepcopy(found))
    return out


async def input_items(
    store: Store,
    value: str | list[dict[str, Any]] | None,
    *,
    caller: Caller,
    cache: ConnectionCache | None = None,
) -> list[dict[str, Any]]:
    """A checked ``input`` as the items a turn (or a conversation) keeps: each a whole
    item (see :func:`.items.normalize_input`), a reference replaced by the item it names,
    each with an id."""
    items = normalize_input(value)
    return with_ids(await resolve_references(store, items, caller=caller, cache=cache))
