"""What the async entry points share: closing the source they read."""

from __future__ import annotations


async def aclose(source: object) -> None:
    """Close a source that can be closed (an async generator, an httpx stream)."""
    close = getattr(source, "aclose", None)
    if close is not None:
        await close()
