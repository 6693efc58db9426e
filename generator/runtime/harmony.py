"""Harmony (gpt-oss) segments -> Responses stream, routed by the harmony routes spec.

A message arrives as segments ``(channel, recipient, delta)`` and ends with
``end_message(content_type)``.  The first route that matches the message's
channel and recipient names the item type, how it is opened, where its text
goes, which transitions finish it, and the parameters that close it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .convert import normalize_usage, resolve_tool, tool_index
from .processor import ItemHandle, ProcessorError, StreamProcessor


def _segments(recipient: str) -> list[str]:
    return recipient.split(".")


def recipient_source(name: str, recipient: str) -> str:
    parts = _segments(recipient)
    if name == "recipient":
        return recipient
    if name == "recipient.head":
        return parts[0]
    if name == "recipient.rest":
        return recipient.split(".", 1)[1] if len(parts) > 1 else recipient
    if name == "recipient.last":
        return parts[-1]
    if name == "recipient.second":
        return parts[1] if len(parts) > 1 else parts[0]
    raise ValueError(name)


class HarmonyToResponses:
    """Feeds Harmony segments into a ``StreamProcessor``; read events with ``drain()``."""

    def __init__(self, proc: StreamProcessor, request: Mapping[str, Any] | None = None) -> None:
        self.proc = proc
        self.routes: list[dict[str, Any]] = proc.dialect.tables.HARMONY_ROUTES
        self.tools = tool_index(request)
        self.route: dict[str, Any] | None = None
        self.handle: ItemHandle | None = None
        self.recipient = ""
        self.buffer: list[str] = []
        self.call_id = ""

    def match(self, channel: str | None, recipient: str | None) -> dict[str, Any]:
        for route in self.routes:
            m = route["match"]
            if m["channel"] is not None and m["channel"] != channel:
                continue
            if m["no_recipient"] and recipient:
                continue
            if m["any_recipient"] and not recipient:
                continue
            if m["recipient"] is not None and m["recipient"] != recipient:
                continue
            if m["recipient_prefix"] is not None and not (recipient or "").startswith(
                m["recipient_prefix"]
            ):
                continue
            return route
        raise ProcessorError(f"no harmony route for channel={channel!r} recipient={recipient!r}")

    def segment(self, channel: str | None, recipient: str | None, delta: str) -> None:
        """One piece of the current message."""
        if not self.proc.started:
            self.proc.start()
        if self.route is None:
            self._open(channel, recipient)
        assert self.route is not None and self.handle is not None
        self.buffer.append(delta)
        if self.route["buffer"] or not delta:
            return
        if self.route["part"] is not None:
            self.handle.text(delta)
        else:
            self.handle.delta(delta)

    def _open(self, channel: str | None, recipient: str | None) -> None:
        route = self.route = self.match(channel, recipient)
        self.recipient = recipient or ""
        self.buffer = []
        self.call_id = ""
        fields = {k: self._value(v) for k, v in route["open"].items()}
        if route["tool"] and "name" in fields:
            tool = resolve_tool(self.tools, str(fields["name"]))
            fields["name"] = tool.name
            if tool.namespace is not None:
                fields["namespace"] = tool.namespace
        self.handle = self.proc.open(route["item"], **fields)
        if route["part"] is not None:
            self.handle.part(route["part"])

    def end_message(self, content_type: str | None = None) -> None:
        """The current message is complete: run its finishing transitions and close it."""
        if self.route is None or self.handle is None:
            return
        route, handle = self.route, self.handle
        self.route = self.handle = None
        for name in route["finish"]:
            handle.phase(name)
        params = {k: self._value(v) for k, v in route["close"].items()}
        handle.close("completed", **params)

    def _value(self, source: Any) -> Any:
        if isinstance(source, Mapping):
            out = {k: self._value(v) for k, v in source.items()}
            return {k: v for k, v in out.items() if v is not None}
        name, _, fallback = str(source).partition("|")
        value = self._lookup(name)
        if value is None and fallback.startswith("="):
            return fallback[1:]
        return value

    def _lookup(self, name: str) -> Any:
        if name.startswith("="):
            return name[1:]
        if name.startswith("recipient"):
            return recipient_source(name, self.recipient)
        if name == "call_id":
            if not self.call_id:
                self.call_id = self.proc.response.ids("call_")
            return self.call_id
        text = "".join(self.buffer)
        if name == "text":
            return text
        if name.startswith("args."):
            try:
                args = json.loads(text) if text else {}
            except ValueError:
                return None
            return args.get(name[5:]) if isinstance(args, Mapping) else None
        raise ValueError(name)

    def end(self, usage: Mapping[str, Any] | None = None, reason: str | None = None) -> None:
        """The output is over: a message still open is cut short."""
        if not self.proc.started:
            self.proc.start()
        u = normalize_usage(usage)
        if self.handle is not None or reason is not None:
            self.route = self.handle = None
            self.proc.truncate(reason or "max_output_tokens", u)
        else:
            self.proc.finish(u)
