"""The consumers (SSE parser, validator, accumulator, to-chat) on hostile input.

Each test here is an input that once made a consumer raise something other
than its documented error, accept a stream that contradicts itself, or hold
unbounded memory.  The oracles are the official openai SDK (its strict
``ChatCompletionChunk`` model, and its client over real HTTP) and the
project's validator.
"""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from http_support import serve
from openai import OpenAI
from openai.types.chat import ChatCompletionChunk
from recordings_support import streams
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from responses_stream import (
    AccumulateError,
    ResponseAccumulator,
    ResponsesToChat,
    StreamValidator,
    chat_sse_from_responses,
    validate_payloads,
)
from responses_stream._runtime.consumers.to_chat import chat_sse_from_sse
from responses_stream._runtime.core.sse_parse import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_LINE_BYTES,
    MAX_NESTING,
    SSELimitError,
    SSEParser,
    parse_sse,
)

ROOT = Path(__file__).resolve().parents[1]
TEXT = "azure-openai/azure--azure-text.1.jsonl"
TOOL = "azure-openai/azure--azure-tool-call.1.jsonl"
PROGRAM = "openai/openai--programmatic-tool-calling.1.jsonl"
Stream = list[dict[str, Any]]


def recording(name: str) -> Stream:
    return copy.deepcopy(streams(name)[0])


def sse(stream: Stream) -> bytes:
    return "".join(
        f"event: {e['type']}\ndata: {json.dumps(e, ensure_ascii=False)}\n\n" for e in stream
    ).encode()


def rules(violations: list[Any]) -> set[str]:
    return {v.rule for v in violations}


def errors(violations: list[Any]) -> set[str]:
    return {v.rule for v in violations if v.severity == "error"}


def validate_bytes(data: bytes, **caps: Any) -> list[Any]:
    v = StreamValidator()
    v.feed_sse([data], **caps)
    return v.finish()


def events(stream: Stream, kind: str) -> list[dict[str, Any]]:
    return [e for e in stream if e["type"] == kind]


# -- chat output, held to the SDK ---------------------------------------------------
def check_chat(frames: list[bytes]) -> tuple[str, str, list[Any]]:
    """Every frame is a chunk the SDK's model accepts, or one final error payload, then
    [DONE].  Returns the content, the tool-call arguments and the error (if any)."""
    body = b"".join(frames)
    body.decode("utf-8")  # strict: the chat stream is valid UTF-8
    assert body.endswith(b"data: [DONE]\n\n")
    datas = [m.data for m in parse_sse([body])]
    assert datas[-1] == "[DONE]" and "[DONE]" not in datas[:-1]
    content, arguments, error = [], [], []
    finished = False
    for i, data in enumerate(datas[:-1]):
        obj = json.loads(data, parse_constant=lambda c: pytest.fail(f"{c} in chat output"))
        if "error" in obj:
            assert i == len(datas) - 2, "the error payload is the last one"
            assert isinstance(obj["error"]["message"], str)
            error.append(obj["error"])
            continue
        chunk = ChatCompletionChunk.model_validate(obj)
        for choice in chunk.choices:
            assert not finished, "nothing follows the finish chunk but usage"
            content.append(choice.delta.content or "")
            for call in choice.delta.tool_calls or []:
                arguments.append((call.function and call.function.arguments) or "")
            finished = choice.finish_reason is not None
    assert finished or error, "the chat stream ends with a finish_reason or an error"
    return "".join(content), "".join(arguments), error


# -- accumulator -----------------------------------------------------------------
def test_accumulator_rejects_a_terminal_output_that_drops_an_item() -> None:
    s = recording(TEXT)
    s[-1]["response"]["output"] = []
    with pytest.raises(AccumulateError, match="0 items, but 1 were streamed"):
        ResponseAccumulator().feed_all(s)


def test_accumulator_rejects_a_terminal_output_with_another_item_in_place() -> None:
    s = recording(TEXT)
    s[-1]["response"]["output"][0]["type"] = "reasoning"
    with pytest.raises(AccumulateError, match="output\\[0\\]"):
        ResponseAccumulator().feed_all(s)


