"""Spec errors, reported together as ``file:line: path: message``."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``known`` to a misspelt ``word``,
    or ``""`` when none is close."""
    close = difflib.get_close_matches(word, sorted(set(known)), n=1, cutoff=0.75)
    return f"; did you mean {close[0]!r}?" if close else ""


@dataclass(frozen=True, order=True)
class SpecError:
    """One problem in a spec file, at the line of the key at fault."""

    file: str
    line: int
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.path}: {self.message}"


class SpecErrors(Exception):
    """Raised with every error found; nothing has been written."""

    def __init__(self, errors: list[SpecError]) -> None:
        self.errors = sorted(set(errors))
        super().__init__("\n".join(map(str, self.errors)))

    def shown(self, paths: Mapping[str, str]) -> list[SpecError]:
        """The errors with each file named by ``paths`` (display name to the path the
        user typed), in their messages too (``name:line``), in the same order."""
        out = []
        for e in self.errors:
            message = e.message
            for name in sorted(paths, key=len, reverse=True):
                if f"{name}:" in message:
                    message = message.replace(f"{name}:", f"{paths[name]}:")
            out.append(replace(e, file=paths.get(e.file, e.file), message=message))
        return out
