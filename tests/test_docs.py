"""The generated docs (``generated/docs``) are readable and say what the specs say.

- Tables: every table has a header row of named columns, then a separator
  row, every row has as many cells as the header, and a blank line sets the
  table apart from the text around it.
- Width: every table row fits a page. The rule: a row as it renders (link
  targets, backticks and backslash escapes dropped; a ``<br>`` breaks a cell
  into lines, of which the widest counts), laid out as ``| cell | cell |``, is
  at most ``MAX_ROW`` (120) characters. Long text (a long default, a field's
  description, a dialect's payload override) belongs in a list under its table.
- State diagrams: the diagram of each machine (the envelope in the index, each
  item and each of its part kinds on the item's page) has exactly one arrow
  for each pair of states a transition joins, labelled with every transition
  between them. Mermaid draws several arrows from a state to itself on top of
  each other, so that only one of their labels shows; one arrow per pair keeps
  every label, self-loops included, visible.

The checks read the committed files and compare them with the compiled
catalogue, so a template that regresses fails here (and ``generator check``
keeps the committed files equal to a fresh render).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from generator.catalog import Catalog, MachineC
from generator.compile import build_catalog
from generator.loader import load_dir

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "generated" / "docs"
MAX_ROW = 120

LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
BREAK = re.compile(r"<br\s*/?>")
CELL_SPLIT = re.compile(r"(?<!\\)\|")
SEPARATOR_CELL = re.compile(r":?-{3,}:?")
HEADING = re.compile(r"^(#{1,6}) (.*)$")
EDGE = re.compile(r"^(\S+) --> (\S+)(?: : (.*))?$")


@cache
def catalog() -> Catalog:
    sources, errors = load_dir(ROOT / "spec")
    assert not errors, errors
    return build_catalog(sources)


def doc_files() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def doc_id(path: Path) -> str:
    return path.relative_to(DOCS).as_posix()


# ------------------------------------------------------------------ parsing


@dataclass
class Table:
    path: str
    line: int  # 1-based number of the header row
    rows: list[str]  # the header row, the separator row, then the body
    before: str | None  # the line before the table (None at the start)
    after: str | None  # the line after it (None at the end)


def cells(row: str) -> list[str]:
    """The cells of a table row, split at unescaped pipes."""
    body = row.strip()
    assert body.startswith("|") and body.endswith("|"), f"not a table row: {row!r}"
    return [c.strip() for c in CELL_SPLIT.split(body[1:-1])]


def outside_fences(lines: list[str]) -> Iterator[tuple[int, str]]:
    """(index, line) of each line not inside a fenced code block."""
    fenced = False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield i, line


def tables(path: str, text: str) -> list[Table]:
    lines = text.splitlines()
    found: list[Table] = []
    run: list[int] = []
    for i, line in [*outside_fences(lines), (len(lines), "")]:
        if line.startswith("|") and run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            first, last = run[0], run[-1]
            found.append(
                Table(
                    path,
                    first + 1,
                    [lines[j] for j in run],
                    lines[first - 1] if first > 0 else None,
                    lines[last + 1] if last + 1 < len(lines) else None,
                )
            )
        run = [i] if line.startswith("|") else []
    return found


def visible(cell: str) -> list[str]:
    """The lines of a cell as it renders: link text, no backticks or escapes."""
    text = LINK.sub(r"\1", cell).replace("`", "").replace("\\|", "|")
    return [part.strip() for part in BREAK.split(text)]


def rendered_width(row: str) -> int:
    """The width of ``| cell | cell |`` with each cell at its widest line."""
    widths = [max(len(line) for line in visible(c)) for c in cells(row)]
    return sum(widths) + 3 * len(widths) + 1


def table_problems(table: Table) -> list[str]:
    """What is wrong with a table's shape, as messages naming its line."""
    where = f"{table.path}:{table.line}"
    problems: list[str] = []
    head = cells(table.rows[0])
    if not all(head):
        problems.append(f"{where}: header row has an empty cell: {table.rows[0]}")
    if len(table.rows) < 2 or not all(SEPARATOR_CELL.fullmatch(c) for c in cells(table.rows[1])):
        problems.append(f"{where}: the header row is not followed by a separator row")
    for n, row in enumerate(table.rows[1:], start=table.line + 1):
        if len(cells(row)) != len(head):
            problems.append(f"{table.path}:{n}: {len(cells(row))} cells, header has {len(head)}")
    if table.before not in (None, ""):
        problems.append(f"{where}: no blank line before the table")
    if table.after not in (None, ""):
        problems.append(f"{where}: no blank line after the table: {table.after!r}")
    return problems


