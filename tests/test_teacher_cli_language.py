"""The teachers' commands speak the course's language (issue 23, item 4): what `python -m
course_lib grade/release/gradescope/exercises` print (summaries, progress, errors) is Chinese under
COURSE_LANG=zh or `--lang zh`, English otherwise; the gradebook's columns stay the same.
(`collect`: tests/test_classroom_collect.py.)
"""

import csv
import json
import os
import subprocess
import sys

import pytest

from course_lib.i18n.catalogue import CJK


def run(*args, lang=None):
    """`python -m course_lib ARGS` with COURSE_LANG=`lang` (unset: none)."""
    env = {k: v for k, v in os.environ.items() if k != "COURSE_LANG"}
    if lang:
        env["COURSE_LANG"] = lang
    return subprocess.run(
        [sys.executable, "-m", "course_lib", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_grade_says_its_progress_and_summary_in_chinese(tmp_path):
    """An empty class graded under COURSE_LANG=zh: the progress bar and the summary are Chinese,
    the gradebook's header is the English one; in English the same run says it in English."""
    subs = tmp_path / "subs"
    subs.mkdir()
    out = tmp_path / "zh" / "gradebook.csv"
    out.parent.mkdir()
    proc = run("grade", subs, "--out", out, "--workers", 1, lang="zh")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "评完 0 份作业，用时" in proc.stdout and f"成绩表：{out}" in proc.stdout, proc.stdout
    assert "评分:" in proc.stderr or "评分：" in proc.stderr, proc.stderr[-2000:]  # tqdm's label
    assert "graded" not in proc.stdout and "grading" not in proc.stderr
    with open(out, newline="") as f:
        assert next(csv.reader(f))[:3] == ["submission", "exercise", "points"]
    english = run("grade", subs, "--out", tmp_path / "en.csv", "--workers", 1, "--no-progress")
    assert english.returncode == 0 and "graded 0 submission(s) in" in english.stdout
    assert not CJK.search(english.stdout + english.stderr)


def test_grade_refuses_a_file_that_is_no_gradebook_in_chinese(tmp_path):
    (tmp_path / "subs").mkdir()
    (tmp_path / "notes.csv").write_text("my own notes\n")
    args = ("grade", tmp_path / "subs", "--out", tmp_path / "notes.csv", "--no-progress")
    zh = run(*args, "--lang", "zh", lang="en")  # --lang wins over COURSE_LANG
    assert zh.returncode == 2
    assert "已经存在，但不是这个评分程序写出的成绩表（第一行不同）" in zh.stderr, zh.stderr
    en = run(*args)
    assert en.returncode == 2 and "is not a gradebook written by this grader" in en.stderr


@pytest.mark.parametrize(
    "args, chinese, english",
    [
        (
            ["gradescope", "42", "{tmp}/a.zip"],
            "没有写出自动评分包：课程里没有带练习的第 '42' 章",
            "no autograder written: the course has no chapter '42'",
        ),
        (
            ["release", "{tmp}", "--lang", "zh"],
            "没有写出学生版：{tmp} 不是空的；要替换它，请加上 --force",
            "no bundle written: {tmp} is not empty; pass --force to replace it",
        ),
        (["exercises"], "个练习，", " exercises, "),
    ],
    ids=["gradescope", "release", "exercises"],
)
def test_a_command_says_it_in_the_course_language(tmp_path, args, chinese, english):
    (tmp_path / "already.txt").write_text("here")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    zh, en = run(*args, lang="zh"), run(*args)
    assert chinese.replace("{tmp}", str(tmp_path)) in zh.stdout + zh.stderr, zh.stdout + zh.stderr
    assert english.replace("{tmp}", str(tmp_path)) in en.stdout + en.stderr, en.stdout + en.stderr
    assert not CJK.search(en.stderr) and zh.returncode == en.returncode


def test_the_graders_log_is_said_in_the_course_language(tmp_path, capsys):
    """What the grader writes to stderr while it runs (resuming, warnings) goes through the
    catalogue: Chinese under zh, as it was in English."""
    from course_lib.grading.grader import Grader
    from course_lib.i18n.catalogue import in_language

    grader = Grader(tmp_path, tmp_path / "gradebook.csv")
    lines = [
        "resuming: 3 submission(s) already graded, 2 to go",
        "WARNING isolation on this machine does not guarantee: /dev/shm and abstract sockets "
        "are shared between submissions",
        "WARNING: judging failed for 'alice': KeyError: 'x'",
    ]
    with in_language("zh"):
        for line in lines:
            grader.log(line)
    zh = capsys.readouterr().err
    assert "接着上次评：已评完 3 份作业，还剩 2 份" in zh
    assert "警告：这台机器上的隔离不能保证：各份作业共用 /dev/shm 和抽象 socket" in zh
    assert "警告：'alice' 的“评判”一步失败了：KeyError: 'x'" in zh
    with in_language("en"):
        for line in lines:
            grader.log(line)
    assert capsys.readouterr().err.splitlines() == lines


def test_graded_notebooks_speak_their_own_language_not_the_teachers(tmp_path):
    """A teacher grading with COURSE_LANG=zh: an English notebook still runs in English (what it
    prints, its checks' output), a Chinese one in Chinese; the grader's own summary is Chinese."""
    from support import submissions

    subs, out = tmp_path / "subs", tmp_path / "out" / "gradebook.csv"
    subs.mkdir()
    probe = "from course_lib.i18n import language\nprint('LANGUAGE', language())"
    for name, first_line in (("english", ""), ("chinese", "import course_lib.zh  # noqa: F401\n")):
        nb = json.loads(json.dumps(submissions.bases()["blank"]))
        nb["cells"].append(submissions._cell("code", first_line + probe))
        (subs / f"{name}.ipynb").write_text(json.dumps(nb))
    proc = submissions.run_grader(subs, out, "--workers", 2, env={"COURSE_LANG": "zh"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "评完 2 份作业" in proc.stdout, proc.stdout
    said = {
        p.stem: json.loads(p.read_text())["output"]["stdout"]
        for p in out.with_name("gradebook_feedback").glob("*.json")
    }
    assert "LANGUAGE en" in said["english"] and "LANGUAGE zh" in said["chinese"], said
    assert not CJK.search(said["english"]), said["english"]  # its check cells spoke English too
