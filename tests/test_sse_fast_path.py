"""The ``*_sse`` fast paths frame exactly what the typed path plus SSEEncoder frames."""

from __future__ import annotations

from typing import Any

import pytest

import responses_stream as rs
from responses_stream import CountingIds

# (item type, part open method, fast method, arguments)
CASES = [
    ("message", "output_text_open", "output_text_delta", {"delta": 'a "q"\n✓'}),
    ("message", "refusal_open", "refusal_delta", {"delta": "no"}),
    (
        "message",
        "output_text_open",
        "output_text_delta",
        {
            "delta": "\u2028\x00é",
            "logprobs": [{"token": "é", "logprob": -0.25, "bytes": [195, 169], "top_logprobs": []}],
        },
    ),
    ("reasoning", "summary_text_open", "summary_text_delta", {"delta": "plan"}),
    ("reasoning", "reasoning_text_open", "reasoning_text_delta", {"delta": "思考"}),
]


def _open(dialect: rs.Dialect, item_type: str, part_open: str) -> Any:
    r = dialect.emitter(ids=CountingIds(), model="m", created_at=1)
    r.created()
    r.in_progress()
    item = getattr(r, item_type)()
    item.open()
    getattr(item, part_open)()
    return item


@pytest.mark.parametrize("dialect", sorted(rs.DIALECTS))
@pytest.mark.parametrize(("item_type", "part_open", "method", "kwargs"), CASES)
def test_fast_path_bytes_equal_typed_path(
    dialect: str, item_type: str, part_open: str, method: str, kwargs: dict[str, Any]
) -> None:
    d = rs.DIALECTS[dialect]
    typed, fast = _open(d, item_type, part_open), _open(d, item_type, part_open)
    enc = d.encoder()
    for _ in range(3):
        expected = b"".join(enc.encode(e) for e in getattr(typed, method)(**kwargs))
        assert getattr(fast, f"{method}_sse")(**kwargs) == expected
    done = getattr(typed, method.replace("_delta", "_done"))()
    assert done == getattr(fast, method.replace("_delta", "_done"))()


# (item type, its fields, how to reach a state that takes deltas): the item-level twins
ITEM_CASES = [
    ("function_call", {"call_id": "call_1", "name": "f"}, []),
    ("custom_tool_call", {"call_id": "call_1", "name": "f"}, []),
    ("mcp_call", {"server_label": "s", "name": "f"}, []),
    ("code_interpreter_call", {"container_id": "c"}, []),
]


def _open_item(dialect: rs.Dialect, item_type: str, fields: dict[str, Any], path: list[str]) -> Any:
    r = dialect.emitter(ids=CountingIds(), model="m", created_at=1)
    r.created()
    r.in_progress()
    item = getattr(r, item_type)(**fields)
    item.open()
    for step in path:
        getattr(item, step)()
    return item


@pytest.mark.parametrize("dialect", sorted(rs.DIALECTS))
@pytest.mark.parametrize(("item_type", "fields", "path"), ITEM_CASES)
def test_item_delta_fast_path_bytes_equal_typed_path(
    dialect: str, item_type: str, fields: dict[str, Any], path: list[str]
) -> None:
    d = rs.DIALECTS[dialect]
    typed, fast = (_open_item(d, item_type, fields, path) for _ in range(2))
    enc = d.encoder()
    for delta in ['{"a": "q\n', "✓", '"}']:
        expected = b"".join(enc.encode(e) for e in typed.delta(delta))
        assert fast.delta_sse(delta) == expected
    assert typed.snapshot() == fast.snapshot()


def test_item_delta_fast_path_checks_the_state_machine() -> None:
    r = rs.openai.ResponseEmitter(ids=CountingIds(), model="m")
    r.created()
    r.in_progress()
    call = r.function_call(call_id="c", name="f")
    with pytest.raises(rs.TransitionError):
        call.delta_sse("too early")


def test_fast_path_checks_the_state_machine() -> None:
    r = rs.openai.ResponseEmitter(ids=CountingIds(), model="m")
    r.created()
    r.in_progress()
    msg = r.message()
    msg.open()
    with pytest.raises(rs.TransitionError):
        msg.output_text_delta_sse("too early")
