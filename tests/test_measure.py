"""course_lib.measure: synchronize on CUDA only, warm-up excluded, medians, data-wait vs compute.

A fake clock makes every timing exact, so nothing here depends on how fast the machine is.
"""

import math

import pytest
import torch

from course_lib import measure


class FakeClock:
    """time.perf_counter stand-in: advances only when told to."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now

    def advance(self, ms):
        self.now += ms / 1000


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(measure.time, "perf_counter", fake)
    return fake


@pytest.fixture
def syncs(monkeypatch):
    calls = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: calls.append(a))
    return calls


def test_synchronize_only_for_cuda(syncs):
    measure.synchronize("cpu")
    measure.synchronize(torch.device("meta"))
    assert syncs == []
    measure.synchronize("cuda:0")
    assert syncs == [(torch.device("cuda:0"),)]


def test_timer_synchronizes_before_and_after_the_block(clock, syncs):
    with measure.Timer("cuda") as t:
        clock.advance(7)
    assert t.ms == pytest.approx(7)
    assert len(syncs) == 2


def test_timer_on_cpu_needs_no_cuda(clock):
    with measure.Timer() as t:
        clock.advance(3)
    assert t.ms == pytest.approx(3)


def test_time_fn_excludes_warmup_and_reports_the_median(clock):
    durations = iter([500, 10, 30, 11, 90, 12])
    calls = []

    def fn():
        calls.append(1)
        clock.advance(next(durations))

    timing = measure.time_fn(fn, "cpu", repeats=5, warmup=1, label="thing")
    assert len(calls) == 6
    assert timing.warmup_ms == pytest.approx([500])
    assert timing.ms == pytest.approx([10, 30, 11, 90, 12])
    assert timing.median == pytest.approx(12)
    assert "thing: median 12.00 ms over 5 runs" in str(timing)
    assert "first call 500.0 ms" in str(timing)


def test_time_fn_without_warmup_has_no_first_call(clock):
    timing = measure.time_fn(lambda: clock.advance(2), repeats=3, warmup=0)
    assert timing.warmup_ms == [] and "first call" not in str(timing)


def test_speed_ratio_words():
    fast, slow = measure.Timing("a", [10.0]), measure.Timing("b", [20.0])
    assert measure.speed_ratio(slow, fast) == "2.00x faster"
    assert measure.speed_ratio(fast, slow) == "2.00x slower"


def test_loop_breakdown_separates_waiting_from_computing(clock):
    def loader():
        for _ in range(4):
            clock.advance(3)  # building the batch
            yield torch.zeros(2), torch.zeros(2)

    steps = []

    def step(x, y):
        steps.append(x.shape)
        clock.advance(5)

    times = measure.loop_breakdown(step, loader(), "cpu", label="fake")
    assert len(steps) == 4
    assert times.wait_ms == pytest.approx([3] * 4) and times.compute_ms == pytest.approx([5] * 4)
    assert times.total_ms == pytest.approx(32) and times.wait_share == pytest.approx(12 / 32)
    assert "fake: 4 steps" in str(times) and "(38%)" in str(times)


def test_loop_breakdown_max_steps_and_sync(clock, syncs):
    batches = [(torch.zeros(1), torch.zeros(1))] * 10
    times = measure.loop_breakdown(lambda x, y: None, batches, "cuda", max_steps=3)
    assert len(times.wait_ms) == 3
    assert len(syncs) == 1 + 3  # once before the loop, once after each step


def test_empty_loop_has_nan_share():
    assert math.isnan(measure.LoopTimes("empty").wait_share)


def test_plots_have_one_bar_per_label_and_part():
    fig = measure.plot_stacked({"a": (1, 2), "b": (3, 4), "c": (5, 6)}, parts=("x", "y"))
    assert len(fig.axes[0].patches) == 6
    runs = [measure.LoopTimes("one", [1, 2], [3, 4]), measure.LoopTimes("two", [0.5], [9])]
    fig = measure.plot_breakdowns(runs)
    heights = [p.get_height() for p in fig.axes[0].patches]
    assert heights == pytest.approx([3, 0.5, 7, 9])


def _legend_below_axes(fig) -> bool:
    fig.canvas.draw()
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent()
    return legend.y1 <= ax.get_window_extent().y0


def test_legends_never_cover_a_bar():
    """The legend sits below the axes, where no bar can be (issue 12.7: it covered a bar)."""
    stacked = measure.plot_stacked({"a": (1, 90), "b": (95, 4)}, parts=("x", "y"))
    grouped = measure.plot_grouped({"a": (90, 95), "b": (99, 1)}, parts=("epoch 1", "epoch 2"))
    assert _legend_below_axes(stacked) and _legend_below_axes(grouped)


def test_grouped_bars_stand_side_by_side():
    fig = measure.plot_grouped(
        {"a": (10, 20), "b": (30, 40), "c": (50, 60)}, parts=("epoch 1", "epoch 2")
    )
    bars = fig.axes[0].patches
    assert [b.get_height() for b in bars] == pytest.approx([10, 30, 50, 20, 40, 60])
    assert all(b.get_y() == 0 for b in bars)  # not stacked: every bar starts at 0
    assert (
        bars[0].get_x() + bars[0].get_width() <= bars[3].get_x() + 1e-9
    )  # epoch 1 left of epoch 2


@pytest.mark.parametrize(
    "first,times,expected",
    [
        (50.0, [10, 11, 9, 10, 12], "the first call took 5.0x the median: one-off costs"),
        (8.0, [10, 11, 9, 10, 12], "the first call was faster than the median (0.80x)"),
        (12.0, [10, 11, 9, 10, 12], "the first call took 1.20x the median: little one-off cost"),
    ],
)
def test_timing_notes_read_the_numbers(first, times, expected):
    notes = measure.timing_notes(measure.Timing("t", times, [first]))
    assert expected in notes
    assert "shared CPU" in notes or first >= 10.0
    assert "slowest run" not in notes  # 12 / 9 is no outlier


def test_timing_notes_flag_noise_and_need_no_warmup():
    notes = measure.timing_notes(measure.Timing("t", [1.0, 1.1, 9.0]))
    assert "first call" not in notes and "the slowest run took 9.0x the fastest" in notes


def test_first_call_note_is_empty_without_a_warmup():
    assert measure.first_call_note(measure.Timing("t", [1.0])) == ""
