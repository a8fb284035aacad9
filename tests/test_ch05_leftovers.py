"""Chapter 05's leftovers of issue 36, item 9: graph-break reasons shown whole with what they mean,
the workers' epochs over repeats, chapter 05's feedback without English inside the Chinese, and
the profile quiz judged against the learner's own profile."""

import re
import types

import pytest
import torch

from course_lib import ch05_speedups as ch
from course_lib import text
from course_lib.declared import ch05_speedups as declared
from course_lib.errors import describe_exception
from course_lib.i18n.catalogue import CJK, in_language
from course_lib.i18n.layout import width

PRINT_BREAK = (  # torch 2.13's reason for PrintingNet's graph break (torch._dynamo.explain)
    "Failed to trace builtin operator\n  Explanation: Dynamo does not know how to trace builtin "
    "operator `print` with argument types ['str'] (has_kwargs False)\n  Hint: Avoid calling "
    "builtin `print` with argument types ['str']. Consider using an equivalent alternative "
    "function/method to `print`.\n  Hint: Please report an issue to PyTorch.\n\n  Developer "
    "debug context: builtin print [<class 'torch._dynamo.variables.constant.ConstantVariable'>] "
    "False\n\n For more details about this graph break, please visit: "
    "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html"
)
UNKNOWN_BREAK = (
    "Unsupported context manager\n  Explanation: Dynamo does not know how to enter a "
    "`SomeManager` context manager.\n  Hint: Avoid using the context manager `SomeManager` in "
    "compiled code."
)


def words(text: str) -> list:
    return text.split()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_known_graph_break_is_summarized_and_pytorchs_words_are_whole(lang):
    with in_language(lang):
        shown = ch.show_graph_break(PRINT_BREAK)
    lines = shown.splitlines()
    assert all(width(line) <= 96 for line in lines), lines
    assert "..." not in shown  # nothing cut off
    said = shown[shown.index("PyTorch") :]
    for word in (
        "Explanation:",
        "`print`",
        "(has_kwargs",
        "False)",
        "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html",
    ):
        assert word in words(said), said  # each word whole, wrapped between words
    assert "Developer" not in shown and "Hint:" not in shown  # PyTorch's notes to itself
    summary = lines[0]
    if lang == "zh":
        assert summary.startswith("    图中断的原因：forward 里有 `print`") and CJK.search(summary)
        assert "PyTorch 的原话：Failed to trace builtin operator. Explanation:" in shown
    else:
        assert summary.startswith("    why it broke: a `print` in forward")


def test_an_if_on_a_value_is_summarized_and_an_unknown_reason_is_shown_whole():
    with in_language("zh"):
        value = ch.show_graph_break("generic_jump TensorVariable()")
        unknown = ch.show_graph_break(UNKNOWN_BREAK)
    assert "张量的值" in value and value.endswith("generic_jump TensorVariable()")
    assert "图中断的原因" not in unknown  # no summary of ours: PyTorch's words, hints included
    assert " ".join(words(unknown)).endswith("`SomeManager` in compiled code.")
    assert "Hint:" in unknown


# ---------------------------------------------------------------- the workers' epochs, repeated
NOISY = {  # ms per epoch, three runs each: the second setting's epoch 2 had one slow run
    "num_workers=0": [[3400, 3300, 3600], [3500, 8400, 3450]],
    "num_workers=2": [[1570, 1600, 1500], [990, 1000, 1100]],
    "num_workers=2, persistent": [[2100, 2000, 2050], [1028, 900, 1200]],
}


def test_the_workers_claims_rest_on_medians_and_say_when_the_runs_overlap():
    with in_language("en"):
        notes = ch.workers_notes(NOISY).splitlines()
    # 2 workers vs none: the median 3500, not the one slow run of 8400 (that made it 8.4x)
    assert notes[1] == "    median 1000 ms (990-1100 ms) vs 3500 ms (3450-8400 ms): 3.50x faster"
    assert notes[3].endswith("within this machine's run-to-run noise (the runs overlap)")
    assert "x faster" not in notes[3] and "x slower" not in notes[3]
    assert notes[5].endswith("2050 ms (2000-2100 ms): 1.99x faster")


