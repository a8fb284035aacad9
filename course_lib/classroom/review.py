"""Written answers graded by the teacher: the review file, its checks, and its points in the
gradebook (teacher).

GRADEBOOK.review.csv holds one row per reviewed answer (submission, question, points,
max_points, comment, and the SHA-256 of the answer as it was reviewed); the review page
(`python -m course_lib review`, review_page.py) writes it as the teacher goes, and a teacher
may edit it by hand. `apply` puts its points into the gradebook as one row per answer
(exercise `chNN.written.QUESTION`, status "reviewed"), so the summary and the LMS exports count
them; `grade` applies it after every run, so a regrade keeps them. An answer that changed since
it was reviewed gets status "review again", no points and a review flag: never kept silently.
A review typed by hand without the answer's fingerprint is pinned to the answer there at the
first `apply` (the file is written back with it), so a later change is still caught.
A question its chapter declares (written.py) has the declared maximum: the file may leave
max_points blank for it, and a different one is refused.
"""

import csv
import hashlib
import io
from pathlib import Path

from ..grading import csvsafe, gradebook
from . import report, written

COLUMNS = ["submission", "question", "points", "max_points", "comment", "answer_sha256"]
REVIEWED, AGAIN = "reviewed", "review again"
CHANGED_FLAG = "review:written-answer-changed"


class ReviewError(ValueError):
    """The review file or a review is wrong: says where (file and line) and what."""


def review_path(book) -> Path:
    """GRADEBOOK.csv -> GRADEBOOK.review.csv"""
    book = Path(book)
    return book.with_name(book.stem + ".review.csv")


def digest(text: str) -> str:
    """The fingerprint of an answer as the teacher saw it."""
    return hashlib.sha256(str(text).encode("utf-8", "replace")).hexdigest()


def written_answers(records: list) -> dict:
    """{(submission, question): answer text} of every record's written answers."""
    return {
        (r["submission"], str(q)): str(t)
        for r in records
        for q, t in (r.get("texts") or {}).items()
    }


