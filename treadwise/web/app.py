"""The Gradio app: the page built from settings and one shared agent; safe launch options."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from treadwise.settings import Settings
from treadwise.web.access import Access, RefuseUploads, admin_only
from treadwise.web.files import use_cache_dir
from treadwise.web.turns import LazyAgent

if TYPE_CHECKING:
    import gradio as gr

    from treadwise.agent import Agent

# Turns mostly wait (on a provider, a math worker), so many run at once: a quick question must
# not queue behind others' slow ones. The math pool and the per-session rate limit bound the work.
CONCURRENCY = 32
MAX_QUEUE = 128
MAX_FILE_SIZE = "1mb"  # the page takes no uploads; this bounds anything posted anyway
CACHE_CLEANUP = (3600, 24 * 3600)  # every hour, drop cached plots and exports older than a day
RESULTS_DIR = Path("results")


def create_app(settings: Settings | None = None, agent: Agent | LazyAgent | None = None, *,
               env: Mapping[str, str] | None = None,
               results_dir: Path | None = None) -> gr.Blocks:
    """Build the page. Without an agent, one is built on first use (see `serve`)."""
    if settings is None:
        settings = agent.settings if agent is not None else Settings.from_env()
    use_cache_dir(settings)
    import gradio as gr

    from treadwise.web.chat import ChatTab
    from treadwise.web.experiments_tab import ExperimentsTab

    holder = agent if isinstance(agent, LazyAgent) else LazyAgent(settings, agent)
    access = Access(settings, env)
    experiments = ExperimentsTab(results_dir or RESULTS_DIR)
    if settings.public:  # sweeps write under results/ and may call paid models
        experiments.sweep = admin_only(experiments.sweep, access)  # type: ignore[method-assign]
    with gr.Blocks(title="TreadWise assistant", analytics_enabled=False,
                   delete_cache=CACHE_CLEANUP) as demo:
        gr.Markdown("# TreadWise Tire Co. assistant\nTires, mobile service, Smart Tread\u2122 "
                    "monitoring and math, answered by the persona you pick.",
                    elem_classes="tw-header")
        with gr.Tabs():
            with gr.Tab("Chat", id="chat-tab"):
                ChatTab(holder, settings, access).build(demo)
            with gr.Tab("Experiments", id="experiments-tab"):
                experiments.build(demo)
    demo.queue(default_concurrency_limit=CONCURRENCY, max_size=MAX_QUEUE)
    return demo


def launch_kwargs(settings: Settings) -> dict[str, Any]:
    """Options for `Blocks.launch`: local only, no share link, no error details, nothing
    from the data dir or a .env served."""
    from treadwise.web.files import blocked_paths
    from treadwise.web.theme import CSS, theme

    options: dict[str, Any] = {
        "server_name": settings.host,
        "server_port": settings.port,
        "share": False,
        "auth": list(settings.auth) or None,
        "auth_message": "TreadWise: sign in with a user and password set in TREADWISE_AUTH.",
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
        "quiet": True,  # Gradio's banner suggests share=True; `serve` prints ours
    }
    if settings.public:  # the page takes no files; a public server refuses any upload
        from starlette.middleware import Middleware

        options["app_kwargs"] = {"middleware": [Middleware(RefuseUploads)]}
    return options


def banner(settings: Settings) -> str:
    where = f"http://{settings.host}:{settings.port}"
    if not settings.public:
        return (f"TreadWise is running at {where} (this machine only; see README, "
                "\"Deploying publicly\", before opening it to a network).")
    rate = f"{settings.session_rate:g} messages a minute" if settings.session_rate else "no"
    login = "a login page" if settings.auth else "no login"
    return (f"TreadWise is listening on {where} in public mode: {login}; visitors get the "
            f"models {', '.join(settings.public_models)}, no sweeps, no custom model specs "
            f"and a limit of {rate} per session.")


def serve(settings: Settings | None = None) -> None:
    """Start the server, then build the agent in the background while the page loads."""
    settings = settings or Settings.from_env()
    settings.ensure_data_dir()
    use_cache_dir(settings)  # before Gradio is imported: some of it reads the folder then
    agent = LazyAgent(settings)
    demo = create_app(settings, agent)
    demo.launch(**launch_kwargs(settings), prevent_thread_lock=True)
    print(banner(settings), flush=True)
    agent.warm_up()
    demo.block_thread()
