"""Python snippets for types, literals and value sources in generated emitters.

Spec strings only ever reach generated code through ``literal``, which is
``repr``-based, so a quote, newline or triple quote in a spec cannot break
out of a string; file names reach comments only through ``comment_text``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .loader import comment_text
from .types import TypeRef

__all__ = ["comment_text", "literal", "needs_convert", "pytype"]

MUTABLE = (list, dict)


def constname(name: str) -> str:
    """A module constant's name part for a spec name: what is not a letter or digit is
    ``_``, in upper case."""
    return "".join(c if c.isalnum() else "_" for c in name).upper()


def literal(value: Any) -> str:
    """A Python literal for a YAML scalar, list or mapping."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    raise TypeError(f"unsupported literal {value!r}")


def pytype(ref: TypeRef, models: str | Callable[[str], str] = "m") -> str:
    """The annotation for a spec type, naming model classes through ``models``: a module
    alias, or a function from a class name to its annotation."""
    if ref.kind == "string":
        out = "str"
    elif ref.kind == "integer":
        out = "int"
    elif ref.kind == "number":
        out = "float"
    elif ref.kind == "boolean":
        out = "bool"
    elif ref.kind == "any":
        return "Any"
    elif ref.kind == "object":
        out = "dict[str, Any]"
    elif ref.kind == "list":
        assert ref.item is not None
        out = f"list[{pytype(ref.item, models)}]"
    elif ref.kind == "enum":
        out = "Literal[" + ", ".join(repr(v) for v in ref.values) + "]"
    else:
        out = models(ref.name) if callable(models) else f"{models}.{ref.name}"
    return f"{out} | None" if ref.nullable else out


def needs_convert(ref: TypeRef) -> bool:
    """Whether a YAML default for this type must be converted into model objects."""
    if ref.kind == "named":
        return True
    if ref.kind == "list" and ref.item is not None:
        return needs_convert(ref.item)
    return False
