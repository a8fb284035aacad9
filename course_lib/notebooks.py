"""The course's own notebooks: where each chapter's notebook is, and how to read it.

The grader, the release, the self-test, the classroom tools and the tests find and read the
chapter notebooks here and nowhere else. (Students' submissions are another matter: the grader
reads those bytes with its own guarded parser, grading/cells.py.) The notebooks/ folder sits
beside course_lib/, in the teacher's checkout and in the student bundle alike.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

from . import chapters

FOLDER = Path(__file__).resolve().parent.parent / "notebooks"


@dataclass(frozen=True)
class Cell:
    """One cell as the tests and tools use it; names as in nbformat (``cell_type``, ``source``)."""

    cell_type: str
    source: str
    id: str = ""
    metadata: dict = field(default_factory=dict)


def path_of(notebook) -> Path:
    """The notebook of a chapter (a Chapter, or its number: '05'), or a path given as it is."""
    if isinstance(notebook, Path):
        return notebook
    chapter = notebook if isinstance(notebook, chapters.Chapter) else chapters.get(notebook)
    return FOLDER / chapter.notebook


def chapter_notebooks() -> list:
    """Every declared chapter's notebook that exists, in chapter order."""
    return [p for p in map(path_of, chapters.CHAPTERS) if p.is_file()]


def support_files() -> list:
    """The files of notebooks/ that are not notebooks (data the chapters read), by name."""
    if not FOLDER.is_dir():
        return []
    return sorted(
        (p for p in FOLDER.iterdir() if p.is_file() and p.suffix != ".ipynb"), key=lambda p: p.name
    )


def read(notebook) -> dict:
    """The notebook's JSON (a chapter, its number or a path)."""
    return json.loads(path_of(notebook).read_text(encoding="utf-8"))


def dumps(nb: dict) -> str:
    """A notebook's JSON as the course commits it: indent 1, non-ASCII kept, a final newline."""
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def cells(notebook) -> list:
    """Its cells, each with its source as one string."""
    return [
        Cell(c["cell_type"], "".join(c.get("source", "")), c.get("id", ""), c.get("metadata", {}))
        for c in read(notebook)["cells"]
    ]


def code(notebook) -> list:
    """The sources of its code cells, in order."""
    return [c.source for c in cells(notebook) if c.cell_type == "code"]


def markdown(notebook) -> list:
    """The texts of its Markdown cells, in order."""
    return [c.source for c in cells(notebook) if c.cell_type == "markdown"]


def cell(notebook, cell_id: str) -> str:
    """The source of the cell with this id; KeyError when there is none."""
    for c in cells(notebook):
        if c.id == cell_id:
            return c.source
    raise KeyError(f"{path_of(notebook).name} has no cell with id {cell_id!r}")


__all__ = [
    "FOLDER",
    "Cell",
    "path_of",
    "chapter_notebooks",
    "support_files",
    "read",
    "dumps",
    "cells",
    "code",
    "markdown",
    "cell",
]
