"""What a turn continues from: ``previous_response_id`` resolved to items, or the
conversation it is made in (``conversation``), whose items it reads.

The context of a response is, in order, its own context's items, its input and its
output (the Open Responses rule: ``previous_response.input`` +
``previous_response.output`` + ``input``).  It comes from the WebSocket connection's
own cache when the response is there (``store: false`` ones live only there), else
from the store, walking the chain of ``previous_response_id`` links.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from .errors import GatewayError
from .store import Store, StoredConversation
from .tenancy import Caller


class ConnectionCache:
    """The last few responses of one WebSocket connection, as full contexts."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()

    def get(self, response_id: str) -> list[dict[str, Any]] | None:
        items = self._items.get(response_id)
        if items is not None:
            self._items.move_to_end(response_id)
        return items

    def put(self, response_id: str, items: list[dict[str, Any]]) -> None:
        self._items[response_id] = items
        self._items.move_to_end(response_id)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def find_item(self, item_id: str) -> dict[str, Any] | None:
        """The item with ``item_id`` in a kept context, the most recent one first."""
        for items in reversed(self._items.values()):
            for item in reversed(items):
                if item.get("id") == item_id:
                    found: dict[str, Any] = item
                    return found
        return None

    def evict(self, response_id: str) -> None:
        self._items.pop(response_id, None)


def not_found(response_id: str, status: int) -> GatewayError:
    return GatewayError(
        status,
        f"Previous response with id {response_id!r} not found.",
        code="previous_response_not_found",
        param="previous_response_id",
        error_type="invalid_request_error",
    )


async def load_context(
    store: Store,
    response_id: str,
    *,
    caller: Caller,
    cache: ConnectionCache | None = None,
    max_chain: int = 1000,
    status: int = 404,
) -> list[dict[str, Any]]:
    """The items a continuation of ``response_id`` starts from (a fresh list); a record
    ``caller`` may not see is one that does not exist."""
    if not isinstance(response_id, str) or not response_id:
        raise GatewayError(
            400, "'previous_response_id' must be a non-empty string", param="previous_response_id"
        )
    if cache is not None and (items := cache.get(response_id)) is not None:
        return list(items)
    chain: list[list[dict[str, Any]]] = []
    current: str | None = response_id
    while current is not None:
        if cache is not None and (items := cache.get(current)) is not None:
            chain.append(list(items))
            break
        record = await store.get(current)
        if record is None or not caller.sees(record):
            raise not_found(response_id, status)
        output = record.response.get("output")
        chain.append([*record.input_items, *(output if isinstance(output, list) else [])])
        current = record.previous_response_id
        if len(chain) > max_chain:
            raise GatewayError(
                400,
                f"the conversation of {response_id!r} is longer than {max_chain} responses",
                code="conversation_too_long",
                param="previous_response_id",
            )
    return [item for items in reversed(chain) for item in items]


def conversation_not_found(conversation_id: str, param: str) -> GatewayError:
    return GatewayError(
        404, f"Conversation with id '{conversation_id}' not found.", code="not_found", param=param
    )


async def find_conversation(
    store: Store, conversation_id: str, caller: Caller, param: str = "conversation_id"
) -> StoredConversation:
    """The caller's conversation ``conversation_id``; another tenant's is not found."""
    conversation = await store.conversation_get(conversation_id)
    if conversation is None or not caller.sees(conversation):
        raise conversation_not_found(conversation_id, param)
    return conversation


def conversation_id(value: Any) -> str | None:
    """The id a create body's ``conversation`` names (an id, or ``{"id": ...}``)."""
    if value is None:
        return None
    found = value.get("id") if isinstance(value, dict) else value
    if not isinstance(found, str) or not found:
        raise GatewayError(
            400,
            "'conversation' must be a conversation id or an object with its 'id'",
            code="invalid_value",
            param="conversation",
        )
    return found
