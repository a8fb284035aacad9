"""Chapter 05, speedups: is the GPU starving, workers,
pinned memory, mixed precision, torch.compile.

Every number in this chapter is measured on the learner's machine by the functions below; the
notebook prints and plots them and draws no conclusion that the numbers did not show. The
exercises are checked on the CPU: autocast and GradScaler work there for real, and a simulated
clock stands in for a GPU that runs asynchronously. The exercises and quizzes are declared in
course_lib/declared/ch05_speedups.py (re-exported here).
"""

import functools
import importlib.util
import itertools
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import record_function
from torch.utils.data import Dataset, Subset

from . import data, measure, profiling, training
from .collector import collector_paused
from .device import amp_dtype, gpu_only, mps_available
from .i18n import tr
from .i18n.catalogue import CJK, join, listing
from .i18n.layout import Table, rjust, wrap
from .i18n.layout import width as text_width
from .widgets import reveal, text_table

if TYPE_CHECKING:  # imported on first use (`_benchmark`): it pulls in setuptools, 0.1-0.3 s
    import torch.utils.benchmark as benchmark
from .declared import ch05_speedups as declared  # PROFILE_READING, filled by profile_steps
from .declared.ch05_speedups import (  # its exercises and quizzes, declared apart
    amp_train_step,
    bf16_scaler,
    chapter,
    compile_control_flow,
    low_utilization,
    phase_ms,
    profile_verdict,
    scale_after_overflow,
    time_it,
)

__all__ = [  # what `ch.` offers the learner; `dir(ch)` lists these only
    "chapter",
    # exercises and quizzes: ch.<name>.check(...), .hint(), .solution(), .ask()
    "amp_train_step",
    "phase_ms",
    "time_it",
    "bf16_scaler",
    "low_utilization",
    "profile_verdict",
    "scale_after_overflow",
    "compile_control_flow",
    # teaching helpers: the demos, tables and models the notebook uses
    "amp_dtype",
    "reveal",
    "text_table",
    "gpu_reference",
    "AugmentedDigits",
    "reads_of_two_digits",
    "warmed_up",
    "starving_experiment",
    "profile_steps",
    "nvidia_smi",
    "time_epochs",
    "workers_experiment",
    "show_epochs",
    "plot_epochs",
    "workers_notes",
    "start_method_note",
    "machine_cores",
    "pin_memory_demo",
    "copy_benchmark",
    "async_demo",
    "timer_vs_time_fn",
    "show_timer_vs_time_fn",
    "benchmark_compare",
    "float_formats",
    "round_trip",
    "precision_pitfalls",
    "show_autocast_ops",
    "autocast_dtypes",
    "precision_step",
    "amp_speed",
    "compare",
    "amp_vs_fp32",
    "show_precision_runs",
    "scaler_demo",
    "compile_call_cost",
    "graph_counter",
    "compile_experiment",
    "LoopNet",
    "control_flow_demo",
    "item_loops",
    "show_item_loops",
    "readback_race",
    "show_readback_race",
    "hidden_syncs",
]


def __dir__():
    return __all__


# ================================================================ teaching helpers
def gpu_reference(what: str, figure: str) -> None:
    """Below a measurement made on any device: on a machine without CUDA, the figures a real GPU
    recorded for it (nothing more on a CUDA device: the cell above measured the GPU)
    (chapter 05)."""
    gpu_only(what, figure=figure)


