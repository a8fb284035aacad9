"""Shared ipywidgets: quizzes, the environment panel, the progress view (all chapters)."""
from html import escape

import ipywidgets as W
from IPython.display import HTML

from .exercises.results import CORRECT
from .exercises.text import html as text_html
from .i18n import tr


def result_html(result) -> W.HTML:
    return W.HTML(result._repr_html_())


# Options are rows of their own: a long option wraps inside its row (never over the next one) and
# keeps its button; single-choice rows look like radio buttons. Scoped to .course-quiz/.course-hints.
QUIZ_CSS = """<style>
.course-quiz .course-option { width: 100%; height: auto; min-height: var(--jp-widgets-inline-height);
  line-height: 1.45; align-items: flex-start; margin: 3px 0; }
.course-quiz .course-option label.widget-label-basic { display: flex; align-items: flex-start;
  white-space: normal; overflow: visible; height: auto; line-height: 1.45; }
.course-quiz .course-option label.widget-label-basic > span { white-space: normal; overflow-wrap: anywhere; }
.course-quiz .course-option input[type=checkbox] { flex: 0 0 auto; align-self: flex-start; margin: 3px 8px 0 0;
  line-height: normal; font-size: inherit; width: 14px; height: 14px; }
.course-quiz .course-single input[type=checkbox] { appearance: none; -webkit-appearance: none;
  border: 1.5px solid #6e7781; border-radius: 50%; background: #ffffff; cursor: pointer; }
.course-quiz .course-single input[type=checkbox]:checked { border-color: #0969da;
  background: radial-gradient(circle, #0969da 0 38%, #ffffff 44%); }
.course-quiz code, .course-hints code { background: #eaeef2; color: #1f2328; padding: 0 3px; border-radius: 3px; }
.course-hints .widget-html-content, .course-quiz .widget-html-content { line-height: 1.45; }
</style>"""

EMPTY_ANSWER = {  # what the Check button says when nothing is chosen yet: it speaks of the widget
    "numeric": "Type a number in the box above, then press Check.",
    "multiple": "Tick the options you choose above, then press Check.",
}
CHOOSE_ONE = "Choose an option above, then press Check."
# under a right answer in the widget: the one place an answer is kept is the answer cell below it
ANSWER_CELL = ("Now write it in the answer cell below (`answer_{name} = ...`) and run that cell: the Check "
               "button is for practice, the cell is what is saved with the notebook and graded.")


def answer_cell_note(name: str) -> str:
    """The note under a right answer in the widget: the answer cell is what is graded."""
    return (f"<div class='course-answer-cell' style='color:#57606a;margin:2px 0'>"
            f"{text_html(tr(ANSWER_CELL.format(name=name)))}</div>")


def hint_widget(exercise) -> W.VBox:
    """A 'Show a hint (k of n)' button and every hint revealed so far (all chapters' `.hint()`).

    Showing it reveals nothing (Run All spends no hint); the state lives on the exercise, so
    re-running the cell shows the hints already revealed, and every view of it stays in step."""
    if not exercise.hints:
        return W.VBox([W.HTML(tr("No hints for this one."))])
    shown = W.HTML()
    button = W.Button(layout=W.Layout(width="auto", align_self="flex-start"))

    def refresh():
        n, total = len(exercise.hints_shown()), len(exercise.hints)
        shown.value = "".join(f"<div style='margin:2px 0'>{text_html(line)}</div>" for line in exercise.hints_shown())
        button.disabled = n >= total
        button.description = tr(f"Show a hint ({n + 1} of {total})" if n < total else f"All {total} hints shown")

    button.on_click(lambda _: exercise.reveal_hint())
    exercise._hint_views[:] = exercise._hint_views[-9:] + [refresh]
    refresh()
    box = W.VBox([button, shown])
    box.add_class("course-hints")
    return box


