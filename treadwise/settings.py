"""Run-time settings read once from the environment and passed down explicitly."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

MAX_ITERATIONS = 5
DEFAULT_MAX_INPUT_CHARS = 4000
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
PUBLIC_SESSION_RATE = 10.0  # messages per minute per session, when the app faces the network
CONSISTENCY_APPROACHES = ("react", "steps", "program")
MIN_SECRET_CHARS = 16
# on: routed tools and the compact prompt; compact: the compact prompt with every tool;
# off: every tool and the business profile in the system prompt (the requests of before).
RoutingMode = Literal["on", "compact", "off"]
ROUTING_MODES: tuple[str, ...] = get_args(RoutingMode)
# Variables read where a model, a tool or a cluster client is built, from Settings.environment:
# keys and endpoints named by their providers (and Dask), and our own knobs of one provider.
PROVIDER_VARIABLES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GOOGLE_API_KEY", "GEMINI_API_KEY",
                      "TREADWISE_GEMINI_BASE_URL", "TAVILY_API_KEY", "TREADWISE_TAVILY_BASE_URL",
                      "TREADWISE_LOCAL_MAX_TOKENS", "DASK_SCHEDULER_ADDRESS")


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be a number, got {raw!r}") from exc


def _days(env: Mapping[str, str], name: str) -> float:
    days = _float(env, name, 0.0)
    if days < 0:
        raise ValueError(f"{name} must be 0 (keep everything) or a number of days")
    return days


def _flag(env: Mapping[str, str], name: str) -> bool | None:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return None
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name} must be 1 or 0, got {raw!r}")


def _names(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in env.get(name, "").split(",") if part.strip())


def _users(raw: str) -> tuple[tuple[str, str], ...]:
    """TREADWISE_AUTH: user:password, or several separated by commas."""
    users = []
    for pair in filter(None, (part.strip() for part in raw.split(","))):
        user, sep, password = pair.partition(":")
        if not sep or not user or not password:
            raise ValueError("TREADWISE_AUTH must look like user:password (or several, "
                             "separated by commas)")
        users.append((user, password))
    return tuple(users)
def _proxies(env: Mapping[str, str]) -> tuple[str, ...]:
    """TREADWISE_TRUSTED_PROXIES: addresses or networks (CIDR) whose X-Forwarded-For counts."""
    proxies = _names(env, "TREADWISE_TRUSTED_PROXIES")
    for proxy in proxies:
        try:
            ipaddress.ip_network(proxy, strict=False)
        except ValueError:
            raise ValueError("TREADWISE_TRUSTED_PROXIES must list IP addresses or networks "
                             f"such as 127.0.0.1 or 10.0.0.0/8 (got {proxy!r})") from None
    return proxies


def _secret(env: Mapping[str, str]) -> str | None:
    raw = env.get("TREADWISE_SECRET_KEY", "").strip()
    if raw and len(raw) < MIN_SECRET_CHARS:
        raise ValueError(f"TREADWISE_SECRET_KEY must be at least {MIN_SECRET_CHARS} characters")
    return raw or None


def _database_url(env: Mapping[str, str]) -> str | None:
    raw = env.get("TREADWISE_DATABASE_URL", "").strip()
    if not raw:
        return None
    if not raw.startswith(("postgresql://", "postgres://")):
        # Only the scheme is quoted back: the rest may hold a password.
        scheme = raw.partition("://")[0][:20] if "://" in raw else "no scheme"
        raise ValueError("TREADWISE_DATABASE_URL must be a postgresql:// URL "
                         f"(got {scheme!r})")
    return raw


def _math_timeout(env: Mapping[str, str]) -> float:
    value = _float(env, "TREADWISE_MATH_TIMEOUT_S", 5.0)
    if not 0 < value <= 600:
        raise ValueError("TREADWISE_MATH_TIMEOUT_S must be between 0 and 600 seconds, got "
                         f"{env.get('TREADWISE_MATH_TIMEOUT_S', '').strip()!r}")
    return value


def _threads(env: Mapping[str, str]) -> int:
    raw = env.get("TREADWISE_LOCAL_THREADS", "").strip()
    return int(raw) if raw.isdigit() else 0


def _path(env: Mapping[str, str], name: str) -> Path | None:
    raw = env.get(name, "").strip()
    return Path(raw) if raw else None


def process_environment() -> Mapping[str, str]:
    """The process environment: settings.py is the one module that reads it (a test holds that)."""
    return os.environ


def child_environment(**overrides: str) -> dict[str, str]:
    """The environment a child process gets: this process's, with `overrides` on top."""
    return {**os.environ, **overrides}