# -------------------------------------------------------------- 1. a loader that does real CPU work
class AugmentedDigits(Dataset):
    """The digits with a fresh random rotation, zoom
    and shift each time an item is read (chapter 05).

    Each read upsamples the 8x8 digit to `size` x `size`, applies a random affine transform
    (``affine_grid`` + ``grid_sample``) and pools it back to 8x8: real per-item CPU work, as
    decoding and augmenting images is in a real pipeline. Defined here, not in the notebook, so
    worker processes started with "spawn" (macOS, Windows) can import it.
    """

    def __init__(
        self,
        base: Dataset,
        size: int = 32,
        degrees: float = 15.0,
        shift: float = 0.1,
        zoom: float = 0.1,
    ):
        self.base, self.size = base, size
        self.degrees, self.shift, self.zoom = degrees, shift, zoom

    def __len__(self) -> int:
        return len(self.base)

    def _theta(self) -> torch.Tensor:
        # the four random numbers in one draw: each torch call is an event in a profile
        turn, zoom, dx, dy = (2 * torch.rand(4) - 1).tolist()
        angle, scale = math.radians(self.degrees) * turn, 1 + self.zoom * zoom
        cos, sin = math.cos(angle) * scale, math.sin(angle) * scale
        return torch.tensor([[[cos, -sin, self.shift * dx], [sin, cos, self.shift * dy]]])

    def __getitem__(self, index):
        x, y = self.base[index]
        image = F.interpolate(
            x.reshape(1, 1, 8, 8), size=self.size, mode="bilinear", align_corners=False
        )
        grid = F.affine_grid(self._theta(), list(image.shape), align_corners=False)
        image = F.grid_sample(image, grid, align_corners=False)
        return F.avg_pool2d(image, self.size // 8).reshape(64), y


def reads_of_two_digits(augmented: AugmentedDigits, reads: int = 3) -> Subset:
    """Item 0 and the first item with another label, each read `reads` times (chapter 05)."""
    first = int(augmented.base[0][1])
    other = next(i for i in range(len(augmented.base)) if int(augmented.base[i][1]) != first)
    return Subset(augmented, [0] * reads + [other] * reads)


def fresh_step(device, seed: int = 0, phase=training.no_label):
    """A new digits MLP with Adam and cross-entropy on `device`, as a step function (chapter 05)."""
    torch.manual_seed(seed)
    model = training.digits_mlp().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    return training.stepper(model, optimizer, nn.CrossEntropyLoss(), device, phase)


def warmed_up(step, loader):
    """`step` after one untimed step on the loader's first batch: the first read, the first
    forward and the first backward pay one-off costs that would fill the first measured step."""
    step(*next(iter(loader)))
    return step


def starving_experiment(
    train_set, device, batch_size: int = 64, items=None, **loader_options
) -> list:
    """One epoch each on the plain and on the augmented digits, the first `items` of them (all by
    default): data-wait vs compute per step (chapter 05)."""
    if items is not None:
        train_set = Subset(train_set, range(min(items, len(train_set))))
    results = []
    for label, dataset in (
        ("digits in memory", train_set),
        ("augmented on the fly", AugmentedDigits(train_set)),
    ):
        loader = data.make_loader(dataset, device, batch_size, shuffle=True, **loader_options)
        step = warmed_up(fresh_step(device), loader)
        results.append(measure.loop_breakdown(step, loader, device, label=label))
    return results


def profile_steps(dataset, device, steps: int = 4, batch_size: int = 16) -> tuple:
    """`steps` training steps on `dataset` under torch.profiler,
    phases labelled: (profiler, LoopTimes) (chapter 05). The profile holds an event for every
    operator of every item's augmentation (~100 per item): batches of 16 keep it (and the time
    key_averages takes to read it) a quarter of 64's, with the data phase still the larger one.
    What it shows is kept (`declared.PROFILE_READING`): the quiz `profile_verdict` is judged
    against it."""
    loader = data.make_loader(dataset, device, batch_size, shuffle=True)
    step = warmed_up(fresh_step(device, phase=record_function), loader)
    prof, times = profiling.profile_training(
        step, loader, device, steps=steps, label="profiled steps"
    )
    declared.PROFILE_READING.clear()
    declared.PROFILE_READING.update(read_profile(prof, device))
    return prof, times


def read_profile(prof, device, rows: int = 3) -> dict:
    """What a profile shows: ms per labelled phase, and its `rows` operators with the most self
    time (names as the table prints them) (chapter 05)."""
    _, top, _ = profiling.operator_rows(prof, device, rows)
    return {"phases": profiling.label_totals(prof), "top": [row[0] for row in top]}


def nvidia_smi() -> None:
    """Print nvidia-smi's one-line-per-GPU view
    (utilization, memory), or say why not (chapter 05)."""
    if not gpu_only("nvidia-smi: the GPU's utilization and memory", figure="ch05.nvidia_smi"):
        return
    exe = shutil.which("nvidia-smi")
    if exe is None:
        print(
            tr(
                "[GPU only] nvidia-smi is not on this machine's PATH (a container without the "
                "NVIDIA tools?)"
            )
        )
        return
    query = "index,name,utilization.gpu,memory.used,memory.total"
    out = subprocess.run(
        [exe, f"--query-gpu={query}", "--format=csv"], capture_output=True, text=True, timeout=30
    )
    print(out.stdout or out.stderr)


# ---------------------------------------------------------------- 2. num_workers
def time_epochs(
    dataset,
    device,
    num_workers: int,
    persistent: bool = False,
    epochs: int = 2,
    batch_size: int = 64,
) -> list:
    """Milliseconds per epoch (worker start-up included) for one loader setting (chapter 05)."""
    options = dict(persistent_workers=True) if persistent and num_workers else {}
    loader = data.make_loader(
        dataset, device, batch_size, shuffle=True, num_workers=num_workers, **options
    )
    step, times = fresh_step(device), []
    for _ in range(epochs):
        with measure.Timer(device) as t:
            for x, y in loader:
                step(x, y)
        times.append(t.ms)
    return times


def workers_experiment(
    dataset,
    device,
    settings=((0, False), (2, False), (2, True)),
    epochs: int = 2,
    items=None,
    repeats: int = 3,
) -> dict:
    """Epoch times for each (num_workers, persistent_workers) setting, on the first `items` of
    `dataset` (all by default), each setting run `repeats` times with a fresh loader and model, the
    settings taking turns (so that a slow minute of a shared machine is not one setting's alone):
    label -> one list per epoch of its ms in each run (chapter 05)."""
    if items is not None:
        dataset = Subset(dataset, range(min(items, len(dataset))))
    labels = {
        (w, p): f"num_workers={w}" + (", persistent" if p else "") for w, p in settings
    }  # fmt: skip
    runs = {label: [] for label in labels.values()}
    for _ in range(repeats):
        for (workers, persistent), label in labels.items():
            runs[label].append(time_epochs(dataset, device, workers, persistent, epochs))
    return {label: [list(epoch) for epoch in zip(*times)] for label, times in runs.items()}


def epoch_runs(value) -> list:
    """The ms of one epoch in each run: a list, or one number (a single run)."""
    return list(value) if isinstance(value, (list, tuple)) else [value]


def medians(results: dict) -> dict:
    """label -> the median ms of each epoch over its runs (chapter 05)."""
    return {
        label: [statistics.median(epoch_runs(e)) for e in epochs]
        for label, epochs in results.items()
    }


def _spread(value) -> str:
    runs = epoch_runs(value)
    middle = f"{statistics.median(runs):.0f} ms"
    return middle if len(runs) == 1 else tr(f"{middle} ({min(runs):.0f}-{max(runs):.0f} ms)")


def show_epochs(results: dict) -> str:
    """One line per loader setting: each epoch's median over the runs and their range (chapter
    05)."""
    names = {label: tr(label) for label in results}
    column = max(text_width(name) for name in names.values())
    runs = max(len(epoch_runs(e)) for epochs in results.values() for e in epochs)
    lines = [tr(f"each epoch: the median of {runs} run(s) (the fastest-the slowest)")]
    for label, epochs in results.items():
        shown = [tr(f"epoch {i + 1}: {_spread(e)}") for i, e in enumerate(epochs)]
        lines.append(join([rjust(names[label], column), join(shown, ", ")], ": "))
    return "\n".join(lines)


def plot_epochs(results: dict):
    """Epoch 1 and epoch 2 side by side for each loader setting, medians over the runs (chapter
    05)."""
    n = max(len(v) for v in results.values())
    return measure.plot_grouped(
        medians(results),
        parts=tuple(f"epoch {i + 1}" for i in range(n)),
        title="the same epochs, per loader setting",
        ylabel="ms per epoch (median of the runs)",
    )


# (setting, epoch index, compared with setting, epoch index, what the comparison shows)
WORKER_COMPARISONS = (
    (
        "num_workers=2",
        1,
        "num_workers=0",
        1,
        "epoch 2 with 2 workers vs none: do workers pay here?",
    ),
    (
        "num_workers=2, persistent",
        1,
        "num_workers=2",
        1,
        "epoch 2, persistent vs fresh workers: what starting 2 workers costs",
    ),
    (
        "num_workers=2, persistent",
        1,
        "num_workers=2, persistent",
        0,
        "persistent workers, epoch 2 vs epoch 1: the start-up paid once",
    ),
)


def epoch_verdict(this, other) -> str:
    """How the runs of one epoch compare with another's: by median, unless their ranges overlap,
    which a single noisy run cannot tell apart from a real difference (chapter 05)."""
    a, b = epoch_runs(this), epoch_runs(other)
    if len(a) > 1 and len(b) > 1 and min(a) <= max(b) and min(b) <= max(a):
        return tr("within this machine's run-to-run noise (the runs overlap)")
    return measure.speed_ratio(measure.Timing("other", b), measure.Timing("this", a))


def workers_notes(results: dict) -> str:
    """The comparisons the text asks for, computed from the measured epoch times: medians over the
    runs, their ranges, and a verdict only where the ranges do not overlap (chapter 05)."""
    lines = []
    for this, i, other, j, what in WORKER_COMPARISONS:
        if (
            this in results
            and other in results
            and len(results[this]) > i
            and len(results[other]) > j
        ):
            a, b = results[this][i], results[other][j]
            compared = tr(f"median {_spread(a)} vs {_spread(b)}: {epoch_verdict(a, b)}")
            lines.append(f"- {tr(what)}\n    " + compared)
    return "\n".join(lines)


# (start method, where it is the default, what starting a DataLoader worker costs and needs)
START_METHODS = (
    (
        "fork",
        "Linux with Python up to 3.13",
        (
            "the worker is a copy of this process, fast to start with nothing to import or pickle; "
            "but once this process has used CUDA, a forked child cannot use CUDA at all"
        ),
    ),
    (
        "forkserver",
        "Linux with Python 3.14 and newer",
        (
            "a small server process, started once, forks each worker; the dataset is pickled and "
            "its class must be importable (as with spawn); the server has not used CUDA, so its "
            "workers can"
        ),
    ),
    (
        "spawn",
        "macOS and Windows",
        (
            "each worker is a fresh Python that imports torch and your dataset's module, seconds "
            "per start; the dataset is pickled and its class must be importable"
        ),
    ),
)


def start_method_note() -> str:
    """How DataLoader workers start on this machine, and what that means (chapter 05)."""
    import multiprocessing
    import platform
    import sys

    method = multiprocessing.get_start_method(allow_none=False)
    where, means = next(
        ((w, m) for name, w, m in START_METHODS if name == method),
        ("set explicitly", "see Python's multiprocessing documentation"),
    )
    return tr(
        f"Here (Python {platform.python_version()} on {sys.platform}) workers start with "
        f"{method!r}, the default on {where}: {means}."
    )


def machine_cores() -> str:
    """How many CPU cores this process may use, and torch's compute threads (chapter 05)."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return tr(
        f"CPU cores usable here: {usable}; torch compute threads in this process: "
        f"{torch.get_num_threads()}"
    )


# ---------------------------------------------------------------- 3. pinned memory
def accelerator_present() -> bool:
    """True when PyTorch sees a GPU that pinned memory serves (chapter 05)."""
    return torch.cuda.is_available() or mps_available()


def pinned_batch(dataset, batch_size: int = 64) -> torch.Tensor:
    """The first batch of a DataLoader built with
    pin_memory=True, whatever the device (chapter 05)."""
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, pin_memory=True)
    return next(iter(loader))[0]


# (accelerator PyTorch sees, what DataLoader(pin_memory=True) does there, why) from
# torch/utils/data/dataloader.py (_BaseDataLoaderIter.__init__), torch 2.x
PINNING = (
    (
        "cuda",
        "pins every batch (a host-to-host copy into page-locked memory)",
        (
            "the GPU's copy engine can then read the batch directly, and "
            "`.to(device, non_blocking=True)` returns before the copy is done"
        ),
    ),
    (
        "mps",
        "turns pinning OFF, with a warning: the batch is not pinned",
        (
            "the DataLoader's own code switches it off on MPS: pinned memory is 'not supported on "
            "MPS now' (its comment points to PyTorch issue 86060), so on a Mac 'pinned: False' is "
            "expected"
        ),
    ),
    (
        None,
        "ignores the flag, with a warning: the batch is not pinned",
        "there is no accelerator to copy to, so there is nothing to pin for",
    ),
)


def pin_memory_demo(dataset) -> torch.Tensor:
    """Build a pin_memory=True loader here; print
    what PyTorch did and said, and why (chapter 05)."""
    accelerator = (
        torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None
    )
    kind = accelerator.type if accelerator is not None else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batch = pinned_batch(dataset)
    known = {k: (d, w) for k, d, w in PINNING}
    does, why = known.get(kind, known["cuda"])  # another accelerator (xpu, ...) pins as CUDA does
    print(
        tr(
            f"accelerator PyTorch sees: {kind or 'none'} | batch in pinned memory: "
            f"{batch.is_pinned()}"
        )
    )
    for w in caught:
        print(tr(f"PyTorch warned: {str(w.message).splitlines()[0]}"))
    print(tr(f"Here DataLoader(pin_memory=True) {does}. Why: {why}."))
    return batch


def is_cuda_or_say_so(device, what: str) -> bool:
    """True for a CUDA device; otherwise say that nothing was measured (chapter 05).

    The course device decides, not the machine: with COURSE_DEVICE=cpu on a GPU machine a
    host-to-"device" copy would be a CPU-to-CPU copy, and timing it would teach nothing.
    """
    device = torch.device(device)
    if device.type == "cuda":
        return True
    print(
        tr(f"[GPU only] {what}: the course device is {device}, not a CUDA GPU; nothing was timed")
    )
    return False


def gb_per_s(n_bytes: int, ms: float) -> float:
    """Bandwidth in GB/s (10**9 bytes per second, the unit of GPU spec sheets) (chapter 05)."""
    return n_bytes / 1e9 / (ms / 1000)


def copy_benchmark(device, megabytes: int = 64, repeats: int = 5) -> dict:
    """GPU only: host-to-GPU copy time from pageable vs pinned
    memory, and what non_blocking returns (chapter 05)."""
    if not is_cuda_or_say_so(device, "copy time from pageable vs pinned memory"):
        return {}
    n = megabytes * 2**20 // 4
    pageable = torch.randn(n)
    pinned = pageable.pin_memory()
    out = {}
    for label, source in (("pageable", pageable), ("pinned", pinned)):
        timing = measure.time_fn(
            lambda s=source: s.to(device), device, repeats=repeats, label=f"copy from {label}"
        )
        out[label] = timing
        print(f"{timing}  -> {gb_per_s(pageable.nbytes, timing.median):.1f} GB/s")
    for label, source in (("pageable", pageable), ("pinned", pinned)):
        measure.synchronize(device)
        start = time.perf_counter()
        source.to(device, non_blocking=True)
        returned = (time.perf_counter() - start) * 1000
        measure.synchronize(device)
        done = (time.perf_counter() - start) * 1000
        out[f"non_blocking {label}"] = (returned, done)
        print(
            tr(
                f".to(device, non_blocking=True) from {label}: back in Python after "
                f"{returned:.2f} ms, copy finished after {done:.2f} ms"
            )
        )
    return out


def async_demo(device, n: int = 4096) -> None:
    """GPU only: a big matrix product timed without and with synchronize (chapter 05)."""
    if not is_cuda_or_say_so(device, "a matrix product timed without and with synchronize"):
        return
    a = torch.randn(n, n, device=device)
    a @ a  # warm-up
    measure.synchronize(device)
    start = time.perf_counter()
    a @ a
    launched = (time.perf_counter() - start) * 1000
    measure.synchronize(device)
    finished = (time.perf_counter() - start) * 1000
    print(
        tr(
            f"{n}x{n} matmul: the Python line returned after {launched:.3f} ms; "
            f"the GPU finished after {finished:.3f} ms"
        )
    )


# ---------------------------------------------------------------- 1b. torch.utils.benchmark
def _lazy_module(name: str) -> None:
    """Put module `name` in sys.modules unexecuted (importlib's LazyLoader): its code runs at the
    first use of one of its names, not at its import (chapter 05)."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    setattr(sys.modules[parent], child, module)


def _benchmark():
    """torch.utils.benchmark, imported at its first use: at module level, progress() (which
    imports every chapter's module) would pay for it in every notebook. Its C++ timer imports
    torch.utils.cpp_extension, whose first line imports setuptools (0.2-0.3 s); the chapter times
    Python statements only, so that module is loaded lazily, in full when a C++ timer needs it."""
    if "torch.utils.benchmark" not in sys.modules:
        _lazy_module("torch.utils.cpp_extension")
    import torch.utils.benchmark

    return torch.utils.benchmark


def matmul_timer(a: torch.Tensor, label: str = "matmul") -> "benchmark.Timer":
    """A torch.utils.benchmark.Timer of ``a @ a``,
    labelled by size and dtype for Compare (chapter 05)."""
    return _benchmark().Timer(
        "a @ a",
        globals={"a": a},
        label=label,
        sub_label="x".join(map(str, a.shape)),
        description=str(a.dtype).removeprefix("torch."),
    )


def timer_vs_time_fn(device, n: int = 256, min_run_time: float = 0.05) -> dict:
    """The same n x n matmul timed by the course's
    measure.time_fn and by Timer.blocked_autorange (chapter 05)."""
    a = torch.randn(n, n, device=device)
    ours = measure.time_fn(lambda: a @ a, device, repeats=7, warmup=1, label=f"{n}x{n} matmul")
    return {"time_fn": ours, "Timer": matmul_timer(a).blocked_autorange(min_run_time=min_run_time)}


def show_timer_vs_time_fn(result: dict) -> str:
    """Both timings, and what the Timer's Measurement knows besides its median (chapter 05)."""
    ours, m = result["time_fn"], result["Timer"]
    iqr = f"IQR {m.iqr * 1e3:.4f} ms"
    spread = tr(f"{iqr} (the Measurement warns: a wide spread)") if m.has_warnings else iqr
    return "\n".join(
        tr(line)
        for line in [
            (
                f"measure.time_fn:  median {ours.median:.4f} ms over {len(ours.ms)} single timed "
                "calls (1 warm-up call)"
            ),
            (
                f"benchmark.Timer:  median {m.median * 1e3:.4f} ms over {len(m.times)} blocks of "
                f"{m.number_per_run} calls each ({len(m.times) * m.number_per_run} calls timed), "
                f"{m.task_spec.num_threads} thread(s), {spread}"
            ),
            f"this process uses {torch.get_num_threads()} thread(s) for torch outside the Timer",
        ]
    )


def benchmark_measurements(
    device, sizes=(64, 256), dtypes=(torch.float32, torch.bfloat16), min_run_time: float = 0.02
) -> list:
    """Timer.blocked_autorange of a matmul for each size and dtype: a list of Measurements
    (chapter 05). A table shows medians only: 0.02 s of blocks each is enough for them."""
    return [
        matmul_timer(
            torch.randn(n, n, device=device, dtype=dtype), label=tr(f"matmul on {device}")
        ).blocked_autorange(min_run_time=min_run_time)
        for n in sizes
        for dtype in dtypes
    ]


@functools.cache
def course_compare() -> type:
    """benchmark.Compare whose line under the table (the time unit) is in the course's language
    (the class is made at first use, as torch.utils.benchmark is imported then)."""

    class CourseCompare(_benchmark().Compare):
        def __str__(self) -> str:
            return re.sub(r"(?m)^Times are in .*$", lambda m: tr(m.group(0)), super().__str__())

    return CourseCompare


def benchmark_compare(
    device, sizes=(64, 256), dtypes=(torch.float32, torch.bfloat16), min_run_time: float = 0.02
) -> "benchmark.Compare":
    """The same measurements laid out in one Compare table (chapter 05)."""
    table = course_compare()(benchmark_measurements(device, sizes, dtypes, min_run_time))
    table.trim_significant_figures()
    return table


# ---------------------------------------------------------------- 4. mixed precision
def float_formats() -> Table:
    """float32, float16 and bfloat16 side by side: bits,
    largest value, smallest normal, precision (chapter 05)."""
    header = [tr(h) for h in ("dtype", "bits", "largest", "smallest normal", "eps (precision)")]
    rows = []
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        info = torch.finfo(dtype)
        rows.append(
            [str(dtype), info.bits, f"{info.max:.3g}", f"{info.tiny:.3g}", f"{info.eps:.3g}"]
        )
    return Table(rows, header)


def round_trip(values=(1e-8, 1e-3, 70000.0)) -> str:
    """Each value stored in float16 and in bfloat16, read back as float32 (chapter 05)."""
    lines = []
    for v in values:
        t = torch.tensor(v)
        half, brain = t.half().float().item(), t.bfloat16().float().item()
        lines.append(f"{v:>10g} -> float16: {half:<12.6g} bfloat16: {brain:.6g}")
    return "\n".join(lines)


def _accumulate(step: float, n: int, dtype) -> float:
    """Add `step` to a running total `n` times in a Python loop, the total kept in `dtype`."""
    total = torch.zeros((), dtype=dtype)
    for _ in range(n):
        total += step
    return total.item()


# (what, how to compute it in one dtype): each row is computed live in float32, float16 and bfloat16
PRECISION_CASES = (
    ("a small gradient, 1e-8, stored", lambda d: torch.tensor(1e-8).to(d).item()),
    ("exp(12), as in a softmax", lambda d: torch.tensor(12.0).to(d).exp().item()),
    ("a weight 1.0 plus an update of 1e-3", lambda d: (torch.tensor(1.0).to(d) + 1e-3).item()),
    ("256 + 1", lambda d: (torch.tensor(256.0).to(d) + 1).item()),
    (
        "0.01 added 1000 times, a Python loop (total in the dtype)",
        lambda d: _accumulate(0.01, 1000, d),
    ),
    (
        "the same 1000 x 0.01 by torch.sum (float32 inside)",
        lambda d: torch.full((1000,), 0.01, dtype=d).sum().item(),
    ),
)
PRECISION_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def precision_rows() -> dict:
    """{what: [value in float32, float16, bfloat16]}, each
    case of PRECISION_CASES computed live (chapter 05)."""
    return {what: [compute(d) for d in PRECISION_DTYPES] for what, compute in PRECISION_CASES}


def precision_pitfalls() -> Table:
    """Where 16-bit arithmetic goes wrong, computed on this machine in three dtypes (chapter 05)."""
    header = ["", *(str(d).replace("torch.", "") for d in PRECISION_DTYPES), ""]
    rows = [
        [tr(what), *(f"{v:.6g}" for v in values), tr(f"(row {i})")]
        for i, (what, values) in enumerate(precision_rows().items(), 1)
    ]
    return Table(rows, header)


# (op, how it is called on `a`, an (8, 16) input; w is a (16, 16) float32 weight, y 8 class labels).
# Which dtype each returns under autocast is decided per device: PyTorch's AMP documentation lists
# the ops per device ("Autocast Op Reference"); autocast_op_dtypes asks the device itself.
AUTOCAST_OPS = (
    ("matmul (a @ w)", lambda a, w, y: a @ w),
    ("linear", lambda a, w, y: F.linear(a, w)),
    ("relu", lambda a, w, y: torch.relu(a)),
    ("exp", lambda a, w, y: a.exp()),
    ("log", lambda a, w, y: (a.abs() + 1).log()),
    ("sum", lambda a, w, y: a.sum()),
    ("mean", lambda a, w, y: a.mean()),
    ("cumsum", lambda a, w, y: a.cumsum(1)),
    ("softmax", lambda a, w, y: F.softmax(a, dim=1)),
    ("log_softmax", lambda a, w, y: F.log_softmax(a, dim=1)),
    ("layer_norm", lambda a, w, y: F.layer_norm(a, a.shape[1:])),
    ("batch_norm", lambda a, w, y: F.batch_norm(a, None, None, training=True)),
    ("cross_entropy", lambda a, w, y: F.cross_entropy(a, y)),
    ("mse_loss", lambda a, w, y: F.mse_loss(a, torch.zeros_like(a))),
)


def autocast_op_dtypes(device_type: str, dtype) -> list:
    """(op, dtype out from a float32 input, from a `dtype`
    input) under torch.autocast here (chapter 05)."""
    g = torch.Generator().manual_seed(0)
    a, w = (
        torch.randn(8, 16, generator=g).to(device_type),
        torch.randn(16, 16, generator=g).to(device_type),
    )
    y = torch.randint(0, 16, (8,), generator=g).to(device_type)
    with torch.autocast(device_type=device_type, dtype=dtype):
        return [(name, op(a, w, y).dtype, op(a.to(dtype), w, y).dtype) for name, op in AUTOCAST_OPS]


def autocast_groups(rows, dtype) -> dict:
    """The ops of autocast_op_dtypes rows by what autocast did to them (chapter 05)."""
    groups = {
        "run in the low-precision dtype, even from float32": [],
        "run in float32, even from the low-precision dtype": [],
        "kept the dtype they were given": [],
    }
    for name, from_fp32, from_low in rows:
        key = 0 if from_fp32 == dtype else 1 if from_low == torch.float32 else 2
        groups[list(groups)[key]].append(name)
    return groups


def show_autocast_ops(device_type: str, dtype) -> Table:
    """The op table of autocast_op_dtypes, then the
    ops grouped by what autocast did (chapter 05)."""
    rows = autocast_op_dtypes(device_type, dtype)
    low = str(dtype).replace("torch.", "")
    return Table(
        [[name, *(str(d).replace("torch.", "") for d in (a, b))] for name, a, b in rows],
        [tr("op"), tr("float32 input ->"), tr(low + " input ->")],
        title=tr(f"torch.autocast({device_type!r}, {low}), measured here:"),
        notes=[
            join([tr(what), listing(names) or tr("none")], ": ")
            for what, names in autocast_groups(rows, dtype).items()
        ],
    )


def autocast_dtypes(model: nn.Module, x, y, criterion, device_type: str, dtype) -> list:
    """(what, dtype) rows: each layer's output inside autocast,
    the loss, the weights, the gradients (chapter 05)."""
    rows, handles = [], []
    for name, module in model.named_modules():
        if not list(module.children()):
            label = tr(f"layer {name} ({type(module).__name__}) output")
            handles.append(
                module.register_forward_hook(
                    lambda m, i, o, label=label: rows.append((label, o.dtype))
                )
            )
    try:
        with torch.autocast(device_type=device_type, dtype=dtype):
            loss = criterion(model(x), y)
    finally:
        for h in handles:
            h.remove()
    rows.append((tr("loss (computed inside autocast)"), loss.dtype))
    loss.backward()
    weight = next(model.parameters())
    rows += [
        (tr("weights (parameters)"), weight.dtype),
        (tr("gradients (.grad)"), weight.grad.dtype),
    ]
    return rows


def amp_settings(device) -> list:
    """(label, autocast dtype or None, needs a GradScaler)
    for the precisions this device offers (chapter 05)."""
    device = torch.device(device)
    settings = [("float32 (no autocast)", None, False)]
    if device.type in ("cpu", "cuda") and amp_dtype(device) == torch.bfloat16:
        settings.append(("autocast bfloat16", torch.bfloat16, False))
    if device.type == "cuda":
        settings.append(("autocast float16 + GradScaler", torch.float16, True))
    return settings


def precision_step(model, optimizer, scaler, device_type: str, dtype, x, y) -> torch.Tensor:
    """One step in float32 (dtype None) or under autocast
    with `dtype`, through `scaler` (chapter 05)."""
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(
        device_type=device_type, dtype=dtype or torch.float32, enabled=dtype is not None
    ):
        loss = F.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss


def amp_speed(device, batch: int = 256, width: int = 512, repeats: int = 5, seed: int = 0) -> list:
    """Median ms per training step of an MLP of `width`,
    in each precision of amp_settings (chapter 05)."""
    device = torch.device(device)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, width, generator=g).to(device)
    y = torch.randint(0, 10, (batch,), generator=g).to(device)
    timings = []
    for label, dtype, scaled in amp_settings(device):
        torch.manual_seed(seed)
        model = nn.Sequential(
            nn.Linear(width, width),
            nn.ReLU(),
            nn.Linear(width, width),
            nn.ReLU(),
            nn.Linear(width, 10),
        ).to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
        scaler = torch.amp.GradScaler(device.type, enabled=scaled)
        step = functools.partial(precision_step, model, optimizer, scaler, device.type, dtype, x, y)
        timings.append(measure.time_fn(step, device, repeats=repeats, warmup=2, label=label))
    return timings


def compare(timings: list) -> str:
    """Each timing against the first (the baseline),
    in words computed from the medians (chapters 05+)."""
    base = timings[0]
    lines = [str(base) + _surprise(base)]
    for t in timings[1:]:
        lines.append(
            f"{t}{_surprise(t)}\n    "
            + tr(f"-> {measure.speed_ratio(base, t)} than {base.label} on this machine")
        )
    return "\n".join(lines)


def _surprise(timing) -> str:
    """A word under a timing whose first call beat its
    median (after the warm-up lesson, that needs one)."""
    faster = timing.warmup_ms and timing.warmup_ms[0] < timing.median
    note = measure.first_call_note(timing)
    return ("\n    " + (f"（{note}）" if CJK.search(note) else f"({note})")) if faster else ""


@dataclass
class PrecisionRun:
    """Losses of the same training steps in one precision, and what the scaler did (chapter 05)."""

    label: str
    losses: list = field(default_factory=list)
    accuracy: float = float("nan")
    scales: list = field(default_factory=list)
    skipped: int = 0


def shuffled_batches(dataset, steps: int, batch_size: int = 64, seed: int = 0) -> list:
    """The first `steps` batches of shuffled epochs over `dataset`, one epoch after another, read
    once: every precision's run trains on this same list (chapter 05)."""
    loader = torch.utils.data.DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=True,
        generator=torch.Generator().manual_seed(seed),
    )
    batches = []
    while len(batches) < steps:
        batches.extend(itertools.islice(loader, steps - len(batches)))
    return batches


