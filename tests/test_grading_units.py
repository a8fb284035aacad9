"""Unit tests of the grader's parts that need no process: reading, analysis, report lines, verdicts,
records, gradebook (the pure steps of parent, judge and child)."""

import json

import pytest
import torch

from course_lib import notebooks
from course_lib.exercises import get, scoring, wire
from course_lib.exercises.runner import observe
from course_lib.grading import feedback, gradebook, record
from course_lib.grading.analyze import analyze, chapter_guess, check_source
from course_lib.grading.cells import (
    CappedStream,
    UnreadableNotebook,
    notebook_namespace,
    python_source,
    read_cells,
    run_notebook_cells,
)
from course_lib.grading.child import plain
from course_lib.grading.judge import Judge
from course_lib.grading.protocol import Child, parse
from course_lib.grading.records import CRASHED, TAMPERED, Verdict
from course_lib.grading.selftest import function_source, make_submission


def nb_bytes(*sources, kind="code") -> bytes:
    cells = [
        {"cell_type": kind, "metadata": {}, "source": s, "outputs": [], "execution_count": None}
        for s in sources
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


def cells_of(*sources):
    return analyze(read_cells(nb_bytes(*sources)))


@pytest.mark.parametrize(
    "data,reason",
    [
        (b"", "empty"),
        (b"not json at all", "not valid notebook JSON"),
        (b'{"cells": [{"cell_type": "co', "truncated"),
        (b'{"cells": "oops"}', "no list of cells"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        (b"[1, 2]", "no list of cells"),
    ],
)
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
    a = cells_of(
        "from course_lib import ch01_device_check as ch\nimport torch",
        'answer_device_label = "b"  # mine',
        "answer_tensor_bytes = 256 * 1024 * 4",
    )
    assert a.chapters == {"01"}
    assert a.literals["answer_device_label"][1:] == ("b", True)
    assert a.literals["answer_tensor_bytes"][2] is False  # computed: the notebook run decides
    md = analyze(read_cells(nb_bytes("<!-- answer: why -->\nBecause.", kind="markdown")))
    assert md.markdown_texts == {"why": "Because."}


@pytest.mark.parametrize(
    "cell, read",
    [
        ("<!-- answer: why -->\n*(Your answer: replace this line.)*", {}),
        ("<!-- answer: why -->\n*（你的答案：替换这一行。）*\n", {}),
        ("<!-- answer: why -->\n*(Your answer: replace this line.)*\nBecause it adds.", None),
        ("<!-- answer: why -->\nIt adds (*always*) into .grad", None),
    ],
)
def test_an_answer_cell_left_as_handed_out_is_no_answer(cell, read):
    md = analyze(read_cells(nb_bytes(cell, kind="markdown")))
    expected = read if read is not None else {"why": cell.splitlines()[-1]}
    assert md.markdown_texts == expected


def test_chapter_guess_prefers_the_chapter_a_notebook_answers():
    a = cells_of(
        "from course_lib import ch01_device_check, ch02_same_device_rule",
        "def move_to(b, d):\n    pass",
    )
    assert chapter_guess(a, {"01": ["gpu_names"], "02": ["move_to"]}) == {"02"}


def test_a_syntax_error_is_reported_against_the_function_it_hides():
    a = cells_of("def gpu_names(:\n    return []")
    assert not a.defines("gpu_names") and a.cell_with_text("gpu_names") == [1]


def test_check_source_runs_what_the_function_needs_and_nothing_else():
    a = cells_of(
        "import torch\nimport course_lib.exercises.spec as spec",
        "SCALE = 2\nspec.FunctionExercise.check = None\nprint('noise')",
        "def helper(x):\n    return x * SCALE",
        "def make_batch(b, n, d):\n    return helper(torch.ones(b, n, device=d))",
        "def unrelated():\n    import os\n    os.kill(1, 9)",
    )
    src = check_source(a, "make_batch")
    assert [name for name, _, _ in src["definitions"]] == ["SCALE", "helper", "make_batch"]
    assert all("spec.FunctionExercise" not in text for _, _, text in src["definitions"])
    assert "import torch" in src["imports"] and src["flags"] == []
    assert check_source(a, "unrelated")["flags"] == ["processes and files"]


def test_suspicious_code_is_flagged_but_model_eval_is_not():
    a = cells_of(
        "def f(model):\n    model.eval()\n    return model",
        "def g():\n    import sys\n    return sys._getframe(1).f_globals",
    )
    assert check_source(a, "f")["flags"] == []
    assert check_source(a, "g")["flags"] == ["frame walking"]


def _report(exercise, candidate) -> Child:
    """A Child that received a check process's report
    on `candidate`, line by line, as the parent does."""
    child = Child(pid=0, fd=-1, role="check")
    lines = [
        {"kind": "sandbox", "held": []},
        {"kind": "defined", "problems": [], "callable": True, "type": "function", "changed": []},
    ]
    for i, test in enumerate(exercise.graded_tests()):
        seen = observe(test.check.__class__(**test.check.inputs()), candidate, exercise.time_limit)
        lines.append({"kind": "test", "index": i, "seen": seen})
        if seen.get("stub"):
            break
    lines.append({"kind": "done", "tests": len(lines) - 2})
    child.feed(b"".join(wire.dumps(m).encode() + b"\n" for m in lines))
    return child


def _judged(exercise, child) -> Verdict:
    return Judge().function(exercise.id, child.tests, exercise.time_limit, child.last("defined"))


def test_the_judge_scores_observations_with_the_engines_rules():
    ex = get("ch01.gpu_names")
    wrong = ex.key().wrong_answers[0].function
    child = _report(ex, wrong)
    assert child.forged == 0 and len(child.tests) == len(ex.graded_tests())
    verdict, learner = _judged(ex, child), ex.check(wrong, include_hidden=True, record=False)
    assert (verdict.status, verdict.points) == (learner.status, learner.points)
    assert verdict.total == len(ex.graded_tests()) and verdict.passed == sum(
        t.passed for t in learner.tests
    )
    assert all(t["feedback"] == "" for t in verdict.tests if t["hidden"])
    assert _judged(ex, _report(ex, ex.key().solution)).status == "correct"


def test_an_incomplete_or_missing_report_is_no_verdict():
    ex = get("ch01.gpu_names")
    child = _report(ex, ex.key().solution)
    assert _judged(ex, child).points == ex.points
    assert (
        Judge().function(ex.id, child.tests[:2], ex.time_limit, child.last("defined")).status
        == CRASHED
    )
    undefined = Judge().function(
        ex.id, [], ex.time_limit, {"callable": False, "type": "NoneType", "problems": []}
    )
    assert undefined.status == "not attempted"
    assert (
        Judge()
        .function(ex.id, [], ex.time_limit, {"callable": False, "type": "int", "problems": []})
        .status
        == "incorrect"
    )


def test_forged_report_lines_are_counted_not_believed():
    """Lines the harness did not write: malformed, of another role, a test out of order or twice,
    anything after "done". None of them is a message; each is counted."""
    ex = get("ch01.gpu_names")
    honest = _report(ex, ex.key().solution)
    test0 = honest.tests[0].encode()
    child = Child(pid=0, fd=-1, role="check")
    bad = [
        b"not json",
        b'{"kind": "test", "index": 0}',
        b'{"kind": "cell", "cell": 1}',
        b"[" * 5000,
        b"\xff\xfe",
        b'{"kind": "test", "index": 0, "seen": {}, "extra": 1}',
        test0.replace(b'"index":0', b'"index":3'),
    ]
    child.feed(
        b"\n".join(bad)
        + b"\n"
        + test0
        + b"\n"
        + test0
        + b"\n"
        + wire.dumps({"kind": "done", "tests": 1}).encode()
        + b"\n"
        + test0
        + b"\n"
    )
    assert child.forged == len(bad) + 2 and len(child.tests) == 1 and child.last("done")
    notebook = Child(pid=0, fd=-1, role="notebook")
    notebook.feed(
        b'{"t": "guess", "kind": "cell_done", "answers": {}}\n{"kind": "cell", "cell": 2}\n'
    )
    assert notebook.forged == 1 and notebook.messages == [{"kind": "cell", "cell": 2}]


def test_report_lines_of_any_size_or_shape_never_raise():
    for role in ("check", "notebook"):
        child = Child(pid=0, fd=-1, role=role)
        child.feed(
            b"[" * 200_000
            + b"\n"
            + b"x" * (wire.MAX_BYTES + 10)
            + b"\n"
            + bytes(range(256))
            + b"\n"
            + b'"\\ud800"\n'
            + b'{"kind": "fatal", "error": "\\udfff"}\n'
        )
        assert child.forged >= 4
        child.feed(b"y" * (2**24 + 1))
        assert child.overflow
    assert parse(b'{"kind": "test", "index": true, "seen": {}}', "check") is None


def test_scoring_rules():
    assert scoring.points_for(3, [(1, True), (1, False), (2, True)]) == 2.25
    assert scoring.points_for(3, []) == 0.0 and scoring.quiz_points(2, True) == 2.0
    zero = scoring.zeroed({"points": 3, "flags": ["a"]}, "tampered", "why", "tampered")
    assert (
        zero["points"] == 0.0
        and zero["flags"] == ["a", "tampered"]
        and zero["status"] == "tampered"
    )
    assert scoring.review_flags("import gc\ngc.get_objects()") == ["grader internals"]


@pytest.mark.parametrize(
    "setting",
    [
        "torch.backends.cudnn.benchmark = True",
        "torch.backends.cuda.matmul.allow_tf32 = True",
        'torch.backends.cuda.matmul.fp32_precision = "tf32"',
        "if torch.backends.cudnn.deterministic == False: pass",
    ],
)
def test_settings_the_course_teaches_are_not_patching(setting):
    """Chapter 05 teaches these switches; an honest learner's notebook is not flagged for them."""
    assert scoring.review_flags(setting) == []


@pytest.mark.parametrize(
    "patch",
    [
        "torch.allclose = lambda *a, **k: True",
        "torch.nn.functional.mse_loss = fake",
        "x.__class__ = Y",
    ],
)
def test_patching_torch_is_flagged(patch):
    assert scoring.review_flags(patch) == ["patching"]


def test_quiz_answers_are_data_only():
    quiz = get("ch01.device_label")
    assert Judge.quiz(quiz.id, quiz.key().answer, True).status == "correct"
    assert Judge.quiz(quiz.id, {"unreadable": "Evil"}, True).status == "incorrect"
    assert Judge.quiz(quiz.id, None, False).status == "missing"
    assert (
        plain(torch.tensor(1048576)) == 1048576
        and plain({"a"}) == ["a"]
        and plain(object()) == {"unreadable": "object"}
    )


def test_verdicts_are_typed_and_zeroing_has_one_rule():
    v = Verdict("ch01.x", "correct", 3.0, 3.0, 4, 4, "ok", flags=["a"])
    assert Verdict.from_dict(v.as_dict()) == v
    with pytest.raises(ValueError):
        Verdict.from_dict(dict(v.as_dict(), status="whatever"))
    zeroed = Verdict.from_dict(scoring.zeroed(v.as_dict(), TAMPERED, "why", "tampered"))
    assert (zeroed.points, zeroed.passed, zeroed.status, zeroed.flags) == (
        0.0,
        0,
        TAMPERED,
        ["a", "tampered"],
    )


def test_records_hold_any_text_and_any_answer(tmp_path):
    """Lone surrogates, control characters and answers
    that are not plain JSON: written, never raised."""
    from course_lib.grading.intake import Submission

    ex = get("ch01.device_label")
    sub = Submission("stu\udcffdent", tmp_path / "x.ipynb", exercises=[ex])
    sub.verdicts[ex.id] = Verdict(
        ex.id, "incorrect", 0.0, 1.0, 0, 1, "bad \ud800 text", answer=[wire.ObjectValue("x")]
    )
    sub.run.update(status="ok", summary="ran \udfff", stdout="\x00\ud800", texts={"why": "\ud834"})
    rows, rec = record.build(sub)
    paths = gradebook.paths(tmp_path / "gb.csv")
    paths["feedback"].mkdir()
    book = gradebook.Gradebook(paths["gradebook"])

    class NoGuard:
        def wrote(self, *args):
            pass

    record.write(sub, paths, book, NoGuard(), [])
    assert "?" in paths["gradebook"].read_text(encoding="utf-8")
    assert json.loads(record.feedback_path(paths, sub.name, ".json").read_text())["submission"]


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

    gradebook.write_texts(
        tmp_path / "t.csv", {"=x": {"texts": {"a": "=HYPERLINK(1)", "b": "\t=1", "c": "@A1"}}}
    )
    cells = [c for row in csv.reader(open(tmp_path / "t.csv", newline="")) for c in row]
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]


def test_feedback_never_shows_hidden_test_feedback():
    record = {
        "submission": "x",
        "points": 0,
        "max_points": 3,
        "run": {},
        "texts": {},
        "exercises": [
            {
                "exercise": "ch01.a",
                "title": "A",
                "status": "incorrect",
                "points": 0,
                "max_points": 3,
                "detail": "",
                "tests": [
                    {
                        "name": "hidden one",
                        "hidden": True,
                        "passed": False,
                        "feedback": "Expected 7 got 8",
                    },
                    {"name": "visible", "hidden": False, "passed": False, "feedback": "Expected 1"},
                ],
            }
        ],
    }
    text = feedback.render(record)
    assert (
        "hidden one (hidden test): FAILED" in text
        and "Expected 7" not in text
        and "Expected 1" in text
    )


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
    closure = (lambda: lambda x: x if flag else -x)()
    assert "flag = True" in function_source(closure, "g")


def test_submission_builder_replaces_stubs_and_answer_lines():
    nb = make_submission(
        notebooks.path_of("01"),
        {"gpu_names": "def gpu_names():\n    return []"},
        {"device_label": "b"},
    )
    text = "\n".join(
        c["source"] if isinstance(c["source"], str) else "".join(c["source"]) for c in nb["cells"]
    )
    assert (
        "def gpu_names():\n    return []" in text
        and "answer_device_label = 'b'  # your letter" in text
    )


def test_a_cells_code_lives_until_the_notebook_has_run():
    """As in a kernel: a profile recorded in one cell and read in a later one (chapter 06's memory
    viewer) must not point at freed code (it raised UnicodeDecodeError)."""
    cells = [
        (1, "import sys, weakref\nref = weakref.ref(sys._getframe().f_code)"),
        (2, "import gc\ngc.collect()\nalive = ref() is not None"),
    ]
    namespace = notebook_namespace()
    outcomes = run_notebook_cells(cells, namespace)
    assert [o["status"] for o in outcomes] == ["ok", "ok"], outcomes
    assert namespace["alive"] is True


def test_the_zygote_pays_torch_compiles_first_use_only_for_chapters_that_call_it():
    """A chapter whose module calls torch.compile gets the compiler stack imported once in the
    zygote (each of its notebook processes would pay seconds for it); other chapters do not."""
    import subprocess
    import sys

    from course_lib.grading import warmup

    assert warmup.chapter_first_uses({"course_lib.ch05_speedups"}) == [warmup._compiler_stack]
    assert warmup.chapter_first_uses({"course_lib.ch01_device_check"}) == []
    probe = (
        "import os, sys, torch\n"
        "from course_lib.grading import warmup\n"
        "warmup.visible_references(['ch05.time_it'])\n"
        "print('torch._dynamo' in sys.modules, len(os.listdir('/proc/self/task')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        env={**__import__("os").environ, "OMP_NUM_THREADS": "1"},
    ).stdout
    assert out.split() == ["True", "1"]  # imported, and no thread started before the forks


# ------------------------------------------------- the judge the zygote forks, and its fallback
def forked_judge_that_is_gone(read_first: bool):
    """A JudgeClient on the pipes of a forked judge that never started (the zygote failed before
    forking it: both far ends closed), or that died while preparing (its request read, no reply)."""
    import os

    from course_lib.grading.judge import JudgeClient, judge_pipes

    ours, theirs = judge_pipes()
    if read_first:  # keep the request end open until prepare has written to it, then die
        client = JudgeClient(forked=ours)
        client.prepare(["ch01.choose_device"])
        for fd in theirs:
            os.close(fd)
        return client
    for fd in theirs:
        os.close(fd)
    client = JudgeClient(forked=ours)
    client.prepare(["ch01.choose_device"])
    return client


@pytest.mark.parametrize("read_first", [False, True], ids=["never-started", "died-preparing"])
def test_a_forked_judge_that_is_gone_is_replaced_by_a_fresh_interpreter(read_first):
    client = forked_judge_that_is_gone(read_first)
    try:
        prepared = client.finish_prepare()
        assert client.restarts == 1 and client.process is not None  # a fresh `-m judge`
        assert [len(specs) > 0 for specs in prepared["specs"].values()] == [True]
        assert prepared["problems"] == []
    finally:
        client.close()


# ------------------------------------------------- huge pages for the zygote's memory
def test_the_malloc_tunable_reaches_the_zygote_only():
    """The grader adds glibc's huge-page tunable to the zygote's environment and keeps the
    teacher's own tunables; the zygote takes it out again, so no graded process inherits it."""
    from course_lib.grading import hugepages

    env = hugepages.with_tunable({"GLIBC_TUNABLES": "glibc.malloc.arena_max=2", "X": "1"})
    assert env["GLIBC_TUNABLES"] == f"glibc.malloc.arena_max=2:{hugepages.TUNABLE}"
    hugepages.drop_tunable(env)
    assert env == {"GLIBC_TUNABLES": "glibc.malloc.arena_max=2", "X": "1"}
    alone = hugepages.with_tunable({})
    hugepages.drop_tunable(alone)
    assert alone == {}


SMAPS = """\
55d0c0000000-55d0c8000000 rw-p 00000000 00:00 0                          [heap]
Rss:              131072 kB
Anonymous:        131072 kB
AnonHugePages:     65536 kB
7f0000000000-7f0001000000 rw-p 00000000 00:00 0
Anonymous:         16384 kB
AnonHugePages:         0 kB
7f0002000000-7f0002400000 rw-p 00000000 08:01 42                         /usr/lib/libx.so
Anonymous:          4096 kB
7f0003000000-7f0003400000 r--p 00000000 00:00 0
Anonymous:          4096 kB
7f0004000000-7f0004400000 rw-s 00000000 00:01 7                          /dev/zero (deleted)
Anonymous:          4096 kB
"""


def test_only_private_anonymous_memory_is_collapsed(tmp_path):
    from course_lib.grading import hugepages

    smaps = tmp_path / "smaps"
    smaps.write_text(SMAPS)
    assert hugepages.small_page_regions(str(smaps)) == [
        (0x55D0C0000000, 0x55D0C8000000, 64 << 20),
        (0x7F0000000000, 0x7F0001000000, 16 << 20),
    ]


COLLAPSE = """\
import mmap, sys
from course_lib.grading import hugepages
def huge_kb():
    with open("/proc/self/smaps_rollup") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("AnonHugePages:"))
block = mmap.mmap(-1, 64 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
for i in range(0, len(block), 4096):
    block[i] = i // 4096 % 251
before = huge_kb()
asked = hugepages.collapse()
assert all(block[i] == i // 4096 % 251 for i in range(0, len(block), 4096)), "memory changed"
print(hugepages.huge_page_size(), asked, before, huge_kb())
"""


def test_collapsing_keeps_every_byte_and_maps_huge_pages_where_the_kernel_can(tmp_path):
    """In a fresh interpreter with 64 MB written: the contents survive; on a kernel with
    transparent huge pages and MADV_COLLAPSE, most of it is then mapped in huge pages."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", COLLAPSE], capture_output=True, text=True, check=True, cwd=tmp_path
    ).stdout.split()
    size, asked, before, after = map(int, out)
    if size and asked:  # the kernel did collapse: the block is now (mostly) huge pages
        assert after - before >= 32 << 10, out
    else:
        assert asked == 0, out
