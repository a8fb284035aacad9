"""`collect` against students who plant things in their homes and in the exchange (issue 34,
item 6): links to a classmate's work or to a root-only file, a linked or foreign-owned home or
nbgrader exchange folder in another student's name, a 120 MB sparse file, a named pipe, a folder
where the notebook should be. Each is `rejected` with the reason, and nothing of it is copied.

The tests run as one user, so every file here has that user's uid: who owns what is faked by
replacing `collect.uid_of` (the system user -> uid look-up), never by changing owners.
"""

import csv
import json
import os
import subprocess
import sys

import pytest

from course_lib.classroom import collect as collect_mod
from course_lib.classroom.collect import collect

NB = "01_device_check.ipynb"
ME = os.getuid()
SOMEONE_ELSE = ME + 4242


def put(path, text="x = 1"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cells": [], "metadata": {"who": text}, "nbformat": 4}))
    return path


def expected(home):
    return home / "pytorch-gpu-course" / "notebooks" / NB


def rows(out) -> dict:
    with open(out / "collected.csv", newline="") as f:
        return {r["user"]: r for r in csv.DictReader(f)}


@pytest.fixture
def owners(monkeypatch):
    """Every system user named in `table` has that uid; any other name is no system user."""
    table = {}
    monkeypatch.setattr(collect_mod, "uid_of", lambda name: table.get(name))
    return table


@pytest.fixture
def home(tmp_path):
    """Homes of bob (his own notebook) and of alice, where each test plants something."""
    homes = tmp_path / "home"
    put(expected(homes / "bob"), "bob's work")
    (homes / "alice").mkdir()
    return homes


def run(homes, tmp_path, **kwargs):
    out = tmp_path / "subs"
    kwargs.setdefault("owner_check", False)
    return collect(homes, out, "01", **kwargs), out


def rejected(out, user, says):
    row = rows(out)[user]
    assert row["status"] == "rejected", row
    assert says in row["note"], row
    assert not (out / f"{user}.ipynb").exists()
    assert "bob's work" in (out / "bob.ipynb").read_text()


def test_a_notebook_linked_to_a_classmates_is_rejected_not_copied_as_the_linkers(home, tmp_path):
    target = expected(home / "alice")
    target.parent.mkdir(parents=True)
    target.symlink_to(expected(home / "bob"))
    collection, out = run(home, tmp_path)
    rejected(out, "alice", "is a symbolic link: not followed")
    assert "alice: rejected" in "\n".join(collection.lines())


def test_a_course_folder_linked_to_a_classmates_is_rejected(home, tmp_path):
    (home / "alice" / "pytorch-gpu-course").symlink_to(home / "bob" / "pytorch-gpu-course")
    _, out = run(home, tmp_path)
    rejected(out, "alice", "pytorch-gpu-course is a symbolic link")


def test_a_link_to_a_root_only_file_is_never_opened(home, tmp_path):
    target = expected(home / "alice")
    target.parent.mkdir(parents=True)
    target.symlink_to("/etc/shadow")
    _, out = run(home, tmp_path)
    rejected(out, "alice", "symbolic link")


def test_a_link_found_by_the_search_is_rejected_too(home, tmp_path):
    (home / "alice" / "work").mkdir()
    (home / "alice" / "work" / NB).symlink_to(expected(home / "bob"))
    _, out = run(home, tmp_path)
    rejected(out, "alice", "work/01_device_check.ipynb is a symbolic link")


def test_a_home_folder_that_is_a_link_is_rejected(home, tmp_path):
    (home / "alice").rmdir()
    (home / "alice").symlink_to(home / "bob")
    _, out = run(home, tmp_path)
    rejected(out, "alice", "is a symbolic link")


def test_a_folder_in_place_of_the_notebook_is_rejected(home, tmp_path):
    put(expected(home / "alice") / "inner.ipynb")
    _, out = run(home, tmp_path)
    rejected(out, "alice", "is a folder, not a notebook file")


def test_a_named_pipe_is_rejected_without_waiting_for_a_writer(home, tmp_path):
    """Run as the teacher runs it (a subprocess, with a time limit): a pipe nobody writes to
    must not stop the collection."""
    pipe = expected(home / "alice")
    pipe.parent.mkdir(parents=True)
    os.mkfifo(pipe)
    out = tmp_path / "subs"
    proc = subprocess.run(
        [sys.executable, "-m", "course_lib", "collect", home, out, "--chapter", "01"]
        + ["--no-owner-check"],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, COURSE_LANG="en"),
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rejected(out, "alice", "is a named pipe (FIFO), not a notebook file")


def test_a_120_mb_sparse_file_is_refused_by_its_size_before_a_byte_is_read(
    home, tmp_path, monkeypatch
):
    big = expected(home / "alice")
    big.parent.mkdir(parents=True)
    with open(big, "wb") as f:
        f.truncate(120 * 2**20)  # 120 MB that take no disk
    read, real_read = [], os.read

    def counted(fd, n):
        read.append(real_read(fd, n))
        return read[-1]

    monkeypatch.setattr(os, "read", counted)
    _, out = run(home, tmp_path)
    rejected(out, "alice", "is 120 MB; notebooks over 50 MB are not collected")
    assert sum(map(len, read)) < 1000  # bob's small notebook only
    _, out = run(home, tmp_path, max_bytes=200 * 2**20)  # a larger limit, chosen by the teacher
    assert rows(out)["alice"]["status"] == "collected"


def test_at_most_limit_plus_one_bytes_are_read(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 5000)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert len(collect_mod.read_limited(fd, 1000)) == 1001
    finally:
        os.close(fd)


def test_each_home_and_notebook_must_belong_to_the_user_it_names(home, tmp_path, owners):
    """bob's home is his; mallory's is someone else's (a home in her name she does not own);
    carol has no system user: all but bob rejected, and --no-owner-check collects them all."""
    put(expected(home / "mallory"), "planted")
    put(expected(home / "carol"), "carol")
    owners.update(bob=ME, alice=ME, mallory=SOMEONE_ELSE)
    _, out = run(home, tmp_path, owner_check=True)
    rejected(out, "mallory", f"belongs to {collect_mod.owner_name(ME)}, not to mallory")
    rejected(out, "carol", "no system user 'carol'")
    assert "--no-owner-check" in rows(out)["carol"]["note"]
    _, out = run(home, tmp_path / "again", owner_check=False)
    assert {u: r["status"] for u, r in rows(out).items() if u != "alice"} == {
        "bob": "collected",
        "carol": "collected",
        "mallory": "collected",
    }


def test_the_owner_of_a_tljh_home_is_the_prefixed_system_user(tmp_path, owners):
    homes = tmp_path / "home"
    put(expected(homes / "jupyter-bob"), "bob's work")
    owners["jupyter-bob"] = ME
    _, out = run(homes, tmp_path, user_prefix="jupyter-", owner_check=True)
    assert rows(out)["bob"]["status"] == "collected"


def exchange(tmp_path):
    inbound = tmp_path / "exchange" / "gpu101" / "inbound"
    put(inbound / "bob+ch01+2026-11-01 08:00:00.000000 UTC+a" / NB, "bob's work")
    return inbound


def test_an_exchange_folder_in_a_classmates_name_owned_by_another_user_is_refused(tmp_path, owners):
    """bob (whose uid owns every file here) plants a later submission in alice's name: nbgrader's
    collect only warns; ours refuses it, says whose it is, and collects bob's own."""
    inbound = exchange(tmp_path)
    put(inbound / "alice+ch01+2026-11-02 08:00:00.000000 UTC+b" / NB, "bob, as alice")
    owners.update(bob=ME, alice=SOMEONE_ELSE)
    out = tmp_path / "subs"
    collection = collect(inbound.parent, out, "01", exchange=True)
    rejected(out, "alice", "claims to be alice's submission")
    assert f"belongs to {collect_mod.owner_name(ME)}, not to alice" in rows(out)["alice"]["note"]
    assert any(line.startswith("  alice: rejected") for line in collection.lines())


def test_a_linked_exchange_folder_is_refused_and_the_students_own_collected(tmp_path, owners):
    """alice's real submission, then a link in her name to bob's folder, dated later: the link
    is refused (a warning), her own is collected."""
    inbound = exchange(tmp_path)
    put(inbound / "alice+ch01+2026-11-01 09:00:00.000000 UTC+c" / NB, "alice's own")
    later = inbound / "alice+ch01+2026-11-03 08:00:00.000000 UTC+d"
    later.symlink_to(inbound / "bob+ch01+2026-11-01 08:00:00.000000 UTC+a")
    owners.update(bob=ME, alice=ME)
    out = tmp_path / "subs"
    collection = collect(inbound.parent, out, "01", exchange=True)
    assert "alice's own" in (out / "alice.ipynb").read_text()
    assert any("is a symbolic link" in w and later.name in w for w in collection.warnings)
    assert any(line.startswith("WARNING") for line in collection.lines())


def test_the_tljh_exchange_owner_is_the_prefixed_system_user(tmp_path, owners):
    inbound = exchange(tmp_path)
    owners["jupyter-bob"] = ME
    out = tmp_path / "subs"
    collect(inbound.parent, out, "01", exchange=True, user_prefix="jupyter-")
    assert rows(out)["bob"]["status"] == "collected"
