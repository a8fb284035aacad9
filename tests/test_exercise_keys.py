"""Every exercise's checker is itself tested: reference passes, stub is not attempted, wrong fails.

Parametrized over the registry, so a new exercise is covered (and must ship wrong answers).
"""

import dataclasses
import itertools
import json
import re

import pytest

from course_lib.checks.base import Check
from course_lib.exercises import (
    CORRECT,
    INCORRECT,
    NOT_ATTEMPTED,
    CheckResult,
    all_exercises,
    answer_digest,
)
from course_lib.exercises.results import HIDDEN_NOTE, TestOutcome
from course_lib.grading.selftest import split_result
from support.notebook_cells import chapter_notebook, code_cells, stub_answer, stub_function

EXERCISES = all_exercises()
FUNCTIONS = [e for e in EXERCISES if e.kind == "function"]
QUIZZES = [e for e in EXERCISES if e.kind != "function"]
ids = lambda e: e.id


def test_there_are_exercises():
    assert len(FUNCTIONS) >= 2 and len(QUIZZES) >= 1


@pytest.mark.parametrize("exercise", EXERCISES, ids=ids)
def test_every_exercise_has_a_key(exercise):
    key = exercise.key()
    assert key is not None, f"{exercise.id} has no entry in {exercise.chapter.key_module}.KEY"


@pytest.mark.parametrize("exercise", FUNCTIONS, ids=ids)
def test_reference_solution_passes_visible_and_hidden(exercise):
    key = exercise.key()
    assert key.hidden_tests, f"{exercise.id} has no hidden tests"
    result = exercise.check(key.solution, include_hidden=True)
    assert result.status == CORRECT, result.text()
    assert result.points == exercise.points
    assert len(result.tests) == len(exercise.tests) + len(key.hidden_tests)


@pytest.mark.parametrize("exercise", FUNCTIONS, ids=ids)
def test_notebook_stub_is_not_attempted(exercise):
    result = exercise.check(stub_function(exercise), include_hidden=True)
    assert result.status == NOT_ATTEMPTED, result.text()
    assert result.points == 0


@pytest.mark.parametrize("exercise", FUNCTIONS, ids=ids)
def test_has_at_least_two_realistic_wrong_answers(exercise):
    assert len(exercise.key().wrong_answers) >= 2, (
        f"{exercise.id}: add known-wrong answers to its key"
    )


@pytest.mark.parametrize("exercise", FUNCTIONS, ids=ids)
def test_every_exercise_has_hints_and_a_hint_cell(exercise):
    """Hints one at a time, as promised: each exercise
    has some, and a cell `ch.<name>.hint()` shows them."""
    assert len(exercise.hints) >= 2, (
        f"{exercise.id}: give it at least two hints, from a nudge to the shape of the code"
    )
    pattern = re.compile(rf"\.{exercise.name}\.hint\(\)")
    cells = [s for s in code_cells(chapter_notebook(exercise)) if pattern.search(s)]
    assert cells, (
        f"{exercise.id}: {chapter_notebook(exercise).name} has no cell `ch.{exercise.name}.hint()`"
    )


WRONG = [(e, w) for e in FUNCTIONS for w in (e.key().wrong_answers if e.key() else [])]


def failed_feedback(result) -> str:
    """What the learner reads about the tests that failed: their names and feedback lines."""
    return "\n".join(
        line
        for t in result.tests
        if not t.passed
        for line in [f"{t.name}: FAILED", *t.public_lines()]
    )


def boilerplate(exercise) -> str:
    """The engine's own words, the same for every wrong answer: a feedback_contains found in them
    says nothing about this wrong answer."""
    generic = CheckResult(
        exercise.id,
        exercise.title,
        INCORRECT,
        0,
        exercise.points,
        "Some tests failed: read the feedback below.",
        [
            TestOutcome(
                "t",
                False,
                message="Your function did not finish within 10 s (an endless loop?).",
                expected=" ",
                got=" ",
                hint=" ",
            ),
            TestOutcome("h", False, hidden=True),
        ],
    )
    return (
        f"{generic.text()}\nYour code raised Error: line in\nNot quite. {exercise.name} "
        f"{exercise.title}"
    )


