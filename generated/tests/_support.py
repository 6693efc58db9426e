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


LAYOUTS = ("alone", "after")
ADDRESS_KEYS = {"output_index", "content_index", "summary_index"}
CREATED_AT = 1_700_000_000


@dataclass
class Placed:
    """One item of a run: where it sits in the response, and what it emitted."""

    scenario: dict[str, Any]
    output_index: int
    item_id: str
    given_id: bool
    emitter: Any = None
    steps: list[list[Any]] = field(default_factory=list)
    states: list[str] = field(default_factory=list)  # the item's state before each step


@dataclass
class Run:
    """What one scenario emitted: per step, and the whole stream in order.

    ``items`` holds every item of the response in output order; ``steps`` are
    those of the item under test (the last one).
    """

    dialect: rs.Dialect
    item_id: str
    steps: list[list[Any]] = field(default_factory=list)
    stream: list[Any] = field(default_factory=list)
    items: list[Placed] = field(default_factory=list)
    stream_emitter: Any = None
    _payloads: list[dict[str, Any]] | None = None

    @property
    def payloads(self) -> list[dict[str, Any]]:
        if self._payloads is None:
            self._payloads = [_payload(self.dialect, ev) for ev in self.stream]
        return self._payloads

    @property
    def under_test(self) -> Placed:
        return self.items[-1]


def _payload(dialect: rs.Dialect, ev: Any) -> dict[str, Any]:
    frame = dialect.encoder().encode(ev).decode()
    head, data = frame.split("\n", 1)
    assert head == f"event: {wire(ev)}"
    assert data.startswith("data: ") and data.endswith("\n\n")
    payload: dict[str, Any] = json.loads(data[6:])
    return payload


def wire(event: Any) -> str:
    """The wire ``type`` of an event struct."""
    return str(type(event).__struct_config__.tag)


