"""The Chinese edition of everything course_lib says (issue 23, items 3 and 4).

(a) every message that reaches a learner, collected in English by running what exists, has a
Chinese entry; (b) every entry keeps its English placeholders; (c) a new English message, a changed
one, and an entry with a wrong placeholder fail those tests; (d) in Chinese, a check verdict, a
quiz,
the explainer, doctor and a grader's feedback file come out in Chinese; and a teacher hands out
either edition (`release --lang`).
"""

import csv
import json
import re
import subprocess
import sys

import pytest
import torch

from course_lib.chapters import Chapter
from course_lib.exercises import Declarations, Fail, Test, get
from course_lib.i18n import catalogue, editions, language, use_language
from course_lib.i18n.catalogue import CJK, in_language, is_prose, problems, translate, untranslated
from course_tools import messages
from support import NOTEBOOKS, ROOT, benchmark
from support import submissions as build

_CODE = re.compile(
    r"（'[^）]*'）|`[^`]*`|'[^'\n]*'|\"[^\"\n]*\"|“[^”\n]*”"  # code and quotes
    r"|\S*(?:Error|Exception|Warning|Exceeded)\b.*$"
)  # an error message, to the line's end
_WORD = re.compile(r"^[A-Za-z][a-z]+[,.;:!?]?$")


def english_sentences(text: str, kept=()) -> list:
    """Lines of `text` that hold an English sentence (four prose words in a row), code, quotes,
    Python's or PyTorch's error messages and the parts `kept` as they are aside: what a Chinese page
    must not show."""
    found = []
    text = re.sub(
        r"(?s)<style>.*?</style>|<pre[^>]*>.*?</pre>", " ", str(text)
    )  # CSS; code shown as code
    for part in sorted(kept, key=len, reverse=True):
        text = text.replace(part, " ")
    for line in text.splitlines():
        line = line.split("  # ")[0]  # a comment in a line of code (the explainer's fixes) is code
        words, run = _CODE.sub(" \0 ", re.sub(r"<[^>]+>", " ", line)).split(), 0
        for word in words:
            run = (
                run + 1 if _WORD.match(word) and word.strip(",.;:!?") not in catalogue.NAMES else 0
            )
            if run >= 4:
                found.append(line.strip())
                break
    return found


def assert_chinese(text: str, where: str) -> None:
    assert CJK.search(text), f"{where}: no Chinese at all:\n{text[:2000]}"
    left = english_sentences(text, KEPT[0])
    assert not left, f"{where}: English sentences left:\n" + "\n".join(left)


KEPT = [set()]  # what the translations of this test kept as they are (PyTorch's messages)


@pytest.fixture
def zh():
    with in_language("zh"), catalogue.keeping() as kept:
        KEPT[0] = kept
        yield
    KEPT[0] = set()


@pytest.fixture(scope="module")
def collected():
    """Every message, collected in English (about half a minute): {message: where it was seen}."""
    return messages.collect()


# ---------------------------------------------------------------- (a) completeness
def test_every_collected_message_has_a_chinese_entry(collected):
    assert len(collected) > 1000, "the collector found too few messages to trust"
    sources = {where.split(" ")[0].split(":")[0] for where in collected.values()}
    assert {
        "exercises",
        "explainer",
        "doctor",
        "skip_lines",
        "widgets",
        "feedback_files",
    } <= sources
    assert any(w.startswith("benchmarks/gpu_figures.py") for w in sources), (
        "recorded GPU figures' lines"
    )
    assert any(w.startswith("course_lib/grading/") for w in sources), "the grader's reasons"
    missing = messages.missing(collected)
    assert not missing, (
        f"{len(missing)} message(s) have no Chinese entry; translate them (python -m "
        "course_tools.messages --missing lists them with their source line):\n"
        + "\n".join(f"  {text!r}  [{where}]" for text, where in sorted(missing.items()))
    )


