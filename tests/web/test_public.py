"""A public page held against its visitors: rate limits a client cannot spoof or escape with new
sessions, experiment runs for admins only, conversations reopened only by their own visitor,
and out-of-range pickers refused without a server traceback."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import httpx
import pytest
import yaml
from gradio_client import Client
from gradio_client.exceptions import AppError

from tests.conftest import REPO
from tests.support.cli import experiments
from tests.support.webapp import chat_text, loopback_client, serve_in_process
from treadwise.settings import Settings
from treadwise.web.access import ADMIN_ONLY
from treadwise.web.resume import SECRET_FILE, ThreadLinks

WAIT_S = 90
SLOW_DOWN = "Please slow down"
MARKER = "MARKER-5e1f fleet of twelve vans"  # what a customer typed (runs redact secrets)


def public(data_dir: Path, **env: str) -> Settings:
    return dataclasses.replace(Settings.from_env({"TREADWISE_PUBLIC": "1", **env}),
                               data_dir=data_dir)


def visitor(url: str, address: str | None = None) -> Client:
    headers = {"X-Forwarded-For": address} if address else None
    return loopback_client(url, download_files=False, headers=headers)


def send(client: Client, message: str) -> str:
    chatbot, *_ = client.predict(message, "friendly", "offline", "", 0.0, api_name="/send")
    return chat_text(chatbot)


def answered(url: str) -> tuple[int, int]:
    """Four sessions, each claiming its own address, sending two messages each (a session's
    limit): (answers, "slow down" replies)."""
    replies = [send(visitor(url, f"10.0.0.{n}"), "What are your opening hours?")
               for n in range(4) for _ in range(2)]
    slowed = sum(SLOW_DOWN in reply for reply in replies)
    return len(replies) - slowed, slowed


@pytest.mark.slow
def test_a_forwarded_address_from_an_untrusted_peer_is_ignored(tmp_path: Path):
    # 2 a minute per session, 6 per address: every session here comes from 127.0.0.1.
    settings = public(tmp_path / "data", TREADWISE_SESSION_RATE="2")
    with serve_in_process(settings) as url:
        assert answered(url) == (6, 2), "the header picked the address the limit counts"


@pytest.mark.slow
def test_a_forwarded_address_from_a_trusted_proxy_names_the_client(tmp_path: Path):
    settings = public(tmp_path / "data", TREADWISE_SESSION_RATE="2",
                      TREADWISE_TRUSTED_PROXIES="127.0.0.1")
    with serve_in_process(settings) as url:
        assert answered(url) == (8, 0)
        # A proxy appends the peer it saw: what a client put on the left changes nothing, so
        # 10.0.0.1 (2 of its 6 used) gets 4 more, whatever each new session claims.
        spoofer = [send(visitor(url, f"10.9.9.{n}, 10.0.0.1"), "Hours?") for n in range(5)]
        assert [SLOW_DOWN in reply for reply in spoofer] == [False] * 4 + [True]


@pytest.mark.parametrize("forwarded", [
    "1.2.3.{n}, 127.0.0.1",  # the client's own entry, then a trusted address: one hop only
    "evil-{n}",  # not an address
    "10.0.0.{n}:443",  # not an address either (nginx's $remote_addr has no port)
])
@pytest.mark.slow
def test_a_trusted_proxy_forwards_one_hop_and_ip_addresses_only(tmp_path: Path, forwarded: str):
    """From 127.0.0.1, itself trusted, any local process can send these: each must share one
    budget (the proxy's, 3 sessions' worth), never get a fresh one per made-up entry."""
    settings = public(tmp_path / "data", TREADWISE_SESSION_RATE="2",
                      TREADWISE_TRUSTED_PROXIES="127.0.0.1")
    with serve_in_process(settings) as url:
        replies = [send(visitor(url, forwarded.format(n=n)), "Hours?") for n in range(8)]
    assert [SLOW_DOWN in reply for reply in replies] == [False] * 6 + [True] * 2


@pytest.mark.thorough
def test_new_sessions_share_their_address_budget(tmp_path: Path):
    settings = public(tmp_path / "data", TREADWISE_SESSION_RATE="2")
    with serve_in_process(settings) as url:
        replies = [send(visitor(url), "Hours?") for _ in range(8)]  # a new session each time
    assert sum(SLOW_DOWN not in reply for reply in replies) == 6
    assert "at most 6 messages a minute from one address" in replies[-1]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real one-case run, made by the harness's command line, whose transcript holds
    what the customer typed."""
    folder = tmp_path_factory.mktemp("grid")
    scenarios = [{"id": "typed", "category": "information query",
                  "turns": [f"What are your opening hours? {MARKER}"],
                  "checks": [{"kind": "tools_called", "tools": ["get_business_info"]}]}]
    (folder / "scenarios.yaml").write_text(yaml.safe_dump({"scenarios": scenarios}))
    (folder / "grid.yaml").write_text(yaml.safe_dump({
        "name": "typed", "personas": ["friendly"], "models": ["offline"], "temperatures": [0.0],
        "scenarios": {"file": "scenarios.yaml"}}))
    out = folder / "results"
    done = experiments("run", "--grid", str(folder / "grid.yaml"), "--out", str(out), cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    run = next(out.iterdir())
    assert MARKER in (run / "transcripts.jsonl").read_text()
    return out


def load_outputs(url: str, fn_index: int) -> str:
    """What the page's own (private) load event returns, called the way the browser does."""
    session = uuid.uuid4().hex
    joined = httpx.post(f"{url}gradio_api/queue/join", json={
        "data": [None], "fn_index": fn_index, "session_hash": session, "event_data": None,
        "trigger_id": None}, timeout=WAIT_S)
    joined.raise_for_status()
    with httpx.stream("GET", f"{url}gradio_api/queue/data", params={"session_hash": session},
                      timeout=WAIT_S) as stream:
        for line in stream.iter_lines():
            if line.startswith("data:") and "process_completed" in line:
                return line
    raise AssertionError("the load event never completed")


@pytest.mark.slow
def test_an_anonymous_visitor_reads_no_experiment_run(results: Path, tmp_path: Path):
    run = next(results.iterdir()).name
    settings = public(tmp_path / "data")
    with serve_in_process(settings, results_dir=results) as url:
        anonymous = visitor(url)
        # In the order the page uses them, so each value is among the choices it would have.
        calls = {"/runs_refresh": (None,), "/runs_show": (run,), "/compare": (run, run),
                 "/transcript_config": (run, None), "/transcript": (run, "typed"),
                 "/sweep": (1,)}
        for api_name, args in calls.items():
            with pytest.raises(AppError, match="signed-in admin"):
                anonymous.predict(*args, api_name=api_name)
        config = httpx.get(f"{url}config").json()
        load = next(i for i, d in enumerate(config["dependencies"])
                    if d["targets"] and d["targets"][0][1] == "load"
                    and len(d["outputs"]) == 8)
        page = load_outputs(url, config["dependencies"][load]["id"])
    assert ADMIN_ONLY.split(" (")[0] in page
    assert run not in page and "MARKER" not in page


def test_an_admin_and_a_local_page_still_read_runs(results: Path, tmp_path: Path):
    run = next(results.iterdir()).name
    settings = dataclasses.replace(Settings.from_env({}), data_dir=tmp_path / "data")
    with serve_in_process(settings, results_dir=results) as url:
        runs, *_ = visitor(url).predict(None, api_name="/runs_refresh")
    assert runs["value"] == run


def test_values_outside_a_pickers_choices_are_refused_without_a_traceback(
        results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    settings = dataclasses.replace(Settings.from_env({}), data_dir=tmp_path / "data")
    with serve_in_process(settings, results_dir=results) as url:
        client = visitor(url)
        summary = client.predict("../../etc", api_name="/runs_show")[0]
        transcript = client.predict("nope", ["a"], api_name="/transcript")
        verdict, _ = client.predict("nope", {"x": 1}, api_name="/compare")
    assert summary["data"] == [["Pick a run."]]
    assert "Pick a configuration" in transcript
    assert "Pick a run above and a different baseline" in verdict
    assert "Traceback" not in capsys.readouterr().err


def exported(client: Client, outputs: tuple) -> tuple[str, dict]:
    """The JSON export of a turn's outputs, as its own session downloads it: (its file name,
    its content)."""
    export = outputs[-1]["value"]
    return Path(export["path"]).name, httpx.get(export["url"], cookies=client.cookies,
                                                timeout=WAIT_S).json()


def opened(url: str, link: str) -> str:
    """What a fresh session shows after asking to reopen `link`."""
    chatbot, *_ = visitor(url).predict(link, api_name="/resume")
    return chat_text(chatbot, "user") if isinstance(chatbot, list) else ""


def test_a_visitor_cannot_reopen_another_visitors_conversation(tmp_path: Path):
    settings = public(tmp_path / "data")
    with serve_in_process(settings) as url:
        ana, bob = visitor(url), visitor(url)
        ana_outputs = ana.predict("Please contact me at ana@fleetco.com about pricing",
                                  "friendly", "offline", "", 0.0, api_name="/send")
        ana_file, ana_export = exported(ana, ana_outputs)
        # Her export is hers alone: another visitor, or none, with its URL gets nothing.
        for cookies in (None, bob.cookies, {"treadwise-visitor": "0" * 32 + ".0123456789abcdef"}):
            assert httpx.get(ana_outputs[-1]["value"]["url"], cookies=cookies).status_code == 404
        _, bob_export = exported(bob, bob.predict("What are your opening hours?", "friendly",
                                                  "offline", "", 0.0, api_name="/send"))
        ana_thread, bob_link = ana_export["thread_id"], bob_export["resume"]
        _, expires, bob_signature = bob_link.split(".")
        ana_link = ana_export["resume"]
        for attempt in (ana_thread, f"{ana_thread}.{expires}.{bob_signature}",
                        f"{ana_thread}.{expires}.{'0' * 32}", ana_thread.upper(),
                        f"?thread={ana_thread}", ana_link.upper(), f" {ana_link}",
                        f"{ana_link}\n", f"{ana_link} "):
            assert "ana@fleetco.com" not in opened(url, attempt), attempt
        # Ana's own link opens it from a fresh session (another browser of hers).
        assert "ana@fleetco.com" in opened(url, ana_link)
        assert "ana@fleetco.com" not in opened(url, bob_link)
    assert ana_thread[:8] not in ana_file and ana_file.endswith(".json")


@pytest.mark.slow
def test_links_are_signed_with_the_shared_secret_or_one_kept_in_the_data_dir(tmp_path: Path):
    thread = uuid.uuid4().hex
    data = tmp_path / "data"
    first, second = (ThreadLinks(public(data)) for _ in range(2))
    link = first.link(thread)
    assert second.thread_of(link) == thread, "processes sharing a data dir share its secret"
    assert (data / SECRET_FILE).stat().st_mode & 0o077 == 0
    assert ThreadLinks(public(tmp_path / "other")).thread_of(link) is None
    shared = {"TREADWISE_SECRET_KEY": "replicas-share-this-one"}
    a = ThreadLinks(public(tmp_path / "a", **shared))
    b = ThreadLinks(public(tmp_path / "b", **shared), store=a.store)  # one database
    assert b.thread_of(a.link(thread)) == thread and not (tmp_path / "a" / SECRET_FILE).exists()
    assert first.thread_of(thread) is None, "a public page never takes a bare id"
    local = dataclasses.replace(Settings.from_env({}), data_dir=data)
    assert ThreadLinks(local).thread_of(thread) == thread
    for hostile in (None, ["x"], "../../etc/passwd", f"{thread}.", f"{thread}.{'g' * 32}",
                    link.upper(), f"{link} ", f" {link}", link.replace(".", ". ")):
        assert first.thread_of(hostile) is None