def _convert_kwargs(method: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` converted to the types the method's annotations name."""
    hints = typing.get_type_hints(method)
    return {k: msgspec.convert(v, hints[k]) for k, v in kwargs.items()}


def _emitters(dialect: rs.Dialect) -> dict[str, Any]:
    module = __import__(dialect.emitter.__module__, fromlist=["ITEM_EMITTERS"])
    table: dict[str, Any] = module.ITEM_EMITTERS
    return table


def neighbour(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The item's first scenario (its complete run) with no id: the stream picks one."""
    first = spec["scenarios"][0]
    return {**first, "init": {k: v for k, v in first["init"].items() if k != "id"}}


def drive(
    dialect_name: str,
    item_type: str,
    scenario: dict[str, Any],
    layout: str = "alone",
    spec: Mapping[str, Any] | None = None,
    fast_path: bool = False,
) -> Run:
    """Run a scenario on a fresh stream, closing the response afterwards.

    With ``layout="after"`` another item of the same type (the complete run,
    with an id the stream makes) goes first, so the item under test sits at
    output_index 1 next to an item of its own kind.  ``fast_path`` calls the
    ``*_sse`` variant of a transition where the emitter has one, and decodes
    its bytes back into the event.
    """
    dialect = rs.DIALECTS[dialect_name]
    resp = dialect.emitter(
        ids=CountingIds(), created_at=CREATED_AT, model="test-model", instructions="be brief"
    )
    run = Run(dialect, scenario["init"].get("id", ""), stream_emitter=resp)
    run.stream += resp.created() + resp.in_progress()
    emitters = _emitters(dialect)
    todo = []
    if layout == "after":
        assert spec is not None
        todo.append(neighbour(spec))
    elif layout != "alone":
        raise ValueError(layout)
    todo.append(scenario)
    for sc in todo:
        # Through the stream's factory method, as users make items.
        factory = getattr(resp, item_type.replace(":", "_"))
        item = factory(**_convert_kwargs(factory, sc["init"]))
        assert type(item) is emitters[item_type]
        placed = Placed(sc, len(run.items), item.item_id, "id" in sc["init"], item)
        run.items.append(placed)
        for step in sc["steps"]:
            placed.states.append(item.state)
            method = getattr(item, step["method"])
            kwargs = _convert_kwargs(method, step["kwargs"])
            fast = getattr(item, step["method"] + "_sse", None) if fast_path else None
            if fast is not None:
                events = _decode_frames(dialect, fast(**kwargs))
            else:
                events = method(**kwargs)
            placed.steps.append(events)
            run.stream += events
    run.steps = run.under_test.steps
    run.item_id = run.under_test.item_id
    if scenario["final_status"] == "incomplete":
        run.stream += resp.incomplete(reason="max_output_tokens")
    else:
        run.stream += resp.completed()
    return run


def _decode_frames(dialect: rs.Dialect, data: bytes) -> list[Any]:
    """The events of SSE frames made by a fast path, as structs, checked frame by frame."""
    events_module = __import__(dialect.emitter.__module__.rsplit(".", 1)[0], fromlist=["models"])
    decoder = msgspec.json.Decoder(events_module.models.Event)
    out = []
    text = data.decode()
    assert text.endswith("\n\n"), "a fast path must end its frame"
    for frame in text[:-2].split("\n\n"):
        head, body = frame.split("\n", 1)
        assert body.startswith("data: ")
        ev = decoder.decode(body[6:])
        assert head == f"event: {wire(ev)}"
        # The bytes must be exactly what the ordinary encoder makes of the event.
        assert dialect.encoder().encode(ev) == (frame + "\n\n").encode()
        out.append(ev)
    return out


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
_RUNS: dict[tuple[str, str, str, str], Run] = {}


def _run(spec: Mapping[str, Any], dialect: str, scenario: dict[str, Any], layout: str) -> Run:
    """The run of a scenario, made once per test session and only read afterwards."""
    key = (dialect, spec["item_type"], scenario["name"], layout)
    if key not in _RUNS:
        _RUNS[key] = drive(dialect, spec["item_type"], scenario, layout, spec)
    return _RUNS[key]


def _item_payloads(run: Run, placed: Placed) -> list[dict[str, Any]]:
    """The payloads of one item's events, in stream order."""
    mine = {id(e) for step in placed.steps for e in step}
    return [p for ev, p in zip(run.stream, run.payloads, strict=True) if id(ev) in mine]


def check_event_order(
    spec: Mapping[str, Any], dialect: str, scenario: dict[str, Any], layout: str = "alone"
) -> None:
    """Each transition emits exactly the spec'd events, in order."""
    run = _run(spec, dialect, scenario, layout)
    for placed in run.items:
        for step, events in zip(placed.scenario["steps"], placed.steps, strict=True):
            expected = [spec["wire"][dialect][name] for name, _, _ in step["events"]]
            assert [wire(e) for e in events] == expected, step["method"]


def check_addressing(
    spec: Mapping[str, Any], dialect: str, scenario: dict[str, Any], layout: str = "alone"
) -> None:
    """item_id, output_index, content/summary index and sequence numbers are right."""
    run = _run(spec, dialect, scenario, layout)
    seqs = [p["sequence_number"] for p in run.payloads]
    assert seqs == list(range(len(seqs))), "sequence_number must count from 0 without gaps"
    ids = [placed.item_id for placed in run.items]
    assert len(set(ids)) == len(ids), f"item ids must be unique: {ids}"
    assert run.stream_emitter.fields["id"] not in ids
    for placed in run.items:
        item_id = placed.item_id
        assert item_id.startswith(spec["id_prefix"]), item_id
        if placed.given_id:
            assert item_id == placed.scenario["init"]["id"]
        assert placed.emitter.output_index == placed.output_index
        events = [e for step in placed.steps for e in step]
        expected = [event for step in placed.scenario["steps"] for event in step["events"]]
        for ev, (name, address, index) in zip(events, expected, strict=True):
            payload = run.payloads[run.stream.index(ev)]
            present = {
                k
                for k in ("item_id", "output_index", "content_index", "summary_index")
                if k in payload
            }
            assert present == set(spec["address"][address]), (name, present)
            if "item_id" in payload:
                assert payload["item_id"] == item_id, name
            if "output_index" in payload:
                assert payload["output_index"] == placed.output_index, name
            for key in ("content_index", "summary_index"):
                if key in payload:
                    assert payload[key] == index, (name, key)
            if "item" in payload:
                assert payload["item"]["id"] == item_id
                assert payload["item"]["type"] == spec["item_wire"][dialect]
        # Other indexes the emitter counts itself (not given by the caller) go 0, 1, 2...
        # within their item, or within their part.
        counted: dict[tuple[str, str, int], list[int]] = {}
        for step, evs in zip(placed.scenario["steps"], placed.steps, strict=True):
            for ev in evs:
                payload = run.payloads[run.stream.index(ev)]
                for key, value in payload.items():
                    if key.endswith("_index") and key not in ADDRESS_KEYS | set(step["kwargs"]):
                        part = payload.get("content_index", payload.get("summary_index", -1))
                        counted.setdefault((payload["type"], key, part), []).append(value)
        for (kind, key, _), values in counted.items():
            assert values == list(range(len(values))), (kind, key, values)


def check_dialect_validation(
    spec: Mapping[str, Any], dialect: str, scenario: dict[str, Any], layout: str = "alone"
) -> None:
    """Every event validates: strictly with the SDK, or against Open Responses."""
    run = _run(spec, dialect, scenario, layout)
    for payload in run.payloads:
        if dialect == "openai":
            if ":" in spec["item_wire"][dialect]:
                continue  # provider extensions are outside the SDK's unions
            if payload["type"] in spec["own_events"]:
                continue  # events genuine streams carry beyond the pinned SDK's union
            validate_openai(payload)
        else:
            assert validate_openresponses(payload, run.dialect) == [], payload["type"]
    problems = [
        str(v) for v in rs.validate_payloads(run.payloads, dialect) if v.severity == "error"
    ]
    assert problems == [], problems


def _given(step: dict[str, Any], name: str) -> Any:
    """The argument a step passed for an event field of the same name, if any."""
    return step["kwargs"].get(name)


def check_deltas_make_done_values(
    spec: Mapping[str, Any], dialect: str, scenario: dict[str, Any], layout: str = "alone"
) -> None:
    """Each delta carries what was passed, and the deltas concatenate to every total."""
    run = _run(spec, dialect, scenario, layout)
    for placed in run.items:
        _check_item_deltas(spec, dialect, run, placed)


def _check_item_deltas(spec: Mapping[str, Any], dialect: str, run: Run, placed: Placed) -> None:
    payloads = _item_payloads(run, placed)
    done_item = next(
        p["item"]
        for p in payloads
        if p["type"] == spec["wire"][dialect]["response.output_item.done"]
    )
    by_event = {
        id(e): step
        for step, evs in zip(placed.scenario["steps"], placed.steps, strict=True)
        for e in evs
    }
    events = [e for evs in placed.steps for e in evs]
    for acc in spec["accumulators"]:
        deltas = {spec["wire"][dialect][e]: f for e, f in acc["deltas"]}
        totals = {spec["wire"][dialect][e]: f for e, f in acc["totals"]}
        groups: dict[int, Any] = {}
        checked = 0
        for ev, p in zip(events, payloads, strict=True):
            key = p.get("content_index", p.get("summary_index", -1))
            if p["type"] in deltas:
                value = p[deltas[p["type"]]]
                given = _given(by_event[id(ev)], deltas[p["type"]])
                if isinstance(given, str):
                    assert value == given, "a delta must carry exactly the text it was given"
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
    # Every text argument of a transition reaches the events that carry a field
    # of its name, unchanged; every delta text reaches the stream exactly once.
    for step, evs in zip(placed.scenario["steps"], placed.steps, strict=True):
        for ev in evs:
            p = payloads[events.index(ev)]
            for name, value in step["kwargs"].items():
                if name in p and not isinstance(value, dict | list):
                    assert p[name] == value, (step["method"], name)
    kinds = _delta_types(spec, dialect)
    given = "".join(
        step["kwargs"]["delta"]
        for step, evs in zip(placed.scenario["steps"], placed.steps, strict=True)
        if isinstance(step["kwargs"].get("delta"), str) and any(wire(e) in kinds for e in evs)
    )
    streamed = "".join(p["delta"] for p in payloads if p["type"] in kinds and "delta" in p)
    if isinstance(given, str) and all(isinstance(p.get("delta", ""), str) for p in payloads):
        assert streamed == given, "deltas lost, repeated or reordered"


def _delta_types(spec: Mapping[str, Any], dialect: str) -> set[str]:
    return {spec["wire"][dialect][e] for acc in spec["accumulators"] for e, _ in acc["deltas"]}


def check_done_item(
    spec: Mapping[str, Any], dialect: str, scenario: dict[str, Any], layout: str = "alone"
) -> None:
    """The done items, and the final Response, hold what was streamed, in output order."""
    run = _run(spec, dialect, scenario, layout)
    done_items = []
    for placed in run.items:
        payloads = _item_payloads(run, placed)
        added = [
            p for p in payloads if p["type"] == spec["wire"][dialect]["response.output_item.added"]
        ]
        done = [
            p for p in payloads if p["type"] == spec["wire"][dialect]["response.output_item.done"]
        ]
        assert len(added) == 1 and len(done) == 1
        assert added[0]["item"]["status"] == spec["open_status"]
        assert payloads.index(added[0]) < payloads.index(done[0])
        item = done[0]["item"]
        if placed.scenario["final_status"]:
            assert item["status"] == placed.scenario["final_status"]
        for key, suffix in (("content", "content_part.done"), ("summary", "summary_part.done")):
            parts = [p["part"] for p in payloads if p["type"].endswith(suffix)]
            if isinstance(item.get(key), list):
                assert item[key] == parts, f"the done item's {key} must be its parts, in order"
            else:
                assert parts == [], key
        # A value a transition was given for a field of the item is what the item holds.
        given: dict[str, Any] = dict(placed.scenario["init"])
        for step in placed.scenario["steps"]:
            given.update(step["kwargs"])
        accumulated = {acc["field"] for acc in spec["accumulators"]}
        for name, value in given.items():
            if name == "id" or name in accumulated:
                continue
            if name not in item and name not in placed.scenario["init"]:
                continue  # a transition parameter that is not a field of the item
            assert name in item, f"the done item lost its {name}"
            assert item[name] == json.loads(json.dumps(value)), f"the done item's {name}"
        done_items.append(item)
    final = run.payloads[-1]["response"]
    assert final["output"] == done_items, "the final Response must hold the streamed items"
    assert [o.id for o in run.stream_emitter.snapshot().output] == [i["id"] for i in done_items]


def check_fast_path(
    spec: Mapping[str, Any], dialect: str, scenario: dict[str, Any], layout: str = "alone"
) -> None:
    """The ``*_sse`` fast paths frame exactly the events the ordinary transitions return."""
    plain = _run(spec, dialect, scenario, layout)
    fast = drive(dialect, spec["item_type"], scenario, layout, spec, fast_path=True)
    assert fast.payloads[:-1] == plain.payloads[:-1]
    # The terminal Response differs only in its completion time.
    a, b = (dict(r.payloads[-1]["response"]) for r in (plain, fast))
    a.pop("completed_at", None)
    b.pop("completed_at", None)
    assert a == b


def check_transitions_refused(
    spec: Mapping[str, Any], dialect: str, scenario: dict[str, Any], layout: str = "alone"
) -> None:
    """Before open and after close, every other transition raises TransitionError."""
    d = rs.DIALECTS[dialect]
    cls = _emitters(d)[spec["item_type"]]
    assert cls.item_type == spec["item_type"]
    methods = {step["method"]: step["kwargs"] for step in scenario["steps"]}
    fresh_stream = d.emitter(ids=CountingIds(), model="test-model")
    fresh_stream.created()
    fresh_stream.in_progress()
    fresh = cls(fresh_stream, **_convert_kwargs(cls.__init__, scenario["init"]))
    assert not fresh.closed
    for name, kwargs in methods.items():
        if name != "open":
            _expect_refusal(spec, fresh, name, kwargs, "pending")
    assert fresh.output_index < 0, "an item has no output_index before it opens"
    run = _run(spec, dialect, scenario, layout)
    item = run.under_test.emitter
    assert item.closed
    legal: dict[str, set[str]] = {}
    for step, state in zip(scenario["steps"], run.under_test.states, strict=True):
        legal.setdefault(step["method"], set()).add(state)
    before = msgspec.json.encode(item.snapshot())
    for name, kwargs in methods.items():
        err = _expect_refusal(spec, item, name, kwargs, item.state)
        if (err.machine, err.transition, err.state) == (spec["item_type"], name, item.state):
            # An item transition refused: it names the states it was legal in.
            assert legal[name] <= set(err.allowed), (err, legal[name])
    assert msgspec.json.encode(item.snapshot()) == before, "a refused transition changed the item"


def _expect_refusal(
    spec: Mapping[str, Any], item: Any, name: str, kwargs: dict[str, Any], state: str
) -> Any:
    method = getattr(item, name)
    try:
        method(**_convert_kwargs(method, kwargs))
    except rs.TransitionError as err:
        machine, _, part = err.machine.partition(".")
        assert machine == spec["item_type"], err
        assert name in (err.transition, f"{part}_{err.transition}"), err
        assert err.state not in err.allowed, err
        return err
    raise AssertionError(f"{name} was accepted in state {state!r}")


def _refused(call: Any, transition: str, allowed: set[str]) -> None:
    try:
        call()
    except rs.TransitionError as err:
        assert (err.machine, err.transition) == ("response", transition), err
        assert err.state not in err.allowed, err
        assert allowed <= set(err.allowed), (err, allowed)
        return
    raise AssertionError(f"response.{transition} was accepted out of order")


def _numbers(value: Any) -> set[Any]:
    """Every number in a JSON value."""
    if isinstance(value, dict):
        return set().union(*(_numbers(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_numbers(v) for v in value))
    return {value} if isinstance(value, int | float) and not isinstance(value, bool) else set()


def _another(t: Any, default: Any) -> Any:
    """A value of the msgspec type ``t`` other than ``default`` (where the type has one)."""
    mi = msgspec.inspect
    if isinstance(t, mi.UnionType):
        t = next(x for x in t.types if not isinstance(x, mi.NoneType))
    if isinstance(t, mi.LiteralType):
        return next((v for v in t.values if v != default), default)
    if isinstance(t, mi.BoolType):
        return not default
    if isinstance(t, mi.IntType):
        return (default or 0) + 1
    if isinstance(t, mi.FloatType):
        return 0.5 if default != 0.5 else 0.75
    if isinstance(t, mi.StrType | mi.AnyType):
        return "given"
    if isinstance(t, mi.DictType):
        return {"given": True}
    if isinstance(t, mi.ListType):
        return [_another(t.item_type, None)]
    assert isinstance(t, mi.StructType), t
    return msgspec.convert(
        {f.encode_name: _another(f.type, None) for f in t.fields if f.required}, type=t.cls
    )


def check_response_fields(dialect: str) -> None:
    """Each Response field but id, created_at and output is a keyword argument of the emitter.

    A value given there sets the field, over its default and over the value the
    request echoes; an unknown keyword argument is a TypeError.
    """
    d = rs.DIALECTS[dialect]
    defaults = d.emitter().fields
    info = msgspec.inspect.type_info(d.models.Response)
    assert isinstance(info, msgspec.inspect.StructType)
    own = {"id", "created_at", "output"}
    given = {f.name: _another(f.type, defaults[f.name]) for f in info.fields if f.name not in own}
    request = {key: defaults[key] for key in d.emitter.ECHO_FIELDS}
    r = d.emitter(request=request, **given)
    snap = msgspec.to_builtins(r.snapshot())
    assert {k: snap[k] for k in given} == msgspec.to_builtins(given)
    try:
        d.emitter(**{"no_such_field": 1})
    except TypeError:
        pass
    else:
        raise AssertionError("an unknown Response field must be a TypeError")


def check_envelope(dialect: str) -> None:
    """The response lifecycle: every path emits valid events, and misuse is refused."""
    d = rs.DIALECTS[dialect]
    check_response_fields(dialect)

    def fresh(**kw: Any) -> Any:
        if "request" not in kw:
            kw.setdefault("model", "test-model")
        return d.emitter(ids=CountingIds(), created_at=CREATED_AT, **kw)

    def check(stream: list[Any], status: str) -> dict[str, Any]:
        payloads = [_payload(d, ev) for ev in stream]
        assert [p["sequence_number"] for p in payloads] == list(range(len(payloads)))
        for p in payloads:
            if dialect == "openai":
                validate_openai(p)
            else:
                assert validate_openresponses(p, d) == [], p["type"]
        assert [v for v in rs.validate_payloads(payloads, dialect) if v.severity == "error"] == []
        final: dict[str, Any] = payloads[-1]["response"]
        assert final["status"] == status
        assert final["created_at"] == CREATED_AT
        return final

    # queued -> created -> in_progress -> audio -> completed
    r = fresh(request={"model": "echoed", "temperature": 0.25, "tools": None, "top_p": None})
    assert r.fields["model"] == "echoed" and r.fields["temperature"] == 0.25
    assert r.fields["tools"] == [] and r.fields["top_p"] == 1.0
    _refused(r.in_progress, "in_progress", set())
    _refused(r.completed, "completed", set())
    stream = r.queued()
    assert _payload(d, stream[0])["response"]["status"] == "queued"
    _refused(r.queued, "queued", {"start"})
    stream += r.created()
    _refused(r.created, "created", {"start", "queued"})
    stream += r.in_progress()
    _refused(r.in_progress, "in_progress", {"created"})
    stream += r.audio_delta(delta="QUJD") + r.audio_done()
    stream += r.audio_transcript_delta(delta="a") + r.audio_transcript_done()
    stream += r.completed()
    final = check(stream, "completed")
    assert isinstance(final["completed_at"], int) and final["usage"] is not None
    assert _numbers(final["usage"]) == {0}, final["usage"]  # no usage given: every count 0
    assert r.closed
    # the request's function tools are echoed, namespaced ones flattened
    tools = [
        {"type": "function", "name": "f", "parameters": {"type": "object"}},
        {
            "type": "namespace",
            "name": "ns",
            "description": "d",
            "tools": [{"type": "function", "name": "g"}],
        },
    ]
    r = fresh(request={"model": "echoed", "tools": tools})
    final = check(r.created() + r.in_progress() + r.completed(), "completed")
    if d.echo_tools == "functions":
        assert [(t["type"], t["name"]) for t in final["tools"]] == [
            ("function", "f"),
            ("function", "ns.g"),
        ]
        assert final["tools"][0]["parameters"] == {"type": "object"}
    else:
        assert final["tools"] == tools
    late = {"incomplete": ("max_output_tokens",), "failed": ("x",), "error": ("x",)}
    # Where each transition is legal in the runs of this check: the refusals name them.
    legal = {
        "completed": {"running"},
        "incomplete": {"running"},
        "failed": {"queued", "running", "erroring"},
        "error": {"created"},
        "created": {"start", "queued"},
        "in_progress": {"created"},
    }
    for name, states in legal.items():
        method, args = getattr(r, name), late.get(name, ())
        _refused(lambda m=method, a=args: m(*a), name, states)
    # created -> in_progress -> incomplete
    r = fresh()
    stream = r.created() + r.in_progress() + r.incomplete(reason="content_filter")
    final = check(stream, "incomplete")
    assert final["incomplete_details"] == {"reason": "content_filter"}
    # created -> error -> failed, with the default code
    r = fresh()
    stream = r.created() + r.error(message="boom")
    assert not r.closed
    stream += r.failed(message="boom")
    final = check(stream, "failed")
    assert final["error"] == {"code": "server_error", "message": "boom"}
    # failed from queued and from running; incomplete only from running
    for start in ("queued", "running"):
        r = fresh()
        stream = r.queued() if start == "queued" else r.created() + r.in_progress()
        if start == "queued":
            _refused(lambda r=r: r.incomplete(reason="max_output_tokens"), "incomplete", set())
        stream += r.failed(message="gone", code="rate_limit_exceeded")
        final = check(stream, "failed")
        assert final["error"]["code"] == "rate_limit_exceeded"
    # an open item blocks the end of the response
    r = fresh()
    r.created()
    r.in_progress()
    r.message().open()
    _refused(r.completed, "completed", {"no open items"})


# -- the request tables -------------------------------------------------------------------
REQUEST_BASES: dict[str, dict[str, Any]] = {
    "responses": {"model": "m", "input": "hi"},
    "chat": {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    "compact": {"model": "m", "input": "hi"},
}


def request_routes() -> dict[str, Any]:
    """Route -> its table of fates, as the gateway reads it."""
    from responses_stream._runtime.gateway.request_check import ROUTES

    return dict(ROUTES)


def _upstream(route: str, body: dict[str, Any]) -> dict[str, Any]:
    """The upstream request the gateway sends for ``body`` on ``route``."""
    from responses_stream._runtime.gateway.chat_request import translate
    from responses_stream._runtime.gateway.items import normalize_input
    from responses_stream._runtime.gateway.request_check import check_request, translated
    from responses_stream._runtime.gateway.responses_request import responses_request

    check_request(body, route)
    if route == "chat":
        return responses_request(body)
    return translate(translated(body, route), normalize_input(body.get("input"))).body


def check_request_row(route: str, field: str, value: Any, alongside: dict[str, Any]) -> None:
    """The row's example, sent in a body its route's model takes, does what the row says:
    a ``translated`` field reaches its ``to`` path (as it is, its ``from`` key, or through
    its converter);
    a ``caller``, ``converted`` or ``no_effect`` one leaves the upstream request as it was
    without it; a ``refused`` one is a 400 naming it."""
    from responses_stream._runtime.gateway.errors import GatewayError

    row = request_routes()[route]["fields"][field]
    base = {**REQUEST_BASES[route], **alongside}
    body = {**base, field: value}
    if row["fate"] == "refused":
        try:
            _upstream(route, body)
        except GatewayError as exc:
            assert exc.code == "unsupported_parameter", exc.body
            assert str(exc.param).startswith(field), exc.body
            return
        raise AssertionError(f"{route}: {field}={value!r} was not refused")
    out, before = _upstream(route, body), _upstream(route, base)
    if row["fate"] != "translated":
        assert out == before, (field, out, before)
    elif "by" not in row:
        sent = value[row["from"]] if "from" in row else value
        at = out
        for key in row["to"].split("."):
            at = at[key]
        assert at == sent, (field, out)
    else:
        assert row["to"] in out and out != before, (field, out, before)
