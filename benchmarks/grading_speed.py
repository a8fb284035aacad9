"""How fast the grader grades a class, against executing
the same notebooks with nbclient (issue 5 bar).

    .venv/bin/python benchmarks/grading_speed.py [--chapter 03] [--right 30 --wrong 8 --blank 2]

Builds a class of submissions of one chapter from its answer key (reference solutions, the
key's known-wrong answers, untouched notebooks), then, in one run on this machine:
  1. grades them with `python -m course_lib grade` (all cores), and says where the graded
     processes' time went (notebook runs, check processes) from the feedback records;
  2. executes the same notebooks one after another with nbclient, each followed by a cell
     that runs every exercise's check with the hidden tests (what nbgrader's autograde costs);
  3. compares the verdicts (status and points per submission and exercise);
  4. grades them again, kills the grader with SIGKILL part-way, reruns it, and counts the
     gradebook rows lost or duplicated.
Prints the figures, wall and CPU seconds (and the load average seen): with other work on the
machine, CPU seconds still compare; it is a measurement, not a pass/fail test.
The goal (issue 20): the grader at most 0.10 of sequential nbclient on 40 chapter-03 submissions.
"""

import argparse
import csv
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from course_lib.grading.selftest import chapter_cases  # noqa: E402

GRADE_CELL = """\
import json as _json
from course_lib.exercises import all_exercises as _all
_rows = {}
for _ex in _all():
    if _ex.chapter.number == %r:
        _value = globals().get(_ex.name if _ex.kind == "function" else "answer_" + _ex.name)
        _r = _ex.check(_value, include_hidden=True, record=False)
        _rows[_ex.id] = [_r.status, round(_r.points, 3)]
print("GRADES " + _json.dumps(_rows))
"""


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def cpu_seconds(who) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


class CpuClock:
    """CPU seconds of this process and of the children it reaped (the grader with its zygote,
    judge and graded processes; nbclient's kernels) between start and stop: robust to other
    work on the machine, where wall time is not."""

    def __enter__(self):
        self.start = cpu_seconds(resource.RUSAGE_SELF), cpu_seconds(resource.RUSAGE_CHILDREN)
        return self

    def __exit__(self, *exc):
        mine, theirs = cpu_seconds(resource.RUSAGE_SELF), cpu_seconds(resource.RUSAGE_CHILDREN)
        self.seconds = mine - self.start[0] + theirs - self.start[1]


def make_class(chapter: str, folder: Path, right: int, wrong: int, blank: int) -> dict:
    """Write the submissions; return {name: expected verdicts}."""
    cases = {c.name.split("-", 1)[1]: c for c in chapter_cases(chapter, compact_wrong=False)}
    wrongs = [c for k, c in sorted(cases.items()) if k.startswith("wrong")]
    plan = (
        [("right", cases["reference"])] * right
        + [("wrong", wrongs[i % len(wrongs)]) for i in range(wrong)]
        + [("blank", cases["blank"])] * blank
    )
    expected = {}
    for i, (kind, case) in enumerate(plan):
        name = f"student{i + 1:02d}-{kind}"
        (folder / f"{name}.ipynb").write_text(json.dumps(case.notebook))
        expected[name] = case.expected
    return expected


def grade(folder: Path, out: Path, workers, extra=()) -> tuple:
    cmd = [
        sys.executable,
        "-m",
        "course_lib",
        "grade",
        str(folder),
        "--out",
        str(out),
        "--no-progress",
        *extra,
    ]
    if workers:
        cmd += ["--workers", str(workers)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"grader failed:\n{proc.stderr[-3000:]}")
    return seconds, proc


def where_time_went(out: Path) -> str:
    """Sum and median of the graded processes' seconds, from the feedback records."""
    import statistics

    notebooks, checks = [], []
    for path in out.with_name(out.stem + "_feedback").glob("*.json"):
        record = json.loads(path.read_text())
        notebooks += [record["run"]["seconds"]] if record["run"].get("seconds") else []
        checks += [s for s in record["run"]["check_seconds"].values() if s]
    part = lambda xs: (
        f"{sum(xs):.1f} s in all, median {statistics.median(xs):.2f} s" if xs else "none"
    )
    return f"notebook processes: {part(notebooks)}; check processes: {part(checks)}"


def read_book(path: Path) -> dict:
    book = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["exercise"] != "TOTAL":
                book.setdefault(row["submission"], {})[row["exercise"]] = (
                    row["status"],
                    round(float(row["points"]), 3),
                )
    return book


def nbclient_sequential(folder: Path, chapter: str, cell_timeout: int) -> tuple:
    """Execute each notebook plus a grading cell, one after another; return (seconds, verdicts)."""
    import nbformat
    from nbclient import NotebookClient

    verdicts = {}
    env = dict(os.environ, COURSE_PROGRESS_FILE="off")
    start = time.perf_counter()
    for path in sorted(folder.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell(GRADE_CELL % chapter))
        client = NotebookClient(
            nb,
            timeout=cell_timeout,
            kernel_name="python3",
            allow_errors=True,
            resources={"metadata": {"path": str(folder)}},
            env=env,
        )
        try:
            client.execute()
        except Exception as err:  # noqa: BLE001 - a dead kernel is a verdict of nothing
            print(f"  nbclient: {path.name}: {type(err).__name__}: {err}")
        text = "".join(
            o.get("text", "") for o in nb.cells[-1].get("outputs", []) if o.get("name") == "stdout"
        )
        line = [s for s in text.splitlines() if s.startswith("GRADES ")]
        verdicts[path.stem] = (
            {k: tuple(v) for k, v in json.loads(line[0][7:]).items()} if line else {}
        )
        if not line:
            errors = [
                f"cell {i}: {o.get('ename')}: {str(o.get('evalue', ''))[:120]}"
                for i, c in enumerate(nb.cells)
                if c.cell_type == "code"
                for o in c.get("outputs", [])
                if o.get("output_type") == "error"
            ]
            print(f"  nbclient: {path.name}: no verdict; errors: {errors[-3:]}")
    return time.perf_counter() - start, verdicts


