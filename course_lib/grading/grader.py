"""The grader's steps under their old name: `Grader` lives in parent.py (the grading process)."""

from .parent import Grader, find_submissions, hide_gpus, scratch_root_for  # noqa: F401
