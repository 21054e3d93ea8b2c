"""In Chromium: a thumb clicked on a reply is stored against the visitor's arm and stays on the
page (when its reply ends, and after the next) until a new chat, a second click takes it back,
and a reload keeps the visitor in the same arm."""

from __future__ import annotations

import dataclasses
import functools
import time
from pathlib import Path

import pytest

from experiments.live.definition import parse_experiment
from experiments.live.store import SqliteLiveStore
from tests.support.chromium import POLL_MS, close_page, new_page
from tests.support.page_views import VIEWS, show
from tests.support.webapp import serve_in_process
from treadwise.settings import Settings
from treadwise.web.chat import ChatTab

pytest_plugins = ["tests.support.chromium"]  # the `browser` fixture
TIMEOUT_MS = 60_000
DEFINITION = "name: tone\narms:\n  - {name: warm, persona: friendly}\n" \
             "  - {name: exact, persona: technical}\n"


def until(condition, what: str, page=None, timeout_s: float = TIMEOUT_MS / 1000):
    """Wait for the server to have stored something the page sent (no fixed sleep), as long as
    the page's own waits; if it never does, say what the page showed: its thumbs and notices."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if found := condition():
            return found
        time.sleep(0.1)
    shown = "" if page is None else "; the page showed " + str(page.evaluate("""() => ({
        thumbs: [...document.querySelectorAll('#chat button[aria-label]')]
            .map(b => b.getAttribute('aria-label')),
        notices: [...document.querySelectorAll('.toast-body')].map(t => t.innerText)})"""))
    raise AssertionError(f"never happened: {what}{shown}")


def ask(page, text: str, replies: int) -> None:
    page.locator("#message textarea").fill(text)
    page.locator("#send").click()
    page.wait_for_function(
        f"document.querySelectorAll('#chat .tw-footer').length >= {replies}", polling=POLL_MS)


def counting_ends(send, ended: list[float]):
    """ChatTab.send noting when each reply's event ends in `ended`; the first ends a while
    after its last update (the window a thumb may be clicked in before the end)."""
    @functools.wraps(send)  # Gradio reads its parameters (the request) through the wrapper
    def send_then_end(*args, **kwargs):
        yield from send(*args, **kwargs)
        if not ended:
            time.sleep(1.5)
        ended.append(time.monotonic())
    return send_then_end


def give_score(page, value: str) -> None:
    page.locator("#live-score-pick label", has_text=value).click()
    page.locator("#live-score-status", has_text=f"score {value} is saved").wait_for()


def test_a_thumb_in_the_browser_is_stored_against_the_arm_and_can_be_undone(
        tmp_path: Path, browser, monkeypatch: pytest.MonkeyPatch):
    # The first thumb is clicked when the finished reply shows, before its event completes:
    # Gradio then redraws the conversation, keeping only the thumbs the server gave it.
    ended: list[float] = []
    monkeypatch.setattr(ChatTab, "send", counting_ends(ChatTab.send, ended))
    data_dir = tmp_path / "data"
    store = SqliteLiveStore(data_dir)
    experiment = parse_experiment(DEFINITION)
    store.create(experiment.name, experiment.model_dump())
    settings = dataclasses.replace(Settings.from_env({}), data_dir=data_dir)

    def ratings() -> list[dict]:
        return [e for e in store.events("tone") if e["kind"] == "rating"]

    with serve_in_process(settings) as url:
        page = new_page(browser, TIMEOUT_MS)
        page.goto(url)
        page.locator("#live-note").wait_for()  # the visitor is told which assistant answers
        ask(page, "What are your opening hours?", 1)
        page.locator("#chat button[aria-label='Like']").last.click()
        (rating,) = until(ratings, "a rating stored", page)
        assert rating["value"] == 1.0
        assert store.assignments("tone") == [{"visitor": rating["visitor"], "arm": rating["arm"]}]
        until(lambda: len(ended) == 1, "the reply's event ended")
        give_score(page, "3")  # answered after the reply's end: the page has redrawn the reply
        liked = page.locator("#chat button[aria-label='Liked']")
        assert liked.count() == 1, "the end of the reply took the thumb off the page"
        liked.click()  # the same thumb: undo
        until(lambda: not ratings(), "the rating taken back", page)
        page.reload()
        page.locator("#live-note").wait_for()
        ask(page, "Do you offer mobile tire installation in Austin?", 1)
        page.locator("#chat button[aria-label='Dislike']").last.click()
        (again,) = until(ratings, "a rating after the reload", page)
        ask(page, "What are your opening hours?", 2)
        until(lambda: len(ended) == 3, "the next reply's event ended")
        give_score(page, "4")  # a new score replaces the first
        assert page.locator("#chat button[aria-label='Disliked']").count() == 1, \
            "the next reply took the thumb of the one before off the page"
        page.locator("#new-chat").click()
        page.wait_for_function("!document.querySelector('#chat .tw-footer')", polling=POLL_MS)
        ask(page, "Do you offer mobile tire installation in Austin?", 1)
        until(lambda: len(ended) == 4, "the new chat's reply ended")
        give_score(page, "5")
        thumbs = page.locator("#chat button[aria-label='Liked'], "
                              "#chat button[aria-label='Disliked']")
        assert thumbs.count() == 0, "a new chat shows the thumbs of the one before"
        close_page(page)
    assert (again["visitor"], again["arm"], again["value"]) == (
        rating["visitor"], rating["arm"], -1.0), "a reload changed the visitor or the arm"
    assert len(store.assignments("tone")) == 1
    (score,) = [e for e in store.events("tone") if e["kind"] == "score"]
    assert (score["visitor"], score["arm"], score["value"]) == (
        rating["visitor"], rating["arm"], 5.0), "the score is not the visitor's, in their arm"


def test_side_by_side_in_the_browser_names_the_arms_only_after_the_pick(
        tmp_path: Path, browser):
    data_dir = tmp_path / "data"
    store = SqliteLiveStore(data_dir)
    experiment = parse_experiment(DEFINITION.replace("arms:", "side_by_side: true\narms:"))
    store.create(experiment.name, experiment.model_dump())
    settings = dataclasses.replace(Settings.from_env({}), data_dir=data_dir)
    with serve_in_process(settings) as url:
        page = new_page(browser, TIMEOUT_MS)
        page.goto(url)
        page.locator("#sbs-message textarea").wait_for()
        assert not page.locator("#chat").is_visible(), "the usual conversation is still shown"
        page.locator("#sbs-message textarea").fill("What are your opening hours?")
        page.locator("#sbs-send").click()
        page.locator("#sbs-status", has_text="Pick one").wait_for()
        answers = page.locator("#side-by-side").inner_text()
        assert "Friendly" not in answers and "Technical" not in answers
        page.locator("#sbs-2").click()
        (pick,) = until(lambda: store.picks("tone"), "a pick stored")
        page.locator("#sbs-status", has_text="you picked answer 2").wait_for()
        second = page.locator("#sbs-answer-2 .tw-footer").last.inner_text()
        pickers = picked_in_every_view(page)
        report = report_in_every_view(page)
        close_page(page)
    assert pick["winner"] == pick["arm_b"]
    assert {"warm": "Friendly", "exact": "Technical"}[pick["arm_b"]] in second
    for view, (note, enabled) in pickers.items():
        assert "A side-by-side experiment is running" in note, view
        assert enabled == [], f"{view}: still active: {enabled}"
    for view, text in report.items():
        # One visitor, one pick: no strength, no interval, the counts and what is missing.
        assert "Not enough picks yet" in text and "1 visitor picked" in text, view
        assert "P(picked over" not in text and "[" not in text, view


# The chat's persona, model, custom spec, temperature and strategy inputs still enabled.
ENABLED = """() => [...document.querySelectorAll(['#persona-picker input', '#model-picker input',
    '#model-spec input', '#model-spec textarea', '#temperature input', '#strategy-picker input']
    .join(', '))].filter(input => !input.disabled).map(input => input.closest('[id]').id)"""


def picked_in_every_view(page) -> dict[str, tuple[str, list[str]]]:
    """In each view: the note above the pickers, and which pickers still take input."""
    found = {}
    for width, scheme in VIEWS:
        show(page, width, scheme)
        found[f"{width}-{scheme}"] = (page.locator("#live-note").inner_text(),
                                      page.evaluate(ENABLED))
    return found


def report_in_every_view(page) -> dict[str, str]:
    """The live experiment's report as the Experiments tab shows it, in each view."""
    page.get_by_role("tab", name="Experiments").click()
    page.get_by_text("Live experiment: A/B test").click()
    page.locator("#live-report-button").click()
    page.locator("#live-report", has_text="Live experiment tone").wait_for()
    found = {}
    for width, scheme in VIEWS:
        show(page, width, scheme)
        assert page.locator("#live-report").is_visible()
        found[f"{width}-{scheme}"] = page.locator("#live-report").inner_text()
    return found
