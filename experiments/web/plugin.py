"""How the harness plugs into the TreadWise app: the Experiments tab and the live-experiment hook.

Declared under the app's entry-point group ``treadwise.web`` (pyproject.toml): the app calls
`plug` with its settings and access rules and knows nothing else of the harness.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

from treadwise.web.extensions import Extension, PageContext, Tab

RESULTS_DIR = Path("results")
# What the tab's tables, reports and charts import; each is in the `experiments` extra, so an
# app installed without it (`pip install .`) gets no tab rather than one that fails when used.
NEEDS = ("pandas", "scipy", "seaborn")


def plug(page: PageContext, results_dir: Path = RESULTS_DIR) -> Extension:
    """The Experiments tab (sweep runs under `results_dir`, then live experiments) and the chat
    hook that answers a live experiment's visitors by their arm."""
    if missing := [name for name in NEEDS if find_spec(name) is None]:
        raise ImportError(f"the experiments extra is not installed (no {', '.join(missing)}): "
                          "python -m pip install 'treadwise[experiments]'")
    from experiments.web.live_chat import LiveChat
    from experiments.web.live_tab import LiveTab
    from experiments.web.runs_tab import ExperimentsTab

    live = LiveChat(page.settings, page.access)  # ratings share the page's write limits
    tab = Tab("Experiments", "experiments-tab",
              [ExperimentsTab(results_dir), LiveTab(page.settings, live)])
    return Extension(tabs=[tab], chat_hooks=[live])
