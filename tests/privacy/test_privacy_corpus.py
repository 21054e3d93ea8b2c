"""The privacy corpus (issue 34) across the three personas with the offline model: every secret
gone from every store and export, ordinary messages kept as typed, no lead against consent."""

from __future__ import annotations

import json

import pytest

from tests.privacy.corpus_runner import PERSONAS, load_corpus, message_count, run_corpus

CORPUS = load_corpus()


def test_the_corpus_holds_300_messages_of_every_kind() -> None:
    assert message_count(CORPUS) >= 300
    assert len(CORPUS["secrets"]) >= 100 and len(CORPUS["ordinary"]) >= 100
    assert len(CORPUS["consent"]) >= 50 and len(CORPUS["erasures"]) >= 15
    said = json.dumps(CORPUS, ensure_ascii=False)
    for variant in ("\u200b", "\u043e", "\u0435", "PGP PRIVATE KEY", "xoxc-", "IBAN"):
        assert variant in said, repr(variant)


@pytest.mark.slow
@pytest.mark.parametrize("persona", PERSONAS)
def test_the_corpus_with_the_offline_model(persona: str, tmp_path) -> None:
    score = run_corpus(CORPUS, (persona,), root=tmp_path)
    assert score.leaked == [] and score.recall == 1.0
    assert score.false_redaction <= 0.02, score.altered
    assert score.consent_wrong == []
