"""Step 1 of grading: find the submissions, read them without running them, choose their exercises (grader)."""
import hashlib
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..exercises import all_exercises
from ..exercises.scoring import review_flags
from . import gradebook
from .analyze import ANSWER_PREFIX, analyze, chapter_guess
from .cells import UnreadableNotebook, code_cells, read_cells


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
    named = [(p.stem if stems[p.stem] == 1 else p.relative_to(folder).with_suffix("").as_posix(), p)
             for p in paths]
    return [(gradebook.clean(name), p) for name, p in named]


def read(name: str, path: Path) -> Submission:
    """A submission with its static analysis, or the reason it cannot be read."""
    sub = Submission(name, path)
    try:
        sub.analysis = analyze(read_cells(path.read_bytes()))
    except UnreadableNotebook as err:
        sub.unreadable = str(err)
    except (OSError, RecursionError, MemoryError) as err:
        sub.unreadable = f"the file could not be read: {type(err).__name__}: {err}"
    return sub


def assign(subs: list, chapters: set) -> None:
    """Which exercises each submission is graded on: its chapter(s), or the class's."""
    exercises = all_exercises()
    by_chapter = {}
    for ex in exercises:
        by_chapter.setdefault(ex.chapter.number, []).append(
            ex.name if ex.kind == "function" else ANSWER_PREFIX + ex.name)
    guesses = {s.name: (chapters or chapter_guess(s.analysis, by_chapter)) if s.analysis else set() for s in subs}
    counted = Counter(frozenset(g) for g in guesses.values() if g)
    default = set(counted.most_common(1)[0][0]) if counted else set()
    for sub in subs:
        chosen = chapters or guesses[sub.name] or default
        sub.exercises = [ex for ex in exercises if ex.chapter.number in chosen]


def handed_out_lines(number: str) -> set:
    """The code lines of chapter `number`'s notebook as handed out."""
    from .selftest import chapter_notebook
    path = chapter_notebook(number)
    if path is None:
        return set()
    return {line.strip() for _, src in code_cells(read_cells(path.read_bytes())) for line in src.splitlines()}


def flag_added_code(subs: list) -> None:
    """Review flags for code the student added to the notebook (reading the key, sockets, signals...)."""
    cache = {}
    for sub in subs:
        if sub.analysis is None:
            continue
        given = set()
        for number in {ex.chapter.number for ex in sub.exercises}:
            given |= cache.setdefault(number, handed_out_lines(number))
        added = [line for _, src in sub.analysis.cells for line in src.splitlines() if line.strip() not in given]
        sub.flags |= {f"review:{label.replace(' ', '-')}" for label in review_flags("\n".join(added))}


def read_journal(journal: Path, pending: list, fresh: bool) -> int:
    """Submissions an earlier run started but never finished: that run died while grading them.

    Each is graded alone first; one that was already graded alone when a run died (it
    stopped the grader itself) is not graded again. Returns how many are graded alone.
    """
    if fresh:
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
    pending.sort(key=lambda s: not s.solo)
    return sum(s.solo for s in pending)


def journal_start(journal: Path, sub) -> None:
    with open(journal, "a") as f:
        f.write(f"start\t{sub.name}\t{'solo' if sub.solo else 'shared'}\n")
        f.flush()
