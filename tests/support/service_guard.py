"""A test may use a service (PostgreSQL, the local model, Dask, Chromium) only if it carries
the service's marker, so none can hide in `-m quick`.

The fixtures put the marker on every test that names them (tests/conftest.py). Two ways round
that are checked while each test runs: starting a service by hand, and asking for a service's
fixture at run time (`request.getfixturevalue`), which no marker follows. Both fail the test
unless it carries the marker (a parameter that needs a service marks itself:
`pytest.param("postgres", marks=pytest.mark.postgres)`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest


def _refuse(what: str, service: str, services: Mapping[str, str]) -> None:
    fixture = next(name for name, marker in services.items() if marker == service)
    pytest.fail(f"this test {what} but is not marked `{service}`: request the "
                f"`{fixture}` fixture (or a fixture built on it) by name, or mark the "
                f"parameter that needs it, so the test is left out of `-m quick`", pytrace=False)


def _guarded(original: Callable[..., Any], service: str, services: Mapping[str, str],
             marked: Callable[[], set[str]]) -> Callable[..., Any]:
    @functools.wraps(original)
    def launch(*args: Any, **kwargs: Any) -> Any:
        if service not in marked():
            _refuse(f"starts {service}", service, services)
        return original(*args, **kwargs)

    return launch


def _services(request: pytest.FixtureRequest, argname: str,
              services: Mapping[str, str]) -> set[str]:
    """The services the fixture `argname` uses, itself or through the fixtures it requests."""
    manager = request._fixturemanager  # pytest has no public lookup of a fixture's closure
    seen: set[str] = set()
    todo = [argname]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            for fixturedef in manager.getfixturedefs(name, request.node) or ():
                todo.extend(fixturedef.argnames)
    return {services[name] for name in seen if name in services}


def _checked(original: Callable[..., Any], services: Mapping[str, str],
             marked: Callable[[], set[str]]) -> Callable[..., Any]:
    @functools.wraps(original)
    def getfixturevalue(request: pytest.FixtureRequest, argname: str) -> Any:
        for service in sorted(_services(request, argname, services) - marked()):
            _refuse(f"asks for `{argname}` at run time, which uses {service},", service,
                    services)
        return original(request, argname)

    return getfixturevalue


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
def guarding(services: Mapping[str, str], marked: Callable[[], set[str]]) -> Iterator[None]:
    """Check every launcher and run-time fixture request while the block runs.

    `services` maps each service fixture to its marker; `marked()` gives the markers of the
    test running now.
    """
    with pytest.MonkeyPatch.context() as patch:
        for owner, name, service in _targets():
            patch.setattr(owner, name,
                          _guarded(getattr(owner, name), service, services, marked))
        patch.setattr(pytest.FixtureRequest, "getfixturevalue",
                      _checked(pytest.FixtureRequest.getfixturevalue, services, marked))
        yield
