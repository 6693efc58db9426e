"""A Responses create request as the Chat Completions request sent upstream.

Every field is translated, acted on by the gateway, accepted with no effect for a
stated reason (``NO_EFFECT``), or refused with a 400 that names it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .compaction_token import open_summary
from .errors import GatewayError, bad_request, unknown_parameter, unsupported

# Same name and meaning on both sides.
PASSED = (
    "parallel_tool_calls",
    "temperature",
    "top_p",
    "presence_penalty",
    "frequency_penalty",
    "user",
    "metadata",
    "stop",
    "prompt_cache_key",
    "prompt_cache_retention",
    "safety_identifier",
    "service_tier",
)
NUMBERS = ("temperature", "top_p", "presence_penalty", "frequency_penalty")
STRINGS = (
    "user",
    "prompt_cache_key",
    "prompt_cache_retention",
    "safety_identifier",
    "service_tier",
)
# What the gateway itself acts on.
GATEWAY = ("model", "input", "instructions", "previous_response_id", "store", "stream", "type")
# Accepted, with no effect on the chat request, and why.
NO_EFFECT = {
    "truncation": "a chat upstream never truncates; too long a context fails upstream",
    "reasoning.summary": "chat upstreams send their raw reasoning, given as reasoning text",
    "reasoning.generate_summary": "as reasoning.summary",
    "include: reasoning.encrypted_content": "reasoning items come back without it",
    "stream_options.include_obfuscation": "no obfuscation field is sent",
    "top_logprobs: 0": "no log probabilities are asked for",
    "max_tool_calls: null, conversation: null, prompt: null, background: false": "unset",
    "input[].id, input[].status, assistant input[].phase": "labels of earlier items",
}
INCLUDE_OK = ("reasoning.encrypted_content",)
HOSTED = "a chat completions upstream has no hosted tools"


def chat_request(
    body: Mapping[str, Any],
    items: Sequence[Mapping[str, Any]],
    *,
    reasoning_field: str = "reasoning_content",
    developer_role: str = "system",
) -> dict[str, Any]:
    """The chat body for ``body``, whose context (earlier turns, then this input) is
    ``items``; a :class:`GatewayError` (400) for what cannot be translated."""
    model = body.get("model")
    if model is None:
        raise GatewayError(
            400, "'model' is required", code="missing_required_parameter", param="model"
        )
    if not isinstance(model, str) or not model:
        raise bad_request("'model' must be a non-empty string", "model")
    out: dict[str, Any] = {"model": model}
    _check_fields(body)
    messages: list[dict[str, Any]] = []
    instructions = body.get("instructions")
    if instructions is not None:
        if not isinstance(instructions, str):
            raise bad_request("'instructions' must be a string", "instructions")
        messages.append({"role": "system", "content": instructions})
    messages += _messages(items, reasoning_field, developer_role)
    out["messages"] = messages
    out["stream"] = True
    out["stream_options"] = {"include_usage": True}
    for name in PASSED:
        if body.get(name) is not None:
            out[name] = _checked(name, body[name])
    if body.get("max_output_tokens") is not None:
        value = body["max_output_tokens"]
        if type(value) is not int or value < 1:
            raise bad_request("'max_output_tokens' must be a positive integer", "max_output_tokens")
        out["max_completion_tokens"] = value
    _reasoning(body.get("reasoning"), out)
    _text(body.get("text"), out)
    tools = _tools(body.get("tools"))
    if tools:
        out["tools"] = tools
    if body.get("tool_choice") is not None:
        out["tool_choice"] = _tool_choice(body["tool_choice"], "tool_choice")
    return out


def _check_fields(body: Mapping[str, Any]) -> None:
    known = {*PASSED, *GATEWAY, "max_output_tokens", "reasoning", "text", "tools", "tool_choice"}
    for name, value in body.items():
        if name in known:
            continue
        if name == "truncation":
            if value not in (None, "auto", "disabled"):
                raise bad_request("'truncation' must be 'auto' or 'disabled'", name)
        elif name == "include":
            if value is not None and not isinstance(value, list):
                raise bad_request("'include' must be an array", name)
            for i, entry in enumerate(value or ()):
                if entry not in INCLUDE_OK:
                    raise unsupported(f"include[{i}]", f"{entry!r} cannot be produced")
        elif name == "stream_options":
            for key in value or {}:
                if key != "include_obfuscation":
                    raise unknown_parameter(f"stream_options.{key}")
        elif name == "top_logprobs":
            if value not in (None, 0):
                raise unsupported(name, "log probabilities are not carried through")
        elif name == "background":
            if value:
                raise unsupported(name, "background responses are not served")
        elif name in ("max_tool_calls", "conversation", "prompt", "context_management"):
            if value is not None:
                raise unsupported(name, "it has no chat completions equivalent")
        else:
            raise unknown_parameter(name)


def _checked(name: str, value: Any) -> Any:
    if name in NUMBERS and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise bad_request(f"{name!r} must be a number", name)
    if name in STRINGS and not isinstance(value, str):
        raise bad_request(f"{name!r} must be a string", name)
    if name == "parallel_tool_calls" and not isinstance(value, bool):
        raise bad_request(f"{name!r} must be a boolean", name)
    if name == "metadata" and (
        not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values())
    ):
        raise bad_request("'metadata' must be an object of strings", name)
    if name == "stop" and not (
        isinstance(value, str)
        or (isinstance(value, list) and all(isinstance(v, str) for v in value))
    ):
        raise bad_request("'stop' must be a string or an array of strings", name)
    return value


def _reasoning(value: Any, out: dict[str, Any]) -> None:
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise bad_request("'reasoning' must be an object", "reasoning")
    for key, sub in value.items():
        if key == "effort":
            if sub is not None:
                if not isinstance(sub, str):
                    raise bad_request("'reasoning.effort' must be a string", "reasoning.effort")
                out["reasoning_effort"] = sub
        elif key not in ("summary", "generate_summary"):
            raise unknown_parameter(f"reasoning.{key}")


def _text(value: Any, out: dict[str, Any]) -> None:
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise bad_request("'text' must be an object", "text")
    for key, sub in value.items():
        if key == "verbosity":
            if sub is not None:
                out["verbosity"] = sub
        elif key == "format":
            fmt = _format(sub)
            if fmt is not None:
                out["response_format"] = fmt
        else:
            raise unknown_parameter(f"text.{key}")


def _format(fmt: Any) -> dict[str, Any] | None:
    if fmt is None:
        return None
    if not isinstance(fmt, Mapping):
        raise bad_request("'text.format' must be an object", "text.format")
    kind = fmt.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "json_object"}
    if kind == "json_schema":
        name = fmt.get("name")
        if not isinstance(name, str) or not name:
            raise bad_request("'text.format.name' must be a non-empty string", "text.format.name")
        if not isinstance(fmt.get("schema"), Mapping):
            raise bad_request("'text.format.schema' must be an object", "text.format.schema")
        schema: dict[str, Any] = {"name": name, "schema": fmt["schema"]}
        for key in ("strict", "description"):
            if fmt.get(key) is not None:
                schema[key] = fmt[key]
        return {"type": "json_schema", "json_schema": schema}
    raise unsupported("text.format.type", f"{kind!r} is not a chat response format")


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise bad_request(f"{where!r} must be a non-empty string", where)
    return value


def _tools(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(t, Mapping) for t in value):
        raise bad_request("'tools' must be an array of objects", "tools")
    out: list[dict[str, Any]] = []
    for i, tool in enumerate(value):
        kind = tool.get("type")
        if kind == "function":
            out.append(_function_tool(tool, f"tools[{i}]", ""))
        elif kind == "custom":
            custom = {"name": _name(tool.get("name"), f"tools[{i}].name")}
            for key in ("description", "format"):
                if tool.get(key) is not None:
                    custom[key] = tool[key]
            out.append({"type": "custom", "custom": custom})
        elif kind == "namespace":
            space = _name(tool.get("name"), f"tools[{i}].name")
            subs = tool.get("tools")
            if not isinstance(subs, list):
                raise bad_request(f"'tools[{i}].tools' must be an array", f"tools[{i}].tools")
            for j, sub in enumerate(subs):
                where = f"tools[{i}].tools[{j}]"
                if not isinstance(sub, Mapping) or sub.get("type") != "function":
                    raise unsupported(f"{where}.type", "a namespace holds function tools here")
                out.append(_function_tool(sub, where, space + "."))
        else:
            raise unsupported(f"tools[{i}].type", f"{kind!r}: {HOSTED}")
    return out


def _function_tool(tool: Mapping[str, Any], where: str, prefix: str) -> dict[str, Any]:
    fn: dict[str, Any] = {"name": prefix + _name(tool.get("name"), f"{where}.name")}
    if tool.get("description") is not None:
        fn["description"] = tool["description"]
    params = tool.get("parameters")
    if params is not None and not isinstance(params, Mapping):
        raise bad_request(f"'{where}.parameters' must be an object", f"{where}.parameters")
    fn["parameters"] = params if params is not None else {"type": "object", "properties": {}}
    if tool.get("strict") is not None:
        fn["strict"] = tool["strict"]
    return {"type": "function", "function": fn}


def _tool_choice(choice: Any, where: str) -> Any:
    if choice in ("auto", "none", "required"):
        return choice
    if not isinstance(choice, Mapping):
        raise bad_request(f"{where!r} must be 'auto', 'none', 'required' or an object", where)
    kind = choice.get("type")
    if kind == "function":
        return {
            "type": "function",
            "function": {"name": _name(choice.get("name"), where + ".name")},
        }
    if kind == "custom":
        return {"type": "custom", "custom": {"name": _name(choice.get("name"), where + ".name")}}
    if kind == "allowed_tools":
        mode = choice.get("mode", "auto")
        tools = choice.get("tools")
        if not isinstance(tools, list):
            raise bad_request(f"'{where}.tools' must be an array", where + ".tools")
        return {
            "type": "allowed_tools",
            "allowed_tools": {
                "mode": mode,
                "tools": [_tool_choice(t, f"{where}.tools[{i}]") for i, t in enumerate(tools)],
            },
        }
    raise unsupported(f"{where}.type", f"{kind!r}: {HOSTED}")


# -- the context ----------------------------------------------------------------------
def _messages(
    items: Sequence[Mapping[str, Any]], reasoning_field: str, developer_role: str
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    calls: set[str] = set()
    reasoning: list[str] = []  # waiting for the assistant turn it belongs to

    def assistant() -> dict[str, Any]:
        """The assistant message tool calls join: the last one, if nothing came since."""
        if out and out[-1]["role"] == "assistant" and not reasoning:
            return out[-1]
        msg: dict[str, Any] = {"role": "assistant", "content": None}
        _attach(msg)
        out.append(msg)
        return msg

    def _attach(msg: dict[str, Any]) -> None:
        if reasoning:
            msg[reasoning_field] = "\n\n".join(reasoning)
            reasoning.clear()

    for i, item in enumerate(items):
        where = f"input[{i}]"
        kind = item.get("type")
        if kind == "message":
            msg = _message(item, where, developer_role)
            if msg["role"] == "assistant":
                _attach(msg)
            out.append(msg)
        elif kind in ("function_call", "custom_tool_call"):
            call_id = _name(item.get("call_id"), f"{where}.call_id")
            calls.add(call_id)
            msg = assistant()
            msg.setdefault("tool_calls", []).append(_call(item, where, call_id))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output_id = item.get("call_id")
            if output_id not in calls:
                raise GatewayError(
                    400,
                    f"No tool call found for function call output with call_id {output_id!r}.",
                    code="tool_call_not_found",
                    param="input",
                )
            out.append({"role": "tool", "tool_call_id": output_id, "content": _output(item, where)})
        elif kind == "reasoning":
            text = _reasoning_text(item)
            if text:
                reasoning.append(text)
            elif item.get("encrypted_content"):
                raise unsupported(
                    f"{where}.encrypted_content", "a chat completions upstream cannot read it"
                )
        elif kind == "compaction":
            summary = open_summary(item.get("encrypted_content"), f"{where}.encrypted_content")
            content = "Summary of the earlier conversation:\n" + summary
            out.append({"role": developer_role, "content": content})
        else:
            raise unsupported(f"{where}.type", f"{kind!r} items cannot be sent to a chat upstream")
    return out


def _message(item: Mapping[str, Any], where: str, developer_role: str) -> dict[str, Any]:
    role = item["role"]
    parts: list[dict[str, Any]] = []
    refusal: list[str] = []
    for j, part in enumerate(item["content"]):
        at = f"{where}.content[{j}]"
        kind = part.get("type")
        if kind in ("input_text", "output_text", "text"):
            if not isinstance(part.get("text"), str):
                raise bad_request(f"'{at}.text' must be a string", f"{at}.text")
            parts.append({"type": "text", "text": part["text"]})
        elif kind == "refusal" and role == "assistant":
            refusal.append(str(part.get("refusal", "")))
        elif kind in ("input_image", "input_file") and role == "user":
            parts.append(_media(part, at))
        elif kind in ("input_image", "input_file"):
            raise unsupported(f"{at}.type", f"a chat {role} message holds text only")
        else:
            raise unsupported(f"{at}.type", f"{kind!r} has no chat content part")
    msg: dict[str, Any] = {"role": developer_role if role == "developer" else role}
    if role != "user" or all(p["type"] == "text" for p in parts):
        msg["content"] = "".join(p["text"] for p in parts) if len(parts) != 1 else parts[0]["text"]
        if len(parts) > 1 and role == "user":
            msg["content"] = parts
    else:
        msg["content"] = parts
    if refusal:
        msg["refusal"] = "".join(refusal)
        if not parts:
            msg["content"] = None
    return msg


def _media(part: Mapping[str, Any], at: str) -> dict[str, Any]:
    if part["type"] == "input_image":
        url = part.get("image_url")
        if not isinstance(url, str) or not url:
            if part.get("file_id"):
                raise unsupported(f"{at}.file_id", "a chat upstream cannot resolve file ids")
            raise bad_request(f"'{at}.image_url' must be a URL", f"{at}.image_url")
        image: dict[str, Any] = {"url": url}
        if part.get("detail") not in (None, "auto"):
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    if part.get("file_url"):
        raise unsupported(f"{at}.file_url", "a chat upstream takes file data, not a URL")
    file: dict[str, Any] = {}
    for key in ("file_data", "file_id", "filename"):
        if part.get(key) is not None:
            file[key] = part[key]
    if "file_data" not in file and "file_id" not in file:
        raise bad_request(f"'{at}' needs file_data or file_id", f"{at}.file_data")
    return {"type": "file", "file": file}


def _call(item: Mapping[str, Any], where: str, call_id: str) -> dict[str, Any]:
    name = _name(item.get("name"), f"{where}.name")
    if item["type"] == "custom_tool_call":
        return {
            "id": call_id,
            "type": "custom",
            "custom": {"name": name, "input": item.get("input", "")},
        }
    if item.get("namespace"):
        name = f"{item['namespace']}.{name}"
    arguments = item.get("arguments", "")
    if not isinstance(arguments, str):
        raise bad_request(f"'{where}.arguments' must be a string", f"{where}.arguments")
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _output(item: Mapping[str, Any], where: str) -> str:
    output = item.get("output")
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        texts = []
        for j, part in enumerate(output):
            if not isinstance(part, Mapping) or part.get("type") not in (
                "input_text",
                "output_text",
            ):
                raise unsupported(f"{where}.output[{j}]", "a chat tool message holds text only")
            texts.append(str(part.get("text", "")))
        return "".join(texts)
    raise bad_request(f"'{where}.output' must be a string or an array of parts", f"{where}.output")


def _reasoning_text(item: Mapping[str, Any]) -> str:
    content = [p.get("text", "") for p in item.get("content") or () if isinstance(p, Mapping)]
    if any(content):
        return "".join(content)
    summary = [p.get("text", "") for p in item.get("summary") or () if isinstance(p, Mapping)]
    return "\n\n".join(s for s in summary if s)
