"""The privacy corpus (corpus.yaml) run through the agent and scored, for its test and benchmark.

- redaction recall: of the secrets typed, the share found nowhere afterwards: not in the answer,
  memory (every message and tool call of the thread), leads, questions, the lead exports, the
  chat's Markdown and JSON exports, nor (for secrets of 6 characters or more) in any byte of the
  data dir's files;
- false redaction: of the ordinary messages (tire questions, math with long numbers and lists
  of numbers, phone numbers, look-alike and zero-width variants), the share that memory keeps
  other than as typed;
- consent errors: conversations that leave a lead the corpus does not expect, or not the one it
  does; and erasures after which the address is still readable or a lead of it remains.
"""

from __future__ import annotations

import io
import itertools
import json
import re
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from treadwise.agent import Agent
from treadwise.datafiles import load_yaml
from treadwise.settings import Settings
from treadwise.storage.lead_export import export_leads
from treadwise.web.chat_export import export_files
from treadwise.web.session import ChatSession, Turn

CORPUS_FILE = Path(__file__).with_name("corpus.yaml")
PERSONAS = ("friendly", "technical", "cautious")
SHORT_SECRET = 6  # shorter secrets (a PIN) may occur by chance in a database's binary pages


def load_corpus() -> dict[str, list]:
    return load_yaml(CORPUS_FILE.read_text(encoding="utf-8"))


def message_count(corpus: dict[str, list]) -> int:
    return (len(corpus["secrets"]) + len(corpus["ordinary"])
            + sum(len(c["turns"]) for c in corpus["consent"])
            + sum(len(e["turns"]) for e in corpus["erasures"]))


@dataclass
class Score:
    """How one run of the corpus went, with what went wrong named."""

    secrets: int = 0
    leaked: list[str] = field(default_factory=list)
    ordinary: int = 0
    altered: list[str] = field(default_factory=list)
    conversations: int = 0
    consent_wrong: list[str] = field(default_factory=list)

    @property
    def recall(self) -> float:
        return 1.0 - len(self.leaked) / self.secrets if self.secrets else 1.0

    @property
    def false_redaction(self) -> float:
        return len(self.altered) / self.ordinary if self.ordinary else 0.0

    @property
    def consent_errors(self) -> int:
        return len(self.consent_wrong)

    def add(self, other: Score) -> None:
        self.secrets += other.secrets
        self.leaked += other.leaked
        self.ordinary += other.ordinary
        self.altered += other.altered
        self.conversations += other.conversations
        self.consent_wrong += other.consent_wrong


def _memory_text(agent: Agent, thread: str) -> str:
    parts = []
    for message in agent.history(thread):
        parts.append(message.text)
        parts += [json.dumps(call.get("args"), ensure_ascii=False)
                  for call in getattr(message, "tool_calls", [])]
    return "\n".join(parts)


def _store_text(agent: Agent, cache: Path) -> str:
    store = agent.store
    rows = [json.dumps(row, ensure_ascii=False, default=str)
            for row in [*store.leads(), *store.feedback()]]
    for fmt in ("csv", "jsonl"):
        out = io.StringIO()
        export_leads(store, fmt, out)
        rows.append(out.getvalue())
    return "\n".join(rows)


def _exports(thread: str, said: list[tuple[str, Any]], cache: Path) -> str:
    session = ChatSession(thread_id=thread)
    for text, result in said:
        session.turns.append(Turn(user=text, persona=result.persona, persona_name="P",
                                  spec="x", model="x", temperature=0.0, status="done",
                                  answer=result.answer, result=result))
    return "\n".join(Path(p).read_text(encoding="utf-8")
                     for p in export_files(session, str(cache)))


def files_text(data_dir: Path) -> str:
    """Every byte of every file in the data dir (databases, their WAL files), as text."""
    return " ".join(p.read_bytes().decode("latin-1") for p in data_dir.rglob("*") if p.is_file())


def holds(text: str, secret: str) -> bool:
    """Whether `text` keeps `secret`. A secret of digits only counts where it stands as a number
    of its own, as it was typed: not inside a longer run of digits or letters (a hex id), nor as
    a decimal's fraction. The files of one persona's pass over the corpus hold about 114 000
    windows of six digits (LangGraph's random channel versions such as 0.6723185154921827,
    timestamps to the microsecond, ids), so a six-digit PIN turned up there by chance in some
    runs although no message holding it was stored."""
    return _place(text, secret) >= 0


def where(text: str, secret: str, width: int = 40) -> str:
    """Where `holds` finds `secret` in `text` first, with a little of what surrounds it."""
    at = _place(text, secret)
    return repr(text[max(at - width, 0):at + len(secret) + width])


def _place(text: str, secret: str) -> int:
    if not secret.isdigit():
        return text.find(secret)
    found = re.search(rf"(?<!\w)(?<!\d\.){secret}(?!\w)", text)
    return found.start() if found else -1


