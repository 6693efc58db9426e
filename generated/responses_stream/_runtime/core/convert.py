"""Conversions from Chat Completions shapes: usage, logprobs, and tool names."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from .tool_names import ToolNames

_decode = msgspec.json.Decoder().decode


def loads(text: str) -> Any:
    """``json.loads``, several times faster on ordinary input.

    msgspec parses; whatever it refuses (``NaN``, numbers beyond float range, lone
    surrogate escapes, or broken JSON) goes to ``json.loads``, so the result, or the
    ``ValueError`` raised, is always the one ``json.loads`` gives.
    """
    try:
        return _decode(text)
    except Exception:
        return json.loads(text)


MAX_TOKENS = 2**63 - 1  # the largest count a 64-bit consumer can hold


def _int(value: Any) -> int:
    """A token count: a non-negative int (or integral float) up to ``MAX_TOKENS``, else 0."""
    if type(value) is float and value.is_integer():
        value = int(value)
    if type(value) is not int or value < 0 or value > MAX_TOKENS:
        return 0
    return value


def _map(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a mapping, else an empty one (usage details of the wrong shape)."""
    return value if isinstance(value, Mapping) else {}


def _total(value: Any, inp: int, out: int) -> int:
    return _int(value) or min(inp + out, MAX_TOKENS)


def usage_from_chat(usage: Mapping[str, Any] | None) -> dict[str, Any]:
    """Chat ``usage`` as Responses usage, every detail present, zero where unknown.

    Anything of the wrong shape counts as unknown: details that are not objects, counts
    that are not non-negative integers (``-1``, ``"5"``, ``NaN``) or do not fit 64 bits.
    """
    u = _map(usage)
    prompt = _map(u.get("prompt_tokens_details"))
    completion = _map(u.get("completion_tokens_details"))
    inp, out = _int(u.get("prompt_tokens")), _int(u.get("completion_tokens"))
    total = _total(u.get("total_tokens"), inp, out)
    return {
        "input_tokens": inp,
        "input_tokens_details": {
            "cached_tokens": _int(prompt.get("cached_tokens", u.get("prompt_cache_hit_tokens"))),
            "cache_write_tokens": _int(
                prompt.get("cache_write_tokens", prompt.get("cache_creation_tokens"))
            ),
        },
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": _int(completion.get("reasoning_tokens"))},
        "total_tokens": total,
    }


def normalize_usage(usage: Mapping[str, Any] | None) -> dict[str, Any]:
    """Usage in either the Responses or the chat shape, as complete Responses usage."""
    u = _map(usage)
    if "input_tokens" not in u and "output_tokens" not in u:
        return usage_from_chat(u)
    inp = _map(u.get("input_tokens_details"))
    out = _map(u.get("output_tokens_details"))
    i, o = _int(u.get("input_tokens")), _int(u.get("output_tokens"))
    return {
        "input_tokens": i,
        "input_tokens_details": {
            "cached_tokens": _int(inp.get("cached_tokens")),
            "cache_write_tokens": _int(inp.get("cache_write_tokens")),
        },
        "output_tokens": o,
        "output_tokens_details": {"reasoning_tokens": _int(out.get("reasoning_tokens"))},
        "total_tokens": _total(u.get("total_tokens"), i, o),
    }


def _bytes(value: Any) -> list[int]:
    """A token's UTF-8 bytes: the ints 0-255 of a list; anything else is left out."""
    if not isinstance(value, list):
        return []
    return [b for b in value if type(b) is int and 0 <= b <= 255]


LOGPROB_FLOOR = -9999.0
"""What a ``-Infinity`` logprob becomes: the floor OpenAI itself reports."""


def _logprob(value: Any) -> float | None:
    """A finite logprob, ``-Infinity`` as ``LOGPROB_FLOOR``; None for anything else."""
    if type(value) is int:
        value = float(value) if abs(value) < 2**53 else None
    if type(value) is not float or math.isnan(value) or value == math.inf:
        return None
    return LOGPROB_FLOOR if value == -math.inf else value


def _token(tok: Mapping[str, Any]) -> dict[str, Any] | None:
    logprob = _logprob(tok.get("logprob"))
    token = tok.get("token")
    if logprob is None or not isinstance(token, str):
        return None
    return {"token": token, "logprob": logprob, "bytes": _bytes(tok.get("bytes"))}


def logprobs_from_chat(logprobs: Any) -> list[dict[str, Any]]:
    """A chat choice's ``logprobs.content`` as Responses ``Logprob`` objects.

    Malformed logprobs never fail the stream (the text they annotate is what matters):
    a ``logprobs`` or ``content`` of the wrong shape gives none, and a token entry (or a
    ``top_logprobs`` entry) that is not an object, whose ``token`` is not a string or
    whose ``logprob`` is not a number (a string, ``NaN``, ``+Infinity``) is left out;
    ``-Infinity`` becomes ``LOGPROB_FLOOR``.  Bytes outside 0-255 are left out.
    """
    if not isinstance(logprobs, Mapping):
        return []
    content = logprobs.get("content")
    out = []
    for tok in content if isinstance(content, list) else []:
        entry = _token(tok) if isinstance(tok, Mapping) else None
        if entry is None:
            continue
        top = tok.get("top_logprobs")
        entry["top_logprobs"] = [
            t
            for t in (
                _token(t) if isinstance(t, Mapping) else None
                for t in (top if isinstance(top, list) else [])
            )
            if t is not None
        ]
        out.append(entry)
    return out


