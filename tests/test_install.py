"""The generated package installs on its own and its commands run from the install."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORDED = Path(__file__).parent / "recorded"


def test_installed_package_runs_from_chat_and_validate(tmp_path: Path) -> None:
    target = tmp_path / "site"
    source = tmp_path / "source"  # building writes build/ and egg-info beside the sources
    shutil.copytree(ROOT / "generated", source, ignore=shutil.ignore_patterns("__pycache__"))
    pip = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(source),
        ],
        capture_output=True,
        text=True,
    )
    assert pip.returncode == 0, pip.stderr
    installed = target / "responses_stream"
    assert (installed / "openai" / "schema.json").is_file()
    assert (installed / "_vendor" / "openresponses-openapi-2026-04-24.json").is_file()
    assert (installed / "py.typed").is_file()
    env = {**os.environ, "PYTHONPATH": str(target)}
    run = {"cwd": tmp_path, "env": env, "capture_output": True}
    where = subprocess.run(
        [sys.executable, "-c", "import responses_stream; print(responses_stream.__file__)"], **run
    )
    assert where.stdout.decode().startswith(str(installed)), where.stdout
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"model": "Qwen/Qwen3-8B", "instructions": "Be brief."}))
    for dialect in ("openai", "openresponses"):
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "responses_stream",
                "from-chat",
                "--dialect",
                dialect,
                "--request",
                str(request),
            ],
            input=(RECORDED / "vllm_reasoning_tools.sse").read_bytes(),
            **run,
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith(b"event: response.created\n")
        check = subprocess.run(
            [sys.executable, "-m", "responses_stream", "validate", "--dialect", dialect, "-"],
            input=out.stdout,
            **run,
        )
        assert check.returncode == 0, check.stdout + check.stderr
