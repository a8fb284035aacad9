"""The zygote: the warm fork server from which every graded process is forked (zygote).

    python -m course_lib.grading.zygote SOCKET_FD SCRATCH_ROOT [JUDGE_IN_FD JUDGE_OUT_FD]

The grader starts one fresh interpreter, which imports torch and the public course (chapters,
engine, checks) once for every notebook and check process of the run, and for the judge: given the
judge's pipes, it forks the judge (judge.run) right after those imports and torch's first use,
before matplotlib, the tests' warm-ups and any job; the judge imports the answer key in its own
process. The zygote never imports the answer key and never reads a submission. It warms up twice,
with public data only: the visible tests' reference data (for the notebooks' own `check` cells) and
each needed test's run half once on a function that does nothing (for the check processes); a job's
content (cells, source, test inputs) is read by the forked child itself. It starts with every GPU
hidden, so a graded process behaves the same on a GPU machine as on a CPU-only one and never
inherits a CUDA context ("Cannot re-initialize CUDA in forked subprocess"). For each job the grader
sends a small JSON message (the job file's path, the role, the scratch folder, the limits) and the
write end of its report pipe; the zygote forks, and sends back the child's pid, a pidfd to signal it
by, and later its exit status. No pickle: every message is JSON. Its memory is mapped in huge pages
once it is warm (hugepages.py): forks and exits of graded processes get cheaper.
"""

import gc
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import traceback
import warnings
from pathlib import Path

from .. import processes
from . import environment, hugepages
from .isolation import _PR_SET_PDEATHSIG, _prctl

_PR_SET_CHILD_SUBREAPER = 36
MAX_MESSAGE = 1 << 20
# What the zygote warms for each kind of graded process (functions of warmup.py, public data only):
# a notebook's own `check` cells find the visible tests' references ready; a check process finds
# each test's run half (rigs, loaders, dispatch modes) already used once.
WARM_UPS = {"notebook": "visible_references", "check": "warm_run_halves"}
# After the last warm-up (and its answer: graded notebooks already run), the zygote's memory is
# collapsed into huge pages: each later fork and exit handles ~130 page-table entries, not ~65,000.
LAST_WARM_UP = "check"
HIDDEN_GPUS = environment.FIXED  # every GPU hidden, the course's switches (environment.py)


def send(sock, message, fds=()) -> None:
    socket.send_fds(sock, [json.dumps(message).encode()], list(fds))


def receive(sock):
    """(message, fds) or (None, []) when the other side is gone."""
    data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 4)
    return (json.loads(data) if data else None), fds