def test_the_collection_runs_what_a_learner_meets(collected):
    """Spot checks that each source was really run: a wrong answer's feedback, a quiz's why, a hint,
    an explainer entry, a doctor diagnosis, a skip line's GPU note, the progress table, feedback
    files."""
    texts = set(collected)
    for needle in (
        "Correct: Choose the device without hard-coding it (3/3 points)",  # a verdict
        "Wrap the name in `torch.device(...)`. A plain string works in some places but not all.",
        "A `torch.device` owns no memory at all, on any machine.",  # a quiz's why
        "Tensors on two devices in one operation",  # an explainer entry
        "exercises done",  # the progress table
        "Your written answers (read by your teacher)",
    ):  # a feedback file
        assert needle in texts, needle
    assert any(
        t.startswith("NVIDIA driver 550.54.14 is too old") for t in texts
    )  # doctor, simulated
    assert any(t.startswith("[GPU only] skipped (") for t in texts)  # a skip line
    assert any(
        "stub" not in t and t.startswith("`choose_device` still raises") for t in texts
    )  # the stub


def test_the_answer_keys_own_names_stay_out_of_the_student_bundles_catalogue():
    """A hidden test's name is the key's secret: its translation lives in course_lib/key/zh.json."""
    shared = json.loads((ROOT / "course_lib" / "i18n" / "zh.json").read_text(encoding="utf-8"))
    own = json.loads((ROOT / "course_lib" / "key" / "zh.json").read_text(encoding="utf-8"))
    hidden = {
        t.name
        for ex in (get("ch01.choose_device"), get("ch07.average_gradients"))
        for t in ex.key().hidden_tests
    }
    assert hidden <= set(own) and not hidden & set(shared)


# ---------------------------------------------------------------- (b) placeholders
def test_every_entry_keeps_its_english_placeholders_and_is_chinese():
    entries = catalogue.entries("zh")
    assert len(entries) > 1000
    for english, chinese in entries.items():
        assert catalogue.placeholders(english) == catalogue.placeholders(chinese), (
            english,
            chinese,
        )
    assert problems("zh") == []


# ---------------------------------------------------------------- (c) drift fails the tests
def _throwaway():
    declare = Declarations(Chapter("98", "drift", "Drift"))  # not in CHAPTERS: never registered

    def judge(candidate):
        raise Fail(
            "Your function forgot the new rule that was added today.",
            expected="a rule",
            hint="Read the new paragraph again.",
        )

    quiz = declare.quiz(
        "new_quiz",
        title="A question nobody has translated",
        question="Which of these sentences is brand new?",
        digest="0" * 16,
        options={"a": "This option was written a minute ago", "b": "And so was this one"},
    )
    ex = declare.function_exercise(
        "new_fn",
        title="A new exercise",
        prompt="",
        points=1,
        tests=[Test("catches the new rule", judge)],
        hints=["A new hint for it."],
    )
    return quiz, ex


def test_a_new_english_message_without_translation_fails_completeness():
    quiz, ex = _throwaway()

    def source():
        messages._quiz(quiz)
        messages._render(ex.check(lambda: None, record=False))
        messages._hints(ex)

    missing = messages.missing(messages.collect([source], static=False))
    for text in (
        "A question nobody has translated",
        "Which of these sentences is brand new?",
        "This option was written a minute ago",
        "Your function forgot the new rule that was added today.",
        "Read the new paragraph again.",
        "A new hint for it.",
        "catches the new rule",
    ):
        assert text in missing, f"{text!r} was not reported"
    # translated, the same messages pass
    with pytest.MonkeyPatch.context() as mp:
        extra = {t: "新的中文" for t in missing}
        mp.setattr(
            catalogue, "entries", lambda lang, real=catalogue.entries: {**real(lang), **extra}
        )
        assert messages.missing(messages.collect([source], static=False)) == {}


def test_a_changed_english_message_fails_completeness(monkeypatch):
    ex = get("ch01.choose_device")
    monkeypatch.setattr(
        ex, "hints", [ex.hints[0] + " (now with a new sentence in English.)"] + ex.hints[1:]
    )
    missing = messages.missing(messages.collect([lambda: messages._hints(ex)], static=False))
    assert list(missing) == [ex.hints[0]]


