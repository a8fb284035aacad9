"""One graded process, from the zygote's fork to its exit (child).

`run_child` runs in the forked child: it reads its own job (the zygote never did), isolates
itself (isolation.py: namespaces, own root, Landlock, rlimits), closes every file descriptor but
its report pipe, points stdin, stdout and stderr at /dev/null, moves into its scratch copy, then
runs the job's body (child.notebook_body or child.check_body) and exits. It never returns into
the zygote's code.
"""

import gc
import os
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

from . import isolation
from .environment import private_folder
from .limits import join
from .protocol import Channel


@dataclass
class Limits:
    """Time, memory, disk and process limits of graded processes (the command line sets them)."""

    cell_timeout: float = 60.0  # seconds per notebook cell, then interrupted like Jupyter does
    timeout: float = 600.0  # seconds per notebook run, then killed
    interrupt_grace: float = 5.0  # seconds an interrupted cell gets to stop before the kill
    test_timeout: float = 0.0  # 0: each exercise's own per-test limit; else at most this
    memory_mb: int = 4096  # memory a graded process and all it starts may add, together
    file_mb: int = 256  # largest file a graded process may write
    disk_mb: int = 512  # its scratch folder, /tmp and /dev/shm (each a tmpfs of this size)
    processes: int = 64  # processes and threads of a graded process and all it starts, at once
    cpu_seconds: float = 1200.0  # CPU time a graded process and all it starts may use (limits.py)
    output_chars: int = 20000  # stdout/stderr kept per notebook run (head and tail)


def make_scratch(root: Path, label: str) -> Path:
    """A fresh private scratch folder (0700, a random name) with work/ (the cwd), tmp/, home/."""
    scratch = Path(tempfile.mkdtemp(prefix=f"{label[:12]}-", dir=root))
    for sub in ("work", "tmp", "home"):
        private_folder(scratch / sub)
    return scratch


def _plumbing(scratch: str, keep_fd: int) -> None:
    """Only the report pipe stays open; stdio is /dev/null; HOME, TMPDIR and cwd in the scratch."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, keep_fd)
    os.closerange(keep_fd + 1, 1 << 16)
    work, tmp, home = (os.path.join(scratch, d) for d in ("work", "tmp", "home"))
    os.environ.update(
        HOME=home,
        TMPDIR=tmp,
        MPLCONFIGDIR=os.path.join(home, "mpl"),
        MPLBACKEND="Agg",
        COURSE_PROGRESS_FILE="off",
        PYTHONDONTWRITEBYTECODE="1",
        # torch's cache_dir() wrote the zygote's own (private) path here during the warm-up
        TORCHINDUCTOR_CACHE_DIR=os.path.join(tmp, "torchinductor"),
    )
    os.environ.pop("TRITON_CACHE_DIR", None)
    os.chdir(work)
    os.umask(0o077)  # after its own root is built: what student code creates is private too
    tempfile.tempdir = tmp
    sys.dont_write_bytecode = True
    sys.argv = [""]
    sys.stdin = open(os.devnull)


def run_child(meta: dict, report_fd: int, handshake) -> None:
    """In the forked child: read the job, isolate, run the job's body, exit (never returns)."""
    import signal

    code = 0
    try:
        gc.enable()  # off in the zygote (zygote.main); the heap it made is frozen
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        join(meta.get("cgroup"))  # its tree's limits (limits.py), before anything of the job
        from .child import check_body, notebook_body, read_job

        job = dict(read_job(meta["file"]), **meta)
        os.unlink(meta["file"])
        held = isolation.enter(job["scratch"], Limits(**job["limits"]), handshake)
        _plumbing(job["scratch"], report_fd)
        body = notebook_body if job["role"] == "notebook" else check_body
        body(Channel(report_fd), held, job)
    except BaseException:  # noqa: BLE001 - report anything, then leave
        code = 71
        try:
            Channel(report_fd).send("fatal", error=traceback.format_exc(limit=8)[-4000:])
        except BaseException:  # noqa: BLE001
            pass
    finally:
        os._exit(code)
