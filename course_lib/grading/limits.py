"""Limits for the whole process tree of one graded process: memory, processes, CPU (parent).

An rlimit binds one process: three children of 600 MB each pass a 1024 MB RLIMIT_AS, and sixty
spinning processes take the cores a classmate graded beside them needs. Here each graded process
and everything it starts share one budget, enforced by one of two mechanisms, chosen once per run
by `choose()` and named in the gradebook summary (`describe()`):

- **cgroup v2**, where this grader may create child cgroups and hand them the memory, pids and cpu
  controllers: every graded process joins a cgroup of its own before student code runs (the child
  writes itself into it, sandbox.run_child), so do all its children, whatever they do. memory.max
  (with memory.oom.group: the whole tree goes at once) and pids.max bind in the kernel; the cpu
  controller gives each graded process's cgroup one equal share of the cores under contention;
  cpu.stat's usage is held against the CPU-time budget. The kernel's counters (memory.events
  oom_kill, pids.events max) name the limit that stopped it.
- **fallback** (no cgroup v2, no delegation, or COURSE_GRADER_NO_CGROUP=1): the per-process
  rlimits stay (isolation.set_limits; RLIMIT_NPROC counts per user namespace, so with namespaces
  it binds the tree), and the scheduler's watcher walks the tree in /proc (processes.children)
  every WATCH_EVERY seconds: the private memory of its processes, their tasks and their CPU time,
  summed, against the same budgets; past one the tree is killed. Processes beyond the graded
  process's own are set to nice 19 (and their own sessions' autogroups too), so that sixty
  spinners weigh about one process in the CPU scheduler and a classmate keeps its share.

Either way a tree stopped at a limit gets that limit as its status (LIMIT_STATUSES), for that
student alone.
"""

import os
import platform
import signal
import time
from pathlib import Path

from .. import processes

OFF_VAR = "COURSE_GRADER_NO_CGROUP"
CGROUP, FALLBACK = "cgroup v2", "fallback"
CONTROLLERS = ("memory", "pids", "cpu")
WATCH_EVERY = 0.2  # seconds between two looks at a tree (fallback) or its counters (cgroup)
# A tree at its process limit is stopped once it also keeps this many cores busy (a fork bomb,
# spinners); one that only waits there (sleeping children, a refused fork it handled) goes on.
BUSY_CORES = 0.5
EXTRA_NICE = 19
MEMORY, PROCESSES, CPU = "memory limit", "too many processes", "cpu limit"
LIMIT_STATUSES = (MEMORY, PROCESSES, CPU)
# What the student reads when a limit stopped their processes: status -> reason.
REASONS = {
    MEMORY: "killed: its processes used more than {limit} MB of memory together (memory limit)",
    PROCESSES: "killed: it kept the CPU busy with {limit} processes and threads at once, the "
    "limit (too many processes)",
    CPU: "killed: its processes used more than {limit} s of CPU time together (cpu limit)",
}


def busy_at_limit(child, used: dict, limits) -> dict:
    """`used`, its tasks counted only while the processes beyond the graded process's own keep
    BUSY_CORES busy (its own forking is not a bomb): the rate of `used["extra_cpu"]` since the last
    look, kept on `child` (its `seen`: (monotonic time, CPU seconds))."""
    now, before = time.monotonic(), getattr(child, "seen", None)
    child.seen = (now, used.get("extra_cpu", 0.0))
    rate = (child.seen[1] - before[1]) / max(now - before[0], 1e-3) if before else 0.0
    return used if rate >= BUSY_CORES else dict(used, tasks=0)


def reason(status: str, limits) -> str:
    """The sentence for a tree stopped at `status` (one of LIMIT_STATUSES)."""
    budget = {MEMORY: limits.memory_mb, PROCESSES: limits.processes, CPU: limits.cpu_seconds}
    return REASONS[status].format(limit=f"{budget[status]:g}")


