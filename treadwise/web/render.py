"""How turns look in gr.Chatbot: untrusted text made inert, tool steps, plots and reply footers."""

from __future__ import annotations

import html
import json
import re
import time
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
# Code spans and blocks, and LaTeX the chat renders: math inside them is left exactly as it is.
PROTECTED_RE = re.compile(r"(?<!`)(`+)(?!`)[\s\S]*?(?<!`)\1(?!`)|\$\$[\s\S]+?\$\$"
                          r"|\\\([\s\S]+?\\\)|\\\[[\s\S]+?\\\]")
# A "*" between operands is multiplication (x*y, 2*sin(x), x**2), never emphasis; "~" is never
# meant as strike-through in a reply about tires or math.
OPERATOR_STAR_RE = re.compile(r"(?<=[\w)\]}])\*+(?=[\w(\[{])")
LITERAL_RE = re.compile(r"[\\`*_\[\]~|$]")
LINE_START_RE = re.compile(r"^(\s*)([#>+=-]|\d+(?=[.)]))", re.MULTILINE)
LATEX_DELIMITERS: list[dict[str, str | bool]] = [{"left": "$$", "right": "$$", "display": True},
                    {"left": "\\[", "right": "\\]", "display": True},
                    {"left": "\\(", "right": "\\)", "display": False}]
ERROR_HEADINGS = {
    "input_rejected": "Message not sent",
    "config": "Model not available",
    "timeout": "No answer in time",
    "rate_limited": "Provider busy",
}
STOPPED_NOTE = "Stopped. This reply was discarded, so the assistant will not remember it."
MAX_PREVIEW_CHARS = 1500
# The plot tool's sentence pointing at the image; the image's own description leaves it out.
PLOT_NOTE_RE = re.compile(r"[^.]*\battached plot\.\s*")
STREAMED = 0.8  # the first token came before this share of the turn's time had passed


def safe_markdown(text: str) -> str:
    """Markdown from an untrusted source, made inert: no HTML element, no image, no script link.

    Tags are escaped rather than stripped, so a reader sees exactly what the model wrote.
    """
    text = TAG_OPEN_RE.sub("&lt;", text)
    text = IMAGE_RE.sub("!\\\\", text)
    return UNSAFE_LINK_RE.sub(lambda m: f"{m.group(1)}#blocked-", text)


def literal_markdown(text: str) -> str:
    """What a person typed, shown exactly as typed: every Markdown mark is escaped."""
    text = LITERAL_RE.sub(lambda m: "\\" + m.group(0), html.escape(text, quote=False))

    def line_start(match: re.Match[str]) -> str:
        indent, mark = match.groups()
        if mark.isdigit():  # "1. " would start a numbered list: escape the dot instead
            return f"{indent}{mark}\\"
        return f"{indent}\\{mark}"

    return LINE_START_RE.sub(line_start, text)


def reply_markdown(text: str) -> str:
    """A model's Markdown made inert (see safe_markdown), with its math shown as written."""
    parts, last = [], 0
    for match in PROTECTED_RE.finditer(text):
        parts += [_escape_math(text[last:match.start()]), match.group(0)]
        last = match.end()
    parts.append(_escape_math(text[last:]))
    return safe_markdown("".join(parts))


def _escape_math(text: str) -> str:
    text = OPERATOR_STAR_RE.sub(lambda m: "\\*" * len(m.group(0)), text)
    return text.replace("~", "\\~")


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
    latency = turn.result.latency_s if turn.result is not None else None
    # Worth a mention when the answer streamed in while the turn went on, not when the
    # first words came with the last (a rule-based or non-streaming reply).
    if turn.first_token_s is not None and latency and turn.first_token_s < STREAMED * latency:
        parts.append(f"first token {turn.first_token_s:.1f} s")
    if latency is not None:
        parts.append(f"{latency:.1f} s")
    label = " \u00b7 ".join(html.escape(p, quote=True) for p in parts)
    return f'<span class="tw-footer">{label}</span>'


def elapsed(since: float | None, now: float) -> str:
    """A running timer for a title: whole seconds, shown from the first one on."""
    seconds = int(now - since) if since is not None else 0
    return f" \u00b7 {seconds} s" if seconds >= 1 else ""


def user_message(turn: Turn) -> dict[str, Any]:
    return {"role": "user", "content": literal_markdown(preview(turn.user))}


def step_message(turn: Turn, index: int, now: float) -> dict[str, Any]:
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
        # What the tool found, from its typed artifact: "= 9", "saved", "available".
        if step.artifact is not None and (found := step.artifact.brief()):
            metadata["title"] = f"Tool: {name} \u00b7 {plain_inline(found, 60)}"
    elif turn.running:
        body.append("*Running\u2026*")
        metadata.update(title=f"Tool: {name}{elapsed(turn.step_started.get(step.id), now)}",
                        status="pending")
    else:
        body.append("*No result: the turn ended before this tool finished.*")
        metadata["status"] = "done"
    if step.duration_s is not None:
        metadata["duration"] = round(float(step.duration_s), 3)
    return {"role": "assistant", "content": "\n\n".join(body), "metadata": metadata}