@pytest.mark.parametrize(
    "where",
    ["text.done", "content_part.done", "output_item.done"],
)
def test_accumulator_takes_a_done_text_that_differs_from_its_deltas_and_warns(
    where: str,
) -> None:
    """As the SDK: the done text is taken; the repair is a warning, never an exception."""
    s = recording(TEXT)
    for e in s:
        if where == "text.done" and e["type"] == "response.output_text.done":
            e["text"] += "!"
        if where == "content_part.done" and e["type"] == "response.content_part.done":
            e["part"]["text"] += "!"
        if where == "output_item.done" and e["type"] == "response.output_item.done":
            e["item"]["content"][0]["text"] += "!"
    acc = ResponseAccumulator()
    acc.feed_all(s)
    assert acc.warnings and all(
        "differs from the text its deltas streamed" in w for w in acc.warnings
    )
    assert acc.final is not None and acc.final == s[-1]["response"]
    strict = [v.rule for v in validate_payloads(s) if v.severity == "error"]
    assert "DONE_TEXT_MISMATCH" in strict or "DONE_PARTS_MISMATCH" in strict  # still a fault


@pytest.mark.parametrize("where", ["arguments.done", "output_item.done"])
def test_accumulator_takes_arguments_that_differ_from_their_deltas_and_warns(where: str) -> None:
    s = recording(TOOL)
    for e in s:
        if where == "arguments.done" and e["type"] == "response.function_call_arguments.done":
            e["arguments"] = "{}"
        if where == "output_item.done" and e["type"] == "response.output_item.done":
            e["item"]["arguments"] = "{}"
    acc = ResponseAccumulator()
    acc.feed_all(s)
    assert any("differs from the text its deltas streamed" in w for w in acc.warnings)
    assert acc.final is not None and acc.final == s[-1]["response"]
    if where == "arguments.done":  # until the item closes, the done value is the one held
        at = [e["type"] for e in s].index("response.function_call_arguments.done")
        upto = ResponseAccumulator()
        [call] = [o for o in upto.feed_all(s[: at + 1])["output"] if o["type"] == "function_call"]
        assert call["arguments"] == "{}"


def test_accumulator_takes_a_closing_item_without_a_part_that_streamed() -> None:
    """As the SDK, which puts the done item at its index: what it holds is taken, the
    text its deltas streamed dropped, and a warning says so."""
    s = recording(TEXT)
    events(s, "response.output_item.done")[0]["item"]["content"] = []
    acc = ResponseAccumulator()
    snapshot = acc.feed_all(s[: [e["type"] for e in s].index("response.output_item.done") + 1])
    assert snapshot["output"][0]["content"] == []
    assert any("lacks content[0].text, which streamed; taken" in w for w in acc.warnings)
    with pytest.raises(AccumulateError):  # but a part that is not an object is no item
        bad = recording(TEXT)
        events(bad, "response.output_item.done")[0]["item"]["content"] = ["text"]
        ResponseAccumulator().feed_all(bad)


def test_a_sequence_gap_lets_the_done_text_stand() -> None:
    """Sequence numbers that skip say events were lost (a trimmed recording): the done
    text is then the only full text, and it stands."""
    s = recording(TEXT)
    s = [e for e in s if e["type"] != "response.output_text.delta"]
    s.insert(4, {**events(recording(TEXT), "response.output_text.delta")[0], "delta": "J"})
    for e in s[5:]:
        e["sequence_number"] += 3
    acc = ResponseAccumulator()
    acc.feed_all(s)
    assert acc.final is not None and acc.warnings == []
    renumbered = [{**e, "sequence_number": i} for i, e in enumerate(s)]
    warned = ResponseAccumulator()
    warned.feed_all(renumbered)
    assert warned.warnings and warned.final == acc.final
    quiet = ResponseAccumulator(check_texts=False)
    quiet.feed_all(renumbered)
    assert quiet.warnings == [] and quiet.final == acc.final


