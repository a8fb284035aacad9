"""The grader on a few submissions with the GPU visible: do grades match the key? (gpu_check.sh)

    python benchmarks/gpu_grading.py WORK_DIR [--chapter 01 --chapter 05 ...] [--workers 4]

Builds, from the answer key, each chapter's reference submission (full marks), the notebook as
handed out (0 points) and a submission of the key's first known-wrong answers (what the
engine gives them), grades them with ``python -m course_lib grade`` without hiding the GPU,
and prints one line per submission; exit 1 when a grade differs. On a CUDA machine this is
the check that grading gives the same grades as on a CPU-only one.

The expected scores are computed the way the grader runs the checks: in a child process with
the environment of the grader's own processes (``zygote.HIDDEN_GPUS``: no GPU visible, the
course device cpu). Computed here, where the GPU is visible, an answer such as ch01's "only ever
asks for GPU 0" would pass "works on this machine" and be expected to score 1.2 of 3, where the
grader, which hides the GPUs, gives it 0.6 (issue 16).
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

from course_lib.grading.zygote import HIDDEN_GPUS  # noqa: E402 (standard library only: CUDA untouched)

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
                book.setdefault(row["submission"], {})[row["exercise"]] = (
                    row["status"],
                    round(float(row["points"]), 3),
                )
    return book


def write_cases(subs: Path, chapters: list) -> dict:
    """Each chapter's reference, blank and first
    known-wrong submissions into `subs`; {name: expected}.

    Run by build_cases in a child that sees the GPUs as the grader's processes do."""
    from course_lib.grading.selftest import chapter_cases

    expected = {}
    for number in chapters:
        print(
            f"chapter {number}: building the reference, blank and known-wrong submissions",
            flush=True,
        )
        for case in chapter_cases(number)[:3]:
            (subs / f"{case.name}.ipynb").write_text(json.dumps(case.notebook))
            expected[case.name] = case.expected
    return expected


def build_cases(subs: Path, chapters: list) -> dict:
    """write_cases in a child process with the grader's
    environment (HIDDEN_GPUS); {name: expected}."""
    answer = subs.parent / "expected.json"
    subprocess.run(
        [
            sys.executable,
            __file__,
            str(subs.parent),
            "--write-cases",
            *[f"--chapter={c}" for c in chapters],
        ],
        env={**os.environ, **HIDDEN_GPUS},
        check=True,
    )
    return {
        name: {ex: tuple(v) for ex, v in want.items()}
        for name, want in json.loads(answer.read_text()).items()
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work", type=Path)
    parser.add_argument(
        "--chapter", action="append", help=f"chapters (default {' '.join(CHAPTERS)})"
    )
    parser.add_argument("--workers", type=int, default=6)
    parser.add_argument(
        "--seconds", type=float, default=200, help="stop the grader then, compare what it graded"
    )
    parser.add_argument(
        "--write-cases", action="store_true", help=argparse.SUPPRESS
    )  # build_cases' child
    parser.add_argument(
        "--dry-run", action="store_true", help="say what would be graded, grade nothing"
    )
    args = parser.parse_args(argv)
    start = time.perf_counter()
    subs = args.work / "submissions"
    subs.mkdir(parents=True, exist_ok=True)
    chapters = args.chapter or list(CHAPTERS)
    if args.write_cases:
        (args.work / "expected.json").write_text(json.dumps(write_cases(subs, chapters)))
        return 0
    if args.dry_run:
        hidden = " ".join(f"{k}={v!r}" for k, v in HIDDEN_GPUS.items() if "VISIBLE" in k)
        print(
            f"would grade the reference, blank and first known-wrong submissions of chapters "
            f"{' '.join(chapters)} with {args.workers} workers for at most {args.seconds:.0f} s; "
            f"expected scores computed in a child with {hidden}"
        )
        return 0
    try:
        expected = build_cases(subs, chapters)
    except subprocess.CalledProcessError as err:
        print(f"the submissions could not be built from the answer key (exit {err.returncode})")
        return 1
    out = args.work / "gradebook.csv"
    print(
        f"grading {len(expected)} submissions ({time.perf_counter() - start:.0f} s so far)",
        flush=True,
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "course_lib",
            "grade",
            str(subs),
            "--out",
            str(out),
            "--no-progress",
            "--fresh",
            "--workers",
            str(args.workers),
        ],
        cwd=args.work,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        said, _ = proc.communicate(timeout=max(5.0, args.seconds - (time.perf_counter() - start)))
    except (subprocess.TimeoutExpired, KeyboardInterrupt):  # our time is up: compare what it graded
        stop(proc)
        said = (
            proc.communicate()[0]
            + f"\nthe grader was stopped after {time.perf_counter() - start:.0f} s"
        )
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
        print(
            f"{name}: "
            + (
                "as the key expects"
                if not diff
                else "DIFFERS "
                + "; ".join(f"{ex}: expected {w}, got {g}" for ex, (w, g) in diff.items())
            )
        )
    print(
        f"{len(expected) - bad} of {len(expected)} submissions graded as the key expects "
        f"in {time.perf_counter() - start:.0f} s (grader exit {proc.returncode})"
    )
    return 1 if bad or proc.returncode else 0


if __name__ == "__main__":
    sys.exit(main())
