"""``make generate`` from scratch: the generator rendering the base spec into an empty
folder, as a process (imports included), the median of a few runs."""

from __future__ import annotations

import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from .harness import ROOT, Report, Target, python

SECTION = "make generate"


def run(report: Report, rounds: int) -> None:
    print(f"\n== {SECTION} from scratch ==")
    times = []
    for _ in range(rounds):
        out = Path(tempfile.mkdtemp(prefix="bench-generate-")) / "generated"
        t0 = time.perf_counter()
        subprocess.run(
            [python(), "-m", "generator", "generate", "--out", str(out)],
            cwd=ROOT,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        times.append(time.perf_counter() - t0)
        shutil.rmtree(out.parent)
    med = report.add(SECTION, "base spec, empty output folder", {"ours": times}, "s")
    report.targets.append(
        Target(SECTION, "base spec, empty output folder", "seconds", med["ours"], "<=", 5)
    )
    print(f"  median {statistics.median(times):.2f} s of {rounds}")
