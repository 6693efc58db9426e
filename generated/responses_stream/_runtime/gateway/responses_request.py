"""A Chat Completions request as the Responses request sent upstream.

Every field is translated, left to the caller (``CALLER``), accepted with no effect
for a stated reason (``NO_EFFECT``), or refused (``REFUSED``) with a 400 that names it.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from typing import Any

from .errors import GatewayError, bad_request, unknown_parameter, unsupported
from .items import (
    ID_PREFIXES,
    as_boolean,
    as_count,
    as_metadata,
    as_name,
    as_number,
    as_object,
    as_objects,
    as_string,
    check_keys,
    require_model,
)

# Body fields the caller acts on; this module produces nothing for them.
CALLER = {
    "stream": "how the gateway answers; the upstream is always streamed",
    "stream_options": "include_usage: whether the gateway's stream ends with usage",
}
# Accepted with no effect on the Responses request, and why.
NO_EFFECT = {
    "n": "1 or null only: one choice is served",
    "top_logprobs": "without logprobs: true, none are asked for",
    "modalities": "['text'] or null only: text is what is served",
    "stream_options.include_obfuscation": "the gateway's chunks carry no obfuscation",
}
# Fields refused whenever they are set, and why.
REFUSED = {
    "stop": "the Responses API has no stop sequences",
    "seed": "the Responses API has no seed",
    "logit_bias": "the Responses API has no logit bias",
    "audio": "only text is served",
    "prediction": "the Responses API has no predicted outputs",
    "web_search_options": "hosted tools are not served through this route",
    "functions": "deprecated: use tools",
    "function_call": "deprecated: use tool_choice",
}
LOGPROBS = "message.output_text.logprobs"  # the include that asks for them
MAX_TOP_LOGPROBS = 20

# Message fields refused whenever they are set, and why.
REFUSED_KEYS = {
    "name": "Responses input messages have no name",
    "audio": "only text is served",
    "function_call": "deprecated: use tool_calls",
    "prompt_cache_breakpoint": "Responses content parts have no cache breakpoints",
}
MESSAGE_KEYS = {
    "system": ("role", "content"),
    "developer": ("role", "content"),
    "user": ("role", "content"),
    "assistant": ("role", "content", "refusal", "tool_calls", "reasoning_content", "reasoning"),
    "tool": ("role", "content", "tool_call_id"),
}
ROLE_PARTS = {"user": ("text", "image_url", "file"), "assistant": ("text", "refusal")}
PART_KEYS = {
    "text": ("type", "text"),
    "image_url": ("type", "image_url"),
    "file": ("type", "file"),
    "refusal": ("type", "refusal"),
}


def responses_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """The Responses body for the chat ``body``; a 400 for what cannot be sent."""
    model = require_model(body.get("model"))
    fields: dict[str, Any] = {}
    for name, value in body.items():
        if name not in FIELDS:
            raise unknown_parameter(name)
        if value is not None:
            FIELDS[name](value, fields)
    if "include" not in fields:  # top_logprobs asks for nothing without logprobs: true
        fields.pop("top_logprobs", None)
    return {"model": model, "input": _input(body.get("messages")), "stream": True, **fields}


def _check_keys(obj: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    check_keys(obj, allowed, where, REFUSED_KEYS)


# -- body fields ------------------------------------------------------------------------
Field = Callable[[Any, dict[str, Any]], None]


def _passed(name: str, check: Callable[[Any, str], Any]) -> Field:
    """A field sent as it is, once ``check`` passes it."""

    def put(value: Any, out: dict[str, Any]) -> None:
        out[name] = check(value, name)

    return put


def _refused(name: str) -> Field:
    def refuse(value: Any, out: dict[str, Any]) -> None:
        raise unsupported(name, REFUSED[name])

    return refuse


def _nothing(value: Any, out: dict[str, Any]) -> None:
    """A field acted on elsewhere (by the caller, or read directly)."""


def _stream_options(value: Any, out: dict[str, Any]) -> None:
    options = as_object(value, "stream_options")
    check_keys(options, ("include_usage", "include_obfuscation"), "stream_options")
    for key, flag in options.items():
        if flag is not None:
            as_boolean(flag, f"stream_options.{key}")


def _n(value: Any, out: dict[str, Any]) -> None:
    if as_count(value, "n") > 1:
        raise unsupported("n", "one choice is served per request")


def _logprobs(value: Any, out: dict[str, Any]) -> None:
    if as_boolean(value, "logprobs"):
        out["include"] = [LOGPROBS]


def _top_logprobs(value: Any, out: dict[str, Any]) -> None:
    count = as_count(value, "top_logprobs", least=0)
    if count > MAX_TOP_LOGPROBS:
        raise bad_request(f"'top_logprobs' must be at most {MAX_TOP_LOGPROBS}", "top_logprobs")
    out["top_logprobs"] = count


def _modalities(value: Any, out: dict[str, Any]) -> None:
    if not isinstance(value, list) or not all(isinstance(m, str) for m in value):
        raise bad_request("'modalities' must be an array of strings", "modalities")
    for i, modality in enumerate(value):
        if modality != "text":
            raise unsupported(f"modalities[{i}]", "only text is served")


def _max_tokens(name: str) -> Field:
    """``max_completion_tokens`` or (the older name) ``max_tokens``: the output limit."""

    def put(value: Any, out: dict[str, Any]) -> None:
        limit = as_count(value, name)
        if out.setdefault("max_output_tokens", limit) != limit:
            raise bad_request(
                "'max_tokens' and 'max_completion_tokens' differ; give one of them", "max_tokens"
            )

    return put


def _reasoning_effort(value: Any, out: dict[str, Any]) -> None:
    out["reasoning"] = {"effort": as_string(value, "reasoning_effort")}


def _verbosity(value: Any, out: dict[str, Any]) -> None:
    out.setdefault("text", {})["verbosity"] = as_string(value, "verbosity")


def _response_format(value: Any, out: dict[str, Any]) -> None:
    out.setdefault("text", {})["format"] = _format(as_object(value, "response_format"))


def _format(fmt: Mapping[str, Any]) -> dict[str, Any]:
    kind = fmt.get("type")
    if kind in ("text", "json_object"):
        check_keys(fmt, ("type",), "response_format")
        return {"type": kind}
    if kind != "json_schema":
        raise unsupported("response_format.type", f"{kind!r} is not a Responses text format")
    check_keys(fmt, ("type", "json_schema"), "response_format")
    where = "response_format.json_schema"
    spec = as_object(fmt.get("json_schema"), where)
    check_keys(spec, ("name", "schema", "strict", "description"), where)
    out: dict[str, Any] = {
        "type": "json_schema",
        "name": as_name(spec.get("name"), f"{where}.name"),
    }
    if spec.get("schema") is not None:
        out["schema"] = dict(as_object(spec["schema"], f"{where}.schema"))
    if spec.get("strict") is not None:
        out["strict"] = as_boolean(spec["strict"], f"{where}.strict")
    if spec.get("description") is not None:
        out["description"] = as_string(spec["description"], f"{where}.description")
    return out


def _tools(value: Any, out: dict[str, Any]) -> None:
    out["tools"] = [_tool(tool, f"tools[{i}]") for i, tool in enumerate(as_objects(value, "tools"))]


def _tool(tool: Mapping[str, Any], where: str) -> dict[str, Any]:
    kind = tool.get("type")
    if kind == "function":
        return _function_tool(tool, where)
    if kind == "custom":
        return _custom_tool(tool, where)
    raise unsupported(f"{where}.type", f"{kind!r} tools are not served")


def _function_tool(tool: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A chat function tool; ``strict`` is sent false when unset, chat's default."""
    check_keys(tool, ("type", "function"), where)
    at = f"{where}.function"
    fn = as_object(tool.get("function"), at)
    check_keys(fn, ("name", "description", "parameters", "strict"), at)
    out: dict[str, Any] = {"type": "function", "name": as_name(fn.get("name"), f"{at}.name")}
    if fn.get("description") is not None:
        out["description"] = as_string(fn["description"], f"{at}.description")
    params = fn.get("parameters")
    out["parameters"] = (
        {"type": "object", "properties": {}}
        if params is None
        else dict(as_object(params, f"{at}.parameters"))
    )
    strict = fn.get("strict")
    out["strict"] = False if strict is None else as_boolean(strict, f"{at}.strict")
    return out


