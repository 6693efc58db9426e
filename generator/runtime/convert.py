"""Conversions from Chat Completions shapes: usage, logprobs, and tool names."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

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


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def usage_from_chat(usage: Mapping[str, Any] | None) -> dict[str, Any]:
    """Chat ``usage`` as Responses usage, every detail present, zero where unknown."""
    u = usage or {}
    prompt = u.get("prompt_tokens_details") or {}
    completion = u.get("completion_tokens_details") or {}
    inp, out = _int(u.get("prompt_tokens")), _int(u.get("completion_tokens"))
    total = _int(u.get("total_tokens")) or inp + out
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
    u = usage or {}
    if "input_tokens" not in u and "output_tokens" not in u:
        return usage_from_chat(u)
    inp = u.get("input_tokens_details") or {}
    out = u.get("output_tokens_details") or {}
    i, o = _int(u.get("input_tokens")), _int(u.get("output_tokens"))
    return {
        "input_tokens": i,
        "input_tokens_details": {
            "cached_tokens": _int(inp.get("cached_tokens")),
            "cache_write_tokens": _int(inp.get("cache_write_tokens")),
        },
        "output_tokens": o,
        "output_tokens_details": {"reasoning_tokens": _int(out.get("reasoning_tokens"))},
        "total_tokens": _int(u.get("total_tokens")) or i + o,
    }


def _bytes(value: Any) -> list[int]:
    return [b for b in value if isinstance(b, int)] if isinstance(value, list) else []


def logprobs_from_chat(logprobs: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """A chat choice's ``logprobs.content`` as Responses ``Logprob`` objects."""
    if not logprobs:
        return []
    out = []
    for tok in logprobs.get("content") or []:
        if not isinstance(tok, Mapping):
            continue
        out.append(
            {
                "token": str(tok.get("token", "")),
                "logprob": float(tok.get("logprob", 0.0)),
                "bytes": _bytes(tok.get("bytes")),
                "top_logprobs": [
                    {
                        "token": str(t.get("token", "")),
                        "logprob": float(t.get("logprob", 0.0)),
                        "bytes": _bytes(t.get("bytes")),
                    }
                    for t in tok.get("top_logprobs") or []
                    if isinstance(t, Mapping)
                ],
            }
        )
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

    kind: str  # "function" or "custom"
    name: str
    namespace: str | None = None


def tool_index(request: Mapping[str, Any] | None) -> dict[str, Tool]:
    """Called name -> tool.  Namespaced tools are called as ``namespace.name``."""
    out: dict[str, Tool] = {}
    for tool in (request or {}).get("tools") or []:
        if not isinstance(tool, Mapping):
            continue
        kind = tool.get("type")
        if kind in ("function", "custom") and isinstance(tool.get("name"), str):
            out[tool["name"]] = Tool(kind, tool["name"])
        elif kind == "namespace" and isinstance(tool.get("name"), str):
            for sub in tool.get("tools") or []:
                if isinstance(sub, Mapping) and isinstance(sub.get("name"), str):
                    sub_kind = "custom" if sub.get("type") == "custom" else "function"
                    called = f"{tool['name']}.{sub['name']}"
                    out[called] = Tool(sub_kind, sub["name"], tool["name"])
    return out


def resolve_tool(index: Mapping[str, Tool], called: str, kind: str = "function") -> Tool:
    """The declared tool for a called name; an undeclared name stays as called."""
    return index.get(called) or Tool(kind, called)