def _number(text, where: str, what: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ReviewError(f"{where}: {what} {text!r} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ReviewError(f"{where}: {what} {text!r} is not a number")
    return value


def _maximum(row: dict, declared, where: str) -> float:
    """The review's maximum: the declared one (a blank cell takes it), else the file's."""
    given = row.get("max_points")
    if declared is not None and not str(given if given is not None else "").strip():
        return declared
    top = _number(given, where, "max_points")
    if declared is not None and top != declared:
        raise ReviewError(
            f"{where}: max_points {top:g} is not the maximum {declared:g} that the chapter "
            f"declares for {row.get('question')!r}"
        )
    return top


def check_row(row: dict, answers: dict, where: str, maxima=None) -> dict:
    """One review, checked against the class's answers and the declared maxima (`maxima`,
    written.maxima); ReviewError naming `where` if wrong."""
    name, question = str(row.get("submission", "")), str(row.get("question", ""))
    if name not in {s for s, _ in answers}:
        raise ReviewError(f"{where}: unknown student {name!r} (not in this gradebook)")
    if (name, question) not in answers:
        raise ReviewError(f"{where}: {name!r} has no written answer {question!r}")
    top = _maximum(row, (maxima or {}).get((name, question)), where)
    points = _number(row.get("points"), where, "points")
    if top <= 0:
        raise ReviewError(f"{where}: max_points must be above 0, not {top:g}")
    if not 0 <= points <= top:
        raise ReviewError(f"{where}: {points:g} points is outside 0 to the maximum {top:g}")
    sha = str(row.get("answer_sha256") or "") or digest(answers[(name, question)])
    comment = " ".join(str(row.get("comment") or "").split())[:2000]
    return dict(zip(COLUMNS, [name, question, points, top, comment, sha]))


def read(path: Path, answers: dict, maxima=None) -> dict:
    """{(submission, question): review} of the review file (empty if there is none)."""
    path = Path(path)
    if not path.exists():
        return {}
    text = path.read_text(encoding="utf-8-sig", errors="replace")
    table = csv.DictReader(io.StringIO(text))
    missing = [c for c in COLUMNS[:4] if c not in (table.fieldnames or [])]
    if missing:
        raise ReviewError(f"{path} line 1: missing column(s) {', '.join(missing)}")
    reviews = {}
    for row in table:
        row = {
            k: (v[1:] if isinstance(v, str) and v.startswith("'") else v) for k, v in row.items()
        }
        review = check_row(row, answers, f"{path} line {table.line_num}", maxima)
        reviews[(review["submission"], review["question"])] = review
    return reviews


def unpinned(path: Path) -> bool:
    """Does the review file hold a review without its answer's fingerprint (typed by hand)?"""
    if not Path(path).exists():
        return False
    text = Path(path).read_text(encoding="utf-8-sig", errors="replace")
    return any(
        not (r.get("answer_sha256") or "").strip() for r in csv.DictReader(io.StringIO(text))
    )


def render(reviews: dict) -> str:
    rows = [COLUMNS] + [[gradebook.clean(reviews[k][c]) for c in COLUMNS] for k in sorted(reviews)]
    return csvsafe.text(rows)


def save(book, submission, question, points, max_points, comment="") -> dict:
    """Check one review, add it to the review file (atomically) and apply the file to the
    gradebook; nothing is written if the review or the file already there is wrong."""
    records = report.load(book)
    answers, maxima = written_answers(records), written.maxima(records)
    reviews = read(review_path(book), answers, maxima)
    row = {
        "submission": submission,
        "question": question,
        "points": points,
        "max_points": max_points,
        "comment": comment,
    }
    review = check_row(row, answers, "this review", maxima)
    reviews[(review["submission"], review["question"])] = review
    gradebook.write_atomic(review_path(book), render(reviews))
    apply(book, records)
    return review


def written_rows(record: dict, reviews: dict) -> list:
    """The gradebook rows of one record's reviewed answers (changed ones: review again)."""
    rows, number = [], written.chapter_of(record)
    chapter = f"ch{number}" if number else ""
    for question, text in sorted((record.get("texts") or {}).items()):
        review = reviews.get((record["submission"], str(question)))
        if review is None:
            continue
        same = review["answer_sha256"] == digest(text)
        rows.append(
            {
                "submission": record["submission"],
                "exercise": ".".join(p for p in (chapter, "written", str(question)) if p),
                "points": review["points"] if same else 0.0,
                "max_points": review["max_points"],
                "status": REVIEWED if same else AGAIN,
                "tests_passed": int(same),
                "tests_total": 1,
                "flags": "" if same else CHANGED_FLAG,
                "detail": review["comment"],
            }
        )
    return rows


def is_written(row: dict) -> bool:
    return ".written." in "." + row.get("exercise", "")


def _total(rows: list, old_total: dict) -> dict:
    total = dict(old_total)
    total["points"] = round(sum(float(r["points"]) for r in rows), 3)
    total["max_points"] = round(sum(float(r["max_points"]) for r in rows), 3)
    total["tests_passed"] = sum(int(float(r["tests_passed"] or 0)) for r in rows)
    total["tests_total"] = sum(int(float(r["tests_total"] or 0)) for r in rows)
    flags = set(str(old_total.get("flags", "")).split()) - {CHANGED_FLAG}
    flags |= {f for r in rows for f in str(r.get("flags", "")).split() if f == CHANGED_FLAG}
    total["flags"] = " ".join(sorted(flags))
    return total


def _notes(summary: Path) -> list:
    if not summary.exists():
        return []
    rows = csv.reader(io.StringIO(summary.read_text(encoding="utf-8", errors="replace")))
    return [r[4] for r in rows if r and r[0] == gradebook.NOTE and len(r) > 4]


def apply(book, records=None) -> int:
    """Put the review file's points into the gradebook and its summary; returns how many rows."""
    book = Path(book)
    records = records if records is not None else report.load(book)
    reviews = read(review_path(book), written_answers(records), written.maxima(records))
    if unpinned(review_path(book)):  # the answers the teacher saw are those graded now
        gradebook.write_atomic(review_path(book), render(reviews))
    by_name = {r["submission"]: r for r in records}
    graded = gradebook.Gradebook(book)
    count = 0
    for name, rows in graded.done.items():
        kept = [r for r in rows[:-1] if not is_written(r)]
        added = written_rows(by_name[name], reviews) if name in by_name else []
        count += len(added)
        graded.done[name] = kept + added + [_total(kept + added, rows[-1])]
    paths = gradebook.paths(book)
    gradebook.write_atomic(book, graded.expected_text())
    graded.write_summary(paths["summary"], _notes(paths["summary"]))
    return count
