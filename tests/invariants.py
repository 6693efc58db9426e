"""Invariants every processed Responses event stream must satisfy.

Written from the protocol, not from the processor: ``check_stream`` takes the
JSON payloads of one stream, in order, and asserts the envelope, item and part
bookkeeping, id conventions, text accumulation and per-event validity.
"""

from __future__ import annotations

from typing import Any

from _support import validate_openai, validate_openresponses

from responses_stream import DIALECTS, validate_payloads

TERMINALS = {
    "response.completed": "completed",
    "response.incomplete": "incomplete",
    "response.failed": "failed",
}
ENVELOPE = {"response.created", "response.in_progress", *TERMINALS}

ID_PREFIXES = {
    "message": "msg_",
    "reasoning": "rs_",
    "function_call": "fc_",
    "custom_tool_call": "ctc_",
    "mcp_call": "mcp_",
    "mcp_list_tools": "mcpl_",
    "code_interpreter_call": "ci_",
    "web_search_call": "ws_",
    "file_search_call": "fs_",
    "image_generation_call": "ig_",
}

# text event family (type without .delta/.done) -> the done event's text field;
# part texts are addressed by content_index, summary texts by summary_index
PART_TEXT = {
    "response.output_text": "text",
    "response.refusal": "refusal",
    "response.reasoning_text": "text",  # openai
    "response.reasoning": "text",  # openresponses' name for reasoning_text
}
SUMMARY_TEXT = {"response.reasoning_summary_text": "text"}
ITEM_TEXT = {
    "response.function_call_arguments": "arguments",
    "response.custom_tool_call_input": "input",
    "response.mcp_call_arguments": "arguments",
    "response.code_interpreter_call_code": "code",
}
# reasoning text events that must not appear in a dialect
FOREIGN = {"openai": "response.reasoning", "openresponses": "response.reasoning_text"}
USAGE_FIELDS = {
    "input_tokens": (),
    "output_tokens": (),
    "total_tokens": (),
    "input_tokens_details": ("cached_tokens",),
    "output_tokens_details": ("reasoning_tokens",),
}


def unslug(kind: str) -> str:
    """A type without its extension prefix (``openai:web_search_call`` -> ``web_search_call``)."""
    return kind.split(":", 1)[1] if ":" in kind else kind


def _family(kind: str) -> tuple[str, str] | None:
    """(family, "delta" | "done") for a text delta/done event type."""
    head, _, tail = kind.rpartition(".")
    if tail in ("delta", "done") and (
        head in PART_TEXT or head in SUMMARY_TEXT or head in ITEM_TEXT
    ):
        return head, tail
    return None


def _part_text(part: dict[str, Any]) -> str:
    return str(part["refusal"] if part.get("type") == "refusal" else part.get("text", ""))


class _Item:
    def __init__(self, item: dict[str, Any], output_index: int) -> None:
        self.added = item
        self.id: str = item["id"]
        self.output_index = output_index
        self.parts: dict[str, list[dict[str, Any] | None]] = {"content": [], "summary": []}
        self.text: dict[tuple[str, int], list[str]] = {}  # (slot, index) -> deltas
        self.text_done: dict[tuple[str, int], str] = {}
        self.acc: dict[str, list[str]] = {}  # item-level family -> deltas
        self.acc_done: dict[str, str] = {}


def _id(item: _Item | None) -> str | None:
    return item.id if item is not None else None


def _check_validity(payloads: list[dict[str, Any]], dialect: str) -> None:
    d = DIALECTS[dialect]
    for p in payloads:
        if dialect == "openai":
            validate_openai(p)
        else:
            problems = validate_openresponses(p, d)
            assert problems == [], (p["type"], problems)


def _check_usage(usage: Any) -> None:
    assert isinstance(usage, dict), f"terminal response has no usage: {usage!r}"
    for key, details in USAGE_FIELDS.items():
        value = usage.get(key)
        if details:
            assert isinstance(value, dict), f"usage.{key} missing"
            for sub in details:
                n = value.get(sub)
                assert isinstance(n, int) and n >= 0, f"usage.{key}.{sub} = {n!r}"
        else:
            assert isinstance(value, int) and value >= 0, f"usage.{key} = {value!r}"


