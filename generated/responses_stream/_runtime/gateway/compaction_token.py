"""The ``encrypted_content`` of the gateway's own ``compaction`` items.

It is an encoding, not encryption: ``rsgc1.`` then the unpadded base64url of
``{"summary": ...}``.  It holds only the summary text, which the client could as
well have sent as a message, so it needs no secret and no key.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from .errors import GatewayError, bad_request

PREFIX = "rsgc1."


def seal_summary(summary: str) -> str:
    """The token that carries ``summary``."""
    raw = json.dumps({"summary": summary}, ensure_ascii=False).encode()
    return PREFIX + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def open_summary(token: Any, param: str) -> str:
    """The summary in ``token``; a 400 naming ``param`` for anything else."""
    if not isinstance(token, str) or not token.startswith(PREFIX):
        raise _invalid(param)
    data = token[len(PREFIX) :]
    try:
        raw = base64.b64decode(data + "=" * (-len(data) % 4), altchars=b"-_", validate=True)
        body = json.loads(raw)
    except (ValueError, binascii.Error):
        raise _invalid(param) from None
    summary = body.get("summary") if isinstance(body, dict) else None
    if not isinstance(summary, str):
        raise _invalid(param)
    return summary


def _invalid(param: str) -> GatewayError:
    return bad_request(
        "this compaction item was not made by this gateway, so it cannot be read",
        param,
        code="invalid_encrypted_content",
    )
