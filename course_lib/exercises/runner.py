"""Running learner code inside a check: a time limit, errors turned into text, and `observe`, which
runs a test's run half and returns what it saw as plain data (the learner's check and the grader's
child process both call it)."""

import signal
import threading
import time
from contextlib import contextmanager

from ..collector import collector_paused, warm_up  # noqa: F401 (the engine's own name for it)
from ..errors import describe_exception  # noqa: F401


class CheckTimeout(BaseException):
    """Raised inside learner code that ran past the check's time limit.

    A BaseException (like KeyboardInterrupt), so a learner's `except Exception:` cannot swallow it.
    """


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
