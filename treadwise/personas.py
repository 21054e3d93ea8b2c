"""Personas are data: one YAML file each, found in the package and in TREADWISE_PERSONAS_DIR."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict

from treadwise.datafiles import Text, read_yaml_mapping, validate_file

PACKAGED_DIR = Path(__file__).with_name("personas")
DEFAULT_PERSONA = "friendly"
log = logging.getLogger(__name__)


def _listed(value: Any) -> Any:
    """A voice part may be one phrase or a list of alternatives."""
    return value if isinstance(value, list) else [value]


@dataclass(frozen=True)
class Persona:
    key: str
    name: str
    description: str = field(repr=False)
    style: str = field(repr=False)
    order: int = 100
    show_method: bool = False
    voice: dict[str, list[str]] = field(default_factory=dict, repr=False)
    # What a judge looks for when the experiment harness grades persona adherence.
    rubric: str = field(default="", repr=False)

    def phrases(self, part: str) -> list[str]:
        """The alternatives for one part of a reply; the first is the temperature-0 choice."""
        return self.voice.get(part) or []

    @property
    def label(self) -> str:
        return f"{self.name}: {self.description}"


class _PersonaFile(BaseModel):
    """What a persona file may hold; anything else is a typo worth a clear error."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str | None = None
    name: Text
    description: Text
    style: Text
    order: int = 100
    show_method: bool = False
    voice: dict[str, Annotated[list[str], BeforeValidator(_listed)]] = {}
    rubric: str = ""


def _read(path: Path) -> Persona:
    data = read_yaml_mapping(path, ValueError, "persona file")
    found = validate_file(_PersonaFile, data, path, ValueError)
    return Persona(key=found.key or path.stem, name=found.name, description=found.description,
                   style=found.style, order=found.order, show_method=found.show_method,
                   voice=dict(found.voice), rubric=found.rubric.strip())


def persona_dirs(extra: Path | None = None) -> list[Path]:
    """The packaged folder, then `extra` (default: TREADWISE_PERSONAS_DIR, through Settings)."""
    if extra is None:
        from treadwise.settings import Settings

        extra = Settings.from_env().personas_dir
    return [PACKAGED_DIR] + ([Path(extra)] if extra else [])


@lru_cache(maxsize=8)
def _load_all(dirs: tuple[Path, ...]) -> dict[str, Persona]:
    found: dict[str, Persona] = {}
    for directory in dirs:
        for path in sorted(directory.glob("*.yaml")):
            persona = _read(path)
            if directory != PACKAGED_DIR and persona.key in found:
                # A built-in is never replaced behind the operator's back: the file is skipped.
                log.warning("persona file %s is ignored: the persona %r is built in; give the "
                            "file another name (or key)", path, persona.key)
                continue
            found[persona.key] = persona
    return dict(sorted(found.items(), key=lambda kv: (kv[1].order, kv[0])))


def load_personas(extra: Path | None = None) -> dict[str, Persona]:
    """All personas by key, in display order; `extra` is Settings.personas_dir."""
    return _load_all(tuple(persona_dirs(extra)))


def persona_path(key: str, extra: Path | None = None) -> Path:
    """The file a persona was read from: a built-in's own file (none in `extra` replaces it),
    else the file in `extra` (Settings.personas_dir) that defines the key."""
    for directory in persona_dirs(extra):
        for path in sorted(directory.glob("*.yaml")):
            if _read(path).key == key:
                return path
    raise ValueError(f"unknown persona {key!r}; choose one of: {', '.join(load_personas(extra))}")


def get_persona(key: str, extra: Path | None = None) -> Persona:
    """The persona named `key`: a built-in (no other folder can replace one), else from `extra`
    (Settings.personas_dir)."""
    built_in = _load_all((PACKAGED_DIR,))
    if key in built_in:
        return built_in[key]
    personas = load_personas(extra)
    try:
        return personas[key]
    except KeyError:
        raise ValueError(
            f"unknown persona {key!r}; choose one of: {', '.join(personas)}"
        ) from None
