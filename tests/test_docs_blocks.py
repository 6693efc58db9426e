"""Every code block of the documentation runs (``docs_blocks.py`` says how, by language).

A block that no longer works fails here, at its page and line.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from docs_blocks import LANGUAGES, NOT_CODE, ROOT, Block, blocks, every_block, pages
from gateway_support import free_port, gateway
from gateway_upstream import ModelUpstream

BIN = Path(sys.executable).parent
FIXTURE = ROOT / "tests" / "fixtures" / "acme_search_result.yaml"
ADDRESS = re.compile(r"(?:127\.0\.0\.1|localhost):(8000|8080)\b")
SERVE = re.compile(r"(?:responses_stream|responses-stream) serve\b")
SPEC_FILE = re.compile(r"`((?:spec|tests/fixtures)/[\w/.-]+\.yaml)`")

# Runs each Python block of a page in one namespace; what each printed, or its error.
DRIVER = """
import contextlib, io, json, sys, traceback
blocks = json.loads(open(sys.argv[1], encoding="utf-8").read())
ns = {"__name__": "__main__"}
results = []
for b in blocks:
    out = io.StringIO()
    try:
        code = compile(b["body"], b["where"], "exec")
        if b["run"]:
            with contextlib.redirect_stdout(out):
                exec(code, ns)
        results.append({"where": b["where"], "stdout": out.getvalue()})
    except BaseException:
        results.append({"where": b["where"], "error": traceback.format_exc()})
        break
open(sys.argv[2], "w", encoding="utf-8").write(json.dumps(results))
"""

# What the shell blocks may call besides the commands they show: stand-ins for the
# commands that would rebuild this environment, each checking what it names exists.
PRELUDE = """
set -euo pipefail
make() {
  for t in "$@"; do
    case "$t" in *=*|-*) continue;; esac
    grep -qE "^$t:" "$ROOT/Makefile" || { echo "make: no target '$t'" >&2; return 1; }
  done
}
pip() {
  [ "${1:-}" = install ] || { echo "pip: only install is shown" >&2; return 1; }
  shift
  for r in "$@"; do case "$r" in -*) ;; *) command python "$HELPERS/requirement.py" "$r";; esac; done
}
python() {
  if [ "${1:-}" = -m ] && [ "${2:-}" = build ]; then
    test -f "$ROOT/${@: -1}/pyproject.toml"
  else
    command python "$@"
  fi
}
"""

REQUIREMENT = """
import os, re, sys, tomllib
from pathlib import Path
root = Path(os.environ["ROOT"])
spec = sys.argv[1]
m = re.fullmatch(r"(?P<what>[^\\[]+)(?:\\[(?P<extras>[^\\]]+)\\])?", spec)
what = m.group("what")
here = Path.cwd() / what  # a folder beside the command, else one of the checkout's
project = root / "generated" if what == "responses-stream" else here if here.is_dir() else root / what
meta = tomllib.loads((project / "pyproject.toml").read_text())
extras = set(meta["project"].get("optional-dependencies", {}))
wanted = set((m.group("extras") or "").split(",")) - {""}
assert wanted <= extras, f"{spec}: no extra {sorted(wanted - extras)} (has {sorted(extras)})"
"""

HEALTH = """
import os, sys, time, urllib.request
port, pid = sys.argv[1], int(sys.argv[2])
for _ in range(300):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
            assert r.status == 200
            break
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            sys.exit("serve exited before it answered /health")
        time.sleep(0.1)
else:
    sys.exit("serve did not answer /health in 30 s")
os.kill(pid, 15)
for _ in range(300):  # gone within 30 s, or the test says so
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        break
    time.sleep(0.1)
else:
    sys.exit("serve did not exit within 30 s of SIGTERM")
