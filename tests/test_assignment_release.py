"""A teacher's assignment from one source notebook (issue 37, items 1-2): `assignment release`
derives the student's copy, the key and the index after proving the source right; `assignment
check` names what drifted; a bad source is refused with the cell and the reason."""

import json
import os
import subprocess
import sys

import pytest

from course_lib.authoring import release
from course_lib.authoring.source import SourceError
from course_lib.exercises import CORRECT, INCORRECT, NOT_ATTEMPTED
from support import ROOT

EXAMPLE = ROOT / "docs" / "examples" / "homework" / "hw1.source.ipynb"


def source_with(tmp_path, change=None, name="hw1.source.ipynb"):
    """A copy of the example source, `change(cells)` applied to its cells' texts (by id)."""
    nb = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    texts = {c["id"]: "".join(c["source"]) for c in nb["cells"]}
    if change:
        change(texts)
    cells = []
    for cell in nb["cells"]:
        if cell["id"] in texts:
            cell["source"] = texts[cell["id"]].splitlines(keepends=True)
            cells.append(cell)
    for extra in [k for k in texts if k not in {c["id"] for c in nb["cells"]}]:
        kind = "markdown" if extra.startswith("md") else "code"
        cell = {"cell_type": kind, "id": extra, "metadata": {}, "source": texts[extra]}
        if kind == "code":
            cell.update(outputs=[], execution_count=None)
        cells.append(cell)
    nb["cells"] = cells
    path = tmp_path / name
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def derived():
    return release.derive(EXAMPLE)


def student_cells(derived) -> list:
    nb = json.loads(derived.files["hw1.ipynb"])
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


def test_the_student_copy_has_the_courses_stub_and_no_solution_or_hidden_text(derived):
    text = derived.files["hw1.ipynb"]
    code = student_cells(derived)
    assert "def dot(a, b):\n    # YOUR CODE HERE\n    raise NotImplementedError" in code
    for secret in ("(a * b).sum()", "dot_without_sum", "hw.hidden", "hw.wrong", "keeps float64"):
        assert secret not in text, secret
    assert "###" not in text and '"outputs": []' in text and 'execution_count": null' in text
    assert derived.files["key/hw1.py"].count("### BEGIN HIDDEN TESTS") == 2
    assert "dot_without_sum" in derived.files["key/hw1.py"]


def test_the_index_entry_is_the_grader_s_row(derived):
    data = json.loads(derived.files["index.json"])
    assert data["assignment"] == {
        "name": "hw1",
        "title": "Homework 1: tensors and one training step",
        "notebook": "hw1.ipynb",
        "key": "key/hw1.py",
        "source": "hw1.source.ipynb",
    }
    assert [(r["id"], r["chapter"], r["kind"], r["points"]) for r in data["exercises"]] == [
        ("hw1.dot", "hw1", "function", 3),
        ("hw1.train_step", "hw1", "function", 4),
    ]


def _run_student_copy(derived, answers: dict) -> dict:
    """The student's copy run as a kernel would (no key anywhere), `answers` put in place of
    the stubs; its namespace."""
    space = {"__name__": "__student__"}
    for code in student_cells(derived):
        for name, answer in answers.items():
            if code.startswith(f"def {name}("):
                code = answer
        if ".check(" in code or ".hint()" in code:
            continue
        exec(compile(code, "<student>", "exec"), space)
    return space


def test_the_check_in_the_student_copy_runs_the_visible_tests_and_hints(derived):
    right = "def dot(a, b):\n    if a.dim() != 1:\n        raise ValueError\n    return a @ b"
    space = _run_student_copy(derived, {"dot": right})
    hw = space["hw"]
    assert hw.dot.key() is None  # nothing of the key in the student's kernel
    result = hw.dot.check(space["dot"], record=False)
    assert result.status == CORRECT and "hidden tests" in result.summary
    assert [o.name for o in result.tests] == ["two short vectors", "refuses a matrix"]
    wrong = _run_student_copy(derived, {"dot": "def dot(a, b):\n    return a * b"})
    result = wrong["hw"].dot.check(wrong["dot"], record=False)
    assert result.status == INCORRECT
    assert "wrong shape" in " ".join(result.tests[0].public_lines())
    blank = _run_student_copy(derived, {})
    assert blank["hw"].dot.check(blank["dot"], record=False).status == NOT_ATTEMPTED
    assert blank["hw"].train_step.check(blank["train_step"], record=False).status == NOT_ATTEMPTED
    assert "Multiply element by element" in blank["hw"].dot.next_hint()


def test_release_writes_the_files_the_key_for_the_teacher_only_and_check_finds_drift(tmp_path):
    out = tmp_path / "out"
    release.release(EXAMPLE, out)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "hw1.ipynb",
        "index.json",
        "key/hw1.py",
    ]
    assert os.stat(out / "key").st_mode & 0o777 == 0o700
    assert os.stat(out / "key" / "hw1.py").st_mode & 0o777 == 0o600
    assert release.drift(EXAMPLE, out) == []
    (out / "hw1.ipynb").write_text((out / "hw1.ipynb").read_text().replace("dot", "dots"))
    (out / "key" / "hw1.py").unlink()
    assert release.drift(EXAMPLE, out) == [("hw1.ipynb", "differs"), ("key/hw1.py", "missing")]
    edited = source_with(tmp_path, lambda t: t.update(a06="hw.dot.hint()\nhw.dot.hint()"))
    release.release(edited, out)
    assert release.drift(EXAMPLE, out) == [("hw1.ipynb", "differs")]


