"""live_ab: a live A/B experiment end to end, and its false claims when people peek.

1. The real app (`python app.py`, offline model) runs the experiment `tone` with two arms;
   gradio_client visitors chat, see which persona answers them (the reply's footer) and rate
   their replies up with that arm's probability (technical 0.60, friendly 0.50). APP_VISITORS
   go through the app; the rest of the 2 000 visitors are recorded through the same store calls
   the app makes (`assign`, `record`), so the report reads one experiment. The report must name
   `technical` as the better arm.
2. 200 simulated experiments with equal arms (0.50 / 0.50), each read after every 50 of its
   2 000 visitors, through the report's own confidence sequence: the share that ever claims a
   difference is the false-claim rate (goal <= 0.05). The same peeking with a fixed-sample 95%
   interval is shown beside it.

Visitors rate one to three replies each, so a visitor's ratings are not independent; the
analysis counts visitors. LIVE_AB_QUICK=1 sends fewer visitors through the app.
"""

from __future__ import annotations

import math
import os
import random
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from experiments.live.definition import parse_experiment  # noqa: E402
from experiments.live.report import report  # noqa: E402
from experiments.live.sequential import Interval, Moments, difference_interval  # noqa: E402
from experiments.live.store import SqliteLiveStore  # noqa: E402
from tests.support.webapp import loopback_client, serve_subprocess  # noqa: E402

QUICK = os.environ.get("LIVE_AB_QUICK") == "1"
VISITORS = 2000
APP_VISITORS = 40 if QUICK else 2000
THREADS = 6
UP = {"Friendly": 0.50, "Technical": 0.60}  # by the persona the visitor sees answering
EXPERIMENTS, PEEK, ALPHA = 200, 50, 0.05
DEFINITION = """name: tone
arms:
  - {name: friendly, persona: friendly}
  - {name: technical, persona: technical}
alpha: 0.05
"""
QUESTIONS = ["What are your opening hours?", "Do you offer mobile tire installation in Austin?",
             "Which tires do you recommend for an SUV on the highway?"]


def app_visitor(url: str, seed: int) -> bool:
    """One visitor's chat and ratings; False when the app failed them (a loaded machine)."""
    try:
        visit(url, random.Random(seed))
    except Exception as exc:  # noqa: BLE001 - counted and reported, the run goes on
        print(f"live_ab: visitor {seed} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return False
    return True


def visit(url: str, rng: random.Random) -> None:
    client = loopback_client(url, download_files=False, httpx_kwargs={"timeout": 120},
                             analytics_enabled=False)
    for turn in range(rng.randint(1, 3)):
        chatbot, *_ = client.predict(QUESTIONS[turn], "cautious", "offline", "", 0.0,
                                     api_name="/send")
        footer = str(chatbot[-1]["content"])
        persona = next(name for name in UP if name in footer)
        liked = rng.random() < UP[persona]
        client.predict(len(chatbot) - 1, "up" if liked else "down", api_name="/rate")


def direct_visitor(store: SqliteLiveStore, number: int, rng: random.Random) -> None:
    """What the app records for one visitor, made here: an arm by the visitor's hash, turns
    and ratings."""
    experiment = parse_experiment(DEFINITION)
    visitor = f"direct-{number:05d}"
    arm = store.assign("tone", visitor, experiment.pick(visitor).name)
    for turn in range(rng.randint(1, 3)):
        store.record("tone", visitor, arm, f"{visitor}-{turn}", "turn")
        liked = rng.random() < UP[arm.capitalize()]
        store.record("tone", visitor, arm, f"{visitor}-{turn}", "rating", 1 if liked else -1)


def run_experiment(folder: Path) -> None:
    data_dir = folder / "data"
    store = SqliteLiveStore(data_dir)
    experiment = parse_experiment(DEFINITION)
    store.create(experiment.name, experiment.model_dump())
    started = time.perf_counter()
    with serve_subprocess(data_dir, env={"TREADWISE_SESSION_RATE": "0"}) as app, \
            ThreadPoolExecutor(THREADS) as pool:
        served = sum(pool.map(lambda n: app_visitor(app.url, n), range(APP_VISITORS)))
    app_s = time.perf_counter() - started
    rng = random.Random(20261124)
    with store.batch():
        for number in range(VISITORS - APP_VISITORS):
            direct_visitor(store, number, rng)
    result = report(store, "tone")
    technical = result.arms[1]
    through_app = sum(1 for e in store.events("tone")
                      if e["kind"] == "turn" and not e["visitor"].startswith("direct-"))
    print(f"live_ab: {served} of {APP_VISITORS} visitors through the app ({through_app} turns, "
          f"{app_s:.0f} s), {VISITORS - APP_VISITORS} recorded directly")
    print(result.text())
    verdict = result.better or "none"
    print(f"better arm {verdict} (technical vs friendly {technical.versus_control.estimate:+.3f}"
          f" [{technical.versus_control.low:+.3f}, {technical.versus_control.high:+.3f}], "
          f"{VISITORS} visitors; expected technical)")


def naive(control: Moments, arm: Moments) -> Interval:
    (mc, vc), (ma, va) = control.mean_variance(), arm.mean_variance()
    half = 1.96 * math.sqrt(vc + va)
    return Interval(ma - mc, ma - mc - half, ma - mc + half, control.n + arm.n)


def peeked(rng: random.Random, p: tuple[float, float]) -> tuple[bool, bool]:
    """(sequence ever claimed, fixed-sample interval ever claimed) for one experiment."""
    values = [Moments(), Moments()]
    sequence = fixed = False
    for visitor in range(1, VISITORS + 1):
        arm = rng.randrange(2)
        ratings = rng.randint(1, 3)
        values[arm] = values[arm].add(sum(rng.random() < p[arm] for _ in range(ratings))
                                      / ratings)
        if visitor % PEEK == 0:
            sequence = sequence or difference_interval(values[0], values[1],
                                                       ALPHA).excludes_zero()
            fixed = fixed or naive(values[0], values[1]).excludes_zero()
            if sequence and fixed:
                break
    return sequence, fixed


def false_claims() -> None:
    rng = random.Random(7)
    outcomes = [peeked(rng, (0.5, 0.5)) for _ in range(EXPERIMENTS)]
    rate = sum(s for s, _ in outcomes) / EXPERIMENTS
    fixed = sum(f for _, f in outcomes) / EXPERIMENTS
    print(f"live_ab: false claims {rate:.3f} ({EXPERIMENTS} equal-arm experiments of {VISITORS} "
          f"visitors, read every {PEEK}; goal <= {ALPHA})")
    print(f"live_ab: a fixed-sample 95% interval read as often claims a difference in "
          f"{fixed:.3f} of them")
    found = [peeked(rng, (0.5, 0.6))[0] for _ in range(EXPERIMENTS // 2)]
    print(f"live_ab: power {sum(found) / len(found):.2f} (0.60 vs 0.50, {len(found)} "
          f"experiments, better arm found by {VISITORS} visitors)")


def main() -> None:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="live-ab-") as folder:
        run_experiment(Path(folder))
    false_claims()
    print(f"live_ab: {time.perf_counter() - started:.0f} s in all "
          f"({threading.active_count()} threads left)")


if __name__ == "__main__":
    main()
