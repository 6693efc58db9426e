"""Responses ``input`` as a list of items, and ids for the items that lack one."""

from __future__ import annotations

import copy
import secrets
from typing import Any

ID_PREFIXES = {
    "message": "msg_",
    "function_call": "fc_",
    "function_call_output": "fco_",
    "reasoning": "rs_",
    "custom_tool_call": "ctc_",
    "custom_tool_call_output": "ctco_",
    "compaction": "cmp_",
}
DEFAULT_PREFIX = "item_"


def normalize_input(value: str | list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """A checked body's ``input`` (None, a string or a list of items) as new item dicts:
    every message has ``type: "message"`` and a list of content parts, and an item
    reference its type."""
    if value is None:
        return []
    if isinstance(value, str):
        return [text_message("user", value)]
    return [_item(item) for item in value]


def text_message(role: str, text: str) -> dict[str, Any]:
    """A message item of one text part (``output_text`` for the assistant)."""
    return {"type": "message", "role": role, "content": [_text_part(role, text)]}


def _item(value: dict[str, Any]) -> dict[str, Any]:
    item = copy.deepcopy(value)
    if item.get("type") is None:  # a message, or an item reference, may leave it out
        item["type"] = "item_reference" if "role" not in item and "id" in item else "message"
    if item["type"] == "message" and isinstance(item["content"], str):
        item["content"] = [_text_part(item["role"], item["content"])]
    return item


def _text_part(role: str, text: str) -> dict[str, Any]:
    if role == "assistant":
        return {"type": "output_text", "text": text, "annotations": []}
    return {"type": "input_text", "text": text}


# the item types whose items OpenAI's API gives a status, and the one it says when none
# was sent: what a conversation keeps
STATUS_KINDS = ("message", "function_call", "function_call_output", "custom_tool_call")


def with_status(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copies of ``items``, those of a type that has a status given ``completed`` where
    they had none."""
    out = []
    for item in items:
        item = dict(item)
        if item.get("type") in STATUS_KINDS and not item.get("status"):
            item["status"] = "completed"
        out.append(item)
    return out


def new_id(kind: str) -> str:
    """A new id for an item of type ``kind``."""
    return ID_PREFIXES.get(kind, DEFAULT_PREFIX) + secrets.token_hex(16)


def with_ids(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copies of ``items``, each with an ``id`` (a new one where it had none)."""
    out = []
    for item in items:
        if item.get("id"):
            out.append(dict(item))
        else:
            rest = {k: v for k, v in item.items() if k != "id"}
            out.append({"id": new_id(str(item.get("type"))), **rest})
    return out
