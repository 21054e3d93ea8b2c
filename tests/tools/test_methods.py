"""Tools made from methods: the schema built once per class is the one LangChain would build,
and every set of tools acts on its own context."""

from __future__ import annotations

from pathlib import Path

from langchain_core.tools import StructuredTool

from treadwise.storage.sqlite import Store
from treadwise.tools import ToolContext, get_tools
from treadwise.tools.business import BusinessDesk


def test_tools_made_again_have_the_schemas_langchain_builds_from_the_method(tmp_path: Path):
    first, second = (get_tools(context=ToolContext(tmp_path / name)) for name in "ab")
    desk = BusinessDesk(ToolContext(tmp_path / "c"))
    for made, again in zip(first, second, strict=True):
        assert (made.name, made.description) == (again.name, again.description)
        assert made.tool_call_schema.model_json_schema() == \
            again.tool_call_schema.model_json_schema()
        if hasattr(desk, made.name):
            fresh = StructuredTool.from_function(getattr(desk, made.name), parse_docstring=True)
            assert again.description == fresh.description
            assert again.tool_call_schema.model_json_schema() == \
                fresh.tool_call_schema.model_json_schema()


def test_each_set_of_tools_writes_to_its_own_context(tmp_path: Path):
    for name in ("a", "b"):
        tools = {t.name: t for t in get_tools("business", context=ToolContext(tmp_path / name))}
        tools["record_customer_interest"].invoke(
            {"email": f"{name}@example.com", "name": name.upper(), "message": "fleet tires"})
    assert [lead["email"] for lead in Store(tmp_path / "a").leads()] == ["a@example.com"]
    assert [lead["email"] for lead in Store(tmp_path / "b").leads()] == ["b@example.com"]
