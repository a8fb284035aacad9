"""The install files agree with each other and with the README."""
import re
import tomllib

from conftest import ROOT

CONDA_NAMES = {"pytorch": "torch"}  # conda-forge name -> PyPI name


def pip_requirements() -> dict:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
    return dict(re.match(r"([A-Za-z0-9_.-]+)\s*(.*)", r).groups() for r in reqs)


def conda_requirements() -> dict:
    text = (ROOT / "environment.yml").read_text().split("dependencies:", 1)[1]
    lines = [l.strip()[2:] for l in text.splitlines() if l.strip().startswith("- ")]
    pairs = [re.match(r"([A-Za-z0-9_.-]+)\s*(.*)", l).groups() for l in lines]
    return {CONDA_NAMES.get(n, n): v for n, v in pairs if n not in ("python", "pip")}


def test_environment_yml_matches_pip_dependencies():
    assert conda_requirements() == pip_requirements()


def test_course_script_pins_the_torch_that_satisfies_the_range():
    script = (ROOT / "course.sh").read_text()
    pinned = re.search(r'TORCH_VERSION="([\d.]+)"', script).group(1)
    low = re.match(r">=([\d.]+)", pip_requirements()["torch"]).group(1)
    as_tuple = lambda v: tuple(int(x) for x in v.split("."))
    assert as_tuple(pinned) >= as_tuple(low)


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    assert "./course.sh test" in readme and "./course.sh start" in readme
    assert "./course.sh test" in (ROOT / ".ci" / "run").read_text()
