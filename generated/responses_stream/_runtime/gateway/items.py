"""Responses ``input`` as a list of items, ids for the items that lack one, and the
value checks both request translations share (each a 400 naming the field)."""

from __future__ import annotations

import copy
import secrets
from collections.abc import Collection, Mapping
from typing import Any

from .errors import GatewayError, bad_request, unknown_parameter, unsupported

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
DEFAULT_PREFIX = "item_"


def normalize_input(value: Any, param: str = "input") -> list[dict[str, Any]]:
    """``input`` (None, a string or a list of items) as new item dicts: every message
    has ``type: "message"`` and a list of content parts; a bad shape is a 400 naming it."""
    if value is None:
        return []
    if isinstance(value, str):
        return [text_message("user", value)]
    if not isinstance(value, list):
        raise bad_request(f"{param!r} must be a string or an array of items", param)
    return [_item(item, f"{param}[{i}]") for i, item in enumerate(value)]


def text_message(role: str, text: str) -> dict[str, Any]:
    """A message item of one text part (``output_text`` for the assistant)."""
    return {"type": "message", "role": role, "content": [_text_part(role, text)]}


def _item(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise bad_request(f"{where!r} must be an object", where)
    item = copy.deepcopy(dict(value))
    if item.get("type") is None:  # an item reference may leave its type out
        item["type"] = "item_reference" if "role" not in item and "id" in item else "message"
    kind = item["type"]
    if kind == "message":
        _normalize_message(item, where)
    elif not isinstance(kind, str) or not kind:
        raise bad_request(f"'{where}.type' must be a non-empty string", f"{where}.type")
    return item


def _text_part(role: str, text: str) -> dict[str, Any]:
    if role == "assistant":
        return {"type": "output_text", "text": text, "annotations": []}
    return {"type": "input_text", "text": text}


def _normalize_message(item: dict[str, Any], where: str) -> None:
    role = item.get("role")
    if role not in ROLES:
        raise bad_request(f"'{where}.role' must be one of {', '.join(ROLES)}", f"{where}.role")
    content = item.get("content")
    if isinstance(content, str):
        item["content"] = [_text_part(role, content)]
        return
    if not isinstance(content, list):
        raise bad_request(
            f"'{where}.content' must be a string or an array of parts", f"{where}.content"
        )
    for j, part in enumerate(content):
        if not isinstance(part, Mapping):
            at = f"{where}.content[{j}]"
            raise bad_request(f"{at!r} must be an object", at)


def with_ids(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copies of ``items``, each with an ``id`` (a new one where it had none)."""
    out = []
    for item in items:
        if item.get("id"):
            out.append(dict(item))
        else:
            prefix = ID_PREFIXES.get(str(item.get("type")), DEFAULT_PREFIX)
            rest = {k: v for k, v in item.items() if k != "id"}
            out.append({"id": prefix + secrets.token_hex(16), **rest})
    return out


# -- value checks -----------------------------------------------------------------------
def require_model(value: Any) -> str:
    """``model``: required, a non-empty string."""
    if value is None:
        raise GatewayError(
            400, "'model' is required", code="missing_required_parameter", param="model"
        )
    return as_name(value, "model")


def as_string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise bad_request(f"{where!r} must be a string", where)
    return value


def as_name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise bad_request(f"{where!r} must be a non-empty string", where)
    return value


def as_number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad_request(f"{where!r} must be a number", where)
    return value


def as_boolean(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise bad_request(f"{where!r} must be a boolean", where)
    return value


def as_count(value: Any, where: str, least: int = 1) -> int:
    """An integer of at least ``least``."""
    if type(value) is not int or value < least:
        raise bad_request(f"{where!r} must be an integer of at least {least}", where)
    return value


def as_object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise bad_request(f"{where!r} must be an object", where)
    return value


def as_objects(value: Any, where: str) -> list[Mapping[str, Any]]:
    """An array of objects."""
    if not isinstance(value, list):
        raise bad_request(f"{where!r} must be an array", where)
    return [as_object(entry, f"{where}[{i}]") for i, entry in enumerate(value)]


def as_metadata(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise bad_request(f"{where!r} must be an object of strings", where)
    return dict(value)


def check_keys(
    obj: Mapping[str, Any],
    allowed: Collection[str],
    where: str,
    refused: Mapping[str, str] | None = None,
) -> None:
    """A 400 for a key of ``obj`` outside ``allowed``: a ``refused`` one (key -> why)
    only when set (not null or false), any other as an unknown parameter."""
    for key, value in obj.items():
        if key in allowed:
            continue
        if refused is not None and key in refused:
            if value is None or value is False:
                continue
            raise unsupported(f"{where}.{key}", refused[key])
        raise unknown_parameter(f"{where}.{key}")