"""


def ids(block: Block) -> str:
    return block.where


CODE = [b for b in every_block() if b.lang not in NOT_CODE]


def test_every_block_says_its_language() -> None:
    unknown = [f"{b.where}: {b.lang or '(none)'}" for b in every_block() if b.lang not in LANGUAGES]
    assert unknown == [], "give each block one of " + ", ".join(sorted(LANGUAGES))


def test_the_docs_have_blocks_of_each_kind() -> None:
    kinds = {b.lang for b in CODE}
    assert {"python", "sh", "yaml"} <= kinds and len(CODE) >= 30


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, str]]:
    """A scripted Chat Completions server for 8000, the gateway in front of it for 8080."""
    fake = ModelUpstream()
    with fake.serve() as upstream, gateway(upstream + "/v1") as gw:
        yield {"8000": upstream.rsplit(":", 1)[1], "8080": gw.rsplit(":", 1)[1]}


def localize(text: str, ports: dict[str, str]) -> str:
    return ADDRESS.sub(lambda m: f"127.0.0.1:{ports[m.group(1)]}", text)


def workdir(tmp: Path, page: str) -> Path:
    """A folder with the page's sample files, its named yaml blocks, and the helpers."""
    shutil.copy(ROOT / "tests" / "recorded" / "llamacpp_text.sse", tmp / "chat.sse")
    (tmp / "request.json").write_text(json.dumps({"model": "my-model"}))
    (tmp / "my_items").mkdir()
    shutil.copy(FIXTURE, tmp / "my_items" / FIXTURE.name)
    (tmp / ".venv").symlink_to(BIN.parent)
    helpers = tmp / ".helpers"
    helpers.mkdir()
    (helpers / "requirement.py").write_text(REQUIREMENT)
    (helpers / "health.py").write_text(HEALTH)
    for b in blocks(ROOT / page):
        first = b.body.split("\n", 1)[0]
        if b.lang == "yaml" and re.fullmatch(r"# [\w.-]+\.yaml", first):
            (tmp / first[2:]).write_text(b.body)
    return tmp


