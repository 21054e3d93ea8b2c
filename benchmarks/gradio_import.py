"""`import gradio` in fresh interpreters: as Gradio ships (writing each component's type stub,
the baseline) vs after `import treadwise.web` (treadwise/web/gradio_stubs.py), interleaved in
the same run; CPU seconds of the child processes."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROUNDS = 7


def import_cpu(code: str) -> float:
    before = os.times()
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)
    after = os.times()
    return (after.children_user - before.children_user) + \
        (after.children_system - before.children_system)


def main() -> None:
    plain, ours = "import gradio", "import treadwise.web, gradio"
    import_cpu(plain)  # warm the file cache
    samples: dict[str, list[float]] = {plain: [], ours: []}
    for _ in range(ROUNDS):
        for code in samples:
            samples[code].append(import_cpu(code))
    base, now = statistics.median(samples[plain]), statistics.median(samples[ours])
    print(f"median of {ROUNDS}: {plain!r} {base:.2f} core-s, {ours!r} {now:.2f} core-s; "
          f"ratio {now / base:.2f} (lower is better)")


if __name__ == "__main__":
    main()
