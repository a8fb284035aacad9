"""Written answers graded by the teacher (issue 39, item 2): the review file, its checks, its
points in the gradebook and the exports, and the review server (the page itself is driven in
Chromium by tests/browser/test_review_page.py)."""

import csv
import json
import urllib.error
import urllib.request

import pytest

from course_lib.classroom import exports, review, review_page
from support import submissions

QUESTION = "why_label"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """alice, bob (reference) and carol (blank), each with a written answer; graded."""
    return submissions.graded_written_class(tmp_path_factory.mktemp("review"))


def totals(out):
    rows = csv.DictReader(open(out, encoding="utf-8"))
    return {r["submission"]: float(r["points"]) for r in rows if r["exercise"] == "TOTAL"}


def written(out):
    rows = csv.DictReader(open(out, encoding="utf-8"))
    return {r["submission"]: r for r in rows if r["exercise"].endswith(".written." + QUESTION)}


@pytest.fixture
def fresh(graded):
    """The graded class with no review yet (each test starts from the grader's own gradebook)."""
    subs, out = graded
    review.review_path(out).unlink(missing_ok=True)
    review.apply(out)
    return subs, out


def test_the_answers_are_read_as_written(fresh):
    _, out = fresh
    answers = review.written_answers(review.report.load(out))
    assert answers[("bob", QUESTION)] == submissions.WRITTEN["bob"][1]
    assert len(answers) == 3
    data = review_page.answers_json(out, "en")
    assert data["questions"][0]["prompt"] == submissions.QUESTION  # as text, markup and all
    assert data["questions"][0]["declared"] is None  # a teacher's own question: no declaration


def test_a_review_reaches_the_gradebook_the_summary_and_canvas(fresh):
    _, out = fresh
    before = totals(out)
    review.save(out, "alice", QUESTION, 2, 3, "good")
    review.save(out, "carol", QUESTION, 0.5, 3, "")
    after = totals(out)
    assert after["alice"] == before["alice"] + 2 and after["carol"] == before["carol"] + 0.5
    assert after["bob"] == before["bob"] and "bob" not in written(out)
    row = written(out)["alice"]
    assert (row["status"], row["points"], row["max_points"], row["detail"]) == (
        "reviewed",
        "2",
        "3",
        "good",
    )
    summary = {
        r["submission"]: r for r in csv.DictReader(open(out.with_name("gradebook.summary.csv")))
    }
    assert float(summary["alice"]["points"]) == after["alice"]
    report = exports.export(out, ["canvas", "nbgrader"])
    canvas = list(csv.reader(open(report.files["canvas"])))
    alice = next(r for r in canvas if r[0] == "alice")
    assert float(alice[-1]) == after["alice"]
    assert float(canvas[1][-1]) >= after["alice"]  # Points Possible holds the reviewed answer


def test_regrading_keeps_the_reviews(fresh):
    subs, out = fresh
    review.save(out, "alice", QUESTION, 2, 3, "good")
    proc = submissions.run_grader(subs, out, "--workers", 2, "--fresh")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "written answers reviewed by the teacher: 1" in proc.stdout
    assert written(out)["alice"]["points"] == "2"


def test_an_answer_changed_since_its_review_is_marked_for_review_again(fresh, tmp_path):
    subs, out = fresh
    review.save(out, "alice", QUESTION, 2, 3, "good")
    changed = dict(submissions.WRITTEN, alice=("ch01-reference", "Something else entirely."))
    submissions.written_class(subs.parent, changed)
    try:
        proc = submissions.run_grader(subs, out, "--workers", 2, "--fresh")
        assert proc.returncode == 0, proc.stderr[-3000:]
        row = written(out)["alice"]
        assert (row["status"], row["points"]) == ("review again", "0")
        assert review.CHANGED_FLAG in row["flags"]
    finally:
        submissions.written_class(subs.parent)
        submissions.run_grader(subs, out, "--workers", 2, "--fresh")