def train_in_precision(
    batches, test_batches, device, label: str, dtype, scaled: bool, seed: int = 0
) -> PrecisionRun:
    """One training step per batch of the digits MLP
    from a fixed start, in one precision (chapter 05)."""
    device = torch.device(device)
    torch.manual_seed(seed)
    model = training.digits_mlp().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    scaler = torch.amp.GradScaler(device.type, enabled=scaled)
    run = PrecisionRun(label)
    model.train()
    for x, y in batches:
        x, y = x.to(device), y.to(device)
        before = scaler.get_scale() if scaled else None
        run.losses.append(precision_step(model, optimizer, scaler, device.type, dtype, x, y).item())
        if scaled:
            run.scales.append(scaler.get_scale())
            run.skipped += (
                scaler.get_scale() < before
            )  # update() lowers the scale after a skipped step
    run.accuracy = training.evaluate(model, test_batches, device, nn.CrossEntropyLoss())[1]
    return run


def amp_vs_fp32(train_set, test_set, device, steps: int = 60) -> list:
    """The same steps from the same start in float32 and
    in each autocast setting of the device (chapter 05)."""
    batches = shuffled_batches(train_set, steps)  # read once, for every precision
    test_batches = list(torch.utils.data.DataLoader(test_set, batch_size=256))
    return [
        train_in_precision(batches, test_batches, device, label, dtype, scaled)
        for label, dtype, scaled in amp_settings(device)
    ]


