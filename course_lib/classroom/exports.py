"""Grades where teachers keep them: the gradebook as nbgrader's grade export or a Canvas import.

    python -m course_lib grade SUBMISSIONS --out GRADEBOOK.csv --export nbgrader|canvas
                                           [--roster CSV]

Reads only the gradebook the grader wrote (one row per submission and exercise, a TOTAL
row last). Each chapter is one assignment; a submission's score in it is the sum of its
exercise rows of that chapter. With a roster, each submission is matched to a student
(roster.py); a submission with no roster entry is exported under its own name and
reported, never dropped. Two submissions for one student and chapter stop the export
(nothing is written) and name both files. Files are written whole or not at all.
"""

import csv
import io
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..grading import csvsafe
from ..grading.csvsafe import clean
from ..grading.gradebook import TOTAL
from ..grading.intake import find_submissions
from ..i18n import tr
from ..i18n.catalogue import join
from .assignments import all_assignments, chapter_of, of_release

NBGRADER_COLUMNS = [
    "assignment",
    "duedate",
    "timestamp",
    "student_id",
    "last_name",
    "first_name",
    "email",
    "raw_score",
    "late_submission_penalty",
    "score",
    "max_score",
]
CANVAS_STUDENT_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
FORMATS = ("nbgrader", "canvas")


class ExportError(ValueError):
    """The export cannot be written as asked; nothing was written."""


@dataclass
class Score:
    """One submission's points in one chapter."""

    submission: str
    chapter: str
    points: float
    max_points: float
    status: str
    timestamp: str = ""


@dataclass
class Report:
    """What an export wrote and what the teacher must look at."""

    files: dict = field(default_factory=dict)  # format -> path
    students: int = 0
    unmatched: list = field(default_factory=list)  # submission names without a roster entry
    no_submission: list = field(default_factory=list)  # roster students with no graded submission
    warnings: list = field(default_factory=list)

    def lines(self) -> list:
        out = [f"{fmt} export: {path}" for fmt, path in self.files.items()]
        out += [
            f"WARNING no roster entry for submission {name!r}: exported under that name with "
            "no student id; add it to the roster (a username column) and run the same "
            "command again"
            for name in self.unmatched
        ]
        if self.no_submission:
            more = " ..." if len(self.no_submission) > 10 else ""
            shown = ", ".join(self.no_submission[:10]) + more
            out.append(
                f"note: {len(self.no_submission)} roster student(s) without a graded "
                f"submission: {shown}"
            )
        return out + [f"WARNING {w}" for w in self.warnings]


def _number(text) -> float:
    try:
        return float(str(text).lstrip("'"))
    except ValueError:
        return 0.0


def read_scores(gradebook_csv, submissions_dir=None, released=None) -> list:
    """Scores per (submission, chapter) from a gradebook CSV; complete submissions only (a
    teacher's `released` assignment counts as one chapter)."""
    path = Path(gradebook_csv)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise ExportError(f"cannot read the gradebook {path}: {err.strerror or err}") from None
    rows = list(csv.DictReader(io.StringIO(text)))
    if rows and not {"submission", "exercise", "points", "max_points", "status"} <= set(rows[0]):
        raise ExportError(f"{path} is not a gradebook written by `python -m course_lib grade`")
    stamps = submission_times(submissions_dir) if submissions_dir else {}
    by_sub, status = {}, {}
    for row in rows:
        if row["exercise"] == TOTAL:
            status[row["submission"]] = row["status"]
        else:
            by_sub.setdefault(row["submission"], []).append(row)
    scores = []
    for name in status:
        chapters = {}
        for row in by_sub.get(name, []):
            chapter = chapters.setdefault(chapter_of(row["exercise"], released), [0.0, 0.0])
            chapter[0] += _number(row["points"])
            chapter[1] += _number(row["max_points"])
        for number, (points, top) in sorted(chapters.items()) or [("", (0.0, 0.0))]:
            stamp = stamps.get(name, "")
            scores.append(Score(name, number, round(points, 3), top, status[name], stamp))
    return scores


def submission_times(folder) -> dict:
    """{submission name: file modification time, UTC}, named as the grader names them (intake's
    find_submissions); a link or a pipe gets its own time, never its target's."""
    stamps = {}
    for entry in find_submissions(Path(folder), skip=[]):
        mtime = os.lstat(entry.path).st_mtime
        stamps[clean(entry.name)] = str(
            datetime.fromtimestamp(mtime, timezone.utc).replace(tzinfo=None)
        )
    return stamps


@dataclass
class Entry:
    """One student of the export: a roster row, or a submission the roster does not know."""

    key: str
    student: object = None  # roster.Student or None
    name: str = ""
    scores: dict = field(default_factory=dict)  # chapter -> Score


def _duplicate(entry: Entry, score: Score) -> ExportError:
    st = entry.student
    who = f"student {st.id} ({st.name})" if st else f"student {entry.name!r}"
    one, two = sorted([entry.scores[score.chapter].submission, score.submission])
    return ExportError(
        f"two submissions for {who} in chapter {score.chapter or '?'}: {one!r} and "
        f"{two!r}; keep one of them in the submissions folder and run the same "
        "command again (graded notebooks are not graded again); nothing was "
        "exported"
    )