def check_stream(payloads: list[dict[str, Any]], dialect: str, *, validate: bool = True) -> None:
    """Assert every stream invariant on the decoded payloads of one stream.

    ``validate=False`` skips the per-event schema validation (the slow part).
    """
    assert dialect in DIALECTS, dialect
    errors = [str(v) for v in validate_payloads(payloads, dialect) if v.severity == "error"]
    assert errors == [], errors
    n = len(payloads)
    assert n >= 3, f"stream too short: {[p['type'] for p in payloads]}"
    types = [p["type"] for p in payloads]

    # -- envelope -----------------------------------------------------------
    assert types[0] == "response.created", types[:2]
    assert types[1] == "response.in_progress", types[:2]
    terminals = [i for i, t in enumerate(types) if t in TERMINALS]
    assert terminals == [n - 1], f"terminal events at {terminals}, stream of {n}: {types}"
    assert types.count("response.created") == 1 and types.count("response.in_progress") == 1
    errors = [i for i, t in enumerate(types) if t == "error"]
    if errors:
        assert types[-1] == "response.failed", "error event in a stream that did not fail"
        if dialect == "openai":
            assert errors == [n - 2], f"error at {errors}, not right before response.failed"
    numbers = [p.get("sequence_number") for p in payloads]
    assert numbers == list(range(n)), f"sequence numbers {numbers}"

    response_id = payloads[0]["response"]["id"]
    assert isinstance(response_id, str) and response_id.startswith("resp_"), response_id
    for p in payloads:
        if p["type"] in ENVELOPE:
            assert p["response"]["id"] == response_id, "response id changed"
    for p in payloads[:2]:
        assert p["response"]["status"] == "in_progress"
        assert p["response"]["output"] == []

    # -- items and parts ----------------------------------------------------
    foreign = FOREIGN[dialect]
    items: list[_Item] = []
    done_items: list[dict[str, Any]] = []
    seen_ids: set[str] = set()
    current: _Item | None = None
    for p in payloads[2:-1]:
        kind = p["type"]
        if kind == "error":
            assert current is None, f"error while {_id(current)} is open"
            continue
        assert kind not in ENVELOPE, f"{kind} in the middle of the stream"
        base = unslug(kind)
        fam = _family(base)
        assert fam is None or fam[0] != foreign, f"{kind} is not a {dialect} event"

        if base == "response.output_item.added":
            assert current is None, f"{p['item']['id']} added while {_id(current)} is open"
            item = p["item"]
            item_type = unslug(item["type"])
            assert p["output_index"] == len(items), "output_index not dense"
            prefix = ID_PREFIXES.get(item_type)
            assert prefix is not None, f"unexpected item type {item['type']}"
            assert isinstance(item.get("id"), str) and item["id"].startswith(prefix), (
                f"{item_type} id {item.get('id')!r} without the prefix {prefix}"
            )
            assert item["id"] not in seen_ids, f"duplicate item id {item['id']}"
            assert item.get("status", "in_progress") == "in_progress", item
            seen_ids.add(item["id"])
            current = _Item(item, p["output_index"])
            items.append(current)
            continue

        assert current is not None, f"{kind} outside any item"
        assert p.get("output_index") == current.output_index, (kind, p.get("output_index"))
        if base == "response.output_item.done":
            item = p["item"]
            assert item["id"] == current.id and item["type"] == current.added["type"], item
            assert item.get("status") in (None, "completed", "incomplete", "failed"), item
            for slot, parts in current.parts.items():
                assert None not in parts, f"{current.id}: {slot} part not done before the item"
                if parts or isinstance(item.get(slot), list):
                    assert item.get(slot) == parts, f"{current.id}: {slot} != its done parts"
            for where, deltas in current.text.items():
                assert not deltas or where in current.text_done, f"{current.id}: {where} not done"
            for fam_name, deltas in current.acc.items():
                # every streamed text ends with its .done event, even when cut short
                text = current.acc_done.get(fam_name)
                assert text is not None, f"{current.id}: no {fam_name}.done"
                assert text == "".join(deltas), (fam_name, text)
                assert item.get(ITEM_TEXT[fam_name]) == text, (fam_name, item, text)
            for fam_name, text in current.acc_done.items():
                assert item.get(ITEM_TEXT[fam_name]) == text, (fam_name, item, text)
            done_items.append(item)
            current = None
            continue

        assert p.get("item_id") == current.id, f"{kind} for {p.get('item_id')}, open {current.id}"

        if base in ("response.content_part.added", "response.reasoning_summary_part.added"):
            slot, key = (
                ("content", "content_index")
                if base == "response.content_part.added"
                else ("summary", "summary_index")
            )
            parts = current.parts[slot]
            assert p[key] == len(parts), f"{key} {p[key]} not dense ({len(parts)} before)"
            assert _part_text(p["part"]) == "", p["part"]
            parts.append(None)
            current.text[(slot, p[key])] = []
        elif base in ("response.content_part.done", "response.reasoning_summary_part.done"):
            slot, key = (
                ("content", "content_index")
                if base == "response.content_part.done"
                else ("summary", "summary_index")
            )
            idx = p[key]
            parts = current.parts[slot]
            assert 0 <= idx < len(parts) and parts[idx] is None, f"{kind} for no open part {idx}"
            text = "".join(current.text[(slot, idx)])
            assert _part_text(p["part"]) == text, (kind, p["part"], text)
            if (slot, idx) in current.text_done:
                assert current.text_done[(slot, idx)] == text
            parts[idx] = p["part"]
        elif fam is not None:
            family, phase = fam
            if family in ITEM_TEXT:
                assert family not in current.acc_done, f"{kind} after its done"
                if phase == "delta":
                    assert isinstance(p["delta"], str)
                    current.acc.setdefault(family, []).append(p["delta"])
                else:
                    text = "".join(current.acc.get(family, []))
                    assert p[ITEM_TEXT[family]] == text, (kind, p[ITEM_TEXT[family]], text)
                    current.acc_done[family] = text
            else:
                slot, key = (
                    ("summary", "summary_index")
                    if family in SUMMARY_TEXT
                    else ("content", "content_index")
                )
                where = (slot, p[key])
                parts = current.parts[slot]
                assert 0 <= p[key] < len(parts) and parts[p[key]] is None, f"{kind}: no open part"
                assert where not in current.text_done, f"{kind} after its done"
                if phase == "delta":
                    assert isinstance(p["delta"], str)
                    if family == "response.output_text":
                        assert isinstance(p.get("logprobs"), list), (
                            "output_text delta without logprobs"
                        )
                    current.text[where].append(p["delta"])
                else:
                    field = (PART_TEXT | SUMMARY_TEXT)[family]
                    text = "".join(current.text[where])
                    assert p[field] == text, (kind, p[field], text)
                    current.text_done[where] = text
    assert current is None, f"item {_id(current)} never done"

    # -- terminal -----------------------------------------------------------
    last = payloads[-1]
    response = last["response"]
    assert response["status"] == TERMINALS[last["type"]], (last["type"], response["status"])
    assert response["output"] == done_items, "terminal output != the output_item.done items"
    if last["type"] == "response.incomplete":
        reason = (response.get("incomplete_details") or {}).get("reason")
        assert reason in ("max_output_tokens", "content_filter"), f"incomplete reason {reason!r}"
    if last["type"] == "response.completed":
        for item in done_items:
            assert item.get("status", "completed") == "completed", item
    if last["type"] == "response.failed":
        assert response.get("error"), "failed response without error"
    _check_usage(response.get("usage"))

    if validate:
        _check_validity(payloads, dialect)
