"""A Responses create request as the Chat Completions request sent upstream.

Every field is translated, left to the caller (``CALLER``), acted on by the stream
conversion (``CONVERTED``), accepted with no effect for a stated reason
(``NO_EFFECT``), or refused with a 400 that names it exactly.
Hosted tools (run by OpenAI's servers) are dropped or refused, as ``hosted_tools``
says; a dropped tool is listed in ``ChatRequest.dropped`` for the caller to report.
Tool names a chat upstream would refuse are sent under their wire names
(``tool_names``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.convert import declared_tools
from ..core.tool_names import ToolNames
from .compaction_token import open_summary
from .errors import GatewayError, bad_request, unknown_parameter, unsupported
from .items import (
    ROLES,
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
    "type": "the WebSocket event type (response.create)",
    "input": "passed in normalized, as the end of the context items",
    "previous_response_id": "resolved by the caller into the context items",
    "store": "whether the gateway stores the response",
    "stream": "how the gateway answers; the upstream is always streamed",
    "stream_options": "how the gateway streams its answer",
    "background": "false or null only: background responses are not served",
}
# Nested fields the stream conversion acts on (``chat.wants_summary``), and how.
CONVERTED = {
    "reasoning.summary": "the upstream's reasoning is streamed as summary text",
    "reasoning.generate_summary": "as reasoning.summary",
}
# Accepted with no effect on the chat request, and why.
NO_EFFECT = {
    "truncation": "'auto' or 'disabled': a chat upstream never truncates the context",
    "include[]": "'reasoning.encrypted_content' and hosted tools' outputs: a chat upstream"
    " has neither, so items come back without them",
    "top_logprobs": "without include 'message.output_text.logprobs': none are asked for",
    "client_metadata": "labels of the client's own; nothing upstream reads them",
    "access_programs": "OpenAI's domain-specific access programs; a chat upstream has none",
    "background_options": "options of background responses, which are not served",
    "image": "request-level image options; a chat upstream generates no images",
    "prompt_cache_options": "a chat upstream caches prompts as it does; prompt_cache_key is sent",
    "max_tool_calls": "null only",
    "conversation": "null only",
    "prompt": "null only",
    "context_management": "null only",
    "stream_options.include_obfuscation": "the gateway sends no obfuscation field",
    "input[].id": "item ids label items; chat messages have none",
    "input[].status": "the status of an earlier item",
    "input[].phase": "assistant messages: labels commentary and final answers",
    "input[].created_by": "compaction items: who made the item",
    "input[].name": "function_call_output items: the call with the same call_id names it",
    "input[].namespace": "function_call_output items: as input[].name",
    "input[].encrypted_content": "reasoning items with text: the text is sent instead",
    "input[].content[].annotations": "output_text parts: citations of earlier answers",
    "input[].content[].logprobs": "output_text parts: log probabilities of earlier answers",
    "tools[].description": "namespace tools only: chat has no namespaces (names keep it)",
    "tools[].defer_loading": "a chat upstream is given every tool at once",
    "tools[].execution": "tool_search: 'client' only (the client runs the search)",
}
# Item and part fields that have no chat equivalent, wherever they appear.
REFUSED_KEYS = {
    "caller": "programmatic tool calling is not served",
    "async": "asynchronous tool calls are not served",
    "prompt_cache_breakpoint": "chat upstreams place no cache breakpoints",
    "allowed_callers": "programmatic tool calling is not served",
    "output_schema": "chat tools have no output schema",
}
HOSTED = "a chat completions upstream has no hosted tools"
LOGPROBS = "message.output_text.logprobs"
# include entries a chat upstream cannot fill: accepted, the items come back without them.
INCLUDE_NO_EFFECT = (
    "reasoning.encrypted_content",
    "web_search_call.action.sources",
    "web_search_call.results",
    "code_interpreter_call.outputs",
    "computer_call_output.output.image_url",
    "file_search_call.results",
    "message.input_image.image_url",
)
# Tool types a chat upstream cannot offer its model: those OpenAI's servers run, and the
# computer-use tools, whose calls (computer actions) no chat model produces.
HOSTED_TOOLS = (
    "web_search",
    "web_search_preview",
    "web_search_2025_08_26",
    "web_search_preview_2025_03_11",
    "file_search",
    "code_interpreter",
    "image_generation",
    "mcp",
    "programmatic_tool_calling",
    "computer",
    "computer_use_preview",
)
# Tool types the client runs on call items of their own, which chat models do not make.
CLIENT_ITEM_TOOLS = ("shell", "local_shell", "apply_patch")
HOSTED_POLICIES = ("drop", "refuse")
TOOL_SEARCH_PARAMETERS = {"type": "object", "properties": {}}
TOOL_SEARCH_DESCRIPTION = "Search for tools to load for the task at hand."
SUMMARY_HEADER = "Summary of the earlier conversation:\n"

ITEM_KEYS = {
    "message": ("type", "id", "status", "role", "content"),
    "function_call": ("type", "id", "status", "call_id", "name", "namespace", "arguments"),
    "custom_tool_call": ("type", "id", "status", "call_id", "name", "namespace", "input"),
    "function_call_output": ("type", "id", "status", "call_id", "output", "name", "namespace"),
    "tool_search_call": ("type", "id", "status", "call_id", "arguments", "execution"),
    "tool_search_output": ("type", "id", "status", "call_id", "tools", "execution"),
    "custom_tool_call_output": ("type", "id", "status", "call_id", "output"),
    "reasoning": ("type", "id", "status", "summary", "content", "encrypted_content"),
    "compaction": ("type", "id", "status", "encrypted_content", "created_by"),
}
PART_KEYS = {
    "input_text": ("type", "text"),
    "output_text": ("type", "text", "annotations", "logprobs"),
    "text": ("type", "text"),
    "refusal": ("type", "refusal"),
    "input_image": ("type", "image_url", "file_id", "detail"),
    "input_file": ("type", "file_data", "file_id", "file_url", "filename"),
}
TEXT_PARTS = ("input_text", "output_text", "text")
MEDIA_PARTS = ("input_image", "input_file")


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
        self.logprobs = False
        self.top_logprobs = 0


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
    """The chat request for the Responses ``body``, whose context is ``items`` (earlier
    turns' items, then this turn's normalized input); a 400 for what cannot be sent.

    The first ``context_len`` items come from earlier responses: errors in the rest are
    named ``input[i]`` counting from the first of them, errors in those name
    ``previous_response_id``.  ``hosted_tools`` is ``drop`` (left out, listed in
    ``dropped``) or ``refuse`` (a 400).
    """
    if hosted_tools not in HOSTED_POLICIES:
        raise ValueError(f"hosted_tools must be one of {HOSTED_POLICIES}, not {hosted_tools!r}")
    model = require_model(body.get("model"))
    fields = _Out(hosted_tools, ToolNames(declared_tools(body)))
    for name, value in body.items():
        if name not in FIELDS:
            raise unknown_parameter(name)
        if value is not None:
            FIELDS[name](value, fields)
    if fields.logprobs:
        fields["logprobs"] = True
        if fields.top_logprobs:
            fields["top_logprobs"] = fields.top_logprobs
    builder = _Messages(reasoning_field, developer_role, fields.names)
    builder.instructions(body.get("instructions"))
    for i, item in enumerate(items):
        if i >= context_len:
            builder.add(item, f"input[{i - context_len}]")
            continue
        try:
            builder.add(item, f"input[{i}]")
        except GatewayError as exc:
            raise _context_error(exc, i) from None
    chat = {
        "model": model,
        "messages": builder.finish(),
        "stream": True,
        "stream_options": {"include_usage": True},
        **fields,
    }
    return ChatRequest(chat, fields.dropped)


def _context_error(exc: GatewayError, index: int) -> GatewayError:
    message = f"item {index} of the previous response's context cannot be sent: {exc.message}"
    return GatewayError(exc.status, message, code=exc.code, param="previous_response_id")


def _stop(value: Any, where: str) -> str | list[str]:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise bad_request(f"{where!r} must be a string or an array of strings", where)


def _check_keys(obj: Mapping[str, Any], allowed: Collection[str], where: str) -> None:
    check_keys(obj, allowed, where, REFUSED_KEYS)


# -- body fields ------------------------------------------------------------------------
Field = Callable[[Any, _Out], None]


def _passed(name: str, check: Callable[[Any, str], Any]) -> Field:
    """A field sent as it is, once ``check`` passes it."""

    def put(value: Any, out: _Out) -> None:
        out[name] = check(value, name)

    return put


def _nothing(value: Any, out: _Out) -> None:
    """A field acted on elsewhere (by the caller, or read directly)."""


def _background(value: Any, out: _Out) -> None:
    if value is not False:
        raise unsupported("background", "background responses are not served")


def _stream_options(value: Any, out: _Out) -> None:
    _check_keys(as_object(value, "stream_options"), ("include_obfuscation",), "stream_options")


def _max_output_tokens(value: Any, out: _Out) -> None:
    out["max_completion_tokens"] = as_count(value, "max_output_tokens")


def _reasoning(value: Any, out: _Out) -> None:
    value = as_object(value, "reasoning")
    _check_keys(value, ("effort", "summary", "generate_summary"), "reasoning")
    for key in ("summary", "generate_summary"):
        if value.get(key) is not None:
            as_string(value[key], f"reasoning.{key}")
    if value.get("effort") is not None:
        out["reasoning_effort"] = as_string(value["effort"], "reasoning.effort")


def _text(value: Any, out: _Out) -> None:
    value = as_object(value, "text")
    _check_keys(value, ("format", "verbosity"), "text")
    if value.get("verbosity") is not None:
        out["verbosity"] = as_string(value["verbosity"], "text.verbosity")
    if value.get("format") is not None:
        fmt = _format(as_object(value["format"], "text.format"))
        if fmt is not None:
            out["response_format"] = fmt


def _format(fmt: Mapping[str, Any]) -> dict[str, Any] | None:
    kind = fmt.get("type")
    if kind == "text":
        _check_keys(fmt, ("type",), "text.format")
        return None
    if kind == "json_object":
        _check_keys(fmt, ("type",), "text.format")
        return {"type": "json_object"}
    if kind != "json_schema":
        raise unsupported("text.format.type", f"{kind!r} is not a chat response format")
    _check_keys(fmt, ("type", "name", "schema", "strict", "description"), "text.format")
    schema: dict[str, Any] = {
        "name": as_name(fmt.get("name"), "text.format.name"),
        "schema": dict(as_object(fmt.get("schema"), "text.format.schema")),
    }
    if fmt.get("strict") is not None:
        schema["strict"] = as_boolean(fmt["strict"], "text.format.strict")
    if fmt.get("description") is not None:
        schema["description"] = as_string(fmt["description"], "text.format.description")
    return {"type": "json_schema", "json_schema": schema}


def _truncation(value: Any, out: _Out) -> None:
    if value not in ("auto", "disabled"):
        raise bad_request("'truncation' must be 'auto' or 'disabled'", "truncation")


def _include(value: Any, out: _Out) -> None:
    if not isinstance(value, list):
        raise bad_request("'include' must be an array", "include")
    for i, entry in enumerate(value):
        if entry == LOGPROBS:
            out.logprobs = True
        elif entry not in INCLUDE_NO_EFFECT:
            raise bad_request(f"'include[{i}]' is not a known includable: {entry!r}", "include")


def _top_logprobs(value: Any, out: _Out) -> None:
    out.top_logprobs = as_count(value, "top_logprobs", least=0)
    if out.top_logprobs > 20:
        raise bad_request("'top_logprobs' must be at most 20", "top_logprobs")


def _refused(name: str, why: str) -> Field:
    """A field refused whenever it is set."""

    def refuse(value: Any, out: _Out) -> None:
        raise unsupported(name, why)

    return refuse


def _tools(value: Any, out: _Out) -> None:
    tools: list[dict[str, Any]] = []
    for i, tool in enumerate(as_objects(value, "tools")):
        tools += _tool(tool, f"tools[{i}]", out)
    if tools:
        out["tools"] = tools


def _tool(tool: Mapping[str, Any], where: str, out: _Out) -> list[dict[str, Any]]:
    kind = tool.get("type")
    if kind == "function":
        return [_function_tool(tool, where, "", out.names)]
    if kind == "custom":
        return [_custom_tool(tool, where, "", out.names)]
    if kind == "namespace":
        return _namespace(tool, where, out.names)
    if kind == "tool_search" and tool.get("execution") == "client":
        return [_tool_search(tool, where)]
    if kind in HOSTED_TOOLS or kind == "tool_search":
        if out.hosted_tools == "refuse":
            raise unsupported(f"{where}.type", f"{kind!r}: {HOSTED}")
        out.dropped.append(str(kind))
        return []
    if kind in CLIENT_ITEM_TOOLS:
        why = f"{kind!r} tools are called with {kind}_call items, which no chat upstream produces"
        raise unsupported(f"{where}.type", why)
    raise unsupported(f"{where}.type", f"{kind!r} is not a tool type a chat upstream can take")


def _tool_search(tool: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A client-run tool search as a function tool named ``tool_search``."""
    _check_keys(tool, ("type", "execution", "description", "parameters"), where)
    fn: dict[str, Any] = {
        "name": "tool_search",
        "description": TOOL_SEARCH_DESCRIPTION,
        "parameters": TOOL_SEARCH_PARAMETERS,
    }
    if tool.get("description") is not None:
        fn["description"] = as_string(tool["description"], f"{where}.description")
    if tool.get("parameters") is not None:
        fn["parameters"] = dict(as_object(tool["parameters"], f"{where}.parameters"))
    return {"type": "function", "function": fn}


