"""Item and response ids: a conventional prefix and a random or counted suffix."""

from __future__ import annotations

import itertools
import os


class RandomIds:
    """Unique ids such as ``msg_3f9a...``: 24 hex digits from the OS random source."""

    def __call__(self, prefix: str) -> str:
        return prefix + os.urandom(12).hex()


class CountingIds:
    """Deterministic ids for tests and recordings: ``msg_0001``, ``fc_0002``..."""

    def __init__(self) -> None:
        self._counter = itertools.count(1)

    def __call__(self, prefix: str) -> str:
        return f"{prefix}{next(self._counter):04d}"
