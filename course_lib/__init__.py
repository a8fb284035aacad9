"""course_lib: the helpers, exercises, widgets and grader of "PyTorch training on the GPU".

Notebooks import their chapter module (``from course_lib import ch01_device_check as ch``);
the shared parts are `device`, `seed`, `doctor`, `widgets` and the `exercises` engine.
"""

import functools

__version__ = "0.1.0"
LAZY = {"pick_device": "device", "seed_everything": "seed"}  # imported (with torch) on first use


def __getattr__(name):
    """`pick_device` and `seed_everything`, imported when first asked for: importing course_lib
    alone (the grader's parent process, say) does not import torch."""
    if name not in LAZY:
        raise AttributeError(f"module 'course_lib' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{LAZY[name]}", __name__), name)
    globals()[name] = value
    return value


def progress():
    """Your self-study progress per chapter, as a table (HTML in JupyterLab). The exercises come
    from exercises/index.json: the last cell of a chapter imports no other chapter's module."""
    from IPython.display import HTML

    from .exercises.index import exercises
    from .exercises.progress import chapter_summary
    from .widgets import progress_table

    return HTML(progress_table(chapter_summary(exercises())))


def explain(error=None):
    """Explain a PyTorch GPU-training error: the last one raised (no argument), an exception, or a
    message, traceback or log text. Returns a panel (HTML in JupyterLab, text elsewhere)."""
    from .explainer import explain as _explain

    return _explain(error)


def explain_errors():
    """Turn on the explainer: a panel under every cell that fails with an error the course knows,
    and under the first warning of each kind it knows.

    Every notebook calls it in its first cell, after its imports; it is idempotent and does
    nothing outside IPython. In a kernel it also calls `freeze_imports()`.
    """
    from .explainer import enable

    if enable():
        freeze_imports()


@functools.cache
def freeze_imports() -> None:
    """Once per process: gc.freeze() the objects made so far, the imports' (with torch, hundreds
    of thousands), so that the collector's full passes (0.05-0.2 s each) stop scanning them.

    torch._dynamo is imported first (exercises.runner.warm_up, the collector paused): every
    chapter imports it anyway (torch's first optimizer does, and the first check), and its import
    alone set off two full passes. They live as long as the kernel; what the notebook makes later
    is collected as usual. A kernel that imported ddp_worker (chapters 07, 08) imports it later,
    while torchrun's workers start and a core is free (ddp_worker.meanwhile), or at its first check.
    """
    import gc
    import sys

    if "torch" in sys.modules and f"{__name__}.ddp_worker" not in sys.modules:
        from .exercises.runner import warm_up

        warm_up()
    gc.freeze()


__all__ = ["pick_device", "seed_everything", "progress", "explain", "explain_errors", "__version__"]
