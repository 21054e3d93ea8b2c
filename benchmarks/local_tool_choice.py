"""SmolLM2's tool choice by decoding and routing: right tool first, valid arguments, invented
names and right answers over asks the prompts' worked examples do not contain.

Routing is two levers: the agent's (TREADWISE_ROUTING: the toolsets a message names are bound,
"on", or all 19 tools, "off") and the local model's pick step (routing=tool). Every
configuration answers the same asks through the agent (temperature 0, one fresh thread each);
the baseline is free decoding with no routing at all, measured in the same run.
LOCAL_CHOICE_QUICK=1 runs the default settings and the baseline only.
"""

from __future__ import annotations

import os
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
]


BASELINE = (LocalSpec("smollm2", "free", "none"), "off")
DEFAULT = (LocalSpec("smollm2"), "on")


def configurations() -> list[tuple[LocalSpec, str]]:
    """(local spec, agent routing) pairs."""
    if os.environ.get("LOCAL_CHOICE_QUICK"):
        return [BASELINE, DEFAULT]
    return [(LocalSpec("smollm2", d, r), mode) for d in DECODINGS  # type: ignore[arg-type]
            for r in ROUTINGS for mode in ("off", "on")]


def name(config: tuple[LocalSpec, str]) -> str:
    return f"{config[0].spec} agent-routing={config[1]}"


def run(agent: Agent, config: tuple[LocalSpec, str]) -> dict[str, float]:
    spec, mode = config
    tools = {t.name: t for t in agent.tools}
    right = valid = calls = invented = answered = expected = 0
    times = []
    for i, (ask, tool, answer) in enumerate(ASKS):
        started = time.perf_counter()
        result = agent.run(ask, model=spec.spec, thread_id=f"{name(config)}-{i}", seed=i,
                           routing=mode)
        times.append(time.perf_counter() - started)
        steps = result.tool_calls
        right += bool(steps) and steps[0].name == tool
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
        print(f"  {name(config):<62} {ask[:30]:<30} {steps[0].name if steps else '-':<26} "
              f"{times[-1]:5.1f}s {result.answer[:50]!r}", flush=True)
    return {"right": right / len(ASKS), "valid": valid / calls if calls else 1.0,
            "invented": invented, "calls": calls, "answered": answered / expected,
            "p50_s": statistics.median(times)}


def main() -> None:
    assert not {a for a, *_ in ASKS} & {e.ask for e in examples()}, "asks must be held out"
    settings = Settings(data_dir=Path(tempfile.mkdtemp(prefix="tw-choice-")), timeout_s=600)
    agent = Agent(settings)
    rows = {name(config): run(agent, config) for config in configurations()}
    print(f"{len(ASKS)} asks, temperature 0")
    print(f"{'configuration':<62} right-first valid-args invented answered p50")
    for label, row in rows.items():
        print(f"{label:<62} {row['right']:11.2f} {row['valid']:10.2f} "
              f"{int(row['invented']):>4}/{int(row['calls']):<3} {row['answered']:8.2f} "
              f"{row['p50_s']:5.1f}s")
    default, baseline = rows[name(DEFAULT)], rows[name(BASELINE)]
    print(f"local_right_tool: rate {default['right']:.2f} (goal >= 0.6; free decoding "
          f"without routing {baseline['right']:.2f} in the same run)")
    print(f"local_invented_tools: count {int(default['invented'])} (goal 0; free decoding "
          f"without routing {int(baseline['invented'])})")


if __name__ == "__main__":
    main()
