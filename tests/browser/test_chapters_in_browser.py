"""Every chapter as a learner sees it in JupyterLab: run,
no errors, widgets and plots drawn, widgets respond.

One opened notebook per chapter (fixture chapter_page, conftest.py); what to click comes from
chapters.py. Screenshots: test-artifacts/browser/.
"""

import importlib
import re
import textwrap

import pytest

from course_lib import notebooks
from course_lib.text import without_marks
from support import NOTEBOOKS

from .chapters import CHAPTERS, BrowserSpec
from .lab import BROKEN_ON_PAGE, FIGURE_AS_TEXT, ChapterFailure, describe, short
from .speech import Speaker
from .steps import Choose, Click, Expect, RunCell

pytestmark = pytest.mark.browser
ids = [p.stem for p in NOTEBOOKS]


def speaker(page) -> Speaker:
    """The page's language, for the texts of chapters.py (speech.py): English unless the fixture
    opened another edition."""
    return Speaker(getattr(page, "lang", "en"))


def said(step, say):
    """A step of chapters.py as it reads in the page's language."""
    return step.said(say) if hasattr(step, "said") else step


def spec_of(page) -> BrowserSpec:
    if page.name not in CHAPTERS:
        page.fail(
            "tests/browser/chapters.py",
            (
                f"no entry for {page.name}: add one (see 01_device_check) naming the chapter's "
                "main widget, what to do with it, what must then be on the screen, and one "
                "exercise"
            ),
        )
    return CHAPTERS[page.name]


# ------------------------------------------------------------- the table itself (no browser needed)
def test_every_entry_names_an_existing_notebook():
    orphans = set(CHAPTERS) - {p.stem for p in NOTEBOOKS}
    assert not orphans, f"entries in tests/browser/chapters.py without a notebook: {orphans}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_entry_matches_the_notebook(path):
    """Each cell an entry names exists in the committed
    notebook (catches renamed cells without a browser)."""
    spec = CHAPTERS.get(path.stem)
    if spec is None:
        pytest.fail(
            f"tests/browser/chapters.py has no entry for {path.stem}: add one (see 01_device_check)"
        )
    sources = notebooks.code(path)
    needles = [i.cell for i in spec.interactions]
    if spec.exercise:
        needles += [f"def {spec.exercise.name}(", f".{spec.exercise.name}.check("]
    missing = [n for n in needles if not any(n in s for s in sources)]
    assert not missing, (
        f"{path.name}: no code cell contains {missing}; update tests/browser/chapters.py"
    )
    assert spec.interactions or spec.why_no_interaction, (
        f"{path.stem}: name the main widget's interaction"
    )


# ---------------------------------------------------------------- what every chapter must look like
def test_no_cell_error_output(chapter_page):
    """No cell shows an error (taught errors are caught
    by expect_error and print normally), all cells ran."""
    problems = []
    for cell in chapter_page.code_cells_after_run():
        for out in cell["outputs"]:
            if out["type"] == "error":
                problems.append(
                    f"{describe(cell)} shows {out['ename']}: {out['evalue']}\n"
                    f"{short(out['traceback'], 800)}"
                )
        if cell["count"] is None and cell["source"].strip():
            problems.append(f"{describe(cell)} did not run (Run All stopped before it)")
    for err in chapter_page.kernel_errors():
        if err["parent"] != "execute_request":
            problems.append(
                f"the kernel reported {err['ename']}: {err['evalue']} outside any cell (a widget "
                f"callback?)\n{short(err['traceback'], 800)}"
            )
    if problems:
        chapter_page.fail("cell errors", f"{len(problems)} problem(s)", "\n\n".join(problems))


def test_no_widget_render_error(chapter_page):
    """No 'Error displaying widget', no javascript
    error box, no widget shown as its plain-text repr."""
    problems = []
    for cell in chapter_page.code_cells_after_run():
        for dom in cell["dom"]:
            for pattern, meaning in BROKEN_ON_PAGE:
                found = pattern.search(dom["text"])
                if found:
                    context = dom["text"][max(0, found.start() - 80) : found.end() + 200]
                    problems.append(f"{describe(cell)}: {meaning}: {context!r}")
            if FIGURE_AS_TEXT.search(dom["text"]) and not any(o["image"] for o in cell["outputs"]):
                problems.append(
                    f"{describe(cell)}: a matplotlib figure shown as text, not drawn: "
                    f"{FIGURE_AS_TEXT.search(dom['text']).group(0)}"
                )
    dialogs = chapter_page.dialog_text()
    if dialogs:
        problems.append(f"a dialog covers the notebook: {dialogs}")
    if problems:
        chapter_page.fail(
            "widget render errors", f"{len(problems)} problem(s)", "\n".join(problems)
        )


