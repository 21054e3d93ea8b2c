"""Run-time settings read once from the environment and passed down explicitly."""

from __future__ import annotations

import dataclasses
import ipaddress
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import BeforeValidator, ValidationError, ValidationInfo
from pydantic_core import PydanticUseDefault
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)
from pydantic_settings.sources.utils import parse_env_vars

MAX_ITERATIONS = 5
DEFAULT_MAX_INPUT_CHARS = 4000
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
PUBLIC_SESSION_RATE = 10.0  # messages per minute per session, when the app faces the network
CONSISTENCY_APPROACHES = ("react", "steps", "program")
MIN_SECRET_CHARS = 16
ENV_PREFIX = "TREADWISE_"
# on: routed tools and the compact prompt; compact: the compact prompt with every tool;
# off: every tool and the business profile in the system prompt (the requests of before).
RoutingMode = Literal["on", "compact", "off"]
ROUTING_MODES: tuple[str, ...] = get_args(RoutingMode)
# Variables read where a model, a tool or a cluster client is built, from Settings.environment:
# keys and endpoints named by their providers (and Dask), and our own knobs of one provider.
PROVIDER_VARIABLES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GOOGLE_API_KEY", "GEMINI_API_KEY",
                      "TREADWISE_GEMINI_BASE_URL", "TAVILY_API_KEY", "TREADWISE_TAVILY_BASE_URL",
                      "TREADWISE_LOCAL_MAX_TOKENS", "TREADWISE_LOCAL_STATE_DIR",
                      "DASK_SCHEDULER_ADDRESS")


def variable(name: str) -> str:
    """The environment variable of setting `name`: TREADWISE_ and the name in capitals."""
    return ENV_PREFIX + name.upper()


def _raw(value: object) -> str | None:
    """The stripped text of a variable, None for a value that is not text (a default), and
    the field's default for a blank one."""
    if not isinstance(value, str):
        return None
    if not value.strip():
        raise PydanticUseDefault()
    return value.strip()


def _variable(info: ValidationInfo) -> str:
    """The environment variable of the field being validated."""
    return variable(info.field_name or "")


def _number(value: object, info: ValidationInfo) -> object:
    raw = _raw(value)
    if raw is None:
        return value
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"{_variable(info)} must be a number, got {raw!r}") from None


def _whole(value: object, info: ValidationInfo) -> object:
    """A count read as a number and truncated, as int(float(...)) always did here."""
    number = _number(value, info)
    if isinstance(number, float) and not math.isfinite(number):
        raise ValueError(f"{_variable(info)} must be a whole number, got {_raw(value)!r}")
    return int(number) if isinstance(number, float) else number


def _days(value: object, info: ValidationInfo) -> object:
    days = _number(value, info)
    if isinstance(days, float) and days < 0:
        raise ValueError(f"{_variable(info)} must be 0 (keep everything) "
                         "or a number of days")
    return days


def _math_timeout(value: object, info: ValidationInfo) -> object:
    seconds = _number(value, info)
    if isinstance(seconds, float) and not 0 < seconds <= 600:
        raise ValueError(f"{_variable(info)} must be between 0 and 600 seconds, "
                         f"got {_raw(value)!r}")
    return seconds


def _positive(value: object, info: ValidationInfo) -> object:
    number = _number(value, info)
    if isinstance(number, float) and not (math.isfinite(number) and number > 0):
        raise ValueError(f"{_variable(info)} must be a number above 0, got {_raw(value)!r}")
    return number


def _flag(value: object, info: ValidationInfo) -> object:
    raw = _raw(value)
    if raw is None:
        return value
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{_variable(info)} must be 1 or 0, got {raw.lower()!r}")


def _word(value: object) -> object:
    return _raw(value) or value


def _lower_word(value: object) -> object:
    raw = _raw(value)
    return value if raw is None else raw.lower()


def _path(value: object) -> object:
    raw = _raw(value)
    return value if raw is None else Path(raw)


def _threads(value: object) -> object:
    """Anything but a whole number keeps the default (half the cores), as before."""
    raw = _raw(value)
    if raw is None:
        return value
    if not raw.isdigit():
        raise PydanticUseDefault()
    return int(raw)


