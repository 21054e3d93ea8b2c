"""The local model through our provider and graph vs llama-cpp-python called directly, same run.

Prose: both read the same prompt text (the persona's essentials and the question), sample with
the same settings and run on the same number of threads; each keeps what it already evaluated
from the previous question, as it would in a conversation. Pairs alternate who goes first.
Constrained: the grammar-held steps of the default settings (a tool's arguments, an answer
quoting the tool's result) through our engine vs llama.cpp direct with the same grammar; the
grammar's own cost is llama.cpp direct with it vs without it on the same prompts.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from treadwise.agent import Agent, TextDelta
from treadwise.agent.prompts import build_system_prompt
from treadwise.models import ModelSettings, local_prompts, resolve_model
from treadwise.models.llamacpp import Constraint, Generation, Sampling, _threads, engine
from treadwise.models.tool_grammar import arguments_grammar, quote_grammar
from treadwise.personas import get_persona
from treadwise.settings import Settings
from treadwise.tools import ToolContext, get_tools

SPEC = "local:smollm2"
MAX_TOKENS = 64
CONSTRAINED_TOKENS = 160
# Asks whose right tool is known: its arguments and its quoted result are generated held.
HELD = [
    ("Add 5 and 4", "add", {"a": 5, "b": 4}),
    ("Calculate the integral of x^2 from 0 to 3", "integrate",
     {"expression": "x^2", "variable": "x", "lower": 0, "upper": 3}),
    ("Do you offer mobile tire installation in Austin?", "check_service_availability",
     {"location": "Austin", "service_type": "mobile installation"}),
    ("What are your opening hours?", "get_business_info", {"topic": "opening hours"}),
    ("Which tires for my SUV in snow?", "get_tire_recommendation",
     {"vehicle_type": "SUV", "usage": "winter/snow"}),
]
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
    for event in agent.stream(question, agent.request(thread_id=thread, model=SPEC)):
        if isinstance(event, TextDelta):
            last = time.perf_counter()
            first = first or last
        elif hasattr(event, "result"):
            result = event.result
    if first is None or result.error is not None:
        raise SystemExit(f"no streamed text for {question!r}: {result.error or 'tool call'}")
    tokens = result.usage["output_tokens"]
    return first - started, (tokens - 1) / (last - first), result.answer


def direct(llm, prompt: str, gbnf: str | None = None,
           penalty: float = Sampling.repeat_penalty) -> tuple[float, float, str]:
    from llama_cpp import LlamaGrammar

    sampling = Sampling()
    grammar = LlamaGrammar.from_string(gbnf, verbose=False) if gbnf else None
    started = time.perf_counter()
    first = last = None
    tokens, text = 0, []
    for chunk in llm.create_completion(
            prompt, max_tokens=CONSTRAINED_TOKENS if gbnf else MAX_TOKENS, temperature=0.0,
            top_p=sampling.top_p, top_k=sampling.top_k, min_p=sampling.min_p,
            repeat_penalty=penalty, stream=True, grammar=grammar):
        last = time.perf_counter()
        first = first or last
        tokens += 1
        text.append(chunk["choices"][0]["text"])
    return first - started, (tokens - 1) / (last - first), "".join(text).strip()


def engine_run(path: str, blocks: list[str], gbnf: str, penalty: float
               ) -> tuple[float, float, str]:
    """Our engine on a grammar-held step: (first token s, tokens per second after it, text)."""
    stats = Generation()
    started = time.perf_counter()
    first = last = None
    text = []
    for piece in engine(path).generate(
            blocks, max_tokens=CONSTRAINED_TOKENS, temperature=0.0, seed=0, timeout_s=600,
            stats=stats, sampling=Sampling(repeat_penalty=penalty), constraint=Constraint(gbnf)):
        last = time.perf_counter()
        first = first or last
        text.append(piece)
    return first - started, (stats.output_tokens - 1) / (last - first), "".join(text).strip()


def held_steps(system: SystemMessage) -> list[tuple[str, list[str], str, float]]:
    """(name, prompt blocks, grammar, repeat penalty) of the default settings' grammar-held
    steps for a few asks: the arguments of the right tool, then the answer quoting its result."""
    tools = {t.name: t for t in get_tools("math", "business",
                                          context=ToolContext(Path(tempfile.mkdtemp())))}
    steps = []
    for ask, name, args in HELD:
        spec = convert_to_openai_tool(tools[name])
        steps.append((f"args {name}", local_prompts.arguments_prompt(spec, ask),
                      arguments_grammar(spec), 1.0))
        result = [ToolMessage(tools[name].invoke(args), tool_call_id="1", name=name)]
        steps.append((f"quote {name}", local_prompts.answer_prompt(system.text, ask, result),
                      quote_grammar(local_prompts.result_lines(result)),
                      Sampling.repeat_penalty))
    return steps


def constrained(path: str, llm, system: SystemMessage) -> None:
    tps, cost, share = [], [], []
    for name, blocks, gbnf, penalty in held_steps(system):
        prompt = "".join(blocks)
        mine = engine_run(path, blocks, gbnf, penalty)
        theirs = direct(llm, prompt, gbnf, penalty)
        free = direct(llm, prompt, None, penalty)
        tps.append(mine[1] / theirs[1])
        cost.append(1000 / theirs[1] - 1000 / free[1])
        share.append(1 - theirs[1] / free[1] if free[1] else 0.0)
        print(f"  {name:<34} {mine[1]:5.1f} vs {theirs[1]:5.1f} tokens/s held "
              f"(llama.cpp free {free[1]:5.1f}); {mine[2][:40]!r}")
    print(f"{len(tps)} grammar-held steps (arguments and quoted answers), temperature 0")
    print(f"local_model_tps_constrained: ratio {statistics.median(tps):.2f} (goal >= 0.9)")
    print(f"local_grammar_cost: {statistics.median(cost):.1f} ms per token, "
          f"{statistics.median(share):.0%} of a held token's time (llama.cpp with the grammar "
          "vs without it, same prompts)")


def main() -> None:
    from llama_cpp import Llama

    settings = Settings(data_dir=Path(tempfile.mkdtemp(prefix="tw-bench-")), timeout_s=600)
    model = resolve_model(SPEC, ModelSettings(max_tokens=MAX_TOKENS).reached_by(settings))
    # Prose: no tools bound, so every question is one answer step.
    agent = Agent(settings, tools=[], models={SPEC: model})
    system = SystemMessage(build_system_prompt(get_persona("friendly")))
    llm = Llama(model_path=model.model_path, n_ctx=model.n_ctx, verbose=False,
                n_threads=_threads(settings.local_threads),
                n_threads_batch=_threads(settings.local_threads))

    def prompt(question: str) -> str:
        return "".join(model.turn([system, HumanMessage(question)]).prose_blocks())

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
    constrained(model.model_path, llm, system)


if __name__ == "__main__":
    main()
