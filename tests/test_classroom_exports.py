"""Grades where teachers keep them: nbgrader's export,
Canvas's import, the roster (issue 22, items 3, 5).

The exports are built from the gradebook the grader writes; the end-to-end test grades real
submissions with `python -m course_lib grade ... --export ... --roster ...`.
"""

import csv
import json

import pytest

from course_lib.classroom import exports
from course_lib.classroom.roster import Roster, RosterError, split_name
from course_lib.grading.gradebook import TOTAL, Gradebook
from course_lib.grading.selftest import chapter_cases
from support import submissions  # noqa: E402

NBGRADER = [
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
ROSTER = (
    "id,name,email,username,section\n"
    "S001,Ada Lovelace,ada@uni.edu,alice,Mon\n"
    'S002,"Hopper, Grace",grace@uni.edu,bob,Tue\n'
    "S003,Linus Torvalds,carol@uni.edu,,Mon\n"
    "S004,Absent Student,absent@uni.edu,,Tue\n"
)


def read(path) -> list:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def write_book(path, submissions: dict) -> None:
    """A gradebook in the grader's own format: {name: [(exercise, points, max)]}."""
    book = Gradebook(path, fresh=True)
    for name, rows in submissions.items():
        rows = [
            {"submission": name, "exercise": ex, "points": p, "max_points": m, "status": "correct"}
            for ex, p, m in rows
        ]
        rows.append(
            {
                "submission": name,
                "exercise": TOTAL,
                "points": sum(r["points"] for r in rows),
                "max_points": sum(r["max_points"] for r in rows),
                "status": "ok",
            }
        )
        book.append(name, rows)


def canvas_accepts(rows: list) -> None:
    """The header rules of Canvas's gradebook importer (canvas-lms GradebookImporter#header?):
    Student, ID, SIS User ID, SIS Login ID, then Section as the last student column;
    a 'Points Possible' row; every student row as wide as the header."""
    header = rows[0]
    assert len(header) > 3 and "Student" in header[0] and "ID" in header[1]
    assert header[2] == "SIS User ID" and header[3] == "SIS Login ID" and "Section" in header[4]
    assert rows[1][0] == "Points Possible"
    assert all(len(r) == len(header) for r in rows)


# ---------------------------------------------------------------- the roster


def roster_from(tmp_path, text, name="roster.csv") -> Roster:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return Roster.read(path)


def test_roster_maps_submission_names_by_username_id_email_or_email_name(tmp_path):
    roster = roster_from(tmp_path, ROSTER)
    assert roster.match("alice").id == "S001" and roster.match("ALICE").id == "S001"
    assert roster.match("S002").id == "S002" and roster.match("grace@uni.edu").id == "S002"
    assert roster.match("carol").id == "S003"  # carol@uni.edu
    assert roster.match("01_device_check/carol").id == "S003"  # the grader's folder/name form
    assert roster.match("zoe") is None
    grace = roster.match("bob")
    assert (grace.first_name, grace.last_name, grace.section) == ("Grace", "Hopper", "Tue")


def test_roster_reads_excel_csv_semicolons_bom_and_split_names(tmp_path):
    text = "\ufeffStudent ID;First Name;Last Name;E-mail\nS1;Ada;Lovelace;ada@uni.edu\n"
    roster = roster_from(tmp_path, text.encode("utf-8"))
    st = roster.match("S1")
    assert (st.name, st.first_name, st.last_name, st.email) == (
        "Ada Lovelace",
        "Ada",
        "Lovelace",
        "ada@uni.edu",
    )
    assert split_name("Lovelace, Ada") == ("Ada", "Lovelace") and split_name("Ada") == ("Ada", "")


@pytest.mark.parametrize(
    "text, says",
    [
        ("id,name\nS1,Ada\n", "no 'email' column"),
        ("name,email\nAda,a@x\n", "no 'id' column"),
        ("", "is empty"),
        ("id,name,email\nS1,Ada,a@x\nS1,Bob,b@x\n", "'s1' is the id of lines 2 and 3"),
        (
            "id,name,email,username\nS1,Ada,a@x,ada\nS2,Bob,b@x,ADA\n",
            "'ada' is the username of lines 2 and 3",
        ),
        ("id,name,email\nS1,Ada,a@x\nS2,Bob,A@x\n", "'a@x' is the email of lines 2 and 3"),
        ("id,name,email\n,Ada,a@x\n", "line 2: no student id"),
        ("id,name,email,id\nS1,Ada,a@x,S2\n", "column 'id' twice"),
    ],
)
def test_a_bad_roster_is_refused_with_where_and_what(tmp_path, text, says):
    with pytest.raises(RosterError) as err:
        roster_from(tmp_path, text)
    assert says in str(err.value), str(err.value)


def test_a_roster_that_is_not_utf8_or_not_there_is_refused(tmp_path):
    with pytest.raises(RosterError, match="not UTF-8"):
        roster_from(tmp_path, "id,name,email\nS1,Jos\xe9,j@x\n".encode("latin-1"))
    with pytest.raises(RosterError, match="cannot read the roster"):
        Roster.read(tmp_path / "missing.csv")


# ---------------------------------------------------------------- exports from a gradebook


def test_nbgrader_export_columns_one_row_per_student_and_chapter(tmp_path):
    book = tmp_path / "gradebook.csv"
    write_book(
        book,
        {
            "01/alice": [("ch01.choose_device", 3, 3), ("ch01.gpu_names", 1.5, 3)],
            "02/alice": [("ch02.move_to", 2, 3)],
            "bob": [("ch01.choose_device", 0, 3), ("ch01.gpu_names", 0, 3)],
        },
    )
    report = exports.export(book, ["nbgrader"], roster_from(tmp_path, ROSTER))
    rows = read(report.files["nbgrader"])
    assert rows[0] == NBGRADER
    table = {(r[0], r[3]): dict(zip(NBGRADER, r)) for r in rows[1:]}
    assert len(table) == len(rows) - 1 == 2 * 4  # 2 chapters x 4 roster students, each once
    ada = table[("01_device_check", "S001")]
    assert (ada["first_name"], ada["last_name"], ada["email"]) == ("Ada", "Lovelace", "ada@uni.edu")
    assert (ada["raw_score"], ada["late_submission_penalty"], ada["score"]) == ("4.5", "0", "4.5")
    assert table[("02_same_device_rule", "S001")]["score"] == "2"
    assert table[("01_device_check", "S002")]["score"] == "0"
    absent = table[
        ("01_device_check", "S004")
    ]  # nbgrader's rule: no submission, 0 and no timestamp
    assert (absent["raw_score"], absent["timestamp"]) == ("0", "")
    from course_lib.classroom.assignments import all_assignments

    assert ada["max_score"] == f"{all_assignments()['01'].points:g}"
    assert report.no_submission == ["S003", "S004"]


def test_canvas_export_is_what_canvas_imports(tmp_path):
    book = tmp_path / "gradebook.csv"
    write_book(book, {"alice": [("ch01.choose_device", 3, 3)], "bob": [("ch02.move_to", 1, 3)]})
    report = exports.export(book, ["canvas"], roster_from(tmp_path, ROSTER))
    rows = read(report.files["canvas"])
    canvas_accepts(rows)
    from course_lib.classroom.assignments import all_assignments

    a = all_assignments()
    assert rows[0] == [
        "Student",
        "ID",
        "SIS User ID",
        "SIS Login ID",
        "Section",
        a["01"].label,
        a["02"].label,
    ]
    assert rows[1][5:] == [f"{a['01'].points:g}", f"{a['02'].points:g}"]
    by_id = {r[2]: r for r in rows[2:]}
    assert by_id["S001"] == [
        "Ada Lovelace",
        "",
        "S001",
        "",
        "Mon",
        "3",
        "",
    ]  # blank: leaves Canvas's grade alone
    assert by_id["S002"][5:] == ["", "1"]
    assert set(by_id) == {"S001", "S002", "S003", "S004"}


def test_unmatched_submission_is_reported_and_exported_never_dropped(tmp_path):
    book = tmp_path / "gradebook.csv"
    write_book(
        book, {"alice": [("ch01.choose_device", 3, 3)], "zoe": [("ch01.choose_device", 2, 3)]}
    )
    report = exports.export(book, ["nbgrader", "canvas"], roster_from(tmp_path, ROSTER))
    assert report.unmatched == ["zoe"]
    assert any("no roster entry for submission 'zoe'" in line for line in report.lines())
    nb = [dict(zip(NBGRADER, r)) for r in read(report.files["nbgrader"])[1:]]
    assert [r["score"] for r in nb if r["student_id"] == "zoe"] == ["2"]
    assert ["zoe", "", "", "", "", "2"] in read(report.files["canvas"])


def test_two_submissions_for_one_student_stop_the_export_and_write_nothing(tmp_path):
    book = tmp_path / "gradebook.csv"
    write_book(
        book, {"alice": [("ch01.choose_device", 3, 3)], "ada": [("ch01.choose_device", 1, 3)]}
    )
    old = exports.export_path(book, "canvas")
    old.write_text("the export of yesterday\n")
    with pytest.raises(
        exports.ExportError,
        match=r"two submissions for student S001 \(Ada Lovelace\) in chapter "
        r"01: 'ada' and 'alice'",
    ):
        exports.export(
            book, ["nbgrader", "canvas"], roster_from(tmp_path, ROSTER)
        )  # ada@uni.edu: 'ada' is S001
    assert old.read_text() == "the export of yesterday\n"
    assert not exports.export_path(book, "nbgrader").exists()


def test_export_cells_never_run_as_spreadsheet_formulas(tmp_path):
    book = tmp_path / "gradebook.csv"
    write_book(book, {"mallory": [("ch01.choose_device", 3, 3)]})
    roster = roster_from(
        tmp_path, 'id,name,email,username\n=1+1,"=HYPERLINK(""http://x"",""y"")",m@x,mallory\n'
    )
    report = exports.export(book, ["canvas", "nbgrader"], roster)
    cells = [c for fmt in ("canvas", "nbgrader") for r in read(report.files[fmt]) for c in r]
    assert "'=1+1" in cells and not any(c.startswith(("=", "+", "@")) for c in cells)


# ---------------------------------------------------------------- the command line, on real grading


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """alice (reference), bob (blank), carol (a known-wrong answer) and zoe (not on the roster)."""
    tmp = tmp_path_factory.mktemp("exports")
    subs = tmp / "submissions"
    subs.mkdir()
    cases = {c.name: c.notebook for c in chapter_cases("01")}
    for user, case in (
        ("alice", "ch01-reference"),
        ("bob", "ch01-blank"),
        ("carol", "ch01-wrong01"),
        ("zoe", "ch01-blank"),
    ):
        (subs / f"{user}.ipynb").write_text(json.dumps(cases[case]))
    (tmp / "roster.csv").write_text(ROSTER)
    out = tmp / "grades" / "gradebook.csv"
    proc = submissions.run_grader(
        subs,
        out,
        "--workers",
        2,
        "--export",
        "nbgrader",
        "--export",
        "canvas",
        "--roster",
        tmp / "roster.csv",
    )
    return tmp, subs, out, proc


def test_grade_export_writes_both_files_matching_the_grader(graded):
    tmp, subs, out, proc = graded
    assert proc.returncode == 1, proc.stderr[-3000:]  # 1: zoe is not on the roster
    assert "no roster entry for submission 'zoe'" in proc.stderr
    totals = {
        r["submission"]: r["points"]
        for r in csv.DictReader(open(out.with_name("gradebook.summary.csv")))
    }
    nb = [dict(zip(NBGRADER, r)) for r in read(out.with_name("gradebook.nbgrader.csv"))[1:]]
    got = {r["student_id"]: r["score"] for r in nb}
    assert got == {
        "S001": totals["alice"],
        "S002": totals["bob"],
        "S003": totals["carol"],
        "S004": "0",
        "zoe": totals["zoe"],
    }
    assert totals["alice"] == "13" and totals["bob"] == "0" and 0 < float(totals["carol"]) < 13
    assert {r["assignment"] for r in nb} == {"01_device_check"}
    assert all(r["timestamp"] for r in nb if r["student_id"] != "S004")
    canvas = read(out.with_name("gradebook.canvas.csv"))
    canvas_accepts(canvas)
    assert [r[5] for r in canvas[2:]] == [
        totals["alice"],
        totals["bob"],
        totals["carol"],
        "",
        totals["zoe"],
    ]


def test_grade_refuses_a_bad_roster_before_grading(graded, tmp_path):
    _, subs, _, _ = graded
    bad = tmp_path / "roster.csv"
    bad.write_text("id,name\nS1,Ada\n")
    out = tmp_path / "g.csv"
    proc = submissions.run_grader(subs, out, "--export", "nbgrader", "--roster", bad, timeout=120)
    assert (
        proc.returncode == 2
        and "nothing graded" in proc.stderr
        and "no 'email' column" in proc.stderr
    )
    assert not out.exists()
    proc = submissions.run_grader(subs, out, "--roster", bad, timeout=120)
    assert proc.returncode == 2 and "--roster is used by --export" in proc.stderr


def test_two_notebooks_for_one_student_lose_nothing(graded, tmp_path):
    """alice.ipynb and bob.ipynb turn out to be one student (the roster names bob's file by her
    email): the export step of `grade` refuses with both names; the gradebook and the exports
    of before stay byte for byte as they were."""
    _, subs, out, _ = graded
    roster = tmp_path / "roster.csv"
    roster.write_text("id,name,email,username\nS001,Ada Lovelace,bob@uni.edu,alice\n")
    before = {p: p.read_bytes() for p in out.parent.iterdir() if p.is_file()}
    said = []
    status = exports.Exporter(out, ["canvas", "nbgrader"], Roster.read(roster), subs).run(
        said.append
    )
    assert status == 2 and said[0].startswith(
        "export not written: two submissions for student S001 "
        "(Ada Lovelace) in chapter 01: 'alice' and 'bob'"
    )
    assert {p: p.read_bytes() for p in out.parent.iterdir() if p.is_file()} == before


def test_submission_times_use_the_graders_names(tmp_path):
    """Look-alike file names get a fingerprint in the gradebook; the export's timestamps follow
    them (it used to key them by the bare file name, so those students lost their timestamp)."""
    from course_lib.classroom.exports import submission_times
    from course_lib.grading.intake import find_submissions

    for name in ("Alice.ipynb", "alice.ipynb", "bob.ipynb"):
        (tmp_path / name).write_text("{}")
    graded = {e.name for e in find_submissions(tmp_path, skip=[])}
    assert "bob" in graded and not {"Alice", "alice"} & graded  # the grader marks look-alikes
    stamps = submission_times(tmp_path)
    assert set(stamps) == graded
    assert all(len(s) >= 19 for s in stamps.values())
