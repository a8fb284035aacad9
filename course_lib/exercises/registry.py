"""The one registry of exercises: those of the chapters declared in course_lib/chapters.py,
and of any teacher's assignment that registered itself (course_lib/authoring, ids 'hw1.dot').

Nobody names a chapter here; a chapter's exercises are known once the module that declares them
(`Chapter.declarations`: the chapter module, or its `course_lib/declared/` module) is imported.
"""

import importlib

from .. import chapters
from ..chapters import CHAPTERS

ASSIGNMENTS = {}  # prefix -> a teacher's assignment (chapter-like: .prefix, .exercises)


def register(assignment) -> None:
    """Make a teacher's assignment's exercises known by id (the last one of a name wins)."""
    ASSIGNMENTS[assignment.prefix] = assignment


def discover() -> None:
    """Import every chapter's declarations (each declares its exercises on its Chapter)."""
    for chapter in CHAPTERS:
        importlib.import_module(chapter.declarations)


def all_exercises() -> list:
    """Every exercise of every chapter, by id."""
    discover()
    return sorted(
        (ex for chapter in CHAPTERS for ex in chapter.exercises.values()), key=lambda e: e.id
    )


def get(exercise_id: str):
    """The exercise with this id ('ch01.choose_device'); KeyError that says where to look.
    Only its own chapter's declarations are imported (the judge and the zygote need a few)."""
    head, _, name = str(exercise_id).partition(".")
    if head in ASSIGNMENTS and name in ASSIGNMENTS[head].exercises:
        return ASSIGNMENTS[head].exercises[name]
    try:
        chapter = chapters.get(head[2:]) if head.startswith("ch") and head[2:].isdigit() else None
    except KeyError:
        chapter = None
    if chapter is not None:
        importlib.import_module(chapter.declarations)
        exercise = chapter.exercises.get(name)
        if exercise is not None and exercise.id == exercise_id:
            return exercise
    raise KeyError(f"no exercise {exercise_id!r}; `python -m course_lib exercises` lists them")


def written_question(chapter_number: str, name: str):
    """Chapter `chapter_number`'s declared written question `name`, or None (a teacher's own
    notebook asks questions no chapter declares). Only that chapter's declarations are imported."""
    try:
        chapter = chapters.get(chapter_number)
    except KeyError:
        return None
    importlib.import_module(chapter.declarations)
    return chapter.written_questions.get(str(name))


def written_questions() -> list:
    """Every chapter's declared written questions, by id."""
    discover()
    found = [q for chapter in CHAPTERS for q in chapter.written_questions.values()]
    return sorted(found, key=lambda q: q.id)
