"""Does a tool result answer what was asked? Its artifact says what it computed or looked up
(the operation and its operands, the city, the vehicle); the customer's latest message says
what was asked. A result that answers a different question is not given to the model as an
answer: the grounding guard turns it into a refusal (agent/argument_check.py).

What counts: a math result's operation must be one the clause it answers names (in words or
symbols; a follow-up that names none takes the message before), every number that clause
writes must be one of its operands (15% may be 0.15), and a clause that uses "the result"
must use an earlier result of the turn; a service check must be for the place and service the
message names, a tire recommendation for the vehicle and driving it names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.messages import AnyMessage, ToolMessage

from treadwise.agent.argument_check import say
from treadwise.conversation import current_turn
from treadwise.evidence import expressions, numbers
from treadwise.evidence.clauses import BACK_REFERENCE, clauses, plan
from treadwise.evidence.conversation import Evidence
from treadwise.privacy.consent import Refusal
from treadwise.tools.artifacts import artifact_of
from treadwise.tools.business_results import BusinessInfo, ServiceAvailability, TireRecommendation
from treadwise.tools.math_results import Calculation, calculation_of

_ADD = (r"\bplus\b|\badd\w*|\bsum\b|\btotal\b|\+|\bmore than\b|\bincrease\w*|\baltogether\b"
        r"|\bmark\s?up\b|\btax\b|\btip\b|\bsurcharge\b")
_SUBTRACT = (r"\bminus\b|\bsubtract\w*|\bless\b|\btake away\b|\bdifference\b|-|\bdecrease\w*"
             r"|\bfewer\b|\bdeduct\w*|\bleft\b|\bremain\w*|\bnegative\b|\boff\b|\bdiscount\w*"
             r"|\breduc\w*|\bcut\b|\bsale\b|\bsav(?:e|ing)s?\b")
_MULTIPLY = (r"\btimes\b|\bmultipl\w*|\bproduct\b|[×*·]|\bof\b|\bdouble\b|\btwice\b"
             r"|\btriple\b|\d\s*x\s*\d|\bpercent\w*|%|\bper\b|\beach\b|\bevery\b")
_DIVIDE = (r"\bdivid\w*|\bover\b|\bper\b|÷|/|\bratio\b|\bhal(?:f|ve)\b|\bquarter\b|\bthird\b"
           r"|\bsplit\b|\bshare\w*|\bpercent\w*|%|\baverage\b|\bmean\b|\bfraction\b")
_POWER = (r"\bpower\b|\^|\*\*|\bsquared?\b|\bcubed?\b|[²³]|\bexponent\w*|\braise\w*"
          r"|\bto the \w+(?:st|nd|rd|th)\b|\broot\b|√|\bsqrt\b")
CUES: dict[str, str] = {
    "add": _ADD, "subtract": _SUBTRACT, "multiply": _MULTIPLY, "divide": _DIVIDE,
    "power": _POWER,
    "square": r"\bsquared\b|\bsquare\b(?!\s*roots?)|²|\^\s*2\b|\*\*\s*2\b|\btimes itself\b",
    "square_root": r"\broots?\b|\bsqrt\b|√",
    "integrate": r"\bintegra\w*|\bantideriv\w*|\barea\b|∫|\bprimitive\b",
    "differentiate": (r"\bderiv\w*|\bdifferentiat\w*|\bd/d|\bslope\b|\brate of change\b"
                      r"|\btangent\b|'"),
    "solve_equation": (r"\bsolv\w*|=|\broots?\b|\bzeros?\b|\bfind [a-z]\b|\bvalue of [a-z]\b"
                       r"|\bfor [a-z]\b|\bequations?\b|\bintersect\w*"),
    "analyze_function": (r"\banaly[sz]\w*|\bdomain\b|\bcritical\b|\bextrem\w*|\bmaxim\w*"
                         r"|\bminim\w*|\broots?\b|\bzeros?\b|\bbehaviou?r\b|\bincreas\w*"
                         r"|\bdecreas\w*|\binflection\b|\basymptot\w*|\bstudy\b"),
    "limit": r"\blimit\w*|\blim\b|\bapproach\w*|\btends?\b|\bgoes to\b|→|->",
    # A definite integral's picture is part of its answer (the area under the curve).
    "plot_area": (r"\bplot\w*|\bgraph\w*|\bdraw\w*|\bsketch\w*|\bshad\w*|\barea\b|\bpicture\b"
                  r"|\bintegra\w*|∫"),
}
# A message that carries on from the one before ("what about from 0 to 6?").
FOLLOW_UP = re.compile(r"^\s*(?:and|what about|how about|now|same|instead|also|or)\b", re.I)
# Operators of a calculated expression and the words that ask for them.
OPERATOR_CUES = {"+": _ADD, "-": _SUBTRACT, "*": _MULTIPLY, "/": _DIVIDE, "^": _POWER,
                 "%": r"%|\bpercent\w*"}
DONE = {"add": "an addition", "subtract": "a subtraction", "multiply": "a multiplication",
        "divide": "a division", "power": "a power", "square": "a square",
        "square_root": "a square root", "integrate": "an integral",
        "differentiate": "a derivative", "solve_equation": "an equation",
        "analyze_function": "a function analysis", "limit": "a limit", "plot_area": "a plot",
        "calculate": "a calculation", "+": "an addition", "-": "a subtraction",
        "*": "a multiplication", "/": "a division", "^": "a power", "%": "a percentage"}


def _said(pattern: str, *texts: str) -> bool:
    return any(re.search(pattern, text, re.IGNORECASE) for text in texts)


def _operand_values(found: Calculation) -> list[float]:
    values: list[float] = []
    for value in found.operands.values():
        if (number := numbers.number_of(value)) is not None:
            values.append(number)
        elif isinstance(value, str):
            values += numbers.numerals(value)
    return values


def _used(wanted: float, used: Iterable[float], changed: bool = True) -> bool:
    """A number of the question is among a call's operands (as a percent too: 15% as 0.15,
    and as 1.15 or 0.85 when the question raises or cuts by it)."""
    forms = (wanted, -wanted, wanted / 100) + ((1 + wanted / 100, 1 - wanted / 100)
                                               if changed else ())
    return any(numbers.matches(u, forms) for u in used)


def _operators(expression: str) -> list[str]:
    """The binary operators of an expression ("-3 + x" has only +)."""
    text = expression.replace("**", "^").replace(" ", "")
    # A power's exponent is the power's own: x^(1/2) is a root, not a division.
    text = re.sub(r"\^\([^()]*\)", "^1", text)
    found = []
    for i, char in enumerate(text):
        if char in "+-*/^%" and not (char in "+-" and (i == 0 or text[i - 1] in "(+-*/^,=")):
            found.append(char)
    return list(dict.fromkeys(found))


def _percent_as_whole(found: Calculation, clause: str, used: list[float]) -> float | None:
    """A percentage of the question used as a whole number (15 for 15%, 15 x 240 = 3600);
    an expression that writes % or divides by 100 keeps the percent."""
    expression = str(found.operands.get("expression", ""))
    if "%" in expression or re.search(r"/\s*100\b", expression):
        return None
    for share in (float(p) for p in numbers.PERCENT.findall(clause)):
        if numbers.matches(share, used) and not numbers.matches(share / 100, used):
            return share
    return None


def _clause(text: str, used: list[float], earlier: bool, operation: str) -> str:
    """The clause of the message a call answers: one that refers back to an earlier result
    when the call uses one; else the one whose numbers it uses most, or one that names its
    operation. (Back references first: in "Add 0 and 7, then square the result" the square of
    7 answers the second clause, though 7 is also written in the first.)"""
    parts = clauses(text) or [text]
    if earlier and (refers := [p for p in parts[1:] if BACK_REFERENCE.search(p)]):
        return refers[0]
    scored = [(sum(_used(w, used) for w in numbers.written(p)), p) for p in parts]
    best = max(scored, key=lambda s: s[0])
    if best[0]:
        return best[1]
    named = [p for p in parts if _said(CUES.get(operation, r"$^"), p)]
    return named[0] if named else text


def _math_problems(found: Calculation, messages: Sequence[AnyMessage],
                   result: ToolMessage) -> list[str]:
    said = Evidence.of(messages).said
    latest = said[-1] if said else ""
    before = [m for m in current_turn(messages) if isinstance(m, ToolMessage)
              and m.status != "error" and m is not result and m.id != result.id]
    earlier = [v for m in before if (c := calculation_of(m)) for v in
               (numbers.number_of(c.exact), c.approx) if v is not None]
    used = _operand_values(found)
    uses_earlier = any(numbers.matches(u, earlier) for u in used)
    clause = _clause(latest, used, uses_earlier, found.operation)
    problems: list[str] = []
    # A follow-up that names no operation ("what about from 0 to 6?") continues the one before;
    # a question that names none at all ("6 tims 7") cannot be held to one.
    every_cue = "|".join([*CUES.values(), *OPERATOR_CUES.values()])
    previous = tuple(said[-2:-1]) if FOLLOW_UP.search(latest) else ()
    where = next((texts for texts in ((clause, latest), previous)
                  if texts and _said(every_cue, *texts)), ())
    wanted = [found.operation] if found.operation in CUES else \
        _operators(str(found.operands.get("expression", ""))) \
        if found.operation == "calculate" else []
    for operation in wanted if where else []:
        cue = CUES.get(operation) or OPERATOR_CUES.get(operation, r"$^")
        if not _said(cue, *where):
            problems.append(f"I worked out {DONE.get(operation, 'a different calculation')}, "
                            "which your question doesn't ask for")
            break
    # "the first one", "that one": the word one is seldom an operand.
    asked = [*numbers.numerals(clause), *(w for w in numbers.word_numbers(clause) if w != 1)]
    changed = numbers.CHANGE.search(clause) is not None
    left = [w for w in asked if not _used(w, used, changed)
            and not (uses_earlier and numbers.matches(w, earlier))]
    if left:
        problems.append(f"I left out {numbers.as_json(left[0])}")
    if (whole := _percent_as_whole(found, clause, used)) is not None:
        problems.append(f"I used {numbers.as_json(whole)} instead of {numbers.as_json(whole)}%")
    if (other := _other_expression(found, said, messages, clause)) is not None:
        problems.append(other)
    if BACK_REFERENCE.search(clause) and before and earlier and not uses_earlier \
            and clause != (clauses(latest) or [latest])[0]:
        problems.append("I didn't use the result of the step before")
    return problems


# Operations on an expression: it must be the customer's, not one built from a result.
ON_EXPRESSIONS = ("differentiate", "integrate", "solve_equation", "limit", "analyze_function",
                  "plot_area")


def _other_expression(found: Calculation, said: Sequence[str], messages: Sequence[AnyMessage],
                      clause: str) -> str | None:
    """An expression the customer did not write, operated on as if asked ("the derivative of
    sin(x)*x" answered with that of sin(x)*cos(x), whose cos came from the first result).
    Earlier results count only where the message refers back to one ("then integrate it")."""
    expression = found.operands.get("expression") or found.operands.get("equation")
    if found.operation not in ON_EXPRESSIONS or not isinstance(expression, str):
        return None
    later = (clauses(said[-1]) or said[-1:])[1:] if said else []
    refers = any(BACK_REFERENCE.search(part) for part in (clause, *later))
    asked = Evidence.of(messages) if refers else Evidence(tuple(said))
    missing = expressions.missing_symbols(expression, asked)
    if not missing:
        return None
    return f"I worked on {expression}, which has {missing[0]}, not on the expression you gave"


def _place_problems(found: ServiceAvailability, latest: str) -> list[str]:
    asked = Evidence((latest,))
    problems = []
    place = found.city or found.location
    if asked.places and not asked.holds_place(place):
        problems.append(f"I checked {place}, not {asked.places[0]}")
    if asked.services and found.service and found.service not in asked.services:
        problems.append(f"I checked {found.label or found.service}, not the service you named")
    return problems


def _tire_problems(found: TireRecommendation, latest: str) -> list[str]:
    asked = Evidence((latest,))
    if asked.vehicles and found.vehicle and found.vehicle not in asked.vehicles:
        return [f"I looked up tires for {found.vehicle}, not for {asked.vehicles[0]}"]
    if asked.usages and found.use and found.use not in asked.usages:
        return [f"I looked up {found.use} driving, not {asked.usages[0]}"]
    return []


# What a business question asks for: a service in a place, or tires picked for a vehicle.
RECOMMEND = re.compile(r"\brecommend\w*|\bsuggest\w*|\badvi[cs]e\b|\b(?:which|what|best)\s+"
                       r"(?:\w+\s+)?tires?\b|\bshould i (?:buy|get|choose)\b", re.I)
AVAILABLE = re.compile(r"\bavailab\w*|\boffer\w*|\bprovide\w*|\bdo you (?:do|install|fix|repair"
                       r"|rotate|balance|align|service|come|cover)\b|\bcan you (?:come|do)\b"
                       r"|\bserv(?:e|ice)s?\b", re.I)


def _business_problems(found: BusinessInfo, latest: str) -> list[str]:
    """A general answer to a question about a place's services, or about which tires to pick
    (SmolLM2 with every tool offered: "Is tire repair available in Fort Worth?" answered with
    the company overview): that result does not answer it."""
    if found.matched and found.topic and re.search(rf"\b{re.escape(found.topic)}", latest, re.I):
        return []  # the customer asked about that very topic
    asked = Evidence((latest,))
    looked = f"our {found.title.lower()}" if found.matched else "the company overview"
    if asked.places and AVAILABLE.search(latest):
        return [f"I looked up {looked}, not whether we serve {asked.places[0]}"]
    if RECOMMEND.search(latest):
        return [f"I looked up {looked}, not which tires to pick"]
    return []


def problems(result: ToolMessage, messages: Sequence[AnyMessage]) -> list[str]:
    """What keeps this result from answering the customer's latest message (empty: it does)."""
    found = artifact_of(result)
    latest = Evidence.of(messages).latest
    if isinstance(found, Calculation):
        return _math_problems(found, messages, result)
    if isinstance(found, ServiceAvailability):
        return _place_problems(found, latest)
    if isinstance(found, TireRecommendation):
        return _tire_problems(found, latest)
    if isinstance(found, BusinessInfo):
        return _business_problems(found, latest)
    return []


def mismatch(result: ToolMessage, messages: Sequence[AnyMessage],
             persona: Any = None) -> Refusal | None:
    """Why this result does not answer what was asked, or None when it does."""
    found = problems(result, messages)
    if not found:
        return None
    return Refusal(f"the result of {result.name} does not answer the customer's question: "
                   f"{'; '.join(found)}. Call the tool that answers exactly what was asked, "
                   "with the customer's own values, or say what you could not do.",
                   say("mismatch", persona, problem="; ".join(found)))


# A result an answer states: "= 8", "= -2.5" (not "= 8x" or "= 8(").
# A result stated with "=", not code: an assignment to a name ("__xss=1") or a quoted or tagged
# value ("=1\">") is no claim about the customer's question.
STATED = re.compile(r"(?<![A-Za-z_])=\s*(-?\d+(?:\.\d+)?)(?![\d.]*\s*[a-z(\"'<])")


# A result stated with "is" ("15% of 240 is 3."), read only as the answer to an arithmetic ask:
# elsewhere "is 5" is too often prose ("the shop is 5 minutes away" is left out anyway).
STATED_IS = re.compile(r"\bis\s+(-?\d+(?:\.\d+)?)(?![\d.,]*\s*[a-z(\"'<%])", re.IGNORECASE)
ARITHMETIC = "|".join([*(CUES[op] for op in ("add", "subtract", "multiply", "divide", "power",
                                              "square", "square_root")),
                       r"\bcalculat\w*|\bcompute\w*"])


def _arithmetic(message: str) -> bool:
    """The message asks for arithmetic on its own numbers ("Calculate 15% of 240")."""
    return bool(re.search(r"\d", message)) and _said(ARITHMETIC, message)


def unbacked(text: str, messages: Sequence[AnyMessage], persona: Any = None) -> str | None:
    """The honest reply to give instead of an answer that states a result no tool of this turn
    computed and the conversation does not hold ("15% of 240 is ... = 8" with no call); None
    when the answer may stand."""
    turn = current_turn(messages)
    if any(isinstance(m, ToolMessage) and m.status != "error" for m in turn):
        return None
    evidence = Evidence.of(messages)
    stated = STATED.findall(text)
    if evidence.said and _arithmetic(evidence.said[-1]):
        stated += STATED_IS.findall(text)
    invented = [v for v in map(float, stated) if not evidence.holds_number(v)]
    behind = numbers.as_json(invented[0]) if invented else _unbacked_formula(text, evidence)
    if behind is None:
        return None
    return say("mismatch", persona, problem=f"I had no calculation behind {behind}")


# A formula an answer writes: operands joined by operators ("2*sin((x+1) - x)", "3x^2 + 1").
FORMULA = re.compile(r"[\w.()]+(?:\s*[-+*/^]\s*[\w.()]+)+")
# The asks whose answer is a formula, by their words only (a "=" or "'" in a link or a quote
# asks for nothing): a derivative, an integral, an equation, a limit, roots.
SYMBOLIC = (r"\bderiv\w*|\bdifferentiat\w*|\bd/d[a-z]\b|\bintegra\w*|\bantideriv\w*|∫"
            r"|\bsolv\w*|\bequations?\b|\blimits?\b|\blim\b|\broots?\b|\bsqrt\b|√"
            r"|\bsimplif\w*|\bfactori[sz]\w*|\bexpand\w*")


def _unbacked_formula(text: str, evidence: Evidence) -> str | None:
    """A formula the answer states, for a symbolic ask, that neither the customer wrote nor a
    tool found ("the derivative of sin(x)*x is 2*sin((x+1) - x)" with no call that worked)."""
    if not evidence.said or not _said(SYMBOLIC, evidence.said[-1]):
        return None
    known = "".join(re.sub(r"\s+", "", t) for t in (*evidence.said, *evidence.found))
    for match in FORMULA.finditer(text):
        span = match.group().strip(".")
        # A hyphenated word ("well-known") is prose: a formula has a digit or an operator
        # other than "-".
        if not re.search(r"[*/^+]|\d", span):
            continue
        if re.sub(r"\s+", "", span) not in known:
            return span
    return None


def unfinished(text: str, messages: Sequence[AnyMessage], persona: Any = None) -> str | None:
    """The honest reply to give instead of an answer that stops a two-step ask after its
    first step ("5 + 4 = 9" for "add 5 and 4, then square the result"); None otherwise."""
    said = Evidence.of(messages).said
    steps = plan(said[-1]) if said else []
    found = [c for m in current_turn(messages) if isinstance(m, ToolMessage)
             and m.status != "error" and (c := calculation_of(m)) is not None]
    if len(steps) < 2 or not found or not _said("|".join(CUES.values()), steps[-1].text):
        return None
    last = found[-1]
    done = [last.operation] if last.operation in CUES else \
        _operators(str(last.operands.get("expression", "")))
    if any(_said(CUES.get(op) or OPERATOR_CUES.get(op, r"$^"), steps[-1].text) for op in done):
        return None
    return say("mismatch", persona,
               problem=f"I only got as far as {last.statement}, not \"{steps[-1].text}\"")