def over(used: dict, limits) -> str:
    """The first limit `used` ({"memory_mb", "tasks", "cpu_seconds"}) has reached, or "": more
    memory or CPU time than the budget, or as many tasks as allowed (the next fork fails)."""
    for status, value, budget, reached_at in (
        (MEMORY, used.get("memory_mb", 0), limits.memory_mb, False),
        (PROCESSES, used.get("tasks", 0), limits.processes, True),
        (CPU, used.get("cpu_seconds", 0), limits.cpu_seconds, False),
    ):
        if budget and (value >= budget if reached_at else value > budget):
            return status
    return ""


# ---------------------------------------------------------------- reading /proc and cgroupfs
def _read(path) -> str:
    with open(path) as f:
        return f.read()


def _write(path, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _keyed(path) -> dict:
    """A cgroup file of `key value` lines (memory.events, cpu.stat) as {key: int}; {} if gone."""
    try:
        return {k: int(v) for k, v in (line.split() for line in _read(path).splitlines() if line)}
    except (OSError, ValueError):
        return {}


def _stat(pid: int) -> list:
    """/proc/PID/stat's fields after the command name (field 3 first); [] when it is gone."""
    try:
        return _read(f"/proc/{pid}/stat").rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def tree(pid: int) -> list:
    """`pid` and every descendant found in /proc now (processes.children, level by level)."""
    found, level = [pid], [pid]
    while level:
        level = [c for p in level for c in processes.children(p) if c not in found]
        found += level
    return found


def private_mb(pid: int) -> float:
    """The memory `pid` holds alone (private pages: what it added to what it shares), in MB."""
    try:
        text = _read(f"/proc/{pid}/smaps_rollup")
    except OSError:
        return 0.0
    kb = sum(int(line.split()[1]) for line in text.splitlines() if line.startswith("Private_"))
    return kb / 1024


def anonymous_mb(pid: int) -> float:
    """An upper bound of private_mb, read cheaply: resident pages not backed by a file (those it
    still shares with the process it was forked from included), in MB."""
    try:
        resident, shared = (int(v) for v in _read(f"/proc/{pid}/statm").split()[1:3])
    except (OSError, ValueError):
        return 0.0
    return (resident - shared) * os.sysconf("SC_PAGE_SIZE") / 2**20


def tree_usage(pids: list, own: int, limits) -> dict:
    """Summed over `pids`: tasks, CPU seconds (their own and their reaped children's), and, past
    the `own` processes the graded process always has and below the process limit, memory: the
    cheap upper bound, and the private pages (a walk of each page table) only when that bound
    passes the budget."""
    ticks = os.sysconf("SC_CLK_TCK")
    used = {"tasks": 0, "cpu_seconds": 0.0, "memory_mb": 0.0, "extra_cpu": 0.0}
    for index, pid in enumerate(pids):
        fields = _stat(pid)
        if len(fields) < 18:
            continue
        used["tasks"] += int(fields[17])  # num_threads
        seconds = sum(int(v) for v in fields[11:15]) / ticks  # user and system, reaped children's
        used["cpu_seconds"] += seconds
        used["extra_cpu"] += seconds if index >= own else 0.0
    if own < len(pids) and used["tasks"] < limits.processes:  # one alone: its RLIMIT_AS binds
        used["memory_mb"] = sum(anonymous_mb(pid) for pid in pids)
        if used["memory_mb"] > limits.memory_mb:
            used["memory_mb"] = sum(private_mb(pid) for pid in pids)
    return used


def kill_all(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


# ---------------------------------------------------------------- the fallback
class Fallback:
    """Budgets summed over the tree /proc shows (see the module docstring)."""

    mechanism = FALLBACK

    def __init__(self, why: str, own: int = 1):
        self.why, self.own = why, own  # own: 2 with namespaces (relay and PID 1), else 1
        self.niced = set()

    def describe(self) -> str:
        return f"limits: fallback (no cgroup delegation: {self.why})"

    def open(self, job_id: int, limits):
        return None

    def adopt(self, pid: int) -> None:
        pass

    def watch(self, child, limits) -> str:
        """The limit `child`'s tree has reached ("" if none); past the graded process's own
        processes, the others are niced."""
        pids = tree(child.pid)
        used = tree_usage(pids, self.own, limits)
        hit = over(busy_at_limit(child, used, limits), limits)
        if hit:
            kill_all(pids)
        else:
            self._nice(pids[self.own :], _stat(pids[min(self.own, len(pids)) - 1]))
        return hit

    def _nice(self, extra: list, root_fields: list) -> None:
        """Every thread of the extra processes to nice 19; a process in a session of its own
        (its own autogroup, which nice alone does not reach) gets its autogroup niced too."""
        for pid in extra:
            try:
                tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
            except OSError:
                continue
            for tid in tids:
                if tid not in self.niced:
                    self.niced.add(tid)
                    try:
                        os.setpriority(os.PRIO_PROCESS, tid, EXTRA_NICE)
                    except OSError:
                        pass
            fields = _stat(pid)
            if fields and root_fields and fields[3] != root_fields[3] and fields[3] == str(pid):
                try:  # a session leader of its own: its autogroup is not the grader's
                    _write(f"/proc/{pid}/autogroup", str(EXTRA_NICE))
                except OSError:
                    pass

    def finished(self, child, limits) -> str:
        return ""

    def close(self, leaf) -> None:
        pass

    def stop(self) -> None:
        pass


# ---------------------------------------------------------------- cgroup v2
def cgroup2_mount() -> str:
    """Where cgroup v2 is mounted ("" if nowhere)."""
    try:
        for line in _read("/proc/self/mountinfo").splitlines():
            left, _, right = line.partition(" - ")
            if right.split()[:1] == ["cgroup2"]:
                return left.split()[4]
    except OSError:
        pass
    return ""


def own_cgroup() -> str:
    """This process's cgroup v2 path ("0::PATH" in /proc/self/cgroup)."""
    for line in _read("/proc/self/cgroup").splitlines():
        if line.startswith("0::"):
            return line[3:]
    return ""


class Cgroups:
    """A cgroup per graded process, under one of this run's own (see the module docstring)."""

    mechanism = CGROUP

    def __init__(self, base: Path, own: int = 1):
        self.base, self.own = Path(base), own
        self.leaves = []

    def describe(self) -> str:
        return f"limits: cgroup v2 ({self.base})"

    @classmethod
    def create(cls, mount: str, own: str):
        """Our own child cgroup with the controllers handed down; or the reason there is none."""
        here = Path(mount + own.rstrip("/"))
        have = set(_read(here / "cgroup.controllers").split())
        missing = [c for c in CONTROLLERS if c not in have]
        if missing:
            return (
                f"cgroup v2 offers no {', '.join(missing)} controller to the grader's cgroup "
                f"{own} (bound to cgroup v1, or not delegated)"
            )
        base = here / f"course-grade-{os.getpid()}"
        try:
            if own.strip("/") and _read(here / "cgroup.procs").split() != [str(os.getpid())]:
                return (
                    f"the grader's cgroup {own} holds other processes; start the grader alone "
                    "in a delegated cgroup (systemd-run --user --scope -p Delegate=yes ...)"
                )
            base.mkdir()
            if own.strip("/"):  # we are alone in a delegated cgroup: step into a leaf of it
                (here / f"course-grader-{os.getpid()}").mkdir()
                _write(here / f"course-grader-{os.getpid()}" / "cgroup.procs", "0")
            wanted = " ".join(f"+{c}" for c in CONTROLLERS)
            _write(here / "cgroup.subtree_control", wanted)
            _write(base / "cgroup.subtree_control", wanted)
            (base / "zygote").mkdir()
        except OSError as err:
            return f"cannot make a child cgroup of {own}: {err.strerror or err}"
        return cls(base)

    def adopt(self, pid: int) -> None:
        """Put the zygote (and the judge it forks) in a leaf of its own: no limits."""
        _write(self.base / "zygote" / "cgroup.procs", str(pid))

    def open(self, job_id: int, limits) -> str:
        """A leaf for one graded process, its limits set; the process joins it itself (join)."""
        leaf = self.base / f"job-{job_id}"
        leaf.mkdir()
        settings = {
            "memory.max": str(limits.memory_mb * 2**20),
            "memory.swap.max": "0",
            "memory.oom.group": "1",
            "pids.max": str(limits.processes),
        }
        for name, value in settings.items():
            if name in ("memory.max", "pids.max") or (leaf / name).exists():  # else: kernel too old
                _write(leaf / name, value)
        self.leaves.append(leaf)
        return str(leaf)

    def watch(self, child, limits) -> str:
        """The CPU-time budget and a refused fork, read from the kernel's counters."""
        if not child.cgroup:
            return ""
        leaf = Path(child.cgroup)
        used = {"cpu_seconds": _keyed(leaf / "cpu.stat").get("usage_usec", 0) / 1e6}
        if _keyed(leaf / "pids.events").get("max", 0):  # a fork was refused: is it a bomb?
            pids = tree(child.pid)
            used.update(
                tasks=limits.processes, extra_cpu=tree_usage(pids, self.own, limits)["extra_cpu"]
            )
        hit = over(busy_at_limit(child, used, limits), limits)
        if hit:
            self.kill(leaf)
        return hit

    def finished(self, child, limits) -> str:
        """After the exit: the limit the kernel enforced on it, if one did."""
        if not child.cgroup:
            return ""
        events = _keyed(Path(child.cgroup) / "memory.events")
        if events.get("oom_kill", 0) or events.get("oom_group_kill", 0):
            return MEMORY
        usage = _keyed(Path(child.cgroup) / "cpu.stat").get("usage_usec", 0) / 1e6
        return over({"cpu_seconds": usage}, limits)

    @staticmethod
    def kill(leaf: Path) -> None:
        try:
            _write(leaf / "cgroup.kill", "1")
        except OSError:
            kill_all(int(p) for p in _read(leaf / "cgroup.procs").split())

    def close(self, leaf) -> None:
        """Kill what is left in a finished process's leaf and remove it (later, if still busy)."""
        if leaf:
            self.kill(Path(leaf))
            self._remove(Path(leaf))

    def _remove(self, leaf: Path) -> None:
        for _ in range(20):
            try:
                leaf.rmdir()
                self.leaves.remove(leaf) if leaf in self.leaves else None
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.005)

    def stop(self) -> None:
        """Remove every leaf and our own cgroup (the zygote has been stopped by then)."""
        for leaf in [*self.leaves, self.base / "zygote", self.base]:
            try:
                if leaf != self.base:
                    self.kill(leaf)
            except OSError:
                pass
            self._remove(leaf)


def join(leaf) -> None:
    """(graded process, right after the fork) Move this process into its leaf, if it has one."""
    if leaf:
        _write(os.path.join(leaf, "cgroup.procs"), "0")


def choose():
    """The mechanism this machine allows: Cgroups where cgroup v2 can be delegated, else Fallback
    with the reason (its `own` is set once the zygote has said whether namespaces hold)."""
    own = 1
    if os.environ.get(OFF_VAR):
        return Fallback(f"switched off ({OFF_VAR})", own)
    if platform.system() != "Linux":
        return Fallback(f"not Linux ({platform.system()})", own)
    mount = cgroup2_mount()
    if not mount:
        return Fallback("no cgroup v2 file system is mounted", own)
    try:
        found = Cgroups.create(mount, own_cgroup())
    except OSError as err:
        found = f"cgroup v2 unreadable: {err}"
    return found if isinstance(found, Cgroups) else Fallback(found, own)
