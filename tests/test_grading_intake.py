"""Intake and records that survive any name and any output (issue 18, item 4).

Unit tests of intake (identities, refusals, reading that never raises, the journal) and of the
gradebook's retry rule; then one grader run over a class of awkward files: names that are not
UTF-8, names that collide after normalisation (case, spaces, Unicode, the feedback file's name), a
symbolic link to a classmate's notebook, a FIFO, and a notebook whose output and report pipe carry
deep, huge, binary and unencodable lines; a failure of the grader's own steps on one submission;
and a grader that dies while reading one file, twice. The end-to-end tests (`-k end_to_end`) only
read the gradebook, so COURSE_GRADING_UNDER_TEST=FOLDER runs them against another course_lib.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from course_lib.grading import gradebook, intake
from course_lib.grading.feedback import file_name
from support import submissions  # noqa: E402

UNDER_TEST = os.environ.get("COURSE_GRADING_UNDER_TEST")
PAIRS = {
    "case": ("Alice", "alice"),
    "spaces": ("bob smith", "bob  smith"),
    "nfc-nfd": ("\u00e9lan", "e\u0301lan"),
    "nfkc": ("\ufb01nal", "final"),
    "feedback file": ("a b", "a_b"),
    "suffix": ("v1.2", "v1.3"),
}
NOT_UTF8 = [b"caf\xe9", b"caf\xe8"]


def _nb(text="x = 1") -> bytes:
    return json.dumps(
        {
            "cells": [
                {
                    "cell_type": "code",
                    "source": text,
                    "metadata": {},
                    "outputs": [],
                    "execution_count": None,
                }
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    ).encode()


def _names(folder) -> dict:
    return {e.path.name: e for e in intake.find_submissions(folder, [])}


# ---------------------------------------------------------------- identities
@pytest.mark.parametrize("kind", list(PAIRS))
def test_names_that_look_alike_get_distinct_identities_and_feedback_files(tmp_path, kind):
    for stem in PAIRS[kind]:
        (tmp_path / f"{stem}.ipynb").write_bytes(_nb())
    (tmp_path / "carol.ipynb").write_bytes(_nb())
    entries = intake.find_submissions(tmp_path, [])
    names = [e.name for e in entries]
    assert len(names) == 3 and "carol" in names  # an ordinary name keeps its plain identity
    assert len({intake.look_alike(n) for n in names}) == 3, names
    assert len({file_name(n).casefold() for n in names}) == 3, names
    assert all(n.encode("utf-8") for n in names)


def test_names_that_are_not_utf8_get_printable_distinct_identities(tmp_path):
    for raw in NOT_UTF8:
        (tmp_path / os.fsdecode(raw + b".ipynb")).write_bytes(_nb())
    names = sorted(e.name for e in intake.find_submissions(tmp_path, []))
    assert len(set(names)) == 2 and all(n.startswith("caf? #") for n in names), names
    assert all(n.encode("utf-8") and n == gradebook.clean(n) for n in names)


def test_identities_do_not_change_between_runs(tmp_path):
    for stem in ("Alice", "alice", "bob"):
        (tmp_path / f"{stem}.ipynb").write_bytes(_nb())
    assert [e.name for e in intake.find_submissions(tmp_path, [])] == [
        e.name for e in intake.find_submissions(tmp_path, [])
    ]


# ---------------------------------------------------------------- refusals and reading
def test_links_and_other_non_regular_files_are_refused_never_graded(tmp_path):
    (tmp_path / "alice.ipynb").write_bytes(_nb())
    (tmp_path / "mallory.ipynb").symlink_to(tmp_path / "alice.ipynb")
    (tmp_path / "dangling.ipynb").symlink_to(tmp_path / "nowhere.ipynb")
    os.mkfifo(tmp_path / "pipe.ipynb")
    (tmp_path / "folder.ipynb").mkdir()
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "inside.ipynb").write_bytes(_nb())
    (tmp_path / "linked").symlink_to(tmp_path / "real", target_is_directory=True)
    found = _names(tmp_path)
    assert set(found) == {
        "alice.ipynb",
        "mallory.ipynb",
        "dangling.ipynb",
        "pipe.ipynb",
        "inside.ipynb",
    }
    assert found["alice.ipynb"].refused == "" and found["inside.ipynb"].refused == ""
    assert (
        "symbolic link" in found["mallory.ipynb"].refused
        and "symbolic link" in found["dangling.ipynb"].refused
    )
    assert "not a regular file" in found["pipe.ipynb"].refused
    pipe = intake.read(found["pipe.ipynb"])  # refused: never opened, so it cannot block the grader
    assert pipe.refused == "refused" and pipe.analysis is None
    with pytest.raises(OSError):
        intake.read_bytes(tmp_path / "mallory.ipynb")  # opened without following the link
    with pytest.raises(OSError):
        intake.read_bytes(tmp_path / "pipe.ipynb")


@pytest.mark.parametrize(
    "data",
    [
        b"[" * 200_000,
        b"\xff\xfe garbage",
        b'{"cells": [' + b"[" * 100_000 + b"]]}",
        b"{" + b" " * 10 + b'"cells": "\\ud800"}',
        b"",
    ],
    ids=range(5),
)
def test_reading_never_raises(tmp_path, data):
    path = tmp_path / "x.ipynb"
    path.write_bytes(data)
    sub = intake.read(intake.Entry("x", path))
    assert sub.unreadable and sub.analysis is None


def test_a_file_whose_reading_stopped_the_grader_twice_is_not_read_again(tmp_path):
    (tmp_path / "ok.ipynb").write_bytes(_nb())
    (tmp_path / "killer.ipynb").write_bytes(_nb())
    journal = tmp_path / "gb.journal"
    journal.write_text("reading\tkiller\nreading\tkiller\n")
    subs = {
        s.name: s
        for s in intake.read_all(intake.find_submissions(tmp_path, []), journal, fresh=False)
    }
    assert subs["ok"].analysis is not None
    assert (
        subs["killer"].analysis is None
        and "stopped the grader itself, twice" in subs["killer"].unreadable
    )


def test_a_grader_error_row_is_graded_again_on_the_next_run(tmp_path):
    book = gradebook.Gradebook(tmp_path / "gb.csv")
    row = dict(submission="x", exercise="ch01.a", points=0.0, max_points=1, status="crashed")
    book.append("x", [row, dict(row, exercise=gradebook.TOTAL, status=gradebook.GRADER_ERROR)])
    book.append(
        "y",
        [
            dict(row, submission="y"),
            dict(row, submission="y", exercise=gradebook.TOTAL, status="ok"),
        ],
    )
    again = gradebook.Gradebook(tmp_path / "gb.csv")
    assert list(again.done) == ["y"] and again.retried == 1


# ---------------------------------------------------------------- one grader run over awkward files
GARBAGE = r"""
import os, sys
print("lone surrogate \ud800 and \udfff; binary \x00\x01\x02 done")
sys.stderr.write("\udcff\n")
lines = [b"[" * 100_000, b"x" * (9 * 2**20), bytes(range(256)) * 4,
         b'{"kind": "cell_done", "answers": {"answer_device_label": "\\ud800"}}',
         ('{"kind": "cell", "cell": ' + "9" * 5000 + "}").encode(), b'"\\udfff"' * 1000]
