"""A released assignment as the grader's parent and the exports read it (standard library only).

`Released.read(OUT)` reads OUT/index.json (written by `assignment release`): the assignment's
name, title and notebook, its exercises as `index.ExerciseInfo` rows, the key's path (read by the
judge alone) and the code lines the student's copy hands out (the grader's added-code flags).
"""

import json
from dataclasses import dataclass
from pathlib import Path

from ..exercises.index import FIELDS, ExerciseInfo


class NotARelease(ValueError):
    """The folder is not a release written by `python -m course_lib assignment release`."""


@dataclass(frozen=True, eq=False)  # one object per release: its rows point back to it
class Released:
    """A release folder: the assignment (chapter-like: number, title, notebook) and its files."""

    folder: Path
    number: str  # the assignment's name, where a chapter has its number: 'hw1'
    title: str
    notebook: str
    key: Path
    rows: tuple

    @classmethod
    def read(cls, folder) -> "Released":
        folder = Path(folder).resolve()
        try:
            data = json.loads((folder / "index.json").read_text(encoding="utf-8"))
            head, rows = data["assignment"], data["exercises"]
            name, key = str(head["name"]), folder / str(head["key"])
            info = cls(folder, name, str(head["title"]), str(head["notebook"]), key, ())
            parsed = tuple(
                ExerciseInfo(**{f: row[f] for f in FIELDS if f != "chapter"}, chapter=info)
                for row in rows
            )
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise NotARelease(
                f"{folder} is not an assignment release (its index.json: {type(err).__name__}: "
                f"{err}); write it with `python -m course_lib assignment release SOURCE {folder}`"
            ) from None
        if any(r.chapter is not info or not r.id.startswith(f"{name}.") for r in parsed):
            raise NotARelease(f"{folder}/index.json names exercises of another assignment")
        if not key.is_file():
            raise NotARelease(f"{folder} has no key {key.name}: release it again")
        object.__setattr__(info, "rows", parsed)
        return info

    @property
    def exercises(self) -> list:
        return list(self.rows)

    @property
    def points(self) -> float:
        return float(sum(r.points for r in self.rows))

    def handed_out_lines(self) -> set:
        """The code lines of the student's copy, stripped."""
        try:
            nb = json.loads((self.folder / self.notebook).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return set()
        return {
            line.strip()
            for cell in nb.get("cells", [])
            if cell.get("cell_type") == "code"
            for line in "".join(cell.get("source", "")).splitlines()
        }
