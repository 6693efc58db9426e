"""The generated tests catch a wrong emitter: each mutation here must fail them.

Spec mutations regenerate the package from a changed spec and run the tests
generated from the real spec against it; emitter mutations edit the committed
emitters directly.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EMITTERS = "responses_stream/openai/emitters.py"

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
        "sequence_number=next(seq),\n                item_id=self.item_id,\n"
        "                output_index=self.output_index,\n                delta=delta,\n"
        "            )\n        )\n        return events\n\n    def done",
        "sequence_number=0,\n                item_id=self.item_id,\n"
        "                output_index=self.output_index,\n                delta=delta,\n"
        "            )\n        )\n        return events\n\n    def done",
        "test_item_custom_tool_call.py",
    ),
    "done_text_drops_first_delta": (
        'arguments="".join(self._acc_arguments),',
        'arguments="".join(self._acc_arguments[1:]),',
        "test_item_function_call.py",
    ),
    "wrong_item_id": (
        "item_id=self.item_id,\n                output_index=self.output_index,\n"
        "                content_index=p.index,\n                delta=delta,",
        'item_id="msg_other",\n                output_index=self.output_index,\n'
        "                content_index=p.index,\n                delta=delta,",
        "test_item_message.py",
    ),
}


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
    assert old in text, f"mutation anchor for {name} not found"
    path.write_text(text.replace(old, new, 1))
    _assert_fails(_run_tests(out, module))
