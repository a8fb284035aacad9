"""Reading exercise cells out of the committed notebooks (used by the checker self-tests)."""

import re

import torch

from course_lib import notebooks


def code_cells(path):
    """The code cells' sources of a notebook (a path or a chapter number)."""
    return notebooks.code(path)


def chapter_notebook(exercise):
    path = notebooks.path_of(exercise.chapter)
    assert path.is_file(), f"chapter {exercise.chapter.number} needs its notebook {path.name}"
    return path


def stub_function(exercise):
    """Define the learner's function exactly as the notebook's stub cell does, and return it."""
    cells = [
        s
        for s in code_cells(chapter_notebook(exercise))
        if re.search(rf"^def {exercise.name}\(", s, re.M)
    ]
    assert len(cells) == 1, (
        f"{exercise.id}: expected one cell defining {exercise.name}(), found {len(cells)}"
    )
    namespace = {"torch": torch, "nn": torch.nn}
    exec(cells[0], namespace)
    return namespace[exercise.name]


def stub_answer(exercise):
    """The value the notebook's answer line gives a quiz before the learner edits it."""
    pattern = rf"^answer_{exercise.name}\s*=\s*(.+?)\s*(#.*)?$"
    found = [
        m.group(1)
        for s in code_cells(chapter_notebook(exercise))
        for m in re.finditer(pattern, s, re.M)
    ]
    assert len(found) == 1, (
        f"{exercise.id}: expected one line 'answer_{exercise.name} = ...' in the notebook"
    )
    return eval(found[0], {})
