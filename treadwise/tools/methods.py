"""Tools from an object's methods, each method's schema built once per class."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

# (class, method name) -> (args schema, description). pydantic builds a model for every tool
# from its signature and docstring (about 0.2 s for the twenty built-in tools), and tools are
# bound afresh for every agent: every conversation's settings, sweep case and test made them
# again. The schema depends on the method alone, never on the object it is bound to.
_SCHEMAS: dict[tuple[type, str], tuple[Any, str]] = {}


def method_tools(owner: object, names: Iterable[str]) -> list[BaseTool]:
    """A tool per method of `owner` (its docstring the description and the arguments' schema),
    returning (content, artifact)."""
    from langchain_core.tools import StructuredTool

    tools: list[BaseTool] = []
    for name in names:
        method = getattr(owner, name)
        known = _SCHEMAS.get((type(owner), name))
        if known is None:
            tool = StructuredTool.from_function(method, parse_docstring=True,
                                                response_format="content_and_artifact")
            _SCHEMAS[type(owner), name] = (tool.args_schema, tool.description)
        else:
            schema, description = known
            tool = StructuredTool(name=name, func=method, args_schema=schema,
                                  description=description, response_format="content_and_artifact")
        tools.append(tool)
    return tools
