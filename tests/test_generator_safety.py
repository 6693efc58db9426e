"""The generator cannot be broken by its specs, nor by being killed.

- Generation is atomic as a whole tree: a run killed at any step of the swap
  leaves the old complete tree or the new complete tree, and the next run
  removes what the killed one left behind.
- File names and strings from the specs reach generated code only as escaped
  comments or literals; hostile ones are carried exactly, and never run.
- The names the generated code uses itself are the ones the checker refuses.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hostile_specs import MARKER, HostileItem, hostile_text
from repo_copy import copy_hand_written

from generator.compile import build_catalog
from generator.loader import load_dir
from generator.render import header
from generator.reserved import (
    GENERATED_BUILTINS,
    GENERATED_LOCALS,
    GENERATED_MODULE_NAMES,
    GENERATED_NAMES,
    PACKAGE_NAMES,
    PART_STATE_MEMBERS,
)
from generator.writer import STAGE_PREFIX, locked, recover

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "acme_search_result.yaml"
CACHE_FILES = ("responses_stream/__pycache__/x.cpython.pyc", ".mypy_cache/3.11/x.json")

# Runs the real CLI in a child process, with the render replaced by a rendering
# saved beforehand (the same files; it only saves the slow step) and the
# writer's checkpoint hook stopping the run at step STOP, where it waits to be
# killed.  STOP = -1 runs to the end; the steps seen are printed.
WRAPPER = """
import json, sys, time
from pathlib import Path
import generator.cli as cli
import generator.writer as writer
files = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
cli.render = lambda spec, overlays=(): files
stop = int(sys.argv[4])
steps = []
def checkpoint(step):
    steps.append(step)
    if len(steps) - 1 == stop:
        print("STOPPED", step, flush=True)
        time.sleep(3600)
writer._checkpoint = checkpoint
if sys.argv[5] == "renames":
    writer._exchange = lambda a, b: False
