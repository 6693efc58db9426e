"""Equivalence checks: each baseline must say what ours says before it is timed."""

from __future__ import annotations

import json
from typing import Any

from responses_stream import SSEParser

CLOCK_FIELDS = frozenset({"created_at", "completed_at", "created"})
ID_FIELDS = frozenset({"id", "item_id"})


def _normalize(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in CLOCK_FIELDS:
                v = None
            elif k in ID_FIELDS and isinstance(v, str) and not v.startswith("call_"):
                prefix = v.split("_", 1)[0] if "_" in v else "id"
                v = ids.setdefault(v, f"{prefix}#{len(ids)}")
            out[k] = _normalize(v, ids)
        return out
    if isinstance(value, list):
        return [_normalize(v, ids) for v in value]
    return value


def frames(raw: bytes | list[bytes]) -> list[tuple[str | None, Any]]:
    """(event line, payload) of every SSE frame; clocks and generated ids normalized.

    Generated ids (``resp_...``, ``msg_...``; call ids come from the input and stay) are
    renamed by order of first appearance, so a random-id run compares with a counted one.
    """
    parser = SSEParser(max_line_bytes=None, max_event_bytes=None)
    data = raw if isinstance(raw, bytes) else b"".join(raw)
    ids: dict[str, str] = {}
    out: list[tuple[str | None, Any]] = []
    for m in parser.feed(data) + parser.close():
        payload = None if m.data == "[DONE]" else _normalize(json.loads(m.data), ids)
        out.append((m.event, payload))
    return out


def same(name: str, ours: list[Any], theirs: list[Any]) -> bool:
    if ours == theirs:
        return True
    for i, (a, b) in enumerate(zip(ours, theirs, strict=False)):
        if a != b:
            print(f"  {name}: frame {i} differs:\n    ours:   {a!r:.400}\n    theirs: {b!r:.400}")
            break
    else:
        print(f"  {name}: {len(ours)} frames from ours, {len(theirs)} from it")
    return False


def agents_summary(payloads: list[Any]) -> dict[str, Any]:
    """What an openai-agents stream says: reasoning, text, each call's arguments, the end.

    Its events differ in form from ours (placeholder item ids, reasoning as a summary),
    so the comparison is of the content delivered.
    """
    reasoning, text, args = [], [], {}
    calls: dict[int, str] = {}
    last = None
    for p in payloads:
        if p is None:
            continue
        kind = p["type"]
        last = kind
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            reasoning.append(p["delta"])
        elif kind == "response.output_text.delta":
            text.append(p["delta"])
        elif kind == "response.output_item.added" and p["item"]["type"] == "function_call":
            calls[p["output_index"]] = p["item"]["call_id"]
            args[p["item"]["call_id"]] = []
        elif kind == "response.function_call_arguments.delta":
            args[calls[p["output_index"]]].append(p["delta"])
    return {
        "reasoning": "".join(reasoning),
        "text": "".join(text),
        "calls": {k: "".join(v) for k, v in args.items()},
        "last": last,
    }
