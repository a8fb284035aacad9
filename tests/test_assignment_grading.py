"""A teacher's own assignment from source to gradebook and LMS exports (issue 37, item 3), end to
end: docs/examples/homework/hw1.source.ipynb released, the student's copy filled in four ways
(the reference, blank, two realistic wrong answers) plus one that tries to read the key, graded
by `grade --assignment` with the course's isolation, exported to nbgrader, Canvas and Gradescope.
"""

import csv
import json
import subprocess
import sys

import pytest

from support import ROOT, submissions
from support.gradescope import gradescope_tree, run_autograder

EXAMPLE = ROOT / "docs" / "examples" / "homework" / "hw1.source.ipynb"
TITLE = "Homework 1: tensors and one training step"
REFERENCE = {
    "dot": (
        "def dot(a, b):\n    if a.dim() != 1 or b.dim() != 1:\n        raise ValueError('1-D')\n"
        "    return (a * b).sum()"
    ),
    "train_step": (
        "def train_step(model, optimizer, x, y):\n    optimizer.zero_grad()\n"
        "    nn.functional.mse_loss(model(x), y).backward()\n    optimizer.step()"
    ),
}
NO_CHECK_STEP_FIRST = {  # realistic mistakes: no ValueError; step() before backward()
    "dot": "def dot(a, b):\n    return torch.dot(a, b)",
    "train_step": (
        "def train_step(model, optimizer, x, y):\n    optimizer.zero_grad()\n"
        "    loss = nn.functional.mse_loss(model(x), y)\n    optimizer.step()\n    loss.backward()"
    ),
}
NO_SUM_SUMMED_LOSS = {  # realistic mistakes: a * b not summed; the loss summed, not averaged
    "dot": (
        "def dot(a, b):\n    if a.dim() != 1 or b.dim() != 1:\n        raise ValueError('1-D')\n"
        "    return a * b"
    ),
    "train_step": (
        "def train_step(model, optimizer, x, y):\n    optimizer.zero_grad()\n"
        "    nn.functional.mse_loss(model(x), y, reduction='sum').backward()\n"
        "    optimizer.step()"
    ),
}
KEY_READER = {  # a student who looks for the key where the teacher released it
    "dot": "def dot(a, b):\n    raise ValueError(open({key!r}).read()[:3000])",
}


def filled(notebook: dict, answers: dict) -> dict:
    """The student's copy with each stub cell replaced by an answer."""
    nb = json.loads(json.dumps(notebook))
    for cell in nb["cells"]:
        text = "".join(cell["source"])
        for name, answer in answers.items():
            if cell["cell_type"] == "code" and text.startswith(f"def {name}("):
                cell["source"] = answer.splitlines(keepends=True)
    return nb


def cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "course_lib", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=cwd,
    )


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """(release folder, gradebook path, grade's process) of one class graded once."""
    base = tmp_path_factory.mktemp("homework")
    out = base / "release"
    proc = cli("assignment", "release", EXAMPLE, out)
    assert proc.returncode == 0, proc.stderr
    notebook = json.loads((out / "hw1.ipynb").read_text())
    key = str((out / "key" / "hw1.py").resolve())
    subs = base / "submissions"
    subs.mkdir()
    for name, answers in (
        ("reference", REFERENCE),
        ("blank", {}),
        ("no_check_step_first", NO_CHECK_STEP_FIRST),
        ("no_sum_summed_loss", NO_SUM_SUMMED_LOSS),
        ("key_reader", {"dot": KEY_READER["dot"].format(key=key)}),
    ):
        (subs / f"{name}.ipynb").write_text(json.dumps(filled(notebook, answers)))
    book = base / "book" / "gradebook.csv"
    args = ("--assignment", out, "--export", "nbgrader", "--export", "canvas", "--workers", 2)
    proc = submissions.run_grader(subs, book, *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, book, proc


def feedback(book, name: str) -> str:
    return (book.parent / "gradebook_feedback" / f"{name}.md").read_text()


def test_the_gradebook_has_each_submissions_points_from_the_release_s_key(graded):
    _, book, _ = graded
    rows = submissions.read_gradebook(book)
    points = {
        sub: {ex: (float(r["points"]), r["status"], r["tests_passed"]) for ex, r in row.items()}
        for sub, row in rows.items()
    }
    assert points["reference"] == {
        "hw1.dot": (3.0, "correct", "4"),
        "hw1.train_step": (4.0, "correct", "2"),
        "TOTAL": (7.0, "ok", "6"),
    }
    assert points["blank"]["hw1.dot"][1] == points["blank"]["hw1.train_step"][1] == "not attempted"
    assert points["blank"]["TOTAL"][0] == 0.0
    # four tests each (two hidden): each wrong dot fails the two of its kind
    assert points["no_check_step_first"]["hw1.dot"] == (1.5, "incorrect", "2")
    assert points["no_sum_summed_loss"]["hw1.dot"] == (1.5, "incorrect", "2")
    for sub in ("no_check_step_first", "no_sum_summed_loss"):
        assert points[sub]["hw1.train_step"] == (0.0, "incorrect", "0")
    assert points["key_reader"]["hw1.dot"][0] < 3.0


def test_feedback_names_the_mistake_and_shows_hidden_tests_by_name_only(graded):
    _, book, _ = graded
    text = feedback(book, "no_check_step_first")
    assert "it should raise ValueError" in text
    assert "refuses a matrix as the second input (hidden test): FAILED" in text
    assert "The parameters after your call" in text
    text = feedback(book, "no_sum_summed_loss")
    assert "wrong shape" in text and "keeps float64 (hidden test): FAILED" in text
    assert "refuses a matrix as the second input (hidden test): passed" in text


def test_no_graded_process_read_the_key(graded):
    out, book, _ = graded
    key = (out / "key" / "hw1.py").read_text()
    assert "dot_without_sum" in key
    text = feedback(book, "key_reader")
    assert "dot_without_sum" not in text and "BEGIN HIDDEN" not in text
    assert "No such file" in text or "Permission denied" in text or "denied" in text
    for path in book.parent.rglob("*"):
        if path.is_file():
            assert "dot_without_sum" not in path.read_text(errors="replace"), path


def test_nbgrader_and_canvas_take_the_assignment_as_a_chapter(graded):
    _, book, proc = graded
    nbgrader = list(csv.DictReader(open(book.with_name("gradebook.nbgrader.csv"))))
    assert {(r["assignment"], r["student_id"], r["score"], r["max_score"]) for r in nbgrader} == {
        ("hw1", "reference", "7", "7"),
        ("hw1", "blank", "0", "7"),
        ("hw1", "no_check_step_first", "1.5", "7"),
        ("hw1", "no_sum_summed_loss", "1.5", "7"),
        ("hw1", "key_reader", _score(nbgrader), "7"),
    }
    canvas = list(csv.reader(open(book.with_name("gradebook.canvas.csv"))))
    assert canvas[0][-1] == TITLE and canvas[1] == ["Points Possible", "", "", "", "", "7"]
    assert ["reference", "", "", "", "", "7"] in canvas
    assert book.with_name("gradebook.report.html").is_file()  # the class report, as a chapter's


def _score(rows) -> str:
    return next(r["score"] for r in rows if r["student_id"] == "key_reader")


def test_gradescope_grades_the_release_with_its_key(graded, tmp_path):
    out, _, _ = graded
    zip_path = tmp_path / "hw1.zip"
    proc = cli("gradescope", "hw1", zip_path, "--assignment", out)
    assert proc.returncode == 0, proc.stderr
    notebook = json.loads((out / "hw1.ipynb").read_text())
    root = gradescope_tree(tmp_path, zip_path, {"hw1.ipynb": filled(notebook, NO_SUM_SUMMED_LOSS)})
    assert (root / "source" / "assignment" / "key" / "hw1.py").is_file()
    assert not list((root / "source" / "course" / "notebooks").glob("*.ipynb"))
    run, results = run_autograder(root, tmp_path)
    assert run.returncode == 0 and results is not None, run.stdout[-2000:] + run.stderr[-2000:]
    scores = {t["name"]: (t["score"], t["max_score"]) for t in results["tests"]}
    assert scores == {
        "The dot product of two vectors (hw1.dot)": (1.5, 3.0),
        "One training step (hw1.train_step)": (0.0, 4.0),
    }
    assert results["score"] == 1.5 and results["output"].startswith(TITLE)
    shown = json.dumps(results)
    assert "keeps float64 (hidden test): FAILED" in shown and "dot_without_sum" not in shown


def test_no_grading_when_the_key_lies_where_graded_processes_read(graded, tmp_path):
    from course_lib.grading.isolation import check_unreachable, course_dir

    out, _, _ = graded
    with pytest.raises(ValueError, match="every graded process may read"):
        check_unreachable(f"{course_dir()}/assignments/key/hw1.py")
    check_unreachable(out / "key" / "hw1.py")
    proc = cli("grade", tmp_path, "--out", tmp_path / "b.csv", "--assignment", tmp_path)
    assert proc.returncode == 2 and "is not an assignment release" in proc.stderr
