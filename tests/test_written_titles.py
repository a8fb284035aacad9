"""Written answers by their declared title (issue 39): the feedback file and Gradescope's
results.json name each answer by the title its chapter declares, read from written.json (no
chapter module imported), and results.json lists each answer as read by the teacher, no points,
in the notebook's language."""

import json
import subprocess
import sys

import pytest

from course_lib.classroom import autograder
from course_lib.exercises import index
from course_lib.grading import feedback

ANSWER = "backward() adds into .grad"
SETTINGS = {"chapter": "03", "title": "The training template"}


def record(lang: str = "en", chapter: str = "03") -> dict:
    """A chapter's graded record with two written answers: one declared, one not."""
    return {
        "submission": "ann",
        "points": 0,
        "max_points": 3,
        "language": lang,
        "run": {},
        "texts": {"zero_grad_place": ANSWER, "my_own": "a teacher's question"},
        "exercises": [
            {
                "exercise": f"ch{chapter}.train_one_epoch",
                "title": "Train one epoch",
                "status": "not attempted",
                "points": 0,
                "max_points": 3,
                "tests": [],
            }
        ],
    }


ROWS = [
    {"exercise": "ch03.train_one_epoch", "points": "0", "max_points": "3", "detail": ""},
    {"exercise": "TOTAL", "points": "0", "max_points": "3", "status": "graded", "flags": ""},
]


def test_written_json_is_the_registrys_declarations():
    assert index.build_written() == json.loads(index.WRITTEN_PATH.read_text()), (
        "written.json is stale: run python -m course_lib.exercises.index"
    )


def test_the_feedback_file_names_each_answer_by_its_declared_title():
    text = feedback.render(record())
    assert "### Article B's missing \\`zero\\_grad()\\` (zero\\_grad\\_place)" in text
    assert "### my\\_own" in text


def test_the_title_is_the_notebooks_language():
    text = feedback.render(record("zh"))
    assert "### 文章 B 漏掉的 \\`zero\\_grad()\\` (zero\\_grad\\_place)" in text


def test_another_chapters_answer_of_that_name_has_no_title():
    assert "### zero\\_grad\\_place" in feedback.render(record(chapter="01"))


def test_the_title_is_read_without_importing_a_chapter():
    code = (
        "import sys\n"
        "from course_lib.grading import feedback\n"
        "from tests.test_written_titles import record\n"
        "assert 'Article B' in feedback.render(record())\n"
        "chapters = ('course_lib.ch0', 'course_lib.key')\n"
        "print(sorted(m for m in sys.modules if m.startswith(chapters)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "lang, name, note",
    [
        ("en", "Written answer: Article B's missing `zero_grad()` (zero_grad_place)", "teacher"),
        ("zh", "文字作答：文章 B 漏掉的 `zero_grad()` (zero_grad_place)", "由老师阅读"),
    ],
)
def test_results_json_lists_each_written_answer_as_read_by_the_teacher(lang, name, note):
    data = autograder.results(ROWS, record(lang), SETTINGS)
    written = data["tests"][1:]
    assert [t["name"] for t in written][1] == name
    assert len(written) == 2 and written[0]["name"].endswith("my_own")
    for test in written:
        assert note in test["output"] and "score" not in test and "max_score" not in test
        assert test["output_format"] == "text"
    assert ANSWER in written[1]["output"] and [t["number"] for t in written] == ["2", "3"]
    assert data["score"] == 0.0
