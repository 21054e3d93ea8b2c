"""Sessions through gradio_client: separate memories, turns in parallel, stop, undo, retry."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from gradio_client import Client
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from tests.support.webapp import chat_text, loopback_client, serve_in_process, use_scripted
from treadwise.agent import Agent
from treadwise.settings import Settings
from treadwise.testing.fakes import ScriptedModel
from treadwise.tools import ToolContext, get_tools

WAIT_S = 60


class Gate:
    """A scripted model call that blocks until the test opens the gate."""

    def __init__(self, answer: str):
        self.answer = answer
        self.entered = threading.Event()
        self.opened = threading.Event()
        self.waiting = threading.Semaphore(0)

    def __call__(self, messages, kwargs) -> AIMessage:
        self.entered.set()
        self.waiting.release()
        assert self.opened.wait(WAIT_S), "the test never opened the gate"
        return AIMessage(self.answer)


@pytest.fixture
def app(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Agent, dict[str, Gate]]]:
    gates = {"slow": Gate("The slow answer."), "tool": Gate("held")}

    @tool
    def hold(reason: str) -> str:
        """Wait until the test lets go."""
        return gates["tool"](None, None).text

    tool_call = AIMessage("", tool_calls=[{"name": "hold", "args": {"reason": "integral"},
                                           "id": "call-1", "type": "tool_call"}])
    use_scripted(monkeypatch, slow=ScriptedModel().enqueue(gates["slow"]),
                 tool=ScriptedModel().enqueue(tool_call, AIMessage("The area is 9.")))
    settings = Settings.from_env()
    tools = get_tools("math", "business", context=ToolContext(settings.data_dir))
    agent = Agent(settings, tools=[*tools, hold])
    with serve_in_process(settings, agent) as url:
        yield url, agent, gates
        for gate in gates.values():
            gate.opened.set()


def submit(client: Client, message: str, custom: str = "", persona: str = "friendly"):
    return client.submit(message, persona, "offline", custom, 0.0, api_name="/send")


def exported(url: str, outputs: tuple) -> dict:
    """The conversation the session's "Export JSON" button would download (gradio_client has
    already fetched it from the server into a local copy)."""
    return json.loads(Path(outputs[-1]["value"]).read_text())


@pytest.mark.thorough
def test_two_sessions_keep_separate_memories_and_run_at_once(app):
    url, agent, gates = app
    ana, bob = (loopback_client(url) for _ in range(2))
    submit(ana, "My name is Ana Silva.").result(WAIT_S)
    slow = submit(ana, "Take your time.", custom="scripted:slow")
    assert gates["slow"].entered.wait(WAIT_S)
    # Ana's turn is still waiting on its model, yet Bob is served in the meantime.
    bob_out = submit(bob, "Please contact me at bob@example.com").result(WAIT_S)
    assert not slow.done()
    gates["slow"].opened.set()
    ana_out = slow.result(WAIT_S)
    ana_lead = submit(ana, "Please contact me at ana@example.com").result(WAIT_S)

    assert "The slow answer." in chat_text(ana_out[0])
    assert "Ana Silva" in chat_text(ana_lead[0])
    assert "Ana" not in chat_text(bob_out[0]) and "bob@example.com" in chat_text(bob_out[0])
    ana_data, bob_data = exported(url, ana_lead), exported(url, bob_out)
    assert ana_data["thread_id"] != bob_data["thread_id"]
    assert [t["user"] for t in ana_data["turns"]] == [
        "My name is Ana Silva.", "Take your time.", "Please contact me at ana@example.com"]
    assert [t["user"] for t in bob_data["turns"]] == ["Please contact me at bob@example.com"]
    bob_memory = " ".join(str(m.content) for m in agent.history(bob_data["thread_id"]))
    assert "Ana" not in bob_memory and "bob@example.com" in bob_memory


@pytest.mark.slow
def test_a_quick_question_is_answered_while_ten_sessions_wait_on_slow_replies(app):
    """Ten turns held by a slow model must not hold the queue: a third party's 2+2 is answered
    while every one of them is still waiting (the queue once ran only eight turns at once)."""
    url, agent, gates = app
    held = [submit(loopback_client(url), f"Slow question {n}",
                   custom="scripted:slow") for n in range(10)]
    for _ in held:
        assert gates["slow"].waiting.acquire(timeout=WAIT_S), "a slow turn never started"
    quick = submit(loopback_client(url), "What is 2+2?").result(WAIT_S)
    assert "= 4" in chat_text(quick[0])
    assert not any(job.done() for job in held)
    gates["slow"].opened.set()
    assert all("The slow answer." in chat_text(job.result(WAIT_S)[0]) for job in held)


def test_stop_ends_the_turn_at_once_and_the_session_goes_on(app):
    url, agent, gates = app
    client = loopback_client(url)
    job = submit(client, "This will be stopped.", custom="scripted:slow")
    assert gates["slow"].entered.wait(WAIT_S)
    client.predict(api_name="/stop")
    stopped = job.result(WAIT_S)  # returns while the model call is still blocked
    assert "Stopped. This reply was discarded" in chat_text(stopped[0])
    gates["slow"].opened.set()
    after = submit(client, "What are your opening hours on Saturday?").result(WAIT_S)
    data = exported(url, after)
    assert [t["status"] for t in data["turns"]] == ["stopped", "done"]
    assert [t["remembered"] for t in data["turns"]] == [False, True]
    memory = " ".join(str(m.content) for m in agent.history(data["thread_id"]))
    assert "This will be stopped." not in memory and "Saturday" in memory


def test_undo_and_retry_work_on_the_last_turn(app):
    url, agent, _ = app
    client = loopback_client(url)
    submit(client, "What are your opening hours on Saturday?").result(WAIT_S)
    second = submit(client, "Add 5 and 4").result(WAIT_S)
    thread = exported(url, second)["thread_id"]
    chatbot, textbox, *_ = client.predict(api_name="/undo")
    assert textbox == "Add 5 and 4"
    assert "Add 5 and 4" not in chat_text(chatbot, "user")
    assert "Add 5 and 4" not in " ".join(str(m.content) for m in agent.history(thread))
    retried = client.predict("technical", "offline", "", 0.0, api_name="/retry")
    data = exported(url, retried)
    assert [t["user"] for t in data["turns"]] == ["What are your opening hours on Saturday?"]
    assert data["turns"][0]["persona"] == "technical"
    users = [str(m.content) for m in agent.history(thread) if m.type == "human"]
    assert users == ["What are your opening hours on Saturday?"]


@pytest.mark.thorough
def test_a_new_conversation_starts_a_new_thread(app):
    url, agent, _ = app
    client = loopback_client(url)
    first = exported(url, submit(client, "My name is Ana Silva.").result(WAIT_S))
    chatbot, *_ = client.predict(api_name="/new_conversation")
    assert chatbot == []
    second = exported(url, submit(client, "Contact me at x@example.com").result(WAIT_S))
    assert second["thread_id"] != first["thread_id"]
    assert "Ana" not in json.dumps(second["turns"])


def test_stop_then_retry_log_no_error_and_memory_keeps_only_the_retried_turn(
        app, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch):
    url, agent, gates = app
    unraisable: list[object] = []
    monkeypatch.setattr("sys.unraisablehook", unraisable.append)
    caplog.set_level("WARNING")
    client = loopback_client(url)
    submit(client, "What are your opening hours on Saturday?").result(WAIT_S)
    # Stopped while a tool runs: the turn's question and tool call are half in memory.
    job = submit(client, "Calculate the integral of x^2 from 0 to 3", custom="scripted:tool")
    assert gates["tool"].entered.wait(WAIT_S)
    client.predict(api_name="/stop")
    job.result(WAIT_S)
    gates["tool"].opened.set()
    retried = client.predict("technical", "offline", "", 0.0, api_name="/retry")
    data = exported(url, retried)
    assert [t["status"] for t in data["turns"]] == ["done", "done"]
    users = [str(m.content) for m in agent.history(data["thread_id"]) if m.type == "human"]
    assert users == ["What are your opening hours on Saturday?",
                     "Calculate the integral of x^2 from 0 to 3"]
    assert [r.getMessage() for r in caplog.records if r.levelname in ("WARNING", "ERROR")] == []
    assert unraisable == []


def test_forget_me_erases_the_conversation_its_lead_and_its_exports(app):
    url, agent, _ = app
    client = loopback_client(url)
    outputs = submit(client, "please contact me at forget.me@fleetco.com about fleet pricing")
    first = exported(url, outputs.result(WAIT_S))
    thread = first["thread_id"]
    assert agent.store.held_for_thread(thread).leads and agent.history(thread)
    chatbot, box, *_ = client.predict(api_name="/forget_me")
    said = chat_text(chatbot)
    assert "erased" in said and "forget.me@fleetco.com" in said
    assert agent.history(thread) == []
    assert not [lead for lead in agent.store.leads() if lead["email"] == "forget.me@fleetco.com"]
    # The session goes on afresh: the next export holds nothing of the forgotten one.
    after = exported(url, submit(client, "What are your opening hours?").result(WAIT_S))
    assert after["thread_id"] != thread and "forget.me" not in json.dumps(after)
    chatbot, *_ = client.predict(api_name="/forget_me")
    assert "erased" in chat_text(chatbot)
