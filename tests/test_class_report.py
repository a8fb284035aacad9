"""The class report (issue 39, item 1): what a graded class got wrong, on one offline page.

A class of known submissions (chapter 01's reference, its blank notebook and each of its
known-wrong notebooks) is graded for real; the report must show the counts those submissions
imply, name the key's known mistakes, keep names out when anonymous, speak the teacher's
language, and show students' text as text.
"""

import csv
import html
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from course_lib.classroom import report
from course_lib.exercises import registry
from course_lib.grading.selftest import chapter_cases
from support import submissions

KEY_ZH = Path(report.__file__).resolve().parent.parent / "key" / "zh.json"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """(gradebook path, case names) of chapter 01's self-test class, graded by `grade`."""
    tmp = tmp_path_factory.mktemp("report")
    subs = tmp / "submissions"
    subs.mkdir()
    cases = chapter_cases("01")
    for case in cases:
        (subs / f"{case.name}.ipynb").write_text(json.dumps(case.notebook))
    out = tmp / "grades" / "gradebook.csv"
    proc = submissions.run_grader(subs, out, "--workers", 2)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, [c.name for c in cases], proc


def rows(path):
    return list(csv.DictReader(open(path, encoding="utf-8")))


def test_grade_writes_the_report_beside_the_gradebook(graded):
    out, _, proc = graded
    paths = report.report_paths(out)
    assert paths["html"].is_file() and paths["csv"].is_file()
    assert f"class report: {paths['html']}" in proc.stdout


def test_counts_are_what_the_known_class_implies(graded):
    out, names, _ = graded
    data = report.summary(report.load(out))
    assert data["students"] == len(names)
    exercises = {r["exercise"] for r in rows(out) if r["exercise"] != "TOTAL"}
    assert set(data["bands"]) == exercises
    for exercise, bands in data["bands"].items():
        assert bands["not attempted"] == 1, exercise  # the blank notebook, and only it
        assert bands["full points"] >= 1, exercise  # the reference at least
        assert sum(bands.values()) == len(names), exercise
    totals = sorted(data["totals"])
    assert totals[0] == 0 and totals[-1] == data["max_points"]  # blank, reference
    assert ("ch01-blank", "nothing attempted") in data["needs"]
    assert not any(name == "ch01-reference" for name, _ in data["needs"])


def test_failing_tests_are_ranked_and_named_by_the_known_mistake(graded):
    out, _, _ = graded
    data = report.summary(report.load(out))
    failing = data["failing"]
    assert failing, "the known-wrong notebooks fail tests"
    counts = [r["students"] for r in failing]
    assert counts == sorted(counts, reverse=True)
    failed_by = {}  # independent count from the records: who failed which test
    for record in report.load(out):
        for ex in record["exercises"]:
            for t in ex.get("tests", []):
                if not t["passed"] and ex["status"] != "not attempted":
                    failed_by[(ex["exercise"], t["name"])] = (
                        failed_by.get((ex["exercise"], t["name"]), 0) + 1
                    )
    assert {(r["exercise"], r["test"]): r["students"] for r in failing} == failed_by
    labels = {m for r in failing for m in r["mistakes"]}
    known = {label for ex in data["bands"] for _, label in report.known_mistakes(ex)}
    assert labels and labels <= known


def test_quiz_options_are_counted_with_the_misconception_each_wrong_one_stands_for(graded):
    out, names, _ = graded
    data = report.summary(report.load(out))
    assert data["quizzes"], "chapter 01 has quizzes"
    for quiz, entry in data["quizzes"].items():
        assert sum(entry["chosen"].values()) == len(names) - 1, quiz  # all but the blank
        assert any(entry["right"].values()), quiz  # the reference chose the right one
    csv_text = report.report_paths(out)["csv"].read_text()
    chosen_why = [
        entry["options"][letter][1]
        for entry in data["quizzes"].values()
        for letter in entry["chosen"]
        if letter in entry["options"] and entry["options"][letter][1]
    ]
    assert chosen_why, "some known-wrong notebook picks an explained wrong option"
    assert all(" ".join(w.split())[:40] in csv_text for w in chosen_why)


