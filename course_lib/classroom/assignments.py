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
    own: bool = False  # a teacher's own assignment (course_lib/authoring), not a chapter

    @property
    def label(self) -> str:
        """How the assignment is called in an LMS: 'Chapter 01: Device check', or a teacher's
        assignment's own title."""
        return self.title if self.own else f"Chapter {self.number}: {self.title}"


def of_release(released) -> Assignment:
    """A teacher's release (authoring.released.Released) as an assignment of the exports."""
    return Assignment(released.number, released.title, released.points, released.notebook, True)


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


def chapter_of(exercise_id: str, released=None) -> str:
    """'ch01.make_batch' -> '01' (the registry's number when it knows the exercise); a teacher's
    `released` assignment's exercise -> its name ('hw1.dot' -> 'hw1')."""
    if released is not None and any(r.id == exercise_id for r in released.rows):
        return released.number
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
