"""The one registry of exercises; chapters register themselves, nobody names a chapter here."""
import importlib
import pkgutil

_EXERCISES = {}


def register(exercise):
    if exercise.id in _EXERCISES and _EXERCISES[exercise.id] is not exercise:
        raise ValueError(f"two exercises share the id {exercise.id}")
    _EXERCISES[exercise.id] = exercise


def chapter_modules() -> list:
    """Names of the chapter modules (course_lib/chNN_*.py), in chapter order."""
    import course_lib
    return sorted(m.name for m in pkgutil.iter_modules(course_lib.__path__)
                  if m.name.startswith("ch") and m.name[2:4].isdigit())


def discover() -> None:
    for name in chapter_modules():
        importlib.import_module(f"course_lib.{name}")


def all_exercises() -> list:
    discover()
    return sorted(_EXERCISES.values(), key=lambda e: e.id)


def get(exercise_id: str):
    discover()
    try:
        return _EXERCISES[exercise_id]
    except KeyError:
        raise KeyError(f"no exercise {exercise_id!r}; `python -m course_lib exercises` lists them") from None
