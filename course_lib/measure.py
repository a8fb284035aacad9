"""Timing that tells the truth on a GPU: synchronize,
warm up, repeat, take the median (chapters 05+).

CUDA runs kernels asynchronously: a Python line that "launches" a matrix product returns long
before the GPU has finished it. A clock read right after it measures the launch, not the work.
Every timer here therefore synchronizes the device before it reads the clock. The first call of
anything (CUDA context, kernel selection, torch.compile) is slow, so repeated timings start
with warm-up calls that are not counted, and report the median, which one hiccup cannot move.
"""

import statistics
import time
from dataclasses import dataclass, field

import torch

from .i18n import tr
from .i18n.catalogue import join
from .i18n.plots import plot_text


def synchronize(device) -> None:
    """Wait until every kernel queued on `device` has finished; no-op on the CPU (chapters 05+)."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


class Timer:
    """``with Timer(device) as t: ...`` then ``t.ms``: wall
    time of the block, device work included (chapters 05+)."""

    def __init__(self, device="cpu"):
        self.device = torch.device(device)
        self.ms = float("nan")

    def __enter__(self):
        synchronize(self.device)  # work queued before the block is not the block's
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        synchronize(self.device)  # the block's kernels must have finished
        self.ms = (time.perf_counter() - self._start) * 1000
        return False


@dataclass
class Timing:
    """Repeated timings of one thing, in milliseconds, warm-up excluded (chapters 05+)."""

    label: str
    ms: list
    warmup_ms: list = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.ms)

    def __str__(self) -> str:
        first = tr(f"first call {self.warmup_ms[0]:.1f} ms") if self.warmup_ms else ""
        summary = tr(
            f"{self.label}: median {self.median:.2f} ms over {len(self.ms)} runs "
            f"(min {min(self.ms):.2f}, max {max(self.ms):.2f})"
        )
        return join([summary, first], "; ")


def time_fn(fn, device="cpu", repeats: int = 5, warmup: int = 1, label: str = "") -> Timing:
    """Call `fn()` `warmup` times untimed, then `repeats`
    times, each timed with a Timer (chapters 05+)."""
    warm = []
    for _ in range(warmup):
        with Timer(device) as t:
            fn()
        warm.append(t.ms)
    times = []
    for _ in range(repeats):
        with Timer(device) as t:
            fn()
        times.append(t.ms)
    return Timing(label or getattr(fn, "__name__", "fn"), times, warm)


# (test on a Timing, what it means): the first matching row is printed under a timing (timing_notes)
TIMING_NOTES = (
    (
        lambda t: len(t.ms) > 1 and max(t.ms) > 3 * min(t.ms),
        (
            "the slowest run took {spread:.1f}x the fastest: other programs share this machine, "
            "and the median is the number to trust (one hiccup cannot move it)"
        ),
    ),
)
FIRST_CALL_NOTES = (
    (
        lambda first, median: first > 2 * median,
        (
            "the first call took {ratio:.1f}x the median: one-off costs (kernel choice, "
            "allocation, caches), which is why it is not counted"
        ),
    ),
    (
        lambda first, median: first < median,
        (
            "the first call was faster than the median ({ratio:.2f}x): this operation has little "
            "one-off cost here, and run-to-run noise on a shared CPU is larger than what is left "
            "of it"
        ),
    ),
    (
        lambda first, median: True,
        "the first call took {ratio:.2f}x the median: little one-off cost for this operation here",
    ),
)


def first_call_note(timing: Timing) -> str:
    """What the first (warm-up) call's time says, compared
    with the median; '' without one (chapters 05+)."""
    if not timing.warmup_ms:
        return ""
    first, median = timing.warmup_ms[0], timing.median
    ratio = first / median if median else float("inf")
    return tr(
        next(text.format(ratio=ratio) for test, text in FIRST_CALL_NOTES if test(first, median))
    )


def timing_notes(timing: Timing) -> str:
    """What a Timing's own numbers say about warm-up and noise, one line each (chapters 05+)."""
    lines = [first_call_note(timing)] if timing.warmup_ms else []
    spread = max(timing.ms) / min(timing.ms) if timing.ms and min(timing.ms) > 0 else float("nan")
    lines += [tr(text.format(spread=spread)) for test, text in TIMING_NOTES if test(timing)]
    return "\n".join(f"  - {line}" for line in lines)


def speed_ratio(baseline: Timing, other: Timing) -> str:
    """'2.10x faster' / '1.30x slower': how `other`
    compares with `baseline`, by median (chapters 05+)."""
    ratio = baseline.median / other.median
    return tr(f"{ratio:.2f}x faster") if ratio >= 1 else tr(f"{1 / ratio:.2f}x slower")


