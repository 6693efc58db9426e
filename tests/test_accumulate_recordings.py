"""The accumulator on genuine recordings, against the official SDK's stream state.

Every recorded stream folds without an error.  On the reference API's own
untouched streams the accumulated output, just before the terminal event,
is the terminal response's output (opaque fields, which OpenAI re-encrypts
between ``output_item.done`` and ``response.completed``, compared by
presence), and the items that are done are the ones the SDK keeps aside.

The SDK's stream state itself rejects two of them: OpenAI gives a client-run
``tool_search_call`` a new ``call_id`` in its ``output_item.done``, and the SDK
raises "Completed output item identity changed."  The accumulator follows the
closing item, as the validator does.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from recordings_support import (
    PRODUCER_FAULTS,
    RESUMED,
    is_reference,
    is_resumed,
    is_untouched,
    provenance,
    responses_files,
    streams,
)
from test_accumulate import Sdk, dump

from responses_stream import AccumulateError, ResponseAccumulator

FILES = responses_files()
REFERENCE_UNTOUCHED = [f for f in FILES if is_reference(f) and is_untouched(f)]
# read from their start, with every item closed before the end
WHOLE = [
    f
    for f in REFERENCE_UNTOUCHED
    if f not in PRODUCER_FAULTS and not any(is_resumed(s) for s in streams(f))
]
# The streams (file#n) the SDK's stream state raises on, and what it says
SDK_REJECTS = {
    # OpenAI gives a client-run tool_search_call another call_id when it closes it
    "openai/openai--openai-client-tool-search.1.jsonl#0": "output item identity changed",
    "azure-openai/azure--azure-client-tool-search.1.jsonl#0": "output item identity changed",
    # a gateway that hands out a new response id on every lifecycle event
    "github-copilot/openai--github-copilot-id-rotation.1.jsonl#0": "response identity changed",
    # a resumed stream: the SDK asks for a stream from its start and drops what it saw
    RESUMED + ".2.jsonl#0": "Expected to have received `response.created`",
}
OPAQUE = frozenset({"encrypted_content", "fingerprint"})
SDK_ONLY = frozenset({"parsed", "parsed_arguments"})
TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})


def _call_id_changes(stream: list[dict[str, Any]]) -> bool:
    """Whether an item closes with another call_id than it opened with."""
    opened: dict[int, Any] = {}
    for event in stream:
        if event["type"] == "response.output_item.added":
            opened[event["output_index"]] = event["item"].get("call_id")
        elif event["type"] == "response.output_item.done":
            if opened.get(event["output_index"]) != event["item"].get("call_id"):
                return True
    return False


def test_the_sdk_rejects_exactly_the_client_tool_search_streams() -> None:
    changing = {f for f in REFERENCE_UNTOUCHED if any(map(_call_id_changes, streams(f)))}
    assert changing == {
        "openai/openai--openai-client-tool-search.1.jsonl",
        "azure-openai/azure--azure-client-tool-search.1.jsonl",
    }


def _by_presence(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: (v is not None) if k in OPAQUE else _by_presence(v)
            for k, v in value.items()
            if k not in SDK_ONLY
        }
    if isinstance(value, list):
        return [_by_presence(v) for v in value]
    return value


@pytest.mark.parametrize("name", FILES)
def test_every_recording_folds(name: str) -> None:
    # a source that rewrote the stream (one redacts its deltas to "XXXX" but keeps
    # placeholder done texts) made its texts disagree: there the done texts are trusted
    rewritten = bool(provenance("responses")[name].get("rewritten"))
    for stream in streams(name):
        acc = ResponseAccumulator(check_texts=not rewritten)
        acc.feed_all(stream)
        if stream[-1]["type"] in TERMINAL:
            assert acc.final == stream[-1]["response"]
        else:  # a trimmed recording: folded, and not taken for finished
            assert not acc.done and acc.snapshot["output"]


@pytest.mark.parametrize("name", FILES)
def test_ours_folds_every_recording_to_the_sdk_output(name: str) -> None:
    """The SDK's ResponseStreamState beside ours on every recording: where it folds a
    stream, ours folds it to the same output and status; where it raises, ours folds."""
    rewritten = bool(provenance("responses")[name].get("rewritten"))
    for n, stream in enumerate(streams(name)):
        ours = ResponseAccumulator(check_texts=not rewritten)
        ours.feed_all(stream)
        sdk = Sdk()
        if f"{name}#{n}" in SDK_REJECTS:
            with pytest.raises(RuntimeError, match=SDK_REJECTS[f"{name}#{n}"]):
                for payload in stream:
                    sdk.feed(payload)
            continue
        for payload in stream:
            sdk.feed(payload)
        if stream[-1]["type"] in TERMINAL:
            theirs, mine = sdk.final(), ours.final
        else:  # a trimmed recording: the snapshots so far
            theirs, mine = sdk.accumulated(), ours.snapshot
        assert mine is not None
        assert _by_presence(mine["output"]) == _by_presence(theirs["output"])
        assert mine["status"] == theirs["status"]


@pytest.mark.parametrize("name", WHOLE)
def test_accumulated_output_is_the_terminal_output(name: str) -> None:
    for stream in streams(name):
        acc = ResponseAccumulator()
        sdk = Sdk()
        acc.feed_all(stream[:-1])
        ours = acc.snapshot["output"]
        assert _by_presence(ours) == _by_presence(stream[-1]["response"]["output"])
        if _call_id_changes(stream):
            with pytest.raises(RuntimeError, match="identity changed"):
                for payload in stream[:-1]:
                    sdk.feed(payload)
            continue
        for payload in stream[:-1]:
            sdk.feed(payload)
        done = sdk.state._completed_output
        assert sorted(done) == list(range(len(ours)))
        assert [_by_presence(dump(done[i])) for i in sorted(done)] == _by_presence(ours)


def test_items_openai_never_closes_take_the_terminal_output() -> None:
    [name] = PRODUCER_FAULTS
    [stream] = streams(name)
    acc = ResponseAccumulator()
    acc.feed_all(stream)
    assert acc.final == stream[-1]["response"]
    assert acc.warnings == [
        "response.completed: output items [0, 1] were never closed; "
        "the response's own output is taken"
    ]


def _whole_and_resumed() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    [whole] = streams(RESUMED + ".1.jsonl")
    [resumed] = streams(RESUMED + ".2.jsonl")
    return whole, resumed


def test_a_background_stream_folds_as_the_sdk_folds_it() -> None:
    whole, _ = _whole_and_resumed()
    assert [e["type"] for e in whole[:3]] == [
        "response.created",
        "response.queued",
        "response.in_progress",
    ]
    acc, sdk = ResponseAccumulator(), Sdk()
    statuses = []
    for payload in whole:
        statuses.append(acc.feed(payload)["status"])
        sdk.feed(payload)
    assert statuses[:3] == ["queued", "queued", "in_progress"]
    assert _by_presence(acc.final) == _by_presence(sdk.final())
    assert acc.warnings == []


def test_a_resumed_stream_folds_to_the_sdk_output() -> None:
    """OpenAI's stream for starting_after=0, folded on top of what event 0 made, is the
    response the SDK folds from the whole stream; alone, its first event's response
    stands for what came before (a warning says so)."""
    whole, resumed = _whole_and_resumed()
    sdk = Sdk()
    for payload in whole:
        sdk.feed(payload)
    want = _by_presence(sdk.final())
    first = ResponseAccumulator()
    first.feed(whole[0])
    acc = ResponseAccumulator.resume(copy.deepcopy(first.snapshot), after=0)
    acc.feed_all(resumed)
    assert _by_presence(acc.final) == want and acc.warnings == []
    alone = ResponseAccumulator()
    alone.feed_all(resumed)
    assert _by_presence(alone.final) == want
    assert alone.warnings == [
        "response.queued (sequence_number 1) resumes a stream: folded from the response it carries"
    ]


CUT_AT_EVERY_EVENT = [
    RESUMED + ".1.jsonl",  # a background text answer
    "openai/openai--openai-client-tool-search.2.jsonl",  # function call arguments
    "openai/openai--openai-reasoning-encrypted-content.1.jsonl",  # reasoning, then text
    "openai/openai--openai-shell-skills.1.jsonl",  # items added completed, closed later
    "openai/openai--openai-code-interpreter-tool.1.jsonl",  # phase events set the status
]


@pytest.mark.parametrize("name", CUT_AT_EVERY_EVENT)
def test_a_stream_resumed_at_any_event_folds_to_the_same_response(name: str) -> None:
    [stream] = streams(name)[:1]
    whole = ResponseAccumulator()
    whole.feed_all(stream)
    for cut in range(len(stream) - 1):
        head, tail = stream[: cut + 1], stream[cut + 1 :]
        after = head[-1]["sequence_number"]
        earlier = ResponseAccumulator()
        earlier.feed_all(head)
        kept = copy.deepcopy(earlier.snapshot)
        from_snapshot = ResponseAccumulator.resume(copy.deepcopy(kept), after=after)
        from_snapshot.feed_all(tail)
        from_earlier = ResponseAccumulator.resume(earlier)
        from_earlier.feed_all(stream[max(0, cut - 2) :])  # what it had seen is skipped
        assert from_snapshot.final == whole.final, cut
        assert from_earlier.final == whole.final, cut
        assert from_snapshot.warnings == from_earlier.warnings == whole.warnings
        assert earlier.snapshot == kept  # the earlier accumulator goes on unchanged
        if "response" not in tail[0]:
            with pytest.raises(AccumulateError, match=rf"resume\(snapshot, after={after}\)"):
                ResponseAccumulator().feed_all(tail)


def test_resuming_needs_a_running_snapshot_and_its_sequence_number() -> None:
    whole, _ = _whole_and_resumed()
    done = ResponseAccumulator()
    done.feed_all(whole)
    with pytest.raises(AccumulateError, match="the snapshot is 'completed'"):
        ResponseAccumulator.resume(done.snapshot, after=16)
    with pytest.raises(TypeError, match="after="):
        ResponseAccumulator.resume({"status": "in_progress", "output": []})
    with pytest.raises(AccumulateError, match="output list"):
        ResponseAccumulator.resume({"status": "in_progress"}, after=0)
