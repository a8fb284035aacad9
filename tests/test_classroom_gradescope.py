"""The Gradescope autograder: `gradescope CHAPTER
OUT.zip` and its run_autograder (issue 22, item 4).

run_autograder runs here on a temporary tree laid out as Gradescope lays out /autograder
(source/ = the zip, submission/ = the student's files, results/), its root moved with
COURSE_AUTOGRADER_ROOT. The teacher's editable install is hidden from it, so it grades with
the course in the zip alone, as on Gradescope.
"""

import json
import stat
import subprocess
import sys
import zipfile

import pytest

from course_lib.classroom.autograder import exercise_output
from course_lib.exercises import all_exercises
from course_lib.grading.release import secret_lines
from course_lib.grading.selftest import chapter_cases
from support import (
    ROOT,
    submissions,  # noqa: E402
)
from support.gradescope import gradescope_tree, run_autograder

FORGER = """import json, os
root = "{root}"
for target, text in (("results/results.json", json.dumps({"score": 999, "tests": []})),
                     ("source/autograder.json", "{}"), ("run_autograder", "echo forged")):
    try:
        with open(os.path.join(root, target), "w") as f:
            f.write(text)
        print("WROTE", target)
    except OSError as err:
        print("REFUSED", target, type(err).__name__)
"""


def cli(*args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "course_lib", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory):
    out = tmp_path_factory.mktemp("gradescope") / "ch01-autograder.zip"
    proc = cli("gradescope", "01", out)
    assert proc.returncode == 0, proc.stderr
    assert "upload it to Gradescope only" in proc.stdout
    return out


@pytest.fixture(scope="module")
def cases():
    return {c.name: c for c in chapter_cases("01")}


def grade_on_gradescope(tmp_path, zip_path, files):
    root = gradescope_tree(tmp_path, zip_path, files)
    proc, results = run_autograder(root, tmp_path)
    assert proc.returncode == 0 and results is not None, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert (
        f"course_lib from {root / 'source' / 'course' / 'course_lib'}" in proc.stdout
    )  # the zip's, not ours
    return root, proc, results


def scores(results) -> dict:
    return {
        t["name"].rsplit("(", 1)[1].rstrip(")"): (t["score"], t["max_score"])
        for t in results["tests"]
    }


def test_zip_is_laid_out_as_gradescopes_spec_asks(autograder_zip):
    with zipfile.ZipFile(autograder_zip) as zf:
        names = set(zf.namelist())
        modes = {i.filename: i.external_attr >> 16 for i in zf.infolist()}
        setup = zf.read("setup.sh").decode()
        settings = json.loads(zf.read("autograder.json"))
    assert {
        "setup.sh",
        "run_autograder",
        "autograder.json",
    } <= names  # at the root, not in a folder
    assert modes["setup.sh"] & stat.S_IXUSR and modes["run_autograder"] & stat.S_IXUSR
    assert settings["chapter"] == "01" and settings["notebook"] == "01_device_check.ipynb"
    assert (
        "course/course_lib/key/ch01_device_check.py" in names
        and "course/course_lib/grading/grader.py" in names
    )
    assert "course/notebooks/01_device_check.ipynb" in names
    assert "course/notebooks/02_same_device_rule.ipynb" not in names
    assert not [n for n in names if n.endswith(".pyc") or "__pycache__" in n]
    pinned = next(
        s for s in (ROOT / "course.py").read_text().splitlines() if s.startswith("TORCH_VERSION")
    )
    assert f'TORCH_VERSION="{pinned.split(chr(34))[1]}"' in setup and '"nbformat>=5.9"' in setup
    assert setup.startswith("#!/usr/bin/env bash")
    assert subprocess.run(["bash", "-n"], input=setup, text=True).returncode == 0  # it parses


def test_no_zip_for_a_chapter_that_does_not_exist(tmp_path):
    out = tmp_path / "ch99.zip"
    proc = cli("gradescope", "99", out)
    assert proc.returncode == 2 and "has no chapter '99'" in proc.stderr and "01, 02" in proc.stderr
    assert not out.exists() and not list(tmp_path.iterdir())


def test_reference_gets_full_marks_with_hidden_tests_named_only(tmp_path, autograder_zip, cases):
    _, _, results = grade_on_gradescope(
        tmp_path, autograder_zip, {"01_device_check.ipynb": cases["ch01-reference"].notebook}
    )
    expected = {ex_id: points for ex_id, (_, points) in cases["ch01-reference"].expected.items()}
    assert {k: s for k, (s, _) in scores(results).items()} == expected
    assert results["score"] == sum(expected.values()) == 13
    assert all(
        t["score"] == t["max_score"] and t["visibility"] == "visible" for t in results["tests"]
    )
    assert "(hidden test): passed" in json.dumps(
        results
    )  # the key's hidden tests ran, from the zip


