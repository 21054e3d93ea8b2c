"""The chat page behaves like the chat apps people use: keys, text as written, signs of life,
kept input, a busy Send, clean Stop/Retry, plot replies, small screens and streamed tokens.

One app serves the whole module and the process's shared Chromium shows it; each test opens its
own page (its own session), the views of one check share one. A scripted model "slow" calls a
tool that takes a couple of seconds.
"""

from __future__ import annotations

import dataclasses
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool

from tests.support.chromium import POLL_MS, close_page, new_page, settled
from tests.support.loopback import OpenAIServer, Reply, scripted
from tests.support.page_views import OVERFLOWING, VIEW_IDS, VIEWS, dropdowns_in_view, show
from tests.support.webapp import ROOMY_MATH_S, ROOMY_REPLY_MS, serve_in_process
from treadwise.agent import Agent
from treadwise.settings import Settings
from treadwise.testing.fakes import ScriptedModel
from treadwise.tools import ToolContext, get_tools

TIMEOUT_MS = 45_000
WAIT_S = 2.5
LONG = "Tell me about tires. " * 200  # 4,200 characters, over the 4,000 limit


@tool
def wait(seconds: float) -> str:
    """Wait a number of seconds: a stand-in for a slow calculation."""
    time.sleep(seconds)
    HOLD.wait(timeout=60)
    return f"Waited {seconds:g} s."


# The slow model holds its tool call until this is set (the app runs in this process): a test
# that must see the reply before any step exists clears it, looks, then lets the model go on.
GO = threading.Event()
GO.set()
# The wait tool, once its seconds are up, holds until this is set: a test that watches the
# step's timer count clears it, so a busy machine cannot end the step before the page shows it.
HOLD = threading.Event()
HOLD.set()


@contextmanager
def step_held() -> Iterator[None]:
    """Within the block the wait tool, once its seconds are up, holds: a test acting while the
    reply runs (Stop, a second Send) cannot find it already finished on a busy machine."""
    HOLD.clear()
    try:
        yield
    finally:
        HOLD.set()


def slow_brain(messages: list[Any], kwargs: dict[str, Any]) -> AIMessage:
    if isinstance(messages[-1], ToolMessage):
        return AIMessage("Done waiting.")
    GO.wait(timeout=60)
    return AIMessage("", tool_calls=[{"name": "wait", "args": {"seconds": WAIT_S},
                                      "id": f"w-{uuid.uuid4().hex[:8]}", "type": "tool_call"}])


def slow_agent(data_dir: Path) -> tuple[Settings, Agent]:
    """The pages' agent: the real tools with room for math, the `wait` tool and the "slow"
    scripted model."""
    settings = dataclasses.replace(Settings.from_env(), data_dir=data_dir,
                                   math_timeout_s=ROOMY_MATH_S)
    tools = get_tools("math", "business", context=ToolContext(
        settings.data_dir, math_timeout_s=settings.math_timeout_s))
    return settings, Agent(settings, tools=[*tools, wait],
                           models={"slow": ScriptedModel(script=[slow_brain])})


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Agent]]:
    settings, agent = slow_agent(tmp_path_factory.mktemp("chat") / "data")
    with serve_in_process(settings, agent) as url:
        yield url, agent


pytest_plugins = ["tests.support.chromium"]  # the `browser` fixture


@pytest.fixture
def page(app, browser) -> Iterator[Any]:
    page = new_page(browser, TIMEOUT_MS, viewport={"width": 1280, "height": 900})
    open_chat(page, app[0])
    yield page
    close_page(page)


def open_chat(page, url: str) -> None:
    """Open the chat and wait until the page's own script has run (its live region exists):
    Gradio's components are mounted and their handlers bound, so a click is not lost."""
    page.goto(url)
    page.locator("#message textarea").wait_for()
    page.locator("#tw-announce").wait_for(state="attached")


def box(page) -> Any:
    return page.locator("#message textarea")


def use_model(page, spec: str) -> None:
    page.locator("#model-spec textarea, #model-spec input").first.fill(spec)


