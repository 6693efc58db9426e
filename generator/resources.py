"""Files the generator ships: the base spec, the license and the hand-written files.

In the repository they sit beside the ``generator`` folder (the hand-written
files in ``generated/``, the package they ship in); in an installed
``responses_stream_generator`` they are inside the package (the hand-written
files under ``package/``).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Paths of the output written by hand, not rendered: a folder stands for every
# file below it.  The generator copies them verbatim into each package it writes.
HAND_WRITTEN = ("responses_stream/_runtime", "responses_stream_pytest.py", "tests/_support.py")
_SKIP_PARTS = frozenset(("__pycache__", ".mypy_cache", ".ruff_cache"))


def _shipped(name: str) -> Path:
    for base in (HERE, HERE.parent):
        if (base / name).exists():
            return base / name
    raise FileNotFoundError(f"the generator's {name} is missing from {HERE} and {HERE.parent}")


def base_spec() -> Path:
    """The base spec folder: the full catalogue of item types."""
    return _shipped("spec")


def is_installed_spec(spec: Path) -> bool:
    """Whether ``spec`` is the copy inside an installed package (never written to)."""
    return spec.resolve() == (HERE / "spec").resolve()


def license_text() -> str:
    """The Apache-2.0 license of the project and of every package it generates."""
    return _shipped("LICENSE").read_text(encoding="utf-8")


def package_root() -> Path:
    """The folder that holds the hand-written files, laid out as in the output."""
    installed = HERE / "package"
    return installed if installed.is_dir() else HERE.parent / "generated"


def hand_written() -> dict[str, bytes]:
    """Every hand-written file of the output, by its path relative to the output folder."""
    root = package_root()
    out: dict[str, bytes] = {}
    for rel in HAND_WRITTEN:
        path = root / rel
        if path.is_file():
            out[rel] = path.read_bytes()
            continue
        if not path.is_dir():
            raise FileNotFoundError(f"the hand-written {rel} is missing from {root}")
        for file in sorted(path.rglob("*.py")):
            if not _SKIP_PARTS.intersection(file.relative_to(root).parts):
                out[file.relative_to(root).as_posix()] = file.read_bytes()
    return out


@functools.cache
def runtime_constant(module: str, name: str) -> object:
    """A literal constant of a runtime module (read from its source, never imported)."""
    path = package_root() / "responses_stream" / "_runtime" / module
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                assert node.value is not None
                return ast.literal_eval(node.value)
    raise LookupError(f"{name} is not a constant of the runtime's {module}")


def version() -> str:
    """The project's version, written once, in the runtime's ``version.py``."""
    value = runtime_constant("version.py", "__version__")
    assert isinstance(value, str)
    return value
