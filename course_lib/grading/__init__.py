"""The teacher's side of the course: the student bundle and the grader.

- `release.py`    `python -m course_lib release OUT_DIR`: notebooks + course_lib without the key.
- `grader.py`     `python -m course_lib grade SUBMISSIONS_DIR --out GRADEBOOK.csv`: the steps below.
- `intake.py`     step 1: find and read the submissions (`cells.py`, `analyze.py`), choose exercises.
- `scheduler.py`  step 2: run their processes through the zygotes (`zygote.py`, `warmup.py`);
                  each process isolates itself (`sandbox.py`, `isolation.py`, `landlock.py`).
- `outcome.py`    step 3: verdicts; `verdict.py` the check harness and its judge, `executor.py`
                  the notebook process, `protocol.py` what they report, `tripwire.py` the audit hook.
- `record.py`     step 4: rows, feedback and record (`gradebook.py`, `feedback.py`, `guard.py`).
- `selftest.py`   submissions built from the answer key (nbgrader's validate / --invert).

The grading rules themselves (points, partial credit, zeroing, review flags) are in
`course_lib/exercises/scoring.py`, shared with the learner's own checks. What a submission
can and cannot do: docs/grading-threat-model.md. Not part of the student bundle.
"""
