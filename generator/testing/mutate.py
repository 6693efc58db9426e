"""Mutation run over the generated emitters: do the generated tests catch wrong code?

``python -m generator.testing.mutate`` parses ``responses_stream/_shared/emitters.py``
(the emitters every dialect shares) of the generated package with ``ast``, makes
mutants one operator at a time, and runs the generated tests of the item each
mutant touches against it, in every dialect (``--dialect`` picks some), in a
temporary copy of the package (the package itself is never written).

Operators: integer constants (+1, 0), booleans flipped, strings and bytes
changed, comparisons and boolean operators flipped, ``not`` dropped,
augmented assignments removed, statements deleted (calls such as
``events.append(...)`` and attribute assignments), keyword arguments removed
or swapped with their neighbour, index expressions (``*.index``,
``*.output_index``, ``next(seq)``) replaced by 0.

A mutant is *killed* when the tests fail (or cannot even import it),
*survived* when they pass, a *timeout* when they run too long.  Mutants that
cannot change observable behaviour are classified as equivalent, with the
reason, and left out of the kill share (they are still counted and listed).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time
import typing
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .mutants import Site, baseline_source, find_sites, mutant_source

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ROOT / "generated"
DIALECTS = ("openai", "openresponses")
MODULE = "_shared"  # the subpackage whose emitters.py every dialect shares
# Tests run for code outside any item emitter (the envelope, module constants).
ENVELOPE_ITEMS = ("message", "function_call", "reasoning")
DEFAULT_SAMPLE = 150
DEFAULT_SEED = 20260424
DEFAULT_TIMEOUT = 300.0


@dataclass
class Result:
    """What became of one mutant, and the tests that ran against it."""

    site: Site
    outcome: str  # killed, survived, timeout, equivalent
    seconds: float
    tests: list[str] = field(default_factory=list)


# -- which tests to run ---------------------------------------------------------------
def item_classes(source: str) -> dict[str, str]:
    """Emitter class name -> item type, and part-state classes -> their item's type."""
    tree = ast.parse(source)
    out: dict[str, str] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        for stmt in node.body:
            if (
                isinstance(stmt, ast.Assign)
                and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id == "item_type"
                and isinstance(stmt.value, ast.Constant)
            ):
                out[node.name] = str(stmt.value.value)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name not in out:
            for name, kind in list(out.items()):
                if node.name.startswith(f"_{name}"):
                    out[node.name] = kind
    return out


