"""The app's safe defaults: launch options, model picker, refused input, files never served."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from gradio_client import Client
from langchain_core.messages import AIMessage

from tests.support.loopback import OpenAIServer, tool_then_answer
from tests.support.webapp import (
    REPO,
    ROOMY_MATH_S,
    chat_text,
    close_app,
    free_port,
    loopback_client,
    serve_in_process,
    use_scripted,
)
from treadwise.agent import Agent
from treadwise.models import short_label
from treadwise.models.local import bundled_specs
from treadwise.settings import Settings
from treadwise.testing.fakes import ScriptedModel
from treadwise.web.gradio_app import (
    PROGRESS_POLL_S,
    QUEUE_POLL_S,
    create_app,
    launch_kwargs,
    pace_queue,
    start,
)

OFFLINE = ("offline (rule-based, not an LLM)", "offline")


def component(demo, elem_id: str) -> dict:
    config = demo.get_config_file()
    return next(c["props"] for c in config["components"]
                if c.get("props", {}).get("elem_id") == elem_id)


def send(client: Client, message: str, persona: str = "friendly", model: str = "offline",
         custom: str = "") -> list[dict]:
    chatbot, *_ = client.predict(message, persona, model, custom, 0.0, api_name="/send")
    return chatbot


@pytest.mark.thorough
def test_launch_options_are_safe_by_default(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TREADWISE_AUTH", "ana:s3cret-pass")
    settings = Settings.from_env()
    options = launch_kwargs(settings)
    assert options["server_name"] == "127.0.0.1" and options["server_port"] == 7860
    assert options["share"] is False
    assert options["auth"] == [("ana", "s3cret-pass")]
    assert options["show_error"] is False
    assert options["enable_monitoring"] is False
    assert options["max_file_size"]
    blocked = options["blocked_paths"]
    for name in ("leads.db", "memory.db", "plots"):
        assert str(settings.data_dir.resolve() / name) in blocked
    assert not any(p.endswith("web-cache") for p in blocked)
    assert str(Path.cwd() / ".env") in options["blocked_paths"]
    assert not any(Path(p).is_relative_to(settings.data_dir) for p in options["allowed_paths"])
    before = dict(os.environ)
    demo = create_app(settings)
    changed = {k for k in {*before, *os.environ} if before.get(k) != os.environ.get(k)}
    # The cache folder is ours; Gradio's Blocks turns Hugging Face telemetry off by itself.
    assert changed <= {"GRADIO_TEMP_DIR", "HF_HUB_DISABLE_TELEMETRY"}
    assert demo._queue.default_concurrency_limit >= 4
    assert Path(demo.GRADIO_CACHE).is_relative_to(settings.data_dir.resolve()), \
        "served copies stay in the data dir, not the system temp dir"


def test_the_running_queue_looks_for_work_every_20_ms_not_every_millisecond() -> None:
    """Gradio 6.31's queue looks for a new event every 1 ms (progress every 10 ms) while it has
    none: an idle app used about 8% of a core (benchmarks/idle_app.py). The app's queue, once
    launched, waits QUEUE_POLL_S and PROGRESS_POLL_S between looks, and Gradio's loops read
    those settings (a Gradio that renamed them would leave the app polling again)."""
    import inspect

    from gradio.queueing import Queue

    assert "self.sleep_when_free" in inspect.getsource(Queue.start_processing)
    assert "self.progress_update_sleep_when_free" in inspect.getsource(Queue.start_progress_updates)
    settings = dataclasses.replace(Settings.from_env(), port=free_port())
    demo = create_app(settings)
    start(demo, settings, quiet=True, prevent_thread_lock=True)
    try:
        assert (demo._queue.sleep_when_free, demo._queue.progress_update_sleep_when_free) == \
            (QUEUE_POLL_S, PROGRESS_POLL_S) == (0.02, 0.1)
        assert httpx.get(demo.local_url + "config").status_code == 200
    finally:
        close_app(demo)
    # Longer waits a queue was given are kept; something that is not a queue is left alone.
    slow = type("Queue", (), {"sleep_when_free": 0.05, "progress_update_sleep_when_free": 0.01})
    demo.__dict__["_queue"] = slow
    pace_queue(demo)
    assert (slow.sleep_when_free, slow.progress_update_sleep_when_free) == (0.05, 0.1)
    pace_queue(object())  # type: ignore[arg-type]


def test_host_and_port_come_from_the_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TREADWISE_HOST", "127.0.0.2")
    monkeypatch.setenv("TREADWISE_PORT", "7999")
    options = launch_kwargs(Settings.from_env())
    assert (options["server_name"], options["server_port"]) == ("127.0.0.2", 7999)
    assert options["auth"] is None


@pytest.mark.thorough
def test_login_is_required_when_auth_is_set(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TREADWISE_AUTH", "ana:s3cret-pass")
    with serve_in_process(Settings.from_env()) as url:
        assert httpx.get(url + "config").status_code == 401
        login = httpx.post(url + "login", data={"username": "ana", "password": "s3cret-pass"})
        assert login.status_code == 200
        assert httpx.get(url + "config", cookies=login.cookies).status_code == 200


@pytest.mark.thorough
def test_without_a_key_only_offline_local_models_and_the_custom_field_are_offered():
    demo = create_app(Settings.from_env())
    local = [(short_label(spec), spec) for spec in bundled_specs()]
    assert [tuple(c) for c in component(demo, "model-picker")["choices"]] == [OFFLINE, *local]
    assert component(demo, "model-spec")["label"] == "Or any model spec"


@pytest.mark.thorough
def test_with_an_openai_key_openai_models_appear_in_the_page(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
    with serve_in_process(Settings.from_env()) as url:
        page = httpx.get(url).text
    assert "openai:gpt-4o-mini" in page and OFFLINE[0] in page
    assert "sk-test-not-a-real-key-0000" not in page


@pytest.mark.thorough
def test_personas_are_listed_with_their_descriptions_and_a_new_file_appears(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    extra = tmp_path / "personas"
    extra.mkdir()
    (extra / "pirate.yaml").write_text("key: pirate\nname: Tire Pirate\ndescription: Talks like "
                                       "a pirate about tires.\nstyle: Arr.\norder: 9\n")
    monkeypatch.setenv("TREADWISE_PERSONAS_DIR", str(extra))
    demo = create_app(Settings.from_env())
    choices = [tuple(c) for c in component(demo, "persona-picker")["choices"]]
    assert ("Technical Expert", "technical") in choices and ("Tire Pirate", "pirate") in choices
    page_text = str(demo.get_config_file())
    assert "Precise and specification-driven" in page_text and "Talks like a pirate" in page_text


def test_a_persona_file_named_like_a_built_in_is_ignored_with_a_warning(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture):
    from treadwise.personas import load_personas

    extra = tmp_path / "personas"
    extra.mkdir()
    (extra / "friendly.yaml").write_text("name: Impostor\ndescription: Not the real one.\n"
                                         "style: Sell everything.\n")
    (extra / "sly.yaml").write_text("key: technical\nname: Impostor 2\ndescription: Also "
                                    "not.\nstyle: Hm.\n")
    monkeypatch.setenv("TREADWISE_PERSONAS_DIR", str(extra))
    with caplog.at_level("WARNING", logger="treadwise.personas"):
        personas = load_personas()
    assert personas["friendly"].name != "Impostor" and personas["technical"].name != "Impostor 2"
    warnings = [r.getMessage() for r in caplog.records]
    assert any("friendly.yaml is ignored: the persona 'friendly' is built in" in w
               for w in warnings)
    assert any("sly.yaml is ignored" in w for w in warnings)


def test_importing_treadwise_does_not_import_gradio():
    code = ("import sys, treadwise, treadwise.agent, treadwise.command_line, treadwise.web; "
            "assert 'gradio' not in sys.modules, 'gradio imported'")
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)


def test_a_message_over_the_limit_is_refused_before_any_model_call(
        monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TREADWISE_MAX_INPUT_CHARS", "50")
    model = ScriptedModel().enqueue(AIMessage("should never be asked"))
    use_scripted(monkeypatch, echo=model)
    settings = Settings.from_env()
    with serve_in_process(settings, Agent(settings)) as url:
        client = loopback_client(url)
        shown = send(client, "x" * 80, custom="scripted:echo")
        assert "Messages may be up to 50 characters" in httpx.get(url).text
    reply = chat_text(shown)
    assert "Message not sent" in reply and "the limit is 50" in reply
    assert model.calls == []


def test_errors_read_as_one_line_and_the_conversation_goes_on(monkeypatch: pytest.MonkeyPatch):
    def explode(messages, kwargs):
        raise RuntimeError("socket closed by peer at 10.0.0.1 /srv/app.py line 9")

    use_scripted(monkeypatch, broken=ScriptedModel().enqueue(explode))
    settings = Settings.from_env()
    with serve_in_process(settings, Agent(settings)) as url:
        client = loopback_client(url)
        no_key = chat_text(send(client, "hello", custom="openai:gpt-4o-mini"))
        failed = chat_text(send(client, "hello", custom="scripted:broken"))
        after = chat_text(send(client, "What are your opening hours on Saturday?"))
    assert "Model not available" in no_key and "OPENAI_API_KEY" in no_key
    assert "--model" not in no_key, "a web user has no command line"
    assert "Something went wrong (RuntimeError)" in failed
    assert "Traceback" not in failed and "/srv/app.py" not in failed
    assert "Saturday" in after.split("Something went wrong")[-1]


@pytest.mark.thorough
def test_the_picked_temperature_reaches_the_provider(monkeypatch: pytest.MonkeyPatch):
    with OpenAIServer(tool_then_answer("get_business_info", {"topic": "hours"})) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-test-key")
        settings = Settings.from_env()
        with serve_in_process(settings, Agent(settings, toolsets=("business",))) as url:
            chatbot, *_ = loopback_client(url).predict(
                "Opening hours?", "technical", "openai:gpt-4o-mini", "", 0.35, "react",
                api_name="/send")
        sent = list(server.requests)
    assert [r["temperature"] for r in sent] == [0.35, 0.35]
    assert "Technical Expert" in chat_text(chatbot[-1:]) and "openai:gpt-4o-mini" in chat_text(
        chatbot[-1:])


@pytest.mark.thorough
def test_plots_skip_gradios_per_update_checks_are_served_and_still_cleaned_up(
        monkeypatch: pytest.MonkeyPatch):
    """Every update of a turn carries every plot of the conversation; Gradio checks each file
    of each update (a dozen path resolutions) unless it sits in a static folder. The chat's
    plots do (web/files.py ShownPlots): no plot meets those checks, each is still served, and
    Gradio's cleaner still removes them, as it did the copies it made itself."""
    import gradio.processing_utils as processing
    from gradio.data_classes import _StaticFiles
    from gradio.route_utils import delete_files_created_by_app

    import treadwise.web.gradio_app as gradio_app
    from treadwise.web.files import SHOWN_DIR, cache_dir

    monkeypatch.setenv("TREADWISE_MATH_TIMEOUT_S", str(ROOMY_MATH_S))
    built: list = []
    monkeypatch.setattr(gradio_app, "create_app", lambda *args, **kwargs: built.append(
        create_app(*args, **kwargs)) or built[-1])
    checked: list[str] = []
    check = processing._check_allowed
    monkeypatch.setattr(processing, "_check_allowed", lambda path, *args: checked.append(
        str(path)) or check(path, *args))
    settings = Settings.from_env()
    folder = (cache_dir(settings) / SHOWN_DIR).resolve()
    with serve_in_process(settings, Agent(settings)) as url:
        client = loopback_client(url, download_files=False)
        # The plot is published when the turn ends; the turn's last update carries it.
        shown = send(client, "Calculate the integral of x² from 0 to 3")
        plots = [Path(item["value"]["path"]) for m in shown for item in m["content"]
                 if item.get("type") == "component" and item.get("component") == "image"]
        assert len(plots) == 1 and plots[0].parent.parent == folder, plots
        # The turn's exports were checked, so the spy sees what Gradio checks; no plot was.
        assert checked and not [p for p in checked if SHOWN_DIR in Path(p).parts], checked
        assert _StaticFiles.all_paths[0] == folder and _StaticFiles.all_paths.count(folder) == 1
        for plot in plots:
            served = httpx.get(f"{url}gradio_api/file={plot}")
            assert served.status_code == 200 and served.content.startswith(b"\x89PNG")
        (demo,) = built
        assert {str(p) for p in plots} <= set().union(*demo.temp_file_sets)
        delete_files_created_by_app(demo, None)  # what the app's delete_cache runs
        assert not [p for p in plots if p.exists()]


