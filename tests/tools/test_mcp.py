"""MCP toolset: a real stdio MCP server's tools, loaded from a config file, called synchronously."""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml
from langchain_core.messages import AIMessage
from langchain_core.tools import ToolException
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from treadwise.tools import ToolContext, get_tools
from treadwise.tools.mcp import MCPConfigError, MCPServerError, load_mcp_config

SERVER = str(Path(__file__).with_name("mcp_server.py"))
TIRES = {"command": sys.executable, "args": [SERVER], "transport": "stdio"}


def _context(tmp_path: Path, config: dict, suffix: str = ".json") -> ToolContext:
    path = tmp_path / f"mcp{suffix}"
    path.write_text(json.dumps(config) if suffix == ".json" else yaml.safe_dump(config))
    return ToolContext(data_dir=tmp_path / "data", mcp_config=path)


@pytest.fixture(scope="module")
def mcp_tools(tmp_path_factory) -> dict:
    context = _context(tmp_path_factory.mktemp("mcp"), {"servers": {"tires": TIRES}})
    return {tool.name: tool for tool in get_tools("mcp", context=context)}


def test_the_server_tools_keep_name_description_and_schema(mcp_tools: dict) -> None:
    assert set(mcp_tools) == {"tread_depth_status", "always_fails"}
    tool = mcp_tools["tread_depth_status"]
    assert tool.description.startswith("Say whether a tire with this tread depth")
    assert tool.args["depth_mm"]["type"] == "number"
    assert tool.metadata["mcp_server"] == "tires"


@pytest.mark.thorough
def test_a_tool_is_invoked_synchronously_with_the_real_result(mcp_tools: dict) -> None:
    status = mcp_tools["tread_depth_status"]
    assert status.invoke({"depth_mm": 2.5}) == "2.5 mm: worn, plan a replacement soon"
    with ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(lambda depth: status.invoke({"depth_mm": depth}), [1, 4, 2]))
    assert answers == ["1 mm: below the 1.6 mm legal minimum, replace now", "4 mm: safe",
                       "2 mm: worn, plan a replacement soon"]


def test_a_tool_node_runs_the_tool_inside_a_sync_graph_step(mcp_tools: dict) -> None:
    call = {"name": "tread_depth_status", "args": {"depth_mm": 1.2}, "id": "call-1"}
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode(list(mcp_tools.values())))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    result = graph.compile().invoke({"messages": [AIMessage(content="", tool_calls=[call])]})
    message = result["messages"][-1]
    assert message.content == "1.2 mm: below the 1.6 mm legal minimum, replace now"
    assert message.status == "success"


def test_a_failing_mcp_tool_raises_a_tool_exception(mcp_tools: dict) -> None:
    with pytest.raises(ToolException, match="failed on purpose: flat"):
        mcp_tools["always_fails"].invoke({"reason": "flat"})


def test_the_claude_desktop_shape_in_yaml_loads(tmp_path: Path) -> None:
    config = {"mcpServers": {"tires": {"command": sys.executable, "args": [SERVER],
                                       "env": {"TREADWISE_TEST": "1"}, "autoApprove": []},
                             "off": {"command": "/nowhere/server", "disabled": True}}}
    tools = get_tools("mcp", context=_context(tmp_path, config, ".yaml"))
    assert sorted(tool.name for tool in tools) == ["always_fails", "tread_depth_status"]


def test_no_config_means_no_mcp_tools(tmp_path: Path) -> None:
    assert get_tools("mcp", context=ToolContext(data_dir=tmp_path)) == []


def test_a_server_that_fails_to_start_is_named(tmp_path: Path) -> None:
    config = {"servers": {"tires": TIRES,
                          "missing": {"command": str(tmp_path / "no-such-server")},
                          "crashing": {"command": sys.executable, "args": ["-c", "exit(3)"]}}}
    with pytest.raises(MCPServerError) as failure:
        get_tools("mcp", context=_context(tmp_path, config))
    message = str(failure.value)
    assert message.startswith("MCP server failed to start: ")
    assert "'missing' (FileNotFoundError" in message and "'crashing' (" in message
    assert "'tires'" not in message


@pytest.mark.parametrize(("config", "why"), [
    ({"tools": {}}, "needs a 'servers' \\(or 'mcpServers'\\) mapping"),
    ({"servers": {"x": {"args": ["a"]}}}, "server 'x' has unknown transport None"),
    ({"servers": {"x": {"transport": "stdio"}}}, "server 'x' needs a 'command' string"),
    ({"servers": {"x": {"command": "srv", "args": "--flag"}}}, "'args' must be a list"),
    ({"servers": {"x": {"url": "http://127.0.0.1:9/mcp", "transport": "pigeon"}}},
     "unknown transport 'pigeon'"),
    ({"servers": {"x": {"url": "http://127.0.0.1:9/mcp", "transport": ["http"]}}},
     "unknown transport \\['http'\\]"),
])
def test_a_malformed_config_is_a_clear_error(tmp_path: Path, config: dict, why: str) -> None:
    with pytest.raises(MCPConfigError, match=why):
        get_tools("mcp", context=_context(tmp_path, config))


def test_http_servers_are_passed_through_with_their_transport(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"web": {"type": "http", "url": "http://h/mcp"}}}))
    assert load_mcp_config(path) == {"web": {"url": "http://h/mcp",
                                             "transport": "streamable_http"}}
    with pytest.raises(MCPConfigError, match="cannot read MCP config"):
        load_mcp_config(tmp_path / "absent.json")
