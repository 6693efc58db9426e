"""The official SDK's models, keyed the way the spec names things.

Used to hold the spec to the SDK: every SDK output item and stream event type
has a spec, and every field the SDK lets a payload leave out is read-optional.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from typing import Any

from openai.types import responses as r
from pydantic import BaseModel


def _members(union: Any) -> list[type[BaseModel]]:
    while typing.get_origin(union) is typing.Annotated:
        union = typing.get_args(union)[0]
    return [m for m in typing.get_args(union) if isinstance(m, type)]


def _tag(model: type[BaseModel]) -> str:
    return str(typing.get_args(model.model_fields["type"].annotation)[0])


def sdk_items() -> dict[str, type[BaseModel]]:
    """Wire type -> SDK model, for every member of ``ResponseOutputItem``."""
    return {_tag(m): m for m in _members(r.ResponseOutputItem)}


def sdk_events() -> dict[str, type[BaseModel]]:
    """Wire type -> SDK model, for every member of ``ResponseStreamEvent``."""
    return {_tag(m): m for m in _members(r.ResponseStreamEvent)}


def _models_in(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    for arg in typing.get_args(annotation):
        yield from _models_in(arg)


def field_model(model: type[BaseModel], name: str, tag: str | None = None) -> type[BaseModel]:
    """The model type of ``model.name`` (the member tagged ``tag`` of a union)."""
    found = list(_models_in(model.model_fields[name].annotation))
    if tag is not None:
        found = [m for m in found if "type" in m.model_fields and _tag(m) == tag]
    assert len(found) == 1, (model, name, found)
    return found[0]


def admits_none(annotation: Any) -> bool:
    return (
        annotation is None
        or type(None) in typing.get_args(annotation)
        or (isinstance(annotation, types.UnionType) and type(None) in annotation.__args__)
    )


def loose_fields(model: type[BaseModel]) -> dict[str, bool]:
    """Field -> whether the SDK accepts it absent (its required-ness is False)."""
    return {n: not f.is_required() for n, f in model.model_fields.items()}


def sdk_definitions() -> dict[str, type[BaseModel]]:
    """Our schema definition name -> the SDK model that reads the same payload."""
    items = sdk_items()
    out: dict[str, type[BaseModel]] = {"Response": r.Response, "Usage": r.ResponseUsage}
    out["InputTokensDetails"] = field_model(r.ResponseUsage, "input_tokens_details")
    out["OutputTokensDetails"] = field_model(r.ResponseUsage, "output_tokens_details")
    out["Logprob"] = field_model(r.ResponseTextDeltaEvent, "logprobs")
    out["TopLogprob"] = field_model(out["Logprob"], "top_logprobs")
    out["ResponseOutputText"] = field_model(items["message"], "content", "output_text")
    out["ResponseOutputRefusal"] = field_model(items["message"], "content", "refusal")
    out["SummaryTextPart"] = field_model(items["reasoning"], "summary")
    out["ReasoningTextPart"] = field_model(items["reasoning"], "content")
    return out
