"""Reading exercise cells out of the committed notebooks (used by the checker self-tests)."""
import re

import nbformat
import torch

from conftest import NOTEBOOKS


def code_cells(path):
    return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


def chapter_notebook(exercise):
    matches = [p for p in NOTEBOOKS if p.name.startswith(exercise.chapter.number + "_")]
    assert len(matches) == 1, f"chapter {exercise.chapter.number} needs exactly one notebook, found {matches}"
    return matches[0]


def stub_function(exercise):
    """Define the learner's function exactly as the notebook's stub cell does, and return it."""
    cells = [s for s in code_cells(chapter_notebook(exercise)) if re.search(rf"^def {exercise.name}\(", s, re.M)]
    assert len(cells) == 1, f"{exercise.id}: expected one cell defining {exercise.name}(), found {len(cells)}"
    namespace = {"torch": torch, "nn": torch.nn}
    exec(cells[0], namespace)
    return namespace[exercise.name]


def stub_answer(exercise):
    """The value the notebook's answer line gives a quiz before the learner edits it."""
    pattern = rf"^answer_{exercise.name}\s*=\s*(.+?)\s*(#.*)?$"
    found = [m.group(1) for s in code_cells(chapter_notebook(exercise)) for m in re.finditer(pattern, s, re.M)]
    assert len(found) == 1, f"{exercise.id}: expected one line 'answer_{exercise.name} = ...' in the notebook"
    return eval(found[0], {})
