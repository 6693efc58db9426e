"""The request side: each ``request_fields`` spec read against its vendored document.

A ``request_document`` spec names an OpenAPI document in ``vendor/`` and states what
the API takes beyond it (``extend``, ``optional``) and bounds beyond it (``limits``); a
route's spec names that document and the definition of its body, and gives every body
field its fate.  From these come the request models of each document (msgspec Structs:
one typed decode checks a body), the table of fates the gateway looks fields up in, and
a documentation page.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import spec_model as sm
from .errors import SpecError, SpecErrors
from .loader import Source
from .models import render_models
from .request_schema import closure, decodable, folded
from .writer import OutputError

VENDOR = "vendor"
STRUCT = re.compile(r"^(class \w+\(Struct, kw_only=True)", re.MULTILINE)


@dataclass
class RequestC:
    """One route's request: its table, the tags its body's lists may leave out, and the
    value each row's test sends."""

    spec: sm.RequestFieldsFile
    # body field -> [tag, the keys that imply it] for each tag its list's members may omit
    tag_defaults: dict[str, list[list[Any]]]
    examples: dict[str, Any]


@dataclass
class RequestDocC:
    """One vendored document: the models of every route's body that it describes."""

    spec: sm.RequestDocumentFile
    defs: dict[str, Any]  # rewritten for msgspec, every route's root among them
    map_limits: dict[str, int]  # a map's definition -> the most keys it takes
    routes: list[RequestC]


