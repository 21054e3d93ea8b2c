"""The browser tests' pages (tests/support/chromium.py): a page one test leaves is given to the
next as a new visitor would get it, with nothing of the last visitor's left in it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from tests.support.chromium import close_page, new_page
from tests.support.webapp import serve_in_process
from treadwise.settings import Settings

pytest_plugins = ["tests.support.chromium"]  # the `browser` fixture

LEFT = """() => [document.cookie, localStorage.getItem("left"), sessionStorage.getItem("left"),
                 innerWidth, matchMedia("(prefers-color-scheme: dark)").matches]"""


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    settings = dataclasses.replace(Settings.from_env(),
                                   data_dir=tmp_path_factory.mktemp("visitors") / "data")
    with serve_in_process(settings) as served:
        yield served


def test_a_page_given_again_holds_nothing_of_its_last_visitor(url: str, browser) -> None:
    first = new_page(browser, viewport={"width": 400, "height": 900}, color_scheme="dark")
    first.goto(url)
    first.locator("#message textarea").wait_for()
    first.evaluate("""() => { document.cookie = "left=1; path=/";
                              localStorage.setItem("left", "1");
                              sessionStorage.setItem("left", "1"); }""")
    first.context.grant_permissions(["clipboard-read"])
    assert first.evaluate(LEFT) == ["left=1", "1", "1", 400, True]
    close_page(first)

    second = new_page(browser)
    assert second is first  # the same page, emptied: no new renderer to start
    second.goto(url)
    second.locator("#message textarea").wait_for()
    assert second.evaluate(LEFT) == ["", None, None, 1280, False]
    assert second.evaluate(
        "async () => (await navigator.permissions.query({name: 'clipboard-read'})).state"
    ) != "granted"
    close_page(second)


def test_a_page_closed_by_its_test_is_not_given_again(url: str, browser) -> None:
    first = new_page(browser)
    first.context.close()
    second = new_page(browser)
    assert second is not first and not second.is_closed()
    second.goto(url)
    second.locator("#message textarea").wait_for()
    close_page(second)


def test_a_page_with_more_than_a_view_gets_a_context_of_its_own(browser) -> None:
    mobile = new_page(browser, is_mobile=True, viewport={"width": 400, "height": 900})
    listened = new_page(browser, own_context=True)
    kept = new_page(browser)
    assert len({id(mobile.context), id(listened.context), id(kept.context)}) == 3
    for page in (mobile, listened, kept):
        close_page(page)
    assert mobile.is_closed() and listened.is_closed() and not kept.is_closed()
