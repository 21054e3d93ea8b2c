"""One plugin registry for tools, models, strategies, the app's pages, checks and charts.

Every built-in is declared once, as an entry point in pyproject.toml, exactly as an outside
plugin declares its own. An installed project reads them from its distribution's metadata; a
source checkout (the tests run from a plain clone, nothing pip-installed) reads the same table
from the pyproject.toml beside the package, so the two can never disagree. Installing sorts the
table by name, so names are listed by name either way; a consumer wanting another order (the
default strategy first) says so.
"""

from __future__ import annotations

import functools
import importlib
import tomllib
from importlib.metadata import PackageNotFoundError, distribution, entry_points
from pathlib import Path
from typing import Any, Generic, TypeVar

T = TypeVar("T")
DISTRIBUTION = "treadwise"
PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def load(target: str) -> Any:
    """What a "module:attribute" target names (a bare "module" names the module)."""
    module_name, _, attr = target.partition(":")
    found: Any = importlib.import_module(module_name.strip())
    for part in filter(None, attr.strip().split(".")):
        found = getattr(found, part)
    return found


@functools.cache
def declared(pyproject: Path = PYPROJECT) -> dict[str, dict[str, str]]:
    """Group -> {name: "module:attribute"}: this project's own entry points. From the source
    checkout's pyproject.toml when there is one (installed or not, the code that runs is the
    checkout's), else from the installed distribution."""
    if pyproject.is_file():
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
        if project.get("name") == DISTRIBUTION:
            return {group: dict(table) for group, table in
                    project.get("entry-points", {}).items()}
    try:
        found = distribution(DISTRIBUTION).entry_points
    except PackageNotFoundError:
        return {}
    groups: dict[str, dict[str, str]] = {}
    for point in found:
        groups.setdefault(point.group, {})[point.name] = point.value
    return groups


class Registry(Generic[T]):
    """Named plugins of one kind, found in this order: registered at run time (a decorator or
    an embedding app), this project's own entry points, or another distribution's under the
    entry-point group `group`.

    A target's module may register richer entries on import (a decorator); otherwise the
    target itself is the entry.
    """

    def __init__(self, group: str) -> None:
        self.group = group
        self.entries: dict[str, T] = {}

    def add(self, name: str, entry: T) -> T:
        self.entries[name] = entry
        return entry

    def targets(self) -> dict[str, str]:
        """Name -> "module:attribute", built-ins first, each part by name; a plugin never
        replaces a built-in."""
        builtins = dict(sorted(declared().get(self.group, {}).items()))
        found = sorted((ep.name, ep.value) for ep in entry_points(group=self.group))
        return {**builtins, **{n: v for n, v in found if n not in builtins}}

    def names(self) -> list[str]:
        """Every name that `get` can resolve, without importing any plugin."""
        return list(dict.fromkeys([*self.targets(), *self.entries]))

    def get(self, name: str) -> T | None:
        """The entry named `name` (its plugin imported on first use), or None if unknown."""
        if name in self.entries:
            return self.entries[name]
        # A built-in is found without scanning every installed distribution's entry points
        # (tens of milliseconds, and an agent looks up its toolsets each time it is made).
        target = declared().get(self.group, {}).get(name) or self.targets().get(name)
        if target is None:
            return None
        loaded = load(target)
        return self.entries.get(name, loaded)

    def load_all(self) -> dict[str, T]:
        """Every entry, each plugin imported, in `names()` order (built-ins, then installed
        plugins, then run-time ones): never the order modules happened to import in."""
        loaded = {name: entry for name in self.names() if (entry := self.get(name)) is not None}
        return {**loaded, **{n: e for n, e in self.entries.items() if n not in loaded}}
