"""Running learner code inside a check: a time limit, errors turned into text, and `observe`, which
runs a test's run half and returns what it saw as plain data (the learner's check and the grader's
child process both call it)."""

import functools
import signal
import threading
import time
import traceback
from contextlib import contextmanager

from ..collector import collector_paused


class CheckTimeout(BaseException):
    """Raised inside learner code that ran past the check's time limit.

    A BaseException (like KeyboardInterrupt), so a learner's `except Exception:` cannot swallow it.
    """


@functools.cache
def warm_up() -> None:
    """Import what torch loads lazily on first use, once, before any timed check (all chapters).

    The first optimizer or dispatch mode imports torch._dynamo (seconds); an alarm that fires
    inside that import leaves it half done and breaks every later check in the process. The
    collector is paused meanwhile: the import's ~10**5 new objects set off full collections of
    everything torch holds, which free nothing (~0.3 of its ~1.1 CPU-s).
    """
    with collector_paused():
        import torch._dynamo  # noqa: F401


REPEAT_S = (
    0.5  # after the limit, the alarm repeats: even a bare `except:` in a loop is interrupted again
)


@contextmanager
def time_limit(seconds: float):
    """Interrupt the block after `seconds` (SIGALRM on the main thread of POSIX systems), and again
    every REPEAT_S seconds while it keeps running.

    Elsewhere (Windows, non-main threads) no limit is enforced; callers also compare the elapsed
    time with the limit, and the grader has its own per-cell and per-submission limits in
    separate processes.
    """
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable or seconds is None:
        yield
        return
    active = [True]

    def on_alarm(signum, frame):
        if active[0]:
            raise CheckTimeout(f"stopped after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds, REPEAT_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        active[0] = False
        signal.signal(signal.SIGALRM, previous)


def _is_library(filename: str) -> bool:
    """Frames of torch, the standard library or course_lib are noise to a learner."""
    return any(
        part in filename for part in ("site-packages", "course_lib", "/lib/python", "<frozen")
    )


def describe_exception(err: BaseException, limit: int = 3) -> str:
    """'TypeError: ...' plus the last few frames, for a learner to read."""
    frames = [f for f in traceback.extract_tb(err.__traceback__) if not _is_library(f.filename)][
        -limit:
    ]
    where = "; ".join(f"line {f.lineno} in {f.name}: {(f.line or '').strip()}" for f in frames)
    text = f"{type(err).__name__}: {err}".strip()
    if len(text) > 600:
        text = text[:600] + " ..."
    return f"{text} ({where})" if where else text


def is_stub(err: BaseException, candidate) -> bool:
    """True when `err`, or an error it was raised while handling, is the untouched stub's
    NotImplementedError raised by the learner's own function (not by code it called).
    Tests that catch RuntimeError (NotImplementedError's parent) thus still see the stub."""
    while err is not None:
        if isinstance(err, NotImplementedError) and err.__traceback__ is not None:
            tb = err.__traceback__
            while tb.tb_next is not None:
                tb = tb.tb_next
            if tb.tb_frame.f_code is getattr(candidate, "__code__", None):
                return True
        err = err.__context__
    return False


def observe(check, candidate, seconds) -> dict:
    """Run `check`'s run half on `candidate` under the time limit; what happened, as plain data:
    {"value": ...} (what the run half returned), {"stub": True} (the untouched stub),
    {"raised": text} (the learner's code raised and the run half let it through) or
    {"timeout": seconds}; always with "seconds", the time it took. Never a verdict."""
    start, seen = time.perf_counter(), {}
    try:
        with time_limit(seconds):
            seen["value"] = check.run(candidate)
    except CheckTimeout:
        seen = {"timeout": seconds}
    except (
        Exception
    ) as err:  # an exception inside the learner's code is an observation, not a crash
        seen = {"stub": True} if is_stub(err, candidate) else {"raised": describe_exception(err)}
    seen["seconds"] = round(time.perf_counter() - start, 4)
    return seen
