"""Write rendered files atomically, as a whole tree: stage, format, compare, swap.

A run renders every file into a staging folder beside the output and formats
it there.  If anything differs from the output folder, the staging folder is
completed into the full new tree (unchanged files keep their modification
times; tool caches are carried over) and the two folders are exchanged in one
step: ``renameat2(RENAME_EXCHANGE)`` on Linux, so at every instant the output
path holds either the old complete tree or the new one.  Where that call is
missing, the old tree is renamed aside and the new one renamed in; a run
killed between the two renames leaves the old tree under a fixed name, and
the next run puts it back before anything else.

Every run holds an exclusive lock on the output's parent folder while it
stages and swaps, so it may remove every staging folder it finds there: they
are litter from runs that were killed.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
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
STAGE_PREFIX = ".generated-staging-"
# The old tree of an interrupted two-rename swap (the fallback without RENAME_EXCHANGE).
PREVIOUS_PREFIX = STAGE_PREFIX + "previous-"
RENAME_EXCHANGE = 2
AT_FDCWD = -100


class OutputError(Exception):
    """The rendered output is unusable (it does not compile, or formatting failed)."""


def _checkpoint(step: str) -> None:
    """Called before every change to the output side of the file system; a no-op.

    Tests replace it to stop a run at a chosen step and kill it there.
    """


def _ruff(args: list[str], cwd: Path) -> None:
    cmd = [sys.executable, "-m", "ruff", *args]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise OutputError(f"ruff {' '.join(args)} failed:\n{proc.stdout}{proc.stderr}")


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


@contextmanager
def locked(out: Path) -> Iterator[None]:
    """Hold an exclusive lock on the output's parent folder (created if missing)."""
    parent = out.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _previous(out: Path) -> Path:
    return out.parent / f"{PREVIOUS_PREFIX}{out.name}"


def recover(out: Path) -> list[str]:
    """Finish what a killed run left behind; call with the lock held.

    An interrupted two-rename swap is rolled back (the old tree returns to
    ``out``), then every staging folder beside the output is removed.  Returns
    the names removed or restored.
    """
    out = out.resolve()
    done: list[str] = []
    previous = _previous(out)
    if previous.is_dir() and not out.exists():
        _checkpoint("rollback")
        os.rename(previous, out)
        done.append(previous.name)
    for path in sorted(out.parent.iterdir()):
        if path.name.startswith(STAGE_PREFIX) and not path.is_symlink():
            _checkpoint("litter")
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
            done.append(path.name)
    return done


def render_to_stage(
    files: dict[str, str], parent: Path, verbatim: dict[str, bytes] | None = None
) -> Path:
    """Write ``files`` into a fresh staging folder beside the output and format them.

    ``verbatim`` files (the hand-written ones) are written after the formatting, as they are.
    """
    parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=STAGE_PREFIX, dir=parent))
    try:
        for rel, text in files.items():
            path = stage / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode("utf-8"))
        format_tree(stage)
        for rel, data in (verbatim or {}).items():
            path = stage / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return stage


def _skipped(rel: tuple[str, ...]) -> bool:
    return bool(CACHES.intersection(rel)) or any(p.endswith(".egg-info") for p in rel)


def read_tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (caches left out), by relative path."""
    if not root.is_dir():
        return {}
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).parts
        if path.is_file() and not _skipped(rel) and path.suffix != ".pyc":
            out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


def diff_trees(stage: Path, out: Path) -> list[str]:
    """Files that differ between a staged render and the output folder."""
    new, old = read_tree(stage), read_tree(out)
    return sorted(k for k in set(new) | set(old) if new.get(k) != old.get(k))


def _cache_dirs(root: Path) -> list[Path]:
    """The cache folders in ``root``, outermost only."""
    found: list[Path] = []
    for dirpath, dirnames, _ in os.walk(root):
        for name in sorted(dirnames):
            if name in CACHES or name.endswith(".egg-info"):
                found.append(Path(dirpath) / name)
        dirnames[:] = sorted(d for d in dirnames if d not in CACHES and not d.endswith(".egg-info"))
    return found


def _complete(stage: Path, out: Path, changed: list[str]) -> None:
    """Make the staging folder the full new tree: old times on unchanged files, caches moved."""
    same = set(read_tree(stage)) - set(changed)
    for rel in sorted(same):
        st = (out / rel).stat()
        os.utime(stage / rel, ns=(st.st_atime_ns, st.st_mtime_ns))
    for cache in _cache_dirs(out):
        target = stage / cache.relative_to(out)
        if target.parent.is_dir() and not target.exists():
            _checkpoint("move cache")
            os.rename(cache, target)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders in one step; False where the system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    _checkpoint("exchange")
    if fn(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(a))


def _two_renames(stage: Path, out: Path) -> None:
    """The fallback swap; ``recover`` rolls it back if it is cut between the renames."""
    previous = _previous(out)
    _checkpoint("rename aside")
    os.rename(out, previous)
    _checkpoint("rename in")
    os.rename(stage, out)
    _checkpoint("remove old")
    shutil.rmtree(previous)


def swap_in(stage: Path, out: Path, *, exchange: bool = True) -> list[str]:
    """Make ``out`` the tree in ``stage`` in one step; return the files that changed.

    ``stage`` is consumed.  Call with the lock held.  ``exchange=False`` forces
    the two-rename fallback (for tests).
    """
    stage, out = stage.resolve(), out.absolute()
    changed = diff_trees(stage, out)
    if not changed:
        shutil.rmtree(stage)
        return []
    if not out.exists():
        _checkpoint("rename in")
        os.rename(stage, out)
        return changed
    out = out.resolve()
    _complete(stage, out, changed)
    if exchange and _exchange(stage, out):
        _checkpoint("remove old")
        shutil.rmtree(stage)  # now the old tree
    else:
        _two_renames(stage, out)
    return changed


def write_text_atomic(path: Path, text: str) -> None:
    """Replace one file in one step (a temporary file beside it, then ``os.replace``)."""
    fd, tmp = tempfile.mkstemp(prefix=f"{STAGE_PREFIX}{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8"))
        _checkpoint("replace file")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
