"""A fake model upstream for the gateway tests (and for the Open Responses compliance tester).

:class:`ModelUpstream` is a Starlette app that records every request and answers:

- ``POST /v1/chat/completions`` (or ``/chat/completions``): a small deterministic model.
  With non-empty ``tools`` and ``tool_choice`` not ``"none"`` it calls a tool (the forced
  one, else the first; with ``"auto"`` or no choice, a conversation whose last message is
  a tool result is answered with text instead, so agent loops end).  Otherwise it thinks
  "Considering the request." (in ``reasoning_content``, 3 pieces) and answers
  ``"Hello! You said: " + <text of the last user message>`` in pieces of
  :data:`PIECE` characters.  Model names containing ``text`` answer with text whatever
  the tools, names containing ``think`` also think before a tool call, names
  containing ``echo`` answer with
  :func:`echo_summary` of the messages, names containing ``parallel`` make two tool
  calls; a ``json_schema``/``json_object`` ``response_format`` answers ``{"answer": "ok"}``,
  unless the name contains ``freeform`` (a model that ignores the format).
  A last user message holding ``[shell]`` or ``[patch]`` gets what a coding agent's
  model would do (:func:`_agent_call`): Codex's ``exec_command`` or ``apply_patch``,
  writing the conversation's token to a file, then text once the result is back.
  Names containing ``typed`` call each client-run typed tool offered (the functions
  ``shell``, ``local_shell``, ``apply_patch``, ``computer``), one a turn, with an action
  holding the token (:func:`_typed_call`), then answer ``Done TOKEN: `` and the results.
  ``max_completion_tokens`` (or ``max_tokens``) caps the answer's pieces (finish
  ``"length"``).  Streams are ``chat.completion.chunk`` SSE ending in ``data: [DONE]``.
- ``POST /v1/responses`` (or ``/responses``): streaming only; replays a genuine recorded
  OpenAI stream verbatim, each line as recorded (:data:`TEXT_RECORDING`, or
  :data:`TOOL_RECORDING` when the body has tools): the ids repeat from one request to
  the next and nothing depends on the request.  Model names containing ``scripted``
  answer instead as the small model above would answer the same conversation, its
  chat stream converted to a Responses stream (:func:`chat_body_of`).
- ``GET /v1/models`` (or ``/models``): its models (by default one, ``fake-model``), and
  ``GET /v1/models/{id}`` one of them.

Model names starting with a fault name script it, on both POST routes:
``fake-429`` (429 with ``Retry-After: 7``), ``fake-500`` (500), ``fake-cut`` (a few
chunks, then the connection is closed without ``[DONE]``) and ``fake-slow`` (0.2 s
between chunks); on the chat route ``fake-error`` sends a few chunks, then the error
chunk llama.cpp's server sends (:data:`MIDSTREAM_ERROR`) and ends, and ``fake-pause``
falls silent for :data:`PAUSE` seconds mid-stream (``fake-pause-N``: N seconds).  A request with
``logprobs: true`` gets each answer piece's log probabilities
(:func:`token_logprob`, ``top_logprobs`` alternatives).

Run it by hand: ``python tests/gateway_upstream.py --port 8001``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, TypeGuard

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from responses_stream import sse_from_chat

CREATED_AT = 1_700_000_000
PIECE = 4  # characters per answer piece
REASONING = ("Considering", " the", " request.")
JSON_ANSWER = '{"answer": "ok"}'
CUSTOM_INPUT = "example input"
SLOW_DELAY = 0.2
# fake-pause models: the upstream says nothing for PAUSE seconds after PAUSE_AFTER chunks
PAUSE, PAUSE_AFTER = 1.0, 2
CUT_AFTER = 6  # chunks (or events) sent before a fake-cut stream is cut
RATE_LIMIT_ERROR = {
    "error": {
        "message": "Rate limit reached",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }
}
SERVER_ERROR = {
    "error": {
        "message": "The server had an error while processing your request. Sorry about that!",
        "type": "server_error",
        "param": None,
        "code": None,
    }
}

# What llama.cpp's server sends mid-stream when it fails (a well-formed error chunk).
MIDSTREAM_ERROR = {
    "error": {"code": 500, "type": "server_error", "message": "the model ran out of memory"}
}

RECORDINGS = Path(__file__).resolve().parent / "recordings" / "responses"
# Genuine OpenAI streams (vercel/ai fixtures, neither trimmed nor rewritten: see
# recordings/responses/provenance.json), both accepted by the openai SDK's strict
# validation and by StreamValidator.  Text: gpt-4o answering in 26 deltas.  Tool: one
# function_call of ``getDemand`` (arguments in a single delta; made by a program, so it
# has a ``caller`` and ends ``in_progress``; usage all zero).  The plainer
# openai/openai--openai-issue-11239.1.jsonl (reasoning, then a function_call in 8 deltas)
# can be passed as ``tool_recording``; the strict SDK rejects its ``response.completed``
# (no ``usage.input_tokens_details.cache_write_tokens``).
TEXT_RECORDING = "openai/openai--openai-issue-14428-denied-tool-approval.jsonl"
TOOL_RECORDING = "openai/openai--programmatic-tool-calling.2.jsonl"


@dataclass(frozen=True)
class Recorded:
    """One request as received: ``body`` is the parsed JSON (``None`` if there is none)."""

    method: str
    path: str
    body: Any
    headers: dict[str, str]  # lower-cased names

    @property
    def authorization(self) -> str | None:
        """The ``Authorization`` header, if sent."""
        return self.headers.get("authorization")


@dataclass
class _Call:
    id: str
    kind: str  # "function" or "custom"
    name: str
    text: str  # the arguments (function) or the input (custom)


@dataclass
class _Turn:
    """What the model says to one chat request."""

    reasoning: list[str] = field(default_factory=list)
    content: list[str] = field(default_factory=list)
    calls: list[_Call] = field(default_factory=list)
    finish: str = "stop"
    prompt_tokens: int = 0
    top_logprobs: int | None = None  # None: no logprobs asked for

    def usage(self) -> dict[str, Any]:
        done = len(self.reasoning) + len(self.content) + sum(len(fragments(c)) for c in self.calls)
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": done,
            "total_tokens": self.prompt_tokens + done,
            "prompt_tokens_details": {"cached_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": len(self.reasoning)},
        }


class BadRequest(Exception):
    """A request the fake refuses with 400; ``param`` names the culprit."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


