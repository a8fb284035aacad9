"""Notebooks are numbered, paired with a chapter module, and committed clean."""

import importlib
import importlib.util
import re

import pytest

from course_lib import notebooks
from course_lib.chapters import CHAPTERS
from support import NOTEBOOKS, ROOT

names = [p.name for p in NOTEBOOKS]


def test_notebooks_exist_and_are_numbered_in_order():
    numbers = [int(n[:2]) for n in names]
    assert numbers and numbers == list(range(1, len(numbers) + 1)), names
    found = sorted(notebooks.FOLDER.glob("*.ipynb"))  # no notebook outside the declared chapters
    assert found == sorted(NOTEBOOKS), (
        f"not a declared chapter's notebook: {sorted(set(found) - set(NOTEBOOKS))}"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=names)
def test_notebook_is_committed_clean(path):
    nb = notebooks.read(path)
    dirty = [
        i
        for i, c in enumerate(nb["cells"])
        if c["cell_type"] == "code" and (c.get("outputs") or c.get("execution_count") is not None)
    ]
    assert not dirty, (
        f"{path.name}: cells {dirty} have outputs or execution counts; clear them before committing"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=names)
def test_notebook_pairs_with_its_chapter_module(path):
    module = "ch" + path.stem
    declared = [c.module for c in CHAPTERS if c.notebook == path.name]
    assert declared == [f"course_lib.{module}"], (
        f"{path.name} needs course_lib/{module}.py, declared in chapters.py"
    )
    assert f"course_lib import {module}" in path.read_text(), (
        f"{path.name} should import its module {module}"
    )
    importlib.import_module(f"course_lib.{module}")


def test_every_chapter_module_has_a_notebook():
    stems = {p.stem for p in NOTEBOOKS}
    for module in (c.module.split(".")[-1] for c in CHAPTERS):
        assert module[2:] in stems, (
            f"course_lib/{module}.py has no notebook notebooks/{module[2:]}.ipynb"
        )


def test_every_chapter_is_declared_once_and_every_chapter_module_is_declared():
    """course_lib/chapters.py is the one list: no chapter module or notebook outside it."""
    numbers = [c.number for c in CHAPTERS]
    assert numbers == sorted(set(numbers)), numbers
    files = sorted(f"course_lib.{p.stem}" for p in (ROOT / "course_lib").glob("ch[0-9][0-9]_*.py"))
    assert files == [c.module for c in CHAPTERS]
    for chapter in CHAPTERS:
        module = importlib.import_module(chapter.module)
        assert module.chapter is chapter, (
            f"{chapter.module}: chapter = chapters.of_module(__name__)"
        )
        assert all(
            ex.chapter is chapter and ex.id.startswith(f"ch{chapter.number}.")
            for ex in chapter.exercises.values()
        )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=names)
def test_first_code_cell_turns_the_error_explainer_on(path):
    first = notebooks.code(path)[0]
    calls = [line for line in first.splitlines() if line.startswith("explain_errors()")]
    assert calls, (
        f"{path.name}: the first code cell should call explain_errors() (issue: error explainer)"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=names)
def test_text_before_a_hint_cell_describes_the_hint_button(path):
    """Hints come from a button (Run All spends none), so no text may promise one per run."""
    cells = notebooks.cells(path)
    for before, cell in zip(cells, cells[1:]):
        if cell.cell_type == "code" and ".hint()" in cell.source:
            text = before.source.lower()
            assert not ("each run" in text or "each time you run" in text), (
                f"{path.name}: {text[-120:]}"
            )


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.stem)
def test_chapter_module_declares_what_the_learner_gets(chapter):
    """`__all__`: the chapter, its exercises and quizzes (in order), then its teaching helpers; the
    notebook uses nothing else of it, and `ch.<Tab>` (dir) lists exactly these names."""
    module = importlib.import_module(chapter.module)
    names, n = module.__all__, len(chapter.exercises)
    assert names[0] == "chapter" and names[1 : 1 + n] == list(chapter.exercises), names[: 1 + n]
    assert len(names) == len(set(names)) and all(hasattr(module, name) for name in names)
    used = set(re.findall(r"\bch\.(\w+)", "\n".join(notebooks.code(chapter))))
    assert used <= set(names), (
        f"{chapter.notebook} uses names outside __all__: {sorted(used - set(names))}"
    )
    assert dir(module) == sorted(names)


def test_no_shared_module_and_no_other_chapter_imports_a_chapter():
    """Data flows one way (docs/architecture.md): the engine, the checks, the grader and the shared
    helpers never import a chapter module, and no chapter imports another; a chapter's answer key
    imports only its own chapter."""
    import ast

    chapter_modules = {c.module for c in CHAPTERS}
    offenders = []
    for path in sorted((ROOT / "course_lib").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        package = ".".join(parts[:-1]) if parts[-1] != "__init__" else ".".join(parts)
        module = package if parts[-1] == "__init__" else ".".join(parts)
        allowed = {module, module.replace("course_lib.key.", "course_lib.")}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                name = "." * node.level + (node.module or "")
                base = importlib.util.resolve_name(name, package) if node.level else name
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            offenders += [f"{module}: {t}" for t in targets if t in chapter_modules - allowed]
    assert not offenders, offenders
