"""Fuzz the direct API: random call sequences, good and bad arguments, calls after the end.

Each example opens items of every spec'd type with random fields (the good
values of the generated scenarios, mutated: a field dropped, an unknown one
added, a value of the wrong type put in), then drives them with ``delta``,
``part``, ``text``, ``part_phase``, ``phase`` and ``close`` (good and bad
arguments, on the open item and on items already closed), and ends, or not,
with ``finish`` / ``truncate`` / ``fail`` at random points, with calls after
the end.  Only ``ProcessorError`` and ``TransitionError`` may be raised, and
a call that raises must change nothing.  Afterwards the stream is ended
(``fail`` or ``finish``) if it has not ended.

Oracles: every event validates with the official openai SDK's model of its
type (pydantic, strict); our validator reports no error; exactly one
terminal event, last; the text of every accepted delta is in the final
Response, in order, once (a lone surrogate as U+FFFD).  A second target
checks the wire shapes against the SDK on random values: whatever the
direct API accepts for a shaped field, the SDK accepts.
"""

from __future__ import annotations

import importlib
import json
import sys
import typing
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from test_direct_api_misuse import _sdk_field, check_valid, state_of, stream_payloads  # noqa: E402

import responses_stream as rs  # noqa: E402
from responses_stream import (  # noqa: E402
    CountingIds,
    ItemHandle,
    ProcessorError,
    StreamProcessor,
    TransitionError,
)
from responses_stream._runtime.core import wire  # noqa: E402

DIALECT = rs.DIALECTS["openai"]
TABLES = DIALECT.tables
PART_KINDS = sorted(TABLES.PARTS)
# Item types with text to check: parts, or an item-level accumulator.
TEXT_ITEMS = sorted(
    t for t, tab in TABLES.ITEMS.items() if tab["delta"] is not None or any(tab["slots"].values())
)
ALL_TRANSITIONS = sorted({t for tab in TABLES.ITEMS.values() for t in tab["transitions"]})
BAD_VALUES: list[Any] = [
    5,
    None,
    True,
    1.5,
    float("nan"),
    float("inf"),
    [],
    {},
    {"junk": 1},
    {"type": "junk"},
    "x",
    b"x",
    ("t", 1),
    object(),
    "\ud800",
    ["a", 5],
    {1: "non-str key"},
    2**80,
]
SPECIAL_TEXT = [
    "\ud83d",
    "\ude00",
    "\ud83d\ude00",
    "\u2028",
    "\x00",
    "é",
    "€",
    "𝄞",
    "x" * 5000 + "\n",
    "",
]


@cache
def good_values() -> tuple[dict[str, list[dict[str, Any]]], dict[tuple[str, str], list[Any]]]:
    """From the generated scenarios: open fields per item type, kwargs per transition."""
    inits: dict[str, list[dict[str, Any]]] = {}
    kwargs: dict[tuple[str, str], list[Any]] = {}
    for item_type in rs.ITEM_TYPES:
        module = importlib.import_module(f"test_item_{item_type}")
        for scenario in module.SCENARIOS:
            init = {k: v for k, v in scenario["init"].items() if k != "id"}
            inits.setdefault(item_type, []).append(init)
            for step in scenario["steps"]:
                if step["kwargs"]:
                    kwargs.setdefault((item_type, step["method"]), []).append(step["kwargs"])
    return inits, kwargs


def text_strategy() -> st.SearchStrategy[str]:
    with_surrogates = st.text(st.characters(exclude_categories=()), max_size=12)
    return st.one_of(with_surrogates, st.sampled_from(SPECIAL_TEXT))


