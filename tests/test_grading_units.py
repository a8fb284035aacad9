"""Unit tests of the grader's parts that need no process: reading, analysis, verdicts, gradebook."""
import json

import pytest
import torch

from course_lib.exercises import get
from course_lib.grading import feedback, gradebook
from course_lib.grading.analyze import analyze, check_source, chapter_guess
from course_lib.grading.cells import CappedStream, UnreadableNotebook, python_source, read_cells
from course_lib.grading.executor import plain
from course_lib.grading.selftest import function_source, make_submission, chapter_notebook
from course_lib.exercises import scoring
from course_lib.grading.protocol import Child, encode_fields, sealed_writer
from course_lib.grading.verdict import check_quiz, judge


def nb_bytes(*sources, kind="code") -> bytes:
    cells = [{"cell_type": kind, "metadata": {}, "source": s, "outputs": [], "execution_count": None}
             for s in sources]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


def cells_of(*sources):
    return analyze(read_cells(nb_bytes(*sources)))


@pytest.mark.parametrize("data,reason", [
    (b"", "empty"), (b"not json at all", "not valid notebook JSON"), (b'{"cells": [{"cell_type": "co', "truncated"),
    (b'{"cells": "oops"}', "no list of cells"), (b"\xff\xfe\x00garbage", "not UTF-8"), (b"[1, 2]", "no list of cells"),
])
def test_unreadable_notebooks_say_why(data, reason):
    with pytest.raises(UnreadableNotebook, match=reason):
        read_cells(data)


def test_cells_are_read_from_lists_and_old_formats():
    assert read_cells(nb_bytes(["x = 1\n", "y = 2"])) == [("code", "x = 1\ny = 2")]
    v3 = {"worksheets": [{"cells": [{"cell_type": "code", "input": "z = 3"}]}], "nbformat": 3}
    assert read_cells(json.dumps(v3).encode()) == [("code", "z = 3")]


def test_ipython_syntax_becomes_python():
    assert "run_line_magic" in python_source("%matplotlib inline\nx = 1")
    assert "system" in python_source("!pip install torch")
    assert python_source("%%time\ndef f():\n    return 1") == "def f():\n    return 1"


def test_the_last_top_level_definition_wins_in_any_cell():
    a = cells_of("def f():\n    return 1", "print('moved cells')", "def f():\n    return 2")
    assert "return 2" in a.bindings["f"].source
    a = cells_of("def f():\n    return 1", "f = lambda: 3")
    assert a.bindings["f"].kind == "assign" and "lambda" in a.bindings["f"].source
    a = cells_of("if True:\n    def f():\n        return 1")
    assert a.bindings["f"].kind == "other"


def test_answers_chapters_and_free_text_are_read_statically():
    a = cells_of("from course_lib import ch01_device_check as ch\nimport torch",
                 'answer_device_label = "b"  # mine', "answer_tensor_bytes = 256 * 1024 * 4")
    assert a.chapters == {"01"}
    assert a.literals["answer_device_label"][1:] == ("b", True)
    assert a.literals["answer_tensor_bytes"][2] is False  # computed: the notebook run decides
    md = analyze(read_cells(nb_bytes("<!-- answer: why -->\nBecause.", kind="markdown")))
    assert md.markdown_texts == {"why": "Because."}


def test_chapter_guess_prefers_the_chapter_a_notebook_answers():
    a = cells_of("from course_lib import ch01_device_check, ch02_same_device_rule", "def move_to(b, d):\n    pass")
    assert chapter_guess(a, {"01": ["gpu_names"], "02": ["move_to"]}) == {"02"}


def test_a_syntax_error_is_reported_against_the_function_it_hides():
    a = cells_of("def gpu_names(:\n    return []")
    assert not a.defines("gpu_names") and a.cell_with_text("gpu_names") == [1]


def test_check_source_runs_what_the_function_needs_and_nothing_else():
    a = cells_of("import torch\nimport course_lib.exercises.spec as spec",
                 "SCALE = 2\nspec.FunctionExercise.check = None\nprint('noise')",
                 "def helper(x):\n    return x * SCALE",
                 "def make_batch(b, n, d):\n    return helper(torch.ones(b, n, device=d))",
                 "def unrelated():\n    import os\n    os.kill(1, 9)")
    src = check_source(a, "make_batch")
    assert [name for name, _, _ in src["definitions"]] == ["SCALE", "helper", "make_batch"]
    assert all("spec.FunctionExercise" not in text for _, _, text in src["definitions"])
    assert "import torch" in src["imports"] and src["flags"] == []
    assert check_source(a, "unrelated")["flags"] == ["processes and files"]


