"""Limits per submission (issue 34, item 4): memory, processes and CPU time bind the whole tree of
a graded process, not each process, and a classmate graded beside it loses nothing.

One grader run per mechanism this machine has (the fallback, forced with COURSE_GRADER_NO_CGROUP
even where cgroups exist; cgroup v2 where this grader may delegate one) grades the attack9
fixtures beside an honest notebook: three children of 600 MB under a 1024 MB budget, a fork bomb
of spinners, two spinners under a 15 s CPU budget. Then the mechanisms' parts on their own.
"""

import json
import os
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from course_lib.grading import limits
from course_lib.grading.sandbox import Limits
from support import submissions  # noqa: E402

ATTACKS = {
    "attack9_memory": (limits.MEMORY, "1024 MB", "ALL-CHILDREN-DONE"),
    "attack9_forkbomb": (limits.PROCESSES, "64 processes", "BOMB-SURVIVED"),
    "attack9_spinner": (limits.CPU, "15 s of CPU time", "SPUN-A-MINUTE"),
}
ARGS = ["--workers", 2, "--cell-timeout", 40, "--memory-mb", 1024, "--cpu-seconds", 15]
MODES = {"fallback": {limits.OFF_VAR: "1"}}
if limits.choose().mechanism == limits.CGROUP:  # noqa: SIM102 - only where this machine allows
    MODES["cgroup"] = {}


