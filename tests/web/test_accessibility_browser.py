"""The chat and Experiments pages for everyone, in Debian's Chromium: axe-core finds no serious or
critical violation in four views a page (1280 and 400 px, light and dark) after a tool-using
answer and after a sweep; the chat works from the keyboard alone; a finished reply is announced
once; a plot has a text alternative; both pages reflow at 320 px and at 200% zoom.

One app serves the module and the process's shared Chromium shows it; the chat and Experiments
pages are each opened once and looked at in every view (a view changes the window, not the page).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.chromium import POLL_MS, close_page, new_page
from tests.support.page_views import (
    VIEW_IDS,
    VIEWS,
    axe_violations,
    page_scrolls_sideways,
    show,
)
from tests.support.webapp import ROOMY_REPLY_MS, serve_in_process
from tests.web.test_chat_browser import GO, open_chat, slow_agent, step_held

TIMEOUT_MS = 90_000
INTEGRAL = "Calculate the integral of x\u00b2 from 0 to 3"
# Every new text of the page's live region, in order (installed before the question is sent).
LISTEN = """() => { window.__said = [];
  const inRegion = node => (node.nodeType === 1 ? node : node.parentElement)
    ?.closest('#tw-announce[aria-live="polite"]');
  new MutationObserver(records => {
    const region = records.map(r => inRegion(r.target)).find(Boolean);
    if (region && region.textContent) window.__said.push(region.textContent);
  }).observe(document.body, {childList: true, characterData: true, subtree: true}); }"""
FOCUSED = """() => { const e = document.activeElement;
  const owner = e && e.closest('[id]');
  return owner ? owner.id : (e ? e.tagName : ''); }"""


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("accessible")
    settings, agent = slow_agent(folder / "data")
    with serve_in_process(settings, agent, results_dir=folder / "results") as url:
        yield url


pytest_plugins = ["tests.support.chromium"]  # the `browser` fixture


def open_page(browser: Any, url: str) -> Any:
    page = new_page(browser, TIMEOUT_MS, viewport={"width": 1280, "height": 900},
                    accept_downloads=True)
    open_chat(page, url)
    return page


def wait_until_shown(page: Any, ids: list[str]) -> None:
    """Wait until every control is on the page, as a user waits to see it before pressing Tab
    (a control not drawn yet when the message box already has the focus would be skipped: one
    way to get what CI once saw, Tab never reaching Send; the cause was not found)."""
    for element_id in ids:
        page.locator(f"#{element_id}").first.wait_for()


def open_first_step(page: Any, tries: int = 3) -> None:
    """Click the first tool step's title until it opens, as a user clicks again: on a busy
    machine a click now and then leaves it closed (a whole run failed so; 3 of 8 tries once
    beside three CPU-bound processes, 0 of 16 in two more; the cause was not found)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    for _ in range(tries):
        page.locator("#chat .thought-group .title").first.click()
        try:
            page.wait_for_function("document.querySelector('#chat .thought-group .title')"
                                   ".classList.contains('expanded')", polling=POLL_MS,
                                   timeout=5_000)
            return
        except PlaywrightTimeoutError:
            continue
    raise AssertionError(f"the first tool step stayed closed after {tries} clicks")


@pytest.fixture(scope="module")
def chat(app: str, browser: Any) -> Iterator[Any]:
    """The chat after an integral question: two tool steps (one opened), a plot, the answer."""
    page = open_page(browser, app)
    page.evaluate(LISTEN)
    page.locator("#message textarea").fill(INTEGRAL)
    page.locator("#send").click()
    page.wait_for_function("document.querySelectorAll('#chat .tw-footer').length >= 1",
                           polling=POLL_MS, timeout=ROOMY_REPLY_MS)
    plot = page.locator("#chat img[src*='area-']").first
    plot.wait_for()
    page.wait_for_function("img => img.complete && img.naturalWidth > 0",
                           arg=plot.element_handle())
    open_first_step(page)  # a step opened, one closed
    page.wait_for_function("document.querySelector('#chat .thought-group .title')"
                           ".getAttribute('aria-expanded') === 'true'", polling=POLL_MS)
    yield page
    close_page(page)


