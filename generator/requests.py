"""The request side: each ``request_fields`` spec read against its vendored document.

A route's spec names an OpenAPI document in ``vendor/`` and the definition of its
request body, states what the API takes beyond the document (``extend``,
``optional``, ``limits``), and gives every body field its fate.  From these come the
request models (msgspec Structs: one typed decode checks a body), the table of fates
the gateway looks fields up in, and a documentation page.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import spec_model as sm
from .errors import SpecErrors
from .loader import Source
from .models import render_models
from .request_schema import REF, decodable
from .writer import OutputError

VENDOR = "vendor"
STRUCT = re.compile(r"^(class \w+\(Struct, kw_only=True)", re.MULTILINE)


@dataclass
class RequestC:
    """One route's request: its spec, its rewritten definitions, its fields' schemas."""

    spec: sm.RequestFieldsFile
    defs: dict[str, Any]
    # (path of a list of union members, e.g. ("input",)) -> (tag, the keys that imply it)
    tag_defaults: dict[str, list[list[Any]]]
    fields: dict[str, dict[str, Any]]  # body field -> its schema (for the docs)
    map_limits: dict[str, int]  # a map's definition -> the most keys it takes


def read_requests(sources: list[Source], spec_dir: Path) -> list[RequestC]:
    """Every route's request, checked against its document; file:line errors."""
    out, errors = [], []
    for src in sources:
        try:
            out.append(_read(src, spec_dir))
        except _Bad as exc:
            errors.append(src.error(exc.path, exc.message))
    if errors:
        raise SpecErrors(errors)
    return out