# -- the model ---------------------------------------------------------------------
def message_text(content: Any) -> str:
    """The text of a message's ``content``: a string, or its text parts joined by spaces."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, Mapping)]
        return " ".join(t for t in texts if isinstance(t, str))
    return ""


def echo_summary(messages: Sequence[Any]) -> str:
    """One line per message: ``role: text``, ``tool(<tool_call_id>): text``, and one
    ``assistant->call <name>(<arguments>)`` line per tool call of an assistant message."""
    lines: list[str] = []
    for m in messages:
        if not isinstance(m, Mapping):
            continue
        role, text = m.get("role"), message_text(m.get("content"))
        if role == "tool":
            lines.append(f"tool({m.get('tool_call_id')}): {text}")
            continue
        calls = m.get("tool_calls") if role == "assistant" else None
        if not calls or text:
            lines.append(f"{role}: {text}")
        for call in calls or ():
            if not isinstance(call, Mapping):
                continue
            fn = call.get("function") or call.get("custom") or {}
            args = fn.get("arguments", fn.get("input", ""))
            lines.append(f"assistant->call {fn.get('name')}({args})")
    return "\n".join(lines)


def example_value(name: str, schema: Any) -> Any:
    """A deterministic value for the property ``name`` of JSON schema ``schema``."""
    schema = schema if isinstance(schema, Mapping) else {}
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind in ("number", "integer"):
        return 1
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        return {}
    lowered = name.lower()
    return "San Francisco, CA" if "location" in lowered or "city" in lowered else "example"


def example_arguments(parameters: Any) -> str:
    """Arguments filling each required property of ``parameters`` (a JSON schema)."""
    parameters = parameters if isinstance(parameters, Mapping) else {}
    props = parameters.get("properties")
    props = props if isinstance(props, Mapping) else {}
    required = parameters.get("required")
    names = [n for n in required if isinstance(n, str)] if isinstance(required, list) else []
    return json.dumps({n: example_value(n, props.get(n)) for n in names}, separators=(",", ":"))


def fragments(call: _Call) -> list[str]:
    """A call's arguments in at least two fragments."""
    text = call.text
    if len(text) < 2:
        return [text, ""]
    size = min(8, len(text) // 2)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _tool_key(tool: Mapping[str, Any]) -> tuple[str, str] | None:
    """(kind, name) of a function or custom tool (or tool choice); ``None`` otherwise."""
    kind = tool.get("type", "function")
    spec = tool.get(kind)
    if kind in ("function", "custom") and isinstance(spec, Mapping):
        name = spec.get("name")
        if isinstance(name, str):
            return kind, name
    return None


def _choose_tools(body: Mapping[str, Any], parallel: bool) -> list[Mapping[str, Any]]:
    """The tools the model calls (none: it answers with text)."""
    tools = [t for t in body.get("tools") or () if isinstance(t, Mapping) and _tool_key(t)]
    choice = body.get("tool_choice", "auto")
    if not tools or choice == "none":
        return []
    forced = choice not in ("auto", None)
    if isinstance(choice, Mapping) and choice.get("type") == "allowed_tools":
        allowed = choice.get("allowed_tools") or {}
        keys = {_tool_key(t) for t in allowed.get("tools") or () if isinstance(t, Mapping)}
        tools = [t for t in tools if _tool_key(t) in keys]
        forced = allowed.get("mode") == "required"
    elif isinstance(choice, Mapping):
        key = _tool_key(choice)
        tools = [t for t in tools if _tool_key(t) == key]
        if not tools:
            raise BadRequest(f"Tool choice {choice!r} not found in 'tools'", "tool_choice")
    messages = body.get("messages") or []
    last = messages[-1] if messages and isinstance(messages[-1], Mapping) else {}
    if not tools or (not forced and last.get("role") == "tool"):
        return []
    if parallel and body.get("parallel_tool_calls") is not False:
        return [tools[0], tools[1] if len(tools) > 1 else tools[0]]
    return [tools[0]]


def chat_body_of(body: Mapping[str, Any]) -> dict[str, Any]:
    """The chat request a Responses request stands for, as far as :func:`plan_turn`
    reads it: its messages (text, tool calls and results) and its function tools."""
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    messages: list[dict[str, Any]] = []
    for item in items if isinstance(items, list) else []:
        if not _is_map(item):
            continue
        if item.get("type") == "function_call_output":
            messages.append({"role": "tool", "content": str(item.get("output"))})
        elif item.get("type") == "function_call":
            call = {"id": item.get("call_id"), "type": "function", "function": item}
            messages.append({"role": "assistant", "tool_calls": [call]})
        elif item.get("role") in ("user", "system", "developer", "assistant"):
            content = item.get("content")
            if isinstance(content, list):
                content = "".join(str(p.get("text", "")) for p in content if _is_map(p))
            messages.append({"role": item["role"], "content": content})
    tools = [
        {"type": "function", "function": {"name": t["name"], "parameters": t.get("parameters")}}
        for t in body.get("tools") or []
        if _is_map(t) and t.get("type") == "function"
    ]
    chat: dict[str, Any] = {"model": body.get("model"), "messages": messages}
    if tools:
        chat["tools"] = tools
    return chat


TOKEN = re.compile(r"tok[0-9a-f]{8}")
SHELL_FILE = "e2e-shell.txt"
PATCH_FILE = "e2e-patch.txt"


def conversation_token(messages: Sequence[Any]) -> str:
    """The last token (``tok`` and 8 hex digits) the conversation's texts hold."""
    texts = " ".join(message_text(m.get("content")) for m in messages if _is_map(m))
    return (TOKEN.findall(texts) or ["tok00000000"])[-1]


def _agent_call(model: str, tools: Any, messages: Sequence[Any], call_prefix: str) -> _Call | None:
    """The call a coding agent's model makes when the last user message asks for it:
    ``[shell]``, Codex's ``exec_command`` writing the conversation's token to
    :data:`SHELL_FILE`; ``[patch]``, its ``apply_patch`` adding :data:`PATCH_FILE` holding
    the token.  None when neither applies (no such request or tool, or its result came)."""
    users = [m for m in messages if _is_map(m) and m.get("role") == "user"]
    asked = message_text(users[-1].get("content")) if users else ""
    wanted = "exec_command" if "[shell]" in asked else "apply_patch" if "[patch]" in asked else ""
    found = [t for t in tools or () if _is_map(t) and (_tool_key(t) or ("", ""))[1] == wanted]
    if not wanted or not found:
        return None
    token = conversation_token(messages)
    kind = (_tool_key(found[0]) or ("function", ""))[0]
    if wanted == "exec_command":
        text = json.dumps({"cmd": f"printf '%s\\n' {token} > {SHELL_FILE}"})
    else:
        patch = f"*** Begin Patch\n*** Add File: {PATCH_FILE}\n+{token}\n*** End Patch\n"
        text = patch if kind == "custom" else json.dumps({"input": patch})
    return _Call(f"{call_prefix}_0", kind, wanted, text)


# The typed tools a ``typed`` model calls, one a turn, in this order, and their actions.
TYPED_FILE = "e2e-typed.md"


def _typed_actions(token: str) -> dict[str, dict[str, Any]]:
    return {
        "shell": {"commands": [f"echo {token}"]},
        "local_shell": {"command": ["echo", token]},
        "apply_patch": {"type": "create_file", "path": TYPED_FILE, "diff": f"+{token}\n"},
        "computer": {"type": "click", "x": 10, "y": 20, "button": "left"},
    }


def _typed_call(tools: Any, messages: Sequence[Any], call_prefix: str) -> _Call | None:
    """The next typed tool a ``typed`` model calls (offered as functions named ``shell``,
    ``local_shell``, ``apply_patch``, ``computer``): the first of them not called yet in
    the conversation, with an action holding its token; None once each was called."""
    token = conversation_token(messages)
    called = {
        call["function"]["name"]
        for m in messages
        if _is_map(m) and m.get("role") == "assistant"
        for call in m.get("tool_calls") or ()
    }
    offered = [(_tool_key(t) or ("", ""))[1] for t in tools or () if _is_map(t)]
    actions = _typed_actions(token)
    for name in offered:
        if name in actions and name not in called:
            return _Call(
                f"{call_prefix}_{len(called)}", "function", name, json.dumps(actions[name])
            )
    return None


def plan_turn(body: Mapping[str, Any], call_prefix: str) -> _Turn:
    """What the model answers to the chat request ``body``."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("'messages' must be a non-empty array", "messages")
    model = str(body.get("model", ""))
    prompt = sum(len(message_text(m.get("content")).split()) for m in messages if _is_map(m))
    turn = _Turn(prompt_tokens=prompt)
    if "typed" in model:  # the typed tools, one a turn, then the answer
        typed = _typed_call(body.get("tools"), messages, call_prefix)
        if typed is not None:
            turn.calls.append(typed)
            turn.finish = "tool_calls"
            return turn
    chosen = [] if "text" in model or "typed" in model else _choose_tools(body, "parallel" in model)
    scripted = _agent_call(model, chosen and body.get("tools"), messages, call_prefix)
    if scripted is not None:
        turn.calls.append(scripted)
        turn.finish = "tool_calls"
        return turn
    if chosen:
        for i, tool in enumerate(chosen):
            kind, name = _tool_key(tool) or ("function", "")
            text = (
                CUSTOM_INPUT
                if kind == "custom"
                else example_arguments(tool[kind].get("parameters"))
            )
            turn.calls.append(_Call(f"{call_prefix}_{i}", kind, name, text))
        turn.finish = "tool_calls"
        if "think" in model:  # reasons before its calls
            turn.reasoning = list(REASONING)
        return turn
    fmt = body.get("response_format")
    if (
        _is_map(fmt)
        and fmt.get("type") in ("json_schema", "json_object")
        and "freeform" not in model
    ):
        answer = JSON_ANSWER
    elif "echo" in model:
        answer = echo_summary(messages)
    elif "typed" in model:  # each typed tool was called: the run's token, and the results
        token = conversation_token(messages)
        results = [
            message_text(m.get("content"))
            for m in messages
            if _is_map(m) and m.get("role") == "tool"
        ]
        answer = f"Done {token}: " + " | ".join(results)
    else:
        users = [m for m in messages if _is_map(m) and m.get("role") == "user"]
        answer = "Hello! You said: " + (message_text(users[-1].get("content")) if users else "")
    pieces = [answer[i : i + PIECE] for i in range(0, len(answer), PIECE)]
    cap = body.get("max_completion_tokens", body.get("max_tokens"))
    if isinstance(cap, int) and not isinstance(cap, bool) and cap < len(pieces):
        pieces, turn.finish = pieces[: max(cap, 0)], "length"
    turn.reasoning, turn.content = list(REASONING), pieces
    if body.get("logprobs") is True:
        top = body.get("top_logprobs")
        turn.top_logprobs = top if isinstance(top, int) and not isinstance(top, bool) else 0
    return turn


def token_logprob(piece: str, index: int, top: int) -> dict[str, Any]:
    """The chat ``logprobs.content`` entry of answer piece ``index``, with ``top``
    alternatives (the piece itself first)."""

    def entry(token: str, logprob: float) -> dict[str, Any]:
        return {"token": token, "logprob": logprob, "bytes": list(token.encode())}

    best = -round(0.01 * (index + 1), 4)
    others = [entry(f"{piece}~{n}", best - n) for n in range(1, top)]
    return {**entry(piece, best), "top_logprobs": [entry(piece, best), *others][:top]}


def _is_map(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """Whether ``value`` is a JSON object."""
    return isinstance(value, Mapping)


# -- the wire ------------------------------------------------------------------------
def chat_chunks(turn: _Turn, base: Mapping[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects of a streamed turn."""
    extra = {"usage": None} if include_usage else {}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**base, "choices": [choice], **extra}

    out = [chunk({"role": "assistant", "content": None if turn.calls else ""})]
    out += [chunk({"reasoning_content": piece}) for piece in turn.reasoning]
    for i, piece in enumerate(turn.content):
        out.append(chunk({"content": piece}))
        if turn.top_logprobs is not None:
            lp = {"content": [token_logprob(piece, i, turn.top_logprobs)], "refusal": None}
            out[-1]["choices"][0]["logprobs"] = lp
    for index, call in enumerate(turn.calls):
        key = "arguments" if call.kind == "function" else "input"
        first = {"index": index, "id": call.id, "type": call.kind}
        first[call.kind] = {"name": call.name, key: ""}
        out.append(chunk({"tool_calls": [first]}))
        for text in fragments(call):
            out.append(chunk({"tool_calls": [{"index": index, call.kind: {key: text}}]}))
    out.append(chunk({}, turn.finish))
    if include_usage:
        out.append({**base, "choices": [], "usage": turn.usage()})
    return out


