"""Turn the catalog into one JSON Schema per dialect: events, items, parts, types."""

from __future__ import annotations

from typing import Any

from .catalog import Catalog, DialectC
from .reserved import ADDRESS_FIELDS
from .types import TypeRef


def legacy_fields(cat: Catalog) -> dict[str, list[str]]:
    """Schema definition -> the fields a reader accepts absent, with a warning."""
    out = {name: list(spec.read_legacy) for name, spec in cat.types.items() if spec.read_legacy}
    for ev in cat.events.values():
        if ev.read_legacy:
            out[ev.cls] = list(ev.read_legacy)
    return dict(sorted(out.items()))


def type_schema(ref: TypeRef) -> dict[str, Any]:
    """The JSON Schema of one spec type expression."""
    if ref.kind in ("string", "integer", "number", "boolean"):
        out: dict[str, Any] = {"type": ref.kind}
    elif ref.kind == "any":
        out = {}
    elif ref.kind == "object":
        out = {"type": "object", "additionalProperties": True}
    elif ref.kind == "list":
        assert ref.item is not None
        out = {"type": "array", "items": type_schema(ref.item)}
    elif ref.kind == "enum":
        out = {"type": "string", "enum": list(ref.values)}
    else:
        out = {"$ref": f"#/$defs/{ref.name}"}
    if ref.nullable and ref.kind != "any":
        return {"anyOf": [out, {"type": "null"}]}
    return out


def _object(
    title: str, props: dict[str, dict[str, Any]], required: list[str], doc: str = ""
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "object",
        "title": title,
        "properties": props,
        "required": required,
    }
    if doc:
        out["description"] = doc
    return out


def _tagged(
    title: str, tag: str, props: dict[str, dict[str, Any]], required: list[str], doc: str = ""
) -> dict[str, Any]:
    props = {"type": {"type": "string", "const": tag}, **props}
    return _object(title, props, ["type", *required], doc)


def _union(members: dict[str, str]) -> dict[str, Any]:
    """A discriminated union by ``type``: tag -> definition name."""
    if not members:
        return {"type": "object", "additionalProperties": True}
    return {
        "oneOf": [{"$ref": f"#/$defs/{d}"} for d in members.values()],
        "discriminator": {
            "propertyName": "type",
            "mapping": {tag: f"#/$defs/{d}" for tag, d in members.items()},
        },
    }


def _relax(
    props: dict[str, dict[str, Any]],
    required: list[str],
    loose: list[str],
    legacy: list[str] = [],  # noqa: B006 - never mutated
) -> list[str]:
    """For reading: ``loose`` fields may be absent or null, ``legacy`` ones absent."""
    for name in loose:
        schema = props.get(name)
        if schema is None:  # a dialect that reshapes the payload has no such field
            continue
        if schema and not any(s.get("type") == "null" for s in schema.get("anyOf", [])):
            props[name] = {"anyOf": [schema, {"type": "null"}]}
    return [f for f in required if f not in loose and f not in legacy]


def dialect_schema(cat: Catalog, dialect: DialectC, reading: bool = False) -> dict[str, Any]:
    """Every payload of ``dialect`` as JSON Schema definitions.

    With ``reading``, the schema is the one consumers apply: the fields that
    the spec lists in ``read_optional`` may be absent or null.
    """

    def loose(names: list[str]) -> list[str]:
        return names if reading else []

    defs: dict[str, Any] = {}
    for name, spec in cat.types.items():
        fields = cat.type_fields[name]
        props = {f: type_schema(t) for f, t in fields.items()}
        required = [f for f in fields if f not in spec.optional]
        required = _relax(props, required, loose(spec.read_optional), loose(spec.read_legacy))
        defs[name] = _object(name, props, required, spec.doc)

    content: dict[str, str] = {}
    summary: dict[str, str] = {}
    for part in cat.parts.values():
        cls = part.cls
        props = {f.name: type_schema(f.type) for f in part.fields}
        required = [f.name for f in part.fields if not f.spec.optional]
        required = _relax(props, required, loose(part.read_optional))
        defs[cls] = _tagged(cls, part.wire, props, required, part.doc)
        (content if part.index == "content_index" else summary)[part.wire] = cls

    items: dict[str, str] = {}
    for item in cat.items.values():
        cls = item.cls
        tag = dialect.item_type(item.type)
        iprops: dict[str, dict[str, Any]] = {
            "id": {"type": "string"},
            "status": {"type": "string", "enum": list(item.statuses)},
        }
        iprops.update({f.name: type_schema(f.type) for f in item.fields})
        required = ["id", "status"] + [f.name for f in item.fields if not f.spec.optional]
        required = _relax(iprops, required, loose(item.read_optional))
        defs[cls] = _tagged(cls, tag, iprops, required, item.doc)
        items[tag] = cls
    defs["Item"] = _union(items)
    defs["ContentPart"] = _union(content)
    defs["SummaryPart"] = _union(summary)
    # One union over every item and part, so that each struct is tagged even
    # where its own union has a single member.
    defs["Payload"] = _union({**items, **content, **summary})

    rprops = {f.name: type_schema(f.type) for f in cat.response_fields}
    rrequired = _relax(
        rprops, [f.name for f in cat.response_fields], loose(cat.response_read_optional)
    )
    defs["Response"] = _object("Response", rprops, rrequired, "The Response snapshot.")

    events: dict[str, str] = {}
    for ev in cat.events.values():
        cls = ev.cls
        wire = dialect.event_type(ev.name)
        eprops: dict[str, dict[str, Any]] = {"sequence_number": {"type": "integer"}}
        for addr in ADDRESS_FIELDS[ev.address]:
            eprops[addr] = {"type": "string"} if addr == "item_id" else {"type": "integer"}
        efields = dialect.overrides.get(ev.name, ev.fields)
        eprops.update({f: type_schema(t) for f, (t, _) in efields.items()})
        erequired = _relax(eprops, list(eprops), loose(ev.read_optional), loose(ev.read_legacy))
        defs[cls] = _tagged(cls, wire, eprops, erequired, ev.doc)
        events[wire] = cls
    defs["Event"] = _union(events)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"responses-stream payloads ({dialect.name} dialect)",
        "$defs": defs,
    }
