"""Nothing of grading that another local user can read, plant or replace (issue 34, item 2).

The grader's scratch used to be `/tmp/course-grade-<hash of the gradebook's path>`: folders 0755
and notebooks and job files 0644 that any user on a hub host could read while a classmate was
graded, a symbolic link planted at that name crashed the grade, and the zygote and a restarted
judge ran `python -m` in it, so a `torch.py` there would have run beside the key. Now each run's
scratch root has a random name and is 0700, files are 0600 and created without following links,
and the zygote and the judge start only in a private folder, with `python -P`.
"""

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

from course_lib.grading import child, environment, sandbox
from course_lib.grading.judge import JudgeClient
from course_lib.grading.zygote import ZygoteClient
from support import submissions

PLANTED_TORCH = "open({marker!r}, 'w').write('imported')\nraise ImportError('planted')\n"


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def old_scratch_name(out: Path) -> str:
    """The name the grader's scratch root had before: predictable from the gradebook's path."""
    digest = hashlib.sha1(str(out.resolve()).encode()).hexdigest()[:10]
    return f"course-grade-{digest}"


def test_scratch_folders_are_0700_and_files_0600_never_through_a_link(tmp_path):
    root = environment.gradebook_root(tmp_path / "book.csv", base=tmp_path)
    assert mode(root) == 0o700 and root.name.startswith(
        environment.root_prefix(tmp_path / "book.csv")
    )
    assert {mode(root / d) for d in ("home", "tmp")} == {0o700}
    scratch = sandbox.make_scratch(root, "1n")
    assert {mode(p) for p in (scratch, scratch / "work", scratch / "tmp", scratch / "home")} == {
        0o700
    }
    job = root / f"{scratch.name}.job"
    child.write_job(job, {"cells": [[1, "x = 1"]]})
    assert mode(job) == 0o600 and child.read_job(str(job)) == {"cells": [[1, "x = 1"]]}
    victim = tmp_path / "victim.txt"
    victim.write_text("the teacher's file")
    (root / "planted.job").symlink_to(victim)
    with pytest.raises(OSError):
        child.write_job(root / "planted.job", {"cells": []})
    assert victim.read_text() == "the teacher's file"


def test_leftovers_are_removed_but_planted_links_and_folders_are_not_followed(tmp_path):
    out = tmp_path / "book.csv"
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("kept")
    prefix = environment.root_prefix(out)
    (tmp_path / f"{prefix}planted").symlink_to(victim)
    stale = environment.gradebook_root(out, base=tmp_path)
    fresh = environment.gradebook_root(out, base=tmp_path)
    assert not stale.exists() and fresh.is_dir()  # a killed run's root goes
    assert (victim / "keep.txt").read_text() == "kept"  # a link is never followed


def _world_writable_with_torch(folder: Path, marker: Path) -> Path:
    folder.mkdir()
    (folder / "torch.py").write_text(PLANTED_TORCH.format(marker=str(marker)))
    folder.chmod(0o777)
    return folder


@pytest.mark.parametrize("who", ["zygote", "judge"])
def test_a_torch_py_planted_in_a_world_writable_cwd_is_never_imported(tmp_path, who):
    marker = tmp_path / "imported"
    cwd = _world_writable_with_torch(tmp_path / "shared", marker)
    try:
        if who == "zygote":
            client = ZygoteClient(cwd)
            client.hello()
        else:
            client = JudgeClient(cwd=str(cwd))
            client.request("quizzes", answers={})
    except (PermissionError, RuntimeError):
        client = None  # refused to start there: right
    if client is not None:
        client.close()
    assert not marker.exists(), f"the {who} imported the torch.py planted in its working directory"


def test_the_zygote_does_not_import_from_its_own_folder_either(tmp_path):
    """Its own private folder: `python -P` keeps the working directory off sys.path anyway."""
    marker = tmp_path / "imported"
    root = environment.private_root("zy-", base=tmp_path)
    (root / "torch.py").write_text(PLANTED_TORCH.format(marker=str(marker)))
    client = ZygoteClient(root)
    try:
        assert "error" not in client.hello()
    finally:
        client.close()
    assert not marker.exists()


def test_a_link_planted_at_the_old_scratch_name_neither_crashes_nor_redirects_a_grade(tmp_path):
    temp = tmp_path / "t"  # the grader's temporary folder (TMPDIR), where the links are planted
    temp.mkdir()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("kept")
    out = tmp_path / "out" / "gradebook.csv"
    out.parent.mkdir()
    (temp / old_scratch_name(out)).symlink_to(victim)
    (temp / f"{environment.root_prefix(out)}x").symlink_to(victim)
    subs = tmp_path / "submissions"
    subs.mkdir()
    (subs / "alice.ipynb").write_text(json.dumps(submissions.bases()["reference"]))
    proc = submissions.run_grader(subs, out, "--keep-scratch", env={"TMPDIR": str(temp)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert float(submissions.read_gradebook(out)["alice"]["TOTAL"]["points"]) > 0
    assert sorted(p.name for p in victim.iterdir()) == ["keep.txt"]  # nothing written there
    roots = [
        p
        for p in temp.iterdir()
        if p.name.startswith(environment.root_prefix(out)) and not p.is_symlink()
    ]
    assert len(roots) == 1 and mode(roots[0]) == 0o700
    for scratch in (p for p in roots[0].iterdir() if p.is_dir()):
        assert mode(scratch) == 0o700, scratch
        for sub in ("work", "tmp", "home"):
            if (scratch / sub).exists():
                assert mode(scratch / sub) == 0o700
        for f in (scratch / "work").glob("*") if (scratch / "work").exists() else ():
            assert mode(f) == 0o600, f  # the notebook and its support files


def test_what_the_grader_writes_for_the_teacher_is_the_teachers_alone(tmp_path):
    """Gradebook, summary and feedback hold grades and classmates' answers: 0600 files, a 0700
    feedback folder, whatever the teacher's umask (issue 34 item 2)."""
    import os
    import stat

    from course_lib.grading import gradebook

    old = os.umask(0o022)
    try:
        book = gradebook.Gradebook(tmp_path / "grades" / "gradebook.csv")
        gradebook.write_atomic(tmp_path / "grades" / "alice.md", "feedback")
    finally:
        os.umask(old)
    for path in (book.path, tmp_path / "grades" / "alice.md"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert stat.S_IMODE((tmp_path / "grades").stat().st_mode) == 0o700