rc = cli.main(["generate", "--spec", sys.argv[2], "--out", sys.argv[3]])
print("STEPS", json.dumps(steps), flush=True)
sys.exit(rc)
"""
RENDER = """
import json, sys
from pathlib import Path
from generator.cli import render
Path(sys.argv[2]).write_text(json.dumps(render(Path(sys.argv[1]))), encoding="utf-8")
"""


def tree_hashes(root: Path) -> dict[str, str]:
    """The generated files of a tree, as the writer compares them (caches left out)."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and not {"__pycache__", ".mypy_cache"} & set(rel.parts):
            out[rel.as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def litter(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(STAGE_PREFIX))


class World:
    """An isolated copy of the generator (other edits cannot change it mid-test),
    an old and a new spec folder, their renderings and their reference trees."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.gen = base / "gen"
        shutil.copytree(
            ROOT / "generator", self.gen / "generator", ignore=shutil.ignore_patterns("__pycache__")
        )
        shutil.copy(ROOT / "LICENSE", self.gen / "LICENSE")  # shipped with the generator
        copy_hand_written(self.gen)  # and the hand-written files it copies into its output
        self.old_spec = base / "old" / "spec"
        self.new_spec = base / "new" / "spec"
        shutil.copytree(ROOT / "spec", self.old_spec)
        shutil.copytree(ROOT / "spec", self.new_spec)
        # The old tree has one more item (files that go away); the new one changes
        # a doc (files that change) and keeps the rest (files that stay the same).
        shutil.copy(FIXTURE, self.old_spec / "items" / FIXTURE.name)
        fc = self.new_spec / "items" / "function_call.yaml"
        fc.write_text(
            fc.read_text("utf-8").replace("A call to a function tool", "A new call"), "utf-8"
        )
        self.old_files = base / "old.json"
        self.new_files = base / "new.json"
        for spec, target in ((self.old_spec, self.old_files), (self.new_spec, self.new_files)):
            self.python("-c", RENDER, str(spec), str(target), check=True)
        self.old_tree = base / "ref_old" / "out"
        self.new_tree = base / "ref_new" / "out"
        self.wrapper(self.old_files, self.old_spec, self.old_tree, -1)
        self.wrapper(self.new_files, self.new_spec, self.new_tree, -1)
        self.old = tree_hashes(self.old_tree)
        self.new = tree_hashes(self.new_tree)
        assert self.old != self.new
        assert set(self.old) - set(self.new) and set(self.old) & set(self.new)

    def python(self, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([sys.executable, *args], cwd=self.gen, capture_output=True, text=True)
        if check:
            assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc

    def wrapper(self, files: Path, spec: Path, out: Path, stop: int, mode: str = "exchange") -> Any:
        args = ["-c", WRAPPER, str(files), str(spec), str(out), str(stop), mode]
        if stop < 0:
            proc = self.python(*args, check=True)
            line = proc.stdout.strip().splitlines()[-1]
            assert line.startswith("STEPS "), proc.stdout
            return json.loads(line[6:])
        child = subprocess.Popen(
            [sys.executable, *args], cwd=self.gen, stdout=subprocess.PIPE, text=True
        )
        assert child.stdout is not None
        line = child.stdout.readline()
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        return line

    def fresh_out(self, where: str) -> Path:
        """A copy of the old tree, with tool caches in it and litter beside it."""
        out = self.base / where / "out"
        if out.parent.exists():
            shutil.rmtree(out.parent)
        shutil.copytree(self.old_tree, out)
        for rel in CACHE_FILES:
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            (out / rel).write_text("cache", "utf-8")
        junk = out.parent / f"{STAGE_PREFIX}left-by-a-killed-run"
        (junk / "responses_stream").mkdir(parents=True)
        (junk / "responses_stream" / "half.py").write_text("x = (", "utf-8")
        return out


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("atomic"))


@pytest.mark.parametrize("mode", ["exchange", "renames"])
def test_a_run_killed_at_any_swap_step_leaves_the_old_or_the_new_tree(
    world: World, mode: str
) -> None:
    out = world.fresh_out(f"count-{mode}")
    same = "responses_stream/py.typed"
    assert world.old[same] == world.new[same]
    mtime = (out / same).stat().st_mtime_ns
    steps = world.wrapper(world.new_files, world.new_spec, out, -1, mode)
    assert tree_hashes(out) == world.new
    assert litter(out.parent) == []
    for rel in CACHE_FILES:  # tool caches are carried into the new tree
        assert (out / rel).read_text("utf-8") == "cache", rel
    assert (out / same).stat().st_mtime_ns == mtime  # an unchanged file keeps its time
    swap = {"exchange": "exchange", "renames": "rename in"}[mode]
    assert swap in steps and "remove old" in steps and "litter" in steps, steps
    seen = []
    for stop, step in enumerate(steps):
        out = world.fresh_out(f"kill-{mode}-{stop}")
        line = world.wrapper(world.new_files, world.new_spec, out, stop, mode)
        assert line.startswith("STOPPED"), line
        seen.append(step)
        state = tree_hashes(out) if out.exists() else None
        if state is None:
            # Only between the two renames of the fallback: the old tree waits aside
            # under a fixed name, and the next run puts it back first.
            assert mode == "renames" and step == "rename in", step
            with locked(out):
                recover(out)
            state = tree_hashes(out)
        assert state in (world.old, world.new), f"mixed tree after a kill at {step!r}"
        world.wrapper(world.new_files, world.new_spec, out, -1, mode)
        assert tree_hashes(out) == world.new
        assert litter(out.parent) == [], step
    assert seen == steps


def test_the_real_cli_killed_at_random_times(world: World) -> None:
    """``python -m generator generate`` itself, killed after random delays."""
    cmd = [
        sys.executable,
        "-m",
        "generator",
        "generate",
        "--spec",
        str(world.new_spec),
        "--out",
        "",
    ]
    out = world.fresh_out("cli")
    cmd[-1] = str(out)
    start = time.monotonic()
    world.python(*cmd[1:], check=True)
    full = time.monotonic() - start
    assert tree_hashes(out) == world.new
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    for i in range(3):
        out = world.fresh_out(f"cli-{i}")
        delay = rng.uniform(0.5, 1.0) * full
        child = subprocess.Popen(
            cmd[:-1] + [str(out)],
            cwd=world.gen,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            child.wait(delay)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGKILL)
            child.wait()
        assert tree_hashes(out) in (world.old, world.new), f"mixed tree after {delay:.2f}s"
        world.python(*cmd[1:-1], str(out), check=True)
        assert tree_hashes(out) == world.new
        assert litter(out.parent) == []


def test_a_file_name_is_one_escaped_comment_line() -> None:
    evil = "spec/items/x\nraise SystemExit(7)\r\u2028#\udcff.yaml"
    line = header(evil)
    assert line.count("\n") == 1 and line.endswith("\n")
    assert line[:-1].isprintable()
    assert "\\nraise SystemExit(7)\\r\\u2028#\\udcff" in line
    compile(line + "x = 1\n", "h", "exec")


def test_a_file_name_with_control_characters_is_refused(tmp_path: Path) -> None:
    spec = tmp_path / "spec"
    shutil.copytree(ROOT / "spec", spec)
    (spec / "items" / "x\nraise SystemExit(7)\n#.yaml").write_text(
        FIXTURE.read_text("utf-8"), "utf-8"
    )
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "generator", "generate", "--spec", str(spec), "--out", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr == (
        "spec/items/x\\nraise SystemExit(7)\\n#.yaml:1: -: the file name has control "
        "characters; rename the file\n1 spec error(s); nothing was written\n"
    )
    assert not out.exists() and litter(tmp_path) == []


def _emitter_names(tree: ast.Module) -> tuple[set[str], set[str], set[str]]:
    """Module-level names, and the names read or bound in functions, of an emitters module."""
    module: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            module |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Assign):
            module |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.ClassDef, ast.AnnAssign)):
            module.add(node.name if isinstance(node, ast.ClassDef) else ast.unparse(node.target))
    used: set[str] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef):
            for sub in ast.walk(fn):
                if isinstance(sub, ast.Name):
                    used.add(sub.id)
                elif isinstance(sub, ast.arg):
                    used.add(sub.arg)
    attrs: set[str] = set()
    for cls in ast.walk(tree):
        if isinstance(cls, ast.ClassDef) and cls.name.endswith("PartState"):
            for sub in ast.walk(cls):
                if isinstance(sub, ast.Attribute):
                    attrs.add(sub.attr)
                elif isinstance(sub, ast.FunctionDef):
                    attrs.add(sub.name)
    return module, used, attrs


def test_reserved_names_cover_every_name_the_generated_code_uses() -> None:
    """Each lowercase name the emitters read or bind that no spec gave is refused by the checker."""
    sources, errors = load_dir(ROOT / "spec")
    assert not errors
    cat = build_catalog(sources)
    spec_names = {f.name for i in cat.items.values() for f in i.fields}
    for m in [i.machine for i in cat.items.values()] + [p.machine for p in cat.parts.values()]:
        spec_names |= {p.name for t in m.transitions.values() for p in t.params}
    spec_names |= {p.name for t in cat.envelope.transitions.values() for p in t.params}
    spec_names |= {f.name for f in cat.response_fields}  # keyword arguments of ResponseEmitter
    acc_names = {a for p in cat.parts.values() for a in p.machine.context}
    part_fields = {f.name for p in cat.parts.values() for f in p.fields}
    for shared in ("_shared",):  # the emitters every dialect shares
        path = ROOT / "generated" / "responses_stream" / shared / "emitters.py"
        module, used, attrs = _emitter_names(ast.parse(path.read_text("utf-8")))
        lower = {n for n in module if n[:1].islower()}
        assert lower <= GENERATED_MODULE_NAMES, lower - GENERATED_MODULE_NAMES
        own = {n for n in used - spec_names - module if n[:1].islower() or n in dir(builtins)}
        own = {n for n in own if n[:1].islower()}
        assert own <= GENERATED_LOCALS | GENERATED_BUILTINS, own - GENERATED_NAMES
        members = attrs - acc_names - part_fields - {"value", "compact", "append"}
        members = {n for n in members if n[:1].islower()}
        assert members <= PART_STATE_MEMBERS, members - PART_STATE_MEMBERS
    init = ROOT / "generated" / "responses_stream" / "__init__.py"
    tree = ast.parse(init.read_text("utf-8"))
    bound: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
    package = {
        p.stem
        for p in (ROOT / "generated" / "responses_stream").iterdir()
        if p.is_dir() or p.suffix == ".py"
    }
    lower = {n for n in bound | package if n[:1].islower()} - set(cat.dialects)
    assert lower <= PACKAGE_NAMES, lower - PACKAGE_NAMES


CHECK_HOSTILE = """
import inspect, json, sys
from pathlib import Path
import responses_stream as rs
from responses_stream import openai as oa
assert Path(rs.__file__).resolve().is_relative_to(Path(sys.argv[1]).resolve()), rs.__file__
items = json.loads(sys.argv[2])
report = []
for h in items:
    cls = oa.ITEM_EMITTERS[h["type"]]
    sig = inspect.signature(cls.delta)
    resp = oa.ResponseEmitter(model="m")
    events = resp.created() + resp.in_progress()
    item = getattr(resp, h["factory"])(**{h["field_default"]: None})
    events += item.open()
    for piece in h["deltas"]:
        events += item.delta(piece)
    events += getattr(item, h["extra"])(h["deltas"][0])
    events += item.done()
    events += resp.completed()
    snap = item.snapshot()
    payloads = [json.loads(__import__("msgspec").json.encode(e)) for e in events]
    report.append({
        "doc": cls.__doc__,
        "open_doc": cls.open.__doc__,
        "delta_doc": cls.delta.__doc__,
        "param_default": sig.parameters[h["param"]].default,
        "default": getattr(snap, h["field_default"]),
        "init": getattr(snap, h["field_init"]),
        "list": getattr(snap, h["field_list"]),
        "object": getattr(snap, h["field_object"]),
        "text": snap.hostile_text,
        "model_doc": inspect.cleandoc(getattr(oa.models, type(snap).__name__).__doc__ or ""),
        "violations": [str(v) for v in rs.validate_payloads(payloads)],
    })
print(json.dumps(report))
"""


def hostile_batch() -> list[HostileItem]:
    rng = random.Random(20261203)
    out = []
    for i, local in enumerate(["quotes", "breaks", "jinja"]):
        out.append(
            HostileItem(
                local=local,
                field_default=f"f_default_{i}",
                field_init=f"f_init_{i}",
                field_list=f"f_list_{i}",
                field_object=f"f_object_{i}",
                field_enum=f"f_enum_{i}",
                acc=f"acc_{i}",
                param=f"param_{i}",
                extra_transition=f"more_{i}",
                doc=hostile_text(rng, 10),
                open_doc=hostile_text(rng),
                delta_doc=hostile_text(rng),
                event_doc=hostile_text(rng),
                field_doc=hostile_text(rng),
                default_str=hostile_text(rng),
                init_str=hostile_text(rng),
                list_values=[hostile_text(rng) for _ in range(3)],
                object_value={hostile_text(rng): hostile_text(rng)},
                enum_values=["a.b:c-d", "Z_9"],
                param_default=hostile_text(rng),
                example=hostile_text(rng),
            )
        )
    return out


def test_hostile_specs_generate_a_package_that_works_and_passes_ruff_and_mypy(
    tmp_path: Path,
) -> None:
    """Full CLI generation of a batch of hostile items: the package imports, carries every
    string exactly, streams valid events, passes its generated tests, ruff and mypy --strict,
    and nothing from the specs ever ran."""
    spec = tmp_path / "spec"
    shutil.copytree(ROOT / "spec", spec)
    batch = hostile_batch()
    for h in batch:
        (spec / "items" / f"hostile_{h.local}.yaml").write_text(h.yaml_text(), "utf-8")
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "generator", "generate", "--spec", str(spec), "--out", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    env = {**os.environ, "PYTHONPATH": str(out)}
    deltas = ['"""', "\\", "\n\u2028", "\U0001f600"]
    arg = [
        {
            "type": h.type,
            "factory": h.factory,
            "field_default": h.field_default,
            "field_init": h.field_init,
            "field_list": h.field_list,
            "field_object": h.field_object,
            "param": h.param,
            "extra": h.extra_transition,
            "deltas": deltas,
        }
        for h in batch
    ]
    check = [sys.executable, "-c", CHECK_HOSTILE, str(out), json.dumps(arg)]
    proc = subprocess.run(check, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    for h, got in zip(batch, json.loads(proc.stdout), strict=True):
        assert got["doc"] == h.doc
        assert got["open_doc"] == h.open_doc and got["delta_doc"] == h.delta_doc
        assert got["param_default"] == h.param_default
        assert got["default"] == h.default_str and got["init"] == h.init_str
        assert got["list"] == h.list_values and got["object"] == h.object_value
        assert got["text"] == "".join(deltas) + deltas[0]
        # The models' renderer (datamodel-code-generator) lays a docstring out line by
        # line and indents it: every character is kept, in order, but its whitespace
        # (line breaks, indentation) is its own.
        assert "".join(got["model_doc"].split()) == "".join(h.doc.split())
        assert got["violations"] == []
    runs = [
        [sys.executable, "-m", "responses_stream", "--help"],
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        + [f"tests/test_item_{h.factory}.py" for h in batch],
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--isolated",
            "--no-cache",
            "--select",
            "I,F,UP",
            "--line-length",
            "100",
            "--target-version",
            "py311",
            ".",
        ],
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "responses_stream"],
    ]
    for run in runs:
        proc = subprocess.run(run, cwd=out, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, f"{run[2:]}:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
    assert not [p for p in tmp_path.rglob(f"{MARKER}*")]
    assert not list(ROOT.glob(f"{MARKER}*"))
