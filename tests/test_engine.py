"""Unit tests of the exercise engine, on a throwaway chapter (no real chapter involved)."""
import json
import time

import pytest

from course_lib.exercises import CORRECT, INCORRECT, NOT_ATTEMPTED, Chapter, Fail, Test, answer_digest
from course_lib.exercises import progress
from course_lib.exercises.runner import describe_exception

chapter = Chapter("course_lib.ch99_engine_selftest", title="Engine self-test", registered=False)


def _expect_double(candidate):
    got = candidate(3)
    if got != 6:
        raise Fail("double(3) is wrong.", expected=6, got=got, hint="Multiply by two.")


double = chapter.function_exercise(
    "double", title="Double it", prompt="double(x) -> 2x", points=4,
    tests=[Test("doubles 3", _expect_double), Test("doubles 0", lambda c: None if c(0) == 0 else (_ for _ in ()).throw(
        Fail("double(0) should be 0")))],
    hints=["Use *.", "return 2 * x"], time_limit=0.5)

letter = chapter.quiz("letter", title="Pick b", question="?", options={"a": "A", "b": "B", "c": "C"},
                      digest=answer_digest("ch99.letter", "b"))


def stub(x):
    raise NotImplementedError


def test_correct_incorrect_not_attempted():
    assert double.check(lambda x: 2 * x).status == CORRECT
    wrong = double.check(lambda x: x * x)
    assert wrong.status == INCORRECT and wrong.points == 2  # partial credit: one of two tests
    assert "Expected: 6" in wrong.text() and "Got: 9" in wrong.text() and "Multiply by two." in wrong.text()
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
            raise Fail(f"failed: {err}")
    ex = chapter.function_exercise("careless", title="t", prompt="p", points=1, tests=[Test("t", careless_test)])
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
    html = double.check(lambda x: "<script>").__class__._repr_html_(double.check(lambda x: "<script>"))
    assert "<script>" not in html and "&lt;script&gt;" in html and "course-incorrect" in html


def test_hints_come_one_level_at_a_time():
    ex = chapter.function_exercise("hinted", title="t", prompt="p", points=1, tests=[], hints=["one", "two"])
    assert ex.next_hint().startswith("Hint 1 of 2: one")
    assert ex.next_hint().startswith("Hint 2 of 2: two")
    assert ex.next_hint().startswith("Hint 2 of 2: two")  # stays on the last


def test_solution_is_withheld_without_a_key():
    assert "withheld by the teacher" in double.solution_source()
    assert double.key() is None and double.check(lambda x: 2 * x, include_hidden=True).status == CORRECT


def test_quiz_forms_and_bad_input():
    assert letter.check("b").status == CORRECT
    assert letter.check(" B ").status == CORRECT
    assert letter.check("a").status == INCORRECT
    assert letter.check(None).status == NOT_ATTEMPTED
    bad = letter.check("z")
    assert bad.status == INCORRECT and "Choose from a, b, c" in bad.summary
    assert letter.check(["a", "b"]).status == INCORRECT  # two letters for a single-choice question


def test_numeric_and_multiple_quizzes():
    num = chapter.quiz("num", title="n", question="?", kind="numeric", decimals=1,
                       digest=answer_digest("ch99.num", "2.5"))
    assert num.check(2.5).status == CORRECT and num.check("2.50").status == CORRECT
    assert num.check(2.4).status == INCORRECT and "number" in num.check("lots").summary
    multi = chapter.quiz("multi", title="m", question="?", kind="multiple", options={"a": 1, "b": 2, "c": 3},
                         digest=answer_digest("ch99.multi", "ac"))
    for right in ("ac", "a, c", ["c", "a"]):
        assert multi.check(right).status == CORRECT
    assert multi.check("a").status == INCORRECT


def test_error_quiz_runs_the_code_for_real():
    quiz = chapter.quiz("err", title="e", question="?", kind="error", code="1 / 0",
                        options={"a": "ZeroDivisionError", "b": "No error"})
    assert quiz.right_answer() == "a"
    wrong = quiz.check("b")
    assert wrong.status == INCORRECT and "ZeroDivisionError" not in wrong.text()  # a wrong answer learns no error
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
    assert rows == [{"chapter": "99", "title": "Engine self-test", "done": 1, "attempted": 0, "total": 2,
                     "points": 4, "max_points": 5}]


def test_describe_exception_hides_library_frames():
    try:
        int("x")
    except ValueError as err:
        assert describe_exception(err).startswith("ValueError: invalid literal")


def test_duplicate_ids_are_rejected():
    with pytest.raises(ValueError, match="share the id"):
        chapter.function_exercise("double", title="again", prompt="", points=1, tests=[])
