"""What installed packages add to the page: without the harness the app is the chat alone; a
package's tab gets its admin handlers guarded on a public page; a chat hook decides a turn."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from gradio_client.exceptions import AppError

from tests.conftest import REPO
from tests.support.distributions import install_distribution
from tests.support.webapp import chat_text, loopback_client, serve_in_process
from treadwise.settings import Settings, child_environment
from treadwise.web.access import Access
from treadwise.web.extensions import PLUGS, Extension, PageContext, extensions
from treadwise.web.hooks import Choice

# The harness cannot be imported (as when only `pip install .` put the product there): the app
# is found without it, builds, and answers a chat message.
WITHOUT_HARNESS = """
import sys, logging
sys.modules["experiments"] = None  # every import of the harness raises ImportError
logging.basicConfig(level=logging.WARNING)
from gradio_client import Client
from tests.support.webapp import close_app
from treadwise.settings import Settings
from treadwise.web.gradio_app import create_app, start
settings = Settings.from_env()
demo = create_app(settings)
ids = str(demo.get_config_file())
assert "experiments-tab" not in ids and "live-score" not in ids and "run-picker" not in ids
start(demo, settings, quiet=True, prevent_thread_lock=True)
client = Client(f"http://127.0.0.1:{settings.port}/", verbose=False, ssl_verify=False,
                download_files=False)
chatbot, *_ = client.predict("What are your opening hours?", "friendly", "offline", "", 0.0,
                             "react", api_name="/send")
print("ANSWER", chatbot[-1]["content"])
close_app(demo)
"""

NOTES = '''
from treadwise.web.extensions import Extension, Tab


class Notes:
    admin_handlers = {"secret": None}

    def build(self, demo):
        import gradio as gr
        out = gr.Textbox(elem_id="notes-out")
        gr.Button(elem_id="notes-hello").click(self.hello, None, out, api_name="notes_hello")
        gr.Button(elem_id="notes-secret").click(self.secret, None, out,
                                                  api_name="notes_secret")

    def hello(self):
        return "hello, anyone"

    def secret(self):
        return "for admins"


def plug(page):
    return Extension(tabs=[Tab("Notes", "notes-tab", [Notes()])])


def broken(page):
    import a_package_nobody_installed  # noqa: F401
'''


@pytest.mark.slow
def test_without_the_harness_the_app_is_the_chat_alone(tmp_path: Path) -> None:
    from tests.support.webapp import free_port

    env = child_environment(TREADWISE_DATA_DIR=str(tmp_path / "data"),
                            TREADWISE_PORT=str(free_port()))
    done = subprocess.run([sys.executable, "-c", WITHOUT_HARNESS], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ANSWER" in done.stdout and "hours" in done.stdout.lower()
    assert "the page runs without experiments" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.fixture
def notes_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = install_distribution(tmp_path / "site", "treadwise-notes", {"treadwise_notes": NOTES},
                                "[treadwise.web]\nnotes = treadwise_notes:plug\n"
                                "broken = treadwise_notes:broken\n")
    monkeypatch.syspath_prepend(str(site))
    yield
    sys.modules.pop("treadwise_notes", None)


def test_an_installed_package_adds_a_tab_whose_admin_handlers_a_public_page_guards(
        notes_package, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    env = {"TREADWISE_PUBLIC": "1", "TREADWISE_AUTH": "boss:pw-9931,guest:pw-1177",
           "TREADWISE_ADMINS": "boss"}
    settings = dataclasses.replace(Settings.from_env(env), data_dir=tmp_path / "data")
    with caplog.at_level("WARNING", logger="treadwise.web.extensions"):
        found = extensions(PageContext(settings, Access(settings)))
    assert [tab.id for extension in found for tab in extension.tabs][-1] == "notes-tab"
    assert any("without broken: No module named 'a_package_nobody_installed'" in r.getMessage()
               for r in caplog.records)
    with serve_in_process(settings, plugs={"notes": PLUGS.get("notes")}) as url:
        guest = loopback_client(url, auth=("guest", "pw-1177"), download_files=False)
        assert guest.predict(api_name="/notes_hello") == "hello, anyone"
        with pytest.raises(AppError, match="signed-in admin"):
            guest.predict(api_name="/notes_secret")
        boss = loopback_client(url, auth=("boss", "pw-9931"), download_files=False)
        assert boss.predict(api_name="/notes_secret") == "for admins"


class TechnicalOnly:
    """A chat hook answering every turn with the technical persona, as an arm would."""

    def __init__(self) -> None:
        self.recorded: list[tuple[str, Any]] = []

    def build_beside(self, chat: Any, session: Any, conversation: Any) -> None:
        pass

    def build_settings(self, demo: Any, chatbot: Any, session: Any) -> None:
        pass

    def build_pickers(self, demo: Any, pickers: Any) -> None:
        pass

    def choose(self, session: Any, choice: Choice, request: Any) -> Choice:
        return dataclasses.replace(choice, persona="technical", arm=("exp", "tech", "v"))

    def record(self, turn: Any, arm: Any) -> None:
        self.recorded.append((turn.persona, arm))


@pytest.mark.thorough
def test_a_chat_hook_decides_who_answers_and_sees_the_finished_turn(tmp_path: Path) -> None:
    hook = TechnicalOnly()
    settings = dataclasses.replace(Settings.from_env({}), data_dir=tmp_path / "data")
    with serve_in_process(settings, plugs={"hook": lambda page: Extension(chat_hooks=[hook])}
                          ) as url:
        client = loopback_client(url, download_files=False)
        chatbot, *_ = client.predict("What are your opening hours?", "cautious", "offline", "",
                                     0.0, "react", api_name="/send")
    assert "Technical" in chat_text(chatbot) and "Cautious" not in chat_text(chatbot)
    assert hook.recorded == [("technical", ("exp", "tech", "v"))]
