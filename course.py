#!/usr/bin/env python3
"""One entry point for learners, teachers and CI, on
Linux, macOS and Windows (standard library only).

    python course.py start   [JupyterLab options]  install into .venv (first time), open the course
    python course.py test    [pytest options]      install into .venv (first time), run the tests
    python course.py doctor  [--json]              install, then print the environment report

`./course.sh start|test|doctor` runs this file on Linux and macOS; on Windows use
`py course.py start` (or `python course.py start`). Set COURSE_VENV to use another
virtual environment folder (relative to this folder, or absolute).

torch is installed first and pinned. On Linux, PyPI's torch==2.13.0 is itself a CUDA 13 build:
it uses an NVIDIA GPU when the driver is of the 580 series or newer; with an older driver
torch.cuda.is_available() is False and the course runs on the CPU (`doctor` says so and why).
On Windows and macOS PyPI's torch runs on the CPU (and on Apple's MPS GPU on a Mac).
"""

import hashlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
TORCH_VERSION = "2.13.0"
MIN_PYTHON = (3, 10)
STAMP_NAME = ".course-installed"  # in the venv; holds install_fingerprint() once installed
# pytest-xdist: the suite on every core, its groups (a notebook's cells, a chapter in the browser, a
# class graded once) each on one worker; conftest.py says how. Left out when the caller gives -n,
# --dist or -p no:xdist.
PARALLEL = ["-n", "auto", "--dist", "loadgroup", "--no-loadscope-reorder"]
# The venv's bytecode, compiled in parallel (what pip does per package, one file at a time; a file
# that does not compile, such as torch's Python 3.12-only test helper, is skipped as pip skips it).
COMPILE_ALL = (
    "import compileall, sysconfig; "
    "[compileall.compile_dir(d, quiet=2, workers=0) "
    "for d in sorted({sysconfig.get_path('purelib'), sysconfig.get_path('platlib')})]"
)
# The course's own bytecode, brought up to date before each command (in parallel; nothing to do
# when no source changed). Where PYTHONDONTWRITEBYTECODE is set, Python never writes it itself,
# and every kernel, test process and grader would compile course_lib from source again (0.15-0.2
# CPU-s each).
COMPILE_COURSE = "import compileall; compileall.compile_dir('course_lib', quiet=2, workers=0)"
# Optional extras that JupyterLab's dependencies pull in and nothing here uses, removed after the
# install: rfc3987-syntax (jsonschema's IRI format check, via jupyter-events) builds a grammar on
# import, 1.2 CPU-s in every process that imports nbformat (each pytest process, each server).
UNNEEDED = ["rfc3987-syntax"]
USAGE = "usage: python course.py [start|test|doctor] [extra arguments]  (or ./course.sh ...)"


def venv_dir(environ=None) -> Path:
    """The course's virtual environment: COURSE_VENV, relative to the course folder, or .venv."""
    environ = os.environ if environ is None else environ
    return ROOT / environ.get("COURSE_VENV", ".venv")  # an absolute COURSE_VENV stays as it is


def venv_python(venv: Path, os_name: str = os.name) -> Path:
    """The venv's Python: Scripts\\python.exe on Windows, bin/python elsewhere."""
    return venv / "Scripts" / "python.exe" if os_name == "nt" else venv / "bin" / "python"


def install_fingerprint(root: Path = ROOT) -> str:
    """What the install depends on: the pinned torch
    and pyproject.toml (a change means reinstall)."""
    text = f"torch=={TORCH_VERSION}\n".encode() + (root / "pyproject.toml").read_bytes()
    return hashlib.sha256(text).hexdigest()[:16]


def is_installed(venv: Path, os_name: str = os.name, root: Path = ROOT) -> bool:
    """True when the venv exists and its stamp says the current pyproject.toml is installed."""
    stamp = venv / STAMP_NAME
    return (
        venv_python(venv, os_name).exists()
        and stamp.exists()
        and stamp.read_text().strip() == install_fingerprint(root)
    )


