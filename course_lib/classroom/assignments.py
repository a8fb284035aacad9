"""The course's chapters as assignments: number, title, points, notebook file (teacher side)."""

from dataclasses import dataclass
from functools import lru_cache


class NoSuchChapter(ValueError):
    """A chapter number the course does not have (or one without exercises)."""


@dataclass(frozen=True)
class Assignment:
    number: str
    title: str
    points: float
    notebook: str  # file name of the chapter's notebook, e.g. 01_device_check.ipynb

    @property
    def label(self) -> str:
        """How the assignment is called in an LMS: 'Chapter 01: Device check'."""
        return f"Chapter {self.number}: {self.title}"


def all_assignments() -> dict:
    """{chapter number: Assignment} of every chapter that has exercises, in order."""
    from ..exercises import index

    chapters = {}
    for ex in index.exercises():
        chapters.setdefault(ex.chapter.number, [ex.chapter, 0.0])[1] += float(ex.points)
    found = {}
    for number, (chapter, points) in sorted(chapters.items()):
        found[number] = Assignment(number, chapter.title, points, chapter.notebook)
    return found


@lru_cache(maxsize=1)
def _chapter_by_exercise() -> dict:
    from ..exercises import index

    return {ex.id: ex.chapter.number for ex in index.exercises()}


def chapter_of(exercise_id: str) -> str:
    """'ch01.make_batch' -> '01' (the registry's number when it knows the exercise)."""
    if exercise_id in _chapter_by_exercise():
        return _chapter_by_exercise()[exercise_id]
    head = exercise_id.split(".", 1)[0]
    return head[2:] if head.startswith("ch") and head[2:].isdigit() else ""


def assignment(number: str) -> Assignment:
    """The chapter `number` ('1', '01'), or NoSuchChapter naming the chapters there are."""
    known = all_assignments()
    key = str(number).strip().zfill(2)
    if key not in known:
        raise NoSuchChapter(
            f"the course has no chapter {number!r} with exercises; "
            f"its chapters are {', '.join(known)}"
        )
    return known[key]
