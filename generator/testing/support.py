"""Helpers for the generated tests: drive emitters, validate events in their dialect.

This file is hand-written and copied into every generated test folder.
"""

from __future__ import annotations

import functools
import json
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import msgspec

import responses_stream as rs
from responses_stream import CountingIds

OPENRESPONSES_SCHEMA = "openresponses-openapi-2026-04-24.json"
ENVELOPE = {
    "response.created",
    "response.in_progress",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "response.queued",
}


@dataclass
class Run:
    """What one scenario emitted: per step, and the whole stream in order."""

    dialect: rs.Dialect
    item_id: str
    steps: list[list[Any]] = field(default_factory=list)
    stream: list[Any] = field(default_factory=list)

    @property
    def payloads(self) -> list[dict[str, Any]]:
        enc = self.dialect.encoder()
        out = []
        for ev in self.stream:
            frame = enc.encode(ev).decode()
            head, data = frame.split("\n", 1)
            assert head == f"event: {wire(ev)}"
            assert data.startswith("data: ") and data.endswith("\n\n")
            out.append(json.loads(data[6:]))
        return out


def wire(event: Any) -> str:
    """The wire ``type`` of an event struct."""
    return str(type(event).__struct_config__.tag)


def _convert_kwargs(method: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(method, vars(method.__globals__["m"]) | method.__globals__)
    return {k: msgspec.convert(v, hints[k]) for k, v in kwargs.items()}


def drive(dialect_name: str, item_type: str, scenario: dict[str, Any]) -> Run:
    """Run a scenario on a fresh stream, closing the response afterwards."""
    dialect = rs.DIALECTS[dialect_name]
    resp = dialect.emitter(ids=CountingIds(), model="test-model", instructions="be brief")
    run = Run(dialect, scenario["init"]["id"])
    run.stream += resp.created() + resp.in_progress()
    cls = dialect.emitter.__module__
    emitters = __import__(cls, fromlist=["ITEM_EMITTERS"]).ITEM_EMITTERS
    init = _convert_kwargs(emitters[item_type].__init__, scenario["init"])
    item = emitters[item_type](resp, **init)
    for step in scenario["steps"]:
        method = getattr(item, step["method"])
        events = method(**_convert_kwargs(method, step["kwargs"]))
        run.steps.append(events)
        run.stream += events
    if scenario["final_status"] == "incomplete":
        run.stream += resp.incomplete(reason="max_output_tokens")
    else:
        run.stream += resp.completed()
    return run


# -- validation -----------------------------------------------------------------
@functools.cache
def sdk_event_classes() -> dict[str, Any]:
    """The official SDK's ``ResponseStreamEvent`` members, by their ``type`` literal."""
    from openai.types.responses import ResponseStreamEvent

    union = typing.get_args(ResponseStreamEvent)[0]
    out = {}
    for cls in typing.get_args(union):
        (literal,) = typing.get_args(cls.model_fields["type"].annotation)
        out[literal] = cls
    return out


def validate_openai(payload: dict[str, Any]) -> Any:
    """Validate strictly with the official SDK's model for the event's type.

    An event that genuine OpenAI streams carry beyond the pinned SDK's union
    (an item spec declares it) is checked against the generated models instead.
    """
    cls = sdk_event_classes().get(payload["type"])
    if cls is None:
        owner = rs.tables.EVENTS.get(payload["type"], {}).get("beyond_sdk")
        assert owner, f"{payload['type']} is not an event of the openai SDK"
        return msgspec.json.decode(json.dumps(payload), type=rs.openai.models.Event)
    return cls.model_validate_json(json.dumps(payload), strict=True)


@functools.cache
def _openresponses_doc() -> dict[str, Any]:
    text = resources.files("responses_stream._vendor").joinpath(OPENRESPONSES_SCHEMA).read_text()
    doc: dict[str, Any] = json.loads(text)
    return doc


@functools.cache
def _openresponses_events() -> dict[str, str]:
    """Open Responses event type -> component schema name."""
    doc = _openresponses_doc()
    stream = doc["paths"]["/responses"]["post"]["responses"]["200"]["content"]
    out = {}
    for ref in stream["text/event-stream"]["schema"]["oneOf"]:
        name = ref["$ref"].rsplit("/", 1)[1]
        out[doc["components"]["schemas"][name]["properties"]["type"]["enum"][0]] = name
    return out


@functools.cache
def _validator(name: str) -> Any:
    import jsonschema

    doc = _openresponses_doc()
    schema = {"$ref": f"#/components/schemas/{name}", "components": doc["components"]}
    return jsonschema.Draft202012Validator(schema)


@functools.cache
def _own_validator(dialect: str, definition: str) -> Any:
    import jsonschema

    text = resources.files(f"responses_stream.{dialect}").joinpath("schema.json").read_text()
    doc = json.loads(text)
    return jsonschema.Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": doc["$defs"]})


def _errors(validator: Any, instance: Any) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator.iter_errors(instance)
    ]


def validate_openresponses(payload: dict[str, Any], dialect: rs.Dialect) -> list[str]:
    """Problems with one event in the Open Responses dialect ([] when valid).

    Standard events are checked against the vendored Open Responses schema.
    Its item union is closed, so extension items (slug-prefixed types) are
    checked against the package's own schema and left out of the standard check.
    """
    kind = payload["type"]
    names = _openresponses_events()
    if kind not in names:
        if ":" not in kind:
            return [f"{kind}: not an Open Responses event and not slug-prefixed"]
        return _errors(_own_validator(dialect.name, "Event"), payload)
    problems: list[str] = []
    instance = payload
    if kind in ENVELOPE:
        response = dict(payload["response"])
        std: list[Any] = []
        ext: list[Any] = []
        for item in response["output"]:
            (ext if ":" in item["type"] else std).append(item)
        for item in ext:
            problems += _errors(_own_validator(dialect.name, "Item"), item)
        instance = {**payload, "response": {**response, "output": std}}
    elif "item" in payload and ":" in payload["item"]["type"]:
        return _errors(_own_validator(dialect.name, "Event"), payload)
    return problems + _errors(_validator(names[kind]), instance)


