"""``python -m docsite [SITE_DIR]``: build the documentation site strictly."""

from __future__ import annotations

import sys
from pathlib import Path

from . import SiteError, build


def main(argv: list[str]) -> int:
    try:
        site = build(Path(argv[0]) if argv else None)
    except SiteError as exc:
        print(f"docs: {exc}", file=sys.stderr)
        return 1
    print(f"built the site into {site}")
    return 0


sys.exit(main(sys.argv[1:]))
