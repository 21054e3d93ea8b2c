"""How tests and benchmarks start Debian's Chromium (Playwright cannot download browsers)."""

from __future__ import annotations

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
TIMEOUT_MS = 90_000
