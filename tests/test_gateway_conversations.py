"""Conversations (``/v1/conversations`` and its items) through the gateway, read by the
strict openai SDK over real HTTP, on every store backend: each route, pagination both
ways, another key's conversation not found anywhere, appends made at once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import openai
import pytest
from faulty_upstream import FaultyUpstream, Record, Script, chat_events
from gateway_support import gateway, upstream, ws_turn
from http_support import serve
from test_gateway_store import backend, durable_url, opened, redis_urls, run, store_url
from websockets.sync.client import connect

from responses_stream._runtime.gateway.store import Store, StoredConversation

__all__ = ["backend", "durable_url", "redis_urls", "store_url", "upstream"]  # fixtures


def client(url: str, key: str = "gk-a") -> openai.OpenAI:
    return openai.OpenAI(
        base_url=url + "/v1", api_key=key, max_retries=0, _strict_response_validation=True
    )


@pytest.fixture
def served(upstream: tuple[str, Any], store_url: str) -> Iterator[str]:
    with gateway(upstream[0] + "/v1", store=store_url, api_keys=("gk-a", "gk-b")) as url:
        yield url


def said(n: int) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": f"message {n}"}


def test_a_conversation_is_made_read_updated_and_deleted(served: str) -> None:
    sdk = client(served)
    made = sdk.conversations.create(items=[said(0), said(1)], metadata={"topic": "demo"})
    assert made.id.startswith("conv_") and made.object == "conversation"
    assert made.metadata == {"topic": "demo"} and made.created_at > 0
    got = sdk.conversations.retrieve(made.id)
    assert got.model_dump() == made.model_dump()
    updated = sdk.conversations.update(made.id, metadata={"topic": "other", "n": "2"})
    assert updated.metadata == {"topic": "other", "n": "2"}
    assert sdk.conversations.retrieve(made.id).metadata == {"topic": "other", "n": "2"}
    items = sdk.conversations.items.list(made.id, order="asc")
    assert [i.content[0].text for i in items.data] == ["message 0", "message 1"]  # type: ignore[union-attr]
    assert all(i.id.startswith("msg_") and i.status == "completed" for i in items.data)  # type: ignore[union-attr]
    deleted = sdk.conversations.delete(made.id)
    assert (deleted.id, deleted.deleted, deleted.object) == (made.id, True, "conversation.deleted")
    with pytest.raises(openai.NotFoundError):
        sdk.conversations.retrieve(made.id)
    with pytest.raises(openai.NotFoundError):
        sdk.conversations.items.list(made.id)


def test_items_are_added_read_and_deleted_one_by_one(served: str) -> None:
    sdk = client(served)
    made = sdk.conversations.create()
    empty = httpx.get(f"{served}/v1/conversations/{made.id}/items", headers=_key("gk-a"))
    assert empty.json() == {
        "object": "list",
        "data": [],
        "first_id": None,
        "last_id": None,
        "has_more": False,
    }
    added = sdk.conversations.items.create(
        made.id,
        items=[
            said(0),
            {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "42"},
        ],
    )
    assert [i.type for i in added.data] == ["message", "function_call", "function_call_output"]
    assert added.first_id == added.data[0].id and added.last_id == added.data[-1].id
    call = added.data[1]
    got = sdk.conversations.items.retrieve(call.id, conversation_id=made.id)
    assert got.model_dump() == call.model_dump()
    after = sdk.conversations.items.delete(call.id, conversation_id=made.id)
    assert after.id == made.id and after.object == "conversation"
    kept = sdk.conversations.items.list(made.id, order="asc").data
    assert [i.type for i in kept] == ["message", "function_call_output"]
    for missing in (
        lambda: sdk.conversations.items.retrieve(call.id, conversation_id=made.id),
        lambda: sdk.conversations.items.delete(call.id, conversation_id=made.id),
    ):
        with pytest.raises(openai.NotFoundError, match="Item with id"):
            missing()


def test_pages_go_both_ways(served: str) -> None:
    sdk = client(served)
    made = sdk.conversations.create(items=[said(n) for n in range(20)])
    sdk.conversations.items.create(made.id, items=[said(n) for n in range(20, 25)])
    texts = [f"message {n}" for n in range(25)]
    for order, expected in (("asc", texts), ("desc", texts[::-1])):
        first = sdk.conversations.items.list(made.id, order=order, limit=10)
        assert first.has_more and len(first.data) == 10
        seen = [i.content[0].text for i in first.data]  # type: ignore[union-attr]
        after = sdk.conversations.items.list(made.id, order=order, limit=10, after=first.last_id)
        seen += [i.content[0].text for i in after.data]  # type: ignore[union-attr]
        assert seen == expected[:20]
        walked = [
            i.content[0].text  # type: ignore[union-attr]
            for i in sdk.conversations.items.list(made.id, order=order, limit=7)
        ]
        assert walked == expected  # the SDK's auto-pagination, by after and has_more
    assert len(sdk.conversations.items.list(made.id).data) == 20  # desc, 20 by default


def test_bad_bodies_are_refused_naming_the_field(served: str) -> None:
    sdk = client(served)
    with pytest.raises(openai.BadRequestError) as too_many:
        sdk.conversations.create(items=[said(n) for n in range(21)])
    assert too_many.value.body["param"] == "items"  # type: ignore[index]
    with pytest.raises(openai.BadRequestError) as bad_item:
        sdk.conversations.create(items=[{"type": "message", "role": "user", "content": 5}])
    assert str(bad_item.value.body["param"]).startswith("items[0]")  # type: ignore[index]
    with pytest.raises(openai.BadRequestError) as long_value:
        sdk.conversations.create(metadata={"k": "v" * 513})
    assert str(long_value.value.body["param"]).startswith("metadata")  # type: ignore[index]
    made = sdk.conversations.create()
    with pytest.raises(openai.BadRequestError) as unknown:
        sdk.conversations.update(made.id, metadata={}, extra_body={"title": "x"})
    assert unknown.value.body["param"] == "title"  # type: ignore[index]
    with pytest.raises(openai.BadRequestError) as limit:
        sdk.conversations.items.list(made.id, limit=101)
    assert limit.value.body["param"] == "limit"  # type: ignore[index]


def _key(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def test_another_keys_conversation_is_not_found_on_any_route(served: str) -> None:
    mine, theirs = client(served, "gk-a"), client(served, "gk-b")
    made = mine.conversations.create(items=[said(0)])
    item = mine.conversations.items.list(made.id).data[0]
    tries = [
        lambda: theirs.conversations.retrieve(made.id),
        lambda: theirs.conversations.update(made.id, metadata={"x": "y"}),
        lambda: theirs.conversations.delete(made.id),
        lambda: theirs.conversations.items.list(made.id),
        lambda: theirs.conversations.items.create(made.id, items=[said(1)]),
        lambda: theirs.conversations.items.retrieve(item.id, conversation_id=made.id),
        lambda: theirs.conversations.items.delete(item.id, conversation_id=made.id),
    ]
    for attempt in tries:
        with pytest.raises(openai.NotFoundError, match="Conversation with id"):
            attempt()
    # nothing of it changed
    assert mine.conversations.retrieve(made.id).metadata == {}
    assert [i.id for i in mine.conversations.items.list(made.id).data] == [item.id]


def test_appends_made_at_once_all_land_whole(durable_url: str) -> None:
    """Two connections (as two replicas) append 40 batches of 3 items at once to one
    conversation: all 120 items are there, each batch in one piece and in order."""

    async def work() -> None:
        async with opened(durable_url) as one, opened(durable_url) as two:
            await one.conversation_put(StoredConversation("conv_race", 1, {}, tenant="t"))

            async def append(store: Store, n: int) -> None:
                batch = [{"id": f"it_{n}_{k}", "type": "message"} for k in range(3)]
                await store.conversation_append("conv_race", batch)

            await asyncio.gather(*(append((one, two)[n % 2], n) for n in range(40)))
            ids = [item["id"] for item in await two.conversation_items("conv_race")]
            assert len(ids) == 120
            for start in range(0, 120, 3):
                batch = {i.rsplit("_", 1)[0] for i in ids[start : start + 3]}
                assert len(batch) == 1, ids[start : start + 3]
                assert [i.rsplit("_", 1)[1] for i in ids[start : start + 3]] == ["0", "1", "2"]

    run(work())


@pytest.fixture
def scripted(store_url: str) -> Iterator[tuple[str, Record]]:
    """The gateway on the store under test, in front of a model ``m`` that answers
    "the answer"; the record of what it was sent."""
    fake = FaultyUpstream()
    record = fake.script("m", Script(pieces=chat_events(["the ", "answer"])))
    with serve(fake) as base:  # type: ignore[arg-type]
        with gateway(base + "/v1", store=store_url, api_keys=("gk-a", "gk-b")) as url:
            yield url, record


def texts(items: list[Any]) -> list[str]:
    return [part.text for item in items for part in item.content]


@pytest.mark.parametrize("dialect_base", ["/v1", "/openresponses/v1"])
def test_responses_made_in_a_conversation_read_it_and_add_to_it(
    scripted: tuple[str, Record], dialect_base: str
) -> None:
    url, record = scripted
    sdk = openai.OpenAI(
        base_url=url + dialect_base, api_key="gk-a", max_retries=0, _strict_response_validation=True
    )
    made = sdk.conversations.create(items=[said(0)])
    first = sdk.responses.create(model="m", input="question 1", conversation=made.id)
    assert first.conversation is not None and first.conversation.id == made.id
    assert [m["content"] for m in record.bodies[-1]["messages"]] == ["message 0", "question 1"]
    with sdk.responses.stream(
        model="m", input="question 2", conversation={"id": made.id}
    ) as stream:
        streamed = stream.get_final_response()
    assert streamed.conversation is not None and streamed.conversation.id == made.id
    sent = record.bodies[-1]["messages"]
    assert [m["role"] for m in sent] == ["user", "user", "assistant", "user"]
    assert sent[2]["content"] == "the answer"
    items = sdk.conversations.items.list(made.id, order="asc").data
    assert texts(items) == [
        "message 0",
        "question 1",
        "the answer",
        "question 2",
        "the answer",
    ]
    assert items[2].id == first.output[0].id and items[4].id == streamed.output[0].id
    assert all(item.status == "completed" for item in items)  # type: ignore[union-attr]


def test_a_conversation_with_previous_response_id_or_of_another_key_is_refused(
    scripted: tuple[str, Record],
) -> None:
    url, record = scripted
    mine, theirs = client(url, "gk-a"), client(url, "gk-b")
    made = mine.conversations.create()
    earlier = mine.responses.create(model="m", input="hi", store=True)
    calls = len(record.bodies)
    with pytest.raises(openai.BadRequestError, match="Mutually exclusive parameters") as both:
        mine.responses.create(
            model="m", input="x", conversation=made.id, previous_response_id=earlier.id
        )
    assert both.value.body["code"] == "mutually_exclusive_parameters"  # type: ignore[index]
    with pytest.raises(openai.NotFoundError) as foreign:
        theirs.responses.create(model="m", input="x", conversation=made.id)
    assert foreign.value.body["param"] == "conversation"  # type: ignore[index]
    compact = httpx.post(
        f"{url}/v1/responses/compact",
        json={"model": "m", "input": "x", "conversation": made.id},
        headers=_key("gk-a"),
    )
    assert compact.status_code == 400 and compact.json()["error"]["param"] == "conversation"
    assert len(record.bodies) == calls  # none reached the upstream
    assert mine.conversations.items.list(made.id).data == []


def test_a_background_response_adds_to_its_conversation_when_it_completes(
    scripted: tuple[str, Record],
) -> None:
    url, _ = scripted
    sdk = client(url)
    made = sdk.conversations.create()
    queued = sdk.responses.create(
        model="m", input="later", conversation=made.id, background=True, store=True
    )
    assert queued.conversation is not None and queued.conversation.id == made.id
    deadline = time.monotonic() + 30
    while sdk.responses.retrieve(queued.id).status != "completed":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert texts(sdk.conversations.items.list(made.id, order="asc").data) == [
        "later",
        "the answer",
    ]


def test_a_turn_over_a_websocket_adds_to_its_conversation(scripted: tuple[str, Record]) -> None:
    url, record = scripted
    sdk = client(url)
    made = sdk.conversations.create(items=[said(0)])
    headers = {"Authorization": "Bearer gk-a"}
    with connect(
        "ws" + url.removeprefix("http") + "/v1/responses", additional_headers=headers
    ) as ws:
        turn = {"type": "response.create", "model": "m", "input": "q", "conversation": made.id}
        events = ws_turn(ws, turn)
    assert events[-1]["type"] == "response.completed", events[-1]
    assert events[-1]["response"]["conversation"] == {"id": made.id}
    assert [m["content"] for m in record.bodies[-1]["messages"]] == ["message 0", "q"]
    assert texts(sdk.conversations.items.list(made.id, order="asc").data) == [
        "message 0",
        "q",
        "the answer",
    ]


def test_responses_made_at_once_in_one_conversation_all_land(
    scripted: tuple[str, Record],
) -> None:
    url, _ = scripted
    sdk = client(url)
    made = sdk.conversations.create()

    def ask(n: int) -> None:
        sdk.responses.create(model="m", input=f"question {n}", conversation=made.id)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(ask, range(8)))
    items = list(sdk.conversations.items.list(made.id, order="asc", limit=100))
    assert len(items) == 16
    for n in range(0, 16, 2):  # each response's input, then its output
        assert texts(items[n : n + 2])[1] == "the answer"
    assert sorted(texts(items[0::2])) == sorted(f"question {n}" for n in range(8))


def test_an_item_reference_is_kept_as_the_item_it_names(scripted: tuple[str, Record]) -> None:
    url, _ = scripted
    sdk = client(url)
    answered = sdk.responses.create(model="m", input="hi", store=True)
    made = sdk.conversations.create(items=[{"type": "item_reference", "id": answered.output[0].id}])
    kept = sdk.conversations.items.list(made.id).data
    assert [item.id for item in kept] == [answered.output[0].id]
    assert texts(kept) == ["the answer"]
    with pytest.raises(openai.BadRequestError):
        sdk.conversations.items.create(made.id, items=[{"type": "item_reference", "id": "msg_no"}])


def test_a_streamed_turn_not_stored_has_its_items_in_the_conversation_at_its_end(
    scripted: tuple[str, Record],
) -> None:
    """``store: false`` in a conversation: the terminal event is held until the items are
    added, so the conversation has them as soon as the client reads it."""
    url, _ = scripted
    sdk = client(url)
    made = sdk.conversations.create()
    for n in range(5):
        with sdk.responses.stream(
            model="m", input=f"q{n}", conversation=made.id, store=False
        ) as stream:
            final = stream.get_final_response()
        assert final.status == "completed"
        assert len(sdk.conversations.items.list(made.id, limit=100).data) == 2 * (n + 1)
    with pytest.raises(openai.NotFoundError):
        sdk.responses.retrieve(final.id)  # not stored, as asked