def test_every_widget_rendered(chapter_page):
    """Each widget view the kernel made (displayed widgets
    and everything inside them) is drawn in the page."""
    tree, problems, made, drawn = chapter_page.kernel_tree, [], 0, 0
    for cell in chapter_page.code_cells_after_run():
        wanted = [o["widget"] for o in cell["outputs"] if o["widget"]]
        roots = [d for d in cell["dom"] if d["widget"]]
        if len(roots) < len(wanted):
            texts = " | ".join(d["text"][:200] for d in cell["dom"] if not d["widget"])
            problems.append(
                f"{describe(cell)}: the kernel displayed {len(wanted)} widget(s), "
                f"{len(roots)} drawn; shown instead: {texts!r}"
            )
        made += sum(tree.get(model_id, [0])[0] for model_id in wanted)
        for model_id, root in zip(wanted, roots):
            views, _, unknown = tree.get(model_id, [0, 0, 1])
            drawn += root["views"]
            if unknown:
                problems.append(
                    f"{describe(cell)}: {unknown} widget model(s) unknown to the kernel"
                )
            if root["views"] < views:
                problems.append(
                    f"{describe(cell)}: the kernel made {views} widget views, {root['views']} are "
                    f"in the page: {root['text'][:300]!r}"
                )
            if root["width"] < 2 or root["height"] < 2:
                problems.append(
                    f"{describe(cell)}: the widget has no size on screen "
                    f"({root['width']:.0f}x{root['height']:.0f} px)"
                )
    if problems:
        chapter_page.fail(
            "widgets not rendered",
            f"{len(problems)} problem(s); {drawn} of {made} views drawn",
            "\n".join(problems),
        )


def test_every_plot_rendered_as_image(chapter_page):
    """Every image output (matplotlib figures), in
    cells and inside Output widgets, is a loaded <img>."""
    problems = []
    tree = chapter_page.kernel_tree
    for cell in chapter_page.code_cells_after_run():
        wanted = sum(1 for o in cell["outputs"] if o["image"])
        wanted += sum(tree.get(o["widget"], [0, 0, 0])[1] for o in cell["outputs"] if o["widget"])
        images = sum(d["images"] for d in cell["dom"])
        loaded = sum(d["loaded"] for d in cell["dom"]) + sum(d["svgs"] for d in cell["dom"])
        if loaded < wanted or loaded < images:
            problems.append(
                f"{describe(cell)}: {wanted} plot(s) made by the kernel, {images} <img> in "
                f"the page, {loaded} loaded"
            )
    if problems:
        chapter_page.fail("plots not drawn", f"{len(problems)} problem(s)", "\n".join(problems))


# ------------------------------------------------------------------ a learner using the chapter
def test_main_widgets_respond(chapter_page):
    """Each widget of the chapter's entry is used as a
    learner would; the screen must change as expected."""
    spec = spec_of(chapter_page)
    if not spec.interactions:
        pytest.skip(f"{chapter_page.name}: {spec.why_no_interaction}")
    say = speaker(chapter_page)
    for interaction in spec.interactions:
        cell = chapter_page.find_cell(interaction.cell)
        chapter_page.cell_locator(cell["index"]).scroll_into_view_if_needed()
        errors_before = len(chapter_page.kernel_errors())
        for number, step in enumerate(interaction.steps, 1):
            step = said(step, say)
            where = f"widget '{interaction.widget}' ({describe(cell)}), step {number} ({step})"
            try:
                problem = step(chapter_page, cell["index"])
            except ChapterFailure:
                raise
            except Exception as err:  # a Playwright timeout: the control is not there or not usable
                problem = f"could not do it: {str(err).splitlines()[0]}"
            new_errors = chapter_page.kernel_errors()[errors_before:]
            if new_errors:
                problem = (
                    (problem + "; " if problem else "")
                    + "the kernel raised "
                    + "; ".join(
                        f"{e['ename']}: {e['evalue']}\n{short(e['traceback'], 800)}"
                        for e in new_errors
                    )
                )
            if problem:
                chapter_page.fail(where, problem, chapter_page.output_text(cell["index"]))


