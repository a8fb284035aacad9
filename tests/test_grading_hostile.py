"""Bad and hostile submissions never stop the class,
and cheats earn nothing (issue 5, items 2 and 3).

One grader run (2 workers, short limits) grades every fixture of tests/fixtures/grading plus a
right and a blank chapter 01 notebook, against a private copy of course_lib that the hostile
fixtures attack. Each fixture gets a clear status and exactly the points it earned.
"""

import json
import re
from pathlib import Path

import pytest
from test_zh_messages import english_sentences

from course_lib.grading import feedback, landlock
from course_lib.grading.grader import scratch_root_for
from course_lib.i18n import editions
from course_lib.i18n.catalogue import CJK, in_language, keeping
from support import submissions  # noqa: E402

NO_ISOLATION = {"COURSE_GRADER_NO_LANDLOCK": "1", "COURSE_GRADER_NO_NAMESPACES": "1"}
LIMITS = ["--workers", 2, "--cell-timeout", 3, "--test-timeout", 3, "--memory-mb", 1024]
FULL, FUNCTION_POINTS = 13.0, 3.0
# Handed in from the Chinese edition too: their feedback files must say in Chinese what went wrong.
ZH_TWINS = (
    "infinite_loop",
    "stubborn_loop",
    "sys_exit",
    "os_exit",
    "segfault",
    "big_output",
    "crash_in_function",
    "memory_hog",
)


def _tree(folder: Path) -> dict:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    subs = tmp / "submissions"
    subs.mkdir()
    submissions.write_all(
        subs,
        [
            p.name.split(".")[0]
            for p in submissions.fixture_paths()
            if not p.name.startswith(("cheat_kill_grader", "attack"))
        ],
    )  # attacks: their own test
    bases = submissions.bases()
    for name in ("reference", "blank"):
        (subs / f"{name}.ipynb").write_text(json.dumps(bases[name]))
    for name in ZH_TWINS:  # the same notebooks handed in from the Chinese edition
        twin = editions.synced(json.loads((subs / f"{name}.ipynb").read_text()))
        (subs / f"zh_{name}.ipynb").write_text(json.dumps(twin, ensure_ascii=False))
    lib = submissions.course_copy(tmp)
    before = _tree(lib / "course_lib")
    out = tmp / "out" / "gradebook.csv"
    proc = submissions.run_grader(subs, out, *LIMITS, pythonpath=lib)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = {
        p.stem: json.loads(p.read_text())
        for p in out.with_name("gradebook_feedback").glob("*.json")
    }
    return {
        "book": submissions.read_gradebook(out),
        "rows": submissions.gradebook_rows(out),
        "records": records,
        "out": out,
        "lib": lib,
        "before": before,
        "subs": subs,
        "stderr": proc.stderr,
    }


def total(graded, name):
    row = graded["book"][name]["TOTAL"]
    return float(row["points"]), row["status"], row["detail"], row["flags"]


def test_every_submission_is_graded_once_with_a_row_per_exercise(graded):
    names = {p.stem for p in graded["subs"].glob("*.ipynb")}
    assert set(graded["book"]) == names
    per_submission = {}
    for row in graded["rows"]:
        per_submission[row["submission"]] = per_submission.get(row["submission"], 0) + 1
    assert set(per_submission.values()) == {8}, per_submission  # 7 exercises of chapter 01 + TOTAL
    feedback = graded["out"].with_name("gradebook_feedback")
    assert {p.stem for p in feedback.glob("*.md")} == names


def test_right_and_blank_notebooks(graded):
    assert total(graded, "reference")[:2] == (FULL, "ok")
    assert total(graded, "blank")[:2] == (0.0, "ok")
    assert {r["status"] for e, r in graded["book"]["blank"].items() if e != "TOTAL"} == {
        "not attempted"
    }


@pytest.mark.parametrize("name", ["not_json", "empty_file", "truncated", "wrong_structure"])
def test_unreadable_files_get_a_reason_and_zero(graded, name):
    points, status, detail, _ = total(graded, name)
    assert (points, status) == (0.0, "unreadable") and detail
    assert {r["status"] for e, r in graded["book"][name].items() if e != "TOTAL"} == {"unreadable"}


def test_empty_notebook_has_everything_missing(graded):
    assert total(graded, "empty_notebook")[:2] == (0.0, "empty")
    assert {r["status"] for e, r in graded["book"]["empty_notebook"].items() if e != "TOTAL"} == {
        "missing"
    }