# -- checks run by the generated per-item tests --------------------------------------
def check_event_order(spec: Mapping[str, Any], dialect: str, scenario: dict[str, Any]) -> None:
    """Each transition emits exactly the spec'd events, in order."""
    run = drive(dialect, spec["item_type"], scenario)
    for step, events in zip(scenario["steps"], run.steps, strict=True):
        expected = [spec["wire"][dialect][name] for name, _, _ in step["events"]]
        assert [wire(e) for e in events] == expected, step["method"]


def check_addressing(spec: Mapping[str, Any], dialect: str, scenario: dict[str, Any]) -> None:
    """item_id, output_index, content/summary index and sequence numbers are right."""
    run = drive(dialect, spec["item_type"], scenario)
    item_id = scenario["init"]["id"]
    assert item_id.startswith(spec["id_prefix"])
    seqs = [p["sequence_number"] for p in run.payloads]
    assert seqs == list(range(len(seqs))), "sequence_number must count from 0 without gaps"
    events = [e for step in run.steps for e in step]
    expected = [event for step in scenario["steps"] for event in step["events"]]
    for ev, (name, address, index) in zip(events, expected, strict=True):
        payload = run.payloads[run.stream.index(ev)]
        present = {
            k for k in ("item_id", "output_index", "content_index", "summary_index") if k in payload
        }
        assert present == set(spec["address"][address]), (name, present)
        if "item_id" in payload:
            assert payload["item_id"] == item_id, name
        if "output_index" in payload:
            assert payload["output_index"] == 0, name
        for key in ("content_index", "summary_index"):
            if key in payload:
                assert payload[key] == index, (name, key)
        if "item" in payload:
            assert payload["item"]["id"] == item_id
            assert payload["item"]["type"] == spec["item_wire"][dialect]


def check_dialect_validation(
    spec: Mapping[str, Any], dialect: str, scenario: dict[str, Any]
) -> None:
    """Every event validates: strictly with the SDK, or against Open Responses."""
    run = drive(dialect, spec["item_type"], scenario)
    for payload in run.payloads:
        if dialect == "openai":
            if ":" in spec["item_wire"][dialect]:
                continue  # provider extensions are outside the SDK's unions
            if payload["type"] in spec["own_events"]:
                continue  # events genuine streams carry beyond the pinned SDK's union
            validate_openai(payload)
        else:
            assert validate_openresponses(payload, run.dialect) == [], payload["type"]


def check_deltas_make_done_values(
    spec: Mapping[str, Any], dialect: str, scenario: dict[str, Any]
) -> None:
    """Concatenated deltas equal every done value that reports them."""
    run = drive(dialect, spec["item_type"], scenario)
    payloads = run.payloads
    done_item = next(
        p["item"]
        for p in payloads
        if p["type"] == spec["wire"][dialect]["response.output_item.done"]
    )
    for acc in spec["accumulators"]:
        deltas = {spec["wire"][dialect][e]: f for e, f in acc["deltas"]}
        totals = {spec["wire"][dialect][e]: f for e, f in acc["totals"]}
        groups: dict[int, Any] = {}
        checked = 0
        for p in payloads:
            key = p.get("content_index", p.get("summary_index", -1))
            if p["type"] in deltas:
                value = p[deltas[p["type"]]]
                if acc["kind"] == "list" and not isinstance(value, list):
                    value = [value]
                start: Any = [] if acc["kind"] == "list" else ""
                groups[key] = groups.get(key, start) + value
            elif p["type"] in totals:
                assert p[totals[p["type"]]] == groups.get(key, groups.get(-1, "")), p["type"]
                checked += 1
            elif acc["part"] and "part" in p and p["type"].endswith("part.done"):
                if p["part"]["type"] == acc["part"] and key in groups:
                    assert p["part"][acc["field"]] == groups[key], (acc["part"], acc["field"])
                    checked += 1
        if acc["scope"] == "item" and acc["field"]:
            assert done_item[acc["field"]] == groups.get(-1, ""), acc["field"]
            checked += 1
        if groups:
            assert checked, f"no total was checked for {acc}"


def check_done_item(spec: Mapping[str, Any], dialect: str, scenario: dict[str, Any]) -> None:
    """The done item, and the final Response, hold what was streamed."""
    run = drive(dialect, spec["item_type"], scenario)
    payloads = run.payloads
    added = [
        p for p in payloads if p["type"] == spec["wire"][dialect]["response.output_item.added"]
    ]
    done = [p for p in payloads if p["type"] == spec["wire"][dialect]["response.output_item.done"]]
    assert len(added) == 1 and len(done) == 1
    assert added[0]["item"]["status"] == spec["open_status"]
    assert payloads.index(added[0]) < payloads.index(done[0])
    item = done[0]["item"]
    if scenario["final_status"]:
        assert item["status"] == scenario["final_status"]
    completed = payloads[-1]["response"]
    assert completed["output"] == [item], "the final Response must hold the streamed item"
    parts = [
        p["part"]
        for p in payloads
        if p["type"].endswith(("content_part.done", "summary_part.done"))
    ]
    streamed_parts = [
        part
        for key in ("content", "summary")
        if isinstance(item.get(key), list)
        for part in item[key]
    ]
    assert sorted(map(repr, parts)) == sorted(map(repr, streamed_parts))
