"""``feed_payloads_sse``: payloads given a list at a time make the bytes that the same
payloads make given one at a time (``feed_data_sse``), on every genuine chat recording and
on streams that leave the text fast path in the middle of a list."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from responses_stream import ChatToResponses, CountingIds, Limits, StreamProcessor

RECORDINGS = Path(__file__).parent / "recordings" / "chat"
NAMES = sorted(p.relative_to(RECORDINGS).as_posix() for p in RECORDINGS.glob("**/*.jsonl"))
CLOCK = re.compile(rb'"completed_at":\d+')


def converter(dialect: str, limits: Limits | None = None) -> ChatToResponses:
    proc = StreamProcessor(dialect, model="m", created_at=1, ids=CountingIds(), limits=limits)
    return ChatToResponses(proc)


def one_at_a_time(payloads: list[str], dialect: str, limits: Limits | None = None) -> bytes:
    conv = converter(dialect, limits)
    out = conv.proc.drain_sse()
    for payload in payloads:
        out += conv.feed_data_sse(payload)
        if conv.done:
            break
    if not conv.done:
        out += conv.end_sse()
    return CLOCK.sub(b'"completed_at":0', b"".join(out))


def in_lists(payloads: list[str], size: int, dialect: str, limits: Limits | None = None) -> bytes:
    conv = converter(dialect, limits)
    out = conv.proc.drain_sse()
    for at in range(0, len(payloads), size):
        out += conv.feed_payloads_sse(payloads[at : at + size])
        if conv.done:
            break
    if not conv.done:
        out += conv.end_sse()
    return CLOCK.sub(b'"completed_at":0', b"".join(out))


def chunk(**delta: Any) -> str:
    return json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})


def text_run(n: int, key: str = "content") -> list[str]:
    return [chunk(**{key: f"w{i} "}) for i in range(n)]


FINISH = json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
USAGE = json.dumps({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 40}})
CALL = chunk(tool_calls=[{"index": 0, "id": "c1", "function": {"name": "f", "arguments": ""}}])
ARGS = chunk(tool_calls=[{"index": 0, "function": {"arguments": '{"a": 1}'}}])

STREAMS: dict[str, list[str]] = {
    "text": text_run(40) + [FINISH, USAGE, "[DONE]"],
    "reasoning-then-text": text_run(20, "reasoning_content") + text_run(20) + [FINISH, "[DONE]"],
    "text-call-text": text_run(10) + [CALL, ARGS] + text_run(10) + [FINISH, "[DONE]"],
    "after-done": text_run(5) + [FINISH, "[DONE]"] + text_run(5),
    "finish-mid-run": text_run(5) + [FINISH] + text_run(5) + ["[DONE]"],
    "not-json-mid-run": text_run(5) + ['{"choices": ['] + text_run(5),
    "lone-surrogate-mid-run": text_run(5) + [chunk(content="a\ud800")] + text_run(5) + [FINISH],
    "split-pair-mid-run": text_run(3)
    + [chunk(content="x\ud83d"), chunk(content="\ude00y")]
    + text_run(3)
    + [FINISH],
    "two-keys-mid-run": text_run(5) + [chunk(content="a", refusal="b")] + text_run(5) + [FINISH],
    "logprobs-mid-run": text_run(5)
    + [
        json.dumps(
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {"content": "p"},
                        "logprobs": {"content": [{"token": "p", "logprob": -0.5, "bytes": [112]}]},
                    }
                ]
            }
        )
    ]
    + text_run(5)
    + [FINISH],
    "second-choice-mid-run": text_run(5)
    + [json.dumps({"choices": [{"index": 1, "delta": {"content": "other"}}]})]
    + text_run(5),
    "usage-mid-run": text_run(5) + [USAGE] + text_run(5) + [FINISH],
    "index-float-mid-run": text_run(5)
    + [json.dumps({"choices": [{"index": 0.0, "delta": {"content": "a"}}]})]
    + text_run(5),
    "empty-text-mid-run": text_run(5) + [chunk(content="")] + text_run(5) + [FINISH],
    "upstream-error-mid-run": text_run(5) + [json.dumps({"error": {"message": "boom"}})],
    "sse-comment-like-payload": text_run(5) + ["not json"] + text_run(5),
}


@pytest.mark.parametrize("dialect", ["openai", "openresponses"])
@pytest.mark.parametrize("name", NAMES)
def test_a_recording_makes_the_same_bytes_in_lists(name: str, dialect: str) -> None:
    text = (RECORDINGS / name).read_text(encoding="utf-8")
    payloads = [line for line in text.splitlines() if line.strip()] + ["[DONE]"]
    want = one_at_a_time(payloads, dialect)
    assert b"response.output_item.added" in want
    for size in (1, 7, len(payloads)):
        assert in_lists(payloads, size, dialect) == want, size


@pytest.mark.parametrize("dialect", ["openai", "openresponses"])
@pytest.mark.parametrize("name", sorted(STREAMS))
def test_leaving_the_fast_path_mid_list_makes_the_same_bytes(name: str, dialect: str) -> None:
    payloads = STREAMS[name]
    want = one_at_a_time(payloads, dialect)
    for size in (1, 3, len(payloads)):
        assert in_lists(payloads, size, dialect) == want, size


def test_a_text_limit_reached_mid_list_fails_the_stream_the_same_way() -> None:
    limits = Limits(max_item_text_chars=50)
    payloads = text_run(30) + [FINISH, "[DONE]"]
    want = one_at_a_time(payloads, "openai", limits)
    assert b"response.failed" in want or b"response.incomplete" in want
    assert in_lists(payloads, len(payloads), "openai", limits) == want


def test_payloads_after_the_end_are_ignored() -> None:
    conv = converter("openai")
    conv.proc.drain_sse()
    frames = conv.feed_payloads_sse([chunk(content="a"), FINISH, "[DONE]"])
    assert conv.done
    assert b"event: response.completed" in b"".join(frames)
    assert conv.feed_payloads_sse(text_run(3)) == []
