"""What a graded process says to the grader, and how the grader reads it (child and parent).

A graded process writes one wire line (course_lib/exercises/wire.py) per message on its report
pipe: `Channel` in the child, `Child.feed` in the parent. Nothing it says is trusted: a notebook
process reports the student's own answers (forging them gains nothing the student could not have
typed), and a check process reports observations, plain data that the judge compares with the
reference; no verdict and no secret is ever in that process. The parent only checks the shape of
each line: a line that is not a well-formed message of the harness, or a test reported out of
order, is counted as forged (`forged`), which the verdict names (see outcome.py).
"""

import builtins
import os
import signal
import time
from dataclasses import dataclass, field

from ..exercises import wire

MAX_REPORT_BYTES = 16 * 2**20

# kind -> {field: allowed types} of every message a graded process may send, per role
_TEXT, _INT, _NUM = (str,), (int,), (int, float)
SCHEMAS = {
    "notebook": {
        "start": {"held": (dict,)},
        "cell": {"cell": _INT},
        "cell_done": {
            "cell": _INT,
            "status": _TEXT,
            "error": _TEXT,
            "seconds": _NUM,
            "answers": (dict,),
        },
        "done": {"cells": _INT, "stdout": _TEXT, "stderr": _TEXT, "output_chars": _INT},
        "fatal": {"error": _TEXT},
    },
    "check": {
        "sandbox": {"held": (list,)},
        "defined": {"problems": (list,), "callable": (bool,), "type": _TEXT},
        "test": {"index": _INT, "seen": (dict,)},
        "done": {"tests": _INT},
        "fatal": {"error": _TEXT},
    },
}


def parse(line: bytes, role: str, build: bool = True):
    """The message in one report line, or None when it is not a well-formed message of `role`
    (build=False: devices, dtypes and tensors checked but not built, see wire.loads)."""
    try:
        message = wire.loads(line, build=build)
    except wire.WireError:
        return None
    schema = SCHEMAS[role].get(message.get("kind")) if isinstance(message, dict) else None
    if schema is None or set(message) != set(schema) | {"kind"}:
        return None
    if not all(_fits(message[k], types) for k, types in schema.items()):
        return None
    return message


def _fits(value, types) -> bool:
    if types == (bool,):
        return isinstance(value, bool)
    return isinstance(value, types) and not isinstance(value, bool)


class Channel:
    """The child's end of the report pipe: one wire line per message.

    Lines are encoded with the builtins as they were at fork time, so a notebook that patches
    `isinstance` or `str` breaks only its own answers, not its report."""

    def __init__(self, fd: int):
        self.fd = fd
        self._builtins = dict(vars(builtins))

    def send(self, kind: str, **data) -> None:
        table = vars(builtins)
        current = dict(table)
        table.update(self._builtins)
        try:
            try:
                line = wire.dumps({"kind": kind, **data})
            except wire.WireError:
                line = wire.dumps({"kind": kind, **{k: _smaller(v) for k, v in data.items()}})
        finally:
            table.clear()
            table.update(current)
        _write_all(self.fd, (line + "\n").encode("ascii"))


def _smaller(value):
    """What is left of a value too large to send: its shape, so the judge can say so."""
    if isinstance(value, dict) and "value" in value:
        return {"too_large": True, "seconds": value.get("seconds")}
    if isinstance(value, str):
        return value[:20000]
    return value


def close_quietly(*fds) -> None:
    """Close each file descriptor, ignoring those already closed (parent and judge client)."""
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _write_all(fd: int, data: bytes, write=os.write) -> None:
    view = memoryview(data)
    while view:
        view = view[write(fd, view) :]


@dataclass
class Child:
    """The grader's view of one graded process (forked by a zygote)."""

    pid: int
    fd: int
    role: str
    pidfd: int = -1
    scratch: object = None
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
    overflow: bool = False
    messages: list = field(default_factory=list)
    forged: int = 0
    tests: list = field(default_factory=list)  # check processes: each test's report line, in order
    status: object = None  # wait status once it has exited

    def feed(self, data: bytes) -> list:
        """Take bytes from the pipe; return the new well-formed messages."""
        self.received += len(data)
        if self.received > MAX_REPORT_BYTES:
            self.overflow, self.buffer = True, b""
            return []
        self.buffer += data
        *lines, self.buffer = self.buffer.split(b"\n")
        new = []
        for line in lines:
            if not line.strip():
                continue
            message = parse(line, self.role, build=False)  # the parent: no torch
            if message is None or not self._in_order(message, line):
                self.forged += 1
                continue
            new.append(message)
            self.messages.append(message)
        return new

    def _in_order(self, message, line: bytes) -> bool:
        """A check process reports each test once, in order, and nothing after "done"; each test's
        line is kept as it came, for the judge to parse again."""
        if self.role != "check":
            return True
        if self.last("done") is not None:
            return False
        if message["kind"] == "test":
            if message["index"] != len(self.tests):
                return False
            self.tests.append(line.decode("utf-8"))
        if message["kind"] == "done" and message["tests"] != len(self.tests):
            return False
        return True

    def last(self, kind: str):
        found = [m for m in self.messages if m.get("kind") == kind]
        return found[-1] if found else None

    def signal(self, number: int) -> None:
        """Signal the process through its pidfd (never a recycled pid)."""
        try:
            signal.pidfd_send_signal(self.pidfd, number)
        except (ProcessLookupError, OSError):
            pass

    def kill(self, reason: str) -> None:
        if not self.killed_for:
            self.killed_for = reason
        self.signal(signal.SIGKILL)

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
        return (
            not self.killed_for
            and self.status is not None
            and os.WIFEXITED(self.status)
            and os.WEXITSTATUS(self.status) == 0
        )

    def close(self) -> None:
        close_quietly(self.fd, self.pidfd)
