"""What the chat shows: untrusted text made inert, tool steps, plots, footers and exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

from treadwise.agent import ToolStep, TurnResult
from treadwise.errors import FriendlyError
from treadwise.web.chat_export import conversation_json, conversation_markdown
from treadwise.web.files import PNG_MAGIC, publish_png
from treadwise.web.render import code_block, feedback_values, message_at, render, safe_markdown
from treadwise.web.session import ChatSession, Turn

OFFLINE = "offline (rule-based, not an LLM)"


def result(latency_s: float = 0.5, **changes: object) -> TurnResult:
    return TurnResult(answer="", persona="technical", model=OFFLINE, temperature=0.0,
                      thread_id="t", latency_s=latency_s, **changes)  # type: ignore[arg-type]


def turn(**changes: object) -> Turn:
    values: dict[str, object] = {"user": "Integral of x^2 from 0 to 3", "persona": "technical",
                                 "persona_name": "Technical Expert", "spec": "offline",
                                 "model": OFFLINE, "temperature": 0.0}
    return Turn(**{**values, **changes})  # type: ignore[arg-type]


def test_html_from_the_model_is_shown_as_text_not_run():
    text = safe_markdown('Hi <img src=x onerror=alert(1)> <script>alert(2)</script> '
                         '<svg onload=alert(3)> <!-- c --> </p>')
    assert not re.search(r"<[A-Za-z/!?]", text)
    assert "&lt;img src=x onerror=alert(1)>" in text


def test_markdown_images_cannot_make_the_page_fetch_anything():
    text = safe_markdown("![pixel](https://tracker.example/p.png) and ![ref][r]\n\n"
                         "[r]: http://tracker.example/q.png")
    assert not re.search(r"(?<!\\)!\[", text)


def test_script_links_are_disarmed_but_ordinary_links_and_maths_stay():
    text = safe_markdown("[click](javascript:alert(1)) [ok](https://treadwise.example)\n"
                         "[x]: data:text/html,hi\nif 2 < 3")
    assert "javascript:" not in text and "data:" not in text
    assert "[ok](https://treadwise.example)" in text
    assert "2 < 3" in text


def test_a_code_block_fence_is_longer_than_any_backtick_run_inside():
    block = code_block("a ``` b ```` c")
    assert block.startswith("`````text\n") and block.endswith("\n`````")


def test_a_finished_turn_shows_its_tool_step_plot_answer_and_who_wrote_it():
    step = ToolStep(id="c1", name="plot_area", args={"expression": "x**2"},
                    result="Area = 9", duration_s=0.25, artifacts=["/data/plots/a.png"])
    done = turn(status="done", answer="The area is **9**.", steps=[step],
                plots={"c1": ["/cache/a.png"]}, result=result(1.234))
    user, tool, plot, answer = render([done])
    assert user == {"role": "user", "content": "Integral of x^2 from 0 to 3"}
    assert tool["metadata"]["title"].endswith("plot&#95;area")
    assert tool["metadata"]["status"] == "done" and tool["metadata"]["duration"] == 0.25
    assert '"expression": "x**2"' in tool["content"] and "Area = 9" in tool["content"]
    assert plot["content"]["value"]["path"] == "/cache/a.png"
    assert "The area is **9**." in answer["content"]
    assert f"Technical Expert \u00b7 {OFFLINE} \u00b7 1.2 s" in answer["content"]


def rated_chat() -> list[Turn]:
    """Two finished turns: user, tool step, answer; then user, answer."""
    step = ToolStep(id="c1", name="integrate", args={}, result="= 9", duration_s=0.1)
    return [turn(status="done", answer="9", steps=[step], result=result()),
            turn(user="thanks", status="done", answer="You're welcome.", result=result())]


def test_a_message_number_names_its_turn_and_which_of_its_replies_it_is():
    first, second = turns = rated_chat()
    assert [m["role"] for m in render(turns)] == ["user", "assistant", "assistant",
                                                  "user", "assistant"]
    assert message_at(turns, 1) == (first, 0) and message_at(turns, 2) == (first, 1)
    assert message_at(turns, 0) == (first, 1), "a user's message names the turn's answer"
    assert message_at(turns, 4) == (second, 0) and message_at(turns, [4, 0]) == (second, 0)
    for nonsense in (5, -1, True, None, "2", [], 2.0):
        assert message_at(turns, nonsense) is None, nonsense


def chat_tab(tmp_path: Path):
    """The chat's tab as the app builds it, its data and the final views' exports in tmp_path."""
    import dataclasses

    from treadwise.settings import Settings
    from treadwise.web.chat import ChatTab
    from treadwise.web.turns import LazyAgent

    settings = dataclasses.replace(Settings.from_env({}), data_dir=tmp_path / "data")
    tab = ChatTab(LazyAgent(settings), settings)
    tab.cache_dir = str(tmp_path / "cache")  # where the final view writes the exports
    return tab


def test_the_thumbs_stored_are_drawn_one_per_reply_and_gone_with_their_turn(tmp_path: Path):
    turns = rated_chat()
    turns[0].thumb, turns[1].thumb = (1, "Like"), (0, "Dislike")
    assert feedback_values(turns) == [None, "Like", "Dislike"]
    tab, session = chat_tab(tmp_path), ChatSession(turns=turns)
    assert isinstance(tab._view(session, final=True)[0], list), "no thumbs shown: plain value"
    session.thumbs_shown = True  # the page was given thumbs (experiments/web/live_chat.py)
    chatbot = tab._view(session, final=True)[0]
    assert chatbot.feedback_value == [None, "Like", "Dislike"] and len(chatbot.value) == 5
    assert isinstance(tab._view(session)[0], list), "updates while a reply runs stay plain"
    session.turns = []  # undone or a new chat: the page must drop the thumbs it was given
    assert tab._view(session, final=True)[0].feedback_value == []
    assert not session.thumbs_shown and isinstance(tab._view(session, final=True)[0], list)


def test_a_reply_that_takes_a_while_is_redrawn_each_second_with_its_timer(
        tmp_path: Path, monkeypatch):
    """With no event to show, the page still gets the running timer once a second (only a
    browser test and, by chance, slow turns elsewhere reached this before)."""
    import time

    import gradio as gr
    from langchain_core.messages import AIMessage

    from tests.support.webapp import use_scripted
    from treadwise.testing import ScriptedModel
    from treadwise.web.chat import TICK_S

    def think(messages, kwargs) -> AIMessage:
        time.sleep(TICK_S + 1.5)  # room for a busy machine to be late with the tick
        return AIMessage("Done thinking.")

    use_scripted(monkeypatch, slow=ScriptedModel().enqueue(think))
    tab, session = chat_tab(tmp_path), ChatSession()
    views = tab.send("Take your time.", session, "friendly", "offline", "scripted:slow", 0.0,
                     "react", gr.Request())
    titles = [chatbot[-1].get("metadata", {}).get("title") for chatbot, *_ in views
              if isinstance(chatbot, list)]
    assert any(re.fullmatch("Thinking\u2026 \u00b7 [12] s", str(title)) for title in titles), titles
    assert session.turns[0].answer == "Done thinking."


def test_a_running_tool_is_pending_and_a_failed_one_says_so():
    running = turn(steps=[ToolStep(id="c1", name="integrate", args={})])
    assert render([running])[1]["metadata"]["status"] == "pending"
    failed = turn(status="done", steps=[ToolStep(id="c1", name="divide", args={"b": 0},
                                                 error="Error: division by zero")])
    tool = render([failed])[1]
    assert tool["metadata"]["title"].startswith("Tool failed")
    assert "division by zero" in tool["content"]


def test_errors_and_stops_read_as_short_messages():
    rejected = turn(status="error", failure=FriendlyError(
        "input_rejected", "Your message is 5,000 characters long; the limit is 4,000."))
    assert render([rejected])[-1]["content"].startswith("**Message not sent.** Your message")
    stopped = turn(status="stopped", answer="Partial")
    assert "Stopped. This reply was discarded" in render([stopped])[-1]["content"]


def test_a_custom_model_name_in_the_footer_is_escaped():
    shown = render([turn(status="done", answer="ok", model="x:<img src=y onerror=z>")])
    assert "<img" not in shown[-1]["content"]


def test_exports_hold_every_finished_turn_and_skip_the_running_one():
    session = ChatSession(thread_id="t-123")
    session.turns = [turn(status="done", answer="9", steps=[
        ToolStep(id="c1", name="integrate", args={"expression": "x**2"}, result="= 9",
                 duration_s=0.1)]), turn(user="still running")]
    data = conversation_json(session)
    assert data["thread_id"] == "t-123" and len(data["turns"]) == 1
    assert data["turns"][0]["tool_calls"][0]["name"] == "integrate"
    assert data["turns"][0]["model"] == OFFLINE
    json.dumps(data)
    markdown = conversation_markdown(session)
    assert "integrate" in markdown and "Technical Expert" in markdown
    assert "still running" not in markdown


def test_only_pngs_inside_the_given_folder_are_published(tmp_path: Path):
    plots, cache = tmp_path / "data" / "plots", tmp_path / "cache"
    plots.mkdir(parents=True)
    png = plots / "area.png"
    png.write_bytes(PNG_MAGIC + b"rest")
    (tmp_path / "data" / "leads.db").write_bytes(b"SQLite format 3")
    (plots / "fake.png").write_bytes(b"not a png")
    published = publish_png(str(png), plots, str(cache))
    assert published and Path(published).read_bytes() == png.read_bytes()
    assert Path(published).is_relative_to(cache)
    assert publish_png(str(tmp_path / "data" / "leads.db"), plots, str(cache)) is None
    assert publish_png(str(plots / ".." / "leads.db"), plots, str(cache)) is None
    assert publish_png(str(plots / "fake.png"), plots, str(cache)) is None
    assert publish_png("/etc/passwd", plots, str(cache)) is None


def test_streamed_text_is_redacted_as_it_arrives(monkeypatch):
    from treadwise.agent import TextDelta
    from treadwise.settings import Settings
    from treadwise.web.chat import ChatTab
    from treadwise.web.turns import LazyAgent

    monkeypatch.setenv("OPENAI_API_KEY", "live-secret-value-42")
    settings = Settings.from_env()
    tab, shown = ChatTab(LazyAgent(settings), settings), turn()
    for piece in ["The key is live-secret-", "value-42 and sk-abcdefghijkl123"]:
        tab._apply(shown, TextDelta(piece))
    assert "live-secret-value-42" not in shown.answer and "sk-abcdefghijkl123" not in shown.answer
    assert shown.answer.count("[redacted]") == 2


def test_math_reads_as_written_in_the_chat_and_in_the_markdown_export():
    markdown_it = __import__("pytest").importorskip("markdown_it")
    html = markdown_it.MarkdownIt("commonmark").render
    question = "sin(x)^7*cos(x)^5*exp(x) and a_b_c, [1, 2] # not a heading"
    answer = "**Result:** d/dx [x^2*sin(x)] = x*(x*cos(x) + 2*sin(x)), and `a*b*c` as code."
    done = turn(user=question, status="done", answer=answer, result=result())
    session = ChatSession(thread_id="t-1")
    session.turns = [done]
    shown = render([done])
    exported = html(conversation_markdown(session))
    for text in (html(shown[0]["content"]), exported):
        assert "sin(x)^7*cos(x)^5*exp(x) and a_b_c, [1, 2] # not a heading" in text
    for text in (html(shown[-1]["content"]), exported):
        assert "<strong>Result:</strong> d/dx [x^2*sin(x)] = x*(x*cos(x) + 2*sin(x))" in text
        assert "<code>a*b*c</code>" in text and "<em>" not in text


def test_a_plot_has_a_text_alternative_with_its_function_bounds_and_value():
    step = ToolStep(id="c1", name="plot_area",
                    args={"expression": "x\u00b2", "lower": "0", "upper": "3", "variable": "x"},
                    result="The shaded area is drawn in the attached plot. \u222b\u2080\u00b3 "
                           "x^2 dx = 9", duration_s=0.2, artifacts=["/data/plots/a.png"])
    done = turn(status="done", answer="9", steps=[step], plots={"c1": ["/cache/a.png"]},
                result=result(1.0))
    plot = render([done])[2]["content"]
    assert plot["component"] == "image"
    assert plot["props"]["alt_text"] == (
        "Plot of x\u00b2 for x from 0 to 3: the area under the curve is shaded between dashed "
        "lines at the bounds. \u222b\u2080\u00b3 x^2 dx = 9")
