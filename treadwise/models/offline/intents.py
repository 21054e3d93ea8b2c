"""Intent rules of the offline model: a user's words -> a plan of tool calls, no LLM involved."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from treadwise.emails import IN_TEXT_RE

# A step argument that is replaced by the numeric result of the previous step.
PREVIOUS = "$previous"

EMAIL_ATTEMPT_RE = re.compile(
    r"\S+@\S*|\b(?:my )?e-?mail(?: address)? is\s+(\S+)", re.IGNORECASE
)
NUMBER = r"-?\d+(?:\.\d+)?"
OPERAND = rf"({NUMBER}|the result|the answer|that|it|this)"
WORD_NUMBERS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
    "twenty": "20", "hundred": "100",
}


@dataclass(frozen=True)
class Call:
    tool: str
    args: dict[str, object]


@dataclass
class Plan:
    """What the offline model will do for one user turn."""

    intent: str
    steps: list[list[Call]] = field(default_factory=list)
    reply: str | None = None
    method: str = ""


GREETING_RE = re.compile(
    r"^\s*(hi|hello|hey|hiya|howdy|good (morning|afternoon|evening)|greetings|yo)\b[\s!,.]*"
    r"(there|team|treadwise)?[\s!,.?]*$",
    re.IGNORECASE,
)
PRIVACY_RE = re.compile(
    r"\b(list|show|give|dump|export|print|send|tell|share|read|what are|who are)\b.{0,50}"
    r"(other customers?|customers'|every(one's)? ?(customer|lead|e-?mail)|all (the )?(customer|"
    r"lead|e-?mail|contact)|stored (e-?mail|lead|contact|customer)|your (leads|customer list"
    r"|database))",
    re.IGNORECASE,
)
SECRET_RE = re.compile(
    r"\b(print|show|reveal|tell|give|display|repeat|leak|output|share|dump|what is|what's|what are)"
    r"\b.{0,40}(system prompt|your (instructions|prompt)|api[ _-]?keys?|secret key|password"
    r"|credentials|environment variables?|\.env\b|token)",
    re.IGNORECASE,
)
LEAD_WORDS_RE = re.compile(
    r"contact me|reach (me|out)|call me|get in touch|sign me up|interested in|a quote|quotation"
    r"|follow up|sales|book (me|an appointment)|schedule|my e-?mail",
    re.IGNORECASE,
)
CALCULUS_RE = re.compile(
    r"integra|antiderivative|area under|\u222b|derivative|differentiat|d/d[a-z]|solve|equation"
    r"|(?<!square )(?<!cube )roots? of|zeros? of|analy[sz]e|extrem|critical points?|maxim|minim"
    r"|\bplot\b|\bgraph\b",
    re.IGNORECASE,
)
ARITH_RE = re.compile(
    r"\b(add|plus|sum|subtract|minus|difference|multipl|times|product|divide|divided|quotient"
    r"|power|squared?|cubed?|root|sqrt|percent|calculate|compute|evaluate|what is|what's"
    r"|how much is)\b|[\d)]\s*[-+*/^x\u00d7\u00f7]\s*[\d(]|%|\u221a|\u00b2",
    re.IGNORECASE,
)
TIRE_RE = re.compile(r"\btyres?\b|\btires?\b|recommend|which tire|best tire", re.IGNORECASE)
SERVICE_RE = re.compile(
    r"availab|do you (offer|service|cover|come)|can you (come|do|install)|install|rotation|rotate"
    r"|balanc|repair|puncture|flat|recycl|smart tread (setup|install)|sensor install|near me"
    r"|in my (city|area)|book",
    re.IGNORECASE,
)
BUSINESS_TOPICS: list[tuple[str, str]] = [
    (r"smart ?tread|sensor|monitor|iot|telemetry", "smart_tread"),
    (r"hours|open|close|weekend|sunday|saturday", "hours"),
    (r"warrant|guarantee", "warranty"),
    (r"price|pricing|cost|how much|fee|cheap|expensive|price match", "pricing"),
    (r"fleet", "fleet"),
    (r"recycl|retread|circular|old tires|disposal|environment", "recycling"),
    (r"mobile|come to (me|you)|at (my|your) (home|office)|driveway", "mobile_installation"),
    (r"where|areas?|cities|locations?|serve|region", "areas_served"),
    (r"contact|phone|email address of|reach you|call you", "contact"),
    (r"services|what do you (do|offer)|offer", "services"),
    (r"about|who are you|company|treadwise", "overview"),
]
MATH_LEADIN_RE = re.compile(
    r"^(please\s+)?(can you\s+|could you\s+)?(tell me\s+)?(what is|what's|whats|calculate|compute"
    r"|evaluate|work out|find|how much is|give me)\s+(the value of\s+)?",
    re.IGNORECASE,
)


def find_email(text: str) -> str | None:
    match = IN_TEXT_RE.search(text)
    if not match:
        return None
    candidate = match.group(0)
    end = match.end()
    # "x@y.c\nBcc: z@w" and friends: the address must stand alone.
    if end < len(text) and text[end] not in " \t.,;:!?)'\"":
        return None
    return candidate.rstrip(".")


def mentions_email_attempt(text: str) -> bool:
    return bool(EMAIL_ATTEMPT_RE.search(text))


def find_name(text: str) -> str:
    match = re.search(
        r"\b(?i:my name is|i am|i'm|this is|name:)\s+([A-Z][a-zA-Z'\-]+(?:\s+[A-Z][a-zA-Z'\-]+)?)",
        text,
    )
    return match.group(1) if match else ""


def _words_to_numbers(text: str) -> str:
    pattern = r"\b(" + "|".join(WORD_NUMBERS) + r")\b"
    return re.sub(pattern, lambda m: WORD_NUMBERS[m.group(1).lower()], text, flags=re.IGNORECASE)


def _operand(raw: str) -> object:
    return raw if re.fullmatch(NUMBER, raw) else PREVIOUS


ARITH_RULES: list[tuple[str, str, tuple[int, ...] | str]] = [
    # (pattern, tool, operand group order or a fixed-argument recipe)
    (rf"\badd\s+{OPERAND}\s+(?:and|to|plus|with)\s+{OPERAND}", "add", (1, 2)),
    (rf"\bsum of\s+{OPERAND}\s+and\s+{OPERAND}", "add", (1, 2)),
    (rf"\badd\s+{OPERAND}", "add", "prev_first"),
    (rf"\bsubtract\s+{OPERAND}\s+from\s+{OPERAND}", "subtract", (2, 1)),
    (rf"\bdifference between\s+{OPERAND}\s+and\s+{OPERAND}", "subtract", (1, 2)),
    (rf"\bsubtract\s+{OPERAND}", "subtract", "prev_first"),
    (rf"\bmultiply\s+{OPERAND}\s+(?:by|and|with|times)\s+{OPERAND}", "multiply", (1, 2)),
    (rf"\bproduct of\s+{OPERAND}\s+and\s+{OPERAND}", "multiply", (1, 2)),
    (rf"\bmultiply\s+(?:it|that|the result|this)?\s*by\s+{OPERAND}", "multiply", "prev_first"),
    (r"\bdouble\b", "multiply", "double"),
    (r"\btriple\b", "multiply", "triple"),
    (rf"\bdivide\s+{OPERAND}\s+by\s+{OPERAND}", "divide", (1, 2)),
    (rf"\bdivide\s+(?:it|that|the result|this)?\s*by\s+{OPERAND}", "divide", "prev_first"),
    (r"\bhalve\b", "divide", "halve"),
    (rf"{OPERAND}\s+to the power of\s+{OPERAND}", "power", (1, 2)),
    (rf"\braise\s+{OPERAND}\s+to(?: the power of)?\s+{OPERAND}", "power", (1, 2)),
    (rf"\bsquare root of\s+{OPERAND}", "square_root", (1,)),
    (rf"\b(?:sqrt|root) of\s+{OPERAND}", "square_root", (1,)),
    (rf"\bsquare of\s+{OPERAND}", "square", (1,)),
    (rf"\bsquare\s+{OPERAND}", "square", (1,)),
    (rf"{OPERAND}\s+squared\b", "square", (1,)),
    (rf"\bcube of\s+{OPERAND}", "power", "cube"),
    (rf"{OPERAND}\s+cubed\b", "power", "cube"),
    (rf"{OPERAND}\s+(?:plus)\s+{OPERAND}", "add", (1, 2)),
    (rf"{OPERAND}\s+(?:minus)\s+{OPERAND}", "subtract", (1, 2)),
    (rf"{OPERAND}\s+(?:times|multiplied by)\s+{OPERAND}", "multiply", (1, 2)),
    (rf"{OPERAND}\s+(?:divided by|over)\s+{OPERAND}", "divide", (1, 2)),
]
ARG_NAMES = {
    "add": ("a", "b"), "subtract": ("a", "b"), "multiply": ("a", "b"), "divide": ("a", "b"),
    "power": ("base", "exponent"), "square": ("x",), "square_root": ("x",),
}


def _arith_call(clause: str) -> Call | None:
    for pattern, tool, recipe in ARITH_RULES:
        match = re.search(pattern, clause, re.IGNORECASE)
        if not match:
            continue
        names = ARG_NAMES[tool]
        if recipe == "prev_first":
            values: list[object] = [PREVIOUS, _operand(match.group(1))]
        elif recipe == "double":
            values = [PREVIOUS, "2"]
        elif recipe == "triple":
            values = [PREVIOUS, "3"]
        elif recipe == "halve":
            values = [PREVIOUS, "2"]
        elif recipe == "cube":
            values = [_operand(match.group(1)), "3"]
        else:
            values = [_operand(match.group(i)) for i in recipe]
        return Call(tool, {n: _as_number(v) for n, v in zip(names, values, strict=True)})
    return None


def _as_number(value: object) -> object:
    if value == PREVIOUS:
        return value
    number = float(str(value))
    return int(number) if number.is_integer() else number


FUNCTION_NAMES_RE = re.compile(
    r"\b(sqrt|sin|cos|tan|cot|sec|csc|asin|acos|atan|sinh|cosh|tanh|exp|log|ln|log10|log2|abs"
    r"|factorial|floor|ceiling|cbrt|gamma|pi)\b",
    re.IGNORECASE,
)


def looks_like_math(expression: str) -> bool:
    """True when the text is formula-like: no ordinary words left once function names go."""
    bare = FUNCTION_NAMES_RE.sub("", re.sub(r"\d+\s*% of\s*", "", expression))
    has_math = re.search(r"[\d\u03c0\u221a]|(?<![a-z])[a-z](?![a-z])", expression, re.I)
    return bool(has_math) and not re.search(r"[a-z]{3,}", bare, re.I)


def _expression_clause(clause: str) -> Call | None:
    expression = MATH_LEADIN_RE.sub("", clause.strip()).strip(" ?.!=")
    expression = re.sub(r"^(the\s+)?(result|answer|value) of\s+", "", expression, flags=re.I)
    if not re.search(r"\d", expression) or not looks_like_math(expression):
        return None
    return Call("calculate", {"expression": expression})


CLAUSE_SPLIT_RE = re.compile(r"\s*(?:,\s*(?:and\s+)?then|;\s*then|\bthen\b|\band then\b|;)\s*",
                             re.IGNORECASE)


def plan_arithmetic(text: str) -> list[list[Call]]:
    """One step per clause; later clauses may use the previous result."""
    steps: list[list[Call]] = []
    for clause in CLAUSE_SPLIT_RE.split(_words_to_numbers(text)):
        if not clause.strip():
            continue
        call = _arith_call(clause) or _expression_clause(clause)
        if call is None:
            continue
        if not steps and PREVIOUS in call.args.values():
            return []
        steps.append([call])
    return steps


def _clean_expression(raw: str) -> str:
    text = raw.strip()
    text = re.sub(r"^(the\s+)?(function|curve|graph|expression|equation|polynomial)\s+", "", text,
                  flags=re.I)
    text = re.sub(r"^(of\s+)", "", text, flags=re.I)
    text = re.sub(r"^[a-z]\s*\(\s*[a-z]\s*\)\s*=\s*", "", text, flags=re.I)
    text = re.sub(r"^y\s*=\s*", "", text, flags=re.I)
    text = re.sub(r"\s+squared\b", "^2", text, flags=re.I)
    text = re.sub(r"\s+cubed\b", "^3", text, flags=re.I)
    text = re.sub(r"\s*\bd[a-z]\s*$", "", text)
    return text.strip(" ?.!,:")


BOUNDS_RE = re.compile(
    r"\s+(?:from|between)\s+(?:[a-z]\s*=\s*)?(?P<lo>[-+\w.\u03c0/*()^]+?)\s+(?:to|and)\s+"
    r"(?:[a-z]\s*=\s*)?(?P<hi>[-+\w.\u03c0/*()^]+?)(?=$|[\s?.!,;])"
    r"|\s+(?:over|on)\s+\[\s*(?P<lo2>[^,\]]+),\s*(?P<hi2>[^\]]+)\]",
    re.IGNORECASE,
)
VARIABLE_RE = re.compile(r"\s*(?:with respect to|w\.?r\.?t\.?|in terms of|for)\s+([a-z])\b", re.I)


def _bounds(text: str) -> tuple[str, str | None, str | None]:
    """Split "EXPR from A to B" into the expression and its bounds."""
    match = BOUNDS_RE.search(text)
    if not match:
        return text, None, None
    lower = match.group("lo") or match.group("lo2")
    upper = match.group("hi") or match.group("hi2")
    rest = (text[: match.start()] + " " + text[match.end():]).strip()
    return rest, lower.strip(), upper.strip()


def _variable(text: str) -> tuple[str, str]:
    match = VARIABLE_RE.search(text)
    if match:
        return (text[: match.start()] + text[match.end():]).strip(), match.group(1).lower()
    explicit = re.search(r"\bd([a-z])\b\s*$", text.strip(" ?.!"))
    if explicit:
        return text, explicit.group(1)
    letters = set(re.findall(r"(?<![a-z])([a-z])(?![a-z])", text.lower())) - {"e", "d"}
    for candidate in ("x", "t", "y", "z", "u", "v", "n"):
        if candidate in letters:
            return text, candidate
    return text, "x"


def _after(keyword_re: str, text: str) -> str | None:
    match = re.search(keyword_re, text, re.IGNORECASE)
    return text[match.end():] if match else None


def plan_calculus(text: str) -> Plan | None:
    """A calculus plan, or None when what follows the keyword is not a formula."""
    plan = _calculus_plan(text)
    if plan is None:
        return None
    for call in (c for step in plan.steps for c in step):
        formula = str(call.args.get("expression") or call.args.get("equation") or "")
        if not looks_like_math(formula):
            return None
    return plan


def _calculus_plan(text: str) -> Plan | None:
    lowered = text.lower()
    body = text.strip().rstrip("?.! ")
    if re.search(r"(?<!anti)derivative|differentiat|d/d[a-z]", lowered):
        order = 1
        if re.search(r"second|2nd", lowered):
            order = 2
        elif re.search(r"third|3rd", lowered):
            order = 3
        expr = _after(r"((?<!anti)derivative|differentiate|d/d[a-z])\s*(of)?\s*", body) or body
        expr, variable = _variable(expr)
        return Plan("derivative", [[Call("differentiate", {
            "expression": _clean_expression(expr), "variable": variable, "order": order})]],
            method="power, product and chain rules applied symbolically")
    if re.search(r"\bsolve\b|equation|(?<!square )(?<!cube )roots? of|zeros? of", lowered):
        expr = _after(r"(solve|equation|(?<!square )(?<!cube )roots? of|zeros? of)\s*"
                      r"(the\s+equation)?\s*:?\s*", body)
        expr, variable = _variable(expr or body)
        return Plan("equation", [[Call("solve_equation", {
            "equation": _clean_expression(expr), "variable": variable})]],
            method="symbolic solution over the complex numbers, real roots listed first")
    if re.search(r"analy[sz]e|extrem|critical points?|maxim|minim", lowered):
        expr = _after(r"(analy[sz]e|extrema of|extremum of|critical points of|maximum of"
                      r"|minimum of|maxima of|minima of)\s*(the\s+function)?\s*", body)
        expr, variable = _variable(expr or body)
        return Plan("analysis", [[Call("analyze_function", {
            "expression": _clean_expression(expr), "variable": variable})]],
            method="domain check, roots of f, critical points from f' = 0, second-derivative test")
    wants_plot = bool(re.search(r"\bplot\b|\bgraph\b|\bdraw\b|\bshade", lowered))
    if re.search(r"integra|antiderivative|area under|\u222b", lowered) or wants_plot:
        expr = _after(r"(integral of|integrate|antiderivative of|area under(?: the curve)?(?: of)?"
                      r"|plot(?: the area under)?(?: the curve)?(?: of)?|graph(?: of)?|\u222b)\s*",
                      body) or body
        expr, lower, upper = _bounds(expr)
        expr, variable = _variable(expr)
        expr = _clean_expression(expr)
        definite = lower is not None and upper is not None
        integrate = Call("integrate", {"expression": expr, "variable": variable,
                                       **({"lower": lower, "upper": upper} if definite else {})})
        plot = Call("plot_area", {"expression": expr, "lower": lower, "upper": upper,
                                  "variable": variable})
        only_plot = wants_plot and not re.search(r"integra|area|\u222b", lowered)
        if only_plot:
            if not definite:
                plot = Call("plot_area", {**plot.args, "lower": "-5", "upper": "5"})
            return Plan("plot", [[plot]], method="numeric evaluation of the curve on a fine grid")
        calls = [integrate, plot] if definite else [integrate]
        return Plan("integral", [calls],
                    method="antiderivative by symbolic integration, evaluated at the bounds "
                    "(fundamental theorem of calculus)" if definite else
                    "symbolic antiderivative, checked by differentiation")
    return None


def _business_topic(text: str) -> str | None:
    for pattern, topic in BUSINESS_TOPICS:
        if re.search(pattern, text, re.IGNORECASE):
            return topic
    return None


@dataclass
class Lookups:
    """In-sentence finders over the business catalogues, injected so rules stay data-driven."""

    find_vehicle: object
    find_usage: object
    find_city: object
    find_service: object


def _lead_message(text: str, earlier: list[str]) -> str:
    """What the customer wants: this message without the address, or their earlier request."""
    own = IN_TEXT_RE.sub("", text)
    own = re.sub(r"\b(?i:my name is|i am|i'm|this is)\s+[A-Z][\w'\-]*(\s+[A-Z][\w'\-]*)?", "", own)
    own = re.sub(r"(?i)\b(please\s+)?(contact|reach|e-?mail|call|write to) me( back)?"
                 r"(\s+(at|on|via|by))?\b", "", own)
    own = re.sub(r"(?i)\b(sure|yes|ok(ay)?|it's|it is|my e-?mail( address)? is|here you go"
                 r"|thanks?( you)?)\b", "", own)
    own = re.sub(r"\s+", " ", own)
    own = re.sub(r"\s+([.,;:!?])", r"\1", own)
    own = re.sub(r"([.,;:!?])[.,;:!?\s]*([.,;:!?])", r"\1", own).strip(" ,.;:!-")
    if len(own.split()) >= 3:
        return (own[0].upper() + own[1:])[:500]
    request = next((e for e in reversed(earlier) if LEAD_WORDS_RE.search(e)), "")
    return (request or own or "Asked to be contacted.").strip()[:500]


def plan_turn(text: str, earlier: list[str], lookups: Lookups) -> Plan:
    """Route one user message (with the user's earlier messages) to a plan."""
    stripped = text.strip()
    if not stripped:
        return Plan("empty", reply="greeting")
    if GREETING_RE.match(stripped):
        return Plan("greeting", reply="greeting")
    if SECRET_RE.search(stripped) or PRIVACY_RE.search(stripped):
        return Plan("secret", reply="refuse_secret")
    email = find_email(stripped)
    if email:
        message = _lead_message(stripped, earlier)
        name = find_name(stripped) or next((n for e in earlier if (n := find_name(e))), "")
        return Plan("lead", [[Call("record_customer_interest",
                                   {"email": email, "name": name, "message": message})]])
    if mentions_email_attempt(stripped):
        return Plan("invalid_email", reply="invalid_email")
    if CALCULUS_RE.search(stripped):
        plan = plan_calculus(stripped)
        if plan is not None:
            return plan
    if ARITH_RE.search(stripped) and re.search(r"\d|\b(" + "|".join(WORD_NUMBERS) + r")\b",
                                               stripped, re.IGNORECASE):
        steps = plan_arithmetic(stripped)
        if steps:
            return Plan("arithmetic", steps, method="exact rational arithmetic, step by step")
    if LEAD_WORDS_RE.search(stripped) and not TIRE_RE.search(stripped):
        return Plan("ask_email", reply="ask_email")
    vehicle = lookups.find_vehicle(stripped)
    if TIRE_RE.search(stripped) and re.search(r"recommend|suggest|best|which|what|need|should"
                                              r"|looking for|buy|good", stripped, re.I):
        if vehicle is None:
            return Plan("ask_vehicle", reply="ask_vehicle")
        usage = lookups.find_usage(stripped) or "mixed"
        return Plan("tires", [[Call("get_tire_recommendation",
                                    {"vehicle_type": vehicle, "usage": usage})]])
    service = lookups.find_service(stripped)
    if service is not None and SERVICE_RE.search(stripped):
        city = lookups.find_city(stripped)
        if city is None:
            return Plan("ask_location", reply="ask_location")
        return Plan("service", [[Call("check_service_availability",
                                      {"location": city, "service_type": service})]])
    topic = _business_topic(stripped)
    if topic is not None:
        return Plan("business", [[Call("get_business_info", {"topic": topic})]])
    if LEAD_WORDS_RE.search(stripped):
        return Plan("ask_email", reply="ask_email")
    return Plan("feedback", [[Call("record_feedback", {"question": stripped[:2000]})]])
