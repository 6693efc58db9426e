"""The gateway's admission: one stream setup per turn of the event loop, first come
first served, with no wait for a request that comes alone."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from responses_stream._runtime.gateway import chat_route, responses_routes
from responses_stream._runtime.gateway.admission import Admission
from responses_stream._runtime.gateway.asgi import create_app
from responses_stream._runtime.gateway.errors import GatewayError


class Turns:
    """Counts the turns of the running loop (a callback that schedules itself)."""

    def __init__(self) -> None:
        self.count = 0
        self._stopped = False

    def start(self) -> None:
        asyncio.get_running_loop().call_soon(self._tick)

    def _tick(self) -> None:
        if not self._stopped:
            self.count += 1
            asyncio.get_running_loop().call_soon(self._tick)

    def stop(self) -> None:
        self._stopped = True


def test_a_burst_of_setups_goes_one_per_turn_in_arrival_order() -> None:
    async def main() -> list[tuple[int, int]]:
        admission, turns, passed = Admission(), Turns(), []
        turns.start()

        async def setup(n: int) -> None:
            await admission.turn()
            passed.append((n, turns.count))

        await asyncio.gather(*(setup(n) for n in range(8)))
        turns.stop()
        return passed

    passed = asyncio.run(main())
    assert [n for n, _ in passed] == list(range(8))
    seen = [turn for _, turn in passed]
    assert all(b > a for a, b in zip(seen, seen[1:], strict=False)), seen


def test_a_request_alone_goes_on_without_waiting_for_a_turn() -> None:
    async def main() -> tuple[int, int]:
        admission, turns = Admission(), Turns()
        turns.start()
        await asyncio.sleep(0.01)  # the loop turns; nothing waits
        before = turns.count
        await admission.turn()
        after = turns.count
        turns.stop()
        return before, after

    before, after = asyncio.run(main())
    assert before == after


def test_a_request_cancelled_while_waiting_is_skipped() -> None:
    async def main() -> tuple[list[int], int]:
        admission, passed = Admission(), []

        async def setup(n: int) -> None:
            await admission.turn()
            passed.append(n)

        tasks = [asyncio.create_task(setup(n)) for n in range(4)]
        await asyncio.sleep(0)  # all four asked; the first went on
        tasks[2].cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert isinstance(results[2], asyncio.CancelledError)
        await asyncio.sleep(0.01)
        return passed, admission.waiting

    passed, waiting = asyncio.run(main())
    assert passed == [0, 1, 3]
    assert waiting == 0


def test_the_gate_opens_again_once_the_queue_is_empty() -> None:
    async def main() -> None:
        admission = Admission()
        await asyncio.gather(*(admission.turn() for _ in range(3)))
        await asyncio.sleep(0.01)
        turns = Turns()
        turns.start()
        await asyncio.sleep(0)
        before = turns.count
        await admission.turn()
        assert turns.count == before
        turns.stop()

    asyncio.run(main())


def test_a_new_event_loop_starts_with_an_open_gate() -> None:
    admission = Admission()

    async def burst() -> None:
        await asyncio.gather(*(admission.turn() for _ in range(3)))

    asyncio.run(burst())
    asyncio.run(asyncio.wait_for(burst(), 5))


@pytest.mark.parametrize(
    ("module", "path", "body"),
    [
        (responses_routes, "/v1/responses", {"model": "m", "input": "hi", "stream": True}),
        (chat_route, "/v1/chat/completions", {"model": "m", "messages": [], "stream": True}),
    ],
)
def test_a_route_takes_its_turn_once_the_body_came(
    monkeypatch: pytest.MonkeyPatch, module: Any, path: str, body: dict[str, object]
) -> None:
    """Heads first, every body later in one turn (as a client that writes them apart):
    the setups' work still goes one per turn, none of the turns spent on the wait."""
    turns, worked = Turns(), []

    class Noted(dict[str, Any]):
        """A body that notes the turn its route first looks into it, and stops there."""

        def get(self, key: str, default: Any = None) -> Any:
            worked.append(turns.count)
            raise GatewayError(400, "stop here")

    read = module.read_json

    async def read_noted(*args: Any, **kwargs: Any) -> Noted:
        return Noted(await read(*args, **kwargs))

    monkeypatch.setattr(module, "read_json", read_noted)

    def check_noted(body: Any, route: str) -> None:
        body.get(route)  # the check is the first look into the body

    monkeypatch.setattr(module, "check_request", check_noted)
    app = create_app("http://127.0.0.1:9/v1", store="memory:")
    raw = json.dumps(body).encode()

    async def main() -> list[int]:
        bodies = asyncio.Event()

        async def one() -> int:
            sent: list[dict[str, Any]] = []

            async def receive() -> dict[str, Any]:
                await bodies.wait()
                return {"type": "http.request", "body": raw, "more_body": False}

            async def send(message: dict[str, Any]) -> None:
                sent.append(message)

            await app(_scope(path, len(raw)), receive, send)
            return int(sent[0]["status"])

        async with app.router.lifespan_context(app):
            turns.start()
            tasks = [asyncio.create_task(one()) for _ in range(6)]
            for _ in range(5):
                await asyncio.sleep(0)  # every head is in, every route waits for its body
            bodies.set()
            statuses = await asyncio.gather(*tasks)
            turns.stop()
        assert set(statuses) == {400}
        return worked

    worked_in = asyncio.run(main())
    assert len(worked_in) == 6
    assert len(set(worked_in)) == 6, worked_in  # one setup a turn


def _scope(path: str, length: int) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % length)],
        "client": ("127.0.0.1", 5555),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }
