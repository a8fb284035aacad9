"""Issue 39's done-means, measured: a class of 40 chapter-03 submissions, from grading to the
teacher's points for written answers in the exports.

    .venv/bin/python benchmarks/class_40.py [--keep DIR] [--workers N]

Builds 40 notebooks of chapter 03 (references in both editions, blanks, each known-wrong answer
of the key, the reference with mixed quiz choices, written answers to the chapter's declared
questions or none), then, as a teacher would:
  1. grades them (`grade --export nbgrader --export canvas`), which writes the class report;
  2. reviews some written answers by writing GRADEBOOK.review.csv (max_points left blank: the
     chapter declares it), runs `grade` again (resumed: it applies the file, pinning each review
     to the answer it reviewed), then changes one reviewed answer in its notebook;
  3. regrades from scratch (`grade --fresh`): the reviews are applied again, the changed one is
     marked for review again;
  4. writes the report in both languages (`report --lang zh`),
and prints the report's top failing tests and quiz options with their counts, the plots it
holds, the written points in the gradebook and in the nbgrader and Canvas exports, and the times.
A measurement, not a test (tests/test_written_questions.py runs the same path on 3 notebooks).
"""

import argparse
import csv
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from course_lib.classroom import report, review, written  # noqa: E402
from course_lib.exercises import all_exercises  # noqa: E402
from course_lib.grading.selftest import function_source, make_submission  # noqa: E402
from course_lib.i18n import tr  # noqa: E402
from course_lib.i18n.catalogue import in_language  # noqa: E402
from course_lib.notebooks import path_of  # noqa: E402
from support import submissions  # noqa: E402

ANSWERS = {  # (written answers a student hands in, the points the teacher gives them)
    "full": (
        {
            "eval_and_no_grad": "eval() changes the layers: dropout off, batch norm on its "
            "running statistics. no_grad() only stops autograd recording, saving memory. With "
            "one alone you either keep a graph or measure with dropout on.",
            "zero_grad_place": "backward() accumulates into .grad; without zero_grad() each step "
            "uses the sum of all gradients so far and the loss blows up. Call it before "
            "backward(), never between backward() and step().",
        },
        {"eval_and_no_grad": 3, "zero_grad_place": 2},
    ),
    "half": (
        {
            "eval_and_no_grad": "eval() turns off dropout, no_grad() turns off gradients.",
            "zero_grad_place": "Gradients add up, so zero them every batch.",
        },
        {"eval_and_no_grad": 1.5, "zero_grad_place": 1},
    ),
    "zh": (
        {
            "eval_and_no_grad": "eval() 让 dropout 和 batch norm 进入评估行为；"
            "no_grad() 只是不记录计算图。"
        },
        {"eval_and_no_grad": 2},
    ),
    "none": ({}, {}),
}


def quiz_variants() -> list:
    """Answers to chapter 03's quizzes, one dict per variant: each option of each quiz in turn."""
    quizzes = [e for e in all_exercises() if e.chapter.number == "03" and e.kind != "function"]
    rounds = max(len(q.options) for q in quizzes)
    variants = []
    for k in range(rounds * 3):
        answers = {}
        for q in quizzes:
            letters = sorted(q.options)
            pick = letters[k % len(letters)]
            answers[q.name] = (
                [pick, letters[(k + 2) % len(letters)]] if q.kind == "multiple" else pick
            )
        variants.append(answers)
    return variants


def build(folder: Path) -> dict:
    """The 40 notebooks under folder/subs; returns {student: (kind, written kind)}."""
    cases = submissions.chapter03_notebooks()
    functions = [e for e in all_exercises() if e.chapter.number == "03" and e.kind == "function"]
    reference = {e.name: function_source(e.key().solution, e.name) for e in functions}
    notebook = path_of("03")
    plan = [
        (f"ref{i:02d}", cases["ch03-reference"], w)
        for i, w in enumerate(["full"] * 3 + ["half"] * 3)
    ]
    plan += [(f"zh{i:02d}", cases["ch03-reference-zh"], "zh") for i in range(4)]
    plan += [(f"blank{i:02d}", cases["ch03-blank"], "none") for i in range(6)]
    wrong = sorted(n for n in cases if n.startswith("ch03-wrong"))
    plan += [
        (n.removeprefix("ch03-"), cases[n], ("half", "none")[i % 2]) for i, n in enumerate(wrong)
    ]
    for i, answers in enumerate(quiz_variants()[: 40 - len(plan)]):
        nb = make_submission(notebook, reference, answers)
        plan.append((f"quiz{i:02d}", nb, ("full", "half", "none")[i % 3]))
    subs = folder / "subs"
    subs.mkdir(parents=True)
    for name, nb, kind in plan:
        nb = submissions.with_written(nb, ANSWERS[kind][0])
        (subs / f"{name}.ipynb").write_text(json.dumps(nb, ensure_ascii=False))
    return {name: kind for name, _, kind in plan}