def replies(page) -> int:
    return page.locator("#chat .tw-footer").count()


def wait_for_reply(page, count: int) -> str:
    """Wait until `count` replies have their footer; return the text of the last one."""
    page.wait_for_function(f"document.querySelectorAll('#chat .tw-footer').length >= {count}",
                           polling=POLL_MS, timeout=ROOMY_REPLY_MS)
    return page.evaluate("""() => {
        const footers = document.querySelectorAll('#chat .tw-footer');
        return footers[footers.length - 1].closest('.message').innerText;
    }""")


def bubbles(page, role: str) -> list[str]:
    return page.locator(f"#chat [data-testid='{role}']").all_inner_texts()


def test_enter_sends_and_shift_enter_starts_a_new_line(page):
    box(page).fill("What are your opening hours")
    box(page).press("Shift+Enter")
    box(page).type("on Saturday?")
    assert box(page).input_value() == "What are your opening hours\non Saturday?"
    assert bubbles(page, "user") == []
    box(page).press("Enter")
    wait_for_reply(page, 1)
    assert bubbles(page, "user") == ["What are your opening hours\non Saturday?"]
    page.wait_for_function("document.querySelector('#message textarea').value === ''")


def test_forget_me_is_on_the_page_and_erases_the_conversation(page, app):
    box(page).fill("please contact me at browser.forget@fleetco.com about winter tires")
    page.locator("#send").click()
    wait_for_reply(page, 1)
    store = app[1].store
    assert [lead for lead in store.leads() if lead["email"] == "browser.forget@fleetco.com"]
    button = page.locator("#forget-me")
    assert button.is_visible() and "Forget me" in button.inner_text()
    button.click()
    page.wait_for_function("document.querySelector('#chat').innerText.includes('erased')")
    assert bubbles(page, "user") == []
    assert "browser.forget@fleetco.com" in page.locator("#chat").inner_text()
    assert not [lead for lead in store.leads() if lead["email"] == "browser.forget@fleetco.com"]


def test_math_is_shown_as_written_in_questions_and_answers(page):
    box(page).fill("what is the derivative of sin(x)*x^2")
    page.locator("#send").click()
    answer = wait_for_reply(page, 1)
    box(page).fill("sin(x)^7*cos(x)^5*exp(x) and 2**10 and a_b_c")
    page.locator("#send").click()
    wait_for_reply(page, 2)
    assert bubbles(page, "user") == ["what is the derivative of sin(x)*x^2",
                                     "sin(x)^7*cos(x)^5*exp(x) and 2**10 and a_b_c"]
    assert "x*(x*cos(x) + 2*sin(x))" in answer
    # No star or underscore became emphasis in the questions or the answers.
    marks = page.evaluate("""() => [...document.querySelectorAll('#chat .message-row')]
        .filter(row => row.matches('.user-row') || row.querySelector('.tw-footer'))
        .map(row => row.querySelectorAll('em, strong, del').length)""")
    assert marks and set(marks) == {0}, marks


def test_a_slow_reply_shows_a_sign_of_life_at_once_then_its_step_with_a_timer(page):
    use_model(page, "slow")
    box(page).fill("Wait for me")
    GO.clear()
    HOLD.clear()
    try:
        page.locator("#send").click()
        # Before any tool step exists, the reply shows a pending indicator.
        page.get_by_text("Thinking\u2026").first.wait_for()
        assert page.get_by_text("Tool: wait").count() == 0
        GO.set()
        page.get_by_text("Tool: wait").first.wait_for()
        # The step shows while it runs, and its timer counts up.
        page.get_by_text("Tool: wait \u00b7 1 s").first.wait_for()
        page.get_by_text("Tool: wait \u00b7 2 s").first.wait_for()
        assert replies(page) == 0
    finally:
        GO.set()
        HOLD.set()
    assert "Done waiting." in wait_for_reply(page, 1)
    assert page.get_by_text("Thinking\u2026").count() == 0


