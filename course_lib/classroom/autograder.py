"""What Gradescope's `run_autograder` runs: one submission through the course's grader.

    python -m course_lib.classroom.autograder ROOT        (ROOT is /autograder on Gradescope)

Reads ROOT/source/autograder.json (chapter, limits), takes the one notebook in
ROOT/submission, grades it with `course_lib.grading.Grader` exactly as `grade` does (its
own processes, kernel isolation, CPU only) and writes ROOT/results/results.json in
Gradescope's format: the total score and one test per exercise with its points and
feedback. Hidden tests appear by name and passed/failed only, never with a value. Every output
and name is declared plain text (`output_format` and friends: TEXT), so nothing a student's
notebook put in an error message or an answer renders as a link, an image or HTML there. A
submission we cannot take (no notebook, several) gets a results.json saying what to
upload; a failure of the grader itself writes no results.json, so Gradescope reports the
run as failed instead of recording a grade that was never decided.
"""

import csv
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

NAME = "submission"  # the submission's name inside the grader
# Gradescope renders each output as text, html, simple_format, md or ansi: plain text only here
TEXT = {"output_format": "text", "test_output_format": "text", "test_name_format": "text"}
SKIPPED = {".ipynb_checkpoints", "__MACOSX"}


def submitted_notebook(folder: Path, expected: str) -> tuple:
    """(notebook, None), or (None, what the student must do), for a submission folder."""
    found = sorted(
        p
        for p in folder.rglob("*.ipynb")
        if p.is_file() and not SKIPPED & set(p.relative_to(folder).parts)
    )
    named = [p for p in found if p.name == expected]
    if len(found) == 1 or len(named) == 1:
        return (found[0] if len(found) == 1 else named[0]), None
    if not found:
        return None, f"Your submission holds no notebook (.ipynb). Upload your {expected}."
    shown = ", ".join(p.relative_to(folder).as_posix() for p in found[:10])
    return None, (
        f"Your submission holds {len(found)} notebooks ({shown}). Upload only your {expected}."
    )


def exercise_output(exercise: dict) -> str:
    """One exercise's feedback for the student: visible tests with their feedback, hidden
    tests by name and verdict only."""
    lines = [exercise["detail"]] if exercise.get("detail") else []
    if exercise.get("answer_shown"):
        lines.append(f"Your answer: {exercise['answer_shown'][:200]}")
    for t in exercise.get("tests", []):
        mark = "passed" if t.get("passed") else "FAILED"
        if t.get("hidden"):
            lines.append(f"- {t.get('name', '')} (hidden test): {mark}")
            continue
        lines.append(f"- {t.get('name', '')}: {mark}")
        if not t.get("passed") and t.get("feedback"):
            lines.append(f"  {str(t['feedback'])[:1500]}")
    return "\n".join(lines)


def _test(number: int, row: dict, exercise: dict) -> dict:
    name = f"{exercise.get('title', row['exercise'])} ({row['exercise']})"
    output = exercise_output(exercise) if exercise else row.get("detail", "")
    return {
        "name": name,
        "number": str(number),
        "score": float(row["points"]),
        "max_score": float(row["max_points"]),
        "output": output,
        "output_format": "text",
        "visibility": "visible",
    }


def written_tests(record: dict, first: int) -> list:
    """One text-only test per written answer, in the notebook's language: read by the teacher,
    no points (as the feedback file says)."""
    from ..grading.feedback import written_answers
    from ..i18n import LANGUAGES, tr
    from ..i18n.catalogue import in_language, join

    lang = record.get("language") if record.get("language") in LANGUAGES else "en"
    with in_language(lang):
        note = tr("Read by your teacher: the autograder gives it no points.")
        return [
            {
                "name": join([tr("Written answer:"), heading]),
                "number": str(n),
                "output": f"{note}\n\n{answer[:3000]}",
                "output_format": "text",
                "visibility": "visible",
            }
            for n, (heading, answer) in enumerate(written_answers(record), first)
        ]


