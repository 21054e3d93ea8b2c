"""Takes the README's screenshots: the chat and experiments tabs at 1280 and 400 px wide.

    python docs/screenshots/take.py

Runs a small offline sweep into a temporary folder, serves the app in-process on a free port,
drives Debian's Chromium, and saves palette PNGs (small files) next to this script.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))

from PIL import Image  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from tests.support.chromium import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.support.webapp import serve_in_process  # noqa: E402
from treadwise.settings import Settings  # noqa: E402

SWEEP_CASES = "45"
QUESTIONS = ["What tires do you recommend for an SUV I drive in the snow?",
             "Calculate the integral of x² from 0 to 3"]


def save(page, name: str) -> None:
    path = HERE / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    Image.open(path).convert("RGB").quantize(colors=128, dither=Image.Dither.NONE).save(
        path, optimize=True)
    print(f"{path.relative_to(REPO)}: {path.stat().st_size // 1024} KB")


def chat(page, url: str, width: int, theme: str = "light") -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{url}?__theme={theme}")
    box = page.locator("#message textarea")
    for number, question in enumerate(QUESTIONS, 1):
        box.fill(question)
        page.locator("#send").click()
        page.wait_for_function(
            f"document.querySelectorAll('#chat .tw-footer').length >= {number}")
    page.locator("#chat img[src*='area-']").first.wait_for()
    page.wait_for_timeout(800)
    suffix = "" if theme == "light" else f"-{theme}"
    save(page, f"chat-{width}{suffix}")


def experiments(page, url: str, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(url)
    page.get_by_role("tab", name="Experiments").click()
    page.locator("#run-charts img").first.wait_for(timeout=60_000)
    page.wait_for_timeout(1500)
    save(page, f"experiments-{width}")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="treadwise-shots-") as tmp:
        results = Path(tmp) / "results"
        subprocess.run([sys.executable, "-m", "experiments", "run", "--out", str(results),
                        "--limit", SWEEP_CASES], cwd=REPO, check=True,
                       env={**__import__("os").environ, "TREADWISE_DATA_DIR": f"{tmp}/sweep"})
        settings = dataclasses.replace(Settings.from_env(), data_dir=Path(tmp) / "data")
        with serve_in_process(settings, results_dir=results) as url, \
                sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for width in (1280, 400):
                chat(browser.new_page(), url, width)
                experiments(browser.new_page(), url, width)
            chat(browser.new_page(), url, 1280, theme="dark")
            browser.close()


if __name__ == "__main__":
    main()
