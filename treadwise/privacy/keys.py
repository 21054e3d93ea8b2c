"""Detectors of keys and tokens: detect-secrets' plugins, ours written the same way, entropy.

Provider keys come from Yelp's `detect-secrets` (AWS, Azure storage, GitHub, GitLab, JWT,
Mailchimp, npm, OpenAI, PyPI, SendGrid, Slack, Square, Stripe, Telegram, Twilio, Discord, URL
passwords, private key headers): their `denylist` patterns run on the message's case-keeping
detector fold, so a key split by a zero-width space is still a key. What it does not know yet
is `TreadWiseKeys`, a `RegexBasedDetector` like theirs (newer key shapes: `sk-proj-`,
Anthropic, Google `AIza`/`ya29.`/`GOCSPX-`, Slack `xoxc-`/`xoxe-`/`xapp-`, Hugging Face, Groq,
Tavily, xAI, ...; `Authorization: Basic` and `Bearer`). A private key is removed from its BEGIN
line to its END line (PGP blocks too), and an unlabelled token of 24 characters or more with
upper and lower case and digits is removed when detect-secrets' Shannon entropy of it is high.
detect-secrets imports `requests`, so it is imported on first need, not with the package.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from treadwise.privacy.detectors import SECRET, Finding, Texts, detector

# detect-secrets' plugins whose patterns are specific enough for chat text (Artifactory's
# "AP..." matches capitalised words, and an IP address is not a secret).
PLUGINS = ("aws.AWSKeyDetector", "azure_storage_key.AzureStorageKeyDetector",
           "basic_auth.BasicAuthDetector", "discord.DiscordBotTokenDetector",
           "github_token.GitHubTokenDetector", "gitlab_token.GitLabTokenDetector",
           "jwt.JwtTokenDetector", "mailchimp.MailchimpDetector", "npm.NpmDetector",
           "openai.OpenAIDetector", "pypi_token.PypiTokenDetector",
           "sendgrid.SendGridDetector", "slack.SlackDetector",
           "square_oauth.SquareOAuthDetector", "stripe.StripeDetector",
           "telegram_token.TelegramBotTokenDetector", "twilio.TwilioKeyDetector")
OUR_PATTERNS = (
    r"\bsk-[A-Za-z0-9_\-]{8,}", r"\bAIza[0-9A-Za-z_\-]{20,}", r"\bya29\.[0-9A-Za-z_\-]{20,}",
    r"\bGOCSPX-[A-Za-z0-9_\-]{16,}", r"\bgh[pousr]_[A-Za-z0-9]{30,}",
    r"\bgithub_pat_[A-Za-z0-9_]{30,}", r"\bxox[a-z](?:\.xox[a-z])?-[A-Za-z0-9-]{10,}",
    r"\bxapp-\d-[A-Za-z0-9-]{10,}", r"https://hooks\.slack\.com/services/[A-Za-z0-9/]+",
    r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}", r"\bwhsec_[A-Za-z0-9]{24,}",
    r"\bhf_[A-Za-z0-9]{30,}", r"\bgsk_[A-Za-z0-9]{40,}", r"\btvly-[A-Za-z0-9-]{16,}",
    r"\bxai-[A-Za-z0-9]{40,}", r"\br8_[A-Za-z0-9]{30,}", r"\bnpm_[A-Za-z0-9]{36}\b",
    r"\bpypi-[A-Za-z0-9_\-]{50,}", r"\bkey-[0-9a-zA-Z]{32}\b", r"\bSK[0-9a-fA-F]{32}\b",
    r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}", r"\bsq0(?:atp|csp)-[0-9A-Za-z\-_]{22,}",
    r"\b(?:AccountKey|SharedAccessKey|sig)=[A-Za-z0-9%+/=]{20,}",
    r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}\b",
    r"(?i:\bauthorization\s*[:=]\s*(?:basic|bearer|token)\s+)([A-Za-z0-9._~+/=-]{8,})",
    r"(?i:\bbearer\s+)([A-Za-z0-9._~+/=-]{16,})",
)
PRIVATE_KEY_END = re.compile(r"-----END [A-Z0-9 ]*(?:PRIVATE KEY|KEY BLOCK)[A-Z ]*-----")
# Only a text holding one of these can hold a key: most chat messages are ruled out at once.
CANDIDATE = re.compile(r"[\w+/=.:-]{16,}|BEGIN|PuTTY|://|(?i:authorization|bearer)")
TOKEN = re.compile(r"(?<![\w+/@.-])[A-Za-z0-9+/_-]{24,}={0,2}(?![\w+/=@-]|\.\w)")
ENTROPY_LIMIT = 4.5


@lru_cache(maxsize=1)
def plugins() -> tuple[Any, ...]:
    """detect-secrets' chosen plugins and ours, built once."""
    import importlib

    from detect_secrets.plugins.base import RegexBasedDetector

    class TreadWiseKeys(RegexBasedDetector):
        """Key shapes detect-secrets does not know (yet), written as one of its plugins."""

        secret_type = "TreadWise key shapes"
        denylist = tuple(re.compile(p) for p in OUR_PATTERNS)

    found: list[Any] = []
    for name in PLUGINS:
        module, _, cls = name.rpartition(".")
        found.append(getattr(importlib.import_module(f"detect_secrets.plugins.{module}"),
                             cls)())
    return (*found, TreadWiseKeys())


