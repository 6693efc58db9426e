"""Property-based tests of the stream processor: random chat and Harmony input, checked streams.

Every stream produced from random input must satisfy ``invariants.check_stream``
and keep all the text it was given.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from invariants import check_stream, unslug

from responses_stream import (
    DIALECTS,
    CountingIds,
    HarmonyToResponses,
    StreamProcessor,
    events_from_chat,
)

SETTINGS = {
    "deadline": None,
    "derandomize": True,
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}

NAMESPACE = {
    "type": "namespace",
    "name": "crm",
    "description": "customer records",
    "tools": [{"type": "function", "name": "find_user"}, {"type": "custom", "name": "run_sql"}],
}


def function_tool(name: str) -> dict[str, Any]:
    params = {"type": "object", "properties": {}}
    return {
        "type": "function",
        "name": name,
        "description": name,
        "parameters": params,
        "strict": False,
    }


# Open Responses has only (fully spelled) function tools: no namespace and no custom tools
# there, so the namespaced and custom routes are exercised in the openai dialect.
REQUESTS = {
    "openai": {
        "model": "m",
        "tools": [function_tool("get_weather"), function_tool("lookup"), NAMESPACE],
    },
    "openresponses": {
        "model": "m",
        "tools": [function_tool("get_weather"), function_tool("lookup")],
    },
}
CALLED_NAMES = ["get_weather", "lookup", "crm.find_user", "crm.run_sql", "not_declared"]


def called_as(dialect: str, called: str) -> tuple[str, str, str | None]:
    """(item type, name, namespace) of the item for a call of ``called``."""
    if dialect == "openai" and called == "crm.find_user":
        return "function_call", "find_user", "crm"
    if dialect == "openai" and called == "crm.run_sql":
        return "custom_tool_call", "run_sql", "crm"
    return "function_call", called, None


TEXT_FIELDS = ("reasoning_content", "reasoning", "content", "refusal")
REASONING_SPELLINGS = [("reasoning_content",), ("reasoning",), ("reasoning_content", "reasoning")]
TOOL_INDEXES = range(4)

texts = st.text(max_size=12)
some_texts = st.text(min_size=1, max_size=12)


def encode(events: list[Any], dialect: str) -> list[dict[str, Any]]:
    """Frame each event with the dialect's encoder and decode its JSON payload."""
    enc = DIALECTS[dialect].encoder()
    out = []
    for ev in events:
        head, data = enc.encode(ev).decode().split("\n", 1)
        assert data.startswith("data: ") and data.endswith("\n\n")
        payload = json.loads(data[6:])
        assert head == f"event: {payload['type']}"
        out.append(payload)
    assert enc.close() == (b"data: [DONE]\n\n" if DIALECTS[dialect].done_sentinel else b"")
    return out


# -- chat -----------------------------------------------------------------------
@dataclass
class ChatCase:
    chunks: list[dict[str, Any] | str]
    finish: str | None
    usage: dict[str, Any] | None
    malformation: str | None = None
    cut: int | None = None  # chunks[:cut] are the well-formed input before the malformation
    names: dict[str, str] = field(default_factory=dict)  # call id -> called name


@st.composite
def logprobs(draw: st.DrawFn) -> dict[str, Any]:
    toks = draw(st.lists(st.text(min_size=1, max_size=3), min_size=1, max_size=3))
    lp = st.floats(min_value=-20.0, max_value=0.0, allow_nan=False)
    return {
        "content": [
            {
                "token": t,
                "logprob": draw(lp),
                "bytes": list(t.encode()),
                "top_logprobs": [
                    {"token": t, "logprob": draw(lp), "bytes": list(t.encode())}
                    for _ in range(draw(st.integers(0, 2)))
                ],
            }
            for t in toks
        ],
        "refusal": None,
    }


def chunk(choice: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [] if choice is None else [{"index": 0, **choice}],
    }
    out.update(extra)
    return out


