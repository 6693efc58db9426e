"""Fuzz from-chat: random Chat Completions chunk sequences through ``sse_from_chat``
and ``events_from_chat``.

Sequences mix text, reasoning (both spellings, list-valued content with thinking
parts), refusals and tool calls interleaved over indexes with gaps, ids that come
late or again, names split over fragments, empty and long strings, lone and split
surrogates, U+2028 and NUL, ``None`` fields, unknown finish reasons, several
choices, content after ``finish_reason``, usage first, values of the wrong shape
where objects belong, and chunks given as parsed dicts or as ``data:`` text.

Oracle (``check`` in tests/test_from_chat_hostile.py): every event parses through
the SDK's ``ResponseStreamEvent`` with strict validation (openai dialect) or the
Open Responses schema, the validator reports no error, there is exactly one
terminal event, both APIs give the same stream, and every character received
before the end is in the final Response once, in order (lone surrogates as
U+FFFD).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from test_from_chat_hostile import MARK, check  # noqa: E402

TEXT = st.text(
    alphabet=st.sampled_from(["a", "é", " ", "\u2028", "\x00", "\ud83d", "\ude00", "\ud800", "😀"]),
    max_size=6,
) | st.sampled_from(["", "x" * 20_000])
JUNK = st.sampled_from([None, 5, "x", [], {}, [1], True, 1.5])
FINISH = st.sampled_from(
    [None, None, None, "stop", "length", "tool_calls", "content_filter", "STOP", "eos", "bogus", ""]
)


@st.composite
def text_delta(draw: st.DrawFn) -> dict[str, Any]:
    key = draw(st.sampled_from(["content", "content", "reasoning_content", "reasoning", "refusal"]))
    if key == "content" and draw(st.booleans()):
        parts = draw(
            st.lists(
                st.one_of(
                    st.builds(lambda t: {"type": "text", "text": t}, TEXT),
                    st.builds(lambda t: {"type": "thinking", "thinking": t}, TEXT),
                    st.builds(
                        lambda t: {"type": "thinking", "thinking": [{"type": "text", "text": t}]},
                        TEXT,
                    ),
                ),
                max_size=3,
            )
        )
        return {"content": parts}
    delta: dict[str, Any] = {key: draw(TEXT)}
    if draw(st.integers(0, 5)) == 0:
        delta[draw(st.sampled_from(list(set(["content", "reasoning", "refusal"]) - {key})))] = draw(
            TEXT
        )
    return delta


@st.composite
def sequences(draw: st.DrawFn) -> list[Any]:
    indexes = draw(st.lists(st.sampled_from([0, 1, 3, 7]), unique=True, max_size=3))
    # Each call: its arguments (marked), name and id, cut into fragments.
    frags: list[dict[str, Any]] = []
    for i in indexes:
        args = chr(MARK + i) + draw(TEXT)
        cuts = sorted(draw(st.lists(st.integers(0, len(args)), max_size=3)))
        pieces = [args[a:b] for a, b in zip([0, *cuts], [*cuts, len(args)], strict=True)]
        name = f"fn{i}"
        split = draw(st.integers(1, len(name)))
        names = [name[:split], name[split:]] + ([name] if draw(st.booleans()) else [])
        id_at = draw(st.integers(0, len(pieces)))  # late ids: on a later fragment
        for n, piece in enumerate(pieces):
            fn: dict[str, Any] = {"arguments": piece}
            if n < len(names) and names[n]:
                fn["name"] = names[n]
            frag: dict[str, Any] = {"index": i, "function": fn}
            if n == id_at or (n > id_at and draw(st.booleans())):
                frag["id"] = f"call_{i}"
            if n == 0 and "name" not in fn:
                fn["name"] = name
            frags.append(frag)
    chunks: list[Any] = []
    if draw(st.booleans()):
        chunks.append({"choices": [], "usage": {"prompt_tokens": 3}})
    kinds = ["text"] * 4 + ["tool"] * 3 + ["empty", "junk", "none", "other"]
    ops = draw(st.lists(st.sampled_from(kinds), max_size=8))
    for op in ops:
        choice: dict[str, Any] = {"index": 0}
        if op == "text":
            choice["delta"] = draw(text_delta())
        elif op == "tool" and frags:
            take = draw(st.integers(1, min(2, len(frags))))
            choice["delta"] = {"tool_calls": frags[:take]}
            del frags[:take]
        elif op == "junk":
            where = draw(st.sampled_from(["choices", "delta", "tool_calls", "logprobs", "usage"]))
            junk = draw(JUNK)
            if where == "choices":
                chunks.append({"choices": junk})
                continue
            if where == "usage":
                chunks.append({"choices": [], "usage": junk})
                continue
            choice["delta"] = {"content": "t"} if where == "logprobs" else {where: junk}
            if where == "delta":
                choice["delta"] = junk
            if where == "logprobs":
                choice["logprobs"] = {"content": [{"token": "t", "logprob": junk}]}
        elif op == "none":
            choice.update({"delta": None, "finish_reason": None, "logprobs": None})
        elif op == "other":
            other = {"index": draw(st.sampled_from([1, 2, "1", None])), "delta": draw(text_delta())}
            chunks.append({"choices": [choice | {"delta": draw(text_delta())}, other]})
            continue
        else:
            choice["delta"] = {}
        if draw(st.integers(0, 7)) == 0:  # a finish_reason in the middle, or a strange one
            choice["finish_reason"] = draw(FINISH)
        chunks.append({"choices": [choice]})
    while frags and draw(st.booleans()):
        chunks.append({"choices": [{"index": 0, "delta": {"tool_calls": [frags.pop(0)]}}]})
    if draw(st.integers(0, 3)):
        reason = draw(st.sampled_from(["stop", "tool_calls", "length"]) | FINISH)
        chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
    if draw(st.booleans()):
        chunks.append({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}})
    if draw(st.booleans()):  # content after the end, or after [DONE]
        chunks.append({"choices": [{"index": 0, "delta": {"content": "late"}}]})
    if draw(st.booleans()):
        chunks.append("[DONE]")
    as_text = draw(st.booleans())
    return [json.dumps(c) if as_text and isinstance(c, dict) else c for c in chunks]


@given(sequences(), st.sampled_from(["openai", "openresponses"]))
def test_random_chat_sequences_give_whole_valid_streams(chunks: list[Any], dialect: str) -> None:
    run = check(chunks, dialect)
    event(run.payloads[-1]["type"])
    if run.error is not None:
        event(f"error code {run.error['code']}")
