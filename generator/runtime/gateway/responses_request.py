"""A Chat Completions request as the Responses request sent upstream.

Every field is translated, acted on by the gateway (``stream``,
``stream_options``), or refused with a 400 that names it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import GatewayError, bad_request, unknown_parameter, unsupported

PASSED = (
    "temperature",
    "top_p",
    "parallel_tool_calls",
    "user",
    "metadata",
    "store",
    "presence_penalty",
    "frequency_penalty",
    "prompt_cache_key",
    "prompt_cache_retention",
    "safety_identifier",
    "service_tier",
)
REFUSED = {
    "stop": "the Responses API has no stop sequences",
    "seed": "the Responses API has no seed",
    "logit_bias": "the Responses API has no logit bias",
    "logprobs": "log probabilities are not carried through",
    "top_logprobs": "log probabilities are not carried through",
    "modalities": "only text is served",
    "audio": "only text is served",
    "prediction": "the Responses API has no predicted outputs",
    "web_search_options": "hosted tools are not served through this route",
    "functions": "use tools",
    "function_call": "use tool_choice",
}
GATEWAY = ("model", "messages", "stream", "stream_options", "n", "max_tokens")


def responses_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """The Responses body for a chat body; :class:`GatewayError` (400) for what cannot be."""
    model = body.get("model")
    if model is None:
        raise GatewayError(
            400, "'model' is required", code="missing_required_parameter", param="model"
        )
    if not isinstance(model, str) or not model:
        raise bad_request("'model' must be a non-empty string", "model")
    known = {*PASSED, *GATEWAY, "max_completion_tokens", "reasoning_effort", "response_format"}
    known |= {"verbosity", "tools", "tool_choice"}
    for name, value in body.items():
        if name in REFUSED:
            if value not in (None, False):
                raise unsupported(name, REFUSED[name])
        elif name not in known:
            raise unknown_parameter(name)
    if body.get("n") not in (None, 1):
        raise unsupported("n", "one choice is served per request")
    out: dict[str, Any] = {"model": model, "input": _input(body.get("messages")), "stream": True}
    for name in PASSED:
        if body.get(name) is not None:
            out[name] = body[name]
    limits = {body.get(k) for k in ("max_completion_tokens", "max_tokens")} - {None}
    if len(limits) > 1:
        raise bad_request("max_tokens and max_completion_tokens differ", "max_tokens")
    if limits:
        out["max_output_tokens"] = limits.pop()
    if body.get("reasoning_effort") is not None:
        out["reasoning"] = {"effort": body["reasoning_effort"]}
    text: dict[str, Any] = {}
    if body.get("response_format") is not None:
        text["format"] = _format(body["response_format"])
    if body.get("verbosity") is not None:
        text["verbosity"] = body["verbosity"]
    if text:
        out["text"] = text
    if body.get("tools") is not None:
        out["tools"] = _tools(body["tools"])
    if body.get("tool_choice") is not None:
        out["tool_choice"] = _tool_choice(body["tool_choice"], "tool_choice")
    return out


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise bad_request(f"{where!r} must be a non-empty string", where)
    return value


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise bad_request(f"{where!r} must be an object", where)
    return value


def _format(fmt: Any) -> dict[str, Any]:
    fmt = _object(fmt, "response_format")
    kind = fmt.get("type")
    if kind in ("text", "json_object"):
        return {"type": kind}
    if kind == "json_schema":
        schema = _object(fmt.get("json_schema"), "response_format.json_schema")
        out: dict[str, Any] = {"type": "json_schema"}
        out["name"] = _name(schema.get("name"), "response_format.json_schema.name")
        for key in ("schema", "strict", "description"):
            if schema.get(key) is not None:
                out[key] = schema[key]
        return out
    raise unsupported("response_format.type", f"{kind!r} is not a Responses text format")


def _tools(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise bad_request("'tools' must be an array", "tools")
    out = []
    for i, tool in enumerate(value):
        tool = _object(tool, f"tools[{i}]")
        kind = tool.get("type")
        if kind not in ("function", "custom"):
            raise unsupported(f"tools[{i}].type", f"{kind!r} tools are not served")
        inner = _object(tool.get(kind), f"tools[{i}].{kind}")
        entry: dict[str, Any] = {
            "type": kind,
            "name": _name(inner.get("name"), f"tools[{i}].{kind}.name"),
        }
        keys = (
            ("description", "parameters", "strict")
            if kind == "function"
            else ("description", "format")
        )
        for key in keys:
            if inner.get(key) is not None:
                entry[key] = inner[key]
        out.append(entry)
    return out


def _tool_choice(choice: Any, where: str) -> Any:
    if choice in ("auto", "none", "required"):
        return choice
    choice = _object(choice, where)
    kind = choice.get("type")
    if kind in ("function", "custom"):
        inner = _object(choice.get(kind), f"{where}.{kind}")
        return {"type": kind, "name": _name(inner.get("name"), f"{where}.{kind}.name")}
    if kind == "allowed_tools":
        allowed = _object(choice.get("allowed_tools"), f"{where}.allowed_tools")
        tools = allowed.get("tools")
        if not isinstance(tools, list):
            raise bad_request(f"'{where}.allowed_tools.tools' must be an array", where)
        return {
            "type": "allowed_tools",
            "mode": allowed.get("mode", "auto"),
            "tools": [
                _tool_choice(t, f"{where}.allowed_tools.tools[{i}]") for i, t in enumerate(tools)
            ],
        }
    raise unsupported(f"{where}.type", f"{kind!r} is not a tool choice")


def _input(messages: Any) -> list[dict[str, Any]]:
    if not isinstance(messages, list) or not messages:
        raise bad_request("'messages' must be a non-empty array of objects", "messages")
    out: list[dict[str, Any]] = []
    for i, msg in enumerate(messages):
        where = f"messages[{i}]"
        msg = _object(msg, where)
        role = msg.get("role")
        if msg.get("name") is not None:
            raise unsupported(f"{where}.name", "Responses input messages have no name")
        if role in ("system", "developer", "user"):
            out.append(
                {
                    "type": "message",
                    "role": role,
                    "content": _parts(msg.get("content"), where, role),
                }
            )
        elif role == "assistant":
            out += _assistant(msg, where)
        elif role == "tool":
            out.append(
                {
                    "type": "function_call_output",
                    "call_id": _name(msg.get("tool_call_id"), f"{where}.tool_call_id"),
                    "output": _plain(msg.get("content"), where),
                }
            )
        elif role == "function":
            raise unsupported(f"{where}.role", "function messages are deprecated; use tool")
        else:
            raise bad_request(f"'{where}.role' is not a chat role", f"{where}.role")
    return out


def _parts(content: Any, where: str, role: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}]
    if not isinstance(content, list):
        raise bad_request(f"'{where}.content' must be a string or an array", f"{where}.content")
    out: list[dict[str, Any]] = []
    for j, part in enumerate(content):
        at = f"{where}.content[{j}]"
        part = _object(part, at)
        kind = part.get("type")
        if kind == "text":
            out.append({"type": "input_text", "text": part.get("text", "")})
        elif kind == "image_url" and role == "user":
            image = _object(part.get("image_url"), f"{at}.image_url")
            out.append(
                {
                    "type": "input_image",
                    "image_url": _name(image.get("url"), f"{at}.image_url.url"),
                    "detail": image.get("detail") or "auto",
                }
            )
        elif kind == "file" and role == "user":
            file = _object(part.get("file"), f"{at}.file")
            entry: dict[str, Any] = {"type": "input_file"}
            for key in ("file_id", "file_data", "filename"):
                if file.get(key) is not None:
                    entry[key] = file[key]
            out.append(entry)
        else:
            raise unsupported(f"{at}.type", f"{kind!r} parts are not served in {role} messages")
    return out


def _plain(content: Any, where: str) -> str:
    if content is None:
        return ""
    return "".join(p["text"] for p in _parts(content, where, "tool"))


def _assistant(msg: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for key in ("reasoning_content", "reasoning"):
        text = msg.get(key)
        if isinstance(text, str) and text:
            out.append(
                {
                    "type": "reasoning",
                    "summary": [],
                    "content": [{"type": "reasoning_text", "text": text}],
                }
            )
    parts: list[dict[str, Any]] = []
    if msg.get("content") is not None:
        parts = [
            {"type": "output_text", "text": p["text"], "annotations": []}
            for p in _parts(msg["content"], where, "assistant")
        ]
    if msg.get("refusal"):
        parts.append({"type": "refusal", "refusal": str(msg["refusal"])})
    if parts:
        out.append({"type": "message", "role": "assistant", "content": parts})
    calls = msg.get("tool_calls") or []
    if not isinstance(calls, list):
        raise bad_request(f"'{where}.tool_calls' must be an array", f"{where}.tool_calls")
    for k, call in enumerate(calls):
        at = f"{where}.tool_calls[{k}]"
        call = _object(call, at)
        call_id = _name(call.get("id"), f"{at}.id")
        if call.get("type") == "custom":
            inner = _object(call.get("custom"), f"{at}.custom")
            out.append(
                {
                    "type": "custom_tool_call",
                    "call_id": call_id,
                    "name": _name(inner.get("name"), f"{at}.custom.name"),
                    "input": inner.get("input", ""),
                }
            )
        else:
            fn = _object(call.get("function"), f"{at}.function")
            out.append(
                {
                    "type": "function_call",
                    "call_id": call_id,
                    "name": _name(fn.get("name"), f"{at}.function.name"),
                    "arguments": fn.get("arguments", ""),
                }
            )
    return out
