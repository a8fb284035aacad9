"""How long a maintainer waits for CI: `.ci/run` on a clean clone, against the goals (issue 20).

    .venv/bin/python benchmarks/ci_speed.py [--keep DIR] [--ref HEAD] [-- PYTEST_ARGS...]
    .venv/bin/python benchmarks/ci_speed.py --timeline FILE   (only read a recorded timeline)

Clones the checkout's commit (`--ref`, default HEAD) into a fresh folder, runs `CI=true bash
.ci/run` there as CI does (it installs everything into the clone's own .venv, then runs the
README's test command), and prints the whole run's time, pytest's own time (its closing line),
the install time (the rest), the test counts and the load average before and after, beside the
goals: the whole run within 600 s on this 2-core machine, pytest within 360 s. Extra arguments
after `--` go to the test command (e.g. `-- -m "not browser"`); without them it is CI's run.
The run records its timeline (conftest.py's COURSE_TEST_TIMELINE: each test phase's worker,
start, stop and CPU) and prints each worker's busy and idle time, the longest groups and tests
and each worker's last ones. A measurement, not a pass/fail test.
"""

import argparse
import bisect
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CI_GOAL_S, PYTEST_GOAL_S = 600, 360
CLOSING = re.compile(r"=*\s*(?P<counts>(?:\d+ \w+(?:, )?)+) in (?P<seconds>[\d.]+)s")


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def clone(ref: str, folder: Path) -> Path:
    """A clean clone of `ref` of this checkout (committed files only, as CI sees them)."""
    target = folder / "clone"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(target)], check=True)
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", ref], check=True, capture_output=True, text=True
    ).stdout.strip()
    subprocess.run(["git", "-C", str(target), "checkout", "-q", commit], check=True)
    return target


