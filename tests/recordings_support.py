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


# What the reference API itself gets wrong in a recording: the rules the validator rightly
# reports for it.  The consumers still fold these streams, as the SDK does.
PRODUCER_FAULTS: dict[str, frozenset[str]] = {
    # OpenAI never closes its two mcp_list_tools items before response.completed
    "openai/pydantic-ai--openai_responses--test_openai_responses_model_mcp_list_tools_stream"
    "_backfills_missing_results.1.jsonl": frozenset({"MISSING_DONE"}),
}
# A background response read again with starting_after=0, and the stream it resumes
RESUMED = "openai/pydantic-ai--openai_responses--test_background_mode_streaming_starting_after_vcr"


def is_resumed(stream: list[dict[str, Any]]) -> bool:
    """Whether a stream was resumed: numbered past 0, without response.created."""
    seq = stream[0].get("sequence_number")
    return isinstance(seq, int) and seq > 0 and stream[0].get("type") != "response.created"


def is_unsequenced(stream: list[dict[str, Any]]) -> bool:
    """Whether a stream is from before the API numbered its events."""
    return "sequence_number" not in stream[0]
