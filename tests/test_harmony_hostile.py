"""Hostile Harmony segment sequences into ``HarmonyToResponses``.

Whatever the input, the stream is valid (the official openai SDK's strict models,
the project's validator, the stream invariants), ends with exactly one terminal
event, and every character of the segments accepted before the end (all of them,
or those before the call that failed the stream) is in the final Response once, in
order: an item's text, arguments or code, or a browser call's action.  No call
raises.

``run_ops`` and ``check_kept`` are shared with the fuzz target.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from test_harmony_bridge import check_payloads, item_text, payloads_of

import responses_stream as rs
from responses_stream import CountingIds, HarmonyToResponses, StreamProcessor

Op = tuple[
    Any, ...
]  # ("segment", channel, recipient, delta) | ("end_message", ct) | ("end", usage, reason)
ACTION_KEYS = {"search": ("query",), "open_page": ("url",), "find_in_page": ("pattern", "url")}


def fix(text: str) -> str:
    """``text`` as it reaches the wire: lone surrogates replaced with U+FFFD."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


@dataclass
class Run:
    response: dict[str, Any]
    payloads: list[dict[str, Any]]
    conv: HarmonyToResponses
    failed_at: int | None  # the index of the op that ended the stream with an error
    ended_at: int | None  # the index of the op that ended the stream
    replaced: int = 0
    messages: list[tuple[str | None, str, list[str]]] = field(default_factory=list)


def run_ops(
    ops: Sequence[Op], dialect: str = "openai", request: dict[str, Any] | None = None
) -> Run:
    """Feed ``ops`` (no call may raise), end the stream, check it, return what it made."""
    proc = StreamProcessor(dialect, request=request, ids=CountingIds(), model="gpt-oss")
    conv = HarmonyToResponses(proc, request)
    events: list[Any] = []
    failed_at = ended_at = None
    for n, (kind, *args) in enumerate(ops):
        getattr(conv, kind)(*args)
        events += proc.drain()
        if ended_at is None and proc.ended:
            ended_at = n
            failed_at = n if conv.error is not None else None
    conv.end()
    events += proc.drain()
    payloads = payloads_of(events, dialect)
    response = check_payloads(payloads, dialect)
    assert (response["status"] == "failed") == (conv.error is not None), response["status"]
    run = Run(response, payloads, conv, failed_at, ended_at, proc.replaced_surrogates)
    run.messages = accepted_messages(ops, ended_at)
    return run


def accepted_messages(
    ops: Sequence[Op], ended_at: int | None
) -> list[tuple[str | None, str, list[str]]]:
    """The messages the accepted segments make: a new one after ``end_message`` or when
    the channel or recipient changes."""
    messages: list[tuple[str | None, str, list[str]]] = []
    current: tuple[str | None, str, list[str]] | None = None
    stop = len(ops) if ended_at is None else ended_at
    for kind, *args in ops[:stop]:
        if kind == "segment":
            channel, recipient, delta = args
            key = (channel, recipient or "")
            if current is None or current[:2] != key:
                current = (*key, [])
                messages.append(current)
            current[2].append(delta)
        elif kind == "end_message":
            current = None
    if ended_at is not None and ops[ended_at][0] == "end_message" and current is not None:
        pass  # a failing end_message still closes (incomplete) the message it had
    return messages


def check_kept(run: Run) -> None:
    """Every accepted message is one item holding all its text (a browser call: the action
    its JSON gives)."""
    out = run.response["output"]
    assert len(out) == len(run.messages), ([i["type"] for i in out], run.messages)
    for item, (_, recipient, deltas) in zip(out, run.messages, strict=True):
        text = "".join(deltas)
        got = item_text(item)
        if item["type"].split(":")[-1] != "web_search_call":
            assert got == fix(text), (item, text)
            continue
        assert recipient.startswith("browser.")
        args = json.loads(text)
        keys = ACTION_KEYS[got["type"]]
        for key in keys:
            want = args.get(key) if len(keys) == 1 else (args.get(key) or "")
            assert isinstance(want, str)
            assert got[key] == fix(want), (got, args)


def seg(channel: Any, recipient: Any, delta: Any) -> Op:
    return ("segment", channel, recipient, delta)


END: Op = ("end_message", None)
JSON: Op = ("end_message", "<|constrain|>json")

