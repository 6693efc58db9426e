"""Streams that outlive a balancer's idle timeout: while the upstream says nothing, the
gateway sends an SSE comment every ``heartbeat`` seconds, which strict clients skip."""

from __future__ import annotations

import json

import httpx
import pytest
from gateway_support import gateway, sdk
from gateway_upstream import PAUSE, ModelUpstream

from responses_stream import parse_sse, validate_payloads
from responses_stream._runtime.gateway.http import HEARTBEAT

EVERY = 0.25  # seconds: a few beats fit in the upstream's pause


def _raw(url: str, path: str, body: dict[str, object]) -> bytes:
    with httpx.stream("POST", url + path, json=body, timeout=30) as answer:
        assert answer.status_code == 200
        return b"".join(answer.iter_raw())


def _payloads(raw: bytes) -> list[dict[str, object]]:
    return [json.loads(m.data) for m in parse_sse([raw]) if m.data != "[DONE]"]


def test_a_silent_upstream_gets_heartbeats_that_clients_skip(
    upstream: tuple[str, ModelUpstream],
) -> None:
    body = {"model": "fake-pause", "input": "Count from 1 to 5.", "stream": True}
    with gateway(upstream[0] + "/v1", heartbeat=EVERY) as url:
        raw = _raw(url, "/v1/responses", body)
        beats = raw.count(HEARTBEAT)
        assert PAUSE / EVERY - 2 <= beats <= PAUSE / EVERY + 1, beats
        assert validate_payloads(_payloads(raw), strict=True) == []
        # the strict SDK reads the same stream to its end
        with sdk(url).responses.create(model="fake-pause", input="Count.", stream=True) as s:
            kinds = [event.type for event in s]
        assert kinds[-1] == "response.completed"


def test_the_chat_route_beats_too(upstream: tuple[str, ModelUpstream]) -> None:
    body = {"model": "fake-pause", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    with gateway(upstream[0] + "/v1", heartbeat=EVERY) as url:
        raw = _raw(url, "/v1/chat/completions", body)
        assert raw.count(HEARTBEAT) >= 2
        assert raw.endswith(b"data: [DONE]\n\n")
        chunks = sdk(url).chat.completions.create(
            model="fake-pause", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"


@pytest.mark.parametrize("heartbeat", [0.0, 15.0])
def test_no_beat_when_off_or_when_the_upstream_is_quick_enough(
    upstream: tuple[str, ModelUpstream], heartbeat: float
) -> None:
    body = {"model": "fake-pause", "input": "Count from 1 to 5.", "stream": True}
    with gateway(upstream[0] + "/v1", heartbeat=heartbeat) as url:
        raw = _raw(url, "/v1/responses", body)
    assert HEARTBEAT not in raw
    assert validate_payloads(_payloads(raw), strict=True) == []
