"""Transcripts: every case's whole conversation as one compact JSON line in transcripts.jsonl."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from experiments.store.appending import AppendFile

TRANSCRIPTS_FILE = "transcripts.jsonl"


class TranscriptError(ValueError):
    """A case's transcript cannot be found (unknown key, ambiguous prefix, no file)."""


def encode(transcript: dict[str, Any]) -> str:
    """One line of JSON, the case key first so a reader can find it without parsing."""
    ordered = {"case_key": transcript["case_key"], **transcript}
    return json.dumps(ordered, ensure_ascii=False, separators=(",", ":"), default=str)


class TranscriptWriter:
    """Appends one line per case and flushes it; a kill leaves at most one partial line."""

    def __init__(self, path: Path):
        self.path = Path(path)
        repair(self.path)
        self._file = AppendFile(self.path)

    def write(self, transcript: dict[str, Any]) -> None:
        self._file.append(encode(transcript) + "\n")

    def close(self) -> None:
        self._file.close()


def repair(path: Path) -> int:
    """Cut a half-written last line off the file; return the bytes removed."""
    path = Path(path)
    if not path.exists():
        return 0
    data = path.read_bytes()
    keep = data.rfind(b"\n") + 1
    if keep < len(data):
        with path.open("r+b") as handle:
            handle.truncate(keep)
    return len(data) - keep


def drop_unkept(path: Path, rows: Counter[str]) -> int:
    """Cut the last lines whose case has more transcripts than `rows` (its results rows): a
    kill after a transcript was written and before its row was leaves one such line, and the
    case runs again. Returns the lines removed, so each transcript has its row."""
    path = Path(path)
    if not path.exists():
        return 0
    lines = path.read_bytes().splitlines(keepends=True)
    seen = Counter(_key(line) for line in lines)
    keep = len(lines)
    while keep and seen[key := _key(lines[keep - 1])] > rows.get(key, 0):
        seen[key] -= 1
        keep -= 1
    if keep < len(lines):
        path.write_bytes(b"".join(lines[:keep]))
    return len(lines) - keep


def _key(line: bytes) -> str:
    marker = b'{"case_key":"'
    if not line.startswith(marker):
        return ""
    return line[len(marker):line.find(b'"', len(marker))].decode("utf-8", "replace")


def read_transcripts(run_dir: Path) -> Iterator[dict[str, Any]]:
    """The latest transcript of each case of a run (a case run again has several lines), in
    the order they were written."""
    path = Path(run_dir) / TRANSCRIPTS_FILE
    if not path.exists():
        return
    latest: dict[str, dict[str, Any]] = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            try:
                transcript = json.loads(line)
            except ValueError:
                continue  # the line a kill cut short
            latest.pop(transcript.get("case_key"), None)
            latest[transcript.get("case_key")] = transcript
    yield from latest.values()


def _keys(path: Path) -> Iterator[tuple[str, str]]:
    marker = '{"case_key":"'
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.startswith(marker) and line.endswith("\n"):
                yield line[len(marker):line.index('"', len(marker))], line


def find_transcript(run_dir: Path, case: str) -> dict[str, Any]:
    """The transcript of one case: its key, or any part of a key that only one case has.

    A case run again (--retry-errors) has several lines; the latest wins.
    """
    path = Path(run_dir) / TRANSCRIPTS_FILE
    if not path.exists():
        raise TranscriptError(f"{run_dir}: no {TRANSCRIPTS_FILE} (runs made before transcripts "
                              "existed have none)")
    return pick_transcript(_keys(path), case, run_dir)


def pick_transcript(lines: Iterable[tuple[str, str]], case: str, run: Any) -> dict[str, Any]:
    """Of (case key, JSON line) pairs, the one whose key is `case` or the only one containing
    it (a later line of the same key wins)."""
    exact, partial = None, {}
    for key, line in lines:
        if key == case:
            exact = line
        elif case in key:
            partial[key] = line
    if exact is not None:
        return json.loads(exact)
    if len(partial) == 1:
        return json.loads(next(iter(partial.values())))
    if not partial:
        raise TranscriptError(f"{run}: no case matches {case!r}")
    shown = ", ".join(sorted(partial)[:8]) + (" ..." if len(partial) > 8 else "")
    raise TranscriptError(f"{case!r} matches {len(partial)} cases: {shown}")