def _namespace(tool: Mapping[str, Any], where: str, names: ToolNames) -> list[dict[str, Any]]:
    _check_keys(tool, ("type", "name", "description", "tools"), where)
    prefix = as_name(tool.get("name"), f"{where}.name") + "."
    out = []
    for j, sub in enumerate(as_objects(tool.get("tools"), f"{where}.tools")):
        at = f"{where}.tools[{j}]"
        kind = sub.get("type")
        if kind == "function":
            out.append(_function_tool(sub, at, prefix, names))
        elif kind == "custom":
            out.append(_custom_tool(sub, at, prefix, names))
        else:
            raise unsupported(f"{at}.type", f"{kind!r}: a namespace holds function tools here")
    return out


TOOL_KEYS = ("type", "name", "description", "defer_loading")


def _function_tool(
    tool: Mapping[str, Any], where: str, prefix: str, names: ToolNames
) -> dict[str, Any]:
    _check_keys(tool, (*TOOL_KEYS, "parameters", "strict"), where)
    name = names.wire(prefix + as_name(tool.get("name"), f"{where}.name"))
    fn: dict[str, Any] = {"name": name}
    if tool.get("description") is not None:
        fn["description"] = as_string(tool["description"], f"{where}.description")
    params = tool.get("parameters")
    fn["parameters"] = (
        {"type": "object", "properties": {}}
        if params is None
        else dict(as_object(params, f"{where}.parameters"))
    )
    if tool.get("strict") is not None:
        fn["strict"] = as_boolean(tool["strict"], f"{where}.strict")
    return {"type": "function", "function": fn}