def right_answer(notebook: str, exercise) -> str:
    """The spec's right answer, or the reference solution of the chapter's answer key."""
    if exercise.right:
        return exercise.right
    module = importlib.import_module(f"course_lib.ch{notebook}")
    return textwrap.dedent(getattr(module, exercise.name).solution_source())


def test_exercise_wrong_then_right(chapter_page):
    """Type a wrong answer into the exercise cell, run it
    and its check: Incorrect with a hint; then Correct."""
    spec = spec_of(chapter_page)
    exercise = spec.exercise
    if exercise is None:
        pytest.skip(f"{chapter_page.name} names no exercise in tests/browser/chapters.py")
    stub = chapter_page.find_cell(f"def {exercise.name}(")
    check = chapter_page.find_cell(f".{exercise.name}.check(", after=stub["index"])
    where = f"exercise {exercise.name} ({describe(stub)}, checked by {describe(check)})"
    say = speaker(chapter_page)
    wrong_patterns = [
        say.pattern("Incorrect"),
        re.escape(say("Hint:")) + r"\s*\S+",
        *map(say.pattern, exercise.wrong_feedback),
    ]
    for answer, patterns in [
        (exercise.wrong, wrong_patterns),
        (right_answer(chapter_page.name, exercise), [say.pattern("Correct: ")]),
    ]:
        chapter_page.type_into_cell(stub["index"], answer)
        chapter_page.run_cell(stub["index"])
        chapter_page.run_cell(check["index"])
        text = chapter_page.wait_for_text(check["index"], patterns[0])
        missing = [p for p in patterns if not re.search(p, text or "")]
        if missing:
            shown = text or chapter_page.output_text(check["index"])
            chapter_page.fail(
                where, f"after typing\n{answer}\nthe check does not show {missing}", shown
            )


# -------------------------------------------------------- quizzes and hints as a learner meets them
def chapter_module(page):
    return importlib.import_module(f"course_lib.ch{page.name}")


def test_quiz_options_do_not_overlap(chapter_page):
    """At 1280 px, every quiz option sits in its own
    row (long ones wrap inside it) with its button."""
    problems, seen = [], 0
    for cell in chapter_page.code_cells_after_run():
        if not any(o["widget"] for o in cell["outputs"]):
            continue
        for group in chapter_page.option_rows(cell["index"]):
            seen += len(group)
            problems += [
                f"{describe(cell)}: option {row['text']!r} has no visible button"
                for row in group
                if not row["button"]
            ]
            problems += [
                (
                    f"{describe(cell)}: option {upper['text']!r} (down to "
                    f"y={upper['bottom']:.0f}) runs over option {lower['text']!r} (from "
                    f"y={lower['top']:.0f})"
                )
                for upper, lower in zip(group, group[1:])
                if upper["bottom"] > lower["top"] + 0.5
            ]
    quizzes = [
        q
        for q in chapter_module(chapter_page).chapter.exercises.values()
        if q.kind in ("single", "multiple", "error")
    ]
    asked = [
        q
        for q in quizzes
        if any(f".{q.name}.ask()" in c["source"] for c in chapter_page.code_cells())
    ]
    if asked and not seen:
        problems.append(
            f"the chapter shows {len(asked)} quiz widget(s) but no option rows were found"
        )
    if problems:
        chapter_page.fail("quiz options", f"{len(problems)} problem(s)", "\n".join(problems))


def _wrong_choice(quiz):
    """A wrong option with a `why` (else any wrong
    option, when the quiz has hints), and the right text."""
    right = quiz.right_answer() if quiz.kind == "error" else quiz.normalize(quiz.key().answer)
    wrong = [k for k in quiz.options if k not in right]
    explained = [k for k in wrong if k in quiz.why]
    letter = (explained or (wrong if quiz.hints else []) or [None])[0]
    return letter, [quiz.options[k] for k in right]