@st.composite
def chat_cases(draw: st.DrawFn) -> ChatCase:
    chunks: list[dict[str, Any] | str] = []
    names: dict[str, str] = {}
    calls: dict[int, str] = {}  # index -> call id
    closed: set[int] = set()
    if draw(st.booleans()):
        chunks.append(chunk({"delta": {"role": "assistant", "content": ""}, "logprobs": None}))
    for _ in range(draw(st.integers(0, 8))):
        delta: dict[str, Any] = {}
        if draw(st.integers(0, 3)) == 0:
            # reasoning under either spelling, or the same text under both (as vLLM sends it)
            thought = draw(texts)
            for key in draw(st.sampled_from(REASONING_SPELLINGS)):
                delta[key] = thought
        for key in ("content", "refusal"):
            if draw(st.integers(0, 3)) == 0:
                delta[key] = draw(texts)
        choice: dict[str, Any] = {"delta": delta}
        if delta.get("content") and draw(st.booleans()):
            choice["logprobs"] = draw(logprobs())
        if any(delta.get(k) for k in TEXT_FIELDS):
            closed |= set(calls)  # text closes the calls made so far
        fragments = []
        for _ in range(draw(st.integers(0, 3))):
            free = [i for i in TOOL_INDEXES if i not in calls]
            live = [i for i in calls if i not in closed]
            if not free and not live:
                break
            if free and (not live or draw(st.booleans())):
                index = draw(st.sampled_from(free))
                called = draw(st.sampled_from(CALLED_NAMES))
                calls[index] = call_id = f"call_{len(names) + 1}"
                names[call_id] = called
                fn: dict[str, Any] = {"name": called}
                if draw(st.booleans()):
                    fn["arguments"] = draw(texts)
                fragments.append(
                    {"index": index, "id": call_id, "type": "function", "function": fn}
                )
            else:
                index = draw(st.sampled_from(live))
                fragments.append({"index": index, "function": {"arguments": draw(texts)}})
        if fragments:
            delta["tool_calls"] = fragments
        chunks.append(chunk(choice))

    finish = draw(st.sampled_from(["stop", "tool_calls", "length", "content_filter", None]))
    usage = None
    if draw(st.booleans()):
        inp, out = draw(st.integers(0, 10_000)), draw(st.integers(0, 10_000))
        usage = {
            "prompt_tokens": inp,
            "completion_tokens": out,
            "total_tokens": inp + out,
            "prompt_tokens_details": {"cached_tokens": draw(st.integers(0, inp))},
            "completion_tokens_details": {"reasoning_tokens": draw(st.integers(0, out))},
        }
    if finish is not None:
        if chunks and draw(st.booleans()):
            last = chunks[-1]
            assert isinstance(last, dict)
            last["choices"][0]["finish_reason"] = finish
        else:
            chunks.append(chunk({"delta": {}, "finish_reason": finish}))
    if usage is not None:
        if finish is not None and draw(st.booleans()):
            last = chunks[-1]
            assert isinstance(last, dict)
            last["usage"] = usage
        else:
            chunks.append(chunk(None, usage=usage))

    malformations = ["bad_json", "no_choices", "anonymous_fragment", "upstream_error"]
    if finish is not None:
        malformations.append("after_finish")
    malformation = draw(st.sampled_from(malformations)) if draw(st.integers(0, 2)) == 0 else None
    cut = None
    if malformation is not None:
        if malformation == "after_finish":
            cut = draw(
                st.integers(next(i for i, c in enumerate(chunks) if _finish(c)) + 1, len(chunks))
            )
            bad: dict[str, Any] | str = chunk({"delta": {"content": draw(some_texts)}})
        else:
            cut = draw(st.integers(0, len(chunks)))
            bad = {
                "bad_json": draw(st.sampled_from(['{"choices": [', "not json", "{'a': 1}", ""])),
                "no_choices": {"id": "chatcmpl-1", "object": "chat.completion.chunk"},
                "upstream_error": {"error": {"message": "overloaded", "type": "server_error"}},
                "anonymous_fragment": chunk(
                    {"delta": {"tool_calls": [{"index": 9, "function": {"arguments": "{}"}}]}}
                ),
            }[malformation]
        chunks.insert(cut, bad)

    # some chunks arrive as raw ``data:`` payloads
    raw = [json.dumps(c) if isinstance(c, dict) and draw(st.booleans()) else c for c in chunks]
    if draw(st.booleans()):
        raw.append("[DONE]")
    return ChatCase(raw, finish, usage, malformation, cut, names)


