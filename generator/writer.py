"""Write rendered files atomically: stage, format, compare, then swap in.

A failed run leaves the output folder byte-identical to before.  Only
changed files are written and stale files are removed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# Tool caches and build output that may appear in an output folder; never compared or removed.
CACHES = {
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
    "build",
    "dist",
}
RUFF_CONFIG = ["--line-length", "100", "--target-version", "py311"]


def _ruff(args: list[str], cwd: Path) -> None:
    cmd = [sys.executable, "-m", "ruff", *args]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"ruff {' '.join(args)} failed:\n{proc.stdout}{proc.stderr}")


def format_tree(root: Path) -> None:
    """ruff fix, then ruff format, over every Python file under ``root``."""
    _ruff(
        [
            "check",
            "--fix-only",
            "--quiet",
            "--isolated",
            "--no-cache",
            "--select",
            "I,F401,UP",
            *RUFF_CONFIG,
            ".",
        ],
        root,
    )
    _ruff(["format", "--quiet", "--isolated", "--no-cache", *RUFF_CONFIG, "."], root)


def render_to_stage(files: dict[str, str], parent: Path) -> Path:
    """Write ``files`` into a fresh staging folder beside the output and format them."""
    parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".generated-staging-", dir=parent))
    for rel, text in files.items():
        path = stage / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    format_tree(stage)
    return stage


def read_tree(root: Path) -> dict[str, bytes]:
    if not root.is_dir():
        return {}
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).parts
        skip = CACHES.intersection(rel) or any(p.endswith(".egg-info") for p in rel)
        if path.is_file() and not skip and path.suffix != ".pyc":
            out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


def diff_trees(stage: Path, out: Path) -> list[str]:
    """Files that differ between a staged render and the output folder."""
    new, old = read_tree(stage), read_tree(out)
    return sorted(k for k in set(new) | set(old) if new.get(k) != old.get(k))


def swap_in(stage: Path, out: Path) -> list[str]:
    """Make ``out`` equal to ``stage``: write changed files, remove stale ones."""
    changed = diff_trees(stage, out)
    if not changed:
        shutil.rmtree(stage)
        return []
    new = read_tree(stage)
    if not out.exists():
        os.replace(stage, out)
        return changed
    for rel in changed:
        target = out / rel
        if rel in new:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.tmp")
            tmp.write_bytes(new[rel])
            os.replace(tmp, target)
        else:
            target.unlink()
    for path in sorted(out.rglob("*"), reverse=True):
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    shutil.rmtree(stage)
    return changed
