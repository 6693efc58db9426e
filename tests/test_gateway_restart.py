"""Restarting ``python -m responses_stream serve`` on the same store keeps every stored
response, for SQLite and for Redis (the real server): the real command, real HTTP."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from gateway_support import serve_process
from gateway_upstream import ModelUpstream
from openai import OpenAI


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with ModelUpstream().serve() as url:
        yield url + "/v1"


def client(url: str) -> OpenAI:
    return OpenAI(
        base_url=url + "/v1", api_key="k", max_retries=0, _strict_response_validation=True
    )


def _restart_keeps(upstream: str, store: str) -> None:
    with serve_process(upstream, "--store", store) as (url, _):
        sdk = client(url)
        first = sdk.responses.create(model="fake-model", input="one")
        second = sdk.responses.create(
            model="fake-model", input="two", previous_response_id=first.id
        )
        made = {r.id: r.output_text for r in (first, second)}
    with serve_process(upstream, "--store", store) as (url, _):
        sdk = client(url)
        for rid, text in made.items():
            assert sdk.responses.retrieve(rid).output_text == text
        items = sdk.responses.input_items.list(second.id)
        assert items.data[0].content[0].text == "two"  # type: ignore[union-attr]
        third = sdk.responses.create(
            model="fake-model", input="three", previous_response_id=second.id
        )
        assert third.previous_response_id == second.id


def test_a_restart_keeps_every_response_in_sqlite(upstream: str, tmp_path: Path) -> None:
    _restart_keeps(upstream, f"sqlite:///{tmp_path / 'store.db'}")


def test_a_restart_keeps_every_response_in_redis(upstream: str, redis_url: str) -> None:
    sep = "&" if "?" in redis_url else "?"
    _restart_keeps(upstream, f"{redis_url}{sep}prefix=restart-{uuid.uuid4().hex}:")


def test_serve_refuses_a_bad_store_in_one_line(upstream: str) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "responses_stream",
            "serve",
            "--upstream",
            upstream,
            "--store",
            "ftp://nowhere",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "store" in done.stderr
