"""The baselines as command-line programs: SSE on stdin, SSE on stdout.

``python -m benchmarks.cli NAME`` with NAME one of ``CONVERTERS``.  Each reads stdin as a
pipe gives it (``read1``, whatever is there) and writes what one read produced in one
write, as a careful hand-written server would; openai-agents reads the way the openai SDK
stream does (its ``SSEDecoder``, ``json.loads``, ``construct_type``).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import msgspec

from .baselines import HandChat, HandToChat, PydanticChat, split_events
from .shapes import CREATED, MODEL

READ = 65536


def reads() -> Iterator[bytes]:
    stdin = sys.stdin.buffer
    while block := stdin.read1(READ):
        yield block


def _pump(feed: Callable[[str], list[bytes]], start: list[bytes]) -> None:
    out = sys.stdout.buffer
    out.write(b"".join(start))
    buf = b""
    for block in reads():
        payloads, buf = split_events(buf, block)
        frames: list[bytes] = []
        for p in payloads:
            frames += feed(p)
        out.write(b"".join(frames))
        out.flush()


def from_chat(conv: HandChat) -> None:
    _pump(conv.feed, conv.start())


def to_chat(conv: HandToChat) -> None:
    _pump(conv.feed, [])


def agents_chunks() -> Iterator[Any]:
    """Chat chunks from stdin as the openai SDK's ``Stream`` makes them."""
    from openai._models import construct_type
    from openai._streaming import SSEDecoder
    from openai.types.chat import ChatCompletionChunk

    for sse in SSEDecoder().iter_bytes(reads()):
        if sse.data.startswith("[DONE]"):
            break
        yield construct_type(type_=ChatCompletionChunk, value=sse.json())


async def agents_frames(chunks: AsyncIterator[Any]) -> AsyncIterator[bytes]:
    """openai-agents' ``ChatCmplStreamHandler`` over chat chunks, as SSE frames."""
    from agents.models.chatcmpl_stream_handler import ChatCmplStreamHandler
    from openai.types.responses import Response

    response = Response(
        id="resp_0001",
        created_at=CREATED,
        model=MODEL,
        object="response",
        output=[],
        tool_choice="auto",
        tools=[],
        parallel_tool_calls=False,
    )
    async for ev in ChatCmplStreamHandler.handle_stream(response, chunks):  # type: ignore[arg-type]
        yield f"event: {ev.type}\ndata: {ev.model_dump_json()}\n\n".encode()


def from_chat_agents() -> None:
    async def chunks() -> AsyncIterator[Any]:
        for chunk in agents_chunks():
            yield chunk

    async def main() -> None:
        write = sys.stdout.buffer.write
        async for frame in agents_frames(chunks()):
            write(frame)

    asyncio.run(main())


def validate_sdk() -> None:
    """The openai SDK consuming a Responses stream: its events and ResponseStreamState."""
    from openai._models import construct_type
    from openai._streaming import SSEDecoder
    from openai._types import omit
    from openai.lib.streaming.responses._responses import ResponseStreamState
    from openai.types.responses import ResponseStreamEvent

    state: Any = ResponseStreamState(input_tools=omit, text_format=omit)
    n = 0
    for sse in SSEDecoder().iter_bytes(reads()):
        if sse.data.startswith("[DONE]"):
            break
        state.handle_event(construct_type(type_=ResponseStreamEvent, value=sse.json()))
        n += 1
    print(n)


CONVERTERS: dict[str, Callable[[], None]] = {
    "from-chat-floor": lambda: from_chat(HandChat(MODEL)),
    "from-chat-msgspec": lambda: from_chat(HandChat(MODEL, msgspec.json.Decoder().decode)),
    "from-chat-pydantic": lambda: from_chat(PydanticChat(MODEL)),
    "from-chat-agents": from_chat_agents,
    "to-chat-floor": lambda: to_chat(HandToChat()),
    "to-chat-msgspec": lambda: to_chat(HandToChat(msgspec.json.Decoder().decode)),
    "validate-sdk": validate_sdk,
}


def _peak() -> int:
    from .peak import high_water

    return high_water()


def memory_from_chat(deltas: int, width: int) -> None:
    """Our chat -> Responses converter over a text stream made as it is read."""
    from responses_stream import ChatToResponses, StreamProcessor

    from .shapes import _choice, _chunk, _usage, iter_pieces

    conv = ChatToResponses(StreamProcessor("openai", model=MODEL))
    feed = conv.feed_data_sse
    size = 0
    feed(_chunk(_choice({"role": "assistant", "content": ""})))
    for piece in iter_pieces(deltas, width):
        size += len(piece)
        feed(_chunk(_choice({"content": piece})))
    feed(_chunk(_choice({}, "stop")))
    feed(_chunk([], _usage(deltas, 0)))
    feed("[DONE]")
    print(_peak(), size)


def memory_to_chat(deltas: int, width: int) -> None:
    """Our Responses -> chat converter over a text stream made as it is read (its done
    events carry the whole text, as a real stream's do)."""
    from responses_stream import ResponsesToChat

    from .baselines import response
    from .shapes import iter_pieces

    conv = ResponsesToChat()
    feed = conv.feed_sse
    dumps = msgspec.json.encode
    seq = iter(range(1 << 62))

    def event(kind: str, **fields: Any) -> None:
        feed(dumps({"type": kind, "sequence_number": next(seq), **fields}).decode())

    r = response(MODEL, "in_progress", [], None, False)
    event("response.created", response=r)
    event("response.in_progress", response=r)
    item = {"type": "message", "id": "msg_1", "status": "in_progress", "role": "assistant"}
    event("response.output_item.added", output_index=0, item=item | {"content": []})
    part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    where = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    event("response.content_part.added", **where, part=part)
    sent = []
    head = '{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"logprobs":[],"sequence_number":'
    for piece in iter_pieces(deltas, width):
        sent.append(piece)
        feed(f'{head}{next(seq)},"delta":{dumps(piece).decode()}}}')
        if len(sent) >= 4096:
            sent = ["".join(sent)]
    text = "".join(sent)
    event("response.output_text.done", **where, text=text, logprobs=[])
    event("response.content_part.done", **where, part=part | {"text": text})
    done = item | {"status": "completed", "content": [part | {"text": text}]}
    event("response.output_item.done", output_index=0, item=done)
    event("response.completed", response=response(MODEL, "completed", [done], None, True))
    print(_peak(), len(text))


CONVERTERS["memory-from-chat"] = lambda: memory_from_chat(int(sys.argv[2]), int(sys.argv[3]))
CONVERTERS["memory-to-chat"] = lambda: memory_to_chat(int(sys.argv[2]), int(sys.argv[3]))


if __name__ == "__main__":
    CONVERTERS[sys.argv[1]]()
