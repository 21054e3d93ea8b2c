"""One redaction with a documented list of shapes: each shape removed, numbers and words that
only look like secrets left alone."""

from __future__ import annotations

import json

import pytest

from treadwise.errors import redact as errors_redact
from treadwise.privacy import redaction
from treadwise.privacy.redaction import SHAPES, is_card_number, redact, redact_tree


@pytest.mark.parametrize("shape", SHAPES, ids=lambda shape: shape.name)
def test_every_documented_shape_is_redacted(shape) -> None:
    out = redact(f"before {shape.example} after")
    assert "redacted" in out and out.startswith("before") and out.endswith("after")


SECRET_TEXT = {
    "password in words": ("my password is Hunter2!Secret99 and I need tires", "Hunter2!Secret99"),
    "password for an account": ("the password for my gmail is s3cret-Pass", "s3cret-Pass"),
    "password=": ("login with password=Tr0ub4dor&3 please", "Tr0ub4dor&3"),
    "PASSWORD:": ("PASSWORD: correct-horse-battery", "correct-horse-battery"),
    "pwd": ("pwd=hello99", "hello99"),
    "JSON password": ('{"password": "s3cr3t!"}', "s3cr3t!"),
    "pin": ("my PIN is 4321", "4321"),
    "OpenAI key": ("sk-proj-AbCdEf0123456789xyz", "sk-proj-AbCdEf0123456789xyz"),
    "Anthropic key": ("sk-ant-api03-AbCdEf0123456789", "sk-ant-api03-AbCdEf0123456789"),
    "AWS key id": ("AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    "AWS secret labelled": ("aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    "AWS secret bare": ("keys: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    "GitHub": ("ghp_A1b2C3d4E5f6G7h8I9j0A1b2C3d4E5f6G7h8", "ghp_A1b2C3d4E5f6G7h8I9j0"),
    "GitHub fine-grained": ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "github_pat_11"),
    "Slack": ("xoxb-123456789012-1234567890123-AbCdEfGh", "xoxb-123456789012"),
    "Slack webhook": ("https://hooks.slack.com/services/T000/B000/XXXXXXXX", "T000/B000"),
    "Stripe": ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    "Hugging Face": ("hf_abcdefghijklmnopqrstuvwxyzABCDEF12", "hf_abcdefghijklmnop"),
    "Google": ("AIzaSyA1234567890abcdefghijklmnopqrs", "AIzaSyA1234567890"),
    "JWT": ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTYifQ.abcdefghijk123", "eyJhbGciOiJIUzI1NiJ9"),
    "Bearer": ("Authorization: Bearer abcDEF0123456789ghiJKL", "abcDEF0123456789ghiJKL"),
    "URL password": ("postgresql://tw:Sup3rS3cret@db/tw", "Sup3rS3cret"),
    "card with dashes": ("about 4111-1111-1111-1111", "4111-1111-1111-1111"),
    "card with spaces": ("charge my card 4111 1111 1111 1111 for tires", "4111 1111"),
    "card in one run": ("my card number is 4111111111111111", "4111111111111111"),
    "card odd spacing": ("visa 4111 11111111 1111", "4111 11111111 1111"),
    "Amex": ("Amex 3782 822463 10005", "822463"),
    "Mastercard": ("mastercard 5555 5555 5555 4444", "5555 5555 5555 4444"),
    "cvv": ("cvv 123", "123"),
    "security code": ("the security code is 9876", "9876"),
    "SSN": ("my SSN is 123-45-6789", "123-45-6789"),
    "SSN alone": ("123-45-6789", "123-45-6789"),
    "SSN labelled digits": ("social security number 123456789", "123456789"),
    "UK NI": ("NI number AB 12 34 56 C", "AB 12 34 56 C"),
    "passport": ("passport number is X12345678", "X12345678"),
}


@pytest.mark.parametrize("case", list(SECRET_TEXT))
def test_each_secret_in_context_is_removed(case) -> None:
    text, secret = SECRET_TEXT[case]
    assert secret not in redact(text)
    assert redact(redact(text)) == redact(text)  # redacting twice changes nothing more


KEPT = [
    "What is 4111111111111111 + 1?",                  # a long number in a calculation
    "2^50 = 1125899906842624",
    "20! = 2432902008176640000",
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",  # a git hash
    "data/plots/plot_ab12CD34ef56GH78ij90KL12mn34OP56qr.png",
    "my password is not working",
    "I forgot my password, can you help?",
    "Our secret to long tire life is rotation.",
    "123 - 45 - 6789",
    "Call us at 512-555-0147.",
    "Rotation costs $35 every 5,000-7,500 miles.",
]


@pytest.mark.parametrize("text", KEPT)
def test_text_that_only_looks_like_a_secret_is_kept(text) -> None:
    assert redact(text) == text


def test_json_stays_json_and_errors_use_the_same_function() -> None:
    data = json.dumps({"user": "my password is Hunter2!Secret99", "password": "x-Y-z-123",
                       "note": "card 4111 1111 1111 1111"})
    assert json.loads(redact(data))["password"] == "[redacted]"
    assert errors_redact is redact


def test_card_numbers_need_the_luhn_check_and_a_card_range() -> None:
    assert is_card_number("4111111111111111") and is_card_number("378282246310005")
    assert not is_card_number("4111111111111112")  # fails Luhn
    assert not is_card_number("1234567812345670")  # Luhn-valid, no card range


def test_a_text_seen_before_is_redacted_as_the_first_time(monkeypatch) -> None:
    # Clean texts are remembered for speed: a secret text must still be redacted every time,
    # and a clean text must lose a secret the environment gains later.
    secret = "my password is Hunter2!Secret99 and I need tires"
    assert redact(secret) == redact(secret) != secret
    clean = "call me on the mobile Qz7xWv3kTb9 tomorrow"
    assert redact(clean) == clean
    monkeypatch.setenv("SHOP_TOKEN", "Qz7xWv3kTb9")
    assert redact(clean) == "call me on the mobile [redacted] tomorrow"
    assert "Qz7xWv3kTb9" not in json.dumps(redact_tree({"turns": [clean]}))


def test_a_tree_is_redacted_keys_too_when_asked_with_the_environment_read_once(
        monkeypatch) -> None:
    """The JSON export redacts keys as well as values (with_keys), and reads the environment's
    secrets once for the whole tree rather than once per string."""
    monkeypatch.setenv("SHOP_TOKEN", "Qz7xWv3kTb9")
    tree = {"Qz7xWv3kTb9": ["my password is Hunter2!Secret99", {"n": 3, "k": "Qz7xWv3kTb9"}]}
    reads = []
    values = redaction._secret_values
    monkeypatch.setattr(redaction, "_secret_values", lambda: reads.append(1) or values())
    plain = redact_tree(tree)
    both = redact_tree(tree, with_keys=True)
    assert reads == [1, 1]
    assert list(plain) == ["Qz7xWv3kTb9"] and list(both) == ["[redacted]"]
    for done in (plain, both):
        (kept,) = done.values()
        assert "Hunter2" not in kept[0] and kept[1] == {"n": 3, "k": "[redacted]"}
