"""Every stream reader takes SSE and JSON lines, told apart from the first bytes.

The corpus of genuine recordings is kept as JSON lines; each is also rendered as the SSE
a server sends (an ``event:`` line, the recorded JSON as its ``data:`` line, a blank
line).  Both forms must get the same verdict from the validator and the same chat
stream from to-chat, whatever the reads' sizes; the chat recordings the same Responses
stream from from-chat.  The commands are run as real processes for what only they do:
exit codes, messages, and the model and time from-chat takes from the chunks.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

import pytest
from test_cli import _run as run

from responses_stream import (
    CountingIds,
    StreamValidator,
    achat_sse_from_sse,
    chat_data_lines,
    chat_sse_from_sse,
    sse_from_chat,
)
from responses_stream._runtime.core.input_form import (
    EmptyInput,
    InputFormError,
    asse_from_input,
    form_of,
    sse_from_input,
)

ROOT = Path(__file__).resolve().parents[1]
RECORDINGS = ROOT / "tests" / "recordings"
RESPONSES = sorted(
    p.relative_to(RECORDINGS).as_posix() for p in RECORDINGS.glob("responses/**/*.jsonl")
)
CHATS = sorted(p.relative_to(RECORDINGS).as_posix() for p in RECORDINGS.glob("chat/**/*.jsonl"))


def as_sse(jsonl: bytes) -> bytes:
    """A JSON-lines recording as the SSE a server sends."""
    out = []
    for line in jsonl.splitlines():
        if line.strip():
            kind = json.loads(line).get("type", "")
            head = f"event: {kind}\n".encode() if kind else b""
            out.append(head + b"data: " + line + b"\n\n")
    return b"".join(out)


def blocks(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def verdict(data: Iterable[bytes], input: str = "auto") -> tuple[int, list[str]]:
    """The events read and every violation found."""
    v = StreamValidator()
    v.feed_sse(data, input=input)
    found = [str(x) for x in v.finish()]
    return v.index, found


def test_the_corpus_is_there() -> None:
    assert len(RESPONSES) >= 95 and len(CHATS) >= 60


@pytest.mark.parametrize("name", RESPONSES)
def test_a_recording_reads_the_same_as_json_lines_and_as_sse(name: str) -> None:
    jsonl = (RECORDINGS / name).read_bytes()
    sse = as_sse(jsonl)
    expected = verdict([sse], "sse")
    assert expected[0] == len(jsonl.splitlines())  # every event read
    assert verdict([jsonl]) == expected
    assert verdict(blocks(jsonl, 7)) == expected  # detection across reads
    assert verdict([jsonl], "jsonl") == expected
    assert verdict([sse]) == expected
    chat = b"".join(chat_sse_from_sse([sse], input="sse"))
    assert b"".join(chat_sse_from_sse(blocks(jsonl, 5))) == chat
    assert b"".join(chat_sse_from_sse([jsonl], input="jsonl")) == chat


@pytest.mark.parametrize("name", CHATS)
def test_a_chat_recording_converts_the_same_from_json_lines_and_sse(name: str) -> None:
    jsonl = (RECORDINGS / name).read_bytes()
    sse = b"".join(b"data: " + line + b"\n\n" for line in jsonl.splitlines() if line.strip())

    def convert(data: Iterable[bytes]) -> bytes:
        payloads = chat_data_lines(data)
        out = b"".join(sse_from_chat(payloads, ids=CountingIds(), created_at=1, model="m"))
        return re.sub(rb'"completed_at":\d+', b'"completed_at":0', out)  # the clock

    expected = convert([sse])
    assert b"event: response.output_item.added" in expected  # the chunks were read
    assert convert([jsonl]) == expected
    assert convert(blocks(jsonl, 3)) == expected


def test_the_async_reader_matches_the_sync_one() -> None:
    name = "responses/openai/openai--openai-web-search-tool.1.jsonl"
    jsonl = (RECORDINGS / name).read_bytes()

    async def source(data: bytes) -> AsyncIterator[bytes]:
        for block in blocks(data, 11):
            yield block

    async def run(data: bytes) -> bytes:
        return b"".join([frame async for frame in achat_sse_from_sse(source(data))])

    expected = b"".join(chat_sse_from_sse([as_sse(jsonl)]))
    assert asyncio.run(run(jsonl)) == expected
    assert asyncio.run(run(as_sse(jsonl))) == expected

    async def read(data: bytes) -> bytes:
        return b"".join([b async for b in asse_from_input(source(data))])

    assert asyncio.run(read(jsonl)) == b"".join(sse_from_input([jsonl]))


@pytest.mark.parametrize(
    ("head", "form"),
    [
        (b'{"type":"x"}\n', "jsonl"),
        (b'\xef\xbb\xbf  \n{"type":"x"}', "jsonl"),
        (b"\r\n\r\ndata: {}\n\n", "sse"),
        (b": keep-alive\n\n", "sse"),
        (b"event: response.created\ndata: {}\n\n", "sse"),
        (b"id: 4\ndata: {}\n\n", "sse"),
        (b"retry: 10\n\n", "sse"),
        (b"data\n\n", "sse"),
    ],
)
def test_the_form_is_told_from_the_first_bytes_however_they_are_split(
    head: bytes, form: str
) -> None:
    assert form_of(head, final=True) == form
    for cut in range(1, len(head)):  # a read that stops anywhere: undecided, or right
        assert form_of(head[:cut], final=False) in (None, form)


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"", "the input is empty"),
        (b"\xef\xbb\xbf \n\t", "only white space"),
        (b"  data: {}\n\n", "neither SSE nor JSON lines: it starts with '  data: {}\\n\\n'"),
        (b'[{"type": "x"}]', "is a JSON array"),
        (b"\x00\x01garbage", r"it starts with '\x00\x01garbage'"),
        (b"x" * 100, "'" + "x" * 48 + "'..."),
    ],
)
def test_input_that_is_neither_says_what_it_starts_with(data: bytes, says: str) -> None:
    with pytest.raises(InputFormError, match=None) as raised:
        list(sse_from_input(blocks(data, 3) if data else [], strict=True))
    assert says in str(raised.value)
    assert isinstance(raised.value, EmptyInput) == (
        b"{" not in data and not data.strip(b"\xef\xbb\xbf \n\t\r")
    )
    # not strict (the Python readers): passed on as SSE, which holds no event
    assert b"".join(sse_from_input([data])) == data


def test_json_lines_keep_no_carriage_return_and_no_blank_event() -> None:
    data = b'{"a": 1}\r\n\r\n   \n{"b":\r\n'
    assert b"".join(sse_from_input(blocks(data, 2))) == b'data: {"a": 1}\n\ndata: {"b":\n\n'


# -- the commands ---------------------------------------------------------------------
def test_the_commands_read_json_lines(tmp_path: Path) -> None:
    path = RECORDINGS / "responses/openai/openai--openai-web-search-tool.1.jsonl"
    sse = tmp_path / "stream.sse"
    sse.write_bytes(as_sse(path.read_bytes()))
    for form in (str(path), str(sse)):
        proc = run("validate", form)
        assert proc.returncode == 0, proc.stderr
        assert b"valid: 185 events, 0 errors, 1 warnings" in proc.stderr
    assert run("to-chat", str(path)).stdout == run("to-chat", str(sse)).stdout
    forced = run("validate", "--input", "sse", str(path))  # JSON lines read as SSE: no event
    assert forced.returncode == 2 and b"holds no event" in forced.stderr
    wrong = run("validate", "--input", "jsonl", str(sse))  # SSE read as JSON: not JSON
    assert wrong.returncode == 1 and b"MALFORMED_JSON" in wrong.stdout


def _created(out: bytes) -> dict[str, object]:
    first = out.split(b"\n\n")[0].split(b"data: ", 1)[1]
    response: dict[str, object] = json.loads(first)["response"]
    return response


def test_from_chat_takes_the_model_and_time_of_the_chunks(tmp_path: Path) -> None:
    path = RECORDINGS / "chat/alibaba/alibaba-text.jsonl"
    first = json.loads(path.read_bytes().splitlines()[0])
    plain = run("from-chat", str(path))
    assert plain.returncode == 0, plain.stderr
    created = _created(plain.stdout)
    assert (created["model"], created["created_at"]) == (first["model"], first["created"])
    given = _created(run("from-chat", "--model", "mine", str(path)).stdout)
    assert (given["model"], given["created_at"]) == ("mine", first["created"])
    request = _created(run("from-chat", "--request", '{"model": "asked"}', str(path)).stdout)
    assert request["model"] == "asked"