@dataclass
class LoopTimes:
    """Per training step: ms spent waiting for the batch, and ms computing on it (chapters 05+)."""

    label: str
    wait_ms: list = field(default_factory=list)
    compute_ms: list = field(default_factory=list)

    @property
    def total_ms(self) -> float:
        return sum(self.wait_ms) + sum(self.compute_ms)

    @property
    def wait_share(self) -> float:
        return sum(self.wait_ms) / self.total_ms if self.total_ms else float("nan")

    def __str__(self) -> str:
        return tr(
            f"{self.label}: {len(self.wait_ms)} steps, {self.total_ms:.0f} ms in all; waiting "
            f"for data {sum(self.wait_ms):.0f} ms ({self.wait_share:.0%}), computing "
            f"{sum(self.compute_ms):.0f} ms"
        )


def loop_breakdown(step, loader, device, label: str = "", max_steps: int = None) -> LoopTimes:
    """Run ``step(x, y)`` over `loader`, timing the wait
    for each batch and the step itself (chapters 05+).

    "Wait" is the time ``next(iterator)`` takes to hand over a batch (the loader's work, or
    waiting for its workers). "Compute" is the step: moving the batch to `device`, forward,
    backward, update, with the device synchronized before the clock is read.
    """
    times = LoopTimes(label)
    batches = iter(loader)
    synchronize(device)
    while max_steps is None or len(times.wait_ms) < max_steps:
        start = time.perf_counter()
        try:
            x, y = next(batches)
        except StopIteration:
            break
        got = time.perf_counter()
        step(x, y)
        synchronize(device)
        done = time.perf_counter()
        times.wait_ms.append((got - start) * 1000)
        times.compute_ms.append((done - got) * 1000)
    return times


def plot_stacked(rows: dict, parts=("wait", "compute"), title: str = "", ylabel: str = "ms"):
    """Stacked bars: one bar per row label, one colour
    per part; `rows` maps label -> values (chapters 05+)."""
    import matplotlib.pyplot as plt

    labels = list(rows)
    fig, ax = plt.subplots(figsize=(1.8 + 1.9 * len(labels), 4.0))
    # fixed margins, not layout="constrained" (it measures every tick label again: about half of
    # the drawing); the legend hangs below the axes and the notebook's display crops to it
    fig.subplots_adjust(left=0.75 / fig.get_figwidth(), right=0.98, bottom=0.3, top=0.92)
    bottom = [0.0] * len(labels)
    for i, part in enumerate(parts):
        values = [rows[label][i] for label in labels]
        ax.bar([plot_text(label) for label in labels], values, bottom=bottom, label=plot_text(part))
        bottom = [b + v for b, v in zip(bottom, values)]
    return _finish_bars(fig, ax, title, ylabel)


def _finish_bars(fig, ax, title: str, ylabel: str):
    """Title, grid, and the legend below the axes, where it cannot cover a bar."""
    import matplotlib.pyplot as plt

    ax.set(ylabel=plot_text(ylabel), title=plot_text(title))
    ax.legend(
        loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=1, frameon=False, fontsize="small"
    )
    ax.grid(axis="y", alpha=0.3)
    plt.close(fig)  # returned, so it is shown once (as the cell's value), not twice
    return fig


def plot_grouped(rows: dict, parts=("epoch 1", "epoch 2"), title: str = "", ylabel: str = "ms"):
    """Bars side by side: one group per row label, one bar
    per part; `rows` maps label -> values (chapter 05)."""
    import matplotlib.pyplot as plt

    labels = list(rows)
    fig, ax = plt.subplots(figsize=(2.2 + 1.9 * len(labels), 3.8))
    width = 0.8 / len(parts)
    for i, part in enumerate(parts):
        positions = [j + (i - (len(parts) - 1) / 2) * width for j in range(len(labels))]
        values = [rows[label][i] for label in labels]
        bars = ax.bar(positions, values, width=width, label=plot_text(part))
        ax.bar_label(bars, fmt="%.0f", fontsize="small")
    ax.set_xticks(range(len(labels)), [plot_text(label) for label in labels])
    ax.margins(y=0.15)
    return _finish_bars(fig, ax, title, ylabel)


def plot_breakdowns(results, title: str = "where one epoch's time goes"):
    """Stacked bars of total data-wait and compute time per LoopTimes (chapters 05+)."""
    rows = {r.label: (sum(r.wait_ms), sum(r.compute_ms)) for r in results}
    return plot_stacked(
        rows,
        parts=("waiting for the next batch", "computing (copy, forward, backward, step)"),
        title=title,
        ylabel="ms per epoch",
    )
