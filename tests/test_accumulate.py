"""ResponseAccumulator: event payloads folded into a Response snapshot.

The reference is the official SDK's ``ResponseStreamState``, fed the same
events.  Where the two are compared, and why they can differ:

* The SDK's running snapshot only follows output_text deltas of messages and
  argument deltas of function calls; it never applies ``output_item.done``,
  but keeps the done items aside (``_completed_output``) and uses them for a
  terminal response without output.  Its *accumulated* view here is that
  snapshot with the done items put in place, which is what the accumulator
  keeps after every ``output_item.done``.  Event by event the two agree
  completely only on streams of plain message text and function calls; on
  others the accumulator knows more (refusal, reasoning, summaries, code,
  annotations, logprobs, phase statuses), so there the comparison event by
  event is limited to what the SDK follows.
* The SDK keeps the ``response.created`` envelope until the terminal event;
  the accumulator takes each lifecycle event's response (created and
  in_progress carry the same one in these streams).
* The SDK's final response is parsed: output text gets ``parsed`` and function
  calls ``parsed_arguments`` (structured-output results, ``None`` here); those
  two keys are left out of the comparison.  The SDK has a final response only
  for ``response.completed``; for incomplete and failed streams the reference
  is the terminal event the SDK hands on.
* SDK models are dumped with ``exclude_unset`` so that fields the server did
  not send are not compared as ``None``.
"""

from __future__ import annotations

import copy
import functools
import importlib
import json
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from _support import drive
from openai._models import construct_type
from openai._types import omit
from openai.lib.streaming.responses._responses import ResponseStreamState
from openai.types.responses import ResponseStreamEvent

import responses_stream as rs
from responses_stream import CountingIds, events_from_chat
from responses_stream._runtime.consumers.accumulate import AccumulateError, ResponseAccumulator
from responses_stream._runtime.core.processor import ProcessorError

ROOT = Path(__file__).resolve().parents[1]
DIALECTS = ("openai", "openresponses")
SDK_ONLY = {"parsed", "parsed_arguments"}


# -- streams ------------------------------------------------------------------
def _scenarios() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted((ROOT / "generated" / "tests").glob("test_item_*.py")):
        module = importlib.import_module(path.stem)
        for scenario in module.SCENARIOS:
            out.append((module.ITEM_TYPE, scenario))
    return out


SCENARIOS = _scenarios()
SCENARIO_IDS = [f"{t}-{s['name']}" for t, s in SCENARIOS]


def payloads(dialect: str, events: Iterable[Any]) -> list[dict[str, Any]]:
    """Typed events as the JSON payloads of their SSE frames."""
    enc = rs.DIALECTS[dialect].encoder()
    out = []
    for event in events:
        head, data = enc.encode(event).decode().split("\n", 1)
        assert data.startswith("data: ")
        out.append(json.loads(data[6:]))
    return out


def scenario_stream(dialect: str, item_type: str, scenario: dict[str, Any]) -> list[dict[str, Any]]:
    return drive(dialect, item_type, scenario).payloads


def ch(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> Any:
    return {"choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}], **extra}


def tool(index: int, call_id: str | None = None, name: str | None = None, args: str = "") -> Any:
    fn: dict[str, Any] = {"arguments": args}
    frag: dict[str, Any] = {"index": index, "function": fn}
    if call_id:
        frag |= {"id": call_id, "type": "function"}
        fn["name"] = name
    return frag


LOGPROBS = {"content": [{"token": "Hi", "logprob": -0.25, "bytes": [72, 105], "top_logprobs": []}]}
USAGE = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}

# name -> (chunks, whether the SDK's running snapshot follows every change)
CHATS: dict[str, tuple[list[Any], bool]] = {
    "text": (
        [ch({"role": "assistant", "content": "Hel"}), ch({"content": "lo, wörld"}), ch({}, "stop")],
        True,
    ),
    "text_usage": (
        [ch({"content": "Hi"}), ch({}, "stop"), {"choices": [], "usage": USAGE}],
        True,
    ),
    "reasoning": (
        [
            ch({"role": "assistant", "reasoning_content": "Let me "}),
            ch({"reasoning_content": "think."}),
            ch({"content": "42"}),
            ch({}, "stop"),
        ],
        False,
    ),
    "parallel_tools": (
        [
            ch({"role": "assistant", "tool_calls": [tool(0, "call_a", "get_weather", '{"ci')]}),
            ch({"tool_calls": [tool(1, "call_b", "get_time", '{"tz"')]}),
            ch({"tool_calls": [tool(0, args='ty": "Paris"}')]}),
            ch({"tool_calls": [tool(1, args=': "CET"}')]}),
            ch({}, "tool_calls"),
        ],
        True,
    ),
    "text_then_tool": (
        [
            ch({"content": "Checking."}),
            ch({"tool_calls": [tool(0, "call_a", "lookup", '{"q": 1}')]}),
            ch({}, "tool_calls"),
        ],
        True,
    ),
    "refusal": ([ch({"refusal": "I can't "}), ch({"refusal": "help."}), ch({}, "stop")], False),
    "logprobs": (
        [{"choices": [{"index": 0, "delta": {"content": "Hi"}, "logprobs": LOGPROBS}]}]
        + [ch({}, "stop")],
        False,
    ),
    "length": ([ch({"content": "cut sh"}), ch({}, "length")], True),
    "upstream_error": ([ch({"content": "par"}), {"error": {"message": "boom"}}], True),
}


def chat_stream(dialect: str, name: str) -> list[dict[str, Any]]:
    chunks, _ = CHATS[name]
    return payloads(dialect, events_from_chat(chunks, dialect=dialect, ids=CountingIds()))


# -- the SDK ------------------------------------------------------------------
def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in SDK_ONLY}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def dump(model: Any) -> Any:
    return _strip(model.model_dump(mode="json", exclude_unset=True, warnings=False))


