"""The generated tests catch a wrong emitter: each mutation here must fail them.

Spec mutations regenerate the package from a changed spec and run the tests
generated from the real spec against it; emitter mutations edit a copy of the
committed emitters (never the package itself).  The method mutations are bug
shapes seen in the field: each only shows when an item is not the first of its
response, or a part is not the first of its item.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EMITTERS = "responses_stream/_shared/emitters.py"  # every dialect's

SPEC_MUTATIONS = {
    "reorder_done_events": (
        "items/function_call.yaml",
        "emit: [response.function_call_arguments.done, response.output_item.done]\n  incomplete",
        "emit: [response.output_item.done, response.function_call_arguments.done]\n  incomplete",
        "test_item_function_call.py",
    ),
    "drop_done_event": (
        "items/function_call.yaml",
        "emit: [response.function_call_arguments.done, response.output_item.done]\n  incomplete",
        "emit: [response.output_item.done]\n  incomplete",
        "test_item_function_call.py",
    ),
    "drop_part_added": (
        "parts.yaml",
        "emit: [response.reasoning_summary_part.added]",
        "emit: []",
        "test_item_reasoning.py",
    ),
}

# (old, new, which occurrence, test module): edits of the generated emitters.
EMITTER_MUTATIONS = {
    "content_index_off_by_one": (
        "content_index=p.index,\n                delta=delta,\n                logprobs=logprobs",
        "content_index=p.index + 1,\n                delta=delta,\n                logprobs=logprobs",
        "test_item_message.py",
    ),
    "sequence_number_reused": (
        "b.ResponseCustomToolCallInputDeltaEvent(\n                sequence_number=next(seq),",
        "b.ResponseCustomToolCallInputDeltaEvent(\n                sequence_number=0,",
        "test_item_custom_tool_call.py",
    ),
}


# (dialect, class, method, old, new, test module): ``old`` is replaced by ``new``
# everywhere inside that one method of the generated emitters.
METHOD_MUTATIONS = {
    # The done event's arguments lose the first character of the deltas.
    "done_text_drops_first_delta": (
        "openai",
        "FunctionCallEmitter",
        "done",
        "arguments=self._acc_arguments.value()",
        "arguments=self._acc_arguments.value()[1:]",
        "test_item_function_call.py",
    ),
    # A text delta names another item.
    "wrong_item_id": (
        "openai",
        "MessageEmitter",
        "output_text_delta",
        "item_id=self.item_id",
        'item_id="msg_other"',
        "test_item_message.py",
    ),
    # LiteLLM's shape: the closing events of a tool call say output_index 0.
    "function_call_done_output_index_zero": (
        "openai",
        "FunctionCallEmitter",
        "done",
        "output_index=self.output_index",
        "output_index=0",
        "test_item_function_call.py",
    ),
    # A delta reuses the sequence number of the event before it.
    "delta_reuses_sequence_number": (
        "openresponses",
        "McpCallEmitter",
        "delta",
        "sequence_number=next(seq)",
        "sequence_number=next(seq) - 1",
        "test_item_mcp_call.py",
    ),
    # The content index leaks the item's position into its parts.
    "content_index_leaks_between_items": (
        "openai",
        "MessageEmitter",
        "output_text_open",
        "_MessageEmitterResponseOutputTextState(self._next_content)",
        "_MessageEmitterResponseOutputTextState(self._next_content + self.output_index)",
        "test_item_message.py",
    ),
    # The deltas of a second summary part are streamed but lost from its text.
    "second_part_loses_deltas": (
        "openai",
        "ReasoningEmitter",
        "summary_text_delta",
        "p.text.append(delta)",
        "if p.index == 0:\n            p.text.append(delta)",
        "test_item_reasoning.py",
    ),
    # A second item of the same type gets the first one's output_index.
    "output_index_not_taken_from_stream": (
        "openai",
        "CustomToolCallEmitter",
        "open",
        "self.output_index = self._stream.open_item(self, snap)",
        "self._stream.open_item(self, snap)\n        self.output_index = 0",
        "test_item_custom_tool_call.py",
    ),
}


def mutate_method(text: str, cls: str, method: str, old: str, new: str) -> str:
    """``text`` with ``old`` replaced by ``new`` inside ``cls.method`` only."""
    start = text.index(f"\nclass {cls}")
    start = text.index(f"\n    def {method}(", start)
    end = text.index("\n    def ", start + 1)
    body = text[start:end]
    assert old in body, f"{old!r} not in {cls}.{method}"
    return text[:start] + body.replace(old, new) + text[end:]


def _run_tests(out: Path, module: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", f"tests/{module}"],
        cwd=out,
        capture_output=True,
        text=True,
    )


def _assert_fails(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    assert " failed" in result.stdout, result.stdout


def test_unmutated_copy_passes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(ROOT / "generated", out, ignore=shutil.ignore_patterns("__pycache__"))
    result = _run_tests(out, "test_item_function_call.py")
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize("name", sorted(SPEC_MUTATIONS))
def test_spec_mutation_fails_generated_tests(name: str, tmp_path: Path) -> None:
    rel, old, new, module = SPEC_MUTATIONS[name]
    spec, out = tmp_path / "spec", tmp_path / "out"
    shutil.copytree(ROOT / "spec", spec)
    text = (spec / rel).read_text()
    assert text.count(old) == 1, f"mutation anchor for {name} not found once"
    (spec / rel).write_text(text.replace(old, new))
    gen = subprocess.run(
        [sys.executable, "-m", "generator", "generate", "--spec", str(spec), "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert gen.returncode == 0, gen.stderr
    shutil.rmtree(out / "tests")
    shutil.copytree(
        ROOT / "generated" / "tests", out / "tests", ignore=shutil.ignore_patterns("__pycache__")
    )
    _assert_fails(_run_tests(out, module))


@pytest.mark.parametrize("name", sorted(EMITTER_MUTATIONS))
def test_emitter_mutation_fails_generated_tests(name: str, tmp_path: Path) -> None:
    old, new, module = EMITTER_MUTATIONS[name]
    out = tmp_path / "out"
    shutil.copytree(ROOT / "generated", out, ignore=shutil.ignore_patterns("__pycache__"))
    path = out / EMITTERS
    text = path.read_text()
    # exactly once, so the mutant is where its test module looks
    assert text.count(old) == 1, f"mutation anchor for {name} not found once"
    path.write_text(text.replace(old, new, 1))
    _assert_fails(_run_tests(out, module))


@pytest.mark.parametrize("name", sorted(METHOD_MUTATIONS))
def test_field_bug_shape_fails_generated_tests(name: str, tmp_path: Path) -> None:
    dialect, cls, method, old, new, module = METHOD_MUTATIONS[name]
    out = tmp_path / "out"
    shutil.copytree(ROOT / "generated", out, ignore=shutil.ignore_patterns("__pycache__"))
    path = out / EMITTERS  # the emitters of every dialect, ``dialect``'s among them
    path.write_text(mutate_method(path.read_text(), cls, method, old, new))
    _assert_fails(_run_tests(out, module))


def test_mutation_runner_makes_the_litellm_mutant(tmp_path: Path) -> None:
    """The runner's own operators include output_index=0 in FunctionCallEmitter.done."""
    from generator.testing import mutate

    source = (ROOT / "generated" / EMITTERS).read_text()
    sites = [
        s
        for s in mutate.find_sites("_shared", source)
        if (s.owner, s.function, s.detail) == ("FunctionCallEmitter", "done", "output_index=0")
    ]
    assert len(sites) == 2  # the arguments.done event and the output_item.done event
    assert not any(s.equivalent for s in sites)
    out = tmp_path / "out"
    shutil.copytree(ROOT / "generated", out, ignore=shutil.ignore_patterns("__pycache__"))
    mutant = mutate.mutant_source(source, sites[0].number)
    assert mutant != mutate.baseline_source(source)
    (out / EMITTERS).write_text(mutant)
    _assert_fails(_run_tests(out, "test_item_function_call.py"))