def _names(value: object) -> object:
    """Comma-separated names; none at all keeps the default."""
    if not isinstance(value, str):
        return value
    names = tuple(part.strip() for part in value.split(",") if part.strip())
    if not names:
        raise PydanticUseDefault()
    return names


def _approaches(value: object) -> object:
    """Approaches separated by commas or spaces."""
    return _names(",".join(value.replace(",", " ").split())) if isinstance(value, str) else value


def _users(value: object) -> object:
    """TREADWISE_AUTH: user:password, or several separated by commas."""
    if not isinstance(value, str):
        return value
    users = []
    for pair in filter(None, (part.strip() for part in value.split(","))):
        user, sep, password = pair.partition(":")
        if not sep or not user or not password:
            raise ValueError("TREADWISE_AUTH must look like user:password (or several, "
                             "separated by commas)")
        users.append((user, password))
    return tuple(users)


def _proxies(value: object) -> object:
    """TREADWISE_TRUSTED_PROXIES: addresses or networks (CIDR) whose X-Forwarded-For counts."""
    if not isinstance(value, str):
        return value
    proxies = _names(value)  # a tuple of the names in the text
    for proxy in proxies if isinstance(proxies, tuple) else ():
        try:
            ipaddress.ip_network(proxy, strict=False)
        except ValueError:
            raise ValueError("TREADWISE_TRUSTED_PROXIES must list IP addresses or networks "
                             f"such as 127.0.0.1 or 10.0.0.0/8 (got {proxy!r})") from None
    return proxies


def _secret(value: object) -> object:
    raw = _raw(value)
    if raw is not None and len(raw) < MIN_SECRET_CHARS:
        raise ValueError(f"TREADWISE_SECRET_KEY must be at least {MIN_SECRET_CHARS} characters")
    return value if raw is None else raw


def _database_url(value: object) -> object:
    raw = _raw(value)
    if raw is None:
        return value
    if not raw.startswith(("postgresql://", "postgres://")):
        # Only the scheme is quoted back: the rest may hold a password.
        scheme = raw.partition("://")[0][:20] if "://" in raw else "no scheme"
        raise ValueError("TREADWISE_DATABASE_URL must be a postgresql:// URL "
                         f"(got {scheme!r})")
    return raw


Number = Annotated[float, BeforeValidator(_number)]
Whole = Annotated[int, BeforeValidator(_whole)]
Word = Annotated[str, BeforeValidator(_word)]
OptionalPath = Annotated[Path | None, BeforeValidator(_path)]
# NoDecode: a list is written with commas, never as JSON.
Names = Annotated[tuple[str, ...], NoDecode, BeforeValidator(_names)]


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
    # A conversation link stops opening this many days after it was made.
    link_days: float = 30.0
    # A signed-in session ends after this many minutes without a request from its browser.
    session_idle_minutes: float = 60.0
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
        """The settings of `env` (default: the process environment), read and checked by
        EnvironmentSettings; a bad value raises ValueError with one line naming its variable."""
        env = process_environment() if env is None else env
        return cls(**EnvironmentSettings.read(env).settings_fields(), environment=env)

    def ensure_data_dir(self) -> Path:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        return self.data_dir


SETTINGS_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Settings)
                     if f.default is not dataclasses.MISSING}


def _default(name: str) -> Any:
    """The default of Settings field `name`: the dataclass is the one place defaults live."""
    return SETTINGS_DEFAULTS[name]


class _MappingSource(EnvSettingsSource):
    """pydantic-settings' environment source over a given mapping instead of os.environ."""

    def __init__(self, settings_cls: type[BaseSettings], env: Mapping[str, str]) -> None:
        self._env = env  # read by _load_env_vars, which the base __init__ calls
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        # Our variables are all capitals and matched exactly, as the environment is on Linux:
        # pydantic-settings matches without case, so the other spellings are left out here.
        env = {key: value for key, value in self._env.items() if key == key.upper()}
        return parse_env_vars(env, self.case_sensitive, self.env_ignore_empty,
                              self.env_parse_none_str)


