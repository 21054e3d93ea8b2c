"""Calculus in everyday words: integrals, derivatives, equations, limits, analysis, plots."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from treadwise.rules.mathwords import strip_padding
from treadwise.rules.plan import Call, Plan

CALCULUS_RE = re.compile(
    r"integra|antiderivative|area under|\u222b|derivative|differentiat|d/d[a-z]|\bsolve|equation"
    r"|(?<!square )(?<!cube )roots? of|zeros? of|analy[sz]e|extrem|critical points?|maxim|minim"
    r"|\bplot\b|\bgraph\b|\blim(?:it)?\b|\blim_|=", re.IGNORECASE)
FUNCTION_NAMES_RE = re.compile(
    r"\b(sqrt|sin|cos|tan|cot|sec|csc|asin|acos|atan|sinh|cosh|tanh|exp|log|ln|log10|log2|abs"
    r"|factorial|floor|ceiling|cbrt|gamma|pi)\b", re.IGNORECASE)
REFERS_RE = re.compile(r"^(?:that|it|this|the (?:result|answer|same)(?: function)?"
                       r"|that (?:function|result|expression))?$", re.IGNORECASE)
BOUNDS_RE = re.compile(
    r"\s+(?:from|between)\s+(?:[a-z]\s*=\s*)?(?P<lo>[-+\w.\u03c0/*()^]+?)\s+(?:to|and)\s+"
    r"(?:[a-z]\s*=\s*)?(?P<hi>[-+\w.\u03c0/*()^]+?)(?=$|[\s?.!,;])"
    r"|\s+(?:over|on)\s+\[\s*(?P<lo2>[^,\]]+),\s*(?P<hi2>[^\]]+)\]", re.IGNORECASE)
VARIABLE_RE = re.compile(r"\s*(?:with respect to|w\.?r\.?t\.?|in terms of|for)\s+([a-z])\b",
                         re.IGNORECASE)
LIMIT_RE = re.compile(
    r"\blim(?:it)?\b(?:\s+(?:of|for))?\s*(?P<expr>.+?)\s*,?\s+(?:as|when|where)\s+(?P<var>[a-z])"
    r"\s*(?:->|\u2192|approaches|tends to|goes to|heads to|=>)\s*(?P<point>.+?)"
    r"(?:\s+(?P<side>from the (?:left|right)|from (?:below|above)))?\s*$", re.IGNORECASE)
LIMIT_PREFIX_RE = re.compile(
    r"\blim(?:it)?\s*(?:_\{?|\(|\s)\s*(?P<var>[a-z])\s*(?:->|\u2192|to)\s*(?P<point>[^\s)}]+?)"
    r"\s*[)}]?\s+(?:of\s+)?(?P<expr>.+)$", re.IGNORECASE)
ORDINALS = ("second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")
ORDER_RE = re.compile(rf"\b(\d+)-?(?:st|nd|rd|th)\b|\b({'|'.join(ORDINALS)})\b")
INFINITY = {"infinity": "oo", "inf": "oo", "\u221e": "oo", "oo": "oo", "+infinity": "oo",
            "-infinity": "-oo", "-inf": "-oo", "-\u221e": "-oo", "-oo": "-oo",
            "negative infinity": "-oo", "minus infinity": "-oo"}
# Words that may surround an equation without changing what is asked.
EQUATION_WORDS = {
    "find", "solve", "for", "if", "when", "given", "what", "is", "whats", "what's", "the",
    "value", "values", "of", "equation", "where", "that", "so", "calculate", "compute", "work",
    "out", "determine", "get", "roots", "root", "zeros", "solution", "solutions", "then",
    "and", "equals", "to", "in", "satisfies", "satisfy", "an", "a", "about", "how", "now",
    "same", "also"}


def looks_like_math(expression: str) -> bool:
    """True when the text is formula-like: no ordinary words left once function names go."""
    bare = FUNCTION_NAMES_RE.sub("", re.sub(r"\d+\s*% of\s*", "", expression))
    has_math = re.search(r"[\d\u03c0\u221a]|(?<![a-z])[a-z](?![a-z])", expression, re.I)
    return bool(has_math) and not re.search(r"[a-z]{3,}", bare, re.I)


@dataclass(frozen=True)
class Earlier:
    """What "that" and a missing function refer to: the last function and the last formula."""

    function: str | None = None
    formula: str | None = None


def read_calculus(text: str, earlier: Earlier | None = None) -> Plan | None:
    """A calculus plan, or None when the text is not a calculus request the rules can read."""
    body = strip_padding(text).strip().rstrip("?.! ")
    if not CALCULUS_RE.search(body):
        return None
    for reader in READERS:
        plan = reader(body, earlier or Earlier())
        if plan is not None:
            return plan if _formulas_ok(plan) else None
    return None


def _formulas_ok(plan: Plan) -> bool:
    for call in (c for step in plan.steps for c in step):
        formula = str(call.args.get("expression") or call.args.get("equation") or "")
        if not formula or not looks_like_math(formula):
            return False
    return True


def _clean_expression(raw: str, last: Earlier | None) -> str:
    text = raw.strip()
    text = re.sub(r"^(the\s+)?(function|curve|graph|expression|equation|polynomial)\s+", "",
                  text, flags=re.I)
    text = re.sub(r"^(of\s+)", "", text, flags=re.I)
    text = re.sub(r"^[a-z]\s*\(\s*[a-z]\s*\)\s*=\s*", "", text, flags=re.I)
    text = re.sub(r"^y\s*=\s*", "", text, flags=re.I)
    text = re.sub(r"\s+squared\b", "^2", text, flags=re.I)
    text = re.sub(r"\s+cubed\b", "^3", text, flags=re.I)
    text = re.sub(r"\s*\bd[a-z]\s*$", "", text)
    text = text.strip(" ?.!,:")
    if last is not None and REFERS_RE.fullmatch(text):
        # "integrate that" means the last formula; "and the second derivative?" the function.
        return (last.formula if text else None) or last.function or text
    return text


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
    return text, _guess_variable(text)


def _guess_variable(text: str) -> str:
    letters = set(re.findall(r"(?<![a-z])([a-z])(?![a-z])", text.lower())) - {"e", "d"}
    return next((v for v in ("x", "t", "y", "z", "u", "v", "n") if v in letters), "x")


def _after(keyword_re: str, text: str) -> str | None:
    match = re.search(keyword_re, text, re.IGNORECASE)
    return text[match.end():] if match else None


def _math(intent: str, call: Call, method: str, expression: str, variable: str) -> Plan:
    return Plan(intent, [[call]], kind="math", method=method,
                remember={"intent": intent, "expression": expression, "variable": variable})


def _limit(body: str, last: Earlier) -> Plan | None:
    match = LIMIT_RE.search(body) or LIMIT_PREFIX_RE.search(body)
    if match is None:
        return None
    point = match.group("point").strip().lower().replace(" ", "")
    side = "both"
    if point.endswith(("+", "-")) and len(point) > 1 and point[:-1] not in ("", "-"):
        side, point = ("right" if point.endswith("+") else "left"), point[:-1]
    words = (match.groupdict().get("side") or "").lower()
    if words:
        side = "left" if re.search(r"left|below", words) else "right"
    point = INFINITY.get(point, INFINITY.get(match.group("point").strip().lower(), point))
    expression = _clean_expression(match.group("expr"), last)
    variable = match.group("var").lower()
    call = Call("limit", {"expression": expression, "variable": variable, "point": point,
                          "direction": side})
    return _math("limit", call, "symbolic limit (sympy's Gruntz algorithm), each side checked",
                 expression, variable)


def _derivative(body: str, last: Earlier) -> Plan | None:
    lowered = body.lower()
    if not re.search(r"(?<!anti)derivative|differentiat|d/d[a-z]", lowered):
        return None
    order = _order(lowered)
    expr = _after(r"((?<!anti)derivative|differentiate|d/d[a-z])\s*(of)?\s*", body)
    expr, variable = _variable(expr if expr is not None else body)
    expression = _clean_expression(expr, last)
    call = Call("differentiate", {"expression": expression, "variable": variable,
                                  "order": order})
    return _math("derivative", call, "power, product and chain rules applied symbolically",
                 expression, variable)


def _order(lowered: str) -> int:
    """The derivative's order as asked: any order goes to the tool, which refuses what it
    cannot compute (the 1000th) instead of a first derivative being given."""
    found = ORDER_RE.search(lowered)
    if not found:
        return 1
    return ORDINALS.index(found[2]) + 2 if found[2] else int(found[1])


def _equation(body: str, last: Earlier) -> Plan | None:
    span = _equation_span(body)
    if span is None:
        return None
    equation, outside = span
    variable = _guess_variable(equation)
    explicit = re.search(r"\b(?:for|find|what is|what's|whats|value of|solve for)\s+([a-z])\b",
                         body, re.IGNORECASE)
    if explicit and re.search(rf"(?<![a-z]){explicit.group(1)}(?![a-z])", equation.lower()):
        variable = explicit.group(1).lower()
    # Anything else said around the equation must only frame it ("find y if ..."), or the
    # question may be about something else ("if 2x = 10, what is 3x?").
    if any(w not in EQUATION_WORDS and w != variable for w in outside):
        return None
    if variable not in re.findall(r"(?<![a-z])[a-z](?![a-z])", equation.lower()) and \
            not re.search(rf"\d{variable}", equation.lower()):
        return None
    call = Call("solve_equation", {"equation": equation, "variable": variable})
    return _math("equation", call,
                 "symbolic solution over the complex numbers, real roots listed first",
                 equation, variable)


def _equation_span(body: str) -> tuple[str, list[str]] | None:
    """The equation around the first "=", and the words said outside it."""
    words = re.sub(r"=", " = ", body).split()
    if words.count("=") != 1:
        return _roots_of(body)
    at = words.index("=")
    start, end = at, at + 1
    while start > 0 and _mathy(words[start - 1]):
        start -= 1
    while end < len(words) and _mathy(words[end]):
        end += 1
    left, right = words[start:at], words[at + 1:end]
    if not left or not right:
        return None
    equation = " ".join(w.strip(",?!") for w in words[start:end])
    outside = [w.strip(",.?!:").lower() for w in words[:start] + words[end:]]
    return equation, [w for w in outside if w]


def _roots_of(body: str) -> tuple[str, list[str]] | None:
    expr = _after(r"\b(solve|(?<!square )(?<!cube )roots? of|zeros? of)\s*(the\s+equation)?"
                  r"\s*:?\s*", body)
    if not expr or not looks_like_math(expr):
        return None
    return _clean_expression(VARIABLE_RE.sub("", expr), None), []


def _mathy(word: str) -> bool:
    bare = word.strip(",?!")
    if not bare or not re.fullmatch(r"[\w.\u00b2\u00b3\u221a^()*/+\-]+", bare):
        return False
    return not re.search(r"[a-z]{2,}", FUNCTION_NAMES_RE.sub("", bare), re.IGNORECASE)


def _analysis(body: str, last: Earlier) -> Plan | None:
    if not re.search(r"analy[sz]e|extrem|critical points?|maxim|minim", body, re.IGNORECASE):
        return None
    expr = _after(r"(analy[sz]e|extrema of|extremum of|critical points of|maximum of"
                  r"|minimum of|maxima of|minima of)\s*(the\s+function)?\s*", body)
    expr, variable = _variable(expr or body)
    expression = _clean_expression(expr, last)
    call = Call("analyze_function", {"expression": expression, "variable": variable})
    return _math("analysis", call,
                 "domain check, roots of f, critical points from f' = 0, second-derivative test",
                 expression, variable)


def _integral(body: str, last: Earlier) -> Plan | None:
    lowered = body.lower()
    wants_plot = bool(re.search(r"\bplot\b|\bgraph\b|\bdraw\b|\bshade", lowered))
    if not (re.search(r"integra|antiderivative|area under|\u222b", lowered) or wants_plot):
        return None
    expr = _after(r"(integral of|integrate|antiderivative of|area under(?: the curve)?(?: of)?"
                  r"|plot(?: the area under)?(?: the curve)?(?: of)?|graph(?: of)?|\u222b)\s*",
                  body)
    expr, lower, upper = _bounds(expr if expr is not None else body)
    expr, variable = _variable(expr)
    expression = _clean_expression(expr, last)
    definite = lower is not None and upper is not None
    if wants_plot and not re.search(r"integra|area|\u222b", lowered):
        plot = Call("plot_area", {"expression": expression, "lower": lower or "-5",
                                  "upper": upper or "5", "variable": variable})
        return _math("plot", plot, "numeric evaluation of the curve on a fine grid",
                     expression, variable)
    integrate = Call("integrate", {"expression": expression, "variable": variable,
                                   **({"lower": lower, "upper": upper} if definite else {})})
    if not definite:
        return _math("integral", integrate, "symbolic antiderivative, checked by differentiation",
                     expression, variable)
    plan = _math("integral", integrate, "antiderivative by symbolic integration, evaluated at "
                 "the bounds (fundamental theorem of calculus)", expression, variable)
    plan.steps[0].append(Call("plot_area", {"expression": expression, "lower": lower,
                                            "upper": upper, "variable": variable}))
    return plan


READERS: list[Callable[[str, Earlier], Plan | None]] = [
    _limit, _derivative, _analysis, _integral, _equation]
