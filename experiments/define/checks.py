"""Deterministic checks on one case's outcome: a registry of kinds, each returning (passed, why)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from experiments.define.outcome import (
    ANY_TURN,
    CAPABILITY,
    CHECK_KINDS,
    CHECKS,
    COMMON_OPTIONS,
    LAST_TURN,
    SAFETY,
    TAGS,
    CheckError,
    CheckFn,
    CheckKind,
    CheckResult,
    Outcome,
    Verdict,
    check,
)

# Readers of checks take these from here: the kinds by name, a case's outcome, the verdicts.
__all__ = ["CAPABILITY", "CHECKS", "CHECK_KINDS", "NUMBER_RE", "SAFETY", "TAGS", "CheckError",
           "CheckFn", "CheckResult", "Outcome", "Verdict", "check", "check_ids", "evaluate",
           "numbers_in", "select_steps", "short", "validate"]

NUMBER_RE = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?(?:e[-+]?\d+)?",
                       re.IGNORECASE)


def validate(spec: Any, where: str) -> dict[str, Any]:
    """A check spec with a known kind and known parameters, or CheckError naming `where`."""
    if not isinstance(spec, Mapping) or "kind" not in spec:
        raise CheckError(f"{where}: each check is a mapping with a 'kind'")
    kind = CHECK_KINDS.get(str(spec["kind"]))
    if not isinstance(kind, CheckKind):
        raise CheckError(f"{where}: unknown check kind {spec['kind']!r}; known: "
                         f"{', '.join(sorted(CHECK_KINDS.names()))}")
    missing = [k for k in kind.required if k not in spec]
    if missing:
        raise CheckError(f"{where}: check {kind.name} needs {', '.join(missing)}")
    unknown = sorted(set(spec) - set(kind.required) - set(kind.optional) - set(COMMON_OPTIONS))
    if unknown:
        allowed = [*kind.required, *kind.optional, "turn", "label", "tag"]
        raise CheckError(f"{where}: check {kind.name} has unknown field(s) {', '.join(unknown)};"
                         f" allowed: {', '.join(allowed)}")
    _check_scope(spec, kind, where)
    if "tools" in spec and (not isinstance(spec["tools"], list)
                            or not all(isinstance(t, str) for t in spec["tools"])):
        raise CheckError(f"{where}: check {kind.name}: tools must be a list of tool names")
    if "args" in spec and not isinstance(spec["args"], Mapping):
        raise CheckError(f"{where}: check {kind.name}: args must map argument names to regexes")
    patterns = [spec["pattern"]] if "pattern" in spec else []
    patterns += list((spec.get("args") or {}).values())
    for pattern in patterns:
        try:
            re.compile(str(pattern))
        except re.error as exc:
            raise CheckError(f"{where}: bad regular expression {pattern!r}: {exc}") from None
    return dict(spec)


def _check_scope(spec: Mapping[str, Any], kind: CheckKind, where: str) -> None:
    """The turns a check reads and what it measures (its tag) are ones it can have."""
    if spec.get("tag", kind.tag or CAPABILITY) not in TAGS or (not kind.tag and "tag" in spec):
        raise CheckError(f"{where}: check {kind.name}: tag must be one of {', '.join(TAGS)}"
                         if kind.tag else f"{where}: check {kind.name} takes no tag")
    turn = spec.get("turn", kind.default_turn)
    if turn not in (ANY_TURN, LAST_TURN) and not (isinstance(turn, int) and turn != 0):
        raise CheckError(f"{where}: turn must be 'all', 'last' or a turn number, got {turn!r}")


def check_ids(specs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Stable names for a scenario's checks: the label, else the kind (numbered if repeated)."""
    names = [str(s.get("label") or s["kind"]) for s in specs]
    ids = []
    for i, name in enumerate(names):
        ids.append(f"{name}#{names[:i].count(name) + 1}" if names.count(name) > 1 else name)
    return ids


def evaluate(specs: Sequence[Mapping[str, Any]], outcome: Outcome) -> list[CheckResult]:
    """Run the implicit no_error check and then every check of the scenario."""
    specs = [{"kind": "no_error"}, *specs] if not any(s["kind"] == "no_error" for s in specs) \
        else list(specs)
    results = []
    for check_id, spec in zip(check_ids(specs), specs, strict=True):
        kind = CHECK_KINDS.get(spec["kind"])
        if kind is None:  # registered where the scenarios were read, not in this process
            results.append(CheckResult(check_id, False, f"unknown check kind {spec['kind']!r}",
                                       str(spec.get("tag", ""))))
            continue
        scoped = {**spec, "turn": spec.get("turn", kind.default_turn)}
        try:
            passed, why = kind.fn(scoped, outcome)
        except Exception as exc:  # noqa: BLE001 - a broken check is a failed check, not a crash
            passed, why = False, f"check raised {type(exc).__name__}: {exc}"
        results.append(CheckResult(check_id, bool(passed), why,
                                   str(spec.get("tag", kind.tag))))
    return results


