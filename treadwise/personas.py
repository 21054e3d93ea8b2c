"""Personas are data: one YAML file each, found in the package and in TREADWISE_PERSONAS_DIR."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from treadwise.datafiles import read_yaml_mapping

PACKAGED_DIR = Path(__file__).with_name("personas")
DEFAULT_PERSONA = "friendly"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Persona:
    key: str
    name: str
    description: str
    style: str
    order: int = 100
    show_method: bool = False
    voice: dict[str, list[str]] = field(default_factory=dict)
    # What a judge looks for when the experiment harness grades persona adherence.
    rubric: str = ""

    def phrases(self, part: str) -> list[str]:
        """The alternatives for one part of a reply; the first is the temperature-0 choice."""
        return self.voice.get(part) or []

    @property
    def label(self) -> str:
        return f"{self.name}: {self.description}"


def _read(path: Path) -> Persona:
    data = read_yaml_mapping(path, ValueError, "persona file")
    missing = [k for k in ("name", "description", "style") if not data.get(k)]
    if missing:
        raise ValueError(f"persona file {path} is missing {', '.join(missing)}")
    voice = {k: [str(v) for v in (vs if isinstance(vs, list) else [vs])]
             for k, vs in (data.get("voice") or {}).items()}
    return Persona(
        key=str(data.get("key") or path.stem),
        name=str(data["name"]),
        description=str(data["description"]).strip(),
        style=str(data["style"]).strip(),
        order=int(data.get("order", 100)),
        show_method=bool(data.get("show_method", False)),
        voice=voice,
        rubric=str(data.get("rubric") or "").strip(),
    )


def persona_dirs() -> list[Path]:
    extra = os.environ.get("TREADWISE_PERSONAS_DIR", "").strip()
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


def load_personas() -> dict[str, Persona]:
    """All personas by key, in display order."""
    return _load_all(tuple(persona_dirs()))


def get_persona(key: str) -> Persona:
    personas = load_personas()
    try:
        return personas[key]
    except KeyError:
        raise ValueError(
            f"unknown persona {key!r}; choose one of: {', '.join(personas)}"
        ) from None
