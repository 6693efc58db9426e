"""Adding a provider extension item type needs a YAML file and no generator change."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from repo_copy import copy_hand_written

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).parent / "fixtures" / "acme_search_result.yaml"

DRIVE = """
import json
from responses_stream import DIALECTS, CountingIds, openai, openresponses
for name in ("openai", "openresponses"):
    d = DIALECTS[name]
    r = d.emitter(ids=CountingIds(), model="m")
    enc = d.encoder()
    item = r.acme_search_result(query="q")
    events = r.created() + r.in_progress() + item.open()
    events += item.delta("hit 1; ") + item.delta("hit 2") + item.done() + r.completed()
    payloads = [json.loads(enc.encode(e).split(b"data: ", 1)[1]) for e in events]
    types = [p["type"] for p in payloads]
    assert types[3:5] == ["acme:search_result.delta"] * 2, types
    assert types[5] == "acme:search_result.done", types
    assert payloads[5]["hits"] == "hit 1; hit 2"
    final = payloads[-1]["response"]["output"][0]
    assert final["type"] == "acme:search_result" and final["hits"] == "hit 1; hit 2"
    assert final["id"].startswith("sr_") and final["status"] == "completed"
    assert [p["sequence_number"] for p in payloads] == list(range(len(payloads)))
print("driven")
"""


def test_acme_extension_generates_imports_and_passes_its_generated_tests(tmp_path: Path) -> None:
    spec = tmp_path / "spec"
    out = tmp_path / "out"
    shutil.copytree(ROOT / "spec", spec)
    shutil.copy(FIXTURE, spec / "items" / FIXTURE.name)
    gen = subprocess.run(
        [sys.executable, "-m", "generator", "generate", "--spec", str(spec), "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert gen.returncode == 0, gen.stderr
    assert (out / "tests" / "test_item_acme_search_result.py").is_file()
    assert (out / "docs" / "items" / "acme_search_result.md").is_file()
    drive = subprocess.run([sys.executable, "-c", DRIVE], cwd=out, capture_output=True, text=True)
    assert drive.returncode == 0 and "driven" in drive.stdout, drive.stderr
    tests = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            str(out / "tests" / "test_item_acme_search_result.py"),
        ],
        cwd=out,
        capture_output=True,
        text=True,
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert " passed" in tests.stdout and "failed" not in tests.stdout


# The hand-written tests that read the catalogue (counts, item types, spec files):
# after the README's recipe they must pass with no change.
CATALOGUE_TESTS = [
    "tests/test_accumulate.py",
    "tests/test_catalogue.py",
    "tests/test_direct_api.py",
    "tests/test_validate.py",
    "generated/tests",
]


def test_the_readme_recipe_in_a_copy_of_the_repository(tmp_path: Path) -> None:
    """Two item files under any names (a text and a list accumulator): generate, then test.

    The copy holds the generator, the spec with the two files added, and the tests;
    its own ``generated/`` is rendered from them, and the catalogue-driven tests and
    every generated test run there unchanged.
    """
    repo = tmp_path / "repo"
    for part in ("generator", "spec", "tests"):
        shutil.copytree(
            ROOT / part, repo / part, ignore=shutil.ignore_patterns("__pycache__", ".hypothesis")
        )
    shutil.copy(ROOT / "pyproject.toml", repo / "pyproject.toml")
    shutil.copy(ROOT / "LICENSE", repo / "LICENSE")
    copy_hand_written(repo)
    items = repo / "spec" / "items"
    shutil.copy(FIXTURE, items / "search hits (acme).yaml")
    (items / "acme").mkdir()
    shutil.copy(FIXTURE.parent / "acme_trace_steps.yaml", items / "acme" / "steps.yaml")
    gen = subprocess.run(
        [sys.executable, "-m", "generator", "generate"], cwd=repo, capture_output=True, text=True
    )
    assert gen.returncode == 0, gen.stderr
    for stem in ("acme_search_result", "acme_trace"):
        assert (repo / "generated" / "tests" / f"test_item_{stem}.py").is_file(), stem
    tests = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--junitxml={tmp_path / 'report.xml'}",
            *CATALOGUE_TESTS,
            # it adds the acme fixture itself
            "--deselect",
            "tests/test_direct_api.py::test_direct_api_drives_a_new_yaml_item_type",
        ],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    assert tests.returncode == 0, tests.stdout[-5000:] + tests.stderr[-2000:]
    report = (tmp_path / "report.xml").read_text(encoding="utf-8")
    for stem in ("acme_search_result", "acme_trace"):
        assert f'classname="generated.tests.test_item_{stem}"' in report, (
            stem
        )  # its generated tests ran
    assert "test_phase_statuses_agree_with_the_spec[acme:trace]" in report


def test_an_overlay_package_installs_its_test_extra_and_passes_its_tests(
    tmp_path: Path,
) -> None:
    """The path a user of the installed generator takes: their item in an overlay
    folder, the package generated, installed with its ``test`` extra into a fresh
    environment, and its own tests run there as its README says."""
    overlay = tmp_path / "my_items"
    overlay.mkdir()
    shutil.copy(FIXTURE, overlay / FIXTURE.name)
    out = tmp_path / "pkg"
    gen = subprocess.run(
        [
            sys.executable,
            "-m",
            "generator",
            "generate",
            "--overlay",
            str(overlay),
            "--out",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert gen.returncode == 0, gen.stderr
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert "pip install '.[test]'\npython -m pytest tests\n" in readme
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", ".[test]"],
        cwd=out,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stderr
    tests = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=out,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-3000:]
    assert (
        "test_item_acme_search_result.py"
        in subprocess.run(
            [
                str(python),
                "-m",
                "pytest",
                "--collect-only",
                "-q",
                "-p",
                "no:cacheprovider",
                "tests",
            ],
            cwd=out,
            capture_output=True,
            text=True,
            timeout=300,
        ).stdout
    )
