"""Step 4 of grading: a finished submission's rows, feedback and record, written at once (parent).

Whatever a submission's name, answers or output hold (lone surrogates, control characters,
JSON that is not plain), the record is plain JSON and every file is written as UTF-8 with
anything unencodable replaced: writing a record never raises for a submission's content.
"""

import json

from ..exercises import scoring
from . import feedback, gradebook
from .records import TAMPERED, Verdict


def feedback_path(paths: dict, name: str, suffix: str):
    """A submission's feedback file (distinct per submission: see intake.find_submissions)."""
    return paths["feedback"] / f"{feedback.file_name(name)}{suffix}"


def _shown_answer(value) -> str:
    if value is None:
        return ""
    return json.dumps(value, default=lambda v: f"<{type(v).__name__}>")


def _rows(sub) -> tuple:
    rows, exercises = [], []
    for ex in sub.exercises:
        v = sub.verdicts[ex.id]
        rows.append(
            {
                "submission": sub.name,
                "exercise": ex.id,
                "points": float(v.points),
                "max_points": float(ex.points),
                "status": v.status,
                "tests_passed": v.passed,
                "tests_total": v.total,
                "flags": " ".join(sorted(set(v.flags))),
                "detail": v.detail,
            }
        )
        exercises.append(
            {
                "exercise": ex.id,
                "title": ex.title,
                "status": v.status,
                "points": v.points,
                "max_points": ex.points,
                "detail": v.detail,
                "tests": v.tests,
                "answer_shown": _shown_answer(v.answer),
            }
        )
    return rows, exercises


def zero_if_tampered(sub) -> None:
    """A submission that changed the grader's own files gets nothing (see Grader._guard_check)."""
    if sub.zeroed:
        sub.flags.add("tampered")
        sub.run.update(status=TAMPERED, summary=sub.zeroed)
        sub.verdicts = {
            k: Verdict.from_dict(scoring.zeroed(v.as_dict(), TAMPERED, sub.zeroed))
            for k, v in sub.verdicts.items()
        }


def build(sub) -> tuple:
    """(gradebook rows with TOTAL last, the JSON record) of one submission."""
    zero_if_tampered(sub)
    rows, exercises = _rows(sub)
    flags = set(sub.flags) | {f for r in rows for f in r["flags"].split()}
    status = sub.run.get("status") or (sub.refused or "unreadable" if sub.unreadable else "ok")
    summary = sub.unreadable or sub.run.get("summary", "")
    total = {
        "submission": sub.name,
        "exercise": gradebook.TOTAL,
        "points": sum(r["points"] for r in rows),
        "max_points": sum(r["max_points"] for r in rows),
        "status": status,
        "tests_passed": sum(int(r["tests_passed"]) for r in rows),
        "tests_total": sum(int(r["tests_total"]) for r in rows),
        "flags": " ".join(sorted(flags)),
        "detail": summary,
    }
    record = {
        "submission": sub.name,
        "file": str(sub.path),
        "language": sub.language,
        "points": round(total["points"], 3),
        "max_points": total["max_points"],
        "status": status,
        "flags": sorted(flags),
        "run": {
            "summary": summary,
            "status": status,
            "cells": sub.run.get("cells", []),
            "isolation": sub.run.get("held", {}),
            "seconds": sub.run.get("seconds"),
            "check_seconds": {
                k: v.seconds for k, v in sub.verdicts.items() if v.seconds is not None
            },
        },
        "exercises": exercises,
        "texts": sub.run.get("texts", {}),
        "output": {
            "stdout": sub.run.get("stdout", ""),
            "stderr": sub.run.get("stderr", ""),
            "characters": sub.run.get("output_chars", 0),
        },
    }
    return rows + [total], record


def write(sub, paths: dict, book, guard, notes: list) -> dict:
    """Write one submission: feedback (Markdown and JSON), gradebook rows, the summary."""
    rows, record = build(sub)
    for path, text in (
        (feedback_path(paths, sub.name, ".json"), json.dumps(record, indent=1, default=str)),
        (feedback_path(paths, sub.name, ".md"), feedback.render(record)),
    ):
        gradebook.write_atomic(path, text)
        guard.wrote(path, lambda text=text: text)
    book.append(sub.name, rows)
    guard.wrote(paths["gradebook"], book.expected_text)
    book.write_summary(paths["summary"], notes)
    guard.wrote(paths["summary"], lambda: paths["summary"].read_bytes())
    return record
