"""chat_first_paint: Enter to the first visible reply change in Chromium, `python app.py`
(offline model) vs a minimal gr.ChatInterface echo app, measured in the same run."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.support.chromium import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.support.webapp import free_port, stop, wait_for_200  # noqa: E402

ROUNDS = 10
WARM_UP = 2
MESSAGE = "What are your opening hours?"
ECHO_APP = '''
import os

import gradio as gr


def echo(message, history):
    return message


gr.ChatInterface(echo).launch(server_name="127.0.0.1", server_port=int(os.environ["PORT"]))
'''
# Times, in the page, from the Enter key to the first new assistant message, and to the
# moment the page stops changing the conversation for a while (the reply is complete).
PROBE = """(before) => {
  window.__paint = null;
  const box = document.querySelector('textarea');
  const bots = () => document.querySelectorAll('[data-testid="bot"]').length;
  let start = null, first = null, last = null;
  const seen = new MutationObserver(() => {
    if (start === null) return;
    const now = performance.now();
    if (first === null && bots() > before) first = now;
    if (first !== null) last = now;
  });
  seen.observe(document.body, {childList: true, subtree: true, characterData: true});
  box.addEventListener('keydown', e => { if (e.key === 'Enter') start = performance.now(); },
                       {once: true, capture: true});
  const settle = setInterval(() => {
    if (last !== null && performance.now() - last > 1500) {
      clearInterval(settle); seen.disconnect();
      window.__paint = [first - start, last - start];
    }
  }, 100);
}"""


def serve(script: Path, cwd: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    port = free_port()
    environment = {**os.environ, **env, "PORT": str(port), "TREADWISE_PORT": str(port),
                   "GRADIO_ANALYTICS_ENABLED": "False"}
    process = subprocess.Popen([sys.executable, str(script)], cwd=cwd, env=environment,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    url = f"http://127.0.0.1:{port}/"
    wait_for_200(url, process, 180)
    return process, url


def measure(page, url: str) -> list[tuple[float, float]]:
    """(first change ms, settled ms) for each timed round on one page."""
    page.goto(url)
    box = page.locator("textarea").first
    box.wait_for()
    samples = []
    for round_ in range(WARM_UP + ROUNDS):
        before = page.evaluate("document.querySelectorAll('[data-testid=\"bot\"]').length")
        box.fill(MESSAGE)
        page.evaluate(PROBE, before)
        box.press("Enter")
        page.wait_for_function("window.__paint !== null", timeout=120_000)
        first, settled = page.evaluate("window.__paint")
        if round_ >= WARM_UP:
            samples.append((first, settled))
        time.sleep(0.3)
    return samples


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="treadwise-paint-") as tmp:
        echo = Path(tmp) / "echo_chat.py"
        echo.write_text(ECHO_APP)
        apps = {"app.py": (REPO / "app.py", REPO, {"TREADWISE_DATA_DIR": f"{tmp}/data"}),
                "gr.ChatInterface": (echo, Path(tmp), {})}
        results = {}
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for name, app in apps.items():
                process, url = serve(*app)
                try:
                    page = browser.new_page(viewport={"width": 1280, "height": 900})
                    results[name] = measure(page, url)
                    page.close()
                finally:
                    stop(process)
            browser.close()
    first = {name: statistics.median(f for f, _ in values) for name, values in results.items()}
    settled = {name: statistics.median(s for _, s in values) for name, values in results.items()}
    for name in results:
        print(f"{name}: first reply change {first[name]:.0f} ms, reply complete "
              f"{settled[name]:.0f} ms after Enter (median of {ROUNDS})")
    print(f"chat_first_paint: ratio {first['app.py'] / first['gr.ChatInterface']:.2f} "
          "(goal <= 1.5)")


if __name__ == "__main__":
    main()
