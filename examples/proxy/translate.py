"""Request translation between the Chat Completions and Responses APIs.

A body whose fields have the wrong shape (``messages`` that is not an array of
objects, a tool without a string ``name``...) raises :class:`BadRequest`,
which the proxy answers with HTTP 400.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

SAMPLING = ("temperature", "top_p", "metadata", "parallel_tool_calls", "user")


class BadRequest(ValueError):
    """A request the proxy cannot translate; ``param`` names the offending field."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


def _objects(value: Any, where: str) -> list[Mapping[str, Any]]:
    """``value`` as a list of objects (None is empty); :class:`BadRequest` otherwise."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise BadRequest(f"'{where}' must be an array of objects", param=where)
    return value


def _object(value: Any, where: str) -> Mapping[str, Any]:
    """``value`` as an object (None is empty); :class:`BadRequest` otherwise."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise BadRequest(f"'{where}' must be an object", param=where)
    return value


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise BadRequest(f"'{where}' must be a non-empty string", param=where)
    return value


def _text(content: Any) -> str:
    """Chat message content (a string or a list of parts) as plain text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, Mapping) and "text" in p
        )
    return ""


def chat_to_responses_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """A /v1/chat/completions body as a streaming /v1/responses body."""
    out: dict[str, Any] = {"model": body.get("model"), "stream": True, "input": []}
    instructions = []
    for i, msg in enumerate(_objects(body.get("messages"), "messages")):
        role, text = msg.get("role"), _text(msg.get("content"))
        if role in ("system", "developer"):
            instructions.append(text)
        elif role == "tool":
            out["input"].append(
                {"type": "function_call_output", "call_id": msg.get("tool_call_id"), "output": text}
            )
        else:
            if text:
                out["input"].append({"type": "message", "role": role, "content": text})
            for j, call in enumerate(_objects(msg.get("tool_calls"), f"messages[{i}].tool_calls")):
                fn = _object(call.get("function"), f"messages[{i}].tool_calls[{j}].function")
                out["input"].append(
                    {
                        "type": "function_call",
                        "call_id": call.get("id"),
                        "name": fn.get("name"),
                        "arguments": fn.get("arguments", ""),
                    }
                )
    if instructions:
        out["instructions"] = "\n\n".join(instructions)
    tools = []
    for i, tool in enumerate(_objects(body.get("tools"), "tools")):
        fn = _object(tool.get("function"), f"tools[{i}].function")
        if tool.get("type") == "function" and fn.get("name"):
            tools.append(
                {
                    "type": "function",
                    "name": fn["name"],
                    "description": fn.get("description"),
                    "parameters": fn.get("parameters"),
                    "strict": fn.get("strict"),
                }
            )
    if tools:
        out["tools"] = tools
    if "tool_choice" in body:
        choice = body["tool_choice"]
        if isinstance(choice, Mapping) and "function" in choice:
            fn = _object(choice["function"], "tool_choice.function")
            choice = {"type": "function", "name": fn.get("name")}
        out["tool_choice"] = choice
    limit = body.get("max_completion_tokens", body.get("max_tokens"))
    if limit is not None:
        out["max_output_tokens"] = limit
    if body.get("reasoning_effort"):
        out["reasoning"] = {"effort": body["reasoning_effort"]}
    for key in SAMPLING:
        if key in body:
            out[key] = body[key]
    return out


def responses_to_chat_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """A /v1/responses body as a streaming /v1/chat/completions body."""
    messages: list[dict[str, Any]] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": body["instructions"]})
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    for item in _objects(items, "input"):
        kind = item.get("type", "message")
        if kind == "message":
            messages.append(
                {"role": item.get("role", "user"), "content": _text(item.get("content"))}
            )
        elif kind == "function_call":
            name = item.get("name")
            if item.get("namespace"):
                name = f"{item['namespace']}.{name}"
            call = {
                "id": item.get("call_id"),
                "type": "function",
                "function": {"name": name, "arguments": item.get("arguments", "")},
            }
            if messages and messages[-1]["role"] == "assistant" and "tool_calls" in messages[-1]:
                messages[-1]["tool_calls"].append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": item.get("call_id"),
                    "content": output if isinstance(output, str) else json.dumps(output),
                }
            )
    out: dict[str, Any] = {
        "model": body.get("model"),
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    tools = []
    for i, tool in enumerate(_objects(body.get("tools"), "tools")):
        if tool.get("type") == "function":
            tools.append(_chat_tool(_name(tool.get("name"), f"tools[{i}].name"), tool))
        elif tool.get("type") == "namespace":
            space = _name(tool.get("name"), f"tools[{i}].name")
            for j, sub in enumerate(_objects(tool.get("tools"), f"tools[{i}].tools")):
                if sub.get("type") == "function":
                    name = _name(sub.get("name"), f"tools[{i}].tools[{j}].name")
                    tools.append(_chat_tool(f"{space}.{name}", sub))
    if tools:
        out["tools"] = tools
    if body.get("max_output_tokens") is not None:
        out["max_completion_tokens"] = body["max_output_tokens"]
    effort = _object(body.get("reasoning"), "reasoning").get("effort")
    if effort:
        out["reasoning_effort"] = effort
    for key in SAMPLING:
        if key in body:
            out[key] = body[key]
    return out


def _chat_tool(name: str, tool: Mapping[str, Any]) -> dict[str, Any]:
    fn: dict[str, Any] = {"name": name, "parameters": tool.get("parameters") or {"type": "object"}}
    if tool.get("description"):
        fn["description"] = tool["description"]
    return {"type": "function", "function": fn}
