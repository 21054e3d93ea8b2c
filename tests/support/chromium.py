"""How tests and benchmarks start Debian's Chromium (Playwright cannot download browsers), and
the `browser` fixture that browser test modules share (they name this file in `pytest_plugins`):
one Chromium for the tests of a process that run one after another, a context of their own each.

PYTEST_DONT_REWRITE: the modules naming this plugin import it first, too late for pytest to
rewrite its asserts (it has none) and early enough for it to warn that it could not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
TIMEOUT_MS = 90_000
# How often a long wait_for_function checks its condition: by default it checks every animation
# frame, which keeps Chromium drawing 60 frames a second for as long as a reply takes.
POLL_MS = 100
INSTALL_HINT = (f"Debian's Chromium was not found at {CHROMIUM} (Playwright drives it; it cannot "
                "download its own browser here). Install it with `sh .ci/install-system`, and "
                "Playwright with `pip install -r requirements-dev.txt`, then run the tests again.")


def require_chromium() -> str:
    """The Chromium executable; RuntimeError saying how to install it when it is missing."""
    if not Path(CHROMIUM).exists():
        raise RuntimeError(INSTALL_HINT)
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as exc:
        raise RuntimeError(INSTALL_HINT) from exc
    return CHROMIUM


class SharedBrowser:
    """Playwright's driver and one Chromium, started on first use and stopped by stop().

    Kept only while browser tests run back to back: as long as Playwright's sync API runs, the
    main thread counts as running an asyncio loop, and another test's asyncio.run() would fail.
    """

    def __init__(self) -> None:
        self._playwright: Any = None
        self._browser: Any = None

    def get(self, executable: str = CHROMIUM) -> Any:
        if self._browser is None or not self._browser.is_connected():
            self.stop()
            from playwright.sync_api import sync_playwright

            self._playwright = sync_playwright().start()
            self._browser = self._playwright.chromium.launch(executable_path=executable,
                                                            args=CHROMIUM_ARGS)
        return self._browser

    def stop(self) -> None:
        if self._browser is not None:
            self._browser.close()
        if self._playwright is not None:
            self._playwright.stop()
        self._playwright = self._browser = None


SHARED = SharedBrowser()


@pytest.fixture(scope="module")
def browser(chromium: str) -> Any:
    """Debian's Chromium, shared with the browser tests before and after this module's (open
    pages in a context of their own: new_page). Every test of a module using it uses it, so it
    stays up from the module's first test to its last."""
    return SHARED.get(chromium)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After a test's fixtures are torn down: stop the browser unless the next test uses it."""
    if nextitem is None or "browser" not in getattr(nextitem, "fixturenames", ()):
        SHARED.stop()


def new_page(browser: Any, timeout_ms: int = TIMEOUT_MS, **context: Any) -> Any:
    """A page in a new browser context (its own cookies and storage: a new visitor); close it
    with page.context.close()."""
    page = browser.new_context(**context).new_page()
    page.set_default_timeout(timeout_ms)
    return page


def settled(page: Any) -> None:
    """Until the page has drawn two frames: after a resize, its resize observers and the
    re-layout they cause have run (no fixed wait)."""
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => "
                  "requestAnimationFrame(done)))")