def replace_lone_surrogates(text: str) -> str:
    """What a client must read: pairs joined, lone surrogates as U+FFFD (written apart)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if "\ud800" <= c <= "\udbff" and i + 1 < len(text) and "\udc00" <= text[i + 1] <= "\udfff":
            out.append(chr(0x10000 + ((ord(c) - 0xD800) << 10) + (ord(text[i + 1]) - 0xDC00)))
            i += 2
            continue
        out.append("\ufffd" if "\ud800" <= c <= "\udfff" else c)
        i += 1
    return "".join(out)


def mutate(data: st.DataObject, params: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    """``params``, maybe with a field dropped, an unknown one added, or a wrong value."""
    out = dict(params)
    how = data.draw(st.sampled_from(["keep"] * 6 + ["drop", "add", "bad", "bad"]))
    if how == "drop" and out:
        out.pop(data.draw(st.sampled_from(sorted(out))))
    elif how == "add":
        out[data.draw(st.sampled_from(["bogus", "colour", "type", "status"]))] = 1
    elif how == "bad" and (keys or out):
        out[data.draw(st.sampled_from(sorted(set(keys) | set(out))))] = data.draw(
            st.sampled_from(BAD_VALUES)
        )
    return out


class Tracker:
    """The texts the processor accepted, per item, to find in the final Response."""

    def __init__(self) -> None:
        self.deltas: dict[str, list[str]] = {}
        self.parts: dict[str, list[tuple[str, list[str]]]] = {}

    def part(self, handle: ItemHandle, kind: str) -> None:
        self.parts.setdefault(handle.item_id, []).append((kind, []))

    def text(self, handle: ItemHandle, text: str) -> None:
        self.parts[handle.item_id][-1][1].append(text)

    def delta(self, handle: ItemHandle, text: str) -> None:
        self.deltas.setdefault(handle.item_id, []).append(text)

    def check(self, response: dict[str, Any]) -> None:
        items = {item["id"]: item for item in response["output"]}
        for item_id, texts in self.deltas.items():
            item = items[item_id]
            (field,) = TABLES.ITEMS[type_of(item)]["accumulators"]
            assert item[field] == "".join(map(replace_lone_surrogates, texts)), item_id
        for item_id, parts in self.parts.items():
            item = items[item_id]
            slots = TABLES.ITEMS[type_of(item)]["slots"]
            for slot, kinds in slots.items():
                want = [
                    "".join(map(replace_lone_surrogates, texts))
                    for kind, texts in parts
                    if kind in kinds
                ]
                got = [part.get("text", part.get("refusal")) for part in item[slot]]
                assert got == want, (item_id, slot, got, want)


def type_of(item: dict[str, Any]) -> str:
    return {w: t for t, w in DIALECT.item_types.items()}[item["type"]]


def step(
    data: st.DataObject, proc: StreamProcessor, handles: list[ItemHandle], seen: Tracker
) -> str:
    """One random call; returns its name for the statistics."""
    inits, kwargs = good_values()
    handle = proc.current if proc.current is not None and data.draw(st.integers(0, 5)) else None
    if handle is None and handles:  # an earlier item, most likely closed
        handle = data.draw(st.sampled_from(handles))
    ops = ["open"] * 6 + ["finish", "truncate", "fail"]
    if handle is not None:
        ops += ["delta", "part_phase", "phase", "phase", "close"] * 3
        if any(handle.table["slots"].values()):  # an item with parts: mostly text
            ops += ["part"] * 4 + ["text"] * 12
        if handle.table["delta"] is not None:
            ops += ["delta"] * 12
    op = data.draw(st.sampled_from(ops))
    if (
        op == "text"
        and handle is not None
        and handle.part_kind is None
        and data.draw(st.integers(0, 4))
    ):
        op = "part"  # mostly open a part first, so that texts get through
    if op == "open":
        item_type = data.draw(
            st.one_of(st.sampled_from(TEXT_ITEMS), st.sampled_from([*rs.ITEM_TYPES, "nope"]))
        )
        base = data.draw(st.sampled_from(inits.get(item_type, [{}])))
        if data.draw(st.integers(0, 3)) == 0:
            given = data.draw(st.sampled_from(["dup_id", "x\ud800", "", 5, f"id_{len(handles)}"]))
            base = {**base, "id": given}
        fields = mutate(data, base, list(base))
        handles.append(proc.open(item_type, **fields))
    elif op == "finish":
        proc.finish(usage=data.draw(st.sampled_from([None, {"input_tokens": 3}, *BAD_VALUES])))
    elif op == "truncate":
        reason = data.draw(st.sampled_from(["max_output_tokens", "content_filter", "stop", 5]))
        proc.truncate(reason, usage=data.draw(st.sampled_from([None, {"output_tokens": 2}, 5])))
    elif op == "fail":
        message = data.draw(st.one_of(text_strategy(), st.sampled_from(BAD_VALUES)))
        code = data.draw(st.sampled_from(["server_error", "upstream_error", None, 5]))
        proc.fail(message, code=code)
    elif op in ("delta", "text"):
        assert handle is not None
        good = data.draw(st.booleans()) or data.draw(st.booleans())
        text = data.draw(text_strategy()) if good else data.draw(st.sampled_from(BAD_VALUES))
        if op == "delta":
            handle.delta(text)
            seen.delta(handle, text)
        else:
            params = {}
            if data.draw(st.integers(0, 5)) == 0:
                params = mutate(data, {"logprobs": []}, ["logprobs"])
            handle.text(text, **params)
            seen.text(handle, text)
    elif op == "part":
        assert handle is not None
        own = sorted({k for ks in handle.table["slots"].values() for k in ks}) or ["nope"]
        anything = st.sampled_from([*PART_KINDS, "nope", 5])
        kind = data.draw(st.one_of(st.sampled_from(own), st.sampled_from(own), anything))
        handle.part(kind)
        seen.part(handle, kind)
    elif op == "part_phase":
        assert handle is not None
        name = data.draw(st.sampled_from(["annotate", "done", "delta", "open", "delta_sse", "x"]))
        kind = handle.part_kind or "output_text"
        params = data.draw(st.sampled_from(kwargs.get((handle.type, f"{kind}_{name}"), [{}])))
        params = mutate(data, params, list(params))
        handle.part_phase(name, **params)
        if name == "delta":
            seen.text(handle, params["delta"])
    elif op in ("phase", "close"):
        assert handle is not None
        if op == "phase":
            name = data.draw(st.sampled_from([*ALL_TRANSITIONS, "open", "snapshot", "_close_part"]))
        else:
            name = data.draw(st.sampled_from(["done", "incomplete", "fail", "bogus"]))
        params = data.draw(st.sampled_from(kwargs.get((handle.type, name), [{}])))
        params = mutate(data, params, list(params))
        if op == "phase":
            handle.phase(name, **params)
            if name == "delta":
                seen.delta(handle, params["delta"])
        else:
            status = {"done": "completed", "incomplete": "incomplete", "fail": "failed"}.get(
                name, name
            )
            handle.close(status, **params)
    return op


@given(st.data())
def test_random_direct_api_sequences_end_in_a_valid_stream(data: st.DataObject) -> None:
    proc = StreamProcessor("openai", ids=CountingIds(), model="fuzz-model")
    handles: list[ItemHandle] = []
    seen = Tracker()
    after_end = 0
    for _ in range(data.draw(st.integers(0, 40), label="calls")):
        after_end += proc.ended
        if after_end > 3:  # a few calls after the end are enough
            break
        before = state_of(proc)
        ended = proc.ended
        try:
            op = step(data, proc, handles, seen)
        except (ProcessorError, TransitionError) as exc:
            event(f"raised {type(exc).__name__}: {str(exc)[:50]}")
            assert state_of(proc) == before, exc  # a rejected call changes nothing
            continue
        if ended:  # after the end only fail() is accepted, and it does nothing
            assert op == "fail" and state_of(proc) == before, op
        event(f"accepted {op}")
    if not proc.ended:
        if data.draw(st.booleans(), label="end with finish"):
            proc.finish()
        else:
            proc.fail("fuzz end")
    payloads = stream_payloads(proc)
    check_valid(payloads)
    seen.check(payloads[-1]["response"])


# -- the wire shapes admit only what the SDK admits ------------------------------------
# Tools are checked by their discriminator only (see README): not compared here.
SHAPED = [
    (t, p)
    for t, params in wire.OPENAI_SHAPES.items()
    for p, shape in params.items()
    if shape != list[wire.Tool]
]
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from(["", "x", "search", "url", "exit", "logs", "auto"]),
)


@cache
def field_names() -> list[str]:
    names: set[str] = {"type"}
    for shape in (s for params in wire.OPENAI_SHAPES.values() for s in params.values()):
        stack = [shape]
        while stack:
            hint = stack.pop()
            if isinstance(hint, type) and issubclass(hint, wire.msgspec.Struct):
                names.update(hint.__struct_fields__)
                stack += [
                    a for f in hint.__annotations__.values() if not isinstance(f, str) for a in [f]
                ]
            for arg in getattr(hint, "__args__", ()):
                stack.append(arg)
    return sorted(names)


@cache
def tags() -> list[str]:
    """Every ``type`` value a shape knows: struct tags and ``type`` Literal fields."""
    found: set[str] = set()
    for cls in vars(wire).values():
        if isinstance(cls, type) and issubclass(cls, wire.msgspec.Struct):
            if cls.__struct_config__.tag:
                found.add(str(cls.__struct_config__.tag))
            hint = typing.get_type_hints(cls).get("type")
            found.update(str(a) for a in typing.get_args(hint))
    return sorted(found)


def shaped_values() -> st.SearchStrategy[Any]:
    def objects(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        keys = st.sampled_from(field_names())
        obj = st.dictionaries(keys, children, max_size=6)
        tagged = st.builds(lambda t, d: {**d, "type": t}, st.sampled_from(tags()), obj)
        return st.one_of(tagged, tagged, obj, st.lists(children, max_size=3))

    return st.recursive(SCALARS, objects, max_leaves=12)


def declared_type(item_type: str, param: str) -> Any:
    """The type the emitter's signature gives ``param`` (the first method that takes it)."""
    cls = DIALECT.item_emitters[item_type]
    for method in ["__init__", *(m for m in dir(cls) if not m.startswith("_"))]:
        if callable(getattr(cls, method)) and method not in ("snapshot", "closed"):
            sig = wire.signature(cls, method)
            if param in sig.hints:
                return sig.hints[param]
    raise AssertionError((item_type, param))


@pytest.mark.parametrize(("item_type", "param"), SHAPED, ids=[f"{t}.{p}" for t, p in SHAPED])
@given(value=shaped_values())
def test_whatever_a_shape_accepts_the_sdk_accepts(item_type: str, param: str, value: Any) -> None:
    shape = wire.OPENAI_SHAPES[item_type][param]
    try:
        wire.check_value(value, declared_type(item_type, param), shape, "x", wire.Fixes())
    except ProcessorError:
        event("rejected")
        return
    if value is None:  # an optional parameter left out: the emitter's default goes on the wire
        event("default")
        return
    event("accepted")
    try:
        TypeAdapter(_sdk_field(item_type, param)).validate_json(json.dumps(value), strict=True)
    except ValidationError as exc:
        raise AssertionError(f"accepted {value!r} but the SDK rejects it: {exc}") from None
