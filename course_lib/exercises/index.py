"""Every exercise's identity as plain data (index.json): what the grader's parent, the classroom
exports and anyone choosing exercises need, without importing a chapter module (and torch).

    python -m course_lib.exercises.index     (writes index.json and written.json from the registry)

The registry (registry.py: the chapter modules' own declarations) is the truth; index.json is
generated from it, and tests/test_exercise_keys.py fails, naming this command, when the two differ.
written.json is the chapters' declared written questions the same way (chapter, name, title,
points): what a feedback file or results.json names an answer by (tests/test_written_titles.py).
Standard library only.
"""

import json
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from .. import chapters

INDEX_PATH = Path(__file__).with_name("index.json")
WRITTEN_PATH = Path(__file__).with_name("written.json")
FIELDS = ("id", "chapter", "name", "kind", "title", "points", "time_limit")


@dataclass(frozen=True)
class ExerciseInfo:
    """An exercise as the grader's parent knows it: no checks, no key, no torch."""

    id: str
    chapter: object  # its course_lib.chapters.Chapter
    name: str
    kind: str  # "function" or "quiz"
    title: str
    points: float
    time_limit: float | None  # seconds per test (function exercises)

    def as_row(self) -> dict:
        return dict(asdict(self), chapter=self.chapter.number)


def row_of(exercise) -> dict:
    """The index row of a registered exercise."""
    return {
        "id": exercise.id,
        "chapter": exercise.chapter.number,
        "name": exercise.name,
        "kind": exercise.kind,
        "title": exercise.title,
        "points": exercise.points,
        "time_limit": getattr(exercise, "time_limit", None),
    }


def build() -> list:
    """The index rows, from the registry (imports every chapter module)."""
    from .registry import all_exercises

    return [row_of(ex) for ex in all_exercises()]


def build_written() -> list:
    """The written.json rows, from the registry (imports every chapter module)."""
    from .registry import written_questions

    return [
        {"chapter": q.chapter, "name": q.name, "title": q.title, "points": q.points}
        for q in written_questions()
    ]


def text(rows: list) -> str:
    return json.dumps(rows, ensure_ascii=False, indent=1) + "\n"


@lru_cache(maxsize=1)
def exercises() -> tuple:
    """Every exercise of index.json, by id, as ExerciseInfo."""
    rows = json.loads(INDEX_PATH.read_text(encoding="utf-8"))
    return tuple(
        ExerciseInfo(**dict(row, chapter=chapters.get(row["chapter"])))
        for row in sorted(rows, key=lambda r: r["id"])
    )


@lru_cache(maxsize=1)
def written_titles() -> dict:
    """{(chapter, name): title} of every declared written question, from written.json."""
    rows = json.loads(WRITTEN_PATH.read_text(encoding="utf-8"))
    return {(row["chapter"], row["name"]): row["title"] for row in rows}


def main() -> None:
    rows = build()
    INDEX_PATH.write_text(text(rows), encoding="utf-8")
    print(f"wrote {INDEX_PATH} ({len(rows)} exercises)")
    written = build_written()
    WRITTEN_PATH.write_text(text(written), encoding="utf-8")
    print(f"wrote {WRITTEN_PATH} ({len(written)} written questions)")


if __name__ == "__main__":
    main()
