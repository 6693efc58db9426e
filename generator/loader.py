"""Load spec files from YAML, keeping the line of every key for error messages."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from . import spec_model
from .errors import SpecError, did_you_mean
from .spec_model import SPEC_FILE

Path_ = tuple[str | int, ...]


@dataclass
class Source:
    """One spec file: its display name, parsed model, and key lines."""

    name: str
    model: Any
    lines: dict[Path_, int] = field(default_factory=dict)

    def line(self, path: Path_) -> int:
        """The line of the deepest known key on ``path`` (1-based)."""
        for end in range(len(path), -1, -1):
            found = self.lines.get(tuple(path[:end]))
            if found is not None:
                return found
        return 1

    def error(self, path: Path_, message: str) -> SpecError:
        """A ``SpecError`` at the line of ``path`` in this file."""
        return SpecError(self.name, self.line(path), ".".join(map(str, path)) or "-", message)


def comment_text(text: str) -> str:
    """``text`` made safe for one comment line: every character that is not
    printable (control characters, line and paragraph separators, lone
    surrogates) becomes its escape, so nothing can end the comment's line."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def _construct(
    node: yaml.Node, path: Path_, lines: dict[Path_, int], errors: list[SpecError], name: str
) -> Any:
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                errors.append(
                    SpecError(
                        name, key_node.start_mark.line + 1, _dotted(path), "keys must be scalars"
                    )
                )
                continue
            key = _text(key_node.value, key_node, errors, name, path)
            if key in out:
                errors.append(
                    SpecError(
                        name, key_node.start_mark.line + 1, _dotted(path + (key,)), "duplicate key"
                    )
                )
                continue
            lines[path + (key,)] = key_node.start_mark.line + 1
            out[key] = _construct(value_node, path + (key,), lines, errors, name)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [
            _construct(child, path + (i,), lines, errors, name)
            for i, child in enumerate(node.value)
        ]
    value = _SCALARS.construct_object(node)
    if isinstance(value, str):
        return _text(value, node, errors, name, path)
    if isinstance(value, float) and not math.isfinite(value):
        errors.append(
            SpecError(name, node.start_mark.line + 1, _dotted(path), f"{value} is not allowed")
        )
        return None
    if value is not None and not isinstance(value, (bool, int, float)):
        errors.append(
            SpecError(
                name,
                node.start_mark.line + 1,
                _dotted(path),
                f"unsupported YAML value of type {type(value).__name__}; quote it as a string",
            )
        )
        return None
    return value


def _text(value: str, node: yaml.Node, errors: list[SpecError], name: str, path: Path_) -> str:
    """Join escaped surrogate pairs (``"\\ud83d\\ude00"``) into their character;
    a lone surrogate is an error, since it cannot be written as UTF-8."""
    if not any("\ud800" <= c <= "\udfff" for c in value):
        return value
    try:
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:
        errors.append(
            SpecError(
                name,
                node.start_mark.line + 1,
                _dotted(path),
                "a string has a lone surrogate (an unpaired \\ud800-\\udfff escape)",
            )
        )
        return value.encode("utf-8", "replace").decode("utf-8")


class _ScalarLoader(yaml.SafeLoader):
    def __init__(self) -> None:
        super().__init__("")


_SCALARS = _ScalarLoader()


def _dotted(path: Path_) -> str:
    return ".".join(map(str, path)) or "-"


def load_file(path: Path, name: str) -> tuple[Source | None, list[SpecError]]:
    """Parse one YAML spec file into its model, collecting every error."""
    errors: list[SpecError] = []
    try:
        text = path.read_text(encoding="utf-8")
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        return None, [SpecError(name, line, "-", f"YAML syntax error: {exc.problem}")]
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow, e.g. a raw NUL
        line = text[: exc.position].count("\n") + 1
        return None, [
            SpecError(
                name,
                line,
                "-",
                f"YAML syntax error: character U+{int(exc.character):04X}: {exc.reason}",
            )
        ]
    except yaml.YAMLError as exc:
        return None, [SpecError(name, 1, "-", f"YAML error: {comment_text(str(exc))}")]
    except (OSError, UnicodeDecodeError) as exc:
        return None, [SpecError(name, 1, "-", f"cannot read file: {exc}")]
    if node is None:
        return None, [SpecError(name, 1, "-", "empty spec file")]
    lines: dict[Path_, int] = {}
    data = _construct(node, (), lines, errors, name)
    source = Source(name, None, lines)
    if not isinstance(data, dict):
        return None, [source.error((), "a spec file must be a mapping")]
    try:
        source.model = SPEC_FILE.validate_python(data, by_alias=True)
    except ValidationError as exc:
        for err in exc.errors():
            if err["type"] == "string_type" and isinstance(err["input"], dict):
                continue  # the mapping branch of a str-or-mapping key reports the real problem
            loc = tuple(err["loc"])
            errors.append(source.error(_clean_loc(loc, data), _message(err)))
    return (source if not errors else None), errors


