"""A Responses create request as the Chat Completions request sent upstream.

The body has passed its request model (``request_check``).  Each field becomes what its
row in ``spec/requests/responses.yaml`` says: itself, or what a converter here
(``CONVERTERS``) makes of it.  A tool is what the table's ``tools`` says; a hosted one is
left out (listed in ``ChatRequest.dropped``) or refused, as ``hosted_tools`` says.  What
the schemas take and a chat upstream cannot hold is a 400 naming it.  Tool names a chat
upstream would refuse are sent under their wire names (``ToolNames``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..._requests import ROUTES
from ..core.convert import TYPED_TOOLS, Tool, declared_tools
from ..core.tool_names import ToolNames
from .client_tools import CALLS as TYPED_CALLS
from .client_tools import OUTPUTS as TYPED_OUTPUTS
from .client_tools import call_arguments, output_content, typed_function
from .compaction_token import open_summary
from .errors import GatewayError, bad_request, unsupported
from .request_check import translate_rows

TOOLS: dict[str, dict[str, Any]] = ROUTES["responses"]["tools"]  # tool type -> its fate
CALL_KINDS = frozenset(TYPED_TOOLS.values())  # the kinds of the client-run typed tools
HOSTED = "a chat completions upstream has no hosted tools"
LOGPROBS = "message.output_text.logprobs"
SUMMARY_HEADER = "Summary of the earlier conversation:\n"
OUTPUTS = ("function_call_output", "custom_tool_call_output", "tool_search_output")
TEXT_PARTS = ("input_text", "output_text", "text")
CHAT_CALLS = {  # a call item's type -> the chat tool call's type and the key of its input
    "function_call": ("function", "arguments"),
    "custom_tool_call": ("custom", "input"),
    "tool_search_call": ("function", "arguments"),
}


@dataclass
class ChatRequest:
    """The chat body sent upstream, and the hosted tools left out of it."""

    body: dict[str, Any]
    dropped: list[str] = field(default_factory=list)


class _Out(dict[str, Any]):
    """The translated fields, and what translating them needs and finds."""

    def __init__(self, hosted_tools: str, declared: Mapping[str, Tool]) -> None:
        super().__init__()
        self.hosted_tools = hosted_tools
        self.names = ToolNames(declared)
        # a typed tool's kind -> the name the model calls it by
        self.typed = {t.kind: called for called, t in declared.items() if t.kind in CALL_KINDS}
        self.dropped: list[str] = []
        self.offered: set[str] = set()


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
    out = _Out(hosted_tools, declared_tools(body))
    translate_rows(body, "responses", out, CONVERTERS, ("model", "messages"))
    messages = _Messages(reasoning_field, developer_role, out.names, out.typed)
    if body.get("instructions"):
        messages.out.append({"role": "system", "content": body["instructions"]})
    for i, item in enumerate(items):
        try:
            messages.add(item, f"input[{i - context_len if i >= context_len else i}]")
        except GatewayError as exc:
            if i >= context_len:
                raise
            why = f"item {i} of the previous response's context cannot be sent: {exc.message}"
            param = "previous_response_id"
            raise GatewayError(exc.status, why, code=exc.code, param=param) from None
    messages.screenshots()
    head = {"model": body["model"], "messages": messages.out, "stream": True}
    return ChatRequest({**head, "stream_options": {"include_usage": True}, **out}, out.dropped)


def _set(obj: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    """The ``keys`` of ``obj`` that are set (not null), in the order given."""
    return {key: obj[key] for key in keys if obj.get(key) is not None}


# -- the converters the table names -----------------------------------------------------
def _text(value: Mapping[str, Any], out: _Out) -> None:
    out.update(_set(value, "verbosity"))
    fmt = value.get("format") or {"type": "text"}
    if fmt["type"] == "json_object":
        out["response_format"] = {"type": "json_object"}
    elif fmt["type"] == "json_schema":
        schema = _set(fmt, "name", "schema", "strict", "description")
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
    if kind in ("function", "custom"):
        return [_named_tool(tool, "", out.names)]
    if kind == "namespace":
        return [_named_tool(sub, tool["name"] + ".", out.names) for sub in tool["tools"]]
    if kind == "tool_search" and tool.get("execution") == "client":  # else hosted
        function = {**TOOLS[kind]["function"], **_set(tool, "description", "parameters")}
        return [{"type": "function", "function": function}]
    if kind in TYPED_TOOLS:  # client-run: a function taking its action
        called = out.typed[TYPED_TOOLS[kind]]
        if called in out.offered:  # computer and computer_use_preview: offered once
            return []
        out.offered.add(called)
        return [typed_function(tool, TOOLS[kind], out.names.wire(called))]
    if TOOLS[kind]["fate"] == "refused":
        raise unsupported(f"{where}.type", TOOLS[kind]["why"])
    if out.hosted_tools == "refuse":
        raise unsupported(f"{where}.type", f"{kind!r}: {HOSTED}")
    out.dropped.append(kind)
    return []


def parameters(value: Mapping[str, Any] | None) -> dict[str, Any]:
    """A function's parameters schema (a copy), an object of no properties if unset."""
    return {"type": "object", "properties": {}} if value is None else dict(value)


