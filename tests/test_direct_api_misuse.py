"""The direct API cannot be misused into an invalid or never-ending stream.

Every misuse raises ``ProcessorError`` (or ``TransitionError`` for a call
its state machine forbids) before anything is emitted or any state changes,
and the stream stays endable: ``fail()`` or ``finish()`` afterwards gives a
stream whose every event the official openai SDK accepts strictly, that our
validator finds no error in, and that ends with exactly one terminal event.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Callable
from typing import Any

import pytest
from _support import validate_openai, validate_openresponses
from openai.types import responses as r
from pydantic import BaseModel, TypeAdapter
from sdk_shapes import sdk_items

import responses_stream as rs
from responses_stream import (
    CountingIds,
    ItemHandle,
    ProcessorError,
    StreamProcessor,
    TransitionError,
    validate_payloads,
)
from responses_stream._runtime.core import wire

TERMINAL = {"response.completed", "response.incomplete", "response.failed"}
CITATION = {
    "type": "url_citation",
    "url": "https://example.com/",
    "title": "Example",
    "start_index": 0,
    "end_index": 2,
}


def new(dialect: str = "openai") -> StreamProcessor:
    return StreamProcessor(dialect, ids=CountingIds(), model="test-model", created_at=1_700_000_000)


def stream_payloads(proc: StreamProcessor) -> list[dict[str, Any]]:
    """Everything the processor emitted, as the SSE bytes a client reads, parsed."""
    out = []
    for frame in proc.drain_sse():
        text = frame.decode("utf-8")  # strict: a frame that is not UTF-8 fails here
        if text == "data: [DONE]\n\n":
            continue
        head, data = text.split("\n", 1)
        payload = json.loads(data.removeprefix("data: "))
        assert head == f"event: {payload['type']}"
        out.append(payload)
    return out


def check_valid(payloads: list[dict[str, Any]], dialect: str = "openai") -> None:
    """The oracle: strict SDK models, our validator, one terminal event, last."""
    for payload in payloads:
        if dialect == "openai":
            validate_openai(payload)
        else:
            assert validate_openresponses(payload, rs.DIALECTS[dialect]) == [], payload
    errors = [v for v in validate_payloads(payloads, dialect) if v.severity == "error"]
    assert errors == [], [str(v) for v in errors]
    terminals = [p["type"] for p in payloads if p["type"] in TERMINAL]
    assert len(terminals) == 1 and payloads[-1]["type"] in TERMINAL, terminals


def end_with_fail(proc: StreamProcessor) -> list[dict[str, Any]]:
    proc.fail("ended after a misuse")
    payloads = stream_payloads(proc)
    check_valid(payloads, proc.dialect.name)
    assert [p["type"] for p in payloads][-2:] == ["error", "response.failed"]
    return payloads


def message(proc: StreamProcessor) -> ItemHandle:
    msg = proc.open("message")
    msg.part("output_text")
    msg.text("ok")
    return msg


# -- every misuse: a ProcessorError before any change, then a valid end ---------------
SETUPS: dict[str, Callable[[StreamProcessor], Any]] = {
    "proc": lambda p: p,
    "msg": message,
    "bare_msg": lambda p: p.open("message"),
    "refusal": lambda p: (lambda m: (m.part("refusal"), m)[1])(p.open("message")),
    "fc": lambda p: p.open("function_call", call_id="c", name="f"),
    "ctc": lambda p: p.open("custom_tool_call", call_id="c", name="f"),
    "ws": lambda p: p.open("web_search_call"),
    "mcp": lambda p: p.open("mcp_call", server_label="s", name="n"),
    "ig": lambda p: (lambda ig: (ig.phase("generating"), ig)[1])(p.open("image_generation_call")),
    "shell": lambda p: p.open("shell_call", call_id="c"),
}
MISUSES: list[tuple[str, str, Callable[[Any], Any], str]] = [
    ("open_id_int", "proc", lambda p: p.open("message", id=5), r"message: open: id: .*got `int`"),
    (
        "open_call_id_int",
        "proc",
        lambda p: p.open("function_call", call_id=5, name="f"),
        r"function_call: open: call_id: Expected `str`",
    ),
    (
        "open_name_none",
        "msg",
        lambda m: m._proc.open("function_call", call_id="c", name=None),
        r"function_call: open: name: Expected `str`",
    ),
    (
        "open_phase_not_in_enum",
        "proc",
        lambda p: p.open("message", phase="draft"),
        r"message: open: phase: Invalid enum value 'draft'",
    ),
    (
        "open_unknown_field",
        "msg",
        lambda m: m._proc.open("message", colour="blue"),
        r"message: open: unexpected keyword argument 'colour' \(accepted: id, phase\)",
    ),
    (
        "open_missing_field",
        "proc",
        lambda p: p.open("function_call", call_id="c"),
        r"function_call: open: missing required parameter 'name'",
    ),
    (
        "open_type_unhashable",
        "proc",
        lambda p: p.open(["message"]),
        r"unknown item type \['message'\]",
    ),
    (
        "open_junk_action",
        "proc",
        lambda p: p.open("web_search_call", action={"type": "browse"}),
        r"web_search_call: open: action: Invalid value 'browse' - at `\$.type`",
    ),
    (
        "open_junk_mcp_error",
        "proc",
        lambda p: p.open("mcp_call", server_label="s", name="n", error={"type": "http_error"}),
        r"mcp_call: open: error: Object missing required field `code`",
    ),
    (
        "open_tools_not_a_list",
        "proc",
        lambda p: p.open("additional_tools", tools={"type": "function"}),
        r"additional_tools: open: tools: Expected `array \\| null`, got `object`",
    ),
    (
        "open_unencodable_output",
        "proc",
        lambda p: p.open("function_call_output", call_id="c", output=[object()]),
        r"function_call_output: open: output",
    ),
    (
        "fail_message_none",
        "msg",
        lambda m: m._proc.fail(None),
        r"fail: message must be a str, got None",
    ),
    ("fail_code_int", "msg", lambda m: m._proc.fail("boom", code=500), r"fail: code must be a str"),
    ("fail_usage_int", "proc", lambda p: p.fail("boom", usage=5), r"usage must be a mapping"),
    ("finish_usage_int", "msg", lambda m: m._proc.finish(usage=5), r"usage must be a mapping"),
    (
        "finish_usage_str_count",
        "msg",
        lambda m: m._proc.finish(usage={"input_tokens": "9"}),
        r"usage.input_tokens must be an int, got '9'",
    ),
    (
        "finish_usage_bool_count",
        "proc",
        lambda p: p.finish(usage={"output_tokens": True}),
        r"usage.output_tokens must be an int",
    ),
    (
        "finish_usage_junk_details",
        "msg",
        lambda m: m._proc.finish(usage={"input_tokens": 1, "input_tokens_details": 5}),
        r"usage.input_tokens_details must be a mapping",
    ),
    (
        "truncate_usage_int",
        "msg",
        lambda m: m._proc.truncate("max_output_tokens", usage=5),
        r"usage must be a mapping",
    ),
    (
        "truncate_reason_list",
        "msg",
        lambda m: m._proc.truncate(["stop"]),
        r"incomplete reason must be",
    ),
    (
        "item_delta_int",
        "fc",
        lambda c: c.delta(5),
        r"function_call: delta: a delta must be a str, got 5",
    ),
    (
        "item_delta_bytes",
        "ctc",
        lambda c: c.delta(b"x"),
        r"custom_tool_call: delta: a delta must be a str",
    ),
    (
        "text_int",
        "msg",
        lambda m: m.text(5),
        r"message: output_text text: a delta must be a str, got 5",
    ),
    (
        "text_junk_logprobs",
        "msg",
        lambda m: m.text("a", logprobs=[{"token": 5}]),
        r"message: output_text text: logprobs: Expected `str`, got `int` - at `\$\[0\].token`",
    ),
    (
        "text_nan_logprob",
        "msg",
        lambda m: m.text(
            "a", logprobs=[{"token": "a", "logprob": float("nan"), "bytes": [], "top_logprobs": []}]
        ),
        r"logprobs\[0\].logprob: nan is not a JSON number",
    ),
    (
        "text_unknown_param",
        "msg",
        lambda m: m.text("a", colour="red"),
        r"message: output_text text: unexpected keyword argument 'colour'"
        r" \(accepted: delta, logprobs\)",
    ),
    (
        "refusal_text_with_logprobs",
        "refusal",
        lambda m: m.text("no", logprobs=[]),
        r"message: refusal text: unexpected keyword argument 'logprobs' \(accepted: delta\)",
    ),
    (
        "annotation_junk",
        "msg",
        lambda m: m.part_phase("annotate", annotation={"junk": 1}),
        r"message: part_phase\('annotate'\): annotation: Object missing required field `type`",
    ),
    (
        "annotation_unknown_type",
        "msg",
        lambda m: m.part_phase("annotate", annotation={**CITATION, "type": "link"}),
        r"annotation: Invalid value 'link'",
    ),
    (
        "annotation_index_str",
        "msg",
        lambda m: m.part_phase("annotate", annotation={**CITATION, "end_index": "2"}),
        r"annotation: Expected `int`, got `str` - at `\$.end_index`",
    ),
    (
        "annotation_not_a_dict",
        "msg",
        lambda m: m.part_phase("annotate", annotation="see example.com"),
        r"annotation: Expected `object`, got `str`",
    ),
    (
        "annotation_missing",
        "msg",
        lambda m: m.part_phase("annotate"),
        r"part_phase\('annotate'\): missing required parameter 'annotation'",
    ),
    (
        "part_phase_sse_twin",
        "msg",
        lambda m: m.part_phase("delta_sse", delta="x"),
        r"message: part output_text has no phase 'delta_sse' \(phases: delta, annotate, done",
    ),
    ("part_phase_open", "msg", lambda m: m.part_phase("open"), r"has no phase 'open'.*part\(\)"),
    (
        "part_phase_delta_without_delta",
        "msg",
        lambda m: m.part_phase("delta"),
        r"part_phase\('delta'\): missing required parameter 'delta' \(accepted: delta, logprobs\)",
    ),
    (
        "part_kind_unhashable",
        "bare_msg",
        lambda m: m.part(["output_text"]),
        r"message has no part \['output_text'\] \(parts: output_text, refusal\)",
    ),
    (
        "close_unknown_param",
        "fc",
        lambda c: c.close(bogus=1),
        r"function_call: close\('completed'\), transition 'done': unexpected keyword argument"
        r" 'bogus' \(accepted: none\)",
    ),
    (
        "close_junk_action",
        "ws",
        lambda w: w.close(action={"type": "search", "query": 5}),
        r"web_search_call: close\('completed'\), transition 'done': action: Expected `str \| null`",
    ),
    (
        "close_failed_without_error",
        "mcp",
        lambda c: c.close("failed"),
        r"mcp_call: close\('failed'\), transition 'fail': missing required parameter 'error'"
        r" \(accepted: error\)",
    ),
    (
        "close_status_unhashable",
        "msg",
        lambda m: m.close(["completed"]),
        r"message cannot close as \['completed'\] \(statuses: completed, incomplete\)",
    ),
    (
        "phase_unknown_param",
        "ws",
        lambda w: w.phase("searching", bogus=1),
        r"web_search_call: phase\('searching'\): unexpected keyword argument 'bogus'"
        r" \(accepted: none\)",
    ),
    (
        "phase_wrong_param_type",
        "ig",
        lambda ig: ig.phase("partial_image", partial_image_b64=7),
        r"image_generation_call: phase\('partial_image'\): partial_image_b64: Expected `str`",
    ),
    (
        "phase_unhashable",
        "ws",
        lambda w: w.phase(["searching"]),
        r"web_search_call: no phase \['searching'\] \(phases: searching, done, fail, incomplete\)",
    ),
    (
        "shell_command_index_str",
        "shell",
        lambda s: s.phase("command_added", command_index="0", command="ls"),
        r"shell_call: phase\('command_added'\): command_index: Expected `int`, got `str`",
    ),
    (
        "shell_command_index_bool",
        "shell",
        lambda s: s.phase("command_added", command_index=True, command="ls"),
        r"command_index: Expected `int`, got `bool`",
    ),
]


def state_of(proc: StreamProcessor) -> tuple[Any, ...]:
    """Everything a misuse must leave as it was."""
    cur = proc.current
    item = None
    if cur is not None:
        item = (cur.item_id, cur.emitter.state, cur.part_kind, cur.closed, getattr(cur, "chars", 0))
    snap = proc.response.snapshot()
    return (len(proc.out), proc.started, proc.ended, item, proc.response.state, len(snap.output))


@pytest.mark.parametrize(
    ("setup", "misuse", "match"),
    [(s, m, x) for _, s, m, x in MISUSES],
    ids=[n for n, _, _, _ in MISUSES],
)
def test_misuse_raises_before_any_change_and_the_stream_stays_endable(
    setup: str, misuse: Callable[[Any], Any], match: str
) -> None:
    proc = new()
    proc.start()
    target = SETUPS[setup](proc)
    before = state_of(proc)
    with pytest.raises(ProcessorError, match=match):
        misuse(target)
    assert state_of(proc) == before  # nothing emitted, nothing changed
    payloads = end_with_fail(proc)
    assert payloads[-1]["response"]["status"] == "failed"


def test_finish_usage_5_leaves_the_stream_unended_so_fail_still_ends_it() -> None:
    proc = new()
    msg = message(proc)
    with pytest.raises(ProcessorError, match="usage must be a mapping"):
        proc.finish(usage=5)
    assert not proc.ended and not msg.closed  # validation came before the state change
    proc.fail("late failure")
    payloads = stream_payloads(proc)
    check_valid(payloads)
    assert payloads[-1]["type"] == "response.failed"


def test_finish_is_still_legal_after_a_rejected_finish() -> None:
    proc = new()
    message(proc)
    with pytest.raises(ProcessorError):
        proc.finish(usage={"input_tokens": 1.5})
    proc.finish(usage={"input_tokens": 2, "output_tokens": 3})
    payloads = stream_payloads(proc)
    check_valid(payloads)
    assert payloads[-1]["response"]["usage"]["total_tokens"] == 5


def test_finish_after_an_item_closed_incomplete_ends_incomplete() -> None:
    # Before: response.completed holding an incomplete item (TRUNCATED_BUT_COMPLETED).
    proc = new()
    msg = message(proc)
    msg.close("incomplete")
    proc.open("function_call", call_id="c", name="f").delta("{}")
    proc.finish(usage={"input_tokens": 1})
    payloads = stream_payloads(proc)
    check_valid(payloads)
    response = payloads[-1]["response"]
    assert payloads[-1]["type"] == "response.incomplete"
    assert response["incomplete_details"] == {"reason": "max_output_tokens"}
    assert [i["status"] for i in response["output"]] == ["incomplete", "incomplete"]
    assert response["usage"]["input_tokens"] == 1


def test_a_rejected_delta_keeps_every_snapshot_intact() -> None:
    proc = new()
    call = proc.open("function_call", call_id="call_1", name="f")
    call.delta('{"a": ')
    with pytest.raises(ProcessorError, match="a delta must be a str"):
        call.delta(5)
    call.delta("1}")
    proc.fail("after a bad delta")  # raised TypeError before: "".join met the int
    payloads = stream_payloads(proc)
    check_valid(payloads)
    assert payloads[-1]["response"]["output"][0]["arguments"] == '{"a": 1}'


def test_fail_with_bad_arguments_then_fail_with_good_ones() -> None:
    proc = new()
    message(proc)
    with pytest.raises(ProcessorError):
        proc.fail(None)
    with pytest.raises(ProcessorError):
        proc.fail("x", code=None)  # type: ignore[arg-type]
    payloads = end_with_fail(proc)
    assert payloads[-1]["response"]["error"]["message"] == "ended after a misuse"


def test_transition_errors_leave_the_stream_endable() -> None:
    proc = new()
    ws = proc.open("web_search_call")
    ws.phase("searching")
    with pytest.raises(TransitionError):
        ws.phase("searching")
    mc = proc.open("mcp_call", server_label="s", name="t")
    mc.phase("call")
    with pytest.raises(TransitionError):
        mc.delta("{}")
    proc.finish()
    check_valid(stream_payloads(proc))


def test_part_phase_done_closes_the_part_and_finish_still_works() -> None:
    # Before: part_phase("done") closed the part behind the handle's back, and
    # finish() then raised TransitionError: a stream without its terminal event.
    proc = new()
    msg = message(proc)
    msg.part_phase("done")
    assert msg.part_kind is None
    msg.part("refusal")
    msg.text("no")
    proc.finish()
    payloads = stream_payloads(proc)
    check_valid(payloads)
    content = payloads[-1]["response"]["output"][0]["content"]
    assert [(c["type"], c.get("text", c.get("refusal"))) for c in content] == [
        ("output_text", "ok"),
        ("refusal", "no"),
    ]


@pytest.mark.parametrize(("name", "status"), [("done", "completed"), ("incomplete", "incomplete")])
def test_a_closing_phase_is_close(name: str, status: str) -> None:
    proc = new()
    msg = message(proc)
    msg.phase(name)
    assert msg.closed and msg.part_kind is None and proc.current is None
    proc.finish() if status == "completed" else proc.truncate("max_output_tokens")
    payloads = stream_payloads(proc)
    check_valid(payloads)
    assert payloads[-1]["response"]["output"][0]["status"] == status


def test_phase_fail_takes_the_fail_parameters() -> None:
    proc = new()
    mc = proc.open("mcp_call", server_label="s", name="t")
    with pytest.raises(ProcessorError, match="missing required parameter 'error'"):
        mc.phase("fail")
    mc.phase("fail", error={"type": "http_error", "code": 500, "message": "down"})
    proc.finish()
    payloads = stream_payloads(proc)
    check_valid(payloads)
    assert payloads[-1]["response"]["output"][0]["error"]["code"] == 500


def test_a_duplicate_item_id_is_rejected() -> None:
    proc = new()
    proc.open("message", id="msg_same")
    with pytest.raises(ProcessorError, match="id 'msg_same' is already used"):
        proc.open("function_call", id="msg_same", call_id="c", name="f")
    end_with_fail(proc)


def test_an_ids_function_that_returns_junk_is_rejected() -> None:
    proc = StreamProcessor("openai", model="m", ids=lambda prefix: f"{prefix}x")
    proc.open("message")
    with pytest.raises(ProcessorError, match="not a new str id"):
        proc.open("message")  # the same id again
    end_with_fail(proc)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"model": 5}, "model must be a str"),
        ({"response_id": 5}, "response_id must be a str"),
        ({"created_at": "now"}, "created_at must be an int"),
        ({"created_at": True}, "created_at must be an int"),
        ({"request": ["model"]}, "request must be a mapping"),
        ({"request": {"temperature": "hot"}}, r"Expected `float`, got `str` - at `\$.temperature`"),
        ({"request": {"metadata": "x"}}, r"at `\$.metadata`"),
        ({"ids": "counting"}, "ids must be a callable"),
    ],
)
def test_bad_envelope_arguments_raise_before_the_stream_exists(
    kwargs: dict[str, Any], match: str
) -> None:
    with pytest.raises(ProcessorError, match=match):
        StreamProcessor("openai", **kwargs)


def test_calls_after_the_end_raise_and_emit_nothing() -> None:
    proc = new()
    msg = message(proc)
    proc.finish()
    payloads = stream_payloads(proc)
    for call in (
        lambda: msg.text("late"),
        lambda: msg.close(),
        lambda: msg.part("refusal"),
        lambda: proc.open("message"),
        lambda: proc.finish(),
        lambda: proc.truncate("max_output_tokens"),
    ):
        with pytest.raises(ProcessorError):
            call()
    proc.fail("ignored")  # documented: a no-op once the stream has ended
    assert proc.drain() == []
    check_valid(payloads)


# -- strings: lone surrogates become U+FFFD, and the processor says how many ----------
def test_lone_surrogates_become_replacement_characters() -> None:
    proc = new()
    msg = proc.open("message")
    msg.part("output_text")
    msg.text("a\ud800b")  # a lone high surrogate
    msg.text("\ud83d\ude00")  # a surrogate pair given as two code points: one character
    msg.text("\udfff")  # a lone low surrogate
    msg.text("\u2028\x00é")
    call = proc.open("function_call", call_id="c\udc00", name="f")
    call.delta('{"k": "\ud800"}')
    proc.fail("bad \ud800 input")
    payloads = stream_payloads(proc)  # drain_sse raised UnicodeEncodeError before
    check_valid(payloads)
    out = payloads[-1]["response"]["output"]
    assert out[0]["content"][0]["text"] == "a\ufffdb\U0001f600\ufffd\u2028\x00é"
    assert out[1]["call_id"] == "c\ufffd"
    assert out[1]["arguments"] == '{"k": "\ufffd"}'
    assert payloads[-1]["response"]["error"]["message"] == "bad \ufffd input"
    assert proc.replaced_surrogates == 5


def test_a_lone_surrogate_inside_an_annotation_is_replaced() -> None:
    proc = new()
    msg = message(proc)
    msg.part_phase("annotate", annotation={**CITATION, "title": "T\ud800"})
    proc.finish()
    payloads = stream_payloads(proc)
    check_valid(payloads)
    part = payloads[-1]["response"]["output"][0]["content"][0]
    assert part["annotations"][0]["title"] == "T\ufffd"
    assert proc.replaced_surrogates == 1


# -- good values still pass, in both dialects ------------------------------------------
@pytest.mark.parametrize("dialect", ["openai", "openresponses"])
def test_good_values_pass_in_both_dialects(dialect: str) -> None:
    proc = new(dialect)
    msg = message(proc)
    msg.text("!", logprobs=[{"token": "!", "logprob": -0.5, "bytes": [33], "top_logprobs": []}])
    msg.part_phase("annotate", annotation=CITATION)
    proc.open("function_call", call_id="call_1", name="f").delta("{}")
    proc.finish(usage={"prompt_tokens": 3, "completion_tokens": 4})
    payloads = stream_payloads(proc)
    check_valid(payloads, dialect)
    assert payloads[-1]["response"]["usage"]["total_tokens"] == 7


def test_openresponses_takes_url_citations_only() -> None:
    proc = new("openresponses")
    msg = message(proc)
    with pytest.raises(ProcessorError, match="annotation"):
        msg.part_phase("annotate", annotation={"type": "file_path", "file_id": "f", "index": 0})
    proc.finish()
    check_valid(stream_payloads(proc), "openresponses")


# -- the wire shapes say what the SDK says -----------------------------------------------
def _sdk_members(annotation: Any) -> list[type[BaseModel]]:
    found: list[type[BaseModel]] = []
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    for arg in typing.get_args(annotation):
        found += _sdk_members(arg)
    return found


def _ours(annotation: Any) -> list[type]:
    found: list[type] = []
    if isinstance(annotation, type) and issubclass(annotation, wire.msgspec.Struct):
        return [annotation]
    for arg in typing.get_args(annotation):
        found += _ours(arg)
    return found


def _sdk_field(item_type: str, param: str) -> Any:
    if (item_type, param) == ("message", "annotation"):
        return typing.get_args(r.ResponseOutputText.model_fields["annotations"].annotation)[0]
    if (item_type, param) == ("shell_call", "output"):  # output_done: the output item's list
        item_type = "shell_call_output"
    return sdk_items()[item_type].model_fields[param].annotation


def _tag_of(model: Any) -> str | None:
    if isinstance(model, type) and issubclass(model, BaseModel):
        field = model.model_fields.get("type")
        return None if field is None else str(typing.get_args(field.annotation)[0])
    tag = model.__struct_config__.tag
    if tag is None:  # a lone shape spells its tag as a Literal field
        literal = model.__annotations__.get("type")
        args = typing.get_args(typing.get_type_hints(model).get("type"))
        return str(args[0]) if literal is not None and args else None
    return str(tag)


SHAPED = [(t, p) for t, params in wire.OPENAI_SHAPES.items() for p in params]


@pytest.mark.parametrize(("item_type", "param"), SHAPED, ids=[f"{t}.{p}" for t, p in SHAPED])
def test_each_wire_shape_has_the_sdk_members_and_required_fields(
    item_type: str, param: str
) -> None:
    shape = wire.OPENAI_SHAPES[item_type][param]
    ours = _ours(shape)
    sdk = _sdk_members(_sdk_field(item_type, param))
    if shape is wire.Role:
        assert set(typing.get_args(wire.Role)) == set(
            typing.get_args(sdk_items()[item_type].model_fields["role"].annotation)
        )
        return
    if ours == [wire.Tool]:  # only the discriminator is checked; every SDK tool has one
        assert all("type" in m.model_fields for m in sdk)
        return
    # top level: the same members, by tag
    top_sdk = {_tag_of(m): m for m in sdk if _tag_of(m) is not None or len(sdk) == 1}
    top_ours = {_tag_of(s): s for s in ours}
    for tag, model in top_ours.items():
        assert tag in top_sdk, (tag, list(top_sdk))
        sdk_model = top_sdk[tag]
        fields = {n for n in model.__struct_fields__}
        required = set(
            model.__struct_fields__[: len(model.__struct_fields__) - len(model.__struct_defaults__)]
        ) - {"type"}  # a lone shape's tag field; the tag itself is compared above
        sdk_required = {n for n, f in sdk_model.model_fields.items() if f.is_required()} - {"type"}
        assert required == sdk_required, (model, required, sdk_required)
        assert fields <= set(sdk_model.model_fields), (model, fields - set(sdk_model.model_fields))
    assert set(top_ours) == set(top_sdk), (set(top_ours), set(top_sdk))


@pytest.mark.parametrize(
    ("item_type", "param", "value"),
    [
        ("message", "annotation", CITATION),
        (
            "message",
            "annotation",
            {"type": "file_citation", "file_id": "f", "filename": "a", "index": 0},
        ),
        (
            "web_search_call",
            "action",
            {"type": "search", "query": "q", "sources": [{"type": "url", "url": "u"}]},
        ),
        ("web_search_call", "action", {"type": "open_page"}),
        ("mcp_call", "error", {"type": "mcp_tool_execution_error", "content": [1, "x"]}),
        (
            "code_interpreter_call",
            "outputs",
            [{"type": "logs", "logs": "1"}, {"type": "image", "url": "u"}],
        ),
        ("computer_call", "action", {"type": "drag", "path": [{"x": 1, "y": 2}]}),
        (
            "shell_call_output",
            "output",
            [{"stdout": "", "stderr": "", "outcome": {"type": "timeout"}}],
        ),
        ("function_call_output", "output", [{"type": "input_image", "detail": "auto"}]),
        ("file_search_call", "results", [{"attributes": {"a": 1.5, "b": True, "c": "x"}}]),
    ],
)
def test_what_the_shapes_accept_the_sdk_accepts(item_type: str, param: str, value: Any) -> None:
    wire.check_value(value, Any, wire.OPENAI_SHAPES[item_type][param], "x", wire.Fixes())
    TypeAdapter(_sdk_field(item_type, param)).validate_json(json.dumps(value), strict=True)


def test_a_delta_the_item_refuses_is_not_counted_against_the_limit() -> None:
    """A delta refused in the wrong state (found by make fuzz) leaves the count as it was."""
    proc = StreamProcessor(
        "openai", ids=CountingIds(), model="m", limits=rs.Limits(max_item_text_chars=3)
    )
    proc.start()
    call = proc.open("mcp_call", server_label="s", name="n")
    call.delta("ab")
    call.phase("call")  # arguments are done: no more deltas
    with pytest.raises(TransitionError):
        call.delta("c")
    assert call.chars == 2
    call.close()
    proc.finish()
    payloads = [json.loads(e.split(b"data: ", 1)[1]) for e in proc.drain_sse() if b"data: {" in e]
    assert payloads[-1]["type"] == "response.completed"
    assert payloads[-1]["response"]["output"][0]["arguments"] == "ab"