def test_the_page_is_offline_and_has_its_plots(graded):
    out, _, _ = graded
    page = report.report_paths(out)["html"].read_text()
    assert page.count("data:image/png;base64,") == 2  # totals and points per exercise
    assert not re.search(r"(src|href)=\"(?!data:)", page)  # nothing loaded from anywhere


def test_anonymous_report_has_no_names(graded, tmp_path):
    out, names, _ = graded
    proc = subprocess.run(
        [sys.executable, "-m", "course_lib", "report", str(out), "--anonymous"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    paths = report.report_paths(out)
    text = paths["html"].read_text() + paths["csv"].read_text()
    assert not [n for n in names if n in text]
    assert "student 1" in text


def test_chinese_report(graded):
    out, _, _ = graded
    proc = subprocess.run(
        [sys.executable, "-m", "course_lib", "report", str(out), "--lang", "zh"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "班级报告" in proc.stdout
    page = report.report_paths(out)["html"].read_text()
    headings = re.findall(r"<h[12]>(.*?)</h[12]>", page)
    assert headings and all(re.search(r"[\u4e00-\u9fff]", h) for h in headings), headings
    assert '<html lang="zh">' in page
    zh = json.loads(KEY_ZH.read_text(encoding="utf-8"))
    labels = {m for r in report.summary(report.load(out))["failing"] for m in r["mistakes"]}
    assert labels, "the known-wrong notebooks match known mistakes"
    for label in labels:
        assert html.escape(zh[label], quote=True) in page, label
        assert html.escape(label, quote=True) not in page, label


def test_every_known_mistake_has_a_chinese_label():
    zh = json.loads(KEY_ZH.read_text(encoding="utf-8"))
    labels = {
        w.label
        for ex in registry.all_exercises()
        for w in getattr(ex.key(), "wrong_answers", None) or []
    }
    assert len(labels) > 100
    missing = sorted(
        label for label in labels if not re.search(r"[\u4e00-\u9fff]", zh.get(label, ""))
    )
    assert not missing, missing


def hostile_record(name):
    return {
        "submission": name,
        "points": 0,
        "max_points": 1,
        "status": "ok",
        "flags": [],
        "exercises": [
            {
                "exercise": "ch01.gpu_names",
                "status": "incorrect",
                "points": 0,
                "max_points": 1,
                "detail": "",
                "answer_shown": "",
                "tests": [
                    {
                        "name": "works on this machine",
                        "hidden": False,
                        "passed": False,
                        "feedback": '<img src="http://tracker/x.png"><script>alert(1)</script>',
                    }
                ],
            }
        ],
    }


def test_student_text_is_shown_as_text_and_is_no_formula():
    data = report.summary([hostile_record('=HYPERLINK("http://x","y")<b>x</b>')])
    data["needs"].append(('=HYPERLINK("http://x","y")<b>x</b>', "flagged for review"))
    page = report.render_html(data)
    assert "<script>" not in page and '<img src="http' not in page and "<b>x" not in page
    assert "&lt;script&gt;" in page
    cells = [c for row in csv.reader(report.render_csv(data).splitlines()) for c in row]
    assert not any(c.startswith(("=", "+", "@", "-")) for c in cells if not c[:1].isdigit())
    assert '\'=HYPERLINK("http://x","y")<b>x</b>' in cells


def test_a_gradebook_without_records_is_a_clear_error(tmp_path):
    book = tmp_path / "gradebook.csv"
    book.write_text("submission\n")
    proc = subprocess.run(
        [sys.executable, "-m", "course_lib", "report", str(book)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "no class report written" in proc.stderr and "grade the class first" in proc.stderr


def test_a_written_answer_and_a_students_name_reach_the_report_as_text_only():
    """The report's written-answers section (issue 39) escapes what a student wrote and their
    name: a script, a tracking image and a link stay text."""
    from course_lib.classroom import report

    hostile = (
        '<script>alert(1)</script><img src="http://tracker/x.png"><a href="javascript:x">a</a>'
    )
    answers = [('<b onmouseover="x">=HYPERLINK()</b>', hostile, None)]
    page = report._written_html({"written": {"why": {"asked": None, "answers": answers}}})
    assert "<script>" not in page and "<img" not in page and "<a href" not in page, page
    assert "<b " not in page and "&lt;script&gt;" in page
