"""Every exercise's checker is itself tested: reference passes, stub is not attempted, wrong fails.

Parametrized over the registry, so a new exercise is covered (and must ship wrong answers).
"""
import itertools
import json

import pytest

from course_lib.exercises import CORRECT, INCORRECT, NOT_ATTEMPTED, CheckResult, all_exercises, answer_digest
from notebook_cells import stub_answer, stub_function

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
    assert len(exercise.key().wrong_answers) >= 2, f"{exercise.id}: add known-wrong answers to its key"


WRONG = [(e, w) for e in FUNCTIONS for w in (e.key().wrong_answers if e.key() else [])]


@pytest.mark.parametrize("exercise,wrong", WRONG, ids=[f"{e.id}-{w.label}" for e, w in WRONG])
def test_wrong_answer_is_incorrect_with_feedback(exercise, wrong):
    result = exercise.check(wrong.function, include_hidden=True)
    assert result.status == INCORRECT, result.text()
    assert result.points < exercise.points
    failed = [t for t in result.tests if not t.passed]
    assert failed and all(t.public_lines() for t in failed), "every failed test must say something"
    assert wrong.feedback_contains.lower() in result.text().lower(), result.text()


@pytest.mark.parametrize("exercise", FUNCTIONS, ids=ids)
def test_hidden_tests_do_not_leak_values(exercise):
    wrong = exercise.key().wrong_answers[0]
    result = exercise.check(wrong.function, include_hidden=True)
    hidden = [o for o in result.tests if o.hidden]
    assert len(hidden) == len(exercise.key().hidden_tests)
    failed = [o for o in hidden if not o.passed]
    only_hidden = CheckResult(result.exercise_id, result.title, result.status, 0, 1, "", failed)
    shown = only_hidden.text() + only_hidden._repr_html_() + json.dumps(only_hidden.as_dict())
    for outcome in failed:
        assert outcome.public_lines() == ["(a hidden test: its inputs and values are not shown)"]
        for secret in (outcome.message, outcome.expected, outcome.got, outcome.hint):
            assert not secret or secret not in shown


@pytest.mark.parametrize("exercise", QUIZZES, ids=ids)
def test_quiz_right_answer_and_stub(exercise):
    key = exercise.key()
    assert exercise.check(key.answer).status == CORRECT
    assert exercise.check(stub_answer(exercise)).status == NOT_ATTEMPTED
    if exercise.kind != "error":
        assert exercise.digest == answer_digest(exercise.id, exercise.normalize(key.answer)), \
            f"{exercise.id}: digest is stale; run python -m course_lib digest {exercise.id} <answer>"


@pytest.mark.parametrize("exercise", QUIZZES, ids=ids)
def test_quiz_wrong_answers_are_incorrect(exercise):
    right = exercise.normalize(exercise.key().answer)
    if exercise.kind == "numeric":
        wrong = [float(right) * 2, float(right) + 1, 0]
    else:
        letters = list(exercise.options)
        sizes = [1] if exercise.kind in ("single", "error") else range(1, len(letters) + 1)
        wrong = ["".join(c) for n in sizes for c in itertools.combinations(letters, n) if "".join(c) != right]
    assert len(wrong) >= 2
    for answer in wrong:
        result = exercise.check(answer)
        assert result.status == INCORRECT and result.points == 0, (answer, result.text())
