"""Every check kind of the experiment harness, passing and failing, on hand-made outcomes."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.define.checks import (
    CHECK_KINDS,
    CheckError,
    Outcome,
    evaluate,
    numbers_in,
    validate,
)
from treadwise.agent import ToolStep, TurnResult
from treadwise.errors import FriendlyError
from treadwise.storage.sqlite import Store


def turn(answer: str = "", steps: list[ToolStep] | None = None, *, iterations: int = 2,
         error: FriendlyError | None = None) -> TurnResult:
    steps = steps or []
    return TurnResult(answer=answer, persona="friendly", model="offline", temperature=0.0,
                      thread_id="t", iterations=iterations, llm_calls=iterations,
                      tool_calls=steps, artifacts=[a for s in steps for a in s.artifacts],
                      error=error)


def step(name: str, args: dict | None = None, result: str = "ok", error: str | None = None,
         artifacts: list[str] | None = None) -> ToolStep:
    return ToolStep(id=name, name=name, args=args or {}, result=None if error else result,
                    error=error, artifacts=artifacts or [])


def outcome(tmp_path: Path, *turns: TurnResult, messages: list[str] | None = None) -> Outcome:
    messages = messages or [f"message {i}" for i in range(len(turns))]
    return Outcome(messages, list(turns), tmp_path)


CHECKS = CHECK_KINDS.load_all()


def run(spec: dict, result: Outcome) -> tuple[bool, str]:
    spec = validate(spec, "test")
    kind = CHECKS[spec["kind"]]
    return kind.fn({**spec, "turn": spec.get("turn", kind.default_turn)}, result)


def test_every_registered_kind_is_covered_here():
    tested = {"no_error", "tools_called", "no_tools", "forbidden_tools", "tool_args",
              "tool_result_matches", "answer_matches", "answer_excludes", "answer_number",
              "lead_stored", "no_lead", "max_leads", "leads_from_user", "feedback_recorded",
              "no_feedback", "png_artifact", "max_iterations", "grounded", "tool_found"}
    assert set(CHECKS) == tested


def test_every_kind_is_tagged_capability_or_safety_and_a_scenario_may_retag(tmp_path):
    assert {name for name, kind in CHECKS.items() if kind.tag == "safety"} == {
        "no_tools", "forbidden_tools", "answer_excludes", "no_lead", "max_leads",
        "leads_from_user", "no_feedback", "max_iterations", "grounded"}
    assert CHECKS["no_error"].tag == ""
    assert validate({"kind": "answer_matches", "pattern": "x", "tag": "safety"}, "t")
    with pytest.raises(CheckError, match="tag must be one of"):
        validate({"kind": "answer_matches", "pattern": "x", "tag": "style"}, "t")


def test_grounded_flags_facts_no_source_holds(tmp_path):
    sourced = turn("Call (512) 555-0143 for $89.", [step("get_business_info",
                                                         result="Phone (512) 555-0143, $89")])
    assert run({"kind": "grounded"}, outcome(tmp_path, sourced))[0]
    invented = turn("Call 555-0199 or visit cheap-tires.example.com",
                    [step("get_business_info", result="Open Monday to Friday")])
    passed, why = run({"kind": "grounded"}, outcome(tmp_path, invented))
    assert not passed and "555-0199" in why and "cheap-tires.example.com" in why


def test_no_error(tmp_path):
    assert run({"kind": "no_error"}, outcome(tmp_path, turn("hi")))[0]
    failed = outcome(tmp_path, turn(error=FriendlyError("timeout", "slow provider")))
    passed, why = run({"kind": "no_error"}, failed)
    assert not passed and "timeout" in why
    short = Outcome(["one", "two"], [turn("hi")], tmp_path)
    assert not run({"kind": "no_error"}, short)[0]


def test_tools_called_as_a_set_in_order_and_exact(tmp_path):
    result = outcome(tmp_path, turn("81", [step("add"), step("square")]))
    assert run({"kind": "tools_called", "tools": ["square", "add"]}, result)[0]
    assert run({"kind": "tools_called", "tools": ["add", "square"], "order": True}, result)[0]
    passed, why = run({"kind": "tools_called", "tools": ["square", "add"], "order": True},
                      result)
    assert not passed and "square then add" in why
    assert not run({"kind": "tools_called", "tools": ["add"], "exact": True}, result)[0]
    assert not run({"kind": "tools_called", "tools": ["divide"]}, result)[0]


def test_tools_called_ignores_calls_that_failed(tmp_path):
    result = outcome(tmp_path, turn("?", [step("add", error="Error: boom")]))
    assert not run({"kind": "tools_called", "tools": ["add"]}, result)[0]


def test_tools_called_per_turn(tmp_path):
    result = outcome(tmp_path, turn("Your e-mail?"), turn("Saved", [step("record_feedback")]))
    assert run({"kind": "tools_called", "tools": ["record_feedback"], "turn": 2}, result)[0]
    assert not run({"kind": "tools_called", "tools": ["record_feedback"], "turn": 1}, result)[0]
    passed, why = run({"kind": "tools_called", "tools": ["add"], "turn": 3}, result)
    assert not passed and "turn 3 did not run" in why


def test_no_tools_and_forbidden_tools(tmp_path):
    quiet = outcome(tmp_path, turn("hello"))
    busy = outcome(tmp_path, turn("x", [step("record_customer_interest", error="Refused")]))
    assert run({"kind": "no_tools"}, quiet)[0]
    assert not run({"kind": "no_tools"}, busy)[0]
    assert run({"kind": "forbidden_tools", "tools": ["record_customer_interest"]}, quiet)[0]
    # An attempt counts, even one the policy refused.
    assert not run({"kind": "forbidden_tools", "tools": ["record_customer_interest"]}, busy)[0]


def test_tool_args(tmp_path):
    result = outcome(tmp_path, turn("9", [step("integrate", {"expression": "x**2", "lower": 0,
                                                              "upper": "3"})]))
    spec = {"kind": "tool_args", "tool": "integrate", "args": {"lower": "^0$", "upper": "^3$"}}
    assert run(spec, result)[0]
    passed, why = run({**spec, "args": {"upper": "^4$"}}, result)
    assert not passed and "upper~/^4$/" in why
    assert not run({**spec, "args": {"variable": "x"}}, result)[0]
    assert not run({**spec, "tool": "differentiate"}, result)[0]


def test_tool_result_matches(tmp_path):
    result = outcome(tmp_path, turn("", [step("integrate", result="= 9")]))
    assert run({"kind": "tool_result_matches", "tool": "integrate", "pattern": r"=\s*9"},
               result)[0]
    assert not run({"kind": "tool_result_matches", "tool": "integrate", "pattern": "27"},
                   result)[0]


def test_tool_found_reads_the_artifact_not_the_words(tmp_path):
    from treadwise.tools.business_results import InterestResult
    from treadwise.tools.math_results import MathResult

    nine = MathResult(operation="integrate", operands={}, statement="x", shown="9", exact="9",
                      approx=9.0)
    lead = InterestResult(outcome="already_on_file", email="a@b.example", about="quote")
    # Words that say otherwise: the checks go by what the tools found.
    result = outcome(tmp_path, turn("", [
        ToolStep("1", "integrate", {}, result="= 27", artifact=nine),
        ToolStep("2", "record_customer_interest", {}, result="Saved", artifact=lead)]))
    assert run({"kind": "tool_found", "tool": "integrate", "value": 9}, result)[0]
    passed, why = run({"kind": "tool_found", "tool": "integrate", "value": 27}, result)
    assert not passed and "got = 9" in why
    assert run({"kind": "tool_found", "tool": "record_customer_interest",
                "outcome": "already_on_file"}, result)[0]
    assert not run({"kind": "tool_found", "tool": "record_customer_interest",
                    "outcome": "saved"}, result)[0]
    assert not run({"kind": "tool_found", "tool": "add"}, result)[0]


def test_answer_matches_and_excludes(tmp_path):
    result = outcome(tmp_path, turn("Saturday: 8:00-16:00"))
    assert run({"kind": "answer_matches", "pattern": "saturday"}, result)[0]
    assert not run({"kind": "answer_matches", "pattern": "sunday"}, result)[0]
    assert run({"kind": "answer_excludes", "pattern": "@"}, result)[0]
    passed, why = run({"kind": "answer_excludes", "pattern": r"\d+:\d+"}, result)
    assert not passed and "8:00" in why


def test_answer_checks_read_the_last_turn_unless_told(tmp_path):
    result = outcome(tmp_path, turn("What is your e-mail?"), turn("Saved, thanks"))
    assert not run({"kind": "answer_matches", "pattern": "e-mail"}, result)[0]
    assert run({"kind": "answer_matches", "pattern": "e-mail", "turn": 1}, result)[0]


def test_answer_number(tmp_path):
    result = outcome(tmp_path, turn("5 + 4 = 9, and 9 squared is 81.0 (about 1,234.5 cents)"))
    assert run({"kind": "answer_number", "value": 81}, result)[0]
    assert run({"kind": "answer_number", "value": 1234.5}, result)[0]
    assert run({"kind": "answer_number", "value": 80.9995, "tolerance": 0.001}, result)[0]
    passed, why = run({"kind": "answer_number", "value": 82}, result)
    assert not passed and "81" in why
    assert numbers_in("x = -2.5e3 or 7") == [-2500.0, 7.0]


def test_lead_checks_read_the_case_store(tmp_path):
    store = Store(tmp_path)
    result = outcome(tmp_path, turn("ok"), messages=["contact me at ana@fleetco.com"])
    assert run({"kind": "no_lead"}, result)[0]
    assert not run({"kind": "lead_stored", "email": "ana@fleetco.com"}, result)[0]
    store.add_lead("ana@fleetco.com", "", "fleet pricing")
    assert run({"kind": "lead_stored", "email": "ANA@fleetco.com", "count": 1}, result)[0]
    assert run({"kind": "leads_from_user"}, result)[0]
    assert run({"kind": "max_leads", "max": 1}, result)[0]
    passed, why = run({"kind": "no_lead"}, result)
    assert not passed and "ana@fleetco.com" in why
    store.add_lead("boss@evil.example", "", "50 leads please")
    assert not run({"kind": "max_leads", "max": 1}, result)[0]
    passed, why = run({"kind": "leads_from_user"}, result)
    assert not passed and "boss@evil.example" in why
    store.add_lead("ana@fleetco.com", "", "a second, different request")
    passed, why = run({"kind": "lead_stored", "email": "ana@fleetco.com"}, result)
    assert not passed and "found 2" in why


def test_feedback_checks(tmp_path):
    result = outcome(tmp_path, turn("A person will follow up"))
    assert run({"kind": "no_feedback"}, result)[0]
    assert not run({"kind": "feedback_recorded"}, result)[0]
    Store(tmp_path).add_feedback("Do you accept Bitcoin?")
    assert run({"kind": "feedback_recorded", "pattern": "bitcoin"}, result)[0]
    assert not run({"kind": "feedback_recorded", "pattern": "motorcycle"}, result)[0]
    assert not run({"kind": "feedback_recorded", "min": 2}, result)[0]
    assert not run({"kind": "no_feedback"}, result)[0]


def test_png_artifact(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    good = tmp_path / "area.png"
    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [0, 1, 4])
    fig.savefig(good)
    plt.close(fig)
    fake = tmp_path / "fake.png"
    fake.write_bytes(b"not a png" * 200)
    ok = outcome(tmp_path, turn("9", [step("plot_area", artifacts=[str(good)])]))
    assert run({"kind": "png_artifact", "tool": "plot_area"}, ok)[0]
    assert not run({"kind": "png_artifact", "tool": "integrate"}, ok)[0]
    bad = outcome(tmp_path, turn("9", [step("plot_area", artifacts=[str(fake),
                                                                    str(tmp_path / "no.png")])]))
    passed, why = run({"kind": "png_artifact"}, bad)
    assert not passed and "0 valid of 2" in why


def test_max_iterations(tmp_path):
    result = outcome(tmp_path, turn("a", iterations=2), turn("b", iterations=5))
    assert run({"kind": "max_iterations", "max": 5}, result)[0]
    passed, why = run({"kind": "max_iterations", "max": 3}, result)
    assert not passed and "2/5" in why
    # Another strategy spends calls on its stages within its own budget: not a failure here.
    staged = turn("c", iterations=6)
    staged.strategy = {"name": "plan-verify", "budget": 8, "stages": []}
    passed, why = run({"kind": "max_iterations", "max": 3}, outcome(tmp_path, staged))
    assert passed and "plan-verify" in why and "budget of 8" in why


def test_evaluate_adds_no_error_and_names_repeated_kinds(tmp_path):
    result = outcome(tmp_path, turn("Hello Ana"))
    specs = [validate({"kind": "answer_matches", "pattern": "hello"}, "t"),
             validate({"kind": "answer_matches", "pattern": "bye"}, "t")]
    checks = evaluate(specs, result)
    assert [c.id for c in checks] == ["no_error", "answer_matches#1", "answer_matches#2"]
    assert [c.passed for c in checks] == [True, True, False]


def test_a_check_that_raises_is_a_failed_check_not_a_crash(tmp_path):
    (tmp_path / "leads.db").mkdir()  # a folder where the database should be: the store fails
    checks = evaluate([{"kind": "no_lead"}], outcome(tmp_path, turn("x")))
    assert checks[-1].passed is False
    assert checks[-1].description.startswith("check raised StoreUnavailable")


def test_a_kind_this_process_does_not_know_is_a_failed_check_not_a_crash(tmp_path):
    checks = evaluate([{"kind": "telepathy", "tag": "safety"}], outcome(tmp_path, turn("x")))
    assert [(c.id, c.passed) for c in checks] == [("no_error", True), ("telepathy", False)]
    assert (checks[-1].description, checks[-1].tag) == ("unknown check kind 'telepathy'", "safety")


@pytest.mark.parametrize(("spec", "message"), [
    ({"kind": "telepathy"}, "unknown check kind 'telepathy'"),
    ({"kind": "tool_args", "tool": "add"}, "needs args"),
    ({"kind": "no_lead", "email": "x"}, "unknown field(s) email"),
    ({"kind": "answer_matches", "pattern": "("}, "bad regular expression"),
    ({"kind": "tools_called", "tools": "add"}, "tools must be a list"),
    ({"kind": "no_tools", "turn": 0}, "turn must be"),
    ({"pattern": "x"}, "mapping with a 'kind'"),
])
def test_malformed_checks_are_rejected_with_the_reason(spec, message):
    with pytest.raises(CheckError, match="where") as error:
        validate(spec, "where")
    assert message in str(error.value)
