"""from-chat on every genuine chat recording under ``tests/recordings/chat/``.

Each recording (one JSON chunk per line, as the provider sent it) is served by
a real HTTP server on 127.0.0.1 and read with the official SDK's
``client.responses.stream()`` with strict response validation.  What the final
Response must hold is computed from the chunks by the small reader below,
independently of the converter: every character of text, refusal, reasoning
and tool-call arguments of choice 0, up to the point where another choice
carries output (the ``n > 1`` policy: the stream then fails ``unsupported_n``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from _support import validate_openresponses
from http_support import check_stream, make_app, parse_sse, serve
from openai import OpenAI

import responses_stream as rs

ROOT = Path(__file__).parent / "recordings" / "chat"
RECORDINGS = sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob("**/*.jsonl"))


def lines(name: str) -> list[str]:
    text = (ROOT / name).read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip()]


# -- the reference reader ----------------------------------------------------------
@dataclass
class Expected:
    text: str = ""
    refusal: str = ""
    reasoning: str = ""
    args: dict[int, str] = field(default_factory=dict)
    other_choice: bool = False  # output on a choice other than 0 (n > 1)


def _texts(value: Any) -> Iterator[tuple[str, str]]:
    """("text" | "thinking", text) for a string or a list of content parts."""
    if isinstance(value, str):
        yield "text", value
        return
    for part in value if isinstance(value, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "thinking":
            thinking = part.get("thinking")
            for piece in thinking if isinstance(thinking, list) else [thinking]:
                text = piece.get("text") if isinstance(piece, dict) else piece
                if isinstance(text, str):
                    yield "thinking", text
        elif isinstance(part.get("text"), str):
            yield "text", part["text"]


def _has_output(delta: dict[str, Any]) -> bool:
    keys = ("content", "refusal", "reasoning", "reasoning_content")
    return bool(delta.get("tool_calls")) or any(
        text for key in keys for _, text in _texts(delta.get(key))
    )


def read(name: str) -> Expected:
    exp = Expected()
    for line in lines(name):
        chunk = json.loads(line)
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if choice.get("index", 0) != 0:
                if _has_output(delta):
                    exp.other_choice = True
                    return exp
                continue
            for kind, text in _texts(delta.get("content")):
                if kind == "thinking":
                    exp.reasoning += text
                else:
                    exp.text += text
            exp.refusal += delta.get("refusal") or ""
            # some servers send one reasoning text under both names
            exp.reasoning += delta.get("reasoning_content") or delta.get("reasoning") or ""
            for i, call in enumerate(delta.get("tool_calls") or []):
                index = call.get("index")
                index = i + len(exp.args) if index is None else index  # index-less: one per call
                fn = call.get("function") or {}
                args = fn.get("arguments")
                if args is not None and not isinstance(args, str):
                    args = json.dumps(args, separators=(",", ":"), ensure_ascii=False)
                exp.args[index] = exp.args.get(index, "") + (args or "")
    return exp


def actual(response: Mapping[str, Any]) -> Expected:
    out = Expected()
    calls = 0
    for item in response["output"]:
        if item["type"] == "reasoning":
            out.reasoning += "".join(c["text"] for c in item.get("content") or [])
        elif item["type"] == "message":
            for c in item["content"]:
                if c["type"] == "output_text":
                    out.text += c["text"]
                else:
                    out.refusal += c["refusal"]
        elif item["type"] == "function_call":
            out.args[calls] = item["arguments"]
            calls += 1
    return out


# -- the server --------------------------------------------------------------------
@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with serve(make_app({name: lines(name) for name in RECORDINGS}, {})) as url:
        yield url


@pytest.fixture(scope="module")
def client(base_url: str) -> Iterator[OpenAI]:
    with OpenAI(
        base_url=f"{base_url}/v1", api_key="x", _strict_response_validation=True, max_retries=0
    ) as c:
        yield c


def test_there_are_recordings() -> None:
    assert len(RECORDINGS) >= 4
    assert "mistral/mistral-reasoning.jsonl" in RECORDINGS
    provenance = json.loads((ROOT / "provenance.json").read_text(encoding="utf-8"))
    assert set(RECORDINGS) <= set(provenance)


@pytest.mark.parametrize("name", RECORDINGS)
def test_recording(name: str, client: OpenAI, base_url: str) -> None:
    with client.responses.stream(model=name, input="hi") as stream:
        events = list(stream)
        if events[-1].type == "response.completed":
            final = stream.get_final_response().model_dump(mode="json")
        else:
            final = events[-1].response.model_dump(mode="json")
    body = {"model": name, "input": "hi", "stream": True}
    raw, _ = parse_sse(httpx.post(f"{base_url}/v1/responses", json=body, timeout=10).text)
    assert check_stream(raw) == raw[-1]["response"]
    assert [i["id"] for i in raw[-1]["response"]["output"]] == [i["id"] for i in final["output"]]

    exp = read(name)
    got = actual(final)
    assert got.text == exp.text
    assert got.refusal == exp.refusal
    assert got.reasoning == exp.reasoning
    assert sorted(got.args.values()) == sorted(exp.args.values())
    if exp.other_choice:
        assert raw[-2]["type"] == "error" and raw[-2]["code"] == "unsupported_n", raw[-2]
        assert final["status"] == "failed"


@pytest.mark.parametrize("name", RECORDINGS)
def test_recording_openresponses(name: str) -> None:
    d = rs.DIALECTS["openresponses"]
    frames = b"".join(rs.sse_from_chat(lines(name), dialect="openresponses", request={}))
    events, done = parse_sse(frames.decode("utf-8"))
    assert done
    for event in events:
        assert validate_openresponses(event, d) == [], event
    final = check_stream(events)
    exp, got = read(name), actual(final)
    assert (got.text, got.refusal, got.reasoning) == (exp.text, exp.refusal, exp.reasoning)
    assert sorted(got.args.values()) == sorted(exp.args.values())