def _custom_tool(
    tool: Mapping[str, Any], where: str, prefix: str, names: ToolNames
) -> dict[str, Any]:
    _check_keys(tool, (*TOOL_KEYS, "format"), where)
    custom: dict[str, Any] = {
        "name": names.wire(prefix + as_name(tool.get("name"), f"{where}.name"))
    }
    if tool.get("description") is not None:
        custom["description"] = as_string(tool["description"], f"{where}.description")
    if tool.get("format") is not None:
        custom["format"] = _custom_format(as_object(tool["format"], f"{where}.format"), where)
    return {"type": "custom", "custom": custom}


def _custom_format(fmt: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A Responses custom tool format as chat's (its grammar nested under ``grammar``)."""
    at = f"{where}.format"
    if fmt.get("type") == "text":
        _check_keys(fmt, ("type",), at)
        return {"type": "text"}
    if fmt.get("type") == "grammar":
        _check_keys(fmt, ("type", "syntax", "definition"), at)
        grammar = {
            "definition": as_string(fmt.get("definition"), f"{at}.definition"),
            "syntax": as_name(fmt.get("syntax"), f"{at}.syntax"),
        }
        return {"type": "grammar", "grammar": grammar}
    raise bad_request(f"'{at}.type' must be 'text' or 'grammar'", f"{at}.type")


def _tool_choice_field(value: Any, out: _Out) -> None:
    kind = value.get("type") if isinstance(value, Mapping) else None
    if kind in HOSTED_TOOLS and out.hosted_tools == "drop":
        out.dropped.append(f"tool_choice:{kind}")  # its tool is dropped: the choice goes too
        return
    out["tool_choice"] = _tool_choice(value, out.names)


def _tool_choice(choice: Any, names: ToolNames) -> Any:
    if choice in ("auto", "none", "required"):
        return choice
    if isinstance(choice, str) or not isinstance(choice, Mapping):
        raise bad_request(
            "'tool_choice' must be 'auto', 'none', 'required' or an object", "tool_choice"
        )
    if choice.get("type") != "allowed_tools":
        return _named_choice(choice, "tool_choice", names, declared=True)
    _check_keys(choice, ("type", "mode", "tools"), "tool_choice")
    mode = choice.get("mode")
    if mode not in ("auto", "required"):
        raise bad_request("'tool_choice.mode' must be 'auto' or 'required'", "tool_choice.mode")
    tools = as_objects(choice.get("tools"), "tool_choice.tools")
    named = [_named_choice(t, f"tool_choice.tools[{i}]", names) for i, t in enumerate(tools)]
    return {"type": "allowed_tools", "allowed_tools": {"mode": mode, "tools": named}}


def _named_choice(
    choice: Mapping[str, Any], where: str, names: ToolNames, declared: bool = False
) -> dict[str, Any]:
    kind = choice.get("type")
    if kind not in ("function", "custom"):
        raise unsupported(f"{where}.type", f"{kind!r}: {HOSTED}")
    _check_keys(choice, ("type", "name"), where)
    name = as_name(choice.get("name"), f"{where}.name")
    if declared and name not in names.to_wire:
        raise bad_request(f"Tool choice '{name}' not found in 'tools' parameter.", where)
    name = names.wire(name)
    return {"type": kind, kind: {"name": name}}


def _table() -> dict[str, Field]:
    passed = {
        "parallel_tool_calls": as_boolean,
        "temperature": as_number,
        "top_p": as_number,
        "presence_penalty": as_number,
        "frequency_penalty": as_number,
        "user": as_string,
        "metadata": as_metadata,
        "stop": _stop,
        "prompt_cache_key": as_string,
        "prompt_cache_retention": as_string,
        "safety_identifier": as_string,
        "service_tier": as_string,
    }
    table: dict[str, Field] = {name: _passed(name, check) for name, check in passed.items()}
    table |= {name: _nothing for name in CALLER}
    table |= {
        "model": _nothing,
        "instructions": _nothing,
        "background": _background,
        "stream_options": _stream_options,
        "max_output_tokens": _max_output_tokens,
        "reasoning": _reasoning,
        "text": _text,
        "tools": _tools,
        "tool_choice": _tool_choice_field,
        "truncation": _truncation,
        "include": _include,
        "top_logprobs": _top_logprobs,
        "max_tool_calls": _refused("max_tool_calls", "the gateway does not count tool calls"),
        "moderation": _refused("moderation", "the gateway runs no moderation"),
    }
    for name in ("client_metadata", "access_programs", "background_options", "image"):
        table[name] = _nothing
    table["prompt_cache_options"] = _nothing
    for name in ("conversation", "prompt", "context_management"):
        table[name] = _refused(name, "it has no chat completions equivalent")
    return table


# Body field -> what it does to the chat request (a field not here is unknown).
FIELDS = _table()


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

    def instructions(self, value: Any) -> None:
        if value is not None and as_string(value, "instructions"):
            self.out.append({"role": "system", "content": value})

    def finish(self) -> list[dict[str, Any]]:
        """The messages (reasoning left at the very end belongs to no message)."""
        return self.out

    def add(self, item: Mapping[str, Any], where: str) -> None:
        item = as_object(item, where)
        kind = item.get("type", "message")
        if not isinstance(kind, str) or kind not in ITEM_KEYS:
            raise unsupported(f"{where}.type", f"{kind!r} items cannot be sent to a chat upstream")
        allowed = ITEM_KEYS[kind]
        if kind == "message" and item.get("role") == "assistant":
            allowed = (*allowed, "phase")
        _check_keys(item, allowed, where)
        if kind == "message":
            self._message(item, where)
        elif kind in ("function_call", "custom_tool_call", "tool_search_call"):
            self._call(item, where)
        elif kind == "reasoning":
            self._reasoning(item, where)
        else:
            self._flush()
            if kind == "compaction":
                self._compaction(item, where)
            else:
                self._output(item, where)

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
        role = item.get("role")
        if role not in ROLES:
            raise bad_request(f"'{where}.role' must be one of {', '.join(ROLES)}", f"{where}.role")
        parts = _content_parts(item.get("content"), where)
        if role == "assistant":
            self.out.append(self._assistant_message(parts, where))
            return
        self._flush()
        chat_role = self.developer_role if role == "developer" else role
        chat_parts = [_user_part(p, f"{where}.content[{j}]", role) for j, p in enumerate(parts)]
        self.out.append({"role": chat_role, "content": _chat_content(chat_parts)})

    def _assistant_message(self, parts: list[Mapping[str, Any]], where: str) -> dict[str, Any]:
        texts: list[str] = []
        refusals: list[str] = []
        for j, part in enumerate(parts):
            at = f"{where}.content[{j}]"
            kind = _part_kind(part, at)
            if kind in TEXT_PARTS:
                texts.append(as_string(part.get("text"), f"{at}.text"))
            elif kind == "refusal":
                refusals.append(as_string(part.get("refusal"), f"{at}.refusal"))
            else:
                raise unsupported(f"{at}.type", "a chat assistant message holds text only")
        msg = self._assistant("".join(texts) if texts or not refusals else None)
        if refusals:
            msg["refusal"] = "".join(refusals)
        return msg

    def _call(self, item: Mapping[str, Any], where: str) -> None:
        call_id = as_name(item.get("call_id"), f"{where}.call_id")
        if item["type"] == "tool_search_call":
            name, arguments = "tool_search", item.get("arguments")
            text = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
            item = {"type": "function_call", "name": name, "arguments": text}
        name = as_name(item.get("name"), f"{where}.name")
        if item.get("namespace") is not None:
            name = f"{as_name(item['namespace'], f'{where}.namespace')}.{name}"
        name = self.names.wire(name)
        if item["type"] == "custom_tool_call":
            custom = {"name": name, "input": as_string(item.get("input"), f"{where}.input")}
            call = {"id": call_id, "type": "custom", "custom": custom}
        else:
            arguments = as_string(item.get("arguments"), f"{where}.arguments")
            function = {"name": name, "arguments": arguments}
            call = {"id": call_id, "type": "function", "function": function}
        self.calls.add(call_id)
        last = self.out[-1] if self.out else None
        if last is None or last["role"] != "assistant" or self.reasoning:
            last = self._assistant(None)
            self.out.append(last)
        last.setdefault("tool_calls", []).append(call)

    def _output(self, item: Mapping[str, Any], where: str) -> None:
        call_id = item.get("call_id")
        if not isinstance(call_id, str) or call_id not in self.calls:
            raise GatewayError(
                400,
                f"No tool call found for function call output with call_id {call_id!r}.",
                code="tool_call_not_found",
                param="input",
            )
        if item["type"] == "tool_search_output":
            tools = item.get("tools")
            content = json.dumps({"tools": tools if isinstance(tools, list) else []})
        else:
            content = _tool_output(item.get("output"), f"{where}.output")
        self.out.append({"role": "tool", "tool_call_id": call_id, "content": content})

    def _reasoning(self, item: Mapping[str, Any], where: str) -> None:
        text = _reasoning_text(item, where)
        if text:
            self.reasoning.append(text)
        elif item.get("encrypted_content"):
            raise unsupported(
                f"{where}.encrypted_content", "a chat completions upstream cannot read it"
            )

    def _compaction(self, item: Mapping[str, Any], where: str) -> None:
        summary = open_summary(item.get("encrypted_content"), f"{where}.encrypted_content")
        self.out.append({"role": self.developer_role, "content": SUMMARY_HEADER + summary})


def _content_parts(content: Any, where: str) -> list[Mapping[str, Any]]:
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}]
    if not isinstance(content, list):
        at = f"{where}.content"
        raise bad_request(f"{at!r} must be a string or an array of parts", at)
    return as_objects(content, f"{where}.content")