def _named_tool(tool: Mapping[str, Any], prefix: str, names: ToolNames) -> dict[str, Any]:
    """A function or custom tool; a custom tool's grammar nests under ``grammar``."""
    kind, fmt = tool["type"], tool.get("format")
    spec = {"name": names.wire(prefix + tool["name"]), **_set(tool, "description")}
    if kind == "function":
        spec["parameters"] = parameters(tool.get("parameters"))
        spec.update(_set(tool, "strict"))
    elif fmt is not None and fmt["type"] == "grammar":
        spec["format"] = {"type": "grammar", "grammar": _set(fmt, "definition", "syntax")}
    elif fmt is not None:
        spec["format"] = {"type": "text"}
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
        out["tool_choice"] = _named_choice(
            value, "tool_choice", out.names, out.typed, declared=True
        )
        return
    tools = value["tools"]
    named = [
        _named_choice(t, f"tool_choice.tools[{i}]", out.names, out.typed)
        for i, t in enumerate(tools)
    ]
    allowed = {"mode": value["mode"], "tools": named}
    out["tool_choice"] = {"type": "allowed_tools", "allowed_tools": allowed}


def _named_choice(
    choice: Mapping[str, Any],
    where: str,
    names: ToolNames,
    typed: Mapping[str, str],
    declared: bool = False,
) -> dict[str, Any]:
    kind = choice.get("type")
    if kind in TYPED_TOOLS and TYPED_TOOLS[kind] in typed:
        return {"type": "function", "function": {"name": names.wire(typed[TYPED_TOOLS[kind]])}}
    if kind not in ("function", "custom") or "name" not in choice:
        raise unsupported(f"{where}.type", f"{kind!r}: {HOSTED}")
    name = choice["name"]
    if declared and name not in names.to_wire:
        raise bad_request(f"Tool choice '{name}' not found in 'tools' parameter.", where)
    return {"type": kind, kind: {"name": names.wire(name)}}


Converter = Callable[[Any, _Out], None]
CONVERTERS: dict[str, Converter] = {
    "text": _text,
    "include": _include,
    "tools": _tools,
    "tool_choice": _tool_choice,
}


