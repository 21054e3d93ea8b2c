"""A throw-away PostgreSQL cluster for tests and benchmarks: initdb + pg_ctl in a temp dir."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

from tests.support.webapp import free_port

USER = "treadwise"
PASSWORD = "tw-test-secret-4821"  # a real password, so tests can check it is never shown
UNPRIVILEGED = "nobody"  # initdb refuses to run as root
INSTALL_HINT = ("PostgreSQL's server binaries (initdb, pg_ctl) were not found under "
                "/usr/lib/postgresql/*/bin. Install them with `sh .ci/install-system` "
                "(Debian's postgresql package), then run the tests again.")


def server_bin() -> Path | None:
    """The newest installed PostgreSQL bin folder that has initdb and pg_ctl."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(Path(p).parent.parent.name)
                   if Path(p).parent.parent.name.isdigit() else 0)
    for initdb in reversed(found):
        folder = Path(initdb).parent
        if (folder / "pg_ctl").exists():
            return folder
    return None


@dataclass
class Cluster:
    """One running postmaster on 127.0.0.1:port; `database()` makes a fresh empty database."""

    root: Path
    port: int
    bin: Path
    run_as: str | None

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def log(self) -> Path:
        return self.root / "server.log"

    def url(self, database: str = "postgres", password: str = PASSWORD) -> str:
        return f"postgresql://{USER}:{password}@127.0.0.1:{self.port}/{database}"

    def _run(self, tool: str, *args: str, timeout: float = 120) -> str:
        command = [str(self.bin / tool), *args]
        if self.run_as:
            command = ["runuser", "-u", self.run_as, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              cwd=self.root)
        if done.returncode:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{tool} failed ({done.returncode}): {done.stderr[-2000:]}\n{log}")
        return done.stdout

    def start(self) -> None:
        password_file = self.root / "password"
        password_file.write_text(PASSWORD + "\n")
        self._own(self.root)
        self._run("initdb", "-D", str(self.data), "-U", USER, "--pwfile", str(password_file),
                  "-A", "scram-sha-256", "-E", "UTF8", "--locale", "C.UTF-8", "--no-sync")
        # Durability settings off: this cluster lives for one test session; what the tests
        # check (uniqueness, locks, visibility across connections) does not depend on fsync.
        options = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
                   "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
                   "-c max_connections=200 -c shared_buffers=32MB")
        self._run("pg_ctl", "start", "-w", "-t", "60", "-D", str(self.data), "-l", str(self.log),
                  "-o", options)

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "immediate", "-w",
                      timeout=60)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def database(self) -> str:
        """A new empty database; returns its URL."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def _own(self, path: Path) -> None:
        if self.run_as:
            shutil.chown(path, user=self.run_as)


def start_cluster(temp: str | None = None) -> Cluster:
    """Start a cluster as an unprivileged user, its files in a new folder of `temp` (default:
    tempfile's); RuntimeError with INSTALL_HINT if absent. The user must reach that folder: a
    test run gives the system's temporary folder, as its own tempfile points at pytest's
    folder, which only its own user may enter (tests/conftest.py)."""
    folder = server_bin()
    if folder is None:
        raise RuntimeError(INSTALL_HINT)
    run_as = UNPRIVILEGED if os.geteuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="treadwise-pg-", dir=temp))
    root.chmod(0o755)
    cluster = Cluster(root=root, port=free_port(), bin=folder, run_as=run_as)
    try:
        cluster.start()
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return cluster