@pytest.mark.parametrize(
    "name,status,words",
    [
        ("infinite_loop", "cell errors", "stopped at the cell time limit"),
        ("stubborn_loop", "timed out", "ignored the interrupt"),
        ("sys_exit", "cell errors", "raised an error"),
        ("os_exit", "exited", "exited with code 3"),
        ("segfault", "crashed", "SIGSEGV"),
        ("big_output", "ok", "printed"),
        ("torch_warning", "ok", "ran all"),
        ("widgets", "cell errors", "raised an error"),
        ("import_error", "cell errors", "raised an error"),
        ("reordered", "cell errors", "ran all"),
        ("free_text", "ok", "ran all"),
    ],
)
def test_a_broken_notebook_keeps_the_points_its_answers_earned(graded, name, status, words):
    points, got_status, detail, _ = total(graded, name)
    assert (points, got_status) == (FULL, status), detail
    assert words in detail


def test_what_went_wrong_is_said(graded):
    cells = lambda name: " | ".join(c["error"] for c in graded["records"][name]["run"]["cells"])
    assert "SystemExit" in cells("sys_exit")
    assert "EOFError" in cells("widgets")
    assert "ModuleNotFoundError" in cells("import_error")
    assert "MemoryError" in cells("memory_hog") and "RuntimeError" in cells("memory_hog")
    assert "UserWarning" in graded["records"]["torch_warning"]["output"]["stderr"]
    assert graded["records"]["big_output"]["output"]["characters"] > 10_000_000
    assert len(graded["records"]["big_output"]["output"]["stdout"]) < 30_000


# What a Chinese student's feedback file says went wrong (the reason, in Chinese).
ZH_REASONS = {
    "infinite_loop": "单元格 12：已中断：这个单元格超过了时限",
    "stubborn_loop": "超过了 3 秒的时限，而且没有理会中断",
    "sys_exit": "这个单元格调用了 sys.exit()；笔记本接着往下运行",
    "os_exit": "笔记本的进程在单元格 12 结束：以退出码 3 退出",
    "segfault": "笔记本的进程在单元格 12 结束：崩溃了（SIGSEGV）",
    "big_output": "个字符（保留了开头和结尾部分）",
    "crash_in_function": "测试你的函数时，检查进程崩溃了",
    "memory_hog": "MemoryError（单元格",
}


@pytest.mark.parametrize("name", ZH_TWINS)
def test_a_chinese_student_is_told_in_chinese_what_went_wrong(graded, name):
    """The same broken notebook handed in from the Chinese edition: the same points and status,
    and a feedback file that says why in Chinese (Python's and PyTorch's own messages aside)."""
    assert total(graded, f"zh_{name}")[:2] == total(graded, name)[:2]
    record = graded["records"][f"zh_{name}"]
    assert record["language"] == "zh"
    text = graded["out"].with_name("gradebook_feedback").joinpath(f"zh_{name}.md").read_text()
    with in_language("zh"), keeping() as kept:  # what the translation kept as it is
        assert feedback.render(record) == text
    left = english_sentences(text, kept)
    assert CJK.search(text) and not left, "English sentences left:\n" + "\n".join(left)
    shown = re.sub(r"\\(.)", r"\1", text)  # as Markdown shows it (student text is escaped)
    assert ZH_REASONS[name] in shown, text


@pytest.mark.parametrize(
    "name,exercise,status",
    [
        ("crash_in_function", "ch01.gpu_names", "crashed"),
        ("memory_hog", "ch01.make_batch", "incorrect"),
        ("renamed", "ch01.gpu_names", "missing"),
        ("syntax_error", "ch01.choose_device", "error"),
    ],
)
def test_one_bad_function_costs_only_its_own_points(graded, name, exercise, status):
    row = graded["book"][name][exercise]
    assert (row["status"], float(row["points"])) == (status, 0.0), row["detail"]
    assert total(graded, name)[0] == FULL - FUNCTION_POINTS


def test_free_text_answers_are_collected(graded):
    texts = graded["out"].with_name("gradebook.texts.csv").read_text()
    assert "free_text,reflection,Creating on the device" in texts and "free_text,why_meta" in texts
    assert (
        "### reflection"
        in graded["out"].with_name("gradebook_feedback").joinpath("free_text.md").read_text()
    )


@pytest.mark.parametrize(
    "name",
    [
        "cheat_patch_check",
        "cheat_patch_builtins",
        "cheat_patch_when_called",
        "cheat_fake_output",
        "cheat_overwrite",
        "cheat_key_import",
    ],
)
def test_cheats_earn_nothing(graded, name):
    points, _, detail, _ = total(graded, name)
    assert points == 0.0, detail
    assert all(float(r["points"]) == 0 for r in graded["book"][name].values())


