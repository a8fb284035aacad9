"""The teacher's side of the course: the student bundle and the grader.

Modules are named for the process they run in:

- `parent.py`     the grader (`python -m course_lib grade`): a row of small steps, never running
                  student code, never importing the answer key (`grader.py`: the old name);
  `intake.py`     step 1: find and read the submissions (`cells.py`, `analyze.py`), choose
                  exercises;
  `scheduler.py`  step 2: start their processes through the zygotes, read their reports
                  (`protocol.py`), enforce the time limits;
  `outcome.py`    step 3: what the processes reported, sent to the judge as data;
  `record.py`     step 4: rows, feedback and record (`gradebook.py`, `feedback.py`, `guard.py`);
  `records.py`    the typed records: Task, Verdict, RunReport.
- `judge.py`      the judge process: the only one with the answer key; it computes each test's
                  reference data once and turns observations and answers into verdicts.
- `zygote.py`     the two fork servers (`warmup.py`), which never import the key or read a
                  submission.
- `child.py`      a graded process, the only place student code runs, holding no secret
                  (`sandbox.py`, `isolation.py`, `landlock.py`: the kernel's walls around it).
- `release.py`    the student bundle; `selftest.py` submissions built from the answer key.

The grading rules themselves (points, partial credit, zeroing, review flags) are in
`course_lib/exercises/scoring.py`, shared with the learner's own checks; each test's run and judge
halves are in `course_lib/checks/`. What a submission can and cannot do:
docs/grading-threat-model.md. Not part of the student bundle.
"""
