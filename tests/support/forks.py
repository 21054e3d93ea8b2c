"""Processes for the concurrency tests, forked from a small server instead of the test process.

A pytest worker late in a run holds Gradio, SymPy, a loaded local model and more, and a fork
copies its page tables (and later the pages it touches) every time: the 240 forks of one store
test cost about 20 s of CPU in a whole-suite run. The forkserver is a fresh process that imports
the test modules once; every child is forked from it.
"""

from __future__ import annotations

import multiprocessing
from multiprocessing import forkserver
from multiprocessing.context import ForkServerContext

_PRELOADED: list[str] = []


def small_forks(module: str) -> ForkServerContext:
    """The forkserver context, its server holding `module` (whose functions the children run)
    imported before it forks any child; a server started without it is started again."""
    context = multiprocessing.get_context("forkserver")
    assert isinstance(context, ForkServerContext)
    if module not in _PRELOADED:
        _PRELOADED.append(module)
        forkserver._forkserver._stop()  # a server already running started without it
        context.set_forkserver_preload(list(_PRELOADED))
    return context
