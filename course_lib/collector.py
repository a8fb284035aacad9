"""Python's garbage collector paused for a block that makes many objects and no garbage.

A kernel that holds torch has hundreds of thousands of objects; a block that makes ~10**5 more
(torch._dynamo's import, reading a profile) sets off full collections that rescan all of them and
free nothing: a third of such a block's time (chapters 05-08, the exercise engine).
"""

import contextlib
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
