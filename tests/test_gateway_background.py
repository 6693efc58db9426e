"""Background responses (``background: true``) through the gateway, read by the strict openai
SDK over real HTTP: polled to their end, streamed, cut and resumed, cancelled, kept apart
by key; on every store backend."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from faulty_upstream import FaultyUpstream, Script, chat_events
from gateway_support import gateway, serve_process
from http_support import serve
from openai.types.responses import Response
from test_gateway_store import backend, redis_urls, store_url

from responses_stream import ResponseAccumulator, parse_sse, validate_payloads

__all__ = ["backend", "redis_urls", "store_url"]  # fixtures used here
TEXTS = [f"piece {n}; " for n in range(40)]
KEY = {"authorization": "Bearer sk-one"}


@pytest.fixture
def upstream() -> Iterator[tuple[str, FaultyUpstream]]:
    fake = FaultyUpstream()
    with serve(fake) as url:  # type: ignore[arg-type]
        yield url + "/v1", fake


def client(base: str, key: str = "sk-one") -> openai.OpenAI:
    return openai.OpenAI(base_url=base + "/v1", api_key=key, max_retries=0, timeout=30)


def poll(sdk: openai.OpenAI, response_id: str, seconds: float = 30) -> Response:
    deadline = time.monotonic() + seconds
    while True:
        response = sdk.responses.retrieve(response_id)
        if response.status not in ("queued", "in_progress") or time.monotonic() > deadline:
            return response
        time.sleep(0.05)


@pytest.fixture
def slow(upstream: tuple[str, FaultyUpstream], store_url: str) -> Iterator[str]:
    """The gateway on the store under test, in front of a model ``slow`` that streams
    ``TEXTS`` a piece every 20 ms."""
    base, fake = upstream
    fake.script("slow", Script(pieces=chat_events(TEXTS), delay=0.02))
    with gateway(base, store=store_url) as url:
        yield url


def test_created_in_the_background_and_polled_to_completed(slow: str) -> None:
    sdk = client(slow)
    queued = sdk.responses.create(model="slow", input="go", background=True, store=True)
    assert queued.status == "queued" and queued.background is True
    done = poll(sdk, queued.id)
    assert done.status == "completed", done
    assert done.output_text == "".join(TEXTS)
    assert done.id == queued.id and done.background is True


def test_a_background_stream_cut_at_5_resumes_at_6(slow: str) -> None:
    url = slow
    sdk = client(url)
    first: list[Any] = []
    with sdk.responses.create(
        model="slow", input="go", background=True, store=True, stream=True
    ) as stream:
        for event in stream:
            first.append(event)
            if event.sequence_number == 5:
                break  # the client goes away; the response goes on
    response_id = first[0].response.id
    assert [e.type for e in first[:3]] == [
        "response.created",
        "response.queued",
        "response.in_progress",
    ]
    rest = list(sdk.responses.retrieve(response_id, stream=True, starting_after=5))
    assert [e.sequence_number for e in rest] == list(range(6, 6 + len(rest)))
    assert rest[-1].type == "response.completed"
    # the same log as it went over the wire, from its start
    raw = httpx.get(f"{url}/v1/responses/{response_id}?stream=true", headers=KEY)
    whole = [json.loads(m.data) for m in parse_sse([raw.content])]
    assert [p["sequence_number"] for p in whole] == list(range(len(whole)))
    assert [p["type"] for p in whole[6:]] == [e.type for e in rest]
    assert validate_payloads(whole, strict=True) == []
    folded = ResponseAccumulator("openai").feed_all(whole)
    stored = poll(sdk, response_id)
    assert stored.status == "completed"
    kept = httpx.get(f"{url}/v1/responses/{response_id}", headers=KEY).json()
    assert folded["output"] == kept["output"] and folded["status"] == kept["status"]
    assert stored.output_text == "".join(TEXTS)


def test_cancelled_mid_run_closes_the_upstream(
    upstream: tuple[str, FaultyUpstream], store_url: str
) -> None:
    base, fake = upstream
    record = fake.script("slow", Script(pieces=chat_events(TEXTS), delay=0.2))
    with gateway(base, store=store_url) as url:
        sdk = client(url)
        queued = sdk.responses.create(model="slow", input="go", background=True, store=True)
        time.sleep(0.6)
        cancelled = sdk.responses.cancel(queued.id)
        assert cancelled.status == "cancelled"
        assert record.closed.wait(10), "the upstream request was not closed"
        assert record.sent_at_close is not None and record.sent_at_close < len(TEXTS)
        assert cancelled.output == []  # as OpenAI's API keeps a cancelled response
        assert poll(sdk, queued.id).status == "cancelled"
        again = sdk.responses.cancel(queued.id)  # cancelling it again answers the same
        assert again.status == "cancelled" and again.output == []
        # its stream ends as OpenAI's does: response.failed carrying the cancelled Response
        events = list(sdk.responses.retrieve(queued.id, stream=True))
        assert events[-1].type == "response.failed"
        assert events[-1].response.status == "cancelled"
        assert any(e.type == "response.output_text.delta" for e in events)
        raw = httpx.get(f"{url}/v1/responses/{queued.id}?stream=true", headers=KEY)
        payloads = [json.loads(m.data) for m in parse_sse([raw.content])]
        assert validate_payloads(payloads, strict=True) == []
        assert ResponseAccumulator("openai").feed_all(payloads)["status"] == "cancelled"


def test_what_cannot_be_cancelled_streamed_or_deleted_is_refused_as_openai_refuses_it(
    upstream: tuple[str, FaultyUpstream],
) -> None:
    base, fake = upstream
    fake.script("fast", Script(pieces=chat_events(["hi"])))
    fake.script("slow", Script(pieces=chat_events(TEXTS), delay=0.05))
    with gateway(base) as url:
        sdk = client(url)
        queued = sdk.responses.create(model="fast", input="go", background=True, store=True)
        assert poll(sdk, queued.id).status == "completed"
        with pytest.raises(openai.BadRequestError) as refused:
            sdk.responses.cancel(queued.id)
        assert refused.value.body["message"] == "Cannot cancel a completed response."  # type: ignore[index]
        assert refused.value.body["param"] == "response_id"  # type: ignore[index]
        assert sdk.responses.retrieve(queued.id).status == "completed"
        plain = sdk.responses.create(model="fast", input="go", store=True)
        with pytest.raises(openai.BadRequestError, match="Cannot cancel a synchronous response"):
            sdk.responses.cancel(plain.id)
        with pytest.raises(openai.BadRequestError, match="not created with background=true"):
            list(sdk.responses.retrieve(plain.id, stream=True))
        running = sdk.responses.create(model="slow", input="go", background=True, store=True)
        with pytest.raises(openai.BadRequestError, match="Cannot delete an in-flight response"):
            sdk.responses.delete(running.id)
        assert poll(sdk, running.id).status == "completed"
        sdk.responses.delete(running.id)  # once it ended
        with pytest.raises(openai.NotFoundError):
            sdk.responses.retrieve(running.id)
        with pytest.raises(openai.BadRequestError) as refused:
            sdk.responses.create(model="fast", input="go", background=True, store=False)
        assert refused.value.body["param"] == "store"  # type: ignore[index]


def test_another_keys_poll_resume_and_cancel_find_nothing(
    upstream: tuple[str, FaultyUpstream],
) -> None:
    base, fake = upstream
    fake.script("slow", Script(pieces=chat_events(TEXTS), delay=0.05))
    with gateway(base, api_keys=("gk-a", "gk-b")) as url:
        mine, theirs = client(url, "gk-a"), client(url, "gk-b")
        queued = mine.responses.create(model="slow", input="go", background=True, store=True)
        with pytest.raises(openai.NotFoundError):
            theirs.responses.retrieve(queued.id)
        with pytest.raises(openai.NotFoundError):
            list(theirs.responses.retrieve(queued.id, stream=True, starting_after=0))
        with pytest.raises(openai.NotFoundError):
            theirs.responses.cancel(queued.id)
        assert poll(mine, queued.id).status == "completed"


@pytest.mark.parametrize("dialect", ["openai", "openresponses"])
def test_a_run_whose_replica_was_killed_fails_within_its_lease(
    upstream: tuple[str, FaultyUpstream], tmp_path: Path, dialect: str
) -> None:
    """A ``serve`` process runs a background response and is killed (SIGKILL); another
    gateway on the same SQLite file fails it once the lease ran out, and a resumed stream
    ends with that failure."""
    base, fake = upstream
    fake.script("slow", Script(pieces=chat_events(TEXTS), delay=0.2))
    store = f"sqlite:///{tmp_path / 'shared.db'}"
    prefix = "/v1" if dialect == "openai" else "/openresponses/v1"
    body = {"model": "slow", "input": "go", "background": True, "store": True}
    with serve_process(base, "--store", store, "--background-lease", "2") as (one, proc):
        created = httpx.post(one + prefix + "/responses", json=body, headers=KEY).json()
        assert created["status"] == "queued"
        time.sleep(0.5)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    killed_at = time.monotonic()
    with gateway(base, store=store, background_lease=2.0) as other:
        path = f"{other}{prefix}/responses/{created['id']}"
        status = created["status"]
        while status in ("queued", "in_progress") and time.monotonic() - killed_at < 10:
            status = httpx.get(path, headers=KEY).json()["status"]
            time.sleep(0.1)
        assert status == "failed"
        assert time.monotonic() - killed_at < 2 + 3  # the lease, and a little
        failed = httpx.get(path, headers=KEY).json()
        assert failed["error"]["message"].startswith("the gateway replica running")
        resumed = httpx.get(path + "?stream=true&starting_after=2", headers=KEY)
        events = [json.loads(m.data) for m in parse_sse([resumed.content]) if m.data != "[DONE]"]
        assert [e["type"] for e in events[-2:]] == ["error", "response.failed"]
        assert events[0]["sequence_number"] == 3
        assert resumed.content.endswith(b"data: [DONE]\n\n") == (dialect == "openresponses")
        whole = httpx.get(path + "?stream=true", headers=KEY)
        payloads = [json.loads(m.data) for m in parse_sse([whole.content]) if m.data != "[DONE]"]
        problems = [v.rule for v in validate_payloads(payloads, dialect) if v.severity == "error"]
        assert set(problems) <= {"MISSING_DONE"}, problems  # the items it never closed


def test_a_cancel_through_another_replica_stops_the_run(
    upstream: tuple[str, FaultyUpstream], tmp_path: Path
) -> None:
    """Two gateways on one SQLite file: the one that did not start the run cancels it; the
    one running it stops at its next renewal, closing its upstream request."""
    base, fake = upstream
    record = fake.script("slow", Script(pieces=chat_events(TEXTS), delay=0.2))
    store = f"sqlite:///{tmp_path / 'shared.db'}"
    with gateway(base, store=store) as one, gateway(base, store=store) as two:
        queued = client(one).responses.create(model="slow", input="go", background=True, store=True)
        time.sleep(0.5)
        cancelled = client(two).responses.cancel(queued.id)
        assert cancelled.status == "cancelled"
        assert record.closed.wait(10), "the upstream request was not closed"
        assert client(one).responses.retrieve(queued.id).status == "cancelled"


def test_a_key_past_its_limit_of_running_responses_is_told_to_wait(
    upstream: tuple[str, FaultyUpstream],
) -> None:
    base, fake = upstream
    fake.script("slow", Script(pieces=chat_events(TEXTS), delay=0.05))
    with gateway(base, background_max=1) as url:
        sdk = client(url)
        first = sdk.responses.create(model="slow", input="go", background=True, store=True)
        with pytest.raises(openai.RateLimitError, match="at most 1 background"):
            sdk.responses.create(model="slow", input="go", background=True, store=True)
        assert poll(sdk, first.id).status == "completed"
        again = sdk.responses.create(model="slow", input="go", background=True, store=True)
        assert poll(sdk, again.id).status == "completed"


def test_a_keys_limit_holds_across_replicas(
    upstream: tuple[str, FaultyUpstream], tmp_path: Path
) -> None:
    """Two gateways on one SQLite file, a limit of 2 a key: the third run is refused by
    either, while another key still starts runs."""
    base, fake = upstream
    fake.script("slow", Script(pieces=chat_events(TEXTS), delay=0.05))
    store = f"sqlite:///{tmp_path / 'shared.db'}"
    keys = ("gk-a", "gk-b")
    with (
        gateway(base, store=store, background_max=2, api_keys=keys) as one,
        gateway(base, store=store, background_max=2, api_keys=keys) as two,
    ):
        started = [
            client(url, "gk-a").responses.create(
                model="slow", input="go", background=True, store=True
            )
            for url in (one, two)
        ]
        for url in (one, two):
            with pytest.raises(openai.RateLimitError, match="at most 2 background"):
                client(url, "gk-a").responses.create(
                    model="slow", input="go", background=True, store=True
                )
        other = client(two, "gk-b").responses.create(
            model="slow", input="go", background=True, store=True
        )
        for response in (*started, other):
            sdk = client(one, "gk-b" if response is other else "gk-a")
            assert poll(sdk, response.id).status == "completed"
        client(two, "gk-a").responses.create(model="slow", input="go", background=True, store=True)


def test_once_polled_complete_it_can_be_continued(
    upstream: tuple[str, FaultyUpstream], store_url: str
) -> None:
    """The first poll that reads a terminal status finds the record whole: a continuation
    sent at once carries the background response's output upstream."""
    base, fake = upstream
    record = fake.script("fast", Script(pieces=chat_events(["the ", "answer"])))
    with gateway(base, store=store_url) as url:
        sdk = client(url)
        queued = sdk.responses.create(model="fast", input="ask", background=True, store=True)
        assert poll(sdk, queued.id).status == "completed"
        sdk.responses.create(model="fast", input="and then?", previous_response_id=queued.id)
        messages = record.bodies[-1]["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "user"]
        assert messages[1]["content"] == "the answer"


def test_the_runs_store_calls_are_metered(slow: str) -> None:
    sdk = client(slow)
    queued = sdk.responses.create(model="slow", input="go", background=True, store=True)
    assert poll(sdk, queued.id).status == "completed"
    metrics = httpx.get(slow + "/metrics").text
    for operation in ("run_start", "log_append", "log_read", "run_end"):
        line = f'responses_stream_store_operations_total{{operation="{operation}",outcome="ok"}}'
        assert line in metrics, operation