@pytest.mark.parametrize(
    "edit, error",
    [
        ("submission,question,points\nalice,why_label,1\n", "line 1: missing column(s) max_points"),
        (
            "submission,question,points,max_points\nalice,why_label,4,3\n",
            "line 2: 4 points is outside",
        ),
        (
            "submission,question,points,max_points\nmallory,why_label,1,3\n",
            "line 2: unknown student",
        ),
        ("submission,question,points,max_points\nalice,why_label,lots,3\n", "is not a number"),
        ("submission,question,points,max_points\nalice,other,1,3\n", "has no written answer"),
    ],
)
def test_a_hand_edited_file_that_is_wrong_says_where_and_loses_nothing(fresh, edit, error):
    _, out = fresh
    path = review.review_path(out)
    path.write_text(edit)
    with pytest.raises(review.ReviewError, match=error.replace("(", r"\(").replace(")", r"\)")):
        review.apply(out)
    with pytest.raises(review.ReviewError):
        review.save(out, "bob", QUESTION, 1, 3)
    assert path.read_text() == edit  # nothing written over what the teacher typed


def test_a_review_typed_by_hand_is_pinned_to_the_answer_it_reviewed(fresh):
    _, out = fresh
    path = review.review_path(out)
    path.write_text("submission,question,points,max_points\nalice,why_label,1,3\n")
    review.apply(out)
    pinned = next(csv.DictReader(open(path, encoding="utf-8")))
    assert pinned["answer_sha256"] == review.digest(submissions.WRITTEN["alice"][1])
    assert (pinned["points"], pinned["max_points"]) == ("1", "3")
    saved = path.read_text()
    review.apply(out)
    assert path.read_text() == saved  # pinned once; a pinned file is left as it is


def test_a_review_above_the_maximum_is_refused_and_nothing_is_lost(fresh):
    _, out = fresh
    review.save(out, "alice", QUESTION, 2, 3, "good")
    saved = review.review_path(out).read_text()
    with pytest.raises(review.ReviewError, match="outside 0 to the maximum 3"):
        review.save(out, "bob", QUESTION, 5, 3)
    assert review.review_path(out).read_text() == saved


@pytest.fixture
def server(fresh):
    _, out = fresh
    srv = review_page.serve(out)
    import threading

    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv, out
    srv.shutdown()
    srv.server_close()


def request(url, body=None, token=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"X-Review-Token": token or ""})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read() or b"null") if "json" in r.headers[
                "Content-Type"
            ] else r.read()
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_the_server_listens_on_loopback_and_wants_its_token(server):
    srv, _ = server
    host, port = srv.server_address[:2]
    assert host == "127.0.0.1"
    base = f"http://{host}:{port}"
    assert request(base + "/api/answers")[0] == 403
    assert request(base + "/api/review", {"submission": "alice"}, token="guess")[0] == 403
    status, data = request(base + "/api/answers", token=srv.token)
    assert status == 200 and data["questions"][0]["question"] == QUESTION


def test_the_server_saves_a_review_and_refuses_a_wrong_one_with_its_reason(server):
    srv, out = server
    host, port = srv.server_address[:2]
    url = f"http://{host}:{port}/api/review"
    ok = {"submission": "bob", "question": QUESTION, "points": 1, "max_points": 2, "comment": "x"}
    assert request(url, ok, srv.token)[0] == 200
    saved = review.review_path(out).read_text()
    status, data = request(url, dict(ok, points=9), srv.token)
    assert status == 400 and "outside 0 to the maximum 2" in data["error"]
    assert review.review_path(out).read_text() == saved
    assert written(out)["bob"]["points"] == "1"


def test_the_page_and_its_errors_speak_chinese(fresh):
    _, out = fresh
    data = review_page.answers_json(out, "zh")
    assert data["labels"]["Save"] == "保存" and data["labels"]["Points"] == "得分"
    from course_lib.i18n import tr
    from course_lib.i18n.catalogue import in_language

    with pytest.raises(review.ReviewError) as err:
        review.save(out, "bob", QUESTION, 5, 3)
    with in_language("zh"):
        said = tr(str(err.value))
    assert said == "这条评分：5 分超出了 0 到满分 3 的范围", said
    path = review.review_path(out)
    path.write_text("submission,question,points,max_points\nmallory,why_label,1,3\n")
    with pytest.raises(review.ReviewError) as err:
        review.apply(out)
    with in_language("zh"):
        said = tr(str(err.value))
    assert said.endswith("第 2 行：成绩表里没有学生 'mallory'"), said
