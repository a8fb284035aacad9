"""The student bundle: no solutions or hidden tests in it
(source or bytecode), and it still works (issue 5, item 1)."""

import json
import subprocess
import sys

import pytest

from course_lib.exercises import all_exercises
from course_lib.grading.release import find_leaks, release, secret_lines
from course_lib.grading.selftest import function_source
from support import NOTEBOOKS, ROOT

# Runs inside the bundle (its course_lib first on sys.path): every notebook in-process, then
# what a student sees of each exercise. Prints one JSON line.
# This checkout is installed in editable mode, whose import hook would find the teacher's
# course_lib.key from anywhere; a student's machine has no such thing, so drop the hook.
NO_TEACHER = (
    "import sys; sys.meta_path[:] = [f for f in sys.meta_path "
    "if not getattr(f, '__module__', '').startswith('__editable__')]\n"
)
BUNDLE_CHECK = (
    NO_TEACHER
    + r"""
import importlib.util, json, os, sys
bundle, cells_py, solutions = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
sys.path.insert(0, bundle)
spec = importlib.util.spec_from_file_location("bundle_cells", cells_py)
cells = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cells)
report = {"errors": {}, "exercises": {}}
for name in sorted(os.listdir(os.path.join(bundle, "notebooks"))):
    if not name.endswith(".ipynb"):
        continue
    os.chdir(os.path.join(bundle, "notebooks"))
    with open(name, "rb") as f:
        code = cells.code_cells(cells.read_cells(f.read()))
    stdout = sys.stdout
    sys.stdout = cells.CappedStream()
    outcomes = cells.run_notebook_cells(code, cells.notebook_namespace())
    sys.stdout = stdout
    report["errors"][name] = [o for o in outcomes if o["status"] != "ok"]
import course_lib
from course_lib.exercises import all_exercises
report["course_lib"] = course_lib.__file__
for ex in all_exercises():
    row = {"key": ex.key() is not None}
    if ex.kind == "function":
        row["solution"] = ex.solution_source()
        namespace = {}
        import torch
        namespace.update(torch=torch, nn=torch.nn)
        exec(solutions[ex.id], namespace)
        result = ex.check(namespace[ex.name], record=False)
        row.update(status=result.status, tests=len(result.tests), visible=len(ex.tests),
                   hidden_not_run=result.hidden_not_run)
    report["exercises"][ex.id] = row
print("REPORT " + json.dumps(report))
"""
)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("release") / "student-bundle"
    summary = release(out)
    assert summary["notebooks"] == len(NOTEBOOKS)
    return out


@pytest.fixture(scope="module")
def bundle_report(bundle):
    solutions = {
        e.id: function_source(e.key().solution, e.name)
        for e in all_exercises()
        if e.kind == "function"
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            BUNDLE_CHECK,
            str(bundle),
            str(ROOT / "course_lib" / "grading" / "cells.py"),
            json.dumps(solutions),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=bundle,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(bundle),
            "MPLBACKEND": "Agg",
            "COURSE_PROGRESS_FILE": "off",
            "COURSE_DEVICE": "cpu",
            "OMP_NUM_THREADS": "1",  # as the suite's own processes (tests/conftest.py)
        },
    )
    line = [s for s in proc.stdout.splitlines() if s.startswith("REPORT ")]
    assert line, proc.stderr[-3000:]
    return json.loads(line[0][len("REPORT ") :])


def test_bundle_has_notebooks_and_course_lib_but_no_key_grader_or_bytecode(bundle):
    files = {p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file()}
    assert {f"notebooks/{p.name}" for p in NOTEBOOKS} <= files
    assert {
        "README.md",
        "pyproject.toml",
        "course.sh",
        "course.py",
        "course_lib/__init__.py",
    } <= files
    assert not [f for f in files if f.startswith(("course_lib/key", "course_lib/grading"))]
    assert not [f for f in files if f.endswith((".pyc", ".pyo")) or "__pycache__" in f]


