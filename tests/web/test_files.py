"""Copies the page serves from Gradio's cache: whole, whoever asks for them again."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from treadwise.web.files import PNG_MAGIC, publish_png, save_to_cache


@pytest.mark.thorough
def test_a_copy_being_downloaded_is_never_cut_short_by_publishing_it_again(tmp_path: Path):
    """A chart shown again (a refresh, a second visitor) while a browser downloads it: every
    read of the served file gets all of it (Gradio's own byte writer rewrote it in place, so
    the server declared one length and sent less)."""
    data = PNG_MAGIC + os.urandom(2_000_000)
    (plots := tmp_path / "plots").mkdir()
    (png := plots / "area.png").write_bytes(data)
    cache = str(tmp_path / "cache")
    served = Path(publish_png(png, plots, cache))
    done = threading.Event()

    def publish_again() -> None:
        for _ in range(200):
            assert publish_png(png, plots, cache) == str(served)
        done.set()

    again = threading.Thread(target=publish_again)
    again.start()
    sizes = []
    while not done.is_set():
        sizes.append(len(served.read_bytes()))
    again.join()
    assert len(sizes) > 10 and set(sizes) == {len(data)}
    assert [p.name for p in served.parent.iterdir()] == ["area.png"], "a staging file was left"


def test_new_bytes_get_a_new_copy_and_the_same_bytes_the_same(tmp_path: Path):
    first = save_to_cache(b"one", "export.md", str(tmp_path))
    assert save_to_cache(b"one", "export.md", str(tmp_path)) == first
    other = save_to_cache(b"two", "export.md", str(tmp_path))
    assert other != first and Path(other).read_bytes() == b"two"
    assert Path(first).read_bytes() == b"one"
