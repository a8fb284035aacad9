"""Notebooks are numbered, paired with a chapter module, and committed clean: both editions (the
Chinese twins in notebooks/zh/ are paired with the English ones by tests/test_zh_edition.py)."""
import importlib
import json

import pytest

from conftest import EDITIONS, NOTEBOOKS, ROOT
from course_lib.exercises.registry import chapter_modules

names = [p.name for p in NOTEBOOKS]
edition_names = [p.relative_to(ROOT / "notebooks").as_posix() for p in EDITIONS]
# Words that promise a hint per run, by language: hints come from a button.
PER_RUN = {"en": ("each run", "each time you run"), "zh": ("每次运行", "每运行一次", "每跑一次")}


def test_notebooks_exist_and_are_numbered_in_order():
    numbers = [int(n[:2]) for n in names]
    assert numbers and numbers == list(range(1, len(numbers) + 1)), names


@pytest.mark.parametrize("path", EDITIONS, ids=edition_names)
def test_notebook_is_committed_clean(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    dirty = [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"
             and (c.get("outputs") or c.get("execution_count") is not None)]
    assert not dirty, f"{path.name}: cells {dirty} have outputs or execution counts; clear them before committing"


@pytest.mark.parametrize("path", EDITIONS, ids=edition_names)
def test_notebook_pairs_with_its_chapter_module(path):
    module = "ch" + path.stem
    assert module in chapter_modules(), f"{path.name} needs course_lib/{module}.py"
    assert f"course_lib import {module}" in path.read_text(encoding="utf-8"), \
        f"{path.name} should import its module {module}"
    importlib.import_module(f"course_lib.{module}")


def test_every_chapter_module_has_a_notebook():
    stems = {p.stem for p in NOTEBOOKS}
    for module in chapter_modules():
        assert module[2:] in stems, f"course_lib/{module}.py has no notebook notebooks/{module[2:]}.ipynb"



@pytest.mark.parametrize("path", EDITIONS, ids=edition_names)
def test_first_code_cell_turns_the_error_explainer_on(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    first = next(c for c in nb["cells"] if c["cell_type"] == "code")
    calls = [line for line in "".join(first["source"]).splitlines() if line.startswith("explain_errors()")]
    assert calls, f"{path.name}: the first code cell should call explain_errors() (issue: error explainer)"


@pytest.mark.parametrize("path", EDITIONS, ids=edition_names)
def test_text_before_a_hint_cell_describes_the_hint_button(path):
    """Hints come from a button (Run All spends none), so no text may promise one per run."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells, language = nb["cells"], nb["metadata"].get("course", {}).get("language", "en")
    for before, cell in zip(cells, cells[1:]):
        if cell["cell_type"] == "code" and ".hint()" in "".join(cell["source"]):
            text = "".join(before["source"]).lower()
            assert not any(words in text for words in PER_RUN[language]), f"{path.name}: {text[-120:]}"