@lru_cache(maxsize=1)
def _private_key_headers() -> tuple[re.Pattern, ...]:
    from detect_secrets.plugins.private_key import PrivateKeyDetector

    return tuple(PrivateKeyDetector.denylist)


def _secret_group(match: re.Match) -> tuple[int, int]:
    """The span of the secret itself: the last group that matched, else the whole match."""
    for group in range(match.re.groups, 0, -1):
        if match.group(group):
            return match.span(group)
    return match.span()


@detector
def private_keys(texts: Texts) -> Iterator[Finding]:
    """A private key block (PEM, OpenSSH, PGP, PuTTY), from its header to its end."""
    if "BEGIN" not in texts.cased.text and "PuTTY" not in texts.cased.text:
        return
    fold = texts.cased
    text = fold.text
    for pattern in _private_key_headers():
        for match in pattern.finditer(text):
            start = text.rfind("-----", 0, match.start())
            start = start if start >= 0 and match.start() - start <= 5 else match.start()
            end = PRIVATE_KEY_END.search(text, match.end())
            yield texts.found(fold, start, end.end() if end else len(text), SECRET)


@detector
def provider_keys(texts: Texts) -> Iterator[Finding]:
    """Keys and tokens of providers and services, by detect-secrets' patterns and ours."""
    fold = texts.cased
    if not CANDIDATE.search(fold.text):
        return
    for plugin in plugins():
        for pattern in plugin.denylist:
            for match in pattern.finditer(fold.text):
                yield texts.found(fold, *_secret_group(match), SECRET)


def high_entropy(token: str) -> bool:
    """A random-looking token: mixed case and digits, and detect-secrets' Shannon entropy of
    it over the base64 alphabet above `ENTROPY_LIMIT` (an English identifier is below)."""
    if not (re.search(r"[a-z]", token) and re.search(r"[A-Z]", token)
            and re.search(r"\d", token)):
        return False
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

    return Base64HighEntropyString().calculate_shannon_entropy(token) > ENTROPY_LIMIT


@detector
def random_tokens(texts: Texts) -> Iterator[Finding]:
    """Unlabelled high-entropy tokens; a path's parts and file names are not tokens."""
    fold = texts.cased
    text = fold.text
    if not CANDIDATE.search(text):
        return
    for match in TOKEN.finditer(text):
        token = match.group(0)
        if token.count("/") > 3 or token.startswith("/") or not high_entropy(token):
            continue
        yield texts.found(fold, match.start(), match.end(), SECRET)
