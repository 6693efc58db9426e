"""The gateway's logging: text or JSON lines, each with its request id, keys masked.

``log_config(level, "text")`` is uvicorn's own look with `` [req_...]`` after each line
of a request; ``"json"`` writes one JSON object per line: ``time`` (UTC, ISO 8601),
``level``, ``logger``, ``message``, ``request_id`` (null outside a request), and what
the record carries besides (an error's ``error_status``, ``error_code``,
``error_param``; an access line's ``client``, ``method``, ``path``, ``status``).
Every handler masks keys and bearer tokens (:class:`errors.RedactSecrets`).
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from ..core.errors import BadValue
from .errors import RedactSecrets
from .request_ids import current_request_id

FORMATS = ("text", "json")
# What every LogRecord has: left out of a JSON line's extra fields.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "color_message",
    "request_id",
    "request_tag",
}


class RequestIdFilter(logging.Filter):
    """Puts the request's id on each record (``request_id``; ``request_tag`` for text)."""

    def filter(self, record: logging.LogRecord) -> bool:
        rid = current_request_id()
        record.request_id = rid
        record.request_tag = f" [{rid}]" if rid else ""
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per record (see the module doc)."""

    def format(self, record: logging.LogRecord) -> str:
        seconds = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        line: dict[str, Any] = {
            "time": f"{seconds}.{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None),
        }
        args = record.args
        if record.name == "uvicorn.access" and isinstance(args, tuple) and len(args) == 5:
            client, method, path, _, status = args
            line.update(client=client, method=method, path=path, status=status)
        for name, value in vars(record).items():
            if name not in _STANDARD and name not in line:
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def log_config(level: str = "info", fmt: str = "text") -> dict[str, Any]:
    """A ``logging.config.dictConfig`` for uvicorn's loggers and the gateway's."""
    if fmt not in FORMATS:
        raise BadValue(f"the log format must be one of {FORMATS}")
    filters = {
        "redact": {"()": RedactSecrets},
        "request_id": {"()": RequestIdFilter},
    }
    if fmt == "json":
        formatters: dict[str, Any] = {
            "default": {"()": JsonFormatter},
            "access": {"()": JsonFormatter},
        }
    else:
        formatters = {
            "default": {
                "()": "uvicorn.logging.DefaultFormatter",
                "fmt": "%(levelprefix)s %(message)s%(request_tag)s",
                "use_colors": None,
            },
            "access": {
                "()": "uvicorn.logging.AccessFormatter",
                "fmt": '%(levelprefix)s %(client_addr)s - "%(request_line)s" '
                "%(status_code)s%(request_tag)s",
                "use_colors": None,
            },
        }
    handler = {"class": "logging.StreamHandler", "filters": ["request_id", "redact"]}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": filters,
        "formatters": formatters,
        "handlers": {
            "default": {**handler, "formatter": "default", "stream": "ext://sys.stderr"},
            "access": {**handler, "formatter": "access", "stream": "ext://sys.stdout"},
        },
        "loggers": {
            "uvicorn": {"handlers": ["default"], "level": level.upper(), "propagate": False},
            "uvicorn.error": {"level": level.upper()},
            "uvicorn.access": {
                "handlers": ["access"],
                "level": level.upper(),
                "propagate": False,
            },
            "responses_stream": {
                "handlers": ["default"],
                "level": level.upper(),
                "propagate": False,
            },
        },
    }
