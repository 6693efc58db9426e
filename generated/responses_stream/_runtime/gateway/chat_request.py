"""A Responses create request as the Chat Completions request sent upstream.

The body has passed its request model (``request_check``), so each value has the type
its schema declares.  What a field becomes is its row in the table of fates
(``spec/requests/responses.yaml``): sent as it is, or by one of the converters here
(``CONVERTERS``), which the rows name.  What the schemas take and a chat upstream
cannot (an item kind with no chat message, an image by file id, a key the table's ``keys``
names) is a 400 naming it; a tool is what the table's ``tools`` says: hosted tools are
dropped or refused as ``hosted_tools`` says, a dropped one listed in
``ChatRequest.dropped``.  Tool names a chat upstream would refuse
are sent under their wire names (``tool_names``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..._requests import ROUTES
from ..core.convert import declared_tools
from ..core.tool_names import ToolNames
from .compaction_token import open_summary
from .errors import GatewayError, bad_request, unsupported
from .request_check import refuse_keys, translate_rows

TOOLS: dict[str, dict[str, str]] = ROUTES["responses"]["tools"]  # tool type -> its fate
HOSTED = "a chat completions upstream has no hosted tools"
LOGPROBS = "message.output_text.logprobs"
HOSTED_POLICIES = ("drop", "refuse")
TOOL_SEARCH_PARAMETERS = {"type": "object", "properties": {}}
TOOL_SEARCH_DESCRIPTION = "Search for tools to load for the task at hand."
SUMMARY_HEADER = "Summary of the earlier conversation:\n"
CALLS = ("function_call", "custom_tool_call", "tool_search_call")
OUTPUTS = ("function_call_output", "custom_tool_call_output", "tool_search_output")
TEXT_PARTS = ("input_text", "output_text", "text")


@dataclass
class ChatRequest:
    """The chat body sent upstream, and the hosted tools left out of it."""

    body: dict[str, Any]
    dropped: list[str] = field(default_factory=list)


class _Out(dict[str, Any]):
    """The translated fields, and what translating them needs and finds."""

    def __init__(self, hosted_tools: str, names: ToolNames) -> None:
        super().__init__()
        self.hosted_tools = hosted_tools
        self.names = names
        self.dropped: list[str] = []


def chat_request(
    body: Mapping[str, Any], items: Sequence[Mapping[str, Any]], **options: Any
) -> dict[str, Any]:
    """The chat body of :func:`translate` (same arguments)."""
    return translate(body, items, **options).body


def translate(
    body: Mapping[str, Any],
    items: Sequence[Mapping[str, Any]],
    *,
    reasoning_field: str = "reasoning_content",
    developer_role: str = "system",
    context_len: int = 0,
    hosted_tools: str = "drop",
) -> ChatRequest:
    """The chat request for the checked Responses ``body``, whose context is ``items``
    (earlier turns' items, then this turn's normalized input); a 400 for what cannot be
    sent.

    The first ``context_len`` items come from earlier responses: errors in the rest are
    named ``input[i]`` counting from the first of them, errors in those name
    ``previous_response_id``.  ``hosted_tools`` is ``drop`` (left out, listed in
    ``dropped``) or ``refuse`` (a 400).
    """
    if hosted_tools not in HOSTED_POLICIES:
        raise ValueError(f"hosted_tools must be one of {HOSTED_POLICIES}, not {hosted_tools!r}")
    out = _Out(hosted_tools, ToolNames(declared_tools(body)))
    translate_rows(body, "responses", out, CONVERTERS, ("model", "messages"))
    if not out.get("logprobs"):
        out.pop("top_logprobs", None)  # top_logprobs asks for nothing without the include
    builder = _Messages(reasoning_field, developer_role, out.names)
    if body.get("instructions"):
        builder.out.append({"role": "system", "content": body["instructions"]})
    for i, item in enumerate(items):
        if i >= context_len:
            builder.add(item, f"input[{i - context_len}]")
            continue
        try:
            builder.add(item, f"input[{i}]")
        except GatewayError as exc:
            raise _context_error(exc, i) from None
    chat = {
        "model": body["model"],
        "messages": builder.out,
        "stream": True,
        "stream_options": {"include_usage": True},
        **out,
    }
    return ChatRequest(chat, out.dropped)


def _context_error(exc: GatewayError, index: int) -> GatewayError:
    message = f"item {index} of the previous response's context cannot be sent: {exc.message}"
    return GatewayError(exc.status, message, code=exc.code, param="previous_response_id")


# -- the converters the table names -----------------------------------------------------
def _reasoning(value: Mapping[str, Any], out: _Out) -> None:
    if value.get("effort") is not None:
        out["reasoning_effort"] = value["effort"]


def _text(value: Mapping[str, Any], out: _Out) -> None:
    if value.get("verbosity") is not None:
        out["verbosity"] = value["verbosity"]
    fmt = value.get("format")
    kind = fmt.get("type") if fmt else "text"
    if kind == "json_object":
        out["response_format"] = {"type": "json_object"}
    elif kind == "json_schema":
        assert fmt is not None
        keys = ("name", "schema", "strict", "description")
        schema = {k: fmt[k] for k in keys if fmt.get(k) is not None}
        if "schema" in schema:
            schema["schema"] = dict(schema["schema"])
        out["response_format"] = {"type": "json_schema", "json_schema": schema}


def _include(value: list[str], out: _Out) -> None:
    if LOGPROBS in value:  # the other includables name what a chat upstream has not
        out["logprobs"] = True


def _tools(value: list[Mapping[str, Any]], out: _Out) -> None:
    tools = [t for i, tool in enumerate(value) for t in _tool(tool, f"tools[{i}]", out)]
    if tools:
        out["tools"] = tools


def _tool(tool: Mapping[str, Any], where: str, out: _Out) -> list[dict[str, Any]]:
    kind = tool["type"]
    refuse_keys(tool, "responses", where)
    if kind in ("function", "custom"):
        return [_named_tool(tool, "", out.names)]
    if kind == "namespace":
        for j, sub in enumerate(tool["tools"]):
            refuse_keys(sub, "responses", f"{where}.tools[{j}]")
        return [_named_tool(sub, tool["name"] + ".", out.names) for sub in tool["tools"]]
    if kind == "tool_search" and tool.get("execution") == "client":  # else hosted
        fn = {
            "name": "tool_search",
            "description": _or(tool.get("description"), TOOL_SEARCH_DESCRIPTION),
            "parameters": _or(tool.get("parameters"), TOOL_SEARCH_PARAMETERS),
        }
        return [{"type": "function", "function": fn}]
    if TOOLS[kind]["fate"] == "refused":
        raise unsupported(f"{where}.type", TOOLS[kind]["why"])
    if out.hosted_tools == "refuse":
        raise unsupported(f"{where}.type", f"{kind!r}: {HOSTED}")
    out.dropped.append(kind)
    return []


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def _named_tool(tool: Mapping[str, Any], prefix: str, names: ToolNames) -> dict[str, Any]:
    """A function or custom tool; a custom tool's grammar nests under ``grammar``."""
    kind = tool["type"]
    spec: dict[str, Any] = {"name": names.wire(prefix + tool["name"])}
    if tool.get("description") is not None:
        spec["description"] = tool["description"]
    if kind == "function":
        params = tool.get("parameters")
        spec["parameters"] = (
            {"type": "object", "properties": {}} if params is None else dict(params)
        )
        if tool.get("strict") is not None:
            spec["strict"] = tool["strict"]
    elif tool.get("format") is not None:
        fmt = tool["format"]
        spec["format"] = (
            {"type": "grammar", "grammar": {k: fmt[k] for k in ("definition", "syntax")}}
            if fmt["type"] == "grammar"
            else {"type": "text"}
        )
    return {"type": kind, kind: spec}


