"""Reading and translating a request: the Responses bodies real clients sent
(``tests/recordings/client-requests``), each read as the gateway reads it (the JSON
decode, the typed check against its request model, the input made items) and
translated into the Chat Completions request sent upstream, in this process.

The bodies whose input names stored items (``item_reference``) are left out: they need
a store.  Baseline: the JSON decode alone, which no gateway can skip.  Cost is per body.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from responses_stream._runtime.gateway.chat_request import translate
from responses_stream._runtime.gateway.http import parse_object
from responses_stream._runtime.gateway.items import normalize_input
from responses_stream._runtime.gateway.request_check import check_request

from .harness import Report, measure, steady

SECTION = "Request"
CLIENTS = Path(__file__).resolve().parents[1] / "tests" / "recordings" / "client-requests"
TRANSPORT = ("type", "generate")  # WebSocket message fields, taken off before the check


def bodies() -> list[bytes]:
    out = []
    for path in sorted(CLIENTS.glob("*.json")):
        body = json.loads(path.read_text(encoding="utf-8"))
        for name in TRANSPORT:
            body.pop(name, None)
        if "item_reference" not in json.dumps(body):
            out.append(json.dumps(body).encode())
    return out


def ours(raws: list[bytes]) -> int:
    for raw in raws:
        body = parse_object(raw)
        check_request(body, "responses")
        translate(body, normalize_input(body.get("input")))
    return len(raws)


def floor(raws: list[bytes]) -> int:
    for raw in raws:
        parse_object(raw)
    return len(raws)


def run(report: Report, rounds: int) -> None:
    raws = bodies()
    size = sum(map(len, raws))
    print(f"\n== {SECTION}: {len(raws)} client bodies, {size / 1e3:.0f} kB ==")
    if ours(raws) != len(raws):
        raise SystemExit(f"{SECTION}: a body was not translated")
    report.check(f"{SECTION}: the {len(raws)} client bodies are checked and translated")
    cands: dict[str, Callable[[], object]] = {
        "ours": lambda: ours(raws),
        "floor (json decode)": lambda: floor(raws),
    }
    repeat = 20  # each call is short: several a sample
    timed = {n: (lambda f=f: [f() for _ in range(repeat)]) for n, f in cands.items()}
    samples, tries = steady(measure, timed, len(raws) * repeat, rounds)
    path = f"{len(raws)} client bodies, read and translated"
    med = report.add(SECTION, path, samples, "µs/body", tries=tries)
    report.notes.append(
        f"Reading and translating a client's request: {med['ours']:.0f} µs a body (ours), "
        f"{med['floor (json decode)']:.0f} µs for its JSON decode alone."
    )
