"""The README's first command really starts JupyterLab on loopback with the notebooks folder."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from support import ROOT


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_course_start_serves_the_notebooks_on_loopback(tmp_path):
    port = free_port()
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(tmp_path / "cfg"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"),
    )
    start = (
        [str(ROOT / "course.sh")]
        if os.name == "posix"
        else [sys.executable, str(ROOT / "course.py")]
    )
    proc = subprocess.Popen(
        [*start, "start", "--no-browser", f"--port={port}", "--ServerApp.token="],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline, listing = time.monotonic() + 90, None
        while time.monotonic() < deadline and listing is None:
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/api/contents", timeout=5
                ) as r:
                    listing = json.load(r)
            except OSError:
                assert proc.poll() is None, proc.stdout.read().decode()[-2000:]
                time.sleep(1)
        assert listing is not None, "JupyterLab did not answer within 90 s"
        names = {item["name"] for item in listing["content"]}
        assert "01_device_check.ipynb" in names
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


# -------------------------------------------------------- the standard-library launcher (course.py)
def launcher():
    import importlib.util

    spec = importlib.util.spec_from_file_location("course_launcher", ROOT / "course.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_launcher_finds_the_venv_python_per_operating_system(tmp_path):
    course = launcher()
    assert course.venv_python(tmp_path, "nt") == tmp_path / "Scripts" / "python.exe"
    assert course.venv_python(tmp_path, "posix") == tmp_path / "bin" / "python"
    assert course.venv_dir({}) == ROOT / ".venv"
    assert course.venv_dir({"COURSE_VENV": "other"}) == ROOT / "other"
    assert course.venv_dir({"COURSE_VENV": str(tmp_path)}) == tmp_path


def fake_venv(folder, os_name):
    course = launcher()
    python = course.venv_python(folder, os_name)
    python.parent.mkdir(parents=True)
    python.write_text("")
    return course


@pytest.mark.parametrize("os_name", ["posix", "nt"])
def test_launcher_installs_torch_first_then_the_course_once(tmp_path, os_name):
    root = tmp_path / "course"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    venv = tmp_path / "venv"
    course, calls = launcher(), []

    def run(cmd, cwd):
        assert cwd == str(root)
        calls.append(cmd)
        if cmd[1:3] == ["-m", "venv"]:
            fake_venv(venv, os_name)

    assert course.install(venv, run=run, os_name=os_name, root=root)
    make_venv, torch_step, course_step, trim_step, compile_step = calls
    assert make_venv[1:] == ["-m", "venv", str(venv)]
    python = str(course.venv_python(venv, os_name))
    assert (
        torch_step[:4] == [python, "-m", "pip", "install"]
        and torch_step[-1] == f"torch=={course.TORCH_VERSION}"
    )
    assert course_step[0] == python and course_step[-2:] == ["-e", ".[test]"]
    assert trim_step[:4] == [python, "-m", "pip", "uninstall"] and "rfc3987-syntax" in trim_step
    # pip leaves the bytecode to one parallel compile of the venv, last
    assert "--no-compile" in torch_step and "--no-compile" in course_step
    assert compile_step == [python, "-c", course.COMPILE_ALL]
    calls.clear()  # the stamp says it is installed: nothing runs again
    assert not course.install(venv, run=run, os_name=os_name, root=root) and calls == []
    # a changed pyproject.toml means a new install, into the existing venv
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\nversion = '2'\n")
    assert course.install(venv, run=run, os_name=os_name, root=root)
    assert [c[-1] for c in calls] == [
        f"torch=={course.TORCH_VERSION}",
        ".[test]",
        *course.UNNEEDED[-1:],
        course.COMPILE_ALL,
    ]


def test_launcher_compiles_the_course_s_bytecode_even_where_python_writes_none(tmp_path):
    course, calls = launcher(), []
    course.compile_course(Path("/venv/bin/python"), run=lambda cmd, cwd: calls.append(cmd))
    assert calls == [["/venv/bin/python", "-c", course.COMPILE_COURSE]]
    (tmp_path / "course_lib" / "sub").mkdir(parents=True)
    for name in ("__init__.py", "sub/__init__.py", "sub/m.py"):
        (tmp_path / "course_lib" / name).write_text("X = 1\n")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    subprocess.run([sys.executable, "-c", course.COMPILE_COURSE], cwd=tmp_path, env=env, check=True)
    compiled = sorted(p.name.split(".")[0] for p in tmp_path.rglob("*.pyc"))
    assert compiled == ["__init__", "__init__", "m"]


def test_launcher_passes_the_learners_arguments_on():
    course = launcher()
    start = course.command_line("start", ["--port=9999"], "py", as_root=True)
    assert start[:3] == ["py", "-m", "jupyterlab"] and start[-1] == "--port=9999"
    assert {"--ip=127.0.0.1", "--notebook-dir=notebooks", "--allow-root"} <= set(start)
    assert "--allow-root" not in course.command_line("start", [], "py", as_root=False)
    assert course.command_line("test", ["-k", "ch01"], "py") == [
        "py",
        "-m",
        "pytest",
        *course.PARALLEL,
        "-k",
        "ch01",
    ]
    assert course.command_line("doctor", ["--json"], "py") == [
        "py",
        "-m",
        "course_lib",
        "doctor",
        "--json",
    ]


def test_tests_run_on_every_core_unless_the_caller_says_otherwise():
    course = launcher()
    assert course.PARALLEL[:2] == ["-n", "auto"] and "loadgroup" in course.PARALLEL
    for own in (["-n", "0"], ["-n0"], ["--numprocesses=3"], ["--dist", "load"], ["-p", "no:xdist"]):
        assert course.command_line("test", own, "py") == ["py", "-m", "pytest", *own], own
    assert course.command_line("test", ["--nbval-lax"], "py")[3:-1] == course.PARALLEL


def run_launcher(*args):
    env = dict(os.environ, COURSE_VENV=str(ROOT / ".venv"))
    return subprocess.run(
        [sys.executable, str(ROOT / "course.py"), *args],
        cwd="/",
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_launcher_runs_doctor_and_tests_in_the_existing_venv():
    course = launcher()
    if not course.is_installed(course.venv_dir()):
        pytest.skip("the course's .venv is not installed by course.py here (its stamp is missing)")
    doctor = run_launcher("doctor", "--json")
    assert doctor.returncode == 0, doctor.stderr
    assert json.loads(doctor.stdout)["course device"]
    tests = run_launcher("test", "--collect-only", "-q", "tests/test_setup_files.py")
    assert tests.returncode == 0 and "test_launcher_pins_the_torch" in tests.stdout, (
        tests.stdout + tests.stderr
    )
    assert "Installing" not in doctor.stdout + tests.stdout


def test_launcher_refuses_unknown_commands():
    out = run_launcher("fly")
    assert out.returncode == 2 and "usage" in out.stderr