def test_accumulator_rejects_an_item_that_closes_in_progress() -> None:
    s = recording(TEXT)
    events(s, "response.output_item.done")[0]["item"]["status"] = "in_progress"
    with pytest.raises(AccumulateError, match="is in_progress"):
        ResponseAccumulator().feed_all(s)


def test_a_function_call_made_by_a_program_may_close_in_progress() -> None:
    s = recording(PROGRAM)
    closing = [
        e["item"]
        for e in events(s, "response.output_item.done")
        if e["item"]["type"] == "function_call"
    ]
    assert closing and all(i["status"] == "in_progress" for i in closing)
    assert all(i["caller"]["type"] == "program" for i in closing)
    ResponseAccumulator().feed_all(s)
    for item in closing:
        item["caller"] = None
    with pytest.raises(AccumulateError, match="is in_progress"):
        ResponseAccumulator().feed_all(s)


@pytest.mark.parametrize("part", [5, "text", None, [1]])
def test_a_part_that_is_not_an_object_is_an_accumulate_error(part: Any) -> None:
    s = recording(TEXT)
    s = [e for e in s if e["type"] != "response.content_part.added"]
    events(s, "response.output_item.added")[0]["item"]["content"] = [part]
    with pytest.raises(AccumulateError, match="not an object"):
        ResponseAccumulator().feed_all(s)


def test_an_item_without_a_type_in_a_replacing_response_is_an_accumulate_error() -> None:
    s = recording(TEXT)
    in_progress = events(s, "response.in_progress")[0]
    in_progress["response"]["output"] = [{"id": "x"}]
    # output_item.added then reads index 0 as taken: the stream cannot fold
    with pytest.raises(AccumulateError):
        ResponseAccumulator().feed_all(s)


def test_deep_nesting_is_an_accumulate_error() -> None:
    s = recording(TEXT)
    deep: Any = []
    for _ in range(5000):
        deep = [deep]
    events(s, "response.output_item.added")[0]["item"]["extra"] = deep  # copied when folded
    with pytest.raises(AccumulateError, match="nested too deeply"):
        ResponseAccumulator().feed_all(s)


def test_a_surrogate_pair_split_over_two_deltas_is_one_character() -> None:
    s = recording(TEXT)
    delta = events(s, "response.output_text.delta")[0]
    done_text = "a\U0001f600b"
    at = s.index(delta)
    s[at : at + 1] = [
        {**delta, "delta": "a\ud83d"},
        {**delta, "delta": "\ude00b", "sequence_number": delta["sequence_number"] + 1},
    ]
    for e in s[at + 2 :]:
        e["sequence_number"] += 1
    events(s, "response.output_text.done")[0]["text"] = done_text
    events(s, "response.content_part.done")[0]["part"]["text"] = done_text
    events(s, "response.output_item.done")[0]["item"]["content"][0]["text"] = done_text
    s[-1]["response"]["output"][0]["content"][0]["text"] = done_text
    acc = ResponseAccumulator()
    acc.feed_all(s[:-1])
    assert acc.snapshot["output"][0]["content"][0]["text"] == done_text
    acc.feed(s[-1])
    # the validator agrees, and says the producer split the pair
    found = validate_payloads(s)
    assert not errors(found) and "LONE_SURROGATE" in rules(found)
    # to-chat sends the character whole
    content, _, error = check_chat(list(chat_sse_from_responses(s)))
    assert content == done_text and not error


# -- validator ---------------------------------------------------------------------
@pytest.mark.parametrize("key", ["content_index", "output_index"])
@pytest.mark.parametrize("value", [-1, -(2**70), True, 1.5])
def test_a_bad_index_is_a_violation(key: str, value: Any) -> None:
    s = recording(TEXT)
    for e in s:
        if key in e:
            e[key] = value
    assert "ADDRESS_MISSING" in rules(validate_payloads(s))


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_literals_are_malformed_json(literal: str) -> None:
    raw = sse(recording(TEXT)).replace(
        b'"sequence_number": 4', b'"sequence_number": ' + literal.encode()
    )
    found = validate_bytes(raw)
    assert "MALFORMED_JSON" in errors(found)


