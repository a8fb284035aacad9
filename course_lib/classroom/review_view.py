"""The review page's JupyterLab view: the same reviews, in a notebook cell (teacher).

    from course_lib.classroom.review_view import review_view
    review_view("grades/gradebook.csv")            # lang="zh" for the Chinese labels

The same data as the web page (review_page.answers_json: each question with what its chapter
expects, each answer with its review so far) as ipywidgets, and the same save (review.save):
each review goes into GRADEBOOK.review.csv and the gradebook as it is given, a wrong one is
answered with its reason and changes nothing. Student text is escaped: shown as text.
"""

import html

from ..i18n import tr
from ..i18n.catalogue import in_language
from . import review, review_page


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def question_html(entry: dict) -> str:
    """A question's heading, and what its chapter expects (or what the notebook asked)."""
    head = f"<h3>{_e(entry['question'])}</h3>"
    said = entry.get("declared")
    if not said:
        return head + f"<div style='white-space:pre-wrap'>{_e(entry['prompt'])}</div>"
    points = "".join(f"<li>{_e(p)}</li>" for p in said["expects"])
    return (
        f"<h3>{_e(said['title'])} <code>{_e(entry['question'])}</code></h3>"
        f"<p>{_e(said['question'])}</p><b>{_e(tr('What a good answer says'))}</b>"
        f"<ul>{points}</ul><p><i>{_e(said['where'])}</i></p>"
    )


def answer_row(book, question: str, entry: dict, answer: dict, lang: str):
    """One answer: the text, points / maximum / comment, a Save button and what it said."""
    import ipywidgets as w

    said = entry.get("declared")
    points = w.FloatText(value=answer.get("points", 0.0), description=tr("Points"))
    top = w.FloatText(
        value=said["max_points"] if said else answer.get("max_points", 1.0),
        description=tr("Max"),
        disabled=bool(said),
    )
    comment = w.Text(value=answer.get("comment", ""), description=tr("Comment"))
    status = w.HTML(_e(answer["status"]))
    save = w.Button(description=tr("Save"))

    def on_save(_button) -> None:
        try:
            review.save(
                book, answer["submission"], question, points.value, top.value, comment.value
            )
            with in_language(lang):
                status.value = _e(tr("saved"))
        except review.ReviewError as err:
            with in_language(lang):
                status.value = f"<span style='color:#b00'>{_e(tr(str(err)))}</span>"

    save.on_click(on_save)
    text = w.HTML(f"<b>{_e(answer['submission'])}</b><pre>{_e(answer['text'])}</pre>")
    row = w.VBox([text, w.HBox([points, top, comment, save, status])])
    row.submission, row.points, row.top, row.comment = answer["submission"], points, top, comment
    row.save, row.status = save, status
    return row


def review_view(book, lang: str = "en"):
    """Every written answer of `book`, question by question, as widgets that save as they go."""
    import ipywidgets as w

    data = review_page.answers_json(book, lang)
    parts = []
    with in_language(lang):
        for entry in data["questions"]:
            rows = [answer_row(book, entry["question"], entry, a, lang) for a in entry["answers"]]
            box = w.VBox([w.HTML(question_html(entry)), *rows])
            box.question, box.rows = entry["question"], rows
            parts.append(box)
        view = w.VBox([w.HTML(f"<h2>{_e(tr('Written answers'))}</h2>"), *parts])
    view.questions = {box.question: box for box in parts}
    return view
