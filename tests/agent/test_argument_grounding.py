"""A tool never runs with a value the customer did not give (issue 36): invented numbers,
cities and lead details are refused before the tool runs, the model gets one retry, and the
customer reads what could not be found, in the persona's voice."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, ToolMessage

from treadwise.agent import Agent
from treadwise.settings import Settings
from treadwise.storage.sqlite import Store
from treadwise.testing.fakes import ScriptedModel


def call(tool: str, **args) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": tool, "args": args, "id": f"c-{tool}-{len(args)}",
                                      "type": "tool_call"}])


def agent_for(data_dir: Path, model: ScriptedModel) -> Agent:
    return Agent(Settings(data_dir=data_dir), toolsets=("math", "business"),
                 models={"scripted": model})


def ran(result, name: str) -> list:
    """The calls of ``name`` that ran (a refused call has an error and no result)."""
    return [s for s in result.tool_calls if s.name == name and s.error is None]


def test_an_invented_number_is_not_computed_and_the_reply_says_what_is_missing(data_dir):
    # SmolLM2 answered "What is the square root of 81?" with square(2.5): "2.5² = 6.25".
    model = ScriptedModel(script=[call("square", x=2.5), AIMessage("Here you go! 2.5² = 6.25.")])
    result = agent_for(data_dir, model).run("What is the square root of 81?", model="scripted")
    assert not ran(result, "square")
    assert "6.25" not in result.answer
    assert "2.5" in result.answer and "number" in result.answer  # what it could not find
    assert result.error is None


def test_the_retry_is_told_the_grounded_values_and_a_grounded_call_then_runs(data_dir):
    model = ScriptedModel(script=[call("square", x=2.5), call("square_root", x=81),
                                  AIMessage("The square root of 81 is 9.")])
    result = agent_for(data_dir, model).run("What is the square root of 81?", model="scripted")
    refusal = [m for m in model.calls[1][0] if isinstance(m, ToolMessage)][-1]
    assert "81" in refusal.text and "2.5" in refusal.text  # the retry knows what it may use
    assert [s.result for s in ran(result, "square_root")] and result.answer.endswith("is 9.")


def test_a_second_invention_ends_the_turn_honestly_without_a_third_call(data_dir):
    model = ScriptedModel(script=[call("square", x=2.5), call("square", x=3.5),
                                  AIMessage("Here you go! 3.5² = 12.25.")])
    result = agent_for(data_dir, model).run("What is the square root of 81?", model="scripted")
    assert len(model.calls) == 2 and not ran(result, "square")
    assert "3.5" in result.answer and "12.25" not in result.answer


def test_a_city_nobody_named_is_not_checked_and_the_reply_asks_for_the_city(data_dir):
    # SmolLM2 checked service availability "in Tulsa" for a tire question naming no city.
    model = ScriptedModel(script=[
        call("check_service_availability", location="Tulsa", service_type="any"),
        AIMessage("Great news! We serve Tulsa.")])
    result = agent_for(data_dir, model).run(
        "Which tires do you recommend for an SUV I mostly drive on the highway?",
        model="scripted")
    assert not ran(result, "check_service_availability")
    assert "Tulsa" in result.answer and "city" in result.answer
    assert "Great news" not in result.answer


def test_a_business_profile_synonym_of_a_named_city_is_grounded(data_dir):
    model = ScriptedModel(script=[
        call("check_service_availability", location="Denver",
             service_type="mobile tire installation"),
        AIMessage("Yes, we install tires in Denver.")])
    result = agent_for(data_dir, model).run(
        "Can you come put new tires on my car in denver?", model="scripted")
    assert ran(result, "check_service_availability")


def test_a_lead_detail_the_customer_never_gave_is_not_stored(data_dir):
    # SmolLM2 saved "Pricing for 12 vans" for "Please contact me at bob@fleetco.com about pricing".
    model = ScriptedModel(script=[
        call("record_customer_interest", email="bob@fleetco.com", name="",
             message="Pricing for 12 vans"),
        AIMessage("All set! Our team will contact you about pricing for 12 vans.")])
    result = agent_for(data_dir, model).run(
        "Please contact me at bob@fleetco.com about pricing", model="scripted")
    assert Store(data_dir).lead_count() == 0
    assert "12" in result.answer and "vans" in result.answer  # named as not the customer's
    assert "All set" not in result.answer


def test_a_lead_in_the_customers_own_words_is_stored(data_dir):
    model = ScriptedModel(script=[
        call("record_customer_interest", email="bob@fleetco.com", name="",
             message="Pricing for the customer's 12 vans"),
        AIMessage("Thanks, our team will be in touch.")])
    agent_for(data_dir, model).run(
        "Please contact me at bob@fleetco.com about pricing for our 12 vans", model="scripted")
    assert [lead["message"] for lead in Store(data_dir).leads()] == [
        "Pricing for the customer's 12 vans"]


def test_declared_rules_ground_percent_words_constants_and_roots(data_dir):
    asks = {
        "Calculate 15% of 240": call("multiply", a=0.15, b=240),
        "What is twelve times three?": call("multiply", a=12, b=3),
        "What is pi times 2?": call("multiply", a=3.14159, b=2),
        "What is the square root of x^2 + 1?": call("calculate", expression="(x^2 + 1)^(1/2)"),
    }
    for ask, made in asks.items():
        model = ScriptedModel(script=[made, AIMessage("Done.")])
        result = agent_for(data_dir, model).run(ask, model="scripted")
        assert [s.error for s in result.tool_calls] == [None], ask


def test_a_tool_error_reaches_the_customer_in_the_personas_voice(data_dir):
    # "What is the derivative of sin(x)*x?" -> "Great question! Error: 'sin' is not an allowed
    # variable; ..." - the tool's words behind a cheerful opener.
    for persona in ("friendly", "technical", "cautious"):
        model = ScriptedModel(script=[
            call("differentiate", expression="sin(x)*x", variable="sin", order=1),
            AIMessage("Great question! Error: 'sin' is not an allowed variable; use one of x")])
        result = agent_for(data_dir, model).run("What is the derivative of sin(x)*x?",
                                                model="scripted", persona=persona)
        assert not ran(result, "differentiate")
        assert "Error" not in result.answer and "allowed variable" not in result.answer
        assert not result.answer.startswith("Great question")
        assert "sin" in result.answer  # what could not be used, said plainly


def test_a_failing_tool_is_explained_in_the_personas_voice_not_quoted(data_dir):
    model = ScriptedModel(script=[call("divide", a=5, b=0),
                                  AIMessage("Great question! Error: division by zero")])
    result = agent_for(data_dir, model).run("What is 5 divided by 0?", model="scripted")
    assert result.tool_calls[0].error  # the tool ran and failed
    assert "Error" not in result.answer and "Great question" not in result.answer
    assert "5" in result.answer and "0" in result.answer


def test_a_retry_that_fails_another_way_still_ends_honestly(data_dir):
    # SmolLM2, free decoding: add(100, -1) refused, then add({}) failed, then "100 - 1 = 9".
    model = ScriptedModel(script=[call("add", a=100, b=-1), call("add"),
                                  AIMessage("Great question! 100 - 1 = 9.")])
    result = agent_for(data_dir, model).run("What is 1000 minus 1?", model="scripted")
    assert len(model.calls) == 2 and not ran(result, "add")
    assert "= 9" not in result.answer and "100" in result.answer


def test_a_power_named_in_words_or_a_percentage_is_no_operand(data_dir):
    # SmolLM2 wrote add(5, 2) for "Add 5 and 4, then square the result" (2 from "square") and
    # multiply(15, 240) for "Calculate 15% of 240".
    for ask, made in (("Add 5 and 4, then square the result", call("add", a=5, b=2)),
                      ("Calculate 15% of 240", call("multiply", a=15, b=240))):
        model = ScriptedModel(script=[made, made, AIMessage("Done.")])
        result = agent_for(data_dir, model).run(ask, model="scripted")
        assert not [s for s in result.tool_calls if s.error is None], ask
    model = ScriptedModel(script=[call("power", base=9, exponent=2), AIMessage("81.")])
    result = agent_for(data_dir, model).run("What is 9 squared?", model="scripted")
    assert ran(result, "power")