def test_wrong_quiz_answer_says_why_without_naming_the_right_option(chapter_page):
    """One quiz shown with .ask(): a wrong option, Check: Incorrect, why that option is off (or a
    hint), and neither the right option nor (error quizzes) what the code raised."""
    module = chapter_module(chapter_page)
    candidates = []
    for cell in chapter_page.code_cells():
        found = re.search(r"ch\.(\w+)\.ask\(\)", cell["source"])
        quiz = getattr(module, found.group(1), None) if found else None
        live = getattr(quiz, "judged_live", False)  # its right answer is what the page measured
        if quiz is not None and quiz.kind != "numeric" and not live and _wrong_choice(quiz)[0]:
            candidates.append((cell, quiz))
    if not candidates:
        pytest.skip(f"{chapter_page.name} shows no choice quiz with a why or hints")
    cell, quiz = sorted(candidates, key=lambda cq: _wrong_choice(cq[1])[0] not in cq[1].why)[0]
    letter, right_texts = _wrong_choice(quiz)
    where = f"quiz {quiz.name} ({describe(cell)})"
    say = speaker(chapter_page)
    choose = Choose(f"{letter}) {short_text(say(quiz.options[letter]))}")
    steps = [choose, Click(say("Check")), Expect(say.pattern("Incorrect"))]
    for step in steps:
        problem = step(chapter_page, cell["index"])
        if problem:
            chapter_page.fail(where, f"{step}: {problem}", chapter_page.output_text(cell["index"]))
    verdict = " ".join(
        chapter_page.cell_locator(cell["index"]).locator(".course-check").last.inner_text().split()
    )
    hint = say(f"Hint 1 of {len(quiz.hints)}:")
    wanted = short_text(say(quiz.why[letter])) if letter in quiz.why else hint
    problems = [] if wanted in verdict else [f"the verdict does not show {wanted!r}"]
    problems += [
        f"the verdict names the right option {short_text(say(t))!r}"
        for t in right_texts
        if short_text(say(t)) in verdict
    ]
    raised = re.compile(say.pattern("the code raised"))
    if quiz.kind == "error" and raised.search(verdict):
        problems.append("a wrong answer is told what the code raised")
    if problems:
        chapter_page.fail(where, f"after choosing {letter}): " + "; ".join(problems), verdict)
    if quiz.kind == "multiple":
        choose(chapter_page, cell["index"])  # untick it again


def short_text(text: str, limit: int = 40) -> str:
    """The start of a text as the page shows it: backticks rendered away, one space."""
    return " ".join(without_marks(text).split())[:limit].strip()


def test_hints_come_one_at_a_time_and_stay(chapter_page):
    """Run All shows the hint button and no hint; each click shows the next hint beside the ones
    before, to the last; re-running the cell keeps them all."""
    spec = spec_of(chapter_page)
    if spec.exercise is None:
        pytest.skip(f"{chapter_page.name} names no exercise in tests/browser/chapters.py")
    name = spec.exercise.name
    exercise = getattr(chapter_module(chapter_page), name)
    cell = chapter_page.find_cell(f".{name}.hint()")
    where, total = f"hints of {name} ({describe(cell)})", len(exercise.hints)
    say = speaker(chapter_page)
    show = lambda k: say(f"Show a hint ({k} of {total})")
    shown = lambda k: re.escape(say(f"Hint {k} of {total}:"))
    after_run = " ".join(
        d["text"]
        for c in chapter_page.code_cells_after_run()
        if c["index"] == cell["index"]
        for d in c["dom"]
    )
    if show(1) not in after_run or re.search(shown(1), after_run):
        chapter_page.fail(
            where,
            f"after Run All the cell must offer {show(1)!r} and show no hint yet",
            after_run,
        )
    steps = [Click(show(1)), Expect(shown(1))]
    for k in range(2, total + 1):  # every level, each keeping the ones before
        steps += [Click(show(k)), Expect(shown(k)), Expect(shown(k - 1))]
    if total >= 2:
        steps += [RunCell(), Expect(r"[\s\S]*".join(shown(k) for k in range(1, total + 1)))]
    for number, step in enumerate(steps, 1):
        problem = step(chapter_page, cell["index"])
        if problem:
            chapter_page.fail(
                where, f"step {number} ({step}): {problem}", chapter_page.output_text(cell["index"])
            )
