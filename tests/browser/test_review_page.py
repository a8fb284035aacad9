"""The review page in a real browser (issue 39, item 4): open it, grade two written answers,
reload, the points are there, and the gradebook and the Canvas export show them; a student's
markup is shown as text. The class is chapter 03's: beside its declared questions the page shows
what the chapter expects and the declared maximum; the teacher's own question keeps the prompt
the notebook asked."""

import csv
import threading

import pytest

from course_lib.classroom import exports, review, review_page
from course_lib.exercises.registry import written_question
from support import submissions

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    _, out = submissions.graded_written_class(tmp_path_factory.mktemp("review-page"), "03")
    server = review_page.serve(out, lang="en")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server, out
    server.shutdown()
    server.server_close()


def question(page, name):
    return page.locator(f"section.question[data-question='{name}']")


def row(page, name, asked="why_label"):
    return question(page, asked).locator(f".row[data-submission='{name}']")


def grade(page, name, points, top, comment, asked="why_label"):
    r = row(page, name, asked)
    r.locator("input.points").fill(str(points))
    if top is not None:
        r.locator("input.max").fill(str(top))
    r.locator("input.comment").fill(comment)
    r.locator("button.save").click()
    r.locator(".status", has_text="saved").wait_for(timeout=10_000)


def test_a_declared_question_shows_what_the_chapter_expects_and_its_maximum(chromium, served):
    server, out = served
    asked = written_question("03", "eval_and_no_grad")
    page = chromium.new_page()
    try:
        page.goto(review_page.url_of(server))
        box = question(page, asked.name)
        box.wait_for(timeout=10_000)
        assert box.locator(".asked").inner_text() == asked.question
        assert box.locator("ul.expects li").all_inner_texts() == list(asked.expects)
        assert box.locator(".where").inner_text().endswith(asked.section)
        assert box.locator(".prompt").count() == 0
        top = row(page, "alice", asked.name).locator("input.max")
        assert top.input_value() == "3" and top.get_attribute("readonly") is not None
        grade(page, "alice", 2.5, None, "two of three", asked.name)
    finally:
        page.close()
    rows = {(r["submission"], r["exercise"]): r for r in csv.DictReader(open(out))}
    saved = rows[("alice", "ch03.written.eval_and_no_grad")]
    assert (saved["points"], saved["max_points"]) == ("2.5", "3")


def test_grade_two_answers_reload_and_find_them_in_the_gradebook_and_canvas(chromium, served):
    server, out = served
    page = chromium.new_page()
    try:
        page.goto(review_page.url_of(server))
        row(page, "carol").wait_for(timeout=10_000)
        assert question(page, "why_label").locator("h2").inner_text().endswith("why_label")
        prompt = question(page, "why_label").locator(".prompt")
        assert prompt.inner_text() == submissions.QUESTION and prompt.locator("b").count() == 0
        bob = row(page, "bob").locator(".answer")
        assert "<b>It moves</b>" in bob.inner_text() and bob.locator("b, a").count() == 0
        grade(page, "alice", 2, 3, "clear")
        grade(page, "carol", 1, 3, "half right")
        r = row(page, "bob")
        r.locator("input.points").fill("7")
        r.locator("button.save").click()
        r.locator(".status.error").wait_for(timeout=10_000)
        assert "outside 0 to the maximum" in r.locator(".status").inner_text()
        page.reload()
        row(page, "alice").wait_for(timeout=10_000)
        assert row(page, "alice").locator("input.points").input_value() == "2"
        assert row(page, "carol").locator("input.comment").input_value() == "half right"
        assert row(page, "bob").locator("input.points").input_value() == ""
    finally:
        page.close()
    rows = [r for r in csv.DictReader(open(out)) if r["exercise"].endswith(".written.why_label")]
    assert {(r["submission"], r["points"]) for r in rows} == {("alice", "2"), ("carol", "1")}
    report = exports.export(out, ["canvas"])
    canvas = {r[0]: r for r in csv.reader(open(report.files["canvas"]))}
    totals = {
        r["submission"]: r["points"] for r in csv.DictReader(open(out)) if r["exercise"] == "TOTAL"
    }
    assert float(canvas["alice"][-1]) == float(totals["alice"])
    assert review.review_path(out).exists()
