"""Grading a folder of submitted notebooks: the whole class in one command (parent).

    python -m course_lib grade SUBMISSIONS_DIR --out GRADEBOOK.csv [--workers N]

A row of small steps, as nbgrader's autograde, run by this process, which never runs student
code and never imports the answer key: intake.py finds and reads the submissions (without
running them) and chooses their exercises; scheduler.py runs their processes (child.py) through
one warm zygote (zygote.py), each process isolated by the kernel (isolation.py); outcome.py
sends what they reported, as data, to the judge (judge.py, the only process with the key) and
turns its answers into verdicts; record.py writes each submission's rows and feedback as soon as
it is done, so a rerun resumes where a killed run stopped. A submission that makes any step
fail gets that failure as its status; the class goes on. What a submission can and cannot do:
docs/grading-threat-model.md.
"""

import os
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

from .. import notebooks
from ..i18n import tr
from . import environment, gradebook, intake, isolation, outcome, record
from . import limits as tree_limits
from .analyze import check_source
from .guard import Guard
from .judge import JudgeClient, judge_pipes
from .records import RunReport
from .scheduler import Scheduler

# With read-only binds or Landlock no graded process can write the grader's files; the guard then
# only notices someone else's edits (and puts the grader's outputs back): a look a second is enough.
# Without either it looks after every graded process, before the next one starts.
WALLED_GUARD_EVERY = 1.0


def hide_gpus() -> None:
    """This process sees no GPU either (if CUDA is not yet initialised here)."""
    for name in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"):
        os.environ[name] = ""
    os.environ["COURSE_DEVICE"] = "cpu"