def show_precision_runs(runs: list, every: int = 10) -> str:
    """Losses side by side every `every` steps, the
    largest relative gap, accuracy, scaler (chapter 05)."""
    base = runs[0]
    # "step" stays as it is: the word names a phase elsewhere (an optimizer's step), and tr() has
    # one translation per word
    head = f"{'step':>5} " + "".join(rjust(tr(r.label), 32) for r in runs)
    rows = [head] + [
        f"{i + 1:>5} " + "".join(f"{r.losses[i]:>32.5f}" for r in runs)
        for i in range(every - 1, len(base.losses), every)
    ]
    for r in runs[1:]:
        gap = max(abs(a - b) / abs(a) for a, b in zip(base.losses, r.losses))
        rows.append(tr(f"{r.label}: largest loss difference from float32 {gap:.2%} of the loss"))
    rows += [
        tr(f"test accuracy after {len(r.losses)} steps, {r.label}: {r.accuracy:.1%}") for r in runs
    ]
    rows += [
        tr(
            f"{r.label}: scale now {r.scales[-1]:g}, steps skipped for inf/nan gradients: "
            f"{r.skipped}"
        )
        for r in runs
        if r.scales
    ]
    return "\n".join(rows)


def scaler_demo(device_type: str = "cpu", init_scale: float = 2.0**16) -> None:
    """A GradScaler at work on one weight: scale, unscale,
    a normal step, then a step with inf (chapter 05)."""
    w = nn.Parameter(torch.tensor([1.0, -2.0], device=device_type))
    optimizer = torch.optim.SGD([w], lr=0.1)
    scaler = torch.amp.GradScaler(device_type, init_scale=init_scale)
    for attempt in ("a normal step", "a step whose gradient overflowed to inf"):
        optimizer.zero_grad()
        loss = (w**2).sum() * 1e-3
        scaled = scaler.scale(loss)
        scaled.backward()
        if attempt != "a normal step":
            w.grad[0] = math.inf  # as if float16 had overflowed
        print(
            tr(
                f"{attempt}: loss {loss.item():.4g}, scaled loss {scaled.item():.6g}, "
                f"gradient as stored {[round(g, 3) for g in w.grad.tolist()]}"
            )
        )
        before = w.detach().clone()
        scale = scaler.get_scale()
        scaler.step(optimizer)  # unscales first; skips the update if anything is inf/nan
        scaler.update()  # halves the scale after an overflow, grows it slowly otherwise
        moved = "updated" if not torch.equal(before, w.detach()) else "NOT updated (step skipped)"
        print(
            tr(
                f"    weights {moved}: {[round(v, 5) for v in w.detach().tolist()]}; "
                f"scale {scale:g} -> {scaler.get_scale():g}"
            )
        )


