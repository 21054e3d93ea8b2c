"""SmolLM2 (real model) with grounding on: the issue 36 asks where it invented arguments. No
tool runs with a number, city or lead detail the customer did not give, and no answer states
what such a call found."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from treadwise.agent import Agent
from treadwise.settings import Settings
from treadwise.storage.sqlite import Store

pytestmark = pytest.mark.slow
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")
ASKS = ["What is the square root of 81?", "Add 5 and 4, then square the result",
        "Calculate 15% of 240",
        "Which tires do you recommend for an SUV I mostly drive on the highway?",
        "Please contact me at bob@fleetco.com about pricing"]


def _numbers(text: str) -> set[float]:
    return {float(n) for n in NUMBER.findall(text)}


# A hang guard for a busy machine, not a speed goal.
@pytest.mark.timeout(900)
def test_the_local_model_runs_no_tool_with_an_invented_value(data_dir: Path,
                                                             local_model: str) -> None:
    agent = Agent(Settings(data_dir=data_dir, timeout_s=300))
    for i, ask in enumerate(ASKS):
        result = agent.run(ask, model=local_model, thread_id=f"ground-{i}")
        assert result.error is None and result.answer.strip(), ask
        # Checked here from the ask alone: numbers it writes (15% as 0.15, a square root's
        # power 1/2) and the results of steps that ran before.
        known = _numbers(ask) | {float(n) / 100 for n in re.findall(r"(\d+)%", ask)} | {1, 2, 0.5}
        for step in result.tool_calls:
            if step.error is not None:
                continue
            written = {n for v in step.args.values() for n in _numbers(str(v))}
            assert written <= known, (ask, step)
            # None of these asks names a city, so no availability check may run.
            assert step.name != "check_service_availability", (ask, step)
            known |= _numbers(step.result or "")
    leads = Store(data_dir).leads()
    assert all(not _numbers(lead["message"]) and "van" not in lead["message"].lower()
               for lead in leads), leads
