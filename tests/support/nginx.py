"""The shipped deploy/nginx.conf run by a real nginx on loopback ports, in front of one app."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.webapp import REPO, free_port

# Where .ci/install-system unpacks Debian's nginx binary (no service is installed or started).
CACHE_HOME = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
UNPACKED = CACHE_HOME / "treadwise-nginx" / "usr" / "sbin" / "nginx"
INSTALL_HINT = ("nginx was not found (on PATH, /usr/sbin/nginx or the unpacked copy in "
                f"{UNPACKED.parent.parent.parent}). Get it with `sh .ci/install-system`, which "
                "unpacks Debian's binary without installing a service, then run the tests again.")
SHIPPED = REPO / "deploy" / "nginx.conf"


def find_nginx() -> str:
    for candidate in (shutil.which("nginx"), "/usr/sbin/nginx", str(UNPACKED)):
        if candidate and Path(candidate).exists():
            return candidate
    raise RuntimeError(INSTALL_HINT)


@dataclass
class Proxy:
    http: str  # http://127.0.0.1:PORT/ (redirects)
    https: str  # https://127.0.0.1:PORT/ (the self-signed certificate below)
    error_log: Path


def loopback_config(shipped: str, app_port: int, http_port: int, https_port: int,
                    folder: Path) -> str:
    """The shipped server configuration with only its addresses and paths moved here: the
    upstream is the one app, the listens are loopback ports, the certificate a fresh one."""
    config = re.sub(r"(?m)^\s*server app-b:7860[^\n]*\n", "", shipped)
    config = config.replace("server app-a:7860", f"server 127.0.0.1:{app_port}")
    config = re.sub(r"(?m)^\s*listen \[::\]:\d+[^\n]*\n", "", config)
    config = config.replace("listen 80;", f"listen 127.0.0.1:{http_port};")
    config = config.replace("listen 443 ssl;", f"listen 127.0.0.1:{https_port} ssl;")
    config = config.replace("/etc/nginx/certs/", f"{folder}/")
    config = config.replace("/var/log/nginx/access.log", str(folder / "access.log"))
    user = "user root;\n" if os.geteuid() == 0 else ""  # workers read the test's temp files
    temp = " ".join(f"{kind}_temp_path {folder / kind};" for kind in
                    ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return (f"{user}daemon off;\nworker_processes 1;\npid {folder / 'nginx.pid'};\n"
            f"error_log {folder / 'error.log'} warn;\nevents {{ worker_connections 256; }}\n"
            f"http {{\n{temp}\naccess_log {folder / 'access.log'};\n{config}\n}}\n")


def self_signed(folder: Path) -> None:
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-keyout", str(folder / "privkey.pem"),
                    "-out", str(folder / "fullchain.pem")], check=True, capture_output=True,
                   timeout=60)


@contextmanager
def serve_nginx(app_url: str, folder: Path) -> Iterator[Proxy]:
    """nginx with the shipped configuration in front of the app at `app_url`."""
    binary = find_nginx()
    folder.mkdir(parents=True, exist_ok=True)
    self_signed(folder)
    http_port, https_port = free_port(), free_port()
    app_port = int(app_url.rstrip("/").rsplit(":", 1)[1])
    conf = folder / "nginx.conf"
    conf.write_text(loopback_config(SHIPPED.read_text(), app_port, http_port, https_port,
                                    folder))
    checked = subprocess.run([binary, "-t", "-p", str(folder), "-c", str(conf)],
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stderr
    process = subprocess.Popen([binary, "-p", str(folder), "-c", str(conf)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proxy = Proxy(f"http://127.0.0.1:{http_port}/", f"https://127.0.0.1:{https_port}/",
                  folder / "error.log")
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(proxy.https, verify=False, timeout=5)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    why = proxy.error_log.read_text()
                    raise AssertionError(f"nginx did not start: {why}") from None
                time.sleep(0.2)
        yield proxy
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
