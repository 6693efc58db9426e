"""Server-Sent Events framing for typed events: ``event: <type>\\ndata: <json>\\n\\n``.

A string holding a lone UTF-16 surrogate cannot be written as UTF-8; rather than cut
the stream, the encoder writes such an event with each lone surrogate as U+FFFD (and a
surrogate pair as its character), and logs a warning.  The producers replace them
before (the processor checks every string it is given), so this is a last resort.
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec

DONE = b"data: [DONE]\n\n"
_log = logging.getLogger(__name__)


def _fix(value: Any) -> Any:
    """``value`` (plain JSON data) with lone surrogates replaced in every string."""
    if isinstance(value, str):
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if isinstance(value, dict):
        return {_fix(k): _fix(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fix(v) for v in value]
    return value


def encode_replacing(encode: Any, event: Any) -> bytes:
    """``encode(event)``; if a string in it cannot be UTF-8, the event with it replaced."""
    try:
        data: bytes = encode(event)
    except UnicodeEncodeError:
        _log.warning("a lone UTF-16 surrogate in an event was written as U+FFFD")
        data = encode(_fix(msgspec.to_builtins(event)))
    return data


class SSEEncoder:
    """Encodes msgspec event structs to SSE frames, caching each class's prefix."""

    __slots__ = ("_encode", "_prefix", "done_sentinel")

    def __init__(self, done_sentinel: bool = False) -> None:
        self._encode = msgspec.json.Encoder().encode
        self._prefix: dict[type, bytes] = {}
        self.done_sentinel = done_sentinel

    def _prefix_for(self, cls: type) -> bytes:
        tag = cls.__struct_config__.tag  # type: ignore[attr-defined]
        prefix = b"event: " + str(tag).encode() + b"\ndata: "
        self._prefix[cls] = prefix
        return prefix

    def encode(self, event: Any) -> bytes:
        """One event as one SSE frame."""
        cls = type(event)
        prefix = self._prefix.get(cls) or self._prefix_for(cls)
        try:
            data = self._encode(event)
        except UnicodeEncodeError:
            data = encode_replacing(self._encode, event)
        return prefix + data + b"\n\n"

    def encode_all(self, events: list[Any]) -> bytes:
        """Several events as consecutive frames."""
        return b"".join([self.encode(e) for e in events])

    def close(self) -> bytes:
        """The end of the stream: ``data: [DONE]`` where the dialect frames it so."""
        return DONE if self.done_sentinel else b""


def to_json(event: Any) -> bytes:
    """The JSON payload of one event or model (lone surrogates as U+FFFD)."""
    return encode_replacing(msgspec.json.encode, event)


def to_builtins(event: Any) -> Any:
    """An event or model as plain dicts and lists."""
    return msgspec.to_builtins(event)
