"""The kit's report: a table for the terminal, JSON, and JUnit XML for CI."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from .run import FAIL, MODEL, NOT_RUN, PASS, Outcome


def passed(outcomes: Sequence[Outcome]) -> bool:
    """Whether every exercised scenario passed."""
    return all(o.verdict != FAIL for o in outcomes)


def table(outcomes: Sequence[Outcome]) -> str:
    rows = [("scenario", "form", "verdict", "rules", "first failing event")]
    for o in outcomes:
        verdict = o.verdict.upper() if o.verdict == FAIL else o.verdict
        rows.append((o.scenario, o.form, verdict, ", ".join(o.rules), o.first_failing))
    widths = [max(len(row[n]) for row in rows) for n in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    details = [f"  {o.scenario} ({o.form}) {line}" for o in outcomes for line in o.lines()]
    counts = {v: sum(o.verdict == v for o in outcomes) for v in (PASS, FAIL, NOT_RUN, MODEL)}
    summary = f"{counts[PASS]} passed, {counts[FAIL]} failed, {counts[NOT_RUN]} {NOT_RUN}"
    if counts[MODEL]:
        summary += f", {counts[MODEL]} where the model, not the protocol, fell short"
    return "\n".join([*lines, *(["", "findings:", *details] if details else []), "", summary])


def as_json(outcomes: Sequence[Outcome], url: str, model: str, dialect: str) -> str:
    report = {
        "url": url,
        "model": model,
        "dialect": dialect,
        "passed": passed(outcomes),
        "outcomes": [o.to_dict() for o in outcomes],
    }
    return json.dumps(report, indent=2, ensure_ascii=False)


def junit(outcomes: Sequence[Outcome], suite: str = "responses-stream check") -> bytes:
    """JUnit XML: a test case per scenario and form; a failure per failed one, a skip per
    scenario not exercised."""
    failures = sum(o.verdict == FAIL for o in outcomes)
    skipped = sum(o.verdict not in (PASS, FAIL) for o in outcomes)
    root = ET.Element(
        "testsuite",
        name=suite,
        tests=str(len(outcomes)),
        failures=str(failures),
        skipped=str(skipped),
        errors="0",
    )
    for o in outcomes:
        case = ET.SubElement(root, "testcase", classname=suite, name=f"{o.scenario}[{o.form}]")
        if o.verdict == FAIL:
            message = ", ".join(o.rules)
            failure = ET.SubElement(case, "failure", message=message)
            failure.text = "\n".join(o.lines())
        elif o.verdict != PASS:
            ET.SubElement(case, "skipped", message=o.note or o.verdict)
    out: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return out
