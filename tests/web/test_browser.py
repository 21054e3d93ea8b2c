"""The real page in Debian's Chromium: personas, tool steps, an inline plot, inert model HTML."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml
from langchain_core.messages import AIMessage

from tests.support.chromium import POLL_MS, new_page
from tests.support.webapp import (
    REPO,
    ROOMY_MATH_S,
    ROOMY_REPLY_MS,
    serve_in_process,
    serve_subprocess,
    use_scripted,
)
from treadwise.agent import Agent
from treadwise.settings import Settings
from treadwise.testing.fakes import ScriptedModel

LOOPBACK = {"127.0.0.1", "localhost"}
HOSTILE = ('Here you go <img src=x onerror="window.__xss=1"> '
           "<script>window.__xss=2</script>\n\n"
           "![pixel](http://203.0.113.9/pixel.png) [click](javascript:window.__xss=3)")


pytest_plugins = ["tests.support.chromium"]  # the `browser` fixture


@pytest.fixture
def page(browser) -> Iterator[object]:
    # A context of its own: the tests listen to the page's requests and dialogs.
    page = new_page(browser, viewport={"width": 1400, "height": 1000}, own_context=True)
    yield page
    page.context.close()


def voice(persona: str, *parts: str) -> list[str]:
    data = yaml.safe_load((REPO / "treadwise" / "personas" / f"{persona}.yaml").read_text())
    return [phrase for part in parts for phrase in data["voice"][part]]


def send(page, message: str) -> str:
    """Send a message; return the text of the reply once its footer is shown."""
    count = page.locator("#chat .tw-footer").count()
    page.locator("#message textarea").fill(message)
    page.locator("#send").click()
    page.wait_for_function(f"document.querySelectorAll('#chat .tw-footer').length > {count}",
                           polling=POLL_MS, timeout=ROOMY_REPLY_MS)
    return page.evaluate("""() => {
        const footers = document.querySelectorAll('#chat .tw-footer');
        return footers[footers.length - 1].closest('.message').innerText;
    }""")


def test_chat_with_personas_tool_steps_and_an_inline_plot(page, tmp_path: Path,
                                                          screenshots: Path):
    with serve_subprocess(tmp_path / "data",
                          env={"TREADWISE_MATH_TIMEOUT_S": str(ROOMY_MATH_S)}) as app:
        url = app.url
        page.goto(url)
        page.get_by_label("Technical Expert").check()
        answer = send(page, "Calculate the integral of x\u00b2 from 0 to 3")
        assert "9" in answer and "Technical Expert" in answer
        assert "rule-based, not an LLM" in answer
        page.get_by_text("Tool: integrate").first.wait_for()
        page.get_by_text("Tool: plot_area").first.wait_for()
        plot = page.locator("#chat img[src*='area-']").first
        plot.wait_for()
        page.wait_for_function("img => img.complete && img.naturalWidth > 0",
                               arg=plot.element_handle())
        plot.scroll_into_view_if_needed()
        page.screenshot(path=str(screenshots / "browser-chat.png"), full_page=True)

        page.get_by_label("Cautious Helper").check()
        reply = send(page, "Which tires do you recommend for an SUV I mostly drive on the "
                           "highway?")
        assert "Cautious Helper" in reply
        assert any(phrase in reply for phrase in voice("cautious", "opener", "closer"))
        assert not any(phrase in reply for phrase in voice("technical", "opener", "closer"))
        page.get_by_text("Tool: get_tire_recommendation").first.wait_for()
        page.screenshot(path=str(screenshots / "browser-chat-cautious.png"), full_page=True)
        started = app.logs()
    assert "TreadWise is running at http://127.0.0.1:" in started
    assert "share=True" not in started, "the app never makes public links"


def test_html_and_images_in_model_output_stay_inert(page, monkeypatch: pytest.MonkeyPatch,
                                                    screenshots: Path):
    use_scripted(monkeypatch, hostile=ScriptedModel().enqueue(AIMessage(HOSTILE)))
    settings = Settings.from_env()
    outside: list[str] = []
    dialogs: list[str] = []
    page.on("request", lambda r: outside.append(r.url)
            if urlparse(r.url).hostname not in LOOPBACK else None)
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    with serve_in_process(settings, Agent(settings)) as url:
        page.goto(url)
        page.locator("#model-spec textarea, #model-spec input").first.fill("scripted:hostile")
        answer = send(page, "Say something")
        for link in page.locator("#chat a").all():
            if "click" in link.inner_text():
                link.click()
        page.screenshot(path=str(screenshots / "browser-inert.png"), full_page=True)
        assert page.evaluate("window.__xss") is None
    assert '<img src=x onerror="window.__xss=1">' in answer
    assert page.locator("#chat img[src='x']").count() == 0
    assert outside == [] and dialogs == []
