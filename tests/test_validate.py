"""The conformance validator: the broken-stream corpus, the CLI, and processor output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from responses_stream import DIALECTS, CountingIds, events_from_chat
from responses_stream._runtime.consumers.validate import ERROR, StreamValidator, validate_payloads
from responses_stream._runtime.core.sse_parse import parse_sse

ROOT = Path(__file__).resolve().parents[1]
BROKEN = Path(__file__).parent / "broken"
EXPECTED: dict[str, dict[str, Any]] = json.loads((BROKEN / "expected.json").read_text())


def _validate_file(path: Path, dialect: str = "openai") -> StreamValidator:
    v = StreamValidator(dialect)
    for message in parse_sse([path.read_bytes()]):
        v.feed_raw(message.data, message.event)
    v.finish()
    return v


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_broken_corpus_trips_its_rule(name: str) -> None:
    case = EXPECTED[name]
    v = _validate_file(BROKEN / f"{name}.sse", case["dialect"])
    rules = {x.rule for x in v.violations}
    if case["rule"] is None:
        assert v.violations == [], [str(x) for x in v.violations]
    else:
        assert case["rule"] in rules, (case["bug"], [str(x) for x in v.violations])


def test_warning_rules_leave_the_stream_valid() -> None:
    v = _validate_file(BROKEN / "interleaved_items_warning.sse")
    assert v.violations and all(x.severity != ERROR for x in v.violations)


def _cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "responses_stream", "validate", *args],
        cwd=ROOT / "generated",
        input=stdin,
        capture_output=True,
    )


def test_cli_exit_codes_and_formats() -> None:
    ok = _cli(str(BROKEN / "valid_reference.sse"))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout == b""
    bad = _cli(str(BROKEN / "vllm_45742_content_index_carried.sse"))
    assert bad.returncode == 1
    first = bad.stdout.decode().splitlines()[0]
    assert first.startswith("#9 seq=9 error CONTENT_INDEX_NOT_DENSE: ")
    as_json = _cli(
        "--json", "-", stdin=(BROKEN / "litellm_28899_sequence_hardcoded.sse").read_bytes()
    )
    assert as_json.returncode == 1
    report = json.loads(as_json.stdout)
    assert report["valid"] is False
    assert {"rule", "severity", "index", "sequence_number", "message"} <= set(
        report["violations"][0]
    )
    assert "SEQ_NOT_INCREASING" in {x["rule"] for x in report["violations"]}
    missing = _cli(str(BROKEN / "no-such-file.sse"))
    assert missing.returncode == 2 and b"cannot read" in missing.stderr


CHAT_RECORDINGS = sorted((ROOT / "tests" / "recordings" / "chat").glob("*/*.jsonl"))


@pytest.mark.parametrize("path", CHAT_RECORDINGS[::7], ids=lambda p: p.stem)
def test_a_chat_completions_stream_is_named_as_such_once(path: Path) -> None:
    """A genuine Chat Completions stream fed to the validator: one violation that says
    what it is, not a malformed event per chunk."""
    v = StreamValidator("openai")
    v.feed_sse([path.read_bytes()])
    assert v.index > 0
    assert [x.rule for x in v.finish()] == ["CHAT_COMPLETIONS_STREAM"]


def test_the_cli_names_a_chat_completions_stream_in_one_line() -> None:
    chat = (ROOT / "tests" / "recorded" / "llamacpp_text.sse").read_bytes()
    proc = _cli("-", stdin=chat)
    assert proc.returncode == 1
    lines = proc.stdout.decode().splitlines()
    assert len(lines) == 1 and "CHAT_COMPLETIONS_STREAM" in lines[0], lines
    assert "from-chat" in lines[0]
    converted = subprocess.run(
        [sys.executable, "-m", "responses_stream", "from-chat", "-"],
        input=chat,
        capture_output=True,
        check=True,
    )
    assert _cli("-", stdin=converted.stdout).returncode == 0


def test_openresponses_dialect_flags_openai_names() -> None:
    v = _validate_file(BROKEN / "valid_reference.sse", "openresponses")
    assert "NON_STANDARD_EVENT" in {x.rule for x in v.violations}  # reasoning_text.* is renamed


TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8)


@st.composite
def chat_streams(draw: st.DrawFn) -> list[dict[str, Any]]:
    chunks: list[dict[str, Any]] = []
    calls = 0
    for _ in range(draw(st.integers(0, 8))):
        delta: dict[str, Any] = {}
        if draw(st.booleans()):
            delta[draw(st.sampled_from(["reasoning", "reasoning_content"]))] = draw(TEXT)
        if draw(st.booleans()):
            delta["content"] = draw(TEXT)
        if draw(st.integers(0, 4)) == 0:
            delta["refusal"] = draw(TEXT)
        fragments = []
        for _ in range(draw(st.integers(0, 2))):
            index = draw(st.integers(0, calls))
            if index == calls:
                calls += 1
                fragments.append(
                    {
                        "index": index,
                        "id": f"call_{index}",
                        "type": "function",
                        "function": {"name": "f", "arguments": draw(TEXT)},
                    }
                )
            else:
                fragments.append({"index": index, "function": {"arguments": draw(TEXT)}})
        if fragments:
            delta["tool_calls"] = fragments
        chunks.append({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    reason = draw(st.sampled_from(["stop", "tool_calls", "length", "content_filter", None]))
    if reason is not None:
        chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
    return chunks


@settings(
    max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(chunks=chat_streams(), dialect=st.sampled_from(sorted(DIALECTS)))
def test_processor_output_always_validates(chunks: list[dict[str, Any]], dialect: str) -> None:
    enc = DIALECTS[dialect].encoder()
    payloads = [
        json.loads(enc.encode(e).split(b"data: ", 1)[1])
        for e in events_from_chat(chunks, dialect=dialect, ids=CountingIds())
    ]
    errors = [str(x) for x in validate_payloads(payloads, dialect) if x.severity == ERROR]
    assert errors == []
