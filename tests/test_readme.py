"""The README's snippets work as written, with the package `make` installed.

Each ``python`` block runs, in order and in one namespace, in a fresh interpreter
started outside the repository, so the import of ``responses_stream`` comes from
the editable install ``make`` does (not from this repository's folders).  The
Harmony block needs a model's sampled tokens, so it is only compiled.  The
``from-chat`` command lines run as shown, against a recorded stream.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
NEEDS_A_MODEL = "sampled_tokens"  # the Harmony block: tokens from a running model


def blocks(lang: str) -> list[str]:
    return [body for kind, body in BLOCK.findall(README) if kind == lang]


def clean_env() -> dict[str, str]:
    """The environment without anything that would put this repository on the path."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def test_the_readme_has_the_snippets_this_test_runs() -> None:
    python = blocks("python")
    assert len(python) >= 6 and sum(NEEDS_A_MODEL in b for b in python) == 1
    assert any("from-chat" in b for b in blocks("sh"))


def test_every_python_snippet_runs(tmp_path: Path) -> None:
    program = []
    for i, body in enumerate(blocks("python")):
        compile(body, f"README block {i}", "exec")
        if NEEDS_A_MODEL not in body:
            program.append(f"# -- README block {i}\n{body}")
    script = tmp_path / "snippets.py"
    script.write_text("\n".join(program) + "\nprint('all snippets ran')\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=clean_env(), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.endswith("all snippets ran\n")
    where = subprocess.run(
        [sys.executable, "-c", "import responses_stream; print(responses_stream.__file__)"],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
    )
    assert where.stdout.startswith(str(ROOT / "generated")), "not the editable install"


@pytest.mark.parametrize(
    "line",
    [ln for b in blocks("sh") for ln in b.splitlines() if "responses_stream from-chat" in ln],
)
def test_the_from_chat_command_lines_run(line: str, tmp_path: Path) -> None:
    shutil.copy(ROOT / "tests" / "recorded" / "llamacpp_text.sse", tmp_path / "chat.sse")
    (tmp_path / "request.json").write_text(json.dumps({"model": "my-model"}))
    command = line.replace("python ", f"{sys.executable} ", 1)
    proc = subprocess.run(
        command, shell=True, cwd=tmp_path, env=clean_env(), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(x[6:]) for x in proc.stdout.splitlines() if x.startswith("data: {")]
    assert events[0]["type"] == "response.created" and events[-1]["type"] == "response.completed"
    assert events[-1]["response"]["model"] == "my-model"