@pytest.mark.parametrize("number", ["1e999", "-1e999"])
def test_a_number_beyond_the_double_range_is_malformed_json(number: str) -> None:
    raw = sse(recording(TEXT)).replace(
        b'"created_at": ', b'"created_at": ' + number.encode() + b', "was": ', 1
    )
    found = validate_bytes(raw)
    assert "MALFORMED_JSON" in errors(found)


def test_nan_in_parsed_payloads_is_a_violation() -> None:
    s = recording(TEXT)
    s[0]["response"]["temperature"] = float("nan")
    s[4]["logprobs"] = [{"token": "x", "logprob": float("inf"), "bytes": [], "top_logprobs": []}]
    assert "MALFORMED_JSON" in errors(validate_payloads(s))


def test_a_lone_surrogate_is_a_warning_and_a_strict_error() -> None:
    s = recording(TEXT)
    for e in s:
        if e["type"] == "response.output_text.delta":
            e["delta"] = "\ud800" + e["delta"]
        if e["type"] == "response.output_text.done":
            e["text"] = "\ud800" + e["text"]
        if e["type"] in ("response.content_part.done",):
            e["part"]["text"] = "\ud800" + e["part"]["text"]
        if e["type"] == "response.output_item.done":
            e["item"]["content"][0]["text"] = "\ud800" + e["item"]["content"][0]["text"]
    s[-1]["response"]["output"][0]["content"][0]["text"] = (
        "\ud800" + s[-1]["response"]["output"][0]["content"][0]["text"]
    )
    found = validate_payloads(s)
    assert not errors(found) and "LONE_SURROGATE" in rules(found)
    assert "LONE_SURROGATE" in errors(validate_payloads(s, strict=True))
    # the same stream as SSE text, with \ud800 escapes
    raw = "".join(f"data: {json.dumps(e)}\n\n" for e in s).encode()
    assert "\\ud800" in raw.decode()
    assert not errors(validate_bytes(raw))


def test_non_json_python_values_are_a_violation() -> None:
    s = recording(TEXT)
    s[4] = {**s[4], "odd": {1, 2}}
    assert "MALFORMED_EVENT" in errors(validate_payloads(s))


def test_deep_nesting_is_a_violation() -> None:
    s = recording(TEXT)
    deep: Any = []
    for _ in range(5000):
        deep = [deep]
    s[4] = {**s[4], "extra": deep}
    assert "MALFORMED_EVENT" in errors(validate_payloads(s))
    raw = b"data: " + b"[" * 100_000 + b"]" * 100_000 + b"\n\n"
    assert "MALFORMED_JSON" in errors(validate_bytes(raw))


def test_the_nesting_bound_is_the_same_on_every_python() -> None:
    """Depth MAX_NESTING is accepted and one more refused, whatever the interpreter's recursion limit."""
    for depth, bad in ((MAX_NESTING, False), (MAX_NESTING + 1, True)):
        s = recording(TEXT)
        deep: Any = []
        for _ in range(depth - 2):  # the event object and the innermost list are two levels
            deep = [deep]
        s[4] = {**s[4], "extra": deep}
        assert ("MALFORMED_EVENT" in errors(validate_payloads(s))) is bad, depth
        raw = "".join(f"data: {json.dumps(e)}\n\n" for e in s).encode()
        assert ("MALFORMED_JSON" in errors(validate_bytes(raw))) is bad, depth
    # brackets inside strings do not count
    s = recording(TEXT)
    s[4] = {**s[4], "extra": "[" * 1000}
    assert not errors(validate_payloads(s))


