"""Hand-written converters the benchmarks hold ours against.

Each is what a server author would write for exactly the benchmark's shapes and nothing
else: no validation, no limits, no recovery, no other providers' spellings.  Before any
timing, ``benchmarks.check`` makes sure each produces the same events as ours.

- ``HandChat``: Chat Completions payloads -> Responses SSE, with ``json.loads`` (or a
  msgspec decoder, for the cost of our logic alone) and f-string frames (``json.dumps``
  for the strings), sequence numbers and ids as ours counts them.
- ``PydanticChat``: the same state machine, but every event is the openai SDK's pydantic
  model, framed with ``model_dump_json()``: how vLLM writes its Responses stream.
- ``HandToChat``: Responses payloads -> chat chunk frames, ``json.loads`` and f-strings.
- ``split_events``: SSE framing for these inputs only (``data:`` lines, ``\\n\\n`` ends).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from typing import Any

from .shapes import CREATED

Loads = Callable[[str], Any]
COMPACT = 256  # our TextAcc joins buffered deltas every 256: the floor sends the same deltas
_dumps = json.dumps


def split_events(buf: bytes, block: bytes) -> tuple[list[str], bytes]:
    """The ``data:`` payloads completed by ``block`` and the bytes still pending."""
    parts = (buf + block).split(b"\n\n")
    rest = parts.pop()
    out = []
    for p in parts:
        at = 0 if p[:6] == b"data: " else p.find(b"\ndata: ") + 1  # after an event: line
        if at >= 0 and p[at : at + 6] == b"data: ":
            out.append(p[at + 6 :].decode())
    return out, rest


def response(model: str, status: str, output: list[Any], usage: Any, done: bool) -> Any:
    """The Response object ours writes, as a dict (``completed_at`` is the clock's)."""
    return {
        "id": "resp_0001",
        "object": "response",
        "created_at": CREATED,
        "completed_at": int(time.time()) if done else None,
        "status": status,
        "incomplete_details": None,
        "model": model,
        "previous_response_id": None,
        "instructions": None,
        "output": output,
        "error": None,
        "tools": [],
        "tool_choice": "auto",
        "truncation": "disabled",
        "parallel_tool_calls": True,
        "text": {"format": {"type": "text"}},
        "top_p": 1.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "top_logprobs": 0,
        "temperature": 1.0,
        "reasoning": None,
        "usage": usage,
        "max_output_tokens": None,
        "max_tool_calls": None,
        "store": False,
        "background": False,
        "service_tier": "default",
        "metadata": {},
        "safety_identifier": None,
        "prompt_cache_key": None,
        "user": None,
    }


class HandChat:
    """Chat payloads -> Responses SSE frames: reasoning, then text, then tool calls."""

    def __init__(self, model: str, loads: Loads = json.loads) -> None:
        self.model = model
        self.loads = loads
        self.seq = 0
        self.next_id = 2  # resp_0001 is the response
        self.output: list[Any] = []
        self.kind = ""  # the open item: "reasoning", "message" or ""
        self.item_id = ""
        self.parts: list[str] = []  # the open item's text
        self.calls: list[dict[str, Any]] = []  # index, id, name, item id, args, live
        self.usage: Any = None

    # -- events (PydanticChat overrides these) ----------------------------------------
    def event(self, payload: dict[str, Any]) -> bytes:
        return f"event: {payload['type']}\ndata: {_dumps(payload)}\n\n".encode()

    def reasoning_delta(self, text: str) -> bytes:
        seq = self.seq
        self.seq = seq + 1
        return (
            f'event: response.reasoning_text.delta\ndata: {{"type":"response.reasoning_text'
            f'.delta","sequence_number":{seq},"item_id":"{self.item_id}","output_index":'
            f'{len(self.output) - 1},"content_index":0,"delta":{_dumps(text)}}}\n\n'
        ).encode()

    def text_delta(self, text: str) -> bytes:
        seq = self.seq
        self.seq = seq + 1
        return (
            f'event: response.output_text.delta\ndata: {{"type":"response.output_text.delta",'
            f'"sequence_number":{seq},"item_id":"{self.item_id}","output_index":'
            f'{len(self.output) - 1},"content_index":0,"delta":{_dumps(text)},'
            f'"logprobs":[]}}\n\n'
        ).encode()

    def args_delta(self, call: dict[str, Any], text: str) -> bytes:
        seq = self.seq
        self.seq = seq + 1
        return (
            f"event: response.function_call_arguments.delta\ndata: "
            f'{{"type":"response.function_call_arguments.delta","sequence_number":{seq},'
            f'"item_id":"{call["item_id"]}","output_index":{call["output_index"]},'
            f'"delta":{_dumps(text)}}}\n\n'
        ).encode()

    # -- the stream ---------------------------------------------------------------------
    def _ev(self, kind: str, **fields: Any) -> bytes:
        seq = self.seq
        self.seq = seq + 1
        return self.event({"type": kind, "sequence_number": seq, **fields})

    def _id(self, prefix: str) -> str:
        self.next_id += 1
        return f"{prefix}{self.next_id - 1:04d}"

    def start(self) -> list[bytes]:
        r = response(self.model, "in_progress", [], None, False)
        return [
            self._ev("response.created", response=r),
            self._ev("response.in_progress", response=r),
        ]

    def _part(self) -> dict[str, Any]:
        text = "".join(self.parts)
        if self.kind == "reasoning":
            return {"type": "reasoning_text", "text": text}
        return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}

    def _item(self, status: str) -> dict[str, Any]:
        if self.kind == "reasoning":
            content = [self._part()] if status == "completed" else []
            return {"type": "reasoning", "id": self.item_id, "status": status, "summary": []} | {
                "content": content
            }
        content = [self._part()] if status == "completed" else []
        return {
            "type": "message",
            "id": self.item_id,
            "status": status,
            "role": "assistant",
            "content": content,
        }

    def _open(self, kind: str) -> list[bytes]:
        out = self._close()
        self.kind, self.item_id, self.parts = (
            kind,
            self._id("rs_" if kind == "reasoning" else "msg_"),
            [],
        )
        item = self._item("in_progress")
        self.output.append(item)
        at = len(self.output) - 1
        empty = (
            {"type": "reasoning_text", "text": ""}
            if kind == "reasoning"
            else {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        )
        out.append(self._ev("response.output_item.added", output_index=at, item=item))
        out.append(
            self._ev(
                "response.content_part.added",
                item_id=self.item_id,
                output_index=at,
                content_index=0,
                part=empty,
            )
        )
        return out

    def _close(self) -> list[bytes]:
        if not self.kind:
            return []
        at, part, iid = len(self.output) - 1, self._part(), self.item_id
        done = (
            "response.reasoning_text.done"
            if self.kind == "reasoning"
            else "response.output_text.done"
        )
        extra = {} if self.kind == "reasoning" else {"logprobs": []}
        out = [
            self._ev(
                done, item_id=iid, output_index=at, content_index=0, text=part["text"], **extra
            ),
            self._ev(
                "response.content_part.done",
                item_id=iid,
                output_index=at,
                content_index=0,
                part=part,
            ),
        ]
        item = self._item("completed")
        self.output[at] = item
        out.append(self._ev("response.output_item.done", output_index=at, item=item))
        self.kind = ""
        return out

    def _call_item(self, call: dict[str, Any], status: str, args: str) -> dict[str, Any]:
        return {
            "type": "function_call",
            "id": call["item_id"],
            "status": status,
            "call_id": call["id"],
            "name": call["name"],
            "arguments": args,
        }

    def _go_live(self, call: dict[str, Any]) -> list[bytes]:
        call["live"] = True
        call["item_id"] = self._id("fc_")
        item = self._call_item(call, "in_progress", "")
        self.output.append(item)
        call["output_index"] = len(self.output) - 1
        out = [self._ev("response.output_item.added", output_index=call["output_index"], item=item)]
        pending, call["args"] = call["args"], []
        joined = [
            "".join(pending[i : i + COMPACT])
            for i in range(0, len(pending) - len(pending) % COMPACT, COMPACT)
        ]
        for piece in joined + pending[len(pending) - len(pending) % COMPACT :]:
            out.append(self.args_delta(call, piece))
            call["args"].append(piece)
        return out

    def _close_calls(self) -> list[bytes]:
        out: list[bytes] = []
        for call in self.calls:
            if not call["live"]:
                out += self._go_live(call)
            args, at = "".join(call["args"]), call["output_index"]
            out.append(
                self._ev(
                    "response.function_call_arguments.done",
                    item_id=call["item_id"],
                    output_index=at,
                    arguments=args,
                )
            )
            item = self._call_item(call, "completed", args)
            self.output[at] = item
            out.append(self._ev("response.output_item.done", output_index=at, item=item))
        self.calls = []
        return out

    def feed(self, data: str) -> list[bytes]:
        if data == "[DONE]":
            return self.end()
        chunk = self.loads(data)
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        choices = chunk["choices"]
        if not choices:
            return []
        choice = choices[0]
        delta = choice["delta"]
        out: list[bytes] = []
        text = delta.get("reasoning_content")
        if text:
            if self.kind != "reasoning":
                out += self._open("reasoning")
            self.parts.append(text)
            out.append(self.reasoning_delta(text))
        text = delta.get("content")
        if text:
            if self.kind != "message":
                out += self._open("message")
            self.parts.append(text)
            out.append(self.text_delta(text))
        for frag in delta.get("tool_calls") or ():
            out += self._fragment(frag)
        if choice.get("finish_reason"):
            out += self._close() + self._close_calls()
        return out

    def _fragment(self, frag: dict[str, Any]) -> list[bytes]:
        index, fn = frag["index"], frag["function"]
        if index == len(self.calls):
            out = self._close()
            self.calls.append(
                {"index": index, "id": frag["id"], "name": fn["name"], "args": [], "live": False}
            )
            return out
        call, args = self.calls[index], fn.get("arguments")
        if not args:
            return []
        if call["live"]:
            call["args"].append(args)
            return [self.args_delta(call, args)]
        call["args"].append(args)
        if call is self.calls[0]:
            return self._go_live(call)
        return []

    def end(self) -> list[bytes]:
        u = self.usage
        usage = {
            "input_tokens": u["prompt_tokens"],
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": u["completion_tokens"],
            "output_tokens_details": {
                "reasoning_tokens": u["completion_tokens_details"]["reasoning_tokens"]
            },
            "total_tokens": u["total_tokens"],
        }
        r = response(self.model, "completed", self.output, usage, True)
        return [self._ev("response.completed", response=r)]


@functools.cache
def _event_validator() -> Callable[[Any], Any]:
    """The pydantic validator of the whole event union, built once a process: building it
    takes tens of milliseconds, which a server pays at start-up, not on each stream."""
    from openai.types.responses import ResponseStreamEvent
    from pydantic import TypeAdapter

    return TypeAdapter(ResponseStreamEvent).validate_python


class PydanticChat(HandChat):
    """``HandChat`` with every event an openai SDK model, framed by ``model_dump_json()``."""

    def __init__(self, model: str, loads: Loads = json.loads) -> None:
        super().__init__(model, loads)
        from openai.types.responses import (
            ResponseFunctionCallArgumentsDeltaEvent,
            ResponseReasoningTextDeltaEvent,
            ResponseTextDeltaEvent,
        )

        self._reasoning = ResponseReasoningTextDeltaEvent
        self._text = ResponseTextDeltaEvent
        self._args = ResponseFunctionCallArgumentsDeltaEvent
        self._any = _event_validator()

    def event(self, payload: dict[str, Any]) -> bytes:
        ev = self._any(payload)
        return f"event: {ev.type}\ndata: {ev.model_dump_json(exclude_unset=True)}\n\n".encode()

    def reasoning_delta(self, text: str) -> bytes:
        seq = self.seq
        self.seq = seq + 1
        ev = self._reasoning(
            type="response.reasoning_text.delta",
            sequence_number=seq,
            item_id=self.item_id,
            output_index=len(self.output) - 1,
            content_index=0,
            delta=text,
        )
        return f"event: {ev.type}\ndata: {ev.model_dump_json()}\n\n".encode()

    def text_delta(self, text: str) -> bytes:
        seq = self.seq
        self.seq = seq + 1
        ev = self._text(
            type="response.output_text.delta",
            sequence_number=seq,
            item_id=self.item_id,
            output_index=len(self.output) - 1,
            content_index=0,
            delta=text,
            logprobs=[],
        )
        return f"event: {ev.type}\ndata: {ev.model_dump_json()}\n\n".encode()

    def args_delta(self, call: dict[str, Any], text: str) -> bytes:
        seq = self.seq
        self.seq = seq + 1
        ev = self._args(
            type="response.function_call_arguments.delta",
            sequence_number=seq,
            item_id=call["item_id"],
            output_index=call["output_index"],
            delta=text,
        )
        return f"event: {ev.type}\ndata: {ev.model_dump_json()}\n\n".encode()


class HandToChat:
    """Responses payloads -> chat chunk frames, for the shapes ours makes from ``shapes``."""

    def __init__(self, loads: Loads = json.loads) -> None:
        self.loads = loads
        self.head = ""  # '"id":...,"model":...,' once response.created came
        self.role = True  # the next chunk carries the role
        self.calls: dict[str, int] = {}  # item id -> tool call index

    def _frame(self, delta: str, finish: str = "null") -> bytes:
        if self.role:
            self.role = False
            delta = '"role":"assistant",' + delta if delta else '"role":"assistant"'
        return (
            f'data: {{{self.head}"choices":[{{"index":0,"delta":{{{delta}}},'
            f'"logprobs":null,"finish_reason":{finish}}}]}}\n\n'
        ).encode()

    def feed(self, data: str) -> list[bytes]:
        event = self.loads(data)
        kind = event["type"]
        if kind == "response.output_text.delta":
            return [self._frame(f'"content":{_dumps(event["delta"])}')]
        if kind == "response.reasoning_text.delta":
            return [self._frame(f'"reasoning_content":{_dumps(event["delta"])}')]
        if kind == "response.function_call_arguments.delta":
            index = self.calls[event["item_id"]]
            args = _dumps(event["delta"])
            return [
                self._frame(f'"tool_calls":[{{"index":{index},"function":{{"arguments":{args}}}}}]')
            ]
        if kind == "response.output_item.added" and event["item"]["type"] == "function_call":
            item = event["item"]
            index = self.calls[item["id"]] = len(self.calls)
            tool = (
                f'{{"index":{index},"id":{_dumps(item["call_id"])},"type":"function",'
                f'"function":{{"name":{_dumps(item["name"])},"arguments":""}}}}'
            )
            return [self._frame(f'"content":null,"tool_calls":[{tool}]')]
        if kind == "response.created":
            r = event["response"]
            self.head = (
                f'"id":"chatcmpl-{r["id"]}","object":"chat.completion.chunk",'
                f'"created":{r["created_at"]},"model":{_dumps(r["model"])},'
            )
        elif kind == "response.completed":
            finish = '"tool_calls"' if self.calls else '"stop"'
            return [self._frame("", finish), b"data: [DONE]\n\n"]
        return []
