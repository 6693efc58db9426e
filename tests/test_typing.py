"""The generated API under ``mypy --strict``, as a user's program sees it.

``good.py`` uses the API the typed way (a ``ResponseEmitter`` with typed
Response fields, item emitters, the precise event lists their methods return,
``.type`` on events and narrowing on it, SDK-named models) and must check
clean; ``bad.py`` gets types wrong, and mypy must report each line marked
``# E: <part of the message>`` there, and no other.  One mypy run checks both,
with ``MYPYPATH`` pointing at ``generated`` as ``make typecheck`` does.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]

GOOD = """\
from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, assert_type

from responses_stream import CountingIds
from responses_stream.openai import models as m
from responses_stream.openai.emitters import FunctionCallEmitter, ResponseEmitter
from responses_stream.openresponses import models as orm
from responses_stream.openresponses.emitters import ResponseEmitter as OrEmitter

resp = ResponseEmitter(model="my-model", temperature=0.5, ids=CountingIds(), instructions=None)
stream: list[m.Event] = []
stream += resp.created()
stream += resp.in_progress()

msg = resp.message()
stream += msg.open()
stream += msg.output_text_open()
deltas = msg.output_text_delta("Hello")
assert_type(deltas, list[m.ResponseTextDeltaEvent])
delta = deltas[0]
assert_type(delta.type, Literal["response.output_text.delta"])
text: str = delta.delta
assert delta.type == "response.output_text.delta"
assert m.ResponseTextDeltaEvent.type == "response.output_text.delta"
stream += deltas
frame: bytes = msg.output_text_delta_sse(", world")
closing = msg.done()
assert_type(
    closing,
    list[
        m.ResponseTextDoneEvent
        | m.ResponseContentPartDoneEvent
        | m.ResponseRefusalDoneEvent
        | m.ResponseOutputItemDoneEvent
    ],
)
stream += closing
message: m.ResponseOutputMessage = msg.snapshot()

call: FunctionCallEmitter = resp.function_call(call_id="call_1", name="get_weather")
stream += call.open()
args: list[m.ResponseFunctionCallArgumentsDeltaEvent] = call.delta('{"city": "Paris"}')
stream += args
stream += call.done()
tool_call: m.ResponseFunctionToolCall = call.snapshot()
empty = resp.message()
opened: Sequence[m.Event] = empty.open()  # a Sequence takes any method's list as it is
stream += opened
stream += empty.done()
completed = resp.completed()
assert_type(completed, list[m.ResponseCompletedEvent])
stream += completed

for ev in stream:
    if ev.type == "response.output_text.delta":
        assert_type(ev, m.ResponseTextDeltaEvent)
        print(ev.delta, ev.content_index)
    elif ev.type == "response.output_item.done":
        assert_type(ev, m.ResponseOutputItemDoneEvent)
        item = ev.item
        if item.type == "function_call":
            assert_type(item, m.ResponseFunctionToolCall)
            print(item.arguments)
        elif item.type == "reasoning":
            assert_type(item, m.ResponseReasoningItem)

orx = OrEmitter(model="my-model")
orx.created()
orx.in_progress()
search = orx.web_search_call()
for oev in [*search.open(), *search.searching()]:
    if oev.type == "openai:response.web_search_call.searching":
        assert_type(oev, orm.ResponseWebSearchCallSearchingEvent)
"""

BAD = """\
from __future__ import annotations

from responses_stream.openai import models as m
from responses_stream.openai.emitters import ResponseEmitter

resp = ResponseEmitter(model=1)  # E: Argument "model" to "ResponseEmitter" has incompatible type "int"
ResponseEmitter(modle="my-model")  # E: Unexpected keyword argument "modle" for "ResponseEmitter"
ResponseEmitter(truncation="sometimes")  # E: Argument "truncation" to "ResponseEmitter"
msg = resp.message()
msg.output_text_delta(5)  # E: Argument 1 to "output_text_delta" of "MessageEmitter" has incompatible type "int"; expected "str"
opened: list[m.ResponseCreatedEvent] = msg.open()  # E: Incompatible types in assignment
delta = msg.output_text_delta("Hi")[0]
if delta.type == "response.output_text.done":  # E: Non-overlapping equality check
    pass
delta.type = "response.output_text.done"  # E: Cannot assign to class variable "type" via instance
for ev in resp.completed():
    print(ev.delta)  # E: "ResponseCompletedEvent" has no attribute "delta"
"""

MARK = re.compile(r"#\s*E:\s*(.+)$")
ERROR = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+): error: (?P<message>.*)$", re.M)


def _mypy(tmp: Path) -> tuple[str, dict[str, list[tuple[int, str]]]]:
    """One mypy --strict run over both programs: its output and its errors by file name."""
    (tmp / "good.py").write_text(GOOD, encoding="utf-8")
    (tmp / "bad.py").write_text(BAD, encoding="utf-8")
    env = {**os.environ, "MYPYPATH": str(ROOT / "generated")}
    cmd = [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp / ".mypy_cache")]
    cmd += ["--hide-error-context", "--no-error-summary", "good.py", "bad.py"]
    proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    errors: dict[str, list[tuple[int, str]]] = {}
    for m in ERROR.finditer(proc.stdout):
        errors.setdefault(m["file"], []).append((int(m["line"]), m["message"]))
    return proc.stdout, errors


@pytest.fixture(scope="module")
def mypy_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    return _mypy(tmp_path_factory.mktemp("typing"))


def test_a_typed_program_using_the_api_passes_mypy_strict(
    mypy_run: tuple[str, dict[str, Any]],
) -> None:
    output, errors = mypy_run
    outside_bad = {f: e for f, e in errors.items() if f != "bad.py"}
    assert outside_bad == {}, output
    env = {**os.environ, "PYTHONPATH": str(ROOT / "generated")}
    cmd = [sys.executable, "-c", GOOD]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr  # and it runs


def test_wrong_types_are_reported_on_exactly_the_marked_lines(
    mypy_run: tuple[str, dict[str, Any]],
) -> None:
    output, errors = mypy_run
    expected = {
        n: m[1].strip()
        for n, line in enumerate(BAD.splitlines(), start=1)
        if (m := MARK.search(line))
    }
    got: dict[int, list[str]] = {}
    for line, message in errors.get("bad.py", []):
        got.setdefault(line, []).append(message)
    assert sorted(got) == sorted(expected), output
    for line, part in expected.items():
        assert any(part in message for message in got[line]), (line, part, got[line])
