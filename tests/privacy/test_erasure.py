"""Withdrawal and erasure: a visitor's leads and questions go on request, truthfully reported;
the operator deletes by address; retention deletes what is older than N days; no oracle."""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from tests.conftest import BACKENDS
from tests.support.cli import treadwise
from treadwise.agent import Agent
from treadwise.settings import Settings
from treadwise.storage import open_store
from treadwise.storage.memory import open_checkpointer
from treadwise.storage.retention import purge
from treadwise.storage.sqlite import Store
from treadwise.testing.fakes import ScriptedModel

REPO = Path(__file__).resolve().parents[2]
WITHDRAWALS = ["I withdraw consent, delete my data", "forget me", "please delete my data",
               "erase all my details please", "remove my email address",
               "I revoke my consent", "actually, don't contact me"]


def agent_for(settings: Settings, **models) -> Agent:
    return Agent(settings, toolsets=("business",), models=models)


def visit(agent: Agent, thread: str, persona: str = "friendly") -> None:
    agent.run("please contact me at ana@fleetco.com about fleet pricing", thread_id=thread,
              persona=persona)
    agent.run("Do you accept payment in Bitcoin?", thread_id=thread, persona=persona)


@pytest.mark.parametrize("persona", ["friendly", "technical", "cautious"])
@pytest.mark.parametrize("words", WITHDRAWALS)
def test_a_withdrawal_deletes_this_visitors_lead_and_question(data_dir, persona, words) -> None:
    agent = agent_for(Settings(data_dir=data_dir))
    visit(agent, "A", persona)
    agent.run("please contact me at bo@example.org about winter tires", thread_id="B")
    store = Store(data_dir)
    assert store.lead_count() == 2 and store.feedback_count() == 1
    result = agent.run(words, thread_id="A", persona=persona)
    assert [step.name for step in result.tool_calls] == ["delete_customer_data"]
    assert [lead["email"] for lead in store.leads()] == ["bo@example.org"]
    assert store.feedback_count() == 0
    # It says what went, and only that.
    assert "ana@fleetco.com" in result.answer and "1 question" in result.answer
    assert "bo@example.org" not in result.answer


def test_nothing_stored_is_said_truthfully(data_dir) -> None:
    agent = agent_for(Settings(data_dir=data_dir))
    result = agent.run("I withdraw consent, delete my data", thread_id="A")
    assert "nothing" in result.answer.lower() and "deleted" not in result.answer.lower()


def test_the_issue_probe_after_a_saved_lead(data_dir) -> None:
    agent = agent_for(Settings(data_dir=data_dir))
    agent.run("please contact me at ana@fleetco.com about fleet pricing", thread_id="T")
    result = agent.run("I withdraw consent, delete my data", thread_id="T")
    assert Store(data_dir).lead_count() == 0
    assert "haven't saved any address" not in result.answer
    assert "deleted" in result.answer.lower()


def eraser(messages, kwargs) -> AIMessage:
    """A model that erases whenever it can, whatever the customer said."""
    if isinstance(messages[-1], ToolMessage):
        return AIMessage(messages[-1].text)
    return AIMessage("", tool_calls=[{"name": "delete_customer_data", "id": "e1", "args": {},
                                      "type": "tool_call"}])


def test_a_model_erases_only_when_the_customer_asked(data_dir) -> None:
    agent = agent_for(Settings(data_dir=data_dir), eraser=ScriptedModel(script=[eraser]))
    visit(agent, "A")
    unasked = agent.run("What are your opening hours?", thread_id="A", model="eraser")
    assert unasked.tool_calls[0].error.startswith("Refused")
    assert "Refused" not in unasked.answer
    assert Store(data_dir).lead_count() == 1
    asked = agent.run("forget me please", thread_id="A", model="eraser")
    assert asked.tool_calls[0].error is None and Store(data_dir).lead_count() == 0


def vague_eraser(messages, kwargs) -> AIMessage:
    """A model that erases when asked but then answers with a sentence of its own that says
    nothing of what went (SmolLM2 did: "Data: The text of this chat itself is not deleted")."""
    if isinstance(messages[-1], ToolMessage):
        return AIMessage("Data: The text of this chat itself is not deleted by this.")
    return AIMessage("", tool_calls=[{"name": "delete_customer_data", "id": "e1", "args": {},
                                      "type": "tool_call"}])


def test_the_customer_reads_what_the_models_erasure_deleted(data_dir) -> None:
    agent = agent_for(Settings(data_dir=data_dir), vague=ScriptedModel(script=[vague_eraser]))
    visit(agent, "A")
    result = agent.run("I withdraw consent, delete my data", thread_id="A", model="vague")
    assert [step.name for step in result.tool_calls] == ["delete_customer_data"]
    assert Store(data_dir).lead_count() == 0
    assert "ana@fleetco.com" in result.answer and "deleted" in result.answer
    # A model that says it well keeps its own words.
    kept = agent_for(Settings(data_dir=data_dir), eraser=ScriptedModel(script=[eraser]))
    visit(kept, "B")
    said = kept.run("forget me please", thread_id="B", model="eraser")
    assert said.answer.startswith("Deleted: ") and "ana@fleetco.com" in said.answer


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return treadwise(*args, env=env)