def module_name_users(source: str, classes: dict[str, str]) -> dict[str, set[str]]:
    """Module-level constant -> item types whose classes use it."""
    tree = ast.parse(source)
    names = {
        t.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    users: dict[str, set[str]] = {n: set() for n in names}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name in classes:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and sub.id in users:
                    users[sub.id].add(classes[node.name])
    return users


def tests_for(site: Site, source: str, classes: dict[str, str], tree: ast.Module) -> list[str]:
    """The generated tests that exercise the code a site is in."""
    factories = {k.replace(":", "_"): k for k in classes.values()}
    if site.owner in classes:
        kinds = {classes[site.owner]}
    elif site.function in factories:  # a factory method of the stream: its item's tests
        kinds = {factories[site.function]}
    else:
        kinds = set()
        if not site.owner:
            for node in tree.body:
                if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
                    continue
                if not node.lineno <= site.line <= (node.end_lineno or node.lineno):
                    continue
                # An entry of a table of classes: the tests of that entry's item.
                if isinstance(node.value, ast.Dict):
                    for k, v in zip(node.value.keys, node.value.values, strict=True):
                        if k is not None and k.lineno <= site.line <= (v.end_lineno or 0):
                            if isinstance(v, ast.Name) and v.id in classes:
                                kinds.add(classes[v.id])
                if not kinds:
                    users = module_name_users(source, classes)
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for t in targets:
                        if isinstance(t, ast.Name):
                            kinds |= users.get(t.id, set())
        if not kinds:
            kinds = set(ENVELOPE_ITEMS)
    return [f"tests/test_item_{k.replace(':', '_')}.py" for k in sorted(kinds)]


# -- running -------------------------------------------------------------------------
_WORKDIR: Path | None = None
_SOURCES: dict[str, str] = {}


def _preload() -> None:
    """Import what every child needs except the package itself, once per worker."""
    sys.dont_write_bytecode = True
    import _pytest.assertion  # noqa: F401
    import _pytest.python  # noqa: F401
    import jsonschema  # noqa: F401
    import msgspec  # noqa: F401
    import openai.types.responses  # noqa: F401
    import pytest  # noqa: F401
    from openai.types.responses import ResponseStreamEvent

    # The SDK builds its validators on first use: build them once, here.
    for cls in typing.get_args(typing.get_args(ResponseStreamEvent)[0]):
        cls.model_rebuild()
        cls.__pydantic_validator__.validate_json  # noqa: B018


def _init_worker(package: str, sources: dict[str, str], base: str) -> None:
    global _WORKDIR
    _preload()
    _WORKDIR = Path(tempfile.mkdtemp(prefix="worker-", dir=base))
    shutil.copytree(package, _WORKDIR / "pkg", ignore=shutil.ignore_patterns("__pycache__"))
    _SOURCES.update(sources)


def _run_tests(
    workdir: Path, tests: list[str], dialects: tuple[str, ...], timeout: float
) -> tuple[str, float]:
    """Fork a child that runs pytest on ``tests`` in ``workdir``: killed, survived or timeout."""
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 3
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            os.chdir(workdir)
            sys.path[:0] = [str(workdir), str(workdir / "tests")]
            import pytest

            code = int(
                pytest.main(
                    [
                        *("-x", "-q", "--assert=plain", "-p", "no:cacheprovider"),
                        *("-p", "no:hypothesispytest", "-k", " or ".join(dialects), *tests),
                    ],
                )
            )
        finally:
            os._exit(code)
    deadline = start + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout", time.monotonic() - start
        time.sleep(0.02)
    code = os.waitstatus_to_exitcode(status)
    elapsed = time.monotonic() - start
    if code == 0:
        return "survived", elapsed
    if code == 5:
        return "error: no tests collected", elapsed
    return "killed", elapsed


def _mutant_job(site: Site, tests: list[str], dialects: tuple[str, ...], timeout: float) -> Result:
    assert _WORKDIR is not None
    pkg = _WORKDIR / "pkg"
    target = pkg / "responses_stream" / site.module / "emitters.py"
    target.write_text(mutant_source(_SOURCES[site.module], site.number), encoding="utf-8")
    try:
        outcome, seconds = _run_tests(pkg, tests, dialects, timeout)
    finally:
        target.write_text(_SOURCES[site.module], encoding="utf-8")
    return Result(site, outcome, seconds, tests)


def _baseline_job(module: str, tests: list[str], dialects: tuple[str, ...], timeout: float) -> str:
    assert _WORKDIR is not None
    pkg = _WORKDIR / "pkg"
    target = pkg / "responses_stream" / module / "emitters.py"
    target.write_text(baseline_source(_SOURCES[module]), encoding="utf-8")
    try:
        outcome, _ = _run_tests(pkg, tests, dialects, timeout)
    finally:
        target.write_text(_SOURCES[module], encoding="utf-8")
    return outcome


def select(sites: list[Site], sample: int | None, seed: int) -> list[Site]:
    """A deterministic sample (all sites when ``sample`` is None or large enough)."""
    if sample is None or sample >= len(sites):
        return list(sites)
    rng = random.Random(seed)
    chosen = rng.sample(range(len(sites)), sample)
    return [sites[i] for i in sorted(chosen)]


def run(
    package: Path,
    sample: int | None,
    seed: int,
    jobs: int,
    timeout: float,
    dialects: tuple[str, ...],
    progress: bool = True,
) -> dict[str, Any]:
    """Run the tests against each selected mutant, in parallel; the results in site order."""
    source = (package / "responses_stream" / MODULE / "emitters.py").read_text(encoding="utf-8")
    sources = {MODULE: source}
    all_sites = find_sites(MODULE, source)
    chosen = select(all_sites, sample, seed)
    classes, tree = item_classes(source), ast.parse(source)
    plans = {(s.module, s.number): tests_for(s, source, classes, tree) for s in chosen}
    started = time.monotonic()
    results: list[Result] = []
    with (
        tempfile.TemporaryDirectory(prefix="mutate-") as base,
        ProcessPoolExecutor(
            max_workers=jobs, initializer=_init_worker, initargs=(str(package), sources, base)
        ) as pool,
    ):
        every_test = sorted({t for ts in plans.values() for t in ts})
        outcome = pool.submit(_baseline_job, MODULE, every_test, dialects, timeout).result()
        if outcome != "survived":
            raise SystemExit(f"the unmutated emitters fail the generated tests: {outcome}")
        live = [s for s in chosen if not s.equivalent]
        for s in chosen:
            if s.equivalent:
                results.append(Result(s, "equivalent", 0.0, plans[(s.module, s.number)]))
        futures = [
            pool.submit(_mutant_job, s, plans[(s.module, s.number)], dialects, timeout)
            for s in live
        ]
        for i, fut in enumerate(futures, 1):
            res = fut.result()
            results.append(res)
            if progress:
                print(
                    f"[{i}/{len(futures)}] {res.outcome:8} {res.seconds:5.1f}s "
                    f"{res.site.module}/emitters.py:{res.site.line} {res.site.detail}",
                    file=sys.stderr,
                    flush=True,
                )
    return report(all_sites, results, sample, seed, time.monotonic() - started)


def report(
    all_sites: list[Site],
    results: list[Result],
    sample: int | None,
    seed: int,
    seconds: float,
) -> dict[str, Any]:
    """The run's figures: the kill share and every mutant that survived or timed out."""
    counts = Counter(r.outcome for r in results)
    live = counts["killed"] + counts["survived"] + counts["timeout"]
    killed = counts["killed"] + counts["timeout"]
    results.sort(key=lambda r: (r.site.module, r.site.number))
    return {
        "sites": len(all_sites),
        "sampled": len(results),
        "sample": sample,
        "seed": seed,
        "seconds": round(seconds, 1),
        "counts": dict(sorted(counts.items())),
        "kill_share": round(killed / live, 4) if live else 1.0,
        "survivors": [_describe(r) for r in results if r.outcome == "survived"],
        "timeouts": [_describe(r) for r in results if r.outcome == "timeout"],
        "equivalent": [
            {**_describe(r), "reason": r.site.equivalent}
            for r in results
            if r.outcome == "equivalent"
        ],
        "errors": [_describe(r) for r in results if r.outcome.startswith("error")],
    }


def _describe(r: Result) -> dict[str, Any]:
    s = r.site
    return {
        "where": f"generated/responses_stream/{s.module}/emitters.py:{s.line}",
        "in": f"{s.owner}.{s.function}" if s.owner else s.function or "<module>",
        "mutation": f"{s.operator}: {s.detail}",
        "tests": r.tests,
    }


def format_report(rep: dict[str, Any]) -> str:
    """The report as text, for the terminal."""
    c = rep["counts"]
    lines = [
        f"mutation sites: {rep['sites']}, sampled: {rep['sampled']} (seed {rep['seed']})",
        f"killed: {c.get('killed', 0)}, survived: {c.get('survived', 0)}, "
        f"timeouts: {c.get('timeout', 0)}, equivalent: {c.get('equivalent', 0)}",
        f"kill share of non-equivalent mutants: {rep['kill_share']:.1%} "
        f"(timeouts count as killed) in {rep['seconds']}s",
    ]
    if rep["survivors"]:
        lines.append("survivors:")
        lines += [f"  {d['where']} ({d['in']}) {d['mutation']}" for d in rep["survivors"]]
    if rep["timeouts"]:
        lines.append("timeouts:")
        lines += [f"  {d['where']} ({d['in']}) {d['mutation']}" for d in rep["timeouts"]]
    if rep["equivalent"]:
        lines.append("equivalent (not counted in the share):")
        reasons = Counter(d["reason"] for d in rep["equivalent"])
        lines += [f"  {n} x {reason}" for reason, n in sorted(reasons.items())]
        lines += [f"    {d['where']} {d['mutation']}" for d in rep["equivalent"]]
    if rep["errors"]:
        lines.append("errors:")
        lines += [f"  {d['where']} {d['mutation']}" for d in rep["errors"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """The ``python -m generator.testing.mutate`` command line."""
    ap = argparse.ArgumentParser(prog="python -m generator.testing.mutate", description=__doc__)
    ap.add_argument("--package", type=Path, default=GENERATED, help="the generated folder")
    ap.add_argument("--sample", type=int, default=DEFAULT_SAMPLE, help="mutants to run")
    ap.add_argument("--all", action="store_true", help="run every mutant, no sampling")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of the sample")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per mutant")
    ap.add_argument(
        "--dialect", action="append", choices=DIALECTS, help="whose tests judge: default both"
    )
    ap.add_argument("--json", type=Path, help="also write the report as JSON here")
    ap.add_argument("--min-kill-share", type=float, default=0.0, help="exit 1 below this")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    args = ap.parse_args(argv)
    rep = run(
        args.package.resolve(),
        None if args.all else args.sample,
        args.seed,
        max(1, args.jobs),
        args.timeout,
        tuple(args.dialect or DIALECTS),
        progress=not args.quiet,
    )
    print(format_report(rep))
    if args.json:
        args.json.write_text(json.dumps(rep, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 1 if rep["kill_share"] < args.min_kill_share else 0


if __name__ == "__main__":
    sys.exit(main())
