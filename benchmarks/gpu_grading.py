"""The grader on a few submissions with the GPU visible: do grades match the key? (gpu_check.sh)

    python benchmarks/gpu_grading.py WORK_DIR [--chapter 01 --chapter 05 ...] [--workers 4]

Builds, from the answer key, each chapter's reference submission (full marks), the notebook as
handed out (0 points) and a submission of the key's first known-wrong answers (what the
engine gives them in this process), grades them with ``python -m course_lib grade`` without
hiding the GPU, and prints one line per submission; exit 1 when a grade differs. On a CUDA
machine this is the check that grading gives the same grades as on a CPU-only one.
"""
import argparse
import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from course_lib.grading.selftest import chapter_cases  # noqa: E402

CHAPTERS = ("01", "05", "06")  # the chapters whose checks touch CUDA most


def stop(proc) -> None:
    """End the grader and its workers (its own session): SIGTERM, then SIGKILL after 5 s."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
            proc.wait(timeout=5)
            return
        except (ProcessLookupError, subprocess.TimeoutExpired):
            continue


def read_gradebook(path: Path) -> dict:
    """{submission: {exercise: (status, points)}} without the TOTAL rows."""
    book = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["exercise"] != "TOTAL":
                book.setdefault(row["submission"], {})[row["exercise"]] = (row["status"],
                                                                           round(float(row["points"]), 3))
    return book


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("--chapter", action="append", help=f"chapters (default {' '.join(CHAPTERS)})")
    parser.add_argument("--workers", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=200, help="stop the grader then, compare what it graded")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    subs = args.work / "submissions"
    subs.mkdir(parents=True, exist_ok=True)
    expected = {}
    for number in args.chapter or CHAPTERS:
        print(f"chapter {number}: building the reference, blank and known-wrong submissions", flush=True)
        for case in chapter_cases(number)[:3]:  # reference, blank, first known-wrong set
            (subs / f"{case.name}.ipynb").write_text(json.dumps(case.notebook))
            expected[case.name] = case.expected
    out = args.work / "gradebook.csv"
    print(f"grading {len(expected)} submissions ({time.perf_counter() - start:.0f} s so far)", flush=True)
    proc = subprocess.Popen([sys.executable, "-m", "course_lib", "grade", str(subs), "--out", str(out),
                             "--no-progress", "--fresh", "--workers", str(args.workers)],
                            cwd=args.work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        said, _ = proc.communicate(timeout=max(5.0, args.seconds - (time.perf_counter() - start)))
    except (subprocess.TimeoutExpired, KeyboardInterrupt):  # our time is up: compare what it graded
        stop(proc)
        said = proc.communicate()[0] + f"\nthe grader was stopped after {time.perf_counter() - start:.0f} s"
    print(said[-4000:])
    if not out.exists():
        print(f"the grader wrote no gradebook (exit {proc.returncode})")
        return 1
    got, bad = read_gradebook(out), 0
    for name, want in expected.items():
        if name not in got:
            bad += 1
            print(f"{name}: NOT GRADED")
            continue
        diff = {ex: (want[ex], got[name].get(ex)) for ex in want if got[name].get(ex) != want[ex]}
        bad += bool(diff)
        print(f"{name}: " + ("as the key expects" if not diff else
                             "DIFFERS " + "; ".join(f"{ex}: expected {w}, got {g}" for ex, (w, g) in diff.items())))
    print(f"{len(expected) - bad} of {len(expected)} submissions graded as the key expects "
          f"in {time.perf_counter() - start:.0f} s (grader exit {proc.returncode})")
    return 1 if bad or proc.returncode else 0


if __name__ == "__main__":
    sys.exit(main())
