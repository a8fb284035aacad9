"""Self-test of every answer key through the real grader
(nbgrader's validate / --invert; issue 5, item 4).

For every chapter with exercises and a notebook (found through the registry, so new chapters
join by themselves): its notebook with the reference solutions scores full marks, the notebook
as handed out scores 0, and notebooks holding the key's known-wrong answers score exactly what
the engine gives those answers in-process. One grader run grades them all.
"""

import json

import pytest

from course_lib import notebooks
from course_lib.exercises import all_exercises
from course_lib.grading.selftest import chapter_cases, engine_result
from support import submissions  # noqa: E402

CHAPTERS = sorted(
    {e.chapter.number for e in all_exercises() if notebooks.path_of(e.chapter).is_file()}
)
CASES, UNBUILDABLE = [], {}
for _number in CHAPTERS:
    try:
        CASES += chapter_cases(_number)
    except ValueError as err:  # a reference solution that cannot be pasted: its own test fails
        UNBUILDABLE[_number] = str(err)


@pytest.mark.parametrize("number", CHAPTERS)
def test_reference_solutions_can_be_pasted_into_the_notebook(number):
    assert number not in UNBUILDABLE, UNBUILDABLE.get(number)


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("selftest")
    subs = tmp / "submissions"
    subs.mkdir()
    for case in CASES:
        (subs / f"{case.name}.ipynb").write_text(json.dumps(case.notebook))
    out = tmp / "out" / "gradebook.csv"
    proc = submissions.run_grader(subs, out, "--workers", 2, "--cell-timeout", 120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    book = submissions.read_gradebook(out)
    book["feedback"] = "\n".join(
        p.read_text() for p in out.with_name("gradebook_feedback").glob("*.md")
    )
    return book


def test_every_chapter_is_self_tested():
    assert CHAPTERS and CHAPTERS[0] == "01"
    assert {c.name.split("-")[0] for c in CASES} == {
        f"ch{n}" for n in CHAPTERS if n not in UNBUILDABLE
    }


def test_known_wrong_answers_can_all_be_pasted_into_a_notebook():
    skipped = [s for case in CASES for s in case.skipped]
    assert not skipped, (
        "write these wrong answers as plain functions so the grader self-test covers them: "
        f"{skipped}"
    )


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_grader_verdict_matches_the_key(book, case):
    rows = book[case.name]
    got = {
        ex: (row["status"], round(float(row["points"]), 3))
        for ex, row in rows.items()
        if ex != "TOTAL"
    }
    assert got == case.expected
    assert float(rows["TOTAL"]["points"]) == pytest.approx(
        sum(p for _, p in case.expected.values()), abs=0.01
    )
    if case.name.endswith("-reference"):
        assert rows["TOTAL"]["status"] == "ok", rows["TOTAL"]["detail"]
        assert float(rows["TOTAL"]["points"]) == float(rows["TOTAL"]["max_points"])
    if case.name.endswith("-blank"):
        assert float(rows["TOTAL"]["points"]) == 0


def test_feedback_shows_no_hidden_test_values(book):
    """What the hidden tests say about the key's wrong
    answers (values included) reaches no student."""
    hidden, visible = set(), set()
    for ex in all_exercises():
        if ex.kind != "function" or not notebooks.path_of(ex.chapter).is_file():
            continue
        for index in range(len(ex.key().wrong_answers)):
            result = engine_result(ex.id, index)  # ex.check(wrong, hidden tests), once per run
            for i, outcome in enumerate(result.tests):
                said = {s for s in (outcome.message, outcome.expected, outcome.got) if len(s) >= 12}
                (visible if i < len(ex.tests) else hidden).update(said)
    secrets = {
        h for h in hidden if not any(h in v for v in visible)
    }  # what only a hidden test says
    assert secrets
    assert not [s for s in secrets if s in book["feedback"]]
