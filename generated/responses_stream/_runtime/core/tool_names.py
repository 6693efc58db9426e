"""Tool names as a chat upstream takes them, reversibly.

Chat Completions APIs (OpenAI's and several providers') take tool names matching
``^[a-zA-Z0-9_-]{1,64}$`` only, while Responses tools may be namespaced
(``multi_agent_v1.close_agent``) or longer.  The wire name of a tool is:

- its name, when the name already fits;
- otherwise each ``.`` written ``__`` and any other character outside the set
  written ``_``, when that fits in 64 characters, changed nothing but dots and is
  the name of no other tool of the request;
- otherwise the first 55 characters of that, ``_`` and 8 hex digits of the
  SHA-256 of the name.

:class:`ToolNames` holds one request's names both ways, so a call that comes back
under a wire name is mapped to the tool that was declared.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

FITS = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_OUTSIDE = re.compile(r"[^a-zA-Z0-9_-]")
MAX_LEN = 64
HASH_DIGITS = 8


def fits(name: str) -> bool:
    """Whether a chat upstream takes ``name`` as it is."""
    return FITS.fullmatch(name) is not None


def _hashed(name: str, readable: str) -> str:
    digest = hashlib.sha256(name.encode()).hexdigest()[:HASH_DIGITS]
    return f"{readable[: MAX_LEN - HASH_DIGITS - 1]}_{digest}"


class ToolNames:
    """Declared name <-> wire name, for the names of one request."""

    def __init__(self, names: Iterable[str]) -> None:
        declared = list(dict.fromkeys(names))
        self._plain = {n for n in declared if fits(n)}
        self.to_wire: dict[str, str] = {}
        self.from_wire: dict[str, str] = {}
        for name in declared:
            self.wire(name)

    def wire(self, name: str) -> str:
        """The wire name of ``name`` (remembered, so it maps back)."""
        known = self.to_wire.get(name)
        if known is not None:
            return known
        if fits(name):
            wire = name
        else:
            dotted = name.replace(".", "__")
            readable = _OUTSIDE.sub("_", dotted)
            clash = readable in self._plain or readable in self.from_wire
            if readable == dotted and len(readable) <= MAX_LEN and readable and not clash:
                wire = readable
            else:
                wire = _hashed(name, readable or "tool")
        self.to_wire[name] = wire
        self.from_wire.setdefault(wire, name)
        return wire

    def declared(self, wire: str) -> str:
        """The declared name a wire name stands for (an unknown name as it came)."""
        return self.from_wire.get(wire, wire)