@dataclass(frozen=True)
class Settings:
    """Everything configurable about a TreadWise process: field `x` is variable TREADWISE_X."""

    data_dir: Path = Path("data")
    timeout_s: float = 60.0
    max_retries: int = 2
    max_retry_wait_s: float = 20.0
    rate_limit_rps: float = 0.0
    max_input_chars: int = DEFAULT_MAX_INPUT_CHARS
    host: str = "127.0.0.1"
    port: int = 7860
    auth: tuple[tuple[str, str], ...] = ()  # (user, password) pairs; empty: no login page
    mcp_config: Path | None = None
    # Guard rails for a page the network can reach (see README, "Deploying publicly").
    public: bool = False
    public_models: tuple[str, ...] = ("offline",)
    admins: tuple[str, ...] = ()  # users of `auth` who may sweep and name any model
    session_rate: float = 0.0  # messages per minute per session; 0: no limit
    # Reverse proxies whose X-Forwarded-For names the client; nobody else's header counts.
    trusted_proxies: tuple[str, ...] = ()
    # Signs conversation links; unset, one is generated into the data dir (per replica).
    secret_key: str | None = field(default=None, repr=False)
    # postgresql://user:password@host/db: memory, leads and feedback in PostgreSQL, shared by
    # every replica. Kept out of repr so a logged Settings never shows the password.
    database_url: str | None = field(default=None, repr=False)
    # self-consistency: attempts per question, their approaches in turn, model calls per turn
    consistency_k: int = 3
    consistency_approaches: tuple[str, ...] = CONSISTENCY_APPROACHES
    consistency_budget: int = 10
    # Leads, questions and conversations older than this many days are deleted (when the app
    # or CLI starts, and by `python -m treadwise leads purge`); 0 keeps them.
    retention_days: float = 0.0
    # Tool routing and the compact prompt (agent/routing.py): on, compact or off.
    routing: str = "on"
    # The model spec used when none is named (CLI, app picker); never a paid one by default.
    model: str = "offline"
    # A folder of extra persona files beside the packaged ones.
    personas_dir: Path | None = None
    # Wall-clock limit of one math evaluation in the sandbox.
    math_timeout_s: float = 5.0
    # llama.cpp threads of a local model; 0: half the cores.
    local_threads: int = 0
    # Keys and endpoints of providers and tools (OPENAI_API_KEY, OPENAI_BASE_URL,
    # GOOGLE_API_KEY, TAVILY_API_KEY, TREADWISE_LOCAL_MAX_TOKENS, ... see PROVIDER_VARIABLES),
    # passed down to whatever builds a model or a tool. By default the live process
    # environment, so a key exported while the app runs counts at the next model built.
    environment: Mapping[str, str] = field(default_factory=process_environment, repr=False,
                                           compare=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = process_environment() if env is None else env
        auth = _users(env.get("TREADWISE_AUTH", ""))
        host = env.get("TREADWISE_HOST", "").strip() or "127.0.0.1"
        public = _flag(env, "TREADWISE_PUBLIC")
        if public is None:
            public = host not in LOOPBACK_HOSTS
        return cls(
            data_dir=Path(env.get("TREADWISE_DATA_DIR", "").strip() or "data").resolve(),
            timeout_s=_float(env, "TREADWISE_TIMEOUT_S", 60.0),
            max_retries=int(_float(env, "TREADWISE_MAX_RETRIES", 2)),
            max_retry_wait_s=_float(env, "TREADWISE_MAX_RETRY_WAIT_S", 20.0),
            rate_limit_rps=_float(env, "TREADWISE_RATE_LIMIT_RPS", 0.0),
            max_input_chars=int(_float(env, "TREADWISE_MAX_INPUT_CHARS", DEFAULT_MAX_INPUT_CHARS)),
            host=host,
            port=int(_float(env, "TREADWISE_PORT", 7860)),
            auth=auth,
            mcp_config=_path(env, "TREADWISE_MCP_CONFIG"),
            public=public,
            public_models=_names(env, "TREADWISE_PUBLIC_MODELS") or ("offline",),
            admins=_names(env, "TREADWISE_ADMINS") or tuple(user for user, _ in auth),
            session_rate=_float(env, "TREADWISE_SESSION_RATE",
                                PUBLIC_SESSION_RATE if public else 0.0),
            trusted_proxies=_proxies(env),
            secret_key=_secret(env),
            database_url=_database_url(env),
            consistency_k=int(_float(env, "TREADWISE_CONSISTENCY_K", 3)),
            consistency_approaches=tuple(
                env.get("TREADWISE_CONSISTENCY_APPROACHES", "").replace(",", " ").split())
            or CONSISTENCY_APPROACHES,
            consistency_budget=int(_float(env, "TREADWISE_CONSISTENCY_BUDGET", 10)),
            retention_days=_days(env, "TREADWISE_RETENTION_DAYS"),
            routing=env.get("TREADWISE_ROUTING", "").strip().lower() or "on",
            model=env.get("TREADWISE_MODEL", "").strip() or "offline",
            personas_dir=_path(env, "TREADWISE_PERSONAS_DIR"),
            math_timeout_s=_math_timeout(env),
            local_threads=_threads(env),
            environment=env,
        )

    def ensure_data_dir(self) -> Path:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        return self.data_dir
