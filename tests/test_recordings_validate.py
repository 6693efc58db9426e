"""The validator on genuine recordings: tolerant of what the reference API sends."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from recordings_support import (
    PRODUCER_FAULTS,
    RESUMED,
    is_reference,
    is_resumed,
    is_unsequenced,
    is_untouched,
    responses_files,
    streams,
)

from responses_stream import ResponseAccumulator, validate_payloads

GENERATED = Path(__file__).resolve().parents[1] / "generated"
FILES = responses_files()
REFERENCE_UNTOUCHED = [f for f in FILES if is_reference(f) and is_untouched(f)]
# numbered from 0, as a stream read from its start is
NUMBERED = [
    f
    for f in REFERENCE_UNTOUCHED
    if not any(is_unsequenced(s) or is_resumed(s) for s in streams(f))
]


def test_corpus_covers_at_least_40_reference_streams() -> None:
    assert len([f for f in FILES if is_reference(f)]) >= 40


@pytest.mark.parametrize("name", REFERENCE_UNTOUCHED)
def test_reference_recording_has_no_errors(name: str) -> None:
    """0 errors on what OpenAI and Azure send, but for the faults they make themselves."""
    for stream in streams(name):
        found = validate_payloads(stream, resumed=is_resumed(stream))  # as it was fetched
        errors = [v for v in found if v.severity == "error"]
        assert {v.rule for v in errors} == PRODUCER_FAULTS.get(name, set()), [
            str(e) for e in errors
        ]


def test_openai_leaving_items_open_is_still_reported() -> None:
    [name] = PRODUCER_FAULTS
    [stream] = streams(name)
    found = [v for v in validate_payloads(stream) if v.severity == "error"]
    assert [v.rule for v in found] == ["MISSING_DONE", "MISSING_DONE"]
    assert all("mcpl_" in v.message and "still open" in v.message for v in found)


def test_genuine_streams_from_before_sequence_numbers_are_warnings() -> None:
    early = [f for f in REFERENCE_UNTOUCHED if any(is_unsequenced(s) for s in streams(f))]
    assert len(early) == 2
    for name in early:
        for stream in streams(name):
            found = validate_payloads(stream)
            assert [v.rule for v in found if v.severity == "error"] == []
            assert [v.rule for v in found].count("SEQ_LEGACY") == 1
            strict = validate_payloads(stream, strict=True)
            assert "SEQ_LEGACY" in {v.rule for v in strict if v.severity == "error"}


def test_a_resumed_stream_is_a_continuation() -> None:
    """OpenAI's answer to GET /responses/{id}?stream=true&starting_after=0: no
    response.created, numbers from 1.  Said to be resumed, it is checked from there and
    reported as a continuation."""
    [resumed] = streams(RESUMED + ".2.jsonl")
    assert is_resumed(resumed) and resumed[0]["sequence_number"] == 1
    for strict in (False, True):
        found = validate_payloads(resumed, strict=strict, resumed=True)
        # strict: the usage's cache_write_tokens, which this older stream leaves out
        allowed = {"LEGACY_FIELD"} if strict else set()
        assert {v.rule for v in found if v.severity == "error"} <= allowed
        [note] = [v for v in found if v.rule == "CONTINUATION"]
        assert note.severity == "warning" and "after sequence_number 0" in note.message


def _cuts() -> list[list[dict[str, Any]]]:
    [whole] = streams(RESUMED + ".1.jsonl")
    return [whole[n:] for n in range(1, len(whole))]


def test_a_stream_resumed_at_any_event_has_no_errors() -> None:
    for rest in _cuts():
        found = validate_payloads(rest, resumed=True)
        assert [str(v) for v in found if v.severity == "error"] == []
        assert [v.rule for v in found].count("CONTINUATION") == 1


def test_a_continuation_still_checks_what_it_sees() -> None:
    [whole] = streams(RESUMED + ".1.jsonl")
    rest = whole[3:]  # from output_item.added on: the message is opened in the continuation
    assert rest[0]["type"] == "response.output_item.added"
    bad = [{**e, "delta": "X"} if e["type"] == "response.output_text.delta" else e for e in rest]
    rules = {v.rule for v in validate_payloads(bad, resumed=True) if v.severity == "error"}
    assert "DONE_TEXT_MISMATCH" in rules
    late = rest[:1] + [e for e in rest[1:] if e["type"] != "response.output_item.done"]
    found = validate_payloads(late, resumed=True)
    assert "MISSING_DONE" in {v.rule for v in found if v.severity == "error"}
    # an event for an index below one the continuation opened was never added
    stray = {**rest[2], "output_index": 0, "sequence_number": 99}
    extra = [*rest[:-1], stray]
    assert "UNKNOWN_ITEM" not in {v.rule for v in validate_payloads(extra, resumed=True)}
    moved = [{**e, "output_index": 1} if "output_index" in e else e for e in rest]
    stray = {**rest[3], "output_index": 0, "sequence_number": moved[-1]["sequence_number"] + 1}
    rules = {v.rule for v in validate_payloads([*moved[:4], stray, *moved[4:]], resumed=True)}
    assert "UNKNOWN_ITEM" in rules


def test_a_stream_missing_its_start_is_an_error_unless_said_to_be_resumed() -> None:
    """A server that never sends response.created, numbering from 1, is not a
    continuation by default: the missing start is an error, with a hint."""
    [whole] = streams(RESUMED + ".1.jsonl")
    assert [e["type"] for e in whole[:3]] == [
        "response.created",
        "response.queued",
        "response.in_progress",
    ]
    for headless, missing in ((whole[1:], set()), (whole[2:], {"CREATED_NOT_FIRST"})):
        found = validate_payloads(headless)
        errors = {v.rule for v in found if v.severity == "error"}
        assert {"SEQ_NOT_FROM_ZERO", *missing} <= errors
        assert "CONTINUATION" not in {v.rule for v in found}
        [start] = [v for v in found if v.rule == "SEQ_NOT_FROM_ZERO"]
        assert "starting_after" in start.message
        told = validate_payloads(headless, resumed=True)
        assert [v.rule for v in told if v.severity == "error"] == []
        assert [v.rule for v in told].count("CONTINUATION") == 1


def test_a_stream_starting_past_zero_with_created_is_still_an_error() -> None:
    [whole] = streams(RESUMED + ".1.jsonl")
    shifted = [{**e, "sequence_number": e["sequence_number"] + 5} for e in whole]
    rules = [v.rule for v in validate_payloads(shifted)]
    assert "SEQ_NOT_FROM_ZERO" in rules and "CONTINUATION" not in rules


@pytest.mark.parametrize("name", FILES)
def test_every_recording_is_judged_without_raising(name: str) -> None:
    for stream in streams(name):
        for v in validate_payloads(stream, strict=True):
            assert v.severity in ("error", "warning")


def test_opaque_fields_are_compared_by_presence() -> None:
    # OpenAI re-encrypts encrypted_content between output_item.done and
    # response.completed: a recording where the bytes differ must still pass.
    name = "openai/openai--openai-reasoning-encrypted-content.1.jsonl"
    stream = streams(name)[0]
    done = [
        e["item"]["encrypted_content"]
        for e in stream
        if e["type"] == "response.output_item.done" and e["item"]["type"] == "reasoning"
    ]
    final = [
        i["encrypted_content"] for i in stream[-1]["response"]["output"] if i["type"] == "reasoning"
    ]
    assert done and done != final
    assert [v for v in validate_payloads(stream) if v.rule == "OUTPUT_MISMATCH"] == []
    # ... but an opaque field that disappears is still a mismatch.
    stream[-1]["response"]["output"][0]["encrypted_content"] = None
    assert [v.rule for v in validate_payloads(stream)].count("OUTPUT_MISMATCH") == 1


def test_legacy_usage_is_a_warning_and_strict_makes_it_an_error() -> None:
    name = "openai/openai--openai-web-search-tool.jsonl"
    stream = streams(name)[0]
    usage = stream[-1]["response"]["usage"]
    usage["input_tokens_details"].pop("cache_write_tokens", None)
    loose = [v for v in validate_payloads(stream) if v.rule == "LEGACY_FIELD"]
    assert loose and all(v.severity == "warning" for v in loose)
    strict = [v for v in validate_payloads(stream, strict=True) if v.rule == "LEGACY_FIELD"]
    assert strict and all(v.severity == "error" for v in strict)


def _with_item(item_type: str) -> list[dict[str, object]]:
    stream = streams("azure-openai/azure--azure-text.1.jsonl")[0]
    out: list[dict[str, object]] = []
    for e in stream:
        if e["type"] == "response.output_item.added":
            e = {**e, "item": {**e["item"], "type": item_type}}
        if e["type"] == "response.output_item.done":
            e = {**e, "item": {**e["item"], "type": item_type}}
        out.append(e)
    return out


def test_unknown_item_type_is_one_warning_and_the_envelope_is_still_checked() -> None:
    stream = [e for e in _with_item("hologram_call") if "content_index" not in e]
    for e in stream:
        if e["type"] in ("response.completed",):
            e["response"]["output"][0]["type"] = "hologram_call"  # type: ignore[index]
    found = [v for v in validate_payloads(stream) if v.rule != "LEGACY_FIELD"]
    assert [(v.rule, v.severity) for v in found] == [("UNSPECIFIED_ITEM", "warning")]
    stream[-1]["sequence_number"] = 0
    assert "SEQ_NOT_INCREASING" in [v.rule for v in validate_payloads(stream)]


def test_extension_item_is_an_error_in_the_openai_dialect() -> None:
    stream = [e for e in _with_item("acme:hologram") if "content_index" not in e]
    rules = [(v.rule, v.severity) for v in validate_payloads(stream)]
    assert ("EXTENSION_ITEM", "error") in rules


def test_unknown_events_newer_api_warns_once_slug_prefixed_is_an_error() -> None:
    stream = streams("azure-openai/azure--azure-text.1.jsonl")[0]
    seq = stream[2]["sequence_number"]
    extra = [
        {"type": "response.hologram.delta", "sequence_number": seq, "output_index": 0},
        {"type": "response.hologram.delta", "sequence_number": seq, "output_index": 0},
        {"type": "acme:ping", "sequence_number": seq},
    ]
    renumbered = stream[:3] + extra + stream[3:]
    for i, e in enumerate(renumbered):
        e["sequence_number"] = i
    found = [(v.rule, v.severity) for v in validate_payloads(renumbered)]
    assert found.count(("NEWER_EVENT", "warning")) == 1
    assert ("EXTENSION_EVENT", "error") in found


def test_cli_strict_turns_hygiene_warnings_into_errors(tmp_path: Path) -> None:
    stream = streams("openai/openai--openai-web-search-tool.jsonl")[0]
    sse = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in stream)
    path = tmp_path / "stream.sse"
    path.write_text(sse, encoding="utf-8")
    cmd = [sys.executable, "-m", "responses_stream", "validate", str(path)]
    loose = subprocess.run(cmd, capture_output=True, text=True, cwd=GENERATED)
    assert loose.returncode == 0 and "warning LEGACY_FIELD" in loose.stdout
    strict = subprocess.run(cmd + ["--strict"], capture_output=True, text=True, cwd=GENERATED)
    assert strict.returncode == 1 and "error LEGACY_FIELD" in strict.stdout


def test_arguments_only_in_done_are_a_warning_deltas_that_differ_an_error() -> None:
    stream = streams("openai/openai--openai-client-tool-search.2.jsonl")[0]
    without = [e for e in stream if e["type"] != "response.function_call_arguments.delta"]
    without = [{**e, "sequence_number": n} for n, e in enumerate(without)]
    found = validate_payloads(without)
    assert [(v.rule, v.severity) for v in found if v.rule.startswith("DONE_")] == [
        ("DONE_WITHOUT_DELTAS", "warning")
    ]
    assert "DONE_WITHOUT_DELTAS" in [
        v.rule for v in validate_payloads(without, strict=True) if v.severity == "error"
    ]
    # one delta that is only part of the arguments is a mismatch
    first = next(
        i for i, e in enumerate(stream) if e["type"] == "response.function_call_arguments.delta"
    )
    partial = [
        e
        for i, e in enumerate(stream)
        if i <= first or e["type"] != "response.function_call_arguments.delta"
    ]
    partial = [{**e, "sequence_number": n} for n, e in enumerate(partial)]
    assert "DONE_TEXT_MISMATCH" in [
        v.rule for v in validate_payloads(partial) if v.severity == "error"
    ]


def unsequenced(stream: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``stream`` as the API sent it before early 2025: no event has sequence_number."""
    return [{k: v for k, v in event.items() if k != "sequence_number"} for event in stream]


