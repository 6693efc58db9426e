"""``python -m generator generate|check [--spec DIR] [--overlay DIR]... [--out DIR]``.

Installed, the same command is ``responses-stream-generate``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from .compile import build_catalog
from .errors import SpecErrors
from .loader import load_dir, shown_paths
from .render import render_all
from .resources import base_spec, hand_written, is_installed_spec, version
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
    """The JSON Schema of the spec files, as the spec folder keeps it."""
    return json.dumps(spec_json_schema(), indent=2, sort_keys=True) + "\n"


def schema_stale(spec: Path) -> bool:
    """Whether the spec folder's JSON Schema differs from the spec model's."""
    schema = spec / SCHEMA_FILE
    return not schema.exists() or schema.read_text(encoding="utf-8") != schema_text()


def render(spec: Path, overlays: Sequence[Path] = ()) -> dict[str, str]:
    """Load, check and render; raise ``SpecErrors`` listing every problem."""
    sources, errors = load_dir(spec, overlays)
    if errors:
        raise SpecErrors(errors)
    return render_all(build_catalog(sources), spec)


def _spec_litter(spec: Path) -> None:
    """Temporary schema files a killed run left in the spec folder."""
    for path in spec.glob(f"{STAGE_PREFIX}*"):
        if path.is_file():
            path.unlink()


def _writes_schema(spec: Path) -> bool:
    """The spec folder's JSON Schema is kept fresh, except in an installed copy."""
    return not is_installed_spec(spec) and schema_stale(spec)


def cmd_generate(spec: Path, out: Path, overlays: Sequence[Path] = ()) -> int:
    """Render the spec (with its overlays) and write the package to ``out``."""
    files = render(spec, overlays)
    with locked(out):
        recover(out)
        _spec_litter(spec)
        copied = hand_written()
        stage = render_to_stage(files, out.resolve().parent, copied)
        try:
            changed = swap_in(stage, out)
        finally:
            if stage.exists():
                shutil.rmtree(stage)
        if _writes_schema(spec):
            write_text_atomic(spec / SCHEMA_FILE, schema_text())
            changed.append(f"{spec.name}/{SCHEMA_FILE}")
    # the rendered files and the hand-written runtime copied beside them
    print(f"generated {len(files) + len(copied)} files into {out} ({len(changed)} changed)")
    return 0


def cmd_check(spec: Path, out: Path, overlays: Sequence[Path] = ()) -> int:
    """Render the spec and report every file of ``out`` that differs (exit 1 on drift)."""
    files = render(spec, overlays)
    with locked(out):
        recover(out)
        copied = hand_written()
        stage = render_to_stage(files, out.resolve().parent, copied)
        try:
            drift = diff_trees(stage, out)
        finally:
            shutil.rmtree(stage)
    if _writes_schema(spec):
        drift.append(f"{spec.name}/{SCHEMA_FILE}")
    if drift:
        print("generated output differs from a fresh render; run `make generate`:")
        for rel in drift:
            print(f"  {rel}")
        return 1
    print(f"{out}: up to date ({len(files)} files)")
    return 0


EPILOG = """examples:
  {prog} generate                        the base catalogue into ./generated
  {prog} generate --overlay my_items     the base catalogue plus your item files
  {prog} check --out generated           exit 1 if ./generated is not a fresh render
"""


def _prog() -> str:
    name = Path(sys.argv[0]).name
    return "python -m generator" if name in ("__main__.py", "-c", "") else name


def main(argv: list[str] | None = None) -> int:
    """The ``python -m generator`` command line."""
    prog = _prog()
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Render the Responses streaming package (models, emitters, stream tools, "
        "tests and docs) from YAML item specs.",
        epilog=EPILOG.format(prog=prog),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    commands: dict[str, argparse.ArgumentParser] = {}
    for name, help_ in (
        ("generate", "render every output file into --out, atomically"),
        ("check", "exit 1 if --out differs from a fresh render (drift)"),
    ):
        p = commands[name] = sub.add_parser(
            name,
            help=help_,
            description=help_[0].upper() + help_[1:] + ".",
            epilog=EPILOG.format(prog=prog),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        p.add_argument(
            "--spec",
            type=Path,
            default=None,
            help="the base spec folder (default: the catalogue shipped with the generator)",
        )
        p.add_argument(
            "--overlay",
            type=Path,
            action="append",
            default=[],
            metavar="DIR",
            help="a folder of extra spec files (item types, ...) on top of the base; a file at "
            "the same relative path replaces the base one; may be repeated",
        )
        p.add_argument(
            "--out", type=Path, default=Path("generated"), help="output folder (default: generated)"
        )
    args, extra = parser.parse_known_args(argv)
    if extra:  # the command's own usage, not the top-level one
        commands[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    spec = args.spec if args.spec is not None else base_spec()
    try:
        if args.command == "generate":
            return cmd_generate(spec, args.out, args.overlay)
        return cmd_check(spec, args.out, args.overlay)
    except SpecErrors as exc:
        for err in exc.shown(shown_paths(spec, args.overlay)):
            print(err, file=sys.stderr)
        print(f"{len(exc.errors)} spec error(s); nothing was written", file=sys.stderr)
        return 1
    except OutputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        print("nothing was written", file=sys.stderr)
        return 1