class Grader:
    """Grades every notebook under `folder` into the gradebook `out` (see the module docstring)."""

    def __init__(
        self,
        folder,
        out,
        workers=None,
        chapters=None,
        limits=None,
        progress=True,
        fresh=False,
        keep_scratch=False,
        log=None,
        assignment=None,
    ):
        """`assignment`: a teacher's release (authoring.released.Released) to grade instead of
        the course's chapters."""
        from .sandbox import Limits

        self.folder, self.out = Path(folder), Path(out).resolve()
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        self.workers = max(1, workers or cores or 1)
        self.chapters = set(chapters or [])
        self.limits = limits or Limits()
        self.progress, self.fresh, self.keep_scratch = progress, fresh, keep_scratch
        self.log = log or (lambda text: print(tr(text), file=sys.stderr))  # the course's language
        self.paths = gradebook.paths(self.out)
        self.queue, self.stats, self.notes = [], Counter(), []
        self.totals, self.run_specs, self.key_problems, self.bar = {}, {}, [], None
        self.judge, self.specs_ready, self.guarded_at = None, False, 0.0
        self.assignment = assignment
        if assignment is not None:
            isolation.check_unreachable(assignment.key)  # no graded process may read the key
            self.chapters = {assignment.number}

    # ------------------------------------------------------------------ step 1: intake
    def _intake(self) -> list:
        found = intake.find_submissions(self.folder, [self.paths["feedback"]])
        self.book = gradebook.Gradebook(self.out, fresh=self.fresh)
        if self.book.repaired:
            self.log(
                f"resuming: dropped {self.book.repaired} row(s) of submissions a killed run "
                "left unfinished"
            )
        if self.book.retried:
            self.log(
                f"resuming: {self.book.retried} submission(s) the grader failed on last time "
                "are graded again"
            )
        if self.fresh:
            import shutil

            shutil.rmtree(self.paths["feedback"], ignore_errors=True)
        self.paths["feedback"].mkdir(parents=True, exist_ok=True, mode=0o700)
        subs = intake.read_all(found, self.paths["journal"], self.fresh)
        own = self.assignment
        intake.assign(subs, self.chapters, own.exercises if own else None)
        intake.flag_added_code(subs, {own.number: own.handed_out_lines()} if own else None)
        pending = [s for s in subs if s.name not in self.book.done]
        if len(pending) < len(subs):
            self.log(
                f"resuming: {len(subs) - len(pending)} submission(s) already graded, "
                f"{len(pending)} to go"
            )
        solo = intake.read_journal(self.paths["journal"], pending, fresh=False)
        if solo:
            self.log(
                f"resuming: {solo} submission(s) were in flight when the last run stopped; "
                "grading them one at a time first"
            )
        return pending

    def _isolation_notes(self) -> None:
        """Say once, in the summary and on stderr, which guarantees this machine cannot give."""
        info = self.scheduler.isolation()
        self.isolation_info = info
        lost = isolation.guarantees(info)
        self.notes = [f"isolation on this machine does not guarantee: {item}" for item in lost]
        for note in self.notes:
            self.log(f"WARNING {note}")
        info["limits"] = self.scheduler.trees.describe()  # which mechanism binds each tree
        self.notes.append(info["limits"])
        if self.scheduler.trees.mechanism != tree_limits.CGROUP:
            self.log(f"WARNING {info['limits']}")

    # ------------------------------------------------------------------ step 2: processes
    def _specs(self, wait: bool = True) -> bool:
        """Take the judge's test specs once they are there (waiting for them when `wait`); the
        zygote then warms each test's run half. True when they are."""
        if self.specs_ready or not (wait or self.judge.ready()):
            return self.specs_ready
        prepared = self.judge.finish_prepare()
        self.key_problems = prepared["problems"]
        for ex_id, specs in prepared["specs"].items():
            self.totals[ex_id] = len(specs)
            self.run_specs[ex_id] = [[builder, inputs] for _, _, _, builder, inputs in specs]
        self.scheduler.warm([spec for specs in self.run_specs.values() for spec in specs])
        for problem in self.key_problems:
            self.log(f"WARNING answer key: {problem}")
        self.specs_ready = True
        return True

    def _next_task(self):
        """The first task in submission order that may
        start now (a check waits for the judge's specs)."""
        for i in range(len(self.queue) - 1, -1, -1):
            task = self.queue[i]
            if task.role == "check" and not self._specs(wait=False):
                continue
            if self._may_start(task.submission):
                return self.queue.pop(i)
            return None  # keep the order of submissions: solo ones first, alone
        return None

    def _may_start(self, sub) -> bool:
        active = {
            c.task.submission.name: c.task.submission for c in self.scheduler.running.values()
        }
        if not active or set(active) == {sub.name}:
            return True
        return not sub.solo and not any(s.solo for s in active.values())

    def _per_test(self, ex) -> float:
        return min(ex.time_limit, self.limits.test_timeout or ex.time_limit)

    def _start(self, task) -> None:
        sub, ex = task.submission, task.exercise
        if not sub.started:
            sub.started = True
            intake.journal_start(self.paths["journal"], sub)
        now = time.monotonic()
        if task.role == "notebook":
            try:  # its own file beside it, read again without following a link
                own = [(sub.path.name, intake.read_bytes(sub.path))]
            except OSError:
                own = []
            child = self.scheduler.start(
                task, "notebook", {"cells": sub.analysis.cells}, files=own + self.support
            )
            child.deadline = now + self.limits.timeout
        else:
            specs = self.run_specs.get(ex.id, [])
            child = self.scheduler.start(
                task,
                "check",
                {
                    "source": check_source(sub.analysis, ex.name),
                    "name": ex.name,
                    "tests": specs,
                    "limit": self._per_test(ex),
                },
            )
            child.deadline = now + len(specs) * (self._per_test(ex) + 1) + 30

    def _on_message(self, child, message) -> None:
        if child.role == "notebook":
            outcome.on_notebook_message(child, message, self.limits.cell_timeout)

    def _support_files(self) -> list:
        return notebooks.support_files()

    # ------------------------------------------------------------------ step 3: verdicts
    def _finished(self, child) -> None:
        task = child.task
        sub, ex = task.submission, task.exercise
        if task.role == "notebook":
            outcome.finish_notebook(sub, child, self.limits, self.judge)
        else:
            outcome.finish_check(
                sub, child, ex, self.totals.get(ex.id, 0), self._per_test(ex), self.judge
            )
        sub.left -= 1
        if sub.left == 0:
            self._record(sub)

    def _walled(self) -> bool:
        """Read-only binds or Landlock: no graded process can write outside its scratch."""
        info = self.isolation_info
        return bool(info.get("namespaces") or info.get("landlock_abi", 0) >= 1)

    def _guard_check(self, finished: list) -> None:
        self.guarded_at = time.monotonic()
        window = finished + list(self.scheduler.running.values())
        walled = self._walled()
        changed = self.guard.check(restore_trees=not walled)
        if not changed:
            return
        if walled:  # read-only binds or Landlock: no graded process can have written there
            self.log(
                f"note: {', '.join(str(p) for p in changed[:3])} changed during grading, not "
                "by a graded process; the grader's own outputs were put back, course files "
                "left as they are"
            )
            return
        suspects = {c.task.submission.name: c.task.submission for c in window}
        shown = ", ".join(str(p) for p in changed[:3])
        self.log(f"WARNING: a graded process changed the grader's files ({shown}); restored them")
        for sub in suspects.values():
            sub.flags.add("review:changed-grader-files")
            if len(suspects) == 1:
                sub.zeroed = f"the notebook changed the grader's files ({shown}); no points"

    # ------------------------------------------------------------------ step 4: records
    def _record(self, sub) -> None:
        self._specs()
        for verdict in sub.verdicts.values():
            if verdict.total is None:  # decided before the judge said how many tests there are
                verdict.total = self.totals.get(verdict.exercise, 0)
        status = record.write(sub, self.paths, self.book, self.guard, self.notes)["status"]
        self.stats["graded"] += 1
        self.stats[status] += 1
        if self.bar is not None:
            self.bar.set_postfix_str(
                sub.name[:20].encode("ascii", "replace").decode(), refresh=False
            )
            self.bar.update(1)

    def _failed(self, sub, step: str, err: BaseException) -> None:
        """Any failure of the grader's own steps on one
        submission becomes that submission's status."""
        self.log(f"WARNING: {step} failed for {sub.name!r}: {type(err).__name__}: {err}")
        intake.mark_failed(
            sub,
            f"the grader failed while {step} this notebook ({type(err).__name__}: "
            f"{str(err)[:300]}); tell your teacher",
            traceback.format_exc(limit=6)[-2000:],
        )
        sub.left = 0
        outcome.decide_statically(sub, self.totals)
        try:
            self._record(sub)
        except Exception as again:  # noqa: BLE001 - even its record: say so, keep the class going
            self.log(
                f"WARNING: no record could be written for {sub.name!r}: "
                f"{type(again).__name__}: {again}"
            )

    # ------------------------------------------------------------------ the run
    def _prepare(self) -> list:
        hide_gpus()
        root = environment.gradebook_root(self.out)  # private, a random name (environment.py)
        self.scheduler = Scheduler(
            root, self.limits, self.workers, self._on_message, self.keep_scratch
        )
        ours, judges = judge_pipes()
        # it imports torch and the public course, forks the judge (which then imports the key
        # and prepares), and warms up, while the submissions are read
        self.scheduler.start_zygote(judge_fds=judges)
        self.judge = JudgeClient(cwd=str(root), forked=ours)
        pending = self._intake()
        needed = sorted({ex.id for s in pending for ex in s.exercises})
        own = self.assignment
        self.judge.prepare(needed, [own.key] if own else [])  # notebooks start meanwhile
        ours = {r.id for r in own.rows} if own else set()  # the zygote knows the course's alone
        self.scheduler.warm_notebooks([i for i in needed if i not in ours])
        self._isolation_notes()
        import course_lib

        self.guard = Guard([Path(course_lib.__file__).resolve().parent], [self.paths["feedback"]])
        self.guard.wrote(self.out, self.book.expected_text)
        self.support = self._support_files()
        return pending

    def _queue(self, pending: list) -> None:
        for sub in pending:
            try:
                outcome.decide_statically(sub, self.totals)
                tasks = outcome.tasks_of(sub)
                sub.left = len(tasks)
                if not tasks:
                    self._record(sub)
                self.queue.extend(tasks)
            except Exception as err:  # noqa: BLE001 - one submission's failure is its own
                self._failed(sub, "reading", err)
        self.queue.reverse()  # pop() from the end = submission order

    def _fill(self) -> None:
        """Start queued tasks while there is room."""
        while self.queue and self.scheduler.has_room():
            task = self._next_task()
            if task is None:
                break
            if task.submission.failed:
                continue
            try:
                self._start(task)
            except (OSError, ValueError, TypeError, KeyError) as err:
                self._drop(task.submission, "starting a process for", err)

    def _loop(self) -> None:
        while self.queue or self.scheduler.running:
            self._fill()
            finished = self.scheduler.step()
            if finished and self._walled():  # no graded process can write the grader's files:
                self._fill()  # the freed cores work first; the guard looks now and then
                if time.monotonic() - self.guarded_at >= WALLED_GUARD_EVERY:
                    self._guard_check(finished)
            elif finished:
                self._guard_check(finished)  # before anything starts: its window is exact
                self._fill()  # the freed cores work while the judge judges what finished
            for child in finished:
                sub = child.task.submission
                if sub.failed:
                    continue
                try:
                    self._finished(child)
                except Exception as err:  # noqa: BLE001 - one submission's failure is its own
                    self._drop(sub, "judging", err)
        if self._walled():
            self._guard_check([])  # the last look, after the last graded process

    def _drop(self, sub, step: str, err: BaseException) -> None:
        """Stop grading `sub` (its other processes are killed), record the failure, go on."""
        for child in list(self.scheduler.running.values()):
            if child.task.submission is sub:
                child.kill("the grader stopped it: another step of this submission failed")
        self.queue = [t for t in self.queue if t.submission is not sub]
        self._failed(sub, step, err)

    def run(self) -> dict:
        """Grade the class (this process not dumpable meanwhile: environment.undumpable)."""
        with environment.undumpable():
            return self._run()

    def _run(self) -> dict:
        start = time.monotonic()
        try:
            pending = self._prepare()
            if self.progress:
                import tqdm

                self.bar = tqdm.tqdm(
                    total=len(pending),
                    desc=tr("grading"),
                    unit="notebook",
                    file=sys.stderr,
                    mininterval=0.5,
                    dynamic_ncols=True,
                )
            self._queue(pending)
            self._loop()
        finally:
            if hasattr(self, "scheduler"):
                self.scheduler.stop()
            if self.judge is not None:
                self.judge.close()
            if self.bar is not None:
                self.bar.close()
        self._write_texts()
        seconds = round(time.monotonic() - start, 2)
        return RunReport(
            graded=self.stats["graded"],
            skipped=len(self.book.done) - self.stats["graded"],
            seconds=seconds,
            processes=self.scheduler.started,
            statuses={k: v for k, v in self.stats.items() if k != "graded"},
            key_problems=self.key_problems,
            isolation=self.isolation_info,
            notes=self.notes,
            gradebook=str(self.out),
        ).as_dict()

    def _write_texts(self) -> None:
        import json

        records = {}
        for name in self.book.done:
            path = record.feedback_path(self.paths, name, ".json")
            try:
                records[name] = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
        gradebook.write_texts(self.paths["texts"], records)


scratch_root_for = intake.scratch_root_for
find_submissions = intake.find_submissions
