"""Handing out with nbgitpuller: the student bundle pulled from a git repository by nbgitpuller's
own code, then pulled again after the teacher changed it, without losing the student's work
(issue 22, item 2). The link itself is followed on a real hub in test_class_on_jupyterhub.py.
"""

import json
import subprocess
import sys
from urllib.parse import parse_qs, urlsplit

import nbformat

from course_lib.classroom.collect import COURSE_FOLDER
from course_lib.grading.release import find_leaks

from .conftest import course_repo, git, readme_link

NB = "notebooks/01_device_check.ipynb"


def pull(gitpuller, repo, target):
    lines = list(gitpuller(f"file://{repo}", str(target), branch="main", depth=1).pull())
    return "".join(lines)


def edit(path, change):
    """Change a notebook as JupyterLab saves it (nbformat, sorted keys, indent 1)."""
    nb = nbformat.read(path, as_version=4)
    change(nb)
    nbformat.write(nb, path)


def stub_cell(nb, name):
    return next(c for c in nb.cells if c.cell_type == "code" and f"def {name}(" in c.source)


def test_readme_link_pulls_the_bundle_where_the_course_expects_it():
    query = parse_qs(urlsplit(readme_link()).query)
    assert query["targetpath"] == [COURSE_FOLDER] and query["branch"] == ["main"]
    assert query["urlpath"] == [f"lab/tree/{COURSE_FOLDER}/{NB}"]


def test_pull_then_pull_again_keeps_the_students_edits(gitpuller, tmp_path):
    repo = course_repo(tmp_path / "teacher")
    home = tmp_path / "home" / "ada"
    home.mkdir(parents=True)
    target = home / COURSE_FOLDER
    pull(gitpuller, repo, target)
    assert (target / NB).is_file() and (target / "course_lib" / "__init__.py").is_file()
    assert not (target / "course_lib" / "key").exists() and find_leaks(target) == []

    # The student works: an answer, a quiz answer, outputs; a scratch notebook; a file of their own
    # named as the teacher's next file; a deleted notebook.
    answer = (
        "def choose_device():\n    return torch.device('cuda' if torch.cuda.is_available() else "
        "'cpu')"
    )

    def work(nb):
        stub_cell(nb, "choose_device").source = answer
        stub_cell(nb, "choose_device").outputs = [
            nbformat.v4.new_output("stream", text="my output\n")
        ]

    edit(target / NB, work)
    (target / "notebooks" / "scratch.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook()))
    (target / "notebooks" / "errata.md").write_text("my own notes\n")
    (target / "notebooks" / "02_same_device_rule.ipynb").unlink()

    # The teacher fixes the chapter's first text cell, the stub of another exercise (the student's
    # version of that stays), a course_lib file, and adds errata.md.
    first_text = {}

    def fix(nb):
        cell = next(c for c in nb.cells if c.cell_type == "markdown")
        cell.source += "\n\nErratum: this chapter was updated."
        first_text["id"] = cell.id
        stub_cell(
            nb, "choose_device"
        ).source = "def choose_device():\n    raise NotImplementedError  # (fixed)"

    edit(repo / NB, fix)
    (repo / "notebooks" / "errata.md").write_text("the teacher's errata\n")
    (repo / "course_lib" / "__init__.py").write_text(
        (repo / "course_lib" / "__init__.py").read_text() + "\n# updated by the teacher\n"
    )
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "errata", cwd=repo)

    log = pull(gitpuller, repo, target)
    nb = nbformat.read(target / NB, as_version=4)
    assert stub_cell(nb, "choose_device").source == answer  # the student's answer wins (-Xours)
    assert stub_cell(nb, "choose_device").outputs[0]["text"] == "my output\n"
    assert (
        "Erratum: this chapter was updated."
        in next(c for c in nb.cells if c.id == first_text["id"]).source
    )
    assert "# updated by the teacher" in (target / "course_lib" / "__init__.py").read_text()
    assert (target / "notebooks" / "errata.md").read_text() == "the teacher's errata\n"
    renamed = [p for p in (target / "notebooks").glob("errata__*.md")]
    assert len(renamed) == 1 and renamed[0].read_text() == "my own notes\n", (
        log
    )  # renamed, not lost
    assert (target / "notebooks" / "scratch.ipynb").is_file()
    assert (
        target / "notebooks" / "02_same_device_rule.ipynb"
    ).is_file()  # a deleted notebook comes back
    assert "Automatic commit by nbgitpuller" in git("log", "--format=%s", cwd=target)

    # and the teacher's collect finds the notebook where the link put it
    out = tmp_path / "submissions"
    proc = subprocess.run(
        [sys.executable, "-m", "course_lib", "collect", home.parent, out, "--chapter", "01"]
        + ["--no-owner-check"],  # every home here belongs to the user running the tests
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    collected = json.loads((out / "ada.ipynb").read_text())
    assert any(answer in "".join(c["source"]) for c in collected["cells"])
