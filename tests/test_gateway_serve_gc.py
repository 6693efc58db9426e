"""``serve`` freezes what its start-up made before it serves (see ``serve.settle``), in
one process and in each worker: the collector's full passes under load then scan only
what the requests made; its young generation is collected less often."""

from __future__ import annotations

import json
import subprocess
import sys

from responses_stream._runtime.gateway import serve

PROBE = """
import gc, json, os, sys
start = gc.get_freeze_count()  # not 0 on some interpreters (375 on CPython 3.12.1)
import uvicorn
from responses_stream._runtime.gateway import serve

seen = {"start": start}

def run(app, **settings):
    seen["frozen"] = gc.get_freeze_count()
    seen["young"] = gc.get_threshold()[0]
    seen["target"] = app if isinstance(app, str) else type(app).__name__

uvicorn.run = run
options = serve.ServeOptions(upstream="http://127.0.0.1:9/v1", store="memory:",
                             log_level="warning")
if sys.argv[1] == "one":
    serve.run(options)
else:
    os.environ[serve.OPTIONS_ENV] = json.dumps({"upstream": options.upstream,
                                                "store": "memory:"})
    before = gc.get_freeze_count()
    serve.worker_app()
    seen["frozen"], seen["before"] = gc.get_freeze_count(), before
    seen["young"] = gc.get_threshold()[0]
print(json.dumps(seen))
"""


def _probe(mode: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, mode], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    seen: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return seen


def _frozen_since_start(seen: dict[str, object]) -> int:
    frozen, start = seen["frozen"], seen["start"]
    assert isinstance(frozen, int) and isinstance(start, int)
    return frozen - start


def test_one_process_serves_with_its_start_up_frozen() -> None:
    seen = _probe("one")
    assert seen["target"] == "Starlette"
    assert _frozen_since_start(seen) > 10_000
    assert seen["young"] == serve.YOUNG_THRESHOLD != 700


def test_a_worker_freezes_its_start_up_once_its_app_is_built() -> None:
    seen = _probe("worker")
    assert seen["before"] == seen["start"]  # nothing frozen until the app is built
    assert _frozen_since_start(seen) > 10_000
    assert seen["young"] == serve.YOUNG_THRESHOLD