def test_suspicious_code_is_flagged_but_model_eval_is_not():
    a = cells_of("def f(model):\n    model.eval()\n    return model",
                 "def g():\n    import sys\n    return sys._getframe(1).f_globals")
    assert check_source(a, "f")["flags"] == []
    assert check_source(a, "g")["flags"] == ["frame walking"]


def _sealed(key, *lines) -> Child:
    """A Child that received these payloads through a real sealed writer."""
    import os
    r, w = os.pipe()
    send = sealed_writer(w, key)
    for fields in lines:
        send(encode_fields(*fields))
    os.close(w)
    child = Child(pid=0, fd=r, token="t", role="check", key=key)
    child.feed(os.read(r, 1 << 20))
    os.close(r)
    return child


def test_judge_scores_with_its_own_weights_and_rejects_foreign_test_lists():
    ex = get("ch01.gpu_names")
    spec = [(t.name, t.weight, t.hidden or i >= len(ex.tests)) for i, t in enumerate(ex.all_tests(True))]
    rows = [("test", i, n, int(i % 2 == 0), "incorrect", "secret value 42") for i, (n, _, _) in enumerate(spec)]
    child = _sealed(b"k" * 32, ("defined",), *rows, ("done", len(spec)))
    verdict = judge(child.sealed, child.forged, ex, spec)
    share = sum(w for i, (_, w, _) in enumerate(spec) if i % 2 == 0) / sum(w for _, w, _ in spec)
    assert verdict["status"] == "incorrect" and verdict["points"] == pytest.approx(ex.points * share, abs=1e-3)
    assert all(t["feedback"] == "" for t in verdict["tests"] if t["hidden"])
    short = _sealed(b"k" * 32, ("defined",), *rows[:1], ("done", 1))
    assert judge(short.sealed, 0, ex, spec)["status"] == "tampered"
    unfinished = _sealed(b"k" * 32, ("defined",), *rows)
    assert judge(unfinished.sealed, 0, ex, spec)["status"] == "crashed"
    assert judge([], 0, ex, spec)["points"] == 0


def test_sealed_lines_cannot_be_forged_or_replayed():
    good = _sealed(b"k" * 32, ("test", 0, "a", 1, "correct", ""), ("done", 1))
    assert good.forged == 0 and len(good.sealed) == 2
    child = Child(pid=0, fd=-1, token="t", role="check", key=b"k" * 32)
    import os
    r, w = os.pipe()
    sealed_writer(w, b"x" * 32)(encode_fields("test", 0, "a", 1, "correct", ""))  # another key
    os.close(w)
    child.feed(os.read(r, 4096))
    os.close(r)
    line = b"S " + b"0" * 64 + b" 0 " + encode_fields("test", 0, "a", 1, "correct", "").hex().encode() + b"\n"
    child.feed(line)
    r, w = os.pipe()
    send = sealed_writer(w, b"k" * 32)
    send(encode_fields("test", 0, "a", 1, "correct", ""))
    os.close(w)
    replay = os.read(r, 4096)
    os.close(r)
    child.feed(replay + replay)  # the second copy is a replay: wrong sequence number
    assert child.forged == 3 and len(child.sealed) == 1


def test_scoring_rules():
    assert scoring.points_for(3, [(1, True), (1, False), (2, True)]) == 2.25
    assert scoring.points_for(3, []) == 0.0 and scoring.quiz_points(2, True) == 2.0
    zero = scoring.zeroed({"points": 3, "flags": ["a"]}, "tampered", "why", "tampered")
    assert zero["points"] == 0.0 and zero["flags"] == ["a", "tampered"] and zero["status"] == "tampered"
    assert scoring.review_flags("import gc\ngc.get_objects()") == ["grader internals"]


def test_quiz_answers_are_data_only():
    quiz = get("ch01.device_label")
    assert check_quiz(quiz, quiz.key().answer, True)["status"] == "correct"
    assert check_quiz(quiz, {"unreadable": "Evil"}, True)["status"] == "incorrect"
    assert check_quiz(quiz, None, False)["status"] == "missing"
    assert plain(torch.tensor(1048576)) == 1048576 and plain({"a"}) == ["a"] and plain(object()) == {
        "unreadable": "object"}