def width_problems(table: Table) -> list[str]:
    out = []
    for n, row in enumerate(table.rows, start=table.line):
        if n == table.line + 1:
            continue  # the separator row
        width = rendered_width(row)
        if width > MAX_ROW:
            out.append(f"{table.path}:{n}: {width} > {MAX_ROW} characters: {row}")
    return out


def sections(text: str) -> dict[str, str]:
    """The text under each level-2 heading (outside code blocks), keyed by the heading."""
    lines = text.splitlines()
    headings = {
        i: m.group(2)
        for i, line in outside_fences(lines)
        if (m := HEADING.match(line)) and len(m.group(1)) == 2
    }
    out: dict[str, str] = {}
    current = ""
    for i, line in enumerate(lines):
        if i in headings:
            current = headings[i]
            assert current not in out, f"heading {current!r} twice"
            out[current] = ""
        else:
            out[current] = out.get(current, "") + line + "\n"
    return out


def diagrams(text: str) -> list[list[str]]:
    """The lines of each Mermaid block, without the fences."""
    out: list[list[str]] = []
    block: list[str] | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if block is None:
            if stripped == "```mermaid":
                block = []
        elif stripped == "```":
            out.append(block)
            block = None
        else:
            block.append(stripped)
    assert block is None, "unclosed mermaid block"
    return out


def arrows(block: list[str]) -> list[tuple[str, str, list[str]]]:
    """The arrows of a ``stateDiagram-v2`` block: (from, to, labels)."""
    assert block and block[0] == "stateDiagram-v2", block[:1]
    out = []
    for line in block[1:]:
        if not line or line.startswith("%%"):
            continue
        m = EDGE.match(line)
        assert m, f"not an arrow: {line!r}"
        labels = [s.strip() for s in m.group(3).split(",")] if m.group(3) else []
        out.append((m.group(1), m.group(2), labels))
    return out


def diagram_problems(block: list[str], machine: MachineC, where: str) -> list[str]:
    """How a diagram differs from the machine: one labelled arrow per pair of states."""
    want: dict[tuple[str, str], list[str]] = {("[*]", machine.initial): []}
    for sname, state in machine.states.items():
        for tname, target in state.on.items():
            want.setdefault((sname, target), []).append(tname)
    for final in machine.finals:
        want[(final, "[*]")] = []
    got: dict[tuple[str, str], list[str]] = {}
    problems = []
    for source, target, labels in arrows(block):
        if (source, target) in got:
            why = (
                "Mermaid draws them on top of each other, so only one label shows"
                if source == target
                else "one arrow per pair of states, labelled with each transition"
            )
            problems.append(f"{where}: several arrows {source} --> {target}; {why}")
        got.setdefault((source, target), []).extend(labels)
    for pair in sorted(set(want) | set(got)):
        if sorted(want.get(pair, [])) != sorted(got.get(pair, [])) or pair not in got:
            problems.append(
                f"{where}: {pair[0]} --> {pair[1]}: spec has {want.get(pair)}, "
                f"diagram has {got.get(pair)}"
            )
    return problems


# -------------------------------------------------------------------- tests


def test_docs_cover_every_item() -> None:
    cat = catalog()
    want = {"README.md", "requests.md"} | {f"items/{t.replace(':', '_')}.md" for t in cat.items}
    assert {doc_id(p) for p in doc_files()} == want
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    for t in cat.items:
        assert f"(items/{t.replace(':', '_')}.md)" in index, t


