"""Gradio without its type-stub writer: about 2 s less CPU each time a process imports it.

As each component class is defined, Gradio 6 (`gradio.component_meta.create_or_modify_pyi`)
reads the class's source file, parses it twice, renders a stub from a template and writes a
`.pyi` beside the source when the stub differs: stubs for editors, which nothing reads at run
time. For Gradio's own 80-odd components that is about 2 of the 7 core-seconds `import gradio`
takes on this project's 2-core machine (measured), in every process that starts the app: each
server, each replica, each test worker. For components defined elsewhere it writes into that
package's folder.

`install()` makes Gradio's loader leave the writer out, before any component is defined. It does
nothing when Gradio is already imported (the stubs were then made as usual) or when a later
Gradio has no such function.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any

MODULE = "gradio.component_meta"
WRITER = "create_or_modify_pyi"


def no_stub(*_args: Any, **_kwargs: Any) -> None:
    """What Gradio calls instead of writing a component's stub."""


class _WithoutStubs(importlib.abc.MetaPathFinder):
    """Finds `gradio.component_meta` as usual and swaps the writer out once it has run."""

    def find_spec(self, name: str, path: Any, target: ModuleType | None = None) -> Any:
        if name != MODULE:
            return None
        sys.meta_path.remove(self)  # once: the module is imported once
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            load(module)
            if callable(getattr(module, WRITER, None)):
                setattr(module, WRITER, no_stub)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install() -> None:
    """Before Gradio is imported: its components are defined without writing stubs."""
    if MODULE in sys.modules or any(isinstance(f, _WithoutStubs) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _WithoutStubs())
