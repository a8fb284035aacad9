"""A tripwire in check processes: student code that reaches for the grader's internals dies (grader).

A CPython audit hook (it cannot be removed once added) watches the few operations that
lead from a student's function to the check harness's memory: frames (`sys._getframe`
from student code, `f_back`, `tb_frame`, `gi_frame`), the garbage collector's object
lists, tracing and profiling, new audit hooks, ctypes, compiling or executing code,
building code or function objects, changing a function's code or defaults, and opening
/proc/*/mem, fd, map_files or pagemap. When one happens while student code is on the
stack (a frame whose code object was not loaded before any student code existed: file
names can be forged, code identity cannot), the process
writes one sealed "tripped" line naming the operation and kills itself with SIGKILL before
the operation returns, so the student's code never gets the result. The grader turns that
into a verdict of "tampered" with the operation named.

It is a tripwire, not a sandbox (PEP 578): it closes the known ways to a harness's secrets,
and the kernel isolation (isolation.py) does not depend on it.
"""
import os
import signal
import sys

SENSITIVE = frozenset({
    "sys._getframe", "sys._current_frames", "sys.settrace", "sys.setprofile", "sys.addaudithook",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents", "object.__getattr__", "object.__setattr__",
    "object.__delattr__", "code.__new__", "function.__new__", "compile", "exec", "open",
    "sys._getframemodulename", "sys.monitoring.register_callback",
})
PROC_SECRETS = ("/mem", "/fd", "/map_files", "/pagemap")
_CODE = {}  # id -> code object of every function loaded before student code: the trusted code


def _codes_of(code, found: dict) -> None:
    found[id(code)] = code
    for const in code.co_consts:
        if isinstance(const, type(code)) and id(const) not in found:
            _codes_of(const, found)


def _functions_of(value):
    if isinstance(value, type):
        for attr in list(vars(value).values()):
            yield from _functions_of(attr) if not isinstance(attr, type) else ()
    for inner in (value, getattr(value, "__func__", None), getattr(value, "fget", None)):
        code = getattr(inner, "__code__", None)
        if isinstance(code, type(_codes_of.__code__)):
            yield code


def remember_trusted_code() -> int:
    """In the zygote, before any student code exists: note every code object of every loaded
    module (functions, methods, module bodies of frozen importlib included)."""
    import importlib._bootstrap as boot
    import importlib._bootstrap_external as ext
    frame = sys._getframe()
    while frame is not None:  # the zygote's own stack (module body of __main__ included)
        _codes_of(frame.f_code, _CODE)
        frame = frame.f_back
    for module in list(sys.modules.values()) + [boot, ext]:
        for value in list(getattr(module, "__dict__", {}).values()):
            try:
                for code in _functions_of(value):
                    _codes_of(code, _CODE)
            except Exception:  # noqa: BLE001 - odd objects are simply not code
                continue
    return len(_CODE)


FRAME_EVENTS = ("sys._getframe", "object.__getattr__")
# Trusted functions that hand frames to their caller, and the stdlib modules that turn frames
# into text or names only (logging's caller lookup, traceback's stack formatting).
FRAME_GIVERS = (("inspect", ("currentframe", "stack", "getouterframes", "getinnerframes", "trace")),
                ("traceback", ("walk_stack", "walk_tb")), ("logging", ("currentframe",)))
TEXT_ONLY = ("/logging/__init__.py", "/traceback.py", "/warnings.py", "/linecache.py", "/typing.py", "/enum.py",
             "/collections/__init__.py")


def _giver_codes() -> set:
    import importlib
    found = set()
    for module, names in FRAME_GIVERS:
        mod = importlib.import_module(module)
        found |= {id(getattr(mod, n).__code__) for n in names if hasattr(getattr(mod, n, None), "__code__")}
    return found


def arm(send, encode) -> None:
    """Install the hook; `send(payload)` is the check's sealed writer, `encode` its field encoder.
    The trusted-code table then lives only in the hook's closure."""
    trusted = dict(_CODE)
    _CODE.clear()
    givers = _giver_codes()
    getframe, kill, getpid, sigkill = sys._getframe, os.kill, os.getpid, signal.SIGKILL
    importing = {id(c) for c in trusted.values() if c.co_filename.startswith("<frozen importlib")}
    state = {"busy": False}

    def is_trusted(code) -> bool:
        return trusted.get(id(code)) is code

    def text_only(frame) -> bool:
        """A frame request made for a trusted stdlib module that keeps only text (logging, traceback)."""
        while frame is not None and id(frame.f_code) in givers and is_trusted(frame.f_code):
            frame = frame.f_back
        return frame is not None and is_trusted(frame.f_code) and frame.f_code.co_filename.endswith(TEXT_ONLY)

    def student_on_stack(event) -> bool:
        frame = getframe(2)  # 0: this function, 1: the hook, 2: whoever caused the event
        if frame is None:
            return False
        if event in ("exec", "compile") and id(frame.f_code) in importing and is_trusted(frame.f_code):
            return False  # importing a module: its own code is untrusted once it runs
        if event in FRAME_EVENTS and text_only(frame):
            return False
        while frame is not None:
            if not is_trusted(frame.f_code):
                return True
            frame = frame.f_back
        return False

    sys.addaudithook(_hook(student_on_stack, send, encode, kill, getpid, sigkill))


def _relevant(event, args) -> bool:
    if event.startswith("ctypes."):
        return True
    if event not in SENSITIVE:
        return False
    if event == "open":
        path = str(args[0]) if args else ""
        return path.startswith("/proc/") and any(part in path for part in PROC_SECRETS)
    return True


def _hook(student_on_stack, send, encode, kill, getpid, sigkill):
    """The audit hook: on a relevant event with student code on the stack, report and die."""
    relevant, state = _relevant, {"busy": False}

    def hook(event, args):
        if state["busy"] or not relevant(event, args):
            return
        state["busy"] = True
        try:
            if student_on_stack(event):
                send(encode("tripped", event, repr(args)[:200]))
                kill(getpid(), sigkill)
        finally:
            state["busy"] = False
    return hook
