"""SmolLM2's tool choice by decoding and routing: right tool first, valid arguments, invented
names, right answers and wrong answers over asks the prompts' worked examples do not contain.

A wrong answer is a confident answer to a different question or with invented values, graded
from each ask's expected tool, values and answer alone (`grade`), never by the grounding code
it measures; the defaults with grounding off (local:smollm2?grounding=off) run beside them.

Routing is two levers: the agent's (TREADWISE_ROUTING: the toolsets a message names are bound,
"on", or all 19 tools, "off") and the local model's pick step (routing=tool). Every
configuration answers the same asks through the agent (temperature 0, one fresh thread each);
the baseline is free decoding with no routing at all, measured in the same run.
LOCAL_CHOICE_QUICK=1 runs the default settings, them with grounding off, and the baseline.
"""

from __future__ import annotations

import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from treadwise.agent import Agent
from treadwise.models.local import LocalSpec
from treadwise.models.local_examples import examples
from treadwise.models.local_turn import DECODINGS, ROUTINGS
from treadwise.settings import Settings

# (ask, the right first tool, text the answer must hold or None)
ASKS = [
    ("Add 5 and 4", "add", "9"),
    ("What is 7 times 8?", "multiply", "56"),
    ("Calculate the integral of x^2 from 0 to 3", "integrate", "9"),
    ("Do you offer mobile tire installation in Austin?", "check_service_availability", "Austin"),
    ("What are your opening hours?", "get_business_info", "Monday"),
    ("What's 15 plus 27?", "add", "42"),
    ("Multiply 12 by 12", "multiply", "144"),
    ("How much is 81 divided by 9?", "divide", "9"),
    ("What is 9 squared?", "square", "81"),
    ("Find the derivative of x^4", "differentiate", "4x^3"),
    ("Solve x + 5 = 12", "solve_equation", "7"),
    ("What is the square root of 225?", "square_root", "15"),
    ("Raise 3 to the power of 5", "power", "243"),
    ("What is 1000 minus 1?", "subtract", "999"),
    ("Is tire repair available in Fort Worth?", "check_service_availability", "Fort Worth"),
    ("What tires do you recommend for a minivan used on the highway?",
     "get_tire_recommendation", None),
    ("Do you have a phone number I can call?", "get_business_info", None),
    ("What warranty do your tires come with?", "get_business_info", None),
    ("Can I pay in euros?", "record_feedback", None),
    ("Do you install tires in Oklahoma City?", "check_service_availability", "Oklahoma"),
    # Issue 36's asks, where SmolLM2 invented arguments.
    ("What is the square root of 81?", "square_root", "9"),
    ("Add 5 and 4, then square the result", "add", "81"),
    ("Calculate 15% of 240", "calculate|multiply", "36"),
    ("Which tires do you recommend for an SUV I mostly drive on the highway?",
     "get_tire_recommendation", None),
    ("Please contact me at bob@fleetco.com about pricing", "record_customer_interest", None),
    ("What is the derivative of sin(x)*x?", "differentiate", "cos"),
]
# What each ask's calls may hold, graded here and not by the grounding code: the values a
# right call writes (unordered; each must appear among its arguments) for each tool the ask
# may use, the first step's result among them for a two-step ask.
EXPECTED: dict[str, dict[str, tuple[object, ...]]] = {
    "Add 5 and 4": {"add": (5, 4)}, "What is 7 times 8?": {"multiply": (7, 8)},
    "Calculate the integral of x^2 from 0 to 3": {"integrate": ("x^2", 0, 3),
                                                  "plot_area": ("x^2", 0, 3)},
    "Do you offer mobile tire installation in Austin?": {"check_service_availability":
                                                         ("austin",)},
    "What are your opening hours?": {"get_business_info": ()},
    "What's 15 plus 27?": {"add": (15, 27)}, "Multiply 12 by 12": {"multiply": (12, 12)},
    "How much is 81 divided by 9?": {"divide": (81, 9)}, "What is 9 squared?": {"square": (9,)},
    "Find the derivative of x^4": {"differentiate": ("x^4", 1)},
    "Solve x + 5 = 12": {"solve_equation": (5, 12)},
    "What is the square root of 225?": {"square_root": (225,)},
    "Raise 3 to the power of 5": {"power": (3, 5)},
    "What is 1000 minus 1?": {"subtract": (1000, 1)},
    "Is tire repair available in Fort Worth?": {"check_service_availability": ("fort worth",)},
    "What tires do you recommend for a minivan used on the highway?": {
        "get_tire_recommendation": ("minivan|van", "highway")},
    "Do you have a phone number I can call?": {"get_business_info": ()},
    "What warranty do your tires come with?": {"get_business_info": ()},
    "Can I pay in euros?": {"record_feedback": (), "get_business_info": ()},
    "Do you install tires in Oklahoma City?": {"check_service_availability":
                                               ("oklahoma city",)},
    "What is the square root of 81?": {"square_root": (81,)},
    "Add 5 and 4, then square the result": {"add": (5, 4), "square": (9,)},
    "Calculate 15% of 240": {"calculate": (240,), "multiply": (240,)},
    "Which tires do you recommend for an SUV I mostly drive on the highway?": {
        "get_tire_recommendation": ("suv", "highway")},
    "Please contact me at bob@fleetco.com about pricing": {
        "record_customer_interest": ("bob@fleetco.com",)},
    "What is the derivative of sin(x)*x?": {"differentiate": ("sin(x)*x|x*sin(x)", 1)},
}
# Arguments a call may leave out, at the tool's own default.
DEFAULTS: dict[str, dict[str, object]] = {"differentiate": {"order": 1}}
# Facts a lead's message may only hold when the customer gave them.
FACT_WORDS = re.compile(r"\b(?:vans?|trucks?|suvs?|cars?|sedans?|fleets?|minivans?|pickups?"
                        r"|trailers?|buses|bus|tires?)\b", re.I)
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")
CLAIM = re.compile(r"(?<![\w.])\d+(?:\.\d+)?|\b[A-Z][a-z]{2,}\b")