@pytest.mark.parametrize("path", doc_files(), ids=doc_id)
def test_every_table_has_a_header_row(path: Path) -> None:
    found = tables(doc_id(path), path.read_text(encoding="utf-8"))
    assert found, "no tables"
    problems = [p for t in found for p in table_problems(t)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", doc_files(), ids=doc_id)
def test_every_table_row_fits_a_page(path: Path) -> None:
    found = tables(doc_id(path), path.read_text(encoding="utf-8"))
    problems = [p for t in found for p in width_problems(t)]
    assert not problems, "\n".join(problems)


def test_envelope_diagram_shows_every_transition() -> None:
    cat = catalog()
    text = (DOCS / "README.md").read_text(encoding="utf-8")
    blocks = diagrams(sections(text)["Response envelope"])
    assert len(blocks) == 1
    problems = diagram_problems(blocks[0], cat.envelope, "README.md envelope")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("item_type", sorted(catalog().items))
def test_item_diagrams_show_every_transition(item_type: str) -> None:
    """The item's machine and each of its part kinds' machines, labels and all."""
    cat = catalog()
    item = cat.items[item_type]
    name = f"items/{item_type.replace(':', '_')}.md"
    by_heading = sections((DOCS / name).read_text(encoding="utf-8"))
    machines = {"State machine": item.machine}
    for kinds in item.slots.values():
        for kind in kinds:
            machines[f"Part `{kind}`"] = cat.parts[kind].machine
    problems = []
    for heading, machine in machines.items():
        assert heading in by_heading, f"{name}: no section {heading!r}"
        blocks = diagrams(by_heading[heading])
        assert len(blocks) == 1, f"{name} {heading}: {len(blocks)} diagrams"
        problems += diagram_problems(blocks[0], machine, f"{name} {heading}")
    assert not problems, "\n".join(problems)


def test_machines_with_several_self_loops_exist() -> None:
    """The diagram tests cover the case that hides labels: a state with two self-loops."""
    cat = catalog()
    machines = [cat.envelope, *(i.machine for i in cat.items.values())]
    machines += [p.machine for p in cat.parts.values()]
    assert any(
        sum(target == sname for target in state.on.values()) > 1
        for m in machines
        for sname, state in m.states.items()
    )


# ----------------------------------------------- the checks catch what they should


BAD_DOC = """\
Text.

| | |
|---|---|
| Key | value |

| A | B |
|---|---|
| `x` | [`%s`](items/x.md) |
Straight after the table.
""" % ("y" * 120)


def test_checks_reject_an_empty_header_a_wide_row_and_a_glued_table() -> None:
    first, second = tables("bad.md", BAD_DOC)
    assert any("empty cell" in p for p in table_problems(first))
    assert not width_problems(first)
    assert any("no blank line after" in p for p in table_problems(second))
    assert any(f"> {MAX_ROW}" in p for p in width_problems(second))


def test_width_counts_what_renders() -> None:
    row = "| [`abc`](items/abc.md) | `a`<br>`bcdef` | x \\| y |"
    assert rendered_width(row) == len("| abc | bcdef | x | y |")


def test_checks_reject_stacked_self_loops_and_missing_labels() -> None:
    machine = catalog().parts["output_text"].machine
    loops = [t for t, target in machine.states["streaming"].on.items() if target == "streaming"]
    assert len(loops) > 1
    stacked = ["stateDiagram-v2", "[*] --> pending", "pending --> streaming : open"]
    stacked += [f"streaming --> streaming : {t}" for t in loops]
    stacked += ["streaming --> closed : done", "closed --> [*]"]
    assert any("only one label shows" in p for p in diagram_problems(stacked, machine, "x"))
    merged = [line for line in stacked if "streaming --> streaming" not in line]
    merged.append("streaming --> streaming : " + ", ".join(loops))
    assert not diagram_problems(merged, machine, "x")
    unlabelled = [
        line.split(" : ")[0] if line.startswith("streaming --> streaming") else line
        for line in merged
    ]
    assert any("streaming --> streaming" in p for p in diagram_problems(unlabelled, machine, "x"))
    dropped = [line for line in merged if line != "streaming --> closed : done"]
    assert any("streaming --> closed" in p for p in diagram_problems(dropped, machine, "x"))
