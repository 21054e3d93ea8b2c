"""Privacy corpus (issue 34): redaction recall, false redaction and consent errors.

Runs tests/privacy/corpus.yaml (300+ messages: secrets of every shape, ordinary tire and math
messages, consent conversations, erasures) through the agent for the three personas with the
offline model, then a sample with local:smollm2 when llama.cpp and its weights are installed
(PRIVACY_QUICK=1 skips it). Prints, per model:
  privacy_corpus: redaction recall <x> (goal 1.00)   secrets gone from every store and export
  privacy_corpus: false redaction <x> (goal <= 0.02) ordinary messages altered in memory
  privacy_corpus: consent errors <n> (goal 0)         leads against the corpus's expectation
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.privacy.corpus_runner import (
    PERSONAS,
    Score,
    load_corpus,
    message_count,
    run_corpus,
    sample,
)
from treadwise.agent import Agent
from treadwise.settings import Settings

LOCAL = "local:smollm2"
SAMPLE_EVERY = 30


def report(label: str, score: Score, seconds: float) -> None:
    print(f"privacy_corpus ({label}): {score.secrets} secrets, {score.ordinary} ordinary "
          f"messages, {score.conversations} conversations in {seconds:.0f} s")
    print(f"privacy_corpus ({label}): redaction recall {score.recall:.2f} (goal 1.00)")
    print(f"privacy_corpus ({label}): false redaction {score.false_redaction:.3f} "
          "(goal <= 0.02)")
    print(f"privacy_corpus ({label}): consent errors {score.consent_errors} (goal 0)")
    for what in (*score.leaked, *score.altered, *score.consent_wrong):
        print(f"  {what}")


def local_model():
    """The local model, or None with the reason printed when it cannot run here."""
    from treadwise.errors import ModelConfigError
    from treadwise.models import resolve_model
    from treadwise.models.spec import ModelSettings

    try:
        model = resolve_model(LOCAL, ModelSettings(max_tokens=24).reached_by(
            Settings(timeout_s=180)))
        model.warm()
    except (ModelConfigError, OSError) as exc:
        print(f"privacy_corpus ({LOCAL} sample): skipped, {exc}")
        return None
    return model


def main() -> None:
    corpus = load_corpus()
    print(f"privacy_corpus: {message_count(corpus)} messages x {len(PERSONAS)} personas")
    with tempfile.TemporaryDirectory(prefix="privacy-corpus-") as root:
        started = time.perf_counter()
        score = run_corpus(corpus, PERSONAS, root=Path(root) / "offline")
        report("offline, rule-based", score, time.perf_counter() - started)
        if os.environ.get("PRIVACY_QUICK") == "1" or (model := local_model()) is None:
            return

        def agent_for(data_dir: Path) -> Agent:
            return Agent(Settings(data_dir=data_dir, timeout_s=180), toolsets=("business",),
                         models={LOCAL: model})

        started = time.perf_counter()
        score = run_corpus(sample(corpus, SAMPLE_EVERY), PERSONAS, model=LOCAL,
                           setup_model="offline", agent_for=agent_for,
                           root=Path(root) / "local")
        report(f"{LOCAL} sample", score, time.perf_counter() - started)


if __name__ == "__main__":
    main()
