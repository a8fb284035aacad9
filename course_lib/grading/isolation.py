"""What a process that runs student code can reach, enforced by the kernel (grader).

Every graded process is forked from a warm zygote (see zygote.py) and, before any student
code runs, enters its own:

- user namespace (its "root" has no power outside; when the grader runs as root the
  process first becomes `nobody`, so RLIMIT_NPROC applies to it);
- mount namespace whose root is a fresh tmpfs holding read-only binds of the system
  (/usr, /etc, ...), the Python installation and course_lib with the answer key replaced
  by an empty folder; its scratch folder, /tmp and /dev/shm are private size-capped
  tmpfs; nothing else of the machine (the teacher's files, other submissions, the
  gradebook) exists there;
- network namespace with only its own loopback (chapter 07's gloo runs use it);
- PID and IPC namespaces: it sees and can signal or trace only its own processes, and
  when its first process ends the kernel kills every process it started;
- rlimits (address space, file size, process count, no core dumps) and all
  capabilities dropped; Landlock on top (writes only in its scratch folder, /tmp, /dev/shm).

Where the kernel refuses namespaces (or COURSE_GRADER_NO_NAMESPACES=1), the fallback is
Landlock alone (reads and writes allow-listed, TCP denied, signals scoped; by ABI) plus
rlimits and the zygote killing orphans; `guarantees()` says which promises then do not
hold, and the grader writes that into the gradebook summary.
"""

import ctypes
import fcntl
import os
import platform
import resource
import shutil
import signal
import socket
import struct
import sys
import tempfile
from pathlib import Path

from . import landlock

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC = 1, 2, 4, 8, 32, 4096, 16384
MS_PRIVATE, MNT_DETACH = 1 << 18, 2
_KEEP_FLAGS = {
    os.ST_NOSUID: MS_NOSUID,
    os.ST_NODEV: MS_NODEV,
    os.ST_NOEXEC: MS_NOEXEC,
    os.ST_NOATIME: 1024,
    os.ST_NODIRATIME: 2048,
    os.ST_RELATIME: 1 << 21,
}
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "arm64": 41}
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_CAPBSET_DROP = 1, 4, 24
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
DEVICES = ("null", "zero", "full", "random", "urandom")
NOBODY = 65534
NAMESPACES = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID

# What each missing mechanism costs: shown once in the gradebook summary.
LOST_WITHOUT = {
    "namespaces": [
        "processes of different submissions share one PID space (Landlock ABI 6+ still stops "
        "signals between them)",
        "/dev/shm and abstract sockets are shared between submissions",
        "a submission's total disk use is not capped (each file still is)",
        "no private network: TCP is denied (Landlock ABI 4+), so chapter 07's DDP runs fail; "
        "UDP is not blocked",
    ],
    "landlock": [
        "without namespaces nothing stops a graded process from reading the answer key, other "
        "submissions or the teacher's files, or from reaching the network"
    ],
    "root_nproc": [
        "the grader runs as root, so the process-count limit (RLIMIT_NPROC) is not enforced"
    ],
    "proc_environ": [
        "a graded process shares the grader's user, so it can read /proc/PID/environ of that "
        "user's other processes (the teacher's shell: keep tokens out of its environment); the "
        "grader itself is not dumpable while it grades, so its own environment stays closed"
    ],
}


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(source, target, fstype=None, flags=0, data=None) -> None:
    enc = lambda s: None if s is None else str(s).encode()
    _check(
        _libc().mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
        f"mount {target}",
    )


def _prctl(option: int, value: int) -> None:
    _libc().prctl(option, value, 0, 0, 0)


def namespaces_wanted() -> bool:
    return platform.system() == "Linux" and not os.environ.get("COURSE_GRADER_NO_NAMESPACES")


