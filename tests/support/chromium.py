"""How tests and benchmarks start Debian's Chromium (Playwright cannot download browsers), and
the `browser` fixture that browser test modules share (they name this file in `pytest_plugins`):
one Chromium for the tests of a process that run one after another, a context of their own each.

PYTEST_DONT_REWRITE: the modules naming this plugin import it first, too late for pytest to
rewrite its asserts (it has none) and early enough for it to warn that it could not."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
TIMEOUT_MS = 90_000
# How often a long wait_for_function checks its condition: by default it checks every animation
# frame, which keeps Chromium drawing 60 frames a second for as long as a reply takes.
POLL_MS = 100
# What a kept page can be given without a context of its own (accept_downloads: Playwright's
# default, True, only), and the viewport a new context would have.
PAGE_OPTIONS = {"viewport", "color_scheme", "reduced_motion", "accept_downloads"}
PLAYWRIGHT_VIEWPORT = {"width": 1280, "height": 720}
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
        # Pages earlier tests have left, emptied for the next visitor, and the origins each
        # page has been on (whose cookies and storage it must drop when it is left).
        self._idle: list[Any] = []
        self._origins: dict[int, tuple[Any, set[str]]] = {}

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
        self._idle, self._origins = [], {}

    def visitor(self, timeout_ms: int, options: dict[str, Any]) -> Any:
        """A page as a new visitor gets it: one a test has left (emptied by leave()), else
        one in a new context; in the view the options ask for."""
        while self._idle and self._idle[-1].is_closed():
            self._idle.pop()
        if self._idle:
            page = self._idle.pop()
        else:
            page = self._browser.new_context().new_page()
            origins: set[str] = set()
            self._origins[id(page)] = (page, origins)
            page.on("framenavigated", lambda frame: origins.add(origin_of(frame.url)))
        page.set_viewport_size(options.get("viewport", PLAYWRIGHT_VIEWPORT))
        page.emulate_media(color_scheme=options.get("color_scheme", "light"),
                           reduced_motion=options.get("reduced_motion", "no-preference"))
        page.set_default_timeout(timeout_ms)
        return page

    def leave(self, page: Any) -> None:
        """Empty a page of what its visitor left (cookies, storage, permissions, the pointer's
        place) and keep it for the next; a page that cannot be emptied is closed instead."""
        kept, origins = self._origins.get(id(page), (None, set()))
        if kept is not page or page.is_closed():
            page.context.close()
            return
        try:
            page.evaluate("() => { try { sessionStorage.clear(); } catch (e) {} }")
            page.goto("about:blank")
            page.context.clear_cookies()
            page.context.clear_permissions()
            cdp = page.context.new_cdp_session(page)
            for origin in origins - {"null"}:
                cdp.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"})
            cdp.detach()
            origins.clear()
            page.mouse.move(0, 0)
        except Exception:  # noqa: BLE001 - a page in a bad state is simply not kept
            self._origins.pop(id(page), None)
            page.context.close()
            return
        self._idle.append(page)


SHARED = SharedBrowser()


@pytest.fixture(scope="module")
def browser(chromium: str) -> Any:
    """Debian's Chromium, shared with the browser tests before and after this module's (open
    pages with new_page). Every test of a module using it uses it, so it stays up from the
    module's first test to its last."""
    return SHARED.get(chromium)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After a test's fixtures are torn down: stop the browser unless the next test uses it."""
    if nextitem is None or "browser" not in getattr(nextitem, "fixturenames", ()):
        SHARED.stop()


def new_page(browser: Any, timeout_ms: int = TIMEOUT_MS, *, own_context: bool = False,
             **options: Any) -> Any:
    """A page as a new visitor gets it (no cookies, storage or permissions from before); close
    it with close_page().

    A page an earlier test left is emptied and given again: a new context costs Chromium a new
    renderer, about 2.4 s of CPU for the app's page against 0.9 s in a kept one. A test that
    adds its own event listeners, or asks for more than the view (viewport, colour scheme,
    reduced motion), gets a context of its own (own_context=True)."""
    if own_context or set(options) - PAGE_OPTIONS or options.get("accept_downloads") is False \
            or browser is not SHARED._browser:
        page = browser.new_context(**options).new_page()
        page.set_default_timeout(timeout_ms)
        return page
    return SHARED.visitor(timeout_ms, options)


def close_page(page: Any) -> None:
    """The test is done with a page from new_page()."""
    SHARED.leave(page)


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") else "null"


def settled(page: Any) -> None:
    """Until the page has drawn two frames: after a resize, its resize observers and the
    re-layout they cause have run (no fixed wait)."""
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => "
                  "requestAnimationFrame(done)))")
