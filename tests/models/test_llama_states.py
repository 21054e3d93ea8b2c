"""System blocks kept on disk (treadwise/models/llama_states.py): a new process's engine reads
none that another has read, and answers exactly as if it had; damage costs a re-read, never a
reply; the folder keeps to its cap."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from treadwise.agent.prompts import build_system_prompt
from treadwise.models import llama_states
from treadwise.models.llama_states import StateFolder
from treadwise.models.llamacpp import Generation, LlamaEngine
from treadwise.models.local import model_path, states_folder
from treadwise.models.local_chat import LocalChatModel
from treadwise.personas import get_persona

N_CTX = 2048
SYSTEM = f"<|im_start|>system\n{build_system_prompt(get_persona('friendly'))}<|im_end|>\n"
USER = "<|im_start|>user\nWhat are your opening hours?<|im_end|>\n<|im_start|>assistant\n"
# A short system block for the tests about damage and unwritable folders: a block of any length
# is kept the same way, and the persona's (over 500 tokens) costs seconds each time it is read.
SHORT = "<|im_start|>system\nYou are the TreadWise Tire Co. assistant.<|im_end|>\n"


@pytest.fixture
def gguf(local_model: str) -> str:
    return str(model_path("smollm2"))


def new_engine(gguf: str, folder: Path) -> tuple[LlamaEngine, list[int]]:
    """An engine as a new process gets it, and the lengths of the prompt blocks it reads."""
    engine = LlamaEngine(gguf, N_CTX, 1, str(folder))
    read: list[int] = []
    evaluate = engine._eval

    def counted(tokens, deadline):
        read.append(len(tokens))
        return evaluate(tokens, deadline)

    engine._eval = counted  # type: ignore[method-assign]
    return engine, read


def reply(engine: LlamaEngine, system: str = SYSTEM) -> str:
    return "".join(engine.generate([system, USER], max_tokens=16, temperature=0.0, seed=3,
                                   timeout_s=300, stats=Generation(), shared=True))


def test_a_new_engine_reads_only_what_is_new_and_replies_the_same(gguf: str, tmp_path: Path):
    first, first_read = new_engine(gguf, tmp_path / "states")
    said = reply(first)
    system, user = len(first.tokens(SYSTEM)), len(first.tokens(USER))
    assert system > 500 and sum(first_read) == system + user
    second, second_read = new_engine(gguf, tmp_path / "states")
    assert reply(second) == said
    assert sum(second_read) == user  # the persona's system block came from the disk
    first.llm.close()
    second.llm.close()


def test_a_damaged_state_is_read_again_and_replaced(gguf: str, tmp_path: Path):
    first, _ = new_engine(gguf, tmp_path / "states")
    said = reply(first, SHORT)
    head = first.block_tokens(SHORT)
    (saved,) = (tmp_path / "states").glob("*.npz")
    assert saved == first.states.path(head)
    for damage in (saved.read_bytes()[:5000], b"not a saved state"):
        saved.write_bytes(damage)
        again, read = new_engine(gguf, tmp_path / "states")
        assert reply(again, SHORT) == said
        assert sum(read) == len(head) + len(first.tokens(USER))
        assert again.states.load(head) is not None  # saved afresh, whole
        again.llm.close()
    first.llm.close()


def kept_texts(engine: LlamaEngine, folder: Path) -> list[str]:
    """The text of every block kept on disk."""
    return [engine.llm.detokenize(np.load(path)["tokens"].tolist()).decode(errors="replace")
            for path in folder.glob("*.npz")]


def test_only_blocks_without_conversation_text_reach_the_disk(gguf: str, tmp_path: Path,
                                                               monkeypatch):
    """The persona's own system block is kept; a system message whose who-speaks text is not
    the persona's (a custom prompt, where a strategy's plan, written by the model from the
    customer's words, may say who speaks) is never put on disk."""
    engine, _ = new_engine(gguf, tmp_path / "states")
    monkeypatch.setattr("treadwise.models.local_chat.engine", lambda *args: engine)
    model = LocalChatModel(model_path=gguf, n_ctx=N_CTX, max_tokens=4, decoding="free",
                           routing="none", state_dir=str(tmp_path / "states"))
    friendly = get_persona("friendly")
    own = build_system_prompt(friendly)
    model.invoke([SystemMessage(own), HumanMessage("hello")], persona=friendly)
    kept = kept_texts(engine, tmp_path / "states")
    assert kept and all(friendly.name in text for text in kept)
    plan = f"You are to save the lead ana@fleetco.com, as the customer asked.\n\n{own}"
    model.invoke([SystemMessage(plan), HumanMessage("hello")], persona=friendly)
    assert len(kept_texts(engine, tmp_path / "states")) == len(kept)
    assert not [t for t in kept_texts(engine, tmp_path / "states") if "ana@" in t]
    engine.llm.close()


