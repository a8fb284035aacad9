"""What the grader inherits never reaches the student (issue 34, item 1).

A token in the teacher's shell (a hub API token, an LMS token) is in the grader's environment; a
submission prints os.environ, raises with the tokens in a cell and in its graded function, and
reads the environment of every process above it through /proc. Nothing of the tokens may be in
its feedback, the gradebook or Gradescope's results.json: the zygote, the judge and every graded
process start from the allow-list of course_lib/grading/environment.py, and the grader is not
dumpable while it grades.
"""

import json
import os

import pytest
from test_classroom_gradescope import autograder_zip, gradescope_tree, run_autograder  # noqa: F401

from course_lib.grading import environment, landlock
from support import submissions

SECRETS = {"HUB_API_TOKEN": "s3cret-hub-4f1c9", "LMS_TOKEN": "s3cret-lms-77ab2"}
LEAK = (
    "import os\n"
    "print(dict(os.environ))\n"
    "raise RuntimeError('seen: ' + os.environ.get('HUB_API_TOKEN', 'no-hub') + ' '\n"
    "                   + os.environ.get('LMS_TOKEN', 'no-lms'))"
)
# every process above this one, through /proc (the Landlock fallback shares their user)
ANCESTORS = (
    "import re\n"
    "found, pid = [], 'self'\n"
    "for _ in range(8):\n"
    "    try:\n"
    "        with open(f'/proc/{pid}/environ', 'rb') as f:\n"
    "            found += re.findall(rb's3cret-[a-z0-9-]+', f.read())\n"
    "    except OSError as err:\n"
    "        found.append(type(err).__name__.encode())\n"
    "    with open(f'/proc/{pid}/status') as f:\n"
    "        pid = next(l.split()[1] for l in f if l.startswith('PPid:'))\n"
    "    if pid == '0':\n"
    "        break\n"
    "raise RuntimeError('ancestors: ' + repr(found))"
)
FUNCTION = (
    "def choose_device(*args, **kwargs):\n"
    "    import os\n"
    "    raise RuntimeError('in the check: ' + os.environ.get('HUB_API_TOKEN', 'no-hub'))"
)


def leaking_notebook() -> dict:
    nb = json.loads(json.dumps(submissions.bases()["reference"]))
    nb["cells"] += [submissions.code_cell(s) for s in (LEAK, ANCESTORS, FUNCTION)]
    return nb


def everything_under(folder) -> str:
    """Every file the grader wrote under `folder`, as one text."""
    return "\n".join(
        p.read_bytes().decode("utf-8", "replace") for p in sorted(folder.rglob("*")) if p.is_file()
    )


def test_the_allow_list_keeps_what_torch_and_the_course_need_and_nothing_else(tmp_path):
    grader = dict(
        SECRETS,
        PATH="/usr/bin",
        LANG="C.UTF-8",
        LC_ALL="C.UTF-8",
        PYTHONPATH="/course",
        COURSE_LANG="zh",
        COURSE_GRADER_NO_NAMESPACES="1",
        AWS_SECRET_ACCESS_KEY="x",
        JUPYTERHUB_API_TOKEN="y",
        LD_PRELOAD="/evil.so",
        CUDA_VISIBLE_DEVICES="0",
        HOME="/home/teacher",
    )
    env = environment.graded_environment(tmp_path, grader)
    assert not {
        "HUB_API_TOKEN",
        "LMS_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "JUPYTERHUB_API_TOKEN",
    } & set(env)
    assert "LD_PRELOAD" not in env and "COURSE_LANG" not in env
    assert (
        env["PATH"] == "/usr/bin" and env["LC_ALL"] == "C.UTF-8" and env["PYTHONPATH"] == "/course"
    )
    assert env["COURSE_GRADER_NO_NAMESPACES"] == "1" and env["CUDA_VISIBLE_DEVICES"] == ""
    assert (env["HOME"], env["TMPDIR"]) == (str(tmp_path / "home"), str(tmp_path / "tmp"))


def _graded(tmp_path, env):
    subs = tmp_path / "submissions"
    subs.mkdir()
    (subs / "leaker.ipynb").write_text(json.dumps(leaking_notebook()))
    out = tmp_path / "out" / "gradebook.csv"
    proc = submissions.run_grader(
        subs, out, "--workers", 2, "--cell-timeout", 20, env=dict(SECRETS, **env)
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out.parent


@pytest.mark.parametrize(
    "env", [{}, {"COURSE_GRADER_NO_NAMESPACES": "1"}], ids=["namespaces", "landlock"]
)
def test_a_token_in_the_graders_environment_is_nowhere_in_what_the_student_gets(tmp_path, env):
    if env and landlock.abi_version() < 1:
        pytest.skip("no Landlock on this kernel: the fallback does not isolate at all")
    written = everything_under(_graded(tmp_path, env))
    for name, secret in SECRETS.items():
        assert secret not in written, f"{name} reached the student's records"
    assert "seen: no-hub no-lms" in written  # the cell's error did reach the feedback
    assert "ancestors: " in written
    assert "in the check: no-hub" in written  # and the function's, through the check process


def test_run_autograder_gives_the_graded_process_no_token(tmp_path, autograder_zip):  # noqa: F811
    root = gradescope_tree(tmp_path, autograder_zip, {"01_device_check.ipynb": leaking_notebook()})
    old = {k: os.environ.get(k) for k in SECRETS}
    os.environ.update(SECRETS)  # run_autograder's environment: Gradescope's, with the tokens
    try:
        proc, results = run_autograder(root, tmp_path)
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    assert proc.returncode == 0 and results is not None, proc.stdout[-2000:] + proc.stderr[-2000:]
    shown = json.dumps(results)
    for secret in SECRETS.values():
        assert secret not in shown
    assert "seen: no-hub no-lms" in shown  # the cell's error did reach results.json
