"""``python -m benchmarks.peak OUT -m MODULE ARGS...``: run MODULE as ``python -m`` would,
then write its peak resident set (bytes) to OUT.

The peak is the process's own high-water mark (``VmHWM``), which ``exec`` starts afresh;
``getrusage`` of a child would count the pages it shared with its parent before ``exec``.
"""

from __future__ import annotations

import atexit
import runpy
import sys
from pathlib import Path


def high_water() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main() -> None:
    out, flag, module, *args = sys.argv[1:]
    assert flag == "-m", "usage: python -m benchmarks.peak OUT -m MODULE ARGS..."
    atexit.register(lambda: Path(out).write_text(str(high_water())))
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
