"""The generator's command line: help, version, errors in the command's own usage, overlays."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from responses_stream._runtime.version import __version__

ROOT = Path(__file__).resolve().parents[1]


def gen(*args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "generator", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
    )


def test_version_and_help() -> None:
    version = gen("--version")
    assert (
        version.returncode == 0 and version.stdout.strip() == f"python -m generator {__version__}"
    )
    for command in ("generate", "check"):
        text = gen(command, "--help").stdout
        assert "--overlay DIR" in text and "examples:" in text and "(default: generated)" in text


def test_an_unknown_flag_shows_the_commands_usage() -> None:
    proc = gen("generate", "--bogus")
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: python -m generator generate ")
    assert proc.stderr.rstrip().endswith("error: unrecognized arguments: --bogus")
    assert "Traceback" not in proc.stderr


def test_a_bad_overlay_file_is_file_and_line_and_writes_nothing(tmp_path: Path) -> None:
    overlay = tmp_path / "mine"
    overlay.mkdir()
    (overlay / "broken.yaml").write_text("kind: item\ntype: x\nbogus_key: 1\n")
    out = tmp_path / "out"
    proc = gen("generate", "--overlay", overlay, "--out", out)
    assert proc.returncode == 1
    assert "mine/broken.yaml:" in proc.stderr and "nothing was written" in proc.stderr
    assert not out.exists()
    missing = gen("generate", "--overlay", tmp_path / "absent", "--out", out)
    assert missing.returncode == 1 and "not a folder" in missing.stderr


def test_error_paths_are_the_folders_as_typed(tmp_path: Path) -> None:
    """An overlay's file is named by the path its folder was given by: relative to the
    working directory when typed relative, absolute when typed absolute."""
    work = tmp_path / "work"
    work.mkdir()
    overlay = tmp_path / "elsewhere" / "my_items"
    overlay.mkdir(parents=True)
    (overlay / "broken.yaml").write_text("kind: item\ntype: x\nbogus_key: 1\n")
    out = tmp_path / "out"
    env = {"PYTHONPATH": str(ROOT)}  # the generator of this checkout, from another folder
    runs = {
        "../elsewhere/my_items/broken.yaml:": ["--overlay", "../elsewhere/my_items"],
        f"{overlay}/broken.yaml:": ["--overlay", str(overlay)],
    }
    for shown, args in runs.items():
        proc = subprocess.run(
            [sys.executable, "-m", "generator", "generate", *args, "--out", str(out)],
            cwd=work,
            env={**os.environ, **env},
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 1
        faults = proc.stderr.splitlines()[:-1]
        assert len(faults) == 6 and all(f.startswith(shown) for f in faults), proc.stderr
        assert f"{shown}3: bogus_key: unknown field 'bogus_key'" in faults


def test_the_summary_counts_the_files_of_the_tree(tmp_path: Path) -> None:
    """Into a fresh folder every file is new: the count written is the count changed, and
    it is every file of the tree (the rendered ones and the runtime copied beside them)."""
    out = tmp_path / "pkg"
    first = gen("generate", "--out", out)
    assert first.returncode == 0, first.stderr
    count = sum(1 for p in out.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    assert first.stdout == f"generated {count} files into {out} ({count} changed)\n"
    again = gen("generate", "--out", out)
    assert again.stdout == f"generated {count} files into {out} (0 changed)\n"
