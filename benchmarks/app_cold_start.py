"""Cold start of `python app.py` to its first HTTP 200 vs a minimal gr.ChatInterface app."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.webapp import free_port, stop  # noqa: E402

ROUNDS = 5
TIMEOUT_S = 180
MINIMAL_APP = '''
import os

import gradio as gr


def echo(message, history):
    return message


gr.ChatInterface(echo).launch(server_name="127.0.0.1", server_port=int(os.environ["PORT"]))
'''


def seconds_to_200(script: Path, cwd: Path, env: dict[str, str]) -> float:
    """Start a script and time it until GET / answers 200; then stop it."""
    port = free_port()
    env = {**os.environ, **env, "PORT": str(port), "TREADWISE_PORT": str(port),
           "GRADIO_ANALYTICS_ENABLED": "False"}
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, str(script)], cwd=cwd, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while time.perf_counter() - started < TIMEOUT_S:
            if process.poll() is not None:
                raise RuntimeError(f"{script} exited with {process.returncode}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/", timeout=2).status_code == 200:
                    return time.perf_counter() - started
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"{script} gave no 200 within {TIMEOUT_S} s")
    finally:
        stop(process)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="treadwise-bench-") as tmp:
        minimal = Path(tmp) / "minimal_chat.py"
        minimal.write_text(MINIMAL_APP)
        apps = {"app.py": (REPO / "app.py", REPO, {"TREADWISE_DATA_DIR": f"{tmp}/data"}),
                "gr.ChatInterface": (minimal, Path(tmp), {})}
        seconds_to_200(*apps["gr.ChatInterface"])  # warm the file cache for both
        samples: dict[str, list[float]] = {name: [] for name in apps}
        for _ in range(ROUNDS):
            for name, app in apps.items():
                samples[name].append(seconds_to_200(*app))
    median = {name: statistics.median(values) for name, values in samples.items()}
    for name, value in median.items():
        print(f"{name}: first HTTP 200 after {value:.2f} s (median of {ROUNDS})")
    print(f"app_cold_start: ratio {median['app.py'] / median['gr.ChatInterface']:.2f} "
          "(goal <= 1.5)")


if __name__ == "__main__":
    main()