# ---------------------------------------------------------------- the view of the file system
def python_dirs() -> list:
    """Folders the interpreter and its packages live in (read-only in every graded process)."""
    dirs = {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))),
    }
    dirs |= {
        p
        for p in sys.path
        if p and os.path.isdir(p) and ("-packages" in p or p.startswith(tuple(dirs)))
    }
    found = sorted({os.path.realpath(d) for d in dirs if os.path.isdir(d)})
    return [d for d in found if not any(d.startswith(other + "/") for other in found)]


def course_dir() -> str:
    import course_lib

    return os.path.dirname(os.path.realpath(course_lib.__file__))


def readable_paths(scratch: str) -> list:
    """Everything a graded process may read (Landlock
    fallback): system, Python, course_lib but the key."""
    course = course_dir()
    entries = [
        os.path.join(course, e) for e in os.listdir(course) if e not in ("key", "__pycache__")
    ]
    return [*SYSTEM_DIRS, "/dev", "/proc", "/sys", *python_dirs(), *entries, scratch]


def check_unreachable(path) -> None:
    """ValueError when a graded process could read `path` (a teacher's answer key): inside the
    course_lib or Python folders that every graded process may read."""
    real = os.path.realpath(path)
    for folder in (course_dir(), *python_dirs(), *SYSTEM_DIRS):
        if real == folder or real.startswith(folder.rstrip("/") + "/"):
            raise ValueError(
                f"the key {path} lies in {folder}, which every graded process may read; "
                "release the assignment into a folder of your own"
            )


def _remount_readonly(target: str) -> None:
    keep = os.statvfs(target).f_flag
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY
    for st, ms in _KEEP_FLAGS.items():
        if keep & st:
            flags |= ms
    mount(None, target, None, flags)


def open_sources() -> list:
    """(path, symlink target or None, O_PATH fd or None) of everything bound read-only, opened
    while the process still has its own rights (a parent folder may be closed to `nobody`)."""
    found = []
    for path in (
        *SYSTEM_DIRS,
        "/sys",
        *python_dirs(),
        course_dir(),
        *(f"/dev/{d}" for d in DEVICES),
    ):
        if os.path.islink(path):
            found.append((path, os.readlink(path), None))
        elif os.path.exists(path):
            found.append((path, None, os.open(path, os.O_PATH | os.O_CLOEXEC)))
    return found


def _bind(root: str, source: str, link, fd, writable=False) -> None:
    """Show `source` at the same path inside `root` (symbolic links are copied as links)."""
    target = root + source
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if link is not None:
        if not os.path.lexists(target):
            os.symlink(link, target)
        return
    if os.path.lexists(target) and os.path.ismount(target):
        return
    if os.path.isdir(f"/proc/self/fd/{fd}"):
        os.makedirs(target, exist_ok=True)
    else:
        open(target, "a").close()
    mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | MS_REC)
    if not writable:
        _remount_readonly(target)


def _tmpfs(target: str, mb: int, mode: str = "1777") -> None:
    os.makedirs(target, exist_ok=True)
    mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, f"mode={mode},size={mb}m")


def build_root(scratch: str, disk_mb: int, sources: list) -> str:
    """A new root: read-only system and Python, course_lib without its key, a private scratch."""
    root = os.path.join(scratch, ".root")
    os.makedirs(root, mode=0o700, exist_ok=True)
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=16m")
    _tmpfs(root + "/dev/shm", disk_mb)
    _tmpfs(root + "/tmp", disk_mb)  # before the binds: course_lib itself may live under /tmp
    for path, link, fd in sources:
        _bind(root, path, link, fd, writable=path.startswith("/dev/"))
    _tmpfs(root + course_dir() + "/key", 1, "555")
    _tmpfs(root + scratch, disk_mb, "777")
    for sub in ("work", "tmp", "home"):  # the scratch copy: what the grader put there, nothing else
        shutil.copytree(os.path.join(scratch, sub), root + scratch + "/" + sub, symlinks=True)
    owner = 1 if _mapped(1) else 0  # the unprivileged user the graded process becomes
    for dirpath, dirnames, filenames in os.walk(root + scratch):
        for name in [dirpath] + [os.path.join(dirpath, n) for n in dirnames + filenames]:
            os.lchown(name, owner, owner)
    os.makedirs(root + "/proc", exist_ok=True)
    return root


