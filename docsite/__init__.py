"""Build the documentation site (``make docs``): mermaid into the site, then a strict
MkDocs build.

Mermaid, which draws the item catalogue's state diagrams, is an npm package of 3.5 MB: it
is fetched once from the npm registry into a cache outside the repository, checked
against the registry's published SHA-512, and copied under ``docs/assets/vendor/`` (not
committed), so the site loads nothing from a CDN and works offline.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MERMAID_VERSION = "11.17.2"
MERMAID_URL = f"https://registry.npmjs.org/mermaid/-/mermaid-{MERMAID_VERSION}.tgz"
# the registry's "integrity" of that tarball (npm view mermaid@11.17.2 dist.integrity)
MERMAID_SHA512 = (
    "V6K3C8EBdEsPFZXSKMJe6ppQOENxuHARr9GvHX4hh47lAbhMRD9qf4oEK7LoaRQxULMa80/qt5gHO73aCleBBg=="
)
VENDOR = ROOT / "docs" / "assets" / "vendor" / "mermaid.min.js"


class SiteError(Exception):
    """The site cannot be built; the message says why and what to do."""


def cache_dir() -> Path:
    """Where fetched assets are kept: ``$RESPONSES_STREAM_DOCS_CACHE``, else
    ``~/.cache/responses-stream/docs``."""
    configured = os.environ.get("RESPONSES_STREAM_DOCS_CACHE")
    return Path(configured) if configured else Path.home() / ".cache/responses-stream/docs"


def mermaid_script() -> Path:
    """``mermaid.min.js`` of the pinned version, from the cache or else the registry."""
    cached = cache_dir() / f"mermaid-{MERMAID_VERSION}.min.js"
    if cached.is_file():
        return cached
    try:
        with urllib.request.urlopen(MERMAID_URL, timeout=60) as answer:
            tarball = answer.read()
    except OSError as exc:
        raise SiteError(
            f"cannot fetch mermaid {MERMAID_VERSION} from the npm registry ({exc}); "
            f"put its dist/mermaid.min.js at {cached}"
        ) from exc
    digest = base64.b64encode(hashlib.sha512(tarball).digest()).decode()
    if digest != MERMAID_SHA512:
        raise SiteError(f"mermaid {MERMAID_VERSION}: the tarball's SHA-512 is not the registry's")
    with tarfile.open(fileobj=io.BytesIO(tarball)) as tar:
        member = tar.extractfile("package/dist/mermaid.min.js")
        if member is None:
            raise SiteError(f"mermaid {MERMAID_VERSION}: no dist/mermaid.min.js in the tarball")
        script = member.read()
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_suffix(".partial")
    partial.write_bytes(script)
    partial.replace(cached)
    return cached


def build(site_dir: Path | None = None) -> Path:
    """Build the site strictly into ``site_dir`` (default ``site/``); return it."""
    VENDOR.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(mermaid_script(), VENDOR)
    site = site_dir or ROOT / "site"
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SiteError(f"mkdocs build failed:\n{done.stdout}{done.stderr}")
    return site