@pytest.mark.parametrize("exercise,wrong", WRONG, ids=[f"{e.id}-{w.label}" for e, w in WRONG])
def test_wrong_answer_is_incorrect_for_the_learner_and_the_grader(exercise, wrong):
    """The learner's own check (key installed: visible and hidden tests) never calls a known-wrong
    answer Correct, and its feedback names what went wrong (feedback_contains)."""
    learner = exercise.check(
        wrong.function, record=False
    )  # with the key installed: visible + hidden tests
    assert len(learner.tests) == len(exercise.tests) + len(
        exercise.key().hidden_tests
    )  # = the grader's check
    assert learner.status == INCORRECT, (
        f"the learner's check calls a wrong answer right:\n{learner.text()}"
    )
    assert learner.points < exercise.points
    failed = [t for t in learner.tests if not t.passed]
    assert failed and all(t.public_lines() for t in failed), "every failed test must say something"
    assert wrong.feedback_contains.lower() in failed_feedback(learner).lower(), (
        f"{exercise.id} / {wrong.label!r}: the feedback of the failed tests does not contain "
        f"{wrong.feedback_contains!r}:\n{learner.text()}"
    )


@pytest.mark.parametrize("exercise,wrong", WRONG, ids=[f"{e.id}-{w.label}" for e, w in WRONG])
def test_feedback_contains_is_specific(exercise, wrong):
    """An empty or generic feedback_contains ("Incorrect", "Hint", "expected") proves nothing."""
    needle = " ".join(wrong.feedback_contains.split())
    assert len(needle.strip(" .:,;!?'\"`()")) >= 4, (
        f"{exercise.chapter.key_module}: {exercise.name} wrong answer {wrong.label!r} has "
        f"feedback_contains={wrong.feedback_contains!r}; give the words of the feedback this "
        "wrong answer must get"
    )
    assert needle.lower() not in boilerplate(exercise).lower(), (
        f"{exercise.chapter.key_module}: {exercise.name} wrong answer {wrong.label!r}: "
        f"feedback_contains={wrong.feedback_contains!r} is in every verdict; name this "
        "failure's own feedback"
    )


def _result_failing_a_hidden_test(exercise):
    """The learner's check (key installed) of the first wrong answer that fails a hidden test."""
    for wrong in exercise.key().wrong_answers:
        result = exercise.check(wrong.function, record=False)
        if any(o.hidden and not o.passed for o in result.tests):
            return result
    return None


@pytest.mark.parametrize("exercise", FUNCTIONS, ids=ids)
def test_hidden_tests_do_not_leak_values(exercise):
    """Take a wrong answer that fails a hidden test: the learner sees that test's name and a note,
    never its message, values or hint."""
    result = _result_failing_a_hidden_test(exercise)
    assert result is not None, (
        f"{exercise.id}: no wrong answer in the key fails a hidden test, so nothing "
        f"shows that hidden values stay hidden; add one"
    )
    hidden = [o for o in result.tests if o.hidden]
    assert len(hidden) == len(exercise.key().hidden_tests)  # the learner's check ran them all
    failed = [o for o in hidden if not o.passed]
    shown = result.text() + result._repr_html_() + json.dumps(result.as_dict())
    visible_text = " ".join(line for o in result.tests if not o.hidden for line in o.public_lines())
    for outcome in failed:
        assert outcome.public_lines() == [HIDDEN_NOTE]
        assert outcome.name in result.text()  # what failed is named, its values are not
        for secret in (outcome.message, outcome.expected, outcome.got, outcome.hint):
            assert not secret or secret in visible_text or secret not in shown, (
                f"{exercise.id}: hidden test {outcome.name!r} leaks {secret!r}"
            )


@pytest.mark.parametrize("exercise", QUIZZES, ids=ids)
def test_quiz_right_answer_and_stub(exercise):
    key = exercise.key()
    assert exercise.check(key.answer).status == CORRECT
    assert exercise.check(stub_answer(exercise)).status == NOT_ATTEMPTED
    if exercise.kind != "error":
        assert exercise.digest == answer_digest(exercise.id, exercise.normalize(key.answer)), (
            f"{exercise.id}: digest is stale; run python -m course_lib digest {exercise.id} "
            "<answer>"
        )


@pytest.mark.parametrize("exercise", QUIZZES, ids=ids)
def test_quiz_wrong_answers_are_incorrect(exercise):
    right = exercise.normalize(exercise.key().answer)
    if exercise.kind == "numeric":
        wrong = [float(right) * 2, float(right) + 1, 0]
    else:
        letters = list(exercise.options)
        sizes = [1] if exercise.kind in ("single", "error") else range(1, len(letters) + 1)
        wrong = [
            "".join(c)
            for n in sizes
            for c in itertools.combinations(letters, n)
            if "".join(c) != right
        ]
    assert len(wrong) >= 2
    for answer in wrong:
        result = exercise.check(answer, record=False)
        assert result.status == INCORRECT and result.points == 0, (answer, result.text())
        if exercise.kind == "error":  # a wrong answer must not learn what the code raised
            assert (
                "raised" not in result.summary and exercise.observed_error() not in result.summary
            ), (answer, result.summary)
    exercise._hints_shown = 0  # wrong answers revealed hints; leave the quiz as a learner finds it


