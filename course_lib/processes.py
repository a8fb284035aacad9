"""Processes as Linux's /proc shows them: who a process's children are (grading, chapter 07's
torchrun runs, the benchmarks). Without /proc (macOS, Windows) no children are found."""

import os


def children(pid: int | None = None) -> list:
    """Pids of `pid`'s children (this process's by default), found as `_threads_children` or
    `_children_by_parent` finds them. A child that a read misses while the list changes is found
    by the next call."""
    try:
        return _threads_children("self" if pid is None else pid)  # /proc/self: in any namespace
    except OSError:
        return _children_by_parent(os.getpid() if pid is None else pid)


def _threads_children(pid) -> list:
    """The children its threads' `children` files list: a few short reads; OSError where the
    kernel has no such files, the process is gone or a thread ended while read."""
    found = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/children") as f:
            found += [int(child) for child in f.read().split()]
    return found


def _children_by_parent(pid: int) -> list:
    """Every process in /proc whose parent is `pid` (one read per process); none without /proc."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    found = []
    for entry in filter(str.isdigit, entries):
        try:
            with open(f"/proc/{entry}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return found
