"""Lead export: CSV that a spreadsheet cannot run as formulas, and JSON lines."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from treadwise.storage.lead_export import export_leads, neutralise_cell
from treadwise.storage.sqlite import Store

HOSTILE_NAME = '=HYPERLINK("http://evil","x")'


@pytest.fixture
def store(tmp_path: Path) -> Store:
    store = Store(tmp_path)
    store.add_lead("ana@example.com", "Ana Silva", "Fleet pricing, 12 vans\nin Dallas")
    store.add_lead("eve@example.com", HOSTILE_NAME, "+1 call me")
    store.add_lead("-x@example.com", "@admin", "=SUM(A1:A9)")
    return store


def _csv_rows(store: Store) -> list[dict]:
    out = io.StringIO()
    assert export_leads(store, "csv", out) == 3
    return list(csv.DictReader(io.StringIO(out.getvalue())))


def test_csv_has_a_header_and_every_lead(store: Store) -> None:
    rows = _csv_rows(store)
    assert list(rows[0]) == ["id", "created_at", "email", "name", "message"]
    assert rows[0]["name"] == "Ana Silva"
    assert rows[0]["message"] == "Fleet pricing, 12 vans\nin Dallas"


def test_csv_neutralises_formula_cells(store: Store) -> None:
    rows = _csv_rows(store)
    assert rows[1]["name"] == "'" + HOSTILE_NAME
    assert rows[1]["message"] == "'+1 call me"
    assert (rows[2]["email"], rows[2]["name"]) == ("'-x@example.com", "'@admin")
    assert rows[2]["message"] == "'=SUM(A1:A9)"
    for row in rows:
        assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for cell in row.values())


@pytest.mark.parametrize(("value", "expected"), [
    ("\tcmd", "'\tcmd"), ("\r=1", "'\r=1"), ("Ana", "Ana"), ("a=b", "a=b"), (42, 42), ("", ""),
])
def test_only_formula_starts_are_prefixed(value, expected) -> None:
    assert neutralise_cell(value) == expected


@pytest.mark.parametrize("value", ["＝HYPERLINK(\"http://evil\")", "＋1", "－1+2", "＠SUM(A1)",
                                   "﹦1+1", " =1+1", "\u3000＝1"])
def test_lookalike_formula_starts_are_prefixed_too(value) -> None:
    assert neutralise_cell(value) == "'" + value


def test_a_fullwidth_formula_in_a_stored_lead_stays_text(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.add_lead("eve@example.com", "＝cmd|' /C calc'!A0", "＠SUM(1+1) please")
    out = io.StringIO()
    export_leads(store, "csv", out)
    row = next(csv.DictReader(io.StringIO(out.getvalue())))
    assert row["name"].startswith("'＝") and row["message"].startswith("'＠")


def test_jsonl_keeps_values_exact(store: Store) -> None:
    out = io.StringIO()
    assert export_leads(store, "jsonl", out) == 3
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [row["name"] for row in rows] == ["Ana Silva", HOSTILE_NAME, "@admin"]
    assert rows[0] == store.leads()[0]


def test_an_empty_store_exports_only_the_header(tmp_path: Path) -> None:
    out = io.StringIO()
    assert export_leads(Store(tmp_path), "csv", out) == 0
    assert out.getvalue() == "id,created_at,email,name,message\n"


def test_an_unknown_format_is_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="unknown export format 'xlsx'"):
        export_leads(store, "xlsx", io.StringIO())  # type: ignore[arg-type]