# -- the context ------------------------------------------------------------------------
class _Messages:
    """Chat messages built from context items, one item at a time."""

    def __init__(
        self,
        reasoning_field: str,
        developer_role: str,
        names: ToolNames,
        typed: Mapping[str, str] | None = None,
    ) -> None:
        self.names = names
        self.typed = dict(typed or {})  # a typed tool's kind -> the name it is called by
        self.shots: list[str] = []  # screenshots waiting for the run of tool messages to end
        self.reasoning_field = reasoning_field
        self.developer_role = developer_role
        self.out: list[dict[str, Any]] = []
        self.calls: set[str] = set()
        self.reasoning: list[str] = []  # waiting for the assistant turn it belongs to
        self.search = ""  # the id given the last server-run tool_search_call (none of its own)

    def add(self, item: Mapping[str, Any], where: str) -> None:
        kind = item["type"]
        if kind.startswith("openai:"):  # OpenAI's typed items, as Open Responses names them
            kind = kind.removeprefix("openai:")
            item = {**item, "type": kind}
        if kind not in OUTPUTS and kind not in TYPED_OUTPUTS:
            self.screenshots()
        if kind in TYPED_CALLS:
            self._typed_call(item)
        elif kind in TYPED_OUTPUTS:
            self._flush()
            self._typed_output(item)
        elif kind == "message":
            self._message(item, where)
        elif kind in CHAT_CALLS:
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
        role, parts = item["role"], item["content"]
        if role == "assistant":
            self.out.append(self._assistant_message(parts, where))
            return
        self._flush()
        chat_role = self.developer_role if role == "developer" else role
        chat_parts = [_user_part(p, f"{where}.content[{j}]", role) for j, p in enumerate(parts)]
        self.out.append({"role": chat_role, "content": _chat_content(chat_parts)})

    def _assistant_message(self, parts: list[Mapping[str, Any]], where: str) -> dict[str, Any]:
        texts = [p["text"] for p in parts if p["type"] in TEXT_PARTS]
        refusals = [p["refusal"] for p in parts if p["type"] == "refusal"]
        for j, part in enumerate(parts):
            if part["type"] not in (*TEXT_PARTS, "refusal"):
                at = f"{where}.content[{j}].type"
                raise unsupported(at, "a chat assistant message holds text only")
        msg = self._assistant("".join(texts) if texts or not refusals else None)
        if refusals:
            msg["refusal"] = "".join(refusals)
        return msg

    def _call(self, item: Mapping[str, Any]) -> None:
        kind, namespace = item["type"], item.get("namespace")
        if kind == "tool_search_call":
            arguments = item.get("arguments")
            name = "tool_search"
            value = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
        else:
            name = item["name"] if namespace is None else f"{namespace}.{item['name']}"
            name, value = self.names.wire(name), item[CHAT_CALLS[kind][1]]
        chat_kind, key = CHAT_CALLS[kind]
        call_id = self._tool_call(item, {"type": chat_kind, chat_kind: {"name": name, key: value}})
        self.search = call_id if kind == "tool_search_call" else self.search

    def _tool_call(self, item: Mapping[str, Any], call: dict[str, Any]) -> str:
        """``call`` added to the assistant turn it belongs to; its id."""
        call_id = item.get("call_id") or f"call_{item.get('id') or len(self.calls)}"
        self.calls.add(call_id)
        last = self.out[-1] if self.out else None
        if last is None or last["role"] != "assistant" or self.reasoning:
            last = self._assistant(None)
            self.out.append(last)
        last.setdefault("tool_calls", []).append({"id": call_id, **call})
        return str(call_id)

    def _typed_call(self, item: Mapping[str, Any]) -> None:
        """A typed call as the call of the function the model was offered for it."""
        kind = TYPED_CALLS[item["type"]]
        name = self.names.wire(self.typed.get(kind, kind))
        function = {"name": name, "arguments": call_arguments(item)}
        self._tool_call(item, {"type": "function", "function": function})

    def _typed_output(self, item: Mapping[str, Any]) -> None:
        # a local shell's output names its call by id, the others by call_id
        local = item["type"] == "local_shell_call_output"
        call_id = item.get("id") if local else item.get("call_id")
        self._known_call(call_id, item["type"])
        content, shot = output_content(item)
        self.out.append({"role": "tool", "tool_call_id": call_id, "content": content})
        if shot is not None:
            self.shots.append(shot)

    def screenshots(self) -> None:
        """The screenshots of the tool messages just sent, as one user message."""
        if self.shots:
            parts = [{"type": "image_url", "image_url": {"url": url}} for url in self.shots]
            self.out.append({"role": "user", "content": parts})
            self.shots.clear()

    def _output(self, item: Mapping[str, Any], where: str) -> None:
        search = item["type"] == "tool_search_output"  # server-run: it answers the last search
        call_id = item.get("call_id") or (self.search if search else None)
        self._known_call(call_id, "function call output")
        if search:
            content = json.dumps({"tools": item.get("tools") or []})
        else:
            content = _tool_output(item["output"], f"{where}.output")
        self.out.append({"role": "tool", "tool_call_id": call_id, "content": content})

    def _known_call(self, call_id: Any, what: str) -> None:
        """A 400 when no call of the context has the id an output (``what``) answers."""
        if call_id not in self.calls:
            message = f"No tool call found for {what} with call_id {call_id!r}."
            raise GatewayError(400, message, code="tool_call_not_found", param="input")

    def _reasoning(self, item: Mapping[str, Any], where: str) -> None:
        raw = "".join(p["text"] for p in item.get("content") or ())
        summary = "\n\n".join(p["text"] for p in item.get("summary") or () if p["text"])
        if raw or summary:
            self.reasoning.append(raw or summary)
        elif item.get("encrypted_content"):
            why = "a chat completions upstream cannot read it"
            raise unsupported(f"{where}.encrypted_content", why)


def _chat_content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """One text part as a plain string, none as ``""``, else the list of parts."""
    if len(parts) == 1 and parts[0]["type"] == "text":
        return str(parts[0]["text"])
    return parts or ""


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
        detail = {} if part.get("detail") in (None, "auto") else {"detail": part["detail"]}
        return {"type": "image_url", "image_url": {"url": part["image_url"], **detail}}
    return {"type": "file", "file": _set(part, "file_data", "file_id", "filename")}


def _tool_output(output: str | list[Mapping[str, Any]], where: str) -> str:
    """A tool output (a string, or text parts joined) as the chat tool message content."""
    if isinstance(output, str):
        return output
    for j, part in enumerate(output):
        if part["type"] not in TEXT_PARTS:
            raise unsupported(f"{where}[{j}].type", "a chat tool message holds text only")
    return "".join(part["text"] for part in output)
