"""An open, idle TreadWise tab in Debian's Chromium: the CPU the browser uses while nobody does
anything, on the Chat tab and on the Experiments tab, with Gradio's page as it ships (its status
tracker asking for about 60 frames a second, the baseline) and with the page's first script
(treadwise/web/idle_frames.py), interleaved in the same run."""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.chromium import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.support.webapp import serve_subprocess  # noqa: E402

ROUNDS = 3
IDLE_S = 10.0
PACED = "from treadwise.web.gradio_app import serve; serve()"
# The same app without the page's first script: Gradio's page as it ships.
AS_SHIPPED = ("import treadwise.web.gradio_app as app; guards = app.guards; "
              "app.guards = lambda settings: [m for m in guards(settings) "
              "if m.cls.__name__ != 'EarlyScript']; app.serve()")
TABS = ("Chat", "Experiments")


def browser_cpu() -> float:
    """Core-seconds so far of every Chromium process this benchmark started."""
    total = 0.0
    for process in psutil.Process().children(recursive=True):
        try:
            if "chrom" in process.name():
                total += sum(process.cpu_times()[:2])
        except psutil.Error:
            pass
    return total


def idle_cpu(code: str, playwright) -> dict[str, float]:
    """Chromium's core-seconds over IDLE_S on each tab, the page loaded and left alone."""
    used = {}
    with tempfile.TemporaryDirectory() as folder, \
            serve_subprocess(Path(folder) / "data", code=code) as app:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_context().new_page()
            page.goto(app.url)
            page.locator("#message textarea").wait_for()
            for tab in TABS:
                page.get_by_role("tab", name=tab).click()
                time.sleep(3)  # the tab's first drawing done
                before = browser_cpu()
                time.sleep(IDLE_S)
                used[tab] = browser_cpu() - before
        finally:
            browser.close()
    return used


def main() -> None:
    from playwright.sync_api import sync_playwright

    samples: dict[str, list[dict[str, float]]] = {AS_SHIPPED: [], PACED: []}
    with sync_playwright() as playwright:
        for _ in range(ROUNDS):
            for code in samples:
                samples[code].append(idle_cpu(code, playwright))
    for tab in TABS:
        base = statistics.median(s[tab] for s in samples[AS_SHIPPED])
        now = statistics.median(s[tab] for s in samples[PACED])
        print(f"idle {tab} tab over {IDLE_S:g} s, median of {ROUNDS}: Chromium with Gradio's "
              f"page as shipped {base:.2f} core-s ({base / IDLE_S:.3f} of a core), with the "
              f"page's first script {now:.2f} core-s ({now / IDLE_S:.3f}); ratio "
              f"{now / base:.2f} (lower is better)")


if __name__ == "__main__":
    main()
