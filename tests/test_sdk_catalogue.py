"""The spec against the official SDK: every type spec'd, reading as loose as the SDK."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml
from sdk_shapes import admits_none, sdk_definitions, sdk_events, sdk_items

import responses_stream as rs

GENERATED = Path(__file__).resolve().parents[1] / "generated" / "responses_stream" / "openai"


def _defs() -> dict[str, Any]:
    schema = json.loads((GENERATED / "schema.json").read_text(encoding="utf-8"))
    defs: dict[str, Any] = schema["$defs"]
    return defs


def _required(module: Any, cls_name: str) -> set[str]:
    struct = getattr(module, cls_name)
    return {f.name for f in msgspec.structs.fields(struct) if f.required}


def _reading_required(cls_name: str) -> set[str]:
    return _required(rs.openai.reading, cls_name)


def test_all_28_sdk_item_types_have_a_spec() -> None:
    items = sdk_items()
    assert len(items) == 28
    missing = sorted(set(items) - set(rs.openai.DIALECT.item_types.values()))
    assert missing == []


def test_the_openai_dialects_standard_items_are_the_sdks_item_types() -> None:
    """The list the checker holds unprefixed item types to is the pinned SDK's union."""
    spec = Path(__file__).resolve().parents[1] / "spec" / "dialects" / "openai.yaml"
    listed = yaml.safe_load(spec.read_text(encoding="utf-8"))["standard_items"]
    assert sorted(listed) == sorted(sdk_items())


def test_all_59_sdk_event_types_have_a_spec() -> None:
    events = sdk_events()
    assert len(events) == 59
    missing = sorted(set(events) - set(rs.openai.DIALECT.event_types.values()))
    assert missing == []


def test_events_beyond_the_sdk_union_that_genuine_streams_carry_are_spec_d() -> None:
    wire = set(rs.openai.DIALECT.event_types.values())
    for name in (
        "response.apply_patch_call_operation_diff.delta",
        "response.apply_patch_call_operation_diff.done",
    ):
        assert name in wire


def _pairs() -> list[tuple[str, Any]]:
    defs = _defs()
    pairs = dict(sdk_definitions())
    for union, sdk in (("Item", sdk_items()), ("Event", sdk_events())):
        for tag, ref in defs[union]["discriminator"]["mapping"].items():
            if tag in sdk:
                pairs[ref.rsplit("/", 1)[1]] = sdk[tag]
    return sorted(pairs.items())


@pytest.mark.parametrize(("ours", "sdk"), _pairs(), ids=[p[0] for p in _pairs()])
def test_reading_is_as_loose_as_the_sdk(ours: str, sdk: Any) -> None:
    """A field the SDK lets a payload leave out (or set null) may be left out when reading."""
    legacy = set(rs.tables.LEGACY.get(ours, ()))
    required = _reading_required(ours) - {"type"}
    too_strict = sorted(
        f for f in required if f not in sdk.model_fields or not sdk.model_fields[f].is_required()
    )
    assert too_strict == [], f"{ours}: add to read_optional: {too_strict}"
    struct = getattr(rs.openai.reading, ours)
    hints = struct.__annotations__
    not_nullable = sorted(
        f
        for f, hint in hints.items()
        if f in sdk.model_fields
        and admits_none(sdk.model_fields[f].annotation)
        and "None" not in str(hint)
        and str(hint) != "Any"
        and f not in legacy
    )
    assert not_nullable == [], f"{ours}: the SDK accepts null for {not_nullable}"


def test_writing_models_stay_strict() -> None:
    """Producers write every field: the write models require what reading relaxes."""
    assert "completed_at" in rs.openai.models.Response.__struct_fields__
    assert _write_required("Response") > _reading_required("Response")


def _write_required(cls_name: str) -> set[str]:
    return _required(rs.openai.models, cls_name)
