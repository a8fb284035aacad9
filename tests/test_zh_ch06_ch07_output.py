"""Chapters 06 and 07 in Chinese: what their own code shows (tables, sentences, the step-through
widget, figure labels) comes out in Chinese, PyTorch's words and numbers kept; English unchanged."""

import re
from types import SimpleNamespace
from unittest import mock

import pytest
import torch
from test_zh_messages import english_sentences

from course_lib import ch06_out_of_memory as ch06
from course_lib import ch07_dp_vs_ddp as ch07
from course_lib import memory
from course_lib.i18n import plots
from course_lib.i18n.catalogue import CJK, in_language

BIG_MODEL = list(ch07.MODELS)[2]


def shown(html) -> str:
    """An HTML display's text, tags removed."""
    return re.sub(r"<[^>]+>", "\n", getattr(html, "data", html))


def assert_chinese(text: str, kept=()) -> None:
    assert CJK.search(text), text
    assert not english_sentences(text, kept), english_sentences(text, kept)


def labels(widget) -> list:
    """What the step-through widget writes on its controls."""
    return [
        widget.model.description,
        widget.n.description,
        widget.batch.description,
        widget.strategy.description,
        widget.phase.description,
        widget.back.description,
        widget.next.description,
    ]


# ---------------------------------------------------------------- the step-through widget (ch07)
def test_the_step_through_widget_is_labelled_in_chinese(zh):
    widget = ch07.step_through()
    for label in labels(widget):
        assert CJK.search(label), label
    assert widget.back.description == "◀ 上一步" and widget.next.description == "下一步 ▶"
    assert all(CJK.search(label) for label in widget.model._options_labels)  # the models' names
    assert widget.model.value == BIG_MODEL  # the value behind the label stays the English key
    assert_chinese(shown(widget.diagram.value) + shown(widget.totals.value))


def test_the_step_through_widget_keeps_its_english_labels():
    widget = ch07.step_through()
    assert labels(widget) == [
        "model:",
        "GPUs:",
        "batch per GPU:",
        "strategy:",
        "phase:",
        "◀ back",
        "next ▶",
    ]
    assert widget.model.label == BIG_MODEL and widget.model._options_labels == tuple(ch07.MODELS)


def test_every_phase_of_both_strategies_reads_in_chinese(zh):
    work = ch07.workload(BIG_MODEL)
    for strategy, phases in ch07.STRATEGIES.items():
        for index in range(len(phases(work, 4, 32))):
            text = shown(ch07.phase_html(strategy, index, work, 4, 32))
            assert_chinese(text)
            assert strategy in text  # a PyTorch class name stays as it is
    assert "DataParallel：cuda:0（主卡）搬运" in shown(ch07.totals_html(work, 4, 32))


def test_the_traffic_figure_has_chinese_labels(zh, with_cjk_font):
    fig = ch07.plot_traffic(ch07.workload(BIG_MODEL), 4, 32)
    ax = fig.axes[0]
    assert "一个训练步里每块 GPU 发送 + 接收的字节数" in ax.get_title()
    assert CJK.search(ax.get_ylabel())
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(ch07.STRATEGIES)


def test_the_traffic_figure_keeps_english_without_a_cjk_font(zh):
    with mock.patch.object(plots, "cjk_font", lambda: None), pytest.warns(UserWarning):
        plots._say_no_font.cache_clear()
        fig = ch07.plot_traffic(ch07.workload(BIG_MODEL), 4, 32)
    assert fig.axes[0].get_title().endswith("bytes each GPU sends + receives in one training step")


# ---------------------------------------------------------------- chapter 07's printed reports
def test_the_sampler_and_torchrun_tables_in_chinese(zh, capsys):
    ch07.show_sampler_orders()
    ch07.show_torchrun_ranks()
    out = capsys.readouterr().out
    assert "shuffle=True（默认），不调用 set_epoch" in out
    header = out.splitlines()[-9]
    assert "机器" in header and "LOCAL_RANK" in header
    widths = {len(line) + sum(1 for c in line if CJK.match(c)) for line in out.splitlines()[-9:]}
    assert len(widths) == 1, "the torchrun table's columns stay aligned with Chinese headers"


