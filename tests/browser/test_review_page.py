"""The review page in a real browser (issue 39, item 4): open it, grade two written answers,
reload, the points are there, and the gradebook and the Canvas export show them; a student's
markup is shown as text."""

import csv
import threading

import pytest

from course_lib.classroom import exports, review, review_page
from support import submissions

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    _, out = submissions.graded_written_class(tmp_path_factory.mktemp("review-page"))
    server = review_page.serve(out, lang="en")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server, out
    server.shutdown()
    server.server_close()


def row(page, name):
    return page.locator(f".row[data-submission='{name}']")


def grade(page, name, points, top, comment):
    r = row(page, name)
    r.locator("input.points").fill(str(points))
    r.locator("input.max").fill(str(top))
    r.locator("input.comment").fill(comment)
    r.locator("button.save").click()
    r.locator(".status", has_text="saved").wait_for(timeout=10_000)


def test_grade_two_answers_reload_and_find_them_in_the_gradebook_and_canvas(chromium, served):
    server, out = served
    page = chromium.new_page()
    try:
        page.goto(review_page.url_of(server))
        row(page, "carol").wait_for(timeout=10_000)
        assert page.locator("section.question h2").first.inner_text().endswith("why_label")
        prompt = page.locator("section.question .prompt").first
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
    rows = [r for r in csv.DictReader(open(out)) if ".written." in r["exercise"]]
    assert {(r["submission"], r["points"]) for r in rows} == {("alice", "2"), ("carol", "1")}
    report = exports.export(out, ["canvas"])
    canvas = {r[0]: r for r in csv.reader(open(report.files["canvas"]))}
    totals = {
        r["submission"]: r["points"] for r in csv.DictReader(open(out)) if r["exercise"] == "TOTAL"
    }
    assert float(canvas["alice"][-1]) == float(totals["alice"])
    assert review.review_path(out).exists()
