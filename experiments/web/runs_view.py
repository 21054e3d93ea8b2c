"""What the Experiments tab shows of a run: its cases to pick from and one transcript as HTML,
every text escaped (answers and tool results are untrusted), failed checks highlighted."""

from __future__ import annotations

import html
from collections import Counter
from pathlib import Path
from typing import Any

FAILED_STYLE = ("background:#fde8e8;border-left:4px solid #D55E00;padding:2px 6px;"
                "color:#7a1f00;font-weight:600")
PASSED_STYLE = "padding:2px 6px;color:var(--body-text-color-subdued)"
BOX_STYLE = ("border:1px solid var(--border-color-primary);border-radius:6px;padding:6px 10px;"
             "margin:6px 0;white-space:pre-wrap;overflow-wrap:anywhere")


def _label(row: dict[str, str]) -> str:
    try:
        temperature = f"{float(row.get('temperature') or 0):g}"
    except ValueError:
        temperature = "?"
    # Short enough to read whole in a phone's picker: the default variation and strategy
    # go unsaid.
    parts = [str(row.get("persona", "?")), str(row.get("model_spec") or "offline"),
             f"T={temperature}"]
    if (variation := row.get("variation") or "baseline") != "baseline":
        parts.append(str(variation))
    if (strategy := row.get("strategy") or "react") != "react":
        parts.append(str(strategy))
    return " / ".join(parts)


def case_index(run_dir: Path) -> dict[str, dict[str, Any]]:
    """config hash -> {"label", "cases": {case key: (scenario, repeat, status)}} of a run."""
    from experiments.store import open_run

    try:
        rows = open_run(run_dir).rows()
    except ValueError:  # no finished case yet
        return {}
    index: dict[str, dict[str, Any]] = {}
    for row in rows.to_dict("records"):
        if not row.get("config_hash") or not row.get("case_key"):
            continue  # not a row this harness wrote
        entry = index.setdefault(row["config_hash"], {"label": _label(row), "cases": {}})
        entry["cases"][row["case_key"]] = (row["scenario"], row["repeat"], row["status"])
    return index


def config_choices(index: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    """Configurations with their case counts by status, the ones with failures first."""
    choices = []
    for config, entry in index.items():
        counts = Counter(status for _, _, status in entry["cases"].values())
        text = ", ".join(f"{counts[s]} {s}" for s in ("ok", "failed", "error") if counts[s])
        choices.append((counts["ok"] == len(entry["cases"]), f"{entry['label']} ({text})",
                        config))
    return [(label, config) for _, label, config in sorted(choices)]


def case_choices(index: dict[str, dict[str, Any]], config: str | None) -> list[tuple[str, str]]:
    """The cases of one configuration: scenario and repeat, with the status; failures first."""
    cases = (index.get(config or "") or {}).get("cases", {})
    order = {"failed": 0, "error": 1, "ok": 2}
    ranked = sorted(cases.items(), key=lambda kv: (order.get(kv[1][2], 3), kv[1][0], kv[1][1]))
    return [(f"{scenario} (repeat {repeat}): {status}", key)
            for key, (scenario, repeat, status) in ranked]


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _checks(transcript: dict[str, Any]) -> list[str]:
    lines = ["<ul style='list-style:none;padding-left:0'>"]
    # [id, passed, why] or, since checks are tagged, [id, passed, why, capability|safety].
    for check_id, passed, why, *tag in transcript.get("checks", []):
        style, mark = (PASSED_STYLE, "pass") if passed else (FAILED_STYLE, "FAILED")
        css = "tw-check-pass" if passed else "tw-check-fail"
        said = f" <i>({_e(tag[0])})</i>" if tag and tag[0] else ""
        lines.append(f"<li class='{css}' style='{style}'>{mark}: <b>{_e(check_id)}</b>{said} "
                     f"&mdash; {_e(why)}</li>")
    return [*lines, "</ul>"]


def _message(message: dict[str, Any]) -> list[str]:
    parts = []
    if "ai" in message:
        for call in message.get("calls", []):
            args = call.get("args", call.get("unreadable"))
            parts.append(f"<div class='tw-call'><b>assistant calls</b> "
                         f"<code>{_e(call.get('name'))}({_e(args)})</code></div>")
        if str(message["ai"]).strip():
            parts.append(f"<div style='{BOX_STYLE}'><b>assistant:</b> {_e(message['ai'])}</div>")
    elif "tool" in message:
        took = f" ({message['s']:.3g} s)" if "s" in message else ""
        text = message.get("error", message.get("result", ""))
        label = "tool error" if "error" in message else "tool"
        parts.append(f"<div style='{BOX_STYLE}'><b>{label} {_e(message['tool'])}{took}:"
                     f"</b> {_e(text)}</div>")
    return parts


def _turn(i: int, turn: dict[str, Any]) -> list[str]:
    usage = turn.get("usage") or {}
    facts = [f"{turn.get('latency_s', 0):.3f} s", f"{turn.get('model_calls', 0)} model calls",
             f"{turn.get('http_attempts', 0)} HTTP requests",
             f"tokens {usage.get('input_tokens', 0)}/{usage.get('output_tokens', 0)}"
             + (" (estimated)" if turn.get("usage_estimated") else "")]
    if turn.get("ttft_s") is not None:
        facts.append(f"first token {turn['ttft_s']:.3f} s")
    parts = [f"<h4>Turn {i} <small>({_e(', '.join(facts))})</small></h4>",
             f"<div style='{BOX_STYLE}'><b>user:</b> {_e(turn.get('user', ''))}</div>"]
    for message in turn.get("messages", []):
        parts.extend(_message(message))
    if error := turn.get("error"):
        parts.append(f"<div style='{FAILED_STYLE}'>error ({_e(error.get('type'))}): "
                     f"{_e(error.get('message'))}</div>")
    return parts


def transcript_html(transcript: dict[str, Any] | None, note: str = "") -> str:
    """One case as HTML: its status, checks (failures highlighted), judge, then every turn."""
    if transcript is None:
        return f"<p class='tw-note'>{_e(note or 'Pick a configuration and a case.')}</p>"
    status = str(transcript.get("status", "?"))
    head_style = FAILED_STYLE if status != "ok" else PASSED_STYLE
    parts = [f"<div id='tw-transcript'><p style='{head_style}'>{_e(transcript['case_key'])}: "
             f"{_e(status.upper())}</p>", "<h4>Checks</h4>", *_checks(transcript)]
    if judge := transcript.get("judge"):
        parts.append(f"<p><b>Judge {_e(judge.get('model'))}:</b> score {_e(judge.get('score'))}"
                     f" &mdash; {_e(judge.get('reason'))}</p>")
    for i, turn in enumerate(transcript.get("turns", []), 1):
        parts.extend(_turn(i, turn))
    return "\n".join([*parts, "</div>"])
