"""The conversation as downloads: JSON with every field, and Markdown that is safe to preview."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from treadwise.errors import redact
from treadwise.privacy.redaction import redact_tree
from treadwise.web.render import BACKTICKS_RE, code_block, literal_markdown, reply_markdown
from treadwise.web.session import ChatSession, Turn


def _step(step: Any) -> dict[str, Any]:
    return {"name": step.name, "args": step.args, "result": step.result, "error": step.error,
            "duration_s": step.duration_s, "plots": [Path(a).name for a in step.artifacts]}


def typed(session: ChatSession) -> dict[str, str]:
    """Each turn's message as it may be written down: redacted, each with the message before
    it (a password sent right after a login), before any escaping can split a secret."""
    said, previous = {}, None
    for turn in session.turns:
        said[turn.id] = redact(turn.user, follows=previous)
        previous = turn.user
    return said


def _turn(turn: Turn, user: str) -> dict[str, Any]:
    result, error = turn.result, turn.error
    return {
        "user": user, "persona": turn.persona, "persona_name": turn.persona_name,
        "model": turn.model, "model_spec": turn.spec, "temperature": turn.temperature,
        "started": datetime.fromtimestamp(turn.started, UTC).isoformat(timespec="seconds"),
        "status": turn.status, "answer": turn.answer,
        "error": error.to_dict() if error else None,
        "tool_calls": [_step(s) for s in turn.steps],
        "latency_s": result.latency_s if result else None,
        "first_token_s": turn.first_token_s,
        "usage": dict(result.usage) if result else {},
        "stopped_by_cap": result.stopped_by_cap if result else False,
        "remembered": turn.remembered,
    }


def code_span(text: str) -> str:
    """Inline code that holds any text: its fence is longer than any backtick run inside."""
    longest = max((len(run) for run in BACKTICKS_RE.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def conversation_json(session: ChatSession) -> dict[str, Any]:
    said = typed(session)
    return {"thread_id": session.thread_id,
            "exported": datetime.now(UTC).isoformat(timespec="seconds"),
            "turns": [_turn(t, said[t.id]) for t in session.turns if not t.running]}


def conversation_markdown(session: ChatSession) -> str:
    return _joined(markdown_parts(session))


def _joined(parts: list[str]) -> str:
    return "\n".join(parts).rstrip() + "\n"


def markdown_parts(session: ChatSession) -> list[str]:
    """The Markdown export in parts, the heading then one part a turn; joined by new lines
    (`conversation_markdown`). A finished turn's part stays the same from export to export."""
    said = typed(session)
    parts = ["\n".join(["# TreadWise conversation", "",
                        f"Thread `{session.thread_id}`, exported "
                        f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}.", ""])]
    for number, turn in enumerate((t for t in session.turns if not t.running), 1):
        lines = [f"## Turn {number}", "", "**You:**", "", literal_markdown(said[turn.id]), ""]
        for step in turn.steps:
            outcome = step.error if step.error is not None else step.result
            args = json.dumps(step.args, ensure_ascii=False, default=str)
            lines += [f"- Tool {code_span(step.name)} with {code_span(args)}"
                      + (f" ({step.duration_s:.3f} s)" if step.duration_s is not None else ""),
                      "", code_block(outcome or ""), ""]
        speaker = f"**{turn.persona_name}** ({turn.model}, temperature {turn.temperature:g}):"
        if turn.status == "error":
            body = f"Not answered: {reply_markdown(turn.error.message if turn.error else '')}"
        elif turn.status == "stopped":
            body = f"{reply_markdown(turn.answer)}\n\n(stopped; not remembered)".strip()
        else:
            body = reply_markdown(turn.answer)
        lines += [speaker, "", body, ""]
        parts.append("\n".join(lines))
    return parts


def export_files(session: ChatSession, cache_dir: str,
                 resume: str | None = None) -> tuple[str, str]:
    """Write both exports into Gradio's cache; return (markdown path, json path). The JSON
    one also holds `resume`, the link that reopens the conversation (see ThreadLinks)."""
    from treadwise.web.files import save_to_cache

    # Named by the time, not the thread: a file name travels (logs, shared folders, mail).
    stem = f"treadwise-conversation-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"
    # Secrets a user typed (or a model spec held) are redacted in what is written to disk;
    # the link is added after, as it is the visitor's own key to the conversation.
    fields = redact_tree(json.loads(json.dumps(conversation_json(session), default=str)),
                         with_keys=True)
    if resume:
        fields = {"thread_id": fields.pop("thread_id"), "resume": resume, **fields}
    data = json.dumps(fields, ensure_ascii=False, indent=2)
    # Each part redacted on its own (a secret never spans a turn's heading), the unchanged
    # ones remembered: an export reads its new turn, not the whole conversation again.
    markdown = _joined(session.redactions.redact_all(markdown_parts(session)))
    markdown = save_to_cache(markdown.encode(), f"{stem}.md", cache_dir)
    written = save_to_cache(data.encode(), f"{stem}.json", cache_dir)
    session.exports += [markdown, written]
    return markdown, written