def _tool_choice(value: Any, out: _Out) -> None:
    if isinstance(value, str):
        out["tool_choice"] = value
        return
    kind = value["type"]
    if kind in TOOLS and TOOLS[kind]["fate"] == "hosted" and out.hosted_tools == "drop":
        out.dropped.append(f"tool_choice:{kind}")  # its tool is dropped: the choice goes too
        return
    if kind != "allowed_tools":
        out["tool_choice"] = _named_choice(value, "tool_choice", out.names, declared=True)
        return
    tools = value["tools"]
    named = [_named_choice(t, f"tool_choice.tools[{i}]", out.names) for i, t in enumerate(tools)]
    allowed = {"mode": value["mode"], "tools": named}
    out["tool_choice"] = {"type": "allowed_tools", "allowed_tools": allowed}


def _named_choice(
    choice: Mapping[str, Any], where: str, names: ToolNames, declared: bool = False
) -> dict[str, Any]:
    kind = choice.get("type")
    if kind not in ("function", "custom") or "name" not in choice:
        raise unsupported(f"{where}.type", f"{kind!r}: {HOSTED}")
    name = choice["name"]
    if declared and name not in names.to_wire:
        raise bad_request(f"Tool choice '{name}' not found in 'tools' parameter.", where)
    return {"type": kind, kind: {"name": names.wire(name)}}


