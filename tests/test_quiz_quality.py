"""Every quiz can be answered, cannot be guessed from its shape, and teaches when answered wrong.

Parametrized over the registry (a new quiz is covered). Issue 9.1 and 12.2:
- each quiz is shown with `ch.<name>.ask()` before its answer cell, or its question and every
  option are written in the notebook before it;
- in single-choice and "error" quizzes the right option is not the longest by more than 10%,
  over the course it is the strictly longest option in at most a third of them (and the strictly
  shortest in at most a third: "never the longest" would be a rule to game too), and no letter
  is right in more than 40% of them (issue 15.4);
- a wrong answer gets more than "Not quite.": a `why` for the option, or a hint; no `why` is
  ever attached to a right option.
"""

import collections
import re

import pytest

from course_lib import notebooks
from course_lib.exercises import all_exercises
from course_lib.text import without_marks
from support.notebook_cells import chapter_notebook

QUIZZES = [e for e in all_exercises() if e.kind != "function"]
CHOICE = [q for q in QUIZZES if q.kind in ("single", "error")]
ids = lambda q: q.id

LONGEST_RIGHT = 1.1  # the right option may be at most this much longer than the longest wrong one
EXTREME_SHARE = (
    1 / 3
)  # the right option may be the strictly longest (or shortest) in at most this share
MOST_OFTEN = 0.40  # no letter may be the right one in more of the course's single/error quizzes


def cells(quiz) -> list:
    return notebooks.cells(chapter_notebook(quiz))


def answer_cell(quiz, notebook_cells) -> int:
    """Index of the cell `ch.<name>.check(answer_<name>)` (or `answer_<name> = ...`)."""
    pattern = re.compile(rf"\.{quiz.name}\.check\(|^answer_{quiz.name}\s*=", re.M)
    found = [
        i
        for i, c in enumerate(notebook_cells)
        if c.cell_type == "code" and pattern.search(c.source)
    ]
    assert found, (
        f"{quiz.id}: no cell `answer_{quiz.name} = ...` / `ch.{quiz.name}.check(...)` in "
        f"{chapter_notebook(quiz).name}"
    )
    return found[0]


def normal(text: str) -> str:
    """Text as read, not as typed: no Markdown marks (`*_\\), one space, lower case."""
    text = re.sub(r"[`*_\\]", "", without_marks(str(text)))
    return " ".join(text.split()).lower()


def right_letters(quiz) -> str:
    if quiz.kind == "error":
        return quiz.right_answer()
    return quiz.normalize(quiz.key().answer)


@pytest.mark.parametrize("quiz", QUIZZES, ids=ids)
def test_quiz_is_shown_or_stated_before_its_answer_cell(quiz):
    notebook_cells = cells(quiz)
    answer = answer_cell(quiz, notebook_cells)
    asked = re.compile(rf"\.{quiz.name}\.ask\(\)")
    if any(c.cell_type == "code" and asked.search(c.source) for c in notebook_cells[: answer + 1]):
        return
    before = normal("\n".join(c.source for c in notebook_cells[: answer + 1]))
    missing = [] if normal(quiz.prompt) in before else [f"the question {quiz.prompt!r}"]
    missing += [f"option {k}) {v!r}" for k, v in quiz.options.items() if normal(v) not in before]
    assert not missing, (
        f"{quiz.id} cannot be answered in {chapter_notebook(quiz).name}: no "
        f"`ch.{quiz.name}.ask()` cell before its answer cell (cell {answer}), and the cells "
        "before it do not state "
    ) + "; ".join(missing)


@pytest.mark.parametrize("quiz", CHOICE, ids=ids)
def test_right_option_is_not_given_away_by_its_length(quiz):
    right = right_letters(quiz)
    assert right, f"{quiz.id}: no right option found"
    length = lambda letter: len(without_marks(quiz.options[letter]))
    longest_wrong = max(length(k) for k in quiz.options if k != right)
    assert length(right) <= LONGEST_RIGHT * longest_wrong, (
        f"{quiz.id}: the right option {right}) has {length(right)} characters, the longest "
        f"wrong one {longest_wrong}: picking the longest option wins without reading. Write "
        f"the wrong options as detailed as the right one (at most {LONGEST_RIGHT:g} x)."
    )


def option_lengths(quiz) -> tuple:
    """(the right option's length, the longest and the
    shortest wrong one's), Markdown marks removed."""
    right = right_letters(quiz)
    wrong = [len(without_marks(v)) for k, v in quiz.options.items() if k != right]
    return len(without_marks(quiz.options[right])), max(wrong), min(wrong)


@pytest.mark.parametrize(
    "kinds", [("single",), ("single", "error")], ids=["single", "single+error"]
)
@pytest.mark.parametrize("extreme", ["longest", "shortest"])
def test_the_right_option_is_rarely_the_longest_or_the_shortest(kinds, extreme):
    quizzes = [q for q in CHOICE if q.kind in kinds]
    lengths = {q.id: option_lengths(q) for q in quizzes}
    hits = sorted(
        qid
        for qid, (right, longest, shortest) in lengths.items()
        if (right > longest if extreme == "longest" else right < shortest)
    )
    allowed = int(EXTREME_SHARE * len(quizzes))
    assert len(hits) <= allowed, (
        f"the right option is the strictly {extreme} in {len(hits)} of {len(quizzes)} "
        f"{'/'.join(kinds)} quizzes (at most {allowed} allowed): {', '.join(hits)}. Picking "
        f"the {extreme} option must not win: rewrite a wrong option of some of them to be "
        f"{'longer' if extreme == 'longest' else 'shorter'}."
    )


def test_right_letters_are_spread_over_the_course():
    by_letter = collections.defaultdict(list)
    for quiz in CHOICE:
        by_letter[right_letters(quiz)].append(quiz.id)
    total = sum(len(v) for v in by_letter.values())
    spread = ", ".join(f"{k}: {len(v)}" for k, v in sorted(by_letter.items()))
    too_often = {k: v for k, v in by_letter.items() if len(v) > MOST_OFTEN * total}
    assert not too_often, (
        "".join(
            f"option {k}) is the right one in {len(v)} of {total} single/error quizzes (more than "
            f"{MOST_OFTEN:.0%}): {', '.join(v)}. "
            for k, v in too_often.items()
        )
        + f"Right letters: {spread}."
    )


@pytest.mark.parametrize("quiz", [q for q in QUIZZES if q.kind != "numeric"], ids=ids)
def test_no_why_for_a_right_option(quiz):
    wrongly = sorted(set(right_letters(quiz)) & set(quiz.why))
    assert not wrongly, (
        f"{quiz.id}: why= explains option(s) {wrongly}, which are right; a why is "
        f"shown to a wrong answer that picks the option, so it would confuse a right one"
    )


@pytest.mark.parametrize("quiz", QUIZZES, ids=ids)
def test_a_wrong_answer_learns_something(quiz):
    """Every wrong answer gets a why or a hint, never a bare 'Not quite.'."""
    if quiz.hints:
        return
    right = set(right_letters(quiz)) if quiz.kind != "numeric" else set()
    unexplained = sorted(set(quiz.options) - right - set(quiz.why))
    assert quiz.kind in ("single", "error") and not unexplained, (
        f"{quiz.id}: a wrong answer would read only 'Not quite.': give the quiz hints=[...]"
        + (f" or a why for option(s) {unexplained}" if quiz.kind in ("single", "error") else "")
    )