for fd in range(3, 64):
    try:
        if os.fstat(fd).st_mode & 0o170000 == 0o010000:  # the report pipe
            for line in lines:
                os.write(fd, line + b"\n")
    except OSError:
        pass
text_why = "surrogates \udc80 in a free-text answer"
"""


@pytest.fixture(scope="module")
def awkward(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("awkward")
    subs, out = tmp / "submissions", tmp / "out" / "gradebook.csv"
    subs.mkdir()
    bases = submissions.bases()
    right, blank = json.dumps(bases["reference"]).encode(), json.dumps(bases["blank"]).encode()
    for first, second in PAIRS.values():
        (subs / f"{first}.ipynb").write_bytes(right)
        (subs / f"{second}.ipynb").write_bytes(blank)
    for raw, content in zip(NOT_UTF8, (right, blank)):
        (subs / os.fsdecode(raw + b".ipynb")).write_bytes(content)
    (subs / "mallory.ipynb").symlink_to(subs / "Alice.ipynb")
    os.mkfifo(subs / "pipe.ipynb")
    nb = json.loads(right)
    nb["cells"].append(
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": GARBAGE,
        }
    )
    (subs / "garbage.ipynb").write_text(json.dumps(nb))
    proc = submissions.run_grader(
        subs,
        out,
        "--workers",
        2,
        "--cell-timeout",
        60,
        timeout=900,
        pythonpath=Path(UNDER_TEST) if UNDER_TEST else None,
    )
    feedback = out.with_name("gradebook_feedback")
    records = (
        [json.loads(p.read_text()) for p in feedback.glob("*.json")] if feedback.exists() else []
    )
    return {
        "proc": proc,
        "book": submissions.read_gradebook(out) if out.exists() else {},
        "records": records,
        "files": len(list(subs.iterdir())),
        "mds": len(list(feedback.glob("*.md"))) if feedback.exists() else 0,
    }


def _total(awkward, name):
    return awkward["book"][name]["TOTAL"]


def _by_file(awkward) -> dict:
    return {os.path.basename(r["file"]): r for r in awkward["records"]}


def test_end_to_end_the_class_is_graded_whatever_the_names(awkward):
    assert awkward["proc"].returncode == 0, awkward["proc"].stderr[-3000:]
    assert len(awkward["book"]) == awkward["files"], sorted(
        awkward["book"]
    )  # one identity per file
    assert (
        len(awkward["records"]) == awkward["mds"] == awkward["files"]
    )  # one feedback file per file


@pytest.mark.parametrize("kind", list(PAIRS))
def test_end_to_end_no_name_takes_another_students_row_or_feedback(awkward, kind):
    first, second = (_by_file(awkward).get(f"{n}.ipynb") for n in PAIRS[kind])
    assert first and second and first["submission"] != second["submission"]
    assert (first["points"], second["points"]) == (13.0, 0.0)  # each got its own work's grade
    assert float(_total(awkward, first["submission"])["points"]) == 13.0
    assert float(_total(awkward, second["submission"])["points"]) == 0.0


def test_end_to_end_names_that_are_not_utf8_are_graded(awkward):
    graded = [r for r in awkward["records"] if r["submission"].startswith("caf?")]
    assert sorted(r["points"] for r in graded) == [0.0, 13.0]


def test_end_to_end_a_link_is_refused_never_graded_as_its_owners_work(awkward):
    mallory = _total(awkward, "mallory")
    assert (mallory["status"], float(mallory["points"])) == ("refused", 0.0)
    assert "symbolic link" in mallory["detail"]
    assert {r["status"] for e, r in awkward["book"]["mallory"].items() if e != "TOTAL"} == {
        "refused"
    }


def test_end_to_end_a_fifo_is_refused_and_stops_nothing(awkward):
    pipe = _total(awkward, "pipe")
    assert (pipe["status"], float(pipe["points"])) == (
        "refused",
        0.0,
    ) and "not a regular file" in pipe["detail"]


def test_end_to_end_deep_huge_binary_and_unencodable_output_never_stops_the_grader(awkward):
    garbage = _total(awkward, "garbage")
    assert float(garbage["points"]) == 13.0, (
        garbage
    )  # its answers are its own, the garbage changed nothing
    record = _by_file(awkward)["garbage.ipynb"]
    assert "lone surrogate" in record["output"]["stdout"] and "surrogates" in record["texts"]["why"]


def test_a_failure_of_the_graders_own_step_is_that_submissions_status(tmp_path, monkeypatch):
    from course_lib.grading import outcome
    from course_lib.grading.grader import Grader

    subs = tmp_path / "submissions"
    subs.mkdir()
    for name in ("good", "unlucky"):
        (subs / f"{name}.ipynb").write_text(json.dumps(submissions.bases()["reference"]))
    real = outcome.finish_check

    def fails_for_one(sub, *args, **kwargs):
        if sub.name == "unlucky":
            raise ZeroDivisionError("injected into the grader")
        return real(sub, *args, **kwargs)

    monkeypatch.setattr(outcome, "finish_check", fails_for_one)
    out = tmp_path / "out" / "gradebook.csv"
    Grader(subs, out, workers=2, progress=False, log=lambda text: None).run()
    book = submissions.read_gradebook(out)
    assert float(book["good"]["TOTAL"]["points"]) == 13.0
    unlucky = book["unlucky"]["TOTAL"]
    assert (
        unlucky["status"] == gradebook.GRADER_ERROR
        and "injected into the grader" in unlucky["detail"]
    )
    monkeypatch.setattr(outcome, "finish_check", real)  # fixed: the rerun grades it again
    Grader(subs, out, workers=2, progress=False, log=lambda text: None).run()
    assert float(submissions.read_gradebook(out)["unlucky"]["TOTAL"]["points"]) == 13.0


DIES_WHILE_READING = """
import os, sys
from course_lib.grading import intake
real = intake.read
def read(entry):
    if entry.name == "killer":
        os._exit(9)  # the grader dies while reading this one file
    return real(entry)
