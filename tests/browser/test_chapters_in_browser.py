"""Every chapter as a learner sees it in JupyterLab: run, no errors, widgets and plots drawn, widgets respond.

One opened notebook per chapter (fixture chapter_page, conftest.py); what to click comes from
chapters.py. Screenshots: test-artifacts/browser/.
"""
import importlib
import json
import re
import textwrap

import pytest

from .chapters import CHAPTERS, BrowserSpec
from .conftest import NOTEBOOKS
from .lab import BROKEN_ON_PAGE, FIGURE_AS_TEXT, ChapterFailure, describe, short

pytestmark = pytest.mark.browser
ids = [p.stem for p in NOTEBOOKS]


def spec_of(page) -> BrowserSpec:
    if page.name not in CHAPTERS:
        page.fail("tests/browser/chapters.py", f"no entry for {page.name}: add one (see 01_device_check) naming "
                  "the chapter's main widget, what to do with it, what must then be on the screen, and one exercise")
    return CHAPTERS[page.name]


# ------------------------------------------------------------------ the table itself (no browser needed)
def test_every_entry_names_an_existing_notebook():
    orphans = set(CHAPTERS) - {p.stem for p in NOTEBOOKS}
    assert not orphans, f"entries in tests/browser/chapters.py without a notebook: {orphans}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_entry_matches_the_notebook(path):
    """Each cell an entry names exists in the committed notebook (catches renamed cells without a browser)."""
    spec = CHAPTERS.get(path.stem)
    if spec is None:
        pytest.fail(f"tests/browser/chapters.py has no entry for {path.stem}: add one (see 01_device_check)")
    sources = [c["source"] if isinstance(c["source"], str) else "".join(c["source"])
               for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    needles = [i.cell for i in spec.interactions]
    if spec.exercise:
        needles += [f"def {spec.exercise.name}(", f".{spec.exercise.name}.check("]
    missing = [n for n in needles if not any(n in s for s in sources)]
    assert not missing, f"{path.name}: no code cell contains {missing}; update tests/browser/chapters.py"
    assert spec.interactions or spec.why_no_interaction, f"{path.stem}: name the main widget's interaction"


# ------------------------------------------------------------------ what every chapter must look like
def test_no_cell_error_output(chapter_page):
    """No cell shows an error (taught errors are caught by expect_error and print normally), all cells ran."""
    problems = []
    for cell in chapter_page.code_cells_after_run():
        for out in cell["outputs"]:
            if out["type"] == "error":
                problems.append(f"{describe(cell)} shows {out['ename']}: {out['evalue']}\n"
                                f"{short(out['traceback'], 800)}")
        if cell["count"] is None and cell["source"].strip():
            problems.append(f"{describe(cell)} did not run (Run All stopped before it)")
    for err in chapter_page.kernel_errors():
        if err["parent"] != "execute_request":
            problems.append(f"the kernel reported {err['ename']}: {err['evalue']} outside any cell (a widget "
                            f"callback?)\n{short(err['traceback'], 800)}")
    if problems:
        chapter_page.fail("cell errors", f"{len(problems)} problem(s)", "\n\n".join(problems))


def test_no_widget_render_error(chapter_page):
    """No 'Error displaying widget', no javascript error box, no widget shown as its plain-text repr."""
    problems = []
    for cell in chapter_page.code_cells_after_run():
        for dom in cell["dom"]:
            for pattern, meaning in BROKEN_ON_PAGE:
                found = pattern.search(dom["text"])
                if found:
                    context = dom["text"][max(0, found.start() - 80):found.end() + 200]
                    problems.append(f"{describe(cell)}: {meaning}: {context!r}")
            if FIGURE_AS_TEXT.search(dom["text"]) and not any(o["image"] for o in cell["outputs"]):
                problems.append(f"{describe(cell)}: a matplotlib figure shown as text, not drawn: "
                                f"{FIGURE_AS_TEXT.search(dom['text']).group(0)}")
    dialogs = chapter_page.dialog_text()
    if dialogs:
        problems.append(f"a dialog covers the notebook: {dialogs}")
    if problems:
        chapter_page.fail("widget render errors", f"{len(problems)} problem(s)", "\n".join(problems))


def test_every_widget_rendered(chapter_page):
    """Each widget view the kernel made (displayed widgets and everything inside them) is drawn in the page."""
    tree, problems, made, drawn = chapter_page.kernel_tree, [], 0, 0
    for cell in chapter_page.code_cells_after_run():
        wanted = [o["widget"] for o in cell["outputs"] if o["widget"]]
        roots = [d for d in cell["dom"] if d["widget"]]
        if len(roots) < len(wanted):
            texts = " | ".join(d["text"][:200] for d in cell["dom"] if not d["widget"])
            problems.append(f"{describe(cell)}: the kernel displayed {len(wanted)} widget(s), "
                            f"{len(roots)} drawn; shown instead: {texts!r}")
        made += sum(tree.get(model_id, [0])[0] for model_id in wanted)
        for model_id, root in zip(wanted, roots):
            views, _, unknown = tree.get(model_id, [0, 0, 1])
            drawn += root["views"]
            if unknown:
                problems.append(f"{describe(cell)}: {unknown} widget model(s) unknown to the kernel")
            if root["views"] < views:
                problems.append(f"{describe(cell)}: the kernel made {views} widget views, {root['views']} are "
                                f"in the page: {root['text'][:300]!r}")
            if root["width"] < 2 or root["height"] < 2:
                problems.append(f"{describe(cell)}: the widget has no size on screen "
                                f"({root['width']:.0f}x{root['height']:.0f} px)")
    if problems:
        chapter_page.fail("widgets not rendered", f"{len(problems)} problem(s); {drawn} of {made} views drawn",
                          "\n".join(problems))


def test_every_plot_rendered_as_image(chapter_page):
    """Every image output (matplotlib figures), in cells and inside Output widgets, is a loaded <img>."""
    problems = []
    tree = chapter_page.kernel_tree
    for cell in chapter_page.code_cells_after_run():
        wanted = sum(1 for o in cell["outputs"] if o["image"])
        wanted += sum(tree.get(o["widget"], [0, 0, 0])[1] for o in cell["outputs"] if o["widget"])
        images = sum(d["images"] for d in cell["dom"])
        loaded = sum(d["loaded"] for d in cell["dom"]) + sum(d["svgs"] for d in cell["dom"])
        if loaded < wanted or loaded < images:
            problems.append(f"{describe(cell)}: {wanted} plot(s) made by the kernel, {images} <img> in the page, "
                            f"{loaded} loaded")
    if problems:
        chapter_page.fail("plots not drawn", f"{len(problems)} problem(s)", "\n".join(problems))


# ------------------------------------------------------------------ a learner using the chapter
def test_main_widgets_respond(chapter_page):
    """Each widget of the chapter's entry is used as a learner would; the screen must change as expected."""
    spec = spec_of(chapter_page)
    if not spec.interactions:
        pytest.skip(f"{chapter_page.name}: {spec.why_no_interaction}")
    for interaction in spec.interactions:
        cell = chapter_page.find_cell(interaction.cell)
        chapter_page.cell_locator(cell["index"]).scroll_into_view_if_needed()
        errors_before = len(chapter_page.kernel_errors())
        for number, step in enumerate(interaction.steps, 1):
            where = f"widget '{interaction.widget}' ({describe(cell)}), step {number} ({step})"
            try:
                problem = step(chapter_page, cell["index"])
            except ChapterFailure:
                raise
            except Exception as err:  # a Playwright timeout: the control is not there or not usable
                problem = f"could not do it: {str(err).splitlines()[0]}"
            new_errors = chapter_page.kernel_errors()[errors_before:]
            if new_errors:
                problem = (problem + "; " if problem else "") + "the kernel raised " + "; ".join(
                    f"{e['ename']}: {e['evalue']}\n{short(e['traceback'], 800)}" for e in new_errors)
            if problem:
                chapter_page.fail(where, problem, chapter_page.output_text(cell["index"]))


def right_answer(notebook: str, exercise) -> str:
    """The spec's right answer, or the reference solution of the chapter's answer key."""
    if exercise.right:
        return exercise.right
    module = importlib.import_module(f"course_lib.ch{notebook}")
    return textwrap.dedent(getattr(module, exercise.name).solution_source())


def test_exercise_wrong_then_right(chapter_page):
    """Type a wrong answer into the exercise cell, run it and its check: Incorrect with a hint; then Correct."""
    spec = spec_of(chapter_page)
    exercise = spec.exercise
    if exercise is None:
        pytest.skip(f"{chapter_page.name} names no exercise in tests/browser/chapters.py")
    stub = chapter_page.find_cell(f"def {exercise.name}(")
    check = chapter_page.find_cell(f".{exercise.name}.check(", after=stub["index"])
    where = f"exercise {exercise.name} ({describe(stub)}, checked by {describe(check)})"
    wrong_patterns = [r"Incorrect", r"Hint: \S+", *exercise.wrong_feedback]
    for answer, patterns in [(exercise.wrong, wrong_patterns), (right_answer(chapter_page.name, exercise),
                                                                  [r"Correct: "])]:
        chapter_page.type_into_cell(stub["index"], answer)
        chapter_page.run_cell(stub["index"])
        chapter_page.run_cell(check["index"])
        text = chapter_page.wait_for_text(check["index"], patterns[0])
        missing = [p for p in patterns if not re.search(p, text or "")]
        if missing:
            shown = text or chapter_page.output_text(check["index"])
            chapter_page.fail(where, f"after typing\n{answer}\nthe check does not show {missing}", shown)
