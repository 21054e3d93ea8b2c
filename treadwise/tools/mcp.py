"""MCP toolset: tools of the MCP servers named in a config file, callable synchronously."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import yaml
from langchain_core.tools import BaseTool, StructuredTool, ToolException

from treadwise.tools import ToolContext

if TYPE_CHECKING:
    from langchain_mcp_adapters.sessions import Connection

START_TIMEOUT_S = 30.0
CALL_TIMEOUT_S = 60.0

# Keys each transport of langchain-mcp-adapters accepts; anything else a client such as
# Claude Desktop keeps in its file (autoApprove, disabled, ...) is not passed on.
_TRANSPORT_KEYS = {
    "stdio": {"command", "args", "env", "cwd", "encoding", "encoding_error_handler"},
    "sse": {"url", "headers", "timeout", "sse_read_timeout"},
    "streamable_http": {"url", "headers", "timeout", "sse_read_timeout"},
    "websocket": {"url"},
}
_TRANSPORT_ALIASES = {"http": "streamable_http", "streamable-http": "streamable_http"}


class MCPConfigError(ValueError):
    """The MCP config file is missing or malformed; the message names the file and entry."""


class MCPServerError(RuntimeError):
    """One or more MCP servers could not be started; the message names each and why."""


_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _background_loop() -> asyncio.AbstractEventLoop:
    """The one event loop, on its own daemon thread, that every MCP coroutine runs on."""
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="treadwise-mcp", daemon=True).start()
        return _loop


def _run(coroutine: Coroutine[Any, Any, Any], timeout: float) -> Any:
    future = asyncio.run_coroutine_threadsafe(coroutine, _background_loop())
    try:
        return future.result(timeout)
    except TimeoutError:
        future.cancel()
        raise


def load_mcp_config(path: Path) -> dict[str, Connection]:
    """Server name -> adapter connection, from {"servers": ...} or Claude's {"mcpServers": ...}."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except OSError as exc:
        raise MCPConfigError(f"cannot read MCP config {path}: {exc.strerror or exc}") from exc
    except (ValueError, yaml.YAMLError) as exc:
        raise MCPConfigError(f"MCP config {path} is not valid JSON/YAML: {exc}") from exc
    servers = data.get("servers", data.get("mcpServers")) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise MCPConfigError(f"MCP config {path} needs a 'servers' (or 'mcpServers') mapping")
    return {
        str(name): _connection(path, str(name), spec)
        for name, spec in servers.items()
        if not (isinstance(spec, dict) and spec.get("disabled") is True)
    }


def _connection(path: Path, name: str, spec: object) -> Connection:
    where = f"MCP config {path}: server {name!r}"
    if not isinstance(spec, dict):
        raise MCPConfigError(f"{where} must be a mapping")
    transport = spec.get("transport") or spec.get("type") or (
        "stdio" if "command" in spec else "streamable_http" if "url" in spec else None)
    if isinstance(transport, str):
        transport = _TRANSPORT_ALIASES.get(transport, transport)
    if not isinstance(transport, str) or transport not in _TRANSPORT_KEYS:
        raise MCPConfigError(f"{where} has unknown transport {transport!r}; "
                             f"use one of {', '.join(_TRANSPORT_KEYS)}")
    needed = "command" if transport == "stdio" else "url"
    if not isinstance(spec.get(needed), str) or not spec[needed]:
        raise MCPConfigError(f"{where} needs a {needed!r} string")
    connection = {key: spec[key] for key in _TRANSPORT_KEYS[transport] if key in spec}
    if transport == "stdio":
        args = connection.setdefault("args", [])
        if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
            raise MCPConfigError(f"{where}: 'args' must be a list of strings")
        env = connection.get("env")
        if env is not None and not isinstance(env, dict):
            raise MCPConfigError(f"{where}: 'env' must be a mapping")
        if env:
            connection["env"] = {str(key): str(value) for key, value in env.items()}
    # Its keys are the transport's own (_TRANSPORT_KEYS), their values checked above.
    return cast("Connection", {**connection, "transport": transport})


def _reason(exc: BaseException) -> str:
    """The innermost cause of a failure, unwrapping the exception groups anyio raises."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, TimeoutError):
        return "timed out"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


async def _load_all(client: Any, names: list[str], timeout: float) -> list[Any]:
    loads = (asyncio.wait_for(client.get_tools(server_name=name), timeout) for name in names)
    return await asyncio.gather(*loads, return_exceptions=True)


def mcp_tools(context: ToolContext) -> list[BaseTool]:
    """Tools of every server in `context.mcp_config` (none without a config), wrapped to run
    synchronously. All servers must start: a failure raises MCPServerError naming each
    failed server, because a silently missing tool is harder to notice than an error.
    """
    if context.mcp_config is None:
        return []
    servers = load_mcp_config(context.mcp_config)
    if not servers:
        return []
    from langchain_mcp_adapters.client import MultiServerMCPClient

    client = MultiServerMCPClient(servers)
    names = list(servers)
    results = _run(_load_all(client, names, START_TIMEOUT_S), START_TIMEOUT_S + 5)
    failures = [f"{name!r} ({_reason(result)})" for name, result in zip(names, results, strict=True)
                if isinstance(result, BaseException)]
    if failures:
        raise MCPServerError(f"MCP server failed to start: {'; '.join(failures)}")
    return [
        _sync_tool(tool, name)
        for name, server_tools in zip(names, results, strict=True)
        for tool in server_tools
    ]


def _plain(content: Any) -> Any:
    """Text-only MCP content as one string, which every model and the CLI can show."""
    if isinstance(content, list) and all(
        isinstance(block, dict) and block.get("type") == "text" for block in content
    ):
        return "\n".join(block["text"] for block in content)
    return content


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    """Any awaitable as a coroutine, the one thing another thread's loop accepts."""
    return await awaitable


def _sync_tool(tool: StructuredTool, server: str, timeout: float = CALL_TIMEOUT_S) -> BaseTool:
    """The adapter's async-only tool as a sync one: same name, description and schema."""
    coroutine = tool.coroutine
    if coroutine is None:  # the adapter's tools are all async; a sync one is not its own
        raise MCPServerError(f"MCP tool {tool.name!r} on server {server!r} has no async body")

    def call(**arguments: Any) -> tuple[Any, Any]:
        try:
            content, artifact = _run(_awaited(coroutine(**arguments)), timeout)
        except ToolException:
            raise
        except TimeoutError as exc:
            raise ToolException(
                f"MCP tool {tool.name!r} on server {server!r} did not answer in {timeout:g} s"
            ) from exc
        except Exception as exc:
            raise ToolException(f"MCP server {server!r} failed: {_reason(exc)}") from exc
        return _plain(content), artifact

    return StructuredTool(
        name=tool.name,
        description=tool.description,
        args_schema=tool.args_schema,
        func=call,
        response_format="content_and_artifact",
        metadata={**(tool.metadata or {}), "mcp_server": server},
    )
