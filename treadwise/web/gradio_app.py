"""The Gradio app: the page built from settings and one shared agent; safe launch options."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from treadwise.settings import Settings
from treadwise.web.access import Access, RefuseUploads
from treadwise.web.extensions import PageContext, Plug, extensions, guard
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
# How often Gradio's queue looks again for an event to start while it has nothing it can start
# (nothing queued, or every slot busy), and for progress to send. Gradio 6.31 looks every 1 ms
# and 10 ms on Linux (every 50 and 100 ms on Windows), which keeps an idle app at about 8% of a
# core (benchmarks/idle_app.py). A turn now waits at most 20 ms more to start; replies, streamed
# as they come, are not paced by either.
QUEUE_POLL_S = 0.02
PROGRESS_POLL_S = 0.1


def create_app(settings: Settings | None = None, agent: Agent | LazyAgent | None = None, *,
               env: Mapping[str, str] | None = None,
               plugs: Mapping[str, Plug] | None = None) -> gr.Blocks:
    """Build the page: the Chat tab, then the tabs and chat hooks that `plugs` add (by default
    every installed package's, see web/extensions.py). Without an agent, one is built on first
    use (see `serve`)."""
    if settings is None:
        settings = agent.settings if agent is not None else Settings.from_env()
    use_cache_dir(settings)
    import gradio as gr

    from treadwise.web.chat import ChatTab

    holder = agent if isinstance(agent, LazyAgent) else LazyAgent(settings, agent)
    access = Access(settings, env)
    added = extensions(PageContext(settings, access), plugs)
    chat = ChatTab(holder, settings, access,
                   hooks=[hook for extension in added for hook in extension.chat_hooks])
    with gr.Blocks(title="TreadWise assistant", analytics_enabled=False,
                   delete_cache=CACHE_CLEANUP) as demo:
        gr.Markdown("# TreadWise Tire Co. assistant\nTires, mobile service, Smart Tread\u2122 "
                    "monitoring and math, answered by the persona you pick.",
                    elem_classes="tw-header")
        with gr.Tabs():
            with gr.Tab("Chat", id="chat-tab"):
                chat.build(demo)
            for tab in (tab for extension in added for tab in extension.tabs):
                with gr.Tab(tab.title, id=tab.id):
                    for section in tab.sections:
                        if settings.public:
                            guard(section, access)
                        section.build(demo)
    demo.queue(default_concurrency_limit=CONCURRENCY, max_size=MAX_QUEUE)
    pace_queue(demo)
    return demo


def pace_queue(demo: gr.Blocks) -> None:
    """Have `demo`'s queue look again for work every QUEUE_POLL_S (progress every
    PROGRESS_POLL_S) while it has nothing it can start, instead of Gradio's every millisecond;
    a longer wait already set is kept, and a Gradio whose queue has no such setting is left as
    it is."""
    queue = getattr(demo, "_queue", None)
    for name, seconds in (("sleep_when_free", QUEUE_POLL_S),
                          ("progress_update_sleep_when_free", PROGRESS_POLL_S)):
        if isinstance(getattr(queue, name, None), (int, float)):
            setattr(queue, name, max(getattr(queue, name), seconds))


def launch_kwargs(settings: Settings) -> dict[str, Any]:
    """Options for `Blocks.launch`: local only, no share link, no error details, nothing
    from the data dir or a .env served."""
    from treadwise.web.files import blocked_paths
    from treadwise.web.page_script import PAGE_JS
    from treadwise.web.theme import CSS, HEAD, theme

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
        "js": PAGE_JS,
        "head": HEAD,
        "quiet": True,  # Gradio's banner suggests share=True; `serve` prints ours
    }
    options["app_kwargs"] = {"middleware": guards(settings)}
    return options


def guards(settings: Settings) -> list[Any]:
    """The middleware in front of Gradio, outermost first: the client a trusted proxy names,
    the login, exports for their owner only, no uploads (the page takes no files), and the
    page's first script (Gradio's status trackers drawn ten times a second, not sixty:
    treadwise/web/idle_frames.py)."""
    from starlette.middleware import Middleware

    from treadwise.web.forwarded import TrustedProxies
    from treadwise.web.idle_frames import EarlyScript
    from treadwise.web.owners import OwnedFiles
    from treadwise.web.signin import SignIn

    middleware = []
    if settings.trusted_proxies:
        middleware.append(Middleware(TrustedProxies, proxies=settings.trusted_proxies))
    if settings.auth:
        middleware.append(Middleware(SignIn, settings=settings))
    if settings.public:
        middleware += [Middleware(OwnedFiles, settings=settings), Middleware(RefuseUploads)]
    middleware.append(Middleware(EarlyScript))
    return middleware


def banner(settings: Settings) -> str:
    where = f"http://{settings.host}:{settings.port}"
    if not settings.public:
        return (f"TreadWise is running at {where} (this machine only; see README, "
                "\"Deploying publicly\", before opening it to a network).")
    rate = f"{settings.session_rate:g} messages a minute" if settings.session_rate else "no"
    login = "a login page" if settings.auth else "no login"
    proxies = (f"the address X-Forwarded-For gives when the request comes from "
               f"{', '.join(settings.trusted_proxies)}" if settings.trusted_proxies else
               "the connecting address (behind a reverse proxy, set TREADWISE_TRUSTED_PROXIES)")
    lines = [f"TreadWise is listening on {where} in public mode: {login}; visitors get the "
             f"models {', '.join(settings.public_models)}, no sweeps, no experiment runs, no "
             f"custom model specs and a limit of {rate} per session. Rate limits count "
             f"{proxies}."]
    if settings.database_url and not settings.secret_key:
        lines.append("TREADWISE_SECRET_KEY is not set: conversation links made here open "
                     "only on this replica.")
    return "\n".join(lines)


def trust_proxies(settings: Settings) -> None:
    """Have the server itself believe nobody's X-Forwarded-* headers: TrustedProxies reads
    them, from the proxies in TREADWISE_TRUSTED_PROXIES only, one hop back.

    Uvicorn, which Gradio starts, rewrites the client address from that header, by default
    for any request from 127.0.0.1 or ::1, walking back past every trusted address and taking
    any string, so that any local process could pick the address the rate limit counts. Its
    only setting Gradio does not override is FORWARDED_ALLOW_IPS, read when the server starts.
    """
    os.environ["FORWARDED_ALLOW_IPS"] = ""


def start(demo: gr.Blocks, settings: Settings, **overrides: Any) -> None:
    """Launch `demo` with `launch_kwargs(settings)` (and `overrides`), proxies trusted as set."""
    trust_proxies(settings)
    demo.launch(**{**launch_kwargs(settings), **overrides})


def serve(settings: Settings | None = None) -> None:
    """Start the server, then build the agent in the background while the page loads."""
    settings = settings or Settings.from_env()
    settings.ensure_data_dir()
    use_cache_dir(settings)  # before Gradio is imported: some of it reads the folder then
    agent = LazyAgent(settings)
    demo = create_app(settings, agent)
    start(demo, settings, prevent_thread_lock=True)
    print(banner(settings), flush=True)
    agent.warm_up()
    demo.block_thread()
