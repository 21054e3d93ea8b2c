"""Reading the project's YAML data files, with one clear line naming the file and the place."""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ValidationError
from pydantic_core import ErrorDetails


def _non_empty(value: str) -> str:
    if not value.strip():
        raise ValueError("must be a non-empty string")
    return value.strip()


# A string with something in it besides white space, stripped.
Text = Annotated[str, AfterValidator(_non_empty)]


# libyaml's loader, when PyYAML was built with it, reads the same documents about eight times
# faster than the pure-Python one (every YAML file of the project: 350 -> 41 ms measured here),
# in every process that starts: the app, each CLI run, each sweep worker. A text it refuses is
# read again by the pure-Python loader, whose messages say where and what is wrong.
_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """The YAML text's value, as yaml.safe_load gives it; its yaml.YAMLError when it has none."""
    try:
        return yaml.load(text, Loader=_FAST_LOADER)  # a safe loader, C or Python
    except yaml.YAMLError:
        return yaml.safe_load(text)


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
        found = load_yaml(data.decode("utf-8"))
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


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model an annotation holds (through Optional, list, dict, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) is Literal:
        return None
    for arg in typing.get_args(annotation):
        if (found := _model_in(arg)) is not None:
            return found
    if isinstance(annotation, types.UnionType):
        return next(filter(None, map(_model_in, annotation.__args__)), None)
    return None


def _known_fields(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The fields allowed where an unknown one was found."""
    for part in loc:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        if field is None:
            continue
        inner = _model_in(field.annotation)
        if inner is None:
            return []
        model = inner
    return sorted(model.model_fields)


def where(loc: tuple[Any, ...]) -> str:
    """("variations", "short", "max_tokens") -> variations.short.max_tokens; indexes as [i]."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def describe(error: ErrorDetails, model: type[BaseModel]) -> tuple[str, str]:
    """(field, message) for one pydantic error, in the words a grid's author would use."""
    loc = tuple(p for p in error["loc"] if not (isinstance(p, str) and "[" in p))
    if error["type"] == "extra_forbidden":
        known = _known_fields(model, loc[:-1])
        return where(loc[:-1]), (f"unknown field {loc[-1]!r}; known: {', '.join(known)}"
                                 if known else f"unknown field {loc[-1]!r}")
    if error["type"] == "missing":
        return where(loc), "is required"
    message = error["msg"].removeprefix("Value error, ")
    if "input" in error and error["type"] not in ("list_type", "dict_type", "model_type"):
        message += f" (got {error['input']!r})"
    return where(loc), message


def validate_file(model: type[BaseModel], data: dict[str, Any], path: Path,
                  error: type[Exception]) -> Any:
    """The file's data as `model`, or `error` naming the file, the field and what is wrong."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        lines = []
        for item in exc.errors()[:5]:
            field, message = describe(item, model)
            lines.append(f"{field}: {message}" if field else message)
        raise error(f"{path}: " + "; ".join(lines)) from None
