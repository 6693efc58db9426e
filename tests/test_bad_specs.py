"""Broken specs fail with clear ``file:line`` errors and write nothing.

Each case copies the real ``spec/`` folder, applies one targeted change and runs
the generator; stderr must equal ``tests/bad_specs/<case>.stderr``.  Rewrite the
snapshots with ``UPDATE_SNAPSHOTS=1 pytest tests/test_bad_specs.py`` and review them.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import keyword
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from generator.reserved import HARD_KEYWORDS

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOTS = Path(__file__).parent / "bad_specs"
SENTINEL = SNAPSHOTS / "sentinel_out"
UPDATE = os.environ.get("UPDATE_SNAPSHOTS") == "1"
FC = "items/function_call.yaml"

# An edit is (file under spec/, old text, new text): ``old`` must occur exactly
# once and is replaced; ``old=None`` writes ``new`` as the whole file.
Edit = tuple[str, str | None, str]
REQ = "requests/responses.yaml"
CASES: dict[str, list[Edit]] = {
    "request_field_without_row": [
        (
            REQ,
            "  truncation: {fate: no_effect, why: a chat upstream never truncates the context}\n",
            "",
        )
    ],
    "request_extension_of_unknown_definition": [
        (
            "requests/openai.yaml",
            "  WebSearchTool:\n    search_content_types:",
            "  WebSearchTools:\n    search_content_types:",
        )
    ],
    "request_tool_without_row": [
        (
            REQ,
            "  programmatic_tool_calling: {fate: hosted, why: OpenAI's servers run the program}\n",
            "",
        )
    ],
    "request_row_without_why": [
        (
            REQ,
            "  truncation: {fate: no_effect, why: a chat upstream never truncates the context}",
            "  truncation: {fate: no_effect}",
        )
    ],
    "request_from_unknown_key": [(REQ, "    from: effort\n", "    from: efort\n")],
    "request_from_beside_converter": [
        (REQ, "    from: effort\n", "    from: effort\n    by: reasoning\n")
    ],
    "request_with_unsent_field": [
        (
            REQ,
            "to: top_logprobs, with: logprobs,",
            "to: top_logprobs, with: logprob,",
        )
    ],
    "request_dead_key": [
        (REQ, "  output_schema: chat tools have", "  output_schemas: chat tools have"),
        (REQ, "  input_file: [file_data, file_id]", "  input_file: [file_data, fileid]"),
    ],
    "yaml_syntax": [(FC, "doc: A call to a function", "doc: A call: to a function")],
    "unknown_event": [
        (
            FC,
            "emit: [response.function_call_arguments.delta]",
            "emit: [response.function_call_arguments.deltas]",
        )
    ],
    "duplicate_item_type": [
        ("items/function_call_copy.yaml", None, (ROOT / "spec" / FC).read_text("utf-8"))
    ],
    "unreachable_state": [
        (
            FC,
            "  closed: {type: final}",
            "  orphan: {on: {incomplete: closed}}\n  closed: {type: final}",
        )
    ],
    "unknown_key": [
        (
            FC,
            "    emit: [response.function_call_arguments.delta]",
            "    emits: [response.function_call_arguments.delta]",
        )
    ],
    "python_keyword": [
        (FC, "  call_id: {type: string}", "  call_id: {type: string}\n  class: {type: string}")
    ],
    "unsafe_identifier": [(FC, "  call_id: {type: string}", "  bad-name: {type: string}")],
    "unknown_type": [
        ("events.yaml", "      logprobs: list[Logprob]\n", "      logprobs: list[Logprobs]\n")
    ],
    "undefined_transition": [
        (
            FC,
            "done: closed, incomplete: closed}",
            "done: closed, finish: closed, incomplete: closed}",
        )
    ],
    # Names the generated code uses itself: a parameter or a field with one of them
    # would shadow it (``self`` is a syntax error, ``m`` breaks every event,
    # ``events`` silently drops the parameter).
    "reserved_parameter": [
        (
            FC,
            "    params: {delta: string}",
            "    params: {delta: string, self: string, b: string, c: string, events: string, next: string}",
        )
    ],
    "reserved_field": [
        (
            FC,
            "  call_id: {type: string}",
            "  call_id: {type: string}\n  stream: {type: string}\n  len: {type: string}",
        )
    ],
    "field_clashes_with_method": [
        (FC, "  call_id: {type: string}", "  call_id: {type: string}\n  delta: {type: string}")
    ],
    "class_name_clash": [
        (
            "types.yaml",
            "      code: string\n      message: string\n  ErrorPayload:",
            "      code: string\n      message: string\n"
            "  ResponseFunctionToolCall:\n    fields: {x: string}\n  ErrorPayload:",
        )
    ],
    "duplicate_class": [
        (
            "events.yaml",
            "    class: ResponseTextDoneEvent\n",
            "    class: ResponseTextDeltaEvent\n",
        )
    ],
    "bad_class_name": [(FC, "class: ResponseFunctionToolCall", "class: function_tool_call")],
    "dialect_name_clash": [("dialects/openresponses.yaml", "name: openresponses", "name: tables")],
    "file_name_control_characters": [
        ("items/x\nraise SystemExit(7)\n#.yaml", None, (ROOT / "spec" / FC).read_text("utf-8"))
    ],
    "lone_surrogate": [
        (
            FC,
            "doc: A call to a function tool that the client runs.",
            'doc: "A call \\ud800 to a function"',
        )
    ],
    # Response fields are keyword arguments of ResponseEmitter, next to its own.
    "reserved_response_field": [
        (
            "envelope.yaml",
            '  user: {type: "string?", echo: true, default: null}\n',
            '  user: {type: "string?", echo: true, default: null}\n'
            '  request: {type: "object?", default: null}\n',
        )
    ],
    "raw_nul": [
        (
            FC,
            "doc: A call to a function tool that the client runs.",
            "doc: A call \x00 to a function",
        )
    ],
    # The root cause only: the transition named there is taken, so no "never taken".
    "unknown_target_state": [
        (FC, "done: closed, incomplete: closed}", "done: closd, incomplete: closed}")
    ],
    # A typo in an event's own ``from`` is reported at that line, not at each emitter.
    "event_accumulator_typo": [
        (
            "events.yaml",
            "      text: {type: string, from: acc.text}\n      logprobs:",
            "      text: {type: string, from: acc.txt}\n      logprobs:",
        )
    ],
    # An item type the openai SDK's closed unions do not know, without a vendor prefix.
    "unprefixed_item_type": [
        (
            "items/citation_lookup.yaml",
            None,
            (ROOT / "spec" / FC)
            .read_text("utf-8")
            .replace("type: function_call", "type: citation_lookup")
            .replace("class: ResponseFunctionToolCall", "class: CitationLookup")
            .replace("id_prefix: fc_", "id_prefix: cl_"),
        )
    ],
    "multiple_files": [
        (
            FC,
            "emit: [response.function_call_arguments.delta]",
            "emit: [response.function_call_arguments.deltas]",
        ),
        ("events.yaml", "      logprobs: list[Logprob]\n", "      logprobs: list[Logprobs]\n"),
    ],
}


def apply(spec: Path, edits: list[Edit]) -> None:
    for rel, old, new in edits:
        path = spec / rel
        if old is None:
            path.write_text(new, encoding="utf-8")
            continue
        text = path.read_text(encoding="utf-8")
        assert text.count(old) == 1, f"{rel}: {old!r} must occur exactly once in the real spec"
        path.write_text(text.replace(old, new), encoding="utf-8")


def tree_hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def generate(spec: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """The generator run from the spec copy's folder, given that folder by a relative
    path, as a user would type it: errors name files by that path."""
    cmd = [sys.executable, "-m", "generator", "generate", "--spec", spec.name, "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        cmd, cwd=spec.parent, env=env, capture_output=True, text=True, timeout=120
    )


def spec_copy(tmp: Path, edits: list[Edit]) -> Path:
    spec = tmp / "spec"
    shutil.copytree(ROOT / "spec", spec)
    apply(spec, edits)
    return spec


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_spec(case: str, tmp_path: Path) -> None:
    spec = spec_copy(tmp_path, CASES[case])
    out = tmp_path / "out"
    shutil.copytree(SENTINEL, out)
    before = tree_hashes(tmp_path)  # out, the spec copy (spec.schema.json) and staging leftovers
    proc = generate(spec, out)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout == ""
    snapshot = SNAPSHOTS / f"{case}.stderr"
    if UPDATE:
        snapshot.write_text(proc.stderr, encoding="utf-8")
    assert proc.stderr == snapshot.read_text(encoding="utf-8")
    assert tree_hashes(out) == tree_hashes(SENTINEL)
    assert tree_hashes(tmp_path) == before


def test_bad_spec_leaves_generated_copy_untouched(tmp_path: Path) -> None:
    spec = spec_copy(tmp_path, CASES["multiple_files"])
    out = tmp_path / "generated"
    shutil.copytree(ROOT / "generated", out, ignore=shutil.ignore_patterns("*cache*", "*.pyc"))
    before = tree_hashes(out)
    assert before, "the generated/ copy is empty"
    proc = generate(spec, out)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert tree_hashes(out) == before


ITEM_DOC = 'Quotes "double" and \'single\',\na newline, a backslash \\ and """triple""" \\'
TRANSITION_DOC = "\"\"\"Starts with a triple quote\\n (not a newline)\n\tand ends with '''"
CHECK_DOCS = """
import json, sys
from pathlib import Path
out = {}
for dialect in ("openai", "openresponses"):
    mod = __import__(f"responses_stream.{dialect}.emitters", fromlist=["_"])
    assert Path(mod.__file__).resolve().is_relative_to(Path(sys.argv[1]).resolve()), mod.__file__
    cls = mod.ITEM_EMITTERS["function_call"]
    out[dialect] = [cls.__doc__, cls.delta.__doc__]
