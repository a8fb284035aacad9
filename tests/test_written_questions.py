"""The chapters' own written questions (issue 39, items 1-3): declared as data, asked in both
editions' notebooks, read (never auto-graded) by the grader, and shown beside each answer with
what the chapter expects on the review page and in the class report, with the declared maximum
in the gradebook and the nbgrader and Canvas exports.

A small chapter-03 class is graded for real: the reference with both answers (English edition),
the reference in the Chinese edition with one answer, and the notebook as handed out.
"""

import csv
import re

import pytest

from course_lib import chapters, notebooks
from course_lib.chapters import Chapter
from course_lib.classroom import exports, report, review, review_page, written
from course_lib.exercises.registry import written_question, written_questions
from course_lib.i18n import tr
from course_lib.i18n.catalogue import in_language
from support import submissions

ZH_ANSWER = "eval() 关掉 dropout；no_grad() 不记录计算图。两个都要。"
STUDENTS = {
    "ann": ("ch03-reference", submissions.WRITTEN_03),
    "bo": ("ch03-reference-zh", {"eval_and_no_grad": ZH_ANSWER}),
    "cy": ("ch03-blank", {}),
}


def flat(text: str) -> str:
    return " ".join(str(text).split())


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("written")
    subs = submissions.chapter03_class(folder, STUDENTS)
    out = folder / "grades" / "gradebook.csv"
    proc = submissions.run_grader(subs, out, "--workers", 2)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return subs, out


@pytest.fixture
def fresh(graded):
    subs, out = graded
    review.review_path(out).unlink(missing_ok=True)
    review.apply(out)
    return subs, out


def test_a_declaration_is_short_data_with_two_to_four_expected_points():
    ids = [q.id for q in written_questions()]
    assert {"ch03.written.eval_and_no_grad", "ch08.written.sharding_trade"} <= set(ids)
    assert written_question("03", "eval_and_no_grad").points == 3
    assert written_question("03", "not_declared") is None and written_question("", "x") is None
    toy = Chapter("99", "toy", "Toy")
    kwargs = dict(title="t", question="q", section="section 1")
    with pytest.raises(ValueError, match="2 to 4 expected points"):
        toy.written("one", expects=["only one"], **kwargs)
    with pytest.raises(ValueError, match="above 0"):
        toy.written("zero", expects=["a", "b"], points=0, **kwargs)
    toy.written("two", expects=["a", "b"], **kwargs)
    with pytest.raises(ValueError, match="share the name"):
        toy.written("two", expects=["a", "b"], **kwargs)


@pytest.mark.parametrize("question", written_questions(), ids=lambda q: q.id)
def test_every_declared_question_is_asked_in_both_editions(question):
    chapter = chapters.get(question.chapter)
    marker = re.compile(rf"<!--\s*answer:\s*{question.name}\s*-->")
    for path, lang in (
        (notebooks.path_of(chapter.number), "en"),
        (notebooks.FOLDER / "zh" / chapter.notebook, "zh"),
    ):
        cells = notebooks.cells(path)
        at = [i for i, c in enumerate(cells) if marker.search(c.source)]
        assert len(at) == 1, f"{path.name}: one answer cell for {question.name}"
        answer, asked = cells[at[0]], cells[at[0] - 1]
        assert answer.cell_type == asked.cell_type == "markdown", path.name  # nothing executes
        with in_language(lang):
            assert flat(tr(question.question)) in flat(asked.source), (path.name, lang)
        assert re.search(rf"\b{question.points:g}\b", asked.source), "the maximum is said"
        from course_lib.grading.analyze import analyze
        from course_lib.grading.cells import read_cells

        handed_out = analyze(read_cells(path.read_bytes()))
        assert question.name not in handed_out.markdown_texts, "as handed out: no answer yet"


def test_every_declared_question_reads_in_chinese():
    for question in written_questions():
        said = written.expectation(question, "zh")
        for text in [said["title"], said["question"], said["where"], *said["expects"]]:
            assert re.search(r"[\u4e00-\u9fff]", text), text
        assert said["where"].endswith(f"第 {question.section.split()[-1]} 节")


def test_the_grader_reads_the_answers_and_grades_none_of_them(graded):
    _, out = graded
    texts = {r["submission"]: r.get("texts") or {} for r in report.load(out)}
    assert texts["ann"] == submissions.WRITTEN_03
    assert texts["bo"] == {"eval_and_no_grad": ZH_ANSWER}  # as written; the other left as given
    assert texts["cy"] == {}  # the answer cells as handed out are no answers
    rows = csv.DictReader(open(out, encoding="utf-8"))
    assert not [r for r in rows if ".written." in r["exercise"]]  # nothing until the teacher
    feedback = out.with_name("gradebook_feedback")
    ann = feedback.joinpath("ann.md").read_text(encoding="utf-8")
    assert "Your written answers (read by your teacher)" in ann
    assert "eval\\_and\\_no\\_grad" in ann and "zero\\_grad\\_place" in ann
    with in_language("zh"):
        said = tr("Your written answers (read by your teacher)")
    assert said in feedback.joinpath("bo.md").read_text(encoding="utf-8")


