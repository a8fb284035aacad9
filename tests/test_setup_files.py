"""The install files agree with each other and with the README."""

import re

import tomllib

from support import ROOT

CONDA_NAMES = {"pytorch": "torch"}  # conda-forge name -> PyPI name


def pip_requirements() -> dict:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = project["dependencies"] + [
        r for extra in project["optional-dependencies"].values() for r in extra
    ]
    return dict(re.match(r"([A-Za-z0-9_.-]+)\s*(.*)", r).groups() for r in reqs)


def conda_requirements() -> dict:
    text = (ROOT / "environment.yml").read_text().split("dependencies:", 1)[1]
    lines = [s.strip()[2:] for s in text.splitlines() if s.strip().startswith("- ")]
    pairs = [re.match(r"([A-Za-z0-9_.-]+)\s*(.*)", s).groups() for s in lines]
    return {CONDA_NAMES.get(n, n): v for n, v in pairs if n not in ("python", "pip")}


def test_environment_yml_matches_pip_dependencies():
    assert conda_requirements() == pip_requirements()


def as_tuple(version: str) -> tuple:
    return tuple(int(x) for x in version.split("."))


def torch_floor() -> str:
    return re.match(r">=([\d.]+)", pip_requirements()["torch"]).group(1)


def test_launcher_pins_the_torch_that_satisfies_the_range():
    pinned = re.search(
        r'^TORCH_VERSION = "([\d.]+)"', (ROOT / "course.py").read_text(), re.M
    ).group(1)
    assert as_tuple(pinned) >= as_tuple(torch_floor())


def test_torch_floor_is_what_the_course_needs():
    """torch.accelerator and torch.load's weights_only=True default came in 2.6."""
    assert as_tuple(torch_floor()) >= (2, 6)


def test_course_sh_wraps_the_python_launcher():
    script = (ROOT / "course.sh").read_text()
    assert re.search(r'^exec "\$PYTHON" course\.py "\$@"$', script, re.M)
    assert "pip install" not in script  # one install procedure, in course.py


def test_readme_tells_the_truth_about_torch_on_linux_gpus():
    readme = (ROOT / "README.md").read_text()
    for said in (
        "CUDA 13",
        "580",
        "python course.py start",
        "python course.py test",
        "COURSE_DEVICE=cpu",
    ):
        assert said in readme
    assert (
        "takes the CUDA\n  build there" not in readme and "takes the CUDA build there" not in readme
    )
    for path in ("course.sh", "course.py", "course_lib/doctor.py"):
        assert "580" in (ROOT / path).read_text(), path


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    assert "./course.sh test" in readme and "./course.sh start" in readme
    assert "./course.sh test" in (ROOT / ".ci" / "run").read_text()


def test_readme_chapter_table_lists_each_chapters_exercises_and_quizzes():
    """The README's chapter table stays true: every
    function exercise named, the quiz count right."""
    from collections import Counter

    from course_lib.exercises import all_exercises

    rows = {
        m.group(1): m.group(2)
        for m in re.finditer(
            r"^\| `(\d\d)_\w+\.ipynb` \|.*\| ([^|]+) \|$", (ROOT / "README.md").read_text(), re.M
        )
    }
    quizzes = Counter(e.chapter.number for e in all_exercises() if e.kind != "function")
    for ex in all_exercises():
        assert ex.chapter.number in rows, (
            f"README's chapter table has no row for chapter {ex.chapter.number}"
        )
        if ex.kind == "function":
            assert f"`{ex.name}`" in rows[ex.chapter.number], (
                f"README's row {ex.chapter.number} misses {ex.name}"
            )
    for number, n in quizzes.items():
        assert f"{n} quizzes" in rows[number], (
            f"README's row {number} should say {n} quizzes: {rows[number]}"
        )
