"""The offline rule-based model answers questions about the conversation from the conversation,
records a real question it cannot answer, and admits input it cannot read: in every persona,
never naming a tool or an internal failure."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, ToolMessage

from treadwise.agent import Agent
from treadwise.models.offline import OfflineModel
from treadwise.personas import get_persona
from treadwise.settings import Settings
from treadwise.storage.sqlite import Store
from treadwise.tools import ToolContext, get_tools

PERSONAS = ("friendly", "technical", "cautious")
# The opening turn, and what its answer must have said (what a recalled answer must say too).
OPENINGS = {
    "math": ("Add 5 and 4", r"5 \+ 4 = 9"),
    "tire": ("What tires do you recommend for an SUV in the snow?", r"Glacier Grip X SUV"),
    "lead": ("Please have someone contact me about fleet pricing, my email is "
             "recall.test@fleetco.com", r"recall\.test@fleetco\.com"),
}
INTERNAL = re.compile(r"not available in this setup|couldn't finish|Operation failed|Traceback"
                      r"|\w+Error\b|\bException\b|\btool\b", re.I)


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Agent:
    return Agent(Settings(data_dir=tmp_path_factory.mktemp("recall")))


@pytest.fixture(scope="module")
def tool_names(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    context = ToolContext(tmp_path_factory.mktemp("tools"))
    return {t.name for t in get_tools("math", "business", context=context)}


def assert_customer_facing(answer: str, tool_names: set[str]) -> None:
    """No tool's name and no internal failure in what the customer reads (a name that is an
    everyday word, "add", counts when it is called a tool)."""
    named = [n for n in tool_names if "_" in n and n in answer]
    assert not named, (named, answer)
    assert not INTERNAL.search(answer), answer


def converse(agent: Agent, persona: str, thread: str, *messages: str) -> list:
    return [agent.run(m, thread_id=f"{persona}-{thread}", persona=persona) for m in messages]


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("opening", sorted(OPENINGS))
def test_questions_about_the_conversation_are_answered_from_it(agent, tool_names, persona,
                                                               opening):
    said, found = OPENINGS[opening]
    first, asked, answer, again, recap = converse(
        agent, persona, f"recall-{opening}", said, "What did I just ask you?",
        "what was the answer again", "repeat that", "summarise our chat")
    assert re.search(found, first.answer), first.answer
    assert said in asked.answer
    assert re.search(found, answer.answer) and re.search(found, again.answer)
    assert said in recap.answer and re.search(found, recap.answer)
    for result in (asked, answer, again, recap):
        assert result.tool_calls == [] and result.error is None
        assert_customer_facing(result.answer, tool_names)
    # The replies are the persona's own, not one canned sentence for everybody.
    assert get_persona(persona).phrases("recall_question")[0].split("{")[0] in asked.answer
    # Each asked straight after the opening turn says the same.
    for question, shown in (("What did I just ask you?", re.escape(said)),
                            ("what was the answer again", found), ("repeat that", found),
                            ("summarise our chat", found)):
        _, alone = converse(agent, persona, f"alone-{opening}-{question}", said, question)
        assert re.search(shown, alone.answer) and alone.tool_calls == [], alone.answer
        assert_customer_facing(alone.answer, tool_names)


@pytest.mark.parametrize(("message", "expected"), [
    ("what was my last question?", "Add 5 and 4"), ("do you remember what I asked", "Add 5 and 4"),
    ("can you repeat that please", "5 + 4 = 9"), ("say that again", "5 + 4 = 9"),
    ("what's the result", "5 + 4 = 9"), ("Sorry, what did you say?", "5 + 4 = 9"),
    ("recap", "Add 5 and 4"), ("what have we talked about so far?", "5 + 4 = 9"),
])
def test_the_ways_people_ask_about_the_conversation(agent, message, expected):
    _, result = converse(agent, "friendly", f"ways-{message}", "Add 5 and 4", message)
    assert expected in result.answer and result.tool_calls == []


def test_the_personas_recall_in_their_own_voices(agent):
    replies = {persona: converse(agent, persona, "voices", "Add 5 and 4",
                                 "what did I just ask you?")[1].answer for persona in PERSONAS}
    assert len(set(replies.values())) == len(PERSONAS), replies
    assert all('"Add 5 and 4"' in reply for reply in replies.values()), replies


def test_nothing_to_recall_is_said_plainly(agent, tool_names):
    for persona in PERSONAS:
        [result] = converse(agent, persona, "fresh", "repeat that")
        assert result.answer == get_persona(persona).phrases("recall_nothing")[0]
        assert result.tool_calls == []


def test_a_recall_keeps_the_question_the_assistant_asked(agent):
    results = converse(agent, "friendly", "pending", "can you install new tires at my house?",
                       "what did I just ask you?", "Denver")
    assert "can you install new tires at my house?" in results[1].answer
    assert [c.name for c in results[2].tool_calls] == ["check_service_availability"]
    assert "Denver" in results[2].answer


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("question", ["Does the series sum of (-1)^n/n converge?",
                                      "Does the series sum of 1/n converge?"])
def test_a_real_question_it_cannot_answer_is_recorded_and_said_so(tmp_path: Path, tool_names,
                                                                  persona, question):
    agent = Agent(Settings(data_dir=tmp_path))
    # A math turn first: the routed tools of the series question are the arithmetic ones.
    _, series = converse(agent, persona, "series", "Add 5 and 4", question)
    assert [c.name for c in series.tool_calls] == ["record_feedback"]
    assert series.answer in get_persona(persona).phrases("feedback")
    assert_customer_facing(series.answer, tool_names)
    assert [f["question"] for f in Store(tmp_path).feedback()] == [question]


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("message", [
    "colorless green ideas sleep furiously",
    "the green ideas of the company sleep furiously",
    '<div class="app"><p>Smart Tread</p></div>',
    "<p>Open the app</p>",
    '<img src="x" onerror="alert(1)">',
    "<script>what is this?</script>",
])
def test_nonsense_and_markup_get_the_honest_fallback(agent, tool_names, persona, message):
    [result] = converse(agent, persona, f"noise-{message}", message)
    assert result.answer == get_persona(persona).phrases("not_understood")[0]
    assert result.tool_calls == []
    assert "Great question" not in result.answer


@pytest.mark.parametrize(("message", "tools"), [
    ("tire pressure for winter driving", ["get_business_info"]),
    ("I have a nail in my tire", ["get_business_info"]),
    ("opening hours", ["get_business_info"]),
    ("Ana <ana.recall@example.com> is my address, please contact me about winter tires",
     ["record_customer_interest"]),
])
def test_topic_words_people_mean_are_still_answered(agent, message, tools):
    [result] = converse(agent, "friendly", f"meant-{message}", message)
    assert [c.name for c in result.tool_calls] == tools
    assert result.answer != get_persona("friendly").phrases("not_understood")[0]


def test_a_tool_missing_from_the_setup_is_never_named():
    model = OfflineModel()
    for persona in PERSONAS:
        reply = model.respond_turn([HumanMessage("Do you accept payment in Bitcoin?")], [],
                                   None, get_persona(persona))
        assert reply.text == get_persona(persona).phrases("cannot_record")[0]
        assert "record_feedback" not in reply.text


def failed_turn(model: OfflineModel, complaint: str) -> list:
    """"Add 5 and 4", the model's call, and the tool's complaint about it."""
    call = {"name": "add", "args": {"a": 5, "b": 4}, "id": "c1", "type": "tool_call"}
    return [HumanMessage("Add 5 and 4"),
            model.message([], "", []).model_copy(update={"tool_calls": [call]}),
            ToolMessage(f"Error: {complaint}", tool_call_id="c1", name="add", status="error")]


@pytest.mark.parametrize("persona", PERSONAS)
def test_a_tools_complaint_is_shown_only_in_plain_words(tool_names, persona):
    model, speaker = OfflineModel(), get_persona(persona)
    tools = [{"type": "function", "function": {"name": "add", "parameters": {}}}]
    plain = model.respond_turn(failed_turn(model, "cannot divide by zero"), tools, None, speaker)
    assert "cannot divide by zero" in plain.text
    assert_customer_facing(plain.text, tool_names)
    for internal in ("record_feedback is not a valid tool, try one of [add]",
                     "ValueError: bad input", "unexpected keyword in get_business_info"):
        reply = model.respond_turn(failed_turn(model, internal), tools, None, speaker)
        assert_customer_facing(reply.text, tool_names)
