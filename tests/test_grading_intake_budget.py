"""Intake costs bounded by a notebook's size, not by what its text does (issue 34, item 3).

IPython's input transformer is superlinear in a cell's escape lines: before the budget, one
45 KB cell of `!` lines kept the whole class ungraded for over a minute and a 1 MB notebook for
about half an hour. Now such a notebook is that student's own "too large" status, found in
bounded time, and a classmate in the same run is graded as usual.
"""

import json
import time

import pytest

from course_lib import notebooks
from course_lib.grading import cells, intake
from course_lib.grading.records import STATUSES, TOO_LARGE
from support import submissions


def _nb(sources) -> bytes:
    cell = lambda s: {
        "cell_type": "code",
        "source": s,
        "metadata": {},
        "outputs": [],
        "execution_count": None,
    }
    return json.dumps(
        {"cells": [cell(s) for s in sources], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    ).encode()


SHELL_CELL = "\n".join(f"!echo {i}" for i in range(4500))  # about 45 KB
ATTACKS = {
    "45 KB cell of shell escapes": _nb([SHELL_CELL]),
    # 1 MB: each cell under the per-cell escape limit, the notebook far over its total
    "1 MB notebook of magic cells": _nb(
        ["\n".join(f"%time x{i} = {j}" for i in range(60)) for j in range(1000)]
    ),
    "one huge code cell": _nb(["x = 1\n" * 60_000]),
    "too many cells": _nb(["x = 1"] * (cells.BUDGET["cells"] + 1)),
}


def _read(tmp_path, name: str, data: bytes):
    path = tmp_path / f"{name}.ipynb"
    path.write_bytes(data)
    return intake.read(intake.Entry(name, path))


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_notebook_over_budget_is_too_large_in_bounded_time(tmp_path, attack):
    start = time.monotonic()
    sub = _read(tmp_path, "mallory", ATTACKS[attack])
    seconds = time.monotonic() - start
    assert sub.refused == TOO_LARGE and TOO_LARGE in STATUSES, sub.unreadable
    assert "too large to grade" in sub.unreadable and "limit" in sub.unreadable
    assert seconds < 10, f"reading took {seconds:.1f} s"


def test_the_transform_time_budget_stops_a_slow_notebook(tmp_path, monkeypatch):
    """Whatever the counts let through, the time spent transforming a notebook is bounded."""
    monkeypatch.setitem(cells.BUDGET, "transform_seconds", 0.0)
    sub = _read(tmp_path, "slow", _nb(["%time x = 1", "%time y = 2"]))
    assert sub.refused == TOO_LARGE and "seconds" in sub.unreadable


@pytest.mark.parametrize("number", sorted({ex.chapter.number for ex in intake.index.exercises()}))
def test_the_handed_out_notebooks_are_well_within_budget(number):
    data = notebooks.path_of(number).read_bytes()
    read = cells.read_cells(data)
    code = [s for k, s in read if k == "code"]
    assert len(read) * 3 < cells.BUDGET["cells"]
    assert max(len(cells.ESCAPE_LINE.findall(s)) for s in code) * 3 < cells.BUDGET["escape_lines"]
    assert max(map(len, code)) * 3 < cells.BUDGET["cell_bytes"]


def test_end_to_end_too_large_is_one_students_status_and_the_classmate_gets_points(tmp_path):
    subs, out = tmp_path / "submissions", tmp_path / "out" / "gradebook.csv"
    subs.mkdir()
    (subs / "alice.ipynb").write_text(json.dumps(submissions.bases()["reference"]))
    (subs / "mallory.ipynb").write_bytes(ATTACKS["45 KB cell of shell escapes"])
    (subs / "mallory2.ipynb").write_bytes(ATTACKS["1 MB notebook of magic cells"])
    start = time.monotonic()
    proc = submissions.run_grader(subs, out, "--workers", 2, "--cell-timeout", 60, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    book = submissions.read_gradebook(out)
    assert float(book["alice"]["TOTAL"]["points"]) > 0
    for name in ("mallory", "mallory2"):
        assert float(book[name]["TOTAL"]["points"]) == 0
        record = json.loads((out.with_name("gradebook_feedback") / f"{name}.json").read_text())
        assert record["run"]["status"] == TOO_LARGE, record["run"]
        assert all(ex["status"] == TOO_LARGE for ex in record["exercises"])
        md = (out.with_name("gradebook_feedback") / f"{name}.md").read_text()
        assert "too large to grade" in md
    assert time.monotonic() - start < 600
