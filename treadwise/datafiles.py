"""Reading the project's YAML data files, with one clear line naming the file and the place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """Where and what, on one line: "line 2, column 7: expected ',' or ']', but got ':'"."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    text = " ".join(f"{problem}{f' ({context})' if context else ''}".split())
    return f"line {mark.line + 1}, column {mark.column + 1}: {text}" if mark else text


def _not_utf8(data: bytes, exc: UnicodeDecodeError) -> str:
    line = data[:exc.start].count(b"\n") + 1
    return (f"not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}); save it as UTF-8")


def read_yaml_mapping(path: Path, error: type[Exception], what: str = "file") -> dict[str, Any]:
    """The top-level mapping of a YAML file; `error` says, on one line, which file and what is
    wrong where (the line, for YAML that does not parse or text that is not UTF-8)."""
    try:
        data = Path(path).read_bytes()
        found = yaml.safe_load(data.decode("utf-8"))
    except OSError as exc:
        raise error(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise error(f"{path}: the {what} is {_not_utf8(data, exc)}") from None
    except yaml.YAMLError as exc:
        raise error(f"{path}: not valid YAML at {_yaml_problem(exc)}") from None
    if found is None:
        return {}
    if not isinstance(found, dict):
        raise error(f"{path}: the {what} must hold a mapping at the top level")
    return found
