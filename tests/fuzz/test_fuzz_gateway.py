"""Fuzz targets for the gateway, over real HTTP on 127.0.0.1.

- Any request body (any bytes, any JSON value, any object with any fields):
  a 400 in the OpenAI error shape or a complete, valid stream; never a 500 or a
  cut body.
- An upstream stream cut at any byte, delivered in pieces split anywhere, with
  chunked or content-length framing: the strict openai SDK sees either the
  whole stream, or an error (HTTP 502 before the first event, an error after
  it) with exactly the text of the complete events received before the cut.
"""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

TESTS = Path(__file__).resolve().parents[1]
for extra in (TESTS, TESTS.parent, TESTS.parent / "generated"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from faulty_upstream import FaultyUpstream, Script, split_at  # noqa: E402
from http_support import check_stream, parse_sse, serve  # noqa: E402
from test_gateway_faults import (  # noqa: E402
    CHAT,
    RESPONSES,
    TEXTS,
    chat_client_run,
    complete_prefix_text,
    responses_client_run,
    sdk,
    upstream_body,
)

import responses_stream as rs  # noqa: E402
from responses_stream.gateway import create_app  # noqa: E402

_names = itertools.count()


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[str, FaultyUpstream]]:
    fake = FaultyUpstream()
    with serve(fake) as base:  # type: ignore[arg-type]
        app = create_app(base + "/v1", store="memory:", connect_timeout=5, read_timeout=5)
        with serve(app) as url:
            yield url, fake


_clients: dict[str, openai.OpenAI] = {}


def _client(url: str) -> openai.OpenAI:
    if url not in _clients:
        _clients[url] = sdk(url)
    return _clients[url]


# -- request bodies -------------------------------------------------------------------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
FIELDS = [
    "model",
    "stream",
    "messages",
    "input",
    "tools",
    "tool_choice",
    "instructions",
    "stream_options",
    "reasoning",
    "reasoning_effort",
    "max_tokens",
    "max_output_tokens",
    "temperature",
    "metadata",
]
request_objects = st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=6).map(
    lambda d: {**d, "stream": True} if d.get("stream") is not False else d
)
bodies = st.one_of(
    st.binary(max_size=40),
    json_values.map(lambda v: json.dumps(v).encode()),
    request_objects.map(lambda v: json.dumps(v).encode()),
)


@given(body=bodies, path=st.sampled_from([CHAT, RESPONSES]))
def test_any_request_body_gets_a_400_or_a_valid_stream(
    servers: tuple[str, FaultyUpstream], body: bytes, path: str
) -> None:
    url, fake = servers
    name = f"body-{next(_names)}"
    fake.script(name, Script(pieces=[upstream_body(path, ["ok"])]))
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("model") or "", str):
        parsed["model"] = name  # a string model is one the fake upstream answers
        body = json.dumps(parsed).encode()
    with httpx.Client(timeout=30) as client:
        response = client.post(url + path, content=body)
    if response.status_code == 400:
        error = response.json()["error"]
        assert set(error) == {"message", "type", "param", "code"}
        assert error["type"] == "invalid_request_error" and error["message"]
        return
    assert response.status_code == 200, (response.status_code, response.text[:500])
    if not response.headers["content-type"].startswith("text/event-stream"):  # stream: false
        answer = response.json()
        assert answer["object"] == ("response" if path == RESPONSES else "chat.completion")
        return
    if path == RESPONSES:
        payloads, _ = parse_sse(response.text)
        check_stream(payloads)
        assert [v for v in rs.validate_payloads(payloads) if v.severity == "error"] == []
        assert payloads[-1]["type"] == "response.completed"
    else:
        assert response.text.endswith("data: [DONE]\n\n")
        frames = [json.loads(f[6:]) for f in response.text[:-2].split("\n\n")[:-1]]
        assert all("error" not in f for f in frames)


# -- upstream streams cut anywhere ------------------------------------------------------
@st.composite
def cut_streams(draw: st.DrawFn) -> tuple[str, bytes, int, list[int], str]:
    path = draw(st.sampled_from([CHAT, RESPONSES]))
    body = upstream_body(path, TEXTS[:4])
    cut = draw(st.integers(0, len(body)))
    splits = draw(st.lists(st.integers(1, max(1, cut - 1)), max_size=6).map(sorted))
    framing = draw(st.sampled_from(["chunked", "length"]))
    return path, body, cut, splits, framing


@given(case=cut_streams())
def test_an_upstream_cut_anywhere_is_whole_or_a_clean_error(
    servers: tuple[str, FaultyUpstream], case: tuple[str, bytes, int, list[int], str]
) -> None:
    url, fake = servers
    path, body, cut, splits, framing = case
    name = f"cut-{next(_names)}"
    whole = cut == len(body)
    pieces = split_at(body[:cut], splits) if cut else []
    script = Script(
        pieces=pieces, end="complete" if whole else "cut", framing=framing, length=len(body)
    )
    fake.script(name, script)
    expected = complete_prefix_text(path, body[:cut])
    client = _client(url)
    try:
        result: Any = chat_client_run(client, name) if path == CHAT else None
        if path == RESPONSES:
            result = responses_client_run(client, name)
    except openai.APIStatusError as exc:  # before the first event
        assert exc.status_code == 502 and not whole
        assert expected == ""
        return
    if path == CHAT:
        text, exc, final = result
        if whole:
            assert exc is None and final.choices[0].finish_reason == "stop"
        else:
            assert isinstance(exc, openai.APIError)
            assert not isinstance(exc, openai.LengthFinishReasonError)
    else:
        events, text = result
        assert events[-1].type == ("response.completed" if whole else "response.failed")
    assert text == ("".join(TEXTS[:4]) if whole else expected)
