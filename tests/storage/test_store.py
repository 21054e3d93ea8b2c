"""The SQLite lead/feedback store: validation, idempotency, concurrency, crashes, bad disks."""

from __future__ import annotations

import os
import resource
import signal
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.tools import ToolException

from tests.support.forks import small_forks
from treadwise.storage.memory import open_checkpointer
from treadwise.storage.sqlite import InvalidLead, Store, StoreUnavailable, validate_email
from treadwise.tools import ToolContext
from treadwise.tools.business import business_tools

FORK = small_forks(__name__)


def _db(data_dir: Path) -> sqlite3.Connection:
    return sqlite3.connect(data_dir / "leads.db")


def _integrity(data_dir: Path) -> str:
    with _db(data_dir) as db:
        return db.execute("PRAGMA integrity_check").fetchone()[0]


def _record_interest(data_dir: Path):
    tools = {tool.name: tool for tool in business_tools(ToolContext(data_dir=data_dir))}
    return tools["record_customer_interest"]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    fixed = datetime(2026, 11, 2, 9, 30, tzinfo=UTC)
    return Store(tmp_path / "data", clock=lambda: fixed)


def test_a_lead_is_stored_with_its_fields(store: Store) -> None:
    result = store.add_lead("  ana@example.com ", "Ana Silva", "Fleet pricing for 12 vans")
    assert result.stored and not result.duplicate
    assert store.leads() == [{
        "id": result.id, "created_at": "2026-11-02T09:30:00+00:00",
        "email": "ana@example.com", "name": "Ana Silva", "message": "Fleet pricing for 12 vans",
    }]
    assert store.lead_count() == 1


def test_the_database_uses_wal(store: Store) -> None:
    store.add_feedback("Do you sell rims?")
    with _db(store.data_dir) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_same_email_and_message_twice_is_one_row(store: Store) -> None:
    first = store.add_lead("ana@example.com", "Ana", "Fleet pricing.")
    again = store.add_lead("ANA@Example.com", "Ana S.", "fleet   pricing")
    assert again.duplicate and not again.stored and again.id == first.id
    assert store.lead_count() == 1
    other = store.add_lead("ana@example.com", "Ana", "Smart Tread for my SUV")
    assert other.stored and store.lead_count() == 2


def test_a_corrected_address_replaces_the_lead_instead_of_adding_one(store: Store) -> None:
    first = store.add_lead("ana@fleetco.com", "Ana", "fleet pricing")
    moved = store.replace_lead("ANA@fleetco.com", "ana@fleet-co.com", "Ana", "Fleet pricing.")
    assert moved.stored and moved.id == first.id
    assert [(r["email"], r["message"]) for r in store.leads()] == [
        ("ana@fleet-co.com", "fleet pricing")]
    store.add_lead("bo@x.com", "", "rotation")
    store.add_lead("bo@y.com", "", "rotation")
    store.replace_lead("bo@x.com", "bo@y.com", "", "rotation")  # already on file: one row left
    assert [r["email"] for r in store.leads()] == ["ana@fleet-co.com", "bo@y.com"]
    fresh = store.replace_lead("nobody@x.com", "new@x.com", "", "recycling")
    assert fresh.stored and store.lead_count() == 3
    with pytest.raises(InvalidLead, match="not a valid e-mail"):
        store.replace_lead("new@x.com", "not-an-email", "", "recycling")


@pytest.mark.parametrize(
    ("email", "name", "message", "why"),
    [
        ("x@y.c\nBcc: z@w", "Eve", "hi", "line breaks"),
        ("x@y.com\r\nBcc: z@w.com", "Eve", "hi", "line breaks"),
        ("not-an-email", "Eve", "hi", "not a valid e-mail"),
        ("a@b.com, c@d.com", "Eve", "hi", "one plain e-mail"),
        ("Eve <eve@example.com>", "Eve", "hi", "one plain e-mail"),
        ("eve@exa mple.com", "Eve", "hi", "spaces"),
        ("", "Eve", "hi", "required"),
        ("e" * 250 + "@example.com", "Eve", "hi", "longer than 254"),
        ("eve@example.com", "E" * 10_000, "hi", "limit is 100"),
        ("eve@example.com", "Eve\nBcc: x", "hi", "line breaks"),
        ("eve@example.com", "Eve", "   ", "message is empty"),
        ("eve@example.com", "Eve", "m" * 2001, "limit is 2000"),
    ],
)
def test_invalid_leads_store_nothing_and_say_why(store, email, name, message, why) -> None:
    with pytest.raises(InvalidLead, match=why):
        store.add_lead(email, name, message)
    assert store.lead_count() == 0


def test_invalid_questions_store_nothing(store: Store) -> None:
    for question, why in (("", "empty"), ("q" * 2001, "limit is 2000")):
        with pytest.raises(InvalidLead, match=why):
            store.add_feedback(question)
    assert store.feedback_count() == 0


@given(st.text(max_size=80))
def test_any_accepted_address_is_one_plain_line(text: str) -> None:
    try:
        email = validate_email(text)
    except InvalidLead:
        return
    assert email.count("@") == 1
    assert not any(char.isspace() or char in ",;<>" for char in email)


def test_feedback_is_stored_for_follow_up(store: Store) -> None:
    ref = store.add_feedback("Do you sell rims?\nAnd hubcaps?")
    assert store.feedback() == [{"id": ref, "created_at": "2026-11-02T09:30:00+00:00",
                                 "question": "Do you sell rims?\nAnd hubcaps?"}]