def read_timeline(path: Path) -> tuple:
    """(phases, samples, session start, session finish) of a COURSE_TEST_TIMELINE file (its
    last run): the test phases in start order, and {worker: [(time, running threads)]}."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    starts = [i for i, r in enumerate(rows) if r.get("event") == "start"]
    rows = rows[starts[-1] :] if starts else rows
    begin = rows[0]["time"] if starts else min(r["start"] for r in rows if "start" in r)
    finish = [r["time"] for r in rows if r.get("event") == "finish"]
    phases = sorted((r for r in rows if "nodeid" in r), key=lambda r: r["start"])
    end = finish[-1] if finish else max(r["stop"] for r in phases)
    worker_of = {str(r.get("pid")): r["worker"] for r in phases}
    samples = {}
    for r in rows:
        for pid, running in r.get("running", {}).items():
            if pid in worker_of:
                times, idle = samples.setdefault(worker_of[pid], ([], [0]))
                times.append(r["time"])
                idle.append(idle[-1] + (running == 0))
    return phases, samples, begin, end


def waiting_s(samples: tuple, start: float, stop: float, step: float = 0.25) -> float:
    """Seconds within [start, stop] in which none of the worker's threads ran or could run
    (`samples`: the sample times, and how many of the first n samples saw none running)."""
    times, idle = samples
    low, high = bisect.bisect_left(times, start), bisect.bisect_right(times, stop)
    return step * (idle[high] - idle[low])


def units(phases: list, samples: dict) -> dict:
    """{(worker, group or test id): [start, stop, wall in its phases, CPU-s, waiting s]}, in
    start order: a group's tests as one unit (CPU: the worker's tree, tree_cpu of conftest.py)."""
    out, last = {}, {}
    for r in phases:
        key = (r["worker"], r["group"] or r["nodeid"])
        unit = out.setdefault(key, [r["start"], 0, 0, 0, 0])
        unit[1] = r["stop"]
        unit[2] += r["stop"] - r["start"]
        before = last.get(r["worker"])
        if r["cpu"] and before and before["cpu"]:
            unit[3] += sum(r["cpu"]) - sum(before["cpu"])
        unit[4] += waiting_s(samples.get(r["worker"], ([], [0])), r["start"], r["stop"])
        last[r["worker"]] = r
    return out


def print_units(title: str, rows: list, top: int, at) -> None:
    print(f"  {len(rows)} {title}, {sum(v[2] for _, v in rows):.0f} s; the longest:")
    print("      wall    CPU   wait  worker  from-to s")
    for (worker, name), (start, stop, wall, cpu, wait) in rows[:top]:
        span = f"{at(start):4.0f}-{at(stop):4.0f}"
        print(f"    {wall:6.1f} {cpu:6.1f} {wait:6.1f}  {worker:6}  {span}  {name[:110]}")


def print_timeline(path: Path, top: int = 25) -> None:
    """Each worker's busy, waiting and idle time, the longest groups and tests (wall, CPU-s of
    the worker's processes, seconds in which none of them ran), each worker's last ones."""
    phases, samples, begin, end = read_timeline(path)
    first = min(r["start"] for r in phases)
    print(f"\ntimeline {path}: session {end - begin:.0f} s, first test after {first - begin:.1f} s")
    at = lambda t: t - begin
    by_worker = {}
    for r in phases:
        by_worker.setdefault(r["worker"], []).append(r)
    for worker, rows in sorted(by_worker.items()):
        busy = sum(r["stop"] - r["start"] for r in rows)
        gaps = sum(max(0, r["start"] - b["stop"]) for b, r in zip(rows, rows[1:]))
        wait = waiting_s(samples.get(worker, ([], [0])), rows[0]["start"], rows[-1]["stop"])
        cpu = sum(rows[-1]["cpu"] or [0]) - sum(rows[0]["cpu"] or [0])
        print(
            f"  {worker}: {len(rows) // 3} tests from {at(rows[0]['start']):.0f} to"
            f" {at(rows[-1]['stop']):.0f} s (then idle {end - rows[-1]['stop']:.0f} s):"
            f" in tests {busy:.0f} s, between tests {gaps:.1f} s; CPU {cpu:.0f} s;"
            f" waiting (no thread of its tree running) {wait:.0f} s"
        )
    table = units(phases, samples)
    longest = lambda single: sorted(
        ((k, v) for k, v in table.items() if ("::" in k[1]) == single), key=lambda kv: -kv[1][2]
    )
    print_units("groups", longest(False), top, at)
    print_units("single tests", longest(True), top, at)
    waits = sorted(table.items(), key=lambda kv: -kv[1][4])
    print_units("units by waiting (same columns)", waits, top, at)
    for worker in sorted(by_worker):
        last = [kv for kv in table.items() if kv[0][0] == worker][-3:]
        said = ", ".join(f"{n} ({v[2]:.0f} s from {at(v[0]):.0f} s)" for (_, n), v in last)
        print(f"  {worker} ended with: {said}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", help="clone into this folder and keep it (default: a temp one)")
    parser.add_argument("--ref", default="HEAD", help="the commit to clone (default HEAD)")
    parser.add_argument("--timeline", help="only print the timeline recorded in this file")
    parser.add_argument("pytest_args", nargs="*", help="after --: extra arguments for the tests")
    args = parser.parse_args()
    if args.timeline:
        print_timeline(Path(args.timeline))
        return 0
    folder = Path(args.keep or tempfile.mkdtemp(prefix="ci-speed-"))
    folder.mkdir(parents=True, exist_ok=True)
    repo = clone(args.ref, folder)
    log = folder / "ci.log"
    cmd = (
        ["bash", ".ci/run"] if not args.pytest_args else ["./course.sh", "test", *args.pytest_args]
    )
    print(f"{os.cpu_count()} CPUs; clean clone of {args.ref} in {repo}; load average {load()}")
    print(f"running: CI=true {' '.join(cmd)} (log: {log})", flush=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "COURSE_"))}
    env["CI"] = "true"
    env["COURSE_TEST_TIMELINE"] = str(folder / "timeline.jsonl")
    start = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.run(cmd, cwd=repo, env=env, stdout=out, stderr=subprocess.STDOUT)
    total = time.perf_counter() - start
    text = log.read_text(errors="replace")
    closing = [m for m in CLOSING.finditer(text)]
    pytest_s = float(closing[-1]["seconds"]) if closing else float("nan")
    counts = closing[-1]["counts"] if closing else "no closing line"
    print(f"exit code {proc.returncode}; {counts}; load average after {load()}")
    print(f"whole run (install + tests): {total:6.0f} s   goal: within {CI_GOAL_S} s")
    print(f"pytest:                      {pytest_s:6.0f} s   goal: within {PYTEST_GOAL_S} s")
    print(f"install and the rest:        {total - pytest_s:6.0f} s")
    if (folder / "timeline.jsonl").exists():
        print_timeline(folder / "timeline.jsonl")
    return 0


if __name__ == "__main__":
    sys.exit(main())