# ---------------------------------------------------------------- 5. torch.compile
def graph_counter() -> tuple:
    """(backend, graphs): a torch.compile backend that records the op count of each graph
    TorchDynamo hands it and runs the graph as it is, and that list (chapter 05).

    It stands in for Inductor where the lesson is what TorchDynamo captures, and when: no code is
    generated, no C++ compiler is needed, and Inductor is not imported.
    """
    graphs = []

    def counting_backend(gm, example_inputs):
        graphs.append(
            sum(
                1 for n in gm.graph.nodes if n.op in ("call_function", "call_module", "call_method")
            )
        )
        return gm.forward

    return counting_backend, graphs


def compile_call_cost(model: nn.Module, x: torch.Tensor) -> str:
    """torch.compile(model) timed twice, then two forwards on `x`, with the graphs compiled after
    each: the call only wraps, the first forward compiles (chapter 05)."""
    backend, graphs = graph_counter()
    times, forwards = [], []
    with collector_paused():  # the first call's imports and the first trace: ~10**5 objects
        for _ in range(2):
            with measure.Timer() as t:
                compiled = torch.compile(model, backend=backend)
            times.append(t.ms)
        after_calls = len(graphs)
        for _ in range(2):
            with measure.Timer(x.device) as t:
                compiled(x)
            forwards.append((t.ms, len(graphs)))
    (first, second), ((fwd1, n1), (fwd2, n2)) = times, forwards
    ops = graphs[0] if graphs else 0
    lines = [
        (
            f"torch.compile(model, backend=counting_backend), first call in this process: "
            f"{first:.0f} ms; second call: {second:.1f} ms"
        ),
        (
            f"it returned {type(compiled).__name__}, which wraps your model: "
            f"{compiled._orig_mod is model}; same parameters: "
            f"{next(compiled.parameters()) is next(model.parameters())}"
        ),
        f"graphs compiled by the two calls: {after_calls}",
        f"first forward: {fwd1:.0f} ms; graphs compiled so far: {n1} (the first: {ops} ops)",
        f"second forward: {fwd2:.1f} ms; graphs compiled so far: {n2}",
    ]
    notes = (
        (
            first > max(10 * second, 50.0),  # an import takes ~10**2 ms; a wrap ~1
            (
                "the first call imported the rest of TorchDynamo's backend machinery into this "
                "process; the second only wrapped the model. Neither compiled anything: the first "
                "forward did, and the second reused its graph."
            ),
        ),
        (
            True,
            "both calls only wrapped the model (the compiler stack was already imported) and "
            "compiled nothing: the first forward did, and the second reused its graph.",
        ),
    )
    return "\n".join(tr(line) for line in lines + [next(text for hit, text in notes if hit)])


