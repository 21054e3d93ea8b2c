"""How tests and benchmarks start Debian's Chromium (Playwright cannot download browsers)."""

from __future__ import annotations

from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
TIMEOUT_MS = 90_000
INSTALL_HINT = (f"Debian's Chromium was not found at {CHROMIUM} (Playwright drives it; it cannot "
                "download its own browser here). Install it with `sh .ci/install-system`, and "
                "Playwright with `pip install -r requirements-dev.txt`, then run the tests again.")


def require_chromium() -> str:
    """The Chromium executable; RuntimeError saying how to install it when it is missing."""
    if not Path(CHROMIUM).exists():
        raise RuntimeError(INSTALL_HINT)
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as exc:
        raise RuntimeError(INSTALL_HINT) from exc
    return CHROMIUM
