"""What the grading processes may inherit, and where they may write: named here, once (parent).

The zygote, the judge and every graded process start from `graded_environment()`: the variables
of `INHERITED` (what Python, PyTorch, the course and its compilers need to start and find their
tools), the `FIXED` values (every GPU hidden, the course's switches), HOME and TMPDIR in the run's
private scratch root. Nothing else of the grader's environment passes: a hub token, an LMS token
or a cloud key in the teacher's shell never reaches a student's code, feedback or results.json.

Scratch is private (`private_root`, `private_folder`, `write_private`): folders 0700 made with
`mkdtemp`'s unpredictable names, files 0600 created with O_EXCL and O_NOFOLLOW, nothing that
another local user could read, plant or replace, and no link followed. `check_private` is what
the zygote and the judge demand of their working directory before they start.
"""

import contextlib
import hashlib
import os
import shutil
import site
import stat
import sys
import tempfile
from pathlib import Path

# Taken from the grader's environment when set (nothing else is): the interpreter and its
# libraries, the locale, the compilers torch.compile calls, the thread counts, and the course's own
# switches that graded processes read (the isolation switches, another figures file, the tests'
# fake GPU). COURSE_LANG stays out: a graded notebook speaks its own edition's language.
INHERITED = (
    "PATH",
    "LANG",
    "LANGUAGE",
    "TZ",
    "USER",
    "LOGNAME",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONUTF8",
    "PYTHONIOENCODING",
    "LD_LIBRARY_PATH",
    "CC",
    "CXX",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "COURSE_GRADER_NO_NAMESPACES",
    "COURSE_GRADER_NO_LANDLOCK",
    "COURSE_GPU_FIGURES",
    "COURSE_FAKE_GPU",  # tests/fixtures/grading/fake_gpu: the tests' stand-in for a GPU
)
INHERITED_PREFIXES = ("LC_",)  # LC_ALL, LC_CTYPE, ...
# Always these, whatever the grader's environment says: no GPU (grades never depend on one), no
# progress file, a drawing backend without a display, no bytecode written, one thread per process.
FIXED = {
    "CUDA_VISIBLE_DEVICES": "",
    "HIP_VISIBLE_DEVICES": "",
    "ROCR_VISIBLE_DEVICES": "",
    "COURSE_DEVICE": "cpu",
    "COURSE_PROGRESS_FILE": "off",
    "MPLBACKEND": "Agg",
    "PYTHONDONTWRITEBYTECODE": "1",
    "OMP_NUM_THREADS": "1",
}
# The folders of a scratch root that the zygote and the judge use as HOME and TMPDIR.
HOME, TMP = "home", "tmp"
_PR_SET_DUMPABLE = 4


def graded_environment(scratch_root, environ=None) -> dict:
    """The whole environment of a zygote or judge started for `scratch_root` (see the module
    docstring); `environ` is the grader's (os.environ by default)."""
    environ = os.environ if environ is None else environ
    env = {k: v for k, v in environ.items() if k in INHERITED or k.startswith(INHERITED_PREFIXES)}
    root = Path(scratch_root)
    env.update(FIXED, HOME=str(root / HOME), TMPDIR=str(root / TMP))
    env["MPLCONFIGDIR"] = matplotlib_cache(environ)
    # HOME moves, so name the user's site-packages (`pip install --user`) where the grader has it
    env["PYTHONUSERBASE"] = environ.get("PYTHONUSERBASE") or site.getuserbase()
    return env


def matplotlib_cache(environ) -> str:
    """The grader's own matplotlib cache folder: its font list is built once per machine, not on
    every run (seconds on a hub with many fonts); it holds fonts' names, nothing secret."""
    if environ.get("MPLCONFIGDIR"):
        return environ["MPLCONFIGDIR"]
    home = environ.get("HOME") or os.path.expanduser("~")
    cache = environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    return os.path.join(cache, "matplotlib")


# ---------------------------------------------------------------- private scratch
def root_prefix(out) -> str:
    """The start of the name of a gradebook's scratch roots (the rest is random): short, because
    Unix socket paths under it (multiprocessing, DataLoader workers) must stay under 108 bytes."""
    text = str(Path(out).resolve()).encode("utf-8", "surrogateescape")
    return f"course-grade-{hashlib.sha1(text).hexdigest()[:8]}-"


def private_root(prefix: str = "course-grade-", base=None) -> Path:
    """A fresh private scratch root (0700, `prefix` and a random name, with its HOME and TMP
    folders) under `base` (the temporary folder by default)."""
    root = Path(tempfile.mkdtemp(prefix=prefix, dir=base or tempfile.gettempdir()))
    for sub in (HOME, TMP):
        private_folder(root / sub)
    return root


def gradebook_root(out, base=None) -> Path:
    """A fresh private scratch root for the gradebook `out`, after removing what killed runs of
    the same gradebook left (resuming needs none of it: the records are beside the gradebook)."""
    base = Path(base or tempfile.gettempdir())
    remove_leftovers(base, root_prefix(out))
    return private_root(root_prefix(out), base)


def remove_leftovers(base: Path, prefix: str) -> None:
    """Remove earlier scratch roots of this gradebook: only real folders this user owns (a link or
    another user's folder planted under that name is left alone, never followed)."""
    try:
        names = [n for n in os.listdir(base) if n.startswith(prefix)]
    except OSError:
        return
    for name in names:
        path = base / name
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid():
            shutil.rmtree(path, ignore_errors=True)  # fd-based: never follows a link inside


def private_folder(path) -> Path:
    """Make the folder `path` (its parent must exist), 0700; refuses anything already there."""
    os.mkdir(path, 0o700)
    os.chmod(path, 0o700, follow_symlinks=False)  # the umask cannot widen it, only narrow it
    return Path(path)


def write_private(path, data) -> None:
    """Create the file `path` (0600) with `data` (bytes or text): never through a link, never over
    a file that is already there."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)


def copy_private(source, path) -> None:
    """A private copy (0600) of the file `source` at `path` (see write_private)."""
    with open(source, "rb") as f:
        write_private(path, f.read())


def check_private(folder) -> None:
    """Refuse to start a process in `folder` unless it is a real folder of this user that no one
    else may write (a module planted there would be imported before the course's own)."""
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise PermissionError(
            f"{folder} is not a private folder of this user (a link, another user's folder, or "
            "writable by others): the grader does not start its processes there"
        )


def python_command(*args) -> list:
    """`python -P ...`: the working directory is not put on sys.path (Python 3.11+)."""
    return [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []), *args]


@contextlib.contextmanager
def undumpable():
    """While grading, this process is not dumpable: a graded process that shares its user (the
    Landlock fallback) cannot read its /proc/PID/environ, memory or files."""
    libc = _libc()
    if libc is None:
        yield
        return
    libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    try:
        yield
    finally:
        libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)


def _libc():
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    return ctypes.CDLL(None, use_errno=True)
