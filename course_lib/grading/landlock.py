"""Linux Landlock through ctypes: what a graded process
may read, write, connect to and signal (grader).

Landlock (Linux 5.13+) needs no privileges and stacks on the namespaces of `isolation.py`.
`restrict(...)` confines the calling process and everything it starts: reads only beneath
`read_dirs`, writes only beneath `write_dirs`; with ABI 4+ no TCP bind/connect when
`deny_tcp`; with ABI 6+ no signals to processes outside its own Landlock domain and no
abstract Unix sockets outside it. Set COURSE_GRADER_NO_LANDLOCK=1 to grade as if the
kernel had no Landlock (the tests do, to prove the fallback).
"""

import ctypes
import os
import platform

_SYS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446), "arm64": (444, 445, 446)}
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_WRITES = sum(1 << bit for bit in range(4, 13))  # remove, make char/dir/reg/sock/fifo/block/sym
_REFER, _TRUNCATE = 1 << 13, 1 << 14
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1 << 0, 1 << 1


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The kernel's Landlock ABI version, or 0 when Landlock cannot be used here."""
    if os.environ.get("COURSE_GRADER_NO_LANDLOCK") or platform.system() != "Linux":
        return 0
    numbers = _SYS.get(platform.machine())
    if not numbers:
        return 0
    try:
        version = _libc().syscall(
            numbers[0], None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION)
        )
    except (OSError, AttributeError):
        return 0
    return max(int(version), 0)


def _rights(abi: int) -> tuple:
    """(read rights, write rights) this ABI can handle."""
    write = _WRITE_FILE | _WRITES | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0)
    return _EXECUTE | _READ_FILE | _READ_DIR, write


def _ruleset(abi: int, handled_fs: int, deny_tcp: bool, scope: bool) -> int:
    net = (_NET_BIND_TCP | _NET_CONNECT_TCP) if deny_tcp and abi >= 4 else 0
    scoped = (_SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL) if scope and abi >= 6 else 0
    fields = (
        [handled_fs, net, scoped] if abi >= 6 else [handled_fs, net] if abi >= 4 else [handled_fs]
    )
    attr = (ctypes.c_uint64 * len(fields))(*fields)
    create = _SYS[platform.machine()][0]
    return _libc().syscall(
        create, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0)
    )


def _add_rule(ruleset: int, path: str, access: int) -> bool:
    """Allow `access` beneath `path`; a path that does not exist is skipped."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return True
    try:
        if not os.path.isdir(path):
            access &= _EXECUTE | _READ_FILE | _WRITE_FILE | _TRUNCATE
        rule = _PathBeneath(access, fd)
        add = _SYS[platform.machine()][1]
        return (
            _libc().syscall(
                add,
                ctypes.c_int(ruleset),
                ctypes.c_int(_RULE_PATH_BENEATH),
                ctypes.byref(rule),
                ctypes.c_uint32(0),
            )
            == 0
        )
    finally:
        os.close(fd)


def restrict(read_paths=None, write_paths=(), deny_tcp=False, scope=True) -> dict:
    """Confine this process and its children. `read_paths=None` leaves reading unrestricted.

    Returns what took effect: {"abi", "reads", "writes",
    "tcp", "signals"} (all False without Landlock).
    """
    abi = abi_version()
    done = {"abi": abi, "reads": False, "writes": False, "tcp": False, "signals": False}
    if abi < 1:
        return done
    read, write = _rights(abi)
    handled = write | (read if read_paths is not None else 0)
    ruleset = _ruleset(abi, handled, deny_tcp, scope)
    if ruleset < 0:
        return done
    try:
        rules = [(p, read) for p in read_paths or ()] + [(p, read | write) for p in write_paths]
        if not all(_add_rule(ruleset, path, access & handled) for path, access in rules):
            return done
        libc = _libc()
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return done
        if (
            libc.syscall(_SYS[platform.machine()][2], ctypes.c_int(ruleset), ctypes.c_uint32(0))
            != 0
        ):
            return done
    finally:
        os.close(ruleset)
    return dict(
        done,
        reads=read_paths is not None,
        writes=True,
        tcp=deny_tcp and abi >= 4,
        signals=scope and abi >= 6,
    )
