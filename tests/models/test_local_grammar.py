"""What a small local model is held to and shown: grammars, routing, examples, its spec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.utils.function_calling import convert_to_openai_tool

from treadwise.errors import ModelConfigError, ModelUnavailable
from treadwise.models import display_name, expectation, label, model_settings
from treadwise.models.local import LocalSpec, model_path, parse
from treadwise.models.local_examples import closest, examples, small_talk
from treadwise.models.local_prompts import essentials, persona_line, pick_labels, result_lines
from treadwise.models.local_turn import _new_lines
from treadwise.models.tool_grammar import (
    arguments_grammar,
    arguments_schema,
    call_grammar,
    choice_grammar,
    is_prose,
    quote_grammar,
)
from treadwise.tools import ToolContext, get_tools


@pytest.fixture(scope="module")
def tools(tmp_path_factory):
    return {t.name: t for t in get_tools("math", "business",
                                         context=ToolContext(tmp_path_factory.mktemp("t")))}


def test_every_worked_example_is_a_call_the_real_tool_accepts_with_every_argument(tools):
    assert len(examples()) >= 2 * len(tools) - 5
    for example in examples():
        tool = tools[example.tool]
        schema = convert_to_openai_tool(tool)["function"]["parameters"]
        assert set(example.args) == set(schema["properties"]), example.ask
        tool.args_schema.model_validate(example.args)
    assert {e.tool for e in examples()} == set(tools)


def test_the_arguments_grammar_asks_for_every_key_and_bounds_strings(tools):
    schema = arguments_schema(convert_to_openai_tool(tools["integrate"]))
    assert schema["required"] == ["expression", "variable", "lower", "upper"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["expression"]["maxLength"] == 160
    assert {"maxLength": 160, "type": "string"} in schema["properties"]["lower"]["anyOf"]


def held_for(message: str) -> dict:
    from langchain_core.messages import HumanMessage

    from treadwise.evidence.arguments import held_values
    from treadwise.evidence.conversation import Evidence

    evidence = Evidence.of([HumanMessage(message)])
    return {name: held_values(name, evidence) for name in (
        "square", "square_root", "add", "integrate", "check_service_availability",
        "record_customer_interest")}


def test_held_arguments_may_only_take_values_the_conversation_grounds(tools):
    # Issue 36: "What is the square root of 81?" -> square(2.5). Held, 2.5 cannot be written.
    held = held_for("What is the square root of 81?")
    schema = arguments_schema(convert_to_openai_tool(tools["square"]), held)
    assert 81 in schema["properties"]["x"]["enum"]
    assert 2.5 not in schema["properties"]["x"]["enum"]
    grammar = arguments_grammar(convert_to_openai_tool(tools["square"]), held)
    assert '"81"' in grammar and "2.5" not in grammar
    # Bounds take text or numbers: the grounded ones, or none at all.
    bounds = arguments_schema(convert_to_openai_tool(tools["integrate"]), held)["properties"]
    assert None in bounds["lower"]["enum"] and 81 in bounds["lower"]["enum"]
    # A lead's name is the customer's: none given, none written.
    lead = arguments_schema(convert_to_openai_tool(tools["record_customer_interest"]),
                            held_for("Please contact me at bob@fleetco.com about pricing"))
    assert lead["properties"]["name"] == {"enum": [""]}
    assert lead["properties"]["email"] == {"enum": ["bob@fleetco.com"]}


def test_a_city_is_held_to_the_one_named_and_an_unheld_argument_keeps_its_type(tools):
    offered = convert_to_openai_tool(tools["check_service_availability"])
    named = arguments_schema(offered, held_for("Do you install tires in Oklahoma City?"))
    assert named["properties"]["location"] == {"enum": ["Oklahoma City"]}
    # No city named: nothing a grammar could list, so the guard refuses an invented one.
    unnamed = arguments_schema(offered, held_for("Which tires for an SUV on the highway?"))
    assert unnamed["properties"]["location"]["type"] == "string"
    assert "Oklahoma City" in call_grammar([offered], prose=True, held=held_for(
        "Do you install tires in Oklahoma City?"))


def test_a_call_grammar_has_one_branch_per_tool_with_its_name_fixed(tools):
    offered = [convert_to_openai_tool(tools[n]) for n in ("add", "get_business_info")]
    grammar = call_grammar(offered, prose=True)
    assert grammar.startswith("root ::= call | prose\n")
    assert r'"\"add\""' in grammar and r'"\"get_business_info\""' in grammar
    assert r'"\"multiply\""' not in grammar
    assert "root ::= call\n" in call_grammar(offered, prose=False)
    assert choice_grammar(["add", "root"]) == 'root ::= "add" | "root"'


def test_prose_is_told_from_a_call_opening_as_soon_as_possible():
    assert not is_prose("") and not is_prose("  ") and not is_prose("<tool")
    assert not is_prose('{"name"') and not is_prose("<tool_call>{")
    assert is_prose("Hello") and is_prose("\nThe answer")


def test_a_quoted_answer_may_only_repeat_lines_of_the_results():
    from langchain_core.messages import ToolMessage

    result = ToolMessage("TreadWise - Hours\n- Monday-Friday: 7:00-19:00. Sunday: closed.\n"
                         '- Say "hi"', tool_call_id="1", name="get_business_info")
    lines = result_lines([result])
    assert lines == ["TreadWise - Hours", "Monday-Friday: 7:00-19:00.", "Sunday: closed.",
                     'Say "hi"']
    grammar = quote_grammar(lines)
    assert grammar.splitlines()[0] == 'root ::= line ("\\n" line)? ("\\n" line)?'
    assert '"Say \\"hi\\""' in grammar
    assert list(_new_lines(["Sunday: clo", "sed.\nSunday: closed.\nTre", "adWise - Hours"])) \
        == ["Sunday: closed.", "\nTreadWise - Hours"]


def test_greetings_and_thanks_get_no_tools_and_questions_do():
    assert small_talk("hello") and small_talk("Thanks a lot!") and small_talk("Hi there!")
    assert not small_talk("Hello, what are your opening hours on Saturday?")
    assert not small_talk("What is 7 times 8?")


def test_examples_shown_share_words_with_the_message_and_the_closest_comes_last():
    shown = closest("What is 7 times 8?", ["add", "multiply", "divide"], 3)
    assert shown and shown[-1].tool == "multiply"
    assert all("times" in e.ask for e in shown)
    assert closest("What is 7 times 8?", ["add"], 0) == []


def test_pick_labels_drop_a_shared_verb_so_each_starts_differently():
    labels = pick_labels(["get_business_info", "get_tire_recommendation",
                          "check_service_availability", "square", "square_root"])
    assert labels == {"business_info": "get_business_info",
                      "tire_recommendation": "get_tire_recommendation",
                      "check_service_availability": "check_service_availability",
                      "square": "square", "root": "square_root"}


def test_local_specs_carry_decoding_and_routing_and_show_them():
    assert parse("smollm2") == LocalSpec("smollm2", "constrained", "tool", "on")
    free = parse("smollm2?decoding=free&routing=none")
    assert free.settings() == {"decoding": "free", "routing": "none", "grounding": "on"}
    assert free.spec == "local:smollm2?decoding=free&routing=none"
    assert parse("smollm2?routing=tool&decoding=constrained").spec == "local:smollm2"
    assert model_settings("local:smollm2?routing=none") == {"decoding": "constrained",
                                                             "routing": "none",
                                                             "grounding": "on"}
    assert parse("smollm2?grounding=off").spec == "local:smollm2?grounding=off"
    assert "grounding off" in label("local:smollm2?grounding=off")
    assert model_settings("offline") == {}
    assert display_name("local:smollm2?routing=tool&decoding=free") == \
        "local:smollm2?decoding=free"
    assert "decoding constrained, routing tool" in label("local:smollm2")
    assert "decoding free" in label("local:smollm2?decoding=free")
    assert expectation("local:smollm2") and "\n" not in expectation("local:smollm2")
    assert expectation("offline") is None


@pytest.mark.parametrize("spec, message", [
    ("smollm2?decoding=fast", "decoding must be one of free, constrained, not 'fast'"),
    ("smollm2?speed=1", "a local model takes the settings decoding, routing, grounding; "
                        "'speed' is not one of them"),
    ("smollm2?routing=toolset", "routing must be one of none, tool, not 'toolset'"),
])
def test_a_wrong_local_setting_is_one_line(spec, message):
    with pytest.raises(ModelConfigError) as caught:
        parse(spec)
    assert str(caught.value) == message


def test_a_file_that_is_not_gguf_is_refused_before_llama_cpp_sees_it(tmp_path):
    from treadwise.command_line import main

    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"root:x:0:0:root:/root:/bin/bash\n")
    with pytest.raises(ModelUnavailable, match="is not a GGUF model file"):
        model_path(str(fake))
    with pytest.raises(ModelUnavailable, match="is not a GGUF model file"):
        model_path("/etc/passwd")
    assert model_path("smollm2").read_bytes()[:4] == b"GGUF"
    assert main(["chat", "--model", "local:/etc/passwd", "hello"]) == 1


def test_the_cli_refuses_a_non_gguf_file_in_one_line(capsys):
    from treadwise.command_line import main

    assert main(["chat", "--model", "local:/etc/passwd", "--json", "hello"]) in (0, 1)
    out = capsys.readouterr()
    text = out.err.strip() or json.loads(out.out)["error"]["message"]
    assert "/etc/passwd is not a GGUF model file" in str(text)
    assert "Traceback" not in out.err and len(str(text).splitlines()) == 1


def test_the_examples_file_ships_with_the_package():
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    assert "models/*.yaml" in pyproject.read_text()


def test_a_local_prompt_keeps_who_speaks_and_drops_the_rules_and_notes():
    from treadwise.agent.prompts import build_system_prompt
    from treadwise.personas import get_persona

    system = build_system_prompt(get_persona("technical")) + "\n\nMore tools exist: add."
    kept = essentials(system, lambda text: len(text) // 4)
    assert kept.startswith("You are a chat assistant for customers of TreadWise Tire Co.")
    assert "You are the Technical Expert." in kept and "More tools" not in kept
    assert "How you work" not in kept and len(kept) // 4 < 200
    assert persona_line(system) == "You are the Technical Expert."


def _result(operation: str, statement: str, exact: str, error: bool = False):
    from langchain_core.messages import ToolMessage

    from treadwise.tools.math_results import Calculation

    if error:
        return ToolMessage("Refused: ...", tool_call_id=operation, name=operation,
                           status="error", additional_kwargs={"treadwise_grounding": "mismatch"})
    return ToolMessage(statement, tool_call_id=operation, name=operation, artifact=Calculation(
        kind="math", operation=operation, operands={}, statement=statement, exact=exact))


def test_a_two_step_ask_is_picked_step_by_step_with_the_first_result_written_in():
    from treadwise.models.local_grounding import chain, next_step, retrying

    ask = "Add 5 and 4, then square the result"
    first = _result("add", "5 + 4 = 9", "9")
    assert next_step(ask, [first]) == "square 9"
    # A refused try before the first result is the retry's business; the chain carries on.
    assert next_step(ask, [_result("add", "", "", error=True), first]) == "square 9"
    done = [first, _result("square", "9² = 81", "81")]
    assert next_step(ask, done) is None and chain(ask, done) == ["5 + 4 = 9", "9² = 81"]
    assert next_step("Add 5 and 4", [first]) is None and chain("Add 5 and 4", [first]) == []
    assert retrying([_result("add", "", "", error=True)]) and not retrying([first])