print(json.dumps(out))
"""


def test_doc_strings_round_trip(tmp_path: Path) -> None:
    spec = spec_copy(
        tmp_path,
        [
            (
                FC,
                "doc: A call to a function tool that the client runs.",
                f"doc: {json.dumps(ITEM_DOC)}",
            ),
            (
                FC,
                "  delta:\n    params:",
                f"  delta:\n    doc: {json.dumps(TRANSITION_DOC)}\n    params:",
            ),
        ],
    )
    out = tmp_path / "out"
    proc = generate(spec, out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    compiled = subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(out)], capture_output=True, text=True
    )
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    env = {**os.environ, "PYTHONPATH": str(out)}
    cmd = [sys.executable, "-c", CHECK_DOCS, str(out)]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    docs = json.loads(proc.stdout)
    # Python 3.13 strips the common indentation of docstrings when it compiles
    # them, so compare what both versions keep: every character but that.
    expected = [inspect.cleandoc(ITEM_DOC), inspect.cleandoc(TRANSITION_DOC)]
    got = {d: [inspect.cleandoc(x) for x in docs[d]] for d in docs}
    assert got == {d: expected for d in ("openai", "openresponses")}


SOFT_KEYWORD_FIELDS = """
import sys
from pathlib import Path
from responses_stream import openai as oa
assert Path(oa.__file__).resolve().is_relative_to(Path(sys.argv[1]).resolve()), oa.__file__
assert "match" in oa.models.ResponseFunctionToolCall.__struct_fields__
assert "case" in oa.models.ResponseError.__struct_fields__
resp = oa.ResponseEmitter(model="m")
resp.created()
resp.in_progress()
call = resp.function_call(call_id="c", name="n", match="x")
print(call.open()[0].item.match)
"""


def test_hard_keywords_are_pinned() -> None:
    """The refused names are the same on every Python: all hard keywords, no soft ones."""
    assert set(keyword.kwlist) <= HARD_KEYWORDS
    assert not HARD_KEYWORDS & {"match", "case", "type", "_", *keyword.softkwlist}


def test_soft_keywords_are_names(tmp_path: Path) -> None:
    """``match`` (an item field) and ``case`` (a type field) are accepted on every Python;
    ``class`` is refused everywhere (the ``python_keyword`` case)."""
    spec = spec_copy(
        tmp_path,
        [
            (FC, "  call_id: {type: string}", "  call_id: {type: string}\n  match: {type: string}"),
            (
                "types.yaml",
                "      code: string\n      message: string\n  ErrorPayload:",
                "      code: string\n      message: string\n      case: string\n  ErrorPayload:",
            ),
        ],
    )
    out = tmp_path / "out"
    proc = generate(spec, out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    env = {**os.environ, "PYTHONPATH": str(out)}
    cmd = [sys.executable, "-c", SOFT_KEYWORD_FIELDS, str(out)]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "x\n"
