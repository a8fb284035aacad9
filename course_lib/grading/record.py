"""Step 4 of grading: a finished submission's rows, feedback and record, written at once (grader)."""
import json

from . import feedback, gradebook


def _rows(sub) -> tuple:
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
    return rows, exercises


def zero_if_tampered(sub) -> None:
    """A submission that changed the grader's own files gets nothing (see Grader._guard_check)."""
    if sub.zeroed:
        sub.flags.add("tampered")
        sub.run.update(status="tampered", summary=sub.zeroed)
        sub.verdicts = {k: dict(v, status="tampered", points=0.0, detail=sub.zeroed) for k, v in sub.verdicts.items()}


def build(sub) -> tuple:
    """(gradebook rows with TOTAL last, the JSON record) of one submission."""
    zero_if_tampered(sub)
    rows, exercises = _rows(sub)
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
                      "isolation": sub.run.get("held", {}), "seconds": sub.run.get("seconds"),
                      "check_seconds": {k: v.get("seconds") for k, v in sub.verdicts.items() if "seconds" in v}},
              "exercises": exercises, "texts": sub.run.get("texts", {}),
              "output": {"stdout": sub.run.get("stdout", ""), "stderr": sub.run.get("stderr", ""),
                         "characters": sub.run.get("output_chars", 0)}}
    return rows + [total], record


def write(sub, paths: dict, book, guard, notes: list) -> dict:
    """Write one submission: feedback (Markdown and JSON), gradebook rows, the summary."""
    rows, record = build(sub)
    base = paths["feedback"] / feedback.file_name(sub.name)
    for path, text in ((base.with_suffix(".json"), json.dumps(record, indent=1, default=str)),
                       (base.with_suffix(".md"), feedback.render(record))):
        gradebook.write_atomic(path, text)
        guard.wrote(path, lambda text=text: text)
    book.append(sub.name, rows)
    guard.wrote(paths["gradebook"], book.expected_text)
    book.write_summary(paths["summary"], notes)
    guard.wrote(paths["summary"], lambda: paths["summary"].read_bytes())
    return record
