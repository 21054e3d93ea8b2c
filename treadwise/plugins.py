"""One plugin registry for tools, models, strategies, checks and charts."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def load(target: str) -> Any:
    """What a "module:attribute" target names (a bare "module" names the module)."""
    module_name, _, attr = target.partition(":")
    found: Any = importlib.import_module(module_name.strip())
    for part in filter(None, attr.strip().split(".")):
        found = getattr(found, part)
    return found


class Registry(Generic[T]):
    """Named plugins of one kind, found in this order: registered at run time (a decorator or
    an embedding app), built in, or installed under the entry-point group `group`.

    Built-ins are "module:attribute" strings, the same form an entry point carries, so the
    project works without being pip-installed and outside plugins need no special casing. A
    target's module may register richer entries on import (a decorator); otherwise the target
    itself is the entry.
    """

    def __init__(self, group: str, builtins: Mapping[str, str] | None = None) -> None:
        self.group = group
        self.builtins = dict(builtins or {})
        self.entries: dict[str, T] = {}

    def add(self, name: str, entry: T) -> T:
        self.entries[name] = entry
        return entry

    def targets(self) -> dict[str, str]:
        """Name -> "module:attribute", built-ins first; a plugin never replaces a built-in."""
        found = {ep.name: ep.value for ep in entry_points(group=self.group)}
        return {**self.builtins, **{n: v for n, v in found.items() if n not in self.builtins}}

    def names(self) -> list[str]:
        """Every name that `get` can resolve, without importing any plugin."""
        return list(dict.fromkeys([*self.targets(), *self.entries]))

    def get(self, name: str) -> T | None:
        """The entry named `name` (its plugin imported on first use), or None if unknown."""
        if name in self.entries:
            return self.entries[name]
        target = self.targets().get(name)
        if target is None:
            return None
        loaded = load(target)
        return self.entries.get(name, loaded)

    def load_all(self) -> dict[str, T]:
        """Every entry, each plugin imported, in `names()` order (built-ins as declared, then
        installed plugins, then run-time ones): never the order modules happened to import in."""
        loaded = {name: entry for name in self.names() if (entry := self.get(name)) is not None}
        return {**loaded, **{n: e for n, e in self.entries.items() if n not in loaded}}