def _custom_tool(tool: Mapping[str, Any], where: str) -> dict[str, Any]:
    check_keys(tool, ("type", "custom"), where)
    at = f"{where}.custom"
    custom = as_object(tool.get("custom"), at)
    check_keys(custom, ("name", "description", "format"), at)
    out: dict[str, Any] = {"type": "custom", "name": as_name(custom.get("name"), f"{at}.name")}
    if custom.get("description") is not None:
        out["description"] = as_string(custom["description"], f"{at}.description")
    if custom.get("format") is not None:
        out["format"] = _custom_format(as_object(custom["format"], f"{at}.format"), f"{at}.format")
    return out


def _custom_format(fmt: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A chat custom tool format as the Responses one (its grammar flattened)."""
    if fmt.get("type") == "text":
        check_keys(fmt, ("type",), where)
        return {"type": "text"}
    if fmt.get("type") == "grammar":
        check_keys(fmt, ("type", "grammar"), where)
        grammar = as_object(fmt.get("grammar"), f"{where}.grammar")
        check_keys(grammar, ("definition", "syntax"), f"{where}.grammar")
        return {
            "type": "grammar",
            "definition": as_string(grammar.get("definition"), f"{where}.grammar.definition"),
            "syntax": as_name(grammar.get("syntax"), f"{where}.grammar.syntax"),
        }
    raise bad_request(f"'{where}.type' must be 'text' or 'grammar'", f"{where}.type")


def _tool_choice(value: Any, out: dict[str, Any]) -> None:
    if value in ("auto", "none", "required"):
        out["tool_choice"] = value
        return
    if isinstance(value, str) or not isinstance(value, Mapping):
        raise bad_request(
            "'tool_choice' must be 'auto', 'none', 'required' or an object", "tool_choice"
        )
    if value.get("type") != "allowed_tools":
        out["tool_choice"] = _named_choice(value, "tool_choice")
        return
    check_keys(value, ("type", "allowed_tools"), "tool_choice")
    where = "tool_choice.allowed_tools"
    allowed = as_object(value.get("allowed_tools"), where)
    check_keys(allowed, ("mode", "tools"), where)
    mode = allowed.get("mode")
    if mode not in ("auto", "required"):
        raise bad_request(f"'{where}.mode' must be 'auto' or 'required'", f"{where}.mode")
    tools = as_objects(allowed.get("tools"), f"{where}.tools")
    named = [_named_choice(t, f"{where}.tools[{i}]") for i, t in enumerate(tools)]
    out["tool_choice"] = {"type": "allowed_tools", "mode": mode, "tools": named}


def _named_choice(choice: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``{"type": "function", "function": {"name"}}`` (or custom) as the Responses form."""
    kind = choice.get("type")
    if kind not in ("function", "custom"):
        raise unsupported(f"{where}.type", f"{kind!r} is not a tool choice here")
    check_keys(choice, ("type", kind), where)
    inner = as_object(choice.get(kind), f"{where}.{kind}")
    check_keys(inner, ("name",), f"{where}.{kind}")
    return {"type": kind, "name": as_name(inner.get("name"), f"{where}.{kind}.name")}


def _table() -> dict[str, Field]:
    passed = {
        "temperature": as_number,
        "top_p": as_number,
        "parallel_tool_calls": as_boolean,
        "user": as_string,
        "metadata": as_metadata,
        "store": as_boolean,
        "presence_penalty": as_number,
        "frequency_penalty": as_number,
        "prompt_cache_key": as_string,
        "prompt_cache_retention": as_string,
        "safety_identifier": as_string,
        "service_tier": as_string,
        "moderation": as_object,
        "prompt_cache_options": as_object,
    }
    table: dict[str, Field] = {name: _passed(name, check) for name, check in passed.items()}
    table |= {name: _refused(name) for name in REFUSED}
    return table | {
        "model": _nothing,
        "messages": _nothing,
        "stream": _nothing,
        "stream_options": _stream_options,
        "n": _n,
        "logprobs": _logprobs,
        "top_logprobs": _top_logprobs,
        "modalities": _modalities,
        "max_completion_tokens": _max_tokens("max_completion_tokens"),
        "max_tokens": _max_tokens("max_tokens"),
        "reasoning_effort": _reasoning_effort,
        "response_format": _response_format,
        "verbosity": _verbosity,
        "tools": _tools,
        "tool_choice": _tool_choice,
    }


# Body field -> what it does to the Responses request (a field not here is unknown).
FIELDS = _table()


# -- messages ---------------------------------------------------------------------------
def _input(messages: Any) -> list[dict[str, Any]]:
    if messages is None:
        raise GatewayError(
            400, "'messages' is required", code="missing_required_parameter", param="messages"
        )
    if not isinstance(messages, list) or not messages:
        raise bad_request("'messages' must be a non-empty array of objects", "messages")
    out: list[dict[str, Any]] = []
    for i, msg in enumerate(as_objects(messages, "messages")):
        out += _message(msg, f"messages[{i}]")
    return out


def _message(msg: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    role = msg.get("role")
    if role == "function":
        raise unsupported(f"{where}.role", "function messages are deprecated; use tool")
    if not isinstance(role, str) or role not in MESSAGE_KEYS:
        raise bad_request(
            f"'{where}.role' must be one of {', '.join(MESSAGE_KEYS)}", f"{where}.role"
        )
    _check_keys(msg, MESSAGE_KEYS[role], where)
    if role == "assistant":
        return _assistant(msg, where)
    if role == "tool":
        return [_tool_output(msg, where)]
    content = msg.get("content")
    if content is None:
        raise bad_request(f"'{where}.content' is required", f"{where}.content")
    return [{"type": "message", "role": role, "content": _parts(content, where, role)}]


def _parts(content: Any, where: str, role: str) -> list[dict[str, Any]]:
    """Chat content (a string or parts) as Responses input parts."""
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}]
    if not isinstance(content, list):
        at = f"{where}.content"
        raise bad_request(f"{at!r} must be a string or an array of parts", at)
    parts = as_objects(content, f"{where}.content")
    return [_part(part, f"{where}.content[{j}]", role) for j, part in enumerate(parts)]


