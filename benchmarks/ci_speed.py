"""How long a maintainer waits for CI: `.ci/run` on a clean clone, against the goals (issue 20).

    .venv/bin/python benchmarks/ci_speed.py [--keep DIR] [--ref HEAD] [-- PYTEST_ARGS...]

Clones the checkout's commit (`--ref`, default HEAD) into a fresh folder, runs `CI=true bash
.ci/run` there as CI does (it installs everything into the clone's own .venv, then runs the
README's test command), and prints the whole run's time, pytest's own time (its closing line),
the install time (the rest), the test counts and the load average before and after, beside the
goals: the whole run within 600 s on this 2-core machine, pytest within 360 s. Extra arguments
after `--` go to the test command (e.g. `-- -m "not browser"`); without them it is CI's run.
A measurement, not a pass/fail test.
"""

import argparse
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", help="clone into this folder and keep it (default: a temp one)")
    parser.add_argument("--ref", default="HEAD", help="the commit to clone (default HEAD)")
    parser.add_argument("pytest_args", nargs="*", help="after --: extra arguments for the tests")
    args = parser.parse_args()
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