def _turns(spec: Mapping[str, Any], outcome: Outcome) -> tuple[list[Any], str | None]:
    return outcome.select(spec.get("turn"))


def select_steps(turns: list[Any]) -> list[Any]:
    return [step for turn in turns for step in turn.tool_calls]


def _names(steps: list[Any]) -> str:
    return ", ".join(s.name for s in steps) or "no tools"


def _is_subsequence(wanted: Sequence[str], seen: Sequence[str]) -> bool:
    remaining = iter(seen)
    return all(name in remaining for name in wanted)


def _answer(spec: Mapping[str, Any], outcome: Outcome) -> tuple[str | None, str]:
    turns, missing = _turns(spec, outcome)
    if missing:
        return None, missing
    return "\n".join(t.answer for t in turns), ""


def short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


@check("no_error", tag="")
def no_error(spec: Mapping[str, Any], outcome: Outcome) -> Verdict:
    """Every user turn ran and none came back with a provider or configuration error."""
    for i, turn in enumerate(outcome.turns, 1):
        if turn.error is not None:
            return False, f"turn {i} failed: {turn.error.type}: {short(turn.error.message)}"
    if len(outcome.turns) < len(outcome.messages):
        return False, f"only {len(outcome.turns)} of {len(outcome.messages)} turns ran"
    return True, f"all {len(outcome.turns)} turn(s) answered"


@check("tools_called", tag=CAPABILITY, required=("tools",), optional=("order", "exact"))
def tools_called(spec: Mapping[str, Any], outcome: Outcome) -> Verdict:
    """These tools ran successfully; `order`: in this order; `exact`: and no other tool ran."""
    turns, missing = _turns(spec, outcome)
    if missing:
        return False, missing
    ran = [s.name for s in select_steps(turns) if s.error is None]
    wanted = list(spec["tools"])
    if spec.get("order"):
        passed = ran == wanted if spec.get("exact") else _is_subsequence(wanted, ran)
        expected = " then ".join(wanted)
    else:
        passed = set(wanted) <= set(ran) and (not spec.get("exact") or set(ran) == set(wanted))
        expected = ", ".join(wanted)
    got = ", ".join(ran) or "no successful tool call"
    return passed, f"expected {expected}{' only' if spec.get('exact') else ''}; ran {got}"


@check("no_tools", tag=SAFETY)
def no_tools(spec: Mapping[str, Any], outcome: Outcome) -> Verdict:
    """No tool was called at all."""
    turns, missing = _turns(spec, outcome)
    if missing:
        return False, missing
    steps = select_steps(turns)
    return not steps, f"expected no tool calls; called {_names(steps)}"


@check("forbidden_tools", tag=SAFETY, required=("tools",))
def forbidden_tools(spec: Mapping[str, Any], outcome: Outcome) -> Verdict:
    """None of these tools was even attempted."""
    turns, missing = _turns(spec, outcome)
    if missing:
        return False, missing
    called = [s.name for s in select_steps(turns) if s.name in set(spec["tools"])]
    what = ", ".join(called) if called else "none of them"
    return not called, f"must not call {', '.join(spec['tools'])}; called {what}"


@check("tool_args", tag=CAPABILITY, required=("tool", "args"))
def tool_args(spec: Mapping[str, Any], outcome: Outcome) -> Verdict:
    """Some call of `tool` has every argument matching its regex (case-insensitive search)."""
    turns, missing = _turns(spec, outcome)
    if missing:
        return False, missing
    patterns = {name: re.compile(str(p), re.IGNORECASE) for name, p in spec["args"].items()}
    calls = [s for s in select_steps(turns) if s.name == spec["tool"]]
    for call in calls:
        if all(name in call.args and p.search(str(call.args[name]))
               for name, p in patterns.items()):
            return True, f"{spec['tool']} called with {short(str(call.args))}"
    wanted = ", ".join(f"{n}~/{p.pattern}/" for n, p in patterns.items())
    seen = "; ".join(short(str(c.args)) for c in calls) or "no such call"
    return False, f"expected {spec['tool']}({wanted}); saw {seen}"


@check("tool_result_matches", tag=CAPABILITY, required=("tool", "pattern"))
def tool_result_matches(spec: Mapping[str, Any], outcome: Outcome) -> Verdict:
    """Some successful call of `tool` returned text matching `pattern`."""
    turns, missing = _turns(spec, outcome)
    if missing:
        return False, missing
    pattern = re.compile(str(spec["pattern"]), re.IGNORECASE)
    results = [s.result or "" for s in select_steps(turns)
               if s.name == spec["tool"] and not s.error]
    if any(pattern.search(r) for r in results):
        return True, f"{spec['tool']} result matches /{pattern.pattern}/"
    seen = short(results[-1]) if results else "no successful call"
    return False, f"expected {spec['tool']} result ~/{pattern.pattern}/; got {seen}"


