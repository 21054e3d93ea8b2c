"""Where a case may run: a local model (llama.cpp) only on a worker that offers it. Kept apart
from cluster_worker.py so planning a sweep on one machine does not import Dask (0.6 s)."""

from __future__ import annotations

LOCAL_PREFIX = "local:"


def is_local(spec: str) -> bool:
    """A model that runs inside the worker (llama.cpp), so only where its file is."""
    return spec.startswith(LOCAL_PREFIX)


def resource(spec: str) -> str:
    """The Dask resource a worker offers to run a local model: its spec without ?settings
    (local:smollm2?decoding=free runs where local:smollm2 is)."""
    return spec.split("?", 1)[0]