def test_the_page_shows_the_question_and_what_the_chapter_expects(fresh):
    _, out = fresh
    for lang in ("en", "zh"):
        data = review_page.answers_json(out, lang)
        by_q = {q["question"]: q for q in data["questions"]}
        assert set(by_q) == {"eval_and_no_grad", "zero_grad_place"}
        asked = written_question("03", "eval_and_no_grad")
        assert by_q["eval_and_no_grad"]["declared"] == written.expectation(asked, lang)
        assert by_q["eval_and_no_grad"]["declared"]["max_points"] == 3
        answers = {a["submission"]: a["text"] for a in by_q["eval_and_no_grad"]["answers"]}
        assert answers == {"ann": submissions.WRITTEN_03["eval_and_no_grad"], "bo": ZH_ANSWER}


def test_the_maximum_comes_from_the_declaration(fresh):
    _, out = fresh
    review.save(out, "ann", "eval_and_no_grad", 2.5, "", "good")
    review.save(out, "bo", "eval_and_no_grad", 1, 3)
    with pytest.raises(review.ReviewError, match="max_points 5 is not the maximum 2"):
        review.save(out, "ann", "zero_grad_place", 1, 5)
    with pytest.raises(review.ReviewError, match="outside 0 to the maximum 2"):
        review.save(out, "ann", "zero_grad_place", 2.5, "")
    rows = {
        (r["submission"], r["exercise"]): r for r in csv.DictReader(open(out, encoding="utf-8"))
    }
    row = rows[("ann", "ch03.written.eval_and_no_grad")]
    assert (row["points"], row["max_points"], row["status"]) == ("2.5", "3", "reviewed")
    assert float(rows[("ann", "TOTAL")]["points"]) == 14 + 2.5
    made = exports.export(out, ["canvas", "nbgrader"])
    canvas = {r[0]: r for r in csv.reader(open(made.files["canvas"], encoding="utf-8"))}
    assert float(canvas["ann"][-1]) == 16.5 and float(canvas["bo"][-1]) == 15
    nbgrader = {r[3]: r for r in csv.reader(open(made.files["nbgrader"], encoding="utf-8"))}
    assert float(nbgrader["ann"][7]) == 16.5


def test_the_class_report_shows_each_answer_beside_its_expectation(fresh):
    _, out = fresh
    review.save(out, "ann", "eval_and_no_grad", 3, "", "all three points")
    report.write(out)
    page = report.report_paths(out)["html"].read_text(encoding="utf-8")
    asked = written_question("03", "eval_and_no_grad")
    import html

    for point in asked.expects:
        assert html.escape(point, quote=True) in page
    assert "3 / 3" in page and "all three points" in page and html.escape(ZH_ANSWER) in page
    counts = report.report_paths(out)["csv"].read_text(encoding="utf-8")
    assert "written answer,eval_and_no_grad,reviewed,,1" in counts
    assert "written answer,eval_and_no_grad,not reviewed yet,,1" in counts
    assert "written points,eval_and_no_grad,3/3,,1" in counts
    report.write(out, lang="zh")
    page = report.report_paths(out)["html"].read_text(encoding="utf-8")
    with in_language("zh"):
        assert html.escape(tr(asked.expects[0]), quote=True) in page
        assert html.escape(tr("What a good answer says")) in page


def test_the_jupyterlab_view_saves_into_the_same_review_file(fresh):
    _, out = fresh
    import html

    from course_lib.classroom.review_view import review_view

    view = review_view(out)
    box = view.questions["eval_and_no_grad"]
    asked = written_question("03", "eval_and_no_grad")
    assert html.escape(asked.expects[0], quote=True) in box.children[0].value
    row = next(r for r in box.rows if r.submission == "bo")
    assert ZH_ANSWER in row.children[0].value and row.top.value == 3 and row.top.disabled
    row.points.value, row.comment.value = 2, "<b>ok</b>"
    row.save.click()
    assert "saved" in row.status.value
    saved = review.review_path(out).read_text(encoding="utf-8")
    assert "bo,eval_and_no_grad,2" in saved
    row.points.value = 9
    row.save.click()
    assert "outside 0 to the maximum 3" in row.status.value
    assert review.review_path(out).read_text(encoding="utf-8") == saved
    again = review_view(out, "zh").questions["eval_and_no_grad"]
    bo = next(r for r in again.rows if r.submission == "bo")
    assert bo.points.value == 2 and bo.save.description == "保存"
    with in_language("zh"):
        assert html.escape(tr(asked.expects[0]), quote=True) in again.children[0].value