def _finish(c: dict[str, Any] | str) -> bool:
    return isinstance(c, dict) and any(ch.get("finish_reason") for ch in c["choices"])


def expected_text(chunks: list[dict[str, Any] | str]) -> tuple[dict[str, Any], dict[str, str]]:
    """Concatenated input text (and logprobs) per kind, and concatenated arguments per call id."""
    text: dict[str, Any] = {"reasoning": "", "content": "", "refusal": "", "logprobs": []}
    args: dict[str, str] = {}
    by_index: dict[int, str] = {}
    for c in chunks:
        if c == "[DONE]":
            continue
        parsed = json.loads(c) if isinstance(c, str) else c
        for choice in parsed["choices"]:
            delta = choice["delta"]
            if delta.get("content"):
                text["logprobs"] += (choice.get("logprobs") or {}).get("content", [])
            # one delta's reasoning is one text, whichever spelling (or both) carries it
            text["reasoning"] += delta.get("reasoning_content") or delta.get("reasoning") or ""
            for key in ("content", "refusal"):
                text[key] += delta.get(key) or ""
            for frag in delta.get("tool_calls", []):
                if "id" in frag:
                    by_index[frag["index"]] = frag["id"]
                    args[frag["id"]] = ""
                call_id = by_index[frag["index"]]
                args[call_id] += frag["function"].get("arguments", "")
    return text, args


def output_text(output: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Text (and logprobs) per kind in a response's output, and its tool call items by call id."""
    text: dict[str, Any] = {"reasoning": "", "content": "", "refusal": "", "logprobs": []}
    calls: dict[str, dict[str, Any]] = {}
    for item in output:
        kind = unslug(item["type"])
        if kind == "message":
            for part in item["content"]:
                if part["type"] == "output_text":
                    text["content"] += part["text"]
                    text["logprobs"] += part["logprobs"]
                else:
                    text["refusal"] += part["refusal"]
        elif kind == "reasoning":
            assert item["summary"] == []
            text["reasoning"] += "".join(p["text"] for p in item["content"])
        else:
            assert kind in ("function_call", "custom_tool_call"), kind
            assert item["call_id"] not in calls, "two items for one call"
            calls[item["call_id"]] = item
    return text, calls


def check_calls(
    dialect: str, case: ChatCase, calls: dict[str, dict[str, Any]], args: dict[str, str]
) -> None:
    assert set(calls) == set(args)
    for call_id, item in calls.items():
        kind, name, namespace = called_as(dialect, case.names[call_id])
        assert unslug(item["type"]) == kind
        assert item["name"] == name
        assert item.get("namespace") == namespace
        got = item["arguments"] if kind == "function_call" else item["input"]
        assert got == args[call_id], (call_id, got, args[call_id])


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
@settings(max_examples=150, **SETTINGS)
@given(case=chat_cases())
def test_chat_streams(dialect: str, case: ChatCase) -> None:
    events = list(
        events_from_chat(case.chunks, dialect=dialect, request=REQUESTS[dialect], ids=CountingIds())
    )
    payloads = encode(events, dialect)
    check_stream(payloads, dialect)

    terminal = payloads[-1]
    response = terminal["response"]
    event(f"{terminal['type']} ({case.malformation or case.finish})")
    text, calls = output_text(response["output"])
    event(f"tool calls: {len(calls)}")
    if case.malformation is not None:
        assert terminal["type"] == "response.failed"
        assert payloads[-2]["type"] == "error"
        assert response["error"]["message"]
        assert case.cut is not None
        want_text, want_args = expected_text(case.chunks[: case.cut])
    else:
        expected = {
            "stop": ("response.completed", None),
            "tool_calls": ("response.completed", None),
            "length": ("response.incomplete", "max_output_tokens"),
            "content_filter": ("response.incomplete", "content_filter"),
            None: ("response.incomplete", "max_output_tokens"),
        }[case.finish]
        assert terminal["type"] == expected[0]
        assert (response["incomplete_details"] or {}).get("reason") == expected[1]
        assert "error" not in [p["type"] for p in payloads]
        want_text, want_args = expected_text(case.chunks)
        usage = case.usage or {}
        got = response["usage"]
        assert got["input_tokens"] == usage.get("prompt_tokens", 0)
        assert got["output_tokens"] == usage.get("completion_tokens", 0)
        assert got["total_tokens"] == usage.get("total_tokens", 0)
        assert got["input_tokens_details"]["cached_tokens"] == usage.get(
            "prompt_tokens_details", {}
        ).get("cached_tokens", 0)
        assert got["output_tokens_details"]["reasoning_tokens"] == usage.get(
            "completion_tokens_details", {}
        ).get("reasoning_tokens", 0)
    assert text == want_text
    check_calls(dialect, case, calls, want_args)


# -- harmony --------------------------------------------------------------------
urls = st.sampled_from(["https://example.com/", "https://例え.jp/a?b=c", "http://x.test"])


@dataclass
class Message:
    channel: str | None
    recipient: str | None
    segments: list[str]
    expect: dict[str, Any]  # what the item must look like


@st.composite
def split(draw: st.DrawFn, text: str) -> list[str]:
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=4)))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


