"""A tiny stdio MCP server for tests/tools/test_mcp.py: one tire-safety tool and one that fails."""

from mcp.server.fastmcp import FastMCP

server = FastMCP("treadwise-test", log_level="WARNING")


@server.tool()
def tread_depth_status(depth_mm: float) -> str:
    """Say whether a tire with this tread depth (mm) is safe, worn or illegal."""
    if depth_mm < 1.6:
        return f"{depth_mm:g} mm: below the 1.6 mm legal minimum, replace now"
    if depth_mm < 3:
        return f"{depth_mm:g} mm: worn, plan a replacement soon"
    return f"{depth_mm:g} mm: safe"


@server.tool()
def always_fails(reason: str) -> str:
    """Raise an error, to show how a failing MCP tool reaches the model."""
    raise ValueError(f"failed on purpose: {reason}")


if __name__ == "__main__":
    server.run()
