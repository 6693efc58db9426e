"""A Chat Completions request as the Responses request sent upstream.

The body has passed its request model (``request_check``).  Each field becomes what its
row in ``spec/requests/chat.yaml`` says: itself, or what a converter here
(``CONVERTERS``) makes of it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .chat_request import parameters
from .errors import bad_request, unsupported
from .items import new_id
from .request_check import translate_rows

LOGPROBS = "message.output_text.logprobs"  # the include that asks for them
PARTS = {"text": "input_text", "image_url": "input_image", "file": "input_file"}
CALLS = {"function": ("function_call", "arguments"), "custom": ("custom_tool_call", "input")}


def responses_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """The Responses body for the checked chat ``body``; a 400 for what cannot be sent."""
    out: dict[str, Any] = {}
    translate_rows(body, "chat", out, CONVERTERS, ("model", "input"))
    return {"model": body["model"], "input": _input(body["messages"]), "stream": True, **out}


# -- the converters the table names -----------------------------------------------------
def _logprobs(value: bool, out: dict[str, Any]) -> None:
    if value:
        out["include"] = [LOGPROBS]


def _response_format(value: Mapping[str, Any], out: dict[str, Any]) -> None:
    """``json_schema``'s inner object flattened into the Responses text format."""
    out.setdefault("text", {})["format"] = {"type": value["type"], **value.get("json_schema", {})}


def _tools(value: list[Mapping[str, Any]], out: dict[str, Any]) -> None:
    out["tools"] = [_tool(tool) for tool in value]


def _tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A chat tool as the Responses one: its inner object flattened; a function's
    ``strict`` sent false when unset (chat's default), a grammar's fields flattened."""
    kind = tool["type"]  # function or custom: the request model takes no other
    inner = tool[kind]
    out: dict[str, Any] = {"type": kind, **inner}
    if kind == "function":
        out.update(parameters=parameters(inner.get("parameters")), strict=bool(out.get("strict")))
    elif (inner.get("format") or {}).get("type") == "grammar":
        out["format"] = {"type": "grammar", **inner["format"]["grammar"]}
    return out


def _tool_choice(value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, str):
        out["tool_choice"] = value
    elif value["type"] == "allowed_tools":
        allowed, at = value["allowed_tools"], "tool_choice.allowed_tools.tools"
        tools = [_named_choice(t, f"{at}[{i}]") for i, t in enumerate(allowed["tools"])]
        out["tool_choice"] = {"type": "allowed_tools", "mode": allowed["mode"], "tools": tools}
    else:
        out["tool_choice"] = _named_choice(value, "tool_choice")


def _named_choice(choice: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``{"type": "function", "function": {"name"}}`` (or custom) as the Responses form."""
    kind = choice.get("type")
    if kind not in ("function", "custom"):
        raise unsupported(f"{where}.type", f"{kind!r} is not a tool choice here")
    return {"type": kind, "name": choice[kind]["name"]}


Converter = Callable[[Any, dict[str, Any]], None]
CONVERTERS: dict[str, Converter] = {
    "logprobs": _logprobs,
    "response_format": _response_format,
    "tools": _tools,
    "tool_choice": _tool_choice,
}


# -- messages ---------------------------------------------------------------------------
def _input(messages: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, msg in enumerate(messages):
        where, role = f"messages[{i}]", msg["role"]
        if role == "assistant":
            out += _assistant(msg, where)
            continue
        parts = _parts(msg["content"], where, role)
        if role == "tool":
            output = "".join(p["text"] for p in parts)
            out.append(
                {"type": "function_call_output", "call_id": msg["tool_call_id"], "output": output}
            )
        else:
            out.append({"type": "message", "role": role, "content": parts})
    return out


def _parts(content: Any, where: str, role: str) -> list[dict[str, Any]]:
    """Chat content (a string or parts) as Responses input parts."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}]
    return [_part(part, f"{where}.content[{j}]", role) for j, part in enumerate(content)]


def _part(part: Mapping[str, Any], at: str, role: str) -> dict[str, Any]:
    kind = part["type"]
    if kind == "refusal" and role == "assistant":
        return {"type": "refusal", "refusal": part["refusal"]}
    if kind not in PARTS or (kind != "text" and role != "user"):
        raise unsupported(f"{at}.type", f"{kind!r} parts are not served in {role} messages")
    if kind == "text":
        return {"type": "input_text", "text": part["text"]}
    if kind == "image_url":
        image = part["image_url"]
        return {
            "type": "input_image",
            "image_url": image["url"],
            "detail": image.get("detail") or "auto",
        }
    return {"type": "input_file", **{k: v for k, v in part["file"].items() if v is not None}}


def _assistant(msg: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    """Reasoning, then the message, then the tool calls (the Responses output order);
    earlier output items get new ids (Responses servers built on the SDK's types need them)."""
    texts = {msg[k] for k in ("reasoning_content", "reasoning") if msg.get(k) is not None}
    if len(texts) > 1:
        at = f"{where}.reasoning"
        raise bad_request(f"'{at}' and '{at}_content' differ; give one of them", at)
    out: list[dict[str, Any]] = []
    if reasoning := "".join(texts):
        content = [{"type": "reasoning_text", "text": reasoning}]
        out.append(
            {"type": "reasoning", "id": new_id("reasoning"), "summary": [], "content": content}
        )
    calls = [_call(call) for call in msg.get("tool_calls") or ()]
    parts = [
        {"type": "output_text", "text": p["text"], "annotations": []}
        if p["type"] == "input_text"
        else p
        for p in _parts(msg.get("content"), where, "assistant")
    ]
    if msg.get("refusal") is not None:
        parts.append({"type": "refusal", "refusal": msg["refusal"]})
    if calls or any(p.get("text") != "" for p in parts):
        # the empty content chat clients send along with tool calls or a refusal
        parts = [p for p in parts if p.get("text") != ""]
    if parts:
        head = {"type": "message", "id": new_id("message"), "status": "completed"}
        out.append({**head, "role": "assistant", "content": parts})
    if not out and not calls:
        at = f"{where}.content"
        raise bad_request(f"{at!r} is required unless tool_calls is given", at)
    return out + calls


def _call(call: Mapping[str, Any]) -> dict[str, Any]:
    kind = call["type"]  # function or custom: the request model takes no other
    item, key = CALLS[kind]
    return {"type": item, "call_id": call["id"], "name": call[kind]["name"], key: call[kind][key]}
