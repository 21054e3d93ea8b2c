"""The shipped deployment as files: nginx serves HTTPS only (HTTP redirects), with a certificate
the operator fills in, the security headers, sign-in attempts limited and the client named one
hop back; compose publishes nginx's 443 and 80 alone on the host's interfaces."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml

from tests.support.nginx import Proxy
from tests.support.webapp import serve_in_process
from treadwise.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
NGINX = ROOT / "deploy" / "nginx.conf"
COMPOSE = ROOT / "deploy" / "compose.yaml"
USERS = "ana:ana-pw-1,bob:bob-pw-2"
TOKEN_RE = re.compile(r'#[^\n]*|"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|[{};]|[^\s{};"\'#]+')


@dataclass
class Directive:
    name: str
    args: list[str]
    block: list[Directive] | None = None

    def all(self, name: str) -> list[Directive]:
        return [d for d in self.block or [] if d.name == name]

    def one(self, name: str) -> Directive:
        (found,) = self.all(name)
        return found

    def names(self) -> set[str]:
        """Every directive's name in this block and the blocks inside it."""
        return {n for d in self.block or [] for n in {d.name} | d.names()}


def parse_nginx(text: str) -> Directive:
    """nginx's configuration syntax: directives ending in `;`, blocks in braces, # comments."""
    root = Directive("main", [], [])
    stack, words = [root], []
    for token in TOKEN_RE.findall(text):
        if token.startswith("#"):
            continue
        if token in (";", "{"):
            name, *args = [w[1:-1] if w[:1] in "\"'" else w for w in words]
            directive = Directive(name, args, [] if token == "{" else None)
            stack[-1].block.append(directive)  # type: ignore[union-attr]
            if token == "{":
                stack.append(directive)
            words = []
        elif token == "}":
            assert not words, f"unterminated directive {words}"
            stack.pop()
        else:
            words.append(token)
    assert len(stack) == 1 and not words, "unbalanced braces"
    return root


def servers() -> tuple[Directive, Directive]:
    """(the port 80 server, the HTTPS server) of the shipped nginx.conf."""
    config = parse_nginx(NGINX.read_text())
    found = config.all("server")
    plain = [s for s in found if ["80"] in [d.args for d in s.all("listen")]]
    tls = [s for s in found if ["443", "ssl"] in [d.args for d in s.all("listen")]]
    assert len(plain) == 1 and len(tls) == 1 and len(found) == 2
    return plain[0], tls[0]


def headers(server: Directive) -> dict[str, str]:
    added = {}
    for directive in server.all("add_header"):
        name, value, *flags = directive.args
        assert flags == ["always"], f"{name} is not sent on error pages too"
        added[name.lower()] = value
    return added


def test_http_only_redirects_to_https():
    plain, _ = servers()
    (location,) = plain.all("location")
    assert location.args == ["/"] and location.one("return").args == \
        ["301", "https://$host$request_uri"]
    assert "proxy_pass" not in plain.names(), "plain HTTP reaches the app"


def test_https_serves_the_certificate_the_operator_fills_in():
    _, tls = servers()
    assert ["[::]:443", "ssl"] in [d.args for d in tls.all("listen")]
    certificate, key = tls.one("ssl_certificate").args, tls.one("ssl_certificate_key").args
    assert certificate == ["/etc/nginx/certs/fullchain.pem"]
    assert key == ["/etc/nginx/certs/privkey.pem"]
    assert set(tls.one("ssl_protocols").args) <= {"TLSv1.2", "TLSv1.3"}


def test_https_sends_the_security_headers():
    _, tls = servers()
    sent = headers(tls)
    hsts = re.fullmatch(r"max-age=(\d+); includeSubDomains", sent["strict-transport-security"])
    assert hsts and int(hsts.group(1)) >= 180 * 86400
    policy = dict(part.strip().split(" ", 1) for part in
                  sent["content-security-policy"].split(";"))
    assert policy["frame-ancestors"] == "'none'" and policy["default-src"] == "'self'"
    assert policy["object-src"] == "'none'" and policy["base-uri"] == "'self'"
    assert sent["x-content-type-options"] == "nosniff"
    assert sent["referrer-policy"] == "no-referrer" and sent["x-frame-options"] == "DENY"
    # nginx drops every inherited add_header (and proxy_set_header) in a block that sets one.
    for location in tls.all("location"):
        assert not location.all("add_header") and not location.all("proxy_set_header")


