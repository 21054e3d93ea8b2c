"""The local model through our provider and graph vs llama-cpp-python called directly, same run.

Both read the same prompt text (our system block, tools section and the question), sample with
the same settings and run on the same number of threads; each keeps what it already evaluated
from the previous question, as it would in a conversation. Pairs alternate who goes first.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from treadwise.agent import Agent, TextDelta
from treadwise.agent.prompts import build_system_prompt
from treadwise.models import resolve_model
from treadwise.models.llamacpp import Sampling, _threads
from treadwise.personas import get_persona
from treadwise.settings import Settings

SPEC = "local:smollm2"
MAX_TOKENS = 64
QUESTIONS = [
    "Tell me about your company in a few sentences.",
    "Why should I check my tire pressure every month?",
    "What makes a good winter tire?",
    "How long do tires usually last?",
    "Explain tire rotation to a new driver.",
    "What should I do after a flat tire on the highway?",
    "Are all-season tires good enough for a mild climate?",
    "What does the tread depth of a tire tell me?",
]


def ours(agent: Agent, question: str, thread: str) -> tuple[float, float, str]:
    """(seconds to the first streamed text, tokens per second after it, the answer)."""
    started = time.perf_counter()
    first = last = None
    for event in agent.stream(question, thread_id=thread, model=SPEC):
        if isinstance(event, TextDelta):
            last = time.perf_counter()
            first = first or last
        elif hasattr(event, "result"):
            result = event.result
    if first is None or result.error is not None:
        raise SystemExit(f"no streamed text for {question!r}: {result.error or 'tool call'}")
    tokens = result.usage["output_tokens"]
    return first - started, (tokens - 1) / (last - first), result.answer


def direct(llm, prompt: str) -> tuple[float, float, str]:
    sampling = Sampling()
    started = time.perf_counter()
    first = last = None
    tokens, text = 0, []
    for chunk in llm.create_completion(
            prompt, max_tokens=MAX_TOKENS, temperature=0.0, top_p=sampling.top_p,
            top_k=sampling.top_k, min_p=sampling.min_p, repeat_penalty=sampling.repeat_penalty,
            stream=True):
        last = time.perf_counter()
        first = first or last
        tokens += 1
        text.append(chunk["choices"][0]["text"])
    return first - started, (tokens - 1) / (last - first), "".join(text).strip()


def main() -> None:
    from llama_cpp import Llama

    settings = Settings(data_dir=Path(tempfile.mkdtemp(prefix="tw-bench-")), timeout_s=600)
    model = resolve_model(SPEC, settings=settings).model_copy(update={"max_tokens": MAX_TOKENS})
    agent = Agent(settings, models={SPEC: model})
    tools = [convert_to_openai_tool(t) for t in agent.tools]
    system = SystemMessage(build_system_prompt(get_persona("friendly")))
    llm = Llama(model_path=model.model_path, n_ctx=model.n_ctx, verbose=False,
                n_threads=_threads(), n_threads_batch=_threads())

    def prompt(question: str) -> str:
        return "".join(model.prompt([system, HumanMessage(question)], tools))

    ours(agent, "Hello!", "warm"), direct(llm, prompt("Hello!"))  # load and read the system block
    ttft, tps, same = [], [], 0
    for i, question in enumerate(QUESTIONS):
        if i % 2:
            mine = ours(agent, question, f"q{i}")
            theirs = direct(llm, prompt(question))
        else:
            theirs = direct(llm, prompt(question))
            mine = ours(agent, question, f"q{i}")
        ttft.append(mine[0] / theirs[0])
        tps.append(mine[1] / theirs[1])
        same += mine[2] == theirs[2]
        print(f"  {question[:40]:<40} first token {mine[0] * 1000:6.0f} ms vs "
              f"{theirs[0] * 1000:6.0f} ms, {mine[1]:5.1f} vs {theirs[1]:5.1f} tokens/s")
    print(f"{len(QUESTIONS)} questions, {MAX_TOKENS} tokens at most, temperature 0; "
          f"identical replies: {same}/{len(QUESTIONS)}; medians of per-question ratios")
    print(f"local_model_tps: ratio {statistics.median(tps):.2f} (goal >= 0.9)")
    print(f"local_model_ttft: ratio {statistics.median(ttft):.2f} (goal <= 1.2)")


if __name__ == "__main__":
    main()
