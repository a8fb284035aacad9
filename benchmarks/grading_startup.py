"""What one grader run costs before and around its graded processes: CPU seconds per process.

    .venv/bin/python benchmarks/grading_startup.py [--chapter 01] [--cases reference]

The suite starts the grader about thirty times (fixture classes of a few notebooks), so its fixed
cost counts more there than in a class of forty. This grades the chosen cases of one chapter (the
answer key's reference, blank and known-wrong notebooks, `grading.selftest.chapter_cases`) with
`python -m course_lib grade` run in this process, and prints the CPU seconds of the parent (this
process: intake, scheduling, records; it never imports torch) and the zygote with the judge and
every graded process it forked (the judge is forked by the zygote after torch's import). Prints
the load average beside the figures; a measurement, not a pass/fail test.
"""

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


WRITE_CASES = """
import json, sys
from course_lib.grading.selftest import chapter_cases
chapter, folder, *cases = sys.argv[1:]
for case in chapter_cases(chapter):
    if case.name.split("-", 1)[1] in cases:
        open(f"{folder}/{case.name}.ipynb", "w").write(json.dumps(case.notebook))
"""


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapter", default="01")
    parser.add_argument("--cases", nargs="*", default=["reference"], help="e.g. reference blank")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="grading-startup-"))
    (folder / "subs").mkdir()
    subprocess.run(  # built in another process: building them imports the key and torch
        [sys.executable, "-c", WRITE_CASES, args.chapter, str(folder / "subs"), *args.cases],
        check=True,
        cwd=ROOT,
    )
    names, cpu = {}, {}
    popen_init, wait4 = subprocess.Popen.__init__, os.wait4

    def init(self, cmd, *a, **k):  # remember which process is which
        popen_init(self, cmd, *a, **k)
        names[self.pid] = next((str(c) for c in cmd if str(c).startswith("course_lib.")), cmd[0])

    def waitpid(pid, options):  # the rusage of each child (with what it reaped) as it is waited
        got, status, usage = wait4(pid, options)
        if got:
            cpu[got] = usage.ru_utime + usage.ru_stime
        return got, status

    subprocess.Popen.__init__, os.waitpid = init, waitpid
    from course_lib.__main__ import main as course

    before, start = load(), time.perf_counter()
    code = course(["grade", str(folder / "subs"), "--out", str(folder / "book.csv"), "--fresh",
                   "--no-progress"])  # fmt: skip
    wall = time.perf_counter() - start
    own = resource.getrusage(resource.RUSAGE_SELF)
    print(f"chapter {args.chapter}, cases {' '.join(args.cases)}: exit {code}, {wall:.1f} s wall")
    print(f"  {'parent (this process)':<40} {own.ru_utime + own.ru_stime:6.2f} CPU-s")
    for pid, seconds in cpu.items():
        print(f"  {names.get(pid, pid):<40} {seconds:6.2f} CPU-s")
    print(f"load average before {before}, after {load()}")
    return code


if __name__ == "__main__":
    sys.exit(main())