@st.composite
def harmony_messages(draw: st.DrawFn) -> Message:
    route = draw(
        st.sampled_from(
            ["final", "commentary", "analysis", "functions", "python"]
            + ["browser.search", "browser.open", "browser.find", "mcp", "container.exec"]
        )
    )
    tool_channel = st.sampled_from(["commentary", "analysis", None])
    channel: str | None
    recipient: str | None = None
    if route in ("final", "commentary"):
        channel = route
        text = draw(st.text(max_size=20))
        phase = "final_answer" if route == "final" else "commentary"
        expect = {"type": "message", "phase": phase, "text": text}
    elif route == "analysis":
        channel, text = route, draw(st.text(max_size=20))
        expect = {"type": "reasoning", "text": text}
    elif route == "functions":
        channel = draw(tool_channel)
        called = draw(st.sampled_from(["get_weather", "crm.find_user", "other_tool"]))
        recipient = f"functions.{called}"
        text = json.dumps({"q": draw(texts)}, ensure_ascii=draw(st.booleans()))
        expect = {"type": "function_call", "called": called, "arguments": text}
    elif route == "python":
        channel, recipient = draw(tool_channel), "python"
        text = draw(st.text(max_size=20))
        expect = {"type": "code_interpreter_call", "code": text}
    elif route.startswith("browser."):
        channel, recipient = draw(tool_channel), route
        if route == "browser.search":
            args: dict[str, Any] = {"query": draw(texts)}
            action = {"type": "search", **args}
        elif route == "browser.open":
            args = {"url": draw(urls)}
            action = {"type": "open_page", **args}
        else:
            args = {"pattern": draw(texts)}
            if draw(st.booleans()):
                args["url"] = draw(urls)
            action = {"type": "find_in_page", "url": "", **args}
        text = json.dumps(args, ensure_ascii=draw(st.booleans()))
        expect = {"type": "web_search_call", "action": action}
    else:
        channel = draw(tool_channel)
        if route == "mcp":
            server = draw(st.sampled_from(["github", "files"]))
            tool = draw(st.sampled_from(["search", "read_file"]))
            recipient = f"mcp.{server}.{tool}"
        else:
            server, tool, recipient = "container", "exec", route
        text = json.dumps({"cmd": draw(st.lists(texts, max_size=2))})
        expect = {"type": "mcp_call", "server_label": server, "name": tool, "arguments": text}
    return Message(channel, recipient, draw(split(text)), expect)


@dataclass
class Session:
    messages: list[Message]
    cut_short: bool  # the last message is never ended
    reason: str | None  # an explicit reason given to end()
    usage: dict[str, Any] | None


@st.composite
def harmony_sessions(draw: st.DrawFn) -> Session:
    messages = draw(st.lists(harmony_messages(), max_size=6))
    cut_short = bool(messages) and draw(st.booleans())
    reason = draw(st.none() | st.sampled_from(["max_output_tokens", "content_filter"]))
    usage = None
    if draw(st.booleans()):
        usage = {
            "input_tokens": draw(st.integers(0, 999)),
            "output_tokens": draw(st.integers(0, 999)),
        }
    return Session(messages, cut_short, reason, usage)