def _part_kind(part: Mapping[str, Any], at: str) -> str:
    kind = part.get("type")
    if not isinstance(kind, str) or kind not in PART_KEYS:
        raise unsupported(f"{at}.type", f"{kind!r} has no chat content part")
    _check_keys(part, PART_KEYS[kind], at)
    return kind


def _chat_content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """One text part as a plain string, none as ``""``, else the list of parts."""
    if not parts:
        return ""
    if len(parts) == 1 and parts[0]["type"] == "text":
        return str(parts[0]["text"])
    return parts


def _user_part(part: Mapping[str, Any], at: str, role: str) -> dict[str, Any]:
    """A part of a user, system or developer message as a chat content part."""
    kind = _part_kind(part, at)
    if kind in TEXT_PARTS:
        return {"type": "text", "text": as_string(part.get("text"), f"{at}.text")}
    if kind in MEDIA_PARTS and role != "user":
        raise unsupported(f"{at}.type", f"a chat {role} message holds text only")
    if kind == "input_image":
        return _image_part(part, at)
    if kind == "input_file":
        return _file_part(part, at)
    raise unsupported(f"{at}.type", f"{kind!r} parts belong in assistant messages")


def _image_part(part: Mapping[str, Any], at: str) -> dict[str, Any]:
    if part.get("file_id") is not None:
        raise unsupported(f"{at}.file_id", "a chat upstream cannot resolve file ids for images")
    image = {"url": as_name(part.get("image_url"), f"{at}.image_url")}
    detail = part.get("detail")
    if detail is not None and as_string(detail, f"{at}.detail") != "auto":
        image["detail"] = detail
    return {"type": "image_url", "image_url": image}