def entries(scores: list, roster=None) -> tuple:
    """([Entry] in roster order, then unmatched ones; Report); ExportError when one student
    has two submissions in a chapter."""
    report, table = Report(), {}
    if roster is not None:
        for st in roster.students:
            table[f"id:{st.id}"] = Entry(f"id:{st.id}", st, st.name)
    for score in scores:
        st = roster.match(score.submission) if roster is not None else None
        own = score.submission.rsplit("/", 1)[-1]
        key = f"id:{st.id}" if st else f"sub:{own}"
        entry = table.setdefault(key, Entry(key, None, own))
        if st is None and roster is not None and score.submission not in report.unmatched:
            report.unmatched.append(score.submission)
        if score.chapter in entry.scores:
            raise _duplicate(entry, score)
        entry.scores[score.chapter] = score
    report.no_submission = [e.student.id for e in table.values() if e.student and not e.scores]
    if "" in {s.chapter for s in scores}:
        report.warnings.append(
            "some submissions have no exercise of any chapter (unreadable or "
            "empty notebooks); they are exported with 0 points under '?'"
        )
    return list(table.values()), report


def chapters_of(scores: list, released=None) -> list:
    """(number, label, notebook stem, max points) of each chapter in the scores, in order."""
    known = all_assignments()
    if released is not None:
        known[released.number] = of_release(released)
    found = []
    for number in sorted({s.chapter for s in scores}):
        if number in known:
            a = known[number]  # written answers the teacher reviewed add to the chapter's points
            top = max([a.points] + [s.max_points for s in scores if s.chapter == number])
            found.append((number, a.label, Path(a.notebook).stem, top))
        else:
            top = max((s.max_points for s in scores if s.chapter == number), default=0.0)
            name = f"ch{number}" if number else "?"
            found.append((number, f"Chapter {number or '?'}", name, top))
    return found


def nbgrader_rows(table: list, chapters: list, duedate: str = "") -> list:
    """nbgrader's grade export: one row per chapter and student (0 where nothing was handed in)."""
    rows = [NBGRADER_COLUMNS]
    for number, _label, assignment, max_score in chapters:
        for e in table:
            st, score = e.student, e.scores.get(number)
            raw = score.points if score else 0.0
            who = [st.id, st.last_name, st.first_name, st.email] if st else [e.name, "", "", ""]
            rows.append(
                [
                    assignment,
                    duedate,
                    score.timestamp if score else "",
                    *who,
                    raw,
                    0.0,
                    max(0.0, raw - 0.0),
                    max_score,
                ]
            )
    return rows


def canvas_rows(table: list, chapters: list) -> list:
    """Canvas's gradebook import: student columns, one column per chapter, a Points Possible
    row; a blank cell (nothing handed in) leaves that grade in Canvas unchanged."""
    rows = [
        CANVAS_STUDENT_COLUMNS + [label for _, label, _, _ in chapters],
        ["Points Possible", "", "", "", ""] + [points for *_, points in chapters],
    ]
    for e in table:
        st = e.student
        ids = (
            [st.name, st.canvas_id, st.id, st.sis_login_id, st.section]
            if st
            else [e.name, "", "", "", ""]
        )
        rows.append(ids + [e.scores[n].points if n in e.scores else "" for n, *_ in chapters])
    return rows


def write_csv(path: Path, rows: list) -> None:
    """All rows at once (a temporary file renamed over `path`); no cell is a spreadsheet formula."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(csvsafe.text([[clean(c) for c in row] for row in rows]), encoding="utf-8")
    os.replace(tmp, path)


def export_path(gradebook_csv, fmt: str) -> Path:
    """GRADEBOOK.csv -> GRADEBOOK.nbgrader.csv / GRADEBOOK.canvas.csv"""
    gradebook_csv = Path(gradebook_csv)
    return gradebook_csv.with_name(f"{gradebook_csv.stem}.{fmt}.csv")


def export(
    gradebook_csv, formats, roster=None, submissions_dir=None, duedate: str = "", released=None
) -> Report:
    """Write each of `formats` beside the gradebook; ExportError, and nothing written, if not.
    `released`: the teacher's assignment the gradebook grades (`grade --assignment`)."""
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise ExportError(f"unknown export format {unknown[0]!r}; choose from {', '.join(FORMATS)}")
    scores = read_scores(gradebook_csv, submissions_dir, released)
    table, report = entries(scores, roster)
    chapters = chapters_of(scores, released)
    report.students = len(table)
    if roster is None and "canvas" in formats:
        report.warnings.append(
            "without --roster the Canvas file has names only: Canvas then "
            "matches students by name; a roster gives it their SIS User ID"
        )
    built = {
        "nbgrader": lambda: nbgrader_rows(table, chapters, duedate),
        "canvas": lambda: canvas_rows(table, chapters),
    }
    for fmt in dict.fromkeys(formats):
        path = export_path(gradebook_csv, fmt)
        write_csv(path, built[fmt]())
        report.files[fmt] = str(path)
    return report


class Exporter:
    """The `--export/--roster` step of `grade`: the roster is read before grading, files after."""

    def __init__(self, gradebook_csv, formats, roster=None, submissions_dir=None, released=None):
        self.gradebook_csv, self.formats = gradebook_csv, list(formats)
        self.roster, self.submissions_dir, self.released = roster, submissions_dir, released

    @classmethod
    def from_args(cls, args, released=None):
        """None without --export; ExportError for --roster alone; RosterError for a bad roster."""
        from .roster import Roster

        if not args.export:
            if args.roster:
                raise ExportError("--roster is used by --export nbgrader|canvas; add one")
            return None
        roster = Roster.read(args.roster) if args.roster else None
        return cls(args.out, args.export, roster, args.submissions, released)

    def run(self, log=print) -> int:
        """Write the exports; 0 done, 1 done with submissions the roster lacks, 2 not written."""
        try:
            report = export(
                self.gradebook_csv,
                self.formats,
                self.roster,
                self.submissions_dir,
                released=self.released,
            )
        except ExportError as err:
            log(join([tr("export not written:"), tr(str(err))]))
            return 2
        for line in report.lines():
            log(line)
        return 1 if report.unmatched else 0