def check_item(dialect: str, item: dict[str, Any], msg: Message, ended: bool) -> None:
    exp = msg.expect
    if exp["type"] == "web_search_call" and not ended:
        # a browser call cut short keeps its partial arguments: the catch-all MCP route
        assert msg.recipient is not None
        server, name = msg.recipient.split(".", 1)
        text = "".join(msg.segments)
        exp = {"type": "mcp_call", "server_label": server, "name": name, "arguments": text}
    assert unslug(item["type"]) == exp["type"]
    assert item["status"] == ("completed" if ended else "incomplete")
    kind = exp["type"]
    if kind == "message":
        assert item["phase"] == exp["phase"]
        assert [p["type"] for p in item["content"]] == ["output_text"]
        assert item["content"][0]["text"] == exp["text"]
    elif kind == "reasoning":
        assert item["summary"] == []
        assert [p["text"] for p in item["content"]] == [exp["text"]]
    elif kind == "function_call":
        assert (unslug(item["type"]), item["name"], item.get("namespace")) == called_as(
            dialect, exp["called"]
        )
        assert item["arguments"] == exp["arguments"]
        assert item["call_id"].startswith("call_")
    elif kind == "code_interpreter_call":
        assert item["code"] == exp["code"]
    elif kind == "web_search_call":
        if ended:
            assert item["action"] == exp["action"]
    else:
        assert item["server_label"] == exp["server_label"]
        assert item["name"] == exp["name"]
        assert item["arguments"] == exp["arguments"]


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
@settings(max_examples=100, **SETTINGS)
@given(session=harmony_sessions())
def test_harmony_sessions(dialect: str, session: Session) -> None:
    request = REQUESTS[dialect]
    proc = StreamProcessor(DIALECTS[dialect], request=request, ids=CountingIds())
    conv = HarmonyToResponses(proc, request)
    events: list[Any] = []
    for i, msg in enumerate(session.messages):
        for piece in msg.segments:
            conv.segment(msg.channel, msg.recipient, piece)
            events += proc.drain()
        if not (session.cut_short and i == len(session.messages) - 1):
            conv.end_message("<|constrain|>json" if msg.recipient else None)
            events += proc.drain()
    conv.end(session.usage, session.reason)
    events += proc.drain()
    payloads = encode(events, dialect)
    check_stream(payloads, dialect)

    terminal = payloads[-1]
    response = terminal["response"]
    event(terminal["type"])
    for msg in session.messages:
        event(f"route {msg.channel}/{msg.recipient and msg.recipient.split('.')[0]}")
    if session.cut_short or session.reason is not None:
        assert terminal["type"] == "response.incomplete"
        reason = session.reason or "max_output_tokens"
        assert response["incomplete_details"] == {"reason": reason}
    else:
        assert terminal["type"] == "response.completed"
    output = response["output"]
    assert len(output) == len(session.messages)
    for i, (item, msg) in enumerate(zip(output, session.messages, strict=True)):
        ended = not (session.cut_short and i == len(output) - 1)
        check_item(dialect, item, msg, ended)
    usage = session.usage or {}
    assert response["usage"]["input_tokens"] == usage.get("input_tokens", 0)
    assert response["usage"]["output_tokens"] == usage.get("output_tokens", 0)
    assert response["usage"]["total_tokens"] == sum(usage.values())


