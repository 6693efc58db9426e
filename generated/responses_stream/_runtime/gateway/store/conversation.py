"""How a stored conversation (``/v1/conversations``, :class:`.base.StoredConversation`)
and its items are written as bytes: the conversation's own fields as one JSON object, each
item as the JSON of that item (with its id).
"""

from __future__ import annotations

from typing import Any

from .base import StoredConversation, StoreError, decode_json, encode_json


def encode_conversation(conversation: StoredConversation) -> bytes:
    body = {
        "created_at": conversation.created_at,
        "metadata": conversation.metadata,
        "tenant": conversation.tenant,
    }
    return encode_json(body)


def decode_conversation(data: bytes, conversation_id: str) -> StoredConversation:
    body = decode_json(data, f"conversation {conversation_id!r}")
    if not (
        isinstance(body, dict)
        and isinstance(body.get("created_at"), int)
        and isinstance(body.get("metadata"), dict)
        and isinstance(body.get("tenant"), str | None)
    ):
        raise StoreError(f"the stored conversation {conversation_id!r} is malformed")
    return StoredConversation(conversation_id, body["created_at"], body["metadata"], body["tenant"])


def decode_item(data: bytes, conversation_id: str) -> dict[str, Any]:
    item = decode_json(data, f"item of conversation {conversation_id!r}")
    if not isinstance(item, dict):
        raise StoreError(f"an item of conversation {conversation_id!r} is malformed")
    return item
