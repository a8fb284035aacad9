"""The chapters' written questions as the teacher sees them: each answer's declaration, its texts
in the teacher's language, and its review so far (teacher).

A chapter declares a written question with ``chapter.written(...)`` (course_lib/chapters.py):
the question, the points a good answer makes, the section that teaches them and the maximum.
The review page (review_page.py) and the class report (report.py) show these beside each answer;
a question no chapter declares (a teacher's own notebook) shows what the notebook asked instead,
and its maximum is the teacher's to give.
"""

import os
import re

from ..grading import gradebook
from ..grading.feedback import chapter_of
from ..i18n import tr
from ..i18n.catalogue import in_language

NOT_REVIEWED = "not reviewed yet"


def declared(record: dict, question: str):
    """The WrittenQuestion its chapter declares for this answer, or None."""
    from ..exercises.registry import written_question

    number = chapter_of(record)
    return written_question(number, question) if number else None


def maxima(records: list) -> dict:
    """{(submission, question): the declared maximum} of every declared answer."""
    found = {}
    for record in records:
        for question in record.get("texts") or {}:
            asked = declared(record, str(question))
            if asked is not None:
                found[(record["submission"], str(question))] = float(asked.points)
    return found


def question_text(record: dict, question: str) -> str:
    """The markdown cell before the answer in the student's notebook (what it asked), or ''."""
    from ..grading.cells import MAX_NOTEBOOK_BYTES, UnreadableNotebook, read_cells

    name = re.escape(str(question))
    answer = re.compile(rf"^\s*text_{name}\s*=|<!--\s*answer:\s*{name}\s*-->", re.M)
    try:
        with open(record.get("file", ""), "rb", opener=_no_follow) as f:
            cells = read_cells(f.read(MAX_NOTEBOOK_BYTES + 1))
    except (OSError, TypeError, ValueError, UnreadableNotebook, RecursionError):
        return ""
    asked = ""
    for kind, source in cells:
        if answer.search(source):
            return asked[:3000]
        if kind == "markdown":
            asked = source
    return ""


def _no_follow(path, flags):
    return os.open(path, flags | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))


def expectation(asked, lang: str = "en") -> dict:
    """A declared question's texts in `lang`: title, question, expected points, where taught."""
    with in_language(lang):
        return {
            "title": tr(asked.title),
            "question": tr(asked.question),
            "expects": [tr(point) for point in asked.expects],
            "where": tr(f"where the chapter teaches it: {asked.section}"),
            "max_points": float(asked.points),
        }


def reviews_in_gradebook(book) -> dict:
    """{(submission, question): the gradebook's row of that reviewed answer} (review.apply's)."""
    graded = gradebook.Gradebook(book)
    return {
        (name, row["exercise"].rsplit(".written.", 1)[1]): row
        for name, rows in graded.done.items()
        for row in rows
        if ".written." in "." + row["exercise"]
    }


def with_reviews(records: list, book) -> list:
    """The records, each with its written answers' gradebook rows under "reviews"."""
    rows = reviews_in_gradebook(book)
    return [
        dict(
            r,
            reviews={
                str(q): rows[(r["submission"], str(q))]
                for q in r.get("texts") or {}
                if (r["submission"], str(q)) in rows
            },
        )
        for r in records
    ]


def by_question(records: list) -> dict:
    """{question: {"asked": WrittenQuestion or None, "answers": [(student, text, review row)]}}."""
    found = {}
    for record in records:
        for question, text in sorted((record.get("texts") or {}).items()):
            entry = found.setdefault(
                str(question), {"asked": declared(record, str(question)), "answers": []}
            )
            review = (record.get("reviews") or {}).get(str(question))
            entry["answers"].append((record["submission"], str(text), review))
    return dict(sorted(found.items()))
