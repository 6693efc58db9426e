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

from typing import Any

import pytest
from recordings_support import is_reference, is_untouched, provenance, responses_files, streams
from test_accumulate import Sdk, dump

from responses_stream import ResponseAccumulator

FILES = responses_files()
REFERENCE_UNTOUCHED = [f for f in FILES if is_reference(f) and is_untouched(f)]
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


@pytest.mark.parametrize("name", REFERENCE_UNTOUCHED)
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
