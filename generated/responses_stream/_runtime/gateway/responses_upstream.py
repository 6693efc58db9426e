"""The request an upstream's own ``/responses`` gets when the gateway repairs its stream.

The gateway keeps the state (``store``, ``previous_response_id``, ``conversation``,
background runs, item references), so the upstream is asked statelessly: the whole
context as ``input``, ``store: false``, streamed, and none of the fields the gateway acts
on itself.  Every other field of the client's request goes as it came: the upstream says
what it does not take.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# Fields of the create body the gateway acts on for a repaired upstream.
GATEWAY_FIELDS = frozenset(
    {
        "type",
        "input",
        "stream",
        "stream_options",
        "background",
        "store",
        "previous_response_id",
        "conversation",
    }
)
# Item fields the gateway gave (ids and statuses of its own records): the upstream never
# saw them, and a server that looks ids up would refuse them.
_OURS = ("id", "status")


def responses_body(
    body: Mapping[str, Any], items: Sequence[Mapping[str, Any]], model: str
) -> dict[str, Any]:
    """The upstream's request for the checked ``body`` whose context is ``items``."""
    out = {k: v for k, v in body.items() if k not in GATEWAY_FIELDS}
    sent = [_sent(item) for item in items]
    out.update(model=model, input=[i for i in sent if i is not None], stream=True, store=False)
    return out


def _sent(item: Mapping[str, Any]) -> dict[str, Any] | None:
    """An item as the upstream gets it: without the gateway's id and status; a reasoning
    item with nothing in it (no text, nothing encrypted) is left out."""
    if item.get("type") == "reasoning" and not (
        item.get("encrypted_content") or item.get("content") or item.get("summary")
    ):
        return None
    return {k: v for k, v in item.items() if k not in _OURS}