def test_the_failure_report_keeps_the_ranks_error_as_raised(zh):
    from course_lib import ddp_worker

    error = "RuntimeError: rank 1 failed on purpose (config.fail_rank)"

    def launch(*args, **kwargs):
        raise ddp_worker.TorchrunFailed(1, f"[rank1]: {error}\nvia signal SIGTERM", pgid=0)

    with (
        mock.patch.object(ddp_worker, "launch_torchrun", launch),
        mock.patch.object(ddp_worker, "group_alive", lambda pgid: False),
    ):
        report = ch07.failure_demo()
    assert f"rank 1 的报错：{error}" in report and "ChildFailedError" in report
    assert_chinese(report, {error})


# ---------------------------------------------------------------- chapter 06's tables and sentences
def test_the_memory_tables_and_sentences_in_chinese(zh, digits):
    curve = ch06.activation_curve("cpu", digits, batch_sizes=(32, 1024, 2048))
    estimated = ch06.estimate(ch06.wide_mlp(), 1024)
    for text in (
        ch06.crossover(curve),
        shown(ch06.compare(estimated, curve[1024])),
        shown(ch06.fixes_table(ch06.try_fixes("cpu", digits))),
        ch06.usual_loop_peak("cpu", digits, n_batches=2, batch_size=16),
        shown(ch06.side_by_side(ch06.freeze_compare("cpu", digits, batch_size=16))),
    ):
        assert_chinese(text)
    assert "组成部分" in shown(ch06.compare(estimated, curve[1024]))


def test_reading_an_oom_message_translates_the_reading_not_the_message(zh):
    table = shown(ch06.read_oom_message(ch06.OOM_EXAMPLE, "printed by this GPU above"))
    assert ch06.OOM_EXAMPLE in table  # PyTorch's message, word for word
    assert (
        "（上面这块 GPU 打印的）" in table and "「Tried to allocate」" in table
    )  # its words, quoted
    assert_chinese(table, {ch06.OOM_EXAMPLE})
    diagnosis = ch06.oom_diagnosis(ch06.OOM_EXAMPLE)
    assert diagnosis.startswith("是显存碎片：有 5.87 GiB")
    assert "PYTORCH_ALLOC_CONF=expandable_segments:True" in diagnosis


def test_the_amp_and_checkpoint_reports_in_chinese(zh, digits, capsys):
    amp = ch06.amp_compare("cpu", digits, batch_size=64)
    assert_chinese(ch06.amp_verdict(amp, 64))
    assert_chinese(shown(ch06.amp_table(amp)))
    result = ch06.checkpoint_compare("cpu", digits, batch_size=32, repeats=3)
    assert_chinese(shown(ch06.checkpoint_table(result)))
    assert "用不用检查点，梯度都相同" in capsys.readouterr().out


def test_the_memory_figures_have_chinese_labels(zh, with_cjk_font, digits):
    curve = {32: dict(weights=1, grads=1, optimizer_state=2, activations=1)}
    ax = ch06.plot_curve(curve).axes[0]
    assert ax.get_title() == "一个训练步的实测内存占用" and ax.get_xlabel() == "batch 大小"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["权重", "梯度", "优化器状态", "激活值"]
    state = dict(weights=1, grads=1, optimizer_state=2, activations=3)
    fig = memory.plot_stacked(
        {"estimated": state, "measured": state}, title="one Adam training step, batch 8, on cpu"
    )
    ax = fig.axes[0]
    assert ax.get_title() == "一个 Adam 训练步，batch 8，在 cpu 上"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["估算", "实测"]
    runs = ch06.leak_experiment("cpu", digits, n_batches=2, batch_size=16)
    ax = ch06.plot_leak(runs).axes[0]
    assert CJK.search(ax.get_title()) and CJK.search(ax.get_xlabel())
    for text in ax.get_legend().get_texts():
        assert CJK.search(text.get_text()), text.get_text()


def test_the_leak_loops_are_named_in_chinese_and_drawn_in_english_without_a_font(zh, digits):
    runs = ch06.leak_experiment("cpu", digits, n_batches=2, batch_size=16)
    assert list(runs)[0] == "total += loss（张量），梯度开启"  # the notebook prints these names
    with mock.patch.object(plots, "cjk_font", lambda: None), pytest.warns(UserWarning):
        plots._say_no_font.cache_clear()
        legend = ch06.plot_leak(runs).axes[0].get_legend().get_texts()
    assert legend[0].get_text() == "total += loss (tensor), grad on"  # no empty boxes


