"""from-chat (Chat Completions -> Responses) on hostile input.

Each test is an input that once made the conversion raise, cut the stream,
drop characters or end it with a reason that says something else.  The
oracle, ``check``, is shared with tests/fuzz/test_fuzz_chat.py: every event
parses through the official SDK's ``ResponseStreamEvent`` with strict
validation (openai dialect), the project's validator reports no error, there
is exactly one terminal event, and every character of text, refusal,
reasoning and tool-call arguments received before the end is in the final
Response once, in order (lone surrogates as U+FFFD).  What must be there is
computed from the chunks by the reader below, not by the converter.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _support import validate_openresponses
from http_support import check_stream, make_app, parse_sse, serve
from openai import OpenAI
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter, ValidationError

import responses_stream as rs
from responses_stream import CountingIds, chat_data_lines, events_from_chat, sse_from_chat
from responses_stream._runtime.core.sse_parse import replace_surrogates

ROOT = Path(__file__).resolve().parents[1]
SDK_EVENT: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
TERMINAL = ("response.completed", "response.incomplete", "response.failed")
# delta field -> stream, in the order the chat routes spec handles them
FIELDS = {
    "reasoning_content": "reasoning",
    "reasoning": "reasoning",
    "content": "text",
    "refusal": "refusal",
}
MARK = 0x4E00  # the first character of call i's arguments is chr(MARK + i)


# -- the reference reader ----------------------------------------------------------
def _choice_zero(choice: Mapping[str, Any]) -> bool:
    index = choice.get("index", 0)
    return index is None or (type(index) is int and index == 0)


def _content_pieces(key: str, value: Any) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield FIELDS[key], value
        return
    for part in value if isinstance(value, list) else []:
        if isinstance(part, str):
            yield FIELDS[key], part
        elif isinstance(part, dict) and part.get("type") == "thinking":
            thinking = part.get("thinking")
            for piece in thinking if isinstance(thinking, list) else [thinking]:
                text = piece.get("text") if isinstance(piece, dict) else piece
                if isinstance(text, str):
                    yield "reasoning", text
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            yield FIELDS[key], part["text"]


def pieces(chunk: Any) -> list[tuple[Any, str]]:
    """(stream, text) in the order the chunk gives them; stream ``("call", index)``
    for arguments and ``("new", index)`` (no text) where a tool index first appears."""
    if isinstance(chunk, str):
        try:
            chunk = json.loads(chunk)
        except (ValueError, RecursionError):
            return []
    out: list[tuple[Any, str]] = []
    choices = chunk.get("choices") if isinstance(chunk, dict) else None
    for choice in choices if isinstance(choices, list) else []:
        if not isinstance(choice, dict) or not _choice_zero(choice):
            continue
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            continue
        routed: set[str] = set()
        for key in FIELDS:
            value = delta.get(key)
            if isinstance(value, str) and (not value or FIELDS[key] in routed):
                continue  # one text under two spellings is sent once
            if isinstance(value, str | list):
                routed.add(FIELDS[key])
            out += [(s, t) for s, t in _content_pieces(key, value) if t]
        calls = delta.get("tool_calls")
        for frag in calls if isinstance(calls, list) else []:
            if not isinstance(frag, dict) or type(frag.get("index")) is not int:
                continue
            out.append((("new", frag["index"]), ""))
            fn = frag.get("function")
            args = fn.get("arguments") if isinstance(fn, dict) else None
            if isinstance(args, str) and args:
                out.append((("call", frag["index"]), args))
    return out


def render(seq: Iterable[tuple[Any, str]]) -> dict[Any, str]:
    """What each stream holds: runs of one text stream (broken by another text stream
    or a new tool call) with surrogate pairs joined and lone surrogates as U+FFFD."""
    out: dict[Any, str] = {}
    run_key: Any = None
    run: list[str] = []
    seen: set[int] = set()

    def flush() -> None:
        if run_key is not None:
            out[run_key] = out.get(run_key, "") + replace_surrogates("".join(run))

    calls: dict[int, list[str]] = {}
    for key, text in seq:
        if isinstance(key, tuple) and key[0] == "new":
            if key[1] not in seen:
                seen.add(key[1])
                flush()
                run_key, run = None, []
            continue
        if isinstance(key, tuple):
            calls.setdefault(key[1], []).append(text)
            continue
        if key != run_key:
            flush()
            run_key, run = key, []
        run.append(text)
    flush()
    for index, args in calls.items():
        out[("call", index)] = replace_surrogates("".join(args))
    return out


def got(final: Mapping[str, Any]) -> tuple[dict[str, str], list[str]]:
    texts = {"text": "", "refusal": "", "reasoning": ""}
    args: list[str] = []
    for item in final["output"]:
        if item["type"] == "reasoning":
            texts["reasoning"] += "".join(c["text"] for c in item.get("content") or [])
        elif item["type"] == "message":
            for c in item["content"]:
                if c["type"] == "output_text":
                    texts["text"] += c["text"]
                else:
                    texts["refusal"] += c["refusal"]
        elif item["type"] == "function_call":
            args.append(item["arguments"])
    return texts, args


def _matches(final: Mapping[str, Any], want: dict[Any, str]) -> bool:
    texts, args = got(final)
    if any(texts[k] != want.get(k, "") for k in texts):
        return False
    used: set[int] = set()  # a call that got no arguments has nothing to check
    for a in args:
        if not a:
            continue
        index = ord(a[0]) - MARK
        if index in used or want.get(("call", index)) != a:
            return False
        used.add(index)
    unmatched = [k for k, v in want.items() if isinstance(k, tuple) and v and k[1] not in used]
    return not unmatched


# -- running and checking -----------------------------------------------------------
@dataclass
class Run:
    payloads: list[dict[str, Any]]
    at: int  # how many chunks had been taken when the terminal event came

    @property
    def final(self) -> dict[str, Any]:
        response: dict[str, Any] = self.payloads[-1]["response"]
        return response

    @property
    def error(self) -> dict[str, Any] | None:
        """The ``error`` event's code and message (flat in openai, nested in openresponses)."""
        event = self.payloads[-2]
        if event["type"] != "error":
            return None
        body: dict[str, Any] = event.get("error") or event
        return body