def test_cheats_are_named_for_the_teacher(graded):
    book = graded["book"]
    # the patch changes nothing where verdicts are made
    # (issue 18: no integrity snapshot, so no "tampered")
    assert book["cheat_patch_when_called"]["ch01.gpu_names"]["status"] == "incorrect"
    assert "review:grader-internals" in book["cheat_patch_when_called"]["TOTAL"]["flags"]
    assert book["cheat_fake_output"]["ch01.make_batch"]["status"] == "tampered"
    assert "review:forged-report-lines" in book["cheat_fake_output"]["TOTAL"]["flags"]
    assert "review:grader-internals" in book["cheat_key_import"]["TOTAL"]["flags"]
    assert total(graded, "cheat_patch_builtins")[1] == "ok"  # its patches broke nothing but itself


def test_the_graders_files_are_untouched(graded):
    assert _tree(graded["lib"] / "course_lib") == graded["before"]
    assert "someone" not in graded["book"]
    feedback = graded["out"].with_name("gradebook_feedback")
    assert not (feedback / "someone_else.md").exists()
    assert "You failed everything" not in (feedback / "infinite_loop.md").read_text()
    stdout = graded["records"]["cheat_overwrite"]["output"]["stdout"]
    assert (
        "'engine': 'done'" not in stdout
        and "'key': 'done'" not in stdout
        and "'gradebook': 'done'" not in stdout
    )


def test_without_landlock_changed_files_are_restored_and_the_culprit_gets_nothing(tmp_path):
    subs = tmp_path / "submissions"
    subs.mkdir()
    submissions.write_all(subs, ["cheat_overwrite", "renamed"])
    lib = submissions.course_copy(tmp_path)
    before = _tree(lib / "course_lib")
    out = tmp_path / "out" / "gradebook.csv"
    proc = submissions.run_grader(
        subs, out, *LIMITS[:1], 1, *LIMITS[2:], pythonpath=lib, env=NO_ISOLATION
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    book = submissions.read_gradebook(out)
    assert set(book) == {"cheat_overwrite", "renamed"}
    assert book["cheat_overwrite"]["TOTAL"]["status"] == "tampered"
    assert "tampered" in book["cheat_overwrite"]["TOTAL"]["flags"]
    assert float(book["renamed"]["TOTAL"]["points"]) == FULL - FUNCTION_POINTS
    assert _tree(lib / "course_lib") == before
    assert not (out.with_name("gradebook_feedback") / "someone_else.md").exists()
    assert "restored" in proc.stderr


def test_a_notebook_that_kills_the_grader_is_isolated_on_rerun(tmp_path):
    subs = tmp_path / "submissions"
    subs.mkdir()
    submissions.write_all(subs, ["cheat_kill_grader", "renamed", "sys_exit"])
    out = tmp_path / "out" / "gradebook.csv"
    env = NO_ISOLATION  # without namespaces and Landlock's signal scope the kill works
    codes = [submissions.run_grader(subs, out, *LIMITS, env=env).returncode for _ in range(3)]
    assert codes[-1] == 0 and any(codes[:-1])  # it killed the grading processes, then was isolated
    book = submissions.read_gradebook(out)
    assert set(book) == {"cheat_kill_grader", "renamed", "sys_exit"}
    assert book["cheat_kill_grader"]["TOTAL"]["status"] == "stopped the grader"
    assert float(book["cheat_kill_grader"]["TOTAL"]["points"]) == 0
    assert float(book["sys_exit"]["TOTAL"]["points"]) == FULL


@pytest.mark.parametrize(
    "env", [{}, {"COURSE_GRADER_NO_NAMESPACES": "1"}], ids=["namespaces", "landlock"]
)
def test_an_isolated_process_cannot_kill_the_grader(tmp_path, env):
    if env and landlock.abi_version() < 6:
        pytest.skip("Landlock signal scoping needs Linux 6.12+")
    subs = tmp_path / "submissions"
    subs.mkdir()
    submissions.write_all(subs, ["cheat_kill_grader", "renamed"])
    out = tmp_path / "out" / "gradebook.csv"
    proc = submissions.run_grader(subs, out, *LIMITS, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    book = submissions.read_gradebook(out)
    assert set(book) == {"cheat_kill_grader", "renamed"}
    assert float(book["renamed"]["TOTAL"]["points"]) == FULL - FUNCTION_POINTS


def test_no_graded_process_is_left_behind(graded):
    assert not submissions.alive_under(scratch_root_for(graded["out"]))
    assert not submissions.alive_with(
        str(scratch_root_for(graded["out"]))
    )  # nor its zygotes, anywhere