def test_send_is_disabled_while_a_reply_runs_and_typed_text_is_kept(page):
    use_model(page, "slow")
    box(page).fill("Wait for me")
    with step_held():
        page.locator("#send").click()
        page.get_by_text("Tool: wait").first.wait_for()
        assert page.locator("#send").is_disabled()
        box(page).fill("My next question")
        box(page).press("Enter")  # ignored while the reply runs, and the text stays
        page.get_by_text("still being written").first.wait_for()
        assert box(page).input_value() == "My next question"
    wait_for_reply(page, 1)
    page.wait_for_function("!document.querySelector('#send').disabled")
    assert bubbles(page, "user") == ["Wait for me"]
    assert box(page).input_value() == "My next question"


def test_an_over_long_message_stays_in_the_box_with_a_counter(page):
    counter = page.locator("#char-count .tw-count")
    box(page).fill("x" * 3000)
    assert counter.inner_text() == ""
    box(page).fill(LONG)
    assert counter.inner_text() == ("4,200 / 4,000 characters: too long to send, please "
                                    "shorten it")
    page.locator("#send").click()
    assert "Message not sent" in wait_for_reply(page, 1)
    assert box(page).input_value() == LONG
    box(page).fill("Short now")
    assert counter.inner_text() == ""


def test_stop_and_retry_leave_no_error_in_the_server_log(page, app,
                                                         caplog: pytest.LogCaptureFixture):
    caplog.set_level("WARNING")
    question = "Wait for me, then once more"
    use_model(page, "slow")
    box(page).fill(question)
    with step_held():
        page.locator("#send").click()
        page.get_by_text("Tool: wait").first.wait_for()
        page.locator("#stop").click()
        assert "Stopped. This reply was discarded" in wait_for_reply(page, 1)
    page.locator("#retry").click()  # runs once the stopped turn's tool has finished
    page.get_by_text("Done waiting.").first.wait_for()
    assert bubbles(page, "user") == [question]
    errors = [r.getMessage() for r in caplog.records if r.levelname in ("WARNING", "ERROR")]
    assert errors == []
    agent = app[1]
    threads = {c.config["configurable"]["thread_id"] for c in agent.checkpointer.list(None)}
    asked = [[m.content for m in agent.history(t) if m.type == "human"] for t in threads]
    assert [question] in asked, "memory holds the retried question once"


def test_a_plot_reply_names_no_file_and_can_be_copied(page):
    box(page).fill("plot x^3 from -2 to 2")
    page.locator("#send").click()
    answer = wait_for_reply(page, 1)
    page.locator("#chat img[src*='area-']").first.wait_for()
    assert ".png" not in answer and "area-" not in answer
    buttons = page.evaluate("""() => [...document.querySelector('#chat .tw-footer')
        .closest('.message-row').nextElementSibling.querySelectorAll('button')]
        .map(b => b.getAttribute('aria-label'))""")
    assert "Copy message" in buttons


def one_line_labels(page) -> dict[str, int]:
    """Each action button's label and the number of lines it takes."""
    return page.evaluate("""() => Object.fromEntries(
        [...document.querySelectorAll('.tw-actions button')].map(button => {
            const range = document.createRange();
            range.selectNodeContents(button);
            const lines = new Set([...range.getClientRects()].filter(r => r.width > 0)
                                  .map(r => Math.round(r.top)));
            return [button.innerText.trim(), lines.size];
        }))""")


@pytest.mark.parametrize("width", [1280, 400])
def test_the_layout_fits_the_screen(page, width):
    page.set_viewport_size({"width": width, "height": 900})
    settled(page)
    picker = page.locator("#persona-picker").bounding_box()
    chat = page.locator("#chat").bounding_box()
    message = page.locator("#message").bounding_box()
    if width == 400:
        assert picker["y"] + picker["height"] <= chat["y"], "the persona picker comes first"
    else:
        assert picker["x"] >= chat["x"] + chat["width"], "the pickers sit beside the chat"
        assert picker["y"] < message["y"]
    labels = one_line_labels(page)
    assert set(labels) >= {"Stop", "Retry", "Undo"} and set(labels.values()) == {1}, labels
    assert page.evaluate("document.documentElement.scrollWidth") <= width