def _concurrent_writer(data_dir: Path, worker: int, count: int, barrier) -> None:
    record = _record_interest(data_dir)
    barrier.wait()
    for n in range(count):
        record.invoke({"email": f"w{worker}.{n}@example.com", "name": f"Worker {worker}",
                       "message": f"Interested in Smart Tread, request {worker}-{n}"})


@pytest.mark.slow
def test_eight_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    workers, each = 8, 250
    barrier = FORK.Barrier(workers)
    processes = [FORK.Process(target=_concurrent_writer, args=(tmp_path, w, each, barrier))
                 for w in range(workers)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=240)
    assert [process.exitcode for process in processes] == [0] * workers
    with _db(tmp_path) as db:
        assert db.execute("SELECT count(*), count(DISTINCT email) FROM leads").fetchone() == (
            workers * each, workers * each)
    assert _integrity(tmp_path) == "ok"


def _first_lead(data_dir: Path) -> bool:
    return Store(data_dir).add_feedback("Do you sell rims?") > 0


def _first_memory(data_dir: Path) -> bool:
    return open_checkpointer(data_dir).primary is not None  # None: it fell back to RAM


def _first_opener(opener, data_dir: Path, barrier) -> None:
    barrier.wait()
    if not opener(data_dir):
        raise SystemExit(3)


@pytest.mark.slow
@pytest.mark.parametrize("opener", [_first_lead, _first_memory], ids=["leads", "memory"])
def test_processes_that_open_a_new_file_together_all_get_it(opener, tmp_path: Path) -> None:
    # Switching a new file to WAL is a race SQLite answers with "database is locked" at once
    # (no busy wait); without a retry about one start in ten lost a write (or memory) here, so
    # 30 starts catch a lost retry 96 times in 100 for each opener.
    workers, starts = 8, 30
    for start in range(starts):
        data_dir = tmp_path / str(start)
        barrier = FORK.Barrier(workers)
        processes = [FORK.Process(target=_first_opener, args=(opener, data_dir, barrier))
                     for _ in range(workers)]
        for process in processes:
            process.start()
        for process in processes:
            process.join(timeout=60)
        assert [process.exitcode for process in processes] == [0] * workers, f"start {start}"


def _endless_writer(data_dir: Path) -> None:
    store = Store(data_dir)
    n = 0
    while True:
        store.add_lead(f"k{n}@example.com", f"Writer {n}", f"{n}:" + "x" * 1900)
        n += 1


@pytest.mark.slow
def test_a_writer_killed_mid_write_leaves_a_sound_database(tmp_path: Path) -> None:
    writer = FORK.Process(target=_endless_writer, args=(tmp_path,))
    writer.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if Store(tmp_path).lead_count() >= 100:
                break
        except StoreUnavailable:
            pass
        time.sleep(0.02)
    os.kill(writer.pid, signal.SIGKILL)
    writer.join()
    assert writer.exitcode == -signal.SIGKILL

    assert _integrity(tmp_path) == "ok"
    rows = Store(tmp_path).leads()
    assert len(rows) >= 100
    for n, row in enumerate(rows):
        assert (row["email"], row["name"], row["message"]) == (
            f"k{n}@example.com", f"Writer {n}", f"{n}:" + "x" * 1900)
    assert Store(tmp_path).add_lead("after@example.com", "", "still writable").stored


def test_a_data_dir_under_a_regular_file_is_a_clear_tool_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    record = _record_interest(blocker / "data")
    with pytest.raises(ToolException, match="couldn't save that right now: the data store is"):
        record.invoke({"email": "ana@example.com", "name": "Ana", "message": "fleet"})


def _writes_despite_chmod(directory: Path) -> bool:
    probe = directory / "probe"
    try:
        probe.write_text("")
    except PermissionError:
        return False
    probe.unlink()
    return True


@pytest.mark.parametrize("existing_db", [False, True])
def test_a_read_only_data_dir_is_a_clear_tool_error(tmp_path: Path, existing_db: bool) -> None:
    if existing_db:
        Store(tmp_path).add_lead("first@example.com", "", "before chmod")
    tmp_path.chmod(0o555)
    try:
        if _writes_despite_chmod(tmp_path):
            pytest.skip("running as root: chmod does not stop writes (see the other variants)")
        record = _record_interest(tmp_path)
        with pytest.raises(ToolException, match="couldn't save that right now: .* read-only"):
            record.invoke({"email": "ana@example.com", "name": "Ana", "message": "fleet"})
    finally:
        tmp_path.chmod(0o755)


def _write_with_file_size_limit(data_dir: Path, limit: int, answers) -> None:
    # RLIMIT_FSIZE makes every write past `limit` bytes fail, like a full disk, even for root.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
    record = _record_interest(data_dir)
    try:
        for n in range(200):
            record.invoke({"email": f"f{n}@example.com", "name": "", "message": "y" * 1500})
        answers.put("no error")
    except ToolException as exc:
        answers.put(str(exc))


@pytest.mark.parametrize("limit", [0, 16_384])
def test_a_full_disk_is_a_clear_tool_error(tmp_path: Path, limit: int) -> None:
    if limit:
        Store(tmp_path).add_lead("first@example.com", "", "before the disk filled up")
    answers = FORK.Queue()
    child = FORK.Process(target=_write_with_file_size_limit, args=(tmp_path, limit, answers))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0
    answer = answers.get(timeout=5)
    assert answer.startswith("I couldn't save that right now: the data store")
    assert "full" in answer
    if limit:
        assert _integrity(tmp_path) == "ok"