def echoed(given: Mapping[str, Any], fill: Mapping[str, Any]) -> dict[str, Any]:
    """An echoed request object (``text``, ``reasoning``) as the response schema takes
    it: the ``fill``'s keys where the request left them out or null, its other null keys
    left out, and a ``json_schema`` format with its ``description`` (null when not given)
    and ``strict`` (false when not given)."""
    out = {**copy.deepcopy(dict(fill)), **{k: v for k, v in given.items() if v is not None}}
    fmt = out.get("format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        out["format"] = {"description": None, **fmt, "strict": bool(fmt.get("strict"))}
    return out


def function_tools(tools: Any) -> list[dict[str, Any]]:
    """Request tools as complete function tools; namespaces flatten to ``namespace.name``."""
    out: list[dict[str, Any]] = []
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, Mapping):
            continue
        nested = tool.get("type") == "namespace"
        for t in (tool.get("tools") or []) if nested else [tool]:
            if isinstance(t, Mapping) and t.get("type") == "function" and "name" in t:
                out.append(
                    {
                        "type": "function",
                        "name": f"{tool['name']}.{t['name']}" if nested else t["name"],
                        "description": t.get("description"),
                        "parameters": t.get("parameters"),
                        "strict": t.get("strict"),
                    }
                )
    return out


@dataclass(frozen=True)
class Tool:
    """A tool the model may call, as the request declared it."""

    kind: str  # "function", "custom", "tool_search" (client-run) or a typed tool's kind
    name: str
    namespace: str | None = None


# Client-run typed tools: the request's tool type -> the kind a chat model calls it as (a
# function of that name, its arguments the action; the chat routes name the item a
# call of each kind becomes).
TYPED_TOOLS = {
    "shell": "shell",
    "local_shell": "local_shell",
    "apply_patch": "apply_patch",
    "computer": "computer",
    "computer_use_preview": "computer",
}


def tool_index(request: Mapping[str, Any] | None) -> dict[str, Tool]:
    """Called name -> tool (:func:`declared_tools`), each tool also found under its wire
    name (``tool_names``), the name a chat upstream was given."""
    out = declared_tools(request)
    names = ToolNames(out)
    for called, tool in list(out.items()):
        out.setdefault(names.wire(called), tool)
    return out


def declared_tools(request: Mapping[str, Any] | None) -> dict[str, Tool]:
    """Called name -> tool, in the request's order.  Namespaced tools are called as
    ``namespace.name``; a client-run ``tool_search`` tool is called as ``tool_search``.
    Both directions of the gateway build their ``ToolNames`` from these names."""
    out: dict[str, Tool] = {}
    tools = request.get("tools") if isinstance(request, Mapping) else None
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, Mapping):
            continue
        kind = tool.get("type")
        if kind in ("function", "custom") and isinstance(tool.get("name"), str):
            out[tool["name"]] = Tool(kind, tool["name"])
        elif kind == "tool_search" and tool.get("execution") == "client":
            out["tool_search"] = Tool("tool_search", "tool_search")
        elif kind == "namespace" and isinstance(tool.get("name"), str):
            subs = tool.get("tools")
            for sub in subs if isinstance(subs, list) else []:
                if isinstance(sub, Mapping) and isinstance(sub.get("name"), str):
                    sub_kind = "custom" if sub.get("type") == "custom" else "function"
                    called = f"{tool['name']}.{sub['name']}"
                    out[called] = Tool(sub_kind, sub["name"], tool["name"])
    for tool in tools if isinstance(tools, list) else []:
        given = tool.get("type") if isinstance(tool, Mapping) else None
        kind = TYPED_TOOLS.get(given) if isinstance(given, str) else None
        if kind is not None and all(t.kind != kind for t in out.values()):
            called = typed_name(kind, out)
            out[called] = Tool(kind, called)
    return out


def typed_name(kind: str, taken: Mapping[str, Any]) -> str:
    """The name a typed tool is called as: its kind, unless a tool of the request has that
    name (then ``KIND_tool``, ``KIND_tool_2``...)."""
    name, n = kind, 1
    while name in taken:
        n += 1
        name = f"{kind}_tool" if n == 2 else f"{kind}_tool_{n - 1}"
    return name


def resolve_tool(index: Mapping[str, Tool], called: str, kind: str = "function") -> Tool:
    """The declared tool for a called name; an undeclared name stays as called."""
    return index.get(called) or Tool(kind, called)