class _Counting:
    def __init__(self, chunks: Iterable[Any]) -> None:
        self.chunks = chunks
        self.taken = 0

    def __iter__(self) -> Iterator[Any]:
        for chunk in self.chunks:
            self.taken += 1
            yield chunk


def run_sse(chunks: list[Any], dialect: str = "openai", request: Any = None) -> Run:
    src = _Counting(chunks)
    body = b""
    at = -1
    for frame in sse_from_chat(src, dialect=dialect, request=request, ids=CountingIds()):
        body += frame
        if any(f"event: {t}\n".encode() in frame for t in TERMINAL):
            at = src.taken
    payloads, done = parse_sse(body.decode("utf-8"))  # strict UTF-8
    assert done == bool(rs.DIALECTS[dialect].encoder().close())  # the dialect's closing frame
    return Run(payloads, at)


def run_events(chunks: list[Any], dialect: str = "openai", request: Any = None) -> Run:
    src = _Counting(chunks)
    enc = rs.DIALECTS[dialect].encoder()
    payloads = []
    at = -1
    for event in events_from_chat(src, dialect=dialect, request=request, ids=CountingIds()):
        payloads.append(json.loads(enc.encode(event).split(b"data: ", 1)[1]))
        if payloads[-1]["type"] in TERMINAL:
            at = src.taken
    return Run(payloads, at)


def check(chunks: list[Any], dialect: str = "openai", request: Any = None) -> Run:
    """Both APIs: a stream strict clients accept, with every character received."""
    run = run_sse(chunks, dialect, request)
    ev = run_events(chunks, dialect, request)
    strip = re.compile(r'"(created_at|completed_at)":\s*\d+')
    assert [strip.sub("", json.dumps(p)) for p in ev.payloads] == [
        strip.sub("", json.dumps(p)) for p in run.payloads
    ], "the events API and the SSE API differ"
    d = rs.DIALECTS[dialect]
    for p in run.payloads:
        if dialect == "openai":
            SDK_EVENT.validate_json(json.dumps(p), strict=True)
        else:
            assert validate_openresponses(p, d) == [], p
    errors = [v for v in rs.validate_payloads(run.payloads, dialect) if v.severity == "error"]
    assert errors == [], errors
    final = check_stream(run.payloads)  # one terminal event, dense indexes, whole lifecycles
    assert run.at >= 0
    before = [p for c in chunks[: run.at - 1] for p in pieces(c)] if run.at else []
    if run.at == len(chunks) and run.payloads[-1]["type"] != "response.failed":
        candidates = [[p for c in chunks for p in pieces(c)]]
    elif run.at == 0:
        candidates = [[]]
    else:
        last = [] if _is_done(chunks[run.at - 1]) else pieces(chunks[run.at - 1])
        if run.payloads[-1]["type"] != "response.failed":
            candidates = [before + last]
        else:
            candidates = [before + last[:j] for j in range(len(last) + 1)]
    if run.at == len(chunks) and run.payloads[-1]["type"] == "response.failed":
        candidates.append([p for c in chunks for p in pieces(c)])
    wants = [render(c) for c in candidates]
    assert any(_matches(final, w) for w in wants), (got(final), wants[-1])
    return run


