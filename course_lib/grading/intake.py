"""Step 1 of grading: find the submissions, read them
without running them, choose their exercises (parent).

Every file under the folder whose name ends in .ipynb gets one identity, whatever its name:
bytes that are not UTF-8 are shown as '?', and names that would look alike in a gradebook, a
spreadsheet or a feedback file's name (spaces, Unicode composition, letter case, characters a
file name cannot hold) get a short fingerprint of their path, so no submission can take another's
row or feedback file. A symbolic link or anything else that is not a regular file is refused,
never graded as its owner's work; a file is opened without following links. Reading a notebook
never raises: what cannot be read becomes that submission's status.
"""

import hashlib
import json
import os
import re
import stat
import tempfile
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .. import notebooks
from ..exercises import index
from ..exercises.scoring import review_flags
from . import environment, gradebook
from .analyze import ANSWER_PREFIX, analyze, chapter_guess
from .cells import MAX_NOTEBOOK_BYTES, TooLarge, UnreadableNotebook, read_cells
from .feedback import file_name
from .records import REFUSED, TOO_LARGE


@dataclass
class Submission:
    """One student's notebook and everything learned about it while grading."""

    name: str
    path: Path
    analysis: object = None
    unreadable: str = ""
    refused: str = ""  # REFUSED for a link, FIFO or device; TOO_LARGE over cells.BUDGET
    exercises: list = field(default_factory=list)
    verdicts: dict = field(default_factory=dict)
    run: dict = field(default_factory=dict)
    answers: dict = field(default_factory=dict)
    flags: set = field(default_factory=set)
    left: int = 0
    zeroed: str = ""  # why this submission gets no points (it changed the grader's files)
    solo: bool = False  # graded alone: it was in flight when an earlier run died
    started: bool = False
    failed: bool = False  # a step of the grader failed on it; its record says which
    language: str = (
        "en"  # the edition it was handed out in: its feedback is written in that language
    )


@dataclass
class Entry:
    """One file found: its identity (the gradebook's
    name), its path, and why it is refused, if it is."""

    name: str
    path: Path
    refused: str = ""


def scratch_root_for(out: Path) -> Path:
    """Where a gradebook's scratch roots are: each run's is this path and a random end, private
    (environment.gradebook_root makes it); only the records beside the gradebook are stable."""
    return Path(tempfile.gettempdir()) / environment.root_prefix(out)


