"""Grading a folder of submitted notebooks: the whole class in one command (grader).

    python -m course_lib grade SUBMISSIONS_DIR --out GRADEBOOK.csv [--workers N]

The grader imports torch and the course once, warms them up (and proves the answer key
right), then forks: one notebook process per submission (its code cells run in-process,
like `Run All`, with a time limit per cell and per notebook, a memory limit, output capped)
and one check process per function exercise (the verdict; see verdict.py). Up to
`workers` processes run at a time. Quiz answers come back from the notebook process as
plain data and are checked in the grader. Each submission's rows, feedback and record are
written as soon as it is done; a rerun resumes where a killed run stopped.
"""
import gc
import hashlib
import json
import os
import selectors
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from ..exercises import all_exercises
from . import feedback, gradebook
from .analyze import ANSWER_PREFIX, TEXT_PREFIX, analyze, chapter_guess, check_source
from .cells import UnreadableNotebook, read_cells
from .executor import notebook_body
from .guard import Guard
from .sandbox import Limits, cleanup, kill, make_scratch, spawn
from .verdict import check_body, check_quiz, validate

POLL = 0.05


@dataclass
class Submission:
    """One student's notebook and everything learned about it while grading."""
    name: str
    path: Path
    analysis: object = None
    unreadable: str = ""
    exercises: list = field(default_factory=list)
    verdicts: dict = field(default_factory=dict)
    run: dict = field(default_factory=dict)
    answers: dict = field(default_factory=dict)
    flags: set = field(default_factory=set)
    left: int = 0
    zeroed: str = ""  # why this submission gets no points (it changed the grader's files)
    solo: bool = False  # graded alone: it was in flight when an earlier run died
    started: bool = False


def scratch_root_for(out: Path) -> Path:
    """Where a gradebook's graded processes get their scratch folders: short, because Unix
    socket paths under it (multiprocessing, DataLoader workers) must stay under 108 bytes."""
    digest = hashlib.sha1(str(Path(out).resolve()).encode()).hexdigest()[:10]
    return Path(tempfile.gettempdir()) / f"course-grade-{digest}"


def find_submissions(folder: Path, skip: list) -> list:
    """(name, path) of every .ipynb under `folder`: the name is the file name without .ipynb,
    or the relative path when two students' files share a name."""
    paths = sorted(p for p in Path(folder).rglob("*.ipynb")
                   if ".ipynb_checkpoints" not in p.parts and p.is_file()
                   and not any(s in p.parents for s in skip))
    stems = Counter(p.stem for p in paths)
    named = [(p.stem if stems[p.stem] == 1 else p.relative_to(folder).with_suffix("").as_posix(), p) for p in paths]
    return [(gradebook.clean(name), p) for name, p in named]


def _import_everything() -> None:
    """Every course_lib module, and what notebooks use at once: widgets, display, matplotlib
    with its fonts loaded (a child would otherwise rebuild the font cache: seconds each)."""
    import importlib
    import io
    import pkgutil

    import course_lib
    os.environ.setdefault("MPLBACKEND", "Agg")
    for info in pkgutil.walk_packages(course_lib.__path__, "course_lib."):
        if not info.name.startswith(("course_lib.key", "course_lib.grading")):
            try:
                importlib.import_module(info.name)
            except Exception:  # noqa: BLE001 - a module that cannot load here is loaded by whoever needs it
                pass
    for name in ("ipywidgets", "IPython.display", "tqdm.auto"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [1, 0], label="warm-up")
    ax.set_title("warm-up")
    ax.legend()
    fig.savefig(io.BytesIO(), format="png")
    plt.close(fig)


def _torch_first_use() -> None:
    """What costs seconds the first time in a process: optimizers, DataLoader, meta tensors."""
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    for opt in (torch.optim.SGD(model.parameters(), lr=0.1), torch.optim.Adam(model.parameters())):
        for x, y in DataLoader(TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,))), batch_size=4):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    with torch.no_grad():
        model.to("meta").eval()(torch.randn(2, 4, device="meta"))
        try:  # the device-mismatch error every chapter teaches
            nn.Linear(4, 2)(torch.randn(2, 4, device="meta"))
        except RuntimeError:
            pass