def test_the_workers_experiment_runs_each_setting_repeatedly_taking_turns(monkeypatch):
    calls = []

    def fake_epochs(dataset, device, workers, persistent, epochs):
        calls.append((workers, persistent))
        return [100.0 * (len(calls)), 50.0]

    monkeypatch.setattr(ch, "time_epochs", fake_epochs)
    results = ch.workers_experiment(range(8), "cpu", settings=((0, False), (2, True)), repeats=3)
    assert calls == [(0, False), (2, True)] * 3  # the settings take turns
    assert results["num_workers=0"] == [[100.0, 300.0, 500.0], [50.0, 50.0, 50.0]]
    assert ch.medians(results)["num_workers=2, persistent"] == [400.0, 50.0]


def test_the_epoch_lines_name_the_settings_in_chinese_and_line_up():
    with in_language("zh"):
        lines = ch.show_epochs(NOISY).splitlines()
    assert lines[0] == "每个 epoch：3 次运行的中位数（最快-最慢）"
    assert lines[3].startswith("num_workers=2，持久 worker：第 1 个 epoch 2050 ms（2000-2100 ms）")
    assert len({width(line[: line.index("：")]) for line in lines[1:]}) == 1
    assert not any("persistent" in line for line in lines)


# ---------------------------------------------------------------- Chinese feedback, no English
def mean_without_sync(fn, device, repeats=5):
    import statistics
    import time

    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.mean(times)


def phase_us(events):
    totals = dict.fromkeys(("data", "forward", "backward", "step"), 0.0)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "user_annotation" and e.get("name") in totals:
            totals[e["name"]] += e["dur"]  # microseconds, not milliseconds
    return totals


