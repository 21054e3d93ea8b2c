"""A sample of the privacy corpus with the real local model (SmolLM2 through llama.cpp): whatever
it says or calls, secrets stay out of every store, ordinary messages are kept as typed, and no
lead is stored against the corpus's expectation."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.privacy.corpus_runner import PERSONAS, load_corpus, run_corpus, sample
from treadwise.agent import Agent
from treadwise.models import ModelSettings, resolve_model
from treadwise.settings import Settings

SPEC = "local:smollm2"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def local(local_model):
    model = resolve_model(SPEC, ModelSettings(max_tokens=24).reached_by(Settings(timeout_s=180)))
    model.warm()
    return model


def test_a_sample_of_the_corpus_with_the_local_model(local, tmp_path: Path):
    def agent_for(data_dir: Path) -> Agent:
        return Agent(Settings(data_dir=data_dir, timeout_s=180), toolsets=("business",),
                     models={SPEC: local})

    # The sample's twelve items (five secrets, four ordinary messages, two consent
    # conversations, an erasure) go to the personas in turn, each item once: every persona
    # meets secrets and ordinary messages, and the persona changes little of what the local
    # model reads (the voice of an answer). benchmarks/privacy_corpus.py runs this sample for
    # every persona, and the whole corpus for every persona with the offline model.
    # The lead an erasure takes back is recorded by the offline model first.
    score = run_corpus(sample(load_corpus(), 30), PERSONAS, model=SPEC, setup_model="offline",
                       agent_for=agent_for, root=tmp_path, rotate=True)
    assert score.secrets >= 4 and score.ordinary >= 3 and score.conversations >= 2
    assert score.leaked == [] and score.altered == [] and score.consent_wrong == []