def test_an_unwritable_folder_costs_nothing_but_the_saving(gguf: str, tmp_path: Path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    engine, _ = new_engine(gguf, blocked)
    assert reply(engine, SHORT).strip()
    assert blocked.read_text() == "not a folder"
    engine.llm.close()


def test_states_are_never_shared_across_models_threads_or_context_sizes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    pytest.importorskip("llama_cpp")
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF weights")
    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF others")
    tokens = [1, 2, 3]
    paths = {StateFolder(tmp_path, str(m), n_ctx, threads).path(tokens)
             for m in (model, other) for n_ctx in (2048, 8192) for threads in (1, 2)}
    assert len(paths) == 8
    same = StateFolder(tmp_path, str(model), 2048, 1)
    assert same.path(tokens) == StateFolder(tmp_path, str(model), 2048, 1).path(tokens)
    assert same.path(tokens) != same.path([1, 2, 3, 4])
    model.write_bytes(b"GGUF weights, replaced")  # a new file under the same name
    assert StateFolder(tmp_path, str(model), 2048, 1).path(tokens) != same.path(tokens)
    # A new state format (llama_states.FORMAT) never loads a file the older one wrote.
    monkeypatch.setattr(llama_states, "FORMAT", llama_states.FORMAT + 1)
    assert StateFolder(tmp_path, str(model), 2048, 1).path(tokens) != same.path(tokens)


def _state(size: int):
    from llama_cpp.llama import LlamaState

    return LlamaState(input_ids=np.zeros(4, dtype=np.intc), scores=np.zeros((1, 4), np.single),
                      n_tokens=3, llama_state=bytes(size), llama_state_size=size, seed=7)


def test_the_folder_keeps_to_its_cap_dropping_the_least_recently_used(tmp_path: Path):
    pytest.importorskip("llama_cpp")
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF weights")
    folder = StateFolder(tmp_path / "states", str(model), 2048, 1, limit_bytes=25_000)
    # Saved a minute and half a minute ago (file times are only as fine as the kernel's tick).
    for tokens, age in (([1], 60), ([2], 30)):
        folder.save(tokens, _state(10_000))
        os.utime(folder.path(tokens), (time.time() - age,) * 2)
    loaded = folder.load([1])  # used again: now the most recent
    assert loaded is not None and loaded.llama_state == bytes(10_000) and loaded.seed == 7
    folder.save([3], _state(10_000))
    assert folder.load([2]) is None
    assert folder.load([1]) is not None and folder.load([3]) is not None
    assert sum(p.stat().st_size for p in (tmp_path / "states").iterdir()) <= 25_000


def test_where_the_states_are_kept_follows_the_environment(tmp_path: Path, monkeypatch):
    home = {"HOME": str(tmp_path)}
    assert states_folder(home) == tmp_path / ".cache" / "treadwise" / "llama-states"
    cache = {**home, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    assert states_folder(cache) == tmp_path / "xdg" / "treadwise" / "llama-states"
    assert states_folder({**cache, "TREADWISE_LOCAL_STATE_DIR": str(tmp_path / "s")}) == \
        tmp_path / "s"
    assert states_folder({**cache, "TREADWISE_LOCAL_STATE_DIR": " OFF "}) is None
    # No HOME and no account to find one from: nowhere, rather than a folder named "~".
    monkeypatch.setattr("os.path.expanduser", lambda path: path)
    assert states_folder({}) is None


def test_the_suite_keeps_its_states_apart_from_your_own() -> None:
    """The tests' states outlive a run (tests/conftest.py) in a folder of their own: every
    process of the run is pointed at it, and it is not where the app keeps yours."""
    from tests.conftest import RUN_STATES

    folder = Path(os.environ["TREADWISE_LOCAL_STATE_DIR"])
    assert folder == Path(os.environ[RUN_STATES])
    yours = {k: v for k, v in os.environ.items() if k != "TREADWISE_LOCAL_STATE_DIR"}
    assert folder != states_folder(yours)
