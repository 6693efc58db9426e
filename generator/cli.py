"""``python -m generator generate|check [--spec DIR] [--out DIR]``."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from .compile import build_catalog
from .errors import SpecErrors
from .loader import load_dir
from .render import render_all
from .spec_model import spec_json_schema
from .writer import (
    STAGE_PREFIX,
    OutputError,
    diff_trees,
    locked,
    recover,
    render_to_stage,
    swap_in,
    write_text_atomic,
)

SCHEMA_FILE = "spec.schema.json"


def schema_text() -> str:
    return json.dumps(spec_json_schema(), indent=2, sort_keys=True) + "\n"


def schema_stale(spec: Path) -> bool:
    """Whether the spec folder's JSON Schema differs from the spec model's."""
    schema = spec / SCHEMA_FILE
    return not schema.exists() or schema.read_text(encoding="utf-8") != schema_text()


def render(spec: Path) -> dict[str, str]:
    """Load, check and render; raise ``SpecErrors`` listing every problem."""
    sources, errors = load_dir(spec)
    if errors:
        raise SpecErrors(errors)
    return render_all(build_catalog(sources), spec)


def _spec_litter(spec: Path) -> None:
    """Temporary schema files a killed run left in the spec folder."""
    for path in spec.glob(f"{STAGE_PREFIX}*"):
        if path.is_file():
            path.unlink()


def cmd_generate(spec: Path, out: Path) -> int:
    files = render(spec)
    with locked(out):
        recover(out)
        _spec_litter(spec)
        stage = render_to_stage(files, out.resolve().parent)
        try:
            changed = swap_in(stage, out)
        finally:
            if stage.exists():
                shutil.rmtree(stage)
        if schema_stale(spec):
            write_text_atomic(spec / SCHEMA_FILE, schema_text())
            changed.append(f"{spec.name}/{SCHEMA_FILE}")
    print(f"generated {len(files)} files into {out} ({len(changed)} changed)")
    return 0


def cmd_check(spec: Path, out: Path) -> int:
    files = render(spec)
    with locked(out):
        recover(out)
        stage = render_to_stage(files, out.resolve().parent)
        try:
            drift = diff_trees(stage, out)
        finally:
            shutil.rmtree(stage)
    if schema_stale(spec):
        drift.append(f"{spec.name}/{SCHEMA_FILE}")
    if drift:
        print("generated output differs from a fresh render; run `make generate`:")
        for rel in drift:
            print(f"  {rel}")
        return 1
    print(f"{out}: up to date ({len(files)} files)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m generator", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_ in (("generate", "render every output file"), ("check", "fail on drift")):
        p = sub.add_parser(name, help=help_)
        p.add_argument(
            "--spec", type=Path, default=Path("spec"), help="spec folder (default: spec)"
        )
        p.add_argument(
            "--out", type=Path, default=Path("generated"), help="output folder (default: generated)"
        )
    args = parser.parse_args(argv)
    try:
        if args.command == "generate":
            return cmd_generate(args.spec, args.out)
        return cmd_check(args.spec, args.out)
    except SpecErrors as exc:
        for err in exc.errors:
            print(err, file=sys.stderr)
        print(f"{len(exc.errors)} spec error(s); nothing was written", file=sys.stderr)
        return 1
    except OutputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        print("nothing was written", file=sys.stderr)
        return 1