def _is_done(chunk: Any) -> bool:
    return isinstance(chunk, str) and chunk.strip() == "[DONE]"


def chunk(**delta: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta}]}


def finish(reason: Any = "stop", **extra: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {}, "finish_reason": reason, **extra}]}


def call(index: int, args: str = "", id: str | None = None, name: str | None = None) -> Any:
    fn: dict[str, Any] = {"arguments": args}
    if name is not None:
        fn["name"] = name
    frag: dict[str, Any] = {"index": index, "function": fn}
    if id is not None:
        frag["id"] = id
    return chunk(tool_calls=[frag])


def args_of(i: int, text: str) -> str:
    return chr(MARK + i) + text


STOP = finish()


# -- SSE input through the package's parser ---------------------------------------------
SSE_BODY = (
    'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n'
    ": a comment\n"
    'data: {"choices":[{"index":0,\ndata: "delta":{"content":" there"}}]}\n\n'
    'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    "data: [DONE]\n\n"
)


@pytest.mark.parametrize(
    "body",
    [
        SSE_BODY,
        "\ufeff" + SSE_BODY,
        SSE_BODY.replace("\n", "\r"),
        SSE_BODY.replace("\n", "\r\n"),
        "\ufeff" + SSE_BODY.replace("\n", "\r"),
    ],
    ids=["lf", "bom", "cr", "crlf", "bom-cr"],
)
def test_chat_input_follows_the_sse_rules(body: str) -> None:
    raw = body.encode()
    as_lines = list(chat_data_lines(raw.decode().splitlines(keepends=True)))
    as_bytes = list(chat_data_lines([raw[i : i + 7] for i in range(0, len(raw), 7)]))
    assert as_lines == as_bytes
    run = check(as_bytes)
    assert run.payloads[-1]["type"] == "response.completed"
    assert got(run.final)[0]["text"] == "Hi there"


@pytest.mark.parametrize("body", [SSE_BODY, "\ufeff" + SSE_BODY.replace("\n", "\r")])
def test_from_chat_command_reads_bom_and_cr(body: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "responses_stream", "from-chat"],
        input=body.encode(),
        capture_output=True,
        cwd=ROOT / "generated",
    )
    payloads, _ = parse_sse(proc.stdout.decode("utf-8"))
    assert payloads[-1]["type"] == "response.completed", proc.stderr
    assert got(payloads[-1]["response"])[0]["text"] == "Hi there"


def test_input_over_the_sse_caps_fails_with_its_own_code() -> None:
    raw = b'data: {"choices":[{"index":0,"delta":{"content":"ok"}}]}\n\ndata: ' + b"x" * 5000
    data = list(chat_data_lines([raw], max_line_bytes=1000))
    run = check(data)
    assert run.error is not None and run.error["code"] == "sse_limit_exceeded"
    assert got(run.final)[0]["text"] == "ok"


# -- no chat chunk at all -----------------------------------------------------------------
@pytest.mark.parametrize(
    "raw",
    [b"", b"\n\n", b"\x00\xff\xfe garbage \x81\n\n", b"hello\nworld\n", b": only\n\n"],
    ids=["empty", "blank", "binary", "text", "comment"],
)
def test_input_without_a_chunk_is_an_error_not_a_length_cut(raw: bytes) -> None:
    run = check(list(chat_data_lines([raw])))
    assert run.payloads[-1]["type"] == "response.failed"
    assert run.error is not None and run.error["code"] == "empty_input"
    assert run.final["incomplete_details"] is None