# -- the invariants themselves ---------------------------------------------------
RICH_CHAT = [
    chunk({"delta": {"reasoning_content": "hm", "reasoning": "m"}}),
    chunk({"delta": {"content": "Hel"}}),
    chunk({"delta": {"content": "lo", "refusal": "no"}}),
    chunk(
        {
            "delta": {
                "tool_calls": [
                    {"index": 1, "id": "call_b", "function": {"name": "lookup", "arguments": "{"}},
                    {"index": 0, "id": "call_a", "function": {"name": "get_weather"}},
                ]
            }
        }
    ),
    chunk({"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "[]"}}]}}),
    chunk({"delta": {"tool_calls": [{"index": 1, "function": {"arguments": "}"}}]}}),
    chunk({"delta": {}, "finish_reason": "tool_calls"}),
]


def _kind(payload: dict[str, Any]) -> str:
    """The openai name of an event's type (no extension prefix, reasoning_text not renamed)."""
    kind = unslug(payload["type"])
    return kind.replace("response.reasoning.", "response.reasoning_text.")


def _find(payloads: list[dict[str, Any]], kind: str, nth: int = 0) -> int:
    return [i for i, p in enumerate(payloads) if _kind(p) == kind][nth]


def _renumber(payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**p, "sequence_number": i} for i, p in enumerate(payloads)]


def _drop(kind: str, nth: int = 0) -> Any:
    def mutate(ps: list[dict[str, Any]]) -> list[dict[str, Any]]:
        i = _find(ps, kind, nth)
        return _renumber(ps[:i] + ps[i + 1 :])

    return mutate


def _edit(kind: str, nth: int, **changes: Any) -> Any:
    def mutate(ps: list[dict[str, Any]]) -> list[dict[str, Any]]:
        i = _find(ps, kind, nth)
        ps[i] = {**ps[i], **changes}
        return ps

    return mutate


def _edit_response(kind: str | None = None, **changes: Any) -> Any:
    def mutate(ps: list[dict[str, Any]]) -> list[dict[str, Any]]:
        last = ps[-1]
        ps[-1] = {**last, "type": kind or last["type"], "response": {**last["response"], **changes}}
        return ps

    return mutate


def _replace(old: str, new: str) -> Any:
    """Replace a string everywhere in the stream (ids, event types)."""

    def mutate(ps: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = json.loads(json.dumps(ps).replace(old, new))
        return out

    return mutate


def _swap_reasoning_names(ps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give the reasoning text events the other dialect's names."""
    for old, new in [
        ("response.reasoning_text.", "@"),
        ("response.reasoning.", "response.reasoning_text."),
        ("@", "response.reasoning."),
    ]:
        ps = _replace(old, new)(ps)
    return ps


def _swap_items(ps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Move the first output_item.done after the second output_item.added."""
    i, j = _find(ps, "response.output_item.done"), _find(ps, "response.output_item.added", 1)
    return _renumber(ps[:i] + ps[i + 1 : j + 1] + [ps[i]] + ps[j + 1 :])


MUTATIONS = {
    "no in_progress": _drop("response.in_progress"),
    "sequence gap": _edit("response.output_text.delta", 0, sequence_number=99),
    "lost text delta": _drop("response.output_text.delta"),
    "lost reasoning delta": _drop("response.reasoning_text.delta"),
    "lost arguments delta": _drop("response.function_call_arguments.delta", 1),
    "part never done": _drop("response.content_part.done", 1),
    "two items open": _swap_items,
    "wrong item id": _edit("response.output_text.delta", 0, item_id="msg_x"),
    "wrong output index": _edit("response.refusal.delta", 0, output_index=7),
    "sparse content index": _edit("response.content_part.added", 2, content_index=2),
    "sparse output index": _edit("response.output_item.added", 2, output_index=3),
    "no logprobs": _edit("response.output_text.delta", 0, logprobs=None),
    "output mismatch": _edit_response(output=[]),
    "no usage": _edit_response(usage=None),
    "bad incomplete reason": _edit_response(
        "response.incomplete", status="incomplete", incomplete_details={"reason": "length"}
    ),
    "bad id prefix": _replace('"msg_0003"', '"m_0003"'),
    "duplicate id": _replace('"fc_0005"', '"fc_0004"'),
    "other dialect's reasoning events": _swap_reasoning_names,
    "terminal not last": lambda ps: _renumber([*ps, ps[-1]]),
    "error before completed": lambda ps: _renumber(
        [*ps[:-1], {"type": "error", "code": "x", "message": "m", "param": None}, ps[-1]]
    ),
}


def _rich_stream(dialect: str) -> list[dict[str, Any]]:
    events = events_from_chat(
        RICH_CHAT, dialect=dialect, request=REQUESTS[dialect], ids=CountingIds()
    )
    return encode(list(events), dialect)


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_invariants_accept_a_rich_stream(dialect: str) -> None:
    payloads = _rich_stream(dialect)
    check_stream(payloads, dialect)
    kinds = [unslug(p["type"]) for p in payloads]
    assert kinds.count("response.output_item.added") == 4
    assert payloads[-1]["type"] == "response.completed"


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_invariants_reject_broken_streams(dialect: str, mutation: str) -> None:
    broken = MUTATIONS[mutation](_rich_stream(dialect))
    with pytest.raises(AssertionError):
        check_stream(broken, dialect, validate=False)