def _option_rows(quiz):
    """One checkbox per option, its text as HTML (code as code); single choice keeps one ticked."""
    rows = [W.Checkbox(description=f"{k}) {text_html(tr(v))}", description_allow_html=True, indent=False,
                       layout=W.Layout(width="auto")) for k, v in quiz.options.items()]
    single = quiz.kind in ("single", "error")
    for row in rows:
        row.add_class("course-option")
        row.add_class("course-single" if single else "course-multiple")

    def keep_one(change):
        if single and change["new"]:
            for other in rows:
                if other is not change["owner"]:
                    other.value = False

    for row in rows:
        row.observe(keep_one, names="value")
    return rows


def quiz_widget(quiz) -> W.VBox:
    """The question, one row per option (or a number box), Check and Hint buttons, the verdict."""
    if quiz.kind == "numeric":
        chooser = W.Text(description=tr("Answer:"), placeholder=tr("a number"))
        read = lambda: chooser.value
        watched = [chooser]
    else:
        watched = _option_rows(quiz)
        chooser = W.VBox(watched, layout=W.Layout(width="100%"))
        chosen = lambda: [k for k, row in zip(quiz.options, watched) if row.value]
        read = (lambda: (chosen() or [None])[0]) if quiz.kind in ("single", "error") else chosen
    button = W.Button(description=tr("Check"), button_style="primary")
    verdict = W.HTML()

    def on_click(_):
        result = quiz.check(read(), empty=EMPTY_ANSWER.get(quiz.kind, CHOOSE_ONE))
        verdict.value = result._repr_html_() + (answer_cell_note(quiz.name) if result.status == CORRECT else "")

    def clear_verdict(_):  # a verdict belongs to the answer it judged
        verdict.value = ""

    button.on_click(on_click)
    for widget in watched:
        widget.observe(clear_verdict, names="value")
    parts = [W.HTML(QUIZ_CSS + f"<b>{text_html(tr(quiz.title))}</b><div>{text_html(tr(quiz.prompt))}</div>")]
    if quiz.code:
        parts.append(W.HTML(f"<pre style='background:#f6f8fa;color:#1f2328;padding:6px'>{escape(quiz.code)}</pre>"))
    hints = [hint_widget(quiz)] if quiz.hints else []
    box = W.VBox(parts + [chooser, W.HBox([button]), verdict] + hints,
                 layout=W.Layout(border="1px solid #d0d7de", padding="6px"))
    box.add_class("course-quiz")

    def answer(value):
        """Set the widget as a learner would (tests, demos): letters, a list of letters, or a number."""
        if quiz.kind == "numeric":
            chooser.value = "" if value is None else str(value)
            return
        letters = set(quiz.normalize(value)) if value not in (None, "", []) else set()
        for letter, row in zip(quiz.options, watched):
            row.value = letter in letters

    box.answer, box.check_button, box.verdict = answer, button, verdict
    return box


def report_table(report: dict, format_value=str) -> HTML:
    rows = "".join(f"<tr><th style='text-align:right'>{escape(tr(k))}</th><td style='text-align:left'>"
                   f"{escape(format_value(k, v))}</td></tr>" for k, v in report.items())
    return f"<table class='course-report'>{rows}</table>"


def progress_table(rows) -> str:
    """HTML table of per-chapter progress rows from exercises.progress.chapter_summary."""
    body = []
    for r in rows:
        status = "done" if r["done"] == r["total"] else "in progress" if r["done"] or r["attempted"] else "not started"
        color = {"done": "#1a7f37", "in progress": "#9a6700", "not started": "#6e7781"}[status]
        body.append(f"<tr><td>{r['chapter']}</td><td style='text-align:left'>{escape(tr(r['title']))}</td>"
                    f"<td>{r['done']}/{r['total']}</td><td>{r['points']:g}/{r['max_points']:g}</td>"
                    f"<td style='color:{color}'>{escape(tr(status))}</td></tr>")
    head = "".join(f"<th>{escape(tr(h))}</th>" for h in ("chapter", "title", "exercises done", "points", "status"))
    return f"<table class='course-progress'><tr>{head}</tr>{''.join(body)}</table>"


__all__ = ["quiz_widget", "hint_widget", "report_table", "progress_table", "result_html", "CORRECT"]
