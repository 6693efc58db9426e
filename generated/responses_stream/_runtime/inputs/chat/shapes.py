"""What reading a chat stream shares: the error codes, the finish reasons beyond OpenAI's,
the input failures, and the quick shapes a usual chunk is decoded into."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ...core.errors import ResponsesStreamError
from ...core.processor import ItemHandle
from ...core.stream import TextAcc

BAD_INPUT = "invalid_upstream_chunk"
UNSUPPORTED_N = "unsupported_n"
UPSTREAM_ERROR = "upstream_error"
EMPTY_INPUT = "empty_input"  # not a single chat chunk came
# Client-run tool kinds whose call items take no deltas -> their item type.
WHOLE_CALLS = {"tool_search": "tool_search_call"}
LONE_SURROGATE = "the input held a lone UTF-16 surrogate (without its pair); it is U+FFFD"
_log = logging.getLogger(__package__)  # the package's logger, as its doc says
# finish_reason values outside the OpenAI set -> completed | max_output_tokens |
# content_filter | failed.  The spec's ``finish_reasons`` take precedence.
EXTRA_FINISH_REASONS: dict[str, str] = {
    "eos": "completed",  # vLLM/TGI-style end of sequence
    "eos_token": "completed",
    "end_turn": "completed",  # Anthropic-style
    "stop_sequence": "completed",
    "tool_use": "completed",
    "max_tokens": "max_output_tokens",
    "model_length": "max_output_tokens",  # Mistral: context window full
    "model_context_window_exceeded": "max_output_tokens",
    "abort": "max_output_tokens",  # cut short upstream: what came is kept, incomplete
    "cancelled": "max_output_tokens",
    "safety": "content_filter",
    "recitation": "content_filter",
    "sensitive": "content_filter",  # Z.ai
    "error": "failed",
    "network_error": "failed",
    "insufficient_system_resource": "failed",  # DeepSeek
}
_decode = msgspec.json.Decoder().decode
_HANDLED: Any = object()  # ``_parse`` dealt with the payload itself: nothing to feed


class _QuickChoice(msgspec.Struct):
    """What the fast paths read of a chunk's choice (any other field is skipped)."""

    index: Any = 0
    delta: Any = None
    logprobs: Any = None
    finish_reason: Any = None


class _QuickChunk(msgspec.Struct):
    """What the fast paths read of a chunk: typed, it decodes in about half the time of
    the whole chunk as a dict.  A chunk of another shape fails to decode into it and
    takes the general path, as does one the fast paths do not take."""

    choices: list[_QuickChoice] | None = None
    usage: Any = None


_decode_quick = msgspec.json.Decoder(_QuickChunk).decode
# The open part's fast path: its item, part kind, ``<part>_delta``, the ``_sse`` twin
# (None if it has none) and the delta keys routed to it.
_PartFast = tuple[ItemHandle, str | None, Any, Any, frozenset[str]]


class BadChunk(ResponsesStreamError, ValueError):
    """A chunk that cannot be part of a valid chat stream."""

    def __init__(self, message: str, code: str = BAD_INPUT) -> None:
        super().__init__(message)
        self.code = code


def upstream_error(err: Any) -> tuple[str, str]:
    """The message and code of a chunk's upstream ``error`` object, as the stream ends.

    The upstream's own code (llama.cpp's server sends ``{"error": {"code": 500,
    "message": ..., "type": "server_error"}}``) becomes the ``error`` event's code, as a
    string; without a code, its ``type``; without either, ``upstream_error``.
    ``response.error.code`` is a closed enum (the openai SDK rejects any other value),
    so there the processor keeps such a code only when the enum has it and says
    ``server_error`` otherwise; the message names the upstream's code and type so
    neither is lost: ``upstream error: <its message> (code 500, type server_error)``.
    """
    if not isinstance(err, Mapping):
        return f"upstream error: {err}", UPSTREAM_ERROR
    message = err.get("message")
    if not isinstance(message, str) or not message:
        message = str(dict(err))[:1000]
    code = err.get("code")
    if isinstance(code, float) and code.is_integer():
        code = int(code)
    code = str(code) if isinstance(code, int | str) and not isinstance(code, bool) else ""
    kind = err.get("type") if isinstance(err.get("type"), str) else ""
    named = []
    if code:
        named.append(f"code {code}")
    if kind and kind != code:
        named.append(f"type {kind}")
    detail = f" ({', '.join(named)})" if named else ""
    return f"upstream error: {message}{detail}", code or kind or UPSTREAM_ERROR


class DataPayload(str):
    """A ``str`` that is an SSE event's ``data``, whatever its text.

    The chat APIs take a ``str`` item as an SSE line when it looks like one (empty, a
    comment, a ``data:`` field); ``chat_data_lines`` marks the payloads that could be
    taken for one (those not starting with ``{``), so they stay payloads.
    """

    __slots__ = ()


class InputFailure(DataPayload):
    """A ``data:`` payload standing for a failure of the input itself, not a chunk.

    ``chat_data_lines`` yields one when the SSE input cannot be read (over the
    parser's caps); ``feed_data`` ends the stream with ``error``
    (``code``, the text as message) and ``response.failed``.  Its text is never JSON.
    """

    code: str

    def __new__(cls, message: str, code: str) -> InputFailure:
        self = super().__new__(cls, message)
        self.code = code
        return self


def wants_summary(request: Mapping[str, Any] | None) -> bool:
    """Whether the request asks for a reasoning summary (``reasoning.summary`` set)."""
    reasoning = request.get("reasoning") if isinstance(request, Mapping) else None
    if not isinstance(reasoning, Mapping):
        return False
    return reasoning.get("summary") is not None or reasoning.get("generate_summary") is not None


def _as_summary(route: Mapping[str, Any]) -> Mapping[str, Any]:
    if route["item"] == "reasoning" and route["part"] == "reasoning_text":
        return {**route, "part": "summary_text"}
    return route


@dataclass
class _Call:
    index: int
    id: str  # "" until the provider sends one
    kind: str  # "function" or "custom" (as the chunk said)
    name: str  # joined from the fragments
    args: TextAcc = field(default_factory=TextAcc)  # arguments received before the item opens
    buffered: int = 0  # their length, counted against Limits.max_item_text_chars
    handle: ItemHandle | None = None
    closed: bool = False
    held: str = ""  # a high surrogate ending the last arguments, waiting for its pair
