"""Typed tool results: what a tool found as data, beside the words a model reads about it.

A tool built with ``response_format="content_and_artifact"`` returns ``worded(artifact)``:
``(for_model(artifact), artifact)``. The text goes to the model as the ToolMessage's content;
the artifact rides on ``ToolMessage.artifact``. Code after the tool (the offline rules, the
checks, grounding, the UI, the CLI) reads the artifact through ``artifact_of(message)`` and never
parses the text, so the wording can change without changing any verdict or value.

Artifacts are pydantic models with a ``kind`` field; each subclass with a default ``kind``
registers itself, so a plugin's tool may return artifacts of its own. Checkpointers store a
ToolMessage through pydantic, so an artifact comes back from memory (SQLite, PostgreSQL) as its
JSON dict; ``artifact_of`` turns it back into its type. The built-in kinds live in
``treadwise.tools.math_results`` and ``treadwise.tools.business_results``.
"""

from __future__ import annotations

import importlib
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

# Modules holding the built-in kinds, imported when a stored artifact of an unknown kind is
# read before any tool was built (the same "module" strings the plugin registries use).
BUILTIN_KINDS = ("treadwise.tools.math_results", "treadwise.tools.business_results")
A = TypeVar("A", bound="ToolArtifact")


class ToolArtifact(BaseModel):
    """The data half of a tool result; `words()` is how the tool says it by default."""

    model_config = ConfigDict(frozen=True, extra="ignore")
    kinds: ClassVar[dict[str, type[ToolArtifact]]] = {}

    kind: str

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        kind = cls.model_fields["kind"].default
        if isinstance(kind, str):
            ToolArtifact.kinds[kind] = cls

    def words(self) -> str:
        """The result in plain words (what the tool said before artifacts existed)."""
        raise NotImplementedError

    def brief(self) -> str:
        """A few words for a step's title in the chat ("= 9", "saved"); "" for none."""
        return ""

    def files(self) -> list[str]:
        """Files the result made (a plot's PNG)."""
        return []


def for_model(artifact: ToolArtifact) -> str:
    """The text a model reads for a tool result: the one place the words are chosen."""
    return artifact.words()


def worded(artifact: A) -> tuple[str, A]:
    """A content_and_artifact tool's return value."""
    return for_model(artifact), artifact


def _kind(name: str) -> type[ToolArtifact] | None:
    if name not in ToolArtifact.kinds:
        for module in BUILTIN_KINDS:
            importlib.import_module(module)
    return ToolArtifact.kinds.get(name)


def artifact_of(message: Any) -> ToolArtifact | None:
    """The typed artifact a ToolMessage (or a step) carries: as the tool made it, or its dict
    as memory gives it back; None for a text-only result (MCP, web search, an error)."""
    found = getattr(message, "artifact", None)
    if isinstance(found, ToolArtifact):
        return found
    if not isinstance(found, dict) or not isinstance(found.get("kind"), str):
        return None
    cls = _kind(found["kind"])
    if cls is None:
        return None
    try:
        return cls.model_validate(found)
    except ValidationError:
        return None


def words_of(message: Any) -> str:
    """A tool result as people read it: its artifact's own words (whatever text the model was
    given), or the text of a text-only result or an error."""
    found = artifact_of(message)
    return found.words() if found is not None else str(getattr(message, "text", ""))


def files_of(message: Any) -> list[str]:
    """The files a tool result made; a bare path is how plots were kept before artifacts."""
    found = getattr(message, "artifact", None)
    if isinstance(found, str):
        return [found]
    artifact = artifact_of(message)
    return artifact.files() if artifact is not None else []