def _clean_loc(loc: Path_, data: Any) -> Path_:
    """Drop pydantic's union-branch labels, keeping the keys that are in the data."""
    out: list[str | int] = []
    node = data
    for part in loc:
        if isinstance(node, dict) and part in node:
            out.append(part)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            out.append(part)
            node = node[part]
        elif isinstance(part, str) and part in ("from", "with") and isinstance(node, dict):
            out.append(part)
    return tuple(out) if out or not loc else tuple(p for p in loc[-1:] if isinstance(p, str))


@cache
def _spec_keys() -> frozenset[str]:
    """Every key some spec file may hold, for a near miss's suggestion."""
    keys: set[str] = set()
    for obj in vars(spec_model).values():
        if isinstance(obj, type) and issubclass(obj, BaseModel):
            keys.update(f.alias or name for name, f in obj.model_fields.items())
    return frozenset(keys)


def _message(err: Any) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        key = str(err["loc"][-1])
        return f"unknown field {key!r}{did_you_mean(key, _spec_keys())}"
    if kind == "missing":
        return f"missing field {err['loc'][-1]!r}"
    if kind == "union_tag_invalid":
        return (
            f"unknown kind {err['input'].get('kind')!r}"
            if isinstance(err["input"], dict)
            else err["msg"]
        )
    if kind == "union_tag_not_found":
        return "missing field 'kind'"
    return str(err["msg"])


def spec_files(spec_dir: Path, overlays: Sequence[Path] = ()) -> list[tuple[Path, str]]:
    """Every ``*.yaml`` of ``spec_dir`` and of each overlay folder, with its display name.

    An overlay file replaces the file at the same relative path in the folders
    before it (``items/message.yaml`` replaces the base message item); any other
    overlay file adds to the catalogue, whatever its name (its ``kind`` says what
    it is).  Sorted by relative path, so the result does not depend on the folders'
    locations.
    """
    chosen: dict[str, tuple[Path, str]] = {}
    for root in (spec_dir, *overlays):
        for path in sorted(p for p in root.rglob("*.yaml") if p.is_file()):
            rel = path.relative_to(root).as_posix()
            chosen[rel] = (path, f"{root.name}/{rel}")
    return [chosen[rel] for rel in sorted(chosen)]


def _as_typed(root: Path) -> Path:
    """A spec folder as its user named it: as typed when relative; an absolute one
    inside the working directory (the catalogue shipped beside it) relative to it."""
    if root.is_absolute():
        try:
            return root.relative_to(Path.cwd())
        except ValueError:
            return root
    return root


def shown_paths(spec_dir: Path, overlays: Sequence[Path] = ()) -> dict[str, str]:
    """Each spec file's display name mapped to its path as the user typed its folder,
    for error messages (display names stay folder-relative, so output never depends on
    where the folders are)."""
    shown: dict[str, str] = {}
    for root in (spec_dir, *overlays):
        base = _as_typed(root)
        shown[root.name] = str(base)
        if root.is_dir():
            for path in root.rglob("*.yaml"):
                rel = path.relative_to(root).as_posix()
                shown[f"{root.name}/{rel}"] = str(base / rel)
    return shown


def load_dir(spec_dir: Path, overlays: Sequence[Path] = ()) -> tuple[list[Source], list[SpecError]]:
    """Load every spec file of ``spec_dir`` and its overlays (see ``spec_files``)."""
    sources: list[Source] = []
    errors: list[SpecError] = []
    for root in (spec_dir, *overlays):
        if not root.is_dir():
            errors.append(SpecError(root.name, 1, "-", f"not a folder: {comment_text(str(root))}"))
    if errors:
        return sources, errors
    files = spec_files(spec_dir, overlays)
    if not files:
        errors.append(SpecError(spec_dir.name, 1, "-", "no spec files (*.yaml) found"))
    for path, name in files:
        if not name.isprintable():
            shown = comment_text(name)
            errors.append(
                SpecError(shown, 1, "-", "the file name has control characters; rename the file")
            )
            continue
        source, errs = load_file(path, name)
        errors.extend(errs)
        if source is not None:
            sources.append(source)
    return sources, errors