@pytest.fixture(scope="module", params=list(MODES))
def graded(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("limits")
    subs, out = tmp / "submissions", tmp / "out" / "gradebook.csv"
    subs.mkdir()
    submissions.write_all(subs, list(ATTACKS))
    (subs / "honest.ipynb").write_text(json.dumps(submissions.bases()["reference"]))
    proc = submissions.run_grader(subs, out, *ARGS, env=MODES[request.param])
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = {
        p.stem: json.loads(p.read_text())
        for p in out.with_name("gradebook_feedback").glob("*.json")
    }
    summary = out.with_name("gradebook.summary.csv").read_text()
    return {"mode": request.param, "records": records, "summary": summary, "stderr": proc.stderr}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_a_tree_over_its_limit_gets_that_limit_as_its_status(graded, name):
    status, words, survived = ATTACKS[name]
    record = graded["records"][name]
    assert record["status"] == status, record["run"]["summary"]
    assert words in record["run"]["summary"] and status in record["run"]["summary"]
    assert survived not in record["output"]["stdout"]  # stopped in that cell, not after it
    assert record["points"] == record["max_points"]  # what it had earned before stays


def test_the_honest_classmate_loses_nothing(graded):
    record = graded["records"]["honest"]
    assert (record["status"], record["points"]) == ("ok", record["max_points"])
    assert record["run"]["seconds"] < 30  # a generous bound: alone it takes under a second


def test_the_summary_names_the_mechanism(graded):
    line = "limits: cgroup v2" if graded["mode"] == "cgroup" else "limits: fallback (no cgroup"
    assert line in graded["summary"]
    if graded["mode"] == "fallback":
        assert f"switched off ({limits.OFF_VAR})" in graded["summary"]


# ---------------------------------------------------------------- the fallback's parts
LIMITS = Limits(memory_mb=200, processes=64, cpu_seconds=1.0)
FORKS = """
import os, sys, time
n, mb, spin = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "spin"
for _ in range(n):
    if os.fork() == 0:
        block = b"\\1" * (mb * 2**20)
        end = time.time() + 20
        while time.time() < end:
            if not spin:
                time.sleep(0.05)
        os._exit(0)
time.sleep(20)
"""


def _tree_of(n, mb, spin):
    proc = subprocess.Popen([sys.executable, "-c", FORKS, str(n), str(mb), spin])
    for _ in range(200):
        if len(limits.tree(proc.pid)) == n + 1:
            break
        time.sleep(0.05)
    time.sleep(0.3)  # the children's blocks are written
    return proc


def _watch(proc, watcher, budget=LIMITS, looks=25):
    child = types.SimpleNamespace(pid=proc.pid, seen=None)
    for _ in range(looks):
        hit = watcher.watch(child, budget)
        if hit:
            return hit
        time.sleep(limits.WATCH_EVERY)
    return ""


@pytest.fixture
def stop():
    procs = []
    yield procs.append
    for proc in procs:
        limits.kill_all(limits.tree(proc.pid))
        proc.kill()
        proc.wait()


def test_fallback_sums_the_memory_of_the_tree(stop):
    """Three children of 100 MB: each alone under 200 MB, together over it; the tree is killed."""
    proc = _tree_of(3, 100, "sleep")
    stop(proc)
    assert _watch(proc, limits.Fallback("test")) == limits.MEMORY
    proc.wait(timeout=10)
    assert limits.tree(proc.pid) == [proc.pid] or proc.poll() is not None


def test_fallback_stops_a_busy_tree_at_its_process_limit_not_a_waiting_one(stop):
    waiting = _tree_of(8, 0, "sleep")
    stop(waiting)
    small = Limits(memory_mb=4096, processes=8, cpu_seconds=0)
    assert _watch(waiting, limits.Fallback("test"), small, looks=5) == ""
    busy = _tree_of(8, 0, "spin")
    stop(busy)
    assert _watch(busy, limits.Fallback("test"), small) == limits.PROCESSES


def test_fallback_cpu_budget_and_the_extra_processes_are_niced(stop):
    proc = _tree_of(2, 0, "spin")
    stop(proc)
    watcher = limits.Fallback("test")
    child = types.SimpleNamespace(pid=proc.pid, seen=None)
    assert watcher.watch(child, Limits(cpu_seconds=1000)) == ""
    kids = limits.tree(proc.pid)[1:]
    assert kids and all(int(limits._stat(pid)[16]) == limits.EXTRA_NICE for pid in kids)
    assert int(limits._stat(proc.pid)[16]) == os.getpriority(os.PRIO_PROCESS, 0)  # its own: not
    assert _watch(proc, watcher, Limits(memory_mb=4096, cpu_seconds=1.0)) == limits.CPU


def test_forced_off_and_reasons():
    os.environ[limits.OFF_VAR] = "1"
    try:
        chosen = limits.choose()
    finally:
        del os.environ[limits.OFF_VAR]
    assert chosen.mechanism == limits.FALLBACK
    assert (
        chosen.describe()
        == f"limits: fallback (no cgroup delegation: switched off ({limits.OFF_VAR}))"
    )
    assert limits.reason(limits.MEMORY, Limits(memory_mb=1024)).endswith("(memory limit)")


# ---------------------------------------------------------------- cgroup v2's control files
def _fake_cgroupfs(tmp_path: Path, controllers="memory pids cpu", procs="1\n2\n") -> Path:
    """A stand-in for a cgroup v2 root: its files as the kernel shows them (no kernel behind)."""
    (tmp_path / "cgroup.controllers").write_text(controllers)
    (tmp_path / "cgroup.subtree_control").write_text("")
    (tmp_path / "cgroup.procs").write_text(procs)
    return tmp_path


def test_cgroup_leaf_gets_the_budgets_and_its_counters_name_the_limit(tmp_path):
    trees = limits.Cgroups.create(str(_fake_cgroupfs(tmp_path)), "/")
    assert isinstance(trees, limits.Cgroups), trees
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+memory +pids +cpu"
    leaf = Path(trees.open(7, Limits(memory_mb=1024, processes=64)))
    assert (leaf / "memory.max").read_text() == str(2**30)
    assert (leaf / "pids.max").read_text() == "64"
    child = types.SimpleNamespace(cgroup=str(leaf), seen=None)
    (leaf / "cpu.stat").write_text("usage_usec 2000000\n")
    assert trees.watch(child, Limits(cpu_seconds=10)) == ""
    (leaf / "cpu.stat").write_text("usage_usec 12000000\n")
    (leaf / "cgroup.procs").write_text("")
    assert trees.watch(child, Limits(cpu_seconds=10)) == limits.CPU
    assert (leaf / "cgroup.kill").read_text() == "1"  # the whole tree, by the kernel
    (leaf / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    assert trees.finished(child, Limits(cpu_seconds=100)) == limits.MEMORY


def test_cgroup_refused_without_controllers_or_alone_in_a_delegated_one(tmp_path):
    assert "no pids, cpu controller" in limits.Cgroups.create(
        str(_fake_cgroupfs(tmp_path, "memory")), "/"
    )
    nested = tmp_path / "user.slice"
    nested.mkdir()
    _fake_cgroupfs(nested, procs="1\n2\n")
    assert "holds other processes" in limits.Cgroups.create(str(tmp_path), "/user.slice")