def chat_completion(turn: _Turn, base: Mapping[str, Any]) -> dict[str, Any]:
    """The ``chat.completion`` object of a turn answered at once."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(turn.content) if not turn.calls else None,
        "refusal": None,
        "annotations": [],
    }
    if turn.reasoning:
        message["reasoning_content"] = "".join(turn.reasoning)
    if turn.calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": c.kind,
                c.kind: {"name": c.name, "arguments" if c.kind == "function" else "input": c.text},
            }
            for c in turn.calls
        ]
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": turn.finish}
    return {**base, "object": "chat.completion", "choices": [choice], "usage": turn.usage()}


def sse_data(payload: Any) -> bytes:
    """One ``data:`` SSE frame."""
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return b"data: " + data.encode() + b"\n\n"


@cache
def recording(name: str) -> tuple[tuple[str, str], ...]:
    """The (type, raw JSON line) of each event of a recording under recordings/responses."""
    lines = (RECORDINGS / name).read_text(encoding="utf-8").splitlines()
    return tuple((json.loads(line)["type"], line) for line in lines if line.strip())


def error_response(status: int, message: str, param: str | None = None) -> JSONResponse:
    """An OpenAI-style error answer."""
    kind = "invalid_request_error" if status < 500 else "server_error"
    body = {"error": {"message": message, "type": kind, "param": param, "code": None}}
    return JSONResponse(body, status)


class _CutResponse(Response):
    """Sends ``pieces`` (with ``length`` as ``content-length``, if given), then closes
    the connection with the body unfinished."""

    def __init__(
        self, pieces: Sequence[bytes], media_type: str, delay: float, length: int | None = None
    ) -> None:
        super().__init__(status_code=200, media_type=media_type)
        self.pieces, self.delay, self.length = list(pieces), delay, length

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        headers = [(b"content-type", (self.media_type or "").encode())]
        if self.length is not None:
            headers.append((b"content-length", str(self.length).encode()))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for piece in self.pieces:
            await send({"type": "http.response.body", "body": piece, "more_body": True})
            await asyncio.sleep(self.delay)
        # returning with the body unfinished: uvicorn closes the connection


def _pause(model: str) -> float:
    """The silence of a ``fake-pause`` model: ``PAUSE``, or N seconds for ``fake-pause-N``."""
    if not model.startswith("fake-pause"):
        return 0.0
    given = model.removeprefix("fake-pause").removeprefix("-")
    return float(given) if given else PAUSE


async def _paced(frames: Sequence[bytes], delay: float, pause: float = 0.0) -> AsyncIterator[bytes]:
    """``frames`` with ``delay`` seconds between two, and ``pause`` seconds of silence
    after the first ``PAUSE_AFTER``."""
    for i, frame in enumerate(frames):
        if i and delay:
            await asyncio.sleep(delay)
        if i == PAUSE_AFTER and pause:
            await asyncio.sleep(pause)
        yield frame


# -- the app --------------------------------------------------------------------------
class ModelUpstream:
    """The fake upstream's state and its Starlette :attr:`app`.

    ``delay``: seconds between two streamed chunks (``fake-slow`` models use 0.2).
    ``text_recording`` and ``tool_recording``: the recordings (paths under
    recordings/responses) that ``/v1/responses`` replays without and with ``tools``.
    """

    def __init__(
        self,
        delay: float = 0.0,
        *,
        text_recording: str = TEXT_RECORDING,
        tool_recording: str = TOOL_RECORDING,
        models: Sequence[str] = ("fake-model",),
    ) -> None:
        self.delay = delay
        self.models = [
            {"id": m, "object": "model", "created": CREATED_AT, "owned_by": "fake"} for m in models
        ]
        self.text_recording, self.tool_recording = text_recording, tool_recording
        self._requests: list[Recorded] = []
        self._lock = threading.Lock()
        chat = ["POST"]
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=chat),
                Route("/chat/completions", self._chat, methods=chat),
                Route("/v1/responses", self._responses, methods=chat),
                Route("/responses", self._responses, methods=chat),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/models", self._models, methods=["GET"]),
                Route("/v1/models/{model:path}", self._model, methods=["GET"]),
                Route("/models/{model:path}", self._model, methods=["GET"]),
            ]
        )

    @property
    def requests(self) -> list[Recorded]:
        """A copy of the requests received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def last(self) -> Recorded:
        """The latest request (``IndexError`` if none)."""
        with self._lock:
            return self._requests[-1]

    def authorizations(self) -> list[str | None]:
        """The ``Authorization`` header of each request, oldest first."""
        return [r.authorization for r in self.requests]

    def clear(self) -> None:
        """Forget the requests received so far."""
        with self._lock:
            self._requests.clear()

    @contextmanager
    def serve(self) -> Iterator[str]:
        """Serve :attr:`app` on 127.0.0.1 in a thread; yields the base URL (without ``/v1``)."""
        from http_support import serve

        with serve(self.app) as url:
            yield url

    async def _record(self, request: Request) -> tuple[int, Any]:
        """Record ``request``; its sequence number (from 1) and parsed body."""
        raw = await request.body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        entry = Recorded(request.method, request.url.path, body, dict(request.headers))
        with self._lock:
            self._requests.append(entry)
            return len(self._requests), body

    def _fault(self, model: str) -> Response | None:
        """The scripted error answer for ``model``, if any."""
        if model.startswith("fake-429"):
            return JSONResponse(RATE_LIMIT_ERROR, 429, headers={"retry-after": "7"})
        if model.startswith("fake-500"):
            return JSONResponse(SERVER_ERROR, 500)
        return None

    def _pace(self, model: str) -> float:
        """Seconds between two chunks for ``model``."""
        return SLOW_DELAY if model.startswith("fake-slow") else self.delay

    async def _models(self, request: Request) -> Response:
        await self._record(request)
        return JSONResponse({"object": "list", "data": self.models})

    async def _model(self, request: Request) -> Response:
        await self._record(request)
        name = request.path_params["model"]
        for model in self.models:
            if model["id"] == name:
                return JSONResponse(model)
        return error_response(404, f"The model '{name}' does not exist", "model")

    async def _chat(self, request: Request) -> Response:
        number, body = await self._record(request)
        if not isinstance(body, dict):
            return error_response(400, "The body must be a JSON object")
        model = body.get("model")
        if not isinstance(model, str):
            return error_response(400, "'model' must be a string", "model")
        fault = self._fault(model)
        if fault is not None:
            return fault
        try:
            turn = plan_turn(body, f"call_fake_{number}")
        except BadRequest as exc:
            return error_response(400, str(exc), exc.param)
        base = {
            "id": f"chatcmpl-fake-{number}",
            "object": "chat.completion.chunk",
            "created": CREATED_AT,
            "model": model,
            "system_fingerprint": "fp_fake",
            "service_tier": "default",
        }
        delay, cut = self._pace(model), model.startswith("fake-cut")
        if not body.get("stream"):
            data = json.dumps(chat_completion(turn, base), separators=(",", ":")).encode()
            if cut:
                return _CutResponse([data[: len(data) // 2]], "application/json", 0, len(data))
            return Response(data, media_type="application/json")
        options = body.get("stream_options")
        include_usage = _is_map(options) and options.get("include_usage") is True
        chunks = chat_chunks(turn, base, include_usage)
        frames = [sse_data(c) for c in chunks]
        if cut:
            finish = next(i for i, c in enumerate(chunks) if c["choices"][0]["finish_reason"])
            return _CutResponse(frames[: min(CUT_AFTER, finish)], "text/event-stream", delay)
        if model.startswith("fake-error"):
            frames = [*frames[:CUT_AFTER], sse_data(MIDSTREAM_ERROR)]
            return StreamingResponse(_paced(frames, delay), media_type="text/event-stream")
        frames.append(b"data: [DONE]\n\n")
        return StreamingResponse(
            _paced(frames, delay, _pause(model)), media_type="text/event-stream"
        )

    async def _responses(self, request: Request) -> Response:
        _, body = await self._record(request)
        if not isinstance(body, dict):
            return error_response(400, "The body must be a JSON object")
        model = str(body.get("model", ""))
        fault = self._fault(model)
        if fault is not None:
            return fault
        if body.get("stream") is not True:
            return error_response(400, "This fake upstream only streams: set stream", "stream")
        if "scripted" in model:  # the small model's own answer, as a Responses stream
            chat = chat_body_of(body)
            turn = plan_turn(chat, "call_fake")
            base = {"id": "chatcmpl-fake", "created": CREATED_AT, "model": model}
            chunks = chat_chunks(turn, {**base, "object": "chat.completion.chunk"}, True)
            frames = list(sse_from_chat(chunks, request=body, model=model))
            return StreamingResponse(
                _paced(frames, self._pace(model)), media_type="text/event-stream"
            )
        name = self.tool_recording if body.get("tools") else self.text_recording
        frames = [f"event: {kind}\ndata: {line}\n\n".encode() for kind, line in recording(name)]
        delay = self._pace(model)
        if model.startswith("fake-cut"):
            return _CutResponse(frames[:CUT_AFTER], "text/event-stream", delay)
        return StreamingResponse(
            _paced(frames, delay, _pause(model)), media_type="text/event-stream"
        )


def main(argv: Sequence[str] | None = None) -> None:
    """Serve a :class:`ModelUpstream` until interrupted."""
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds between chunks")
    args = parser.parse_args(argv)
    uvicorn.run(ModelUpstream(delay=args.delay).app, host=args.host, port=args.port)


if __name__ == "__main__":
    main()