class EnvironmentSettings(BaseSettings):
    """The TREADWISE_ variables, one field per Settings field (but `environment`), read and
    validated by pydantic-settings. None marks a setting whose default depends on another."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_ignore_empty=True,
                                      extra="ignore", frozen=True)

    data_dir: Annotated[Path, BeforeValidator(_path)] = _default("data_dir")
    timeout_s: Number = _default("timeout_s")
    max_retries: Whole = _default("max_retries")
    max_retry_wait_s: Number = _default("max_retry_wait_s")
    rate_limit_rps: Number = _default("rate_limit_rps")
    max_input_chars: Whole = _default("max_input_chars")
    host: Word = _default("host")
    port: Whole = _default("port")
    auth: Annotated[tuple[tuple[str, str], ...], NoDecode,
                    BeforeValidator(_users)] = _default("auth")
    mcp_config: OptionalPath = _default("mcp_config")
    public: Annotated[bool | None, BeforeValidator(_flag)] = None  # None: not on loopback
    public_models: Names = _default("public_models")
    admins: Names = _default("admins")  # empty: every user of `auth`
    # None: PUBLIC_SESSION_RATE on a public page, else no limit.
    session_rate: Annotated[float | None, BeforeValidator(_number)] = None
    trusted_proxies: Annotated[tuple[str, ...], NoDecode,
                               BeforeValidator(_proxies)] = _default("trusted_proxies")
    secret_key: Annotated[str | None, BeforeValidator(_secret)] = _default("secret_key")
    link_days: Annotated[float, BeforeValidator(_positive)] = _default("link_days")
    session_idle_minutes: Annotated[float, BeforeValidator(_positive)] = _default(
        "session_idle_minutes")
    database_url: Annotated[str | None,
                            BeforeValidator(_database_url)] = _default("database_url")
    consistency_k: Whole = _default("consistency_k")
    consistency_approaches: Annotated[tuple[str, ...], NoDecode, BeforeValidator(
        _approaches)] = _default("consistency_approaches")
    consistency_budget: Whole = _default("consistency_budget")
    retention_days: Annotated[float, BeforeValidator(_days)] = _default("retention_days")
    routing: Annotated[str, BeforeValidator(_lower_word)] = _default("routing")
    model: Word = _default("model")
    personas_dir: OptionalPath = _default("personas_dir")
    math_timeout_s: Annotated[float, BeforeValidator(_math_timeout)] = _default("math_timeout_s")
    local_threads: Annotated[int, BeforeValidator(_threads)] = _default("local_threads")

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings],
                                   init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Only what read() passes: a mapping given there (a test's, a child's) must never be
        # topped up from os.environ, a .env file or a secrets folder.
        return (init_settings,)

    @classmethod
    def read(cls, env: Mapping[str, str]) -> EnvironmentSettings:
        """The settings of `env`; ValueError with one line naming every bad variable."""
        try:
            return cls(**_MappingSource(cls, env)())
        except ValidationError as exc:
            raise ValueError(_one_line(exc)) from None

    @classmethod
    def variables(cls) -> dict[str, str]:
        """Field name -> the environment variable it is read from."""
        return {name: variable(name) for name in cls.model_fields}

    def settings_fields(self) -> dict[str, Any]:
        """Keyword arguments of Settings, with the defaults that depend on other settings."""
        fields = self.model_dump()
        if self.public is None:
            fields["public"] = self.host not in LOOPBACK_HOSTS
        if self.session_rate is None:
            fields["session_rate"] = PUBLIC_SESSION_RATE if fields["public"] else 0.0
        fields["admins"] = self.admins or tuple(user for user, _ in self.auth)
        fields["data_dir"] = self.data_dir.resolve()
        return fields


def _one_line(exc: ValidationError) -> str:
    """Our validators' own messages, or pydantic's naming the variable, on one line."""
    messages = []
    for error in exc.errors():
        if error["type"] == "value_error":
            messages.append(str(error["ctx"]["error"]))
        else:
            name = str(error["loc"][0]) if error["loc"] else "?"
            messages.append(f"{variable(name)}: {error['msg']}")
    return "; ".join(messages)
