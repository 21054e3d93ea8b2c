"""The shipped deployment as files: nginx serves HTTPS only (HTTP redirects), with a certificate
the operator fills in, the security headers, sign-in attempts limited and the client named one
hop back; compose publishes nginx's 443 and 80 alone on the host's interfaces."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
NGINX = ROOT / "deploy" / "nginx.conf"
COMPOSE = ROOT / "deploy" / "compose.yaml"
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