@pytest.fixture(scope="module")
def experiments(app: str, browser: Any) -> Iterator[Any]:
    """The Experiments tab after a sweep run from it, every section opened."""
    page = open_page(browser, app)
    page.get_by_role("tab", name="Experiments").click()
    page.get_by_label("Cases (0 = the whole grid)").fill("9")
    page.locator("#sweep-start").click()
    page.locator("#sweep-status", has_text="finished").wait_for()
    page.locator("#run-charts img").first.wait_for()
    for section in ("Report", "Transcripts: one case", "Compare with another run",
                    "Live experiment"):
        page.get_by_text(section).first.click()
    page.locator("#transcript-view .tw-check-pass, #transcript-view .tw-check-fail") \
        .first.wait_for()
    yield page
    close_page(page)


@pytest.mark.parametrize("width, scheme", VIEWS, ids=VIEW_IDS)
def test_the_chat_has_no_serious_accessibility_violation(chat, width, scheme):
    show(chat, width, scheme)
    assert axe_violations(chat) == []


@pytest.mark.parametrize("width, scheme", VIEWS, ids=VIEW_IDS)
def test_the_experiments_page_has_no_serious_accessibility_violation(experiments, width,
                                                                      scheme):
    show(experiments, width, scheme)
    assert axe_violations(experiments) == []


def test_a_finished_reply_is_announced_once_and_the_plot_says_what_it_shows(chat):
    show(chat, 1280, "light")
    said = chat.evaluate("window.__said")
    assert len(said) == 1 and said[0].startswith("Reply: ") and "= 9" in said[0], said
    assert chat.locator("#chat .bubble-wrap").get_attribute("aria-live") == "off", \
        "the chat log would read every streamed word"
    alt = chat.locator("#chat img[src*='area-']").first.get_attribute("alt")
    assert "x\u00b2 for x from 0 to 3" in alt and "= 9" in alt, alt
    step = chat.locator("#chat .thought-group .title").first
    assert step.get_attribute("aria-expanded") == "true"
    assert step.locator("button").evaluate("b => b.disabled && b.tabIndex === -1")


@pytest.mark.parametrize("width", [320, 640], ids=["320px", "1280px-at-200%-zoom"])
def test_both_pages_reflow_without_sideways_scrolling(chat, experiments, width):
    for page in (chat, experiments):
        show(page, width, "light", height=800)
        assert not page_scrolls_sideways(page), page.url


def tab_until(page: Any, target: str, limit: int = 40, back: bool = False) -> list[str]:
    """Press Tab (or Shift+Tab) until the element with id `target` has focus; the ids passed."""
    passed: list[str] = []
    for _ in range(limit):
        page.keyboard.press("Shift+Tab" if back else "Tab")
        passed.append(page.evaluate(FOCUSED))
        if passed[-1] == target:
            return passed
    raise AssertionError(f"{target} never got the focus: {passed}")


def first_seen(passed: list[str], ids: list[str]) -> list[int]:
    missing = [i for i in ids if i not in passed]
    assert not missing, f"Tab never reached {missing}: {passed}"
    return [passed.index(i) for i in ids]


def test_asking_stopping_retrying_and_exporting_with_the_keyboard_alone(app, browser):
    page = open_page(browser, app)
    try:
        controls = ["send", "stop", "retry", "undo", "persona-picker", "model-picker"]
        wait_until_shown(page, [*controls, "model-spec"])
        assert page.evaluate(FOCUSED) == "message", "the message box has the focus on load"
        passed = tab_until(page, "model-spec")
        order = first_seen(passed, controls)
        assert order == sorted(order), passed
        page.keyboard.type("slow")
        tab_until(page, "message", back=True)
        page.keyboard.type("Wait for me")
        GO.set()
        with step_held():
            page.keyboard.press("Enter")
            page.get_by_text("Tool: wait").first.wait_for()
            page.keyboard.press("Tab")  # Send is disabled while the reply runs: Stop is next
            assert page.evaluate(FOCUSED) == "stop"
            assert page.evaluate("document.activeElement.matches(':focus-visible') && "
                                 "parseFloat(getComputedStyle(document.activeElement)"
                                 ".outlineWidth) >= 2"), "the focus is not visible"
            page.keyboard.press("Enter")
            page.get_by_text("Stopped. This reply was discarded").first.wait_for()
        assert page.evaluate(FOCUSED) == "message", "the focus went back to the message box"
        tab_until(page, "retry", limit=5)
        page.keyboard.press("Enter")
        page.get_by_text("Done waiting.").first.wait_for()
        page.wait_for_function("!document.querySelector('#export-md').disabled")
        tab_until(page, "export-md", limit=10)
        with page.expect_download() as download:
            page.keyboard.press("Enter")
        exported = Path(download.value.path()).read_text(encoding="utf-8")
        assert "Wait for me" in exported and "Done waiting." in exported
    finally:
        close_page(page)