# One unbroken word each: a run of letters, a long URL, a pasted token.
UNBROKEN = ["x" * 300, "https://example.com/" + "a1b2c3/" * 40 + "?q=" + "z" * 60,
            "sk-" + "Ab9" * 90]
ON_SCREEN = "#chat .message, #chat .message-row, #message, #message textarea, #send, " \
            ".tw-actions button, .tw-compose"


@pytest.fixture(scope="module")
def long_words(app, browser) -> Iterator[Any]:
    """A page whose conversation and message box hold words longer than any screen."""
    page = new_page(browser, TIMEOUT_MS, viewport={"width": 400, "height": 900})
    open_chat(page, app[0])
    for count, word in enumerate(UNBROKEN, 1):
        box(page).fill(word)
        page.locator("#send").click()
        wait_for_reply(page, count)
    box(page).fill(UNBROKEN[0])  # and one in the box, not sent
    yield page
    close_page(page)


@pytest.mark.parametrize("width, scheme", VIEWS, ids=VIEW_IDS)
def test_a_long_unbroken_word_wraps_and_send_stays_on_screen(long_words, width, scheme):
    page = long_words
    show(page, width, scheme)
    assert page.evaluate(OVERFLOWING, ON_SCREEN) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    send = page.locator("#send").bounding_box()
    assert 0 <= send["x"] and send["x"] + send["width"] <= width
    assert len(bubbles(page, "user")) == len(UNBROKEN)


@pytest.fixture(scope="module")
def picked(app, browser) -> Iterator[Any]:
    """A page whose model picker holds the longest choice, the local model."""
    page = new_page(browser, TIMEOUT_MS, viewport={"width": 1280, "height": 900})
    open_chat(page, app[0])
    use_model(page, "")
    page.locator("#model-picker input").click()
    page.get_by_role("option", name="local:smollm2 (local LLM)").click()
    page.keyboard.press("Escape")
    yield page
    close_page(page)


@pytest.mark.parametrize("width, scheme", VIEWS, ids=VIEW_IDS)
def test_the_pickers_read_in_full_beside_their_caret(picked, width, scheme):
    labels, unreadable = dropdowns_in_view(picked, width, scheme)
    assert picked.locator("#model-picker input").input_value() == "local:smollm2 (local LLM)"
    assert labels >= {"Model", "Strategy"}
    assert unreadable == [], unreadable


def test_tokens_appear_as_a_real_model_streams_them(page, monkeypatch: pytest.MonkeyPatch):
    words = "Our mobile crews fit tires at your home or office on weekdays."
    with OpenAIServer(scripted(Reply(text=words, chunk_delay_s=0.4))) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-test-key")
        use_model(page, "openai:gpt-4o-mini")
        box(page).fill("Do you come to my office?")
        page.locator("#send").click()
        # Part of the answer is on the page while the rest is still on its way.
        page.wait_for_function("""() => [...document.querySelectorAll(
            '#chat [data-testid="bot"]')].some(m => m.innerText.includes('mobile crews')
            && !m.innerText.includes('weekdays'))""")
        assert replies(page) == 0
        footer = wait_for_reply(page, 1)
    assert words in footer
    assert "first token" in footer


def test_a_local_models_first_load_is_announced_then_it_answers(page, tmp_path, local_model):
    from treadwise.models.local import model_path

    # A file of its own (engines are keyed by real path, so not a symlink): no earlier test in
    # this process has loaded it yet.
    fresh = tmp_path / "smollm2-copy.gguf"
    shutil.copyfile(model_path("smollm2"), fresh)
    use_model(page, f"local:{fresh}")
    box(page).fill("hello")
    page.locator("#send").click()
    page.get_by_text("the first reply takes a few seconds longer").first.wait_for()
    footer = wait_for_reply(page, 1)
    assert "smollm2-copy.gguf" in footer
    assert "local model" in footer or "local:" in footer
