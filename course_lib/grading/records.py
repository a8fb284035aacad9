"""The grader's records, as plain typed data: a task, a verdict, a run report (parent and judge).

A verdict's status is one of the engine's (correct, incorrect, not attempted) when the judge
judged the exercise, or one of the grader's own below when it could not be judged (nothing to
judge, a process that crashed or ran out of time, a report the harness did not write).
"""

from dataclasses import asdict, dataclass, field

from ..exercises import CORRECT, INCORRECT, NOT_ATTEMPTED
from .limits import LIMIT_STATUSES

MISSING = "missing"  # no function / no answer line in the notebook
ERROR = "error"  # the function cannot be read (a syntax error, a definition inside an `if`)
UNREADABLE = "unreadable"  # the file is not a notebook we can read
REFUSED = "refused"  # not a regular file (a symbolic link, a device): never graded
TOO_LARGE = "too large"  # over the grader's reading budget (cells.BUDGET): not read further
CRASHED = "crashed"  # the process that ran it ended before its report was complete
TIMED_OUT = "timed out"
TAMPERED = "tampered"  # its process wrote report lines the harness did not write
JUDGED = (CORRECT, INCORRECT, NOT_ATTEMPTED)
# ... and LIMIT_STATUSES: its processes, together, reached a memory, process or CPU-time limit
STATUSES = JUDGED + (MISSING, ERROR, UNREADABLE, REFUSED, TOO_LARGE, CRASHED, TIMED_OUT, TAMPERED)
STATUSES += LIMIT_STATUSES


@dataclass
class Verdict:
    """One exercise of one submission: status, points and what the student may read."""

    exercise: str
    status: str
    points: float = 0.0
    max_points: float = 0.0
    passed: int = 0
    total: int = 0
    detail: str = ""
    tests: list = field(default_factory=list)  # {"name", "hidden", "passed", "feedback"} per test
    flags: list = field(default_factory=list)
    answer: object = None  # a quiz's answer as the student gave it
    seconds: float = None

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Verdict":
        """A verdict from the judge's reply (plain
        data); unknown fields are ignored, types forced."""
        names = {f for f in cls.__dataclass_fields__}
        verdict = cls(**{k: v for k, v in data.items() if k in names})
        if verdict.status not in STATUSES:
            raise ValueError(f"unknown status {verdict.status!r}")
        verdict.points, verdict.max_points = float(verdict.points), float(verdict.max_points)
        verdict.passed, verdict.total = int(verdict.passed), int(verdict.total)
        verdict.tests, verdict.flags = list(verdict.tests), list(verdict.flags)
        return verdict


def unjudged(exercise, status: str, detail: str, total: int = 0) -> Verdict:
    """A verdict the grader gives without a judge: no points, a status and the reason."""
    return Verdict(exercise.id, status, 0.0, float(exercise.points), 0, total, detail)


@dataclass
class Task:
    """One graded process a submission needs: its
    notebook run, or one function exercise's checks."""

    submission: object
    role: str  # "notebook" | "check"
    exercise: object = None


@dataclass
class RunReport:
    """What one `grade` run did (the command line prints it; --json writes it)."""

    graded: int
    skipped: int
    seconds: float
    processes: int
    statuses: dict
    key_problems: list
    isolation: dict
    notes: list
    gradebook: str

    def as_dict(self) -> dict:
        return asdict(self)