def _file_part(part: Mapping[str, Any], at: str) -> dict[str, Any]:
    if part.get("file_url") is not None:
        raise unsupported(f"{at}.file_url", "a chat upstream takes file data, not a URL")
    file = {
        key: as_string(part[key], f"{at}.{key}")
        for key in ("file_data", "file_id", "filename")
        if part.get(key) is not None
    }
    if "file_data" not in file and "file_id" not in file:
        raise bad_request(f"{at!r} needs file_data or file_id", f"{at}.file_data")
    return {"type": "file", "file": file}


def _tool_output(output: Any, where: str) -> str:
    """A tool output (a string, or text parts joined) as the chat tool message content."""
    if isinstance(output, str):
        return output
    if not isinstance(output, list):
        raise bad_request(f"{where!r} must be a string or an array of parts", where)
    texts = []
    for j, part in enumerate(as_objects(output, where)):
        at = f"{where}[{j}]"
        kind = _part_kind(part, at)
        if kind not in TEXT_PARTS:
            raise unsupported(f"{at}.type", "a chat tool message holds text only")
        texts.append(as_string(part.get("text"), f"{at}.text"))
    return "".join(texts)


def _reasoning_text(item: Mapping[str, Any], where: str) -> str:
    """The reasoning text of a reasoning item: its raw text, else its summaries."""
    raw = _texts(item.get("content"), "reasoning_text", f"{where}.content")
    if any(raw):
        return "".join(raw)
    summary = _texts(item.get("summary"), "summary_text", f"{where}.summary")
    return "\n\n".join(s for s in summary if s)


def _texts(parts: Any, kind: str, where: str) -> list[str]:
    if parts is None:
        return []
    out = []
    for j, part in enumerate(as_objects(parts, where)):
        at = f"{where}[{j}]"
        if part.get("type") != kind:
            raise bad_request(f"'{at}.type' must be {kind!r}", f"{at}.type")
        _check_keys(part, ("type", "text"), at)
        out.append(as_string(part.get("text"), f"{at}.text"))
    return out