def install_steps(venv: Path, os_name: str = os.name) -> list:
    """The commands of a first install, in order: make
    the venv, torch pinned first, then the course."""
    python = str(venv_python(venv, os_name))
    # pip compiles each package's bytecode on one core; COMPILE_ALL does it once, on every core.
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check", "-q", "--no-compile"]
    make_venv = (
        [] if venv_python(venv, os_name).exists() else [[sys.executable, "-m", "venv", str(venv)]]
    )
    # torch first and pinned: on Linux an unpinned torch could pull another (multi-GB) CUDA build.
    return make_venv + [
        pip + [f"torch=={TORCH_VERSION}"],
        pip + ["-e", ".[test]"],
        [python, "-m", "pip", "uninstall", "--disable-pip-version-check", "-y", "-q", *UNNEEDED],
        [python, "-c", COMPILE_ALL],
    ]


def install(
    venv: Path, run=subprocess.check_call, os_name: str = os.name, root: Path = ROOT
) -> bool:
    """Install the course into `venv` unless its stamp is current; True when it installed."""
    if is_installed(venv, os_name, root):
        return False
    print(f"== Installing the course into {venv} (first run only) ==", flush=True)
    for step in install_steps(venv, os_name):
        run(step, cwd=str(root))
    (venv / STAMP_NAME).write_text(install_fingerprint(root) + "\n")
    return True


def compile_course(python: Path, run=subprocess.call, root: Path = ROOT) -> None:
    """course_lib's bytecode, up to date (COMPILE_COURSE); a failure costs only speed."""
    run([str(python), "-c", COMPILE_COURSE], cwd=str(root))


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def command_line(command: str, args: list, python: Path, as_root: bool = False) -> list:
    """What `command` runs in the venv, with the learner's extra arguments last."""
    if command == "start":
        root_flag = (
            ["--allow-root"] if as_root else []
        )  # Jupyter refuses root without it (containers)
        return [
            str(python),
            "-m",
            "jupyterlab",
            "--ip=127.0.0.1",
            "--notebook-dir=notebooks",
            *root_flag,
            *args,
        ]
    if command == "test":
        return [str(python), "-m", "pytest", *parallel_options(args), *args]
    if command == "doctor":
        return [str(python), "-m", "course_lib", "doctor", *args]
    raise ValueError(command)


def parallel_options(args: list) -> list:
    """PARALLEL, unless `args` choose the workers or the distribution themselves."""
    own = any(
        (a.startswith("-n") and not a.startswith("--"))
        or a.startswith(("--numprocesses", "--dist", "no:xdist", "-pno:xdist"))
        for a in args
    )
    return [] if own else list(PARALLEL)


def hand_over(cmd: list) -> int:
    """Run `cmd` in the course folder as this process (POSIX) or as a child whose code we return."""
    os.chdir(ROOT)
    sys.stdout.flush()
    if os.name == "posix":
        os.execv(cmd[0], cmd)  # signals (Ctrl+C, kill) reach JupyterLab / pytest directly
    child = subprocess.Popen(cmd)
    while True:
        try:
            return child.wait()
        except KeyboardInterrupt:  # Ctrl+C reaches the child too; wait for it to finish
            continue


def main(argv: list) -> int:
    if sys.version_info < MIN_PYTHON:
        print(
            (
                f"course.py: Python {'.'.join(map(str, MIN_PYTHON))} or newer is needed (3.11 "
                "recommended)"
            ),
            file=sys.stderr,
        )
        return 1
    command, args = (argv[0], argv[1:]) if argv else ("start", [])
    if command not in ("start", "test", "doctor"):
        print(USAGE, file=sys.stderr)
        return 2
    venv = venv_dir()
    try:
        install(venv)
    except subprocess.CalledProcessError as err:
        print(
            f"course.py: the install step failed ({err}); fix the cause and run it again",
            file=sys.stderr,
        )
        return 1
    compile_course(venv_python(venv))
    return hand_over(command_line(command, args, venv_python(venv), is_root()))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
