"""The conversation as downloads: JSON with every field, and Markdown that is safe to preview."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from treadwise.errors import redact
from treadwise.web.render import code_block, safe_markdown
from treadwise.web.session import ChatSession, Turn


def _step(step: Any) -> dict[str, Any]:
    return {"name": step.name, "args": step.args, "result": step.result, "error": step.error,
            "duration_s": step.duration_s, "plots": [Path(a).name for a in step.artifacts]}


def _turn(turn: Turn) -> dict[str, Any]:
    return {
        "user": turn.user, "persona": turn.persona, "persona_name": turn.persona_name,
        "model": turn.model, "model_spec": turn.spec, "temperature": turn.temperature,
        "started": datetime.fromtimestamp(turn.started, UTC).isoformat(timespec="seconds"),
        "status": turn.status, "answer": turn.answer,
        "error": {"type": turn.error_type, "message": turn.error} if turn.error else None,
        "tool_calls": [_step(s) for s in turn.steps], "latency_s": turn.latency_s,
        "usage": turn.usage, "stopped_by_cap": turn.stopped_by_cap,
        "remembered": turn.in_memory,
    }


def conversation_json(session: ChatSession) -> dict[str, Any]:
    return {"thread_id": session.thread_id,
            "exported": datetime.now(UTC).isoformat(timespec="seconds"),
            "turns": [_turn(t) for t in session.turns if not t.running]}


def conversation_markdown(session: ChatSession) -> str:
    lines = ["# TreadWise conversation", "",
             f"Thread `{session.thread_id}`, exported "
             f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}.", ""]
    for number, turn in enumerate((t for t in session.turns if not t.running), 1):
        lines += [f"## Turn {number}", "", "**You:**", "", safe_markdown(turn.user), ""]
        for step in turn.steps:
            outcome = step.error if step.error is not None else step.result
            args = json.dumps(step.args, ensure_ascii=False, default=str)
            lines += [f"- Tool `{step.name}` with `{args}`"
                      + (f" ({step.duration_s:.3f} s)" if step.duration_s is not None else ""),
                      "", code_block(outcome or ""), ""]
        speaker = f"**{turn.persona_name}** ({turn.model}, temperature {turn.temperature:g}):"
        if turn.status == "error":
            body = f"Not answered: {turn.error}"
        elif turn.status == "stopped":
            body = f"{safe_markdown(turn.answer)}\n\n(stopped; not remembered)".strip()
        else:
            body = safe_markdown(turn.answer)
        lines += [speaker, "", body, ""]
    return "\n".join(lines).rstrip() + "\n"


def export_files(session: ChatSession, cache_dir: str) -> tuple[str, str]:
    """Write both exports into Gradio's cache; return (markdown path, json path)."""
    from treadwise.web.files import save_to_cache

    stem = f"treadwise-conversation-{session.thread_id[:8]}"
    data = json.dumps(conversation_json(session), ensure_ascii=False, indent=2, default=str)
    # Secrets a user typed (or a model spec held) are redacted in what is written to disk.
    markdown, data = (redact(text) for text in (conversation_markdown(session), data))
    markdown = save_to_cache(markdown.encode(), f"{stem}.md", cache_dir)
    return markdown, save_to_cache(data.encode(), f"{stem}.json", cache_dir)
