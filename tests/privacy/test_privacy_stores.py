"""No card number, password, key or ID number at rest: memory, leads, feedback, lead exports
and the web app's exports, on SQLite (the files' bytes) and PostgreSQL (every table)."""

from __future__ import annotations

import io
from pathlib import Path

import psycopg
import pytest
from langchain_core.messages import AIMessage, ToolMessage

from treadwise.agent import Agent
from treadwise.settings import Settings
from treadwise.storage import open_store
from treadwise.storage.lead_export import export_leads
from treadwise.testing.fakes import ScriptedModel
from treadwise.web.chat_export import export_files
from treadwise.web.session import ChatSession, Turn

GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
SLACK = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
AWS_ID, AWS_SECRET = "AKIAIOSFODNN7EXAMPL3", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
# What must never be found at rest, and the messages that carry it.
SECRETS = ("4111-1111-1111-1111", "4111 1111 1111 1111", "5555555555554444", "Hunter2!Secret99",
           "Tr0ub4dor&3", "cvv 987", "123-45-6789", AWS_ID, AWS_SECRET, GITHUB, SLACK,
           "sk-proj-Planted0123456789abcdef", "AB 12 34 56 C")
MESSAGES = (
    "please contact me at cc@fleetco.com about 4111-1111-1111-1111",
    "charge my card 4111 1111 1111 1111 for winter tires",
    "my password is Hunter2!Secret99 and I need winter tires for my SUV",
    "My SSN is 123-45-6789, do you offer financing?",
    f"Do you sell snow chains? my github token is {GITHUB} and slack {SLACK}",
    f"do you sponsor local racing teams? aws keys {AWS_ID} {AWS_SECRET}",
    "Do you accept Diners? my card number is 5555555555554444, cvv 987",
    "Can I pay by invoice? login password=Tr0ub4dor&3 and NI number AB 12 34 56 C",
    "Please contact me at ana@fleetco.com about fleet pricing, key sk-proj-Planted0123456789abcdef",
)


# Each secret as a model might write it: a password only with its label (unlabelled, a
# password is just a word; the customer's own "my password is ..." never reaches a model).
WRITTEN = ("card 4111-1111-1111-1111 or 4111 1111 1111 1111, visa 5555555555554444 cvv 987, "
           "password: Hunter2!Secret99, password=Tr0ub4dor&3, SSN 123-45-6789, "
           f"{AWS_ID} {AWS_SECRET} {GITHUB} {SLACK} sk-proj-Planted0123456789abcdef, "
           "NI AB 12 34 56 C")


def writer(messages, kwargs) -> AIMessage:
    """A model that writes every secret it can into a lead, a question and its answer."""
    if isinstance(messages[-1], ToolMessage):
        return AIMessage("Done: " + WRITTEN)
    everything = WRITTEN
    return AIMessage("", tool_calls=[
        {"name": "record_customer_interest", "id": "l1", "type": "tool_call",
         "args": {"email": "ana@fleetco.com", "name": "Ana",
                  "message": f"fleet pricing {everything}"}},
        {"name": "record_feedback", "id": "f1", "type": "tool_call",
         "args": {"question": f"what about fleet pricing {everything}?"}}])


def converse(agent: Agent) -> list:
    results = [agent.run(message, thread_id=f"offline-{n}", persona=persona)
               for n, (message, persona) in enumerate(
                   zip(MESSAGES, ["friendly", "technical", "cautious"] * 3, strict=True))]
    results.append(agent.run("Please contact me at ana@fleetco.com about fleet pricing "
                             + WRITTEN, model="writer", thread_id="writer"))
    return results


def exports(store, tmp_path: Path, results: list) -> dict[str, str]:
    found = {}
    for fmt in ("csv", "jsonl"):
        out = io.StringIO()
        export_leads(store, fmt, out)
        found[fmt] = out.getvalue()
    session = ChatSession(thread_id="T")
    for message, result in zip(MESSAGES, results, strict=False):
        session.turns.append(Turn(user=message, persona="friendly", persona_name="F",
                                  spec="offline", model="offline", temperature=0.0,
                                  status="done", answer=result.answer, result=result))
    for path in export_files(session, str(tmp_path / "cache")):
        found[path] = Path(path).read_text(encoding="utf-8")
    return found


def assert_clean(label: str, text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} is stored in {label}"


def agent_for(settings: Settings) -> Agent:
    return Agent(settings, toolsets=("business",),
                 models={"writer": ScriptedModel(script=[writer])})


def test_no_secret_in_the_sqlite_files_or_any_export(data_dir: Path, tmp_path: Path) -> None:
    agent = agent_for(Settings(data_dir=data_dir))
    results = converse(agent)
    card_replies = [r.answer for r in results[:2]]
    assert all("card" in answer.lower() and "chat" in answer for answer in card_replies)
    store = open_store(data_dir)
    assert store.lead_count() >= 1 and store.feedback_count() >= 3
    for label, text in exports(store, tmp_path, results).items():
        assert_clean(label, text)
    files = [p for p in data_dir.rglob("*") if p.is_file()]
    assert {"leads.db", "memory.db"} <= {p.name for p in files}
    for path in files:  # the databases, their WAL files, plots
        assert_clean(str(path), path.read_bytes().decode("latin-1"))
    for answer in (r.answer for r in results):
        assert_clean("an answer", answer)


def postgres_text(url: str) -> dict[str, str]:
    """Every row of every table TreadWise keeps, as text (bytea decoded byte for byte)."""
    found = {}
    with psycopg.connect(url) as conn:
        tables = [row[0] for row in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")]
        for table in tables:
            rows = conn.execute(f'SELECT * FROM "{table}"').fetchall()
            found[table] = " ".join(_text(value) for row in rows for value in row)
    return found


def _text(value: object) -> str:
    if isinstance(value, bytes | memoryview):
        return bytes(value).decode("latin-1")
    return str(value)


def test_no_secret_in_any_postgresql_table(database_url: str, data_dir: Path,
                                           tmp_path: Path) -> None:
    agent = agent_for(Settings(data_dir=data_dir, database_url=database_url))
    results = converse(agent)
    tables = postgres_text(database_url)
    assert {"leads", "feedback", "checkpoints", "checkpoint_writes", "checkpoint_blobs"} <= set(
        tables)
    assert "fleet pricing" in tables["leads"]
    for table, text in tables.items():
        assert_clean(f"table {table}", text)
    for label, text in exports(open_store(data_dir, database_url), tmp_path, results).items():
        assert_clean(label, text)


@pytest.mark.parametrize("persona", ["friendly", "technical", "cautious"])
def test_the_assistant_says_it_cannot_take_card_details(data_dir: Path, persona: str) -> None:
    agent = Agent(Settings(data_dir=data_dir), toolsets=("business",))
    result = agent.run("Can I pay now? card 4111 1111 1111 1111 exp 12/29 cvv 123",
                       persona=persona)
    assert "card" in result.answer.lower() and "chat" in result.answer.lower()
    assert result.tool_calls == [] and "4111" not in result.answer