def raising_step(model, x, y, optimizer, criterion, scaler, device_type, dtype):
    optimizer.zero_grad()
    with torch.autocast(device_type=device_type, dtype=dtype):
        loss = criterion(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item() + undefined_name  # noqa: F821


def feedback(exercise, candidate) -> str:
    result = exercise.check(candidate, record=False)
    return "\n".join(" ".join(t.public_lines()) for t in result.tests)


@pytest.fixture(scope="module")
def chinese_feedback():
    with in_language("zh"):
        return "\n".join(
            feedback(exercise, candidate)
            for exercise, candidate in (
                (ch.time_it, mean_without_sync),
                (ch.phase_ms, phase_us),
                (ch.amp_train_step, raising_step),
            )
        )


@pytest.mark.parametrize(
    "english",
    ["(repeats=3)", "three repeats", "(device cpu", "no GPU)", "(a CUDA trace)", "line ", " in "],
)
def test_chapter_05_feedback_in_chinese_has_no_english_fragment(chinese_feedback, english):
    assert english not in chinese_feedback


def test_the_fragments_are_said_in_chinese(chinese_feedback):
    for said in ("多久（重复 3 次）。", "（CPU 设备，机器上没有 GPU）", "（CUDA 的 trace）"):
        assert said in chinese_feedback
    assert re.search(
        r"NameError: name 'undefined_name' is not defined（raising_step 第 \d+ 行：return",
        chinese_feedback,
    )


def test_a_raised_error_keeps_its_english_frames_in_english():
    try:
        raising_step(None, None, None, types.SimpleNamespace(zero_grad=lambda: 1 / 0), *[None] * 4)
    except ZeroDivisionError as err:
        with in_language("en"):
            english = describe_exception(err)
        with in_language("zh"):
            chinese = describe_exception(err)
    assert re.search(
        r"; line \d+ in raising_step: optimizer.zero_grad\(\); line \d+ in <lambda>", english
    )
    assert re.search(
        r"；raising_step 第 \d+ 行：optimizer.zero_grad\(\)；<lambda> 第 \d+ 行", chinese
    )


def test_emphasis_is_bold_in_html_and_powers_stay_as_they_are():
    assert text.html("测到的是**启动** GPU 工作") == "测到的是<b>启动</b> GPU 工作"
    assert text.html("10**9 bytes, `a**2`, 2**3") == "10**9 bytes, <code>a**2</code>, 2**3"


# ---------------------------------------------------------------- the quiz on the learner's profile
READINGS = {  # what profile_steps keeps of a profile: ms per labelled phase, the table's top rows
    "data": {
        "phases": {"data": 310.0, "forward": 30.0, "backward": 45.0, "step": 15.0},
        "top": ["aten::bmm", "aten::avg_pool2d", "enumerate(DataLoader)#_SingleProcessDataLoa..."],
    },
    "backward": {  # the learner: no warm-up, the first backward alone took 76 ms
        "phases": {"data": 40.0, "forward": 20.0, "backward": 96.0, "step": 4.0},
        "top": ["aten::mm", "aten::bmm", "aten::avg_pool2d"],
    },
    "mm on top, data largest": {
        "phases": {"data": 60.0, "forward": 20.0, "backward": 30.0, "step": 5.0},
        "top": ["aten::mm", "aten::addmm", "aten::bmm"],
    },
}


@pytest.fixture
def reading(monkeypatch):
    def use(name):
        monkeypatch.setattr(declared, "PROFILE_READING", dict(READINGS[name]))

    return use


def test_the_key_is_the_largest_phase_of_the_learners_own_profile(reading):
    reading("backward")
    right = ch.profile_verdict.check("c", record=False)
    wrong = ch.profile_verdict.check("a", record=False)
    assert right.correct and not wrong.correct
    assert "backward is the largest phase: 96 ms of the 160 ms the four labels hold (60%)" in (
        right.summary
    )
    assert "`aten::mm`: the model's Linear layers, in forward and in backward's gradients" in (
        right.summary
    )
    assert "run the profile cell again" in right.summary  # data is the usual largest
    assert "data took 40 ms of the 160 ms the four labels hold (25%)" in wrong.summary
    assert "backward" not in wrong.summary  # a wrong answer is not told the right one


def test_a_data_profile_names_the_augmentations_operators(reading):
    reading("data")
    result = ch.profile_verdict.check("a", record=False)
    assert result.correct and not ch.profile_verdict.check("c", record=False).correct
    assert "`aten::bmm`: inside `affine_grid`: the augmentation, so data" in result.summary
    assert "`aten::avg_pool2d`: the augmentation's pooling back to 8x8" in result.summary
    assert "run the profile cell again" not in result.summary


def test_mm_on_top_of_the_table_is_named_as_the_model_while_data_is_largest(reading):
    reading("mm on top, data largest")
    result = ch.profile_verdict.check("a", record=False)
    assert result.correct
    assert "data is the largest phase: 60 ms of the 115 ms" in result.summary
    assert "`aten::mm`: the model's Linear layers" in result.summary
    with in_language("zh"):
        chinese = ch.profile_verdict.check("a", record=False).summary
    assert "在你的 profile 里，最大的阶段是 data：四个标签合计 115 ms，它占 60 ms（52%）" in chinese
    assert "`aten::mm`：模型的 Linear 层" in chinese


def test_without_a_profile_of_the_learner_the_keys_answer_is_judged(monkeypatch):
    monkeypatch.setattr(declared, "PROFILE_READING", {})  # a grader: no profile of the learner's
    assert ch.profile_verdict.check("a", record=False).correct
    assert not ch.profile_verdict.check("c", record=False).correct


def test_profile_steps_keeps_what_its_profile_shows(monkeypatch):
    from course_lib import data

    monkeypatch.setattr(declared, "PROFILE_READING", {})
    train_set, _ = data.digits_split(test_fraction=0.2, seed=0)
    small = torch.utils.data.Subset(ch.AugmentedDigits(train_set), range(48))
    ch.profile_steps(small, torch.device("cpu"), steps=2)
    assert set(declared.PROFILE_READING["phases"]) == {"data", "forward", "backward", "step"}
    assert len(declared.PROFILE_READING["top"]) == 3
    assert ch.profile_verdict.measured_answer() in "abcd"


def test_a_wrong_answer_gets_its_share_and_why_that_option_is_off(reading):
    """Judged against the learner's profile, a wrong option is told its phase's share and the
    option's own `why` (what the chapter's browser test reads), never the right option."""
    reading("data")
    wrong = ch.profile_verdict.check("b", record=False)
    assert not wrong.correct
    assert "forward took" in wrong.summary and "fusing its kernels" in wrong.summary
    assert "largest" not in wrong.summary and "a)" not in wrong.summary
