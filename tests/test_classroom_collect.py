"""`python -m course_lib collect`: each hub user's
notebook into a submissions folder (issue 22, items 1, 5).

Home folders as The Littlest JupyterHub lays them out (/home/jupyter-NAME) and as a local
spawner does (/home/NAME), and an nbgrader exchange's inbound folder. The real hub run is
tests/hub/.
"""

import csv
import hashlib
import json
import os
import subprocess
import sys
from datetime import datetime, timezone

import pytest

from course_lib.classroom.collect import parse_exchange_name

NB = "01_device_check.ipynb"
# every home here belongs to the user running the tests (owners: test_classroom_collect_hostile)
OWNERS = ["--no-owner-check"]


def notebook(text: str) -> str:
    return json.dumps(
        {
            "cells": [
                {
                    "cell_type": "code",
                    "metadata": {},
                    "outputs": [],
                    "execution_count": None,
                    "source": text,
                }
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )


def put(path, text="x = 1", mtime=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(notebook(text))
    if mtime:
        os.utime(path, (mtime, mtime))
    return path


def collect(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "course_lib", "collect", *map(str, args), *OWNERS],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, **(env or {"COURSE_LANG": "en"})),
    )


def digest_tree(folder) -> dict:
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()}


def manifest(out) -> dict:
    with open(out / "collected.csv", newline="") as f:
        return {r["user"]: r for r in csv.DictReader(f)}


@pytest.fixture
def homes(tmp_path):
    """TLJH-style homes: the course folder, a notebook
    moved elsewhere, none, two copies, a non-user."""
    home = tmp_path / "home"
    put(
        home / "jupyter-alice" / "pytorch-gpu-course" / "notebooks" / NB,
        "alice = 1",
        mtime=1_700_000_000,
    )
    put(
        home / "jupyter-alice" / "pytorch-gpu-course" / "notebooks" / ".ipynb_checkpoints" / NB,
        "old",
    )
    put(home / "jupyter-bob" / "work" / NB, "bob = 1")
    (home / "jupyter-carol" / "pytorch-gpu-course").mkdir(parents=True)
    put(home / "jupyter-dave" / "copy1" / NB, "dave = 1")
    put(home / "jupyter-dave" / "copy2" / NB, "dave = 2")
    put(home / "ubuntu" / NB, "not a hub user")
    return home


def test_collect_from_home_folders_names_each_copy_by_user_and_reports_the_rest(homes, tmp_path):
    before = digest_tree(homes)
    out = tmp_path / "submissions"
    proc = collect(homes, out, "--chapter", "1", "--user-prefix", "jupyter-")
    assert proc.returncode == 1, proc.stderr  # 1: some users reported
    assert sorted(p.name for p in out.glob("*.ipynb")) == ["alice.ipynb", "bob.ipynb"]
    assert (
        "alice = 1" in (out / "alice.ipynb").read_text()
        and "bob = 1" in (out / "bob.ipynb").read_text()
    )
    assert (
        out / "alice.ipynb"
    ).stat().st_mtime == 1_700_000_000  # the student's time, for the exports
    assert "2 of 4 user(s) have their notebook" in proc.stdout
    assert "carol: missing: no 01_device_check.ipynb anywhere" in proc.stdout
    assert "dave: ambiguous: 2 copies" in proc.stdout and "--path" in proc.stdout
    rows = manifest(out)
    assert {u: r["status"] for u, r in rows.items()} == {
        "alice": "collected",
        "bob": "collected",
        "carol": "missing",
        "dave": "ambiguous",
    }
    assert rows["bob"]["source"].endswith("jupyter-bob/work/01_device_check.ipynb")
    assert digest_tree(homes) == before  # the users' files are never touched


def test_path_option_picks_the_copy_to_grade(homes, tmp_path):
    out = tmp_path / "submissions"
    proc = collect(
        homes, out, "--chapter", "01", "--user-prefix", "jupyter-", "--path", f"copy2/{NB}"
    )
    assert (
        "dave = 2" in (out / "dave.ipynb").read_text() and proc.returncode == 1
    )  # the others lack copy2/


def test_collecting_again_keeps_earlier_copies_unless_update(homes, tmp_path):
    out = tmp_path / "submissions"
    collect(homes, out, "--chapter", "01", "--user-prefix", "jupyter-")
    again = collect(homes, out, "--chapter", "01", "--user-prefix", "jupyter-")
    assert (
        manifest(out)["alice"]["status"] == "unchanged"
        and "0 copied now, 2 already there" in again.stdout
    )
    put(homes / "jupyter-alice" / "pytorch-gpu-course" / "notebooks" / NB, "alice = 2")
    kept = collect(homes, out, "--chapter", "01", "--user-prefix", "jupyter-")
    assert "alice: kept:" in kept.stdout and "--update" in kept.stdout
    assert "alice = 1" in (out / "alice.ipynb").read_text()
    collect(homes, out, "--chapter", "01", "--user-prefix", "jupyter-", "--update")
    assert "alice = 2" in (out / "alice.ipynb").read_text()
    replaced = list((tmp_path / "submissions.replaced").glob("alice-*.ipynb"))
    assert len(replaced) == 1 and "alice = 1" in replaced[0].read_text()  # the old copy is not lost
    assert not list(out.glob(".*.tmp"))


