"""The direct API: ``StreamProcessor`` and ``ItemHandle`` driving every spec'd item type.

Every event is encoded in its dialect and validated strictly: with the
official SDK's models for ``openai`` and with the vendored Open Responses
schema for ``openresponses``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _support import validate_openai, validate_openresponses

import responses_stream as rs
from responses_stream import (
    CountingIds,
    ItemHandle,
    ProcessorError,
    StreamProcessor,
    TransitionError,
)

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).parent / "fixtures" / "acme_search_result.yaml"
DIALECTS = ("openai", "openresponses")
TERMINAL = {"response.completed", "response.incomplete", "response.failed"}
REQUEST = {"instructions": "Be brief.", "temperature": 0.2, "metadata": {"run": "direct"}}
CREATED_AT = 1_700_000_000

CITATION = {
    "type": "url_citation",
    "url": "https://example.com/weather",
    "title": "Weather",
    "start_index": 0,
    "end_index": 5,
}
SEARCH = {
    "type": "search",
    "query": "weather in Paris",
    "sources": [{"type": "url", "url": "https://example.com/weather"}],
}
OPEN_PAGE = {"type": "open_page", "url": "https://example.com/weather"}
FIND = {"type": "find_in_page", "url": "https://example.com/weather", "pattern": "sunny"}
FILE_RESULTS = [
    {"file_id": "file_1", "filename": "notes.txt", "score": 0.82, "text": "sunny", "attributes": {}}
]
MCP_TOOLS = [
    {
        "name": "ask_question",
        "description": "Ask about a repository.",
        "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
        "annotations": None,
    }
]
MCP_ERROR = {"type": "mcp_tool_execution_error", "content": [{"type": "text", "text": "boom"}]}
CI_OUTPUTS = [{"type": "logs", "logs": "42\n"}]
SHELL_OUTPUT = [{"stdout": "hi\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]


def new(dialect: str, **kw: Any) -> StreamProcessor:
    return StreamProcessor(
        dialect, ids=CountingIds(), model="test-model", request=REQUEST, created_at=CREATED_AT, **kw
    )


def payloads(proc: StreamProcessor) -> list[dict[str, Any]]:
    """Drain, encode as SSE in the processor's dialect, validate strictly, parse."""
    dialect = proc.dialect
    enc = dialect.encoder()
    out = []
    for event in proc.drain():
        frame = enc.encode(event).decode()
        head, data = frame.split("\n", 1)
        assert data.startswith("data: ") and data.endswith("\n\n")
        payload = json.loads(data[6:])
        assert head == f"event: {payload['type']}"
        if dialect.name == "openai":
            validate_openai(payload)
        else:
            assert validate_openresponses(payload, dialect) == [], payload
        out.append(payload)
    return out


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def plain(dialect: str, wire: str) -> str:
    """The catalogue name of a wire type (``openai:response.x`` -> ``response.x``)."""
    return rs.DIALECTS[dialect].wire_types.get(wire, wire)


def spec_type(dialect: str, wire: str) -> str:
    """The spec item type of a wire item type (``openai:web_search_call`` -> ...)."""
    return {w: t for t, w in rs.DIALECTS[dialect].item_types.items()}[wire]


def check_envelope(events: list[dict[str, Any]]) -> None:
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert types(events)[:2] == ["response.created", "response.in_progress"]
    assert sum(t in TERMINAL for t in types(events)) == 1
    assert events[-1]["type"] in TERMINAL
    # one item at a time: every event of item i lies between its added and its done
    spans: dict[int, list[int]] = {}
    for n, e in enumerate(events):
        if "output_index" in e:
            spans.setdefault(e["output_index"], []).append(n)
    assert sorted(spans) == list(range(len(spans)))
    for i, positions in spans.items():
        first, last = positions[0], positions[-1]
        assert events[first]["type"] == "response.output_item.added"
        assert events[last]["type"] == "response.output_item.done"
        if i + 1 in spans:
            assert last < spans[i + 1][0]
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert events[-1]["response"]["output"] == done


def item_events(events: list[dict[str, Any]], index: int, dialect: str) -> list[str]:
    return [plain(dialect, e["type"]) for e in events if e.get("output_index") == index]


