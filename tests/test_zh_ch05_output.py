"""Chapter 05 in Chinese: what its own code shows (lines, tables, verdicts, skip lines, buttons,
figure labels), and measure's and profiling's, comes out in Chinese, PyTorch's words, dtype names
and numbers kept; tables line up by display width; the English is what it always was."""

import contextlib
import io
import types

import pytest
import torch
from test_zh_messages import english_sentences
from torch import nn

from course_lib import ch05_speedups as ch
from course_lib import measure, profiling, widgets
from course_lib.i18n.catalogue import CJK, in_language
from course_lib.i18n.layout import width


def printed(call, *args, **kwargs) -> str:
    """What `call(...)` prints, and what it returns if that is text."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        value = call(*args, **kwargs)
    return out.getvalue() + (value if isinstance(value, str) else "")


def assert_chinese(text: str, kept=()) -> None:
    assert CJK.search(text), text
    assert not english_sentences(text, kept), english_sentences(text, kept)


TIMINGS = [  # a baseline, and a setting whose first call beat its median (the note under it)
    measure.Timing("float32 (no autocast)", [10.0, 11.0, 30.0], [40.0]),
    measure.Timing("autocast bfloat16", [10.0, 11.0, 30.0], [5.0]),
]
RUNS = [
    ch.PrecisionRun("float32 (no autocast)", [1.0, 0.9, 0.8, 0.7], 0.9),
    ch.PrecisionRun("autocast float16 + GradScaler", [1.0, 0.91, 0.8, 0.7], 0.88, [32768.0], 1),
]
EPOCHS = {
    "num_workers=0": [100, 90],
    "num_workers=2": [300, 200],
    "num_workers=2, persistent": [9, 8],
}
LOOP = measure.LoopTimes("augmented on the fly", [1.0, 2.0], [3.0, 1.0])
TOTALS = {"data": 3.0, "forward": 1.0, "backward": 1.0, "step": 0.5}
MEASUREMENT = types.SimpleNamespace(  # what timer_vs_time_fn's Timer returns, with a wide spread
    iqr=1e-6,
    has_warnings=True,
    median=2e-6,
    times=[1, 2, 3],
    number_per_run=10,
    task_spec=types.SimpleNamespace(num_threads=1),
)
TEXTS = {  # what the notebook's cells print, from fixed numbers where the chapter measures
    "float_formats": lambda: ch.float_formats(),
    "precision_pitfalls": lambda: ch.precision_pitfalls(),
    "show_autocast_ops": lambda: ch.show_autocast_ops("cpu", torch.bfloat16),
    "workers_notes": lambda: ch.workers_notes(EPOCHS),
    "start_method_note": lambda: ch.start_method_note(),
    "machine_cores": lambda: ch.machine_cores(),
    "copy_benchmark on the CPU": lambda: printed(ch.copy_benchmark, "cpu"),
    "async_demo on the CPU": lambda: printed(ch.async_demo, "cpu"),
    "show_timer_vs_time_fn": lambda: ch.show_timer_vs_time_fn(
        {"time_fn": TIMINGS[0], "Timer": MEASUREMENT}
    ),
    "benchmark_compare": lambda: str(
        ch.benchmark_compare("cpu", sizes=(4,), dtypes=(torch.float32,), min_run_time=0)
    ),
    "compare": lambda: ch.compare(TIMINGS),
    "timing_notes": lambda: measure.timing_notes(TIMINGS[0]),
    "show_precision_runs": lambda: ch.show_precision_runs(RUNS, every=2),
    "scaler_demo": lambda: printed(ch.scaler_demo, "cpu"),
    "payback_note": lambda: ch.payback_note(TIMINGS[0], measure.Timing("c", [8.0], [2012.0])),
    "compile_experiment switched off": lambda: printed(ch.compile_experiment, "cpu", run=False),
    "recompiles_per_depth": lambda: ch.recompiles_per_depth(depths=(2, 2, 3)),
    "show_item_loops": lambda: ch.show_item_loops({"a": TIMINGS[0], "b": TIMINGS[1]}),
    "show_readback_race": lambda: ch.show_readback_race([(10, 0)]),
    "LoopTimes": lambda: str(LOOP),
    "compare_splits": lambda: profiling.compare_splits(TOTALS, LOOP),
}


@pytest.mark.parametrize("name", TEXTS)
def test_what_chapter_05_prints_is_chinese(zh, name):
    assert_chinese(TEXTS[name](), zh)


def test_pinning_keeps_pytorchs_warning_and_explains_it_in_chinese(zh, digits):
    text = printed(ch.pin_memory_demo, digits)
    assert_chinese(text, zh)
    if not torch.cuda.is_available():  # PyTorch's own words, quoted as they are
        assert "PyTorch 警告：“'pin_memory' argument is set as true" in text


def test_the_autocast_table_names_layers_in_chinese_and_lines_up(zh):
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3))
    rows = ch.autocast_dtypes(
        model, torch.randn(4, 8), torch.tensor([0, 1, 2, 0]), nn.CrossEntropyLoss(), "cpu",
        torch.bfloat16,
    )  # fmt: skip
    assert rows[0][0] == "层 0（Linear）的输出" and rows[-1][0] == "梯度（.grad）"
    lines = ch.text_table(rows).splitlines()
    starts = {width(line[: line.index("torch.")]) for line in lines}
    assert len(starts) == 1, lines  # the dtype column starts at one display column


def test_tables_line_up_by_display_width(zh):
    header, *rows = ch.precision_pitfalls().splitlines()
    assert all(CJK.search(row) for row in rows[:3])
    assert {width(row.rsplit("  ", 1)[0]) for row in rows} == {width(header)}
    assert rows[0].endswith("（第 1 行）")
    formats = ch.float_formats().splitlines()
    assert "最小规格化数" in formats[0] and len({width(line) for line in formats}) == 1
    ops = ch.show_autocast_ops("cpu", torch.bfloat16).splitlines()
    head, row = ops[1], ops[2]  # the second column starts where its head does
    assert width(head[: head.index("float32")]) == width(row[: row.index("bfloat16")])
    assert ops[-1].startswith("保持原 dtype 的一组：") and "、" in ops[-1]


def test_printing_net_still_breaks_its_graph_once_in_chinese(zh):
    """tr() runs inside a forward that TorchDynamo traces: the graphs it reports stay the same."""
    text = printed(ch.explain_forwards)
    assert "PrintingNet（forward 里有 print）：\n    2 张计算图，1 处图中断" in text
    assert "（PrintingNet.forward 打印）h 的形状是" in text


def test_the_reveal_buttons_speak_chinese(zh, tmp_path, monkeypatch):
    # a learner who has not answered the quiz yet (another test of this process may have)
    monkeypatch.setenv("COURSE_PROGRESS_FILE", str(tmp_path / "progress.json"))
    box = widgets.reveal(print, label="Show the scaler at work", after=ch.scale_after_overflow)
    note, button = box.children[0], box.children[1]
    assert button.description == "看 scaler 怎么工作"
    assert (
        note.value == "先回答上面的测验「溢出之后的缩放值」，再点击按钮（或者重新运行这个单元格）。"
    )


def figure_texts(fig) -> list:
    ax = fig.axes[0]
    legend = ax.get_legend()
    return [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()] + [
        t.get_text()
        for t in ax.get_xticklabels()
        + ax.get_yticklabels()
        + (legend.get_texts() if legend else [])
    ]


def test_the_figures_speak_chinese(zh, with_cjk_font):
    breakdowns = figure_texts(
        measure.plot_breakdowns([LOOP], title="one epoch on cpu: waiting for data vs computing")
    )
    assert breakdowns[:3] == [
        "在 cpu 上跑一个 epoch：等数据 vs 计算",
        "",
        "每个 epoch 的耗时（ms）",
    ]
    assert {"实时增强的手写数字", "等待下一个 batch"} <= set(breakdowns)
    epochs = figure_texts(ch.plot_epochs(EPOCHS))
    assert {"num_workers=2，持久 worker", "第 2 个 epoch"} <= set(epochs)
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "data", "ts": 0, "dur": 5},
        {"ph": "X", "cat": "kernel", "name": "k", "ts": 5, "dur": 2},
    ]
    timeline = figure_texts(
        profiling.plot_timeline(events, title="4 profiled steps on cpu, from t")
    )
    assert timeline[:2] == ["在 cpu 上做性能分析的 4 步，取自 t", "距第一个事件的时间（ms）"]
    assert {"GPU 上的 kernel", "data"} <= set(timeline)  # a phase keeps its record_function name
    parts = {name: [1, 2] for name in profiling.TIMELINE_PARTS.values()}
    memory = figure_texts(
        profiling.plot_memory_timeline({"ms": [0.0, 1.0], "parts": parts}, estimate={"x": 1})
    )
    assert {"权重", "优化器状态", "激活值", "课程的估算", "距第一次分配的时间（ms）"} <= set(memory)


# ---------------------------------------------------------------- English: as it always was
def test_english_lines_are_unchanged(digits):
    with in_language("en"):
        assert str(TIMINGS[0]) == (
            "float32 (no autocast): median 11.00 ms over 3 runs (min 10.00, max 30.00); "
            "first call 40.0 ms"
        )
        assert (
            str(measure.Timing("t", [1.0])) == "t: median 1.00 ms over 1 runs (min 1.00, max 1.00)"
        )
        assert ch.compare(TIMINGS).splitlines()[2:] == [
            "    (the first call was faster than the median (0.45x): this operation has little "
            "one-off cost here, and run-to-run noise on a shared CPU is larger than what is left "
            "of it)",
            "    -> 1.00x faster than float32 (no autocast) on this machine",
        ]
        assert (
            ch.show_timer_vs_time_fn({"time_fn": TIMINGS[0], "Timer": MEASUREMENT})
            .split("\n")[1]
            .endswith("1 thread(s), IQR 0.0010 ms (the Measurement warns: a wide spread)")
        )
        assert ch.float_formats().splitlines()[0] == (
            "dtype           bits   largest  smallest normal  eps (precision)"
        )
        assert ch.show_autocast_ops("cpu", torch.bfloat16).splitlines()[1] == (
            "op              float32 input ->  bfloat16 input ->"
        )
        assert ch.show_precision_runs(RUNS, every=2).splitlines()[0] == (
            " step" + "float32 (no autocast)".rjust(33) + "autocast float16 + GradScaler".rjust(32)
        )
        assert str(
            ch.benchmark_compare("cpu", sizes=(4,), dtypes=(torch.float32,), min_run_time=0)
        ).endswith("\n\nTimes are in microseconds (us).\n")
        pinned = printed(ch.pin_memory_demo, digits).splitlines()
        assert (
            pinned[0].startswith("accelerator PyTorch sees: ")
            and " | batch in pinned memory: " in (pinned[0])
        )
        assert pinned[-1].startswith("Here DataLoader(pin_memory=True) ")
