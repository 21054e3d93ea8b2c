"""A pytest plugin for tests/test_selection.py: writes each collected test's markers and
fixtures as JSON to the file named by TREADWISE_SELECTION_REPORT."""

from __future__ import annotations

import json
import os

import pytest


def pytest_collection_finish(session: pytest.Session) -> None:
    target = os.environ.get("TREADWISE_SELECTION_REPORT")
    if not target:
        return
    report = {item.nodeid: {"markers": sorted({m.name for m in item.iter_markers()}),
                            "fixtures": sorted(getattr(item, "fixturenames", ()))}
              for item in session.items}
    with open(target, "w", encoding="utf-8") as out:
        json.dump(report, out)