def grade(subs: Path, out: Path, workers, *extra) -> float:
    args = ["--workers", str(workers)] if workers else []
    start = time.monotonic()
    proc = submissions.run_grader(
        subs, out, *args, "--export", "nbgrader", "--export", "canvas", *extra
    )
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(f"grade failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    print("   ", proc.stdout.strip().replace("\n", "\n    "))
    return seconds


def write_reviews(out: Path, kinds: dict) -> int:
    """The teacher's review file, as typed by hand: every other answered student's answers."""
    rows = [review.COLUMNS]
    reviewed = [n for n, k in sorted(kinds.items()) if k != "none"][::2]
    for name in reviewed:
        for question, points in ANSWERS[kinds[name]][1].items():
            rows.append([name, question, points, "", f"{kinds[name]} answer", ""])
    with open(review.review_path(out), "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    return len(rows) - 1


def change_an_answer(subs: Path, kinds: dict) -> str:
    """Change one reviewed student's answer in the notebook: it must be reviewed again."""
    name = next(n for n, k in sorted(kinds.items()) if k == "full")
    path = subs / f"{name}.ipynb"
    nb = submissions.with_written(
        json.loads(path.read_text()), {"zero_grad_place": "Changed my mind."}
    )
    path.write_text(json.dumps(nb, ensure_ascii=False))
    return name


def written_points(out: Path) -> dict:
    """What the gradebook, nbgrader's and Canvas's files hold of the written points."""
    rows = list(csv.DictReader(open(out, encoding="utf-8")))
    mine = [r for r in rows if ".written." in r["exercise"]]
    totals = {r["submission"]: float(r["points"]) for r in rows if r["exercise"] == "TOTAL"}
    nbgrader = list(csv.reader(open(out.with_name(out.stem + ".nbgrader.csv"), encoding="utf-8")))
    canvas = list(csv.reader(open(out.with_name(out.stem + ".canvas.csv"), encoding="utf-8")))
    nb_by = {r[3]: float(r[7]) for r in nbgrader[1:]}
    cv_by = {r[0]: float(r[-1]) for r in canvas[2:] if r and r[-1]}
    agree = sum(totals[n] == nb_by.get(n) == cv_by.get(n) for n in totals)
    return {
        "rows": len(mine),
        "status": Counter(r["status"] for r in mine),
        "points": sum(float(r["points"]) for r in mine),
        "max": sum(float(r["max_points"]) for r in mine),
        "agree": agree,
        "students": len(totals),
        "canvas_possible": canvas[1][-1],
        "nbgrader_max": max(float(r[-1]) for r in nbgrader[1:]),
    }


def show_report(out: Path, lang: str) -> None:
    data = report.summary(written.with_reviews(report.load(out), out))
    with in_language(lang):
        print(f"  {tr('Failing tests, most failed first')} (top 8):")
        for r in data["failing"][:8]:
            mistakes = ", ".join(tr(m) for m in r["mistakes"]) or "-"
            print(f"    {r['students']:3d}  {r['exercise']}  {tr(r['test'])}  [{mistakes}]")
        print(f"  {tr('Quiz options chosen')}:")
        for quiz, entry in data["quizzes"].items():
            chosen = ", ".join(f"{k}: {n}" for k, n in entry["chosen"].most_common())
            print(f"    {quiz}: {chosen}")
        print(f"  {tr('Written answers, graded by the teacher')}:")
        for entry in data["written"].values():
            said = written.expectation(entry["asked"], lang)
            counts = Counter(tr(report.written_status(r)) for _, _, r in entry["answers"])
            print(f"    {said['title']}: {dict(counts)}")
            print(f"      {said['expects'][0][:90]}...  ({said['where']})")
    page = report.report_paths(out)["html"].read_text(encoding="utf-8")
    plots = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    said = re.search(r'<html lang="(\w+)"', page).group(1)
    sizes = [len(p) * 3 // 4 for p in plots]
    print(
        f"  plots: {len(plots)} inline PNG(s) of {sizes} bytes; page {len(page)} chars, lang {said}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", help="work in this folder and keep it")
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args()
    folder = Path(args.keep or tempfile.mkdtemp(prefix="class40-"))
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "grades" / "gradebook.csv"
    times = {}
    start = time.monotonic()
    kinds = build(folder)
    times["build 40 notebooks"] = time.monotonic() - start
    print(
        f"class: {len(kinds)} chapter-03 notebooks in {folder}/subs: "
        f"{dict(Counter(n.rstrip('0123456789') for n in kinds))}"
    )
    print("1. grade")
    times["grade (first run)"] = grade(folder / "subs", out, args.workers)
    start = time.monotonic()
    count = write_reviews(out, kinds)
    times["write the review file"] = time.monotonic() - start
    print(f"2. review file: {count} reviews typed in {review.review_path(out).name}; grade again")
    times["grade (resumed: applies the reviews)"] = grade(folder / "subs", out, args.workers)
    changed = change_an_answer(folder / "subs", kinds)
    print(f"   {changed}'s answer to zero_grad_place changed in the notebook after its review")
    print("3. regrade (--fresh)")
    times["regrade (--fresh)"] = grade(folder / "subs", out, args.workers, "--fresh")
    for lang in ("en", "zh"):
        start = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "course_lib", "report", str(out), "--lang", lang],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        times[f"report --lang {lang}"] = time.monotonic() - start
        print(f"4. report ({lang}): {proc.stdout.strip()}")
        show_report(out, lang)
    points = written_points(out)
    print(
        f"written points: {points['rows']} gradebook rows {dict(points['status'])}, "
        f"{points['points']:g} of {points['max']:g} points; totals equal in gradebook, nbgrader "
        f"and Canvas for {points['agree']}/{points['students']} students; Canvas points possible "
        f"{points['canvas_possible']}, nbgrader max_score {points['nbgrader_max']:g}"
    )
    print("times (s): " + ", ".join(f"{k} {v:.1f}" for k, v in times.items()))


if __name__ == "__main__":
    main()
