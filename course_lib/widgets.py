"""Shared ipywidgets: quizzes, the environment panel, the progress view (all chapters)."""
from html import escape

import ipywidgets as W
from IPython.display import HTML

from .exercises.results import CORRECT


def result_html(result) -> W.HTML:
    return W.HTML(result._repr_html_())


def quiz_widget(quiz) -> W.VBox:
    """Radio buttons / checkboxes / a number box, a Check button, and the engine's verdict."""
    if quiz.kind == "numeric":
        chooser = W.FloatText(description="Answer:")
        read = lambda: chooser.value
    elif quiz.kind == "multiple":
        boxes = [W.Checkbox(description=f"{k}) {v}", indent=False, layout=W.Layout(width="auto"))
                 for k, v in quiz.options.items()]
        chooser = W.VBox(boxes)
        read = lambda: [k for k, b in zip(quiz.options, boxes) if b.value]
    else:
        chooser = W.RadioButtons(options=[(f"{k}) {v}", k) for k, v in quiz.options.items()], value=None,
                                 layout=W.Layout(width="auto"))
        read = lambda: chooser.value
    button = W.Button(description="Check", button_style="primary")
    verdict = W.HTML()

    def on_click(_):
        result = quiz.check(read())
        verdict.value = result._repr_html_()

    button.on_click(on_click)
    parts = [W.HTML(f"<b>{escape(quiz.title)}</b><div>{escape(quiz.prompt)}</div>")]
    if quiz.code:
        parts.append(W.HTML(f"<pre style='background:#f6f8fa;color:#1f2328;padding:6px'>{escape(quiz.code)}</pre>"))
    return W.VBox(parts + [chooser, button, verdict], layout=W.Layout(border="1px solid #d0d7de", padding="6px"))


def report_table(report: dict, format_value=str) -> HTML:
    rows = "".join(f"<tr><th style='text-align:right'>{escape(k)}</th><td style='text-align:left'>"
                   f"{escape(format_value(k, v))}</td></tr>" for k, v in report.items())
    return f"<table class='course-report'>{rows}</table>"


def progress_table(rows) -> str:
    """HTML table of per-chapter progress rows from exercises.progress.chapter_summary."""
    body = []
    for r in rows:
        status = "done" if r["done"] == r["total"] else "in progress" if r["done"] or r["attempted"] else "not started"
        color = {"done": "#1a7f37", "in progress": "#9a6700", "not started": "#6e7781"}[status]
        body.append(f"<tr><td>{r['chapter']}</td><td style='text-align:left'>{escape(r['title'])}</td>"
                    f"<td>{r['done']}/{r['total']}</td><td>{r['points']:g}/{r['max_points']:g}</td>"
                    f"<td style='color:{color}'>{status}</td></tr>")
    return ("<table class='course-progress'><tr><th>chapter</th><th>title</th><th>exercises done</th>"
            f"<th>points</th><th>status</th></tr>{''.join(body)}</table>")


__all__ = ["quiz_widget", "report_table", "progress_table", "result_html", "CORRECT"]