# -- every spec'd item type through proc.open -----------------------------------
PATCH_OP = {"type": "create_file", "path": "notes.md", "diff": ""}
# Items with an added -> done life, and the fields each needs to open.
CLIENT_SIDE: dict[str, dict[str, Any]] = {
    "function_call_output": {"call_id": "call_f1", "output": '{"temp": 21}'},
    "custom_tool_call_output": {"call_id": "call_c1", "output": "1"},
    "computer_call": {"call_id": "call_u1", "action": {"type": "screenshot"}},
    "computer_call_output": {"call_id": "call_u1"},
    "program": {"call_id": "call_g1", "code": "text('hi')", "fingerprint": "gAAAA-fp"},
    "program_output": {"call_id": "call_g1", "result": "hi"},
    "tool_search_call": {"arguments": {"goal": "weather"}},
    "tool_search_output": {"tools": []},
    "additional_tools": {"tools": []},
    "local_shell_call": {"call_id": "call_l1"},
    "local_shell_call_output": {"output": "hi\n"},
    "mcp_approval_request": {"server_label": "deepwiki", "name": "ask_question"},
    "mcp_approval_response": {"approval_request_id": "mcpr_1", "approve": True},
    "apply_patch_call_output": {"call_id": "call_p1", "output": "done"},
}


