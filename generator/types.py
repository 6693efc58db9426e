"""The small type language of spec files, parsed into ``TypeRef`` trees."""

from __future__ import annotations

import re
from dataclasses import dataclass

SCALARS = {"string", "integer", "number", "boolean", "any", "object"}
BUILTIN_UNIONS = {"Item", "ContentPart", "SummaryPart", "Response"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_ENUM_VALUE = re.compile(r"[A-Za-z0-9_.:-]+\Z")


class TypeSyntaxError(ValueError):
    """A type expression that does not parse."""


@dataclass(frozen=True)
class TypeRef:
    """A parsed type expression: a scalar, a list, an enum or a named type, maybe nullable."""

    kind: str  # scalar name, "list", "enum" or "named"
    nullable: bool = False
    item: TypeRef | None = None
    values: tuple[str, ...] = ()
    name: str = ""

    def named_refs(self) -> set[str]:
        """The named types it refers to."""
        if self.kind == "named":
            return {self.name}
        return self.item.named_refs() if self.item else set()


def parse_type(text: str) -> TypeRef:
    """Parse ``list[Logprob]?``, ``enum(a,b)``, ``string`` and the like."""
    src = str(text).strip()
    nullable = src.endswith("?")
    if nullable:
        src = src[:-1].strip()
    if src.startswith("list[") and src.endswith("]"):
        return TypeRef("list", nullable, item=parse_type(src[5:-1]))
    if src.startswith("enum(") and src.endswith(")"):
        values = tuple(v.strip() for v in src[5:-1].split(","))
        if not values or not all(_ENUM_VALUE.match(v) for v in values):
            raise TypeSyntaxError(f"bad enum values in {text!r}")
        return TypeRef("enum", nullable, values=values)
    if src in SCALARS:
        return TypeRef(src, nullable)
    if _NAME.match(src) and src[0].isupper():
        return TypeRef("named", nullable, name=src)
    raise TypeSyntaxError(
        f"unknown type {text!r} (expected string, integer, number, boolean, any, object, "
        "list[T], enum(a,b), a named type, or T?)"
    )