# ------------------------------------------------- run half and judge half apart (issue 18, item 2)
@pytest.mark.parametrize("exercise", FUNCTIONS, ids=ids)
def test_every_test_is_a_run_half_and_a_judge_half(exercise):
    """Each test is built by a public builder of course_lib.checks; what its run half receives is
    its inputs only: no field the judge keeps to itself (a hidden test's expected values)."""
    for test in exercise.graded_tests():
        assert isinstance(test.check, Check) and test.check.splittable, (
            f"{exercise.id} / {test.name}: build it from course_lib.checks (a run half and a "
            "judge half)"
        )
        assert type(test.check).__module__.startswith("course_lib.checks."), (
            exercise.id,
            test.name,
        )
        builder, inputs = test.check.for_child()
        judge_only = {f.name for f in dataclasses.fields(test.check) if f.metadata.get("judge")}
        assert judge_only.isdisjoint(inputs), (exercise.id, test.name, judge_only & set(inputs))


CANDIDATES = [
    (e, label, fn)
    for e in FUNCTIONS
    for label, fn in [("reference", e.key().solution), ("stub", None)]
    + [(w.label, w.function) for w in e.key().wrong_answers]
]


def _outcomes(result) -> list:
    return [(t.name, t.passed, t.message, t.expected, t.got, t.hint) for t in result.tests]


@pytest.mark.parametrize(
    "exercise,label,function", CANDIDATES, ids=[f"{e.id}-{lab}" for e, lab, _ in CANDIDATES]
)
def test_the_learners_check_and_the_graders_split_agree(exercise, label, function):
    """The reference, the stub and every known-wrong answer: the learner's check (both halves in
    one process) and the grader's way (the run half rebuilt from a child's inputs, its
    observation through the wire, the judge half apart) give the same status, points and
    feedback, test by test."""
    candidate = stub_function(exercise) if function is None else function
    learner = exercise.check(candidate, include_hidden=True, record=False)
    grader = split_result(exercise, candidate)
    assert (grader.status, grader.points) == (learner.status, learner.points)
    assert _outcomes(grader) == _outcomes(learner)
    if label == "reference":
        assert grader.status == CORRECT
    if label == "stub":
        assert grader.status == NOT_ATTEMPTED


def test_the_exercise_index_is_in_step_with_the_registry():
    """index.json (what the grader's parent and the exports read instead of importing every
    chapter) says exactly what the chapter modules declare."""
    from course_lib.exercises import index

    assert index.INDEX_PATH.read_text(encoding="utf-8") == index.text(index.build()), (
        "course_lib/exercises/index.json is out of step with the chapters' exercises: run "
        "`python -m course_lib.exercises.index` and commit it"
    )
    assert [e.as_row() for e in index.exercises()] == index.build()


def test_get_imports_only_the_exercises_own_chapter():
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from course_lib.exercises import get\n"
        "ex = get('ch01.choose_device')\n"
        "chapters = sorted(m for m in sys.modules if m.startswith('course_lib.ch0'))\n"
        "print(ex.id, chapters)\n"
        "for bad in ('ch1.choose_device', 'ch01.nothing', 'ch99.x', 'nothing'):\n"
        "    try:\n"
        "        get(bad)\n"
        "    except KeyError:\n"
        "        continue\n"
        "    print('found', bad)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "ch01.choose_device ['course_lib.ch01_device_check']"


def test_the_graders_parent_chooses_and_records_exercises_without_torch():
    """Choosing a class's exercises, writing a record and the LMS exports read index.json: the
    grader's parent process never imports a chapter module or torch."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "import course_lib.grading.parent, course_lib.classroom.exports\n"
        "from course_lib.grading import intake, record, outcome\n"
        "from course_lib.classroom.assignments import all_assignments, chapter_of\n"
        "sub = intake.Submission('a', None)\n"
        "sub.unreadable = 'x'\n"
        "intake.assign([sub], {'03'})\n"
        "outcome.decide_statically(sub, {e.id: 2 for e in sub.exercises})\n"
        "rows, rec = record.build(sub)\n"
        "print(len(rows) > 1, sorted(all_assignments()) == ['01', '02', '03', '04', '05', '06',"
        " '07', '08'], chapter_of('ch03.train_one_epoch'))\n"
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('course_lib.ch0')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.split("\n")[:2] == ["True True 03", "[]"]
