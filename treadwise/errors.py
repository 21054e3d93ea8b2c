"""Errors as people read them: provider failures mapped to one short line, secrets redacted."""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass

from treadwise.privacy.redaction import redact

BODY_EXCERPT = 120  # characters of an unreadable reply kept in its error


class ModelConfigError(ValueError):
    """A model cannot be built here: missing key or package, or a malformed spec."""


class ModelUnavailable(ModelConfigError):
    """The spec is fine but the model cannot run here: its runtime or weights are missing."""


class ModelLimitError(RuntimeError):
    """A model refused the request for a reason its message explains (e.g. a full context)."""


class InputRejected(ValueError):
    """The user's message is refused before any model call (too long, empty)."""


# Errors whose message is already written for the user, most specific first.
OWN_ERRORS: tuple[tuple[type[BaseException], str], ...] = (
    (ModelUnavailable, "unavailable"), (ModelConfigError, "config"),
    (InputRejected, "input_rejected"), (ModelLimitError, "model_limit"))


@dataclass(frozen=True)
class FriendlyError:
    type: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"type": self.type, "message": self.message}


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Seconds a server asked us to wait (Retry-After, retry-after-ms), or None."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(raw) if raw else None
        if parsed is None:
            return None
        return max(0.0, parsed.timestamp() - time.time())


def _status(error: BaseException) -> int | None:
    for attr in ("status_code", "code", "status"):
        value = getattr(error, attr, None)
        if isinstance(value, int):
            return value
    response = getattr(error, "response", None)
    value = getattr(response, "status_code", None)
    return value if isinstance(value, int) else None


def _retry_after(error: BaseException) -> float | None:
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    return retry_after_seconds(headers) if headers is not None else None


def _wait_words(seconds: float) -> str:
    if seconds >= 90:
        return f"about {round(seconds / 60)} minutes"
    return f"about {max(1, round(seconds))} seconds"


def _chain(error: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in seen and len(seen) < 8:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _own(error: BaseException) -> FriendlyError | None:
    """Our own errors, whose message is already written for the user."""
    return next((FriendlyError(name, redact(str(error))) for kind, name in OWN_ERRORS
                 if isinstance(error, kind)), None)


def _unreadable_reply(error: BaseException) -> FriendlyError | None:
    """A provider's reply that is not valid JSON: its HTTP status and the start of its body."""
    found = next((e for e in _chain(error) if isinstance(e, json.JSONDecodeError)), None)
    if found is None:
        return None
    response = next((r for e in _chain(error) if (r := getattr(e, "response", None))), None)
    status = getattr(response, "status_code", None)
    body = " ".join(str(found.doc or "").split())
    excerpt = body if len(body) <= BODY_EXCERPT else body[:BODY_EXCERPT - 3] + "..."
    return FriendlyError("provider_error", redact(
        f"The model provider sent a reply that is not valid JSON"
        f"{f' (HTTP {status})' if status else ''}: {excerpt!r}. Please try again shortly."))


def classify(error: BaseException, timeout_s: float | None = None) -> FriendlyError:
    """One short, honest line for the user; never a traceback, never a secret."""
    if (known := _own(error) or _unreadable_reply(error)) is not None:
        return known
    names = " ".join(type(e).__name__ for e in _chain(error)).lower()
    status = next((s for e in _chain(error) if (s := _status(e)) is not None), None)
    if "timeout" in names or "timedout" in names or "deadline" in names:
        limit = f" within {timeout_s:g} s" if timeout_s else " in time"
        return FriendlyError("timeout", f"The model provider did not answer{limit}. "
                             "Please try again in a moment.")
    if status == 429 or "ratelimit" in names or "resourceexhausted" in names:
        wait = next((w for e in _chain(error) if (w := _retry_after(e)) is not None), None)
        when = f" It asked us to wait {_wait_words(wait)}." if wait else ""
        return FriendlyError("rate_limited", "The model provider is busy right now (rate "
                             f"limited).{when} Please try again later.")
    if status in (401, 403) or "authentication" in names or "permissiondenied" in names:
        return FriendlyError("auth", "The model provider rejected the API key "
                             f"(HTTP {status or 401}). Check the key you set.")
    if status is not None and status >= 500:
        return FriendlyError("provider_error", f"The model provider had a problem (HTTP {status})"
                             " and did not answer after retrying. Please try again shortly.")
    if status is not None and 400 <= status < 500:
        return FriendlyError("bad_request", f"The model provider refused the request "
                             f"(HTTP {status}). Try a different model or a shorter message.")
    if "connect" in names or "connection" in names:
        return FriendlyError("connection", "Could not reach the model provider. Check the "
                             "network or the base URL setting.")
    if "recursion" in names:
        return FriendlyError("loop_limit", "The assistant went round in circles and was stopped."
                             " Please rephrase the question.")
    return FriendlyError("internal", f"Something went wrong ({type(error).__name__}). "
                         "The conversation can continue; please try again.")
