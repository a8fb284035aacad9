"""processes.children: the pids grading, chapter 07's torchrun kill and the benchmarks walk."""

import os
import subprocess
import sys

from course_lib import processes


def sleeper() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def test_a_started_child_is_found_until_it_is_reaped():
    child = sleeper()
    try:
        assert child.pid in processes.children()
        assert child.pid in processes.children(os.getpid())
    finally:
        child.kill()
        child.wait()
    assert child.pid not in processes.children()


def test_a_grandchild_is_its_parents_child_not_ours():
    parent = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys, time; "
         "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
         "print(c.pid, flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        grandchild = int(parent.stdout.readline())
        assert processes.children(parent.pid) == [grandchild]
        assert grandchild not in processes.children()
        assert processes._children_by_parent(parent.pid) == [grandchild]
    finally:
        os.kill(grandchild, 9)
        parent.kill()
        parent.wait()


def test_without_children_files_every_process_parent_is_read(monkeypatch):
    child = sleeper()
    try:

        def no_files(pid):
            raise FileNotFoundError(f"/proc/{pid}/task/1/children")

        monkeypatch.setattr(processes, "_threads_children", no_files)
        assert child.pid in processes.children()
    finally:
        child.kill()
        child.wait()


def test_a_gone_process_and_a_machine_without_proc_have_no_children(monkeypatch):
    child = sleeper()
    child.kill()
    child.wait()
    assert processes.children(child.pid) == []
    real = os.listdir
    monkeypatch.setattr(
        os, "listdir",
        lambda p: (_ for _ in ()).throw(FileNotFoundError(p)) if str(p).startswith("/proc")
        else real(p),
    )  # fmt: skip
    assert processes.children() == []
