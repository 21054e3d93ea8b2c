"""The Experiments tab in Debian's Chromium: one progress bar during a sweep and its timer
counting, an idle page's status tracker drawn ten times a second, every chart row visible and
readable, a case limit that keeps configurations comparable, the report's table,
pickers that read in full, transcripts with failed checks highlighted, and two runs compared."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.chromium import close_page, new_page, settled
from tests.support.page_views import VIEW_IDS, VIEWS, dropdowns_in_view
from tests.support.webapp import serve_in_process
from treadwise.settings import Settings

TIMEOUT_MS = 120_000
HOSTILE = "<img src=x onerror=\"window.__xss=1\">"

# Every visible progress element and the id of the component it sits in.
PROGRESS = """() => [...document.querySelectorAll('.progress-level, .eta-bar, .progress-bar')]
    .filter(e => e.offsetParent !== null && e.getBoundingClientRect().width > 0)
    .map(e => { let p = e; while (p && !p.id) p = p.parentElement; return p ? p.id : '?'; })"""
# Gradio's status-tracker timer in the sweep's status line ("6/40 cases | 1.3s"), if shown.
TIMER = """() => { const text = document.querySelector('#sweep-status .progress-text');
    const seconds = text && text.innerText.match(/(\\d+\\.\\d)s\\s*$/);
    return seconds ? seconds[1] : null; }"""
# Beneath the page's own scripts: every frame asked straight from Gradio's status tracker, and
# how many times the page's first script asked frames for it, all at once each time
# (treadwise/web/idle_frames.py).
FRAMES = """() => { window.__frames = {tracker: 0, paced: 0};
  const ask = window.requestAnimationFrame;
  let asking = false;
  window.requestAnimationFrame = callback => {
    const stack = new Error().stack || '';
    if (stack.includes('/statustracker-')) window.__frames.tracker++;
    if (stack.includes('pacedStatusFrames') && !asking) {
      window.__frames.paced++;
      asking = true;
      queueMicrotask(() => { asking = false; });
    }
    return ask(callback);
  }; }"""
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


pytest_plugins = ["tests.support.chromium"]  # the `browser` fixture


@pytest.fixture
def page(app, browser) -> Iterator[Any]:
    page = new_page(browser, TIMEOUT_MS, viewport={"width": 1280, "height": 900})
    page.goto(app[0])
    page.get_by_role("tab", name="Experiments").click()
    page.locator("#sweep-start").wait_for()
    yield page
    close_page(page)


def sweep(page, cases: int, until: str = "finished") -> str:
    """Run the offline sweep from the tab with a case limit; the status line once it says
    `until`."""
    page.get_by_label("Cases (0 = the whole grid)").fill(str(cases))
    page.locator("#sweep-start").click()
    status = page.locator("#sweep-status")
    status.get_by_text(until).wait_for()
    return status.inner_text().strip()


def summary_table(page) -> list[dict[str, str]]:
    """The summary table as the page shows it: one dict per row, header -> cell text."""
    return page.evaluate("""() => {
        const table = document.querySelector('#run-summary [role=grid]');
        const headers = [...table.querySelectorAll('[role=columnheader]')]
            .map(h => h.innerText.trim());
        return [...table.querySelectorAll('[role=row]')]
            .map(row => [...row.querySelectorAll('[role=gridcell]')].map(c => c.innerText.trim()))
            .filter(cells => cells.length)
            .map(cells => Object.fromEntries(cells.map((c, i) => [headers[i], c])));
    }""")


def test_a_sweep_shows_one_progress_bar_and_every_chart_row(page, app, screenshots: Path):
    page.get_by_label("Cases (0 = the whole grid)").fill("12")
    page.locator("#sweep-start").click()
    seen: list[list[str]] = []
    timer: list[float] = []
    status = page.locator("#sweep-status")
    while "finished" not in status.inner_text() and len(seen) < 1200:
        seen.append(page.evaluate(PROGRESS))
        if (shown := page.evaluate(TIMER)) is not None:
            timer.append(float(shown))
        page.wait_for_timeout(100)
    assert "finished" in status.inner_text()
    # 12 cases cannot give 9 configurations two scenarios each: one scenario each, said so.
    assert ("Case limit 12 keeps 9 cases: all 9 configurations on the same 1 scenario (repeat 1;"
            " the smallest comparable sweep is 9 cases, 1 scenario each)") in status.inner_text()
    busy = [ids for ids in seen if ids]
    assert busy, "the sweep showed no progress at all"
    # One bar (the level and its fill), in the status line: none over the run picker.
    assert all(set(ids) == {"sweep-status"} for ids in busy), {tuple(ids) for ids in busy}
    # Its timer counts on in tenths of a second, however the page paces the tracker's frames.
    assert timer == sorted(timer) and len(set(timer)) >= 3, timer
    page.wait_for_function("document.querySelectorAll('#run-charts img').length >= 8")
    page.screenshot(path=str(screenshots / "browser-experiments-1280.png"), full_page=True)
    gallery = page.evaluate(CLIPPED)
    assert gallery["images"] >= 8
    assert gallery["hidden"] <= 2 and gallery["outside"] == 0, gallery
    page.set_viewport_size({"width": 400, "height": 900})
    settled(page)
    page.screenshot(path=str(screenshots / "browser-experiments-400.png"), full_page=True)
    assert page.evaluate(CLIPPED)["outside"] == 0


def test_an_idle_pages_status_tracker_is_drawn_at_most_ten_times_a_second(app, browser):
    """Gradio's tracker would ask for a frame about 60 times a second for as long as the tab
    stays open (treadwise/web/idle_frames.py): its asks wait a tenth of a second, together."""
    page = new_page(browser, TIMEOUT_MS, own_context=True, viewport={"width": 1280, "height": 900})
    page.add_init_script(f"({FRAMES})()")
    page.goto(app[0])
    page.get_by_role("tab", name="Experiments").click()
    page.locator("#sweep-start").wait_for()
    page.evaluate("window.__frames = {tracker: 0, paced: 0, since: performance.now()}")
    page.wait_for_timeout(2000)
    frames = page.evaluate("({...window.__frames, seconds: (performance.now() - "
                           "window.__frames.since) / 1000})")
    close_page(page)
    # The trackers' frames are asked for a tenth of a second after the last were drawn.
    assert frames["tracker"] == 0 and frames["paced"] <= 10 * frames["seconds"] + 1, frames


def test_forty_cases_compare_every_configuration_on_the_same_scenarios(page):
    # Four scenarios each: the fewest the report puts an interval on.
    status = sweep(page, 40)
    assert ("Case limit 40 keeps 36 cases: all 9 configurations on the same 4 scenarios "
            "(repeat 1); left out: repeats 2\u20133 and 19 of 23 scenarios") in status
    rows = summary_table(page)
    assert len(rows) == 9 and {(r["scenarios"], r["cases"]) for r in rows} == {("4", "4")}
    # The report's table: named columns, percentages, intervals "57-100%"; nothing raw.
    assert {"configuration", "success", "95% CI"} <= set(rows[0])
    assert not {"success_rate", "ci_low", "mean_judge_score"} & set(rows[0])
    assert all(r["success"].endswith("%") and "\u2013" in r["95% CI"] for r in rows), rows
    # Charts one a row, each readable, the report's key chart first and empty ones left out.
    captions = page.locator("#run-charts .caption-label").all_inner_texts()
    assert captions[0] == "Success rate by persona and temperature"
    assert "Errored cases by type" not in captions
    # An image not yet loaded is 0 wide (seen under load): measured once every chart has loaded.
    page.wait_for_function("[...document.querySelectorAll('#run-charts img')]"
                           ".every(i => i.complete && i.naturalWidth > 0)")
    widths = page.evaluate("[...document.querySelectorAll('#run-charts img')]"
                           ".map(i => i.getBoundingClientRect().width)")
    assert min(widths) >= 600, widths
    refused = sweep(page, 5, until="Not started")
    assert refused == ("Not started: 5 cases cannot compare 9 configurations on the same "
                       "scenarios: the smallest comparable sweep is 9 cases (1 scenario each).")


@pytest.fixture(scope="module")
def pickers(app, browser) -> Iterator[Any]:
    """The tab with its transcript and comparison sections open: every picker on show."""
    page = new_page(browser, TIMEOUT_MS, viewport={"width": 1280, "height": 900})
    page.goto(app[0])
    page.get_by_role("tab", name="Experiments").click()
    page.get_by_text("Transcripts: one case's whole conversation").click()
    page.get_by_text("Compare with another run").click()
    page.locator("#transcript-view .tw-check-fail, #transcript-view .tw-check-pass") \
        .first.wait_for()
    yield page
    close_page(page)


@pytest.mark.parametrize("width, scheme", VIEWS, ids=VIEW_IDS)
def test_every_picker_reads_in_full_beside_its_caret(pickers, width, scheme):
    labels, unreadable = dropdowns_in_view(pickers, width, scheme)
    assert labels >= {"Run", "Configuration", "Baseline run (A); the run picked above is B"}
    assert unreadable == [], unreadable


def test_transcripts_highlight_failed_checks_and_runs_compare(page, app):
    page.locator("#run-picker input").click()
    page.get_by_role("option", name=re.compile("^newer ")).click()
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
    page.locator("#compare-baseline input").click()
    page.get_by_role("option", name=re.compile("^older ")).click()
    page.locator("#compare-start").click()
    result = page.locator("#compare-result")
    result.get_by_text("paired cases").first.wait_for()
    assert "0 of 2 configurations changed significantly" in result.inner_text()
    chart = page.locator("#compare-chart img")
    chart.wait_for()
    page.wait_for_function("img => img.complete && img.naturalWidth > 0",
                           arg=chart.element_handle())