def pending_message(turn: Turn, now: float) -> dict[str, Any] | None:
    """A sign of life while the model thinks: before the first step, and between steps."""
    if not turn.running or turn.answer.strip() or any(
            step.result is None and step.error is None for step in turn.steps):
        return None
    since = max([turn.started, *(turn.step_started.values())])
    words = "Working on the answer" if turn.steps else "Thinking"
    return {"role": "assistant", "content": "",
            "metadata": {"title": f"{words}\u2026{elapsed(since, now)}", "status": "pending",
                         "id": f"{turn.id}-pending"}}


def stage_message(turn: Turn, index: int) -> dict[str, Any]:
    """A strategy stage as a collapsed step; a think-write thought is labelled as private."""
    stage = turn.stages[index][1]
    name = plain_inline(stage.get("name", "stage"))
    title = "Thought (private, not part of the answer)" if name == "think" else f"Stage: {name}"
    text = reply_markdown(preview(str(stage.get("text") or ""))) or "*(nothing)*"
    return {"role": "assistant", "content": text,
            "metadata": {"title": title, "id": f"{turn.id}-stage-{index}", "status": "done"}}


def plot_description(step: Any) -> str:
    """The plot's text alternative: what it shows and the value the tool found."""
    args = step.args if isinstance(step.args, dict) else {}
    said = " ".join(PLOT_NOTE_RE.sub("", str(step.result or "")).split())
    if step.name != "plot_area" or not {"expression", "lower", "upper"} <= set(args):
        return f"Plot made by {plain_inline(step.name)}. {said}".strip()
    variable = args.get("variable") or "x"
    return (f"Plot of {args['expression']} for {variable} from {args['lower']} to "
            f"{args['upper']}: the area under the curve is shaded between dashed lines at the "
            f"bounds. {said}").strip()


def plot_message(path: str, step: Any) -> dict[str, Any]:
    """An inline image with its text alternative (Gradio's image reads `alt_text` from the
    props of a component message; a plain file message drops it)."""
    return {"role": "assistant", "content": {
        "type": "component", "component": "image", "constructor_args": {},
        "value": {"path": path, "meta": {"_type": "gradio.FileData"}},
        "props": {"alt_text": plot_description(step), "show_label": False}}}


def answer_message(turn: Turn) -> dict[str, Any] | None:
    text = reply_markdown(turn.answer.strip())
    if turn.status == "running":
        return {"role": "assistant", "content": text} if text else None
    if turn.status == "stopped":
        text = f"{text}\n\n*{STOPPED_NOTE}*" if text else f"*{STOPPED_NOTE}*"
    elif turn.status == "error":
        error = turn.error
        heading = ERROR_HEADINGS.get(error.type if error else "", "Something went wrong")
        text = f"**{heading}.** {reply_markdown(error.message if error else '')}"
    return {"role": "assistant", "content": f"{text}\n\n{footer(turn)}"}


def turn_messages(turn: Turn, now: float) -> list[dict[str, Any]]:
    messages = [user_message(turn)]
    for index, step in enumerate(turn.steps):
        messages.extend(stage_message(turn, i) for i, (at, _) in enumerate(turn.stages)
                        if at == index)
        messages.append(step_message(turn, index, now))
        messages.extend(plot_message(path, step) for path in turn.plots.get(step.id, []))
    messages.extend(stage_message(turn, i) for i, (at, _) in enumerate(turn.stages)
                    if at >= len(turn.steps))
    for extra in (pending_message(turn, now), answer_message(turn)):
        if extra is not None:
            messages.append(extra)
    return messages


def message_at(turns: list[Turn], index: Any) -> tuple[Turn, int] | None:
    """The turn the chatbot's message number `index` belongs to, and which of its replies
    (assistant messages, from 0) that message is; a user's message gives the turn's last."""
    if isinstance(index, list | tuple):
        index = index[0] if index else None
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        return None
    now = time.time()
    for turn in turns:
        messages = turn_messages(turn, now)
        if index < len(messages):
            roles = [message["role"] for message in messages]
            if roles[index] == "assistant":
                return turn, roles[:index].count("assistant")
            return turn, max(roles.count("assistant") - 1, 0)
        index -= len(messages)
    return None


def feedback_values(turns: list[Turn], now: float | None = None) -> list[str | None]:
    """The thumbs the chatbot draws, one per assistant message (gr.Chatbot's feedback_value):
    without them, Gradio redraws the conversation at the end of every reply and drops every
    thumb it showed, stored or not."""
    now = time.time() if now is None else now
    values: list[str | None] = []
    for turn in turns:
        replies = sum(message["role"] == "assistant" for message in turn_messages(turn, now))
        values.extend(turn.thumb[1] if turn.thumb and turn.thumb[0] == reply else None
                      for reply in range(replies))
    return values


def render(turns: list[Turn], now: float | None = None) -> list[dict[str, Any]]:
    """The whole conversation as gr.Chatbot messages; `now` drives the running timers."""
    now = time.time() if now is None else now
    return [message for turn in turns for message in turn_messages(turn, now)]
