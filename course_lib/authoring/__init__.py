"""A teacher's own assignment, written once in one source notebook (issue 37, items 1-3).

    python -m course_lib assignment release SOURCE.ipynb OUT/   the student's copy, key, index
    python -m course_lib assignment check SOURCE.ipynb OUT/     what derived file drifted
    python -m course_lib grade SUBMISSIONS --out BOOK.csv --assignment OUT/

`source.py` reads the source (nbgrader-style markers), `assignment.py` is what its cells run
(`Assignment`, in the teacher's source, the student's copy and the judge alike), `release.py`
derives and checks the files, `released.py` reads a release without torch (the grader's parent,
the exports). The worked example: docs/teacher-assignment.md.
"""

import importlib

_LAZY = {  # what a source notebook imports, loaded on first use (released.py needs no torch)
    "Assignment": ("assignment", "Assignment"),
    "Test": ("assignment", "Test"),
    "generic": ("assignment", "generic"),
}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _LAZY[name]
    return getattr(importlib.import_module(f"{__name__}.{module}"), attribute)


__all__ = list(_LAZY)
