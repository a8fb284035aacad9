"""Where one grader run's time goes: the parent's steps, each graded process's phases, idle cores.

    .venv/bin/python benchmarks/grading_profile.py [--chapter 03] [--right 6 --wrong 2 --blank 0]

Grades a class made from the answer key (as benchmarks/grading_speed.py does) with the grader
run in this process, timing (wall seconds) every step of the parent (spawning, reading pipes,
the guard, the judge's round trips, records, waiting) and, from the arrival of each graded
process's report lines, its phases: fork to isolated, its own work, exit seen. Then it says how
long a worker slot stood empty while work was queued (start-up and tail included). A
measurement, not a pass/fail test; on a busy machine compare the shares, not the seconds.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

SPENT = defaultdict(float)  # parent step -> seconds
COUNT = defaultdict(int)


def timed(owner, name: str, label: str) -> None:
    """Wrap owner.name so that its wall seconds add up under `label`."""
    inner = getattr(owner, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            SPENT[label] += time.perf_counter() - start
            COUNT[label] += 1

    setattr(owner, name, wrapper)


def cpu_of(pid: int) -> float:
    """User and system CPU seconds of a live process (not of its children)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    from grading_speed import class_arguments, make_class

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args = class_arguments(parser).parse_args()

    work = Path(tempfile.mkdtemp(prefix="grading-profile-"))
    (work / "subs").mkdir()
    make_class(args.chapter, work / "subs", args.right, args.wrong, args.blank)

    from course_lib import processes
    from course_lib.grading import gradebook, outcome, parent, protocol, record, scheduler
    from course_lib.grading import zygote as zyg

    events = []  # (time, child pid, what)
    test_seconds = defaultdict(list)  # a check's test index -> its run half's seconds, as reported
    feed = protocol.Child.feed

    def feed_and_note(self, data):
        new = feed(self, data)
        now = time.perf_counter()
        for message in new:
            events.append((now, self.pid, message.get("kind")))
            if message.get("kind") == "test" and isinstance(message["seen"], dict):
                test_seconds[message["index"]].append(message["seen"].get("seconds") or 0)
        return new

    protocol.Child.feed = feed_and_note
    start_child = scheduler.Scheduler.start

    def start_and_note(self, task, role, payload, files=()):
        before = time.perf_counter()
        child = start_child(self, task, role, payload, files)
        events.append((before, child.pid, "spawn requested"))
        events.append((time.perf_counter(), child.pid, "spawned"))
        return child

    scheduler.Scheduler.start = start_and_note
    reap = scheduler.Scheduler._reap

    def reap_and_note(self):
        finished = reap(self)
        now = time.perf_counter()
        for child in finished:
            events.append((now, child.pid, "exit seen"))
        return finished

    scheduler.Scheduler._reap = reap_and_note
    busy = []  # (time, running, queued)
    loop_step = scheduler.Scheduler.step

    def step_and_note(self):
        busy.append((time.perf_counter(), len(self.running)))
        return loop_step(self)

    scheduler.Scheduler.step = step_and_note
    timed(scheduler.selectors.DefaultSelector, "select", "waiting in select")
    long_lived = {}  # the zygote's and the judge's CPU seconds, read just before the zygote stops
    stop = scheduler.Scheduler.stop

    def stop_and_read(self):
        if self.zygote is not None and self.zygote.process.poll() is None:
            zygote = self.zygote.process.pid
            long_lived["zygote"] = cpu_of(zygote)
            for pid in processes.children(zygote):  # the judge: every graded process has ended
                long_lived[f"judge (pid {pid})"] = cpu_of(pid)
        return stop(self)

    scheduler.Scheduler.stop = stop_and_read
    for owner, name, label in (
        (parent.Grader, "_prepare", "start-up: zygote, judge, intake"),
        (parent.Grader, "_specs", "judge's specs and check warm-up"),
        (parent.Grader, "_guard_check", "guard check after exits"),
        (parent.Grader, "_write_texts", "texts.csv at the end"),
        (scheduler.Scheduler, "_read", "reading report pipes"),
        (scheduler.Scheduler, "_deadlines", "deadlines"),
        (scheduler.Scheduler, "stop", "stopping zygote"),
        (zyg.ZygoteClient, "spawn", "spawn round trip (zygote fork)"),
        (zyg.ZygoteClient, "poll", "zygote exit messages"),
        (scheduler, "make_scratch", "scratch folders"),
        (scheduler, "write_job", "job files"),
        (outcome, "finish_notebook", "notebook verdicts (judge round trip)"),
        (outcome, "finish_check", "function verdicts (judge round trip)"),
        (record.feedback, "render", "record: feedback Markdown"),
        (gradebook, "write_atomic", "record: atomic writes (fsync)"),
        (gradebook.Gradebook, "append", "record: gradebook append (fsync)"),
        (gradebook.Gradebook, "write_summary", "record: summary.csv"),
        (parent.Grader, "_record", "record: all of it"),
    ):
        timed(owner, name, label)

    begin = time.perf_counter()
    cpu_before = os.times()
    report = parent.Grader(
        work / "subs", work / "book.csv", workers=args.workers, progress=False, fresh=True
    ).run()
    wall = time.perf_counter() - begin
    cpu_after = os.times()
    own = (cpu_after.user - cpu_before.user) + (cpu_after.system - cpu_before.system)
    kids = (cpu_after.children_user - cpu_before.children_user) + (
        cpu_after.children_system - cpu_before.children_system
    )
    print(
        f"{report['graded']} submissions, {report['processes']} graded processes, "
        f"{wall:.2f} s wall; parent {own:.2f} CPU-s, zygote/judge/graded {kids:.2f} CPU-s; "
        f"load {' '.join(Path('/proc/loadavg').read_text().split()[:3])}"
    )
    print(
        "long-lived processes at the end (own CPU-s): "
        + ", ".join(f"{k} {v:.2f}" for k, v in long_lived.items())
    )
    print("\nparent steps (wall s, calls):")
    for label, seconds in sorted(SPENT.items(), key=lambda kv: -kv[1]):
        print(f"  {label:<44} {seconds:7.3f}  {COUNT[label]:5d}")

    phases = defaultdict(list)
    by_pid = defaultdict(dict)
    for when, pid, what in events:
        by_pid[pid].setdefault(what, when)
    roles = {}
    for pid, seen in by_pid.items():
        role = "check" if "sandbox" in seen else "notebook"
        roles[pid] = role
        first = seen.get("sandbox", seen.get("start"))
        if first is None or "spawned" not in seen:
            continue
        phases[role, "spawn round trip"].append(seen["spawned"] - seen["spawn requested"])
        phases[role, "spawned -> isolated (first line)"].append(first - seen["spawned"])
        if role == "check":
            phases[role, "isolated -> defined"].append(seen["defined"] - first)
            if "test" in seen:
                phases[role, "defined -> first test"].append(seen["test"] - seen["defined"])
                phases[role, "first test -> done"].append(seen["done"] - seen["test"])
        else:
            phases[role, "isolated -> done (cells)"].append(seen["done"] - first)
        phases[role, "done -> exit seen"].append(seen["exit seen"] - seen["done"])
        phases[role, "whole (spawn -> exit seen)"].append(
            seen["exit seen"] - seen["spawn requested"]
        )
    print("\ngraded processes (wall s: median, sum):")
    for (role, phase), xs in phases.items():
        print(f"  {role:<8} {phase:<36} {statistics.median(xs):7.3f} {sum(xs):8.2f}  (n={len(xs)})")

    print(
        "check tests' run halves as the process timed them (median s by index): "
        + ", ".join(f"{i}: {statistics.median(v):.3f}" for i, v in sorted(test_seconds.items()))
    )
    slots = report.get("workers") or len(os.sched_getaffinity(0))
    first_spawn = min(w for w, _, what in events if what == "spawn requested")
    last_exit = max(w for w, _, what in events if what == "exit seen")
    empty = 0.0
    for (t0, running), (t1, _) in zip(busy, busy[1:]):
        empty += max(0, slots - running) * (t1 - t0)
    print(
        f"\nslots: {slots}; start-up before the first spawn {first_spawn - begin:.2f} s; "
        f"first spawn -> last exit {last_exit - first_spawn:.2f} s; "
        f"after {wall - (last_exit - begin):.2f} s; "
        f"slot-seconds empty between first spawn and last exit: {empty:.2f}"
    )
    cells = defaultdict(list)
    for path in (work / "book_feedback").glob("*.json"):
        rec = json.loads(path.read_text())
        for c in rec["run"]["cells"]:
            if isinstance(c.get("seconds"), (int, float)):
                cells[c["cell"]].append(c["seconds"])
    top = sorted(cells.items(), key=lambda kv: -statistics.median(kv[1]))[:8]
    print(
        "slowest notebook cells in the graded process (median s): "
        + ", ".join(f"cell {k} {statistics.median(v):.3f}" for k, v in top)
    )
    print(f"files in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