def drive_everything(proc: StreamProcessor) -> dict[str, ItemHandle]:
    h: dict[str, ItemHandle] = {}
    for n, action in enumerate((SEARCH, OPEN_PAGE, FIND)):
        ws = h[f"web_search_{n}"] = proc.open("web_search_call")
        ws.phase("searching")
        ws.close(action=action)
    fs = h["file_search"] = proc.open("file_search_call", queries=["weather notes"])
    fs.phase("searching")
    fs.close(results=FILE_RESULTS)
    ig = h["image"] = proc.open("image_generation_call")
    ig.phase("generating")
    ig.phase("partial_image", partial_image_b64="cGFydDE=")
    ig.phase("partial_image", partial_image_b64="cGFydDI=")
    ig.close(result="ZmluYWw=")
    ci = h["code"] = proc.open("code_interpreter_call", container_id="cntr_1")
    ci.delta("x = 6 * 7\n")
    ci.delta("print(x)")
    ci.close(outputs=CI_OUTPUTS)  # walks `interpreting` on its own
    ml = h["mcp_list"] = proc.open("mcp_list_tools", server_label="deepwiki")
    ml.close(tools=MCP_TOOLS)
    mc = h["mcp_ok"] = proc.open("mcp_call", server_label="deepwiki", name="ask_question")
    mc.delta('{"q": ')
    mc.delta('"what is it?"}')
    mc.close(output="It is a library.")
    mf = h["mcp_failed"] = proc.open("mcp_call", server_label="deepwiki", name="ask_question")
    mf.delta("{}")
    mf.close("failed", error=MCP_ERROR)
    ct = h["custom"] = proc.open("custom_tool_call", call_id="call_c1", name="run_sql")
    ct.delta("SELECT ")
    ct.delta("1")
    ct.close()
    fc = h["function"] = proc.open("function_call", call_id="call_f1", name="get_weather")
    fc.delta('{"city": ')
    fc.delta('"Paris"}')
    fc.close()
    sh = h["shell"] = proc.open("shell_call", call_id="call_s1", action={"commands": ["echo hi"]})
    sh.phase("command_added", command_index=0, command="echo hi")
    sh.phase("output_done", command_index=0, output=SHELL_OUTPUT)
    sh.close()
    cp = h["compaction"] = proc.open("compaction")
    cp.phase("compacting")
    cp.close(encrypted_content="gAAAA-opaque")
    rs_ = h["reasoning"] = proc.open("reasoning")
    rs_.part("summary_text")
    rs_.text("Looked it ")
    rs_.text("up.")
    rs_.part("reasoning_text")
    rs_.text("The search says ")
    rs_.text("sunny.")
    rs_.close()
    msg = h["message"] = proc.open("message")
    msg.part("output_text")
    msg.text("Sunny")
    msg.text(" in Paris.")
    msg.part_phase("annotate", annotation=CITATION)
    msg.part("refusal")
    msg.text("I won't guess tomorrow.")
    msg.close()
    ap = h["apply_patch"] = proc.open("apply_patch_call", call_id="call_p1", operation=PATCH_OP)
    ap.phase("diff_delta", delta="+hello\n")
    ap.phase("diff_done", diff="+hello\n")
    ap.close()
    so = h["shell_output"] = proc.open("shell_call_output", call_id="call_s1")
    so.phase("output_delta", command_index=0, delta={"stdout": "hi\n", "stderr": ""})
    so.phase("output_done", command_index=0, output=SHELL_OUTPUT)
    so.close()
    for item_type, fields in CLIENT_SIDE.items():
        h[item_type] = proc.open(item_type, **fields)
        h[item_type].close()
    return h


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_item_type_validates(dialect: str) -> None:
    proc = new(dialect)
    handles = drive_everything(proc)
    proc.finish({"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70})
    events = payloads(proc)
    check_envelope(events)
    assert all(h.closed for h in handles.values())
    opened = {spec_type(dialect, e["item"]["type"]) for e in events if "item" in e}
    # every item type of the base catalogue; provider extensions (slug:type) added as
    # YAML are driven by their own generated tests
    assert opened == {t for t in rs.ITEM_TYPES if ":" not in t}

    final = events[-1]["response"]
    assert final["status"] == "completed"
    assert final["id"] == "resp_0001"
    assert final["instructions"] == "Be brief." and final["temperature"] == 0.2
    assert final["usage"]["input_tokens"] == 50 and final["usage"]["total_tokens"] == 70
    out = {name: final["output"][h.output_index] for name, h in handles.items()}
    assert [h.output_index for h in handles.values()] == list(range(len(handles)))
    assert [out[f"web_search_{n}"]["action"] for n in range(3)] == [SEARCH, OPEN_PAGE, FIND]
    assert out["file_search"]["queries"] == ["weather notes"]
    assert out["file_search"]["results"] == FILE_RESULTS
    assert out["image"]["result"] == "ZmluYWw=" and out["image"]["status"] == "completed"
    assert out["code"]["code"] == "x = 6 * 7\nprint(x)"
    assert out["code"]["outputs"] == CI_OUTPUTS and out["code"]["container_id"] == "cntr_1"
    assert out["mcp_list"]["tools"] == MCP_TOOLS
    assert out["mcp_ok"]["arguments"] == '{"q": "what is it?"}'
    assert out["mcp_ok"]["output"] == "It is a library." and out["mcp_ok"]["status"] == "completed"
    assert out["mcp_failed"]["status"] == "failed" and out["mcp_failed"]["error"] == MCP_ERROR
    assert out["custom"]["input"] == "SELECT 1"
    assert out["function"]["arguments"] == '{"city": "Paris"}'
    assert out["shell"]["action"] == {"commands": ["echo hi"]}
    assert out["compaction"]["encrypted_content"] == "gAAAA-opaque"
    assert out["reasoning"]["summary"] == [{"type": "summary_text", "text": "Looked it up."}]
    assert out["reasoning"]["content"] == [
        {"type": "reasoning_text", "text": "The search says sunny."}
    ]
    content = out["message"]["content"]
    assert [c["type"] for c in content] == ["output_text", "refusal"]
    assert content[0]["text"] == "Sunny in Paris." and content[0]["annotations"] == [CITATION]
    assert content[1]["refusal"] == "I won't guess tomorrow."
    statuses = {k: v["status"] for k, v in out.items() if k != "mcp_failed"}
    assert set(statuses.values()) == {"completed"}

    seq = {name: item_events(events, h.output_index, dialect) for name, h in handles.items()}
    assert seq["web_search_0"] == [
        "response.output_item.added",
        "response.web_search_call.in_progress",
        "response.web_search_call.searching",
        "response.web_search_call.completed",
        "response.output_item.done",
    ]
    assert seq["file_search"][1:4] == [
        "response.file_search_call.in_progress",
        "response.file_search_call.searching",
        "response.file_search_call.completed",
    ]
    assert seq["image"][2:5] == [
        "response.image_generation_call.generating",
        "response.image_generation_call.partial_image",
        "response.image_generation_call.partial_image",
    ]
    partials = [
        e
        for e in events
        if plain(dialect, e["type"]) == "response.image_generation_call.partial_image"
    ]
    assert [(p["partial_image_index"], p["partial_image_b64"]) for p in partials] == [
        (0, "cGFydDE="),
        (1, "cGFydDI="),
    ]
    assert seq["code"] == [
        "response.output_item.added",
        "response.code_interpreter_call.in_progress",
        "response.code_interpreter_call_code.delta",
        "response.code_interpreter_call_code.delta",
        "response.code_interpreter_call_code.done",
        "response.code_interpreter_call.interpreting",
        "response.code_interpreter_call.completed",
        "response.output_item.done",
    ]
    assert seq["mcp_list"][1:3] == [
        "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.completed",
    ]
    assert seq["mcp_ok"][1:] == [
        "response.mcp_call.in_progress",
        "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.done",
        "response.mcp_call.completed",
        "response.output_item.done",
    ]
    assert seq["mcp_failed"][-2:] == ["response.mcp_call.failed", "response.output_item.done"]
    assert seq["custom"][-2:] == [
        "response.custom_tool_call_input.done",
        "response.output_item.done",
    ]
    assert seq["compaction"][1] == "response.compaction.compacting"
    assert seq["reasoning"] == [
        "response.output_item.added",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
        "response.content_part.added",
        "response.reasoning_text.delta",
        "response.reasoning_text.delta",
        "response.reasoning_text.done",
        "response.content_part.done",
        "response.output_item.done",
    ]
    assert seq["message"] == [
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.annotation.added",
        "response.output_text.done",
        "response.content_part.done",
        "response.content_part.added",
        "response.refusal.delta",
        "response.refusal.done",
        "response.content_part.done",
        "response.output_item.done",
    ]
    msg_events = [e for e in events if e.get("output_index") == handles["message"].output_index]
    assert [e["content_index"] for e in msg_events if "content_index" in e] == [0] * 6 + [1] * 4
    annotation = next(e for e in msg_events if e["type"].endswith("annotation.added"))
    assert annotation["annotation"] == CITATION and annotation["annotation_index"] == 0


@pytest.mark.parametrize("dialect", DIALECTS)
def test_counting_ids_make_streams_reproducible(dialect: str) -> None:
    def run() -> list[dict[str, Any]]:
        proc = new(dialect)
        drive_everything(proc)
        proc.finish()
        events = payloads(proc)
        for e in events:
            if "response" in e:
                e["response"]["completed_at"] = None
        return events

    first, second = run(), run()
    assert first == second
    ids = [e["item"]["id"] for e in first if e["type"] == "response.output_item.added"]
    assert ids[:3] == ["ws_0002", "ws_0003", "ws_0004"]
    assert any(i.startswith("msg_") for i in ids)


# -- envelope guarantees -----------------------------------------------------------
@pytest.mark.parametrize("dialect", DIALECTS)
def test_opening_an_item_completes_the_open_one(dialect: str) -> None:
    proc = new(dialect)
    msg = proc.open("message")
    msg.part("output_text")
    msg.text("Checking.")
    fc = proc.open("function_call", call_id="call_1", name="get_weather")
    assert msg.closed and not fc.closed and proc.current is fc
    with pytest.raises(ProcessorError, match="already closed|no open part"):
        msg.text("late")
    fc.delta("{}")
    proc.finish()
    assert fc.closed
    events = payloads(proc)
    check_envelope(events)
    assert types(events)[2:] == [
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [i["status"] for i in events[-1]["response"]["output"]] == ["completed", "completed"]
    with pytest.raises(ProcessorError, match="ended"):
        fc.delta("late")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_close_incomplete_closes_the_open_part(dialect: str) -> None:
    proc = new(dialect)
    msg = proc.open("message")
    msg.part("output_text")
    msg.text("Half an ans")
    msg.close(status="incomplete")
    assert msg.closed and msg.part_kind is None and proc.current is None
    ig = proc.open("image_generation_call")
    ig.phase("generating")
    ig.close("incomplete")
    proc.finish()
    events = payloads(proc)
    check_envelope(events)
    output = events[-1]["response"]["output"]
    assert output[0]["status"] == "incomplete"
    assert output[0]["content"] == [
        {"type": "output_text", "text": "Half an ans", "annotations": [], "logprobs": []}
    ]
    # the image item's status enum has no `incomplete`; the spec maps it to failed
    assert output[1]["status"] == "failed"


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("reason", ["max_output_tokens", "content_filter"])
def test_truncate(dialect: str, reason: str) -> None:
    proc = new(dialect)
    rsn = proc.open("reasoning")
    rsn.part("reasoning_text")
    rsn.text("thinking")
    ci = proc.open("code_interpreter_call")
    ci.delta("while True:")
    proc.truncate(reason, usage={"input_tokens": 5, "output_tokens": 9})
    assert rsn.closed and ci.closed
    events = payloads(proc)
    check_envelope(events)
    final = events[-1]
    assert final["type"] == "response.incomplete"
    response = final["response"]
    assert response["status"] == "incomplete"
    assert response["incomplete_details"] == {"reason": reason}
    assert [i["status"] for i in response["output"]] == ["completed", "incomplete"]
    assert response["output"][1]["code"] == "while True:"
    assert response["usage"]["output_tokens"] == 9 and response["usage"]["total_tokens"] == 14


@pytest.mark.parametrize("dialect", DIALECTS)
def test_fail_then_nothing_more(dialect: str) -> None:
    proc = new(dialect)
    msg = proc.open("message")
    msg.part("output_text")
    msg.text("Partial")
    proc.fail("the model server went away", code="server_error")
    events = payloads(proc)
    check_envelope(events)
    assert types(events)[-2:] == ["error", "response.failed"]
    error = events[-2]["error"] if dialect == "openresponses" else events[-2]
    assert error["message"] == "the model server went away"
    response = events[-1]["response"]
    assert response["status"] == "failed"
    assert response["error"] == {"code": "server_error", "message": "the model server went away"}
    assert response["output"][0]["status"] == "incomplete"
    assert response["output"][0]["content"][0]["text"] == "Partial"

    for call in (
        lambda: proc.open("message"),
        proc.finish,
        lambda: proc.truncate("max_output_tokens"),
        lambda: msg.text("more"),
        lambda: msg.close(),
    ):
        with pytest.raises(ProcessorError):
            call()
    proc.fail("again")  # a second failure is a no-op, never a second terminal
    assert proc.drain() == []


@pytest.mark.parametrize("dialect", DIALECTS)
def test_fail_with_a_code_outside_the_response_enum(dialect: str) -> None:
    proc = new(dialect)
    proc.fail("upstream said no", code="invalid_upstream_chunk")
    events = payloads(proc)
    check_envelope(events)
    error = events[-2]["error"] if dialect == "openresponses" else events[-2]
    assert error["code"] == "invalid_upstream_chunk"
    assert events[-1]["response"]["error"]["code"] == "server_error"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_finish_without_items_and_nothing_after(dialect: str) -> None:
    proc = new(dialect)
    proc.finish()
    events = payloads(proc)
    check_envelope(events)
    assert types(events) == ["response.created", "response.in_progress", "response.completed"]
    with pytest.raises(ProcessorError, match="ended"):
        proc.finish()
    with pytest.raises(ProcessorError, match="ended"):
        proc.open("message")


# -- programming errors ------------------------------------------------------------
def test_programming_errors_raise_typed_exceptions() -> None:
    proc = new("openai")
    with pytest.raises(ProcessorError, match="unknown item type 'nope'"):
        proc.open("nope")
    msg = proc.open("message")
    with pytest.raises(ProcessorError, match="no open part"):
        msg.text("x")
    with pytest.raises(ProcessorError, match="no open part"):
        msg.part_phase("annotate", annotation=CITATION)
    with pytest.raises(ProcessorError, match="has no part 'summary_text'"):
        msg.part("summary_text")
    with pytest.raises(ProcessorError, match="takes no item-level deltas"):
        msg.delta("x")
    with pytest.raises(ProcessorError, match="no phase 'searching'"):
        msg.phase("searching")
    with pytest.raises(ProcessorError, match="cannot close as 'failed'"):
        msg.close("failed")
    msg.part("output_text")
    msg.text("ok")
    msg.close()
    with pytest.raises(ProcessorError, match="already closed"):
        msg.close()
    with pytest.raises(ProcessorError, match="already closed|no open part"):
        msg.text("late")

    fc = proc.open("function_call", call_id="call_1", name="f")
    fc.close()
    with pytest.raises((ProcessorError, TransitionError), match="closed"):
        fc.delta("{}")
    with pytest.raises(ProcessorError, match="function_call"):
        proc.open("function_call", call_id="call_2")  # `name` is required
    with pytest.raises(ProcessorError, match="unexpected keyword"):
        proc.open("message", colour="blue")

    ig = proc.open("image_generation_call")
    with pytest.raises(TransitionError, match="partial_image"):
        ig.phase("partial_image", partial_image_b64="AAA")  # not generating yet
    ws = proc.open("web_search_call")
    ws.phase("searching")
    with pytest.raises(TransitionError, match="searching"):
        ws.phase("searching")
    with pytest.raises(ProcessorError, match="already started"):
        proc.start()
    proc.finish()
    events = payloads(proc)  # the misuses emitted nothing invalid
    check_envelope(events)


def test_unknown_dialect() -> None:
    with pytest.raises(ProcessorError, match="unknown dialect 'soap'"):
        StreamProcessor("soap")


def test_transition_error_names_the_machine_and_state() -> None:
    proc = new("openai")
    mc = proc.open("mcp_call", server_label="s", name="t")
    mc.phase("call")
    with pytest.raises(TransitionError) as info:
        mc.delta("{}")
    err = info.value
    assert (err.machine, err.transition, err.state) == ("mcp_call", "delta", "calling")
    assert "cannot 'delta' in state 'calling'" in str(err)


# -- extension proof: a new YAML item type, no processor change ------------------
DRIVE_EXTENSION = r"""
import json, sys
sys.path.insert(0, "tests")
import responses_stream as rs
from responses_stream import CountingIds, ProcessorError, StreamProcessor
from _support import validate_openresponses

for name in ("openai", "openresponses"):
    proc = StreamProcessor(name, ids=CountingIds(), model="m")
    item = proc.open("acme:search_result", query="q")
    item.delta("hit 1; ")
    item.delta("hit 2")
    item.close()
    second = proc.open("acme:search_result", query="cut")
    second.delta("partial")
    proc.finish()
    enc = proc.dialect.encoder()
    payloads = []
    for event in proc.drain():
        head, data = enc.encode(event).decode().split("\n", 1)
        payload = json.loads(data[6:])
        assert head == "event: " + payload["type"], head
        payloads.append(payload)
    if name == "openresponses":
        for p in payloads:
            assert validate_openresponses(p, proc.dialect) == [], p
    t = [p["type"] for p in payloads]
    assert t == [
        "response.created", "response.in_progress",
        "response.output_item.added",
        "acme:search_result.delta", "acme:search_result.delta",
        "acme:search_result.done", "response.output_item.done",
        "response.output_item.added", "acme:search_result.delta",
        "acme:search_result.done", "response.output_item.done",
        "response.completed",
    ], t
    assert [p["sequence_number"] for p in payloads] == list(range(len(payloads)))
    assert payloads[5]["hits"] == "hit 1; hit 2"
    out = payloads[-1]["response"]["output"]
    assert [(i["type"], i["query"], i["hits"], i["status"]) for i in out] == [
        ("acme:search_result", "q", "hit 1; hit 2", "completed"),
        ("acme:search_result", "cut", "partial", "completed"),
    ], out
    assert out[0]["id"] == "sr_0002" and out[1]["id"] == "sr_0003"
    try:
        item.delta("late")
    except ProcessorError:
        pass
    else:
        raise AssertionError("a delta on a closed extension item was accepted")
print("extension driven")
"""


def test_direct_api_drives_a_new_yaml_item_type(tmp_path: Path) -> None:
    spec, out = tmp_path / "spec", tmp_path / "out"
    shutil.copytree(ROOT / "spec", spec)
    shutil.copy(FIXTURE, spec / "items" / FIXTURE.name)
    gen = subprocess.run(
        [sys.executable, "-m", "generator", "generate", "--spec", str(spec), "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert gen.returncode == 0, gen.stderr
    runtime = out / "responses_stream" / "_runtime"
    for name in ("core/processor.py", "inputs/chat/general.py", "inputs/api.py"):
        # the hand-written runtime is copied verbatim: no code knows about acme
        generated = (runtime / name).read_text()
        assert (
            generated == (ROOT / "generated" / "responses_stream" / "_runtime" / name).read_text()
        )
        assert "acme" not in generated
    drive = subprocess.run(
        [sys.executable, "-c", DRIVE_EXTENSION], cwd=out, capture_output=True, text=True
    )
    assert drive.returncode == 0, drive.stdout + drive.stderr
    assert "extension driven" in drive.stdout


# -- gaps found by these tests, now fixed -------------------------------------------
def test_truncate_rejects_an_unknown_reason() -> None:
    proc = new("openai")
    proc.open("message")
    with pytest.raises(ProcessorError, match="reason"):
        proc.truncate("stop")  # a chat finish_reason, not an incomplete reason
    assert not proc.ended


def test_text_on_a_closed_item_says_it_is_closed() -> None:
    proc = new("openai")
    msg = proc.open("message")
    msg.part("output_text")
    msg.close()
    with pytest.raises(ProcessorError, match="already closed"):
        msg.text("late")


def test_a_rejected_open_leaves_the_open_item_alone() -> None:
    proc = new("openai")
    msg = proc.open("message")
    msg.part("output_text")
    msg.text("still talking")
    with pytest.raises(ProcessorError, match="name"):
        proc.open("function_call", call_id="call_1")  # `name` is missing
    assert not msg.closed and proc.current is msg
