"""Copying the generator's sources for tests that run it in a repository copy."""

from __future__ import annotations

import shutil
from pathlib import Path

from generator.resources import HAND_WRITTEN

ROOT = Path(__file__).resolve().parents[1]


def copy_hand_written(repo: Path) -> None:
    """Copy the hand-written files of ``generated/`` into the repository copy ``repo``:
    the generator copies them into every package it writes."""
    for rel in HAND_WRITTEN:
        source, target = ROOT / "generated" / rel, repo / "generated" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, target)