def warm_up(exercises: list) -> tuple:
    """Run torch's first-use paths and every reference solution once, in the grader, before forking.

    Returns the test list [(name, weight, hidden)] per exercise id and the problems found in
    the answer key (a reference that fails its own tests).
    """
    import torch
    torch.set_num_threads(1)  # one thread per graded process; the workers use the cores
    _import_everything()
    _torch_first_use()
    specs, problems = {}, []
    for ex in exercises:
        key = ex.key()
        if ex.kind == "function":
            specs[ex.id] = [(t.name, t.weight, t.hidden or i >= len(ex.tests))
                            for i, t in enumerate(ex.all_tests(include_hidden=True))]
            if key is None or key.solution is None:
                problems.append(f"{ex.id}: no answer key; only visible tests are graded")
                continue
            result = ex.check(key.solution, include_hidden=True, record=False)
        elif key is not None and key.answer is not None:
            result = ex.check(key.answer, record=False)
        else:
            continue
        if not result.correct:
            problems.append(f"{ex.id}: the reference answer fails its own check ({result.status})")
    return specs, problems


class Grader:
    """Grades every notebook under `folder` into the gradebook `out` (see the module docstring)."""

    def __init__(self, folder, out, workers=None, chapters=None, limits=None, progress=True, fresh=False,
                 keep_scratch=False, log=None):
        self.folder, self.out = Path(folder), Path(out).resolve()
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        self.workers = max(1, workers or cores or 1)
        self.chapters = set(chapters or [])
        self.limits = limits or Limits()
        self.progress, self.fresh, self.keep_scratch = progress, fresh, keep_scratch
        self.log = log or (lambda text: print(text, file=sys.stderr))
        self.paths = gradebook.paths(self.out)
        self.running = {}
        self.queue = []
        self.records = {}
        self.stats = Counter()

    # ------------------------------------------------------------------ preparing
    def _read(self, name: str, path: Path) -> Submission:
        sub = Submission(name, path)
        try:
            sub.analysis = analyze(read_cells(path.read_bytes()))
        except UnreadableNotebook as err:
            sub.unreadable = str(err)
        except (OSError, RecursionError, MemoryError) as err:
            sub.unreadable = f"the file could not be read: {type(err).__name__}: {err}"
        return sub

    def _assign(self, subs: list) -> None:
        """Which exercises each submission is graded on: its chapter(s), or the class's."""
        exercises = all_exercises()
        by_chapter = {}
        for ex in exercises:
            by_chapter.setdefault(ex.chapter.number, []).append(
                ex.name if ex.kind == "function" else ANSWER_PREFIX + ex.name)
        guesses = {s.name: (self.chapters or chapter_guess(s.analysis, by_chapter)) if s.analysis else set()
                   for s in subs}
        counted = Counter(frozenset(g) for g in guesses.values() if g)
        default = set(counted.most_common(1)[0][0]) if counted else set()
        for sub in subs:
            chosen = self.chapters or guesses[sub.name] or default
            sub.exercises = [ex for ex in exercises if ex.chapter.number in chosen]

    def _prepare(self):
        found = find_submissions(self.folder, [self.paths["feedback"]])
        self.book = gradebook.Gradebook(self.out, fresh=self.fresh)
        if self.fresh:
            shutil.rmtree(self.paths["feedback"], ignore_errors=True)
        if self.book.repaired:
            self.log(f"resuming: dropped {self.book.repaired} row(s) of submissions a killed run left unfinished")
        self.paths["feedback"].mkdir(parents=True, exist_ok=True)
        subs = [self._read(name, path) for name, path in found]
        self._assign(subs)
        pending = [s for s in subs if s.name not in self.book.done]
        if len(pending) < len(subs):
            self.log(f"resuming: {len(subs) - len(pending)} submission(s) already graded, {len(pending)} to go")
        self._read_journal(pending)
        needed = {ex.id: ex for s in pending for ex in s.exercises}
        self.specs, self.key_problems = warm_up(list(needed.values()))
        for problem in self.key_problems:
            self.log(f"WARNING answer key: {problem}")
        return pending

    def _read_journal(self, pending: list) -> None:
        """Submissions an earlier run started but never finished: that run died while grading them.

        Each is graded alone first; one that was already graded alone when a run died
        (it stopped the grader itself, e.g. by killing it) is not graded again.
        """
        journal = self.paths["journal"]
        if self.fresh:
            journal.unlink(missing_ok=True)
        starts = {}
        if journal.exists():
            for line in journal.read_text(errors="replace").splitlines():
                parts = line.split("\t")
                if len(parts) == 3 and parts[0] == "start":
                    starts.setdefault(parts[1], set()).add(parts[2])
        for sub in pending:
            if "solo" in starts.get(sub.name, ()):
                sub.unreadable = ("grading this notebook stopped the grader itself (the grader died while it was "
                                  "the only notebook being graded); it was not graded again")
                sub.run["status"] = "stopped the grader"
            elif sub.name in starts:
                sub.solo = True
        if any(s.solo for s in pending):
            self.log(f"resuming: {sum(s.solo for s in pending)} submission(s) were in flight when the last run "
                     "stopped; grading them one at a time first")
            pending.sort(key=lambda s: not s.solo)

    def _journal(self, sub) -> None:
        with open(self.paths["journal"], "a") as f:
            f.write(f"start\t{sub.name}\t{'solo' if sub.solo else 'shared'}\n")
            f.flush()

    def _may_start(self, sub) -> bool:
        active = {c.task[0].name: c.task[0] for c in self.running.values()}
        if not active or set(active) == {sub.name}:
            return True
        return not sub.solo and not any(s.solo for s in active.values())

    # ------------------------------------------------------------------ processes
    def _support_files(self) -> list:
        import course_lib
        folder = Path(course_lib.__file__).resolve().parent.parent / "notebooks"
        return [p for p in folder.iterdir() if p.is_file() and p.suffix != ".ipynb"] if folder.is_dir() else []

    def _start(self, task) -> None:
        sub, role, ex = task
        if not sub.started:
            sub.started = True
            self._journal(sub)
        self.stats["processes"] += 1
        scratch = make_scratch(self.scratch_root, f"{self.stats['processes']}{role[0]}")
        now = time.monotonic()
        if role == "notebook":
            shutil.copy(sub.path, scratch / "work" / sub.path.name)
            for extra in self.support:
                shutil.copy(extra, scratch / "work" / extra.name)
            job = SimpleNamespace(limits=self.limits, analysis=sub.analysis)
            child = spawn(role, scratch, self.limits, notebook_body, job)
            child.deadline = now + self.limits.timeout
        else:
            per_test = min(ex.time_limit, self.limits.test_timeout or ex.time_limit)
            child = spawn(role, scratch, self.limits, check_body, ex.id, check_source(sub.analysis, ex.name),
                          self.limits.test_timeout)
            child.deadline = now + len(self.specs.get(ex.id, [])) * (per_test + 1) + 30
        child.task = task
        self.running[child.pid] = child
        self.selector.register(child.fd, selectors.EVENT_READ, child)

    def _on_message(self, child, message) -> None:
        kind = message.get("kind")
        if kind == "sandbox":
            child.confined = message.get("confined") is True
        if child.role != "notebook":
            return
        sub = child.task[0]
        if kind == "start":
            sub.run["confined"] = bool(message.get("confined"))
        elif kind == "cell":
            child.current_cell = message.get("cell", 0)
            child.cell_deadline = time.monotonic() + self.limits.cell_timeout
        elif kind == "cell_done":
            child.cell_deadline = child.kill_at = 0
            answers = message.get("answers")
            if isinstance(answers, dict):
                sub.answers.update(answers)
            sub.run.setdefault("cells", []).append(
                {k: message.get(k) for k in ("cell", "status", "error", "seconds")})

    def _read_pipe(self, child) -> None:
        while True:
            try:
                data = os.read(child.fd, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                try:
                    self.selector.unregister(child.fd)
                except (KeyError, ValueError):
                    pass
                return
            for message in child.feed(data):
                self._on_message(child, message)

    def _deadlines(self) -> None:
        import signal
        now = time.monotonic()
        for child in list(self.running.values()):
            if child.status is not None:
                continue
            if child.cell_deadline and now > child.cell_deadline and not child.kill_at:
                child.interrupted_cells.append(child.current_cell)
                child.kill_at = now + self.limits.interrupt_grace
                try:
                    os.kill(child.pid, signal.SIGINT)
                except ProcessLookupError:
                    pass
            if child.kill_at and now > child.kill_at:
                kill(child, f"killed: cell {child.current_cell} ran past its {self.limits.cell_timeout:g} s limit "
                            "and ignored the interrupt")
            elif now > child.deadline:
                what = f"the notebook's {self.limits.timeout:g} s limit" if child.role == "notebook" \
                    else "the time limit of the check"
                kill(child, f"killed: ran past {what}" + (f" (in cell {child.current_cell})"
                                                          if child.role == "notebook" else ""))

    def _reap(self) -> list:
        finished = []
        for pid, child in list(self.running.items()):
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done, status = pid, 0
            if done:
                child.status = status
                self._read_pipe(child)
                try:
                    self.selector.unregister(child.fd)
                except (KeyError, ValueError):
                    pass
                cleanup(child, self.keep_scratch)
                del self.running[pid]
                finished.append(child)
        return finished

    # ------------------------------------------------------------------ verdicts
    def _finish_notebook(self, child) -> None:
        sub = child.task[0]
        run = sub.run
        run["seconds"] = round(time.monotonic() - child.started, 3)
        cells = run.setdefault("cells", [])
        done = child.last("done")
        total = len(sub.analysis.cells)
        errors = sum(c.get("status") == "error" for c in cells)
        interrupted = sum(c.get("status") == "interrupted" for c in cells)
        if done and child.exited_cleanly():
            run["status"] = "empty" if not total else "ok" if not errors and not interrupted else "cell errors"
            run["summary"] = f"ran all {total} code cells" + (f"; {errors} raised an error" if errors else "") \
                + (f"; {interrupted} stopped at the cell time limit" if interrupted else "")
            run.update(stdout=done.get("stdout", ""), stderr=done.get("stderr", ""),
                       output_chars=done.get("output_chars", 0))
            if done.get("output_chars", 0) > self.limits.output_chars:
                run["summary"] += f"; printed {done['output_chars']:,} characters (kept the first and last part)"
        else:
            fatal = child.last("fatal")
            where = f"cell {child.current_cell}" if child.current_cell else "the start"
            how = child.exit_text()
            run["status"] = "timed out" if child.killed_for else "crashed" if "crashed" in how else "exited"
            run["summary"] = (f"stopped at {where}: {how}" if child.killed_for else
                              f"the notebook's process ended at {where}: {how}") + \
                (f" ({fatal['error'].strip().splitlines()[-1][:200]})" if fatal else "") + \
                f"; {len(cells)} of {total} code cells finished"
            cells.append({"cell": child.current_cell, "status": "error",
                          "error": run["summary"]})
            last_done = max((c["cell"] for c in cells[:-1]), default=0)
            for name, (cell, value, literal) in sub.analysis.literals.items():
                if name not in sub.answers and literal and cell > last_done:
                    sub.answers[name] = value  # read from the text: the run never reached that line
        if child.forged:
            sub.flags.add("review:forged-report-lines")
        sub.run["confined"] = run.get("confined", False)
        for ex in sub.exercises:
            if ex.kind != "function":
                name = ANSWER_PREFIX + ex.name
                verdict = check_quiz(ex, sub.answers.get(name), name in sub.analysis.literals or name in sub.answers)
                sub.verdicts[ex.id] = verdict
        texts = {k[len(TEXT_PREFIX):]: v for k, v in sub.answers.items()
                 if k.startswith(TEXT_PREFIX) and isinstance(v, str)}
        sub.run["texts"] = {**sub.analysis.markdown_texts, **texts}

    def _finish_check(self, child) -> None:
        sub, _, ex = child.task
        spec = self.specs.get(ex.id, [])
        if child.exited_cleanly() and child.last("result") is not None and not child.forged:
            verdict = validate(child.last("result"), ex, spec)
        else:
            verdict = validate(None, ex, spec)
            if child.forged:
                verdict.update(status="tampered", detail="the code wrote fake reports to the grader's channel")
            elif child.killed_for:
                verdict.update(status="timed out", detail=f"checking your function was {child.killed_for}")
            else:
                fatal = child.last("fatal")
                verdict["detail"] = f"the check process {child.exit_text()} while testing your function" + \
                    (f": {fatal['error'].strip().splitlines()[-1][:200]}" if fatal else "")
        flags = check_source(sub.analysis, ex.name)["flags"]
        verdict["flags"] += [f"review:{f.replace(' ', '-')}" for f in flags]
        verdict["seconds"] = round(time.monotonic() - child.started, 3)
        sub.verdicts[ex.id] = verdict

    def _decide_statically(self, sub) -> None:
        """Verdicts that need no process: unreadable notebooks, missing functions."""
        for ex in sub.exercises:
            base = {"points": 0.0, "max_points": ex.points, "tests": [], "passed": 0,
                    "total": len(self.specs.get(ex.id, [])) if ex.kind == "function" else 1, "flags": []}
            if sub.unreadable:
                stopped = sub.run.get("status") == "stopped the grader"
                sub.verdicts[ex.id] = dict(base, status="crashed" if stopped else "unreadable", detail=sub.unreadable)
            elif ex.kind == "function" and not sub.analysis.defines(ex.name):
                broken = sub.analysis.cell_with_text(ex.name)
                detail = (f"cell {broken[0]} mentions {ex.name} but is not valid Python: "
                          f"{sub.analysis.syntax_errors[broken[0]][:300]}" if broken else
                          f"no function `{ex.name}` is defined at the top level of the notebook "
                          f"(renamed or deleted?)")
                sub.verdicts[ex.id] = dict(base, status="error" if broken else "missing", detail=detail)
            elif ex.kind == "function" and sub.analysis.bindings[ex.name].kind == "other":
                sub.verdicts[ex.id] = dict(base, status="error", detail=(
                    f"`{ex.name}` is defined inside a loop, `if`, `with` or `try` at the top level; "
                    "the grader reads only plain top-level definitions"))

    def _tasks(self, sub) -> list:
        if sub.unreadable:
            return []
        checks = [(sub, "check", ex) for ex in sub.exercises if ex.kind == "function" and ex.id not in sub.verdicts]
        return [(sub, "notebook", None)] + checks

    # ------------------------------------------------------------------ results
    def _finalize(self, sub) -> None:
        if sub.zeroed:
            sub.flags.add("tampered")
            sub.run.update(status="tampered", summary=sub.zeroed)
            sub.verdicts = {k: dict(v, status="tampered", points=0.0, detail=sub.zeroed)
                            for k, v in sub.verdicts.items()}
        rows, exercises = [], []
        for ex in sub.exercises:
            v = sub.verdicts[ex.id]
            rows.append({"submission": sub.name, "exercise": ex.id, "points": float(v["points"]),
                         "max_points": float(ex.points), "status": v["status"], "tests_passed": v["passed"],
                         "tests_total": v["total"], "flags": " ".join(sorted(set(v["flags"]))),
                         "detail": v.get("detail", "")})
            shown = v.get("answer")
            exercises.append({"exercise": ex.id, "title": ex.title, "status": v["status"], "points": v["points"],
                              "max_points": ex.points, "detail": v.get("detail", ""), "tests": v.get("tests", []),
                              "answer_shown": "" if shown is None else json.dumps(shown)})
        flags = set(sub.flags) | {f for r in rows for f in r["flags"].split()}
        status = sub.run.get("status") or ("unreadable" if sub.unreadable else "ok")
        summary = sub.unreadable or sub.run.get("summary", "")
        total = {"submission": sub.name, "exercise": gradebook.TOTAL, "points": sum(r["points"] for r in rows),
                 "max_points": sum(r["max_points"] for r in rows), "status": status,
                 "tests_passed": sum(int(r["tests_passed"]) for r in rows),
                 "tests_total": sum(int(r["tests_total"]) for r in rows), "flags": " ".join(sorted(flags)),
                 "detail": summary}
        record = {"submission": sub.name, "file": str(sub.path), "points": round(total["points"], 3),
                  "max_points": total["max_points"], "status": status, "flags": sorted(flags),
                  "run": {"summary": summary, "status": status, "cells": sub.run.get("cells", []),
                          "confined": sub.run.get("confined", False), "seconds": sub.run.get("seconds"),
                          "check_seconds": {k: v.get("seconds") for k, v in sub.verdicts.items() if "seconds" in v}},
                  "exercises": exercises, "texts": sub.run.get("texts", {}),
                  "output": {"stdout": sub.run.get("stdout", ""), "stderr": sub.run.get("stderr", ""),
                             "characters": sub.run.get("output_chars", 0)}}
        base = self.paths["feedback"] / feedback.file_name(sub.name)
        for path, text in ((base.with_suffix(".json"), json.dumps(record, indent=1, default=str)),
                           (base.with_suffix(".md"), feedback.render(record))):
            gradebook.write_atomic(path, text)
            self.guard.wrote(path, lambda text=text: text)
        self.book.append(sub.name, rows + [total])
        self.guard.wrote(self.out, self.book.expected_text)
        self.book.write_summary(self.paths["summary"])
        self.guard.wrote(self.paths["summary"], lambda: self.paths["summary"].read_bytes())
        self.records[sub.name] = record
        self.stats["graded"] += 1
        self.stats[status] += 1
        if self.bar is not None:
            self.bar.set_postfix_str(sub.name[:20], refresh=False)
            self.bar.update(1)

    def _guard_check(self, finished: list) -> None:
        window = finished + list(self.running.values())
        confined = all(c.confined for c in window)
        changed = self.guard.check(restore_trees=not confined)
        if not changed:
            return
        if confined:  # Landlock: no graded process can have written there
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

    # ------------------------------------------------------------------ main loop
    def run(self) -> dict:
        start = time.monotonic()
        pending = self._prepare()
        gc.freeze()  # forked children then neither scan nor copy the grader's objects
        sys.dont_write_bytecode = True  # from now on any new file in course_lib is not the grader's
        if threading.active_count() > 1:
            self.log("WARNING: the grader has threads before forking; graded processes may hang")
        import course_lib
        self.guard = Guard([Path(course_lib.__file__).resolve().parent], [self.paths["feedback"]])
        self.guard.wrote(self.out, self.book.expected_text)
        self.support = self._support_files()
        self.scratch_root = scratch_root_for(self.out)
        shutil.rmtree(self.scratch_root, ignore_errors=True)  # a killed run's leftovers go too
        self.scratch_root.mkdir(parents=True)
        self.selector = selectors.DefaultSelector()
        self.bar = None
        if self.progress:
            import tqdm
            tqdm.tqdm.monitor_interval = 0  # no monitor thread: the grader forks
            self.bar = tqdm.tqdm(total=len(pending), desc="grading", unit="notebook", file=sys.stderr,
                                 mininterval=0.5, dynamic_ncols=True)
        try:
            for sub in pending:
                self._decide_statically(sub)
                tasks = self._tasks(sub)
                sub.left = len(tasks)
                if not tasks:
                    self._finalize(sub)
                self.queue.extend(tasks)
            self.queue.reverse()  # pop() from the end = submission order
            while self.queue or self.running:
                while self.queue and len(self.running) < self.workers and self._may_start(self.queue[-1][0]):
                    self._start(self.queue.pop())
                for key, _ in self.selector.select(POLL):
                    self._read_pipe(key.data)
                self._deadlines()
                finished = self._reap()
                if finished:
                    self._guard_check(finished)
                for child in finished:
                    sub = child.task[0]
                    (self._finish_notebook if child.role == "notebook" else self._finish_check)(child)
                    sub.left -= 1
                    if sub.left == 0:
                        self._finalize(sub)
        finally:
            for child in list(self.running.values()):
                kill(child, "grader stopped")
                cleanup(child)
            self.selector.close()
            shutil.rmtree(self.scratch_root, ignore_errors=True)
            if self.bar is not None:
                self.bar.close()
        self._write_texts()
        self.stats["seconds"] = round(time.monotonic() - start, 2)
        return {"graded": self.stats["graded"], "skipped": len(self.book.done) - self.stats["graded"],
                "seconds": self.stats["seconds"], "processes": self.stats["processes"],
                "statuses": {k: v for k, v in self.stats.items() if k not in ("graded", "seconds", "processes")},
                "key_problems": self.key_problems, "gradebook": str(self.out)}

    def _write_texts(self) -> None:
        records = {}
        for name in self.book.done:
            path = self.paths["feedback"] / (feedback.file_name(name) + ".json")
            try:
                records[name] = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
        gradebook.write_texts(self.paths["texts"], records)