def run_corpus(corpus: dict[str, list], personas: Iterable[str] = PERSONAS, *,
               model: str = "offline", setup_model: str | None = None,
               agent_for: Callable[[Path], Agent] | None = None,
               root: Path | None = None, rotate: bool = False) -> Score:
    """Run every item of `corpus` for each persona (with `rotate`, for one persona in turn),
    each in its own thread; earlier turns of a conversation (the lead before an erasure) run
    with `setup_model` when given."""
    root = root or Path(tempfile.mkdtemp(prefix="privacy-corpus-"))
    personas = tuple(personas)
    hands = deal(corpus, len(personas)) if rotate else [corpus] * len(personas)
    total = Score()
    for persona, hand in zip(personas, hands, strict=True):
        data_dir = root / persona
        agent = (agent_for or _offline_agent)(data_dir)
        total.add(_run_persona(agent, hand, persona, model, setup_model or model, data_dir,
                               root / f"{persona}-cache"))
    return total


def _offline_agent(data_dir: Path) -> Agent:
    return Agent(Settings(data_dir=data_dir), toolsets=("business",))


@dataclass
class _Pass:
    """One persona's run over the corpus: the agent, the models, and what to look for later."""

    agent: Agent
    persona: str
    model: str
    setup_model: str
    cache: Path
    score: Score = field(default_factory=Score)
    pending: list[tuple[str, str]] = field(default_factory=list)  # (text, label) for the files
    counter: Any = field(default_factory=itertools.count)

    def turn(self, thread: str, text: str, spec: str | None = None) -> Any:
        return self.agent.run(text, thread_id=thread, persona=self.persona,
                              model=spec or self.model)

    def thread(self, kind: str) -> str:
        return f"{kind}{next(self.counter)}"

    def secret(self, item: dict) -> None:
        thread = self.thread("s")
        said = [(text, self.turn(thread, text, self.setup_model))
                for text in item.get("before", [])]
        said.append((item["say"], self.turn(thread, item["say"])))
        seen = "\n".join([said[-1][1].answer, _memory_text(self.agent, thread),
                          _exports(thread, said, self.cache)])
        self.score.secrets += 1
        label = f"{self.persona}: {item['say']!r}"
        # Stored text, not random bytes: a secret counts wherever it is, even run into a word.
        if item["secret"] in seen:
            self.score.leaked.append(label)
        elif len(item["secret"]) >= SHORT_SECRET:
            self.pending.append((item["secret"], label))

    def ordinary(self, text: str) -> None:
        thread = self.thread("o")
        self.turn(thread, text)
        kept = [m.text for m in self.agent.history(thread) if m.type == "human"]
        self.score.ordinary += 1
        if kept[:1] != [text]:
            self.score.altered.append(f"{self.persona}: {text!r} kept as {kept[:1]!r}")

    def consent(self, item: dict) -> None:
        thread = self.thread("c")
        for text in item["turns"]:
            self.turn(thread, text)
        leads = [lead["email"] for lead in self.agent.store.held_for_thread(thread).leads]
        self.score.conversations += 1
        if leads != ([item["lead"]] if item["lead"] else []):
            self.score.consent_wrong.append(f"{self.persona}: {item['turns']} left {leads}")

    def erasure(self, item: dict) -> None:
        thread = self.thread("e")
        for text in item["turns"][:-1]:
            self.turn(thread, text, self.setup_model)
        self.turn(thread, item["turns"][-1])
        self.score.conversations += 1
        gone = item["gone"]
        left = [lead for lead in self.agent.store.leads() if lead["email"] == gone]
        if left or gone in _memory_text(self.agent, thread):
            self.score.consent_wrong.append(f"{self.persona}: {item['turns'][-1]!r} left {gone}")
        else:
            self.pending.append((gone, f"{self.persona}: erased {gone}"))

    def at_rest(self, data_dir: Path, ordinary: str) -> None:
        """Look for every secret and erased address in the files' bytes and the exports; one
        an ordinary message holds is kept as typed there, by right."""
        found = files_text(data_dir) + _store_text(self.agent, self.cache)
        for text, label in self.pending:
            if holds(found, text) and not holds(ordinary, text):
                wrong = self.score.consent_wrong if ": erased " in label else self.score.leaked
                wrong.append(f"{label} (in the files: {where(found, text)})")


def _run_persona(agent: Agent, corpus: dict[str, list], persona: str, model: str,
                 setup_model: str, data_dir: Path, cache: Path) -> Score:
    run = _Pass(agent, persona, model, setup_model, cache)
    for item in corpus["secrets"]:
        run.secret(item)
    for text in corpus["ordinary"]:
        run.ordinary(text)
    for item in corpus["consent"]:
        run.consent(item)
    for item in corpus["erasures"]:
        run.erasure(item)
    run.at_rest(data_dir, "\n".join(corpus["ordinary"]))
    return run.score


def sample(corpus: dict[str, list], every: int) -> dict[str, list]:
    """Every `every`-th item of each part of the corpus (at least one of each)."""
    return {part: items[::every] or items[:1] for part, items in corpus.items()}


def deal(corpus: dict[str, list], hands: int) -> list[dict[str, list]]:
    """The corpus dealt into `hands` parts like cards, one item to each in turn, the count
    running on from one kind of item to the next: every hand gets a share of each kind there
    are enough of, and no item is in two hands."""
    dealt: list[dict[str, list]] = [{part: [] for part in corpus} for _ in range(hands)]
    turn = itertools.count()
    for part, items in corpus.items():
        for item in items:
            dealt[next(turn) % hands][part].append(item)
    return dealt
