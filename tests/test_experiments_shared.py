"""Sweeps shared across machines through PostgreSQL: workers claiming one run's cases, a worker
killed mid-case, expired claims, exactly-once results, and the report from the database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from psycopg.rows import dict_row

from experiments.analyse.report import write_report
from experiments.define.grid import load_grid
from experiments.run.claims import SharedRun
from experiments.run.shared import definition, join_sweep
from experiments.store.connection import SharedRunError, connect
from experiments.store.database import create
from experiments.store.record import CaseRecord
from experiments.store.results_file import RESULTS_FILE, read_rows
from tests.test_experiments_runner import HOURS, cli, write_grid
from tests.test_experiments_store import case_row
from treadwise.testing.loopback import OpenAIServer, Reply, tool_then_answer

REPORT_TABLES = ("summary.csv", "effects.csv", "best_vs_rest.csv", "style.csv")


def query(url: str, sql: str, *args: object) -> list[dict]:
    with psycopg.connect(url, row_factory=dict_row) as conn:
        cursor = conn.execute(sql, args)
        return cursor.fetchall() if cursor.description else []


def slow_hours(delay_s: float):
    answer = tool_then_answer("get_business_info", {"topic": "opening hours"})

    def brain(request: dict) -> Reply:
        reply = answer(request)
        reply.delay_s = delay_s
        return reply

    return brain


def worker(repo: Path, grid: Path, out: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "experiments", "run", "--grid", str(grid),
                             "--workers-join", "big-run", "--out", str(out), "--no-report"],
                            cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def wait_for(condition, timeout: float = 120, every: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := condition():
            return found
        time.sleep(every)
    raise AssertionError("timed out waiting")


@pytest.mark.slow
def test_three_workers_share_300_cases_and_one_killed_mid_case_costs_nothing(
        repo, tmp_path, database_url, request):
    grid = write_grid(tmp_path, [HOURS], personas=["friendly", "technical", "cautious"],
                      models=["openai:gpt-test"], temperatures=[0.0, 0.5], repeats=50,
                      concurrency=4)
    keys = {case.key for case in load_grid(grid).cases()}
    assert len(keys) == 300
    connect(database_url)  # the schema, so the test can watch the workers from the start
    with OpenAIServer(slow_hours(0.03)) as server:
        env = {**os.environ, "TREADWISE_DATABASE_URL": database_url,
               "OPENAI_BASE_URL": server.url + "/v1", "OPENAI_API_KEY": "sk-test-not-a-real-key",
               "TREADWISE_SWEEP_CLAIM_S": "3"}
        started = time.perf_counter()
        # All three start at once: one creates the run, the others find it and join.
        workers = [worker(repo, grid, tmp_path / "out", env) for _ in range(3)]
        request.addfinalizer(lambda: [w.kill() for w in workers if w.poll() is None])
        victim = workers[0]

        def victim_busy() -> bool:
            done = query(database_url, "SELECT count(*) AS n FROM sweep_results")[0]["n"]
            held = query(database_url, "SELECT count(*) AS n FROM sweep_cases c JOIN "
                         "sweep_workers w ON w.worker = c.claimed_by WHERE w.pid = %s AND "
                         "c.state = 'claimed'", victim.pid)[0]["n"]
            return done >= 60 and held > 0

        wait_for(lambda: victim.poll() is None and victim_busy())
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=30)
        (dead,) = query(database_url, "SELECT worker FROM sweep_workers WHERE pid = %s",
                        victim.pid)
        # What it was running when it died: claims nobody will finish or hand back.
        orphans = {r["case_key"] for r in query(
            database_url, "SELECT case_key FROM sweep_cases WHERE claimed_by = %s AND state = "
            "'claimed'", dead["worker"])}
        assert orphans
        outputs = [w.communicate(timeout=180) for w in workers[1:]]
        elapsed = time.perf_counter() - started
    for survivor, (_, stderr) in zip(workers[1:], outputs, strict=True):
        assert survivor.returncode == 0, stderr[-3000:]
        assert "Traceback" not in stderr
    assert sum("created shared run big-run" in err for _, err in outputs) <= 1

    results = query(database_url, "SELECT case_key, status, worker FROM sweep_results")
    assert len(results) == 300
    assert {r["case_key"] for r in results} == keys  # each case exactly once
    assert all(r["status"] == "ok" for r in results)
    by_key = {r["case_key"]: r["worker"] for r in results}
    assert all(by_key[key] != dead["worker"] for key in orphans)  # redone by the others
    assert any(w == dead["worker"] for w in by_key.values())  # what it finished is kept
    states = query(database_url, "SELECT state, count(*) AS n FROM sweep_cases GROUP BY state")
    assert states == [{"state": "done", "n": 300}]
    reclaimed = query(database_url, "SELECT claims FROM sweep_cases WHERE case_key = ANY(%s)",
                      list(orphans))
    assert all(r["claims"] == 2 for r in reclaimed)
    assert query(database_url, "SELECT status FROM sweep_runs")[0]["status"] == "finished"
    print(f"300 cases, 3 workers (one killed mid-run), claims of 3 s: {elapsed:.1f} s; "
          f"{len(orphans)} cases re-claimed")

    env = {**os.environ, "TREADWISE_DATABASE_URL": database_url}
    listing = subprocess.run([sys.executable, "-m", "experiments", "list", "--out",
                              str(tmp_path / "none")], cwd=repo, env=env, capture_output=True,
                             text=True, timeout=120)
    assert listing.returncode == 0, listing.stderr
    assert "big-run" in listing.stdout and "300 rows  database  finished" in listing.stdout
    report_from_db = subprocess.run([sys.executable, "-m", "experiments", "report", "big-run",
                                     "--no-charts", "--out", str(tmp_path / "db")], cwd=repo,
                                    env=env, capture_output=True, text=True, timeout=120)
    assert report_from_db.returncode == 0, report_from_db.stderr
    exported = subprocess.run([sys.executable, "-m", "experiments", "export", "big-run",
                               "--out", str(tmp_path / "exported")], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=120)
    assert exported.returncode == 0, exported.stderr
    folder = Path(exported.stdout.strip())
    rows = read_rows(folder / RESULTS_FILE)
    assert len(rows) == 300 and {r["case_key"] for r in rows} == keys
    assert sum(1 for _ in (folder / "transcripts.jsonl").open()) == 300
    write_report(folder, charts=False)
    from_db = tmp_path / "db" / "big-run"
    for name in REPORT_TABLES:
        assert (from_db / name).read_text() == (folder / name).read_text(), name
    db_lines = (from_db / "report.md").read_text().splitlines()
    csv_lines = (folder / "report.md").read_text().splitlines()
    assert "PostgreSQL" in db_lines[2] and "`results.csv`" in csv_lines[2]
    assert db_lines[3:] == csv_lines[3:] and len(db_lines) > 20


def make(pool, run_id: str, grid) -> bool:
    """Store a new run of `grid` in the database (False: it exists already)."""
    return create(pool, run_id, grid, definition(grid), {"grid_name": grid.name})


def _record(key: str, worker: str) -> CaseRecord:
    return CaseRecord(case_row(key, answer=f"by {worker}"), {"case_key": key, "by": worker})


def test_an_expired_claim_is_claimed_again_and_a_late_result_is_dropped(tmp_path,
                                                                        database_url):
    grid = load_grid(write_grid(tmp_path, [HOURS], repeats=3))
    cases = grid.cases()
    pool = connect(database_url)
    assert make(pool, "expiry", grid) and not make(pool, "expiry", grid)
    lost = []
    # A claims the first case and then stops beating (never opened: as if killed).
    gone = SharedRun(pool, "expiry", claim_s=0.5).bind(cases, lambda k, why: lost.append(k))
    assert gone.claim().key == cases[0].key
    with SharedRun(pool, "expiry", claim_s=0.5) as alive:
        alive.bind(cases, lambda key, why: _record(key, "lost"))
        assert [alive.claim().key, alive.claim().key] == [c.key for c in cases[1:]]
        assert alive.claim() is None  # its own cases are in flight: the driver waits for them
        for case in cases[1:]:
            alive.append(_record(case.key, "alive"))
        started = time.monotonic()
        assert alive.claim().key == cases[0].key  # after waiting for the claim to expire
        assert time.monotonic() - started >= 0.3
        alive.append(_record(cases[0].key, "alive"))
        assert alive.claim() is None
    gone.append(_record(cases[0].key, "gone"))
    assert gone.dropped == 1 and not lost
    rows = query(database_url, "SELECT case_key, row_json FROM sweep_results ORDER BY seq")
    assert [r["case_key"] for r in rows] == [c.key for c in (cases[1], cases[2], cases[0])]
    assert all('"by alive"' in r["row_json"] for r in rows)
    assert query(database_url, "SELECT claims FROM sweep_cases WHERE case_key = %s",
                 cases[0].key) == [{"claims": 2}]


def test_a_claim_takes_exactly_one_case_of_a_run_newer_than_the_statistics(tmp_path,
                                                                           database_url):
    # With statistics that predate the run (it looks empty to the planner), a claim written as
    # a join was planned as a nested loop that claimed one case per row it scanned.
    pool = connect(database_url)
    make(pool, "older", load_grid(write_grid(tmp_path, [HOURS])))
    query(database_url, "ANALYZE sweep_cases")
    grid = load_grid(write_grid(tmp_path, [HOURS], personas=["friendly", "technical"],
                                repeats=1000))
    cases = grid.cases()
    make(pool, "fresh", grid)
    run = SharedRun(pool, "fresh", claim_s=60).bind(cases, lambda key, why: None)
    taken = [run.claim().key for _ in range(3)]
    assert taken == [c.key for c in cases[:3]]
    claimed = query(database_url, "SELECT case_key FROM sweep_cases WHERE run_id = 'fresh' "
                    "AND state = 'claimed' ORDER BY position")
    assert [r["case_key"] for r in claimed] == taken


def test_a_case_whose_workers_keep_dying_becomes_an_error_row(tmp_path, database_url):
    grid = load_grid(write_grid(tmp_path, [HOURS]))
    (case,) = grid.cases()
    pool = connect(database_url)
    make(pool, "poison", grid)
    query(database_url, "UPDATE sweep_cases SET state = 'claimed', claims = 3, "
          "claimed_until = now() - interval '1 s', claimed_by = 'x'")
    reasons = []

    def lost(key: str, why: str) -> CaseRecord:
        reasons.append(why)
        return CaseRecord(case_row(key, status="error", model_calls=0), {"case_key": key})

    with SharedRun(pool, "poison", claim_s=1) as run:
        assert run.bind([case], lost).claim() is None
    assert reasons and "claimed 3 times" in reasons[0]
    assert query(database_url, "SELECT status FROM sweep_results") == [{"status": "error"}]


def test_joining_needs_the_database_and_the_same_grid(tmp_path, database_url, monkeypatch):
    grid = write_grid(tmp_path, [HOURS], repeats=2)
    options = {"out_dir": tmp_path / "out", "progress": lambda p: None, "report": False,
               "echo": lambda line: None}
    monkeypatch.delenv("TREADWISE_DATABASE_URL", raising=False)
    with pytest.raises(SharedRunError, match="needs TREADWISE_DATABASE_URL"):
        join_sweep("study", grid, **options)
    monkeypatch.setenv("TREADWISE_DATABASE_URL", database_url)
    with pytest.raises(SharedRunError, match="no shared run 'study'"):
        join_sweep("study", None, **options)
    with pytest.raises(SharedRunError, match="cannot name a shared run"):
        join_sweep("../study", grid, **options)
    folder = join_sweep("study", grid, **options)
    assert folder == tmp_path / "out" / "study" and not (folder / RESULTS_FILE).exists()
    other = tmp_path / "other"
    other.mkdir()
    changed = write_grid(other, [HOURS], repeats=3, temperatures=[0.7])
    with pytest.raises(SharedRunError, match=r"differs from the grid of shared run 'study': "
                       r"repeats \(run: 2, yours: 3\); temperatures"):
        join_sweep("study", changed, **options)
    rewritten = tmp_path / "rewritten"
    rewritten.mkdir()
    checks = write_grid(rewritten, [{**HOURS, "checks": []}], repeats=2)
    with pytest.raises(SharedRunError, match=r"scenarios \(the same ids, other turns or checks"):
        join_sweep("study", checks, **options)
    # How one machine runs the cases may differ; what the rows mean may not.
    same = write_grid(other, [HOURS], repeats=2, concurrency=7)
    lines: list[str] = []
    join_sweep("study", same, **{**options, "echo": lines.append})
    assert any("already done: 2" in line for line in lines)
    assert query(database_url, "SELECT count(*) AS n FROM sweep_results") == [{"n": 2}]


def test_a_budget_holds_for_the_whole_shared_run(tmp_path, database_url, monkeypatch):
    monkeypatch.setenv("TREADWISE_DATABASE_URL", database_url)
    grid = write_grid(tmp_path, [HOURS], repeats=10, concurrency=1, budget={"max_calls": 4})
    options = {"out_dir": tmp_path / "out", "progress": lambda p: None, "report": False}
    first: list[str] = []
    join_sweep("capped", grid, echo=first.append, **options)
    second: list[str] = []
    join_sweep("capped", None, echo=second.append, **options)
    rows = query(database_url, "SELECT model_calls FROM sweep_results")
    assert 2 <= len(rows) < 10 and sum(r["model_calls"] for r in rows) >= 4
    assert any("stopped launching new cases: max_calls 4 reached" in line for line in first)
    assert any("this worker ran 0 cases" in line for line in second)
    listing = cli(Path(__file__).resolve().parent.parent, "list", "--out", str(tmp_path))
    assert "capped" in listing.stdout and "stopped_by_budget" in listing.stdout