def cxx_compiler():
    """The C++ compiler torch.compile's CPU backend would find, or None (chapter 05)."""
    names = [os.environ.get("CXX", ""), "c++", "g++", "clang++", "cl"]
    return next((shutil.which(n) for n in names if n and shutil.which(n)), None)


def payback_note(eager: measure.Timing, compiled: measure.Timing) -> str:
    """When the compile time is earned back, from the
    measured first calls and medians (chapter 05)."""
    extra = compiled.warmup_ms[0] - eager.warmup_ms[0]
    saved = eager.median - compiled.median
    if saved <= 0:
        return tr(
            f"the compiled step is not faster here ({compiled.median:.2f} ms vs "
            f"{eager.median:.2f} ms): the {extra / 1000:.1f} s of compiling never pays back "
            "for this model on this device"
        )
    return tr(
        f"each compiled step saves {saved:.2f} ms: the {extra / 1000:.1f} s of compiling pays "
        f"back after about {math.ceil(extra / saved)} steps"
    )


def compile_timings(device, batch: int = 256, width: int = 256, repeats: int = 20) -> dict:
    """Eager vs torch.compile steps of a small MLP:
    {label: Timing}, first call included (chapter 05).

    The same step (`training.train_step`) on the same batch, from the same start; the compiled
    model's first call (in ``warmup_ms[0]``) is where it compiles. Used by the notebook (through
    `compile_experiment`) and by the GPU check's reference figures.
    """
    device = torch.device(device)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(batch, width, generator=g).to(device)
    y = torch.randint(0, 10, (batch,), generator=g).to(device)
    results = {}
    for label in ("eager", "torch.compile"):
        torch.manual_seed(0)
        model = nn.Sequential(
            nn.Linear(width, width),
            nn.GELU(),
            nn.LayerNorm(width),
            nn.Linear(width, width),
            nn.GELU(),
            nn.Linear(width, 10),
        ).to(device)
        run_model = torch.compile(model) if label == "torch.compile" else model
        step = functools.partial(
            training.train_step,
            run_model,
            torch.optim.SGD(model.parameters(), lr=1e-3),
            nn.CrossEntropyLoss(),
            x,
            y,
        )
        results[label] = measure.time_fn(step, device, repeats=repeats, warmup=1, label=label)
    return results