@pytest.mark.parametrize("odd", [[], {}, 5, None])
def test_an_item_type_that_is_not_a_string_is_a_schema_error(odd: Any) -> None:
    """Found by make fuzz: an unhashable item type raised TypeError in the validator."""
    s = recording(TEXT)
    added = events(s, "response.output_item.added")[0]
    added["item"]["type"] = odd
    found = validate_payloads(s)
    assert "SCHEMA_INVALID" in errors(found), found
    raw = "".join(f"data: {json.dumps(e)}\n\n" for e in s).encode()
    assert "SCHEMA_INVALID" in errors(validate_bytes(raw))


def test_wrong_types_where_deltas_accumulate_are_violations() -> None:
    s = recording(TOOL)
    done = events(s, "response.function_call_arguments.done")[0]
    done["arguments"] = 5
    at = s.index(done)
    s.insert(
        at + 1, {**events(s, "response.function_call_arguments.delta")[0], "sequence_number": 99}
    )
    assert errors(validate_payloads(s))


def test_the_validator_turns_an_sse_limit_into_a_violation() -> None:
    raw = sse(recording(TEXT))
    found = validate_bytes(raw, max_line_bytes=200)
    assert "SSE_LIMIT" in errors(found)
    assert "MISSING_TERMINAL" in errors(found)
    assert not errors(validate_bytes(raw))


def test_validate_cli_reports_hostile_input_without_a_traceback(tmp_path: Path) -> None:
    raw = sse(recording(TEXT))
    cases = {
        "nan": raw.replace(b'"sequence_number": 4', b'"sequence_number": NaN'),
        "huge": raw.replace(b'"created_at": ', b'"created_at": 1e999, "was": ', 1),
        "negative": raw.replace(b'"content_index": 0', b'"content_index": -1'),
        "surrogate": raw.replace(b'"delta": "', b'"delta": "\\ud800', 1),
        "bytes": raw.replace(b'"delta": "', b'"delta": "\xff\xfe', 1),
    }
    expected = {
        "nan": "MALFORMED_JSON",
        "huge": "MALFORMED_JSON",
        "negative": "ADDRESS_MISSING",
        "surrogate": "LONE_SURROGATE",  # and the done text differs: one delta changed
        "bytes": "DONE_TEXT_MISMATCH",
    }
    for name, data in cases.items():
        path = tmp_path / f"{name}.sse"
        path.write_bytes(data)
        proc = subprocess.run(
            [sys.executable, "-m", "responses_stream", "validate", str(path)],
            capture_output=True,
            env={"PYTHONPATH": str(ROOT / "generated")},
            cwd=tmp_path,
            check=False,
        )
        assert b"Traceback" not in proc.stderr, (name, proc.stderr)
        assert proc.returncode == 1, (name, proc.returncode, proc.stderr)
        assert expected[name].encode() in proc.stdout, (name, proc.stdout)


# -- SSE parser ----------------------------------------------------------------------
def test_the_defaults_are_documented_values() -> None:
    assert DEFAULT_MAX_LINE_BYTES == 16 * 1024 * 1024
    assert DEFAULT_MAX_EVENT_BYTES == 16 * 1024 * 1024
    assert issubclass(SSELimitError, ValueError)


def test_an_endless_line_stops_at_the_cap() -> None:
    parser = SSEParser(max_line_bytes=1024 * 1024)
    chunk = b"x" * 65536
    fed = 0
    with pytest.raises(SSELimitError) as info:
        while True:
            parser.feed(chunk)
            fed += len(chunk)
            assert fed <= 2 * 1024 * 1024, "the parser kept the line past its cap"
    assert info.value.limit == "max_line_bytes" and info.value.value == 1024 * 1024
    assert info.value.size > 1024 * 1024
    # the parser dropped what it held and reads on
    assert parser.feed(b"data: 1\n\n")[0].data == "1"


def test_an_endless_line_within_one_chunk() -> None:
    with pytest.raises(SSELimitError, match="max_line_bytes=100"):
        list(parse_sse([b"data: " + b"y" * 200 + b"\n\n"], max_line_bytes=100))
    with pytest.raises(SSELimitError):  # the last line, at close
        list(parse_sse([b"data: " + b"y" * 200], max_line_bytes=100))


