"""Step 2 of grading: run the graded processes, at most `workers` at a time (parent).

The scheduler owns the zygote, starts each task's process through it,
reads the processes' report pipes, enforces the time limits (SIGINT for a cell, then
SIGKILL) and hands every finished process back. It decides nothing about grades.
"""

import dataclasses
import os
import selectors
import shutil
import signal
import time
from pathlib import Path

from .child import write_job
from .environment import copy_private, write_private
from .protocol import Child
from .sandbox import make_scratch
from .zygote import ZygoteClient

POLL = 0.05


class Scheduler:
    """Processes in flight, their zygote and their deadlines."""

    def __init__(self, scratch_root: Path, limits, workers: int, on_message, keep_scratch=False):
        self.root, self.limits, self.workers = Path(scratch_root), limits, workers
        self.on_message, self.keep_scratch = on_message, keep_scratch
        self.running = {}
        self.started = 0
        self.selector = selectors.DefaultSelector()
        self.zygote = None

    # ------------------------------------------------------------------ the zygote
    def start_zygote(self, judge_fds=()) -> None:
        """Start the zygote; with `judge_fds` (the judge's ends of its pipes) it forks the judge."""
        self.zygote = ZygoteClient(self.root, judge_fds=judge_fds)
        self.selector.register(self.zygote.sock, selectors.EVENT_READ, None)  # exits wake step()

    def isolation(self) -> dict:
        """What the zygote found this machine allows (its probe of namespaces and Landlock)."""
        info = self.zygote.hello()
        if "error" in info:
            raise RuntimeError("the grading zygote could not start:\n" + info["error"])
        return info

    def warm(self, specs: list) -> None:
        """The zygote runs each of these [builder, inputs] run halves once, on a function that does
        nothing (no student code, no key): their first-use costs are paid once, not per process."""
        self.zygote.warm("check", specs)

    def warm_notebooks(self, exercise_ids: list) -> None:
        """The zygote computes these exercises' visible tests' references (public data)."""
        self.zygote.warm("notebook", exercise_ids)

    # ------------------------------------------------------------------ processes
    def start(self, task, role: str, payload: dict, files=()) -> Child:
        """Start one graded process for `task`; `payload` is its job, `files`
        ((name, bytes) pairs or paths of course files) go into its scratch copy."""
        self.started += 1
        scratch = make_scratch(self.root, f"{self.started}{role[0]}")
        for source in files:
            if isinstance(source, tuple):
                write_private(scratch / "work" / source[0], source[1])
            else:
                copy_private(source, scratch / "work" / Path(source).name)
        job_file = self.root / f"{scratch.name}.job"
        write_job(job_file, payload)  # read by the child itself, after the fork
        read_fd, write_fd = os.pipe()
        job = {
            "id": self.started,
            "file": str(job_file),
            "role": role,
            "scratch": str(scratch),
            "limits": dataclasses.asdict(self.limits),
        }
        try:
            pid, pidfd = self.zygote.spawn(job, write_fd)
        finally:
            os.close(write_fd)
        os.set_blocking(read_fd, False)
        child = Child(pid=pid, fd=read_fd, role=role, pidfd=pidfd, task=task)
        child.scratch = scratch
        self.running[pid] = child
        self.selector.register(read_fd, selectors.EVENT_READ, child)
        return child

    def has_room(self) -> bool:
        return len(self.running) < self.workers

    def step(self) -> list:
        """Wait a moment; returns the processes that ended."""
        for key, _ in self.selector.select(POLL):
            if key.data is not None:  # a report pipe (None: the zygote said a process ended)
                self._read(key.data)
        self._deadlines()
        return self._reap()

    def _read(self, child) -> None:
        while True:
            try:
                data = os.read(child.fd, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                return
            if not data:
                try:
                    self.selector.unregister(child.fd)
                except (KeyError, ValueError):
                    pass
                return
            for message in child.feed(data):
                self.on_message(child, message)

    def _deadlines(self) -> None:
        now = time.monotonic()
        for child in list(self.running.values()):
            if child.status is not None:
                continue
            if child.cell_deadline and now > child.cell_deadline and not child.kill_at:
                child.interrupted_cells.append(child.current_cell)
                child.kill_at = now + self.limits.interrupt_grace
                child.signal(signal.SIGINT)
            if child.kill_at and now > child.kill_at:
                child.kill(
                    f"killed: cell {child.current_cell} ran past its "
                    f"{self.limits.cell_timeout:g} s limit and ignored the interrupt"
                )
            elif now > child.deadline:
                what = (
                    f"the notebook's {self.limits.timeout:g} s limit"
                    if child.role == "notebook"
                    else "the time limit of the check"
                )
                child.kill(
                    f"killed: ran past {what}"
                    + (f" (in cell {child.current_cell})" if child.role == "notebook" else "")
                )

    def _reap(self) -> list:
        exits = self.zygote.poll()
        finished = []
        for pid, status in exits.items():
            child = self.running.pop(pid, None)
            if child is None:
                continue
            child.status = status
            self._read(child)
            try:
                self.selector.unregister(child.fd)
            except (KeyError, ValueError):
                pass
            child.close()
            if not self.keep_scratch:
                shutil.rmtree(child.scratch, ignore_errors=True)
            finished.append(child)
        return finished

    def stop(self) -> None:
        """Kill what still runs, stop the zygote (its children die with it), remove scratch."""
        for child in list(self.running.values()):
            child.kill("grader stopped")
            child.close()
        if self.zygote is not None:
            self.zygote.close()
        self.selector.close()
        if not self.keep_scratch:
            shutil.rmtree(self.root, ignore_errors=True)