def test_only_done_is_empty_input() -> None:
    run = check(["[DONE]"])
    assert run.error is not None and run.error["code"] == "empty_input"


def test_real_chunks_without_finish_stay_incomplete() -> None:
    run = check([{"choices": [], "usage": {"prompt_tokens": 3}}, chunk(content="Hi")])
    assert run.payloads[-1]["type"] == "response.incomplete"
    assert run.final["incomplete_details"] == {"reason": "max_output_tokens"}


# -- surrogates -----------------------------------------------------------------------
def data(**delta: Any) -> str:
    return json.dumps({"choices": [{"index": 0, "delta": delta}]})  # escapes surrogates


@pytest.mark.parametrize("field", ["content", "reasoning_content", "refusal"])
def test_a_lone_surrogate_is_u_fffd_and_said(field: str, caplog: Any) -> None:
    chunks = [data(**{field: "x"}), data(**{field: "a\ud800b"}), data(**{field: "\udc00"}), STOP]
    assert "\\ud800" in chunks[1]
    with caplog.at_level(logging.WARNING, logger="responses_stream._runtime.inputs.chat"):
        run = check(chunks)
    stream = FIELDS[field]
    assert got(run.final)[0][stream] == "xa\ufffdb\ufffd"
    assert run.payloads[-1]["type"] == "response.completed"
    assert any("lone UTF-16 surrogate" in r.getMessage() for r in caplog.records)


def test_the_converter_lists_its_repairs() -> None:
    proc = rs.StreamProcessor("openai", ids=CountingIds())
    proc.start()
    conv = rs.ChatToResponses(proc)
    conv.feed_data(data(content="\ud800"))
    conv.end()
    assert conv.warnings and "U+FFFD" in conv.warnings[0]
    clean = rs.ChatToResponses(rs.StreamProcessor("openai"))
    clean.proc.start()
    clean.feed_data(data(content="fine"))
    clean.end()
    assert clean.warnings == []


@pytest.mark.parametrize(
    "parts",
    [["a\ud83d\ude00b"], ["x", "a\ud83d", "\ude00b"], ["\ud83d", "\ude00"]],
    ids=["escaped-pair", "pair-over-two-deltas", "only-the-halves"],
)
def test_a_surrogate_pair_is_the_real_character(parts: list[str]) -> None:
    run = check([data(content=p) for p in parts] + [STOP])
    assert got(run.final)[0]["text"] == "".join(parts).encode("utf-16", "surrogatepass").decode(
        "utf-16"
    )
    assert "\U0001f600" in got(run.final)[0]["text"]


def test_a_held_high_surrogate_before_a_tool_call_is_u_fffd() -> None:
    chunks = [data(content="a\ud83d"), call(0, args_of(0, "{}"), "c", "f"), STOP]
    run = check(chunks)
    assert got(run.final)[0]["text"] == "a\ufffd"


def test_surrogates_in_arguments_names_and_ids() -> None:
    frag = {
        "index": 0,
        "id": "c\ud800",
        "function": {"name": "f\udc00", "arguments": "\u4e00\ud83d"},
    }
    more = {"index": 0, "function": {"arguments": "\ude00\ud800"}}
    chunks = [json.dumps(chunk(tool_calls=[frag])), json.dumps(chunk(tool_calls=[more])), STOP]
    run = check(chunks)
    (item,) = run.final["output"]
    assert (item["call_id"], item["name"], item["arguments"]) == (
        "c\ufffd",
        "f\ufffd",
        "\u4e00\U0001f600\ufffd",
    )


@pytest.mark.parametrize("text", ["\u2028\u2029", "a\x00b", "é" * 3 + "\U0001f600", "x" * 300_000])
def test_awkward_text_arrives_whole(text: str) -> None:
    run = check([data(content=text), data(content=text), STOP])
    assert got(run.final)[0]["text"] == text * 2


# -- logprobs and usage of the wrong shape ---------------------------------------------
BAD_LOGPROBS = [
    [1, 2],
    "x",
    {"content": "abc"},
    {"content": [{"token": "a", "logprob": "x"}]},
    {"content": [{"token": "a", "logprob": -1, "top_logprobs": 3}]},
    {"content": [{"token": "a", "logprob": float("nan")}]},
    {"content": [{"token": "a", "logprob": float("inf")}]},
    {"content": [{"token": 5, "logprob": -1}]},
    {"content": [{"token": "a", "logprob": -1, "bytes": [300, -1, "x", 97]}]},
    {"content": [{"token": "a", "logprob": -1, "top_logprobs": [{"token": "b", "logprob": None}]}]},
]


