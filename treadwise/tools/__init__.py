"""Tool registry: named toolsets of LangChain tools; built-ins load exactly like plugins."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from treadwise.plugins import Registry
from treadwise.settings import process_environment

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

    from treadwise.safemath import MathEngine
    from treadwise.settings import Settings
    from treadwise.storage.leads import LeadStore
    from treadwise.storage.plots import SharedPlots

ENTRY_POINT_GROUP = "treadwise.tools"
DEFAULT_TOOLSETS = ("math", "business")

Toolset = Callable[["ToolContext"], list["BaseTool"]]
TOOLSETS: Registry[Toolset] = Registry(ENTRY_POINT_GROUP)


@dataclass
class ToolContext:
    """What tools may touch: injected, never read from globals.

    `case_dir`, when given, names the data dir per context (thread): the experiment harness
    runs every case through one set of tools, each case writing to its own folder.
    """

    data_dir: Path
    mcp_config: Path | None = None
    # Other data files than the packaged ones (tests, embedding apps); None means the default.
    business_profile: Path | None = None
    tire_catalogue: Path | None = None
    coverage: Path | None = None
    # A MathEngine of the caller's (tests, benchmarks); None means the process-wide one.
    math_engine: MathEngine | None = None
    # Seconds a math job may take (Settings.math_timeout_s); None means the engine's own.
    math_timeout_s: float | None = None
    database_url: str | None = field(default=None, repr=False)
    # Keys and endpoints of tools (TAVILY_API_KEY, ...), as Settings.environment holds them.
    environment: Mapping[str, str] = field(default_factory=process_environment, repr=False)
    case_dir: ContextVar[Path | None] | None = None
    # The conversation memory (a checkpointer), for the erasure tool to read what a
    # conversation gave; the agent sets it.
    memory: Any = field(default=None, repr=False)

    @classmethod
    def of(cls, settings: Settings) -> ToolContext:
        """The context a product's settings give: data dir, MCP config, database, environment
        and the math time limit."""
        return cls(settings.data_dir, mcp_config=settings.mcp_config,
                   database_url=settings.database_url, environment=settings.environment,
                   math_timeout_s=settings.math_timeout_s)

    @property
    def current_dir(self) -> Path:
        """Where the running tool writes: this context's case folder, else data_dir."""
        case = self.case_dir.get() if self.case_dir is not None else None
        return case or self.data_dir

    @cached_property
    def _shared_store(self) -> LeadStore:
        from treadwise.storage import open_store

        return open_store(self.data_dir, self.database_url)

    @property
    def store(self) -> LeadStore:
        """The shared store; in a case folder, that case's own SQLite file."""
        if self.case_dir is None or self.case_dir.get() is None:
            return self._shared_store
        from treadwise.storage import open_store

        return open_store(self.current_dir, None)

    @property
    def plots(self) -> SharedPlots:
        """Where plots go so that every replica can show them (see storage/plots.py)."""
        from treadwise.storage.plots import SharedPlots

        return SharedPlots(self.plots_dir, self.database_url)

    @property
    def plots_dir(self) -> Path:
        path = self.current_dir / "plots"
        path.mkdir(parents=True, exist_ok=True)
        return path


def available_toolsets() -> dict[str, str]:
    """Toolset name -> "module:attribute"; built-ins win over a plugin of the same name."""
    return TOOLSETS.targets()


def get_tools(*toolsets: str, context: ToolContext | None = None) -> list[BaseTool]:
    """Return the LangChain tools of the named toolsets (default: math and business)."""
    if context is None:
        from treadwise.settings import Settings

        settings = Settings.from_env()
        context = ToolContext.of(settings)
    names = toolsets or DEFAULT_TOOLSETS
    tools: list[BaseTool] = []
    for name in names:
        toolset = TOOLSETS.get(name)
        if toolset is None:
            known = ", ".join(sorted(TOOLSETS.names()))
            raise ValueError(f"unknown toolset {name!r}; known: {known}")
        tools.extend(toolset(context))
    return tools
