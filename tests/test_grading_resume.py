"""Kill the grader with SIGKILL mid-run, run it again:
no gradebook row lost or duplicated (issue 5 bar)."""

import json
import os
import signal
import time

from course_lib.grading.grader import scratch_root_for
from course_lib.grading.selftest import chapter_cases
from support import submissions  # noqa: E402

SLOW_CELL = {
    "cell_type": "code",
    "metadata": {},
    "outputs": [],
    "execution_count": None,
    "source": "import time\ntime.sleep(0.6)  # a notebook that takes a moment",
}


def _submissions(folder):
    cases = {c.name.split("-", 1)[1]: c for c in chapter_cases("01")}
    expected = {}
    for i in range(12):
        case = cases["reference"] if i % 3 else cases["blank"] if i % 2 else cases["wrong01"]
        nb = json.loads(json.dumps(case.notebook))
        nb["cells"].insert(1, SLOW_CELL)
        name = f"student{i:02d}"
        (folder / f"{name}.ipynb").write_text(json.dumps(nb))
        expected[name] = case.expected
    return expected


def test_sigkill_then_rerun_loses_and_duplicates_nothing(tmp_path):
    subs = tmp_path / "submissions"
    subs.mkdir()
    expected = _submissions(subs)
    out = tmp_path / "out" / "gradebook.csv"
    grader = submissions.run_grader(subs, out, "--workers", 2, popen=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and grader.poll() is None:
        if out.exists() and out.read_text().count(",TOTAL,") >= 3:
            break
        time.sleep(0.02)
    assert grader.poll() is None, "the grader finished before it could be killed"
    os.kill(grader.pid, signal.SIGKILL)
    grader.wait()
    done_before = out.read_text().count(",TOTAL,")
    assert 3 <= done_before < len(expected)
    gone = time.monotonic() + 15  # they die with the grader; on a busy machine that takes a moment
    while submissions.alive_under(scratch_root_for(out)) and time.monotonic() < gone:
        time.sleep(0.2)
    assert not submissions.alive_under(scratch_root_for(out)), (
        "graded processes outlived the grader"
    )

    again = submissions.run_grader(subs, out, "--workers", 2)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "already graded" in again.stderr

    rows = submissions.gradebook_rows(out)
    keys = [(r["submission"], r["exercise"]) for r in rows]
    wanted = {
        (name, ex) for name, verdicts in expected.items() for ex in list(verdicts) + ["TOTAL"]
    }
    assert len(keys) == len(set(keys)), "duplicated rows"
    assert set(keys) == wanted, "lost rows"
    for r in rows:
        if r["exercise"] != "TOTAL":
            assert (r["status"], round(float(r["points"]), 3)) == expected[r["submission"]][
                r["exercise"]
            ]
