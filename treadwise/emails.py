"""E-mail addresses: the one pattern for finding them in text and for validating one address."""

from __future__ import annotations

import re

# Loose, for finding what someone typed in a sentence ("it's ana@fleetco.com, thanks").
IN_TEXT_RE = re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}")
# Strict, for storing: one plain address, no display name, no quoting, a dotted domain, a real TLD.
ADDRESS_RE = re.compile(
    r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}"
)


def find_emails(text: str) -> list[str]:
    """Every address in the text, in order, without a trailing full stop."""
    return [match.rstrip(".") for match in IN_TEXT_RE.findall(text)]
