"""Adding a provider extension item type needs a YAML file and no generator change."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

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
