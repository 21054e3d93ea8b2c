"""Bytes and input tokens per model call, routing and compact prompts on vs off, via openai:."""

# The default scenarios (experiments/scenarios/default.yaml) run through the real
# langchain-openai client against a loopback OpenAI server that records every request. The
# server's replies mirror what the offline model (rule-based, not an LLM) would do with the same
# request: it reads the messages and the tools offered, and calls a tool or answers exactly as the
# offline model would, so a tool left out by routing is a tool it cannot call. Input tokens are
# counted with a real BPE tokenizer (SmolLM2's, from the bundled GGUF) over what the model reads:
# each message's text and tool calls, and each offered tool's schema; without llama-cpp-python,
# four bytes a token. Run: python benchmarks/request_size.py

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from tests.support.loopback import OpenAIServer, Reply
from treadwise.agent import Agent
from treadwise.models.offline import OfflineModel
from treadwise.personas import get_persona
from treadwise.rules.dialogue import STATE_KEY
from treadwise.settings import Settings
from treadwise.tools import artifacts

REPO = Path(__file__).resolve().parent.parent
SCENARIOS = REPO / "experiments" / "scenarios" / "default.yaml"
MODEL = "openai:gpt-4o-mini"
GOAL = 0.4


def token_counter() -> tuple[Callable[[str], int], str]:
    """A real tokenizer when llama-cpp-python and the bundled model are here, else 4 bytes."""
    try:
        import llama_cpp

        from treadwise.models.local import model_path

        vocab = llama_cpp.Llama(str(model_path("smollm2")), vocab_only=True, verbose=False)
        return (lambda text: len(vocab.tokenize(text.encode(), add_bos=False))
                if text else 0), "SmolLM2's BPE tokenizer"
    except Exception:  # noqa: BLE001 - any missing piece falls back to the rule of thumb
        return (lambda text: (len(text.encode()) + 3) // 4), "an estimate of 4 bytes a token"


class OfflineMirror:
    """The loopback server's brain: the offline model's next step for each request."""

    def __init__(self, count: Callable[[str], int]):
        self.model = OfflineModel()
        self.persona = get_persona("friendly")
        self.count = count
        # The offline model keeps its dialogue state on its replies, and reads what the tools
        # found from their artifacts; over HTTP both are lost, so the brain remembers them by
        # the reply's (the tool result's) text and puts them back on the way in.
        self.states: dict[str, Any] = {}
        self.found: dict[str, Any] = {}
        self.input_tokens: list[int] = []

    def __call__(self, request: dict[str, Any]) -> Reply:
        messages = self.messages(request["messages"])
        tools = request.get("tools") or []
        reply = self.model.respond_turn(messages, tools, request.get("tool_choice"),
                                        self.persona)
        if state := reply.additional_kwargs.get(STATE_KEY):
            self.states[reply.text] = state
        prompt = self.tokens_read(request)
        self.input_tokens.append(prompt)
        output = self.count(reply.text + json.dumps([c["args"] for c in reply.tool_calls]))
        return Reply(text=reply.text,
                     tool_calls=[{"name": c["name"], "args": c["args"]} for c in reply.tool_calls],
                     usage={"prompt_tokens": prompt, "completion_tokens": output,
                            "total_tokens": prompt + output})

    def tokens_read(self, request: dict[str, Any]) -> int:
        texts = [m.get("content") or "" for m in request["messages"]]
        texts += [json.dumps(c["function"]) for m in request["messages"]
                  for c in m.get("tool_calls") or []]
        texts += [json.dumps(tool["function"]) for tool in request.get("tools") or []]
        return sum(self.count(text if isinstance(text, str) else json.dumps(text))
                   for text in texts)

    def messages(self, raw: list[dict[str, Any]]) -> list[BaseMessage]:
        names: dict[str, str] = {}
        out: list[BaseMessage] = []
        for message in raw:
            role, content = message["role"], message.get("content") or ""
            if role == "system":
                out.append(SystemMessage(content))
            elif role == "user":
                out.append(HumanMessage(content))
            elif role == "assistant":
                calls = [{"name": c["function"]["name"], "id": c["id"], "type": "tool_call",
                          "args": json.loads(c["function"]["arguments"] or "{}")}
                         for c in message.get("tool_calls") or []]
                names.update((c["id"], c["name"]) for c in calls)
                state = self.states.get(content)
                out.append(AIMessage(content, tool_calls=calls,
                                     additional_kwargs={STATE_KEY: state} if state else {}))
            elif role == "tool":
                call_id = message["tool_call_id"]
                out.append(ToolMessage(content, tool_call_id=call_id, name=names.get(call_id),
                                       artifact=self.found.get(content),
                                       status="error" if content.startswith("Error") else
                                       "success"))
        return out


def run(mode: str, scenarios: list[dict[str, Any]], count: Callable[[str], int],
        data_dir: Path) -> dict[str, Any]:
    """Every scenario through openai: with this routing mode; what the server received."""
    mirror = OfflineMirror(count)
    worded = artifacts.for_model

    def remembered(found: Any) -> str:
        text = worded(found)
        mirror.found[text] = found
        return text

    artifacts.for_model = remembered
    with OpenAIServer(mirror) as server:
        os.environ["OPENAI_BASE_URL"] = server.url + "/v1"
        os.environ["OPENAI_API_KEY"] = "sk-loopback-benchmark"
        agent = Agent(Settings(data_dir=data_dir / mode, timeout_s=30))
        recorded, tools = [], 0
        try:
            for scenario in scenarios:
                for message in scenario["turns"]:
                    result = agent.run(message, model=MODEL, routing=mode,
                                       thread_id=f"{mode}-{scenario['id']}")
                    if result.error is not None:
                        raise SystemExit(f"{scenario['id']}: {result.error.message}")
                    recorded += [c.request_bytes for c in result.calls.per_call]
                    tools += len(result.tool_calls)
        finally:
            artifacts.for_model = worded
        if recorded != server.sizes:
            raise SystemExit("the per-call records disagree with what the server received")
        return {"bytes": list(server.sizes), "tokens": mirror.input_tokens, "tools": tools}


def main() -> None:
    scenarios = yaml.safe_load(SCENARIOS.read_text(encoding="utf-8"))["scenarios"]
    count, tokenizer = token_counter()
    with tempfile.TemporaryDirectory() as tmp:
        runs = {mode: run(mode, scenarios, count, Path(tmp)) for mode in ("off", "compact", "on")}
    print(f"{len(scenarios)} default scenarios through {MODEL} on a loopback server replying "
          f"as the offline model would; input tokens by {tokenizer}")
    for mode, data in runs.items():
        print(f"routing {mode:<8} {len(data['bytes']):3d} calls, {data['tools']:2d} tool calls: "
              f"median {statistics.median(data['bytes']):8.0f} bytes and "
              f"{statistics.median(data['tokens']):6.0f} input tokens per call")
    on, off = runs["on"], runs["off"]
    tokens = statistics.median(on["tokens"]) / statistics.median(off["tokens"])
    print(f"input tokens: ratio {tokens:.2f} (goal <= {GOAL})")
    ratio = statistics.median(on["bytes"]) / statistics.median(off["bytes"])
    print(f"request_size: ratio {ratio:.2f} (goal <= {GOAL})")


if __name__ == "__main__":
    main()