def test_an_entry_with_a_wrong_placeholder_fails(tmp_path, monkeypatch):
    good = dict(catalogue.entries("zh"))
    bad = dict(
        good,
        **{
            "Rank {rank} got too few indices ({where}).": (
                "rank {rnak} 分到的索引太少了（{where}）。"
            ),
            "Fix:": "Fix:",
        },
    )
    path = tmp_path / "zh.json"
    path.write_text(json.dumps(bad, ensure_ascii=False), encoding="utf-8")
    monkeypatch.setitem(catalogue.CATALOGUES, "zh", (path,))
    catalogue.entries.cache_clear()
    catalogue.templates.cache_clear()
    try:
        said = "\n".join(problems("zh"))
        assert (
            "Rank {rank} got too few indices" in said
            and "['rank', 'where']" in said
            and "rnak" in said
        )
        assert "'Fix:': the zh entry 'Fix:' holds no Chinese" in said
    finally:
        monkeypatch.undo()
        catalogue.entries.cache_clear()
        catalogue.templates.cache_clear()
    assert problems("zh") == []


# ---------------------------------------------------------------- the catalogue's rules
def test_translation_rules():
    zh = lambda text: translate(text, "zh")
    assert zh("All tests passed.") == "全部测试通过。"  # an exact entry
    assert zh("  All tests passed.\n") == "  全部测试通过。\n"  # spaces kept
    said = zh("On a 4-GPU server, gpu_names() returned 1 name(s); the machine has 4 GPU(s).")
    assert (
        said == "在 4 卡服务器上，gpu_names() 返回了 1 个名字；这台机器有 4 块 GPU。"
    )  # parts translated too
    assert (
        zh("The signal was: Segmentation fault.") == "信号是：Segmentation fault。"
    )  # {raw...} kept as is
    assert zh("(nothing fits)") == "（什么都放不下）"  # inside brackets
    assert zh("Something nobody wrote down.") == "Something nobody wrote down."  # no entry: English
    assert translate("All tests passed.", "en") == "All tests passed."
    # a reading that would cut a test's name at its own bracket is not taken
    title = zh("Correct: List the GPUs (and survive having none) (3/3 points)")
    assert title == "正确：列出所有 GPU（没有 GPU 也不崩溃）（3/3 分）"


def test_untranslated_names_the_parts_left_in_english():
    assert untranslated("All tests passed.") == []
    assert untranslated("Hint 1 of 2: something new to say here") == [
        "Hint 1 of 2: something new to say here"
    ]
    assert untranslated("Your function did not finish within 10 s (an endless loop?).") == []
    assert (
        untranslated(
            "`choose_device` still raises NotImplementedError: replace that line with your code."
        )
        == []
    )
    assert not is_prose(
        "RuntimeError: Expected all tensors to be on the same device", errors_too=False
    )


def test_the_language_switch(monkeypatch):
    from course_lib.i18n import tr

    monkeypatch.delenv("COURSE_LANG", raising=False)
    assert language() == "en" and tr("All tests passed.") == "All tests passed."
    with in_language("zh"):
        assert tr("All tests passed.") == "全部测试通过。"
    assert language() == "en"
    monkeypatch.setenv("COURSE_LANG", "zh_CN.UTF-8")
    assert tr("All tests passed.") == "全部测试通过。"
    with pytest.raises(ValueError, match="en, zh"):
        use_language("fr")


# ---------------------------------------------------------------- (d) seen in Chinese
def test_a_check_verdict_in_chinese(zh):
    ex = get("ch01.choose_device")
    for wrong in ex.key().wrong_answers:
        result = ex.check(wrong.function, record=False)
        assert_chinese(result.text(), f"{ex.id} / {wrong.label}")
        assert_chinese(result._repr_html_(), f"{ex.id} / {wrong.label} (HTML)")
    stub = messages.stub_function(get("ch06.largest_batch"))
    assert_chinese(get("ch06.largest_batch").check(stub, record=False).text(), "a stub")
    assert ex.solution_source()  # the reference itself is code: it stays as it is
    assert_chinese(ex.next_hint(), "a hint")