def pivot(root: str) -> None:
    """Make `root` the file system's root and drop every trace of the old one."""
    old = os.path.join(root, ".old")
    os.makedirs(old, exist_ok=True)
    _check(
        _libc().syscall(_PIVOT_ROOT[platform.machine()], root.encode(), old.encode()), "pivot_root"
    )
    os.chdir("/")
    _check(_libc().umount2(b"/.old", MNT_DETACH), "umount old root")
    os.rmdir("/.old")
    _remount_readonly("/")


def loopback_up() -> None:
    """Bring up `lo` in a fresh network namespace: a private loopback, nothing else."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack("16sH22x", fcntl.ioctl(s, 0x8913, struct.pack("16sH22x", b"lo", 0)))[
            1
        ]
        fcntl.ioctl(s, 0x8914, struct.pack("16sH22x", b"lo", flags | 1))


# ---------------------------------------------------------------- entering
def _map_ids(pid: int) -> None:
    """From outside (the relay): map the new namespace's root to ours; as root also map its
    user 1 to `nobody`, which the graded process becomes (RLIMIT_NPROC never binds root)."""
    uid, gid = os.geteuid(), os.getegid()
    extra = f"1 {NOBODY} 1\n" if uid == 0 else ""
    if uid != 0:
        with open(f"/proc/{pid}/setgroups", "w") as f:
            f.write("deny\n")
    with open(f"/proc/{pid}/uid_map", "w") as f:
        f.write(f"0 {uid} 1\n{extra}")
    with open(f"/proc/{pid}/gid_map", "w") as f:
        f.write(f"0 {gid} 1\n{extra}")


class IdHandshake:
    """Two pipes: the forked child says "unshared", the zygote (outside, as root allowed to map
    any id) writes its id maps and says "go". Without it the child could only map itself."""

    def __init__(self):
        self.ready_r, self.ready_w = os.pipe()
        self.go_r, self.go_w = os.pipe()

    def parent(self, pid: int) -> None:
        """In the zygote right after fork: map the child's ids once it has unshared."""
        os.close(self.ready_w)
        os.close(self.go_r)
        ok = os.read(self.ready_r, 1) == b"1"
        try:
            if ok:
                _map_ids(pid)
        except OSError:
            ok = False
        try:
            os.write(self.go_w, b"1" if ok else b"0")
        except OSError:
            pass
        os.close(self.ready_r)
        os.close(self.go_w)

    def child(self) -> None:
        """In the child: unshare every namespace, wait for the id maps."""
        os.close(self.ready_r)
        os.close(self.go_w)
        _check(_libc().unshare(ctypes.c_int(NAMESPACES)), "unshare")
        os.write(self.ready_w, b"1")
        if os.read(self.go_r, 1) != b"1":
            raise OSError("the user namespace's id map was refused")
        os.close(self.ready_w)
        os.close(self.go_r)


def enter_namespaces(scratch: str, disk_mb: int, handshake: IdHandshake) -> None:
    """Two processes: a relay in the new namespaces and (returning here) PID 1 of the new
    PID namespace, inside its own root, as an unprivileged user."""
    handshake.child()
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    root = build_root(scratch, disk_mb, open_sources())
    pid = os.fork()
    if pid:
        relay(pid)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    pivot(root)
    loopback_up()
    if _mapped(1):
        os.setgroups([])
        os.setresgid(1, 1, 1)
        os.setresuid(1, 1, 1)
    drop_capabilities()


def _mapped(uid: int) -> bool:
    with open("/proc/self/uid_map") as f:
        return any(line.split()[0] == str(uid) for line in f if line.strip())