def test_local_spawner_homes_without_prefix(tmp_path):
    home = tmp_path / "homes"
    for user in ("ada", "grace", "linus"):
        put(home / user / "pytorch-gpu-course" / "notebooks" / NB, f"{user} = 1")
    out = tmp_path / "subs"
    proc = collect(home, out, "--chapter", "01")
    assert proc.returncode == 0 and "3 of 3 user(s)" in proc.stdout
    assert sorted(p.stem for p in out.glob("*.ipynb")) == ["ada", "grace", "linus"]


def stamp(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=timezone.utc).timestamp()


def test_collect_from_an_nbgrader_exchange_takes_each_students_latest(tmp_path):
    inbound = tmp_path / "exchange" / "gpu101" / "inbound"
    put(inbound / "alice+ch01+2026-11-01 10:00:00.000000 UTC+abc" / NB, "alice old")
    put(inbound / "alice+ch01+2026-11-02 09:30:00.500000 UTC+def" / NB, "alice new")
    put(inbound / "bob+ch01+2026-11-01 08:00:00.000000 UTC" / "sub" / NB, "bob")
    put(
        inbound / "carol+ch02+2026-11-03 08:00:00.000000 UTC+x" / "02_same_device_rule.ipynb",
        "other chapter",
    )
    (inbound / "dave+ch01+2026-11-01 08:00:00.000000 UTC+y").mkdir()
    out = tmp_path / "subs"
    proc = collect(
        tmp_path / "exchange" / "gpu101",
        out,
        "--chapter",
        "01",
        "--exchange",
        "--assignment",
        "ch01",
    )
    assert proc.returncode == 1 and "dave: missing: their latest submission" in proc.stdout
    assert (
        "alice new" in (out / "alice.ipynb").read_text()
        and "bob" in (out / "bob.ipynb").read_text()
    )
    assert (out / "alice.ipynb").stat().st_mtime == stamp("2026-11-02 09:30:00.500000")
    assert not (out / "carol.ipynb").exists()


def test_exchange_folder_names_parse_like_nbgrader():
    assert parse_exchange_name("a+b+ch01+2026-11-02 09:30:00.500000 UTC+Zm9v")[:2] == (
        "a+b",
        "ch01",
    )
    assert parse_exchange_name("bob+ch01+2026-11-01 08:00:00 UTC")[:2] == ("bob", "ch01")
    assert parse_exchange_name("not-a-submission") is None


@pytest.mark.parametrize(
    "args, says",
    [
        (["--chapter", "42"], "has no chapter '42'"),
        (["--chapter", "01", "--exchange"], "not an nbgrader exchange course folder"),
    ],
)
def test_bad_input_collects_nothing_and_says_why(homes, tmp_path, args, says):
    out = tmp_path / "subs"
    proc = collect(homes, out, *args)
    assert proc.returncode == 2 and says in proc.stderr and "nothing collected" in proc.stderr
    assert not out.exists()


def test_a_missing_source_or_an_output_inside_it_is_refused(homes, tmp_path):
    proc = collect(tmp_path / "nowhere", tmp_path / "subs", "--chapter", "01")
    assert proc.returncode == 2 and "is not a folder" in proc.stderr
    proc = collect(homes, homes / "jupyter-alice" / "subs", "--chapter", "01")
    assert proc.returncode == 2 and "must not be inside" in proc.stderr


@pytest.mark.parametrize(
    "how",
    [{"env": {"COURSE_LANG": "zh"}}, {"args": ["--lang", "zh"]}],
    ids=["COURSE_LANG", "--lang"],
)
def test_a_chinese_teacher_reads_the_summary_and_the_errors_in_chinese(homes, tmp_path, how):
    """COURSE_LANG=zh (or --lang zh): the summary, each user to look at and the reason nothing was
    collected are Chinese; the manifest keeps its English columns and statuses."""
    out = tmp_path / "submissions"
    args = [homes, out, "--chapter", "1", "--user-prefix", "jupyter-", *how.get("args", [])]
    proc = collect(*args, env=how.get("env"))
    assert proc.returncode == 1, proc.stderr
    assert f"4 个用户中有 2 个的笔记本已在 {out} 里（这次拷贝了 2 个，0 个原本就在）" in proc.stdout
    assert f"carol：缺失：{homes / 'jupyter-carol'} 里哪儿也没有 {NB}" in proc.stdout
    assert "dave：不唯一：01_device_check.ipynb 有 2 份" in proc.stdout and "--path" in proc.stdout
    assert "user(s)" not in proc.stdout and "missing" not in proc.stdout
    assert {r["status"] for r in manifest(out).values()} == {"collected", "missing", "ambiguous"}
    proc = collect(
        tmp_path / "nowhere", tmp_path / "subs", "--chapter", "01", *args[6:], env=how.get("env")
    )
    assert proc.returncode == 2
    assert f"什么也没有收取：{tmp_path / 'nowhere'} 不是文件夹" in proc.stderr, proc.stderr
