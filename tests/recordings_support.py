"""Load the genuine recordings in tests/recordings, with their provenance."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent / "recordings"
REFERENCE = ("openai", "azure-openai")  # the reference API's own streams


def provenance(kind: str) -> dict[str, dict[str, Any]]:
    path = ROOT / kind / "provenance.json"
    data: dict[str, dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return data


def responses_files() -> list[str]:
    return sorted(provenance("responses"))


def is_reference(name: str) -> bool:
    return name.split("/", 1)[0] in REFERENCE


def is_untouched(name: str) -> bool:
    """Neither trimmed nor rewritten by its source."""
    entry = provenance("responses")[name]
    return not entry.get("trimmed") and not entry.get("rewritten")


def streams(name: str, kind: str = "responses") -> list[list[dict[str, Any]]]:
    """The streams of one recording: a file may hold several, one after another."""
    lines = (ROOT / kind / name).read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines if line.strip()]
    out: list[list[dict[str, Any]]] = []
    for event in events:
        if not out or (event.get("type") == "response.created" and out[-1]):
            out.append([])
        out[-1].append(event)
    return out
