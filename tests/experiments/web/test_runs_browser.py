"""The Experiments tab in Debian's Chromium: one progress bar during a sweep, every chart row
visible, transcripts with failed checks highlighted, and two runs compared."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.support.chromium import CHROMIUM_ARGS
from tests.support.webapp import serve_in_process
from treadwise.settings import Settings

TIMEOUT_MS = 120_000
HOSTILE = "<img src=x onerror=\"window.__xss=1\">"

# Every visible progress element and the id of the component it sits in.
PROGRESS = """() => [...document.querySelectorAll('.progress-level, .eta-bar, .progress-bar')]
    .filter(e => e.offsetParent !== null && e.getBoundingClientRect().width > 0)
    .map(e => { let p = e; while (p && !p.id) p = p.parentElement; return p ? p.id : '?'; })"""
CLIPPED = """() => { const wrap = document.querySelector('#run-charts .grid-wrap');
    const box = wrap.getBoundingClientRect();
    const images = [...wrap.querySelectorAll('img')];
    return {images: images.length, hidden: wrap.scrollHeight - wrap.clientHeight,
            outside: images.filter(i => i.getBoundingClientRect().bottom > box.bottom + 1).length};
}"""


def small_run(results: Path, name: str, temperature: float) -> Path:
    from experiments.run.runner import run_sweep

    folder = results.parent / f"grid-{name}"
    folder.mkdir()
    scenarios = [{"id": "hours", "category": "information query",
                  "turns": [f"What are your opening hours? {HOSTILE}"],
                  "checks": [{"kind": "tools_called", "tools": ["get_business_info"]}]},
                 {"id": "impossible", "category": "information query",
                  "turns": ["What are your opening hours?"],
                  "checks": [{"kind": "answer_matches", "pattern": "Ulaanbaatar"}]}]
    (folder / "scenarios.yaml").write_text(yaml.safe_dump({"scenarios": scenarios}))
    (folder / "grid.yaml").write_text(yaml.safe_dump({
        "name": name, "personas": ["friendly", "technical"], "models": ["offline"],
        "temperatures": [temperature], "scenarios": {"file": "scenarios.yaml"}}))
    return run_sweep(folder / "grid.yaml", out_dir=results, progress=lambda p: None,
                     echo=lambda line: None, report=False)


@pytest.fixture(scope="module")
def app(tmp_path_factory, chromium: str) -> Iterator[tuple[str, Path]]:
    results = tmp_path_factory.mktemp("web-experiments") / "results"
    small_run(results, "older", 0.0)
    small_run(results, "newer", 0.0)
    with serve_in_process(Settings.from_env(), results_dir=results) as url:
        yield url, results


@pytest.fixture
def page(app, chromium: str) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(app[0])
        page.get_by_role("tab", name="Experiments").click()
        page.locator("#sweep-start").wait_for()
        try:
            yield page
        finally:
            browser.close()


def test_a_sweep_shows_one_progress_bar_and_every_chart_row(page, app, screenshots: Path):
    page.get_by_label("Cases (0 = the whole grid)").fill("4")
    page.locator("#sweep-start").click()
    seen: list[list[str]] = []
    status = page.locator("#sweep-status")
    while "finished" not in status.inner_text() and len(seen) < 1200:
        seen.append(page.evaluate(PROGRESS))
        page.wait_for_timeout(100)
    assert "finished" in status.inner_text()
    busy = [ids for ids in seen if ids]
    assert busy, "the sweep showed no progress at all"
    # One bar (the level and its fill), in the status line: none over the run picker.
    assert all(set(ids) == {"sweep-status"} for ids in busy), {tuple(ids) for ids in busy}
    page.wait_for_function("document.querySelectorAll('#run-charts img').length >= 8")
    page.screenshot(path=str(screenshots / "browser-experiments-1280.png"), full_page=True)
    gallery = page.evaluate(CLIPPED)
    assert gallery["images"] >= 8
    assert gallery["hidden"] <= 2 and gallery["outside"] == 0, gallery
    page.set_viewport_size({"width": 400, "height": 900})
    page.wait_for_timeout(500)
    page.screenshot(path=str(screenshots / "browser-experiments-400.png"), full_page=True)
    assert page.evaluate(CLIPPED)["outside"] == 0


def test_transcripts_highlight_failed_checks_and_runs_compare(page, app):
    newer = next(p.name for p in app[1].iterdir() if "-newer-" in p.name)
    page.locator("#run-picker input").click()
    page.get_by_role("option", name=newer, exact=False).click()
    page.get_by_text("Transcripts: one case's whole conversation").click()
    view = page.locator("#transcript-view")
    # The first configuration and its failure come up first.
    failed = view.locator(".tw-check-fail")
    failed.first.wait_for()
    assert "answer_matches" in failed.first.inner_text()
    colour = failed.first.evaluate("e => getComputedStyle(e).backgroundColor")
    assert colour == "rgb(253, 232, 232)"
    assert "FAILED" in view.inner_text() and "assistant calls get_business_info" in \
        view.inner_text()
    page.locator("#transcript-case input").click()
    page.get_by_role("option", name="hours (repeat 1): ok").click()
    view.get_by_text(HOSTILE).first.wait_for()  # shown as text, never as an element
    assert view.locator(".tw-check-fail").count() == 0
    assert view.locator("img").count() == 0 and page.evaluate("window.__xss") is None

    page.get_by_text("Compare with another run").click()
    older = next(p.name for p in app[1].iterdir() if "-older-" in p.name)
    page.locator("#compare-baseline input").click()
    page.get_by_role("option", name=older, exact=False).click()
    page.locator("#compare-start").click()
    result = page.locator("#compare-result")
    result.get_by_text("paired cases").first.wait_for()
    assert "0 of 2 configurations changed significantly" in result.inner_text()
    chart = page.locator("#compare-chart img")
    chart.wait_for()
    page.wait_for_function("img => img.complete && img.naturalWidth > 0",
                           arg=chart.element_handle())
