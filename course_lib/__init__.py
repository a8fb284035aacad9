"""course_lib: the helpers, exercises, widgets and grader of "PyTorch training on the GPU".

Notebooks import their chapter module (``from course_lib import ch01_device_check as ch``);
the shared parts are `device`, `seed`, `doctor`, `widgets` and the `exercises` engine.
"""
from .device import pick_device
from .seed import seed_everything

__version__ = "0.1.0"


def progress():
    """Your self-study progress per chapter, as a table (HTML in JupyterLab)."""
    from IPython.display import HTML

    from .exercises import all_exercises
    from .exercises.progress import chapter_summary
    from .widgets import progress_table
    return HTML(progress_table(chapter_summary(all_exercises())))


__all__ = ["pick_device", "seed_everything", "progress", "__version__"]
