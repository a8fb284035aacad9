"""What a graded process says to the grader, and how the grader reads it (grader).

A notebook process reports plain JSON lines tagged with a random token: whatever it says
is the student's own answer, never a grade, so nothing more is needed.

A check process reports each test's outcome as one line authenticated with an HMAC whose
key never leaves the process: `S <seq> <hmac> <hex payload>`. The line is built only
with C-level primitives captured before any student code ran (bytes formatting, hex,
`_hashlib.hmac_digest`, `os.write`), so code that patches Python modules cannot alter it;
code that reads the pipe (e.g. by dup2) sees MACs, not the key, and cannot make new lines
or replay old ones (sequence numbers). The grader trusts only lines whose MAC and
sequence number are right; anything else is counted as forged.
"""
import binascii
import builtins
import hmac
import json
import os
import secrets
import signal
import time
from dataclasses import dataclass, field

MAX_REPORT_BYTES = 8 * 2**20


class Channel:
    """The child's end of the report pipe: JSON lines tagged with the token (notebook processes).

    Lines are encoded with the builtins as they were at fork time, so a notebook that patches
    `isinstance` or `str` breaks only its own answers, not its report."""

    def __init__(self, fd: int, token: str):
        self.fd, self.token = fd, token
        self._builtins = dict(vars(builtins))

    def send(self, kind: str, **data) -> None:
        table = vars(builtins)
        current = dict(table)
        table.update(self._builtins)
        try:
            line = (json.dumps({"t": self.token, "kind": kind, **data}, default=repr) + "\n").encode()
        finally:
            table.clear()
            table.update(current)
        _write_all(self.fd, line)


def _write_all(fd: int, data: bytes, write=os.write) -> None:
    view = memoryview(data)
    while view:
        view = view[write(fd, view):]


def sealed_writer(fd: int, key: bytes):
    """A `send(payload_bytes)` that MACs and writes, made of references taken now (before any
    student code runs); it is kept only in the check harness's local variables."""
    digest, hexlify, write, count = hmac.digest, binascii.hexlify, os.write, [0]
    try:
        from _hashlib import hmac_digest as digest  # C: cannot be patched from Python
    except ImportError:  # pragma: no cover - Python without OpenSSL
        pass

    def send(payload: bytes) -> None:
        seq = count[0]
        count[0] = seq + 1
        body = b"%d %s" % (seq, hexlify(payload))
        mac = hexlify(digest(key, body, "sha256"))
        _write_all(fd, b"S " + mac + b" " + body + b"\n", write)
    return send


def encode_fields(*fields) -> bytes:
    """Payload of a sealed line: fields separated by NUL, text as UTF-8 (C-level operations only)."""
    return b"\0".join(f if isinstance(f, bytes) else str(f).encode("utf-8", "replace") for f in fields)


@dataclass
class Child:
    """The grader's view of one graded process (forked by a zygote)."""
    pid: int
    fd: int
    token: str
    role: str
    pidfd: int = -1
    key: bytes = b""
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
    messages: list = field(default_factory=list)
    sealed: list = field(default_factory=list)  # payloads of authenticated lines, in order
    forged: int = 0
    held: dict = field(default_factory=dict)  # the isolation it reported
    status: object = None  # wait status once it has exited

    def feed(self, data: bytes) -> list:
        """Take bytes from the pipe; return the new trusted JSON messages."""
        self.received += len(data)
        if self.received > MAX_REPORT_BYTES:
            return []
        self.buffer += data
        *lines, self.buffer = self.buffer.split(b"\n")
        new = []
        for line in lines:
            if line.startswith(b"S "):
                self._sealed(line)
            elif line.strip():
                message = self._json(line)
                if message is not None:
                    new.append(message)
        self.messages.extend(new)
        return new

    def _json(self, line: bytes):
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if isinstance(message, dict) and message.get("t") == self.token:
            return message
        self.forged += 1
        return None

    def _sealed(self, line: bytes) -> None:
        parts = line.split(b" ")
        if len(parts) != 4 or not self.key:
            self.forged += 1
            return
        _, mac, seq, payload = parts
        body = seq + b" " + payload
        good = hmac.compare_digest(binascii.hexlify(hmac.digest(self.key, body, "sha256")), mac)
        if not good or seq != str(len(self.sealed)).encode():
            self.forged += 1
            return
        try:
            self.sealed.append(binascii.unhexlify(payload).split(b"\0"))
        except binascii.Error:
            self.forged += 1

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
        return not self.killed_for and self.status is not None and os.WIFEXITED(self.status) \
            and os.WEXITSTATUS(self.status) == 0

    def close(self) -> None:
        for fd in (self.fd, self.pidfd):
            try:
                os.close(fd)
            except OSError:
                pass


def new_secrets() -> tuple:
    """(token for JSON lines, key for sealed lines)."""
    return secrets.token_hex(12), secrets.token_bytes(32)