def test_blank_notebook_gets_zero(tmp_path, autograder_zip, cases):
    _, _, results = grade_on_gradescope(
        tmp_path, autograder_zip, {"notebook.ipynb": cases["ch01-blank"].notebook}
    )
    assert results["score"] == 0 and all(t["score"] == 0 for t in results["tests"])
    assert "still raises NotImplementedError" in json.dumps(results)


def test_known_wrong_answers_get_the_keys_points_and_no_hidden_value(
    tmp_path, autograder_zip, cases
):
    case = cases["ch01-wrong01"]
    _, _, results = grade_on_gradescope(
        tmp_path, autograder_zip, {"01_device_check.ipynb": case.notebook}
    )
    assert scores(results) == {
        ex_id: (points, float(next(e.points for e in all_exercises() if e.id == ex_id)))
        for ex_id, (_, points) in case.expected.items()
    }
    assert results["score"] == pytest.approx(sum(p for _, p in case.expected.values()))
    text = json.dumps(results)
    assert "(hidden test): FAILED" in text
    hidden_only = set()
    for (
        ex
    ) in all_exercises():  # what only the hidden tests say in-process must not reach the student
        if ex.chapter.number == "01" and ex.kind == "function" and ex.key().wrong_answers:
            result = ex.check(ex.key().wrong_answers[0].function, include_hidden=True, record=False)
            public = " ".join(
                line for t in result.tests if not t.hidden for line in t.public_lines()
            )
            hidden_only |= {
                s
                for t in result.tests
                if t.hidden and not t.passed
                for s in (t.message, t.expected, t.got)
                if len(s) >= 8 and s not in public
            }
    assert hidden_only, "no hidden-only message to look for: the test would prove nothing"
    leaked = [
        s for s in hidden_only | set(secret_lines()) if s in text or json.dumps(s)[1:-1] in text
    ]
    assert not leaked, leaked


def test_hostile_notebook_cannot_read_the_key_in_source_or_forge_results(
    tmp_path, autograder_zip, cases
):
    root = tmp_path / "autograder"
    attack = submissions.build(
        ROOT / "tests" / "fixtures" / "grading" / "attack2_key_read.txt",
        submissions.bases(),
        {"SUBMISSIONS": root / "submission", "OUT": root / "source"},
    ).decode()
    nb = json.loads(attack)
    nb["cells"].append(
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": FORGER.replace("{root}", str(root)),
        }
    )
    _, proc, results = grade_on_gradescope(tmp_path, autograder_zip, {"01_device_check.ipynb": nb})
    assert set(results) >= {"score", "tests", "output"} and results["score"] == 0, results
    assert all(t["score"] == 0 for t in results["tests"])  # no quiz answered from the key
    assert json.loads((root / "source" / "autograder.json").read_text())["chapter"] == "01"
    assert "exec" in (root / "run_autograder").read_text()


@pytest.mark.parametrize(
    "files, says",
    [
        ({}, "holds no notebook"),
        (
            {"a.ipynb": "{}", "b.ipynb": "{}"},
            "holds 2 notebooks (a.ipynb, b.ipynb). Upload only your 01_device_check",
        ),
    ],
)
def test_a_submission_without_one_notebook_is_told_what_to_upload(
    tmp_path, autograder_zip, files, says
):
    root = gradescope_tree(tmp_path, autograder_zip, files)
    proc, results = run_autograder(root, tmp_path)
    assert proc.returncode == 0 and results is not None, proc.stderr[-2000:]
    assert results["score"] == 0 and says in results["output"]


def test_two_notebooks_one_named_as_the_chapter_is_graded(tmp_path, autograder_zip, cases):
    _, _, results = grade_on_gradescope(
        tmp_path,
        autograder_zip,
        {
            "01_device_check.ipynb": cases["ch01-reference"].notebook,
            "scratch.ipynb": cases["ch01-blank"].notebook,
        },
    )
    assert results["score"] == 13


def test_hidden_tests_feedback_never_reaches_the_output():
    """Even if the grader's record carried a hidden
    test's message, the student's text has none of it."""
    exercise = {
        "detail": "Some tests failed",
        "tests": [
            {
                "name": "visible one",
                "hidden": False,
                "passed": False,
                "feedback": "Expected 3 Got 4",
            },
            {
                "name": "the secret one",
                "hidden": True,
                "passed": False,
                "feedback": "Expected SECRET-VALUE-42",
            },
        ],
    }
    text = exercise_output(exercise)
    assert "Expected 3 Got 4" in text and "the secret one (hidden test): FAILED" in text
    assert "SECRET-VALUE-42" not in text
