"""The teacher's side of the course: the student bundle and the grader.

- `release.py`   `python -m course_lib release OUT_DIR`: notebooks + course_lib without the key.
- `grader.py`    `python -m course_lib grade SUBMISSIONS_DIR --out GRADEBOOK.csv`: the whole class.
- `cells.py`     reading notebooks and running their cells in-process (no Jupyter kernel).
- `analyze.py`   what a submission defines, read without running it.
- `sandbox.py`   forked, limited, sandboxed graded processes (`landlock.py`, `guard.py`).
- `executor.py`  the notebook process; `verdict.py` the check processes and quiz verdicts.
- `gradebook.py` the CSV with resume; `feedback.py` per-student Markdown.
- `selftest.py`  submissions built from the answer key (nbgrader's validate / --invert).

Not part of the student bundle.
"""
