"""What the page may serve: PNGs and exports copied into Gradio's cache; the data dir never."""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import Any, ClassVar

from treadwise.replace_file import replace_bytes
from treadwise.settings import Settings

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
MAX_PNG_BYTES = 8 * 1024 * 1024
REPO = Path(__file__).resolve().parents[2]
log = logging.getLogger(__name__)


CACHE_DIR_NAME = "web-cache"
SHOWN_DIR = "shown"  # inside the cache: the chat's plots, which Gradio serves as static files
# Gradio serves only its own cache, so this list is the second lock, kept short on purpose:
# every file in every chat update is checked against each entry.
DATA_ENTRIES = ("leads.db", "memory.db", "plots", "secret.key")


def cache_dir(settings: Settings) -> Path:
    """Where Gradio keeps the copies it serves: inside the data dir, never the system temp."""
    return settings.data_dir.resolve() / CACHE_DIR_NAME


def use_cache_dir(settings: Settings) -> Path:
    """Point Gradio's cache at the data dir: the one change the app makes to its environment.

    It has to be the environment: Gradio takes its cache folder only from GRADIO_TEMP_DIR and
    reads it at import, whenever it builds a component (also the copies it makes per session
    on every update) and on every file request, so the variable must name our folder for the
    life of the process; no Gradio parameter takes it. `serve` sets it before Gradio loads.
    """
    path = cache_dir(settings)
    os.environ["GRADIO_TEMP_DIR"] = str(path)
    return path


def blocked_paths(settings: Settings) -> list[str]:
    """Everything in the data dir but the served cache (databases, memory, plots), and every
    .env the process could see. Gradio serves only its cache anyway; this is the second lock."""
    data = settings.data_dir.resolve()
    env_files = {(Path.cwd() / ".env").resolve(), (REPO / ".env").resolve()}
    return [*(str(data / name) for name in DATA_ENTRIES), *sorted(map(str, env_files))]


def save_to_cache(data: bytes, name: str, cache_dir: str) -> str:
    """Write bytes where Gradio serves its own files (a folder named by the content's hash).

    A copy already there holds these very bytes and may be on its way to a browser, so it is
    only touched (Gradio's cache cleaner ages files by their time); a new copy is written
    under another name and renamed into place, so nothing ever serves half a file. Gradio's
    own save_bytes_to_cache rewrites the file in place each time: a page shown again while
    its chart downloaded sent a short body ("Too little data for declared Content-Length").
    """
    from gradio.processing_utils import hash_bytes

    folder = Path(cache_dir) / hash_bytes(data)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / Path(name).name
    if path.is_file() and path.stat().st_size == len(data):
        with contextlib.suppress(OSError):
            os.utime(path)
        return str(path.resolve())
    replace_bytes(path, data)
    return str(path.resolve())


def publish_png(path: str | Path, folder: Path, cache_dir: str) -> str | None:
    """A copy of a PNG inside `folder` that the page can show, or None for anything else.

    Nothing outside the folder is taken, so a tool naming another file as its artifact (a
    database, a key file) cannot get it served; the folder itself is never served directly.
    """
    try:
        source = Path(path).resolve(strict=True)
        if not source.is_relative_to(folder.resolve()) or source.suffix.lower() != ".png":
            log.warning("not showing a file outside %s: %s", folder, path)
            return None
        if source.stat().st_size > MAX_PNG_BYTES:
            return None
        data = source.read_bytes()
    except OSError:
        return None
    if not data.startswith(PNG_MAGIC):
        return None
    return save_to_cache(data, source.name, cache_dir)


class ShownPlots:
    """The chat's plot copies, in a folder of the cache that Gradio treats as static.

    Gradio checks every file of every update of an output before it sends it: against the
    blocked, allowed and cache folders (a dozen path resolutions a file) and whether to copy it
    into the cache, on its event loop. A chat update holds every plot of the conversation, so
    with twenty plots shown these checks were 43% of the app's CPU for a turn that drew none.
    A file inside a static folder is taken after one check that it is inside it. Only
    publish_png writes here (PNGs from the plots folder, the bytes checked), and the cache is
    served anyway, so nothing new can be fetched; the blocked paths still hold on every file
    request. Gradio's cleaner (delete_cache) removes only files it was handed, so the copies
    are handed to it here: aged out after a day and removed when the app stops, as before.
    """

    _served: ClassVar[Path | None] = None  # the folder this process registered last

    def __init__(self, cache_dir: str | Path):
        self.folder = Path(cache_dir).resolve() / SHOWN_DIR
        self.files: set[str] = set()

    def serve(self, demo: Any) -> None:
        """Register the folder with Gradio in place of the one an earlier app of this process
        registered (the list is the process's: every file of every update walks it), and hand
        the copies to `demo`'s cleaner. A Gradio without static folders keeps its checks."""
        from gradio.data_classes import _StaticFiles

        paths = getattr(_StaticFiles, "all_paths", None)
        if isinstance(paths, list):
            paths[:] = [p for p in paths if p != ShownPlots._served]
            paths.insert(0, self.folder)  # first: a plot is then taken after one check
            ShownPlots._served = self.folder
        sets = getattr(demo, "temp_file_sets", None)
        if isinstance(sets, list) and not any(s is self.files for s in sets):
            sets.append(self.files)

    def publish(self, path: str | Path, folder: Path) -> str | None:
        """publish_png into the folder, the copy remembered for the cleaner."""
        copy = publish_png(path, folder, str(self.folder))
        if copy is not None:
            self.files.add(copy)
        return copy