def _replace(cell: str, old: str, new: str):
    def change(texts):
        assert old in texts[cell], (cell, old)
        texts[cell] = texts[cell].replace(old, new)

    return change


STUB_PASSES = """def dot(a, b):
    if a.dim() != 1 or b.dim() != 1:
        raise ValueError("dot needs two 1-D tensors")
    try:
        ### BEGIN SOLUTION
        return (a * b).sum()
        ### END SOLUTION
    except NotImplementedError:  # the stub's own error, caught: the stub would pass
        return a @ b"""


@pytest.mark.parametrize(
    "change, words",
    [
        (_replace("a04", "    ### END SOLUTION", ""), "cell 5: ### BEGIN SOLUTION has no ### END"),
        (_replace("a04", "    ### BEGIN SOLUTION\n", ""), "### END SOLUTION without its"),
        (
            _replace("a04", "    return", "    ### BEGIN SOLUTION\n    return"),
            "### BEGIN SOLUTION inside ### BEGIN SOLUTION",
        ),
        (_replace("a02", "## 1.", "### BEGIN SOLUTION\n## 1."), "cell 3: markers belong in code"),
        (_replace("a01", "### ASSIGNMENT\n", ""), "has 0 cells that start with ### ASSIGNMENT"),
        (_replace("a04", "### BEGIN SOLUTION", "#### BEGIN  SOLUTION"), "must stand alone"),
        (
            _replace(
                "a03",
                "### BEGIN HIDDEN TESTS\n",
                "### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n### BEGIN HIDDEN TESTS\n",
            ),
            "### BEGIN SOLUTION belongs in a function's cell",
        ),
        (
            _replace(
                "a03",
                'generic.Raises("ValueError", args=(torch.ones(2, 2), torch.ones(2))),',
                "lambda candidate: None,",
            ),
            "test 'refuses a matrix' (Inline) is of a type the grader cannot split",
        ),
        (_replace("a04", "def dot(", "def dot_product("), "no solution cell defines"),
        (lambda t: t.update(a04=STUB_PASSES), "the student's stub would not be 'not attempted'"),
        (
            _replace("a04", 'raise ValueError("dot needs two 1-D tensors")', "pass"),
            "the reference solution fails its test 'refuses a matrix'",
        ),
        (
            _replace("a03", 'feedback="wrong shape"', 'feedback="the shape of a scalar"'),
            "does not say 'the shape of a scalar'",
        ),
        (
            _replace("a03", "return a * b\n", "return (a * b).sum()\n"),
            "the wrong answer 'multiplies without summing' passes every test",
        ),
        (
            lambda t: t.update(a08=t["a08"].split("### BEGIN HIDDEN TESTS")[0].rstrip() + "\n"),
            "exercise hw1.train_step: no known-wrong answer",
        ),
        (
            _replace("a03", "hw.function_exercise(", "hw.function_exercise(\n    nme=1,\n"),
            "cell 4 failed: SyntaxError",
        ),
    ],
)
def test_a_bad_source_is_refused_with_its_cell_and_reason(tmp_path, change, words):
    with pytest.raises(SourceError) as err:
        release.derive(source_with(tmp_path, change))
    assert words in str(err.value)


def cli(*args, lang="en"):
    return subprocess.run(
        [sys.executable, "-m", "course_lib", "assignment", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, COURSE_LANG=lang),
    )


def test_the_command_line_releases_checks_and_refuses(tmp_path):
    out = tmp_path / "out"
    proc = cli("release", EXAMPLE, out)
    assert proc.returncode == 0, proc.stderr
    assert "hand out hw1.ipynb" in proc.stdout and (out / "key" / "hw1.py").is_file()
    assert cli("check", EXAMPLE, out).returncode == 0
    (out / "index.json").write_text("{}")
    proc = cli("check", EXAMPLE, out)
    assert proc.returncode == 1 and "index.json: differs" in proc.stdout
    bad = source_with(tmp_path, _replace("a04", "    ### END SOLUTION", ""), "bad.ipynb")
    proc = cli("release", bad, tmp_path / "bad")
    assert proc.returncode == 2 and "nothing released" in proc.stderr
    assert "has no ### END SOLUTION" in proc.stderr and not (tmp_path / "bad").exists()


def test_a_chinese_course_releases_the_same_files_and_says_so_in_chinese(tmp_path):
    proc = cli("release", EXAMPLE, tmp_path / "out", lang="zh")  # the proof reads English feedback
    assert proc.returncode == 0, proc.stderr
    assert "把 hw1.ipynb 发给学生" in proc.stdout
    assert release.drift(EXAMPLE, tmp_path / "out") == []