def environment(ports: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHOME",)}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT)  # the generator of this checkout, as in a checkout
    env["ROOT"] = str(ROOT)
    env["OPENAI_API_KEY"] = "unused"
    return env


# -- python ------------------------------------------------------------------------------
PYTHON_PAGES = sorted({b.page for b in CODE if b.lang == "python"})


@pytest.mark.parametrize("page", PYTHON_PAGES)
def test_python_blocks_run(page: str, servers: dict[str, str], tmp_path: Path) -> None:
    mine = [b for b in blocks(ROOT / page) if b.lang == "python"]
    work = workdir(tmp_path, page)
    plan = [
        {"where": b.where, "body": localize(b.body, servers), "run": not b.not_run} for b in mine
    ]
    (work / ".helpers" / "blocks.json").write_text(json.dumps(plan))
    (work / ".helpers" / "driver.py").write_text(DRIVER)
    env = environment(servers)
    env.pop("PYTHONPATH")  # the package as installed, never this checkout's folders
    done = subprocess.run(
        [sys.executable, ".helpers/driver.py", ".helpers/blocks.json", ".helpers/out.json"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads((work / ".helpers" / "out.json").read_text())
    errors = [f"{r['where']}:\n{r['error']}" for r in results if "error" in r]
    assert errors == [], errors[0]
    assert len(results) == len(mine)
    for block, result in zip(mine, results, strict=True):
        if block.output is not None and not block.not_run:
            assert result["stdout"] == localize(block.output, servers), block.where


def test_python_blocks_import_the_installed_package(tmp_path: Path) -> None:
    """The blocks run against the package ``make`` installs (editable), not this folder."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    where = subprocess.run(
        [sys.executable, "-c", "import responses_stream; print(responses_stream.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert where.stdout.startswith(str(ROOT / "generated")), "not the editable install"


# -- sh ----------------------------------------------------------------------------------
def commands(body: str) -> list[str]:
    """The block's command lines, continuation lines joined."""
    return [c for c in re.sub(r"\\\n\s*", " ", body).splitlines() if c.strip()]


def shell_script(block: Block, ports: dict[str, str]) -> str:
    lines = [PRELUDE]
    for n, line in enumerate(commands(localize(block.body, ports))):
        command = line.split(" #", 1)[0].rstrip()  # a trailing comment is not the command
        if SERVE.search(command) and not command.lstrip().startswith("#"):
            port = str(free_port())
            if re.search(r"--port \d+", command):
                command = re.sub(r"--port \d+", f"--port {port}", command)
            else:
                command += f" --port {port}"
            # the command itself in the background, not the stand-in function around it,
            # so that $! is the server's own pid
            command = re.sub(r"(?<![\w-])python -m", "command python -m", command)
            command += f" --log-level error > serve-{n}.log 2>&1 &\n"
            command += f'python "$HELPERS/health.py" {port} $! || {{ cat serve-{n}.log; exit 1; }}'
        lines.append(command)
    return "\n".join(lines) + "\n"


SH = [b for b in CODE if b.lang == "sh"]


@pytest.mark.parametrize("block", SH, ids=ids)
def test_shell_blocks_run(block: Block, servers: dict[str, str], tmp_path: Path) -> None:
    if block.not_run:
        pytest.skip(f"{block.where}: {block.not_run}")
    work = workdir(tmp_path, block.page)
    env = environment(servers)
    env["HELPERS"] = str(work / ".helpers")
    done = subprocess.run(
        ["bash", "-c", shell_script(block, servers)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"{block.where}:\n{done.stdout}\n{done.stderr}"
    if block.output is not None:
        assert done.stdout == localize(block.output, servers), block.where


# -- yaml, toml, json, js ----------------------------------------------------------------
DATA = [b for b in CODE if b.lang in ("yaml", "toml", "json", "js")]


@pytest.mark.parametrize("block", DATA, ids=ids)
def test_data_blocks_parse(block: Block, tmp_path: Path) -> None:
    if block.lang == "toml":
        assert tomllib.loads(block.body)
    elif block.lang == "json":
        json.loads(block.body)
    elif block.lang == "js":
        node = shutil.which("node")
        if node is None:
            pytest.skip("no node here to check the script with")
        script = tmp_path / "block.mjs"
        script.write_text(block.body)
        done = subprocess.run([node, "--check", str(script)], capture_output=True, text=True)
        assert done.returncode == 0, f"{block.where}: {done.stderr}"
    else:
        check_yaml(block, tmp_path)


def check_yaml(block: Block, tmp: Path) -> None:
    data = yaml.safe_load(block.body)
    named = SPEC_FILE.search(block.before)
    if named:  # the block shows a spec file: it must be that file
        assert block.body == (ROOT / named.group(1)).read_text(encoding="utf-8"), block.where
    elif isinstance(data, dict) and data.get("kind") == "item":
        overlay = tmp / "overlay"
        overlay.mkdir()
        (overlay / "item.yaml").write_text(block.body)
        done = subprocess.run(
            [sys.executable, "-m", "generator", "generate", "--overlay", str(overlay)]
            + ["--out", str(tmp / "out")],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"{block.where}: {done.stderr}"
    else:
        comments = all(line.startswith("#") for line in block.body.splitlines())
        assert data is not None or comments, f"{block.where}: an empty yaml block"


def test_the_collector_finds_what_it_should(tmp_path: Path) -> None:
    """The fence parser on a page of every shape it must read."""
    page = tmp_path / "page.md"
    page.write_text(
        textwrap.dedent(
            """\
            Text.

            ```python
            print("hi")
            ```

            ```text
            hi
            ```

            1. A list item:

               <!-- not run: needs a model -->
               ```sh
               run --thing
               ```
            """
        )
    )
    found = blocks(page)
    assert [(b.lang, b.line) for b in found] == [("python", 3), ("text", 7), ("sh", 14)]
    assert found[0].output == "hi\n" and found[1].output is None
    assert found[2].body == "run --thing\n" and found[2].not_run == "needs a model"
    assert pages()[-1] == ROOT / "README.md"


def test_the_spec_language_page_lists_every_key() -> None:
    """Every key the spec model takes is a row of the page's key tables."""
    from pydantic import BaseModel

    import generator.spec_model as sm

    page = (ROOT / "docs" / "spec-language.md").read_text(encoding="utf-8")
    tables = page.split("\n## Every key\n", 1)[1]
    listed = {
        key
        for row in tables.splitlines()
        if row.startswith("| `")
        for key in re.findall(r"`([a-z_]+)`", row.split(" | ", 1)[0])
    }
    keys = {
        field.alias or name
        for model in vars(sm).values()
        if isinstance(model, type)
        and issubclass(model, BaseModel)
        and model.__module__ == sm.__name__
        for name, field in model.model_fields.items()
    }
    assert sorted(keys - listed) == []
