"""Python's garbage collector paused for a block that makes many objects and no garbage.

A kernel that holds torch has hundreds of thousands of objects; a block that makes ~10**5 more
(torch._dynamo's import, reading a profile) sets off full collections that rescan all of them and
free nothing: a third of such a block's time (chapters 05-08, the exercise engine).
"""

import contextlib
import functools
import gc


@contextlib.contextmanager
def collector_paused():
    """The collector off inside the block, back as it was after it."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


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