# ---------------------------------------------------------------- the grader's side
class ZygoteClient:
    """The grader's handle on the zygote process."""

    def __init__(self, scratch_root: Path, env=None, judge_fds=()):
        """`judge_fds`: the judge's ends of its two pipes (judge.judge_pipes); the zygote then
        forks the judge once torch and the public course are imported, before any job."""
        self.scratch_root = Path(scratch_root)
        environment.check_private(self.scratch_root)  # its cwd: nothing planted there is imported
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # the allow-list alone, never the grader's environment (a token in the teacher's shell);
        # graded notebooks speak their own edition's language, never the teacher's COURSE_LANG
        environ = environment.graded_environment(self.scratch_root, env)
        environ = hugepages.with_tunable(environ)  # its own heap only: it takes the tunable out
        try:
            self.process = subprocess.Popen(
                environment.python_command(
                    "-m",
                    "course_lib.grading.zygote",
                    str(theirs.fileno()),
                    str(scratch_root),
                    *map(str, judge_fds),
                ),
                pass_fds=[theirs.fileno(), *judge_fds],
                env=environ,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                cwd=str(scratch_root),
            )
        finally:
            theirs.close()
            for fd in judge_fds:  # the zygote (then the judge alone) holds them now
                os.close(fd)
        self.sock = ours
        self.exits = {}
        self.info = None

    def request(self, message, fds=()):
        """Send and wait for the answer (other messages that arrive meanwhile are kept)."""
        send(self.sock, message, fds)
        while True:
            reply, got = receive(self.sock)
            if reply is None:
                raise RuntimeError(f"the zygote died (exit status {self.process.wait()})")
            if reply[0] == "exit":
                self.exits[reply[1]] = reply[2]
                continue
            return reply, got

    def hello(self) -> dict:
        if self.info is None:
            reply, _ = self.request(["hello"])
            self.info = reply[1]
        return self.info

    def spawn(self, job: dict, report_fd: int) -> tuple:
        """Fork a graded process for `job` (file, role, scratch, limits); returns (pid, pidfd)."""
        reply, fds = self.request(["spawn", job], [report_fd])
        return reply[1], fds[0]

    def warm(self, kind: str, what: list) -> None:
        """Warm the zygote for one kind of process (WARM_UPS), then freeze. The list goes through a
        file: a test's inputs (a profile's trace, say) outgrow one socket message."""
        path = self.scratch_root / f"warm-{kind}.json"
        environment.write_private(path, json.dumps(what))
        try:
            self.request(["warm", kind, str(path)])
        finally:
            path.unlink(missing_ok=True)

    def poll(self) -> dict:
        """Exit statuses that arrived: {pid: wait status}."""
        self.sock.setblocking(False)
        try:
            while True:
                try:
                    reply, _ = receive(self.sock)
                except BlockingIOError:
                    break
                if reply is None:
                    raise RuntimeError("the zygote died (a graded process killed it?)")
                if reply[0] == "exit":
                    self.exits[reply[1]] = reply[2]
        finally:
            self.sock.setblocking(True)
        exits, self.exits = self.exits, {}
        return exits

    def close(self) -> None:
        try:
            self.sock.close()
        finally:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()


# ---------------------------------------------------------------- the zygote's side
def warm_common(between=None) -> None:
    """Every course_lib module but the key and the grader, widgets, torch's first use; then
    `between()` (the judge's fork: all it needs is there); then matplotlib and the digits."""
    from .warmup import draw_and_read, import_everything, torch_first_use

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import_everything()
        torch_first_use()
        if between is not None:
            between()
        draw_and_read()