class Sdk:
    """The SDK's stream state, fed payloads."""

    def __init__(self) -> None:
        self.state = ResponseStreamState(input_tools=omit, text_format=omit)
        self.fired: list[Any] = []

    def feed(self, payload: Mapping[str, Any]) -> None:
        event: Any = construct_type(type_=ResponseStreamEvent, value=copy.deepcopy(dict(payload)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.fired = self.state.handle_event(event)

    @property
    def raw(self) -> Any:
        return self.state._ResponseStreamState__current_snapshot  # type: ignore[attr-defined]

    def accumulated(self) -> dict[str, Any]:
        """The running snapshot with the items that are done put in place."""
        st = self.state
        snapshot: dict[str, Any] = dump(self.raw)
        indexes = sorted(st._output_items.keys() | st._completed_output.keys())
        snapshot["output"] = [
            dump(st._completed_output.get(i) or st._output_items[i]) for i in indexes
        ]
        return snapshot

    def final(self) -> Any:
        if self.state._completed_response is not None:
            return dump(self.state._completed_response)
        return dump(self.fired[-1].response)


def followed_by_sdk(snapshot: Mapping[str, Any]) -> list[Any]:
    """What the SDK's running snapshot follows: message text parts, function call arguments."""
    out: list[Any] = []
    for item in snapshot["output"]:
        if item["type"] == "message":
            out.append([(p["type"], p.get("text")) for p in item["content"]])
        elif item["type"] == "function_call":
            out.append(item["arguments"])
        else:
            out.append(item["type"])
    return out


def is_terminal(payload: Mapping[str, Any]) -> bool:
    return payload["type"] in {"response.completed", "response.incomplete", "response.failed"}


def check_against_sdk(stream: list[dict[str, Any]], every_event: bool) -> ResponseAccumulator:
    acc = ResponseAccumulator("openai")
    sdk = Sdk()
    assert is_terminal(stream[-1]) and not any(is_terminal(p) for p in stream[:-1])
    for n, payload in enumerate(stream[:-1]):
        snapshot = acc.feed(payload)
        sdk.feed(payload)
        assert followed_by_sdk(snapshot) == followed_by_sdk(dump(sdk.raw)), n
        if every_event:
            assert snapshot == sdk.accumulated(), (n, payload["type"])
    assert acc.snapshot == sdk.accumulated()
    assert acc.final is None and not acc.done
    acc.feed(stream[-1])
    sdk.feed(stream[-1])
    assert acc.final == stream[-1]["response"]
    assert acc.snapshot == acc.final and acc.done
    assert acc.final == sdk.final()
    return acc


# -- per-item scenarios ---------------------------------------------------------
@pytest.mark.parametrize(("item_type", "scenario"), SCENARIOS, ids=SCENARIO_IDS)
def test_scenario_matches_sdk(item_type: str, scenario: dict[str, Any]) -> None:
    check_against_sdk(scenario_stream("openai", item_type, scenario), every_event=False)


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(("item_type", "scenario"), SCENARIOS, ids=SCENARIO_IDS)
def test_scenario_rebuilds_what_the_server_sent(
    dialect: str, item_type: str, scenario: dict[str, Any]
) -> None:
    """Before each item's done event, its accumulated fields are the ones the done item carries."""
    table = rs.DIALECTS[dialect].tables.ITEMS[item_type]
    accumulated = [f for f, spec in table["fields"].items() if "stored" not in spec]
    stream = scenario_stream(dialect, item_type, scenario)
    acc = ResponseAccumulator(dialect)
    for payload in stream:
        if payload["type"] == "response.output_item.done":
            mine = acc.snapshot["output"][payload["output_index"]]
            assert {f: mine.get(f) for f in accumulated} == {
                f: payload["item"].get(f) for f in accumulated
            }
        acc.feed(payload)
    assert acc.final == stream[-1]["response"]


@pytest.mark.parametrize(("item_type", "scenario"), SCENARIOS, ids=SCENARIO_IDS)
def test_openresponses_matches_openai(item_type: str, scenario: dict[str, Any]) -> None:
    """The same scenario in both dialects folds to the same items, up to the item's wire type."""
    outputs = {}
    for dialect in DIALECTS:
        acc = ResponseAccumulator(rs.DIALECTS[dialect])
        stream = scenario_stream(dialect, item_type, scenario)
        acc.feed_all(stream[:-1])
        outputs[dialect] = acc.snapshot["output"]
        acc.feed(stream[-1])
        assert acc.final == stream[-1]["response"]
    wire = rs.DIALECTS["openresponses"].item_types[item_type]
    assert outputs["openresponses"] == [{**i, "type": wire} for i in outputs["openai"]]


# -- chat streams through the processor ---------------------------------------------
@pytest.mark.parametrize("name", CHATS)
def test_chat_stream_matches_sdk(name: str) -> None:
    acc = check_against_sdk(chat_stream("openai", name), every_event=CHATS[name][1])
    assert acc.final is not None


def test_chat_stream_contents() -> None:
    final = check_against_sdk(chat_stream("openai", "parallel_tools"), every_event=True).final
    assert final is not None
    calls = [(i["call_id"], i["name"], json.loads(i["arguments"])) for i in final["output"]]
    assert calls == [
        ("call_a", "get_weather", {"city": "Paris"}),
        ("call_b", "get_time", {"tz": "CET"}),
    ]
    acc = ResponseAccumulator()
    acc.feed_all(chat_stream("openai", "reasoning"))
    assert acc.final is not None
    reasoning, message = acc.final["output"]
    assert reasoning["content"] == [{"type": "reasoning_text", "text": "Let me think."}]
    assert message["content"][0]["text"] == "42"
    acc = ResponseAccumulator()
    acc.feed_all(chat_stream("openai", "refusal"))
    assert acc.snapshot["output"][0]["content"] == [{"type": "refusal", "refusal": "I can't help."}]
    acc = ResponseAccumulator()
    acc.feed_all(chat_stream("openai", "upstream_error"))
    assert acc.final is not None and acc.final["status"] == "failed"
    assert acc.final["output"][0]["status"] == "incomplete"


def test_logprobs_accumulate() -> None:
    acc = ResponseAccumulator()
    for payload in chat_stream("openai", "logprobs"):
        acc.feed(payload)
        if payload["type"] == "response.output_text.delta":
            assert acc.snapshot["output"][0]["content"][0]["logprobs"] == payload["logprobs"]
            assert payload["logprobs"][0]["token"] == "Hi"


@pytest.mark.parametrize("name", CHATS)
def test_chat_stream_openresponses(name: str) -> None:
    """The chat streams in the Open Responses dialect fold to the same output."""
    outputs = []
    for dialect in DIALECTS:
        stream = chat_stream(dialect, name)
        acc = ResponseAccumulator(dialect)
        acc.feed_all(stream)
        assert acc.final is not None and acc.final == stream[-1]["response"]
        outputs.append(acc.final["output"])
    assert outputs[0] == outputs[1]


def test_openresponses_renamed_reasoning_events() -> None:
    stream = chat_stream("openresponses", "reasoning")
    types = [p["type"] for p in stream]
    assert "response.reasoning.delta" in types and "response.reasoning_text.delta" not in types
    acc = ResponseAccumulator("openresponses")
    for payload in stream:
        acc.feed(payload)
        if payload["type"] == "response.reasoning.delta":
            text = acc.snapshot["output"][0]["content"][0]["text"]
            assert text in ("Let me ", "Let me think.")
    # each dialect knows only its own names: the other's is an unknown event, which
    # passes through (as in the SDK) and changes nothing
    renamed = next(p for p in stream if p["type"] == "response.reasoning.delta")
    openai_stream = chat_stream("openai", "reasoning")
    acc = ResponseAccumulator("openai")
    acc.feed_all(openai_stream[: types.index("response.reasoning.delta")])
    before = copy.deepcopy(acc.snapshot)
    assert acc.feed(renamed) == before
    acc = ResponseAccumulator("openresponses")
    original = next(p for p in openai_stream if p["type"] == "response.reasoning_text.delta")
    acc.feed_all(stream[: types.index("response.reasoning.delta")])
    before = copy.deepcopy(acc.snapshot)
    assert acc.feed(original) == before


# -- snapshots grow event by event ---------------------------------------------------
# catalogue delta event -> (slot of the item or None, index key, field): an oracle
# written out by hand, independent of the tables the accumulator reads.
TEXT_DELTAS = {
    "response.output_text.delta": ("content", "content_index", "text"),
    "response.refusal.delta": ("content", "content_index", "refusal"),
    "response.reasoning_text.delta": ("content", "content_index", "text"),
    "response.reasoning_summary_text.delta": ("summary", "summary_index", "text"),
    "response.function_call_arguments.delta": (None, None, "arguments"),
    "response.custom_tool_call_input.delta": (None, None, "input"),
    "response.mcp_call_arguments.delta": (None, None, "arguments"),
    "response.code_interpreter_call_code.delta": (None, None, "code"),
}


def _value(snapshot: Mapping[str, Any], key: tuple[Any, ...]) -> Any:
    output_index, slot, index, field = key
    holder = snapshot["output"][output_index]
    if slot is not None:
        holder = holder[slot][index]
    return holder[field]


def check_growth(dialect: str, stream: list[dict[str, Any]]) -> None:
    names = rs.DIALECTS[dialect].wire_types
    acc = ResponseAccumulator(dialect)
    sent: dict[tuple[Any, ...], str] = {}
    sizes: list[int] = []
    for payload in stream:
        snapshot = acc.feed(payload)
        assert snapshot is acc.snapshot
        rule = TEXT_DELTAS.get(names[payload["type"]])
        if rule is not None:
            slot, index_key, field = rule
            index = payload[index_key] if index_key else None
            key = (payload["output_index"], slot, index, field)
            sent[key] = sent.get(key, "") + payload["delta"]
        for key, text in sent.items():  # everything sent so far, and nothing else
            assert _value(snapshot, key) == text, (payload["type"], key)
        now = [len(snapshot.get("output", []))] + [
            len(item.get(slot) or [])
            for item in snapshot.get("output", [])
            for slot in ("content", "summary")
        ]
        assert now[0] >= (sizes[0] if sizes else 0)
        assert all(a >= b for a, b in zip(now[1:], sizes[1:], strict=False))
        sizes = now
    assert acc.done


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(("item_type", "scenario"), SCENARIOS, ids=SCENARIO_IDS)
def test_scenario_snapshots_grow(dialect: str, item_type: str, scenario: dict[str, Any]) -> None:
    check_growth(dialect, scenario_stream(dialect, item_type, scenario))


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("name", CHATS)
def test_chat_snapshots_grow(dialect: str, name: str) -> None:
    check_growth(dialect, chat_stream(dialect, name))


# -- envelope and statuses ------------------------------------------------------------
def test_queued_audio_and_envelope_replacement() -> None:
    d = rs.DIALECTS["openai"]
    resp = d.emitter(ids=CountingIds(), model="m")
    events = resp.queued() + resp.created() + resp.in_progress()
    msg = resp.message()
    events += msg.open() + msg.output_text_open() + msg.output_text_delta(delta="hi")
    events += resp.audio_delta(delta="AAA") + resp.audio_done()
    events += msg.output_text_done() + msg.done() + resp.completed()
    stream = payloads("openai", events)
    acc = ResponseAccumulator()
    statuses = []
    for payload in stream:
        statuses.append(acc.feed(payload)["status"])
    assert statuses[:3] == ["queued", "in_progress", "in_progress"]
    assert statuses[-1] == "completed"
    assert acc.final == stream[-1]["response"]


def test_terminal_without_output_keeps_accumulated_output() -> None:
    stream = chat_stream("openai", "text")
    *body, terminal = copy.deepcopy(stream)
    del terminal["response"]["output"]
    acc = ResponseAccumulator()
    acc.feed_all(body)
    output = copy.deepcopy(acc.snapshot["output"])
    acc.feed(terminal)
    assert (
        acc.final is not None and acc.final["output"] == output == stream[-1]["response"]["output"]
    )
    sdk = Sdk()
    for payload in [*body, terminal]:
        sdk.feed(payload)
    assert acc.final == sdk.final()


@functools.cache
def _item_specs() -> dict[str, Any]:
    """Every item spec by its type, whatever its file is called."""
    out = {}
    for path in sorted((ROOT / "spec").rglob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and data.get("kind") == "item":
            out[data["type"]] = data
    return out


def _spec_status(item_type: str) -> dict[str, str | None]:
    """event -> the status set by the spec's transition emitting it (None: not set there)."""
    spec = _item_specs()[item_type]
    finals = {s for s, v in spec["states"].items() if v.get("type") == "final"}
    out: dict[str, str | None] = {}
    for tr in spec["transitions"].values():
        if any(target in finals for target in _targets(spec, tr)):
            continue
        status = next((a["status"] for a in tr.get("actions", []) if "status" in a), None)
        for e in tr.get("emit", []):
            out[e if isinstance(e, str) else e["event"]] = status
    return out


def _targets(spec: Mapping[str, Any], tr: Mapping[str, Any]) -> set[str]:
    name = next(n for n, t in spec["transitions"].items() if t is tr)
    ons = [s.get("on", s.get(True, {})) for s in spec["states"].values()]  # YAML 1.1: on is True
    return {on[name] for on in ons if name in on}


@pytest.mark.parametrize("item_type", sorted(rs.DIALECTS["openai"].tables.ITEMS))
def test_phase_statuses_agree_with_the_spec(item_type: str) -> None:
    """The statuses read off the tables are the spec's status actions, where they are set."""
    plan = ResponseAccumulator()._plan.items[item_type]
    for event, status in _spec_status(item_type).items():
        if event in ("response.output_item.added",):
            continue
        assert plan.status.get(event) == status, event


def test_phase_status_in_snapshot() -> None:
    scenario = next(s for t, s in SCENARIOS if t == "web_search_call" and s["name"] == "complete")
    acc = ResponseAccumulator()
    seen = []
    for payload in scenario_stream("openai", "web_search_call", scenario):
        snapshot = acc.feed(payload)
        if snapshot["output"]:
            seen.append(snapshot["output"][0]["status"])
    assert seen[:3] == ["in_progress", "in_progress", "searching"]
    assert seen[-1] == "completed"


def test_payloads_are_not_modified() -> None:
    for item_type, scenario in SCENARIOS:
        stream = scenario_stream("openai", item_type, scenario)
        before = copy.deepcopy(stream)
        ResponseAccumulator().feed_all(stream)
        assert stream == before, item_type


# -- invalid streams ------------------------------------------------------------------
def _message_stream() -> list[dict[str, Any]]:
    return chat_stream("openai", "text")


def _at(stream: list[dict[str, Any]], wire: str, n: int = 0) -> int:
    return [i for i, p in enumerate(stream) if p["type"] == wire][n]


Mutation = Callable[[list[dict[str, Any]]], tuple[list[dict[str, Any]], dict[str, Any]]]


def _edit(wire: str, n: int = 0, **changes: Any) -> Mutation:
    """Feed the stream up to an event, then that event with ``changes``."""

    def mutate(stream: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        i = _at(stream, wire, n)
        return stream[:i], {**stream[i], **changes}

    return mutate


def _after(wire: str, extra: Mapping[str, Any]) -> Mutation:
    """Feed the stream through an event, then ``extra``."""

    def mutate(stream: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        i = _at(stream, wire)
        return stream[: i + 1], {"sequence_number": 999, **extra}

    return mutate


DELTA = {
    "type": "response.output_text.delta",
    "item_id": "msg_0002",
    "output_index": 0,
    "content_index": 0,
    "delta": "x",
    "logprobs": [],
}
INVALID: dict[str, tuple[Mutation, str]] = {
    "delta for unknown output_index": (
        _edit("response.output_text.delta", output_index=3),
        "no output item at output_index 3",
    ),
    "content_index out of range": (
        _edit("response.output_text.delta", content_index=1),
        "content_index 1 is out of range",
    ),
    "event after the terminal one": (
        lambda s: (s, {**s[-2], "sequence_number": 999}),
        "after the terminal event response.completed",
    ),
    "event before created": (
        lambda s: ([], {k: v for k, v in s[2].items() if k != "sequence_number"}),
        "before the response was created",
    ),
    # numbered past 0: a resumed stream, which cannot be folded without what came before
    "resumed stream without its snapshot": (
        lambda s: ([], s[2]),
        r"resumes a stream whose first 2 events are not here.*resume\(snapshot, after=1\)",
    ),
    # (a stream may skip response.in_progress, but not the item a delta is for)
    "delta before its item, without in_progress": (
        lambda s: (s[:1], s[_at(s, "response.output_text.delta")]),
        "no output item at output_index 0",
    ),
    "duplicate item": (
        lambda s: (s[: _at(s, "response.output_text.delta")], {**s[2], "sequence_number": 9}),
        "output_index 0, but the next item's index is 1",
    ),
    "part gap": (_edit("response.content_part.added", content_index=2), "the next part's is 0"),
    "delta after item done": (
        _after("response.output_item.done", DELTA),
        "output item 0 is already done",
    ),
    "delta after part done": (
        _after("response.content_part.done", DELTA),
        "part content_index=0 of output item 0 is done",
    ),
    "delta for another part kind": (
        _edit("response.output_text.delta", type="response.refusal.delta"),
        "does not apply to the output_text part",
    ),
    "event for another item type": (
        _edit("response.output_text.delta", type="response.function_call_arguments.delta"),
        "does not apply to a message item",
    ),
    "part kind foreign to the item": (
        _edit("response.content_part.added", part={"type": "summary_text", "text": ""}),
        "a summary_text part cannot go in a message",
    ),
    "unknown event before created": (
        lambda s: ([], {"type": "response.nope", "sequence_number": 0}),
        "before the response was created",
    ),
    "delta not a string": (
        _edit("response.output_text.delta", delta=3),
        "'delta' must be a string",
    ),
    "missing delta": (
        lambda s: (s[:4], {k: v for k, v in s[4].items() if k != "delta"}),
        "missing 'delta'",
    ),
    "sequence goes back": (
        _edit("response.output_text.delta", sequence_number=1),
        "sequence_number 1 does not follow 3",
    ),
    "done item is another item": (
        lambda s: (
            s[: _at(s, "response.output_item.done")],
            {
                **s[_at(s, "response.output_item.done")],
                "item": {"type": "function_call", "id": "x"},
            },
        ),
        "does not match the message",
    ),
    "completed with an open item and no output": (
        lambda s: (
            s[: _at(s, "response.output_item.done")],
            {**s[-1], "response": {k: v for k, v in s[-1]["response"].items() if k != "output"}},
        ),
        r"output items \[0\] were never closed",
    ),
    "second created": (lambda s: (s[:2], {**s[0], "sequence_number": 5}), "not allowed while"),
}


@pytest.mark.parametrize("case", INVALID)
def test_invalid_streams(case: str) -> None:
    mutate, message = INVALID[case]
    body, bad = mutate(_message_stream())
    acc = ResponseAccumulator()
    acc.feed_all(body)
    before = copy.deepcopy(acc.snapshot)
    with pytest.raises(AccumulateError, match=message):
        acc.feed(bad)
    assert acc.snapshot == before  # a rejected event changes nothing


def test_bad_payloads_and_dialects() -> None:
    assert issubclass(AccumulateError, ValueError)
    acc = ResponseAccumulator()
    with pytest.raises(AccumulateError, match="JSON object with a string 'type'"):
        acc.feed({"sequence_number": 0})
    with pytest.raises(AccumulateError, match="JSON object"):
        acc.feed([])  # type: ignore[arg-type]
    with pytest.raises(ProcessorError, match="unknown dialect"):
        ResponseAccumulator("nope")
    assert acc.snapshot == {} and acc.final is None


# -- tolerance: what the SDK accepts ----------------------------------------------------
def _check_with_sdk(stream: list[dict[str, Any]]) -> ResponseAccumulator:
    acc = ResponseAccumulator()
    sdk = Sdk()
    for payload in stream:
        acc.feed(payload)
        sdk.feed(payload)
    assert acc.final == stream[-1]["response"] == sdk.final()
    return acc


def test_unknown_item_type_passes_through() -> None:
    stream = _message_stream()
    added = {
        "type": "response.output_item.added",
        "output_index": 1,
        "item": {"type": "future_call", "id": "fc_1", "status": "in_progress", "x": 1},
    }
    events = [
        {**added, "sequence_number": 100},
        {
            "type": "response.future_call.progress",
            "output_index": 1,
            "item_id": "fc_1",
            "sequence_number": 101,
        },
        {
            "type": "response.output_text.delta",  # a known event for an unknown item
            "output_index": 1,
            "item_id": "fc_1",
            "content_index": 0,
            "delta": "ignored",
            "sequence_number": 102,
        },
    ]
    done_item = {"type": "future_call", "id": "fc_1", "status": "completed", "x": 2}
    done = {
        "type": "response.output_item.done",
        "output_index": 1,
        "item": done_item,
        "sequence_number": 103,
    }
    terminal = copy.deepcopy(stream[-1])
    terminal["sequence_number"] = 104
    terminal["response"]["output"].append(done_item)
    body = stream[:-1]
    acc = ResponseAccumulator()
    acc.feed_all(body)
    acc.feed(events[0])
    assert acc.snapshot["output"][1] == added["item"]
    for event in events[1:]:
        before = copy.deepcopy(acc.snapshot)
        assert acc.feed(event) == before
    acc.feed(done)
    assert acc.snapshot["output"][1] == done_item
    acc.feed(terminal)
    assert acc.final == terminal["response"]
    # the SDK asserts on a text delta for an item that is not a message; it takes the rest
    _check_with_sdk([*body, *events[:2], done, terminal])
    # its type is still checked when it closes
    acc = ResponseAccumulator()
    acc.feed_all([*body, events[0]])
    with pytest.raises(AccumulateError, match="does not match the future_call"):
        acc.feed({**done, "item": {"type": "message", "id": "fc_1"}})


def test_unknown_event_passes_through() -> None:
    stream = _message_stream()
    i = _at(stream, "response.output_text.delta")
    nope = {"type": "response.nope", "sequence_number": stream[i]["sequence_number"]}
    shifted = [{**p, "sequence_number": p["sequence_number"] + 1} for p in stream[i:]]
    acc = _check_with_sdk([*stream[:i], nope, *shifted])
    assert acc.final is not None and acc.final["output"] == stream[-1]["response"]["output"]
    with pytest.raises(AccumulateError, match="after the terminal event"):
        acc.feed({"type": "response.nope"})


def test_stream_without_in_progress() -> None:
    stream = [p for p in _message_stream() if p["type"] != "response.in_progress"]
    assert stream[0]["type"] == "response.created"
    acc = ResponseAccumulator()
    acc.feed(stream[0])
    acc.feed(stream[1])  # the first item, straight after created
    assert acc.snapshot["output"] == [stream[1]["item"]]
    acc.feed_all(stream[2:])
    assert acc.final == stream[-1]["response"]
    _check_with_sdk(stream)
    # the terminal event straight after created, too
    acc = ResponseAccumulator()
    acc.feed(stream[0])
    terminal = {**stream[-1], "response": {**stream[-1]["response"], "output": []}}
    acc.feed(terminal)
    assert acc.done and acc.final == terminal["response"]


def test_output_index_gaps_and_empty_added() -> None:
    """The SDK keys items by output_index: gaps and an added event without item are fine."""
    stream = _message_stream()
    empty = {"type": "response.output_item.added", "output_index": 0, "sequence_number": 2}
    shifted = [
        {**p, "output_index": p["output_index"] + 1} if "output_index" in p else p
        for p in stream[2:]
    ]
    body = [
        *stream[:2],
        empty,
        *[{**p, "sequence_number": p["sequence_number"] + 1} for p in shifted],
    ]
    acc = _check_with_sdk(body)
    assert acc.final is not None and len(acc.final["output"]) == 1


def test_rotating_ids_are_followed_by_output_index() -> None:
    """A gateway that hands out fresh ids on every event (GitHub Copilot's does)."""
    stream = copy.deepcopy(_message_stream())
    for n, p in enumerate(stream):
        if "item_id" in p:
            p["item_id"] = f"rot_{n}"
        if "item" in p:
            p["item"]["id"] = f"rot_{n}"
        if "response" in p:
            p["response"]["id"] = f"resp_rot_{n}"
    acc = ResponseAccumulator()
    acc.feed_all(stream)
    assert acc.final == stream[-1]["response"]
    text = stream[-1]["response"]["output"][0]["content"][0]["text"]
    assert acc.final["output"][0]["content"][0]["text"] == text


# -- background responses ---------------------------------------------------------
def background_stream() -> list[dict[str, Any]]:
    """A text answer as OpenAI streams a ``background: true`` response: response.created
    (status ``queued``), response.queued, then response.in_progress and the rest."""
    chunks = [
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "delta": {"content": "Later."}, "finish_reason": None}],
        },
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        },
    ]
    frames = b"".join(rs.sse_from_chat(chunks, model="m", request={"background": True}))
    events = [json.loads(m.data) for m in rs.parse_sse([frames])]
    opening = [(e["type"], e["response"]["status"]) for e in events[:3]]
    assert opening == [
        ("response.created", "queued"),
        ("response.queued", "queued"),
        ("response.in_progress", "in_progress"),
    ]
    return events


def test_a_background_stream_folds_as_the_sdk_folds_it() -> None:
    """The same output and final response; the running snapshot's status follows the
    lifecycle events (queued, then in_progress), where the SDK keeps response.created's."""
    stream = background_stream()
    acc, sdk = ResponseAccumulator("openai"), Sdk()
    for n, payload in enumerate(stream[:-1]):
        snapshot = acc.feed(payload)
        sdk.feed(payload)
        assert followed_by_sdk(snapshot) == followed_by_sdk(dump(sdk.raw)), n
        mine = {k: v for k, v in snapshot.items() if k != "status"}
        assert mine == {k: v for k, v in sdk.accumulated().items() if k != "status"}, n
    assert acc.snapshot["status"] == "in_progress"
    acc.feed(stream[-1])
    sdk.feed(stream[-1])
    assert acc.final == sdk.final() == stream[-1]["response"]
    assert acc.final is not None and acc.final["background"] is True
    assert acc.final["output"][0]["content"][0]["text"] == "Later."


def test_a_background_stream_is_valid_and_converts() -> None:
    stream = background_stream()
    assert rs.validate_payloads(stream, strict=True) == []
    deltas = [c["choices"][0]["delta"] for c in rs.chat_chunks_from_responses(stream)]
    assert "".join(d.get("content") or "" for d in deltas) == "Later."


def test_response_queued_only_before_the_response_runs() -> None:
    stream = background_stream()
    created, queued, in_progress, *rest = stream
    late = [created, {**in_progress, "sequence_number": 1}, {**queued, "sequence_number": 2}]
    late += rest
    rules = {v.rule for v in rs.validate_payloads(late) if v.severity == "error"}
    assert "ENVELOPE_ORDER" in rules
    with pytest.raises(AccumulateError, match="response.queued"):
        ResponseAccumulator("openai").feed_all(late)
    # queued first, then created (as Open Responses servers may send it): also valid
    first = [{**queued, "sequence_number": 0}, {**created, "sequence_number": 1}, in_progress]
    first += rest
    assert rs.validate_payloads(first, strict=True) == []


# -- logprobs as OpenAI closes their part ------------------------------------------
def logprobs_stream() -> list[dict[str, Any]]:
    """A text answer with logprobs whose ``content_part.done`` carries ``logprobs: []``,
    as OpenAI's server sends it (``output_text.done`` and the item carry them all)."""

    def chunk(text: str | None, finish: str | None = None) -> dict[str, Any]:
        delta = {"content": text} if text is not None else {}
        logprobs = None
        if text:
            entry = {"token": text, "logprob": -0.5, "bytes": list(text.encode())}
            logprobs = {"content": [{**entry, "top_logprobs": [entry]}], "refusal": None}
        choice = {"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish}
        return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                "choices": [choice]}  # fmt: skip

    chunks = [chunk("Hel"), chunk("lo"), chunk(None, "stop")]
    frames = b"".join(rs.sse_from_chat(chunks, model="m"))
    events = [json.loads(m.data) for m in rs.parse_sse([frames])]
    [part_done] = [e for e in events if e["type"] == "response.content_part.done"]
    assert len(part_done["part"]["logprobs"]) == 2
    part_done["part"]["logprobs"] = []
    return events


def test_a_part_done_without_its_logprobs_is_read_as_openai_sends_it() -> None:
    stream = logprobs_stream()
    assert rs.validate_payloads(stream, strict=True) == []
    acc, sdk = ResponseAccumulator("openai"), Sdk()
    for payload in stream:
        acc.feed(payload)
        sdk.feed(payload)
    assert acc.final == sdk.final() == stream[-1]["response"]
    [part] = acc.final["output"][0]["content"] if acc.final else []
    assert [lp["token"] for lp in part["logprobs"]] == ["Hel", "lo"]
    text = [c["choices"][0]["delta"].get("content") for c in rs.chat_chunks_from_responses(stream)]
    assert "".join(t or "" for t in text) == "Hello"


def test_a_part_done_with_other_logprobs_is_still_a_mismatch() -> None:
    stream = logprobs_stream()
    [part_done] = [e for e in stream if e["type"] == "response.content_part.done"]
    part_done["part"]["logprobs"] = [{"token": "X", "logprob": -1.0, "bytes": [88]}]
    rules = {v.rule for v in rs.validate_payloads(stream) if v.severity == "error"}
    assert "DONE_TEXT_MISMATCH" in rules


def test_items_never_closed_take_the_response_output_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """OpenAI completes some responses with items it never closed (two mcp_list_tools
    items, genuinely): the terminal response's output is taken, as the SDK takes it."""
    s = _message_stream()
    unclosed = [e for e in s if e["type"] != "response.output_item.done"]
    acc, sdk = ResponseAccumulator(), Sdk()
    with caplog.at_level("WARNING", logger="responses_stream._runtime.consumers.accumulate"):
        for payload in unclosed:
            acc.feed(payload)
            sdk.feed(payload)
    assert acc.final == sdk.final() == s[-1]["response"]
    [warning] = acc.warnings
    assert "were never closed" in warning
    assert [r.getMessage() for r in caplog.records] == [warning]
    closed = ResponseAccumulator()
    closed.feed_all(s)
    assert closed.warnings == []
