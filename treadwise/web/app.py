"""The Gradio app: the page built from settings and one shared agent; safe launch options."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from treadwise.settings import Settings
from treadwise.web.turns import LazyAgent

if TYPE_CHECKING:
    import gradio as gr

    from treadwise.agent import Agent

# Turns mostly wait on a provider, so several run at once; one slow turn must not block others.
CONCURRENCY = 8
MAX_QUEUE = 64
MAX_FILE_SIZE = "1mb"  # the page takes no uploads; this bounds anything posted anyway
CACHE_CLEANUP = (3600, 24 * 3600)  # every hour, drop cached plots and exports older than a day
RESULTS_DIR = Path("results")


def create_app(settings: Settings | None = None, agent: Agent | LazyAgent | None = None, *,
               env: Mapping[str, str] | None = None,
               results_dir: Path | None = None) -> gr.Blocks:
    """Build the page. Without an agent, one is built on first use (see `serve`)."""
    import gradio as gr

    from treadwise.web.chat import ChatTab
    from treadwise.web.experiments_tab import ExperimentsTab
    from treadwise.web.files import cache_dir

    if settings is None:
        settings = agent.settings if agent is not None else Settings.from_env()
    # Gradio reads its cache folder from the environment when components are built.
    os.environ["GRADIO_TEMP_DIR"] = str(cache_dir(settings))
    holder = agent if isinstance(agent, LazyAgent) else LazyAgent(settings, agent)
    with gr.Blocks(title="TreadWise assistant", analytics_enabled=False,
                   delete_cache=CACHE_CLEANUP) as demo:
        gr.Markdown("# TreadWise Tire Co. assistant\nTires, mobile service, Smart Tread\u2122 "
                    "monitoring and math, answered by the persona you pick.",
                    elem_classes="tw-header")
        with gr.Tabs():
            with gr.Tab("Chat", id="chat-tab"):
                ChatTab(holder, settings).build(env, demo)
            with gr.Tab("Experiments", id="experiments-tab"):
                ExperimentsTab(results_dir or RESULTS_DIR).build(demo)
    demo.queue(default_concurrency_limit=CONCURRENCY, max_size=MAX_QUEUE)
    return demo


def launch_kwargs(settings: Settings) -> dict[str, Any]:
    """Options for `Blocks.launch`: local only, no share link, no error details, nothing
    from the data dir or a .env served."""
    from treadwise.web.files import blocked_paths
    from treadwise.web.style import CSS, theme

    return {
        "server_name": settings.host,
        "server_port": settings.port,
        "share": False,
        "auth": settings.auth,
        "auth_message": "TreadWise: sign in with the user and password set in TREADWISE_AUTH.",
        "show_error": False,
        "max_file_size": MAX_FILE_SIZE,
        "enable_monitoring": False,
        "allowed_paths": [],  # plots, charts and exports are served as copies from the cache
        "blocked_paths": blocked_paths(settings),
        "ssr_mode": False,
        "pwa": False,
        "mcp_server": False,
        "run_history": False,
        "footer_links": [],
        "theme": theme(),
        "css": CSS,
    }


def serve(settings: Settings | None = None) -> None:
    """Start the server, then build the agent in the background while the page loads."""
    settings = settings or Settings.from_env()
    settings.ensure_data_dir()
    agent = LazyAgent(settings)
    demo = create_app(settings, agent)
    demo.launch(**launch_kwargs(settings), prevent_thread_lock=True)
    agent.warm_up()
    demo.block_thread()