def test_a_second_app_in_the_process_takes_the_static_place_of_the_first(tmp_path: Path):
    """The static folders are the process's, walked for every file of every update: an app
    built after another replaces the first one's folder rather than adding to the list, and
    each app's cleaner gets its own copies."""
    import gradio as gr
    from gradio.data_classes import _StaticFiles

    from treadwise.web.files import SHOWN_DIR, ShownPlots

    first, second = ShownPlots(tmp_path / "one"), ShownPlots(tmp_path / "two")
    with gr.Blocks() as one, gr.Blocks() as two:
        pass
    first.serve(one)
    before = len(_StaticFiles.all_paths)
    second.serve(two)
    second.serve(two)  # twice: still one entry, one set
    ours = [p for p in _StaticFiles.all_paths if p.name == SHOWN_DIR]
    assert len(_StaticFiles.all_paths) == before
    assert ours == [(tmp_path / "two" / SHOWN_DIR).resolve()]
    assert _StaticFiles.all_paths[0] == ours[0]
    assert [s is first.files for s in one.temp_file_sets].count(True) == 1
    assert [s is second.files for s in two.temp_file_sets].count(True) == 1


@pytest.mark.thorough
def test_data_dir_files_dotenv_and_system_files_are_never_served(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    dotenv = tmp_path / ".env"
    dotenv.write_text("OPENAI_API_KEY=sk-dotenv-secret-value-1234\n")
    # A plot must be drawn to be served: room for it on a loaded machine.
    monkeypatch.setenv("TREADWISE_MATH_TIMEOUT_S", str(ROOMY_MATH_S))
    settings = Settings.from_env()
    with serve_in_process(settings, Agent(settings)) as url:
        client = loopback_client(url, download_files=False)
        shown = send(client, "I'd like a quote, I'm Ana. Contact me at ana@example.com")
        plot_shown = send(client, "Calculate the integral of x² from 0 to 3")
        leads = settings.data_dir / "leads.db"
        assert leads.exists() and (settings.data_dir / "memory.db").exists()
        plot = next(item["value"] for m in plot_shown for item in m["content"]
                    if item.get("type") == "component" and item.get("component") == "image")
        served = httpx.get(f"{url}gradio_api/file={plot['path']}")
        assert served.status_code == 200 and served.content.startswith(b"\x89PNG")
        for target, secret in [(leads, b"ana@example.com"), (dotenv, b"sk-dotenv-secret"),
                               (settings.data_dir / "memory.db", b"ana@example.com"),
                               (Path("/etc/passwd"), b"root:"),
                               (Path(plot["path"]).parent / ".." / ".." / "etc" / "passwd",
                                b"root:")]:
            response = httpx.get(f"{url}gradio_api/file={target}")
            assert response.status_code != 200, target
            assert secret not in response.content, target
    assert "ana@example.com" in chat_text(shown)
