"""Chat completion chunks folded into the one ``chat.completion`` object they make."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .errors import GatewayError

TIMEOUT_CODES = ("upstream_timeout", "source_timeout", "upstream_connect_timeout")
TEXT_FIELDS = ("content", "refusal", "reasoning_content", "reasoning")


def fold_chunks(chunks: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The completion of a chunk stream (one choice); an error chunk raises
    :class:`GatewayError` (504 for a timeout, else 502)."""
    head: dict[str, Any] = {}
    texts: dict[str, list[str]] = {}
    calls: dict[int, dict[str, Any]] = {}
    logprobs: list[Any] | None = None  # the chunks' logprobs.content, joined
    finish: str | None = None
    usage: Any = None
    for chunk in chunks:
        error = chunk.get("error")
        if isinstance(error, Mapping):
            code = error.get("code")
            status = 504 if code in TIMEOUT_CODES else 502
            raise GatewayError(
                status,
                str(error.get("message") or "the upstream failed"),
                code=code if isinstance(code, str) else None,
            )
        for key in ("id", "created", "model", "system_fingerprint", "service_tier"):
            if key in chunk and key not in head:
                head[key] = chunk[key]
        if chunk.get("usage") is not None:
            usage = chunk["usage"]
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            for key in TEXT_FIELDS:
                if isinstance(delta.get(key), str):
                    texts.setdefault(key, []).append(delta[key])
            for call in delta.get("tool_calls") or ():
                _fold_call(calls, call)
            content = (choice.get("logprobs") or {}).get("content")
            if isinstance(content, list):
                logprobs = [*(logprobs or []), *content]
            if choice.get("finish_reason"):
                finish = choice["finish_reason"]
    message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
    for key, parts in texts.items():
        message[key] = "".join(parts)
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    out: dict[str, Any] = {
        "id": head.get("id", ""),
        "object": "chat.completion",
        "created": head.get("created", 0),
        "model": head.get("model", ""),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish or "stop",
                "logprobs": None if logprobs is None else {"content": logprobs, "refusal": None},
            }
        ],
    }
    for key in ("system_fingerprint", "service_tier"):
        if head.get(key) is not None:
            out[key] = head[key]
    if usage is not None:
        out["usage"] = usage
    return out


def _fold_call(calls: dict[int, dict[str, Any]], fragment: Mapping[str, Any]) -> None:
    index = fragment.get("index", 0)
    call = calls.get(index)
    kind = fragment.get("type") or (call or {}).get("type") or "function"
    if call is None:
        call = calls[index] = {"id": fragment.get("id", ""), "type": kind}
        call[kind] = (
            {"name": "", "arguments": ""} if kind == "function" else {"name": "", "input": ""}
        )
    body = fragment.get(kind) or {}
    target = call[kind]
    if body.get("name"):
        target["name"] += body["name"]
    for key in ("arguments", "input"):
        if isinstance(body.get(key), str) and key in target:
            target[key] += body[key]