def test_the_line_cap_counts_utf8_bytes() -> None:
    line = "data: " + "é" * 50  # 106 bytes, 56 characters
    with pytest.raises(SSELimitError):
        list(parse_sse([line.encode() + b"\n\n"], max_line_bytes=100))
    assert list(parse_sse([line.encode() + b"\n\n"], max_line_bytes=106))[0].data == "é" * 50


def test_an_event_of_many_small_lines_stops_at_the_cap() -> None:
    body = b"data: 0123456789\n" * 100 + b"\n"
    with pytest.raises(SSELimitError) as info:
        list(parse_sse([body], max_event_bytes=500))
    assert info.value.limit == "max_event_bytes"
    assert len(list(parse_sse([body], max_event_bytes=1099))[0].data) == 1099
    with pytest.raises(SSELimitError):
        list(parse_sse([body], max_event_bytes=1098))


def test_none_lifts_a_cap_and_bad_caps_are_refused() -> None:
    body = b"data: " + b"z" * 1000 + b"\n\n"
    assert len(list(parse_sse([body], max_line_bytes=None, max_event_bytes=None))[0].data) == 1000
    for bad in (0, -1, True, 1.5, "1"):
        with pytest.raises(ValueError):
            SSEParser(max_line_bytes=bad)  # type: ignore[arg-type]


def test_comments_count_against_the_line_cap() -> None:
    with pytest.raises(SSELimitError):
        SSEParser(max_line_bytes=10).feed(b": " + b"c" * 20)


def test_bytes_that_are_not_utf8_become_replacement_characters() -> None:
    data = b"data: a\xffb\xc3\n\ndata: \xed\xa0\x80\n\n"
    got = [m.data for m in parse_sse([data[i : i + 1] for i in range(len(data))])]
    assert got == ["a\ufffdb\ufffd", "\ufffd\ufffd\ufffd"]


# -- to-chat -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "created_at", ["1e999", "-1e999", "NaN", "1e300", "12345678901234567890123"]
)
def test_to_chat_survives_any_created_at(created_at: str) -> None:
    raw = sse(recording(TEXT)).replace(
        b'"created_at": ', b'"created_at": ' + created_at.encode() + b', "was": '
    )
    content, _, error = check_chat(list(chat_sse_from_sse([raw])))
    assert content and not error


def test_to_chat_reads_bytes_that_are_not_utf8() -> None:
    s = recording(TEXT)
    conv = ResponsesToChat()
    frames: list[bytes] = []
    for e in s:
        data = json.dumps(e).encode()
        if e["type"] == "response.output_text.delta":
            data = data.replace(b'"delta": "', b'"delta": "\xff', 1)
        frames += conv.feed_sse(data)
    frames.append(b"data: [DONE]\n\n")
    content, _, error = check_chat(frames)
    assert content.startswith("\ufffd") and not error


@pytest.mark.parametrize("content", [5, "text", None, [5], [{"type": 5}], {"a": 1}])
def test_to_chat_survives_a_content_of_the_wrong_type(content: Any) -> None:
    s = recording(TEXT)
    for e in s:
        if e["type"] == "response.output_item.done":
            e["item"]["content"] = content
        if e["type"] == "response.completed":
            e["response"]["output"][0]["content"] = content
    for raw in (False, True):
        payloads: list[Any] = [json.dumps(e) for e in s] if raw else s
        text, _, error = check_chat(list(chat_sse_from_responses(payloads)))
        assert not error and text == events(recording(TEXT), "response.output_text.done")[0]["text"]