def compile_experiment(
    device, run: bool, batch: int = 256, width: int = 256, repeats: int = 20
) -> dict:
    """Eager vs torch.compile: first-call time and median
    step time; only when `run` is True (chapter 05)."""
    device = torch.device(device)
    if not run:
        print(
            tr(
                "[skipped] the torch.compile measurement is switched off. Set RUN_COMPILE = True "
                "in this cell and run it again: the first compile takes tens of seconds on a "
                "laptop CPU (a minute or more on a slow or busy one)."
            )
        )
        return {}
    if device.type == "cpu" and cxx_compiler() is None:
        print(
            tr(
                "[skipped] torch.compile's CPU backend needs a C++ compiler (g++ or clang++), "
                "and none was found on this machine."
            )
        )
        return {}
    results = compile_timings(device, batch, width, repeats)
    print(
        tr(
            f"first call (compiling): {results['torch.compile'].warmup_ms[0] / 1000:.1f} s; "
            f"eager first call: {results['eager'].warmup_ms[0]:.1f} ms"
        )
    )
    print(compare([results["eager"], results["torch.compile"]]))
    print(payback_note(results["eager"], results["torch.compile"]))
    return results


class LoopNet(nn.Module):
    """A DynamicNet-style model: a shared H -> H layer
    applied `depth` times, depth a Python int (chapter 05)."""

    def __init__(self, n_in: int = 10, hidden: int = 16, n_out: int = 4):
        super().__init__()
        self.first, self.middle, self.last = (
            nn.Linear(n_in, hidden),
            nn.Linear(hidden, hidden),
            nn.Linear(hidden, n_out),
        )

    def forward(self, x, depth: int = 2):
        h = torch.relu(self.first(x))
        for _ in range(depth):  # Python control flow on an int
            h = torch.relu(self.middle(h))
        return self.last(h)


class PrintingNet(LoopNet):
    """LoopNet with a print inside forward (chapter 05)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # said here, not in forward: TorchDynamo would trace into the catalogue
        self.says = tr("    (PrintingNet.forward prints) h has shape")

    def forward(self, x, depth: int = 2):
        h = torch.relu(self.first(x))
        print(self.says, tuple(h.shape))
        return self.last(h)


class ValueBranchNet(LoopNet):
    """LoopNet whose forward branches on a tensor's value (chapter 05)."""

    def forward(self, x, depth: int = 2):
        h = torch.relu(self.first(x))
        if h.mean() > 0.1:  # Python control flow on a tensor's value
            h = torch.relu(self.middle(h))
        return self.last(h)


# (a pattern of PyTorch's graph-break reason, what it means): the reasons this chapter's forwards
# and its learners' commonest ones give; any other reason is shown as PyTorch wrote it
GRAPH_BREAKS = (
    (
        r"builtin operator\s+`?print",
        "a `print` in forward: TorchDynamo cannot put Python's print in a graph, so the graph ends "
        "before it and a new one starts after it",
    ),
    (
        r"generic_jump TensorVariable|[Dd]ata[- ]dependent (?:branching|jump)",
        "an `if` on a tensor's value: which branch runs is known only once the kernels have run, "
        "so the graph ends at the `if`",
    ),
    (
        r"Tensor\.item|\.item\(\)|capture_scalar_outputs",
        "`.item()`: a Python number read from a tensor ends the graph (unless "
        "`torch._dynamo.config.capture_scalar_outputs = True`)",
    ),
    (
        r"Tensor\.(?:tolist|numpy)|\.tolist\(\)",
        "`.tolist()` or `.numpy()`: Python values read from a tensor end the graph",
    ),
)
_NOT_SHOWN = re.compile(r"^\s*(?:Developer debug context|Hint:)")  # PyTorch's notes to itself


def graph_break_summary(reason: str) -> str:
    """What a graph-break reason means, from GRAPH_BREAKS; "" for a reason the table lacks."""
    return next((what for pattern, what in GRAPH_BREAKS if re.search(pattern, reason)), "")


def pytorch_words(reason: str, summarized: bool) -> str:
    """PyTorch's reason, every line whole; without a summary of ours its hints stay too."""
    lines = [line.strip() for line in reason.splitlines() if line.strip()]
    kept = [line for line in lines if not (summarized and _NOT_SHOWN.match(line))]
    ended = [
        line if line[-1] in ".:;!?)" else line + "." for line in kept[:-1]
    ]  # one sentence each
    return " ".join(ended + kept[-1:])


