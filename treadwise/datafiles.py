"""Reading the project's YAML data files, with one clear error naming the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def read_yaml_mapping(path: Path, error: type[Exception], what: str = "file") -> dict[str, Any]:
    """The top-level mapping of a YAML file; `error` says which file and what is wrong."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise error(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        raise error(f"{path}: not valid YAML ({exc})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise error(f"{path}: the {what} must hold a mapping at the top level")
    return data
