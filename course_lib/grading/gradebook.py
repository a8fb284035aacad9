"""The gradebook CSV: one row per submission and exercise, then a TOTAL row (grader).

A submission's rows (its exercise rows and its TOTAL row, last) are appended in one write
and flushed to disk as soon as it is graded. The TOTAL row marks the submission complete:
on a rerun, a torn last line and the rows of a submission without its TOTAL row are
dropped and that submission is graded again; complete ones are kept and skipped. So a
killed grader resumes with no row lost or duplicated. GRADEBOOK.journal records which
submissions were started (see Grader._read_journal): one that was being graded alone when
a run died is not graded again, so no notebook can stop the class by killing the grader.

Beside GRADEBOOK.csv the grader writes GRADEBOOK.summary.csv (one row per submission:
total, percent, status and each exercise's points), GRADEBOOK.texts.csv (free-text
answers) and GRADEBOOK_feedback/ (one Markdown file per student, plus a JSON record).
"""

import csv
import io
import os
from pathlib import Path

from . import csvsafe
from .csvsafe import FORMULA_STARTS, clean, neutral  # noqa: F401 (their old home)

COLUMNS = [
    "submission",
    "exercise",
    "points",
    "max_points",
    "status",
    "tests_passed",
    "tests_total",
    "flags",
    "detail",
]
TOTAL = "TOTAL"
GRADER_ERROR = (
    "grader error"  # a TOTAL row's status when a step of the grader failed: retried on a rerun
)
NOTE = "(grader note)"  # summary rows that are not a submission: e.g. isolation this machine lacks


class NotAGradebook(Exception):
    """The output file exists but is not one of our gradebooks: refuse to touch it."""


def render(rows: list) -> str:
    return csvsafe.text([[clean(row.get(c, "")) for c in COLUMNS] for row in rows])


def paths(out: Path) -> dict:
    out = Path(out)
    return {
        "gradebook": out,
        "summary": out.with_name(out.stem + ".summary.csv"),
        "texts": out.with_name(out.stem + ".texts.csv"),
        "feedback": out.with_name(out.stem + "_feedback"),
        "journal": out.with_name(out.stem + ".journal"),
    }


def write_atomic(path: Path, text: str) -> None:
    """Write `text` as UTF-8 (anything unencodable,
    a lone surrogate say, becomes '?'), atomically."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.unlink(missing_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    # 0600: the teacher's alone (grades and classmates' answers), whatever the umask
    with open(os.open(tmp, flags, 0o600), "w", newline="", encoding="utf-8", errors="replace") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class Gradebook:
    """Append-only gradebook with resume; `done` maps each complete submission to its rows."""

    def __init__(self, path: Path, fresh: bool = False):
        self.path = Path(path)
        self.done = {}
        self.repaired = self.retried = 0
        if self.path.exists() and not fresh:
            self._load()
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            write_atomic(self.path, ",".join(COLUMNS) + "\n")

    def _load(self) -> None:
        data = self.path.read_bytes()
        text = data.decode("utf-8", errors="replace")
        if not text.startswith(",".join(COLUMNS)):
            raise NotAGradebook(
                f"{self.path} exists and is not a gradebook written by this grader "
                f"(its first line differs); choose another --out or pass --fresh"
            )
        complete = text[: text.rfind("\n") + 1]
        pending = {}
        for row in csv.DictReader(io.StringIO(complete)):
            name = row.get("submission", "")
            pending.setdefault(name, []).append(row)
            if row.get("exercise") == TOTAL and row.get("status") != GRADER_ERROR:
                self.done[name] = pending.pop(name)
            elif row.get("exercise") == TOTAL:  # the grader failed on it last time: graded again
                self.retried += 1
                pending.pop(name)
        self.repaired = sum(len(r) for r in pending.values()) + (len(text) != len(complete))
        if (
            self.repaired or self.retried
        ):  # a torn line or a half-written submission: keep only complete ones
            write_atomic(
                self.path, ",".join(COLUMNS) + "\n" + "".join(render(r) for r in self.done.values())
            )

    def append(self, name: str, rows: list) -> None:
        """Write one submission's rows (TOTAL last) in one write, then flush them to disk."""
        assert rows and rows[-1]["exercise"] == TOTAL
        block = render(rows)
        with open(self.path, "a", newline="", encoding="utf-8", errors="replace") as f:
            f.write(block)
            f.flush()
            os.fsync(f.fileno())
        self.done[name] = [dict(zip(COLUMNS, r)) for r in csv.reader(io.StringIO(block))]

    def expected_text(self) -> str:
        return ",".join(COLUMNS) + "\n" + "".join(render(r) for r in self.done.values())

    def write_summary(self, path: Path, notes=()) -> None:
        """One row per submission: total, percent, status and each exercise's points; then one
        row per note (what this machine's isolation could not guarantee)."""
        exercises = sorted(
            {r["exercise"] for rows in self.done.values() for r in rows if r["exercise"] != TOTAL}
        )
        rows = [["submission", "points", "max_points", "percent", "status"] + exercises]
        for name in sorted(self.done):
            total = self.done[name][-1]
            by_ex = {r["exercise"]: r["points"] for r in self.done[name][:-1]}
            top = float(total["max_points"])
            percent = 100 * float(total["points"]) / top if top else 0
            head = [name, total["points"], total["max_points"], f"{percent:.1f}", total["status"]]
            rows.append([clean(c) for c in head + [by_ex.get(e, "") for e in exercises]])
        rows += [[NOTE, "", "", "", clean(note)] for note in notes]
        write_atomic(path, csvsafe.text(rows))


def write_texts(path: Path, records: dict) -> None:
    """Free-text answers, one row per submission and answer, for the teacher to read."""
    rows = [["submission", "name", "text"]]
    for name in sorted(records):
        for key, text in sorted((records[name].get("texts") or {}).items()):
            rows.append([clean(name), clean(key), str(text).replace("\r", "")[:10000]])
    write_atomic(path, csvsafe.text(rows))
