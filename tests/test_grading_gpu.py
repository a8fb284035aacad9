"""Grading on a machine with a GPU gives the grades a CPU-only machine gives (issue 8, item 1).

The grader's own process may have looked at the GPU before grading (a teacher's Python, the
GPU check script): real CUDA torch then poisons every fork, and a forked process that uses
CUDA fails with "Cannot re-initialize CUDA in forked subprocess". Simulated here with a
CUDA-like torch (fixtures/grading/fake_gpu): the same class is graded by a grader that has
queried a visible GPU and by a plain one, and the gradebooks must agree row for row.
"""

import json
import os
import subprocess
import sys

from support import (
    ROOT,
    submissions,  # noqa: E402
)

FAKE = ROOT / "tests" / "fixtures" / "grading" / "fake_gpu"
GRADE_AFTER_LOOKING_AT_THE_GPU = """
import sys, torch
assert torch.cuda.is_available() and torch.cuda.device_count() == 1  # this Python has seen its GPU
from course_lib.grading.grader import Grader
Grader(sys.argv[1], sys.argv[2], workers=2, progress=False).run()
"""


def _rows(path) -> dict:
    return {
        (r["submission"], r["exercise"]): (r["status"], r["points"])
        for r in submissions.gradebook_rows(path)
    }


def test_a_visible_gpu_changes_no_grade(tmp_path):
    subs = tmp_path / "submissions"
    subs.mkdir()
    bases = submissions.bases()
    for name in ("reference", "blank"):
        (subs / f"{name}.ipynb").write_text(json.dumps(bases[name]))
    submissions.write_all(subs, ["crash_in_function"])
    cpu = tmp_path / "cpu" / "gradebook.csv"
    assert submissions.run_grader(subs, cpu, "--workers", 2).returncode == 0
    gpu = tmp_path / "gpu" / "gradebook.csv"
    gpu.parent.mkdir()
    env = dict(os.environ, COURSE_FAKE_GPU="1", PYTHONPATH=f"{FAKE}{os.pathsep}{ROOT}")
    env.pop("CUDA_VISIBLE_DEVICES", None)
    proc = subprocess.run(
        [sys.executable, "-c", GRADE_AFTER_LOOKING_AT_THE_GPU, str(subs), str(gpu)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Cannot re-initialize CUDA" not in gpu.read_text()
    assert _rows(gpu) == _rows(cpu)
    assert _rows(cpu)[("reference", "TOTAL")] == ("ok", "13")
