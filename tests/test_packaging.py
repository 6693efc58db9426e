"""Both packages build, install and run as releases, and building leaves the tree as it was.

The generator's wheel installs ``responses_stream_generator`` (never a top-level
``generator``) with the base spec inside it; the runtime's wheel declares
Apache-2.0 and pins nothing.  The installed generator, given an overlay folder of
item files, makes a package whose generated tests pass.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from responses_stream._runtime.version import __version__

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"
# What a build may not touch is everything but the caches and the virtualenvs.
IGNORED = {".git", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".hypothesis"}


def tree(root: Path) -> dict[str, int]:
    """Every file under ``root`` (caches and virtualenvs left out), with its size."""
    out: dict[str, int] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in IGNORED and not d.startswith(".venv")]
        for name in filenames:
            path = Path(dirpath) / name
            out[path.relative_to(root).as_posix()] = path.stat().st_size
    return out


def run(*args: str | Path, **kw: object) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    assert proc.returncode == 0, f"{args}\n{proc.stdout}\n{proc.stderr}"
    return proc  # type: ignore[no-any-return]


def wheel(source: Path, out: Path) -> Path:
    run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--quiet",
        "--no-deps",
        "--no-build-isolation",
        "-w",
        out,
        source,
    )
    (found,) = out.glob("*.whl")
    return found


def metadata(whl: Path) -> tuple[list[str], object, str]:
    """The wheel's file names, its parsed METADATA and its entry_points.txt."""
    with zipfile.ZipFile(whl) as z:
        names = z.namelist()
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        return names, Parser().parsestr(z.read(info).decode()), z.read(points).decode()


@pytest.fixture(scope="module")
def generator_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    before = tree(ROOT)
    whl = wheel(ROOT, tmp_path_factory.mktemp("gen-wheel"))
    assert tree(ROOT) == before, "building the generator's wheel changed the tree"
    return whl


def test_the_generator_wheel(generator_wheel: Path) -> None:
    names, meta, points = metadata(generator_wheel)
    tops = {n.split("/", 1)[0] for n in names}
    assert "generator" not in tops and "responses_stream_generator" in tops, tops
    pkg = "responses_stream_generator"
    for path in (
        "spec/items/message.yaml",
        "spec/vendor/PROVENANCE.md",
        "templates/emitters.py.j2",
        "package/responses_stream/_runtime/version.py",
        "package/responses_stream_pytest.py",
        "package/tests/_support.py",
        "LICENSE",
    ):
        assert f"{pkg}/{path}" in names, path
    assert meta["Name"] == "responses-stream-generator"  # type: ignore[index]
    assert meta["Version"] == __version__  # type: ignore[index]
    assert meta["License-Expression"] == "Apache-2.0"  # type: ignore[index]
    assert "responses-stream-generate = responses_stream_generator.cli:main" in points


def test_the_runtime_wheel_and_sdist(tmp_path: Path) -> None:
    before = tree(ROOT / "generated")
    names, meta, points = metadata(wheel(ROOT / "generated", tmp_path / "wheel"))
    tops = {n.split("/", 1)[0] for n in names}
    assert "generator" not in tops and "responses_stream" in tops, tops
    assert "responses_stream/py.typed" in names
    assert "responses_stream/_vendor/openresponses-openapi-2026-04-24.json" in names
    assert not any(n.startswith(("tests/", "docs/")) for n in names)
    assert meta["Version"] == __version__  # type: ignore[index]
    assert meta["License-Expression"] == "Apache-2.0"  # type: ignore[index]
    requires = meta.get_all("Requires-Dist")  # type: ignore[attr-defined]
    assert requires and not [r for r in requires if "==" in r.split(";")[0]], requires
    assert any(r.startswith("msgspec") for r in requires)
    assert meta.get_all("Classifier") and meta.get_all("Project-URL")  # type: ignore[attr-defined]
    assert "responses-stream" in (meta.get_payload() or "")  # type: ignore[attr-defined]
    assert "responses-stream = responses_stream._runtime.cli:main" in points
    # python -m build: an sdist and a wheel, nothing left behind
    dist = tmp_path / "dist"
    run(sys.executable, "-m", "build", "--no-isolation", "--outdir", dist, ROOT / "generated")
    (sdist,) = dist.glob("*.tar.gz")
    assert len(list(dist.glob("*.whl"))) == 1
    with tarfile.open(sdist) as tar:
        members = {m.name.split("/", 1)[1] for m in tar.getmembers() if "/" in m.name}
    for path in ("LICENSE", "README.md", "pyproject.toml", "responses_stream/__init__.py"):
        assert path in members, path
    assert any(m.startswith("tests/test_item_") for m in members)
    assert tree(ROOT / "generated") == before, "building changed generated/"


def test_the_installed_generator_takes_an_overlay(generator_wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    run(
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-deps",
        "--target",
        site,
        generator_wheel,
    )
    overlay = tmp_path / "my items"
    overlay.mkdir()
    # any file names: the kind key says what a file is
    shutil.copy(FIXTURES / "acme_search_result.yaml", overlay / "hits.yaml")
    shutil.copy(FIXTURES / "acme_trace_steps.yaml", overlay / "Trace Steps.yaml")
    env = {**os.environ, "PYTHONPATH": str(site)}
    work = tmp_path / "work"
    work.mkdir()
    opts = {"cwd": work, "env": env}
    missing = subprocess.run(
        [sys.executable, "-c", "import generator"], capture_output=True, **opts
    )  # type: ignore[call-overload]
    assert missing.returncode != 0 and b"No module named 'generator'" in missing.stderr
    script = site / "bin" / "responses-stream-generate"
    version = run(script, "--version", **opts)
    assert version.stdout.strip() == f"responses-stream-generate {__version__}"
    installed = tree(site)
    out = work / "pkg"
    run(script, "generate", "--overlay", overlay, "--out", out, **opts)
    assert tree(site) == installed, "the generator wrote into its own install"
    assert (out / "LICENSE").is_file() and (out / "README.md").is_file()
    for stem in ("acme_search_result", "acme_trace"):
        assert (out / "tests" / f"test_item_{stem}.py").is_file(), stem
        assert (out / "docs" / "items" / f"{stem}.md").is_file(), stem
    header = (out / "tests" / "test_item_acme_trace.py").read_text().splitlines()[0]
    assert "my items/Trace Steps.yaml" in header, header
    tests = run(
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        out / "tests" / "test_item_acme_search_result.py",
        out / "tests" / "test_item_acme_trace.py",
        cwd=work,
    )
    assert " passed" in tests.stdout and "failed" not in tests.stdout, tests.stdout
    # the same command without the overlay is the base catalogue, as committed
    run(script, "check", "--out", ROOT / "generated", **opts)