CASES: dict[str, tuple[list[Op], str]] = {
    # browser calls whose arguments do not give an action: the catch-all MCP route
    "search with a number": ([seg("analysis", "browser.search", '{"query": 5}'), JSON], "mcp_call"),
    "open with a list": ([seg("analysis", "browser.open", '{"url": ["x"]}'), JSON], "mcp_call"),
    "find with an object": (
        [seg("analysis", "browser.find", '{"pattern": {"a": 1}}'), JSON],
        "mcp_call",
    ),
    "search without query": ([seg("analysis", "browser.search", '{"q": "x"}'), JSON], "mcp_call"),
    "search broken JSON": ([seg("analysis", "browser.search", '{"query": "pa'), JSON], "mcp_call"),
    "search a JSON array": ([seg("analysis", "browser.search", "[1, 2]"), JSON], "mcp_call"),
    "search empty": ([seg("analysis", "browser.search", ""), JSON], "mcp_call"),
    "search cut short": ([seg("analysis", "browser.search", '{"query": "paris"}')], "mcp_call"),
    "search deep JSON": ([seg("analysis", "browser.search", "[" * 100_000), JSON], "mcp_call"),
    "find broken JSON": ([seg("final", "browser.find", "{"), END], "mcp_call"),
    "find not an object": ([seg("final", "browser.find", "0"), END], "mcp_call"),
    "find empty": ([seg("final", "browser.find", ""), END], "mcp_call"),
    "search with NaN": (
        [seg("analysis", "browser.search", '{"query": "x", "n": NaN}'), JSON],
        "web_search_call",
    ),
    "search escaped surrogate": (
        [seg("analysis", "browser.search", '{"query": "\\ud800 x"}'), JSON],
        "web_search_call",
    ),
    "search split": (
        [seg(None, "browser.search", '{"que'), seg(None, "browser.search", 'ry": "é😀"}'), JSON],
        "web_search_call",
    ),
    # odd but valid
    "tool call broken JSON": ([seg("commentary", "functions.f", '{"a": '), JSON], "function_call"),
    "empty function name": ([seg("commentary", "functions.", "{}"), END], "function_call"),
    "a dot recipient": ([seg("commentary", ".", "x"), END], "mcp_call"),
    "mcp without a tool": ([seg("commentary", "mcp.", "x"), END], "mcp_call"),
    "empty recipient is none": ([seg("final", "", "hi"), END], "message"),
    "end_message without segments": ([END, JSON, seg("final", None, "a"), END, END], "message"),
    "odd content types": (
        [
            seg("final", None, "a"),
            ("end_message", "<|constrain|>"),
            seg("final", None, "b"),
            ("end_message", "\ud800"),
        ],
        "message",
    ),
    "lone surrogate and NUL": (
        [seg("final", None, "a\ud800b\x00\u2028"), seg("final", None, "\udfff"), END],
        "message",
    ),
    "a surrogate pair split": (
        [seg("final", None, "x\ud83d"), seg("final", None, "\ude00y"), END],
        "message",
    ),
    "a very long line": ([seg("analysis", None, "z" * 300_000), END], "reasoning"),
    "python code": ([seg("analysis", "python", "print('\x00')"), END], "code_interpreter_call"),
    "channel change": ([seg("analysis", None, "think"), seg("final", None, "say"), END], "message"),
    "recipient change": (
        [seg("commentary", "functions.a", "{}"), seg("commentary", "functions.b", "[]"), END],
        "function_call",
    ),
    # bad input: error, then response.failed
    # a channel Harmony does not define: kept as reasoning, with a warning
    "unknown channel": ([seg("final", None, "kept"), END, seg("weird", None, "x")], "reasoning"),
    "no channel": ([seg("final", None, "kept"), seg(None, None, "x")], "failed"),
    "empty channel": ([seg("final", None, "kept"), seg("", None, "x")], "failed"),
    "a number delta": ([seg("final", None, "kept"), seg("final", None, 5)], "failed"),
    "a None delta in a buffer": (
        [
            seg("analysis", "browser.search", '{"query": "kept"'),
            seg("analysis", "browser.search", None),
        ],
        "failed",
    ),
    "bytes delta": ([seg("final", None, "kept"), seg("final", None, b"x")], "failed"),
    "a number channel": ([seg("final", None, "kept"), seg(5, None, "x")], "failed"),
    "a list recipient": ([seg("final", None, "kept"), seg("commentary", ["x"], "x")], "failed"),
    "a number content type": ([seg("final", None, "kept"), ("end_message", 5)], "failed"),
    "a junk end reason": ([seg("final", None, "kept"), ("end", None, "weird")], "failed"),
    "a junk usage": ([seg("final", None, "kept"), ("end", 5)], "failed"),
    "a junk usage detail": (  # unusable details count as zeros
        [seg("final", None, "kept"), ("end", {"input_tokens": 1, "input_tokens_details": 5})],
        "message",
    ),
    # after the end: nothing changes
    "segments after end": (
        [seg("final", None, "kept"), END, ("end", None), seg("final", None, "late"), END],
        "message",
    ),
    "segments after a failure": (
        [seg("final", None, "kept"), seg(5, None, "x"), seg("final", None, "late")],
        "failed",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dialect", sorted(rs.DIALECTS))
def test_hostile_segments(name: str, dialect: str) -> None:
    ops, outcome = CASES[name]
    run = run_ops(ops, dialect)
    check_kept(run)
    out = run.response["output"]
    if outcome == "failed":
        assert run.response["status"] == "failed"
        assert run.failed_at is not None
        codes = [
            p.get("code", p.get("error", {}).get("code"))
            for p in run.payloads
            if p["type"] == "error"
        ]
        assert codes == ["invalid_harmony_input"]
        assert "kept" in json.dumps(out)
    else:
        assert run.response["status"] in ("completed", "incomplete")
        assert out[-1]["type"].split(":")[-1] == outcome
    if name.startswith("segments after"):
        assert run.conv.ignored >= 2 and "late" not in json.dumps(out)


def test_a_browser_call_with_a_non_string_query_keeps_its_arguments() -> None:
    """The case of the issue: a number query used to reach ``action`` (strict clients
    reject it) or raise; now the call and its arguments reach the client as an MCP call."""
    run = run_ops([seg("analysis", "browser.search", '{"query": 5}'), JSON])
    item = run.response["output"][0]
    assert (item["type"], item["server_label"], item["name"], item["arguments"]) == (
        "mcp_call",
        "browser",
        "search",
        '{"query": 5}',
    )
    assert run.response["status"] == "completed"


def test_lone_surrogates_are_replaced_and_counted() -> None:
    run = run_ops([seg("final", None, "a\ud800"), seg("final", None, "b\udc00"), END])
    assert item_text(run.response["output"][0]) == "a\ufffdb\ufffd"
    assert run.replaced == 2
    # a pair split over two deltas is one character
    run = run_ops([seg("final", None, "a\ud800"), seg("final", None, "\udc00b"), END])
    assert item_text(run.response["output"][0]) == "a\U00010000b"
    assert run.replaced == 0


def test_the_converter_rejects_a_junk_setup() -> None:
    with pytest.raises(rs.ProcessorError, match="StreamProcessor"):
        HarmonyToResponses("openai")  # type: ignore[arg-type]
    with pytest.raises(rs.ProcessorError, match="request must be a mapping"):
        HarmonyToResponses(StreamProcessor("openai"), ["tools"])  # type: ignore[arg-type]


@pytest.mark.parametrize("dialect", sorted(rs.DIALECTS))
def test_a_message_after_an_unknown_channel_is_not_lost(dialect: str) -> None:
    """The adversarial case: a segment on a channel Harmony does not define, then the
    final answer.  The answer keeps its text, the odd channel's text is kept as
    reasoning, and a warning names the channel."""
    ops = [
        seg("analysis", None, "think"),
        END,
        seg("scratch", None, "odd"),
        seg("final", None, "the answer"),
        END,
    ]
    run = run_ops(ops, dialect)
    out = run.response["output"]
    assert run.response["status"] == "completed"
    assert [(i["type"], item_text(i)) for i in out] == [
        ("reasoning", "think"),
        ("reasoning", "odd"),
        ("message", "the answer"),
    ]
    assert run.conv.warnings == [
        "harmony: channel 'scratch' is not one Harmony defines; its text is kept as reasoning"
    ]
    assert [v for v in rs.validate_payloads(run.payloads, dialect) if v.severity == "error"] == []
