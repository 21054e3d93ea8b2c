"""A result is given as the answer only when it answers the question asked (issue 36): the
operation and its operands, the city asked about; otherwise one retry, then an honest reply.
Two-step asks use the first step's result as the second step's operand."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, ToolMessage

from treadwise.agent import Agent
from treadwise.settings import Settings
from treadwise.testing.fakes import ScriptedModel


def call(tool: str, n: int = 0, **args) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": tool, "args": args, "id": f"c-{tool}-{n}",
                                      "type": "tool_call"}])


def agent_for(data_dir: Path, model: ScriptedModel) -> Agent:
    return Agent(Settings(data_dir=data_dir), toolsets=("math", "business"),
                 models={"scripted": model})


def quoting(messages, kwargs) -> AIMessage:
    """A model that states whatever the last tool result says, refusals included."""
    last = [m for m in messages if isinstance(m, ToolMessage)][-1]
    return AIMessage(f"Here you go! {last.text}")


def test_the_wrong_operation_on_the_right_number_is_not_the_answer(data_dir):
    model = ScriptedModel(script=[call("square", x=81), call("square", 1, x=81), quoting])
    result = agent_for(data_dir, model).run("What is the square root of 81?", model="scripted")
    assert "6561" not in result.answer
    assert "square" in result.answer and "match" in result.answer  # what it could not do


def test_a_mismatch_gets_one_retry_that_can_put_it_right(data_dir):
    model = ScriptedModel(script=[call("square", x=81), call("square_root", 1, x=81), quoting])
    result = agent_for(data_dir, model).run("What is the square root of 81?", model="scripted")
    refusal = [m for m in model.calls[1][0] if isinstance(m, ToolMessage)][-1]
    assert "does not answer" in refusal.text  # the model is told why
    assert result.answer.endswith("= 9") and "6561" not in result.answer


def test_a_percentage_that_leaves_out_the_amount_is_not_the_answer(data_dir):
    # SmolLM2: "Calculate 15% of 240" -> "Here you go! 15% = 0.15."
    model = ScriptedModel(script=[call("calculate", expression="15%"),
                                  call("calculate", 1, expression="15%"), quoting])
    result = agent_for(data_dir, model).run("Calculate 15% of 240", model="scripted")
    assert "0.15" not in result.answer and "240" in result.answer


def test_a_check_for_an_earlier_city_does_not_answer_for_the_city_asked(data_dir):
    model = ScriptedModel(script=[
        call("check_service_availability", location="Boise", service_type="any"), quoting])
    agent = agent_for(data_dir, model)
    agent.run("I used to live in Boise.", model="scripted", thread_id="t")
    model.script[:] = [call("check_service_availability", 1, location="Boise",
                            service_type="any"),
                       call("check_service_availability", 2, location="Boise",
                            service_type="any"), quoting]
    result = agent.run("Do you come out to Denver?", model="scripted", thread_id="t")
    assert "Boise" in result.answer and "Denver" in result.answer
    assert "match" in result.answer or "not" in result.answer


def test_two_steps_use_the_first_result_as_the_second_operand(data_dir):
    model = ScriptedModel(script=[call("add", a=5, b=4), call("square", 1, x=9), quoting])
    result = agent_for(data_dir, model).run("Add 5 and 4, then square the result",
                                            model="scripted")
    assert [s.error for s in result.tool_calls] == [None, None]
    assert result.answer.endswith("= 81")


def test_invented_operands_of_a_two_step_ask_are_refused(data_dir):
    # SmolLM2: "Add 5 and 4, then square the result" -> add(15, 9) -> "15 + 9 = 24".
    model = ScriptedModel(script=[call("add", a=15, b=9), call("add", 1, a=15, b=9), quoting])
    result = agent_for(data_dir, model).run("Add 5 and 4, then square the result",
                                            model="scripted")
    assert "24" not in result.answer and "15" in result.answer
    assert all(s.error for s in result.tool_calls)


def test_a_second_step_that_ignores_the_first_result_is_not_the_answer(data_dir):
    model = ScriptedModel(script=[call("add", a=5, b=4), call("square", 1, x=5),
                                  call("square", 2, x=5), quoting])
    result = agent_for(data_dir, model).run("Add 5 and 4, then square the result",
                                            model="scripted")
    assert "= 25" not in result.answer


def test_a_result_no_tool_computed_is_not_stated(data_dir):
    # SmolLM2, no tool called: "15% of 240 is (3.75 * 240) / 100 = 8".
    model = ScriptedModel(script=[AIMessage("15% of 240 is (3.75 * 240) / 100 = 8")])
    result = agent_for(data_dir, model).run("Calculate 15% of 240", model="scripted")
    assert "= 8" not in result.answer and "8" in result.answer  # says what it cannot back


def test_a_result_the_customer_gave_may_be_repeated_without_a_tool(data_dir):
    model = ScriptedModel(script=[AIMessage("You said the total = 240, noted.")])
    result = agent_for(data_dir, model).run("My total is 240", model="scripted")
    assert result.answer == "You said the total = 240, noted."


def test_a_percentage_used_as_a_whole_number_is_not_the_answer(data_dir):
    model = ScriptedModel(script=[call("multiply", a=15, b=240),
                                  call("multiply", 1, a=0.15, b=240), quoting])
    result = agent_for(data_dir, model).run("Calculate 15% of 240", model="scripted")
    assert result.tool_calls[0].error and result.tool_calls[0].result is None  # 15 x 240
    assert "3600" not in result.answer and result.answer.endswith("= 36")


def test_a_derivative_of_an_order_nobody_asked_for_is_refused(data_dir):
    # SmolLM2: "Find the derivative of x^4" -> differentiate(order=4) -> "d⁴/dx⁴ [x^4] = 24".
    model = ScriptedModel(script=[
        call("differentiate", expression="x^4", variable="x", order=4),
        call("differentiate", 1, expression="x^4", variable="x", order=4), quoting])
    result = agent_for(data_dir, model).run("Find the derivative of x^4", model="scripted")
    assert "24" not in result.answer and "4" in result.answer


def test_a_percentage_as_a_rise_is_not_the_share_asked_for(data_dir):
    # SmolLM2's retry for "Calculate 15% of 240": multiply(1.15, 240) = 276.
    model = ScriptedModel(script=[call("multiply", a=1.15, b=240),
                                  call("multiply", 1, a=1.15, b=240), quoting])
    result = agent_for(data_dir, model).run("Calculate 15% of 240", model="scripted")
    assert "276" not in result.answer
    raised = ScriptedModel(script=[call("multiply", a=1.15, b=240), quoting])
    result = agent_for(data_dir, raised).run("What is 240 increased by 15%?", model="scripted")
    assert result.answer.endswith("= 276")


def test_a_two_step_ask_stopped_after_its_first_step_says_so(data_dir):
    model = ScriptedModel(script=[call("add", a=5, b=4), AIMessage("Here you go! 5 + 4 = 9.")])
    result = agent_for(data_dir, model).run("Add 5 and 4, then square the result",
                                            model="scripted")
    assert "5 + 4 = 9" in result.answer and "square the result" in result.answer
    assert not result.answer.startswith("Here you go")
    whole = ScriptedModel(script=[call("calculate", expression="(5 + 4)^2"),
                                  AIMessage("(5 + 4)^2 = 81")])
    result = agent_for(data_dir, whole).run("Add 5 and 4, then square the result",
                                            model="scripted")
    assert result.answer == "(5 + 4)^2 = 81"


def test_a_first_result_equal_to_an_operand_still_feeds_the_second_step(data_dir):
    """0 + 7 = 7: squaring 7 answers "square the result", not the first clause's 7 with its 0
    left out (the soak's first turn of each session asks exactly this)."""
    agent = Agent(Settings(data_dir=data_dir))
    for message, answer in [("Add 0 and 7, then give me the square of the result", "49"),
                            ("Add 7 and 0, then give me the square of the result", "49"),
                            ("Add 0 and 0, then give me the square of the result", "0² = 0")]:
        result = agent.run(message)
        assert [s.error for s in result.tool_calls] == [None, None], result.tool_calls
        assert answer in result.answer and "left out" not in result.answer


def test_code_in_an_answer_is_not_a_stated_result(data_dir):
    """An assignment in markup ("window.__xss=1") claims nothing about a question; only a
    result stated with "=" ("15% of 240 = 8") needs a calculation behind it."""
    text = 'Here you go <img src=x onerror="window.__xss=1"> and a=2'
    model = ScriptedModel(script=[AIMessage(text)])
    assert agent_for(data_dir, model).run("Say something", model="scripted").answer == text
    invented = ScriptedModel(script=[AIMessage("15% of 240 = 8")])
    result = agent_for(data_dir, invented).run("What is 15% of 240?", model="scripted")
    assert "no calculation behind 8" in result.answer


def test_a_formula_no_tool_computed_is_not_stated(data_dir):
    """A small model called a tool that does not exist, then wrote a derivative of its own."""
    model = ScriptedModel(script=[
        call("derivative", expression="sin(x)*x"),
        AIMessage("Great question! The derivative of sin(x)*x is 2*sin((x+1) - x)."),
        AIMessage("Great question! The derivative of sin(x)*x is 2*sin((x+1) - x).")])
    result = agent_for(data_dir, model).run("What is the derivative of sin(x)*x?",
                                            model="scripted")
    assert "2*sin((x+1) - x)" not in result.answer.split("behind")[0]
    assert "no calculation behind 2*sin((x+1) - x)" in result.answer


def test_a_formula_the_customer_wrote_or_a_tool_found_may_stand(data_dir):
    model = ScriptedModel(script=[
        call("differentiate", expression="x*sin(x)"),
        AIMessage("The derivative of x*sin(x) is x*cos(x) + sin(x).")])
    result = agent_for(data_dir, model).run("What is the derivative of x*sin(x)?",
                                            model="scripted")
    assert result.answer == "The derivative of x*sin(x) is x*cos(x) + sin(x)."
    asked = agent_for(data_dir, ScriptedModel(script=[
        AIMessage("Do you mean the derivative of x*sin(x) with respect to x?")])).run(
        "Find the derivative of x*sin(x)", model="scripted", thread_id="t2")
    assert asked.answer == "Do you mean the derivative of x*sin(x) with respect to x?"


def test_a_result_stated_with_is_for_an_arithmetic_ask_needs_a_tool(data_dir):
    # SmolLM2, free decoding, no tool called: "15% of 240 is 3."
    model = ScriptedModel(script=[AIMessage("15% of 240 is 3."), AIMessage("15% of 240 is 3.")])
    result = agent_for(data_dir, model).run("Calculate 15% of 240", model="scripted")
    assert "is 3." not in result.answer and "no calculation behind 3" in result.answer
    prose = ScriptedModel(script=[AIMessage("Our Austin shop is 5 minutes from downtown.")])
    result = agent_for(data_dir, prose).run("Where is your shop? I need 4 tires",
                                            model="scripted", thread_id="t2")
    assert result.answer == "Our Austin shop is 5 minutes from downtown."


def test_general_information_does_not_answer_a_service_or_tire_question(data_dir):
    """SmolLM2 with every tool offered answered these with the company overview."""
    for n, (ask, topic, problem) in enumerate([
            ("Is tire repair available in Fort Worth?", "repair",
             "not whether we serve Fort Worth"),
            ("Which tires do you recommend for an SUV I mostly drive on the highway?", "SUV",
             "not which tires to pick")]):
        model = ScriptedModel(script=[call("get_business_info", n, topic=topic),
                                      call("get_business_info", n + 10, topic=topic),
                                      quoting])
        result = agent_for(data_dir, model).run(ask, model="scripted", thread_id=f"t{n}")
        assert "overview" not in result.answer.split("(")[0] and problem in result.answer


def test_the_topic_asked_about_is_an_answer(data_dir):
    model = ScriptedModel(script=[call("get_business_info", topic="warranty"), quoting])
    result = agent_for(data_dir, model).run("What warranty do your tires come with?",
                                            model="scripted")
    assert result.answer.startswith("Here you go!") and "warranty" in result.answer.lower()


def test_an_expression_built_from_a_result_is_not_the_one_asked_about(data_dir):
    """SmolLM2: d/dx [sin(x)*x] first (its result holds cos), then d/dx [sin(x)*cos(x)] = cos(2x),
    stated as the derivative of sin(x)*x."""
    model = ScriptedModel(script=[call("differentiate", expression="sin(x)*x"),
                                  call("differentiate", 1, expression="sin(x)*cos(x)"),
                                  quoting])
    result = agent_for(data_dir, model).run("What is the derivative of sin(x)*x?",
                                            model="scripted")
    assert "cos(2x)" not in result.answer
    chained = ScriptedModel(script=[call("differentiate", expression="x^3"),
                                    call("integrate", 1, expression="3x^2"), quoting])
    result = agent_for(data_dir, chained).run("Differentiate x^3, then integrate the result",
                                              model="scripted", thread_id="t2")
    assert result.answer.startswith("Here you go!") and "x^3" in result.answer


def test_an_example_in_a_reply_to_a_link_is_not_a_stated_result(data_dir):
    """A link holds "=" (a query string): it asks for no equation, and the reply's example sums
    are no claim about it."""
    link = "https://example.com/" + "a1b2c3/" * 40 + "?q=" + "z" * 60
    reply = "Sorry, I didn't quite catch that! Try something like: what's 7*8 - 3?"
    model = ScriptedModel(script=[AIMessage(reply)])
    assert agent_for(data_dir, model).run(link, model="scripted").answer == reply