def test_the_bundle_starts_with_its_own_launcher(bundle):
    """course.sh runs course.py: both must be in the bundle, and course.py must run from there."""
    assert "course.py" in (bundle / "course.sh").read_text()
    proc = subprocess.run(
        [sys.executable, str(bundle / "course.py"), "no-such-command"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=bundle,
    )
    assert proc.returncode == 2 and "usage: python course.py" in proc.stderr + proc.stdout


def test_recorded_gpu_figures_travel_with_the_bundle(tmp_path, monkeypatch):
    """Once a GPU run is recorded, a student without
    a GPU sees its figures beside the skip lines."""
    import course_lib.grading.release as rel

    fake_root = tmp_path / "checkout"
    (fake_root / "docs" / "gpu").mkdir(parents=True)
    (fake_root / "docs" / "gpu" / "figures.json").write_text("{}")
    (fake_root / "notebooks").mkdir()
    for name in ("course_lib", "pyproject.toml", "course.sh", "course.py"):
        (fake_root / name).symlink_to(ROOT / name)
    monkeypatch.setattr(rel, "_checkout", lambda: fake_root)
    monkeypatch.setattr(rel, "find_leaks", lambda out: [])
    out = tmp_path / "bundle"
    release(out)
    assert (out / "docs" / "gpu" / "figures.json").read_text() == "{}"


def test_nothing_in_the_bundle_reveals_the_key(bundle):
    assert find_leaks(bundle) == []
    normal = lambda paths: "\n".join(
        " ".join(p.read_text(errors="replace").split())
        for p in paths
        if p.is_file() and p.suffix != ".gz"
    )
    texts = normal(bundle.rglob("*"))
    public = normal(
        [p for p in (ROOT / "course_lib").rglob("*.py") if not {"key", "grading"} & set(p.parts)]
        + list((ROOT / "notebooks").glob("*.ipynb"))
    )
    for ex in all_exercises():
        key = ex.key()
        if ex.kind == "function":
            import inspect

            assert " ".join(inspect.getsource(key.solution).split()) not in texts, (
                f"{ex.id}: solution leaked"
            )
            for test in (
                key.hidden_tests
            ):  # a name the chapter itself uses (say "SGD with momentum") is no leak
                if test.name not in public:
                    assert test.name not in texts, (
                        f"{ex.id}: hidden test {test.name!r} named in the bundle"
                    )
    assert secret_lines(), (
        "the key has lines that appear nowhere else (else this test proves nothing)"
    )


def test_a_planted_secret_is_found(bundle, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(bundle, copy)
    (copy / "course_lib" / "hint.py").write_text(f"# {secret_lines()[0]}\n")
    assert any("key line" in leak for leak in find_leaks(copy))


def test_every_bundle_notebook_runs_against_the_bundle(bundle, bundle_report):
    assert bundle_report["course_lib"].startswith(str(bundle))
    assert set(bundle_report["errors"]) == {p.name for p in NOTEBOOKS}
    assert all(not errors for errors in bundle_report["errors"].values()), bundle_report["errors"]


def test_in_the_bundle_checks_are_visible_only_and_solutions_withheld(bundle_report):
    for row in bundle_report["exercises"].values():
        assert row["key"] is False
        if "solution" in row:
            assert "withheld by the teacher" in row["solution"]
            assert (
                row["status"] == "correct"
                and row["tests"] == row["visible"]
                and row["hidden_not_run"] == 0
            )


def test_release_command_refuses_to_overwrite_and_the_bundle_cannot_grade(bundle, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "course_lib", "release", str(bundle)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0 and "not empty" in proc.stderr
    launch = NO_TEACHER + (
        "import runpy; sys.argv[0] = 'course_lib'; runpy.run_module('course_lib', "
        "run_name='__main__')"
    )
    cli = lambda *args, **kw: subprocess.run(
        [sys.executable, "-c", launch, *args], capture_output=True, text=True, timeout=300, **kw
    )
    proc = cli(
        "grade",
        str(tmp_path),
        "--out",
        str(tmp_path / "g.csv"),
        cwd=bundle,
        env={"PYTHONPATH": str(bundle), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert proc.returncode == 2 and "teacher's copy" in proc.stdout
    proc = cli(
        "exercises",
        cwd=bundle,
        env={"PYTHONPATH": str(bundle), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert proc.returncode == 0 and "ch01.make_batch" in proc.stdout


# ---------------------------------------------------------------- --hosted-from (issue 38)
HOSTED = "https://github.com/acme/gpu-course"


@pytest.fixture(scope="module")
def hosted_bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("hosted") / "bundle"
    release(out, lang="both", hosted_from=HOSTED + "/", branch="spring")
    return out


def _cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _source(cell):
    return "".join(cell["source"])


@pytest.mark.parametrize("folder", ["", "zh"])
def test_hosted_release_links_every_notebook_and_adds_the_bootstrap_cell(hosted_bundle, folder):
    from course_lib import hosted

    cell = hosted.bootstrap_cell(HOSTED, "spring")
    for original in NOTEBOOKS:
        rel = "/".join(["notebooks", *([folder] if folder else []), original.name])
        cells = _cells(hosted_bundle / rel)
        links = _source(cells[0])
        assert cells[0]["cell_type"] == "markdown"
        assert (
            f"(https://colab.research.google.com/github/acme/gpu-course/blob/spring/{rel})" in links
        )
        assert f"(https://kaggle.com/kernels/welcome?src={HOSTED}/blob/spring/{rel})" in links
        assert f"git clone {HOSTED}`" in links and "modelscope.cn" in links
        assert ("在 Colab 中打开" in links) == (folder == "zh")
        code = [c for c in cells if c["cell_type"] == "code"]
        assert _source(code[0]) == cell and code[0]["outputs"] == []
        if folder == "zh":  # the bootstrap cell comes before the one with the language line
            assert _source(code[1]).startswith("import course_lib.zh")
        source = json.loads((ROOT / rel).read_text(encoding="utf-8"))["cells"]
        assert [c["id"] for c in cells] == [
            "hosted-links",
            *[c["id"] for c in source[: [c["cell_type"] for c in source].index("code")]],
            "hosted-bootstrap",
            *[c["id"] for c in source[[c["cell_type"] for c in source].index("code") :]],
        ]  # nothing else changed in place or order


def test_hosted_release_readmes_link_each_chapter_of_their_edition(hosted_bundle):
    for readme, folder in (("README.md", ""), ("README.zh.md", "zh/")):
        text = (hosted_bundle / readme).read_text(encoding="utf-8")
        for nb in NOTEBOOKS:
            rel = f"notebooks/{folder}{nb.name}"
            assert (
                f"https://colab.research.google.com/github/acme/gpu-course/blob/spring/{rel}"
                in text
            )
            assert f"https://kaggle.com/kernels/welcome?src={HOSTED}/blob/spring/{rel}" in text
        assert "modelscope.cn" in text
    assert "在托管的 GPU 上运行" in (hosted_bundle / "README.zh.md").read_text(encoding="utf-8")


def test_a_release_without_hosted_from_is_unchanged(bundle):
    assert "colab" not in (bundle / "README.md").read_text(encoding="utf-8").lower()
    for nb in NOTEBOOKS:
        released = _cells(bundle / "notebooks" / nb.name)
        assert [c["id"] for c in released] == [c["id"] for c in _cells(nb)]
        assert [_source(c) for c in released] == [_source(c) for c in _cells(nb)]


def test_hosted_from_a_bad_address_is_a_clear_error_and_writes_nothing(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "course_lib", "release", str(tmp_path / "b")]
        + ["--hosted-from", "https://gitlab.com/acme/gpu-course"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2
    assert "https://github.com/ORG/REPO" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "b").exists()


def test_hosted_release_keeps_the_two_editions_in_step(hosted_bundle):
    """Both editions gain the same two cells in the same places: the pair keeps the shape
    (ids, types, order) and notebook metadata `python -m course_lib.i18n check` asks of them."""
    from course_lib.i18n.editions import zh_notebook_metadata

    for nb in NOTEBOOKS:
        en = json.loads((hosted_bundle / "notebooks" / nb.name).read_text(encoding="utf-8"))
        zh = json.loads((hosted_bundle / "notebooks" / "zh" / nb.name).read_text(encoding="utf-8"))
        shape = lambda book: [(c["id"], c["cell_type"]) for c in book["cells"]]
        assert shape(en) == shape(zh)
        assert zh["metadata"] == zh_notebook_metadata(en["metadata"])
        bootstrap = [c for c in en["cells"] if c["id"] == "hosted-bootstrap"]
        assert bootstrap == [c for c in zh["cells"] if c["id"] == "hosted-bootstrap"]
