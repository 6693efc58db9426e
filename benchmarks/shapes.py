"""The streams every benchmark runs on, built here so no recording is needed.

Two chat shapes, as an OpenAI-compatible server sends them (one choice, ``include_usage``):

- ``mixed``: a role chunk, 1,000 ``reasoning_content`` deltas, 3,000 ``content`` deltas,
  two tool calls of 200 argument fragments each (each opened by a fragment with id, type
  and name), the finish chunk (``tool_calls``), a usage chunk and ``[DONE]``;
- ``text``: a role chunk, 4,000 ``content`` deltas, the finish chunk (``stop``), usage and
  ``[DONE]``.

``scale`` multiplies every count (the CLI benchmarks time two sizes to cancel startup).
Deltas are 1-6 characters cut from ordinary prose with a few non-ASCII words, as a
tokenizer would cut them.  The Responses stream of a shape is the one our converter makes
from it (checked against every baseline before anything is timed).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

MODEL = "gpt-4o-mini-2024-07-18"
CREATED = 1_700_000_000
CHAT_ID = "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG"
FINGERPRINT = "fp_efad92c60b"
BLOCK = 4096  # bytes per network read in the async benchmarks

PROSE = (
    "The quick brown fox jumps over the lazy dog while a naïve observer takes notes, "
    "counting every leap and bound with great care; the café across the street stays "
    "open late, and nobody seems to mind the noise. "
)
THOUGHT = (
    "First I should check what the user asked for, then look up the forecast for both "
    "cities, compare them and answer briefly. "
)


def pieces(n: int, source: str = PROSE, width: int = 1) -> list[str]:
    """``n`` deltas of 1-6 characters (times ``width``) cut from ``source``, repeated."""
    out: list[str] = []
    pos = 0
    text = source * (n * 6 * width // len(source) + 2)
    while len(out) < n:
        cut = (1 + (len(out) * 7) % 6) * width
        out.append(text[pos : pos + cut])
        pos += cut
    return out


def iter_pieces(n: int, width: int = 1) -> Iterator[str]:
    """``pieces(n, PROSE, width)``, made as they are taken (for streams too big to hold)."""
    text = PROSE * 4
    pos = 0
    for i in range(n):
        cut = (1 + (i * 7) % 6) * width
        if pos + cut > len(PROSE) * 2:
            pos -= len(PROSE)
        yield text[pos : pos + cut]
        pos += cut


def arguments(n: int, city: str, width: int = 1) -> list[str]:
    """A tool call's JSON arguments, about 4 characters a fragment, cut into ``n``."""
    detail = (PROSE * (n * width // 40 + 1))[: n * 4 * width]
    full = json.dumps({"location": city, "unit": "celsius", "days": 7, "detail": detail})
    cuts = [len(full) * i // n for i in range(n + 1)]
    return [full[a:b] for a, b in zip(cuts, cuts[1:], strict=False)]


def _chunk(choices: list[dict[str, Any]], usage: Any = None) -> str:
    chunk = {
        "id": CHAT_ID,
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": MODEL,
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
        "choices": choices,
        "usage": usage,
    }
    return json.dumps(chunk, ensure_ascii=False, separators=(",", ":"))


def _choice(delta: dict[str, Any], finish_reason: str | None = None) -> list[dict[str, Any]]:
    return [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]


def _usage(completion: int, reasoning: int) -> dict[str, Any]:
    return {
        "prompt_tokens": 25,
        "completion_tokens": completion,
        "total_tokens": 25 + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": reasoning, "audio_tokens": 0},
    }


@dataclass(frozen=True)
class ChatShape:
    """One chat stream: its ``data:`` payloads and what they add up to."""

    name: str
    payloads: list[str]  # the data: payloads, [DONE] last
    reasoning: str
    text: str
    calls: list[tuple[str, str, str]]  # (call id, name, arguments)

    @property
    def chunks(self) -> int:
        """Input units: every data: payload, [DONE] included."""
        return len(self.payloads)

    def sse(self) -> bytes:
        """The stream as it comes off the wire."""
        return "".join(f"data: {p}\n\n" for p in self.payloads).encode()


def chat_mixed(scale: int = 1, width: int = 1) -> ChatShape:
    """The mixed shape; ``width`` makes deltas that many times longer and fewer (the same
    text in fewer events)."""
    reasoning = pieces(1000 * scale // width, THOUGHT, width)
    text = pieces(3000 * scale // width, PROSE, width)
    out = [_chunk(_choice({"role": "assistant", "content": ""}))]
    out += [_chunk(_choice({"reasoning_content": p})) for p in reasoning]
    out += [_chunk(_choice({"content": p})) for p in text]
    calls = []
    for i, city in enumerate(("Paris, France", "Zürich, Switzerland")):
        call_id, frags = f"call_{i}abcDEF123xyz", arguments(200 * scale // width, city, width)
        head = {"index": i, "id": call_id, "type": "function"}
        head["function"] = {"name": "get_weather", "arguments": ""}
        out.append(_chunk(_choice({"tool_calls": [head]})))
        for frag in frags:
            tool = {"index": i, "function": {"arguments": frag}}
            out.append(_chunk(_choice({"tool_calls": [tool]})))
        calls.append((call_id, "get_weather", "".join(frags)))
    out.append(_chunk(_choice({}, "tool_calls")))
    out.append(_chunk([], _usage(len(out), len(reasoning))))
    out.append("[DONE]")
    return ChatShape("mixed", out, "".join(reasoning), "".join(text), calls)


def chat_text(scale: int = 1) -> ChatShape:
    text = pieces(4000 * scale)
    out = [_chunk(_choice({"role": "assistant", "content": ""}))]
    out += [_chunk(_choice({"content": p})) for p in text]
    out.append(_chunk(_choice({}, "stop")))
    out.append(_chunk([], _usage(len(text), 0)))
    out.append("[DONE]")
    return ChatShape("text", out, "", "".join(text), [])


CHAT_SHAPES = {"mixed": chat_mixed, "text": chat_text}


def blocks(data: bytes, size: int = BLOCK) -> list[bytes]:
    """``data`` in reads of ``size`` bytes, as a socket gives them: events split anywhere."""
    return [data[i : i + size] for i in range(0, len(data), size)]


async def ablocks(parts: list[bytes]) -> AsyncIterator[bytes]:
    """The reads as an async source (``aiter_bytes()``)."""
    for part in parts:
        yield part


def iter_blocks(parts: list[bytes]) -> Iterator[bytes]:
    yield from parts