@pytest.mark.parametrize("fast", [False, True])
def test_to_chat_sends_a_lone_surrogate_as_a_replacement_character(fast: bool) -> None:
    s = recording(TEXT)
    expected = events(s, "response.output_text.done")[0]["text"]
    for e in s:
        if e["type"] == "response.output_text.delta":
            e["delta"] = "\ud800" + e["delta"] + "\udfff"
    conv = ResponsesToChat()
    frames: list[bytes] = []
    for e in s:
        frames += conv.feed_sse(json.dumps(e) if fast else e)
    frames += [b"data: " + json.dumps(c).encode() + b"\n\n" for c in conv.close()]
    frames.append(b"data: [DONE]\n\n")
    content, _, error = check_chat(frames)
    assert content == "\ufffd" + expected + "\ufffd" and not error
    assert any("surrogate" in w for w in conv.warnings)


def test_to_chat_keeps_a_high_surrogate_that_never_gets_its_pair() -> None:
    s = recording(TOOL)
    for e in s:
        if e["type"] == "response.function_call_arguments.delta":
            e["delta"] += "\ud83d"
    _, arguments, error = check_chat(list(chat_sse_from_responses(s)))
    deltas = [e["delta"] for e in events(recording(TOOL), "response.function_call_arguments.delta")]
    assert arguments == "\ufffd".join(deltas) + "\ufffd" and not error


def test_to_chat_ids_and_error_fields_with_odd_values() -> None:
    s = recording(TEXT)
    s[0]["response"]["id"] = "resp_\ud800"
    s[0]["response"]["model"] = "m\udc00"
    failed = {
        "type": "response.failed",
        "sequence_number": 9,
        "response": {
            **s[-1]["response"],
            "status": "failed",
            "error": {"message": "bad \ud800", "code": float("nan"), "param": {"x": 1}},
        },
    }
    content, _, error = check_chat(list(chat_sse_from_responses([*s[:-1], failed])))
    assert error and error[0]["message"] == "bad \ufffd"
    assert error[0]["code"] == "nan" and error[0]["param"] == "{'x': 1}"


def test_to_chat_ends_with_an_error_chunk_on_an_sse_limit() -> None:
    raw = sse(recording(TEXT))
    content, _, error = check_chat(list(chat_sse_from_sse([raw], max_line_bytes=300)))
    assert error and error[0]["code"] == "sse_limit_exceeded"
    content, _, error = check_chat(
        list(chat_sse_from_sse([raw[i : i + 7] for i in range(0, len(raw), 7)]))
    )
    assert content == events(recording(TEXT), "response.output_text.done")[0]["text"]
    assert not error


def test_to_chat_on_deep_nesting_and_broken_json() -> None:
    for data in (b"[" * 100_000 + b"]" * 100_000, b'{"type": "response.created", ', b"NaN"):
        conv = ResponsesToChat()
        chunks = conv.feed(data)
        assert chunks == [] or "error" in chunks[-1]


# -- end to end: hostile Responses SSE through to-chat, read by the SDK over HTTP ---------
HOSTILE: dict[str, bytes] = {}


async def _chat(request: Request) -> Response:
    body = await request.json()
    raw = HOSTILE[body["model"]]
    return StreamingResponse(
        iter(list(chat_sse_from_sse([raw[i : i + 5] for i in range(0, len(raw), 5)]))),
        media_type="text/event-stream",
    )


@pytest.fixture(scope="module")
def client() -> Iterator[OpenAI]:
    app = Starlette(routes=[Route("/v1/chat/completions", _chat, methods=["POST"])])
    with serve(app) as base_url:
        yield OpenAI(
            base_url=f"{base_url}/v1", api_key="x", max_retries=0, _strict_response_validation=True
        )