@pytest.mark.parametrize("name", NUMBERED)
def test_a_stream_from_before_sequence_numbers_is_a_warning(name: str) -> None:
    """The legacy policy: what only an older API leaves out is a warning by default
    (once, ``SEQ_LEGACY``) and an error under strict; every other check still holds."""
    for stream in streams(name):
        old = unsequenced(stream)
        found = validate_payloads(old)
        faults = PRODUCER_FAULTS.get(name, set())
        assert {v.rule for v in found if v.severity == "error"} == faults
        assert [v.rule for v in found].count("SEQ_LEGACY") == 1
        strict = {v.rule for v in validate_payloads(old, strict=True) if v.severity == "error"}
        assert "SEQ_LEGACY" in strict
        new = {(v.rule, v.message) for v in validate_payloads(stream)}
        assert {(v.rule, v.message) for v in found} - new == {
            (v.rule, v.message) for v in found if v.rule == "SEQ_LEGACY"
        }
        folded, numbered = ResponseAccumulator(), ResponseAccumulator()
        folded.feed_all(old)
        numbered.feed_all(stream)
        assert folded.final == numbered.final


def test_sequence_numbers_that_stop_halfway_are_still_errors() -> None:
    [stream] = streams(NUMBERED[0])[:1]
    half = stream[:3] + unsequenced(stream[3:])
    rules = {v.rule for v in validate_payloads(half) if v.severity == "error"}
    assert "SEQ_MISSING" in rules
    late = unsequenced(stream[:3]) + stream[3:]
    rules = {v.rule for v in validate_payloads(late) if v.severity == "error"}
    assert rules, "numbers that start late are not a legacy stream"