Converter = Callable[[Any, _Out], None]
CONVERTERS: dict[str, Converter] = {
    "reasoning": _reasoning,
    "text": _text,
    "include": _include,
    "tools": _tools,
    "tool_choice": _tool_choice,
}


# -- the context ------------------------------------------------------------------------
class _Messages:
    """Chat messages built from context items, one item at a time."""

    def __init__(self, reasoning_field: str, developer_role: str, names: ToolNames) -> None:
        self.names = names
        self.reasoning_field = reasoning_field
        self.developer_role = developer_role
        self.out: list[dict[str, Any]] = []
        self.calls: set[str] = set()
        self.reasoning: list[str] = []  # waiting for the assistant turn it belongs to

    def add(self, item: Mapping[str, Any], where: str) -> None:
        kind = item["type"]
        refuse_keys(item, "responses", where)
        if kind == "message":
            self._message(item, where)
        elif kind in CALLS:
            self._call(item)
        elif kind == "reasoning":
            self._reasoning(item, where)
        elif kind == "compaction":
            self._flush()
            summary = open_summary(item.get("encrypted_content"), f"{where}.encrypted_content")
            self.out.append({"role": self.developer_role, "content": SUMMARY_HEADER + summary})
        elif kind in OUTPUTS:
            self._flush()
            self._output(item, where)
        else:
            raise unsupported(f"{where}.type", f"{kind!r} items cannot be sent to a chat upstream")

    def _flush(self) -> None:
        """Reasoning followed by no assistant turn gets an assistant message of its own."""
        if self.reasoning:
            self.out.append(self._assistant(""))

    def _assistant(self, content: str | None) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": "assistant", "content": content}
        if self.reasoning:
            msg[self.reasoning_field] = "\n\n".join(self.reasoning)
            self.reasoning.clear()
        return msg

    def _message(self, item: Mapping[str, Any], where: str) -> None:
        role = item["role"]
        parts = item["content"]
        for j, part in enumerate(parts):
            refuse_keys(part, "responses", f"{where}.content[{j}]")
        if role == "assistant":
            self.out.append(self._assistant_message(parts, where))
            return
        self._flush()
        chat_role = self.developer_role if role == "developer" else role
        chat_parts = [_user_part(p, f"{where}.content[{j}]", role) for j, p in enumerate(parts)]
        self.out.append({"role": chat_role, "content": _chat_content(chat_parts)})

    def _assistant_message(self, parts: list[Mapping[str, Any]], where: str) -> dict[str, Any]:
        texts, refusals = [], []
        for j, part in enumerate(parts):
            if part["type"] in TEXT_PARTS:
                texts.append(part["text"])
            elif part["type"] == "refusal":
                refusals.append(part["refusal"])
            else:
                at = f"{where}.content[{j}].type"
                raise unsupported(at, "a chat assistant message holds text only")
        msg = self._assistant("".join(texts) if texts or not refusals else None)
        if refusals:
            msg["refusal"] = "".join(refusals)
        return msg

    def _call(self, item: Mapping[str, Any]) -> None:
        call_id, kind = item["call_id"], item["type"]
        if kind == "tool_search_call":
            arguments = item.get("arguments")
            text = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
            call = {"type": "function", "function": {"name": "tool_search", "arguments": text}}
        else:
            name = item["name"]
            if item.get("namespace") is not None:
                name = f"{item['namespace']}.{name}"
            name = self.names.wire(name)
            if kind == "custom_tool_call":
                call = {"type": "custom", "custom": {"name": name, "input": item["input"]}}
            else:
                function = {"name": name, "arguments": item["arguments"]}
                call = {"type": "function", "function": function}
        self.calls.add(call_id)
        last = self.out[-1] if self.out else None
        if last is None or last["role"] != "assistant" or self.reasoning:
            last = self._assistant(None)
            self.out.append(last)
        last.setdefault("tool_calls", []).append({"id": call_id, **call})

    def _output(self, item: Mapping[str, Any], where: str) -> None:
        call_id = item.get("call_id")
        if call_id not in self.calls:
            raise GatewayError(
                400,
                f"No tool call found for function call output with call_id {call_id!r}.",
                code="tool_call_not_found",
                param="input",
            )
        if item["type"] == "tool_search_output":
            content = json.dumps({"tools": item.get("tools") or []})
        else:
            content = _tool_output(item["output"], f"{where}.output")
        self.out.append({"role": "tool", "tool_call_id": call_id, "content": content})

    def _reasoning(self, item: Mapping[str, Any], where: str) -> None:
        raw = "".join(p["text"] for p in item.get("content") or ())
        summary = "\n\n".join(p["text"] for p in item.get("summary") or () if p["text"])
        text = raw or summary
        if text:
            self.reasoning.append(text)
        elif item.get("encrypted_content"):
            why = "a chat completions upstream cannot read it"
            raise unsupported(f"{where}.encrypted_content", why)