def test_gradebook_resume_drops_torn_and_unfinished_rows(tmp_path):
    path = tmp_path / "gb.csv"
    book = gradebook.Gradebook(path)
    row = dict(submission="alice", exercise="ch01.x", points=1.0, max_points=1, status="correct")
    book.append("alice", [row, dict(row, exercise=gradebook.TOTAL)])
    with open(path, "a") as f:  # bob was half written when the grader was killed
        f.write(gradebook.render([dict(row, submission="bob")]) + "bob,ch01.y,0,1,incor")
    again = gradebook.Gradebook(path)
    assert list(again.done) == ["alice"] and again.repaired
    assert path.read_text().count("bob") == 0 and path.read_text().count("alice") == 2


def test_gradebook_refuses_a_foreign_file_and_defuses_formulas(tmp_path):
    (tmp_path / "x.csv").write_text("name,grade\n")
    with pytest.raises(gradebook.NotAGradebook):
        gradebook.Gradebook(tmp_path / "x.csv")
    assert gradebook.clean("=HYPERLINK(1)").startswith("'") and gradebook.clean("-1.5") == "-1.5"
    assert "\n" not in gradebook.clean("two\nlines")
    for text in ("=1", "+1+a", "-a", "@SUM(1)", "\t=1", "\r=1", "\n=1"):
        assert gradebook.neutral(text) == "'" + text
    assert gradebook.neutral("-2") == "-2" and gradebook.neutral("ok =1") == "ok =1"


def test_texts_csv_is_safe_in_a_spreadsheet(tmp_path):
    import csv
    gradebook.write_texts(tmp_path / "t.csv", {"=x": {"texts": {"a": "=HYPERLINK(1)", "b": "\t=1", "c": "@A1"}}})
    cells = [c for row in csv.reader(open(tmp_path / "t.csv", newline="")) for c in row]
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]


def test_feedback_never_shows_hidden_test_feedback():
    record = {"submission": "x", "points": 0, "max_points": 3, "run": {}, "texts": {}, "exercises": [
        {"exercise": "ch01.a", "title": "A", "status": "incorrect", "points": 0, "max_points": 3, "detail": "",
         "tests": [{"name": "hidden one", "hidden": True, "passed": False, "feedback": "Expected 7 got 8"},
                   {"name": "visible", "hidden": False, "passed": False, "feedback": "Expected 1"}]}]}
    text = feedback.render(record)
    assert "hidden one (hidden test): FAILED" in text and "Expected 7" not in text and "Expected 1" in text


def test_capped_stream_keeps_head_and_tail():
    s = CappedStream(cap=10)
    s.write("a" * 100 + "END")
    assert s.total == 103 and s.text().startswith("a" * 10) and s.text().endswith("END")


def test_key_functions_become_notebook_definitions():
    key = get("ch01.make_batch").key()
    source = function_source(key.wrong_answers[0].function, "make_batch")  # a lambda
    assert source.startswith("def make_batch(b, n, d):") and ".to(d)" in source
    assert function_source(lambda: SOMETHING_UNDEFINED, "f") is None  # noqa: F821
    flag = True
    closure = (lambda: (lambda x: x if flag else -x))()
    assert "flag = True" in function_source(closure, "g")


def test_submission_builder_replaces_stubs_and_answer_lines():
    nb = make_submission(chapter_notebook("01"), {"gpu_names": "def gpu_names():\n    return []"},
                         {"device_label": "b"})
    text = "\n".join(c["source"] if isinstance(c["source"], str) else "".join(c["source"]) for c in nb["cells"])
    assert "def gpu_names():\n    return []" in text and 'answer_device_label = \'b\'   # your letter' in text


@pytest.mark.parametrize("body,tripped", [
    ("return sum(range(10))", False),
    ("logging.getLogger('x').warning('from a library, inside the function')", False),
    ("return traceback.format_stack()", False),
    ("return sys._getframe(1).f_locals", True),
    ("return inspect.currentframe().f_back", True),
    ("return inspect.stack()", True),
    ("return list(traceback.walk_stack(None))", True),
    ("return gc.get_objects()", True),
    ("return ctypes.string_at(id(1), 8)", True),
    ("return open('/proc/self/mem', 'rb')", True),
])
def test_the_tripwire_stops_student_code_reaching_for_frames_but_not_libraries(body, tripped):
    """Forked: the hook cannot be removed. Library frame use (logging, traceback text) passes."""
    import os
    from course_lib.grading import tripwire
    source = "import sys, gc, inspect, traceback, logging, ctypes\ndef f():\n    " + body
    pid = os.fork()
    if pid == 0:
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
        tripwire.remember_trusted_code()
        tripwire.arm(lambda payload: None, lambda *fields: b"")
        namespace = {}
        exec(compile(source, "<cell 1>", "exec"), namespace)
        namespace["f"]()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) == tripped, status