def test_the_operator_deletes_an_address_from_the_command_line(data_dir) -> None:
    agent = agent_for(Settings(data_dir=data_dir))
    visit(agent, "A")
    agent.run("please contact me at bo@example.org about winter tires", thread_id="B")
    agent.run("do you sponsor local racing teams?", thread_id="B")
    env = {**os.environ, "TREADWISE_DATA_DIR": str(data_dir)}
    done = cli("leads", "delete", "--email", "ANA@fleetco.com", env=env)
    assert done.returncode == 0, done.stderr
    assert "1 contact request (ana@fleetco.com: fleet pricing) and 1 question" in done.stderr
    store = Store(data_dir)
    assert [lead["email"] for lead in store.leads()] == ["bo@example.org"]
    assert [f["question"] for f in store.feedback()] == ["do you sponsor local racing teams?"]
    again = cli("leads", "delete", "--email", "ana@fleetco.com", env=env)
    assert again.returncode == 0 and "deleted nothing" in again.stderr


def test_retention_deletes_old_leads_questions_and_conversations(data_dir) -> None:
    settings = Settings(data_dir=data_dir)
    agent = agent_for(settings)
    visit(agent, "old")
    old_clock = lambda: datetime.now(UTC) - timedelta(days=40)  # noqa: E731
    Store(data_dir, clock=old_clock).add_lead("old@example.com", "", "snow tires", "older")
    Store(data_dir, clock=old_clock).add_feedback("an old question?", "older")
    done = purge(30, Store(data_dir), agent.checkpointer)
    assert [lead["email"] for lead in done.erased.leads] == ["old@example.com"]
    assert done.erased.feedback == 1 and done.conversations == 0
    assert Store(data_dir).lead_count() == 1  # the recent one stays
    later = datetime.now(UTC) + timedelta(days=31)
    done = purge(30, Store(data_dir), agent.checkpointer, now=later)
    assert done.conversations == 1 and Store(data_dir).lead_count() == 0
    assert agent.history("old") == []


def test_the_retention_setting_applies_when_the_agent_starts(data_dir) -> None:
    old_clock = lambda: datetime.now(UTC) - timedelta(days=10)  # noqa: E731
    Store(data_dir, clock=old_clock).add_lead("old@example.com", "", "snow tires")
    Agent(Settings(data_dir=data_dir, retention_days=30), toolsets=("business",))
    assert Store(data_dir).lead_count() == 1
    Agent(Settings(data_dir=data_dir, retention_days=7), toolsets=("business",))
    assert Store(data_dir).lead_count() == 0


def test_the_purge_command_needs_a_number_of_days(data_dir) -> None:
    env = {**os.environ, "TREADWISE_DATA_DIR": str(data_dir)}
    env.pop("TREADWISE_RETENTION_DAYS", None)
    assert cli("leads", "purge", env=env).returncode == 2
    done = cli("leads", "purge", env={**env, "TREADWISE_RETENTION_DAYS": "30"})
    assert done.returncode == 0 and "older than 30 days" in done.stderr
    bad = cli("leads", "purge", env={**env, "TREADWISE_RETENTION_DAYS": "-1"})
    assert bad.returncode == 2 and "TREADWISE_RETENTION_DAYS" in bad.stderr


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_oracle_another_visitor_is_told_the_same(backend, request, data_dir) -> None:
    url = request.getfixturevalue("database_url") if backend == "postgres" else None
    agent = agent_for(Settings(data_dir=data_dir, database_url=url))
    message = "please contact me at ana@fleetco.com about fleet pricing"
    first = agent.run(message, thread_id="visitor-a")
    second = agent.run(message, thread_id="visitor-b")
    assert first.answer == second.answer and "already" not in second.answer.lower()
    assert open_store(data_dir, url).lead_count() == 1
    again = agent.run(message, thread_id="visitor-a")  # the same visitor may be told
    assert "already on file" in again.answer


def test_postgres_erasure_delete_and_retention(database_url, data_dir) -> None:
    settings = Settings(data_dir=data_dir, database_url=database_url)
    agent = agent_for(settings)
    visit(agent, "A")
    visit(agent, "B")  # the same request from a second conversation: one lead, two askers
    agent.run("please contact me at bo@example.org about winter tires", thread_id="C")
    store = open_store(data_dir, database_url)
    assert store.lead_count() == 2 and store.feedback_count() == 2
    result = agent.run("I withdraw consent, delete my data", thread_id="A")
    assert "ana@fleetco.com" in result.answer and store.feedback_count() == 1
    assert [lead["email"] for lead in store.leads()] == ["bo@example.org"]
    assert store.delete_email("BO@example.org").describe().startswith("1 contact request")
    assert store.lead_count() == 0
    assert agent.history("A") == []  # the erased conversation's memory went with it
    memory = open_checkpointer(data_dir, database_url)
    later = datetime.now(UTC) + timedelta(days=31)
    done = purge(30, store, memory, now=later)
    assert done.conversations == 2 and done.erased.feedback == 1
    assert agent.history("C") == []
