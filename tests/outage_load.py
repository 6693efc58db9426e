"""Streams run against a gateway while its store goes down and comes back, and what each
was told checked against what the store kept.

``run_streams`` keeps ``workers`` streamed creates going (real HTTP) for ``seconds``,
each client waiting as long as a 503's ``Retry-After`` says before its next one,
and calls ``outage()`` (which takes the store down, waits, and brings it back) beside
them; ``check_outcomes`` then asks the gateway for every response: each one answered as
stored (``response.completed``) must be retrievable, each one whose stream said it was
not stored must not be, and every stream must be valid under the strict validator.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from responses_stream import parse_sse, validate_payloads

ASK = {"input": "Count from 1 to 3.", "stream": True}


@dataclass
class Outcomes:
    """What the clients were told: ids answered as stored, ids said not to be, 503s."""

    stored: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    refused: int = 0
    retry_after: set[str] = field(default_factory=set)
    invalid: list[str] = field(default_factory=list)  # whatever else was seen: a failure

    def summary(self) -> str:
        return (
            f"{len(self.stored)} stored, {len(self.lost)} said not stored, "
            f"{self.refused} refused with 503 (Retry-After {sorted(self.retry_after)}), "
            f"{len(self.invalid)} wrong"
        )


async def _one(client: httpx.AsyncClient, url: str, model: str, out: Outcomes) -> None:
    body = {**ASK, "model": model}
    async with client.stream("POST", url + "/v1/responses", json=body) as answer:
        raw = await answer.aread()
    if answer.status_code == 503:
        body = json.loads(raw)
        if body["error"]["code"] != "store_unavailable" or "retry-after" not in answer.headers:
            out.invalid.append(f"503 without the store's code or Retry-After: {body}")
        out.refused += 1
        out.retry_after.add(answer.headers.get("retry-after", ""))
        await asyncio.sleep(float(answer.headers.get("retry-after", "1")))  # as clients do
        return
    if answer.status_code != 200:
        out.invalid.append(f"status {answer.status_code}: {raw[:300]!r}")
        return
    events = [json.loads(m.data) for m in parse_sse([raw])]
    problems = validate_payloads(events, strict=True)
    last = events[-1] if events else {}
    response = last.get("response", {})
    if problems:
        out.invalid.append(f"{response.get('id')}: {problems[:3]}")
    elif last.get("type") == "response.completed":
        out.stored.append(response["id"])

    elif "not stored" in str((response.get("error") or {}).get("message")):
        out.lost.append(response["id"])
    else:
        out.invalid.append(
            f"{response.get('id')} ended {last.get('type')}: {response.get('error')}"
        )


async def _streams(url: str, model: str, workers: int, seconds: float, out: Outcomes) -> None:
    limits = httpx.Limits(max_connections=workers)
    async with httpx.AsyncClient(timeout=30, limits=limits) as client:
        end = time.monotonic() + seconds

        async def worker() -> None:
            while time.monotonic() < end:
                try:
                    await _one(client, url, model, out)
                except httpx.HTTPError as exc:  # a hang past the timeout, a cut connection
                    out.invalid.append(f"{type(exc).__name__}: {exc}")
                await asyncio.sleep(0.05)

        await asyncio.gather(*(worker() for _ in range(workers)))


def run_streams(
    url: str, model: str, workers: int, seconds: float, outage: Callable[[], None]
) -> Outcomes:
    """``workers`` clients streaming from ``model`` for ``seconds`` while ``outage()``
    runs beside them."""
    out = Outcomes()
    side = threading.Thread(target=outage)
    side.start()
    try:
        asyncio.run(_streams(url, model, workers, seconds, out))
    finally:
        side.join()
    return out


def check_outcomes(url: str, out: Outcomes) -> None:
    """Every response answered as stored is retrievable; none said not stored is."""
    assert not out.invalid, out.invalid[:5]
    with httpx.Client(base_url=url + "/v1", timeout=30) as client:
        for response_id in out.stored:
            answer = client.get(f"/responses/{response_id}")
            assert answer.status_code == 200, (response_id, answer.text)
            assert answer.json()["status"] == "completed"
        for response_id in out.lost:
            answer = client.get(f"/responses/{response_id}")
            assert answer.status_code == 404, (response_id, answer.text)


def settled(check: Callable[[], Any], seconds: float = 15.0) -> Any:
    """``check()`` once it stops raising (the store came back), within ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return check()
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
