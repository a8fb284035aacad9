"""Unit tests of the exercise engine, on a throwaway chapter (no real chapter involved)."""

import gc
import json
import time

import pytest

from course_lib.chapters import Chapter
from course_lib.collector import collector_paused
from course_lib.exercises import (
    CORRECT,
    INCORRECT,
    NOT_ATTEMPTED,
    Declarations,
    Fail,
    Test,
    answer_digest,
    progress,
)
from course_lib.exercises.runner import describe_exception

chapter = Chapter("99", "engine_selftest", "Engine self-test")  # not in CHAPTERS: never registered
declare = Declarations(chapter)


def _expect_double(candidate):
    got = candidate(3)
    if got != 6:
        raise Fail("double(3) is wrong.", expected=6, got=got, hint="Multiply by two.")


double = declare.function_exercise(
    "double",
    title="Double it",
    prompt="double(x) -> 2x",
    points=4,
    tests=[
        Test("doubles 3", _expect_double),
        Test(
            "doubles 0",
            lambda c: None if c(0) == 0 else (_ for _ in ()).throw(Fail("double(0) should be 0")),
        ),
    ],
    hints=["Use *.", "return 2 * x"],
    time_limit=0.5,
)

letter = declare.quiz(
    "letter",
    title="Pick b",
    question="?",
    options={"a": "A", "b": "B", "c": "C"},
    digest=answer_digest("ch99.letter", "b"),
)


def stub(x):
    raise NotImplementedError


def test_correct_incorrect_not_attempted():
    assert double.check(lambda x: 2 * x).status == CORRECT
    wrong = double.check(lambda x: x * x)
    assert wrong.status == INCORRECT and wrong.points == 2  # partial credit: one of two tests
    assert (
        "Expected: 6" in wrong.text()
        and "Got: 9" in wrong.text()
        and "Multiply by two." in wrong.text()
    )
    assert double.check(stub).status == NOT_ATTEMPTED
    assert double.check(None).status == NOT_ATTEMPTED


def test_not_implemented_from_a_library_is_an_error_not_a_stub():
    def calls_unfinished_library(x):
        raise_from_elsewhere()

    def raise_from_elsewhere():
        raise NotImplementedError("Cannot copy out of meta tensor")

    result = double.check(calls_unfinished_library)
    assert result.status == INCORRECT and "Cannot copy out of meta tensor" in result.text()


def test_stub_seen_through_a_test_that_catches_runtime_error():
    def careless_test(candidate):
        try:
            candidate(1)
        except RuntimeError as err:  # NotImplementedError is a RuntimeError
            raise Fail(f"failed: {err}") from err

    ex = declare.function_exercise(
        "careless", title="t", prompt="p", points=1, tests=[Test("t", careless_test)]
    )
    assert ex.check(stub).status == NOT_ATTEMPTED


def test_not_a_function_is_incorrect_with_reason():
    result = double.check(42)
    assert result.status == INCORRECT and "got int" in result.text()


def test_exception_in_learner_code_is_reported_not_raised():
    def broken(x):
        return x / 0

    result = double.check(broken)
    assert result.status == INCORRECT
    assert "ZeroDivisionError" in result.text() and "return x / 0" in result.text()


def test_endless_loop_is_stopped_by_the_time_limit():
    def hangs(x):
        while True:
            pass

    start = time.perf_counter()
    result = double.check(hangs)
    assert time.perf_counter() - start < 3
    assert result.status == INCORRECT and "did not finish within 0.5 s" in result.text()


def test_html_is_escaped_and_coloured():
    html = double.check(lambda x: "<script>").__class__._repr_html_(
        double.check(lambda x: "<script>")
    )
    assert "<script>" not in html and "&lt;script&gt;" in html and "course-incorrect" in html


def test_hints_come_one_level_at_a_time():
    ex = declare.function_exercise(
        "hinted", title="t", prompt="p", points=1, tests=[], hints=["one", "two"]
    )
    assert ex.next_hint().startswith("Hint 1 of 2: one")
    assert ex.next_hint().startswith("Hint 2 of 2: two")
    assert ex.next_hint().startswith("Hint 2 of 2: two")  # stays on the last


