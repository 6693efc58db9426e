"""Helpers for the generated tests: drive emitters, validate events in their dialect.

This file is hand-written and copied into every generated test folder.
"""

from __future__ import annotations

import functools
import json
import typing
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
    """Validate strictly with the official SDK's model for the event's type."""
    cls = sdk_event_classes().get(payload["type"])
    assert cls is not None, f"{payload['type']} is not an event of the openai SDK"
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
