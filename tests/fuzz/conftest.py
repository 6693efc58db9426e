"""Hypothesis profiles for the fuzz targets.

``make test`` runs each target with the ``ci`` profile (a few dozen examples);
``make fuzz`` selects ``fuzz`` (HYPOTHESIS_PROFILE=fuzz, at least 2,000 examples
per target) and prints each target's statistics.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from hypothesis import HealthCheck, settings

_COMMON = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}
settings.register_profile("ci", max_examples=40, derandomize=True, **_COMMON)  # type: ignore[arg-type]
settings.register_profile("fuzz", max_examples=2000, **_COMMON)  # type: ignore[arg-type]
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The schema fuzzer's counts: the answers it got, by route and kind."""
    for name, module in list(sys.modules.items()):
        counts = getattr(module, "COUNTS", None) if name.endswith("test_fuzz_schema") else None
        if counts:
            terminalreporter.write_line(f"schema fuzzing: {sum(counts.values())} requests")
            for key, count in sorted(counts.items()):
                terminalreporter.write_line(f"  {key}: {count}")