def test_the_sdk_reads_hostile_text_through_to_chat(client: OpenAI) -> None:
    s = recording(TEXT)
    expected = events(s, "response.output_text.done")[0]["text"]
    raw = sse(s)
    raw = raw.replace(b'"delta": "', b'"delta": "\\ud800\xff\\u2028\\u0000', 1)
    HOSTILE["hostile"] = raw
    with client.chat.completions.stream(
        model="hostile", messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.content == "\ufffd\ufffd\u2028\x00" + expected
    assert final.choices[0].finish_reason == "stop"


# -- where the SDK and the validator disagree ------------------------------------------------
def _sdk_event(data: str) -> Any:
    """What the SDK makes of one data line: it parses with ``json.loads`` and validates."""
    from openai.types.responses import ResponseStreamEvent
    from pydantic import TypeAdapter

    return TypeAdapter(ResponseStreamEvent).validate_python(json.loads(data))


def test_the_sdk_reads_nan_and_infinity_and_the_validator_is_right_to_refuse_them() -> None:
    """The SDK reads ``NaN``, ``Infinity`` and ``1e999`` (as float nan / inf): Python's json
    accepts them as an extension.  They are not JSON: RFC 8259 section 6 has no NaN or
    Infinity, and a number beyond the double range is not interoperable.  JavaScript's
    ``JSON.parse`` throws on ``NaN``; a strict RFC parser (msgspec here) refuses all three.
    A stream holding one breaks every client that is not Python, so it is an error."""
    import msgspec

    created = json.dumps(recording(TEXT)[0])
    for literal in ("NaN", "Infinity", "1e999"):
        data = created.replace('"created_at": ', f'"created_at": {literal}, "was": ', 1)
        assert not math.isfinite(_sdk_event(data).response.created_at)  # the SDK reads it
        with pytest.raises(msgspec.DecodeError):
            msgspec.json.decode(data)
        v = StreamValidator()
        v.feed_raw(data)
        assert "MALFORMED_JSON" in errors(v.violations)


def test_the_sdk_reads_a_lone_surrogate_and_the_validator_warns() -> None:
    """A ``\\ud800`` escape without its pair is in the JSON grammar (RFC 8259 section 8.2
    only says its meaning is unpredictable), and the SDK keeps it in its ``str``; but the
    text is no longer Unicode: writing it as UTF-8 fails, which is how it once broke
    to-chat.  Legal but harmful, so a producer-hygiene warning (an error under strict)."""
    delta = recording(TEXT)[4]
    data = json.dumps(delta).replace('"delta": "', '"delta": "\\ud800', 1)
    text = _sdk_event(data).delta
    assert text.startswith("\ud800")
    with pytest.raises(UnicodeEncodeError):
        text.encode()
    v = StreamValidator()
    v.feed_raw(data)
    assert [x.severity for x in v.violations if x.rule == "LONE_SURROGATE"] == ["warning"]
    strict = StreamValidator(strict=True)
    strict.feed_raw(data)
    assert "LONE_SURROGATE" in errors(strict.violations)


def test_a_failed_response_may_leave_out_what_it_streamed() -> None:
    s = recording(TEXT)
    s[-1] = {
        "type": "response.failed",
        "sequence_number": s[-1]["sequence_number"],
        "response": {**s[-1]["response"], "status": "failed", "output": []},
    }
    ResponseAccumulator().feed_all(s)
    s[-1]["response"]["status"] = "completed"
    with pytest.raises(AccumulateError):
        ResponseAccumulator().feed_all(s)


def test_events_in_the_same_read_before_an_over_cap_line_are_kept() -> None:
    """One read holds a whole event, then a line over the cap: the event still counts."""
    s = recording(TEXT)
    first = f"data: {json.dumps(s[0])}\n\n".encode()
    cap = len(first) + 10
    read = first + b"data: " + b"x" * (2 * cap) + b"\n"
    got = []
    with pytest.raises(SSELimitError):
        for message in parse_sse([read], max_line_bytes=cap, max_event_bytes=None):
            got.append(json.loads(message.data)["type"])
    assert got == ["response.created"]
    v = StreamValidator()
    v.feed_sse([read], max_line_bytes=cap, max_event_bytes=None)
    found = v.finish()
    # the limit is the second input the validator saw: response.created came first
    assert [x.index for x in found if x.rule == "SSE_LIMIT"] == [1], found
    chat = b"".join(chat_sse_from_sse([read], max_line_bytes=cap, max_event_bytes=None))
    assert b"sse_limit_exceeded" in chat and chat.endswith(b"data: [DONE]\n\n")