def results(rows: list, record: dict, settings: dict) -> dict:
    """Gradescope's results.json from one submission's gradebook rows and feedback record."""
    total = next(r for r in rows if r["exercise"] == "TOTAL")
    by_id = {e["exercise"]: e for e in record.get("exercises", [])}
    exercises = [r for r in rows if r["exercise"] != "TOTAL"]
    tests = [_test(n, row, by_id.get(row["exercise"], {})) for n, row in enumerate(exercises, 1)]
    tests += written_tests(record, len(tests) + 1)
    run = record.get("run", {})
    label = settings.get("label") or f"Chapter {settings['chapter']}: {settings['title']}"
    summary = [
        f"{label}. Total: {float(total['points']):g} / {float(total['max_points']):g} points."
    ]
    if run.get("summary"):
        summary.append(f"Your notebook, run from the top: {run['summary']}")
    errors = [c for c in run.get("cells", []) if c.get("status") != "ok"]
    summary += [f"cell {c.get('cell')}: {str(c.get('error', ''))[:300]}" for c in errors[:20]]
    extra = {
        "status": total["status"],
        "flags": total.get("flags", ""),
        "chapter": settings["chapter"],
    }
    return {
        **TEXT,
        "score": float(total["points"]),
        "output": "\n".join(summary),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": extra,
    }


def refusal(message: str, settings: dict) -> dict:
    """results.json for a submission that could not be graded as it was handed in."""
    test = {
        "name": "Your notebook",
        "score": 0.0,
        "max_score": float(settings["points"]),
        "output": message,
        "output_format": "text",
        "visibility": "visible",
    }
    return {
        **TEXT,
        "score": 0.0,
        "output": message,
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [test],
        "extra_data": {"status": "not graded", "chapter": settings["chapter"]},
    }


def write_results(folder: Path, data: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "results.json"
    tmp = folder / f".results.json.tmp{os.getpid()}"
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
    return path


def grade(notebook: Path, settings: dict, work: Path, released=None) -> tuple:
    """(gradebook rows, feedback record, grader report) of one notebook, by the course's grader
    (on a teacher's `released` assignment where the zip holds one)."""
    from ..grading.feedback import file_name
    from ..grading.grader import Grader, hide_gpus
    from ..grading.sandbox import Limits

    hide_gpus()
    subs = work / "submissions"
    subs.mkdir(parents=True)
    shutil.copyfile(notebook, subs / f"{NAME}.ipynb")
    out = work / "out" / "gradebook.csv"
    limits = Limits(
        cell_timeout=float(settings.get("cell_timeout", 60)),
        timeout=float(settings.get("timeout", 600)),
        memory_mb=int(settings.get("memory_mb", 4096)),
    )
    chapters = [] if released is not None else [settings["chapter"]]
    report = Grader(
        subs, out, chapters=chapters, limits=limits, progress=False, assignment=released
    ).run()
    with open(out, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["submission"] == NAME]
    record_path = out.with_name(out.stem + "_feedback") / f"{file_name(NAME)}.json"
    record = json.loads(record_path.read_text()) if record_path.exists() else {}
    return rows, record, report


def main(root) -> int:
    import course_lib

    root = Path(root)
    settings = json.loads((root / "source" / "autograder.json").read_text())
    print(
        f"course autograder: chapter {settings['chapter']}, "
        f"course_lib from {Path(course_lib.__file__).parent}"
    )
    notebook, problem = submitted_notebook(root / "submission", settings["notebook"])
    if problem:
        print(problem)
        write_results(root / "results", refusal(problem, settings))
        return 0
    work = Path(tempfile.mkdtemp(prefix="course-autograder-"))
    try:
        released = None
        if settings.get("assignment"):
            from ..authoring.released import Released

            released = Released.read(root / "source" / settings["assignment"])
        rows, record, report = grade(notebook, settings, work, released)
        for note in report["notes"]:
            print(f"grader note: {note}")
        if report["key_problems"] or not any(r["exercise"] == "TOTAL" for r in rows):
            print(
                "the grader could not grade this submission: "
                f"{report['key_problems'] or 'no TOTAL row'}"
            )
            return 1
        data = results(rows, record, settings)
        print(
            f"graded {notebook.name}: {data['score']:g} points, "
            f"status {data['extra_data']['status']}"
        )
        write_results(root / "results", data)
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "/autograder"))
