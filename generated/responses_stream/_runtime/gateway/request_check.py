"""A request body checked against its route's request model, in one typed decode.

The models are generated from the vendored schemas and ``spec/requests/``
(``responses_stream._requests``): every type, range, enum, length and key limit they
state is checked, and an object refuses keys it does not declare.  What they refuse
is a 400 in OpenAI's error shape that names the field's path (``input[2].content[0]``);
a field whose fate is ``refused`` is a 400 unless its value is one its row still takes,
and so is a key the table refuses wherever it is set.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from typing import Any

import msgspec

from ..._requests import MODELS, ROUTES
from .errors import GatewayError, bad_request, missing_parameter, unknown_parameter, unsupported

# msgspec's messages: "<what> - at `$.a.b[0]`", or "<what>" at the top.
_AT = re.compile(r"^(?P<what>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
_FIELD = re.compile(r"^Object (?P<kind>missing required|contains unknown) field `(?P<name>[^`]*)`")
_BOUND = re.compile(r"^Expected `(?P<type>\w+)`(?: of length)? (?P<op>[<>]=?) (?P<n>[-\d.e+]+)$")
_BOUND_CODES = {
    ("float", ">"): "decimal_below_min_value",
    ("float", "<"): "decimal_above_max_value",
    ("int", ">"): "integer_below_min_value",
    ("int", "<"): "integer_above_max_value",
    ("str", ">"): "string_below_min_length",
    ("str", "<"): "string_above_max_length",
    ("array", ">"): "array_below_min_length",
    ("array", "<"): "array_above_max_length",
    ("object", ">"): "object_below_min_properties",
    ("object", "<"): "object_above_max_properties",
}


def check_request(body: Mapping[str, Any], route: str) -> Any:
    """``body`` as its route's request model; a :class:`GatewayError` (400) for what the
    schemas or the table of fates refuse."""
    table = ROUTES[route]
    try:
        typed = msgspec.convert(_tagged(body, table["tag_defaults"]), MODELS[route])
    except msgspec.ValidationError as exc:
        raise schema_error(str(exc)) from None
    for name, row in table["fields"].items():
        if row["fate"] == "refused":
            value = body.get(name)
            allow = row.get("allow", [])
            if value is not None and value not in allow:
                raise unsupported(_refused_at(name, value, allow), row["why"])
    for name, value in body.items():
        _check_entries(value, table, name)
    return typed


def _refused_at(name: str, value: Any, allow: list[Any]) -> str:
    """The refused field, or the first entry of it no allowed list has (``modalities[1]``)."""
    if isinstance(value, list) and allow and all(isinstance(a, list) for a in allow):
        taken = [entry for a in allow for entry in a]
        return next((f"{name}[{i}]" for i, v in enumerate(value) if v not in taken), name)
    return name


def translated(body: Mapping[str, Any], route: str) -> dict[str, Any]:
    """The fields of ``body`` whose fate on ``route`` is to be translated (set, not null)."""
    fields = ROUTES[route]["fields"]
    return {k: v for k, v in body.items() if v is not None and fields[k]["fate"] == "translated"}


def translate_rows(
    body: Mapping[str, Any],
    route: str,
    out: dict[str, Any],
    converters: Mapping[str, Callable[[Any, Any], None]],
    built: Collection[str],
) -> None:
    """Each field of ``body`` its route translates, put in ``out`` in the table's order:
    by the converter its row names (``by``), else as it is (or its ``from`` key) at its
    ``to`` path (``text.verbosity``); a field whose ``to`` is in ``built`` is the
    caller's to build, one whose row says ``with`` is sent only beside that field.  Two
    fields sent to one path must agree."""
    senders: dict[str, str] = {}
    for name, row in ROUTES[route]["fields"].items():
        value = body.get(name)
        if value is None or row["fate"] != "translated" or row["to"] in built:
            continue
        if "with" in row and row["with"] not in out:
            continue  # it asks for nothing without that field (top_logprobs, logprobs)
        if "by" in row:
            converters[row["by"]](value, out)
            continue
        value = value.get(row["from"]) if "from" in row else value
        if value is None:
            continue
        *parents, last = row["to"].split(".")
        target = out
        for key in parents:
            target = target.setdefault(key, {})
        first = senders.setdefault(row["to"], name)
        if first != name and target[last] != value:
            raise bad_request(f"'{name}' and '{first}' differ; give one of them", name)
        target[last] = value


def _check_entries(value: Any, table: Mapping[str, Any], where: str) -> None:
    """A 400 for a key the table refuses (``key``, or ``tag.key`` on entries of that
    type or role) set, not null nor false, on an entry of the list ``value`` (an item, a
    message, a part, a tool) or of the lists inside it, at any depth; and for an entry
    that sets none of the keys its type ``needs``."""
    if not isinstance(value, list):
        return
    names, keys = _KEYS[id(table)]
    needs = table["needs"]
    for i, entry in enumerate(value):
        if not isinstance(entry, dict):
            continue
        tag = entry.get("type") or entry.get("role")
        if not names.isdisjoint(entry):  # one of the refused keys is there: which, set?
            for head, name, why in keys:
                if (not head or head == tag) and entry.get(name) not in (None, False):
                    raise unsupported(f"{where}[{i}].{name}", why)
        needed = needs.get(tag) if needs else None
        if needed and all(_at(entry, name) is None for name in needed):
            param = f"{where}[{i}].{needed[0]}"
            more = f" (or {', '.join(needed[1:])})" if needed[1:] else ""
            message = f"Missing required parameter: '{param}'{more}."
            raise GatewayError(400, message, code="missing_required_parameter", param=param)
        for name, inner in entry.items():
            if isinstance(inner, list):
                _check_entries(inner, table, f"{where}[{i}].{name}")


# each route's refused keys taken apart once: their names, and (the tag or "", the key, why)
_KEYS = {
    id(table): (
        frozenset(key.rpartition(".")[2] for key in table["keys"]),
        tuple((*key.rpartition(".")[::2], why) for key, why in table["keys"].items()),
    )
    for table in ROUTES.values()
}


def _at(entry: Mapping[str, Any], path: str) -> Any:
    """The value at the dotted ``path`` in ``entry`` (None if any step is missing)."""
    for key in path.split("."):
        entry = entry.get(key) if isinstance(entry, dict) else None  # type: ignore[assignment]
    return entry


def _tagged(body: Mapping[str, Any], defaults: Mapping[str, Any]) -> Mapping[str, Any]:
    """``body`` with the tags its list members left out filled in (an input item with a
    role and no type is a message); ``body`` itself when none is missing."""
    out: dict[str, Any] | None = None
    for name, rules in defaults.items():
        members = body.get(name)
        if not isinstance(members, list):
            continue
        filled = [_with_tag(m, rules) for m in members]
        if any(f is not m for f, m in zip(filled, members, strict=True)):
            out = out if out is not None else dict(body)
            out[name] = filled
    return body if out is None else out


def _with_tag(member: Any, rules: list[list[Any]]) -> Any:
    """``member`` with the tag of the first rule whose keys it has all of, else of the
    first whose keys it has any of (so that the missing key is the one named)."""
    if not isinstance(member, dict) or member.get("type") is not None:
        return member
    for test in (all, any):
        for tag, keys in rules:
            if test(k in member for k in keys):
                return {**member, "type": tag}
    return member


def schema_error(message: str) -> GatewayError:
    """The 400 for one msgspec validation message, in OpenAI's words and codes."""
    found = _AT.match(message)
    what, path = (found["what"], found["path"] or "") if found else (message, "")
    param = _param(path)
    field = _FIELD.match(what)
    if field:
        name = f"{param}.{field['name']}" if param else field["name"]
        if field["kind"] == "contains unknown":
            return unknown_parameter(name)
        return missing_parameter(name)
    said = what[:1].lower() + what[1:]
    bound = _BOUND.match(what)
    if bound:
        code = _BOUND_CODES.get((bound["type"], bound["op"][0]), "invalid_value")
        return GatewayError(400, f"Invalid '{param}': {said}.", code=code, param=param)
    if " matching regex " in what:
        return GatewayError(400, f"Invalid '{param}': {said}.", code="invalid_value", param=param)
    if what.startswith("Invalid enum value") or what.startswith("Invalid value"):
        value = what.split(" ", 3)[-1] if what.startswith("Invalid enum") else what[14:]
        return GatewayError(
            400,
            f"Invalid value for '{param}': {value} is not one it takes.",
            code="invalid_value",
            param=param,
        )
    if what.startswith("Expected"):
        return GatewayError(
            400, f"Invalid type for '{param}': {said}.", code="invalid_type", param=param
        )
    return GatewayError(400, f"Invalid '{param}': {what}.", code="invalid_value", param=param)


def _param(path: str) -> str:
    """``$.input[2].content[0]`` as OpenAI names it: ``input[2].content[0]``; a map's key
    (msgspec's ``[...]``) is left out, naming the map."""
    return path.removeprefix(".").replace("[...]", "")