BASELINE = (LocalSpec("smollm2", "free", "none"), "off")
DEFAULT = (LocalSpec("smollm2"), "on")
# The defaults with the grounding grammar and guard off: what grounding changes.
UNGROUNDED = (LocalSpec("smollm2", grounding="off"), "on")


def configurations() -> list[tuple[LocalSpec, str]]:
    """(local spec, agent routing) pairs."""
    if os.environ.get("LOCAL_CHOICE_QUICK"):
        return [BASELINE, DEFAULT, UNGROUNDED]
    return [*((LocalSpec("smollm2", d, r), mode) for d in DECODINGS  # type: ignore[arg-type]
              for r in ROUTINGS for mode in ("off", "on")), UNGROUNDED]


def _value(value: object) -> str:
    """An argument as the grader compares it: 5, 5.0 and "5" alike; x**2 as x^2."""
    try:
        number = float(str(value))
        return repr(int(number)) if number.is_integer() else repr(number)
    except ValueError:
        return re.sub(r"\s+", "", str(value).replace("**", "^")).casefold()


def _holds(written: str, wanted: str) -> bool:
    """An argument is the wanted value, or holds it: a number among an expression's numbers,
    a longer text inside it ("mobile installation" in "mobile installation service")."""
    if written == wanted:
        return True
    if re.fullmatch(r"-?\d+(?:\.\d+)?", wanted):
        return wanted in {_value(n) for n in re.findall(r"\d+(?:\.\d+)?", written)}
    return len(wanted) > 3 and wanted in written


def off_question(ask: str, step: object, before: list[str]) -> bool:
    """A call that ran but is not one the ask wants: another tool, other values, a number
    neither the ask nor an earlier result holds, or a lead detail the customer never gave."""
    name, args = step.name, {**DEFAULTS.get(step.name, {}), **step.args}  # type: ignore
    wanted = EXPECTED[ask].get(name)
    if wanted is None:
        return True
    written = [_value(v) for v in args.values()]
    # "minivan|van": the business profile's own synonyms of a value.
    if any(not any(_holds(v, _value(o)) for o in str(w).split("|") for v in written)
           for w in wanted):
        return True
    known = {_value(n) for n in NUMBER.findall(" ".join([ask, *before]))}
    percents = {_value(float(n) / 100) for n in re.findall(r"(\d+)\s*%", ask)}
    numbers = [_value(n) for v in args.values() for n in NUMBER.findall(str(v))]
    if any(n not in known | percents | {"1", "2"} for n in numbers):
        return True
    if name == "record_customer_interest":
        facts = {w.casefold().rstrip("s") for w in FACT_WORDS.findall(str(args.get("message")))}
        return bool(facts - {w.casefold().rstrip("s") for w in FACT_WORDS.findall(ask)})
    return False