def test_the_english_text_is_unchanged(digits):
    """The English edition's words, as before the Chinese edition (tests/test_learner_text.py has
    more)."""
    assert ch06.oom_diagnosis("no").startswith("This is not the CUDA allocator's")
    table = shown(ch06.read_oom_message(ch06.OOM_EXAMPLE, "printed by this GPU above"))
    assert "(printed by this GPU above)\n" + ch06.OOM_EXAMPLE in table
    work = ch07.workload(BIG_MODEL)
    assert shown(ch07.phase_html("DataParallel", 0, work, 4, 32)).split("\n")[2] == (
        "DataParallel, phase 1 of 8: scatter"
    )
    assert "cuda:0 &rarr; cuda:1: 12.00 MiB (inputs)" in ch07.phase_html(
        "DataParallel", 0, work, 4, 32
    )


def test_the_gpu_only_tables_read_in_chinese(zh):
    """What only a CUDA GPU shows, from made-up numbers: the same functions the notebook calls."""
    estimated = ch06.estimate(ch06.wide_mlp(), 1024)
    counted = {"counted": estimated, "measured": {"before": 1, "peak": 2, "after": 1}}
    nothing = {"allocated": 0, "reserved": 0, "peak": 0}
    zero = {key: 0 for key, _ in ch06.ALLOCATOR_COUNTERS}
    with (
        mock.patch.object(ch06, "accounting_and_peak", lambda *a, **k: counted),
        mock.patch.object(memory, "cuda_memory", lambda device=None: nothing),
        mock.patch("torch.cuda.empty_cache", lambda: None),
    ):
        tables = [
            ch06.cuda_vs_accounting("cuda", None),
            ch06.empty_cache_demo("meta"),
            ch06.snapshot_table(ch06.read_snapshot({}), "ch06_oom_snapshot.pickle"),
            ch06.fragmentation_table({"expandable_segments:False": zero}),
            ch06.amp_peak_table({"float32": 2, "autocast": 1}),
        ]
    for table in tables:
        assert_chinese(shown(table))
    assert "expandable_segments:False" in shown(tables[3])  # a setting's name stays as it is


def test_dataparallels_phases_read_in_chinese(zh, capsys):
    on = lambda shape, i: SimpleNamespace(shape=shape, device=torch.device("cuda", i))
    replica = SimpleNamespace(parameters=lambda: iter([on((1,), 1)]))
    lines = ch07.phase_lines(
        on((64, 64), 0),
        [on((32, 64), 0), on((32, 64), 1)],
        [replica],
        [on((32, 10), 1)],
        on((64, 10), 0),
    )
    assert (
        lines[0]
        == "scatter:   cuda:0 上的 batch [64, 64] -> cuda:0 上的 [32, 64], cuda:1 上的 [32, 64]"
    )
    assert lines[3] == "gather:    输出在 cuda:0 上拼接：[64, 10]"
    with mock.patch.object(ch07, "gpu_only", lambda *a, **k: True):
        assert not ch07.multi_gpu_only(
            99, "DataParallel's scatter / replicate / gather across 2+ GPUs"
        )
    assert capsys.readouterr().out.startswith("[仅限 GPU] 这台机器上已跳过（有 ")


def test_chinese_paragraphs_are_wrapped_by_display_width(zh, capsys):
    import textwrap

    from course_lib.i18n.layout import width

    ch06.print_wrapped(ch06.oom_diagnosis(ch06.OOM_EXAMPLE))
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 2 and all(width(line) <= 96 for line in lines), lines
    assert "PYTORCH_ALLOC_CONF=expandable_segments:True" in "".join(lines)  # code kept whole
    with in_language("en"):
        english = ch06.oom_diagnosis(ch06.OOM_EXAMPLE)
        ch06.print_wrapped(english)
    assert (
        capsys.readouterr().out
        == textwrap.fill(english, 96, break_long_words=False, break_on_hyphens=False) + "\n"
    )
