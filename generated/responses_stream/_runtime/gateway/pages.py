"""The list pages of the API's list routes (a response's input items, a conversation's
items): ``limit`` (1 to 100, 20 by default), ``order`` (``desc``, the newest first, by
default, or ``asc``) and ``after`` (an item id), answered as a list object with
``first_id``, ``last_id`` and ``has_more``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .errors import bad_request


def list_object(items: list[dict[str, Any]], most: int) -> dict[str, Any]:
    """The list object of the first ``most`` of ``items``."""
    shown = items[:most]
    return {
        "object": "list",
        "data": shown,
        "first_id": shown[0].get("id") if shown else None,
        "last_id": shown[-1].get("id") if shown else None,
        "has_more": len(items) > most,
    }


def page(
    items: list[dict[str, Any]], query: Mapping[str, str], unknown: Callable[[str], str]
) -> dict[str, Any]:
    """The page of ``items`` (oldest first) that ``query`` asks for; a 400 naming the
    parameter for a bad ``limit`` or ``order``, and for an ``after`` that is none of
    their ids (said by ``unknown(after)``)."""
    limit = query.get("limit")
    if limit is None:
        most = 20
    elif limit.isdigit() and 1 <= int(limit) <= 100:
        most = int(limit)
    else:
        raise bad_request("'limit' must be an integer from 1 to 100", "limit")
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise bad_request("'order' must be 'asc' or 'desc'", "order")
    ordered = items if order == "asc" else items[::-1]
    after = query.get("after")
    if after is not None:
        ids = [item.get("id") for item in ordered]
        if after not in ids:
            raise bad_request(unknown(after), "after")
        ordered = ordered[ids.index(after) + 1 :]
    return list_object(ordered, most)