@pytest.mark.parametrize("logprobs", BAD_LOGPROBS)
def test_malformed_logprobs_keep_the_text(logprobs: Any) -> None:
    c = {"choices": [{"index": 0, "delta": {"content": "ab"}, "logprobs": logprobs}]}
    run = check([chunk(content="x"), c, STOP])
    assert run.payloads[-1]["type"] == "response.completed"
    assert got(run.final)[0]["text"] == "xab"
    for p in run.payloads:
        for lp in p.get("logprobs") or []:
            assert isinstance(lp["logprob"], float) and all(0 <= b <= 255 for b in lp["bytes"])


def test_logprob_minus_infinity_is_the_floor_and_nan_is_dropped() -> None:
    toks = [
        {"token": "a", "logprob": float("-inf")},
        {"token": "b", "logprob": float("nan")},
        {"token": "c", "logprob": -0.5, "top_logprobs": [{"token": "d", "logprob": float("nan")}]},
    ]
    c = {"choices": [{"index": 0, "delta": {"content": "ac"}, "logprobs": {"content": toks}}]}
    run = check([c, STOP])
    (delta,) = [p for p in run.payloads if p["type"] == "response.output_text.delta"]
    assert [(t["token"], t["logprob"], t["top_logprobs"]) for t in delta["logprobs"]] == [
        ("a", -9999.0, []),
        ("c", -0.5, []),
    ]


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": 1, "prompt_tokens_details": 5},
        {"completion_tokens_details": "x", "completion_tokens": 2},
        {"input_tokens": 1, "input_tokens_details": [1]},
        {"prompt_tokens": -5, "completion_tokens": 10**30},
        {"prompt_tokens": "7", "completion_tokens": float("nan")},
        {"prompt_tokens": 4.0},
        "lots",
        [1],
    ],
)
def test_usage_of_the_wrong_shape_counts_as_unknown(usage: Any) -> None:
    run = check([chunk(content="a"), STOP, {"choices": [], "usage": usage}])
    u = run.final["usage"]
    assert run.payloads[-1]["type"] == "response.completed"
    for value in (u["input_tokens"], u["output_tokens"], u["total_tokens"]):
        assert 0 <= value < 2**63
    assert u["total_tokens"] == u["input_tokens"] + u["output_tokens"]
    if usage == {"prompt_tokens": 4.0}:
        assert u["input_tokens"] == 4


# -- shapes ---------------------------------------------------------------------------
FAILING = {
    "choices-5": [{"choices": 5}],
    "choice-not-object": [{"choices": ["x"]}],
    "delta-str": [{"choices": [{"index": 0, "delta": "x"}]}],
    "tool-calls-object": [chunk(tool_calls={})],
    "tool-calls-str": [chunk(tool_calls="x")],
    "finish-list": [chunk(content="kept"), finish(["stop"])],
    "finish-object": [chunk(content="kept"), finish({"a": 1})],
    "finish-unknown": [chunk(content="kept"), finish("whatever")],
    "index-str": [{"choices": [{"index": "0", "delta": {"content": "a"}}]}],
    "index-bool": [{"choices": [{"index": False, "delta": {"content": "a"}}]}],
    "index-float": [
        chunk(content="kept"),
        {"choices": [{"index": 0.0, "delta": {"content": "a"}}]},
    ],
    "function-str": [chunk(tool_calls=[{"index": 0, "id": "c", "function": "x"}])],
    "name-int": [chunk(tool_calls=[{"index": 0, "id": "c", "function": {"name": 5}}])],
    "tool-index-bool": [chunk(tool_calls=[{"index": True, "id": "c", "function": {"name": "f"}}])],
    "fragment-not-object": [chunk(tool_calls=["x"])],
    "content-after-finish": [chunk(content="kept"), STOP, chunk(content="late")],
    "second-choice": [
        {
            "choices": [
                {"index": 0, "delta": {"content": "kept"}},
                {"index": 1, "delta": {"content": "other"}},
            ]
        }
    ],
    "upstream-error": [chunk(content="kept"), {"error": {"message": "boom \ud800"}}],
    "not-json": [chunk(content="kept"), '{"choices": ['],
    "too-deep": [chunk(content="kept"), "[" * 100_000],
    "data-not-a-str": [chunk(content="kept"), 5],
}


