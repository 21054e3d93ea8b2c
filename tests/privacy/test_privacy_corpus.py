"""The privacy corpus (issue 34) across the three personas with the offline model: every secret
gone from every store and export, ordinary messages kept as typed, no lead against consent."""

from __future__ import annotations

import json

import pytest

from tests.privacy.corpus_runner import (
    PERSONAS,
    holds,
    load_corpus,
    message_count,
    run_corpus,
)

CORPUS = load_corpus()


def test_the_corpus_holds_300_messages_of_every_kind() -> None:
    assert message_count(CORPUS) >= 300
    assert len(CORPUS["secrets"]) >= 100 and len(CORPUS["ordinary"]) >= 100
    assert len(CORPUS["consent"]) >= 50 and len(CORPUS["erasures"]) >= 15
    said = json.dumps(CORPUS, ensure_ascii=False)
    for variant in ("\u200b", "\u043e", "\u0435", "PGP PRIVATE KEY", "xoxc-", "IBAN"):
        assert variant in said, repr(variant)


@pytest.mark.parametrize("text", ["pin 482913", 'memory: {"pin": "482913"}', "482913",
                                  "my PIN is 482913.", "\u00a6482913\u00b1"])
def test_a_pin_stored_as_typed_is_found(text: str) -> None:
    assert holds(text, "482913")


@pytest.mark.parametrize("text", ["versions 2.0.6723185154829131", "ts 12:34:19.482913+00:00",
                                  "id cd56dd3c70b2ed482913ea3ef7", "4829130", "1482913"])
def test_a_pin_found_only_by_chance_in_other_numbers_is_not(text: str) -> None:
    assert not holds(text, "482913")
    assert holds(text, "ea3ef7") == ("ea3ef7" in text)  # other secrets: anywhere


@pytest.mark.slow
@pytest.mark.parametrize("persona", PERSONAS)
def test_the_corpus_with_the_offline_model(persona: str, tmp_path) -> None:
    score = run_corpus(CORPUS, (persona,), root=tmp_path)
    assert score.leaked == [], score.leaked
    assert score.recall == 1.0
    assert score.false_redaction <= 0.02, score.altered
    assert score.consent_wrong == []
