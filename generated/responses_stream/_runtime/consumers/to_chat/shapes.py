"""What turning a Responses stream into chat chunks shares: the modes, the item kinds
and what each asks of the client, the usage and logprobs shapes, and the chunk encoders."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from json.encoder import encode_basestring
from typing import Any, Literal

import msgspec

from ...core.convert import normalize_usage
from ...core.sse_parse import (
    has_surrogate,
    join_surrogates,
    replace_surrogates,
)
from ...core.stream import TextAcc

ReasoningMode = Literal["reasoning_content", "reasoning", "think", "omit"]
HostedMode = Literal["omit", "content"]
Payload = Mapping[str, Any] | str | bytes

REASONING_MODES: tuple[str, ...] = ("reasoning_content", "reasoning", "think", "omit")
HOSTED_MODES: tuple[str, ...] = ("omit", "content")
THINK_OPEN = "<think>\n"
THINK_CLOSE = "\n</think>\n\n"
REASONING_SEPARATOR = "\n\n"
DONE_FRAME = b"data: [DONE]\n\n"
TEXT_DELTA = "response.output_text.delta"
# json.dumps(chunk, ensure_ascii=False, separators=(",", ":")), without a new encoder per call
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_dumps_str: Callable[[str], str] = encode_basestring  # the same, for one str
_decode = msgspec.json.Decoder().decode
# The deltas feed_sse splices into pre-encoded chunk JSON, by catalogue event name.
_SPLICED: dict[str, str] = {
    TEXT_DELTA: "text",
    "response.reasoning_text.delta": "reasoning",
    "response.reasoning_summary_text.delta": "summary",
    "response.function_call_arguments.delta": "args",
    "response.custom_tool_call_input.delta": "args",
}

_log = logging.getLogger(__package__)  # the package's logger, as the README names it
EMPTY_INPUT = "empty_input"  # the code of the error chunk for input without any event
# the encoder for an action call's arguments (tolerates values that are not JSON types)
_dumps_args = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode

# client tool call item type -> the item field its deltas accumulate
CLIENT_CALLS: dict[str, str] = {"function_call": "arguments", "custom_tool_call": "input"}
# item type the client must act on -> the tool name it is sent under
ACTION_CALLS: dict[str, str] = {
    "apply_patch_call": "apply_patch",
    "local_shell_call": "local_shell",
    "shell_call": "shell",
    "computer_call": "computer",
    "mcp_approval_request": "mcp_approval_request",
}
# item types the server runs (documentation: any type not in CLIENT_CALLS/ACTION_CALLS is hosted)
HOSTED_ITEMS: frozenset[str] = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "mcp_call",
        "mcp_list_tools",
        "image_generation_call",
        "tool_search_call",
        "program",
    }
)
SILENT_ITEMS: frozenset[str] = frozenset({"message", "reasoning", "compaction"})
INCOMPLETE_REASONS: dict[str, str] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}


def _missing(sent: str, full: str) -> str:
    """The suffix of ``full`` not yet sent, or ``""`` if ``full`` does not extend ``sent``.

    A surrogate pair split over two deltas counts as the character it encodes.
    """
    if has_surrogate(sent) or has_surrogate(full):
        sent, full = join_surrogates(sent), join_surrogates(full)
    return full[len(sent) :] if full.startswith(sent) else ""


def _is_high_surrogate(char: str) -> bool:
    return "\ud800" <= char <= "\udbff"


def _plain(value: Any) -> Any:
    """An error's ``code`` / ``param`` as JSON the SDK reads: a string, an integer or null."""
    if value is None or isinstance(value, str) or (type(value) is int):
        return value
    return str(value)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def is_client_action(kind: str, item: Mapping[str, Any]) -> bool:
    """Whether an ``ACTION_CALLS`` item is for the client to run (a container shell is not)."""
    if kind == "shell_call":
        return not _str(_mapping(item.get("environment")).get("type")).startswith("container")
    return kind in ACTION_CALLS


def action_arguments(kind: str, item: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments object of an ``ACTION_CALLS`` item's tool call (see the module doc)."""
    if kind == "apply_patch_call":
        return dict(_mapping(item.get("operation")))
    if kind == "mcp_approval_request":
        return {k: item[k] for k in ("server_label", "name", "arguments") if k in item}
    action = item.get("action")
    if isinstance(action, Mapping):
        return dict(action)
    if isinstance(item.get("actions"), list):
        return {"actions": item["actions"]}
    return {}


def chat_usage(usage: Mapping[str, Any]) -> dict[str, Any]:
    """Responses usage (or chat usage) in the chat ``CompletionUsage`` shape."""
    u = normalize_usage(usage)
    return {
        "prompt_tokens": u["input_tokens"],
        "completion_tokens": u["output_tokens"],
        "total_tokens": u["total_tokens"],
        "prompt_tokens_details": {"cached_tokens": u["input_tokens_details"]["cached_tokens"]},
        "completion_tokens_details": {
            "reasoning_tokens": u["output_tokens_details"]["reasoning_tokens"]
        },
    }


@dataclass
class _Call:
    index: int
    call_id: str
    name: str
    sent: TextAcc = field(default_factory=TextAcc)


def _utf8(text: str) -> bytes:
    """``text`` as UTF-8, any lone surrogate left in it as U+FFFD."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return replace_surrogates(text).encode()


def _frame(chunk: Mapping[str, Any]) -> bytes:
    return b"data: " + _utf8(_dumps(chunk)) + b"\n\n"


def chat_logprobs(value: Any) -> list[dict[str, Any]]:
    """A delta's Responses logprobs as chat ``logprobs.content`` entries (the same
    ``token``, ``logprob``, ``bytes`` and ``top_logprobs``); malformed ones are left out."""
    out = []
    for entry in value if isinstance(value, list) else ():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("token"), str):
            continue
        logprob = entry.get("logprob")
        if not isinstance(logprob, int | float) or isinstance(logprob, bool):
            continue
        tops = entry.get("top_logprobs")
        out.append(
            {
                "token": entry["token"],
                "logprob": float(logprob),
                "bytes": entry.get("bytes") if isinstance(entry.get("bytes"), list) else None,
                "top_logprobs": [
                    {
                        "token": t["token"],
                        "logprob": float(t["logprob"]),
                        "bytes": t.get("bytes") if isinstance(t.get("bytes"), list) else None,
                    }
                    for t in (tops if isinstance(tops, list) else ())
                    if isinstance(t, Mapping)
                    and isinstance(t.get("token"), str)
                    and isinstance(t.get("logprob"), int | float)
                    and not isinstance(t.get("logprob"), bool)
                ],
            }
        )
    return out
