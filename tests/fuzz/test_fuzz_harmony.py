"""Fuzz Harmony input: random segment sequences into ``HarmonyToResponses``, and random
real gpt-oss token streams (rendered by openai-harmony, cut at random points) through
the token bridge.

Oracles: every event accepted by the official openai SDK's strict models (openai
dialect) and by the project's validator, the stream invariants, exactly one terminal
event, no call raising, and the text of every accepted segment or rendered message in
the final Response once (a browser call's JSON as its action).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from test_harmony_bridge import assistant, encoding, item_text, run_tokens  # noqa: E402
from test_harmony_hostile import ACTION_KEYS, Op, check_kept, run_ops  # noqa: E402

import responses_stream as rs  # noqa: E402

CHANNELS = st.sampled_from(["final", "commentary", "analysis", None, "weird", ""]) | st.just(5)
RECIPIENTS = st.sampled_from(
    [None, "", "functions.get_weather", "functions.", "python", "browser.search", "browser.open"]
    + ["browser.find", "mcp.srv.tool", "mcp.", "container.exec", "."]
) | st.just(["x"])
ANY_TEXT = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=12)
ARG_VALUES = st.one_of(ANY_TEXT, st.integers(), st.none(), st.lists(st.integers(), max_size=2))
ARGS = st.dictionaries(st.sampled_from(["query", "url", "pattern", "x"]), ARG_VALUES, max_size=3)


@st.composite
def pieces(draw: st.DrawFn, text: str) -> list[str]:
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=3)))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


@st.composite
def segment_ops(draw: st.DrawFn) -> list[Op]:
    ops: list[Op] = []
    for _ in range(draw(st.integers(0, 6))):
        channel, recipient = draw(CHANNELS), draw(RECIPIENTS)
        body = draw(
            st.one_of(ANY_TEXT, ARGS.map(json.dumps), ARGS.map(lambda a: json.dumps(a)[:-1]))
        )
        deltas: list[Any] = draw(pieces(body))
        if draw(st.integers(0, 9)) == 0:
            deltas.insert(draw(st.integers(0, len(deltas))), draw(st.sampled_from([5, None, b"x"])))
        ops += [("segment", channel, recipient, d) for d in deltas]
        if draw(st.booleans()):
            ops.append(("end_message", draw(st.sampled_from([None, "<|constrain|>json", "", 5]))))
        if draw(st.integers(0, 9)) == 0:
            ops.append(("end", None, draw(st.sampled_from([None, "content_filter", "x"]))))
    return ops


@given(ops=segment_ops(), dialect=st.sampled_from(sorted(rs.DIALECTS)))
def test_fuzz_harmony_segments(ops: list[Op], dialect: str) -> None:
    run = run_ops(ops, dialect)
    check_kept(run)
    event(run.response["status"])
    for item in run.response["output"]:
        event(item["type"].split(":")[-1])


# -- real tokens ------------------------------------------------------------------------
PLAIN = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=24).filter(
    lambda t: "<|" not in t
)
ROUTES = st.sampled_from(
    [
        ("analysis", None),
        ("commentary", None),
        ("final", None),
        ("commentary", "functions.get_weather"),
    ]
    + [("analysis", "browser.search"), ("analysis", "python"), ("commentary", "mcp.srv.tool")]
)


@st.composite
def turns(draw: st.DrawFn) -> tuple[list[Any], list[str], int]:
    messages, texts = [], []
    for _ in range(draw(st.integers(0, 4))):
        channel, recipient = draw(ROUTES)
        text = draw(PLAIN)
        if recipient == "browser.search" and draw(st.booleans()):
            text = json.dumps({"query": text}, ensure_ascii=draw(st.booleans()))
        messages.append(assistant(text, channel, recipient))
        texts.append(text)
    tokens: list[int] = []
    for msg in messages:
        tokens += encoding().render(msg)
    return messages, texts, draw(st.integers(0, len(tokens)))


@given(turn=turns(), dialect=st.sampled_from(sorted(rs.DIALECTS)))
def test_fuzz_harmony_tokens(turn: tuple[list[Any], list[str], int], dialect: str) -> None:
    import openai_harmony as H

    enc = encoding()
    messages, texts, cut = turn
    tokens: list[int] = []
    for msg in messages:
        tokens += enc.render(msg)
    head = tokens[:cut]
    response, _, _ = run_tokens(head, dialect, parser=H.StreamableParser(enc, None))
    msg_token = enc.encode("<|message|>", allowed_special="all")[0]
    stops = set(enc.stop_tokens())
    starts = [i for i, t in enumerate(head) if t == msg_token]
    ends = [i for i, t in enumerate(head) if t in stops]
    out = response["output"]
    assert len(out) == len(starts)
    for n, (start, item) in enumerate(zip(starts, out, strict=True)):
        complete = n < len(ends)
        text = texts[n] if complete else enc.decode(head[start + 1 :], errors="replace")
        got = item_text(item)
        if item["type"].split(":")[-1] == "web_search_call":
            assert complete
            assert got == {"type": "search", "query": json.loads(text)["query"]}
            assert ACTION_KEYS[got["type"]] == ("query",)
        else:
            assert got == text, (n, got, text)
    between = not head or head[-1] in stops
    assert response["status"] == ("completed" if between else "incomplete")
    event(response["status"])
