"""The one registry of exercises: those of the chapters declared in course_lib/chapters.py.

Nobody names a chapter here; a chapter module's exercises are known once it is imported.
"""

import importlib

from ..chapters import CHAPTERS


def discover() -> None:
    """Import every declared chapter module (each declares its exercises on its Chapter)."""
    for chapter in CHAPTERS:
        importlib.import_module(chapter.module)


def all_exercises() -> list:
    """Every exercise of every chapter, by id."""
    discover()
    return sorted(
        (ex for chapter in CHAPTERS for ex in chapter.exercises.values()), key=lambda e: e.id
    )


def get(exercise_id: str):
    """The exercise with this id ('ch01.choose_device'); KeyError that says where to look."""
    for exercise in all_exercises():
        if exercise.id == exercise_id:
            return exercise
    raise KeyError(f"no exercise {exercise_id!r}; `python -m course_lib exercises` lists them")
