"""The server's secret: it signs conversation links, visitor cookies and export owners."""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import threading
from pathlib import Path

from treadwise.settings import Settings

SECRET_FILE = "secret.key"


class ServerSecret:
    """TREADWISE_SECRET_KEY, or one generated into the data dir on first use; replicas sharing
    a database must share TREADWISE_SECRET_KEY for what one signs to hold on the others."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self._secret: bytes | None = None
        self._lock = threading.Lock()

    def key(self) -> bytes:
        with self._lock:
            if self._secret is None:
                configured = self.settings.secret_key
                self._secret = (configured.encode() if configured
                                else stored_secret(self.settings.ensure_data_dir()))
            return self._secret

    def sign(self, purpose: str, text: str, chars: int = 32) -> str:
        """A hex HMAC of `text` for one `purpose` (a link signature is no visitor cookie's)."""
        digest = hmac.new(self.key(), f"{purpose}:{text}".encode(), hashlib.sha256)
        return digest.hexdigest()[:chars]

    def verify(self, purpose: str, text: str, signature: str, chars: int = 32) -> bool:
        return len(signature) == chars and hmac.compare_digest(
            signature, self.sign(purpose, text, chars))


def stored_secret(folder: Path) -> bytes:
    """The secret kept in `folder`, made on first use. Processes sharing the folder agree:
    the file appears whole (linked into place) or not at all, and the first one wins."""
    path = folder / SECRET_FILE
    if not path.exists():
        draft = folder / f".{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
        descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(secrets.token_hex(32))
        try:
            os.link(draft, path)
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    return path.read_text().strip().encode()
