"""The openai SDK's request types as JSON schemas: what real servers expect of a body."""

from __future__ import annotations

import functools
import typing
from typing import Any

import jsonschema
from pydantic import TypeAdapter


@functools.cache
def sdk_validator(params: Any) -> jsonschema.Draft202012Validator:
    """A validator for the SDK's request type ``params`` (pydantic's JSON schema of it:
    validating with pydantic itself would leave the nested iterables unchecked)."""
    return jsonschema.Draft202012Validator(TypeAdapter(params).json_schema())


def sdk_errors(params: Any, body: Any) -> list[str]:
    """Where ``body`` breaks the SDK's request type ``params`` (empty when it fits)."""
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}"
        for e in sdk_validator(params).iter_errors(body)
    ]


def param_names(*params: Any) -> set[str]:
    """The body fields the SDK's TypedDict request types ``params`` define, read from the
    installed SDK."""
    return {name for p in params for name in typing.get_type_hints(p)}
