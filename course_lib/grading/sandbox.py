"""Graded processes: forked from the pre-warmed grader, limited, sandboxed, reporting as data (grader).

Every notebook run and every exercise check is a child forked from the grader, which has
already imported torch and the course: no kernel start, no `import torch`, no kernel
shutdown per submission. A child gets its own process group and scratch folder, a memory
limit, no inherited file descriptors except its report pipe, stdin from /dev/null, and
(where the kernel has Landlock) may write only inside its scratch folder. It reports JSON
lines tagged with a random token on the pipe; anything else it writes is not believed.
"""
import builtins
import json
import os
import resource
import secrets
import shutil
import signal
import sys
import tempfile
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from . import landlock

MAX_REPORT_BYTES = 8 * 2**20
_PR_SET_PDEATHSIG = 1


@dataclass
class Limits:
    """Time and memory limits of graded processes (the command line sets them)."""
    cell_timeout: float = 60.0  # seconds per notebook cell, then interrupted like Jupyter does
    timeout: float = 600.0  # seconds per notebook run, then killed
    interrupt_grace: float = 5.0  # seconds an interrupted cell gets to stop before the kill
    test_timeout: float = 0.0  # 0: each exercise's own per-test limit; else at most this
    memory_mb: int = 4096  # address space a graded process may add to the grader's
    file_mb: int = 256  # largest file a graded process may write
    output_chars: int = 20000  # stdout/stderr kept per notebook run (head and tail)


class Channel:
    """The child's end of the report pipe: one JSON object per line, tagged with the token.

    Reports are encoded with the builtins as they were at fork time, so a notebook that
    patches `isinstance` or `str` cannot break (or bend) its own report.
    """

    def __init__(self, fd: int, token: str):
        self.fd, self.token = fd, token
        self._builtins = dict(vars(builtins))

    @contextmanager
    def pristine(self):
        """Run a block with the fork-time builtins; the notebook's own patches come back after."""
        table = vars(builtins)
        current = dict(table)
        table.update(self._builtins)
        try:
            yield
        finally:
            table.clear()
            table.update(current)

    def send(self, kind: str, **data) -> None:
        with self.pristine():
            line = (json.dumps({"t": self.token, "kind": kind, **data}, default=repr) + "\n").encode()
        view = memoryview(line)
        while view:
            written = os.write(self.fd, view)
            view = view[written:]


@dataclass
class Child:
    """The grader's view of one graded process."""
    pid: int
    fd: int
    token: str
    role: str
    scratch: Path
    task: object = None
    started: float = field(default_factory=time.monotonic)
    deadline: float = 0.0
    cell_deadline: float = 0.0
    kill_at: float = 0.0
    current_cell: int = 0
    interrupted_cells: list = field(default_factory=list)
    killed_for: str = ""
    buffer: bytes = b""
    received: int = 0
    messages: list = field(default_factory=list)
    forged: int = 0
    confined: bool = False  # it reported that Landlock confines its writes to its scratch folder
    status: object = None  # os.waitpid status once it has exited

    def feed(self, data: bytes) -> list:
        """Take bytes from the pipe; return the new messages that carry our token."""
        self.received += len(data)
        if self.received > MAX_REPORT_BYTES:
            return []
        self.buffer += data
        *lines, self.buffer = self.buffer.split(b"\n")
        new = []
        for line in lines:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                self.forged += 1
                continue
            if isinstance(message, dict) and message.get("t") == self.token:
                new.append(message)
            else:
                self.forged += 1
        self.messages.extend(new)
        return new

    def last(self, kind: str):
        found = [m for m in self.messages if m.get("kind") == kind]
        return found[-1] if found else None

    def exit_text(self) -> str:
        """How the process ended, in words."""
        if self.killed_for:
            return self.killed_for
        if self.status is None:
            return "still running"
        if os.WIFSIGNALED(self.status):
            number = os.WTERMSIG(self.status)
            try:
                name = signal.Signals(number).name
            except ValueError:
                name = f"signal {number}"
            return f"crashed ({name})"
        return f"exited with code {os.WEXITSTATUS(self.status)}"

    def exited_cleanly(self) -> bool:
        return not self.killed_for and self.status is not None and os.WIFEXITED(self.status) \
            and os.WEXITSTATUS(self.status) == 0


def _vm_bytes() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _prctl_death_signal() -> None:
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def enter_sandbox(scratch: Path, limits: Limits, keep_fd: int, parent_pid: int) -> bool:
    """In a freshly forked child: isolate it. Returns whether writes are confined (Landlock)."""
    os.setpgid(0, 0)
    _prctl_death_signal()
    if os.getppid() != parent_pid:  # the grader died while we were being born
        os._exit(70)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, keep_fd)
    os.closerange(keep_fd + 1, 1 << 16)
    work, tmp, home = scratch / "work", scratch / "tmp", scratch / "home"
    os.environ.update(HOME=str(home), TMPDIR=str(tmp), MPLCONFIGDIR=str(home / "mpl"), MPLBACKEND="Agg",
                      COURSE_PROGRESS_FILE="off", PYTHONDONTWRITEBYTECODE="1")
    os.chdir(work)
    tempfile.tempdir = str(tmp)
    sys.dont_write_bytecode = True
    sys.argv = [""]
    sys.stdin = open(os.devnull)
    used = _vm_bytes()
    if used:  # Linux; elsewhere the address space is not known, and the time limits remain
        budget = used + limits.memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (budget, budget))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb * 2**20, limits.file_mb * 2**20))
    shm = [d for d in ("/dev/shm",) if os.path.isdir(d)]
    return landlock.restrict_writes([str(scratch)] + shm, [os.devnull])


def make_scratch(root: Path, label: str) -> Path:
    """A fresh scratch folder with work/ (the cwd), tmp/ and home/."""
    scratch = Path(tempfile.mkdtemp(prefix=f"{label[:12]}-", dir=root))
    for sub in ("work", "tmp", "home"):
        (scratch / sub).mkdir()
    return scratch


def spawn(role: str, scratch: Path, limits: Limits, body, *args) -> Child:
    """Fork a graded process that runs `body(channel, confined, *args)` and then exits."""
    read_fd, write_fd = os.pipe()
    token = secrets.token_hex(12)
    parent_pid = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the grader's code
        code = 0
        try:
            os.close(read_fd)
            channel = Channel(write_fd, token)
            confined = enter_sandbox(scratch, limits, write_fd, parent_pid)
            channel.send("sandbox", confined=confined)
            body(channel, confined, *args)
        except BaseException:  # noqa: BLE001 - report anything, then leave
            code = 71
            try:
                Channel(write_fd, token).send("fatal", error=traceback.format_exc(limit=8)[-4000:])
            except BaseException:  # noqa: BLE001
                pass
        finally:
            os._exit(code)
    os.close(write_fd)
    os.set_blocking(read_fd, False)
    return Child(pid=pid, fd=read_fd, token=token, role=role, scratch=scratch)


def kill(child: Child, reason: str) -> None:
    """Kill a graded process and everything it started (its process group)."""
    if not child.killed_for:
        child.killed_for = reason
    for target in (lambda: os.killpg(child.pid, signal.SIGKILL), lambda: os.kill(child.pid, signal.SIGKILL)):
        try:
            target()
        except (ProcessLookupError, PermissionError):
            pass


def cleanup(child: Child, keep_scratch: bool = False) -> None:
    """After exit: stop leftovers in its group, close the pipe, remove the scratch folder."""
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        os.close(child.fd)
    except OSError:
        pass
    if not keep_scratch:
        shutil.rmtree(child.scratch, ignore_errors=True)