def _part(part: Mapping[str, Any], at: str, role: str) -> dict[str, Any]:
    kind = part.get("type")
    if kind not in ROLE_PARTS.get(role, ("text",)):
        raise unsupported(f"{at}.type", f"{kind!r} parts are not served in {role} messages")
    _check_keys(part, PART_KEYS[kind], at)
    if kind == "text":
        return {"type": "input_text", "text": as_string(part.get("text"), f"{at}.text")}
    if kind == "refusal":
        return {"type": "refusal", "refusal": as_string(part.get("refusal"), f"{at}.refusal")}
    if kind == "image_url":
        return _image(as_object(part.get("image_url"), f"{at}.image_url"), f"{at}.image_url")
    return _file(as_object(part.get("file"), f"{at}.file"), f"{at}.file")


def _image(image: Mapping[str, Any], where: str) -> dict[str, Any]:
    check_keys(image, ("url", "detail"), where)
    detail = image.get("detail")
    return {
        "type": "input_image",
        "image_url": as_name(image.get("url"), f"{where}.url"),
        "detail": "auto" if detail is None else as_string(detail, f"{where}.detail"),
    }


def _file(file: Mapping[str, Any], where: str) -> dict[str, Any]:
    check_keys(file, ("file_data", "file_id", "filename"), where)
    out: dict[str, Any] = {"type": "input_file"}
    for key in ("file_id", "file_data", "filename"):
        if file.get(key) is not None:
            out[key] = as_string(file[key], f"{where}.{key}")
    if "file_id" not in out and "file_data" not in out:
        raise bad_request(f"{where!r} needs file_data or file_id", f"{where}.file_data")
    return out