def test_solution_is_withheld_without_a_key():
    assert "withheld by the teacher" in double.solution_source()
    assert (
        double.key() is None
        and double.check(lambda x: 2 * x, include_hidden=True).status == CORRECT
    )


def test_quiz_forms_and_bad_input():
    assert letter.check("b").status == CORRECT
    assert letter.check(" B ").status == CORRECT
    assert letter.check("a").status == INCORRECT
    assert letter.check(None).status == NOT_ATTEMPTED
    bad = letter.check("z")
    assert bad.status == INCORRECT and "Choose from a, b, c" in bad.summary
    assert letter.check(["a", "b"]).status == INCORRECT  # two letters for a single-choice question


def test_numeric_and_multiple_quizzes():
    num = declare.quiz(
        "num",
        title="n",
        question="?",
        kind="numeric",
        decimals=1,
        digest=answer_digest("ch99.num", "2.5"),
    )
    assert num.check(2.5).status == CORRECT and num.check("2.50").status == CORRECT
    assert num.check(2.4).status == INCORRECT and "number" in num.check("lots").summary
    multi = declare.quiz(
        "multi",
        title="m",
        question="?",
        kind="multiple",
        options={"a": 1, "b": 2, "c": 3},
        digest=answer_digest("ch99.multi", "ac"),
    )
    for right in ("ac", "a, c", ["c", "a"]):
        assert multi.check(right).status == CORRECT
    assert multi.check("a").status == INCORRECT


def test_a_numeric_answer_is_judged_as_typed_within_the_stated_tolerance():
    scale = declare.quiz(
        "scale",
        title="s",
        question="?",
        kind="numeric",
        digest=answer_digest("ch99.scale", "32768"),
        why={0.5: "a factor, not the scale", 0: "not zero"},
    )
    assert scale.check(32768).status == CORRECT and scale.check("32768.0").status == CORRECT
    near = scale.check(32768.4)  # rounding would make it 32768
    assert near.status == INCORRECT and "exactly" in near.summary and "32768.4" in near.summary
    half = scale.check(0.5)  # shown as typed, with its own reason
    assert "0.5: a factor, not the scale" in half.summary and "0:" not in half.summary
    assert "0: not zero" in scale.check(0).summary
    loose = declare.quiz(
        "loose",
        title="l",
        question="?",
        kind="numeric",
        decimals=1,
        tolerance=0.04,
        digest=answer_digest("ch99.loose", "2.5"),
    )
    assert loose.check(2.54).status == CORRECT and loose.check(2.46).status == CORRECT
    off = loose.check(2.55)  # 0.05 from both 2.5 and 2.6
    assert off.status == INCORRECT and "0.04" in off.summary
    with pytest.raises(ValueError, match="tolerance"):
        declare.quiz("bad", title="b", question="?", kind="numeric", tolerance=0.5)


def test_error_quiz_runs_the_code_for_real():
    quiz = declare.quiz(
        "err",
        title="e",
        question="?",
        kind="error",
        code="1 / 0",
        options={"a": "ZeroDivisionError", "b": "No error"},
    )
    assert quiz.right_answer() == "a"
    wrong = quiz.check("b")
    assert (
        wrong.status == INCORRECT and "ZeroDivisionError" not in wrong.text()
    )  # a wrong answer learns no error
    right = quiz.check("a")
    assert right.status == CORRECT and "the code raised: ZeroDivisionError" in right.summary


def test_progress_keeps_the_best_result_and_survives_a_corrupt_file(tmp_path, monkeypatch):
    path = tmp_path / "p.json"
    monkeypatch.setenv("COURSE_PROGRESS_FILE", str(path))
    double.check(lambda x: 2 * x)
    double.check(stub)
    assert json.loads(path.read_text())["ch99.double"]["status"] == CORRECT
    path.write_text("{not json")
    assert progress.load() == {}
    double.check(lambda x: x)
    assert json.loads(path.read_text())["ch99.double"]["status"] == INCORRECT


