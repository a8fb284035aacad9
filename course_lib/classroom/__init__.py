"""A class beyond one laptop (teacher side): hub collection, roster, grade exports, Gradescope.

- `assignments.py` the course's chapters as assignments: number, title, points, notebook file.
- `collect.py`     `python -m course_lib collect`: users' notebooks from a hub's home folders or
                   an nbgrader exchange into a submissions folder, one file per user.
- `roster.py`      the class roster (student id, name, email) and which student a submission is.
- `exports.py`     `grade ... --export nbgrader|canvas [--roster CSV]`: the gradebook CSV as
                   nbgrader's grade export or a Canvas gradebook import.
- `gradescope.py`  `python -m course_lib gradescope CHAPTER OUT.zip`: the autograder zip.
- `autograder.py`  what that zip's `run_autograder` runs on Gradescope: one submission through
                   the course's grader, then `results/results.json`.

Exports read only what the grader writes (its gradebook CSV); grading itself is
`course_lib.grading`'s `Grader`, called unchanged. How a teacher uses all this:
docs/classroom.md.
"""
