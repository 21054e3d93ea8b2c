"""A file written through treadwise.replace_file is whole or as it was: readers never see half of
it, writers racing for it each finish, a failed write leaves the old file and no copy, and the
new file gets the mode any new file gets."""

from __future__ import annotations

import os
import threading

import pytest

from treadwise.replace_file import STAGING_SUFFIX, replace_bytes, replace_text, replacing

ONE, TWO = b"1" * 2**20, b"2" * 2**20 + b"\n"


@pytest.mark.thorough
def test_a_reader_sees_the_old_file_or_the_new_never_half(tmp_path):
    path = tmp_path / "chart.png"
    replace_bytes(path, ONE)
    done, seen = threading.Event(), []

    def rewrite() -> None:
        for n in range(300):
            replace_bytes(path, TWO if n % 2 else ONE)
        done.set()

    writer = threading.Thread(target=rewrite)
    writer.start()
    while not done.is_set():
        seen.append(path.read_bytes())
    writer.join()
    assert len(seen) > 10
    assert {len(data) for data in seen} <= {len(ONE), len(TWO)}
    assert all(data in (ONE, TWO) for data in seen)


def test_writers_racing_for_one_file_each_finish_whole(tmp_path):
    path = tmp_path / "meta.json"
    errors: list[BaseException] = []

    def write(text: str) -> None:
        try:
            for _ in range(200):
                replace_text(path, text)
        except BaseException as exc:  # noqa: BLE001 - the test reports it
            errors.append(exc)

    texts = [f'{{"writer": {n}, "pad": "{"x" * 5000}"}}\n' for n in range(4)]
    writers = [threading.Thread(target=write, args=(text,)) for text in texts]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    assert errors == []
    assert path.read_text(encoding="utf-8") in texts
    assert [p.name for p in tmp_path.iterdir()] == ["meta.json"], "a copy was left behind"


def test_a_failed_write_leaves_the_file_as_it_was_and_no_copy(tmp_path):
    path = tmp_path / "results.csv"
    replace_text(path, "key,ok\na,1\n")
    with pytest.raises(RuntimeError), replacing(path, newline="") as out:
        out.write("key,ok\n")
        raise RuntimeError("the rows ran out")
    assert path.read_text(encoding="utf-8") == "key,ok\na,1\n"
    assert [p.name for p in tmp_path.iterdir()] == ["results.csv"]


def test_text_is_utf8_and_the_copy_is_named_as_a_folder_cleaner_expects(tmp_path):
    path = tmp_path / "note.md"
    with replacing(path) as out:
        (copy,) = [p for p in tmp_path.iterdir()]
        assert copy.name.startswith(".note.md.") and copy.suffix == STAGING_SUFFIX
        out.write("Größe 205/55 R16 – 9 €\n")
    assert path.read_bytes() == "Größe 205/55 R16 – 9 €\n".encode()


def test_a_new_file_gets_the_mode_any_new_file_gets(tmp_path):
    before = os.umask(0o022)
    try:
        replace_text(tmp_path / "meta.json", "{}\n")
        (tmp_path / "plain.json").write_text("{}\n")
    finally:
        os.umask(before)
    mode = (tmp_path / "meta.json").stat().st_mode & 0o777
    assert mode == (tmp_path / "plain.json").stat().st_mode & 0o777 == 0o644


def test_a_missing_folder_is_a_clear_error_and_leaves_nothing(tmp_path):
    with pytest.raises(FileNotFoundError):
        replace_text(tmp_path / "gone" / "meta.json", "{}\n")
    assert list(tmp_path.iterdir()) == []