def show_graph_break(reason: str, columns: int = 96) -> str:
    """One graph break: what it means (when GRAPH_BREAKS knows it), then PyTorch's own words, each
    wrapped between words under "why it broke" (chapter 05)."""
    summary = graph_break_summary(reason)
    lines = [tr(f"why it broke: {tr(summary)}")] if summary else []
    lines.append(tr(f"PyTorch says: {pytorch_words(reason, bool(summary))}"))
    return "\n".join(wrap("    " + line, columns, indent="    ") for line in lines)


def explain_forwards(x=None) -> str:
    """torch._dynamo.explain on three forwards: graphs, graph breaks and why (chapter 05)."""
    import torch._dynamo

    x = torch.randn(4, 10) if x is None else x
    lines = []
    for net, call in (
        (LoopNet(), "LoopNet, depth=3 (a for loop on an int)"),
        (PrintingNet(), "PrintingNet (print inside forward)"),
        (ValueBranchNet(), "ValueBranchNet (if on a tensor's value)"),
    ):
        kwargs = {"depth": 3} if type(net) is LoopNet else {}
        report = torch._dynamo.explain(net)(x, **kwargs)
        lines.append(
            tr(
                f"{call}:\n    {report.graph_count} graph(s), {report.graph_break_count} graph "
                f"break(s), {report.op_count} ops"
            )
        )
        lines += [show_graph_break(str(b.reason)) for b in report.break_reasons]
    return "\n".join(lines)


def recompiles_per_depth(depths=(2, 2, 3, 3, 4, 2)) -> str:
    """A compiled LoopNet called with each depth: graphs
    compiled so far, ops in the newest (chapter 05).

    A counting backend stands in for Inductor: it records each graph TorchDynamo hands over and
    runs it as it is, so this needs no C++ compiler and takes seconds.
    """
    import torch._dynamo

    counting_backend, graphs = graph_counter()
    torch._dynamo.reset()  # forget graphs compiled earlier in this process
    compiled = torch.compile(LoopNet(), backend=counting_backend)
    x = torch.randn(4, 10)
    lines = []
    for depth in depths:
        before = len(graphs)
        compiled(x, depth=depth)
        what = (
            f"compiled a new graph of {graphs[-1]} ops"
            if len(graphs) > before
            else "reused a graph"
        )
        lines.append(tr(f"depth={depth}: {what} (graphs so far: {len(graphs)})"))
    return "\n".join(lines)


def control_flow_demo() -> None:
    """What TorchDynamo made of three forwards, then recompiles per depth (chapter 05)."""
    print(tr("torch._dynamo.explain, one call each:"))
    print(explain_forwards())
    print("\n" + tr("A compiled LoopNet called with these depths, in this order:"))
    print(recompiles_per_depth())


# ---------------------------------------------------------------- 7. sync points
def item_loops(device, steps: int = 30, batch=None, width: int = 128, seed: int = 0) -> dict:
    """The same training loop reading its loss with .item() every step, or adding it up on the
    device and reading it once at the end: label -> measure.Timing of the whole loop
    (chapter 05). `batch` defaults to 256 on a CUDA GPU, where the waits show, and to 64
    elsewhere: no device runs ahead of Python there, whatever the batch (half the time)."""
    device = torch.device(device)
    batch = batch or (256 if device.type == "cuda" else 64)
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(64, width), nn.ReLU(), nn.Linear(width, 10)).to(device)
    optimizer, criterion = torch.optim.SGD(model.parameters(), lr=1e-3), nn.CrossEntropyLoss()
    x, y = torch.randn(batch, 64, device=device), torch.randint(0, 10, (batch,), device=device)

    def every_step():
        total = 0.0
        for _ in range(steps):
            total += training.train_step(
                model, optimizer, criterion, x, y
            ).item()  # waits for the device
        return total

    def once():
        total = torch.zeros((), device=device)
        for _ in range(steps):
            total += training.train_step(model, optimizer, criterion, x, y)  # stays on the device
        return total.item()  # one wait, at the end

    loops = {".item() every step": every_step, "summed on the device, .item() once": once}
    return {
        label: measure.time_fn(loop, device, repeats=3, warmup=1, label=label)
        for label, loop in loops.items()
    }


def show_item_loops(timings: dict) -> str:
    """The two loops' medians and how the second compares with the first (chapter 05)."""
    (_, every), (_, once) = timings.items()
    return f"{every}\n{once}\n" + tr(f"summing on the device: {measure.speed_ratio(every, once)}")


def readback_race(device, n: int = 2**22, rounds: int = 5, work: int = 4096) -> list:
    """CUDA only: read a device-to-host non_blocking copy
    at once, then after an event: wrong values per round.

    Each round queues a long matmul, then fills the source with a new value and copies it to the
    host with ``non_blocking=True`` (into pinned memory): the host buffer is read before and after
    ``event.synchronize()``. Returns [(wrong values read at once, wrong values after the event)]
    (chapter 05).
    """
    source, big = torch.empty(n, device=device), torch.randn(work, work, device=device)
    counts = []
    for i in range(rounds):
        big @ big  # keeps the GPU busy before the copy starts
        source.fill_(float(i + 1))
        host = source.to("cpu", non_blocking=True)  # returns at once; the copy waits in the queue
        early = int((host != i + 1).sum())  # read now: maybe before the copy ran
        event = torch.cuda.Event()
        event.record()  # marks the point after the copy in the queue
        event.synchronize()  # waits until the GPU has passed it
        counts.append((early, int((host != i + 1).sum())))
    return counts


def show_readback_race(counts: list, n: int = 2**22) -> str:
    """Per round: how many of the n values were wrong before and after the event (chapter 05)."""
    lines = [
        tr(
            f"round {i + 1}: read at once {early:>8} of {n} values wrong; after "
            f"event.synchronize() {late}"
        )
        for i, (early, late) in enumerate(counts)
    ]
    return "\n".join(lines)


def hidden_syncs(device, steps: int = 3) -> dict:
    """CUDA only: a loop run under torch.cuda.set_sync_debug_mode("warn"):
    source line -> syncs warned (chapter 05)."""
    import linecache

    torch.manual_seed(0)
    model = training.digits_mlp().to(device)
    optimizer, criterion = torch.optim.SGD(model.parameters(), lr=1e-3), nn.CrossEntropyLoss()
    x, y = torch.randn(64, 64, device=device), torch.randint(0, 10, (64,), device=device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            for _ in range(steps):
                loss = training.train_step(model, optimizer, criterion, x, y)
                logged = loss.item()  # copies one number to the host
                upper = x[y > 4]  # a boolean mask: how many rows?
        finally:
            torch.cuda.set_sync_debug_mode(0)
    found = {}
    for w in caught:
        if "synchroniz" in str(w.message):
            line = linecache.getline(w.filename, w.lineno).strip() or f"{w.filename}:{w.lineno}"
            found[line] = found.get(line, 0) + 1
    del logged, upper
    return found