@pytest.mark.parametrize("dialect", ["openai", "openresponses"])
@pytest.mark.parametrize("name", sorted(FAILING))
def test_broken_shapes_fail_cleanly(name: str, dialect: str) -> None:
    run = check(FAILING[name], dialect)
    assert run.payloads[-1]["type"] == "response.failed", name
    assert run.error is not None and run.error["message"]


VALID = {
    "none-fields": [
        chunk(content=None, role=None, tool_calls=None, refusal=None),
        {"choices": [{"index": 0, "delta": None, "finish_reason": None, "logprobs": None}]},
        chunk(content="a"),
        STOP,
    ],
    "empty-finish-string": [
        {"choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": ""}]},
        STOP,
    ],
    "usage-first": [{"choices": [], "usage": {"prompt_tokens": 2}}, chunk(content="a"), STOP],
    "empty-strings": [chunk(content=""), chunk(content="a", reasoning_content=""), STOP],
    "content-int": [chunk(content=5), chunk(content="a"), STOP],
    "role-only-second-choice": [
        {
            "choices": [
                {"index": 0, "delta": {"content": "a"}},
                {"index": 1, "delta": {"role": "x"}},
            ]
        },
        STOP,
    ],
    "index-gaps": [
        call(2, args_of(2, '{"a"'), "c2", "fn2"),
        call(7, args_of(7, "{}"), "c7", "fn7"),
        call(2, ":1}"),
        STOP,
    ],
    "late-id-split-name": [
        call(0, "", None, "fn"),
        call(0, args_of(0, "{"), None, "0"),
        call(0, "}", "call_0"),
        call(0, "", "call_0"),
        STOP,
    ],
    "tool-then-text": [call(0, args_of(0, "{}"), "c", "f"), chunk(content="after"), STOP],
    "huge-arguments": [call(0, args_of(0, "y" * 200_000), "c", "f"), STOP],
}


@pytest.mark.parametrize("dialect", ["openai", "openresponses"])
@pytest.mark.parametrize("name", sorted(VALID))
def test_awkward_but_valid_shapes(name: str, dialect: str) -> None:
    run = check(VALID[name], dialect)
    assert run.payloads[-1]["type"] == "response.completed", run.payloads[-2:]


# -- through the SDK over real HTTP -----------------------------------------------------
def test_hostile_streams_through_the_sdk_client() -> None:
    chat = {
        "surrogates": [
            data(content="a\ud800"),
            data(content="\ud83d"),
            data(content="\ude00"),
            STOP,
        ],
        "bad-logprobs": [
            {"choices": [{"index": 0, "delta": {"content": "t"}, "logprobs": BAD_LOGPROBS[5]}]},
            STOP,
        ],
        "empty": [],
        "shape": [chunk(content="kept"), {"choices": [{"index": 0, "delta": "x"}]}],
    }
    with (
        serve(make_app(chat, {})) as url,
        OpenAI(
            base_url=f"{url}/v1", api_key="x", _strict_response_validation=True, max_retries=0
        ) as client,
    ):
        results = {}
        for name in chat:
            with client.responses.stream(model=name, input="hi") as stream:
                events = list(stream)
            results[name] = events[-1]
    assert results["surrogates"].type == "response.completed"
    assert results["surrogates"].response.output_text == "a\ufffd\U0001f600"
    assert results["bad-logprobs"].type == "response.completed"
    assert results["empty"].type == "response.failed"
    assert results["shape"].type == "response.failed"
    assert results["shape"].response.output_text == "kept"


def test_the_sdk_rejects_a_nan_logprob_which_is_why_it_is_dropped() -> None:
    # A NaN logprob cannot be written as JSON but as null; the strict SDK model refuses
    # it, so the converter leaves such an entry out instead.
    event = {
        "type": "response.output_text.delta",
        "sequence_number": 3,
        "item_id": "msg_1",
        "output_index": 0,
        "content_index": 0,
        "delta": "a",
        "logprobs": [{"token": "a", "logprob": None, "bytes": [], "top_logprobs": []}],
    }
    with pytest.raises(ValidationError):
        SDK_EVENT.validate_json(json.dumps(event), strict=True)