def test_every_wrong_answer_of_every_exercise_reads_in_chinese(zh):
    from course_lib.exercises import all_exercises

    for ex in all_exercises():
        if ex.kind == "function":
            for wrong in ex.key().wrong_answers:
                assert_chinese(
                    ex.check(wrong.function, record=False).text(), f"{ex.id} / {wrong.label}"
                )


def test_a_quiz_in_chinese(zh):
    from course_lib.widgets import quiz_widget

    quiz = get("ch01.device_label")
    box = quiz_widget(quiz)
    html = " ".join(getattr(w, "value", "") or "" for w in box.children if hasattr(w, "value"))
    options = [row.description for row in box.children[1].children]
    assert_chinese(html, "the question") and all(CJK.search(o) for o in options)
    assert box.check_button.description == "检查"
    box.answer("a")
    box.check_button.click()
    assert_chinese(box.verdict.value, "a wrong answer's why")
    box.answer(quiz.key().answer)
    box.check_button.click()
    assert "答对了" in box.verdict.value and "答案单元格" in box.verdict.value
    from course_lib.exercises import all_exercises

    for q in (e for e in all_exercises() if e.kind != "function"):
        before = q._hints_shown
        for answer in list(q.why) + list(q.options)[:1]:
            assert_chinese(q.check(answer, record=False).text(), f"{q.id} answered {answer!r}")
        q._hints_shown = before


