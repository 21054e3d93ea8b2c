"""The system prompt and persona instructions stay private: an answer repeating them is replaced."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from treadwise.personas import Persona, load_personas

# An answer is an echo when this many of its words sit in runs of SHINGLE words or more that
# the instructions hold word for word: a sentence and a half, where quoting a phrase ("never
# invent a number") stays well below and a printed prompt (hundreds of words) far above.
SHINGLE = 6
ECHO_WORDS = 24
WORD_RE = re.compile(r"[a-z0-9]+")
REFUSAL = ("I can't share my instructions or setup, but I'm glad to help with tires, our "
           "services or a math problem.")


def _words(text: str) -> list[str]:
    return WORD_RE.findall(text.casefold())


@lru_cache(maxsize=4)
def instruction_shingles(personas_dir: Path | None = None) -> frozenset[tuple[str, ...]]:
    """Every run of SHINGLE words in the rules of the system prompt and the personas' styles."""
    from treadwise.agent.prompts import RULES

    texts = [RULES, *(p.style for p in load_personas(personas_dir).values())]
    found: set[tuple[str, ...]] = set()
    for text in texts:
        words = _words(text)
        found.update(tuple(words[i:i + SHINGLE]) for i in range(len(words) - SHINGLE + 1))
    return frozenset(found)


class EchoWatch:
    """Reads an answer as it streams and says when it has become an echo of the instructions;
    each word is looked at once, so a long answer costs no more per word than a short one."""

    def __init__(self, personas_dir: Path | None = None):
        self.shingles = instruction_shingles(personas_dir)
        self.text = ""
        self.covered: set[int] = set()
        self.checked = 0  # runs ending before this word were looked at
        self.echo = False

    def feed(self, text: str) -> bool:
        """Add streamed text; True once the answer so far echoes the instructions."""
        self.text += text
        words = _words(self.text)
        # The last word may still be growing: it counts once the next one starts.
        complete = len(words) - (1 if self.text[-1:].isalnum() else 0)
        for end in range(max(self.checked, SHINGLE), complete + 1):
            if tuple(words[end - SHINGLE:end]) in self.shingles:
                self.covered.update(range(end - SHINGLE, end))
        self.checked = max(self.checked, complete + 1)
        self.echo = self.echo or len(self.covered) >= ECHO_WORDS
        return self.echo


def echoes_instructions(answer: str, personas_dir: Path | None = None) -> bool:
    watch = EchoWatch(personas_dir)
    return watch.feed(answer + " ")


def private_answer(answer: str, persona: Persona | None = None,
                   personas_dir: Path | None = None) -> str:
    """`answer`, or the persona's own refusal when it repeats the instructions."""
    if not echoes_instructions(answer, personas_dir):
        return answer
    phrases = persona.phrases("refuse_secret") if persona is not None else []
    return phrases[0] if phrases else REFUSAL
