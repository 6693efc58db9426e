"""Resource limits shared by the producer (stream processor) and the SSE parser."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import BadValue, ProcessorError

MIB = 1024 * 1024

LIMIT_EXCEEDED = "limit_exceeded"
"""The ``code`` of the ``error`` event sent when a stream goes over a limit."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Caps on what one stream may accumulate; ``None`` disables a cap.

    ``max_item_text_chars``: characters accumulated per output item, over all
    its texts (every part's text, arguments, code, input...).
    ``max_output_items``: output items per response.
    ``max_line_bytes`` / ``max_event_bytes``: for SSE parsers, the longest line
    and the largest event (all its ``data`` lines) accepted.
    """

    max_item_text_chars: int | None = 64 * MIB
    max_output_items: int | None = 4096
    max_line_bytes: int | None = 16 * MIB
    max_event_bytes: int | None = 64 * MIB

    def __post_init__(self) -> None:
        for name in (
            "max_item_text_chars",
            "max_output_items",
            "max_line_bytes",
            "max_event_bytes",
        ):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise BadValue(f"Limits.{name} must be a positive int or None, got {value!r}")


DEFAULT_LIMITS = Limits()


class LimitExceeded(ProcessorError):
    """A stream went over one of its ``Limits``.

    ``limit`` names the field of ``Limits``, ``value`` is its setting.  The stream
    processor has already ended the stream with ``error`` (code ``limit_exceeded``)
    and ``response.failed`` when it raises this, unless its ``fail_on_limit`` is off.
    """

    def __init__(self, limit: str, value: int, what: str) -> None:
        self.limit = limit
        self.value = value
        self.code = LIMIT_EXCEEDED
        super().__init__(f"{what} exceeds Limits.{limit}={value}")