def _chat_content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """One text part as a plain string, none as ``""``, else the list of parts."""
    if not parts:
        return ""
    if len(parts) == 1 and parts[0]["type"] == "text":
        return str(parts[0]["text"])
    return parts


def _user_part(part: Mapping[str, Any], at: str, role: str) -> dict[str, Any]:
    """A part of a user, system or developer message as a chat content part."""
    kind = part["type"]
    if kind in TEXT_PARTS:
        return {"type": "text", "text": part["text"]}
    if kind not in ("input_image", "input_file"):
        raise unsupported(f"{at}.type", f"{kind!r} has no chat content part here")
    if role != "user":
        raise unsupported(f"{at}.type", f"a chat {role} message holds text only")
    if kind == "input_image":
        if part.get("file_id") is not None:
            why = "a chat upstream cannot resolve file ids for images"
            raise unsupported(f"{at}.file_id", why)
        if part.get("image_url") is None:
            raise bad_request(f"{at!r} needs image_url", f"{at}.image_url")
        image = {"url": part["image_url"]}
        if part.get("detail") not in (None, "auto"):
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    if part.get("file_url") is not None:
        raise unsupported(f"{at}.file_url", "a chat upstream takes file data, not a URL")
    keys = ("file_data", "file_id", "filename")
    file = {key: part[key] for key in keys if part.get(key) is not None}
    if "file_data" not in file and "file_id" not in file:
        raise bad_request(f"{at!r} needs file_data or file_id", f"{at}.file_data")
    return {"type": "file", "file": file}


def _tool_output(output: str | list[Mapping[str, Any]], where: str) -> str:
    """A tool output (a string, or text parts joined) as the chat tool message content."""
    if isinstance(output, str):
        return output
    for j, part in enumerate(output):
        if part["type"] not in TEXT_PARTS:
            raise unsupported(f"{where}[{j}].type", "a chat tool message holds text only")
    return "".join(part["text"] for part in output)