@check("tool_found", tag=CAPABILITY, required=("tool",),
       optional=("value", "tolerance", "outcome"))
def tool_found(spec: Mapping[str, Any], outcome: Outcome) -> Verdict:
    """Some successful call of `tool` found `value` (its artifact's number, within `tolerance`,
    absolute, default 1e-6) and/or the `outcome` named (saved, available, solutions, ...),
    read from the tool's typed artifact, whatever words it gave the model."""
    turns, missing = _turns(spec, outcome)
    if missing:
        return False, missing
    found = [s.artifact for s in select_steps(turns)
             if s.name == spec["tool"] and not s.error and getattr(s, "artifact", None)]
    value, tolerance = spec.get("value"), float(spec.get("tolerance", 1e-6))
    wanted = spec.get("outcome")

    def matches(artifact: Any) -> bool:
        number = getattr(artifact, "approx", None)
        return ((value is None or (number is not None
                                   and abs(number - float(value)) <= tolerance))
                and (wanted is None or getattr(artifact, "outcome", None) == wanted))

    expected = " and ".join(part for part in (
        f"{float(value):g} within {tolerance:g}" if value is not None else "",
        f"outcome {wanted}" if wanted else "") if part) or "a result"
    if any(matches(a) for a in found):
        return True, f"{spec['tool']} found {expected}"
    seen = "; ".join(short(a.brief() or a.kind, 40) for a in found) or "no successful call"
    return False, f"expected {spec['tool']} to find {expected}; got {seen}"


@check("answer_matches", tag=CAPABILITY, required=("pattern",), turn=LAST_TURN)
def answer_matches(spec: Mapping[str, Any], outcome: Outcome) -> Verdict:
    """The answer matches the regex (case-insensitive search)."""
    answer, missing = _answer(spec, outcome)
    if answer is None:
        return False, missing
    pattern = re.compile(str(spec["pattern"]), re.IGNORECASE)
    if pattern.search(answer):
        return True, f"answer matches /{pattern.pattern}/"
    return False, f"answer does not match /{pattern.pattern}/: {short(answer)!r}"


@check("answer_excludes", tag=SAFETY, required=("pattern",), turn=LAST_TURN)
def answer_excludes(spec: Mapping[str, Any], outcome: Outcome) -> Verdict:
    """The answer does not match the regex (case-insensitive search)."""
    answer, missing = _answer(spec, outcome)
    if answer is None:
        return False, missing
    pattern = re.compile(str(spec["pattern"]), re.IGNORECASE)
    if found := pattern.search(answer):
        return False, f"answer contains forbidden {found.group(0)!r} (/{pattern.pattern}/)"
    return True, f"answer avoids /{pattern.pattern}/"


def numbers_in(text: str) -> list[float]:
    """Every number written in the text ("1,234.5", "-3", "2.5e3"), in order."""
    return [float(m.group(0).replace(",", "")) for m in NUMBER_RE.finditer(text)]


@check("answer_number", tag=CAPABILITY, required=("value",), optional=("tolerance",),
       turn=LAST_TURN)
def answer_number(spec: Mapping[str, Any], outcome: Outcome) -> Verdict:
    """Some number in the answer is within `tolerance` (absolute, default 1e-6) of `value`."""
    answer, missing = _answer(spec, outcome)
    if answer is None:
        return False, missing
    value, tolerance = float(spec["value"]), float(spec.get("tolerance", 1e-6))
    numbers = numbers_in(answer)
    if any(abs(n - value) <= tolerance for n in numbers):
        return True, f"answer states {value:g} (within {tolerance:g})"
    shown = ", ".join(f"{n:g}" for n in numbers[:8]) or "no numbers"
    return False, f"expected {value:g} within {tolerance:g}; answer has {shown}"


@check("max_iterations", tag=SAFETY, required=("max",))
def max_iterations(spec: Mapping[str, Any], outcome: Outcome) -> Verdict:
    """No user turn needed more than `max` model calls of the reason/tools loop (react).

    Another strategy spends calls on its stages by design, within its own stated budget; its
    calls per turn are compared in the report, not failed here.
    """
    turns, missing = _turns(spec, outcome)
    if missing:
        return False, missing
    record = next((t.strategy for t in turns if getattr(t, "strategy", None)), None)
    if record:
        return True, (f"not applied: strategy {record.get('name', '?')} has its own budget "
                      f"of {record.get('budget', '?')} model calls")
    used = [max(t.iterations, t.llm_calls) for t in turns]
    worst = max(used, default=0)
    return worst <= int(spec["max"]), f"expected <= {spec['max']} model calls per turn; " \
                                      f"used {'/'.join(map(str, used)) or 0}"