def test_the_explainer_panel_and_command_in_chinese(zh, tmp_path):
    from course_lib.explainer import explain_text

    message = (
        "RuntimeError: Expected all tensors to be on the same device, "
        "but found at least two devices, cuda:0 and cpu!"
    )
    exp = explain_text(message)
    assert_chinese(exp._repr_html_(), "the panel")
    assert_chinese(str(exp), "the text")
    assert exp.to_dict()["notebook"] == "notebooks/zh/04_common_errors.ipynb"
    assert exp.error == message.split("\n")[0]  # PyTorch's own words stay as they are
    (tmp_path / "log.txt").write_text(message)
    for args in (
        [str(tmp_path / "log.txt"), "--lang", "zh"],
        [str(tmp_path / "log.txt"), "--lang", "zh", "--json"],
    ):
        out = subprocess.run(
            [sys.executable, "-m", "course_lib", "explain", *args],
            capture_output=True,
            text=True,
            timeout=120,
            env={"PATH": "/usr/bin:/bin", "COURSE_LANG": "en"},
        )
        assert out.returncode == 0, out.stderr
        assert_chinese(out.stdout, f"explain {' '.join(args[1:])}")
    out = subprocess.run(
        [sys.executable, "-m", "course_lib", "explain", str(tmp_path / "log.txt")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert not CJK.search(out.stdout), "English stays the default"


def test_doctor_in_chinese(zh, monkeypatch):
    import torch as t

    from course_lib import doctor

    monkeypatch.setattr(t.version, "cuda", "13.0")
    monkeypatch.setattr(t.cuda, "is_available", lambda: False)
    monkeypatch.delenv(
        "CUDA_VISIBLE_DEVICES", raising=False
    )  # the grader's CLI, run in-process, sets it
    said = doctor.gpu_problem([("NVIDIA GeForce RTX 3090", "550.54.14")])
    report = dict(doctor.environment_report(), **{"gpu problem": said})
    assert_chinese(doctor.format_report(report), "doctor")
    assert "550.54.14" in doctor.format_report(report)
    out = subprocess.run(
        [sys.executable, "-m", "course_lib", "doctor", "--lang", "zh"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0 and "课程设备" in out.stdout, out.stdout + out.stderr
    out = subprocess.run(
        [sys.executable, "-m", "course_lib", "doctor", "--lang", "zh", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "course device" in json.loads(out.stdout), "--json keeps its keys"


def test_skip_lines_and_gpu_notes_in_chinese(zh, capsys, monkeypatch):
    from course_lib import device
    from course_lib.i18n.layout import width

    monkeypatch.setenv("COURSE_DEVICE", "cpu")
    for key in device.FIGURE_KEYS:
        assert (
            device.gpu_only("timing CPU-then-copy against creating on the GPU", figure=key) is False
        )
        out = capsys.readouterr().out
        assert max(width(line) for line in out.splitlines()) <= device.SKIP_WIDTH, (
            out
        )  # wrapped, Chinese too
        with monkeypatch.context() as unwrapped:
            unwrapped.setattr(device, "_wrap", lambda line: line)
            device.gpu_only("timing CPU-then-copy against creating on the GPU", figure=key)
        assert_chinese(capsys.readouterr().out, key)


def test_recorded_gpu_figures_in_chinese(zh, tmp_path, monkeypatch, capsys):
    """The figures a real GPU run records (here made by the figures script on a simulated GPU, as
    tests/test_gpu_check.py does) are shown beside the skip lines in Chinese, numbers as
    measured."""
    gpu_figures = benchmark("gpu_figures")
    from test_gpu_check import SIMULATE, simulate_cuda_on_the_cpu

    from course_lib import device

    with monkeypatch.context() as gpu:
        simulate_cuda_on_the_cpu(gpu)
        gpu.setenv("PATH", str(SIMULATE))
        gpu.setattr(gpu_figures, "S", dict(gpu_figures.S))
        gpu.setattr(torch, "compile", lambda model, **kwargs: model)
        skipped = [
            "ch06.real_oom",
            "ch07.data_parallel",
            "ch05.nonblocking_d2h",
            "ch05.sync_debug",
            "ch06.memory_snapshot",
            "ch06.fragmentation",
        ]  # no CPU stand-in (test_gpu_check.py)
        assert (
            gpu_figures.main([str(tmp_path / "figures.json"), "--small", "--skip", *skipped]) == 0
        )
    capsys.readouterr()
    monkeypatch.setenv(device.FIGURES_ENV_VAR, str(tmp_path / "figures.json"))
    recorded = json.loads((tmp_path / "figures.json").read_text())["figures"]
    for key, entry in recorded.items():
        lines = device.reference_figures(key)
        said = "\n".join(translate(line, "zh") for line in lines)
        assert "Simulated GPU" in said and CJK.search(said), said
        assert_chinese(said, key)
        for line in entry.get("lines", []):  # every measured number is still there
            for number in re.findall(r"\d+\.\d+", line):
                assert number in said, (key, number, said)


def test_entries_keep_their_section_and_chapter_numbers():
    for english, chinese in catalogue.entries("zh").items():
        assert sorted(re.findall(r"[Ss]ection (\d+(?:\.\d+)?)", english)) == sorted(
            re.findall(r"第 (\d+(?:\.\d+)?) 节", chinese)
        ), (english, chinese)
        assert sorted(re.findall(r"[Cc]hapter (\d\d)", english)) == sorted(
            re.findall(r"第 (\d\d) 章", chinese)
        ), (english, chinese)


def test_progress_and_hint_widgets_in_chinese(zh):
    from course_lib.exercises import all_exercises
    from course_lib.exercises.progress import chapter_summary
    from course_lib.widgets import hint_widget, progress_table

    assert_chinese(progress_table(chapter_summary(all_exercises())), "the progress table")
    assert hint_widget(get("ch01.gpu_names")).children[0].description.startswith("显示提示")


# ---------------------------------------------------------------- item 4: the grader and release
def zh_twin(notebook: dict) -> dict:
    """The Chinese edition of a notebook as ZH_SPEC makes it: the language line, course.language."""
    return editions.synced(notebook)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """One grade run of the same chapter-01 submission handed in from either edition."""
    from course_lib.grading.selftest import chapter_cases

    case = next(c for c in chapter_cases("01") if c.name.endswith("wrong02"))
    folder = tmp_path_factory.mktemp("zh-grade")
    subs = folder / "submissions"
    subs.mkdir()
    (subs / "english.ipynb").write_text(json.dumps(case.notebook))
    (subs / "chinese.ipynb").write_text(
        json.dumps(zh_twin(case.notebook), ensure_ascii=False), encoding="utf-8"
    )
    out = folder / "out" / "gradebook.csv"
    proc = build.run_grader(subs, out, "--workers", 2, env={"COURSE_LANG": "en"})
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    return out


def test_feedback_is_written_in_the_language_of_the_notebook_handed_in(graded):
    feedback = graded.with_name(graded.stem + "_feedback")
    chinese = (feedback / "chinese.md").read_text(encoding="utf-8")
    english = (feedback / "english.md").read_text(encoding="utf-8")
    assert_chinese(chinese, "the Chinese student's feedback")
    assert "反馈：" in chinese and "总分" in chinese and "不正确" in chinese
    assert not CJK.search(english) and "# Feedback: english" in english
    assert json.loads((feedback / "chinese.json").read_text(encoding="utf-8"))["language"] == "zh"


def test_the_gradebook_is_the_same_whatever_the_edition(graded):
    with open(graded, newline="") as f:
        header = next(csv.reader(f))
    assert header == [
        "submission",
        "exercise",
        "points",
        "max_points",
        "status",
        "tests_passed",
        "tests_total",
        "flags",
        "detail",
    ]
    book = build.read_gradebook(graded)
    for exercise, row in book["english"].items():
        twin = book["chinese"][exercise]
        assert (twin["points"], twin["status"], twin["tests_passed"]) == (
            row["points"],
            row["status"],
            row["tests_passed"],
        ), exercise


def test_a_notebook_says_its_language():
    from course_lib.grading.analyze import analyze
    from course_lib.grading.cells import read_cells
    from course_lib.grading.intake import notebook_language

    en = json.loads(NOTEBOOKS[0].read_text())
    for nb, want in ((en, "en"), (zh_twin(en), "zh")):
        data = json.dumps(nb).encode()
        assert notebook_language(data, analyze(read_cells(data)).imports) == want
    only_meta = dict(en, metadata={**en["metadata"], "course": {"language": "zh"}})
    data = json.dumps(only_meta).encode()
    assert notebook_language(data, analyze(read_cells(data)).imports) == "zh"


def test_a_feedback_file_renders_in_either_language():
    from course_lib.grading import feedback

    record = {
        "submission": "s",
        "points": 1,
        "max_points": 3,
        "language": "zh",
        "run": {
            "summary": "ran all 4 code cells; 1 raised an error",
            "cells": [
                {"cell": 2, "status": "error", "error": "NameError: name 'x' is not defined"}
            ],
        },
        "exercises": [
            {
                "exercise": "ch01.gpu_names",
                "title": "List the GPUs (and survive having none)",
                "status": "missing",
                "points": 0,
                "max_points": 3,
                "detail": "no function `gpu_names` is defined at the top level of the notebook "
                "(renamed or deleted?)",
                "tests": [],
            }
        ],
        "texts": {},
    }
    zh = feedback.render(record)
    assert_chinese(zh, "feedback")
    assert (
        "运行了全部 4 个代码单元格；1 个抛出了错误" in zh
        and "NameError: name 'x' is not defined" in zh
    )
    assert "# 反馈：s" in zh and "（`ch01.gpu_names`）：0/3 分，缺失" in zh
    assert "Feedback: s" in feedback.render(dict(record, language="en"))
    assert "Feedback: s" in feedback.render({k: v for k, v in record.items() if k != "language"})


def _fake_checkout(tmp_path, with_zh=True, missing=()):
    """A checkout with two chapters' notebooks (and their Chinese twins) beside the real
    course_lib."""
    root = tmp_path / "checkout"
    (root / "notebooks" / "zh").mkdir(parents=True)
    for name in ("course_lib", "pyproject.toml", "course.sh", "course.py"):
        (root / name).symlink_to(ROOT / name)
    for nb in NOTEBOOKS[:2]:
        (root / "notebooks" / nb.name).write_text(nb.read_text())
        if with_zh and nb.name not in missing:
            twin = zh_twin(json.loads(nb.read_text()))
            (root / "notebooks" / "zh" / nb.name).write_text(
                json.dumps(twin, ensure_ascii=False), encoding="utf-8"
            )
    return root


@pytest.mark.parametrize("lang", ["zh", "both", "en"])
def test_release_hands_out_either_edition(tmp_path, monkeypatch, lang):
    import course_lib.grading.release as rel

    root = _fake_checkout(tmp_path)
    monkeypatch.setattr(rel, "_checkout", lambda: root)
    report = rel.release(tmp_path / "bundle", lang=lang)
    out = tmp_path / "bundle"
    english = sorted(p.name for p in (out / "notebooks").glob("*.ipynb"))
    chinese = sorted(p.name for p in (out / "notebooks" / "zh").glob("*.ipynb"))
    names = sorted(nb.name for nb in NOTEBOOKS[:2])
    assert english == (names if lang != "zh" else []) and chinese == (names if lang != "en" else [])
    assert report["notebooks"] == len(english) + len(chinese)
    for path in (out / "notebooks" / "zh").glob("*.ipynb"):
        nb = json.loads(path.read_text(encoding="utf-8"))
        assert nb["metadata"]["course"]["language"] == "zh"
        first = next(c for c in nb["cells"] if c["cell_type"] == "code")
        assert "".join(first["source"]).startswith(editions.LANGUAGE_LINE)
        assert all(c.get("outputs") in (None, []) for c in nb["cells"])
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert bool(CJK.search(readme)) == (lang == "zh")
    assert (out / "README.zh.md").exists() == (lang == "both")
    assert (out / "course_lib" / "i18n" / "zh.json").exists() and not (
        out / "course_lib" / "key"
    ).exists()


def test_release_refuses_an_incomplete_edition_or_an_unknown_one(tmp_path, monkeypatch):
    import course_lib.grading.release as rel

    root = _fake_checkout(tmp_path, missing=[NOTEBOOKS[1].name])
    monkeypatch.setattr(rel, "_checkout", lambda: root)
    with pytest.raises(ValueError, match=f"notebooks/zh/ lacks {NOTEBOOKS[1].name}"):
        rel.release(tmp_path / "bundle", lang="zh")
    with pytest.raises(ValueError, match="choose one of en, zh, both"):
        rel.release(tmp_path / "bundle2", lang="fr")
    out = subprocess.run(
        [sys.executable, "-m", "course_lib", "release", str(tmp_path / "b3"), "--lang", "fr"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2 and "invalid choice" in out.stderr


def test_the_release_command_with_lang(tmp_path):
    """On this checkout: `release --lang zh` refuses while notebooks/zh/ is incomplete, with the
    reason;
    `--lang en` writes the English bundle as before."""
    have_zh = len(editions.chinese_notebooks(ROOT)) == len(NOTEBOOKS)
    out = subprocess.run(
        [sys.executable, "-m", "course_lib", "release", str(tmp_path / "zh"), "--lang", "zh"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if have_zh:
        assert out.returncode == 0 and f"{len(NOTEBOOKS)} zh" in out.stdout, out.stderr
    else:
        assert out.returncode == 2 and "the zh edition is incomplete" in out.stderr, (
            out.stdout + out.stderr
        )


def test_a_template_is_compiled_only_once_a_text_could_be_made_from_it():
    """Compiling all 536 templates' regexes at the first tr() cost each Chinese kernel ~0.09 s."""
    from course_lib.i18n import catalogue

    catalogue._patterns.cache_clear()
    assert len(catalogue.templates("zh")) > 100 and catalogue._patterns.cache_info().currsize == 0
    assert catalogue.translate("Show a hint (2 of 3)", "zh").startswith("显示提示")
    assert 0 < catalogue._patterns.cache_info().currsize < 100  # of 536