def drop_capabilities() -> None:
    """No capability left, none regained by exec: the namespace's root is an ordinary user."""
    libc = _libc()
    for cap in range(64):
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    libc.syscall(
        126 if platform.machine() == "x86_64" else 91, ctypes.byref(header), ctypes.byref(data)
    )


def relay(child_pid: int) -> None:
    """Outside the new PID namespace: pass SIGINT on to its first process, then end as it ended."""
    signal.signal(signal.SIGINT, lambda *_: os.kill(child_pid, signal.SIGINT))
    while True:
        try:
            _, status = os.waitpid(child_pid, 0)
            break
        except ChildProcessError:
            os._exit(70)
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    os._exit(os.WEXITSTATUS(status))


def set_limits(limits) -> None:
    """Address space, file size, process count; no core dumps."""
    used = _vm_bytes()
    if used:
        budget = used + limits.memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (budget, budget))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb * 2**20, limits.file_mb * 2**20))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))


def _vm_bytes() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def enter(scratch: str, limits, handshake) -> dict:
    """In a freshly forked child: isolate it; returns what holds. With namespaces the caller
    continues in a new process (PID 1 of the namespace); the forked child stays behind as relay."""
    held = {"namespaces": False}
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if handshake is not None:
        enter_namespaces(scratch, limits.disk_mb, handshake)
        held["namespaces"] = True
        writes = [scratch, "/tmp", "/dev/shm", *(f"/dev/{d}" for d in DEVICES)]
        held.update(landlock.restrict(None, writes, deny_tcp=False, scope=True))
    else:
        os.setpgid(0, 0)
        writes = [scratch, "/dev/shm", *(f"/dev/{d}" for d in DEVICES)]
        held.update(landlock.restrict(readable_paths(scratch), writes, deny_tcp=True, scope=True))
        drop_capabilities()  # as root: no CAP_SYS_PTRACE to read the (undumpable) grader's /proc
    set_limits(limits)
    return held


def guarantees(info: dict) -> list:
    """The promises that do not hold on this machine, in words (empty when all hold)."""
    lost = []
    if not info.get("namespaces"):
        lost += LOST_WITHOUT["namespaces"] + [
            f"(namespaces unavailable: {info.get('namespace_error', 'off')})"
        ]
        if not info.get("landlock_reads"):
            lost += LOST_WITHOUT["landlock"]
        if info.get("landlock_abi", 0) < 6:
            lost.append(
                "graded processes can signal each other (no Landlock signal scoping before ABI 6)"
            )
        if os.geteuid() == 0:
            lost += LOST_WITHOUT["root_nproc"]
        lost += LOST_WITHOUT["proc_environ"]
    return lost


def probe(scratch_root: Path) -> dict:
    """Try the namespaces once in a throwaway child:
    {"namespaces": bool, "namespace_error": str}."""
    info = {"namespaces": False, "landlock_abi": landlock.abi_version()}
    info["landlock_reads"] = info["landlock_abi"] >= 1
    if not namespaces_wanted():
        info["namespace_error"] = (
            "switched off (COURSE_GRADER_NO_NAMESPACES)"
            if platform.system() == "Linux"
            else f"not Linux ({platform.system()})"
        )
        return info
    scratch = Path(tempfile.mkdtemp(prefix="probe-", dir=scratch_root))  # private, 0700
    for sub in ("work", "tmp", "home"):
        (scratch / sub).mkdir(0o700)
    read, write = os.pipe()
    handshake = IdHandshake()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            enter_namespaces(str(scratch), 8, handshake)
            os._exit(0)
        except BaseException as err:  # noqa: BLE001 - the reason goes to the parent
            os.write(write, f"{type(err).__name__}: {err}"[:300].encode())
            os._exit(1)
    os.close(write)
    handshake.parent(pid)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(read, "rb") as f:
        error = f.read().decode(errors="replace")
    shutil.rmtree(scratch, ignore_errors=True)
    info["namespaces"] = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    if not info["namespaces"]:
        info["namespace_error"] = error or f"probe ended with status {status}"
    return info