def _text(content: Any, where: str) -> str:
    """Text-only chat content (a string or text parts) as one string."""
    if content is None:
        return ""
    return "".join(str(p["text"]) for p in _parts(content, where, "tool"))


def _tool_output(msg: Mapping[str, Any], where: str) -> dict[str, Any]:
    return {
        "type": "function_call_output",
        "call_id": as_name(msg.get("tool_call_id"), f"{where}.tool_call_id"),
        "output": _text(msg.get("content"), where),
    }


def _assistant(msg: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    """Reasoning, then the message, then the tool calls (the Responses output order)."""
    out: list[dict[str, Any]] = []
    reasoning = _reasoning(msg, where)
    if reasoning:
        content = [{"type": "reasoning_text", "text": reasoning}]
        out.append({**_earlier("reasoning"), "summary": [], "content": content})
    tool_calls = msg.get("tool_calls")
    tool_calls = [] if tool_calls is None else as_objects(tool_calls, f"{where}.tool_calls")
    calls = [_call(call, f"{where}.tool_calls[{k}]") for k, call in enumerate(tool_calls)]
    parts = _assistant_parts(msg, where)
    if calls or any(p.get("text") != "" for p in parts):
        # the empty content chat clients send along with tool calls or a refusal
        parts = [p for p in parts if p.get("text") != ""]
    if parts:
        message = {**_earlier("message"), "status": "completed", "role": "assistant"}
        out.append({**message, "content": parts})
    if not out and not calls:
        at = f"{where}.content"
        raise bad_request(f"{at!r} is required unless tool_calls is given", at)
    return out + calls


def _earlier(kind: str) -> dict[str, Any]:
    """The head of an earlier output item: its type and a new id (Responses servers
    built on the SDK's types need one on output messages and reasoning items)."""
    return {"type": kind, "id": ID_PREFIXES[kind] + secrets.token_hex(16)}


def _reasoning(msg: Mapping[str, Any], where: str) -> str:
    texts = {
        key: as_string(msg[key], f"{where}.{key}")
        for key in ("reasoning_content", "reasoning")
        if msg.get(key) is not None
    }
    if len(set(texts.values())) > 1:
        raise bad_request(
            f"'{where}.reasoning' and '{where}.reasoning_content' differ; give one of them",
            f"{where}.reasoning",
        )
    return next(iter(texts.values()), "")


def _assistant_parts(msg: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if msg.get("content") is not None:
        for part in _parts(msg["content"], where, "assistant"):
            if part["type"] == "input_text":
                part = {"type": "output_text", "text": part["text"], "annotations": []}
            parts.append(part)
    if msg.get("refusal") is not None:
        refusal = as_string(msg["refusal"], f"{where}.refusal")
        parts.append({"type": "refusal", "refusal": refusal})
    return parts


def _call(call: Mapping[str, Any], where: str) -> dict[str, Any]:
    kind = call.get("type")
    if kind not in ("function", "custom"):
        raise unsupported(f"{where}.type", f"{kind!r} tool calls are not served")
    check_keys(call, ("id", "type", kind), where)
    call_id = as_name(call.get("id"), f"{where}.id")
    at = f"{where}.{kind}"
    inner = as_object(call.get(kind), at)
    if kind == "custom":
        check_keys(inner, ("name", "input"), at)
        return {
            "type": "custom_tool_call",
            "call_id": call_id,
            "name": as_name(inner.get("name"), f"{at}.name"),
            "input": as_string(inner.get("input"), f"{at}.input"),
        }
    check_keys(inner, ("name", "arguments"), at)
    return {
        "type": "function_call",
        "call_id": call_id,
        "name": as_name(inner.get("name"), f"{at}.name"),
        "arguments": as_string(inner.get("arguments"), f"{at}.arguments"),
    }
