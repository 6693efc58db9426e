"""A vendored request schema made decodable by msgspec, widening only where it must.

msgspec decodes a union of objects only when every member carries a distinct tag, and a
union holds at most one member of each JSON kind.  OpenAPI documents say less: a member
may have an optional tag, two members may share one (``message`` for input and output
messages), one member may take several tag values.  :func:`decodable` rewrites the
definitions reachable from a root so that msgspec can decode them:

- a member that takes several tag values becomes one definition a value;
- members that share a tag are merged into one (a property in several takes any of
  their schemas; it is required only if every member requires it);
- the members of a union that are not objects are grouped by JSON kind, and each group
  merged likewise (arrays by their items, strings by their enums);
- a union whose objects have no tag at all is merged into one object.

Every object refuses properties it does not declare, as the API does, and takes null
for a property it does not require (the API reads it as left out).  The tag a member
may leave out is reported (:attr:`Decodable.defaults`), so the caller can fill it in
before decoding.  Descriptions, examples and defaults are dropped: the models validate,
they fill nothing in.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

DROPPED = ("description", "examples", "example", "default", "deprecated", "title")
REF = "#/components/schemas/"
TAG = "type"
STRING_LIMITS = ("minLength", "maxLength", "pattern")  # a union's own, kept on its strings


@dataclass
class Decodable:
    """The rewritten definitions, and the tag each tagless-able union fills in."""

    defs: dict[str, Any]
    # definition of a union -> (the tag its tagless members take, by their keys)
    defaults: dict[str, dict[str, str]] = field(default_factory=dict)
    # a map's definition -> the most keys it takes (the models lose it in a union)
    map_limits: dict[str, int] = field(default_factory=dict)


def closure(defs: dict[str, Any], roots: list[str], prefix: str = REF) -> list[str]:
    """The names of the definitions reachable from ``roots`` (``$ref`` written
    ``prefix`` + name: the document's, or the rewritten ``#/$defs/``), sorted."""
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name not in seen:
            seen.add(name)
            stack += _refs(defs[name], prefix)
    return sorted(seen)


def _refs(node: Any, prefix: str) -> list[str]:
    if isinstance(node, dict):
        out = [node["$ref"].removeprefix(prefix)] if "$ref" in node else []
        return out + [r for k, v in node.items() if k != "$ref" for r in _refs(v, prefix)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v, prefix)]
    return []


