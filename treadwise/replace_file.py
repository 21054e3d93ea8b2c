"""Writing a file whole or not at all: a new copy beside it, renamed over it once complete."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

# The end of a copy's name while it is written: a file ending so that is old belongs to a writer
# that died (a folder's own cleaning may delete it).
STAGING_SUFFIX = ".part"


@contextlib.contextmanager
def replacing(path: str | Path, binary: bool = False, **open_args: Any) -> Iterator[IO[Any]]:
    """Open a new copy of `path` for writing (text is UTF-8 unless told); when the block ends
    the copy replaces the file in one step, and if the block fails the copy is removed and the
    file is left as it was.

    A reader (another thread, process or replica sharing the folder) sees the old file or the
    new one, never half of either. Each copy has a name of its own, so writers racing for the
    same file each finish whole (the last rename wins), and it gets the mode any new file gets
    (tempfile's copies would be readable by their owner alone).
    """
    path = Path(path)
    staging = path.with_name(f".{path.name}.{secrets.token_hex(6)}{STAGING_SUFFIX}")
    if not binary:
        open_args.setdefault("encoding", "utf-8")
    try:
        with open(staging, "xb" if binary else "x", **open_args) as handle:
            yield handle
        os.replace(staging, path)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise


def replace_text(path: str | Path, text: str) -> None:
    """Make `text` the whole of `path` (UTF-8), in one step."""
    with replacing(path) as out:
        out.write(text)


def replace_bytes(path: str | Path, data: bytes) -> None:
    """Make `data` the whole of `path`, in one step."""
    with replacing(path, binary=True) as out:
        out.write(data)
