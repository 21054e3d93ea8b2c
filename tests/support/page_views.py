"""What the browser tests check on any page, in each view a user may have: a desktop or a phone,
light or dark (Gradio follows the system's colour scheme), at 320 px or at 200% zoom."""

from __future__ import annotations

from typing import Any

# (width, colour scheme): a desktop and a phone, each light and dark.
VIEWS = [(1280, "light"), (1280, "dark"), (400, "light"), (400, "dark")]
VIEW_IDS = [f"{width}-{scheme}" for width, scheme in VIEWS]
SETTLE_MS = 400  # Gradio restyles on a scheme change and reflows on a resize
BLOCKING = ("serious", "critical")

# Every visible dropdown: its label, its value, whether the value is cut (the box scrolls) and
# whether the caret overlaps the text (the text's end, measured in the input's own font).
DROPDOWNS = """() => [...document.querySelectorAll('input[role="combobox"]')]
  .filter(input => input.offsetParent !== null).map(input => {
    const style = getComputedStyle(input), box = input.getBoundingClientRect();
    const context = document.createElement('canvas').getContext('2d');
    context.font = style.font;
    const textEnd = box.left + parseFloat(style.paddingLeft)
      + context.measureText(input.value).width;
    const caret = input.parentElement.querySelector('.icon-wrap svg, .icon-wrap');
    const caretLeft = caret ? caret.getBoundingClientRect().left : Infinity;
    return {label: input.getAttribute('aria-label'), value: input.value,
            cut: input.scrollWidth > input.clientWidth + 1, overlap: textEnd > caretLeft};
  })"""
# Elements wider than the screen (their right edge past it), by id or class.
OVERFLOWING = """(selectors) => [...document.querySelectorAll(selectors)]
  .filter(e => e.offsetParent !== null)
  .filter(e => { const r = e.getBoundingClientRect();
                 return r.left < -1 || r.right > document.documentElement.clientWidth + 1; })
  .map(e => e.id || e.className)"""


def show(page: Any, width: int, scheme: str, height: int = 900) -> None:
    """Put the open page in one view without reloading it (its conversation stays)."""
    page.set_viewport_size({"width": width, "height": height})
    page.emulate_media(color_scheme=scheme)
    page.mouse.move(0, 0)  # nothing stays hovered by chance from an earlier click
    page.wait_for_timeout(SETTLE_MS)
    # A scheme change fades the buttons' colours (CSS transitions); on a loaded machine they
    # can outlast the wait above, and axe then reads colours half-way (seen: #stop's contrast).
    page.wait_for_function("!document.getAnimations().some(a => a instanceof CSSTransition"
                           " && a.playState === 'running')")


def dropdowns_in_view(page: Any, width: int, scheme: str) -> tuple[set[str], list[dict]]:
    """The open page in one view: the labels of its visible dropdowns, and the dropdowns whose
    value is cut or runs under the caret."""
    show(page, width, scheme)
    found = page.evaluate(DROPDOWNS)
    return {d["label"] for d in found}, [d for d in found if d["cut"] or d["overlap"]]


def axe_violations(page: Any) -> list[str]:
    """axe-core's serious and critical violations of the page as it is, one line each."""
    from axe_playwright_python.sync_playwright import Axe

    found = Axe().run(page).response["violations"]
    return [f"{rule['id']} ({rule['impact']}): {node['target']}"
            for rule in found if rule["impact"] in BLOCKING for node in rule["nodes"]]


def page_scrolls_sideways(page: Any) -> bool:
    return page.evaluate("document.documentElement.scrollWidth > "
                         "document.documentElement.clientWidth + 1")
