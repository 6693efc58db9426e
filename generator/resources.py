"""Files the generator ships: the base spec and the license.

In the repository they sit beside the ``generator`` folder; in an installed
``responses_stream_generator`` they are inside the package.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


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