def kill_and_resume(folder: Path, out: Path, workers, kill_after: int) -> dict:
    """Grade, SIGKILL the grader after `kill_after` submissions are written, rerun; count rows."""
    cmd = [
        sys.executable,
        "-m",
        "course_lib",
        "grade",
        str(folder),
        "--out",
        str(out),
        "--no-progress",
        "--fresh",
    ]
    if workers:
        cmd += ["--workers", str(workers)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while proc.poll() is None and (
        not out.exists() or out.read_text().count(",TOTAL,") < kill_after
    ):
        time.sleep(0.02)
    killed_with = out.read_text().count(",TOTAL,") if out.exists() else 0
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    rerun = subprocess.run([c for c in cmd if c != "--fresh"], capture_output=True, text=True)
    with open(out, newline="") as f:
        keys = [(r["submission"], r["exercise"]) for r in csv.DictReader(f)]
    return {
        "killed_after": killed_with,
        "rerun_rc": rerun.returncode,
        "rows": len(keys),
        "duplicated": len(keys) - len(set(keys)),
        "keys": set(keys),
    }


def class_arguments(parser):
    """The class's shape (chapter, right, wrong, blank) and the grader's workers, on `parser`."""
    parser.add_argument("--chapter", default="03")
    parser.add_argument("--right", type=int, default=30)
    parser.add_argument("--wrong", type=int, default=8)
    parser.add_argument("--blank", type=int, default=2)
    parser.add_argument(
        "--workers", type=int, default=None, help="grader workers (default: all cores)"
    )
    return parser


def main() -> int:
    parser = class_arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--cell-timeout", type=int, default=120, help="nbclient's per-cell limit")
    parser.add_argument("--skip-nbclient", action="store_true")
    parser.add_argument("--keep", help="keep the class and the results in this folder")
    args = parser.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="grading-speed-"))
    folder = work / "submissions"
    folder.mkdir(parents=True, exist_ok=True)
    expected = make_class(args.chapter, folder, args.right, args.wrong, args.blank)
    n = len(expected)
    print(
        f"class: {n} submissions of chapter {args.chapter} ({args.right} right, {args.wrong} "
        f"wrong, {args.blank} blank) in {folder}; {os.cpu_count()} CPUs; load average {load()}"
    )

    print(f"[1] grader ... (load before: {load()})", flush=True)
    out = work / "grader" / "gradebook.csv"
    with CpuClock() as grader_cpu:
        grader_s, proc = grade(folder, out, args.workers, ["--fresh", "--json"])
    report = json.loads(proc.stdout)
    book = read_book(out)
    print(
        f"    {grader_s:.1f} s wall ({grader_s / n:.2f} s per submission), "
        f"{grader_cpu.seconds:.1f} CPU-s, "
        f"{report['processes']} graded processes; load after: {load()}"
    )
    right_verdicts = sum(book.get(s) == e for s, e in expected.items())
    print(f"    verdicts equal to the answer key's expectation: {right_verdicts}/{n} submissions")
    print(f"    {where_time_went(out)}")

    if not args.skip_nbclient:
        print(f"[2] nbclient, one notebook after another ... (load before: {load()})", flush=True)
        with CpuClock() as nbc_cpu:
            nbc_s, nbc = nbclient_sequential(folder, args.chapter, args.cell_timeout)
        print(
            f"    {nbc_s:.1f} s wall ({nbc_s / n:.2f} s per submission), "
            f"{nbc_cpu.seconds:.1f} CPU-s; load after: {load()}"
        )
        same = sum(book.get(s) == nbc.get(s) for s in expected)
        diffs = [
            (s, ex, book.get(s, {}).get(ex), nbc.get(s, {}).get(ex))
            for s in expected
            for ex in expected[s]
            if book.get(s, {}).get(ex) != nbc.get(s, {}).get(ex)
        ]
        print(f"    verdicts equal between grader and nbclient: {same}/{n} submissions")
        for d in diffs[:10]:
            print(f"      differs: {d}")
        print(
            f"[3] ratio grader / sequential nbclient = {grader_s / nbc_s:.3f} "
            f"(goal: at most 0.10); speed-up {nbc_s / grader_s:.1f}x; in CPU-s "
            f"{grader_cpu.seconds / nbc_cpu.seconds:.3f} (the grader uses every core, nbclient one)"
        )

    print(f"[4] kill-and-resume ... (load before: {load()})", flush=True)
    resume = kill_and_resume(
        folder, work / "resume" / "gradebook.csv", args.workers, kill_after=max(1, n // 3)
    )
    wanted = {(s, ex) for s, verdicts in expected.items() for ex in list(verdicts) + ["TOTAL"]}
    lost = len(wanted - resume["keys"])
    print(
        f"    killed with SIGKILL after {resume['killed_after']} of {n} submissions were "
        f"written; rerun exit code {resume['rerun_rc']}; rows {resume['rows']} (expected "
        f"{len(wanted)}): lost {lost}, duplicated {resume['duplicated']}"
    )
    print(f"done; load average {load()}; files in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