class Zygote:
    """The fork server's loop."""

    def __init__(self, sock, scratch_root: Path, judge_fds=()):
        self.sock, self.scratch_root = sock, Path(scratch_root)
        self.jobs, self.pidfds = {}, {}
        self.info = {}
        self.selector = None
        self.judge_fds, self.judge_pid = list(judge_fds), None

    def prepare(self) -> None:
        from . import child, isolation, sandbox  # noqa: F401 - loaded before any fork

        # the probe first: its throwaway child is forked while this process is still small
        self.info = isolation.probe(self.scratch_root)
        self.info["pid"] = os.getpid()
        import torch

        torch.set_num_threads(1)
        warm_common(between=self.fork_judge)  # the judge prepares while the zygote draws
        if "course_lib.key" in sys.modules:  # never: the zygote imports the public course only
            raise RuntimeError("the answer key was imported in a grading zygote")
        if "course_lib.zh" in sys.modules:  # it would make every graded notebook Chinese
            raise RuntimeError("the Chinese edition's switch was imported in a grading zygote")
        gc.freeze()  # whatever is forked from here on finds every object made so far frozen

    def fork_judge(self) -> None:
        """Fork the judge (judge.run) from this process while it holds torch and the public
        course only: it imports the answer key itself, after the fork, so the key is never in
        this process or in anything forked from it later, and the run pays torch's import once.
        The judge dies with this process, as this process dies with the grader."""
        if not self.judge_fds:
            return
        if "course_lib.key" in sys.modules:  # never: checked again at the end of prepare()
            raise RuntimeError("the answer key was imported in a grading zygote")
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                self.sock.close()
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):  # as the judge started by the grader: no terminal output
                    os.dup2(null, fd)
                from .judge import run

                run(*self.judge_fds)
            except BaseException:  # noqa: BLE001 - the grader sees the pipe close and restarts it
                code = 70
            finally:
                os._exit(code)
        self.judge_pid = pid
        self.close_judge_fds()

    def close_judge_fds(self) -> None:
        for fd in self.judge_fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.judge_fds = []

    def warm(self, kind: str, what: list) -> None:
        """One of WARM_UPS on `what`, then the heap is frozen (children do not copy it on gc)."""
        from . import warmup

        getattr(warmup, WARM_UPS[kind])(what)
        gc.freeze()  # no full pass first: the warm-ups leave next to no garbage (see main)

    def serve(self) -> None:
        """Answer the grader's messages; a job's pidfd wakes the loop the moment that job ends."""
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.sock, selectors.EVENT_READ)
        while True:
            for key, _ in self.selector.select(0.05):
                if key.fileobj is not self.sock:
                    continue  # a job ended: reap() below reports it
                message, fds = receive(self.sock)
                if message is None:
                    os._exit(0)
                self.handle(message, fds)
            self.reap()

    def handle(self, message, fds) -> None:
        kind = message[0]
        if kind == "hello":
            send(self.sock, ["hello", self.info])
        elif kind == "warm":
            self.warm(message[1], json.loads(Path(message[2]).read_text(encoding="utf-8")))
            send(self.sock, ["warmed"])
            if message[1] == LAST_WARM_UP:  # after the answer: a spawn asked meanwhile waits
                hugepages.collapse()
        elif kind == "spawn":
            self.fork(message[1], fds[0])

    def fork(self, job: dict, report_fd: int) -> None:
        """Fork one graded process; the child reads
        its job's file itself (the zygote never does)."""
        from .isolation import IdHandshake
        from .sandbox import run_child

        handshake = IdHandshake() if self.info.get("namespaces") else None
        pid = os.fork()
        if pid == 0:
            self.sock.close()
            run_child(job, report_fd, handshake)  # never returns
        os.close(report_fd)
        self.jobs[pid] = job.get("id")
        pidfd = os.pidfd_open(pid)
        send(
            self.sock, ["spawned", pid], [pidfd]
        )  # the grader goes on while the child isolates itself
        self.pidfds[pid] = pidfd
        self.selector.register(pidfd, selectors.EVENT_READ)
        if handshake is not None:
            handshake.parent(pid)

    def reap(self) -> None:
        """Report jobs that ended; orphans a job left behind (we are their subreaper) are killed."""
        ended = False
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid == self.judge_pid:  # the judge ended (the grader closed its pipe)
                self.judge_pid = None
            elif pid in self.jobs:
                del self.jobs[pid]
                pidfd = self.pidfds.pop(pid)
                self.selector.unregister(pidfd)
                os.close(pidfd)
                send(self.sock, ["exit", pid, status])
                ended = True
        if ended or not self.info.get("namespaces"):
            self.kill_orphans()

    def kill_orphans(self) -> None:
        for pid in self.children():
            if pid in self.jobs or pid == self.judge_pid:
                continue
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    @staticmethod
    def children() -> list:
        """Pids of this process's children (processes.children)."""
        return processes.children()


def main(argv) -> None:
    # The collector stays off in the zygote: its imports and warm-ups make about 10**6 objects and
    # next to no garbage, and each full pass over them (several while torch is imported) cost
    # 0.1-0.3 s on the path to the first graded process. Each warm-up ends in gc.freeze(); every
    # process forked from here turns the collector back on (sandbox.run_child, judge.serve).
    gc.disable()
    hugepages.drop_tunable()  # glibc read it at start; graded processes and their children never
    fd, scratch_root, judge_fds = int(argv[0]), argv[1], [int(a) for a in argv[2:4]]
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() == 1:
        os._exit(70)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock = socket.socket(fileno=fd)
    zygote = Zygote(sock, Path(scratch_root), judge_fds)
    try:
        zygote.prepare()
    except BaseException:  # noqa: BLE001 - tell the grader why, then stop
        zygote.info = {"error": traceback.format_exc(limit=6)[-3000:]}
    zygote.close_judge_fds()  # not forked: the grader's judge sees its pipe close, starts afresh
    zygote.serve()


if __name__ == "__main__":
    main(sys.argv[1:])
