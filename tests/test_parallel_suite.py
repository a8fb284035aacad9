"""The suite on every core keeps what runs together together (conftest.py's groups, issue 20).

A small project with the course's conftest.py runs under pytest-xdist as `course.sh test` runs
the suite: a notebook's cells share one kernel, a module-scoped fixture is set up once (once per
parameter), each group's tests run on one worker in their order, and single tests are spread.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

from support import ROOT

SHARED = """
import os, pytest

def note(tmp, what):
    with open(os.path.join(tmp, "notes.txt"), "a") as f:
        f.write(f"{what} {os.environ.get('PYTEST_XDIST_WORKER', '-')}\\n")

@pytest.fixture(scope="module")
def graded():
    note(os.environ["NOTES"], "setup graded")
    return 41

@pytest.fixture(scope="module", params=["full", "neither"])
def mode(request):
    note(os.environ["NOTES"], f"setup mode-{request.param}")
    return request.param

@pytest.mark.parametrize("i", range(4))
def test_reads_graded(graded, i):
    note(os.environ["NOTES"], f"graded {i}")

@pytest.mark.parametrize("i", range(3))
def test_reads_mode(mode, i):
    note(os.environ["NOTES"], f"mode-{mode} {i}")
"""
ALONE = """
import os, time

def others_seen(notes, me):
    with open(notes) as f:
        return any(line.startswith("alone ") and not line.endswith(f" {me}\\n") for line in f)

@__import__("pytest").mark.parametrize("i", range(8))
def test_alone(i):
    # Waits (up to 60 s from the first single test) for a single test on another worker, so the
    # spread does not depend on how long the other worker's kernel takes to start on a busy
    # machine; tests that xdist kept on one worker time out and leave the spread to fail.
    me = os.environ.get("PYTEST_XDIST_WORKER", "-")
    notes = os.path.join(os.environ["NOTES"], "notes.txt")
    with open(notes, "a") as f:
        f.write(f"alone {me}\\n")
    first = os.path.join(os.environ["NOTES"], "alone.start")
    try:
        open(first, "x").close()  # the first single test starts the 60 s
    except FileExistsError:
        pass
    while not others_seen(notes, me) and time.time() - os.path.getmtime(first) < 60:
        time.sleep(0.05)
"""
CELLS = ["x = 1", "assert x == 1", "y = x + 1\nassert y == 2"]


def notebook(cells: list) -> dict:
    return {
        "cells": [
            {"cell_type": "code", "id": f"c{i}", "metadata": {}, "execution_count": None,
             "outputs": [], "source": text}
            for i, text in enumerate(cells)
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                    "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }  # fmt: skip


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    pytest.importorskip("xdist")
    project = tmp_path_factory.mktemp("project")
    shutil.copy(ROOT / "conftest.py", project / "conftest.py")
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / "test_shared.py").write_text(SHARED)
    (project / "test_alone.py").write_text(ALONE)
    (project / "cells.ipynb").write_text(json.dumps(notebook(CELLS)))
    spec = __import__("importlib.util").util.spec_from_file_location("course", ROOT / "course.py")
    course = __import__("importlib.util").util.module_from_spec(spec)
    spec.loader.exec_module(course)
    options = [("2" if o == "auto" else o) for o in course.PARALLEL]  # two workers, always
    env = dict(os.environ, NOTES=str(project), COURSE_TEST_TIMELINE=str(project / "timeline.jsonl"))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *options, "-p", "no:cacheprovider", "--nbval-lax", "-v"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    notes = [line.split() for line in (project / "notes.txt").read_text().splitlines()]
    return proc, notes, project / "timeline.jsonl"


def workers_of(notes, prefix: str) -> set:
    return {n[-1] for n in notes if " ".join(n[:-1]).startswith(prefix)}


def test_the_run_passes_on_two_workers(run):
    proc, notes, _ = run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert workers_of(notes, "alone") == {"gw0", "gw1"}  # single tests are spread


def test_a_notebooks_cells_share_one_kernel_on_one_worker(run):
    proc, _, _ = run
    cells = [line for line in proc.stdout.splitlines() if "PASSED cells.ipynb::Cell" in line]
    assert len(cells) == len(CELLS) and all("PASSED" in line for line in cells), cells
    assert len({line.split("]")[0] for line in cells}) == 1, cells  # one [gwN] for all


def test_a_module_fixture_is_set_up_once_and_its_tests_share_a_worker(run):
    _, notes, _ = run
    setups = [n for n in notes if n[0] == "setup"]
    assert sorted(n[1] for n in setups) == ["graded", "mode-full", "mode-neither"], setups
    assert len(workers_of(notes, "graded")) == 1
    for mode in ("full", "neither"):
        assert len(workers_of(notes, f"mode-{mode}")) == 1


def test_the_timeline_records_each_phase_on_its_worker_and_samples_the_workers(run):
    """COURSE_TEST_TIMELINE (conftest.py, read by benchmarks/ci_speed.py): every test's three
    phases with the worker that ran them, its group and its process tree's CPU seconds."""
    _, notes, timeline = run
    rows = [json.loads(line) for line in timeline.read_text().splitlines()]
    phases = [r for r in rows if "nodeid" in r]
    assert len(phases) == 3 * (4 + 2 * 3 + 8 + len(CELLS)), len(phases)
    assert {r["worker"] for r in phases} == {"gw0", "gw1"}
    assert all(r["stop"] >= r["start"] and len(r["cpu"]) == 2 and r["pid"] for r in phases)
    alone = {r["worker"] for r in phases if "test_alone" in r["nodeid"]}
    assert alone == workers_of(notes, "alone")  # the worker the test itself saw
    cells = {r["group"] for r in phases if "cells.ipynb" in r["nodeid"]}
    assert len(cells) == 1 and cells.pop().startswith("nbval ") and alone != {""}
    pids = {str(r["pid"]) for r in phases}
    assert any(set(r.get("running", {})) == pids for r in rows), "no sample of both workers"
    assert [r["event"] for r in rows if "event" in r and r["event"] != "sample"] == [
        "start",
        "finish",
    ]
