"""Tool calls that a server left in the text, in a model family's markup.

A server that does not parse a model's tool calls streams them as text.  When the
request offered functions, ``CallMarkup`` finds these calls in the text as it streams:

- Hermes and Qwen 2.5: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``;
- Qwen3-Coder: ``<tool_call><function=NAME><parameter=KEY>VALUE</parameter>...
  </function></tool_call>``;
- Mistral: ``[TOOL_CALLS]`` followed by a JSON list of ``{"name", "arguments"}``
  objects, or by ``NAME[ARGS]{...}`` (several calls each after their own marker).

Text outside the markup passes on as it comes, but for the few characters that may
start a marker, held until the next piece tells.  A call whose name the request did not
offer, or whose arguments are not a JSON object, stays text: nothing is lost.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

HERMES_OPEN, HERMES_CLOSE = "<tool_call>", "</tool_call>"
MISTRAL = "[TOOL_CALLS]"
_MARKERS = (HERMES_OPEN, MISTRAL)
_XML_FUNCTION = re.compile(r"^<function=([^>\s]+)>(.*?)</function>$", re.DOTALL)
_XML_PARAMETER = re.compile(r"<parameter=([^>\s]+)>\n?(.*?)\n?</parameter>", re.DOTALL)
_MISTRAL_CALL = re.compile(
    r"^\s*([A-Za-z0-9_.\-]+)\s*(?:\[CALL_ID\][A-Za-z0-9]*)?\[ARGS\](.*)$", re.DOTALL
)


@dataclass(frozen=True)
class MarkupCall:
    """One call found in the text: the function's name and its arguments (JSON text)."""

    name: str
    arguments: str


Piece = str | MarkupCall


def _arguments(value: Any) -> str | None:
    """Arguments as compact JSON text, when they are a JSON object (or its text)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not isinstance(value, dict):
        return None
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _xml_value(raw: str) -> Any:
    """A Qwen3-Coder parameter's value: JSON when it reads as JSON, else the text."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw


class CallMarkup:
    """Splits streamed text into text pieces and the calls its markup holds."""

    def __init__(self, functions: frozenset[str]) -> None:
        self.functions = functions
        self.buf = ""
        self.mode = ""  # "", or the marker whose body is being read

    def feed(self, text: str) -> list[Piece]:
        """The pieces ``text`` completes, in order."""
        self.buf += text
        out: list[Piece] = []
        while self.buf:
            if not self.mode:
                if not self._text(out):
                    break
            elif self.mode == HERMES_OPEN:
                end = self.buf.find(HERMES_CLOSE)
                if end < 0:
                    break
                body, self.buf = self.buf[:end], self.buf[end + len(HERMES_CLOSE) :]
                self.mode = ""
                out.append(self._hermes(body, closed=True))
            else:  # Mistral's calls run to the end of the text
                break
        return _joined(out)

    def end(self) -> list[Piece]:
        """The pieces left when the text ends (an unclosed call is read as it stands)."""
        buf, mode, self.buf, self.mode = self.buf, self.mode, "", ""
        if mode == HERMES_OPEN:
            return [self._hermes(buf, closed=False)]
        if mode == MISTRAL:
            return _joined(self._mistral(buf))
        return [buf] if buf else []

    def _text(self, out: list[Piece]) -> bool:
        """Text up to the next marker into ``out``; False when the rest must wait."""
        found = [(at, m) for m in _MARKERS if (at := self.buf.find(m)) >= 0]
        if found:
            at, marker = min(found)
            if at:
                out.append(self.buf[:at])
            self.buf, self.mode = self.buf[at + len(marker) :], marker
            return True
        keep = _partial_marker(self.buf)
        if keep < len(self.buf):
            out.append(self.buf[: len(self.buf) - keep])
            self.buf = self.buf[len(self.buf) - keep :]
        return False

    def _hermes(self, body: str, *, closed: bool) -> Piece:
        raw = HERMES_OPEN + body + (HERMES_CLOSE if closed else "")
        call = self._call_of(body.strip())
        return call if call is not None else raw

    def _call_of(self, body: str) -> MarkupCall | None:
        match = _XML_FUNCTION.match(body)
        if match is not None:
            params = {k: _xml_value(v) for k, v in _XML_PARAMETER.findall(match.group(2))}
            return self._call(match.group(1), params)
        try:
            value = json.loads(body)
        except ValueError:
            return None
        if not isinstance(value, dict):
            return None
        return self._call(value.get("name"), value.get("arguments", value.get("parameters")))

    def _call(self, name: Any, arguments: Any) -> MarkupCall | None:
        if not isinstance(name, str) or name not in self.functions:
            return None
        args = _arguments({} if arguments is None else arguments)
        return None if args is None else MarkupCall(name, args)

    def _mistral(self, body: str) -> list[Piece]:
        """The calls after ``[TOOL_CALLS]``: a JSON list, or ``NAME[ARGS]{...}`` each after
        its own marker; anything else stays text, marker and all."""
        stripped = body.strip()
        if stripped.startswith("["):
            try:
                value = json.loads(stripped)
            except ValueError:
                value = None
            if isinstance(value, list) and value:
                calls = [
                    self._call(v.get("name"), v.get("arguments")) if isinstance(v, dict) else None
                    for v in value
                ]
                if all(c is not None for c in calls):
                    return [c for c in calls if c is not None]
            return [MISTRAL + body]
        out: list[Piece] = []
        for part in body.split(MISTRAL):
            match = _MISTRAL_CALL.match(part)
            call = None
            if match is not None:
                call = self._call(match.group(1), match.group(2).strip())
            out.append(call if call is not None else MISTRAL + part)
        return out


def _partial_marker(text: str) -> int:
    """How many characters at the end of ``text`` may start a marker."""
    for size in range(min(len(text), max(map(len, _MARKERS)) - 1), 0, -1):
        tail = text[-size:]
        if any(m.startswith(tail) for m in _MARKERS):
            return size
    return 0


def _joined(pieces: list[Piece]) -> list[Piece]:
    """``pieces`` with neighbouring text joined and empty text left out."""
    out: list[Piece] = []
    for piece in pieces:
        if isinstance(piece, str):
            if not piece:
                continue
            if out and isinstance(out[-1], str):
                out[-1] += piece
                continue
        out.append(piece)
    return out