def shown_name(text: str) -> str:
    """A name as text any file or terminal can hold: bytes that were not UTF-8 become '?'."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace").replace("\ufffd", "?")


def look_alike(name: str) -> str:
    """What two names that a reader could confuse have in common: spaces collapsed, Unicode
    compatibility-normalised, case folded (the gradebook, spreadsheets and case-blind file
    systems)."""
    return unicodedata.normalize("NFKC", " ".join(name.split())).casefold()


def fingerprint(path: Path, folder: Path) -> str:
    return hashlib.sha1(os.fsencode(path.relative_to(folder))).hexdigest()


def _notebooks(folder: Path, skip: list):
    """Paths of every *.ipynb entry under `folder`
    (files, links, FIFOs...), never following links."""
    skip = [os.path.realpath(s) for s in skip]
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d != ".ipynb_checkpoints" and os.path.realpath(os.path.join(dirpath, d)) not in skip
        )
        for name in sorted(
            filenames
        ):  # links to files, pipes and devices are here too; links to folders are not
            if name.endswith(".ipynb"):
                yield Path(dirpath) / name


def refusal(path: Path) -> str:
    """Why `path` is not graded ('' for a regular file)."""
    try:
        st = os.lstat(path)
    except OSError as err:
        return f"the file could not be read: {type(err).__name__}"
    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link, not a notebook file: a link is never graded as its owner's work"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file (a pipe, a device or a socket): not graded"
    return ""


def _confused(names: list) -> list:
    """For each name: could a reader, a spreadsheet
    or the feedback folder mistake it for another?"""
    looks, files = Counter(map(look_alike, names)), Counter(file_name(n).casefold() for n in names)
    return [looks[look_alike(n)] > 1 or files[file_name(n).casefold()] > 1 for n in names]


def _identities(named: list, folder: Path) -> list:
    """One distinct, printable name per (raw name, path): a fingerprint of the path where needed."""
    base = [gradebook.clean(shown_name(raw)) for raw, _ in named]
    mark = lambda i, width: gradebook.clean(
        f"{base[i][:120]} #{fingerprint(named[i][1], folder)[:width]}"
    )
    names = [
        mark(i, 8) if bad or shown_name(raw) != raw or len(file_name(base[i])) > 150 else base[i]
        for i, (bad, (raw, _)) in enumerate(zip(_confused(base), named))
    ]
    return [mark(i, 40) if bad else n for i, (bad, n) in enumerate(zip(_confused(names), names))]


def find_submissions(folder: Path, skip: list) -> list:
    """An Entry per notebook under `folder`: named by the file name without .ipynb, or the relative
    path when two students' files share a name; names that would still be confused with another
    (see `look_alike`, and the feedback file's name) get a fingerprint of their path."""
    folder = Path(folder)
    paths = list(_notebooks(folder, skip))
    stems = Counter(p.stem for p in paths)
    named = [
        (p.stem if stems[p.stem] == 1 else p.relative_to(folder).with_suffix("").as_posix(), p)
        for p in paths
    ]
    names = _identities(named, folder)
    return [Entry(name, path, refusal(path)) for name, (_, path) in zip(names, named)]


def read_bytes(path: Path, limit: int = MAX_NOTEBOOK_BYTES) -> bytes:
    """A regular file's bytes (at most limit + 1), opened without following a link and never
    waiting on a pipe; OSError for anything else."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read(entry: Entry) -> Submission:
    """A submission with its static analysis, or the reason it cannot be read (never raises)."""
    sub = Submission(entry.name, entry.path)
    if entry.refused:
        sub.unreadable = entry.refused
        sub.refused = REFUSED if "could not be read" not in entry.refused else ""
        return sub
    try:
        data = read_bytes(entry.path)
        sub.analysis = analyze(read_cells(data))
        sub.language = notebook_language(data, sub.analysis.imports)
    except UnreadableNotebook as err:
        sub.unreadable = str(err)
        sub.refused = TOO_LARGE if isinstance(err, TooLarge) else ""
    except Exception as err:  # noqa: BLE001 - whatever a file does to the reader is its own status
        sub.unreadable = (
            f"the file could not be read: {type(err).__name__}: {shown_name(str(err))[:200]}"
        )
    return sub


LANGUAGE_IMPORT = re.compile(
    r"^\s*(?:import\s+course_lib\.zh\b|from\s+course_lib\s+import\s+zh\b)", re.M
)


def notebook_language(data: bytes, imports: list) -> str:
    """ "zh" for a notebook of the Chinese edition (a top-level `import course_lib.zh`, or the
    notebook's metadata course.language), else "en"."""
    if any(LANGUAGE_IMPORT.search(line) for line in imports):
        return "zh"
    try:
        meta = json.loads(data.decode("utf-8-sig")).get("metadata") or {}
        lang = (meta.get("course") or {}).get("language")
    except (ValueError, AttributeError):
        return "en"
    return "zh" if lang == "zh" else "en"


def mark_failed(sub, reason: str, trace: str = "") -> None:
    """A step of the grader failed on this submission: that is its status, with the reason."""
    sub.failed = True
    sub.unreadable = reason
    sub.run.update(status=gradebook.GRADER_ERROR, summary=reason, trace=trace)


def assign(subs: list, chapters: set, exercises=None) -> None:
    """Which exercises each submission is graded on: its chapter(s), or the class's (as
    index.ExerciseInfo: no chapter module is imported here). `exercises`: a teacher's
    assignment's instead of the course's (`grade --assignment`)."""
    exercises = index.exercises() if exercises is None else tuple(exercises)
    by_chapter = {}
    for ex in exercises:
        by_chapter.setdefault(ex.chapter.number, []).append(
            ex.name if ex.kind == "function" else ANSWER_PREFIX + ex.name
        )
    guesses = {}
    for s in subs:
        try:
            guesses[s.name] = (
                (chapters or chapter_guess(s.analysis, by_chapter)) if s.analysis else set()
            )
        except Exception as err:  # noqa: BLE001
            mark_failed(
                s,
                (
                    "the grader could not tell which chapter this notebook is for "
                    f"({type(err).__name__})"
                ),
            )
            guesses[s.name] = set()
    counted = Counter(frozenset(g) for g in guesses.values() if g)
    default = set(counted.most_common(1)[0][0]) if counted else set()
    for sub in subs:
        chosen = chapters or guesses[sub.name] or default
        sub.exercises = [ex for ex in exercises if ex.chapter.number in chosen]


def handed_out_lines(number: str) -> set:
    """The code lines of chapter `number`'s notebook as handed out."""
    if not notebooks.path_of(number).is_file():
        return set()
    return {line.strip() for src in notebooks.code(number) for line in src.splitlines()}


def flag_added_code(subs: list, handed_out=None) -> None:
    """Review flags for code the student added to the notebook (reading the key, sockets,
    signals...); `handed_out`: {assignment name: its lines} for a teacher's assignment."""
    cache = dict(handed_out or {})
    for sub in subs:
        if sub.analysis is None:
            continue
        given = set()
        for number in {ex.chapter.number for ex in sub.exercises}:
            if number not in cache:
                cache[number] = handed_out_lines(number)
            given |= cache[number]
        added = [
            line
            for _, src in sub.analysis.cells
            for line in src.splitlines()
            if line.strip() not in given
        ]
        sub.flags |= {
            f"review:{label.replace(' ', '-')}" for label in review_flags("\n".join(added))
        }


# -------------------------------------------------------------- the journal: progress after a crash
def _journal_lines(journal: Path) -> list:
    if not journal.exists():
        return []
    return [
        line.split("\t")
        for line in journal.read_text(encoding="utf-8", errors="replace").splitlines()
    ]


def read_journal(journal: Path, pending: list, fresh: bool) -> int:
    """Submissions an earlier run started but never finished: that run died while grading them.

    Each is graded alone first; one that was already graded alone when a run died (it
    stopped the grader itself) is not graded again. Returns how many are graded alone.
    """
    if fresh:
        journal.unlink(missing_ok=True)
    starts = {}
    for parts in _journal_lines(journal):
        if len(parts) == 3 and parts[0] == "start":
            starts.setdefault(parts[1], set()).add(parts[2])
    for sub in pending:
        if "solo" in starts.get(sub.name, ()):
            sub.unreadable = (
                "grading this notebook stopped the grader itself (the grader died while it was "
                "the only notebook being graded); it was not graded again"
            )
            sub.run["status"] = "stopped the grader"
        elif sub.name in starts:
            sub.solo = True
    pending.sort(key=lambda s: not s.solo)
    return sum(s.solo for s in pending)


def _append(journal: Path, *fields) -> None:
    with open(journal, "a", encoding="utf-8", errors="replace") as f:
        f.write("\t".join(str(x).replace("\t", " ").replace("\n", " ") for x in fields) + "\n")
        f.flush()


def journal_start(journal: Path, sub) -> None:
    _append(journal, "start", sub.name, "solo" if sub.solo else "shared")


def read_all(entries: list, journal: Path, fresh: bool) -> list:
    """`read` every entry, journalled: a file whose reading stopped the grader twice is not read a
    third time (its status says why), so a rerun always gets past it."""
    if fresh:
        journal.unlink(missing_ok=True)
    tries = Counter(
        parts[1] for parts in _journal_lines(journal) if len(parts) == 2 and parts[0] == "reading"
    )
    read_ok = {
        parts[1] for parts in _journal_lines(journal) if len(parts) == 2 and parts[0] == "read"
    }
    subs = []
    for entry in entries:
        if tries[entry.name] >= 2 and entry.name not in read_ok:
            sub = Submission(entry.name, entry.path)
            sub.unreadable = (
                "reading this notebook stopped the grader itself, twice; it was not read again"
            )
            sub.run["status"] = "stopped the grader"
        else:
            if entry.name not in read_ok:
                _append(journal, "reading", entry.name)
            sub = read(entry)
            if entry.name not in read_ok:
                _append(journal, "read", entry.name)
        subs.append(sub)
    class_language(subs)
    return subs


def class_language(subs: list) -> None:
    """A notebook whose language cannot be read (refused, unreadable) gets its feedback in the
    language most of the class handed in, else in the grader's own ($COURSE_LANG, --lang)."""
    from ..i18n import language

    read = Counter(s.language for s in subs if s.analysis is not None)
    lang = read.most_common(1)[0][0] if read else language()
    for sub in subs:
        if sub.analysis is None:
            sub.language = lang