def folded(defs: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """``node`` with its reference and ``allOf`` parts folded in (``defs``: the document's
    definitions)."""
    if "$ref" in node:
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return folded(defs, {**defs[node["$ref"].removeprefix(REF)], **rest})
    if "allOf" not in node:
        return node
    out: dict[str, Any] = {k: v for k, v in node.items() if k != "allOf"}
    for part in node["allOf"]:
        for key, value in folded(defs, part).items():
            if key == "properties":
                out["properties"] = {**out.get("properties", {}), **value}
            elif key == "required":
                out["required"] = sorted({*out.get("required", []), *value})
            else:
                out.setdefault(key, value)
    return out


def _anchored(node: Any, name: str) -> Any:
    """``node`` with its recursive references (``$recursiveRef: "#"``) naming ``name``."""
    if isinstance(node, dict):
        if node.get("$recursiveRef") == "#":
            return {"$ref": REF + name}
        return {k: _anchored(v, name) for k, v in node.items() if k != "$recursiveAnchor"}
    if isinstance(node, list):
        return [_anchored(v, name) for v in node]
    return node


class _Rewriter:
    def __init__(self, components: dict[str, Any]) -> None:
        self.src = {name: _anchored(node, name) for name, node in components.items()}
        self.defs: dict[str, Any] = {}
        self.defaults: dict[str, dict[str, str]] = {}
        self.inline: dict[str, Any] = {}
        self.map_limits: dict[str, int] = {}

    def resolved(self, node: dict[str, Any]) -> dict[str, Any]:
        return folded(self.src, node)

    # -- writing ----------------------------------------------------------------------
    def name_of(self, node: dict[str, Any]) -> str | None:
        return node["$ref"].removeprefix(REF) if "$ref" in node else None

    def define(self, name: str) -> dict[str, Any]:
        if name not in self.defs:
            self.defs[name] = {}  # placeholder: a cycle refers to it meanwhile
            out = self.schema(self.src[name], name)
            limit = _map_limit(out)
            if limit is not None:
                self.map_limits[name] = limit
                self.defs[name] = out
            elif _classless(out):  # written in place: a named alias would lose its limits
                del self.defs[name]
                self.inline[name] = out
            elif out != {"$ref": f"#/$defs/{name}"}:
                self.defs[name] = out
        if name in self.inline:
            return copy.deepcopy(self.inline[name])
        return {"$ref": f"#/$defs/{name}"}

    def schema(self, node: dict[str, Any], name: str = "") -> dict[str, Any]:
        if "allOf" in node:
            node = self.resolved(node)
        node = {k: v for k, v in node.items() if k not in DROPPED and not k.startswith("x-")}
        if "anyOf" in node or "oneOf" in node:
            return self.union(node, name)
        if "$ref" in node:
            return self.define(node["$ref"].removeprefix(REF))
        return self.plain(node, name)

    def plain(self, node: dict[str, Any], hint: str) -> dict[str, Any]:
        out = dict(node)
        if out.get("properties") == {}:  # an empty model: free-form, as a JSON schema is
            del out["properties"]
            out.pop("required", None)
            out.setdefault("additionalProperties", True)
        if "properties" in out:
            needed = set(out.get("required", ()))
            out["properties"] = {
                k: _or_null(self.schema(v, hint + _camel(k)), k in needed)
                for k, v in out["properties"].items()
            }
            out.setdefault("type", "object")
            if "additionalProperties" not in out:
                out["additionalProperties"] = False
        if isinstance(out.get("additionalProperties"), dict):
            out["additionalProperties"] = self.schema(out["additionalProperties"], hint + "Value")
        if isinstance(out.get("items"), dict):
            out["items"] = self.schema(out["items"], hint + "Item")
        if out.get("type") == "object" and "properties" not in out:
            out.setdefault("additionalProperties", True)
        out.pop("discriminator", None)
        return out

    def union(self, node: dict[str, Any], name: str) -> dict[str, Any]:
        key = node.get("discriminator", {}).get("propertyName", TAG)
        refs = {json.dumps(self.resolved(m), sort_keys=True): m for m in _flat(node, self)}
        members = list(refs.values())
        kinds: dict[str, list[dict[str, Any]]] = {}
        for m in members:
            kinds.setdefault(_kind(self.resolved(m)), []).append(m)
        out: list[dict[str, Any]] = []
        for kind, group in kinds.items():
            if kind == "object":
                whole = set(kinds) <= {"object", "null"}
                out.append(self.objects(group, name if whole else name + "Object", key))
            elif kind == "string":
                one = len(group) == 1
                text = (
                    self.schema(group[0], name)
                    if one
                    else _strings(list(map(self.resolved, group)))
                )
                out.append({**text, **{k: node[k] for k in STRING_LIMITS if k in node}})
            elif len(group) == 1:
                out.append(self.schema(group[0], name))
            elif kind == "array":
                items = {"anyOf": [self.resolved(g).get("items", {}) for g in group]}
                out.append({"type": "array", "items": self.schema(items, name + "Item")})
            else:
                out.append(self.schema(group[0], name))
        if len(out) == 1:
            return out[0]
        return {"anyOf": out}

    def objects(self, group: list[dict[str, Any]], name: str, key: str) -> dict[str, Any]:
        """One schema for the object members of a union: tagged by ``key``, or merged."""
        by_tag: dict[str, list[dict[str, Any]]] = {}
        tagless: list[dict[str, Any]] = []
        optional: dict[str, str] = {}
        for m in group:
            node = self.resolved(m)
            tags = _tags(node, key)
            if not tags:
                tagless.append(m)
                continue
            for tag in tags:
                by_tag.setdefault(tag, []).append(m)
            if key not in node.get("required", ()) and len(tags) == 1:
                optional[tags[0]] = ",".join(sorted(node.get("required", ())))
        if tagless and by_tag:
            raise ValueError(f"{name or 'a union'}: tagged and untagged objects in one union")
        if not by_tag:
            if len(tagless) == 1:
                return self.schema(tagless[0], name)
            return self.plain(_merge([self.resolved(m) for m in tagless]), name)
        if len(group) == 1:  # one object: its tag, if it has one, is no choice
            return self.schema(group[0], name)
        variants = [self.variant(tag, ms, key) for tag, ms in by_tag.items()]
        mapping = {tag: v["$ref"] for tag, v in zip(by_tag, variants, strict=True)}
        union = {"oneOf": variants, "discriminator": {"propertyName": key, "mapping": mapping}}
        # a named definition: the models tag its classes only when the union has a name
        name = name or "Or".join(v["$ref"].rsplit("/", 1)[1] for v in variants[:2])
        if name not in self.defs or not self.defs[name]:
            self.defs[name] = union
        if optional:
            if key != TAG:
                raise ValueError(f"{name}: a member may leave its {key!r} out")
            self.defaults[name] = optional
        return {"$ref": f"#/$defs/{name}"}

    def variant(self, tag: str, members: list[dict[str, Any]], key: str) -> dict[str, Any]:
        """The definition of the one class that carries ``tag``."""
        names = [self.name_of(m) for m in members]
        single = len(members) == 1 and names[0] is not None
        node = _merge([self.resolved(m) for m in members])
        if single and _tags(node, key) == [tag]:
            assert names[0] is not None
            return self.define(names[0])
        base = next((n for n in names if n), "") or _camel(tag)
        name = base if len(_tags(node, key)) == 1 and not single else f"{base}_{_camel(tag)}"
        if name in self.src and not single:
            name = f"{_camel(tag)}Merged"
        node["properties"] = {**node["properties"], key: {"type": "string", "const": tag}}
        node["required"] = sorted({*node.get("required", []), key})
        if name not in self.defs:
            self.defs[name] = {}
            self.defs[name] = self.plain(node, name)
        return {"$ref": f"#/$defs/{name}"}


def _flat(node: dict[str, Any], rw: _Rewriter) -> list[dict[str, Any]]:
    """The members of ``node``'s union, nested unions flattened, references kept."""
    out = []
    for member in node.get("anyOf") or node.get("oneOf") or []:
        target = rw.resolved(member)
        if ("anyOf" in target or "oneOf" in target) and "properties" not in target:
            out += _flat(target, rw)
        else:
            out.append(member)
    return out


def _or_null(schema: dict[str, Any], required: bool) -> dict[str, Any]:
    """An optional property takes null too: the API reads it as left out."""
    if required or not schema or {"type": "null"} in schema.get("anyOf", []):
        return schema
    if set(schema) == {"anyOf"}:
        return {"anyOf": [*schema["anyOf"], {"type": "null"}]}
    return {"anyOf": [schema, {"type": "null"}]}


def _map_limit(node: dict[str, Any]) -> int | None:
    """The most keys a map (or a map or null) takes, when it says."""
    for member in node.get("anyOf", [node]):
        if member.get("type") == "object" and "maxProperties" in member:
            return int(member["maxProperties"])
    return None


def _classless(node: Any) -> bool:
    """Whether ``node`` makes no class: no properties, references or tagged unions."""
    text = json.dumps(node)
    return '"properties"' not in text and '"$ref"' not in text


def _kind(node: dict[str, Any]) -> str:
    kind = node.get("type")
    if kind is None and ("properties" in node or "additionalProperties" in node):
        return "object"
    if kind == "integer":
        return "number"
    return str(kind or "any")


def _tags(node: dict[str, Any], key: str) -> list[str]:
    prop = node.get("properties", {}).get(key)
    if not isinstance(prop, dict):
        return []
    if "const" in prop:
        return [prop["const"]]
    for member in prop.get("anyOf", [prop]):
        if "enum" in member:
            return list(member["enum"])
        if "const" in member:
            return [member["const"]]
    return []


def _strings(group: list[dict[str, Any]]) -> dict[str, Any]:
    if any("enum" not in g and "const" not in g for g in group):
        return {"type": "string"}
    values: list[str] = []
    for g in group:
        for v in g.get("enum", [g.get("const")]):
            if v not in values:
                values.append(v)
    return {"type": "string", "enum": values}


def _merge(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """One object that takes what any of ``nodes`` takes."""
    if len(nodes) == 1:
        return copy.deepcopy(nodes[0])
    props: dict[str, list[Any]] = {}
    for node in nodes:
        for key, value in node.get("properties", {}).items():
            if value not in props.setdefault(key, []):
                props[key].append(value)
    required = set.intersection(*(set(n.get("required", ())) for n in nodes))
    return {
        "type": "object",
        "properties": {k: v[0] if len(v) == 1 else {"anyOf": v} for k, v in props.items()},
        "required": sorted(required),
    }


def _camel(tag: str) -> str:
    return "".join(p.capitalize() for p in tag.replace(".", "_").split("_"))


def decodable(components: dict[str, Any], roots: list[str]) -> Decodable:
    """The definitions reachable from ``roots``, rewritten for msgspec (module doc)."""
    rw = _Rewriter(copy.deepcopy(components))
    for root in roots:
        rw.define(root)
    return Decodable(
        dict(sorted(rw.defs.items())), dict(sorted(rw.defaults.items())), rw.map_limits
    )
