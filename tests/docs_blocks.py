"""The code blocks of the documentation (``docs/*.md`` and ``README.md``), found and run.

A block's language says how it is run (``test_docs_blocks.py``):

- ``python``: every block of a page runs in order, in one namespace, in a fresh
  interpreter started outside the repository; what a block prints must equal the
  ``text`` block right after it, when there is one;
- ``sh``: each block runs in bash, in a folder of its own that holds the page's sample
  files (``chat.sse``, ``request.json``, ``my_items/``, and every ``yaml`` block whose
  first line is ``# NAME``, as ``NAME``), its output compared likewise. A command that
  starts a server (``serve``) is started, asked for ``/health`` and stopped; ``make``
  and ``pip install`` check that the target, the folder and the extra exist, since
  running them would rebuild this environment;
- ``yaml``: parsed; a block that names a spec file (``spec/items/x.yaml`` in the line
  before it) equals that file; a whole item spec is generated as an overlay;
- ``toml`` and ``json``: parsed; ``js``: ``node --check``;
- ``text`` and ``mermaid`` are not code (``mermaid`` is drawn by the browser test).

A block that cannot run here says why in an HTML comment on the line before it:
``<!-- not run: needs a model's sampled tokens -->``; it is still compiled or parsed.
Addresses ``127.0.0.1:8000`` (a Chat Completions server) and ``127.0.0.1:8080`` (the
gateway) are the servers the test starts, on free ports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(
    r"^(?P<indent>[ ]*)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.S | re.M
)
NOT_RUN = re.compile(r"<!-- not run: (?P<why>[^>]+?) -->\s*$")
NOT_CODE = {"text", "mermaid"}
LANGUAGES = {"python", "sh", "yaml", "toml", "json", "js"} | NOT_CODE


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language and text, why it is not run (if it is
    not), and the ``text`` block that shows its output (if one follows it)."""

    page: str
    line: int
    lang: str
    body: str
    not_run: str
    output: str | None
    before: str  # the line before the fence

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    """Every page of the site written by hand, and the front page."""
    return [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]


def _dedent(body: str, indent: str) -> str:
    return "".join(
        line[len(indent) :] if line.startswith(indent) else line
        for line in body.splitlines(keepends=True)
    )


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of one page, in order."""
    text = path.read_text(encoding="utf-8")
    found = list(FENCE.finditer(text))
    out: list[Block] = []
    for n, match in enumerate(found):
        head = text[: match.start()]
        before = head.rstrip("\n").rsplit("\n", 1)[-1].strip()
        why = NOT_RUN.search(before)
        output = None
        if n + 1 < len(found):
            nxt = found[n + 1]
            between = text[match.end() : nxt.start()]
            if nxt.group("info").strip() == "text" and not between.strip():
                output = _dedent(nxt.group("body"), nxt.group("indent"))
        out.append(
            Block(
                page=path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name,
                line=head.count("\n") + 1,
                lang=match.group("info").strip().split(" ")[0],
                body=_dedent(match.group("body"), match.group("indent")),
                not_run=why.group("why") if why else "",
                output=output,
                before=before,
            )
        )
    return out


def every_block() -> list[Block]:
    return [b for page in pages() for b in blocks(page)]
