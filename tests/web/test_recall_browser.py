"""In the real page (Chromium), the offline rule-based model says what was just asked, at phone
and desktop widths, light and dark, without naming a tool or an internal failure."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.chromium import POLL_MS, close_page, new_page
from tests.support.page_views import VIEW_IDS, VIEWS, page_scrolls_sideways
from tests.support.webapp import serve_in_process
from treadwise.agent import Agent
from treadwise.settings import Settings
from treadwise.tools import ToolContext, get_tools


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, set[str]]]:
    settings = dataclasses.replace(Settings.from_env(),
                                   data_dir=tmp_path_factory.mktemp("recall") / "data")
    tools = get_tools("math", "business", context=ToolContext(settings.data_dir))
    with serve_in_process(settings, Agent(settings, tools=tools)) as url:
        yield url, {t.name for t in tools}


pytest_plugins = ["tests.support.chromium"]  # the `browser` fixture


def send(page: Any, message: str) -> str:
    """Send a message; the text of the reply once its footer shows."""
    count = page.locator("#chat .tw-footer").count()
    page.locator("#message textarea").fill(message)
    page.locator("#send").click()
    page.wait_for_function(f"document.querySelectorAll('#chat .tw-footer').length > {count}",
                           polling=POLL_MS)
    return page.evaluate("""() => {
        const footers = document.querySelectorAll('#chat .tw-footer');
        return footers[footers.length - 1].closest('.message').innerText;
    }""")


@pytest.mark.parametrize(("width", "scheme"), VIEWS, ids=VIEW_IDS)
def test_what_did_i_just_ask_is_answered_with_the_question(app, browser, width, scheme):
    url, tool_names = app
    page = new_page(browser, viewport={"width": width, "height": 900}, color_scheme=scheme)
    try:
        page.goto(url)
        page.locator("#message textarea").wait_for()
        assert "9" in send(page, "Add 5 and 4")
        reply = send(page, "What did I just ask you?")
        assert "Add 5 and 4" in reply
        assert not [name for name in tool_names if "_" in name and name in reply], reply
        for internal in ("not available", "couldn't finish", "Operation failed", "tool"):
            assert internal not in reply, reply
        # The reply is on screen in full at this width: nothing pushed past the right edge.
        overflow = page.evaluate("""() => {
            const rows = document.querySelectorAll('#chat .message');
            const last = rows[rows.length - 1].getBoundingClientRect();
            return last.right - window.innerWidth;
        }""")
        assert overflow <= 1, overflow
        assert not page_scrolls_sideways(page)
    finally:
        close_page(page)