def test_progress_summary_per_chapter(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_PROGRESS_FILE", str(tmp_path / "p.json"))
    double.check(lambda x: 2 * x)
    rows = progress.chapter_summary([double, letter])
    assert rows == [
        {
            "chapter": "99",
            "title": "Engine self-test",
            "done": 1,
            "attempted": 0,
            "total": 2,
            "points": 4,
            "max_points": 5,
        }
    ]


def test_describe_exception_hides_library_frames():
    """The learner's line is named; the frames inside torch (site-packages) and the standard
    library are not: there are several of each in these tracebacks."""
    import torch

    def learner_forward(x):
        return torch.nn.Linear(4, 2)(x)  # x has 3 features: the error is raised deep inside torch

    def learner_parse(text):
        return json.loads(text)  # raised inside json/decoder.py

    for call, arg, library_names in [
        (learner_forward, torch.zeros(3), ("_call_impl", "forward")),
        (learner_parse, "{oops", ("raw_decode", "decode")),
    ]:
        try:
            call(arg)
        except Exception as err:
            import traceback

            frames = [f.name for f in traceback.extract_tb(err.__traceback__)]
            assert set(library_names) & set(frames), (
                "the traceback must hold library frames to hide"
            )
            text = describe_exception(err)
            assert f"in {call.__name__}:" in text, text
            assert not any(f"in {name}:" in text for name in library_names), text


def test_duplicate_ids_are_rejected():
    with pytest.raises(ValueError, match="share the id"):
        declare.function_exercise("double", title="again", prompt="", points=1, tests=[])


# ------------------------------------------------------------------ verdict colour (issue 9.2)
def test_box_colour_follows_the_verdict_not_the_last_test():
    ex = declare.function_exercise(
        "last_passes",
        title="t",
        prompt="p",
        points=2,
        tests=[
            Test("first fails", lambda c: (_ for _ in ()).throw(Fail("no"))),
            Test("last passes", lambda c: None),
        ],
    )
    html = ex.check(lambda: None).__class__._repr_html_(ex.check(lambda: None))
    red, green = "#cf222e", "#1a7f37"
    assert f"border-left:6px solid {red}" in html and f"font-weight:bold;color:{red}" in html
    assert (
        f"border-left:6px solid {green}" not in html
        and f"font-weight:bold;color:{green}" not in html
    )
    assert f"<b style='color:{green}'>✔</b>" in html  # the passing row keeps its own green mark


# ------------------------------------------------------------------ time limit (issue 9.4)
def test_except_exception_cannot_swallow_the_time_limit():
    def swallows(x):
        give_up = (
            time.perf_counter() + 4
        )  # bounded, so that a broken limit fails this test instead of hanging
        while time.perf_counter() < give_up:  # `while True` in real life
            try:
                sum(range(1000))
            except Exception:
                pass
        return 2 * x

    start = time.perf_counter()
    result = double.check(swallows)
    assert time.perf_counter() - start < 3, (
        "the learner's `except Exception` swallowed the time limit"
    )
    assert result.status == INCORRECT and "did not finish within 0.5 s" in result.text()


def test_a_slow_answer_that_swallows_the_interruption_is_not_correct():
    def slow_but_right(x):
        end = time.perf_counter() + 0.8  # longer than the 0.5 s limit, then the right value
        while time.perf_counter() < end:
            try:
                time.sleep(0.01)
            except BaseException:  # even a bare except: swallows every interruption
                pass
        return 2 * x

    result = double.check(slow_but_right)
    assert result.status == INCORRECT, result.text()
    assert "did not finish within 0.5 s" in result.text()
    assert double.check(lambda x: 2 * x).status == CORRECT  # and the limit is gone afterwards


# -------------------------------------------------------- hidden tests in the learner's check (9.3)
def _keyed(monkeypatch, name):
    """A throwaway exercise with an answer key (as in the
    full course) whose hidden test wants 2*x for x=-7."""
    from course_lib.exercises import AnswerKey

    def secret(candidate):
        if candidate(-7) != -14:
            raise Fail(
                "double(-7) secret message", expected=-14, got=candidate(-7), hint="secret hint"
            )

    ex = declare.function_exercise(
        name, title="t", prompt="p", points=2, tests=[Test("doubles 3", _expect_double)]
    )
    key = AnswerKey(
        solution=lambda x: 2 * x, hidden_tests=[Test("handles negative numbers", secret)]
    )
    monkeypatch.setattr(ex, "key", lambda: key)
    return ex


def test_learner_check_runs_hidden_tests_and_keeps_their_values_hidden(monkeypatch):
    ex = _keyed(monkeypatch, "keyed")
    wrong = lambda x: abs(2 * x)  # passes the visible test, fails the hidden one
    result = ex.check(wrong)
    assert result.status == INCORRECT and result.points == 1 and result.hidden_not_run == 0
    shown = result.text() + result._repr_html_()
    assert "handles negative numbers" in shown and "its inputs and values are not shown" in shown
    for secret in ("secret message", "-14", "secret hint", "-7"):
        assert secret not in shown
    assert ex.check(lambda x: 2 * x).status == CORRECT
    visible_only = ex.check(wrong, include_hidden=False)  # what the student bundle runs
    assert visible_only.status == CORRECT and visible_only.hidden_not_run == 1


def test_without_a_key_only_visible_tests_run_and_the_learner_is_told():
    result = double.check(lambda x: 2 * x)
    assert double.key() is None and result.status == CORRECT and len(result.tests) == 2
    assert "grader also runs hidden tests" in result.summary


# ------------------------------------------------------------------ texts (issue 12.1)
def test_backticks_become_code_in_html_and_stay_in_text():
    def wants_to(candidate):
        raise Fail("Call `x.to(device)` <now>", hint="Use `.to()`")

    ex = declare.function_exercise(
        "coded", title="t", prompt="p", points=1, tests=[Test("moves `x`", wants_to)]
    )
    result = ex.check(lambda: None)
    html = result._repr_html_()
    assert (
        "<code>x.to(device)</code>" in html
        and "<code>.to()</code>" in html
        and "moves <code>x</code>" in html
    )
    assert "&lt;now&gt;" in html and "`" not in html
    assert "Call `x.to(device)` <now>" in result.text()


def test_a_hint_repeated_by_several_failures_is_shown_once():
    def fails(case):
        def run(candidate):
            raise Fail(f"case {case} failed", hint="Visit the items of a container.")

        return run

    ex = declare.function_exercise(
        "repeats",
        title="t",
        prompt="p",
        points=3,
        tests=[Test(f"case {c}", fails(c)) for c in "abc"],
    )
    result = ex.check(lambda: None)
    for shown in (result.text(), result._repr_html_()):
        assert shown.count("Visit the items of a container.") == 1
        assert all(f"case {c} failed" in shown for c in "abc")
    assert all(
        "Hint: Visit" in " ".join(t.public_lines()) for t in result.tests
    )  # the grader's per-test rows


# ------------------------------------------------------------------ quizzes that teach (issue 12.2)
why_quiz = declare.quiz(
    "why",
    title="Pick `c`",
    question="Which one?",
    options={"a": "A", "b": "B", "c": "`C`"},
    digest=answer_digest("ch99.why", "c"),
    explanation="C it is.",
    hints=["Think of `C`.", "Not a, not b."],
    why={"a": "A is off because of `x`."},
)


def test_a_wrong_answer_says_why_its_option_is_off_without_naming_the_right_one():
    result = why_quiz.check("a")
    assert result.status == INCORRECT and "A is off because of `x`." in result.summary
    assert "C it is." not in result.text() and "c)" not in result.summary
    assert "<code>x</code>" in result._repr_html_()


def test_a_wrong_answer_without_why_gets_the_next_hint_then_the_one_after():
    quiz = declare.quiz(
        "hinted_quiz",
        title="t",
        question="?",
        options={"a": "A", "b": "B", "c": "C"},
        digest=answer_digest("ch99.hinted_quiz", "c"),
        hints=["first hint", "second hint"],
    )
    assert "first hint" in quiz.check("b").summary
    second = quiz.check("b").summary
    assert "second hint" in second and "Hint 2 of 2" in second
    assert quiz.check("c").status == CORRECT
    bare = declare.quiz(
        "bare",
        title="t",
        question="?",
        options={"a": "A", "b": "B"},
        digest=answer_digest("ch99.bare", "a"),
    )
    assert bare.check("b").summary.startswith("Not quite")


def test_why_must_name_real_options():
    with pytest.raises(ValueError, match="do not exist"):
        declare.quiz(
            "badwhy", title="t", question="?", options={"a": "A"}, digest="", why={"z": "no such"}
        )


def test_an_empty_numeric_answer_is_not_attempted_and_not_recorded(tmp_path, monkeypatch):
    path = tmp_path / "p.json"
    monkeypatch.setenv("COURSE_PROGRESS_FILE", str(path))
    num = declare.quiz(
        "num_empty",
        title="n",
        question="?",
        kind="numeric",
        digest=answer_digest("ch99.num_empty", "4"),
    )
    for empty in (None, "", "   "):
        assert num.check(empty).status == NOT_ATTEMPTED
    box = num.ask()
    box.check_button.click()
    assert "Not attempted" in box.verdict.value and "box above" in box.verdict.value
    assert "cell" not in box.verdict.value
    assert json.loads(path.read_text())["ch99.num_empty"]["status"] == NOT_ATTEMPTED
    box.answer(0)
    box.check_button.click()
    assert "Incorrect" in box.verdict.value  # 0 typed is an answer, unlike an empty box
    box.answer("4")
    box.check_button.click()
    assert "Correct" in box.verdict.value


def test_quiz_widget_single_choice_reads_one_option_and_speaks_of_itself():
    box = why_quiz.ask()
    box.check_button.click()
    assert "Choose an option above" in box.verdict.value and "cell" not in box.verdict.value
    box.answer("a")
    box.check_button.click()
    assert (
        "Incorrect" in box.verdict.value
        and "A is off because of <code>x</code>" in box.verdict.value
    )
    box.answer("c")
    assert box.verdict.value == ""  # a verdict belongs to the answer it judged
    box.check_button.click()
    assert "Correct" in box.verdict.value and "C it is." in box.verdict.value


def test_quiz_widget_single_choice_keeps_one_ticked_and_renders_code():
    import ipywidgets as W

    box = why_quiz.ask()
    rows = [w for w in _descendants(box) if isinstance(w, W.Checkbox)]
    assert len(rows) == 3 and all(r.description_allow_html for r in rows)
    rows[0].value = True
    rows[2].value = True
    assert [r.value for r in rows] == [False, False, True]
    html = " ".join(w.value for w in _descendants(box) if isinstance(w, W.HTML))
    assert "Pick <code>c</code>" in html and rows[2].description == "c) <code>C</code>"


def _descendants(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _descendants(child)


def test_alike_widgets_share_their_layout_and_style_and_get_their_classes_when_made():
    """Every quiz of a kernel shares the same few Layout and Style models (each model is a comm
    that the kernel opens and JupyterLab or nbval reads), and a closed one is made again."""
    import ipywidgets as W

    from course_lib.widgets import shared

    boxes = [why_quiz.ask(), why_quiz.ask()]
    parts = [w for box in boxes for w in _descendants(box)]
    assert len(parts) > 20 and len({id(w.layout) for w in parts}) <= 5  # one per look
    assert len({id(w.style) for w in parts if isinstance(w, W.Checkbox)}) == 1
    rows = [w for w in parts if isinstance(w, W.Checkbox)]
    assert all({"course-option", "course-single"} <= set(r._dom_classes) for r in rows)
    assert {"course-quiz"} <= set(boxes[0]._dom_classes)
    layout = shared(W.Layout, width="auto")
    assert shared(W.Layout, width="auto") is layout and layout.width == "auto"
    layout.close()
    assert shared(W.Layout, width="auto") is not layout


# ----------------------------------------------------------------- hints one at a time (issue 12.4)
def _hinted(name):
    return declare.function_exercise(
        name, title="t", prompt="p", points=1, tests=[], hints=["one `a`", "two", "three"]
    )


def _hint_parts(box):
    import ipywidgets as W

    button = next(w for w in _descendants(box) if isinstance(w, W.Button))
    shown = " ".join(w.value for w in _descendants(box) if isinstance(w, W.HTML))
    return button, shown


def test_showing_the_hint_widget_reveals_nothing_and_clicks_reveal_one_at_a_time(
    tmp_path, monkeypatch
):
    from course_lib.widgets import hint_widget

    monkeypatch.setenv("COURSE_PROGRESS_FILE", str(tmp_path / "p.json"))
    ex = _hinted("hint_widget_ex")
    button, shown = _hint_parts(hint_widget(ex))  # what Run All does: no hint spent
    assert (
        ex.hints_shown() == []
        and "Hint 1" not in shown
        and button.description == "Show a hint (1 of 3)"
    )
    button.click()
    rerun = hint_widget(ex)  # the learner re-runs the hint cell: hint 1 is still there
    button2, shown2 = _hint_parts(rerun)
    assert "Hint 1 of 3: one <code>a</code>" in shown2 and "Hint 2" not in shown2
    assert button2.description == "Show a hint (2 of 3)"
    button2.click()
    _, shown2 = _hint_parts(rerun)
    _, shown1 = _hint_parts(hint_widget(ex))
    for shown in (shown1, shown2):
        assert "Hint 1 of 3" in shown and "Hint 2 of 3: two" in shown and "Hint 3" not in shown
    button2.click()
    button2, _ = _hint_parts(rerun)
    assert button2.disabled and ex.hints_shown()[-1] == "Hint 3 of 3: three"
    assert json.loads((tmp_path / "p.json").read_text())["ch99.hint_widget_ex"]["hints"] == 3


def test_hint_in_a_notebook_displays_the_widget_and_in_a_terminal_prints_the_next(
    monkeypatch, capsys
):
    from course_lib.exercises import spec

    ex = _hinted("hint_where")
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda w: shown.append(w))
    monkeypatch.setattr(spec, "_in_notebook", lambda: True)
    ex.hint()
    ex.hint()
    assert len(shown) == 2 and ex.hints_shown() == [] and capsys.readouterr().out == ""
    monkeypatch.setattr(spec, "_in_notebook", lambda: False)
    ex.hint()
    assert capsys.readouterr().out.startswith("Hint 1 of 3: one `a`")
    assert ex.next_hint().startswith("Hint 2 of 3: two")


def test_a_quiz_hint_revealed_by_a_wrong_answer_shows_in_its_widget():
    quiz = declare.quiz(
        "hint_sync",
        title="t",
        question="?",
        options={"a": "A", "b": "B"},
        digest=answer_digest("ch99.hint_sync", "a"),
        hints=["look again"],
    )
    box = quiz.ask()
    box.answer("b")
    box.check_button.click()
    assert "look again" not in box.verdict.value and "hints below" in box.verdict.value
    hints = next(w for w in _descendants(box) if "course-hints" in w._dom_classes)
    button, shown = _hint_parts(hints)
    assert "Hint 1 of 1: look again" in shown and button.disabled
    assert "look again" in quiz.check("b", record=False).summary  # the answer cell has no list


def test_a_wrong_answer_in_the_widget_shows_each_hint_once_and_steps_one_at_a_time():
    quiz = declare.quiz(
        "hint_once",
        title="t",
        question="?",
        options={"a": "A", "b": "B"},
        digest=answer_digest("ch99.hint_once", "a"),
        hints=["first idea", "second idea"],
    )
    box = quiz.ask()
    hints = next(w for w in _descendants(box) if "course-hints" in w._dom_classes)
    box.answer("b")
    box.check_button.click()
    button, shown = _hint_parts(hints)
    on_screen = box.verdict.value + shown
    assert on_screen.count("first idea") == 1 and "second idea" not in on_screen
    assert "2 of 2" in button.description and not button.disabled  # hint 1 is there, above it
    button.click()
    button, shown = _hint_parts(hints)
    assert shown.count("first idea") == shown.count("second idea") == 1 and button.disabled


WARM_UP_PROBE = """
import gc, json, sys
import torch
from course_lib.exercises.runner import warm_up
full = []
def count(phase, info):
    if phase == "start" and info["generation"] == 2:
        full.append(1)
gc.callbacks.append(count)
warm_up()
print(json.dumps({"dynamo": "torch._dynamo" in sys.modules, "full": len(full),
                  "enabled": gc.isenabled()}))
"""


def test_warm_up_imports_dynamo_without_full_collections_and_leaves_the_collector_on():
    """torch._dynamo's import set off full collections that freed nothing; warm_up pauses them."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", WARM_UP_PROBE], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(out.strip().splitlines()[-1]) == {"dynamo": True, "full": 0, "enabled": True}


def test_a_paused_collector_is_back_on_even_after_an_error():
    with pytest.raises(ImportError):
        with collector_paused():
            assert not gc.isenabled()
            raise ImportError("half an import")
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # off before, off after: the caller's choice stays
    finally:
        gc.enable()