def grade(ask: str, tool: str, answer: str | None, result: object) -> tuple[bool, bool]:
    """(right, wrong) for one reply, from the ask's expected tool, values and answer alone.
    Right: the expected tool ran (a refused first try allowed), nothing ran off the question,
    and the answer holds the expected text. Wrong: a confident answer to a different question
    or with invented values - the reply states what an off-question call found, or states a
    result ("= 9", "is 9") other than the expected one although no tool ran. An honest "I
    can't" is neither."""
    steps = result.tool_calls  # type: ignore[attr-defined]
    text = result.answer  # type: ignore[attr-defined]
    ran = [s for s in steps if s.error is None]
    off = [s for i, s in enumerate(ran)
           if off_question(ask, s, [r.result or "" for r in ran[:i]])]
    # The expected tool ran (after a refused first try, too), nothing ran off the question.
    used = any(re.fullmatch(tool, s.name) for s in ran)
    right = used and not off and (answer is None or answer in text)
    said = set(CLAIM.findall(text)) - set(CLAIM.findall(ask))
    quoted = any(said & set(CLAIM.findall(s.result or "")) for s in off)
    stated = {m for m in re.findall(r"(?:=|\bis)\s*(-?\d+(?:\.\d+)?)", text)} - set(
        CLAIM.findall(ask))
    guessed = not ran and answer is not None and answer.isdigit() and bool(stated) and \
        answer not in stated
    return right, not right and (quoted or guessed)


def name(config: tuple[LocalSpec, str]) -> str:
    return f"{config[0].spec} agent-routing={config[1]}"


def run(agent: Agent, config: tuple[LocalSpec, str]) -> dict[str, float]:
    spec, mode = config
    tools = {t.name: t for t in agent.tools}
    right = valid = calls = invented = answered = expected = rights = wrongs = 0
    times = []
    for i, (ask, tool, answer) in enumerate(ASKS):
        started = time.perf_counter()
        result = agent.run(ask, model=spec.spec, thread_id=f"{name(config)}-{i}", seed=i,
                           routing=mode)
        times.append(time.perf_counter() - started)
        steps = result.tool_calls
        right += bool(steps) and re.fullmatch(tool, steps[0].name) is not None
        graded = grade(ask, tool, answer, result)
        rights, wrongs = rights + graded[0], wrongs + graded[1]
        for step in steps:
            calls += 1
            if step.name not in tools:
                invented += 1
                continue
            try:
                tools[step.name].args_schema.model_validate(step.args)
                valid += 1
            except ValueError:
                pass
        if answer is not None:
            expected += 1
            answered += answer in result.answer
        mark = "WRONG" if graded[1] else "right" if graded[0] else "-"
        print(f"  {name(config):<62} {ask[:30]:<30} {steps[0].name if steps else '-':<26} "
              f"{times[-1]:5.1f}s {mark:<5} {result.answer[:70]!r}", flush=True)
    return {"right": right / len(ASKS), "valid": valid / calls if calls else 1.0,
            "invented": invented, "calls": calls, "answered": answered / expected,
            "p50_s": statistics.median(times), "rights": rights, "wrongs": wrongs}


def main() -> None:
    assert not {a for a, *_ in ASKS} & {e.ask for e in examples()}, "asks must be held out"
    settings = Settings(data_dir=Path(tempfile.mkdtemp(prefix="tw-choice-")), timeout_s=600)
    agent = Agent(settings)
    rows = {name(config): run(agent, config) for config in configurations()}
    print(f"{len(ASKS)} asks, temperature 0")
    print(f"{'configuration':<62} right-first valid-args invented answered right wrong p50")
    for label, row in rows.items():
        print(f"{label:<62} {row['right']:11.2f} {row['valid']:10.2f} "
              f"{int(row['invented']):>4}/{int(row['calls']):<3} {row['answered']:8.2f} "
              f"{int(row['rights']):5} {int(row['wrongs']):5} {row['p50_s']:5.1f}s")
    default, baseline = rows[name(DEFAULT)], rows[name(BASELINE)]
    ungrounded = rows[name(UNGROUNDED)]
    print(f"local_grounded_answers: right answers {int(default['rights'])}/{len(ASKS)}, "
          f"wrong answers {int(default['wrongs'])} (goal 0; grounding off: right answers "
          f"{int(ungrounded['rights'])}, wrong answers {int(ungrounded['wrongs'])} in the "
          "same run)")
    print(f"local_right_tool: rate {default['right']:.2f} (goal >= 0.6; free decoding "
          f"without routing {baseline['right']:.2f} in the same run)")
    print(f"local_invented_tools: count {int(default['invented'])} (goal 0; free decoding "
          f"without routing {int(baseline['invented'])})")


if __name__ == "__main__":
    main()
