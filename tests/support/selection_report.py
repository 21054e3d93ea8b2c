"""A pytest plugin for tests/test_selection.py: writes each collected test's markers, fixtures
and whether `-m` selected it, as JSON, to the file named by TREADWISE_SELECTION_REPORT."""

from __future__ import annotations

import json
import os

import pytest

_deselected: list[pytest.Item] = []


def pytest_deselected(items: list[pytest.Item]) -> None:
    _deselected.extend(items)


def _entry(item: pytest.Item, selected: bool) -> dict[str, object]:
    return {"markers": sorted({m.name for m in item.iter_markers()}),
            "fixtures": sorted(getattr(item, "fixturenames", ())), "selected": selected}


def pytest_collection_finish(session: pytest.Session) -> None:
    target = os.environ.get("TREADWISE_SELECTION_REPORT")
    if not target:
        return
    report = {item.nodeid: _entry(item, True) for item in session.items}
    report.update({item.nodeid: _entry(item, False) for item in _deselected})
    with open(target, "w", encoding="utf-8") as out:
        json.dump(report, out)
