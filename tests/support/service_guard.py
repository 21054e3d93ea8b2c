"""Launching a service (PostgreSQL, the local model, Dask, Chromium) is allowed only after its
fixture ran in this process, so a test that starts one by hand cannot hide in `-m quick`."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

import pytest

FIXTURE = {"postgres": "postgres_cluster", "local_model": "local_model",
           "cluster": "dask_cluster", "browser": "chromium"}


def _guarded(original: Callable[..., Any], service: str, started: set[str]) -> Callable[..., Any]:
    @functools.wraps(original)
    def launch(*args: Any, **kwargs: Any) -> Any:
        if service not in started:
            pytest.fail(f"this test starts {service} without the `{FIXTURE[service]}` fixture: "
                        f"request the fixture so the test is marked `{service}` (and left out "
                        "of `-m quick`)", pytrace=False)
        return original(*args, **kwargs)

    return launch


def _targets() -> Iterator[tuple[Any, str, str]]:
    """(owner, attribute, service) of each launcher that can be imported here."""
    from tests.support import postgres_cluster

    yield postgres_cluster, "start_cluster", "postgres"
    with contextlib.suppress(ImportError):
        from treadwise.models.llamacpp import LlamaEngine

        yield LlamaEngine, "__init__", "local_model"
    from tests.support.dask_cluster import LoopbackCluster

    yield LoopbackCluster, "start", "cluster"
    with contextlib.suppress(ImportError):
        from distributed.deploy.local import LocalCluster

        yield LocalCluster, "__init__", "cluster"
    with contextlib.suppress(ImportError):
        from playwright.sync_api import BrowserType

        yield BrowserType, "launch", "browser"


@contextlib.contextmanager
def guarding(started: set[str]) -> Iterator[None]:
    """Wrap every launcher while the block runs; `started` names the services whose fixture ran."""
    with pytest.MonkeyPatch.context() as patch:
        for owner, name, service in _targets():
            patch.setattr(owner, name, _guarded(getattr(owner, name), service, started))
        yield
