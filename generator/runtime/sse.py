"""Server-Sent Events framing for typed events: ``event: <type>\\ndata: <json>\\n\\n``."""

from __future__ import annotations

from typing import Any

import msgspec

DONE = b"data: [DONE]\n\n"


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
        return prefix + self._encode(event) + b"\n\n"

    def encode_all(self, events: list[Any]) -> bytes:
        """Several events as consecutive frames."""
        return b"".join([self.encode(e) for e in events])

    def close(self) -> bytes:
        """The end of the stream: ``data: [DONE]`` where the dialect frames it so."""
        return DONE if self.done_sentinel else b""


def to_json(event: Any) -> bytes:
    """The JSON payload of one event or model."""
    return msgspec.json.encode(event)


def to_builtins(event: Any) -> Any:
    """An event or model as plain dicts and lists."""
    return msgspec.to_builtins(event)
