"""Linux Landlock through ctypes: a graded process may write only inside its scratch folder (grader).

Landlock (Linux 5.13+) needs no privileges. Where the kernel lacks it, `restrict_writes`
returns False and the grader falls back to checking its own files after every process
(see `guard.py`). Set COURSE_GRADER_NO_LANDLOCK=1 to force that fallback.
"""
import ctypes
import os
import platform

_SYS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446), "arm64": (444, 445, 446)}
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
# Filesystem rights that change something; reading and executing stay allowed everywhere.
_WRITE_FILE, _REMOVE_DIR, _REMOVE_FILE, _MAKE_CHAR, _MAKE_DIR, _MAKE_REG, _MAKE_SOCK, _MAKE_FIFO, \
    _MAKE_BLOCK, _MAKE_SYM = (1 << 1), (1 << 4), (1 << 5), (1 << 6), (1 << 7), (1 << 8), (1 << 9), (1 << 10), \
    (1 << 11), (1 << 12)
_REFER, _TRUNCATE = 1 << 13, 1 << 14
_SCOPE_SIGNAL = 1 << 1


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
        version = _libc().syscall(numbers[0], None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(int(version), 0)


def restrict_writes(writable_dirs, writable_files=()) -> bool:
    """Confine this process (and its children) to writing under `writable_dirs`; signals to
    processes outside the sandbox are refused too (ABI 6+). Returns whether it took effect."""
    abi = abi_version()
    if abi < 1:
        return False
    create, add_rule, restrict = _SYS[platform.machine()]
    handled = (_WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE_CHAR | _MAKE_DIR | _MAKE_REG | _MAKE_SOCK
               | _MAKE_FIFO | _MAKE_BLOCK | _MAKE_SYM)
    if abi >= 2:
        handled |= _REFER
    if abi >= 3:
        handled |= _TRUNCATE
    scoped = _SCOPE_SIGNAL if abi >= 6 else 0
    fields = [handled, 0, scoped] if abi >= 6 else [handled, 0] if abi >= 4 else [handled]
    attr = (ctypes.c_uint64 * len(fields))(*fields)
    libc = _libc()
    ruleset = libc.syscall(create, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        return False
    try:
        rules = [(d, handled) for d in writable_dirs] + [(f, _WRITE_FILE | (_TRUNCATE if abi >= 3 else 0))
                                                          for f in writable_files]
        for path, access in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                rule = _PathBeneath(access, fd)
                if libc.syscall(add_rule, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                                ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
                    return False
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return False
        return libc.syscall(restrict, ctypes.c_int(ruleset), ctypes.c_uint32(0)) == 0
    finally:
        os.close(ruleset)
