"""Spec errors, reported together as ``file:line: path: message``."""

from __future__ import annotations

from dataclasses import dataclass


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
