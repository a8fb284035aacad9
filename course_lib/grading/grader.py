"""Grading a folder of submitted notebooks: the whole class in one command (grader).

    python -m course_lib grade SUBMISSIONS_DIR --out GRADEBOOK.csv [--workers N]

A row of small steps, as nbgrader's autograde: intake.py finds and reads the submissions
(without running them) and chooses their exercises; scheduler.py runs their processes
through two warm zygotes (zygote.py), each process isolated by the kernel (isolation.py);
outcome.py and verdict.py turn what the processes reported into verdicts, deciding every
point in this process, which never runs student code; record.py writes each submission's
rows and feedback as soon as it is done, so a rerun resumes where a killed run stopped.
What a submission can and cannot do: docs/grading-threat-model.md.
"""
import os
import sys
import time
from collections import Counter
from pathlib import Path

from . import gradebook, intake, isolation, outcome, record
from .analyze import check_source
from .guard import Guard
from .scheduler import Scheduler


def hide_gpus() -> None:
    """This process's own quiz checks see no GPU either (if CUDA is not yet initialised here)."""
    for name in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"):
        os.environ[name] = ""
    os.environ["COURSE_DEVICE"] = "cpu"


class Grader:
    """Grades every notebook under `folder` into the gradebook `out` (see the module docstring)."""

    def __init__(self, folder, out, workers=None, chapters=None, limits=None, progress=True, fresh=False,
                 keep_scratch=False, log=None):
        from .sandbox import Limits
        self.folder, self.out = Path(folder), Path(out).resolve()
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        self.workers = max(1, workers or cores or 1)
        self.chapters = set(chapters or [])
        self.limits = limits or Limits()
        self.progress, self.fresh, self.keep_scratch = progress, fresh, keep_scratch
        self.log = log or (lambda text: print(text, file=sys.stderr))
        self.paths = gradebook.paths(self.out)
        self.queue, self.stats, self.notes = [], Counter(), []
        self.specs, self.key_problems, self.bar = {}, [], None

    # ------------------------------------------------------------------ step 1: intake
    def _intake(self) -> list:
        found = intake.find_submissions(self.folder, [self.paths["feedback"]])
        self.book = gradebook.Gradebook(self.out, fresh=self.fresh)
        if self.book.repaired:
            self.log(f"resuming: dropped {self.book.repaired} row(s) of submissions a killed run left unfinished")
        if self.fresh:
            import shutil
            shutil.rmtree(self.paths["feedback"], ignore_errors=True)
        self.paths["feedback"].mkdir(parents=True, exist_ok=True)
        subs = [intake.read(name, path) for name, path in found]
        intake.assign(subs, self.chapters)
        intake.flag_added_code(subs)
        pending = [s for s in subs if s.name not in self.book.done]
        if len(pending) < len(subs):
            self.log(f"resuming: {len(subs) - len(pending)} submission(s) already graded, {len(pending)} to go")
        solo = intake.read_journal(self.paths["journal"], pending, self.fresh)
        if solo:
            self.log(f"resuming: {solo} submission(s) were in flight when the last run stopped; "
                     "grading them one at a time first")
        return pending

    def _isolation_notes(self) -> None:
        """Say once, in the summary and on stderr, which guarantees this machine cannot give."""
        info = self.scheduler.isolation()
        self.isolation_info = info
        lost = isolation.guarantees(info)
        self.notes = [f"isolation on this machine does not guarantee: {item}" for item in lost]
        for note in self.notes:
            self.log(f"WARNING {note}")

    # ------------------------------------------------------------------ step 2: processes
    def _may_start(self, sub) -> bool:
        active = {c.task[0].name: c.task[0] for c in self.scheduler.running.values()}
        if not active or set(active) == {sub.name}:
            return True
        return not sub.solo and not any(s.solo for s in active.values())

    def _start(self, task) -> None:
        sub, role, ex = task
        if not sub.started:
            sub.started = True
            intake.journal_start(self.paths["journal"], sub)
        now = time.monotonic()
        if role == "notebook":
            child = self.scheduler.start(task, role, {"cells": sub.analysis.cells},
                                         files=[sub.path] + self.support)
            child.deadline = now + self.limits.timeout
        else:
            per_test = min(ex.time_limit, self.limits.test_timeout or ex.time_limit)
            child = self.scheduler.start(task, role, {"exercise": ex.id, "source": check_source(sub.analysis, ex.name),
                                                      "test_timeout": self.limits.test_timeout})
            child.deadline = now + len(self.specs.get(ex.id, [])) * (per_test + 1) + 30

    def _on_message(self, child, message) -> None:
        if child.role == "notebook":
            outcome.on_notebook_message(child, message, self.limits.cell_timeout)

    def _support_files(self) -> list:
        import course_lib
        folder = Path(course_lib.__file__).resolve().parent.parent / "notebooks"
        return [p for p in folder.iterdir() if p.is_file() and p.suffix != ".ipynb"] if folder.is_dir() else []

    # ------------------------------------------------------------------ step 3: verdicts
    def _finished(self, child) -> None:
        sub, role, ex = child.task
        if role == "notebook":
            outcome.finish_notebook(sub, child, self.limits)
        else:
            outcome.finish_check(sub, child, ex, self.specs.get(ex.id, []))
        sub.left -= 1
        if sub.left == 0:
            self._record(sub)

    def _guard_check(self, finished: list) -> None:
        window = finished + list(self.scheduler.running.values())
        walled = self.isolation_info.get("namespaces") or self.isolation_info.get("landlock_abi", 0) >= 1
        changed = self.guard.check(restore_trees=not walled)
        if not changed:
            return
        if walled:  # read-only binds or Landlock: no graded process can have written there
            self.log(f"note: {', '.join(str(p) for p in changed[:3])} changed during grading, not by a graded "
                     "process; the grader's own outputs were put back, course files left as they are")
            return
        suspects = {c.task[0].name: c.task[0] for c in window}
        shown = ", ".join(str(p) for p in changed[:3])
        self.log(f"WARNING: a graded process changed the grader's files ({shown}); restored them")
        for sub in suspects.values():
            sub.flags.add("review:changed-grader-files")
            if len(suspects) == 1:
                sub.zeroed = f"the notebook changed the grader's files ({shown}); no points"

    # ------------------------------------------------------------------ step 4: records
    def _record(self, sub) -> None:
        status = record.write(sub, self.paths, self.book, self.guard, self.notes)["status"]
        self.stats["graded"] += 1
        self.stats[status] += 1
        if self.bar is not None:
            self.bar.set_postfix_str(sub.name[:20], refresh=False)
            self.bar.update(1)

    # ------------------------------------------------------------------ the run
    def _prepare(self) -> list:
        hide_gpus()
        self.scheduler = Scheduler(intake.scratch_root_for(self.out), self.limits, self.workers,
                                   self._on_message, self.keep_scratch)
        self.scheduler.start_zygotes()  # they import and warm up while the submissions are read
        pending = self._intake()
        needed = sorted({ex.id for s in pending for ex in s.exercises})
        self.specs, self.key_problems = self.scheduler.warm(needed)
        for problem in self.key_problems:
            self.log(f"WARNING answer key: {problem}")
        self._isolation_notes()
        import course_lib
        self.guard = Guard([Path(course_lib.__file__).resolve().parent], [self.paths["feedback"]])
        self.guard.wrote(self.out, self.book.expected_text)
        self.support = self._support_files()
        return pending

    def _queue(self, pending: list) -> None:
        for sub in pending:
            outcome.decide_statically(sub, self.specs)
            tasks = outcome.tasks_of(sub)
            sub.left = len(tasks)
            if not tasks:
                self._record(sub)
            self.queue.extend(tasks)
        self.queue.reverse()  # pop() from the end = submission order

    def _loop(self) -> None:
        while self.queue or self.scheduler.running:
            while self.queue and self.scheduler.has_room() and self._may_start(self.queue[-1][0]):
                self._start(self.queue.pop())
            finished = self.scheduler.step()
            if finished:
                self._guard_check(finished)
            for child in finished:
                self._finished(child)

    def run(self) -> dict:
        start = time.monotonic()
        try:
            pending = self._prepare()
            if self.progress:
                import tqdm
                self.bar = tqdm.tqdm(total=len(pending), desc="grading", unit="notebook", file=sys.stderr,
                                     mininterval=0.5, dynamic_ncols=True)
            self._queue(pending)
            self._loop()
        finally:
            if hasattr(self, "scheduler"):
                self.scheduler.stop()
            if self.bar is not None:
                self.bar.close()
        self._write_texts()
        self.stats["seconds"] = round(time.monotonic() - start, 2)
        return {"graded": self.stats["graded"], "skipped": len(self.book.done) - self.stats["graded"],
                "seconds": self.stats["seconds"], "processes": self.scheduler.started,
                "statuses": {k: v for k, v in self.stats.items() if k not in ("graded", "seconds")},
                "key_problems": self.key_problems, "isolation": self.isolation_info, "notes": self.notes,
                "gradebook": str(self.out)}

    def _write_texts(self) -> None:
        import json
        from . import feedback
        records = {}
        for name in self.book.done:
            path = self.paths["feedback"] / (feedback.file_name(name) + ".json")
            try:
                records[name] = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
        gradebook.write_texts(self.paths["texts"], records)


scratch_root_for = intake.scratch_root_for  # kept for callers of the old name
find_submissions = intake.find_submissions
