"""Generated models are named as in the official SDK, and state their wire ``type``.

Code written against the SDK's types (``ResponseTextDeltaEvent``,
``ResponseOutputMessage``, ...) reads the same against ours: the model of each
event and output item type the pinned SDK knows has the SDK's class name.  The
types the SDK lacks (extensions) keep the default naming rule.  Every tagged
model has its tag as the class attribute ``type``, in both dialects.
"""

from __future__ import annotations

import typing
from types import ModuleType
from typing import Any

import msgspec
import pytest
from pydantic import BaseModel
from sdk_shapes import sdk_events, sdk_items

import responses_stream as rs
from generator.names import event_class, item_class

DIALECTS = ("openai", "openresponses")


def _tag(cls: Any) -> str:
    tag = cls.__struct_config__.tag
    assert isinstance(tag, str), cls
    return tag


def _by_tag(union: Any) -> dict[str, type[msgspec.Struct]]:
    """Wire tag -> model, for every member of one of our unions."""
    return {_tag(cls): cls for cls in typing.get_args(union)}


def _catalogue_names(wire_types: dict[str, str]) -> dict[str, str]:
    """Wire tag -> the catalogue name (or spec item type) it was made from."""
    return {wire: name for name, wire in wire_types.items()}


def test_every_sdk_event_type_has_the_sdk_class_name() -> None:
    ours = _by_tag(rs.openai.models.Event)
    wrong = {
        tag: (ours[tag].__name__, sdk.__name__)
        for tag, sdk in sdk_events().items()
        if ours[tag].__name__ != sdk.__name__
    }
    assert wrong == {}


def test_every_sdk_item_type_has_the_sdk_class_name() -> None:
    ours = _by_tag(rs.openai.models.Item)
    wrong = {
        tag: (ours[tag].__name__, sdk.__name__)
        for tag, sdk in sdk_items().items()
        if ours[tag].__name__ != sdk.__name__
    }
    assert wrong == {}


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


def test_message_content_parts_have_the_sdk_class_names() -> None:
    """The parts of a message (output_text, refusal) are the SDK's own top-level classes."""
    message = sdk_items()["message"]
    sdk = {
        typing.get_args(m.model_fields["type"].annotation)[0]: m
        for m in _models_in(message.model_fields["content"].annotation)
    }
    ours = _by_tag(rs.openai.models.ContentPart)
    assert sdk, "the SDK's message has no content parts"
    assert {t: ours[t].__name__ for t in sdk} == {t: m.__name__ for t, m in sdk.items()}


def test_types_the_sdk_lacks_keep_the_default_names() -> None:
    names = _catalogue_names(rs.openai.DIALECT.event_types)
    extensions = set(_by_tag(rs.openai.models.Event)) - set(sdk_events())
    assert extensions, "the spec has events beyond the SDK"
    for tag in extensions:
        cls = _by_tag(rs.openai.models.Event)[tag]
        assert cls.__name__ == event_class(names[tag])
    items = _catalogue_names(rs.openai.DIALECT.item_types)
    for tag in set(_by_tag(rs.openai.models.Item)) - set(sdk_items()):
        assert _by_tag(rs.openai.models.Item)[tag].__name__ == item_class(items[tag])


def _tagged_models(module: ModuleType) -> list[type[msgspec.Struct]]:
    return [
        cls
        for cls in vars(module).values()
        if isinstance(cls, type)
        and issubclass(cls, msgspec.Struct)
        and cls.__struct_config__.tag_field is not None
    ]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_event_model_s_type_is_its_wire_type(dialect: str) -> None:
    d = rs.DIALECTS[dialect]
    for module in (d.models, d.reading):
        events = typing.get_args(module.Event)
        assert sorted(cls.type for cls in events) == sorted(d.event_types.values())
        for cls in events:
            assert cls.type == _tag(cls), cls
            hints = typing.get_type_hints(cls, include_extras=True)
            assert hints["type"] == typing.ClassVar[typing.Literal[_tag(cls)]], cls


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_tagged_model_states_its_tag_and_encodes_as_before(dialect: str) -> None:
    d = rs.DIALECTS[dialect]
    for module in (d.models, d.reading):
        tagged = _tagged_models(module)
        assert len(tagged) >= len(d.event_types) + len(d.item_types)
        for cls in tagged:
            assert cls.type == _tag(cls), cls
            assert "type" not in cls.__struct_fields__, cls
    # The class attribute changes nothing on the wire: the tag is encoded and decoded.
    resp = d.emitter(model="m")
    events = resp.created() + resp.in_progress()
    msg = resp.message()
    events += [*msg.open(), *msg.output_text_open(), *msg.output_text_delta("Hi"), *msg.done()]
    for ev in events:
        data = msgspec.json.encode(ev)
        assert msgspec.json.decode(data)["type"] == ev.type
        assert msgspec.json.decode(data, type=d.models.Event) == ev