def test_sign_in_is_rate_limited_and_the_client_is_named_by_nginx_alone():
    config = parse_nginx(NGINX.read_text())
    (zone,) = config.all("limit_req_zone")
    assert zone.args[0] == "$binary_remote_addr"
    name = next(a.split("=", 1)[1].split(":")[0] for a in zone.args if a.startswith("zone="))
    rate = next(a for a in zone.args if a.startswith("rate="))
    assert re.fullmatch(r"rate=\d+r/m", rate), "at most some tries a minute"
    _, tls = servers()
    login = next(d for d in tls.all("location") if "/login" in " ".join(d.args))
    assert login.args[0] == "~" and all(re.search(login.args[1], path) for path in
                                        ("/login", "/login/"))
    assert login.one("limit_req").args[0] == f"zone={name}"
    assert login.one("proxy_pass").args == ["http://treadwise"]
    assert config.one("limit_req_status").args == ["429"]
    forwarded = {d.args[0]: d.args[1] for d in tls.all("proxy_set_header")}
    assert forwarded["X-Forwarded-For"] == "$remote_addr", "the client's header is replaced"
    assert forwarded["X-Forwarded-Proto"] == "$scheme"
    assert config.one("upstream").all("ip_hash"), "sessions are sticky"


def test_compose_publishes_nginx_alone():
    compose = yaml.safe_load(COMPOSE.read_text())
    services = compose["services"]
    published = {name: service.get("ports", []) for name, service in services.items()
                 if isinstance(service, dict)}
    assert sorted(published.pop("lb")) == ["443:443", "80:80"]
    for name, ports in published.items():
        assert all(str(port).startswith("127.0.0.1:") for port in ports), (name, ports)
    lb = services["lb"]
    assert "./certs:/etc/nginx/certs:ro" in lb["volumes"]
    address = lb["networks"]["treadwise"]["ipv4_address"]
    replica = compose["x-replica"]["environment"]
    assert replica["TREADWISE_TRUSTED_PROXIES"] == address
    assert "deploy/certs/" in (ROOT / ".gitignore").read_text().split()


@pytest.fixture
def behind_nginx(tmp_path: Path) -> Iterator[Proxy]:
    """A public app with a login, trusting only 127.0.0.1, behind the shipped nginx.conf."""
    from tests.support.nginx import find_nginx, serve_nginx

    try:
        find_nginx()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    env = {"TREADWISE_PUBLIC": "1", "TREADWISE_AUTH": USERS, "TREADWISE_ADMINS": "ana",
           "TREADWISE_TRUSTED_PROXIES": "127.0.0.1"}
    settings = dataclasses.replace(Settings.from_env(env), data_dir=tmp_path / "data")
    with serve_in_process(settings) as url, serve_nginx(url, tmp_path / "nginx") as proxy:
        yield proxy


@pytest.mark.slow
def test_the_shipped_nginx_redirects_sends_the_headers_and_limits_sign_in(behind_nginx):
    proxy = behind_nginx
    redirect = httpx.get(f"{proxy.http}?thread=not-in-the-log", follow_redirects=False)
    assert redirect.status_code == 301
    assert redirect.headers["location"] == "https://127.0.0.1/?thread=not-in-the-log"
    page = httpx.get(f"{proxy.https}?thread=not-in-the-log", verify=False, timeout=60)
    assert page.status_code == 200 and "<html" in page.text.lower()
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert page.headers["strict-transport-security"].startswith("max-age=31536000")
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "no-referrer"
    signed = httpx.post(f"{proxy.https}login", data={"username": "bob", "password": "bob-pw-2"},
                        headers={"X-Forwarded-Proto": "http", "X-Forwarded-For": "10.9.9.9"},
                        verify=False, timeout=60)
    assert signed.status_code == 200
    cookies = signed.headers.get_list("set-cookie")
    assert cookies and all("; Secure" in c for c in cookies), "nginx said https; the app must"
    tries = [httpx.post(f"{proxy.https}login", data={"username": "bob", "password": f"g{n}"},
                        verify=False, timeout=60) for n in range(12)]
    assert any(t.status_code == 429 and "<center>nginx</center>" in t.text for t in tries), \
        [t.status_code for t in tries]
    log = (proxy.error_log.parent / "access.log").read_text()
    assert "POST /login" in log and "not-in-the-log" not in log


@pytest.mark.browser
def test_the_page_works_under_the_shipped_security_headers(behind_nginx, chromium):
    """Chromium over HTTPS through nginx: sign in, chat, and no script or style refused by the
    content security policy."""
    from playwright.sync_api import sync_playwright

    from tests.support.chromium import CHROMIUM_ARGS, TIMEOUT_MS

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(ignore_https_errors=True).new_page()
            page.set_default_timeout(TIMEOUT_MS)
            refused: list[str] = []
            page.on("console", lambda m: refused.append(m.text)
                    if "Content Security Policy" in m.text else None)
            page.goto(behind_nginx.https)
            page.get_by_label("username").fill("bob")
            page.get_by_label("password").fill("bob-pw-2")
            page.get_by_role("button", name="Login").click()
            page.locator("#message textarea").fill("Add 5 and 4, then square the result")
            page.locator("#send").click()
            page.locator("#chat").get_by_text("81").first.wait_for()
        finally:
            browser.close()
    assert refused == []
