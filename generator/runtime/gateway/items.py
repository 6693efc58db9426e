"""Responses ``input`` as a list of items, and ids for the items that lack one."""

from __future__ import annotations

import copy
import secrets
from collections.abc import Mapping
from typing import Any

from .errors import bad_request

ROLES = ("user", "system", "developer", "assistant")
ID_PREFIXES = {
    "message": "msg_",
    "function_call": "fc_",
    "function_call_output": "fco_",
    "reasoning": "rs_",
    "custom_tool_call": "ctc_",
    "custom_tool_call_output": "ctco_",
    "compaction": "cmp_",
}


def normalize_input(value: Any, param: str = "input") -> list[dict[str, Any]]:
    """``input`` (None, a string or a list of items) as fresh item dicts, message
    content always a list of parts."""
    if value is None:
        return []
    if isinstance(value, str):
        return [_message("user", value)]
    if not isinstance(value, list):
        raise bad_request(f"{param!r} must be a string or an array of items", param)
    out = []
    for i, item in enumerate(value):
        where = f"{param}[{i}]"
        if not isinstance(item, Mapping):
            raise bad_request(f"{where!r} must be an object", where)
        item = copy.deepcopy(dict(item))
        if item.get("type", "message") == "message":
            item["type"] = "message"
            _check_message(item, where)
        elif not isinstance(item.get("type"), str):
            raise bad_request(f"'{where}.type' must be a string", f"{where}.type")
        out.append(item)
    return out


def _message(role: str, text: str) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": [_text_part(role, text)]}


def _text_part(role: str, text: str) -> dict[str, Any]:
    if role == "assistant":
        return {"type": "output_text", "text": text, "annotations": []}
    return {"type": "input_text", "text": text}


def _check_message(item: dict[str, Any], where: str) -> None:
    role = item.get("role")
    if role not in ROLES:
        raise bad_request(f"'{where}.role' must be one of {', '.join(ROLES)}", f"{where}.role")
    content = item.get("content")
    if isinstance(content, str):
        item["content"] = [_text_part(role, content)]
    elif not isinstance(content, list) or not all(isinstance(p, Mapping) for p in content):
        raise bad_request(
            f"'{where}.content' must be a string or an array of parts", f"{where}.content"
        )


def with_ids(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copies of ``items``, each with an ``id`` (a new one where it had none)."""
    out = []
    for item in items:
        if not item.get("id"):
            prefix = ID_PREFIXES.get(str(item.get("type")), "item_")
            item = {"id": prefix + secrets.token_hex(16), **item}
        out.append(item)
    return out
