"""How turns look in gr.Chatbot: untrusted text made inert, tool steps, plots and reply footers."""

from __future__ import annotations

import html
import json
import re
from typing import Any

from treadwise.web.session import Turn

# "<" opening a tag, comment, declaration or closing tag; "x < 3" stays as it is.
TAG_OPEN_RE = re.compile(r"<(?=[A-Za-z/!?])")
# Any markdown image, inline (![a](url)) or by reference (![a][ref]): the page must not fetch it.
IMAGE_RE = re.compile(r"!(?=\[)")
# Link targets with a scheme that runs or embeds something instead of navigating.
UNSAFE_LINK_RE = re.compile(
    r"(\]\(\s*<?|^\s*\[[^\]\n]*\]:\s*<?)\s*(javascript|vbscript|data|file):",
    re.IGNORECASE | re.MULTILINE)
BACKTICKS_RE = re.compile(r"`+")
ERROR_HEADINGS = {
    "input_rejected": "Message not sent",
    "config": "Model not available",
    "timeout": "No answer in time",
    "rate_limited": "Provider busy",
}
STOPPED_NOTE = "Stopped. This reply was discarded, so the assistant will not remember it."
MAX_PREVIEW_CHARS = 1500


def safe_markdown(text: str) -> str:
    """Markdown from an untrusted source, made inert: no HTML element, no image, no script link.

    Tags are escaped rather than stripped, so a reader sees exactly what the model wrote.
    """
    text = TAG_OPEN_RE.sub("&lt;", text)
    text = IMAGE_RE.sub("!\\\\", text)
    return UNSAFE_LINK_RE.sub(lambda m: f"{m.group(1)}#blocked-", text)


def plain_inline(text: str, limit: int = 80) -> str:
    """A short single-line label (a tool name from the model) shown as plain text."""
    text = " ".join(str(text).split())
    text = text if len(text) <= limit else text[: limit - 1] + "\u2026"
    return html.escape(text, quote=True).replace("[", "&#91;").replace("`", "&#96;") \
        .replace("*", "&#42;").replace("_", "&#95;").replace("$", "&#36;")


def code_block(text: str, language: str = "text") -> str:
    """A fenced block longer than any backtick run inside it, so the text cannot break out."""
    longest = max((len(run) for run in BACKTICKS_RE.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def preview(text: str, limit: int = MAX_PREVIEW_CHARS) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\u2026 ({len(text):,} characters in all)"


def footer(turn: Turn) -> str:
    parts = [turn.persona_name, turn.model]
    if turn.latency_s is not None:
        parts.append(f"{turn.latency_s:.1f} s")
    label = " \u00b7 ".join(html.escape(p, quote=True) for p in parts)
    return f'<span class="tw-footer">{label}</span>'


def user_message(turn: Turn) -> dict[str, Any]:
    return {"role": "user", "content": safe_markdown(preview(turn.user))}


def step_message(turn: Turn, index: int) -> dict[str, Any]:
    step = turn.steps[index]
    name = plain_inline(step.name)
    args = json.dumps(step.args, ensure_ascii=False, indent=2, default=str)
    body = [f"**Arguments**\n\n{code_block(args, 'json')}"]
    metadata: dict[str, Any] = {"title": f"Tool: {name}", "id": f"{turn.id}-{index}"}
    if step.error is not None:
        body.append(f"**Error**\n\n{code_block(step.error)}")
        metadata.update(title=f"Tool failed: {name}", status="done", log="error")
    elif step.result is not None:
        body.append(f"**Result**\n\n{code_block(step.result)}")
        metadata["status"] = "done"
    elif turn.running:
        body.append("*Running\u2026*")
        metadata["status"] = "pending"
    else:
        body.append("*No result: the turn ended before this tool finished.*")
        metadata["status"] = "done"
    if step.duration_s is not None:
        metadata["duration"] = round(float(step.duration_s), 3)
    return {"role": "assistant", "content": "\n\n".join(body), "metadata": metadata}


def stage_message(turn: Turn, index: int) -> dict[str, Any]:
    """A strategy stage as a collapsed step; a think-write thought is labelled as private."""
    stage = turn.stages[index][1]
    name = plain_inline(stage.get("name", "stage"))
    title = "Thought (private, not part of the answer)" if name == "think" else f"Stage: {name}"
    text = safe_markdown(preview(str(stage.get("text") or ""))) or "*(nothing)*"
    return {"role": "assistant", "content": text,
            "metadata": {"title": title, "id": f"{turn.id}-stage-{index}", "status": "done"}}


def plot_message(path: str, step_name: str) -> dict[str, Any]:
    return {"role": "assistant",
            "content": {"path": path, "alt_text": f"Plot made by {step_name}"}}


def answer_message(turn: Turn) -> dict[str, Any] | None:
    text = safe_markdown(turn.answer.strip())
    if turn.status == "running":
        return {"role": "assistant", "content": text} if text else None
    if turn.status == "stopped":
        text = f"{text}\n\n*{STOPPED_NOTE}*" if text else f"*{STOPPED_NOTE}*"
    elif turn.status == "error":
        heading = ERROR_HEADINGS.get(turn.error_type or "", "Something went wrong")
        text = f"**{heading}.** {safe_markdown(turn.error or '')}"
    return {"role": "assistant", "content": f"{text}\n\n{footer(turn)}"}


def turn_messages(turn: Turn) -> list[dict[str, Any]]:
    messages = [user_message(turn)]
    for index, step in enumerate(turn.steps):
        messages.extend(stage_message(turn, i) for i, (at, _) in enumerate(turn.stages)
                        if at == index)
        messages.append(step_message(turn, index))
        messages.extend(plot_message(path, plain_inline(step.name))
                        for path in turn.plots.get(step.id, []))
    messages.extend(stage_message(turn, i) for i, (at, _) in enumerate(turn.stages)
                    if at >= len(turn.steps))
    if (answer := answer_message(turn)) is not None:
        messages.append(answer)
    return messages


def render(turns: list[Turn]) -> list[dict[str, Any]]:
    """The whole conversation as gr.Chatbot messages."""
    return [message for turn in turns for message in turn_messages(turn)]