class _Bad(Exception):
    def __init__(self, src: Source, path: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.error = src.error(path, message)


def read_requests(sources: list[Source], spec_dir: Path) -> list[RequestDocC]:
    """Every request document with the routes it describes, checked; file:line errors."""
    docs = {s.model.name: s for s in sources if s.model.kind == "request_document"}
    routes: dict[str, list[Source]] = {name: [] for name in docs}
    out, errors = [], []
    for src in sources:
        if src.model.kind != "request_fields":
            continue
        if src.model.document not in docs:
            known = ", ".join(sorted(docs)) or "none"
            errors.append(
                src.error(("document",), f"no request_document {src.model.document!r} ({known})")
            )
        else:
            routes[src.model.document].append(src)
    for name, src in sorted(docs.items()):
        try:
            out.append(_read(src, routes[name], spec_dir))
        except _Bad as exc:
            errors.append(exc.error)
        except SpecErrors as exc:
            errors += exc.errors
    if errors:
        raise SpecErrors(errors)
    return out


def _read(doc_src: Source, route_srcs: list[Source], spec_dir: Path) -> RequestDocC:
    spec: sm.RequestDocumentFile = doc_src.model
    try:
        text = (spec_dir / VENDOR / spec.file).read_text(encoding="utf-8")
        components = copy.deepcopy(json.loads(text)["components"]["schemas"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise _Bad(doc_src, ("file",), f"cannot read {VENDOR}/{spec.file}: {exc}") from None
    _amend(doc_src, components)
    roots = {}
    for src in route_srcs:
        _add_fields(src, components, spec.file)
        roots[src.model.root] = src
    rewritten = decodable(components, sorted(roots))
    routes, errors = [], []
    for root, src in sorted(roots.items()):
        fields = src.model.fields
        top = rewritten.defs[root]  # its order is the order of the checks: model first
        top["properties"] = {f: _limited(top["properties"][f], fields[f]) for f in fields}
        tags = _tag_defaults(src, rewritten.defs, root, rewritten.defaults)
        errors += _check_keys(src, rewritten.defs, root)
        if src.model.tools:
            _check_tools(src, rewritten.defs, top["properties"]["tools"])
        examples = {}
        for field, row in fields.items():
            if row.from_ and row.from_ not in _keys(rewritten.defs, top["properties"][field]):
                why = f"{field!r} has no key {row.from_!r} to send"
                errors.append(src.error(("fields", field, "from"), why))
            value = row.example
            if value is None:
                value = _example(top["properties"][field], rewritten.defs)
            if value is None:
                why = "its schema is not a scalar, an enum or a map: give an example"
                errors.append(src.error(("fields", field), why))
            examples[field] = value
        routes.append(RequestC(src.model, tags, examples))
    if errors:
        raise SpecErrors(errors)
    return RequestDocC(spec, rewritten.defs, rewritten.map_limits, routes)


def _amend(src: Source, components: dict[str, Any]) -> None:
    """What the API takes beyond the document, and bounds beyond it, written into it."""
    spec: sm.RequestDocumentFile = src.model
    for name, props in spec.extend.items():
        target = _object_of(src, components, name, ("extend", name))
        for prop, ext in props.items():
            if prop in target.get("properties", {}):
                raise _Bad(src, ("extend", name, prop), f"{name} already declares {prop!r}")
            target.setdefault("properties", {})[prop] = ext.schema_
    for name, absent in spec.optional.items():
        target = _object_of(src, components, name, ("optional", name))
        for prop in absent:
            if prop not in target.get("required", []):
                raise _Bad(src, ("optional", name, prop), f"{name} does not require {prop!r}")
            target["required"] = [r for r in target["required"] if r != prop]
    for name, keywords in spec.limits.items():
        target = _object_of(src, components, name, ("limits", name))
        for key, value in copy.deepcopy(keywords).items():
            if key != "properties":
                target[key] = value
                continue
            for prop, more in value.items():  # a property's own limits, beside the document's
                if prop not in target.get("properties", {}):
                    where = ("limits", name, "properties", prop)
                    raise _Bad(src, where, f"{name} has no {prop!r}")
                target["properties"][prop] = {"allOf": [target["properties"][prop], more]}


def _add_fields(src: Source, components: dict[str, Any], file: str) -> None:
    """The route's rows checked against its root; the fields the document lacks added."""
    spec: sm.RequestFieldsFile = src.model
    if spec.root not in components:
        raise _Bad(src, ("root",), f"{spec.root!r} is not a definition of {file}")
    root = _object_of(src, components, spec.root, ("root",))
    declared = set(_properties(components, spec.root))
    for field, row in spec.fields.items():
        where = ("fields", field)
        if row.schema_ is not None and field in declared:
            raise _Bad(src, where + ("schema",), f"{spec.root} declares {field!r}: drop its schema")
        if row.schema_ is None and field not in declared:
            raise _Bad(
                src, where, f"{spec.root} has no field {field!r}: give its schema and source"
            )
        if row.schema_ is not None:
            if not row.source:
                raise _Bad(src, where, f"{field!r} is not in {file}: say who sends it (source)")
            root.setdefault("properties", {})[field] = row.schema_
        if row.required:
            root["required"] = [*root.get("required", []), field]
        _check_row(src, row, where)
        earlier = list(spec.fields.values())[: list(spec.fields).index(field)]
        if row.with_ and row.with_ not in [r.to for r in earlier if r.fate == "translated"]:
            why = f"no earlier translated row sends {row.with_!r} (to)"
            raise _Bad(src, where + ("with",), why)
    missing = sorted(declared - set(spec.fields))
    if missing:
        raise _Bad(
            src,
            ("fields",),
            f"{file} declares {', '.join(map(repr, missing))} in {spec.root}, "
            "and the table gives no fate for it: add a row",
        )


def _limited(schema: dict[str, Any], row: sm.RequestField) -> dict[str, Any]:
    """A body field's schema with its row's limits; one the gateway needs takes no null,
    whatever the document lets it take."""
    members = schema.get("anyOf", [schema])
    if row.required:
        members = [m for m in members if m != {"type": "null"}]
    if row.limits:
        members = [m if m == {"type": "null"} else {**m, **row.limits} for m in members]
    return members[0] if len(members) == 1 else {**schema, "anyOf": members}


def _check_tools(src: Source, defs: dict[str, Any], schema: dict[str, Any]) -> None:
    """The table's tool types are the tags of the body's tools, each with a row."""
    union = defs.get(_listed(defs, schema) or "", {})
    tags = set(union.get("discriminator", {}).get("mapping", {}))
    spec: sm.RequestFieldsFile = src.model
    for kind in sorted(set(spec.tools) - tags):
        raise _Bad(src, ("tools", kind), f"{spec.root}'s tools have no type {kind!r}")
    missing = sorted(tags - set(spec.tools))
    if missing:
        why = f"the tool types {', '.join(map(repr, missing))} have no row: give each its fate"
        raise _Bad(src, ("tools",), why)


def _example(schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    """A value ``schema`` takes, when it is a scalar, an enum or a map; else None."""
    for m in schema.get("anyOf", [schema]):
        if "anyOf" in m:
            found = _example(m, defs)
            if found is not None:
                return found
            continue
        if "$ref" in m:
            target = defs[m["$ref"].removeprefix("#/$defs/")]
            if "anyOf" in target or target.get("type") == "object" and "properties" not in target:
                return _example(target, defs)
            continue
        kind = m.get("type")
        if "enum" in m or "const" in m:
            return m["enum"][0] if "enum" in m else m["const"]
        if kind in ("integer", "number"):
            return m.get("minimum", 1)
        if kind == "string":
            return "x" * max(1, m.get("minLength", 1))
        if kind == "boolean":
            return True
        if kind == "object" and "properties" not in m:
            values = m.get("additionalProperties")
            return {"k": "v"} if isinstance(values, dict) and values.get("type") == "string" else {}
    return None


def _check_row(src: Source, row: sm.RequestField, where: tuple[str | int, ...]) -> None:
    if row.fate == "translated" and not row.to:
        raise _Bad(src, where, "a translated field names the upstream field it becomes (to)")
    if row.fate != "translated" and (row.to or row.by or row.from_ or row.with_):
        why = f"only a translated field has 'to', 'from', 'with' or 'by', not a {row.fate} one"
        raise _Bad(src, where, why)
    if row.by and row.from_:
        raise _Bad(src, where + ("from",), "a converter (by) reads the whole value: drop 'from'")
    if row.fate in ("caller", "no_effect", "refused", "converted") and not row.why:
        raise _Bad(src, where, f"a {row.fate} field says why (why)")
    if row.allow and row.fate != "refused":
        raise _Bad(src, where + ("allow",), "only a refused field has values it still takes")


def _check_keys(src: Source, defs: dict[str, Any], root: str) -> list[SpecError]:
    """Each refused key (``key`` or ``tag.key``) and each needed one is one a definition
    the body reaches declares, so that no row of ``keys`` or ``needs`` is dead."""
    reached = [defs[name] for name in closure(defs, [root], "#/$defs/") if name in defs]
    declared = {key for node in reached for key in _declared(node)}
    spec: sm.RequestFieldsFile = src.model
    named: list[tuple[tuple[str | int, ...], str]]
    named = [(("keys", k), k.rpartition(".")[2]) for k in spec.keys]
    named += [
        (("needs", tag, i), key.rpartition(".")[2])
        for tag, keys in spec.needs.items()
        for i, key in enumerate(keys)
    ]
    why = f"no part of a {spec.root} body has the key"
    return [src.error(where, f"{why} {key!r}") for where, key in named if key not in declared]


def _declared(node: Any) -> set[str]:
    """Every property name a schema node declares, in its inline objects too."""
    if isinstance(node, list):
        return {key for member in node for key in _declared(member)}
    if not isinstance(node, dict):
        return set()
    names = set(node.get("properties", {})) if isinstance(node.get("properties"), dict) else set()
    return names | {key for value in node.values() for key in _declared(value)}


def _keys(defs: dict[str, Any], schema: dict[str, Any]) -> set[str]:
    """The keys an object value of ``schema`` (a union's members too) may have."""
    keys: set[str] = set()
    for member in _members(defs, schema):
        if "$ref" in member:
            member = defs[member["$ref"].removeprefix("#/$defs/")]
        keys.update(member.get("properties", {}))
    return keys


def _object_of(
    src: Source, components: dict[str, Any], name: str, where: tuple[str | int, ...]
) -> dict[str, Any]:
    """The object schema of definition ``name`` that takes added properties."""
    node = components.get(name)
    if node is None:
        raise _Bad(src, where, f"no definition {name!r} in the document")
    if "allOf" in node:  # properties go in an inline part of their own, the last
        if not node["allOf"] or "$ref" in node["allOf"][-1]:
            node["allOf"].append({"type": "object", "properties": {}})
        return node["allOf"][-1]  # type: ignore[no-any-return]
    members = [m for m in node.get("anyOf", []) if m.get("type") == "object"]
    return members[0] if len(members) == 1 else node  # type: ignore[no-any-return]


def _properties(components: dict[str, Any], name: str) -> dict[str, Any]:
    return dict(folded(components, components[name]).get("properties", {}))


def _tag_defaults(
    src: Source, defs: dict[str, Any], root: str, defaults: dict[str, dict[str, str]]
) -> dict[str, list[list[Any]]]:
    """Body field -> the tags its list's members may leave out, for each union that has
    such members; a union elsewhere would need a deeper walk, and is refused."""
    out: dict[str, list[list[Any]]] = {}
    found: set[str] = set()
    for field, schema in defs[root].get("properties", {}).items():
        ref = _listed(defs, schema)
        if ref in defaults:
            found.add(ref)
            rules = defaults[ref]
            out[field] = [[tag, keys.split(",") if keys else []] for tag, keys in rules.items()]
    reached = closure(defs, [root], "#/$defs/")
    lost = sorted(set(defaults) - found & set(reached))
    if lost:
        why = f"{', '.join(lost)}: a member may leave its tag out, deep inside"
        raise _Bad(src, ("root",), why)
    return out


def _listed(defs: dict[str, Any], schema: dict[str, Any]) -> str | None:
    """The definition a list field's entries are (through a named array), if any."""
    for member in _members(defs, schema):
        if "$ref" in member:
            member = defs[member["$ref"].removeprefix("#/$defs/")]
        if member.get("type") == "array" and "$ref" in member.get("items", {}):
            return str(member["items"]["$ref"].removeprefix("#/$defs/"))
    return None


def _members(defs: dict[str, Any], schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The members of a union (or the schema itself), through references to unions."""
    if "$ref" in schema:
        target = defs[schema["$ref"].removeprefix("#/$defs/")]
        return _members(defs, target) if "anyOf" in target else [schema]
    if "anyOf" in schema:
        return [m for member in schema["anyOf"] for m in _members(defs, member)]
    return [schema]


def render_request_models(doc: RequestDocC, head: str) -> str:
    """The msgspec models of the bodies one document describes (every object refuses
    unknown keys)."""
    source = render_models({"$defs": doc.defs}, head)
    for name, most in sorted(doc.map_limits.items()):
        alias = re.compile(rf"^{name}: TypeAlias = (dict\[[^\n]*\])( \| None)?$", re.MULTILINE)
        if not alias.search(source):
            raise OutputError(f"the request models write the map {name} in a shape not known")
        source = alias.sub(rf"{name}: TypeAlias = Annotated[\1, Meta(max_length={most})]\2", source)
    return STRUCT.sub(r"\1, forbid_unknown_fields=True", source)


def request_tables(docs: list[RequestDocC]) -> dict[str, Any]:
    """What the runtime's table of fates holds, per route: each field's fate, and its
    ``to``, ``from``, ``with``, ``by``, ``why`` and ``allow`` where it has them."""
    keys = {
        "to": "to",
        "from": "from_",
        "with": "with_",
        "by": "by",
        "why": "why",
        "allow": "allow",
    }
    return {
        r.spec.route: {
            "root": r.spec.root,
            "tag_defaults": r.tag_defaults,
            "fields": {
                name: {"fate": row.fate}
                | {k: getattr(row, a) for k, a in keys.items() if getattr(row, a)}
                for name, row in r.spec.fields.items()
            },
            "tools": {k: t.model_dump(exclude_none=True) for k, t in r.spec.tools.items()},
            "keys": r.spec.keys,
            "needs": r.spec.needs,
        }
        for d in docs
        for r in d.routes
    }