class _Bad(Exception):
    def __init__(self, path: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.path, self.message = path, message


def _read(src: Source, spec_dir: Path) -> RequestC:
    spec: sm.RequestFieldsFile = src.model
    path = spec_dir / VENDOR / spec.document
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        components = copy.deepcopy(doc["components"]["schemas"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise _Bad(("document",), f"cannot read {VENDOR}/{spec.document}: {exc}") from None
    if spec.root not in components:
        raise _Bad(("root",), f"{spec.root!r} is not a definition of {spec.document}")
    for name, props in spec.extend.items():
        target = _object_of(components, name, ("extend", name))
        for prop, ext in props.items():
            if prop in target.get("properties", {}):
                raise _Bad(("extend", name, prop), f"{name} already declares {prop!r}")
            target.setdefault("properties", {})[prop] = ext.schema_
    for name, absent in spec.optional.items():
        target = _object_of(components, name, ("optional", name))
        for prop in absent:
            if prop not in target.get("required", []):
                raise _Bad(("optional", name, prop), f"{name} does not require {prop!r}")
            target["required"] = [r for r in target["required"] if r != prop]
    for name, keywords in spec.limits.items():
        target = _object_of(components, name, ("limits", name))
        for key, value in copy.deepcopy(keywords).items():
            if key != "properties":
                target[key] = value
                continue
            for prop, more in value.items():  # a property's own limits, beside the document's
                if prop not in target.get("properties", {}):
                    raise _Bad(("limits", name, "properties", prop), f"{name} has no {prop!r}")
                target["properties"][prop] = {"allOf": [target["properties"][prop], more]}
    root = _object_of(components, spec.root, ("root",))
    declared = set(_properties(components, spec.root))
    for field, row in spec.fields.items():
        where = ("fields", field)
        if row.schema_ is not None and field in declared:
            raise _Bad(where + ("schema",), f"{spec.root} declares {field!r}: drop its schema")
        if row.schema_ is None and field not in declared:
            raise _Bad(where, f"{spec.root} has no field {field!r}: give its schema and source")
        if row.schema_ is not None:
            if not row.source:
                raise _Bad(where, f"{field!r} is not in {spec.document}: say who sends it (source)")
            root.setdefault("properties", {})[field] = row.schema_
        if row.required:
            root["required"] = [*root.get("required", []), field]
        if row.limits:
            part = _declaring(components, spec.root, field)
            part["properties"][field] = {"allOf": [part["properties"][field], row.limits]}
        _check_row(row, where)
    missing = sorted(declared - set(spec.fields))
    if missing:
        raise _Bad(
            ("fields",),
            f"{spec.document} declares {', '.join(map(repr, missing))} in {spec.root}, "
            "and the table gives no fate for it: add a row",
        )
    rewritten = decodable(components, spec.root)
    # the table's order is the order the fields are checked in (model first)
    top = rewritten.defs[spec.root]
    top["properties"] = {
        f: _not_null(top["properties"][f]) if spec.fields[f].required else top["properties"][f]
        for f in spec.fields
    }
    return RequestC(
        spec,
        rewritten.defs,
        _tag_defaults(rewritten.defs, spec.root, rewritten.defaults),
        {f: _properties(components, spec.root)[f] for f in spec.fields},
        rewritten.map_limits,
    )


def _not_null(schema: dict[str, Any]) -> dict[str, Any]:
    """A field the gateway needs takes no null, whatever the document lets it take."""
    members = [m for m in schema.get("anyOf", [schema]) if m != {"type": "null"}]
    return members[0] if len(members) == 1 else {**schema, "anyOf": members}


def _check_row(row: sm.RequestField, where: tuple[str | int, ...]) -> None:
    if row.fate == "translated" and not row.to:
        raise _Bad(where, "a translated field names the upstream field it becomes (to)")
    if row.fate != "translated" and (row.to or row.by):
        raise _Bad(where, f"only a translated field has 'to' or 'by', not a {row.fate} one")
    if row.fate in ("caller", "no_effect", "refused", "converted") and not row.why:
        raise _Bad(where, f"a {row.fate} field says why (why)")
    if row.allow and row.fate != "refused":
        raise _Bad(where + ("allow",), "only a refused field has values it still takes")


def _object_of(
    components: dict[str, Any], name: str, where: tuple[str | int, ...]
) -> dict[str, Any]:
    """The object schema of definition ``name`` that takes added properties."""
    node = components.get(name)
    if node is None:
        raise _Bad(where, f"no definition {name!r} in the document")
    if "allOf" in node:  # properties go in an inline part of their own, the last
        if not node["allOf"] or "$ref" in node["allOf"][-1]:
            node["allOf"].append({"type": "object", "properties": {}})
        return node["allOf"][-1]  # type: ignore[no-any-return]
    members = [m for m in node.get("anyOf", []) if m.get("type") == "object"]
    return members[0] if len(members) == 1 else node  # type: ignore[no-any-return]


def _declaring(components: dict[str, Any], name: str, field: str) -> dict[str, Any]:
    """The part of definition ``name`` (or of what it builds on) that declares ``field``."""
    node = components[name]
    for part in node.get("allOf", [node]):
        if "$ref" in part:
            if field in _properties(components, part["$ref"].removeprefix(REF)):
                return _declaring(components, part["$ref"].removeprefix(REF), field)
        elif field in part.get("properties", {}):
            return part  # type: ignore[no-any-return]
    raise _Bad(("fields", field), f"{name} does not declare {field!r}")


def _properties(components: dict[str, Any], name: str) -> dict[str, Any]:
    node = components[name]
    out: dict[str, Any] = {}
    for part in node.get("allOf", [node]):
        if "$ref" in part:
            out |= _properties(components, part["$ref"].removeprefix(REF))
        else:
            out |= part.get("properties", {})
    return out


def _tag_defaults(
    defs: dict[str, Any], root: str, defaults: dict[str, dict[str, str]]
) -> dict[str, list[list[Any]]]:
    """Body field -> the tags its list's members may leave out, for each union that has
    such members; a union elsewhere would need a deeper walk, and is refused."""
    out: dict[str, list[list[Any]]] = {}
    found: set[str] = set()
    for field, schema in defs[root].get("properties", {}).items():
        for member in _members(defs, schema):
            ref = member.get("items", {}).get("$ref", "").removeprefix("#/$defs/")
            if member.get("type") == "array" and ref in defaults:
                found.add(ref)
                rules = defaults[ref]
                out[field] = [[tag, keys.split(",") if keys else []] for tag, keys in rules.items()]
    lost = sorted(set(defaults) - found)
    if lost:
        raise _Bad(("root",), f"{', '.join(lost)}: a member may leave its tag out, deep inside")
    return out


def _members(defs: dict[str, Any], schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The members of a union (or the schema itself), through references to unions."""
    if "$ref" in schema:
        target = defs[schema["$ref"].removeprefix("#/$defs/")]
        return _members(defs, target) if "anyOf" in target else [schema]
    if "anyOf" in schema:
        return [m for member in schema["anyOf"] for m in _members(defs, member)]
    return [schema]


def render_request_models(req: RequestC, head: str) -> str:
    """The msgspec models of one route's request body (every object refuses unknown keys)."""
    source = render_models({"$defs": req.defs}, head)
    for name, most in sorted(req.map_limits.items()):
        alias = re.compile(rf"^{name}: TypeAlias = (dict\[[^\n]*\])( \| None)?$", re.MULTILINE)
        if not alias.search(source):
            raise OutputError(f"the request models write the map {name} in a shape not known")
        source = alias.sub(rf"{name}: TypeAlias = Annotated[\1, Meta(max_length={most})]\2", source)
    return STRUCT.sub(r"\1, forbid_unknown_fields=True", source)


def request_tables(requests: list[RequestC]) -> dict[str, Any]:
    """What the runtime's table of fates holds, per route."""
    return {
        r.spec.route: {
            "root": r.spec.root,
            "tag_defaults": r.tag_defaults,
            "fields": {
                name: {
                    "fate": row.fate,
                    "to": row.to,
                    "by": row.by,
                    "why": row.why,
                    "allow": row.allow,
                }
                for name, row in r.spec.fields.items()
            },
        }
        for r in requests
    }