intake.read = read
from course_lib.grading.grader import Grader
Grader(sys.argv[1], sys.argv[2], workers=2, progress=False).run()
"""


def test_a_rerun_after_the_grader_died_on_a_file_makes_progress(tmp_path):
    subs = tmp_path / "submissions"
    subs.mkdir()
    for name in ("first", "killer", "last"):
        (subs / f"{name}.ipynb").write_text(json.dumps(submissions.bases()["reference"]))
    out = tmp_path / "out" / "gradebook.csv"
    out.parent.mkdir()
    codes = [
        subprocess.run(
            [sys.executable, "-c", DIES_WHILE_READING, str(subs), str(out)],
            cwd=tmp_path,
            capture_output=True,
            timeout=600,
        ).returncode
        for _ in range(3)
    ]
    assert codes[:2] == [9, 9] and codes[2] == 0, codes
    book = submissions.read_gradebook(out)
    assert float(book["first"]["TOTAL"]["points"]) == float(book["last"]["TOTAL"]["points"]) == 13.0
    assert book["killer"]["TOTAL"]["status"] == "stopped the grader"


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_notebook_whose_language_cannot_be_read_gets_the_class_language(tmp_path, lang):
    """A link, a FIFO, a file that is not JSON and one whose reading stopped the grader cannot say
    which edition they are: in a class that handed in the Chinese edition their feedback, reasons
    included, is Chinese; in an English class, English."""
    from test_zh_messages import english_sentences

    from course_lib.grading import outcome, record
    from course_lib.grading.feedback import render
    from course_lib.i18n import editions
    from course_lib.i18n.catalogue import CJK, in_language, keeping

    handed_out = json.loads(_nb("import torch\nx = 1"))
    for name in ("a", "b"):
        nb = editions.synced(handed_out) if lang == "zh" else handed_out
        (tmp_path / f"{name}.ipynb").write_text(json.dumps(nb, ensure_ascii=False))
    (tmp_path / "link.ipynb").symlink_to(tmp_path / "a.ipynb")
    os.mkfifo(tmp_path / "pipe.ipynb")
    (tmp_path / "broken.ipynb").write_bytes(b"{not json")
    (tmp_path / "killer.ipynb").write_bytes(_nb())
    journal = tmp_path / "gb.journal"
    journal.write_text("reading\tkiller\nreading\tkiller\n")
    subs = intake.read_all(intake.find_submissions(tmp_path, []), journal, fresh=False)
    intake.assign(subs, {"01"})
    assert {s.name: s.language for s in subs} == dict.fromkeys(
        ["a", "b", "broken", "killer", "link", "pipe"], lang
    )
    for sub in (s for s in subs if s.analysis is None):
        outcome.decide_statically(sub, {ex.id: 1 for ex in sub.exercises})
        with in_language("en"), keeping() as kept:  # the grader's own language does not matter
            text = render(record.build(sub)[1])
        if lang == "zh":
            left = english_sentences(text, kept)
            assert CJK.search(text) and not left, f"{sub.name}: English left: {left}\n{text}"
        else:
            assert not CJK.search(text) and sub.unreadable in text
